"""MPIHalo against PyLops-MPI's: forward and data layout equal; the adjoint is the exact transpose (checked
against a reference built from PyLops-MPI's forward), or PyLops-MPI's crop with crop_adjoint=True.
Collective: run under mpiexec (1, 2, 3 ranks)."""
import numpy as np
import pylops
import pylops_mpi
import pytest
from pylops_mpi import DistributedArray

import rmaop
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand, raises_all

P, R = comm.Get_size(), comm.Get_rank()
CGLS_RTOL = {k: v * 100 for k, v in RTOL.items()}

# (dims, halo, proc_grid_shape); every split axis has n % P in {0, P - 1} at 1, 2 and 3 ranks (8 over 3: 3, 3, 2)
CASES = {
    "1d-scalar": ((8,), 1, None),
    "2d-scalar-last": ((5, 8), 1, None),             # default grid (1, P): axis 0 gets no ghost cells
    "2d-scalar-w2": ((4, 8), 2, None),
    "2d-axis-tuple": ((8, 5), (1, 2), "first"),      # grid (P, 1): 2 zero cells on both sides of axis 1
    "3d-pairs": ((6, 3, 4), (1, 1, 0, 0, 2, 1), "first"),
    "2d-one": ((8, 5), (1,), "first"),
}


def grid(spec, nd):
    if spec == "first":
        return (P,) + (1,) * (nd - 1)
    return spec


def model(Ref, dtype, seed):
    """A random model on PyLops-MPI's MPIHalo blocks (the same global vector on every rank)."""
    sizes = Ref._local_dim_sizes
    full = rand(sum(sizes), dtype, seed)
    x = DistributedArray(global_shape=sum(sizes), local_shapes=[(s,) for s in sizes], dtype=dtype)
    off = sum(sizes[:R])
    x[:] = full[off:off + sizes[R]]
    return x


def data(Ref, dtype, seed):
    sizes = Ref._local_extent_sizes
    full = rand(sum(sizes), dtype, seed)
    y = DistributedArray(global_shape=sum(sizes), local_shapes=[(s,) for s in sizes], dtype=dtype)
    off = sum(sizes[:R])
    y[:] = full[off:off + sizes[R]]
    return y


class ExactHalo(pylops_mpi.MPILinearOperator):
    """PyLops-MPI's MPIHalo forward with the exact transpose as adjoint: the forward's ghost cells are copies
    of model entries (found by applying it to the entries' indices), the adjoint sums them back."""

    def __init__(self, Ref, halo):
        super().__init__(shape=Ref.shape, dtype=Ref.dtype, base_comm=comm)
        self.Ref = Ref
        sizes = Ref._local_dim_sizes
        self.off, self.sizes = sum(sizes[:R]), sizes
        idx = DistributedArray(global_shape=sum(sizes), local_shapes=[(s,) for s in sizes], dtype=np.float64)
        idx[:] = np.arange(self.off, self.off + sizes[R]) + 1.0
        Ref64 = pylops_mpi.MPIHalo(Ref.global_dims, halo, Ref.proc_grid_shape, dtype=np.float64)
        self.src = np.rint((Ref64 @ idx).local_array).astype(np.int64) - 1  # -1: a zero outside the array

    def _matvec(self, x):
        return self.Ref.matvec(x)

    def _rmatvec(self, y):
        ok = self.src >= 0
        part = np.zeros(sum(self.sizes), dtype=self.dtype)
        np.add.at(part, self.src[ok], y.local_array[ok])
        total = np.zeros_like(part)
        comm.Allreduce(part, total)
        x = DistributedArray(global_shape=self.shape[1], local_shapes=[(s,) for s in self.sizes], dtype=self.dtype)
        x[:] = total[self.off:self.off + self.sizes[R]]
        return x


def make(case, dtype, **kw):
    dims, halo, g = CASES[case]
    g = grid(g, len(dims))
    Op = rmaop.MPIHalo(dims, halo, g, dtype=dtype, **kw)
    Ref = pylops_mpi.MPIHalo(dims, halo, g, dtype=dtype)
    return Op, Ref, halo


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_halo(case, dtype):
    Op, Ref, halo = make(case, dtype)
    rt = RTOL[np.dtype(dtype)]
    check_all(Op.shape == Ref.shape and Op.dims == Ref.dims, f"shape {Op.shape} {Ref.shape}")
    check_all(Op.local_dims == Ref.local_dims and Op.local_extent == Ref.local_extent and Op.halo == Ref.halo,
              f"layout {Op.local_dims} {Op.local_extent} {Op.halo} vs {Ref.local_dims} {Ref.local_extent} {Ref.halo}")
    check_all(Op._local_extent_sizes == Ref._local_extent_sizes, "data sizes")
    x, y = model(Ref, dtype, 1), data(Ref, dtype, 2)
    # forward: PyLops-MPI's values and layout
    yo, yr = Op @ x, Ref @ x
    check_all(yo.local_shape == yr.local_shape and yo.partition == yr.partition, "forward layout")
    allclose_all(yo.local_array, yr.local_array, rt, f"{case} forward")
    # adjoint: the exact transpose of that forward
    Ex = ExactHalo(Ref, halo)
    xo = Op.H @ y
    allclose_all(xo.local_array, (Ex.H @ y).local_array, rt, f"{case} adjoint (exact)")
    check_all(xo.local_shape == (Ref.H @ y).local_shape, "adjoint layout")
    # ... which on data with zero ghost cells is PyLops-MPI's crop
    yz = data(Ref, dtype, 2)
    ext = np.zeros(Ref.local_extent, dtype)
    core = tuple(slice(lo, lo + n) for lo, n in zip(Ref.halo[::2], Ref.local_dims))
    ext[core] = yz.local_array.reshape(Ref.local_extent)[core]
    yz[:] = ext.ravel()
    allclose_all((Op.H @ yz).local_array, (Ref.H @ yz).local_array, rt, f"{case} adjoint on interior-only data")
    e = Op.dottest(seed=5)
    check_all(e <= (1e-5 if rt > 1e-10 else 1e-12), f"dot test {e:.2e}")
    # local arrays
    allclose_all(Op.apply(x.local_array), yr.local_array, rt, "apply")
    out = np.empty(Op.local_dims, dtype).ravel()
    Op.apply_adjoint(y.local_array, out=out)
    allclose_all(out, xo.local_array, rt, "apply_adjoint(out=)")
    # cgls against PyLops-MPI's forward with the exact adjoint
    x0 = model(Ref, dtype, 3)
    xa = pylops_mpi.cgls(Op, yr, x0, niter=5)[0]
    xb = pylops_mpi.cgls(Ex, yr, x0, niter=5)[0]
    allclose_all(xa.local_array, xb.local_array, CGLS_RTOL[np.dtype(dtype)], f"{case} cgls")
    Op.close()


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("case", ["1d-scalar", "2d-axis-tuple", "3d-pairs"])
def test_halo_crop_adjoint(case, dtype):
    """crop_adjoint=True: PyLops-MPI's rmatvec, its cgls, and its sandwich Halo^H B Halo."""
    Op, Ref, halo = make(case, dtype, crop_adjoint=True)
    rt = RTOL[np.dtype(dtype)]
    y = data(Ref, dtype, 2)
    allclose_all((Op.H @ y).local_array, (Ref.H @ y).local_array, rt, f"{case} crop adjoint")
    x0 = model(Ref, dtype, 3)
    yr = Ref @ model(Ref, dtype, 1)
    allclose_all(pylops_mpi.cgls(Op, yr, x0, niter=5)[0].local_array,
                 pylops_mpi.cgls(Ref, yr, x0, niter=5)[0].local_array, CGLS_RTOL[np.dtype(dtype)], "crop cgls")
    # a local operator on every extended block, cropped back (PyLops-MPI's stencil pattern)
    n = int(np.prod(Ref.local_extent))
    B = [pylops.MatrixMult(rand((n, n), dtype, 50 + R), dtype=dtype)]
    S = Op.H @ rmaop.MPIBlockDiag(B, dtype=dtype) @ Op
    Sr = Ref.H @ pylops_mpi.MPIBlockDiag(B, dtype=dtype) @ Ref
    x = model(Ref, dtype, 4)
    allclose_all((S @ x).local_array, (Sr @ x).local_array, rt, "sandwich")
    Op.close()


def test_halo_errors():
    raises_all(ValueError, rmaop.MPIHalo, (8,), 1, (P + 1,))                # grid's product
    raises_all(ValueError, rmaop.MPIHalo, (8, 5), (1, 2, 3))                 # halo length
    raises_all(ValueError, rmaop.MPIHalo, (8,), -1)
    raises_all(ValueError, rmaop.MPIHalo, (2, 2, 2, 2, 2), 1)                # more than 4 axes
    raises_all(TypeError, rmaop.MPIHalo, (8,), 1, dtype=np.int32)
    Op = rmaop.MPIHalo((8,), 1)
    x = DistributedArray(global_shape=9, dtype=np.float64)
    raises_all(ValueError, Op.matvec, x)                                     # wrong global shape
    raises_all(ValueError, Op.apply, np.zeros(Op._m.local_n + 1))
    raises_all(ValueError, Op.apply_adjoint, np.zeros(Op._ud.local_n + 1))
    raises_all(ValueError, Op.apply, np.zeros(Op._m.local_n), out=np.empty(Op._ud.local_n, np.complex128))
    Op.close()
    if P == 1:
        return
    raises_all(ValueError, rmaop.MPIHalo, (8,), (1, 2))                      # before != after on a split axis
    raises_all(ValueError, rmaop.MPIHalo, (2 * P,), 3)                       # wider than a block


def test_halo_unsupported_split():
    if P < 3:
        pytest.skip("at 1 and 2 ranks PyLops-MPI's ceil(n / p) blocks are always rmaop's")
    raises_all(NotImplementedError, rmaop.MPIHalo, (3 * P - 2,), 1)         # 7 over 3: 3, 3, 1 against 3, 2, 2

