"""What the sparse and proximal solvers share: arrays in and out of an operator's side, views of the library's
vectors for callbacks, PyLops-MPI's random start, the results of a solve, and layouts made from the splits of
DistributedArrays (kept per context, freed with it)."""
import ctypes
from ctypes import byref, c_void_p

import numpy as np

from . import _core, _lib
from ._core import DistributedArray, StackedDistributedArray, call
from ._operator import RmaopOperator, _Side


def is_dist(a):
    return DistributedArray is not None and isinstance(a, (DistributedArray, StackedDistributedArray))


def operator(Op, fn, what="Op"):
    """``Op`` checked to be an open rmaop operator."""
    if not isinstance(Op, RmaopOperator):
        raise TypeError(f"rmaop.{fn}: {what} must be an rmaop operator, not {type(Op).__name__}")
    Op.handle  # noqa: B018 - raises on a closed operator
    return Op


def local_in(Op, side, a, what):
    """This rank's contiguous array of ``a`` (DistributedArray, stacked or local) on ``side`` of ``Op``."""
    loc = Op._local_in(a, side) if is_dist(a) else a
    return _core.check_array(Op.context, loc, Op._dtype_np, side.local_n, what)


def out_like(Op, side, like):
    """A new output on ``side``: a (Stacked)DistributedArray when ``like`` is one, else a local array; and its
    flat buffer."""
    if is_dist(like):
        return Op._dist_out(side, like)
    buf = _core.empty(Op.context, side.local_n, Op._dtype_np)
    return buf, buf


def write_back(target, loc):
    """Copies the flat local values ``loc`` into ``target`` (a (Stacked)DistributedArray or array of that many
    local elements) in place; False when its local size differs (a redistributed input)."""
    if isinstance(target, StackedDistributedArray if StackedDistributedArray else ()):
        parts = target.distarrays
        if sum(int(p.local_array.size) for p in parts) != loc.size:
            return False
        off = 0
        for p in parts:
            n = int(p.local_array.size)
            p.local_array[...] = loc[off:off + n].reshape(p.local_array.shape)
            off += n
        return True
    arr = target.local_array if isinstance(target, DistributedArray if DistributedArray else ()) else target
    if arr.size != loc.size:
        return False
    if arr.reshape(-1) is not loc:
        arr[...] = loc.reshape(arr.shape)
    return True


def vec_view(ctx, vec, dtype):
    """A NumPy (host) or CuPy (device) array over a library vector's local memory (no copy)."""
    info = _lib.VecInfo()
    call("rmaop_vec_get_info", vec, byref(info), ctx=ctx.handle)
    ptr = c_void_p()
    call("rmaop_vec_get_array", vec, byref(ptr), ctx=ctx.handle)
    n, dt = int(info.local_n), np.dtype(dtype)
    if ctx.memory == "device":
        cp = _core.array_module(ctx)
        if n == 0 or not ptr.value:
            return cp.empty(0, dtype=dt)
        mem = cp.cuda.UnownedMemory(ptr.value, n * dt.itemsize, None)
        return cp.ndarray(n, dtype=dt, memptr=cp.cuda.MemoryPointer(mem, 0))
    if n == 0 or not ptr.value:
        return np.empty(0, dtype=dt)
    return np.frombuffer((ctypes.c_char * (n * dt.itemsize)).from_address(ptr.value), dtype=dt, count=n)


class callback_order:
    """Inside a callback from the library: CuPy's current stream waits for rmaop's on entry (the callback sees the
    iterate) and rmaop's for CuPy's on exit (the solver sees what the callback wrote); nothing on host memory."""

    def __init__(self, ctx):
        self.ctx = ctx

    def _wait(self, waiter, recorded):
        ev = _core._cp.cuda.Event(disable_timing=True)
        ev.record(recorded)
        waiter.wait_event(ev)

    def __enter__(self):
        if self.ctx._stream is not None:
            cp = _core._cp
            self._wait(cp.cuda.get_current_stream(), cp.cuda.ExternalStream(self.ctx._stream))
        return self

    def __exit__(self, *exc):
        if self.ctx._stream is not None:
            cp = _core._cp
            self._wait(cp.cuda.ExternalStream(self.ctx._stream), cp.cuda.get_current_stream())


def solver_callback(ctx, errors, body):
    """A rmaop_solver_callback that runs ``body(it)`` inside callback_order; an exception is kept in ``errors`` (the
    caller raises it after the solver returns) and its status stops the solver."""
    def cb(user, it, res, vec):
        try:
            with callback_order(ctx):
                body(it)
            return 0
        except BaseException as e:
            errors.append(e)
            return 1
    return _lib.SOLVER_CALLBACK(cb)


def run_solver(fn, Op, yl, xbuf, x0l, opts, errors):
    """rmaop_solve_<fn>(Op, y, x, opts) over the local arrays yl, xbuf (and x0l as opts.x0, if given) used in place;
    raises the first of ``errors`` (the callback's), then the status's RmaopError. Returns (results(info), kold,
    whether a CUDA graph ran)."""
    ctx = Op.context
    info = _lib.SolverInfo()
    vx0 = _core.Vec(Op._m.layout, x0l) if x0l is not None else None
    try:
        if vx0 is not None:
            opts.x0 = vx0._h
        with _core.Vec(Op._d.layout, yl) as vy, _core.Vec(Op._m.layout, xbuf) as vx, _core.stream_order(ctx):
            st = getattr(_lib.lib, f"rmaop_solve_{fn}")(Op.handle, vy, vx, byref(opts), byref(info))
        if errors:
            raise errors[0]
        _lib.check(st, ctx.handle)
        return results(info), float(info.kold), bool(info.graph)
    finally:
        _lib.lib.rmaop_solver_info_destroy(byref(info))
        if vx0 is not None:
            vx0.free()


def as_like(Op, side, buf, like):
    """``buf`` (a flat local array on ``side``) as ``like`` holds it: a new (Stacked)DistributedArray over a copy,
    or the copy itself."""
    out, mine = out_like(Op, side, like)
    mine[...] = buf
    return out


def random_start(parts, dtype, xp):
    """PyLops-MPI power_iteration's start: per local part, rand(n).astype(dtype) + cmpx * rand(n).astype(dtype)
    (two draws of the global NumPy / CuPy generator even for real dtypes, as PyLops-MPI makes)."""
    dtype = np.dtype(dtype)
    cmpx = 1j if np.issubdtype(dtype, np.complexfloating) else 0
    out = []
    for n in parts:
        out.append(xp.random.rand(int(n)).astype(dtype) + cmpx * xp.random.rand(int(n)).astype(dtype))
    return out


def local_parts(a, side):
    """The local sizes whose draws make PyLops-MPI's start on ``a`` (its parts' local sizes), or ``side``'s."""
    if isinstance(a, StackedDistributedArray if StackedDistributedArray else ()):
        return [int(np.prod(p.local_shape)) for p in a.distarrays]
    if isinstance(a, DistributedArray if DistributedArray else ()):
        return [int(np.prod(a.local_shape))]
    return [p.local_n for p in side.parts] if side.parts else [side.local_n]


def results(info, first=0):
    """iterations, reason and the history (from entry ``first``) of a rmaop_solver_info."""
    iters = int(info.iterations)
    hist = np.array(info.history[first:iters + 1]) if info.history else None
    return {"iterations": iters, "reason": _lib.REASONS.get(info.reason, str(info.reason)), "history": hist,
            "time_total": info.time_total, "time_comm": info.time_comm}


# ---- layouts of DistributedArrays' splits ----------------------------------------------------------------------

class _Layouts:
    """The layouts made for DistributedArrays' splits on one context, by split. A layout is made collectively the
    first time a split is seen (every rank sees the same splits in the same order: DistributedArray code is
    SPMD) and freed when the context is closed."""

    def __init__(self, ctx):
        self.context = ctx
        self._made = {}
        _core._register(self)

    def get(self, key):
        lay = self._made.get(key)
        if lay is None:
            lay = self._made[key] = self._make(key)
        return lay

    def _make(self, key):
        ctx = self.context
        kind = key[0]
        h = _lib.layout_t()
        if kind == "stacked":
            parts = [self.get(k) for k in key[1]]
            arr = (_lib.layout_t * len(parts))(*[p.value for p in parts])
            call("rmaop_layout_create_stacked", len(parts), arr, byref(h), ctx=ctx.handle)
        elif kind == "broadcast":
            call("rmaop_layout_create", ctx.handle, _lib.LAYOUT_BROADCAST, int(key[1]), byref(h), ctx=ctx.handle)
        else:
            call("rmaop_layout_create_local", ctx.handle, int(key[1][ctx.rank]), byref(h), ctx=ctx.handle)
        return h

    def close(self):
        for lay in reversed(list(self._made.values())):
            _lib.lib.rmaop_layout_destroy(byref(lay))
        self._made = {}


_caches = {}


def layouts(ctx):
    c = _caches.get(id(ctx))
    if c is None or c.context is not ctx:
        c = _caches[id(ctx)] = _Layouts(ctx)
    return c


def split_key(a, comm):
    """The key of the split of ``a``: a (Stacked)DistributedArray's from its local shapes (no communication), a
    local array's from every rank's size (an allgather)."""
    if isinstance(a, StackedDistributedArray if StackedDistributedArray else ()):
        return ("stacked", tuple(split_key(p, comm) for p in a.distarrays))
    if isinstance(a, DistributedArray if DistributedArray else ()):
        if a.partition is not _core.Partition.SCATTER:
            return ("broadcast", int(np.prod(a.global_shape)))
        return ("scatter", tuple(int(np.prod(s)) for s in a.local_shapes))
    if isinstance(a, (list, tuple)):
        return ("stacked", tuple(split_key(p, comm) for p in a))
    return ("scatter", tuple(comm.allgather(int(a.size))))


def side_of(ctx, a):
    """A side (as an operator's) for the split of ``a``."""
    return _Side(ctx.comm, layouts(ctx).get(split_key(a, ctx.comm)))
