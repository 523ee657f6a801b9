"""Block-distributed operators with PyLops-MPI's names and signatures: MPIBlockDiag, MPIVStack, MPIHStack (one
rmaop block per rank, dense or callbacks into PyLops), MPIStackedVStack, MPIStackedBlockDiag (rmaop operators
stacked), MPIMatrixMult (kinds "block" and "summa") and MPIFredholm1.

Each constructor also takes rmaop's path keywords (``backend=``, ``sync=``, ``transport=``, ``memory=``) or a
``context=``; without them the default context of ``base_comm`` is used. Constructors are collective: an
argument that is wrong on one rank raises the same exception on every rank (the ranks agree first), so a
mistake never leaves the others waiting in the library.
"""
import ctypes
import math
from ctypes import byref

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import call
from ._operator import LinearOperator, StackedLinearOperator, RmaopOperator

# ---- helpers -------------------------------------------------------------------------------------------------

_UNSUPPORTED = next((c for c in range(32) if _lib.status_name(c) == "RMAOP_ERR_UNSUPPORTED"), 5)


def _agree(comm, error):
    """Raises on every rank when ``error`` (an exception or None) is set on any: the first failing rank's type
    and message, prefixed with its rank."""
    errs = comm.allgather(None if error is None else (type(error), str(error)))
    for r, e in enumerate(errs):
        if e is not None:
            cls, msg = e
            if error is not None:
                raise error
            try:
                exc = cls(f"rank {r}: {msg}")
            except Exception:  # an exception class whose constructor takes other arguments
                exc = RuntimeError(f"rank {r}: {cls.__name__}: {msg}")
            raise exc


def _checked(comm, fn, *args):
    """fn(*args) on every rank; an exception on any rank is raised on every rank."""
    out, err = None, None
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - re-raised on every rank by _agree
        err = e
    _agree(comm, err)
    return out


def _to_host(a):
    """A NumPy copy of a CuPy array (the C specs copy from host memory); NumPy arrays as they are."""
    if _core.is_device_array(a):
        return a.get()
    return np.asarray(a)


def _agreed_dtype(comm, dtypes, dtype):
    """``dtype`` if given, else the result type of every rank's ``dtypes`` (PyLops' _get_dtype over all ranks):
    rmaop's operator has one dtype on every rank."""
    if dtype is not None:
        dt = np.dtype(dtype)
    else:
        local = [np.dtype(d) for d in dtypes if d is not None]
        every = [d for ds in comm.allgather([d.str for d in local]) for d in ds]
        dt = np.result_type(*every) if every else np.dtype(np.float64)
    _core.dtype_code(dt)  # TypeError for a dtype rmaop lacks; the same dtype everywhere, so the same verdict
    return dt


def _is_pylops_op(op):
    return all(hasattr(op, a) for a in ("shape", "matvec", "rmatvec", "dtype"))


def _dense_of(op):
    """The dense matrix of a plain pylops.MatrixMult (no otherdims) over a NumPy or CuPy array, else None."""
    try:
        import pylops
    except ImportError:  # pragma: no cover
        return None
    if type(op) is not pylops.MatrixMult or getattr(op, "reshape", True):
        return None
    A = op.A
    if isinstance(A, np.ndarray) or _core.is_device_array(A):
        A = _to_host(A)
        return A if A.ndim == 2 and A.shape == tuple(op.shape) else None
    return None


def _host_view(ptr, n, dtype):
    """A NumPy array over ``n`` elements of ``dtype`` at a host address (no copy)."""
    if n == 0 or not ptr:
        return np.empty(0, dtype=dtype)
    buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(buf, dtype=dtype, count=n)


class _Callbacks:
    """The C callbacks of one rank's block over a local PyLops operator. Exceptions inside become status 1
    (RMAOP_ERR_ARG) for the library and are kept in ``error`` for the Python caller."""

    def __init__(self, op, nrows, ncols, dtype):
        self.op, self.nrows, self.ncols, self.dtype = op, int(nrows), int(ncols), np.dtype(dtype)
        self.error = None
        self.apply = _lib.BLOCK_APPLY(self._forward)
        self.apply_adjoint = _lib.BLOCK_APPLY(self._adjoint)

    def _run(self, fn, nin, nout, pin, pout):
        try:
            x = _host_view(pin, nin, self.dtype)
            y = _host_view(pout, nout, self.dtype)
            r = np.asarray(fn(x)).reshape(-1)
            if r.size != nout:
                raise ValueError(f"rmaop: the local operator returned {r.size} elements, the block has {nout}")
            if np.iscomplexobj(r) and not np.iscomplexobj(y):
                if np.any(r.imag):
                    raise TypeError(f"rmaop: the local operator returned complex values for a {self.dtype} operator")
                r = r.real
            y[...] = r
            return 0
        except BaseException as e:  # noqa: BLE001 - a ctypes callback must not raise
            self.error = e
            return 1

    def _forward(self, user, x, y):
        return self._run(self.op.matvec, self.ncols, self.nrows, x, y)

    def _adjoint(self, user, y, x):
        return self._run(self.op.rmatvec, self.nrows, self.ncols, y, x)


class _BlockBase(LinearOperator):
    """An rmaop block operator (rmaop_op_create_blockdiag / vstack / hstack) over this rank's PyLops ops."""
    _create = None   # the C constructor
    _local = None    # the pylops class that composes a rank's ops (BlockDiag, VStack, HStack)

    def _build(self, ops, nrows, ncols, dense, dtype, ctx):
        """dense: this rank's block as one matrix (nrows x ncols) or None for callbacks."""
        comm = ctx.comm
        self._cb = None
        if ctx.memory == "device":
            needs = comm.allgather(dense is None)
            if any(needs):
                raise _lib.RmaopUnsupported(
                    "RMAOP_ERR_UNSUPPORTED", _UNSUPPORTED,
                    f"{type(self).__name__} on a device context needs every rank's ops to be pylops.MatrixMult over "
                    f"a dense array (ranks {[r for r, n in enumerate(needs) if n]} have other operators, which run "
                    f"as host callbacks); build it on a host context (memory='host') or pass MatrixMult ops")
        blk = _lib.Block()
        blk.nrows, blk.ncols = int(nrows), int(ncols)
        if dense is not None:
            buf = np.ascontiguousarray(dense, dtype=dtype)
            if buf.size == 0:
                buf = np.zeros(1, dtype=dtype)  # a valid pointer for an empty block (the C copies nothing)
            blk.dense = buf.ctypes.data
        else:
            import pylops
            local = getattr(pylops, self._local)(list(ops), dtype=dtype)
            self._cb = _Callbacks(local, nrows, ncols, dtype)
            blk.apply = self._cb.apply
            blk.apply_adjoint = self._cb.apply_adjoint
        h = _lib.op_t()
        call(self._create, ctx.handle, _core.dtype_code(dtype), byref(blk), byref(h), ctx=ctx.handle)
        return h

    def _apply(self, adjoint, x, out):
        if self._cb is None:
            return super()._apply(adjoint, x, out)
        self._cb.error = None
        try:
            return super()._apply(adjoint, x, out)
        except _lib.RmaopError as e:
            if self._cb.error is not None:
                err, self._cb.error = self._cb.error, None
                raise _lib.RmaopError(e.status, e.code, f"{e.message} (the local operator raised "
                                      f"{type(err).__name__}: {err})") from err
            raise


def _ops_list(comm, ops, what):
    def check():
        lst = list(ops)
        for i, op in enumerate(lst):
            if not _is_pylops_op(op):
                raise TypeError(f"rmaop: {what}: ops[{i}] is a {type(op).__name__}, not a pylops LinearOperator")
        return lst
    return _checked(comm, check)


class MPIBlockDiag(_BlockBase):
    """PyLops-MPI MPIBlockDiag: block-diagonal operator of every rank's ``ops`` (pylops LinearOperators).

    Rank r's model part is the concatenation of its ops' models (SCATTER, ``local_shapes_m``), its data part
    the concatenation of their outputs (``local_shapes_n``). When every op of a rank is a plain
    ``pylops.MatrixMult`` over a dense array, the rank's block is one dense matrix in the library; otherwise
    the library calls back into ``pylops.BlockDiag(ops)`` (host memory only). ``mask`` is not supported.
    """
    _create = "rmaop_op_create_blockdiag"
    _local = "BlockDiag"

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, mask=None, dtype=None, *, context=None, backend=None,
                 sync=None, transport=None, memory=None):
        _agree(base_comm, None if mask is None else NotImplementedError(
            "rmaop: MPIBlockDiag(mask=...) is not supported: rmaop's reductions (dot, norm) always span the whole "
            "communicator; build the operator on a sub-communicator (base_comm=comm.Split(...)) instead"))
        ops = _ops_list(base_comm, ops, "MPIBlockDiag")
        self.ops, self.mask = ops, mask
        nops = np.array([op.shape[0] for op in ops], dtype=np.int64)
        mops = np.array([op.shape[1] for op in ops], dtype=np.int64)
        self.nops, self.mops = int(nops.sum()), int(mops.sum())
        self.local_shapes_n = base_comm.allgather((self.nops,))
        self.local_shapes_m = base_comm.allgather((self.mops,))
        self.nnops = np.insert(np.cumsum(nops), 0, 0)
        self.mmops = np.insert(np.cumsum(mops), 0, 0)
        dtype = _agreed_dtype(base_comm, [op.dtype for op in ops], dtype)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        denses = [_dense_of(op) for op in ops]
        dense = None
        if all(d is not None for d in denses):
            dense = np.zeros((self.nops, self.mops), dtype=dtype)
            for i, d in enumerate(denses):
                dense[self.nnops[i]:self.nnops[i + 1], self.mmops[i]:self.mmops[i + 1]] = d
        h = self._build(ops, self.nops, self.mops, dense, dtype, ctx)
        self._rmaop_init(ctx, h, (sum(s[0] for s in self.local_shapes_m),),
                         (sum(s[0] for s in self.local_shapes_n),), keep=(self._cb, ops))


def _stack(ops, base_comm, dtype, axis, name):
    """What MPIVStack (axis 0) and MPIHStack (axis 1) agree on: the ops' common extent along the other axis (the
    same on every rank), this rank's extents along ``axis`` (their sum and PyLops-MPI's cumulative offsets), the
    dtype, and the dense form when every op has one."""
    ops = _ops_list(base_comm, ops, name)
    common = [int(c) for cs in base_comm.allgather([int(op.shape[1 - axis]) for op in ops]) for c in cs]
    if len(set(common)) > 1:
        raise ValueError(f"Operators have different number of {'columns' if axis == 0 else 'rows'}")
    if not common:
        raise ValueError(f"rmaop: {name} needs at least one operator on some rank")
    sizes = np.array([op.shape[axis] for op in ops], dtype=np.int64)
    dtype = _agreed_dtype(base_comm, [op.dtype for op in ops], dtype)
    denses = [_dense_of(op) for op in ops]
    dense = None
    if all(d is not None for d in denses):
        empty = (0, common[0]) if axis == 0 else (common[0], 0)
        dense = np.concatenate(denses, axis=axis) if denses else np.zeros(empty)
    return ops, int(sizes.sum()), common[0], np.insert(np.cumsum(sizes), 0, 0), dtype, dense


class MPIVStack(_BlockBase):
    """PyLops-MPI MPIVStack: every rank's ``ops`` stacked vertically. The model is BROADCAST (every op has the
    same number of columns on every rank), the data SCATTER (``local_shapes_n``); the adjoint sums every
    rank's ``sum_i op_i^H y_i`` with one reduction and is BROADCAST."""
    _create = "rmaop_op_create_vstack"
    _local = "VStack"

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None, *, context=None, backend=None, sync=None,
                 transport=None, memory=None):
        self.ops, self.nops, self.mops, self.nnops, dtype, dense = _stack(ops, base_comm, dtype, 0, "MPIVStack")
        self.local_shapes_n = base_comm.allgather((self.nops,))
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        h = self._build(self.ops, self.nops, self.mops, dense, dtype, ctx)
        self._rmaop_init(ctx, h, (self.mops,), (sum(s[0] for s in self.local_shapes_n),), keep=(self._cb, self.ops))


class MPIHStack(_BlockBase):
    """PyLops-MPI MPIHStack (the adjoint of an MPIVStack of the ops' adjoints): every rank's ``ops`` stacked
    horizontally. The model is SCATTER (rank r: the concatenation of its ops' models), the data BROADCAST (every
    op has the same number of rows on every rank); the forward sums every rank's ``sum_i op_i x_i`` with one
    reduction."""
    _create = "rmaop_op_create_hstack"
    _local = "HStack"

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None, *, context=None, backend=None, sync=None,
                 transport=None, memory=None):
        self.ops, self.mops, self.nops, self.mmops, dtype, dense = _stack(ops, base_comm, dtype, 1, "MPIHStack")
        self.local_shapes_m = base_comm.allgather((self.mops,))
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        h = self._build(self.ops, self.nops, self.mops, dense, dtype, ctx)
        self._rmaop_init(ctx, h, (sum(s[0] for s in self.local_shapes_m),), (self.nops,), keep=(self._cb, self.ops))


# ---- stacked operators over rmaop operators ------------------------------------------------------------------

def _stacked_ops(ops, what, dtype):
    ops = list(ops)
    if not ops:
        raise ValueError(f"rmaop: {what} needs at least one operator")
    for i, op in enumerate(ops):
        if not isinstance(op, RmaopOperator):
            raise TypeError(f"rmaop: {what}: ops[{i}] is a {type(op).__name__}, not an rmaop operator (stack "
                            f"PyLops-MPI operators with pylops_mpi.{what})")
        if getattr(op, "_bridged", False):
            raise ValueError(f"rmaop: {what}: ops[{i}] ({type(op).__name__}) converts its vectors in Python around "
                             f"the library's operator ({op._bridged}), so the library cannot stack it")
        op.handle  # noqa: B018 - raises when closed
    ctx = ops[0].context
    if any(op.context is not ctx for op in ops):
        raise ValueError(f"rmaop: {what}: the operators are on different contexts")
    dts = {np.dtype(op.dtype) for op in ops}
    if len(dts) > 1:
        raise TypeError(f"rmaop: {what}: the operators have different dtypes {sorted(d.name for d in dts)}")
    if dtype is not None and np.dtype(dtype) not in dts:
        raise TypeError(f"rmaop: {what}: dtype {np.dtype(dtype)} differs from the operators' {dts.pop()} (rmaop "
                        f"does not convert between dtypes inside an operator)")
    return ops, ctx


class MPIStackedVStack(StackedLinearOperator):
    """PyLops-MPI MPIStackedVStack: rmaop operators that share one model, stacked vertically. The data is a
    StackedDistributedArray (part i: ``ops[i]``'s data); the adjoint is ``sum_i ops[i]^H y_i``. The library
    begins every part's communication before ending any."""

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None):
        ops, ctx = _stacked_ops(ops, "MPIStackedVStack", dtype)
        if len(set(op.shape[1] for op in ops)) > 1:
            raise ValueError("Operators have different number of columns")
        self.ops = ops
        arr = (_lib.op_t * len(ops))(*[op.handle.value for op in ops])
        h = _lib.op_t()
        call("rmaop_op_create_stacked_vstack", len(ops), arr, byref(h), ctx=ctx.handle)
        self._rmaop_init(ctx, h, (ops[0].shape[1],), (int(sum(op.shape[0] for op in ops)),), keep=(ops,))


class MPIStackedBlockDiag(StackedLinearOperator):
    """PyLops-MPI MPIStackedBlockDiag: rmaop operators along the diagonal; model and data are
    StackedDistributedArrays (part i: ``ops[i]``'s)."""

    def __init__(self, ops, base_comm=MPI.COMM_WORLD, dtype=None):
        ops, ctx = _stacked_ops(ops, "MPIStackedBlockDiag", dtype)
        self.ops = ops
        arr = (_lib.op_t * len(ops))(*[op.handle.value for op in ops])
        h = _lib.op_t()
        call("rmaop_op_create_stacked_blockdiag", len(ops), arr, byref(h), ctx=ctx.handle)
        self._rmaop_init(ctx, h, (int(sum(op.shape[1] for op in ops)),), (int(sum(op.shape[0] for op in ops)),),
                         keep=(ops,))


# ---- dense multiply --------------------------------------------------------------------------------------------

def _blocks(ctx, kind, N, K, M, rank):
    b = _lib.MatmulBlocks()
    call("rmaop_op_matmul_get_blocks", ctx.handle, _lib.MATMUL[kind], int(N), int(K), int(M), int(rank), byref(b),
         ctx=ctx.handle)
    return b


class MPIMatrixMult(LinearOperator):
    """PyLops-MPI MPIMatrixMult: Y = A X (A: N x K, X: K x M, Y: N x M), adjoint X = A^H Y.

    ``kind="summa"``: PyLops-MPI's layout on a g x g grid, g = isqrt(P): rank (i, j) = (r // g, r % g) passes
    A's block (rows: block i of N, columns: block j of K, blocks of ceil(n / g), the last ones shorter); its
    model part is X's block (K block i x M block j) and its data part Y's (N block i x M block j), row-major.
    Where PyLops-MPI requires P to be a perfect square, ranks >= g * g here are idle: they pass an empty A
    and hold empty parts.

    ``kind="block"``: rmaop's 1-D split over all P ranks (any P): rank r passes A's rows
    ``[r0, r0 + n_r)`` of the balanced split (the first N mod P ranks one row more; all K columns), its model
    part is the same split of X's rows (K over P, all M columns) and its data part Y's rows. At P = 1 this is
    PyLops-MPI's layout; for P > 1 PyLops-MPI's "block" (a square grid, X's column blocks replicated over each
    grid row) is not reproduced. ``saveAt`` has no effect (the library keeps one copy of A); ``A`` is copied.
    ``blocks`` is this rank's rmaop_matmul_blocks (offsets and sizes of its A, X and Y blocks).
    """

    def __init__(self, A, M, saveAt=False, base_comm=MPI.COMM_WORLD, kind="summa", dtype="float64",
                 base_comm_nccl=None, *, context=None, backend=None, sync=None, transport=None, memory=None):
        if kind not in ("summa", "block"):
            raise NotImplementedError("kind must be summa or block")
        _agree(base_comm, None if base_comm_nccl is None else NotImplementedError(
            "rmaop: base_comm_nccl is PyLops-MPI's NCCL path; rmaop picks its own: pass backend='nccl' (and "
            "memory='device') instead"))
        dtype = np.dtype(dtype)
        _core.dtype_code(dtype)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        A = _checked(base_comm, lambda: _to_host(A))
        _agree(base_comm, None if A.ndim == 2 else ValueError(f"rmaop: A must be a 2-D array, it is {A.ndim}-D"))
        P, rank = base_comm.Get_size(), base_comm.Get_rank()
        shapes = base_comm.allgather(tuple(int(s) for s in A.shape))
        if kind == "block":
            N = sum(s[0] for s in shapes)
            Ks = {s[1] for s in shapes}
            if len(Ks) > 1:
                raise ValueError(f"rmaop: MPIMatrixMult(kind='block'): every rank's A must have all K columns; the "
                                 f"ranks' blocks are {shapes}")
            K = Ks.pop()
        else:
            g = math.isqrt(P)
            N = sum(shapes[i * g][0] for i in range(g))
            K = sum(shapes[j][1] for j in range(g))
        M = int(M)
        if M < 0:
            raise ValueError(f"rmaop: M = {M} must not be negative")
        want = [_blocks(ctx, kind, N, K, M, r) for r in range(P)]
        for r, (s, b) in enumerate(zip(shapes, want)):
            exp = (b.a_nrows, b.a_ncols)
            if s != exp and not (not b.active and 0 in s):
                raise ValueError(
                    f"rmaop: MPIMatrixMult(kind={kind!r}): rank {r}'s block of A is {s[0]} x {s[1]}, but A "
                    f"{N} x {K} on {P} ranks gives it {exp[0]} x {exp[1]}" +
                    (" (idle rank: pass an empty array)" if not b.active else
                     f" (rows {b.a_row0}:{b.a_row0 + b.a_nrows}, columns {b.a_col0}:{b.a_col0 + b.a_ncols})"))
        self.blocks = want[rank]
        self.kind, self.saveAt, self.N, self.K, self.M = kind, saveAt, N, K, M
        self.A = np.ascontiguousarray(A, dtype=dtype)
        spec = _lib.MatmulSpec()
        spec.kind, spec.dtype = _lib.MATMUL[kind], _core.dtype_code(dtype)
        spec.N, spec.K, spec.M = N, K, M
        spec.nrows, spec.ncols = self.blocks.a_nrows, self.blocks.a_ncols
        spec.A = self.A.ctypes.data if self.A.size and self.blocks.active else None
        h = _lib.op_t()
        call("rmaop_op_create_matmul", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self._rmaop_init(ctx, h, (K, M), (N, M))


class MPIFredholm1(LinearOperator):
    """PyLops-MPI MPIFredholm1: d[s] = G[s] m[s] for every slice s; G is this rank's consecutive slices
    (nsl_r, nx, ny) (rank order; any count, zero included), the model (nsl, ny, nz) and the data (nsl, nx, nz)
    are BROADCAST. ``saveGt`` and ``usematmul`` have no effect (the library's products use G in place); G is
    copied."""

    def __init__(self, G, nz=1, saveGt=False, usematmul=True, base_comm=MPI.COMM_WORLD, dtype="float64", *,
                 context=None, backend=None, sync=None, transport=None, memory=None):
        dtype = np.dtype(dtype)
        _core.dtype_code(dtype)
        G = _checked(base_comm, lambda: _to_host(G))
        _agree(base_comm, None if G.ndim == 3 else ValueError(f"rmaop: G must be 3-D (nsl, nx, ny), it is {G.ndim}-D"))
        nz = int(nz)
        _agree(base_comm, None if nz >= 1 else ValueError(f"rmaop: nz = {nz} must be positive"))
        shapes = base_comm.allgather(tuple(int(s) for s in G.shape))
        if len({s[1:] for s in shapes}) > 1:
            raise ValueError(f"rmaop: MPIFredholm1: every rank's G must have the same nx, ny; the ranks' slices are "
                             f"{shapes}")
        self.nz, self.saveGt, self.usematmul = nz, saveGt, usematmul
        self.nsl, self.nx, self.ny = G.shape
        self.nsls = [s[0] for s in shapes]
        self.islstart = np.insert(np.cumsum(self.nsls)[:-1], 0, 0)
        self.islend = np.cumsum(self.nsls)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        self.G = np.ascontiguousarray(G, dtype=dtype)
        h = _lib.op_t()
        call("rmaop_op_create_fredholm1", ctx.handle, _core.dtype_code(dtype), self.nsl, self.nx, self.ny, nz,
             self.G.ctypes.data if self.G.size else None, byref(h), ctx=ctx.handle)
        nslstot = sum(self.nsls)
        self._rmaop_init(ctx, h, (nslstot, self.ny, nz), (nslstot, self.nx, nz))
