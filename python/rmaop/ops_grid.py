"""Operators on N-D grids distributed along axis 0, with PyLops-MPI's names and signatures: MPIFirstDerivative,
MPISecondDerivative, MPILaplacian, MPIGradient. Each also takes rmaop's path keywords (``backend=``, ``sync=``,
``transport=``, ``memory=``) or a ``context=``; without them the default context of ``base_comm`` is used."""
from ctypes import byref

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import call
from ._operator import LinearOperator, StackedLinearOperator


def _dims(dims):
    d = (int(dims),) if np.isscalar(dims) else tuple(int(v) for v in dims)
    if not 1 <= len(d) <= _lib.MAX_DIMS:
        raise ValueError(f"rmaop: dims has {len(d)} axes; 1 to {_lib.MAX_DIMS} are supported")
    return d


def _grid(dims):
    g = _lib.Grid()
    g.ndim = len(dims)
    for i, v in enumerate(dims):
        g.dims[i] = v
    g.local_rows = -1  # PyLops-MPI's balanced split of axis 0
    return g


def _sampling(values):
    """Sampling steps as floats; 0 is refused (rmaop would read it as 1, PyLops divides by it)."""
    out = tuple(float(v) for v in values)
    if any(v == 0.0 for v in out):
        raise ValueError(f"rmaop: sampling {out} has a zero step")
    return out


def _kind(kind, order=3):
    if kind == "centered":
        if order not in (3, 5):
            raise NotImplementedError("'order' must be '3, or '5'")
        return _lib.DERIV["centered5" if order == 5 else "centered3"]
    if kind not in ("forward", "backward"):
        raise NotImplementedError("'kind' must be 'forward', 'centered', or 'backward'")
    return _lib.DERIV[kind]


class _Derivative(LinearOperator):
    _create = None

    def __init__(self, dims, sampling, kind, edge, order, base_comm, dtype, context, backend, sync, transport,
                 memory):
        dims = _dims(dims)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        spec = _lib.DerivSpec()
        spec.grid = _grid(dims)
        spec.axis = 0
        spec.kind = _kind(kind, order)
        spec.edge = int(bool(edge))
        spec.sampling = _sampling((sampling,))[0]
        spec.dtype = _core.dtype_code(dtype)
        h = _lib.op_t()
        call(self._create, ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self.sampling, self.kind, self.edge, self.order = sampling, kind, edge, order
        self._rmaop_init(ctx, h, dims, dims)


class MPIFirstDerivative(_Derivative):
    """PyLops-MPI MPIFirstDerivative: first derivative along axis 0 (kinds forward, backward, centered with
    order 3 or 5), on rmaop's halo exchange.

    Beyond PyLops-MPI: a rank may hold fewer rows than the stencil reaches, or none (PyLops-MPI's ghost
    exchange raises or hangs there). Axis 0 needs at least 2 (forward, backward), 3 (centered) or 5 (order 5)
    samples (RmaopError RMAOP_ERR_ARG); sampling 0 is a ValueError."""
    _create = "rmaop_op_create_first_derivative"

    def __init__(self, dims, sampling=1.0, kind="centered", edge=False, order=3, base_comm=MPI.COMM_WORLD,
                 dtype=np.float64, *, context=None, backend=None, sync=None, transport=None, memory=None):
        super().__init__(dims, sampling, kind, edge, order, base_comm, dtype, context, backend, sync, transport,
                         memory)


class MPISecondDerivative(_Derivative):
    """PyLops-MPI MPISecondDerivative: second derivative along axis 0 (forward, backward, centered).
    Like MPIFirstDerivative, any split of the rows is allowed; axis 0 needs at least 3 samples."""
    _create = "rmaop_op_create_second_derivative"

    def __init__(self, dims, sampling=1.0, kind="centered", edge=False, base_comm=MPI.COMM_WORLD,
                 dtype=np.float64, *, context=None, backend=None, sync=None, transport=None, memory=None):
        super().__init__(dims, sampling, kind, edge, 3, base_comm, dtype, context, backend, sync, transport,
                         memory)


class MPILaplacian(LinearOperator):
    """PyLops-MPI MPILaplacian: the weighted sum of second derivatives along ``axes``.

    ``kind`` and ``edge`` apply to the second derivative along every listed axis, as in PyLops-MPI 0.8 and
    PyLops 2.8. Differences from PyLops-MPI: ``dimsd`` is ``dims`` (PyLops-MPI's is ``(prod(dims),)`` when
    ``axes[0]`` is not 0); weights that are all zero are refused (ValueError) rather than making the zero
    operator; every axis needs at least 3 samples (RmaopError RMAOP_ERR_ARG).
    """

    def __init__(self, dims, axes=(-2, -1), weights=(1, 1), sampling=(1, 1), edge=False, kind="centered",
                 base_comm=MPI.COMM_WORLD, dtype=np.float64, *, context=None, backend=None, sync=None,
                 transport=None, memory=None):
        dims = _dims(dims)
        axes = tuple(int(a) + len(dims) if int(a) < 0 else int(a) for a in axes)
        if not (len(axes) == len(weights) == len(sampling)):
            raise ValueError("axes, weights, and sampling have different size")
        if any(a < 0 or a >= len(dims) for a in axes):
            raise ValueError(f"rmaop: an axis of {axes} is outside the {len(dims)} dims")
        sampling = _sampling(sampling)
        if len(axes) and all(float(w) == 0.0 for w in weights):
            # the library reads all-zero weights as "ones" (its default)
            raise ValueError("rmaop: MPILaplacian weights are all zero")
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        spec = _lib.LaplacianSpec()
        spec.grid = _grid(dims)
        spec.naxes = len(axes)
        for i, (a, w, s) in enumerate(zip(axes, weights, sampling)):
            spec.axes[i], spec.weights[i], spec.sampling[i] = a, float(w), float(s)
        spec.edge = int(bool(edge))
        spec.kind = _kind(kind)
        spec.dtype = _core.dtype_code(dtype)
        h = _lib.op_t()
        call("rmaop_op_create_laplacian", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self.axes, self.weights, self.sampling, self.edge, self.kind = axes, weights, sampling, edge, kind
        self._rmaop_init(ctx, h, dims, dims)


class MPIGradient(StackedLinearOperator):
    """PyLops-MPI MPIGradient: the first derivative along every axis; data is a StackedDistributedArray of
    ``len(dims)`` arrays (part d: the derivative along axis d).

    Differences from PyLops-MPI: ``dimsd`` is serial PyLops' ``(len(dims), *dims)`` (PyLops-MPI's is flat);
    ``kind="centered"`` needs at least 3 samples on every axis (PyLops accepts 2), else RmaopError
    RMAOP_ERR_ARG; ranks with fewer rows than the stencil reaches, even none, are allowed (PyLops-MPI's ghost
    exchange hangs or raises on them)."""

    def __init__(self, dims, sampling=1, edge=False, kind="centered", base_comm=MPI.COMM_WORLD,
                 dtype="float64", *, context=None, backend=None, sync=None, transport=None, memory=None):
        dims = _dims(dims)
        samp = _sampling((sampling,) * len(dims) if np.isscalar(sampling) else tuple(sampling))
        if len(samp) != len(dims):
            raise ValueError(f"rmaop: sampling has {len(samp)} values for {len(dims)} dims")
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        spec = _lib.GradientSpec()
        spec.grid = _grid(dims)
        for i, s in enumerate(samp):
            spec.sampling[i] = float(s)
        spec.edge = int(bool(edge))
        spec.kind = _kind(kind)
        spec.dtype = _core.dtype_code(dtype)
        h = _lib.op_t()
        call("rmaop_op_create_gradient", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        self.sampling, self.edge, self.kind = samp, edge, kind
        self._rmaop_init(ctx, h, dims, (len(dims),) + dims)
