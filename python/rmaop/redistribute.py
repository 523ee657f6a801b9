"""A change of the distributed axis of an N-D array (PyLops-MPI DistributedArray.redistribute) on rmaop's
all-to-all (include/rmaop/alltoall.h): ``redistribute(x, axis)`` for a DistributedArray or this rank's block, and
``MPIRedistribute``, the same exchange kept as an operator for repeated use (its adjoint is the way back)."""
from ctypes import byref, c_int64

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import DistributedArray, Partition, Vec, call, stream_order
from ._operator import LinearOperator
from .ops_block import _agree


def _axis(axis, ndim):
    a = int(axis)
    return a + ndim if a < 0 else a


def _dims_array(dims):
    if not 1 <= len(dims) <= _lib.MAX_DIMS:
        raise ValueError(f"rmaop: {len(dims)} dims; 1 to {_lib.MAX_DIMS} are supported")
    arr = (c_int64 * _lib.MAX_DIMS)()
    for d, v in enumerate(dims):
        arr[d] = int(v)
    return arr


def _memory_of(a, memory):
    if memory is not None:
        return memory
    return "device" if _core.is_device_array(a) else None


def _move(ctx, block, dims, from_axis, to_axis):
    """This rank's block along to_axis of the array whose block along from_axis is ``block`` (collective)."""
    ndim = len(dims)
    xp = _core.array_module(ctx)
    src = _core.check_array(ctx, block, block.dtype, block.size, "x")
    dst_layout, src_layout = _lib.layout_t(), _lib.layout_t()
    call("rmaop_layout_create_axis", ctx.handle, ndim, _dims_array(dims), to_axis, byref(dst_layout), ctx=ctx.handle)
    try:
        call("rmaop_layout_create_local", ctx.handle, int(src.size), byref(src_layout), ctx=ctx.handle)
        n = _core.layout_kind(dst_layout)[2]
        out = xp.empty(int(n), dtype=src.dtype)
        with Vec(src_layout, src) as vx, Vec(dst_layout, out) as vy, stream_order(ctx):
            call("rmaop_vec_redistribute", vx, ndim, _dims_array(dims), from_axis, to_axis, vy, ctx=ctx.handle)
    finally:
        lib = _lib.lib
        lib.rmaop_layout_destroy(byref(src_layout))
        lib.rmaop_layout_destroy(byref(dst_layout))
    shape = list(dims)
    shape[to_axis] = int(n) // max(1, int(np.prod(dims)) // max(1, dims[to_axis])) if dims[to_axis] else 0
    return out.reshape(shape)


def redistribute(x, axis, *, from_axis=0, base_comm=None, context=None, backend=None, sync=None, transport=None,
                 memory=None):
    """``x`` distributed along ``axis`` instead (PyLops-MPI ``x.redistribute(axis)``). Collective.

    A DistributedArray (SCATTER, N-D ``global_shape``) comes back as a new one split along ``axis`` with
    PyLops-MPI's balanced split (the first n mod P ranks one more), whatever its split along its own axis; when
    ``axis`` is already its axis, or it is not SCATTER, it is returned as it is (as PyLops-MPI does). A NumPy or
    CuPy array is this rank's block of an array split along ``from_axis`` (the other axes whole; the global shape
    is the blocks' sum along it, over ``base_comm``): this rank's block along ``axis`` is returned.

    One exchange (rmaop_vec_redistribute: the blocks bound for each rank packed, one all-to-all, unpacked); the
    exchange is made and freed by each call, so a redistribution repeated many times is cheaper as an
    ``MPIRedistribute`` operator. CuPy arrays use a device context (``memory="device"`` by default for them).
    float32, float64, complex64 and complex128 (TypeError for other dtypes).
    """
    if DistributedArray is not None and isinstance(x, DistributedArray):
        dims = tuple(int(d) for d in x.global_shape)
        to = _axis(axis, len(dims))
        if to == x.axis or x.partition is not Partition.SCATTER:
            return x
        ctx = _core.resolve_context(context, x.base_comm, backend, sync, transport,
                                    _memory_of(x.local_array, memory))
        block = _move(ctx, x.local_array.reshape(-1), dims, x.axis, to)
        y = DistributedArray(global_shape=dims, base_comm=x.base_comm, partition=Partition.SCATTER, axis=to,
                             engine=x.engine, dtype=x.dtype)
        if tuple(y.local_shape) != tuple(block.shape):  # the same split on every rank: all raise
            raise RuntimeError(f"rmaop: PyLops-MPI splits axis {to} as {y.local_shape}, rmaop as {block.shape}")
        y[:] = block
        return y
    comm = MPI.COMM_WORLD if base_comm is None else base_comm
    a = x if (_core.is_device_array(x) or isinstance(x, np.ndarray)) else np.asarray(x)
    shapes = comm.allgather(tuple(int(s) for s in a.shape))
    frm, to = _axis(from_axis, a.ndim), _axis(axis, a.ndim)
    others = {s[:frm] + s[frm + 1:] for s in shapes}
    _agree(comm, None if len(others) == 1 and 0 <= frm < a.ndim and 0 <= to < a.ndim else ValueError(
        f"rmaop: redistribute: the ranks' blocks {shapes} are not one array split along axis {from_axis} "
        f"(or an axis is out of range)"))
    dims = list(shapes[0])
    dims[frm] = sum(s[frm] for s in shapes)
    ctx = _core.resolve_context(context, comm, backend, sync, transport, _memory_of(a, memory))
    return _move(ctx, a.reshape(-1), tuple(dims), frm, to)


class MPIRedistribute(LinearOperator):
    """The redistribution of the C-ordered ``dims`` array from ``from_axis`` (this rank holding ``from_local``
    entries of it; None: the balanced split) to ``to_axis`` (balanced) as an operator
    (rmaop_op_create_redistribute): model and data are this rank's blocks (row-major), the adjoint is the way
    back (exact: a permutation). The exchange is made once, in the constructor. Collective."""

    def __init__(self, dims, from_axis, to_axis, from_local=None, base_comm=MPI.COMM_WORLD, dtype="float64", *,
                 context=None, backend=None, sync=None, transport=None, memory=None):
        dims = (int(dims),) if np.isscalar(dims) else tuple(int(d) for d in dims)
        dtype = np.dtype(dtype)
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        h = _lib.op_t()
        self.from_axis, self.to_axis = _axis(from_axis, len(dims)), _axis(to_axis, len(dims))
        call("rmaop_op_create_redistribute", ctx.handle, _core.dtype_code(dtype), len(dims), _dims_array(dims),
             self.from_axis, -1 if from_local is None else int(from_local), self.to_axis, byref(h), ctx=ctx.handle)
        self._rmaop_init(ctx, h, dims, dims)
