"""A/B of CGLS from Python: PyLops-MPI's cgls on PyLops-MPI's operator, PyLops-MPI's cgls on rmaop's operator,
and rmaop.cgls, side by side in one run (rounds alternate between them), with the residual histories compared.

    mpiexec -n 2 python -m rmaop.bench --problem deriv1d --n 1048576 --niter 50 --repeat 5 [--memory device]
        [--backend rma --sync lock --transport auto] [--json FILE]

Prints per variant the median time per iteration over the repeats (each repeat: one timed solve, the slowest
rank's time, between barriers) and the largest relative difference of its history from PyLops-MPI's. With
--memory device the arrays are CuPy's, PyLops-MPI runs on CuPy with MPI (and with NCCL when cupy's NCCL is
available: the variant "pylops_mpi nccl").
"""
import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import rmaop


def _problem(name, n, comm, xp):
    if name == "deriv1d":
        dims = (n,)
    elif name == "lap2d":
        side = int(round(np.sqrt(n)))
        dims = (side, side)
    else:
        raise SystemExit(f"rmaop.bench: unknown problem {name!r} (deriv1d, lap2d)")
    return dims


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m rmaop.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="deriv1d", help="deriv1d (FirstDerivative) or lap2d (Laplacian)")
    ap.add_argument("--n", type=int, default=1 << 20, help="global unknowns")
    ap.add_argument("--niter", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5, help="timed solves per variant")
    ap.add_argument("--memory", default="host", choices=("host", "device"))
    ap.add_argument("--backend", default=None)
    ap.add_argument("--sync", default=None)
    ap.add_argument("--transport", default=None)
    ap.add_argument("--skip-pylops-operator", action="store_true",
                    help="leave out PyLops-MPI's own operator (slow at large n)")
    ap.add_argument("--json", default=None, help="write the results here (rank 0)")
    a = ap.parse_args(argv)
    import pylops_mpi

    comm = MPI.COMM_WORLD
    xp = np
    if a.memory == "device":
        import cupy as xp
    engine = "cupy" if a.memory == "device" else "numpy"
    dims = _problem(a.problem, a.n, comm, xp)
    ctx = rmaop.Context(comm, backend=a.backend, memory=a.memory, sync=a.sync, transport=a.transport)
    if a.problem == "deriv1d":
        R = rmaop.MPIFirstDerivative(dims, context=ctx)
        P = pylops_mpi.MPIFirstDerivative(dims)
    else:
        R = rmaop.MPILaplacian(dims, context=ctx)
        P = pylops_mpi.MPILaplacian(dims)
    N = int(np.prod(dims))
    xt = pylops_mpi.DistributedArray(global_shape=N, local_shapes=R._m.sizes, engine=engine)
    loc = np.sin(0.001 * (np.arange(R._m.local_n) + sum(R._m.sizes[:comm.rank])))
    xt[:] = xp.asarray(loc)
    y = R.matvec(xt)
    x0 = pylops_mpi.DistributedArray(global_shape=N, local_shapes=R._m.sizes, engine=engine)
    x0[:] = 0

    variants = {}
    if not a.skip_pylops_operator:
        variants["pylops_mpi cgls + pylops_mpi op"] = lambda: pylops_mpi.cgls(P, y, x0, niter=a.niter, tol=0)
    if a.memory == "device" and not a.skip_pylops_operator:
        try:  # PyLops-MPI on CuPy with NCCL: the arrays carry the NCCL communicator
            from pylops_mpi.utils._nccl import initialize_nccl_comm
            nc = initialize_nccl_comm()
            yn = pylops_mpi.DistributedArray(global_shape=N, local_shapes=R._m.sizes, engine=engine,
                                             base_comm_nccl=nc)
            yn[:] = y.local_array
            x0n = pylops_mpi.DistributedArray(global_shape=N, local_shapes=R._m.sizes, engine=engine,
                                              base_comm_nccl=nc)
            x0n[:] = 0
            variants["pylops_mpi nccl cgls + pylops_mpi op"] = lambda: pylops_mpi.cgls(P, yn, x0n, niter=a.niter,
                                                                                       tol=0)
        except Exception as e:  # reported, not fatal: NCCL through CuPy may be absent
            if comm.rank == 0:
                print(f"rmaop.bench: PyLops-MPI with NCCL is not run: {e}")
    variants["pylops_mpi cgls + rmaop op"] = lambda: pylops_mpi.cgls(R, y, x0, niter=a.niter, tol=0)
    variants["rmaop.cgls"] = lambda: rmaop.cgls(R, y, x0, niter=a.niter, tol=0)

    def timed(f):
        if a.memory == "device":
            xp.cuda.Device().synchronize()
        comm.Barrier()
        t0 = time.perf_counter()
        out = f()
        if a.memory == "device":
            xp.cuda.Device().synchronize()
        t = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        return t, out

    hist, times, inside = {}, {k: [] for k in variants}, []
    for k, f in variants.items():  # warm-up, and the histories
        _, out = timed(f)
        hist[k] = np.asarray(out[-1].get() if hasattr(out[-1], "get") else out[-1], dtype=float)
    for _ in range(a.repeat):  # rounds alternate between the variants
        for k, f in variants.items():
            t, _ = timed(f)
            times[k].append(t / a.niter)
            if k == "rmaop.cgls":  # the library's own time of the same solve (its solver_info.time_total)
                inside.append(comm.allreduce(R.last_solve["time_total"], op=MPI.MAX) / a.niter)
    ref = hist.get("pylops_mpi cgls + pylops_mpi op", hist["pylops_mpi cgls + rmaop op"])
    res = {"problem": a.problem, "n": N, "niter": a.niter, "ranks": comm.size, "memory": a.memory,
           "path": repr(ctx), "variants": {},
           "rmaop_cgls_library_us_per_iter": float(np.median(inside) * 1e6) if inside else float("nan")}
    for k in variants:
        h = hist[k]
        m = min(len(h), len(ref))
        diff = float(np.max(np.abs(h[:m] - ref[:m]) / np.maximum(np.abs(ref[:m]), 1e-300))) if m else float("nan")
        res["variants"][k] = {"median_us_per_iter": float(np.median(times[k]) * 1e6),
                              "us_per_iter": [t * 1e6 for t in times[k]], "history_rel_diff": diff}
    if comm.rank == 0:
        print(f"CGLS {a.problem} n={N} niter={a.niter} ranks={comm.size} memory={a.memory} {ctx}")
        base = res["variants"]["rmaop.cgls"]["median_us_per_iter"]
        for k, v in res["variants"].items():
            print(f"  {k:34s} {v['median_us_per_iter']:12.1f} us/iter  ({v['median_us_per_iter'] / base:6.2f}x "
                  f"rmaop.cgls)  history vs PyLops-MPI: {v['history_rel_diff']:.1e}")
        print(f"  {'(rmaop.cgls inside the library)':34s} {res['rmaop_cgls_library_us_per_iter']:12.1f} us/iter  "
              "(solver_info.time_total of the same solves: the rest is the Python call)")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
