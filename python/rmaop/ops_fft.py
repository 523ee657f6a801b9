"""Distributed N-D FFTs with PyLops-MPI's names and signatures: MPIFFTND and MPIFFT2D, on rmaop_op_create_fftnd
(FFTW on host memory, cuFFT on device memory; the all-to-all redistributions of include/rmaop/alltoall.h when axis 0
is transformed). Each also takes rmaop's path keywords (``backend=``, ``sync=``, ``transport=``, ``memory=``) or a
``context=``; without them the default context of ``base_comm`` is used."""
from ctypes import byref, c_double

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import call
from ._operator import LinearOperator

_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}

try:  # PyLops' enum of the norms, which PyLops-MPI stores in .norm
    from pylops.signalprocessing._baseffts import _FFTNorms
except ImportError:  # pragma: no cover - only without PyLops
    _FFTNorms = None


def _norm(norm):
    """PyLops-MPI's checks and messages for ``norm``."""
    if norm == "none":
        return "none"
    if isinstance(norm, str) and norm.lower() == "1/n":
        return "1/n"
    if norm == "backward":
        raise ValueError('To use no scaling on the forward transform, use "none". Note that in this case, the adjoint '
                         'transform will *not* have a 1/n scaling.')
    if norm == "forward":
        raise ValueError('To use 1/n scaling on the forward transform, use "1/n". Note that in this case, the adjoint '
                         'transform will *also* have a 1/n scaling.')
    raise ValueError(f"`norm`={norm} is not one of 'none' or '1/n'")


def _per_axis(value, n, cast):
    """A scalar repeated for the n axes, or the given sequence (PyLops' _value_or_sized_to_array)."""
    arr = np.atleast_1d(np.asarray(value))
    if arr.size == 1:
        arr = np.repeat(arr, n)
    return np.array([cast(v) for v in arr])


class MPIFFTND(LinearOperator):
    """PyLops-MPI MPIFFTND: the N-D FFT along ``axes`` of the C-ordered ``dims`` array.

    Model and data are split by rows of axis 0 (PyLops-MPI's balanced split), so ``(Op @ x).asarray()`` is
    PyLops-MPI's output element for element; ranks may hold no rows (PyLops-MPI's mpi4py-fft pencils need at
    least one). The operator's dtype and both vectors' are the complex one of ``dtype`` (PyLops-MPI's ``cdtype``);
    a real model (``real=True`` or a real ``dtype``) is read by its real parts and the adjoint returns zero
    imaginary parts, as in PyLops-MPI (whose rmatvec also returns ``cdtype`` arrays). Real inputs are converted
    to ``cdtype`` (a copy).

    Attributes as PyLops-MPI's: ``dims``, ``dimsd``, ``axes``, ``nffts``, ``sampling``, ``fs``, ``real``, ``rdtype``,
    ``cdtype``, ``clinear``, ``norm``, ``ifftshift_before``, ``fftshift_after``. Beyond PyLops-MPI: ``nffts=``
    (keyword) pads or truncates each transformed axis as PyLops' FFTND (numpy.fft.fftn's ``s``); PyLops-MPI
    always transforms ``dims``. Repeated axes, fewer than two dims, or an axis out of range are an RmaopError
    (RMAOP_ERR_ARG) with the library's message, where PyLops-MPI warns or fails in NumPy.
    """

    def __init__(self, dims, axes=(0, 1, 2), sampling=1.0, norm="none", real=False, ifftshift_before=False,
                 fftshift_after=False, dtype="complex128", base_comm=MPI.COMM_WORLD, *, nffts=None, context=None,
                 backend=None, sync=None, transport=None, memory=None):
        dims = (int(dims),) if np.isscalar(dims) else tuple(int(d) for d in dims)
        axes = (int(axes),) if np.isscalar(axes) else tuple(int(a) for a in axes)
        naxes = len(axes)
        if not 1 <= naxes <= _lib.MAX_DIMS or len(dims) > _lib.MAX_DIMS:
            raise ValueError(f"rmaop: {len(dims)} dims and {naxes} axes: 1 to {_lib.MAX_DIMS} are supported")
        sampling = _per_axis(sampling, naxes, float)
        ifs = _per_axis(ifftshift_before, naxes, bool)
        ffs = _per_axis(fftshift_after, naxes, bool)
        if not (naxes == len(sampling) == len(ifs) == len(ffs)):
            raise ValueError("`axes`, `sampling`, `ifftshift_before` and `fftshift_after` must have the same number of "
                             f"elements. Received {naxes}, {len(sampling)}, {len(ifs)} and {len(ffs)}, respectively.")
        nfft = [0] * naxes if nffts is None else _per_axis(nffts, naxes, int)
        if len(nfft) != naxes:
            raise ValueError(f"rmaop: nffts has {len(nfft)} values for {naxes} axes")
        norm = _norm(norm)
        dtype = np.dtype(dtype)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        spec = _lib.FftSpec()
        spec.ndim, spec.naxes = len(dims), naxes
        for d, v in enumerate(dims):
            spec.dims[d] = v
        for i in range(naxes):
            spec.axes[i], spec.nffts[i], spec.sampling[i] = axes[i], int(nfft[i]), float(sampling[i])
            spec.ifftshift_before[i], spec.fftshift_after[i] = int(ifs[i]), int(ffs[i])
        spec.norm, spec.real, spec.dtype = _lib.FFT_NORM[norm], int(bool(real)), _core.dtype_code(dtype)
        h = _lib.op_t()
        call("rmaop_op_create_fftnd", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        info = _lib.FftInfo()
        call("rmaop_op_fft_get_info", h, byref(info), ctx=ctx.handle)
        self._info = info
        self.ndim, self.naxes, self.real = len(dims), naxes, bool(real)
        self.axes = np.array([info.axes[i] for i in range(naxes)])
        self.nffts = tuple(int(info.nffts[i]) for i in range(naxes))
        self.sampling, self.ifftshift_before, self.fftshift_after = sampling, ifs, ffs
        self.norm = (_FFTNorms.NONE if norm == "none" else _FFTNorms.ONE_OVER_N) if _FFTNorms else norm
        self.cdtype = _COMPLEX.get(dtype, dtype)
        self.rdtype = _REAL.get(dtype, dtype) if self.real else dtype
        self.clinear = not bool(info.real_model)
        self.fs = tuple(self._freqs(h, ctx, i) for i in range(naxes))
        dimsd = np.array([int(info.dimsd[d]) for d in range(len(dims))])
        self._rmaop_init(ctx, h, dims, tuple(int(v) for v in dimsd))
        self.dims, self.dimsd = dims, dimsd

    def _freqs(self, h, ctx, i):
        f = (c_double * int(self._info.nfreqs[i]))()
        call("rmaop_op_fft_get_freqs", h, i, f, ctx=ctx.handle)
        return np.array(f[:], dtype=np.float64)


class MPIFFT2D(MPIFFTND):
    """PyLops-MPI MPIFFT2D: MPIFFTND along exactly two ``axes`` (default (0, 1)); the frequencies are ``f1`` and
    ``f2`` (PyLops-MPI deletes ``fs``). Errors and differences as MPIFFTND."""

    def __init__(self, dims, axes=(0, 1), sampling=1.0, norm="none", real=False, ifftshift_before=False,
                 fftshift_after=False, dtype="complex128", base_comm=MPI.COMM_WORLD, *, nffts=None, context=None,
                 backend=None, sync=None, transport=None, memory=None):
        if len(dims) < 2:
            raise ValueError("FFT2D requires at least two input dimensions")
        if len(axes) != 2:
            raise ValueError("FFT2D must be applied along exactly two dimensions")
        super().__init__(dims, axes=axes, sampling=sampling, norm=norm, real=real,
                         ifftshift_before=ifftshift_before, fftshift_after=fftshift_after, dtype=dtype,
                         base_comm=base_comm, nffts=nffts, context=context, backend=backend, sync=sync,
                         transport=transport, memory=memory)
        self.f1, self.f2 = self.fs
        del self.fs
