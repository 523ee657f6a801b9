"""FFT2D forward + adjoint: rmaop's MPIFFT2D against PyLops-MPI's (mpi4py-fft over FFTW) on the same
DistributedArray, in turns, the results compared.

    mpiexec -n 2 python3 python/examples/fft2d_ab.py [--n 2048] [--reps 5] [--rounds 3]

Prints each library's time per forward + adjoint (ms) in every round, and the largest relative difference of
the forward outputs. Host memory (PyLops-MPI's FFTs are NumPy only).
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import pylops_mpi
from pylops_mpi.signalprocessing import MPIFFT2D as PyLopsMPIFFT2D

import rmaop


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048, help="the array is n x n complex128")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    dims = (a.n, a.n)
    ops = {"rmaop": rmaop.MPIFFT2D(dims, dtype="complex128"),
           "PyLops-MPI": PyLopsMPIFFT2D(dims, dtype="complex128")}
    x = pylops_mpi.DistributedArray(global_shape=a.n * a.n, dtype=np.complex128)
    rng = np.random.default_rng(comm.rank)
    x[:] = rng.standard_normal(x.local_shape) + 1j * rng.standard_normal(x.local_shape)
    times, out = {}, {}
    for _ in range(a.rounds):
        for name, Op in ops.items():
            Op.rmatvec(Op.matvec(x))  # warm-up
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(a.reps):
                y = Op.matvec(x)
                Op.rmatvec(y)
            comm.Barrier()
            times.setdefault(name, []).append((time.perf_counter() - t0) / a.reps)
            out[name] = y.asarray()
    diff = np.abs(out["rmaop"] - out["PyLops-MPI"]).max() / np.abs(out["PyLops-MPI"]).max()
    if comm.rank == 0:
        print(f"FFT2D {a.n} x {a.n} complex128 on {comm.size} ranks, forward + adjoint, ms per round:")
        for name, t in times.items():
            print(f"  {name:11s} " + ", ".join(f"{1e3 * v:.1f}" for v in t))
        print(f"  forward outputs: largest relative difference {diff:.2e}")
    ops["rmaop"].close()


if __name__ == "__main__":
    main()
