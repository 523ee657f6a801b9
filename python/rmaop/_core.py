"""Contexts, arrays as rmaop vectors (zero-copy), and the operator base class."""
import atexit
import ctypes
import weakref
from ctypes import byref, c_double, c_int, c_int64, c_void_p

import numpy as np
from mpi4py import MPI

from . import _lib
from ._lib import call, lib

try:  # PyLops-MPI is optional: with it, operators are its MPILinearOperator subclasses on DistributedArrays
    import pylops_mpi as _pm
    from pylops_mpi import DistributedArray, Partition, StackedDistributedArray
except ImportError:  # pragma: no cover - exercised only without pylops_mpi installed
    _pm = None
    DistributedArray = Partition = StackedDistributedArray = None
except Exception as _e:  # pragma: no cover - a broken installation (seen: matplotlib's ft2font raising SystemError)
    import warnings
    warnings.warn(f"rmaop: pylops_mpi is installed but failed to import ({type(_e).__name__}: {_e}); rmaop works on "
                  "NumPy / CuPy arrays only in this process", RuntimeWarning)
    _pm = None
    DistributedArray = Partition = StackedDistributedArray = None

try:
    import cupy as _cp
except ImportError:
    _cp = None

_NP_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.complex64): "c64",
              np.dtype(np.complex128): "c128"}
_NAME_DTYPES = {v: k for k, v in _NP_DTYPES.items()}


def dtype_code(dtype):
    """The rmaop dtype number of a NumPy dtype (float32, float64, complex64, complex128)."""
    dt = np.dtype(dtype)
    if dt not in _NP_DTYPES:
        raise TypeError(f"rmaop: dtype {dt} is not supported (float32, float64, complex64 or complex128)")
    return _lib.DTYPES[_NP_DTYPES[dt]]


def np_dtype(code):
    for name, c in _lib.DTYPES.items():
        if c == code:
            return _NAME_DTYPES[name]
    raise ValueError(f"rmaop: unknown dtype code {code}")


# ---- objects whose destruction is collective ----------------------------------------------------------
# Destroying a context or an operator is collective (windows are freed together). Python's garbage collector
# runs at different moments on different ranks, so rmaop never destroys them from __del__: close() does, in
# program order on every rank, and whatever is still open at exit is closed then, newest first, before mpi4py
# finalizes MPI.
_open = []  # weak references, in creation order


def _register(obj):
    _open.append(weakref.ref(obj))


@atexit.register
def _close_all():
    while _open:
        obj = _open.pop()()
        if obj is not None:
            obj.close()


class Context:
    """An rmaop context over an mpi4py communicator: one path (backend, memory kind, rma sync and transport).

    ``Context(comm=MPI.COMM_WORLD, backend="rma", memory="host", sync="lock", transport="auto",
    ipc_path=None, timeout=None, trace=None)``. A keyword left ``None`` comes from the RMAOP_* environment
    variable (RMAOP_BACKEND, RMAOP_MEMORY, RMAOP_RMA_SYNC, RMAOP_RMA_TRANSPORT, RMAOP_IPC_PATH, RMAOP_TIMEOUT,
    RMAOP_TRACE), else the library's default. Collective over ``comm``. ``close()`` frees it (collective);
    open contexts are closed at exit.
    """

    def __init__(self, comm=None, backend=None, memory=None, *, sync=None, transport=None, ipc_path=None,
                 timeout=None, trace=None):
        self.comm = MPI.COMM_WORLD if comm is None else comm
        opts = _lib.CtxOptions()
        lib.rmaop_ctx_options_init(byref(opts))
        opts.backend = _lib.bstr(backend)
        opts.memory = _lib.bstr(memory)
        opts.rma.sync = _lib.bstr(sync)
        opts.rma.transport = _lib.bstr(transport)
        opts.rma.ipc_path = _lib.bstr(ipc_path)
        if timeout is not None:
            opts.timeout = float(timeout)
        if trace is not None:
            opts.trace = {False: 0, True: 1, "off": 0, "on": 1, "sync": 2}[trace] if not isinstance(trace, int) \
                else int(trace)
        h = _lib.ctx_t()
        call("rmaop_ctx_create_f", self.comm.py2f(), byref(opts), byref(h))
        self._h = h
        info = _lib.CtxInfo()
        call("rmaop_ctx_get_info", h, byref(info), ctx=h)
        self.rank, self.size = info.rank, info.size
        self.backend = info.backend.decode()
        self.memory = "device" if info.memory == _lib.MEMORY["device"] else "host"
        self.sync = {0: "fence", 1: "pscw", 2: "lock"}.get(info.rma.sync)
        self.timeout = info.timeout
        self._stream = None
        if self.memory == "device":
            s = c_void_p()
            call("rmaop_ctx_get_stream", h, byref(s), ctx=h)
            self._stream = s.value or 0
        _register(self)

    @property
    def handle(self):
        if self._h is None or not self._h.value:
            raise ValueError("rmaop: the context is closed")
        return self._h

    def close(self):
        """Frees the context (collective). Operators made on it must be closed first; close() closes those
        still open."""
        if getattr(self, "_h", None) is None or not self._h.value:
            return
        for ref in list(_open):  # operators of this context, newest first
            obj = ref()
            if obj is not None and obj is not self and getattr(obj, "context", None) is self:
                obj.close()
        lib.rmaop_ctx_destroy(byref(self._h))
        self._h = None

    def synchronize(self):
        """Waits for rmaop's GPU stream (no-op on host memory)."""
        call("rmaop_ctx_synchronize", self.handle, ctx=self.handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"rmaop.Context(backend={self.backend!r}, memory={self.memory!r}, sync={self.sync!r}, "
                f"size={self.size})")


_defaults = {}


def default_context(comm=None, **options):
    """The context a constructor uses when given none: one per (communicator, options), made on first use."""
    comm = MPI.COMM_WORLD if comm is None else comm
    key = (comm.py2f(), tuple(sorted((k, v) for k, v in options.items() if v is not None)))
    ctx = _defaults.get(key)
    if ctx is None or ctx._h is None:
        ctx = _defaults[key] = Context(comm, **{k: v for k, v in options.items() if v is not None})
    return ctx


def resolve_context(context, base_comm, backend=None, sync=None, transport=None, memory=None, **extra):
    """The context of an operator: ``context`` when given (its keywords must not be), else the default
    context of ``base_comm`` with those keywords."""
    if context is not None:
        if any(v is not None for v in (backend, sync, transport, memory)):
            raise ValueError("rmaop: give either context= or backend=/sync=/transport=/memory=, not both")
        return context
    return default_context(base_comm, backend=backend, sync=sync, transport=transport, memory=memory, **extra)


# ---- arrays ---------------------------------------------------------------------------------------------

def is_device_array(a):
    return hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray)


def array_module(ctx):
    if ctx.memory == "device":
        if _cp is None:
            raise ImportError("rmaop: a device context needs CuPy (pip install cupy-cuda13x)")
        return _cp
    return np


def array_pointer(a):
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    return a.__cuda_array_interface__["data"][0]


def empty(ctx, n, dtype):
    return array_module(ctx).empty(int(n), dtype=dtype)


def check_array(ctx, a, dtype, n, what, writable=False):
    """The flat, contiguous array of ``n`` elements of ``dtype`` in the context's memory that rmaop can use in
    place: ``a`` itself when it is one, else a converted copy (inputs only; outputs must fit exactly)."""
    dev = is_device_array(a)
    if ctx.memory == "device" and not dev:
        if writable:
            raise TypeError(f"rmaop: {what} must be a CuPy array on a device context, not {type(a).__name__}")
        a = _cp.asarray(a)
    elif ctx.memory == "host" and dev:
        raise TypeError(f"rmaop: {what} is a GPU array but the context's memory is host "
                        f"(make the operator with memory='device', or pass a NumPy array)")
    xp = array_module(ctx)
    if not isinstance(a, (np.ndarray,) if xp is np else (xp.ndarray,)):
        if writable:
            raise TypeError(f"rmaop: {what} must be a {xp.__name__} array, not {type(a).__name__}")
        a = xp.asarray(a)
    if a.size != n:
        raise ValueError(f"rmaop: {what} has {a.size} local elements, the operator expects {n}")
    if a.dtype != dtype or not a.flags.c_contiguous:
        if writable:
            raise ValueError(f"rmaop: {what} must be a contiguous {np.dtype(dtype)} array "
                             f"(it is {a.dtype}{'' if a.flags.c_contiguous else ', not contiguous'})")
        if a.dtype.kind == "c" and np.dtype(dtype).kind != "c":  # a cast would drop the imaginary part
            raise TypeError(f"rmaop: {what} is complex ({a.dtype}) but the operator is real ({np.dtype(dtype)})")
        a = xp.ascontiguousarray(a, dtype=dtype)
    if writable and xp is np and not a.flags.writeable:
        raise ValueError(f"rmaop: {what} is read-only")
    return a.reshape(-1)


class Vec:
    """An rmaop vector over a caller's array (rmaop_vec_create_with_array): rmaop reads and writes the array in
    place. Holds a reference to the array; free() (or the with block) drops the vector."""

    def __init__(self, layout, arr):
        self.arr = arr
        self._h = _lib.vec_t()
        ptr = array_pointer(arr) if arr.size else None
        call("rmaop_vec_create_with_array", layout, dtype_code(arr.dtype), ptr, byref(self._h))

    def free(self):
        if self._h:
            lib.rmaop_vec_destroy(byref(self._h))

    def __enter__(self):
        return self._h

    def __exit__(self, *exc):
        self.free()


def layout_sizes(comm, layout):
    """Every rank's local size of a layout (rmaop_layout_rank_range; no communication)."""
    n, off = c_int64(), c_int64()
    out = []
    for r in range(comm.Get_size()):
        call("rmaop_layout_rank_range", layout, r, byref(n), byref(off))
        out.append(n.value)
    return out


def layout_parts(layout):
    """The part layouts of a stacked layout, or None."""
    k = c_int()
    info = _lib.LayoutInfo()
    call("rmaop_layout_get_info", layout, byref(info))
    if info.kind != _lib.LAYOUT_STACKED:
        return None
    call("rmaop_layout_stack_nparts", layout, byref(k))
    parts = []
    for i in range(k.value):
        p = _lib.layout_t()
        call("rmaop_layout_stack_part", layout, i, byref(p))
        parts.append(p)
    return parts


def layout_kind(layout):
    info = _lib.LayoutInfo()
    call("rmaop_layout_get_info", layout, byref(info))
    return info.kind, info.global_n, info.local_n


# ---- CuPy stream order ------------------------------------------------------------------------------------

class _StreamOrder:
    """Orders rmaop's GPU stream after CuPy's current stream on entry and CuPy's after rmaop's on exit, with
    events (no host wait): CuPy kernels before an rmaop call finish before rmaop reads their output, and CuPy
    work after it sees rmaop's results."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        if self.ctx._stream is not None:
            ev = _cp.cuda.Event(disable_timing=True)
            ev.record(_cp.cuda.get_current_stream())
            _cp.cuda.ExternalStream(self.ctx._stream).wait_event(ev)
        return self

    def __exit__(self, *exc):
        if self.ctx._stream is not None:
            ev = _cp.cuda.Event(disable_timing=True)
            ev.record(_cp.cuda.ExternalStream(self.ctx._stream))
            _cp.cuda.get_current_stream().wait_event(ev)


def stream_order(ctx):
    return _StreamOrder(ctx)


def ctx_dot(ctx, layout, a, b):
    """numpy.vdot(a, b) over the layout (collective; the library's reduction, identical on every rank)."""
    r = (c_double * 2)()
    with Vec(layout, a) as va, Vec(layout, b) as vb, stream_order(ctx):
        call("rmaop_vec_dot", va, vb, r, ctx=ctx.handle)
    return complex(r[0], r[1]) if np.iscomplexobj(a) else r[0]
