"""Multi-dimensional deconvolution (PyLops-MPI's MDD tutorial) on rmaop: a synthetic kernel G (hyperbolic events,
its frequencies split over the ranks), a reflectivity model, data d = MDC m, and the model back by CGLS (or LSQR),
the whole loop inside the library. With --compare, PyLops-MPI runs the same problem (its MPIMDC and cgls, its only
least-squares solver) and, for cgls, the residual histories are compared. The problem is ill-conditioned: past
about 15 iterations two CGLS codes on the same operator part ways by their rounding (pylops_mpi.cgls against
rmaop.cgls, both on rmaop's operator, differ by 1e-2 after 30), so the default is 15 iterations.

    mpiexec -n 2 python3 python/examples/mdd.py [--compare] [--solver lsqr] [--niter 15] [--backend twosided]
"""
import argparse
import time

import numpy as np
from mpi4py import MPI
from pylops.utils.seismicevents import hyperbolic2d, makeaxis
from pylops.utils.tapers import taper3d
from pylops.utils.wavelets import ricker

import rmaop
from rmaop.ops_signal import MPIMDC

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def dataset(nt, nx, ny, nfmax):
    """G's frequencies (nfmax, ny, nx) and the two-sided reflectivity (2 nt - 1, nx), as the tutorial makes them."""
    par = {"ox": -150, "dx": 5, "nx": nx, "oy": -200, "dy": 5, "ny": ny, "ot": 0, "dt": 0.004, "nt": nt, "f0": 20}
    t, _, x, y = makeaxis(par)
    wav = ricker(t[:41], f0=par["f0"])[0]
    mwav = hyperbolic2d(x, t, 0.2, 1100.0, 1.0, wav)[1]
    Gwav = np.zeros((ny, nx, nt))
    for iy, y0 in enumerate(y):
        Gwav[iy] = hyperbolic2d(x - y0, t, (0.2, 0.5, 0.7), (1200.0, 1500.0, 2000.0), (1.0, 0.6, 0.5), wav)[1]
    Gwav *= taper3d(nt, (ny, nx), (5, 5), tapertype="hanning")
    Gwav2 = np.concatenate((np.zeros((ny, nx, nt - 1)), Gwav), axis=-1)
    G = np.fft.rfft(Gwav2, 2 * nt - 1, axis=-1)[..., :nfmax].transpose(2, 0, 1)
    m = np.concatenate((np.zeros((nx, nt - 1)), mwav), axis=-1).T
    return G * (par["dt"] * np.sqrt(2 * nt - 1)), m, par["dt"]


def solve(lib, MDCop, d, m0, solver, niter):
    comm.Barrier()
    t0 = time.perf_counter()
    if solver == "cgls":
        out = lib.cgls(MDCop, d, x0=m0, niter=niter, tol=0)
    else:
        out = lib.lsqr(MDCop, d, x0=m0, niter=niter, atol=0, btol=0, conlim=0)
    comm.Barrier()
    return out[0], np.asarray(out[-1]), time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nt", type=int, default=200)
    ap.add_argument("--nx", type=int, default=61)
    ap.add_argument("--ny", type=int, default=81)
    ap.add_argument("--nfmax", type=int, default=100)
    ap.add_argument("--niter", type=int, default=15)
    ap.add_argument("--solver", choices=("cgls", "lsqr"), default="cgls")
    ap.add_argument("--backend", default=None, help="rmaop backend (rma, twosided; default: RMAOP_BACKEND)")
    ap.add_argument("--compare", action="store_true", help="also run PyLops-MPI's MPIMDC and solver")
    a = ap.parse_args()
    import pylops_mpi
    Gall, mtrue, dt = dataset(a.nt, a.nx, a.ny, a.nfmax)
    nfs = [a.nfmax // size + (r < a.nfmax % size) for r in range(size)]
    G = Gall[sum(nfs[:rank]):sum(nfs[:rank + 1])]  # this rank's frequencies
    ntt = 2 * a.nt - 1
    MDCop = MPIMDC(G, nt=ntt, nv=1, nfreq=a.nfmax, dt=dt, dr=1.0, twosided=True, prescaled=True, backend=a.backend)
    m = pylops_mpi.DistributedArray(global_shape=ntt * a.nx, partition=pylops_mpi.Partition.BROADCAST)
    m[:] = mtrue.ravel()
    d = MDCop @ m
    m0 = m.copy()
    m0[:] = 0
    minv, hist, secs = solve(rmaop, MDCop, d, m0, a.solver, a.niter)
    err = np.linalg.norm(minv.asarray() - mtrue.ravel()) / np.linalg.norm(mtrue)
    if rank == 0:
        print(f"MDD on {size} ranks: model {ntt} x {a.nx}, G {a.nfmax} x {a.ny} x {a.nx}, {a.solver} {a.niter} "
              f"iterations on {MDCop.context}")
        print(f"  rmaop:      {secs:8.3f} s, residual {hist[0]:.4e} -> {hist[-1]:.4e}, model error {err:.3e}")
    if a.compare:
        from pylops_mpi.waveeqprocessing import MPIMDC as PMMDC
        Ref = PMMDC(G, nt=ntt, nv=1, nfreq=a.nfmax, dt=dt, dr=1.0, twosided=True, prescaled=True)
        dr = pylops_mpi.DistributedArray(global_shape=d.global_shape, partition=d.partition, dtype=Ref.dtype)
        dr[:] = d.local_array
        m0r = pylops_mpi.DistributedArray(global_shape=m0.global_shape, partition=m0.partition, dtype=Ref.dtype)
        m0r[:] = 0
        _, hr, sr = solve(pylops_mpi, Ref, dr, m0r, "cgls", a.niter)
        hr = np.abs(hr)
        if rank == 0:
            print(f"  PyLops-MPI: {sr:8.3f} s, residual {hr[0]:.4e} -> {hr[-1]:.4e}  (cgls; {sr / secs:.1f}x rmaop's "
                  f"time)")
            if a.solver == "cgls":
                n = min(hist.size, hr.size)
                diff = float(np.max(np.abs(hist[:n] - hr[:n]) / np.abs(hr[:n])))
                print(f"  histories: {n} entries, largest relative difference {diff:.2e}")
    MDCop.close()


if __name__ == "__main__":
    main()
