"""Multi-dimensional deconvolution (PyLops-MPI's MDD tutorial) on rmaop: a synthetic kernel G (hyperbolic events,
its frequencies split over the ranks), a reflectivity model, data d = MDC m, and the model back by CGLS (or LSQR),
the whole loop inside the library. With --compare, PyLops-MPI runs the same problem (its MPIMDC and cgls, its only
least-squares solver) and, for cgls, the residual histories are compared. The problem is ill-conditioned: past
about 15 iterations two CGLS codes on the same operator part ways by their rounding (pylops_mpi.cgls against
rmaop.cgls, both on rmaop's operator, differ by 1e-2 after 30), so the default is 15 iterations.

    mpiexec -n 2 python3 python/examples/mdd.py [--compare] [--solver lsqr] [--niter 15] [--backend twosided]
                                                [--memory device]

With ``--memory device`` the arrays are CuPy arrays on each rank's GPU (rmaop on a device context; PyLops-MPI with
engine="cupy", once over MPI and once with its NCCL communicator). Times are per solve and per iteration.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import rmaop  # first: on one GPU image, PyLops' modules imported before it left matplotlib (PyLops-MPI's) unimportable
from rmaop.ops_signal import MPIMDC
from pylops.utils.seismicevents import hyperbolic2d, makeaxis  # noqa: E402
from pylops.utils.tapers import taper3d  # noqa: E402
from pylops.utils.wavelets import ricker  # noqa: E402

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


def host(a):
    """A NumPy copy of a NumPy or CuPy array (or of a list of scalars of either)."""
    if hasattr(a, "get"):
        return a.get()
    if isinstance(a, (list, tuple)):
        return np.array([float(v.get()) if hasattr(v, "get") else complex(v) if np.iscomplexobj(v) else float(v)
                         for v in a])
    return np.asarray(a)


def sync(xp):
    if xp is not np:
        xp.cuda.Device().synchronize()


def solve(lib, MDCop, d, m0, solver, niter, xp):
    sync(xp)
    comm.Barrier()
    t0 = time.perf_counter()
    if solver == "cgls":
        out = lib.cgls(MDCop, d, x0=m0, niter=niter, tol=0)
    else:
        out = lib.lsqr(MDCop, d, x0=m0, niter=niter, atol=0, btol=0, conlim=0)
    sync(xp)
    t = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    return out[0], host(out[-1]), t


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
    ap.add_argument("--memory", choices=("host", "device"), default="host",
                    help="NumPy arrays on the host, or CuPy arrays on each rank's GPU")
    ap.add_argument("--repeat", type=int, default=1, help="timed solves per variant (the median is printed)")
    a = ap.parse_args()
    import pylops_mpi
    xp, engine = np, "numpy"
    if a.memory == "device":
        import cupy as xp
        engine = "cupy"
    Gall, mtrue, dt = dataset(a.nt, a.nx, a.ny, a.nfmax)
    nfs = [a.nfmax // size + (r < a.nfmax % size) for r in range(size)]
    G = Gall[sum(nfs[:rank]):sum(nfs[:rank + 1])]  # this rank's frequencies
    ntt = 2 * a.nt - 1
    MDCop = MPIMDC(G, nt=ntt, nv=1, nfreq=a.nfmax, dt=dt, dr=1.0, twosided=True, prescaled=True, backend=a.backend,
                   memory=a.memory)
    bc = pylops_mpi.Partition.BROADCAST
    m = pylops_mpi.DistributedArray(global_shape=ntt * a.nx, partition=bc, engine=engine)
    m[:] = xp.asarray(mtrue.ravel())
    d = MDCop @ m
    m0 = m.copy()
    m0[:] = 0
    runs = [solve(rmaop, MDCop, d, m0, a.solver, a.niter, xp) for _ in range(max(1, a.repeat))]
    minv, hist = runs[0][0], runs[0][1]
    secs = float(np.median([r[2] for r in runs]))
    err = np.linalg.norm(host(minv.asarray()) - mtrue.ravel()) / np.linalg.norm(mtrue)
    if rank == 0:
        print(f"MDD on {size} ranks, {a.memory} memory: model {ntt} x {a.nx}, G {a.nfmax} x {a.ny} x {a.nx}, "
              f"{a.solver} {a.niter} iterations on {MDCop.context}")
        print(f"  rmaop:                {secs:8.4f} s ({secs / a.niter * 1e3:8.3f} ms/it), residual {hist[0]:.4e} -> "
              f"{hist[-1]:.4e}, model error {err:.3e}")
    if a.compare:
        from pylops_mpi.waveeqprocessing import MPIMDC as PMMDC
        Gx = xp.asarray(G)
        Ref = PMMDC(Gx, nt=ntt, nv=1, nfreq=a.nfmax, dt=dt, dr=1.0, twosided=True, prescaled=True)
        variants = [("PyLops-MPI", None)]
        if a.memory == "device":
            try:  # PyLops-MPI's NCCL path: the arrays carry its NCCL communicator
                from pylops_mpi.utils._nccl import initialize_nccl_comm
                variants = [("PyLops-MPI CuPy+MPI", None), ("PyLops-MPI CuPy+NCCL", initialize_nccl_comm())]
            except Exception as e:  # reported, not fatal
                variants = [("PyLops-MPI CuPy+MPI", None)]
                if rank == 0:
                    print(f"  PyLops-MPI with NCCL is not run: {e}")
        for name, nc in variants:
            kw = {} if nc is None else {"base_comm_nccl": nc}
            dr = pylops_mpi.DistributedArray(global_shape=d.global_shape, partition=d.partition, dtype=Ref.dtype,
                                              engine=engine, **kw)
            dr[:] = d.local_array
            m0r = pylops_mpi.DistributedArray(global_shape=m0.global_shape, partition=m0.partition, dtype=Ref.dtype,
                                               engine=engine, **kw)
            m0r[:] = 0
            try:
                rr = [solve(pylops_mpi, Ref, dr, m0r, "cgls", a.niter, xp) for _ in range(max(1, a.repeat))]
            except Exception as e:  # reported: PyLops-MPI's own limits are not this example's failure
                if rank == 0:
                    print(f"  {name}: failed: {type(e).__name__}: {e}")
                continue
            hr, sr = np.abs(rr[0][1]), float(np.median([r[2] for r in rr]))
            if rank == 0:
                print(f"  {name + ':':21s} {sr:8.4f} s ({sr / a.niter * 1e3:8.3f} ms/it), residual {hr[0]:.4e} -> "
                      f"{hr[-1]:.4e}  (cgls; {sr / secs:.1f}x rmaop's time)")
                if a.solver == "cgls":
                    n = min(hist.size, hr.size)
                    diff = float(np.max(np.abs(hist[:n] - hr[:n]) / np.abs(hr[:n])))
                    print(f"  histories: {n} entries, largest relative difference {diff:.2e}")
    MDCop.close()


if __name__ == "__main__":
    main()
