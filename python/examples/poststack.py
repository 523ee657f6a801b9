"""Post-stack inversion (PyLops-MPI's 3-D post-stack tutorial) on rmaop: each rank models its slab of y with PyLops'
PoststackLinearModelling (an MPIBlockDiag of one PyLops operator per rank, called back from the library), a
Laplacian regularizes, and CGLS solves [BDiag; sqrt(eps) Lap] m = [d; 0] from a smooth background, the whole loop
inside the library (MPIStackedVStack, rmaop.cgls). With --compare, PyLops-MPI runs the same problem (its
MPIBlockDiag, MPILaplacian, MPIStackedVStack and cgls) and the residual histories are compared.

    mpiexec -n 2 python3 python/examples/poststack.py [--compare] [--niter 30] [--ny 24] [--backend twosided]
"""
import argparse
import time

import numpy as np
from mpi4py import MPI
from pylops import Transpose
from pylops.avo.poststack import PoststackLinearModelling
from pylops.utils.wavelets import ricker
from scipy.ndimage import uniform_filter

import rmaop

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def model(ny, nx, nz):
    """A log-impedance volume (ny, nx, nz): a gradient, dipping layers and a lens; and its smooth background."""
    y, x, z = np.meshgrid(np.arange(ny), np.arange(nx), np.arange(nz), indexing="ij")
    ai = 2000.0 + 8.0 * z
    for k, z0 in enumerate((0.25, 0.5, 0.7)):
        ai += (300.0 if k % 2 else -250.0) * (z > z0 * nz + 0.15 * x + 0.1 * y)
    ai += 400.0 * (((x - nx / 2) / (nx / 5)) ** 2 + ((z - 0.4 * nz) / (nz / 12)) ** 2 < 1)
    m = np.log(ai)
    return m, uniform_filter(m, size=(3, 15, 21), mode="nearest")


def local_rows(n):
    sizes = [n // size + (r < n % size) for r in range(size)]
    return sizes, sum(sizes[:rank])


def dist(pm, block, sizes, inner):
    x = pm.DistributedArray(global_shape=sum(sizes) * inner, local_shapes=[(s * inner,) for s in sizes])
    x[:] = block.ravel()
    return x


def timed(fn):
    comm.Barrier()
    t0 = time.perf_counter()
    out = fn()
    comm.Barrier()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ny", type=int, default=24)
    ap.add_argument("--nx", type=int, default=60)
    ap.add_argument("--nz", type=int, default=150)
    ap.add_argument("--eps", type=float, default=1e-1, help="weight of the Laplacian (PyLops-MPI's epsR)")
    ap.add_argument("--niter", type=int, default=30)
    ap.add_argument("--backend", default=None, help="rmaop backend (rma, twosided; default: RMAOP_BACKEND)")
    ap.add_argument("--compare", action="store_true", help="also run PyLops-MPI's operators and cgls")
    a = ap.parse_args()
    import pylops_mpi as pm
    ny, nx, nz = a.ny, a.nx, a.nz
    sizes, off = local_rows(ny)
    m3d, mback3d = model(ny, nx, nz)
    ny_i = sizes[rank]
    wav = ricker(np.arange(21) * 0.004, 15)[0]
    Top = Transpose((ny_i, nx, nz), (2, 0, 1))
    local_op = Top.H @ PoststackLinearModelling(wav, nt0=nz, spatdims=(ny_i, nx)) @ Top
    m = dist(pm, m3d[off:off + ny_i], sizes, nx * nz)
    mback = dist(pm, mback3d[off:off + ny_i], sizes, nx * nz)
    w = float(np.sqrt(a.eps))

    BDiag = rmaop.MPIBlockDiag([local_op], backend=a.backend)
    Lap = rmaop.MPILaplacian((ny, nx, nz), axes=(0, 1, 2), weights=(w, w, w), sampling=(1, 1, 1),  # sqrt(eps) Lap
                             backend=a.backend)
    StackOp = rmaop.MPIStackedVStack([BDiag, Lap])
    d = BDiag @ m
    dstack = pm.StackedDistributedArray([d, dist(pm, np.zeros((ny_i, nx, nz)), sizes, nx * nz)])
    out, secs = timed(lambda: rmaop.cgls(StackOp, dstack, mback, niter=a.niter, tol=0))
    minv, hist = out[0], np.asarray(out[-1])
    err = lambda v: np.linalg.norm(v.asarray() - m.asarray()) / np.linalg.norm(m.asarray())  # noqa: E731
    e_inv, e_back = err(minv), err(mback)
    if rank == 0:
        print(f"post-stack inversion on {size} ranks: model {ny} x {nx} x {nz}, cgls {a.niter} iterations on "
              f"{BDiag.context}")
        print(f"  rmaop:      {secs:8.3f} s, residual {hist[0]:.4e} -> {hist[-1]:.4e}, model error {e_back:.3e} "
              f"(background) -> {e_inv:.3e}")
    if a.compare:
        BDr = pm.MPIBlockDiag(ops=[local_op])
        Lr = pm.MPILaplacian(dims=(ny, nx, nz), axes=(0, 1, 2), weights=(1, 1, 1), sampling=(1, 1, 1))
        Sr = pm.MPIStackedVStack([BDr, w * Lr])
        out, sr = timed(lambda: pm.cgls(Sr, dstack, mback, niter=a.niter, tol=0))
        hr = np.asarray(out[-1])
        diff, e_ref = float(np.max(np.abs(hist - hr) / np.abs(hr))), err(out[0])  # collective: on every rank
        if rank == 0:
            print(f"  PyLops-MPI: {sr:8.3f} s, residual {hr[0]:.4e} -> {hr[-1]:.4e}, model error {e_ref:.3e} "
                  f"({sr / secs:.1f}x rmaop's time)")
            print(f"  histories: {hist.size} entries, largest relative difference {diff:.2e}")
    StackOp.close()
    Lap.close()
    BDiag.close()


if __name__ == "__main__":
    main()
