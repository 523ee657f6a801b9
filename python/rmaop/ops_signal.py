"""Signal-processing operators with PyLops-MPI's names and signatures: MPIMDC (multi-dimensional convolution,
rmaop_op_create_mdc) and MPINonStationaryConvolve1D (rmaop_op_create_nonstationary_convolve1d). Each also takes
rmaop's path keywords (``backend=``, ``sync=``, ``transport=``, ``memory=``) or a ``context=``; without them the
default context of ``base_comm`` is used. Constructors are collective: an argument that is wrong on one rank
raises on every rank."""
from ctypes import POINTER, byref, c_int64

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import call
from ._operator import LinearOperator
from .ops_block import _agree, _checked, _to_host

_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64),
         np.dtype(np.float32): np.dtype(np.float32), np.dtype(np.float64): np.dtype(np.float64)}


class MPIMDC(LinearOperator):
    """PyLops-MPI MPIMDC (a function there, a class here, called the same way): y = F^H I^H Fr I F x along the
    time axis, ``G`` this rank's consecutive frequencies (nf_local, ns, nr) in rank order (complex64 / complex128;
    a real G is used as complex). Model (nt, nr, nv) and data (nt, ns, nv) are BROADCAST and real (float32 or
    float64, the precision of G), as in PyLops-MPI; ``nfreq`` is the number of frequencies kept (clamped to
    nt // 2 + 1 as PyLops does) and every rank's nf_local must add up to it.

    ``fftengine``, ``saveGt`` and ``usematmul`` have no effect (the library uses FFTW on host memory, cuFFT and
    cuBLAS on device memory, and G in place). Beyond PyLops-MPI: a rank may hold no frequencies (PyLops-MPI reads
    G[0, 0, 0] for the dtype). An even ``nt`` with ``twosided`` is PyLops-MPI's ValueError; frequencies that do
    not add up to ``nfreq``, sizes below 1 and ranks that disagree are an RmaopError (RMAOP_ERR_ARG) naming them.
    """

    def __init__(self, G, nt, nv, nfreq, dt=1.0, dr=1.0, twosided=True, fftengine="numpy", saveGt=True, conj=False,
                 usematmul=False, prescaled=False, base_comm=MPI.COMM_WORLD, *, context=None, backend=None,
                 sync=None, transport=None, memory=None):
        G = _checked(base_comm, lambda: _to_host(G))
        _agree(base_comm, None if G.ndim == 3 else ValueError(f"rmaop: G must be 3-D (nf, ns, nr), it is {G.ndim}-D"))
        _agree(base_comm, ValueError("nt must be odd number") if twosided and int(nt) % 2 == 0 else None)
        dtype = np.dtype(G.dtype)
        _agree(base_comm, None if dtype in _REAL else TypeError(
            f"rmaop: G is {dtype}; MPIMDC takes complex64, complex128 (or float32, float64) kernels"))
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        self.G = np.ascontiguousarray(G)
        nf, ns, nr = (int(s) for s in G.shape)
        spec = _lib.MdcSpec()
        spec.dtype, spec.nf_local, spec.ns, spec.nr = _core.dtype_code(dtype), nf, ns, nr
        spec.G = self.G.ctypes.data if self.G.size else None
        spec.nt, spec.nv, spec.nfmax = int(nt), int(nv), int(nfreq)
        spec.dt, spec.dr = float(dt), float(dr)
        spec.twosided, spec.conj, spec.prescaled = int(bool(twosided)), int(bool(conj)), int(bool(prescaled))
        h = _lib.op_t()
        call("rmaop_op_create_mdc", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self.nt, self.nv, self.nfreq, self.dt, self.dr = int(nt), int(nv), int(nfreq), dt, dr
        self.twosided, self.conj, self.prescaled = bool(twosided), bool(conj), bool(prescaled)
        self.fftengine, self.saveGt, self.usematmul = fftengine, saveGt, usematmul
        self.ns, self.nr = ns, nr
        self._rmaop_init(ctx, h, (int(nt), nr, int(nv)), (int(nt), ns, int(nv)))


class MPINonStationaryConvolve1D(LinearOperator):
    """PyLops-MPI MPINonStationaryConvolve1D (a function there, a class here): the 1-D non-stationary convolution
    along ``axis`` of the ``dims`` array with the filters ``hs`` (nfilts x nh, nh odd) centred at the regularly
    spaced indices ``ih``, linearly interpolated in between (PyLops NonStationaryConvolve1D).

    The array is split along ``axis`` (balanced: the first dims[axis] mod P ranks one more entry; ``local_n=``
    gives this rank's count instead, zero allowed); rank r's model and data parts are its block with the other
    axes whole, row-major, in rank order, as PyLops-MPI's. The results are serial PyLops' for any split and
    filters anywhere: PyLops-MPI needs dims[axis] divisible by P and a filter on every rank, and its forward
    differs from serial PyLops' next to a block end where a window reaches past the neighbour's first filter.
    The adjoint is the exact transpose (conjugated filters for complex dtypes; PyLops does not conjugate).
    An even nh, ih out of range, irregular or not increasing, and ranks that disagree are an RmaopError
    (RMAOP_ERR_ARG) naming them (PyLops-MPI: ValueError).
    """

    def __init__(self, dims, hs, ih, axis=-1, base_comm=MPI.COMM_WORLD, dtype="float64", *, local_n=None,
                 context=None, backend=None, sync=None, transport=None, memory=None):
        dims = (int(dims),) if np.isscalar(dims) else tuple(int(d) for d in dims)
        _agree(base_comm, None if 1 <= len(dims) <= _lib.MAX_DIMS else ValueError(
            f"rmaop: dims has {len(dims)} axes; 1 to {_lib.MAX_DIMS} are supported"))
        dtype = np.dtype(dtype)
        _core.dtype_code(dtype)
        hs = _checked(base_comm, lambda: _to_host(hs))
        _agree(base_comm, None if hs.ndim == 2 else ValueError(
            f"rmaop: hs must be 2-D (nfilts, nh), it is {hs.ndim}-D"))
        _agree(base_comm, None if not (np.iscomplexobj(hs) and dtype.kind != "c") else TypeError(
            f"rmaop: hs is complex ({hs.dtype}) but dtype is {dtype}"))
        ih = np.ascontiguousarray(_to_host(ih), dtype=np.int64).reshape(-1)
        _agree(base_comm, None if ih.size == hs.shape[0] else ValueError(
            f"rmaop: ih has {ih.size} indices for {hs.shape[0]} filters"))
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        self.hs = np.ascontiguousarray(hs, dtype=dtype)
        self.ih = ih
        spec = _lib.NsconvSpec()
        spec.ndim = len(dims)
        for d, v in enumerate(dims):
            spec.dims[d] = v
        spec.axis = int(axis)
        spec.local_n = -1 if local_n is None else int(local_n)
        spec.nfilts, spec.nh = int(self.hs.shape[0]), int(self.hs.shape[1])
        spec.hs = self.hs.ctypes.data if self.hs.size else None
        spec.ih = ih.ctypes.data_as(POINTER(c_int64))
        spec.dtype = _core.dtype_code(dtype)
        h = _lib.op_t()
        call("rmaop_op_create_nonstationary_convolve1d", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self.axis = int(axis) + len(dims) if int(axis) < 0 else int(axis)
        self._rmaop_init(ctx, h, dims, dims)
        self.local_dims = tuple(int(self._m.local_n // max(1, int(np.prod(dims)) // dims[self.axis]))
                                if d == self.axis else n for d, n in enumerate(dims))
