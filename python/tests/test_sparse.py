"""ISTA, FISTA and the power iteration against PyLops-MPI's (the same problem on rmaop's and PyLops-MPI's operators,
the same NumPy seed for the random starts): iterations, costs (1e-10 in double precision) and solutions; the
percentile thresholdings against a NumPy loop over PyLops' threshold functions; errors. Collective: any rank
count (1, 2, 3 tested)."""
import numpy as np
import pylops
import pylops_mpi
import pytest
from pylops.optimization.cls_sparsity import _softthreshold_percentile
from pylops_mpi.optimization.eigs import power_iteration as pm_power_iteration
from pylops_mpi.optimization.sparsity import fista as pm_fista
from pylops_mpi.optimization.sparsity import ista as pm_ista

import rmaop
from conftest import DTYPES, allclose_all, check_all, comm, rand, raises_all
from rmaop import solvers
from rmaop.sparse import fista, ista, power_iteration

P, R = comm.Get_size(), comm.Get_rank()
N, M = 23, 17
SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))


def tol_of(dtype):
    return 1e-4 if np.dtype(dtype) in SINGLE else 1e-10


def hist_ok(a, b, rtol, what):
    a, b = np.asarray(a), np.asarray(b)
    check_all(a.shape == b.shape, f"{what}: {a.shape} entries vs {b.shape}")
    e = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else 0.0
    check_all(e <= rtol, f"{what}: cost relative error {e:.3e} > {rtol:.1e}\n{a}\n{b}")


class Problem:
    """y = A x_true with a sparse x_true. "vstack": rows of A split over the ranks (model BROADCAST); "blockdiag":
    a block per rank of uneven sizes (model and data SCATTER; the last rank's block is empty at 3 ranks)."""

    def __init__(self, kind, dtype):
        self.kind, self.dtype = kind, np.dtype(dtype)
        if kind == "vstack":
            A = rand((N, M), dtype, 11)
            rows = [N // P + (r < N % P) for r in range(P)]
            off = sum(rows[:R])
            blk = A[off:off + rows[R]]
            self.Op = rmaop.MPIVStack([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
            self.Ref = pylops_mpi.MPIVStack([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
            xt = np.zeros(M, dtype)
            xt[[2, 7, 11]] = [1.0, -2.0, 1.5]
            self.y = self._dist(A @ xt, rows)
            self.x0 = pylops_mpi.DistributedArray(global_shape=M, partition=pylops_mpi.Partition.BROADCAST, dtype=dtype)
            self.x0[:] = 0
        else:
            nr, nc = (9 - 2 * R, 7 - R) if not (P == 3 and R == 2) else (0, 0)
            blk = rand((nr, nc), dtype, 20 + R)
            self.Op = rmaop.MPIBlockDiag([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
            self.Ref = pylops_mpi.MPIBlockDiag([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
            xt = np.zeros(nc, dtype)
            xt[::3] = 1.0
            rows, cols = comm.allgather(nr), comm.allgather(nc)
            self.y = self._dist_local(blk @ xt, rows)
            self.x0 = self._dist_local(np.zeros(nc, dtype), cols)
            self.blocks = comm.allgather(blk)

    def _dist(self, g, sizes):
        x = pylops_mpi.DistributedArray(global_shape=g.size, local_shapes=[(s,) for s in sizes], dtype=self.dtype)
        off = sum(sizes[:R])
        x[:] = g[off:off + sizes[R]]
        return x

    def _dist_local(self, loc, sizes):
        x = pylops_mpi.DistributedArray(global_shape=sum(sizes), local_shapes=[(s,) for s in sizes], dtype=self.dtype)
        x[:] = loc
        return x

    def close(self):
        self.Op.close()


KINDS = ["vstack", "blockdiag"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("solver", ["ista", "fista"])
def test_against_pylops_mpi(solver, kind, dtype):
    ours, theirs = (ista, pm_ista) if solver == "ista" else (fista, pm_fista)
    p = Problem(kind, dtype)
    rtol = tol_of(dtype)
    for alpha in (None, 0.02):
        for tk in ("soft", "hard", "half"):
            kw = dict(niter=12, eps=0.1, alpha=alpha, threshkind=tk)
            np.random.seed(7)
            xa, ia, ca = ours(p.Op, p.y, p.x0, **kw)
            np.random.seed(7)
            xb, ib, cb = theirs(p.Ref, p.y, p.x0, **kw)
            what = f"{solver} {kind} alpha={alpha} {tk}"
            check_all(isinstance(xa, pylops_mpi.DistributedArray) and ia == ib and isinstance(ca, np.ndarray), what)
            hist_ok(ca, cb, rtol, what)
            allclose_all(xa.local_array, xb.local_array, rtol * 10, what + " x")
    # decay, a non-zero start, and the iterations PyLops-MPI runs with tol
    decay = np.linspace(1.0, 0.5, 12)
    x0 = p.x0.copy()
    x0[:] = 0.1
    xa, ia, ca = ours(p.Op, p.y, x0, niter=12, alpha=0.02, decay=decay)
    xb, ib, cb = theirs(p.Ref, p.y, x0, niter=12, alpha=0.02, decay=decay)
    hist_ok(ca, cb, rtol, f"{solver} decay, x0")
    if np.dtype(dtype) not in SINGLE:
        seen = []
        ours(p.Op, p.y, p.x0, niter=30, alpha=0.02, callback=lambda x: seen.append(x.asarray().copy()))
        tol = min(np.linalg.norm(seen[k + 1] - seen[k]) for k in range(5, 25)) * (1 + 1e-6)
        xa, ia, ca = ours(p.Op, p.y, p.x0, niter=30, alpha=0.02, tol=tol)
        xb, ib, cb = theirs(p.Ref, p.y, p.x0, niter=30, alpha=0.02, tol=tol)
        check_all(ia == ib and ia <= 26 and p.Op.last_solve["reason"] == "tol", f"tol stop {ia} vs {ib}")
        hist_ok(ca, cb, rtol, f"{solver} tol")
    p.close()


@pytest.mark.parametrize("solver", ["ista", "fista"])
def test_analysis_sop(solver):
    """The analysis problem with SOp (an rmaop operator whose data side is Op's model side)."""
    ours, theirs = (ista, pm_ista) if solver == "ista" else (fista, pm_fista)
    p = Problem("blockdiag", np.float64)
    nc = p.Op._m.local_n
    S = np.linalg.qr(rand((nc, nc), np.float64, 40 + R))[0] if nc else np.zeros((0, 0))
    SOp = rmaop.MPIBlockDiag([pylops.MatrixMult(S)])
    SRef = pylops_mpi.MPIBlockDiag([pylops.MatrixMult(S)])
    xa, ia, ca = ours(p.Op, p.y, p.x0, niter=10, SOp=SOp, alpha=0.02, eps=0.3)
    xb, ib, cb = theirs(p.Ref, p.y, p.x0, niter=10, SOp=SRef, alpha=0.02, eps=0.3)
    hist_ok(ca, cb, 1e-10, f"{solver} SOp")
    allclose_all(xa.local_array, xb.local_array, 1e-10, "SOp x")
    SOp.close()
    p.close()


@pytest.mark.parametrize("solver", ["ista", "fista"])
def test_monitorres_callback_local(solver):
    ours, theirs = (ista, pm_ista) if solver == "ista" else (fista, pm_fista)
    p = Problem("vstack", np.float64)
    # a step far beyond 1 / lambda_max: the residual grows and both stop with the same message
    ea = raises_all(ValueError, ours, p.Op, p.y, p.x0, niter=10, alpha=1.0, monitorres=True)
    eb = raises_all(ValueError, theirs, p.Ref, p.y, p.x0, niter=10, alpha=1.0, monitorres=True)
    check_all(ea is not None and eb is not None and str(ea) == str(eb), f"{ea} / {eb}")
    xa, ia, ca = ours(p.Op, p.y, p.x0, niter=10, alpha=0.02, monitorres=True)
    xb, ib, cb = theirs(p.Ref, p.y, p.x0, niter=10, alpha=0.02, monitorres=True)
    hist_ok(ca, cb, 1e-10, "monitorres on a decreasing residual")
    seen = []
    x6 = ours(p.Op, p.y, p.x0, niter=6, alpha=0.02, callback=lambda x: seen.append(x.asarray().copy()))[0]
    check_all(len(seen) == 6 and np.array_equal(seen[-1], x6.asarray()), f"{len(seen)} calls")
    xl, il, cl = ours(p.Op, p.y.local_array, p.x0.local_array, niter=10, alpha=0.02)
    check_all(type(xl) is np.ndarray and il == ia, f"{type(xl)} {il}")
    hist_ok(cl, ca, 1e-12, "local arrays")
    allclose_all(xl, xa.local_array, 1e-12, "local x")
    xz, _, cz = ours(p.Op, p.y, None, niter=4, alpha=0.02)  # x0=None: from zero
    hist_ok(cz, ca[:4], 1e-12, "x0=None")
    p.close()


def test_percentile():
    """The percentile thresholdings (PyLops') against a NumPy ISTA over the gathered block-diagonal problem."""
    p = Problem("blockdiag", np.float64)
    A = np.zeros((sum(b.shape[0] for b in p.blocks), sum(b.shape[1] for b in p.blocks)))
    r = c = 0
    for b in p.blocks:
        A[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    y = p.y.asarray()
    alpha, perc = 0.02, 30.0
    x = np.zeros(A.shape[1])
    for _ in range(8):
        x = _softthreshold_percentile(x + alpha * A.T @ (y - A @ x), 100 - perc)
    xa = ista(p.Op, p.y, p.x0, niter=8, alpha=alpha, threshkind="soft-percentile", perc=perc)[0]
    allclose_all(xa.asarray(), x, 1e-12, "soft-percentile")
    raises_all(ValueError, ista, p.Op, p.y, p.x0, threshkind="hard-percentile")
    p.close()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_power_iteration(dtype):
    p = Problem("vstack", dtype)
    AH = solvers.adjoint(p.Op)
    AHA = solvers.product(AH, p.Op)
    np.random.seed(3)
    ma, ba, ia = power_iteration(AHA, p.x0.copy(), niter=25, tol=0, dtype=dtype)
    np.random.seed(3)
    mb, bb, ib = pm_power_iteration(p.Ref.H @ p.Ref, p.x0.copy(), niter=25, tol=0, dtype=dtype)
    check_all(ia == ib == 25 and abs(ma - mb) <= 1e-12 * abs(mb), f"{ma} vs {mb}")
    allclose_all(ba.local_array, bb.local_array, 1e-10, "eigenvector")
    # PyLops-MPI's stop (|l - l_old| < tol l) after the same iteration
    np.random.seed(3)
    ma, _, ia = power_iteration(AHA, p.x0.copy(), niter=50, tol=1e-4, dtype=dtype)
    np.random.seed(3)
    mb, _, ib = pm_power_iteration(p.Ref.H @ p.Ref, p.x0.copy(), niter=50, tol=1e-4, dtype=dtype)
    check_all(ia == ib < 50, f"tol stop {ia} vs {ib}")
    # the library's seeded start: the same eigenvalue on every rank count, the largest of A^H A
    ms, bs, _ = power_iteration(AHA, p.x0.copy(), niter=1500, tol=0, seed=5)
    A = np.concatenate(comm.allgather(p.Op.ops[0].A))
    lmax = np.linalg.eigvalsh(A.conj().T @ A)[-1]
    check_all(abs(ms - lmax) <= 1e-10 * lmax, f"{ms} vs {lmax}")
    check_all(isinstance(ms, complex) == np.issubdtype(dtype, np.complexfloating), type(ms))
    e = raises_all(rmaop.RmaopError, power_iteration, p.Op, p.x0.copy())
    check_all(e is not None and e.status == "RMAOP_ERR_ARG", str(e))
    AHA.close()
    AH.close()
    p.close()


def test_errors():
    p = Problem("vstack", np.float64)
    raises_all(ValueError, ista, p.Op, p.y, p.x0, threshkind="soft-ish")
    raises_all(ValueError, fista, p.Op, p.y, p.x0, niter=-1)
    raises_all(ValueError, ista, p.Op, p.y, p.x0, niter=5, decay=np.ones(3))
    e = raises_all(rmaop.RmaopError, ista, p.Op, p.y, p.x0, eps=-1.0, alpha=0.1)
    check_all(e is not None and e.status == "RMAOP_ERR_ARG" and "eps" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, fista, p.Op, p.y, p.x0, alpha=-0.1)
    check_all(e is not None and "alpha" in str(e), str(e))
    raises_all(TypeError, ista, p.Ref, p.y, p.x0)  # a PyLops-MPI operator
    raises_all(TypeError, ista, p.Op, p.y, p.x0, eigsdict={"bogus": 1})
    p.close()


@pytest.fixture
def cp(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy
    return cupy


@pytest.mark.parametrize("solver", ["ista", "fista"])
def test_sparse_device(cp, solver):
    """The same solve on CuPy arrays (device kernels) and NumPy arrays: the same costs."""
    ours = ista if solver == "ista" else fista
    with rmaop.Context(memory="device") as ctx:
        n = 50 * P + 3
        Dh = rmaop.MPIFirstDerivative((n,), kind="forward")
        Dd = rmaop.MPIFirstDerivative((n,), kind="forward", context=ctx)
        yl = rand(Dh._d.local_n, np.float64, 3 + R)
        xh, ih, ch = ours(Dh, yl, None, niter=10, alpha=0.2, eps=0.05)
        xd, idd, cd = ours(Dd, cp.asarray(yl), None, niter=10, alpha=0.2, eps=0.05)
        check_all(isinstance(xd, cp.ndarray) and ih == idd, f"{type(xd)} {ih} {idd}")
        hist_ok(cd, ch, 1e-10, f"{solver} device")
        Dd.close()
        Dh.close()
