"""The operator base classes: an rmaop operator applied to local arrays, to PyLops-MPI DistributedArrays and to
StackedDistributedArrays, without copies where the distribution matches."""
from ctypes import byref, c_double

import numpy as np

from . import _core, _lib
from ._core import (DistributedArray, Partition, StackedDistributedArray, Vec, _pm, call, check_array, lib,
                    stream_order)


def _redistribute(comm, local, want_sizes, xp):
    """A 1-D SCATTER array moved to other local sizes (allgather; only for inputs whose split differs from
    the operator's)."""
    sizes = comm.allgather(int(local.size))
    full = np.empty(sum(sizes), dtype=local.dtype)
    comm.Allgatherv(np.ascontiguousarray(local.get() if xp is not np else local), [full, sizes])
    r = comm.Get_rank()
    off = sum(want_sizes[:r])
    return xp.asarray(full[off:off + want_sizes[r]])


class _Side:
    """One side (model or data) of an operator: its layout, kind, every rank's local size, stacked parts."""

    def __init__(self, comm, layout):
        self.layout = layout
        self.kind, self.global_n, self.local_n = _core.layout_kind(layout)
        self.sizes = _core.layout_sizes(comm, layout)
        parts = _core.layout_parts(layout)
        self.parts = [_Side(comm, p) for p in parts] if parts else None

    @property
    def partition(self):
        return Partition.BROADCAST if self.kind == _lib.LAYOUT_BROADCAST else Partition.SCATTER


class RmaopOperator:
    """What every rmaop operator does, PyLops-MPI or not.

    ``apply(x, out=None)`` / ``apply_adjoint(y, out=None)`` take this rank's local part (a NumPy array on a host
    context, CuPy on a device one) and return the output's local part; ``out`` is written in place. With
    PyLops-MPI the classes are its MPILinearOperator (or MPIStackedLinearOperator) subclasses: ``matvec`` /
    ``rmatvec`` / ``@`` / ``.H`` on DistributedArrays, so ``pylops_mpi.cgls(Op, y, x0)`` runs on them.
    ``close()`` frees the operator (collective); operators still open are closed at exit.
    """

    def _rmaop_init(self, ctx, handle, dims=None, dimsd=None, keep=()):
        self.context = ctx
        self._op = handle
        self._keep = keep  # objects the C operator borrows (callbacks, sub-operators)
        info = _lib.OpInfo()
        call("rmaop_op_get_info", handle, byref(info), ctx=ctx.handle)
        self._dtype_np = _core.np_dtype(info.dtype)
        self._m = _Side(ctx.comm, info.model)
        self._d = _Side(ctx.comm, info.data)
        shape = (int(self._d.global_n), int(self._m.global_n))
        dims = tuple(dims) if dims is not None else (shape[1],)
        dimsd = tuple(dimsd) if dimsd is not None else (shape[0],)
        base = _pm.MPIStackedLinearOperator if (_pm and self._stacked()) else (_pm.MPILinearOperator if _pm else None)
        if base is not None:
            base.__init__(self, shape=shape, dims=dims, dimsd=dimsd, dtype=self._dtype_np, base_comm=ctx.comm)
        else:
            self.shape, self.dims, self.dimsd, self.dtype = shape, dims, dimsd, self._dtype_np
            self.base_comm = ctx.comm
            self.rank, self.size = ctx.comm.Get_rank(), ctx.comm.Get_size()
        _core._register(self)

    def _stacked(self):
        return False

    # ---- lifetime ----
    def close(self):
        if getattr(self, "_op", None) is not None and self._op.value:
            lib.rmaop_op_destroy(byref(self._op))
        self._op = None

    @property
    def handle(self):
        if getattr(self, "_op", None) is None or not self._op.value:
            raise ValueError("rmaop: the operator is closed")
        return self._op

    # ---- local arrays ----
    def _apply(self, adjoint, x, out):
        h = self.handle  # first: a closed operator's layouts are freed (a Vec on them would crash)
        ctx = self.context
        src, dst = (self._d, self._m) if adjoint else (self._m, self._d)
        x = check_array(ctx, x, self._dtype_np, src.local_n, "the adjoint's input" if adjoint else "the input")
        if out is None:
            out = _core.empty(ctx, dst.local_n, self._dtype_np)
        else:
            out = check_array(ctx, out, self._dtype_np, dst.local_n, "out", writable=True)
        fn = "rmaop_op_apply_adjoint" if adjoint else "rmaop_op_apply"
        with Vec(src.layout, x) as vx, Vec(dst.layout, out) as vy, stream_order(ctx):
            call(fn, h, vx, vy, ctx=ctx.handle)
        return out

    def apply(self, x, out=None):
        """y = A x on local parts (returns y's local part)."""
        return self._apply(False, x, out)

    def apply_adjoint(self, y, out=None):
        """x = A^H y on local parts."""
        return self._apply(True, y, out)

    def dottest(self, seed=0):
        """rmaop's dot test (random vectors): |<Ax,y> - <x,A^H y>| relative. Collective."""
        r = c_double()
        call("rmaop_op_dottest", self.handle, int(seed), byref(r), ctx=self.context.handle)
        return r.value

    # ---- DistributedArrays ----
    def _local_in(self, x, side):
        """x's local array as this side expects it (in place when the split matches)."""
        xp = _core.array_module(self.context)
        if side.parts is not None:
            if not isinstance(x, StackedDistributedArray):
                raise TypeError(f"rmaop: {type(self).__name__} takes a StackedDistributedArray here, "
                                f"not {type(x).__name__}")
            if len(x.distarrays) != len(side.parts):
                raise ValueError(f"rmaop: the StackedDistributedArray has {len(x.distarrays)} arrays, the operator "
                                 f"{len(side.parts)}")
            return xp.concatenate([self._local_in(a, p).reshape(-1) for a, p in zip(x.distarrays, side.parts)])
        if not isinstance(x, DistributedArray):
            raise TypeError(f"rmaop: {type(self).__name__} takes a DistributedArray here, not {type(x).__name__}")
        if int(np.prod(x.global_shape)) != side.global_n:  # the same on every rank: all raise
            raise ValueError(f"rmaop: the DistributedArray has {int(np.prod(x.global_shape))} elements, "
                             f"{type(self).__name__} expects {side.global_n}")
        loc = x.local_array.reshape(-1)
        if side.kind == _lib.LAYOUT_BROADCAST:
            if x.partition is Partition.SCATTER and x.base_comm.allreduce(int(loc.size != side.global_n)):
                return _redistribute(x.base_comm, loc, [side.global_n] * x.base_comm.Get_size(), xp)
            return loc
        if x.partition is not Partition.SCATTER:  # a whole copy on every rank: take this rank's rows
            r = x.base_comm.Get_rank()
            off = sum(side.sizes[:r])
            return loc[off:off + side.sizes[r]]
        if x.base_comm.allreduce(int(loc.size != side.local_n)):  # every rank must take part
            return _redistribute(x.base_comm, loc, side.sizes, xp)
        return loc

    def _dist_out(self, side, like):
        """A new (Stacked)DistributedArray of this side's distribution and its flat local buffer."""
        xp = _core.array_module(self.context)
        buf = xp.empty(side.local_n, dtype=self._dtype_np)
        engine = "cupy" if xp is not np else "numpy"

        def shapes(s):  # None where PyLops-MPI's own split is the same: it then skips a collective check
            if s.kind == _lib.LAYOUT_BROADCAST:
                return None
            P, n = len(s.sizes), s.global_n
            return None if list(s.sizes) == [n // P + (r < n % P) for r in range(P)] else s.sizes

        if side.parts is None:
            return DistributedArray(global_shape=side.global_n, base_comm=self.context.comm,
                                    partition=side.partition, local_array=buf, local_shapes=shapes(side),
                                    engine=engine, dtype=self._dtype_np), buf
        arrays, off = [], 0
        for p in side.parts:  # each part a view of the one contiguous buffer rmaop writes
            view = buf[off:off + p.local_n]
            off += p.local_n
            arrays.append(DistributedArray(global_shape=p.global_n, base_comm=self.context.comm,
                                           partition=p.partition, local_array=view, local_shapes=shapes(p),
                                           engine=engine, dtype=self._dtype_np))
        return StackedDistributedArray(arrays, base_comm=self.context.comm), buf

    def _dist_apply(self, adjoint, x):
        src, dst = (self._d, self._m) if adjoint else (self._m, self._d)
        loc = self._local_in(x, src)
        y, buf = self._dist_out(dst, x)
        self._apply(adjoint, loc, buf)
        return y

    def _matvec(self, x):
        return self._dist_apply(False, x)

    def _rmatvec(self, x):
        return self._dist_apply(True, x)

    if _pm is None:  # the PyLops-MPI surface on plain arrays when PyLops-MPI is absent
        def matvec(self, x):
            return self.apply(x)

        def rmatvec(self, y):
            return self.apply_adjoint(y)

    def __repr__(self):
        return f"<{type(self).__name__} {self.shape[0]}x{self.shape[1]} {np.dtype(self._dtype_np)} on {self.context}>"


def make_class(name, stacked=False, doc=None):
    """The public base of an operator: RmaopOperator plus PyLops-MPI's base class when importable."""
    bases = [RmaopOperator]
    if _pm is not None:
        bases.append(_pm.MPIStackedLinearOperator if stacked else _pm.MPILinearOperator)
    ns = {"_stacked": (lambda self: True) if stacked else (lambda self: False)}
    if doc:
        ns["__doc__"] = doc
    return type(name, tuple(bases), ns)


LinearOperator = make_class("LinearOperator")
StackedLinearOperator = make_class("StackedLinearOperator", stacked=True)
