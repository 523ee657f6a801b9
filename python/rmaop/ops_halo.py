"""MPIHalo with PyLops-MPI's name, signature, forward and data layout, on rmaop's N-D halo operator
(rmaop_op_create_halo: one exchange plan, corners included; the adjoint is the exact transpose)."""
import math
import numbers
from ctypes import byref

import numpy as np
from mpi4py import MPI

from . import _core, _lib
from ._core import call, check_array
from ._operator import LinearOperator
from .ops_block import _agree


def _ceil_split(n, p):
    """PyLops-MPI MPIHalo's blocks: ceil(n / p) each, the last ones shorter."""
    bs = math.ceil(n / p)
    return [min((c + 1) * bs, n) - min(c * bs, n) for c in range(p)]


def _balanced_split(n, p):
    """rmaop's blocks: n // p, the first n % p one more."""
    return [n // p + (c < n % p) for c in range(p)]


def _row_major(rank, procs):
    coords = []
    for p in reversed(procs):
        coords.append(rank % p)
        rank //= p
    return tuple(reversed(coords))


class _UserSide:
    """The data side as the Python caller sees it (when it differs from the library's layout)."""

    def __init__(self, sizes, rank):
        self.layout, self.kind, self.parts = None, _lib.LAYOUT_SCATTER, None
        self.sizes = list(sizes)
        self.global_n, self.local_n = int(sum(sizes)), int(sizes[rank])

    @property
    def partition(self):
        return _core.Partition.SCATTER


class MPIHalo(LinearOperator):
    """PyLops-MPI MPIHalo: each rank's block of an N-D array (``dims``, at most 4 axes, split over the cartesian
    grid ``proc_grid_shape``; default: every rank along the last axis) extended by ghost cells that hold the
    neighbours' values (diagonal neighbours included), zeros outside the array.

    ``halo`` as in PyLops-MPI: an int (the same width on both sides of every axis; at the array's boundary
    and along axes of one rank no ghost cells are added), a tuple of one value, one value per axis (both
    sides) or ``2 * ndim`` values (before, after per axis; ghost cells at the boundary kept, zero). The model is
    this rank's block (row-major, SCATTER), the data its extended block (``local_extent``, row-major).

    The adjoint is the exact transpose: the interior, plus every ghost cell added back at its owner (PyLops-MPI's
    rmatvec only crops the interior, which is not the adjoint). ``crop_adjoint=True`` makes ``rmatvec`` /
    ``apply_adjoint`` crop like PyLops-MPI (local, no communication); the library's operator (``handle``,
    ``dottest``, rmaop's solvers, stacked operators) keeps the exact transpose.

    Limits (NotImplementedError): an axis whose PyLops-MPI blocks (ceil(n / p) each) differ from rmaop's
    balanced ones (n // p, the first n % p one more), i.e. n % p not in {0, p - 1}; and an MPI cartesian
    communicator that reorders ranks. Widths beyond rmaop's (n // p on a split axis) are a ValueError, as in
    PyLops-MPI. On split axes the library's extended block carries ``halo`` cells on both sides everywhere;
    the scalar form's missing boundary cells (and ghost cells along axes of one rank) are cropped / zero-padded
    here, locally.
    """

    def __init__(self, dims, halo, proc_grid_shape=None, comm=MPI.COMM_WORLD, dtype=np.float64, *,
                 crop_adjoint=False, context=None, backend=None, sync=None, transport=None, memory=None):
        dims = (int(dims),) if np.isscalar(dims) else tuple(int(d) for d in dims)
        nd, P, rank = len(dims), comm.Get_size(), comm.Get_rank()
        if not 1 <= nd <= _lib.HALO_MAX_DIMS:
            raise ValueError(f"rmaop: MPIHalo supports 1 to {_lib.HALO_MAX_DIMS} axes, dims has {nd}")
        if any(d < 1 for d in dims):
            raise ValueError(f"rmaop: dims {dims} must be positive")
        dtype = np.dtype(dtype)
        _core.dtype_code(dtype)
        grid = (1,) * (nd - 1) + (P,) if proc_grid_shape is None else tuple(int(p) for p in proc_grid_shape)
        if len(grid) != nd:
            raise ValueError(f"rmaop: proc_grid_shape {grid} has {len(grid)} axes, dims {nd}")
        if math.prod(grid) != P:
            raise ValueError(f"grid_shape {grid} does not match comm size {P}")
        self.global_dims, self.ndim, self.comm, self.proc_grid_shape = dims, nd, comm, grid
        self.crop_adjoint = bool(crop_adjoint)

        # PyLops-MPI's coordinates (Create_cart with reorder) must be rmaop's (row-major, no reorder)
        cart = comm.Create_cart(grid, periods=[False] * nd, reorder=True)
        pcoords = tuple(cart.Get_coords(cart.Get_rank()))
        cart.Free()
        coords = _row_major(rank, grid)
        _agree(comm, None if pcoords == coords else NotImplementedError(
            f"rmaop: MPI's cartesian communicator puts this rank at {pcoords}, rmaop's grid (row-major, no "
            f"reorder) at {coords}"))
        for d in range(nd):
            if grid[d] > 1 and _ceil_split(dims[d], grid[d]) != _balanced_split(dims[d], grid[d]):
                raise NotImplementedError(
                    f"rmaop: MPIHalo splits axis {d} ({dims[d]} cells over {grid[d]} ranks) in blocks of "
                    f"{_ceil_split(dims[d], grid[d])}, rmaop's halo in {_balanced_split(dims[d], grid[d])}; "
                    f"rmaop supports the sizes where both agree (n % p = 0 or p - 1)")

        # widths: PyLops-MPI's normalisation (before, after per axis), scalar widths trimmed at the boundary
        if isinstance(halo, numbers.Integral):
            h = int(halo)
            if h < 0:
                raise ValueError("Halo widths must be non-negative")
            ulo = [h if coords[d] > 0 else 0 for d in range(nd)]
            uhi = [h if coords[d] < grid[d] - 1 else 0 for d in range(nd)]
            width = [(h, h)] * nd
        else:
            t = tuple(int(v) for v in halo)
            if len(t) == 1:
                t = t * (2 * nd)
            elif len(t) == nd:
                t = sum(((v, v) for v in t), ())
            elif len(t) != 2 * nd:
                raise ValueError(f"Invalid halo length {len(t)} for ndim={nd}")
            if any(v < 0 for v in t):
                raise ValueError("Halo widths must be non-negative")
            ulo, uhi = list(t[0::2]), list(t[1::2])
            width = [(t[2 * d], t[2 * d + 1]) for d in range(nd)]
        self.halo = tuple(v for d in range(nd) for v in (ulo[d], uhi[d]))
        split = [_balanced_split(dims[d], grid[d]) for d in range(nd)]
        self.local_dims = tuple(split[d][coords[d]] for d in range(nd))
        self.local_extent = tuple(self.local_dims[d] + ulo[d] + uhi[d] for d in range(nd))
        for d in range(nd):
            if grid[d] == 1:
                continue
            b, a = width[d]
            if b != a:
                raise ValueError("MPIHalo halo widths are not supported by the current one-hop exchange: halo width "
                                 "does not match neighbor halo width")
            if b > min(split[d][1:]) or a > min(split[d][:-1]):
                raise ValueError("MPIHalo halo widths are not supported by the current one-hop exchange: halo width "
                                 "exceeds local block size")

        # the library's halo: the widths of split axes on both sides everywhere, none along axes of one rank
        rlo = [width[d][0] if grid[d] > 1 else 0 for d in range(nd)]
        rhi = [width[d][1] if grid[d] > 1 else 0 for d in range(nd)]
        ctx = _core.resolve_context(context, comm, backend, sync, transport, memory)
        spec = _lib.HaloSpec()
        spec.ndim = nd
        for d in range(nd):
            spec.dims[d], spec.procs[d], spec.lo[d], spec.hi[d] = dims[d], grid[d], rlo[d], rhi[d]
        spec.dtype = _core.dtype_code(dtype)
        hop = _lib.op_t()
        call("rmaop_op_create_halo", ctx.handle, byref(spec), byref(hop), ctx=ctx.handle)
        info = _lib.HaloInfo()
        call("rmaop_op_halo_get_info", hop, byref(info), ctx=ctx.handle)
        rext = tuple(int(info.extended[d]) for d in range(nd))
        self._rext, self._uext = rext, self.local_extent
        # where the caller's extended block and the library's overlap (both hold the block at ulo / rlo)
        self._su = tuple(slice(max(0, ulo[d] - rlo[d]), min(self._uext[d], ulo[d] - rlo[d] + rext[d]))
                         for d in range(nd))
        self._sr = tuple(slice(s.start - ulo[d] + rlo[d], s.stop - ulo[d] + rlo[d]) for d, s in enumerate(self._su))
        self._core_slices = tuple(slice(ulo[d], ulo[d] + self.local_dims[d]) for d in range(nd))
        local_bridged = (ulo != rlo) or (uhi != rhi)
        self._bridged = ("the scalar halo's boundary trim, ghost cells along axes of one rank"
                         if any(comm.allgather(local_bridged)) else False)
        self._rmaop_init(ctx, hop, dims, None)
        self._local_dim_sizes = list(self._m.sizes)
        self._local_extent_sizes = comm.allgather(int(np.prod(self.local_extent)))
        if self._bridged:
            self._ud = _UserSide(self._local_extent_sizes, rank)
            self._shape = (self._ud.global_n, self._shape[1])
            self._dimsd = (self._ud.global_n,)
        else:
            self._ud = self._d

    # ---- local arrays: the caller's extended block <-> the library's ----
    def _into(self, a, out, n):
        if out is None:
            return a
        out = check_array(self.context, out, self._dtype_np, n, "out", writable=True)
        out[...] = a
        return out

    def _to_user(self, yr):
        xp = _core.array_module(self.context)
        u = xp.zeros(self._uext, dtype=self._dtype_np)
        u[self._su] = yr.reshape(self._rext)[self._sr]
        return u.reshape(-1)

    def _to_lib(self, yu):
        xp = _core.array_module(self.context)
        r = xp.zeros(self._rext, dtype=self._dtype_np)
        r[self._sr] = yu.reshape(self._uext)[self._su]
        return r.reshape(-1)

    def _apply(self, adjoint, x, out):
        ctx = self.context
        if not adjoint:
            if not self._bridged:
                return super()._apply(False, x, out)
            return self._into(self._to_user(super()._apply(False, x, None)), out, self._ud.local_n)
        y = check_array(ctx, x, self._dtype_np, self._ud.local_n, "the adjoint's input")
        if self.crop_adjoint:
            core = y.reshape(self._uext)[self._core_slices].reshape(-1)
            return self._into(core.copy() if out is None else core, out, self._m.local_n)
        if self._bridged:
            y = self._to_lib(y)
        return super()._apply(True, y, out)

    def _dist_apply(self, adjoint, x):
        src, dst = (self._ud, self._m) if adjoint else (self._m, self._ud)
        loc = self._local_in(x, src)
        y, buf = self._dist_out(dst, x)
        self._apply(adjoint, loc, buf)
        return y
