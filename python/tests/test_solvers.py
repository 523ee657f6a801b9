"""rmaop's solvers against PyLops-MPI's (cg, cgls: the same rmaop operator under both, so only the solvers
differ) and serial PyLops' lsqr on the gathered problem; pipecg against cg."""
import numpy as np
import pylops
import pylops_mpi as pm
import pytest
from conftest import allclose_all, check_all, comm, rand
from pylops.optimization.basic import lsqr as pylops_lsqr

import rmaop
from rmaop import solvers

rank, size = comm.Get_rank(), comm.Get_size()
DIMS = (13, 4)
N = int(np.prod(DIMS))
HIST = 1e-10        # histories, double precision
HIST_SINGLE = 1e-4  # and single, over a few iterations
DOUBLE = [np.float64, np.complex128]


def hist_ok(a, b, rtol, what):
    a, b = np.asarray(a), np.asarray(b)
    check_all(a.shape == b.shape, f"{what}: {a.shape} entries vs {b.shape}")
    e = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
    check_all(e <= rtol, f"{what}: history relative error {e:.3e} > {rtol:.1e}\n{a}\n{b}")


def close_num(a, b, rtol, what):
    e = abs(a - b) / max(abs(b), 1e-300)
    check_all(e <= rtol, f"{what}: {a!r} vs {b!r} (relative {e:.3e})")


def sizes_of(op):
    return op._m.sizes


def dist(g, sizes):
    x = pm.DistributedArray(global_shape=g.size, local_shapes=[(s,) for s in sizes], dtype=g.dtype)
    off = sum(sizes[:rank])
    x[:] = g[off:off + sizes[rank]]
    return x


class SPD:
    """M = D^H D + diag(0.2 .. 1.2) with D rmaop's forward first derivative: Hermitian positive definite, with
    distinct eigenvalues (CG does not converge in a few steps), made of rmaop operators only."""

    def __init__(self, dtype):
        self.D = rmaop.MPIFirstDerivative(DIMS, kind="forward", dtype=dtype)
        sz = sizes_of(self.D)
        off = sum(sz[:rank])
        dg = 0.2 + np.random.default_rng(5).random(N)
        self.parts = [self.D, solvers.adjoint(self.D)]
        self.parts.append(solvers.product(self.parts[1], self.D))
        self.parts.append(solvers.diagonal(dg[off:off + sz[rank]].astype(dtype), self.D))
        self.M = solvers.add(self.parts[2], self.parts[3])
        self.sizes = sz

    def close(self):
        self.M.close()
        for p in reversed(self.parts):
            p.close()


@pytest.fixture(params=DOUBLE + [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def spd(request):
    s = SPD(request.param)
    s.dtype = np.dtype(request.param)
    yield s
    s.close()


def test_composites(spd):
    M = spd.M
    check_all(isinstance(M, rmaop.LinearOperator) and isinstance(M, pm.MPILinearOperator), type(M).__mro__)
    check_all(M.shape == (N, N) and tuple(M.dims) == DIMS, f"{M.shape} {M.dims}")
    e = M.dottest(1)
    check_all(e <= (1e-5 if spd.dtype in (np.float32, np.complex64) else 1e-12), f"dottest {e}")
    # M x against the same sum built by PyLops-MPI from the same parts
    x = dist(rand(N, spd.dtype, 2), spd.sizes)
    ref = spd.D.H @ (spd.D @ x)
    ref_loc = ref.local_array + (spd.parts[3] @ x).local_array
    allclose_all((M @ x).local_array, ref_loc, 1e-5 if spd.dtype in (np.float32, np.complex64) else 1e-13)
    with pytest.raises(TypeError):
        solvers.product(spd.D, pylops.Identity(N))


def solve_both(fn_a, fn_b, M, y, x0, **kw):
    ra = fn_a(M, y, x0, **kw)
    rb = fn_b(M, y, x0, **kw)
    return ra, rb


@pytest.mark.parametrize("x0kind", ["zero", "nonzero"])
def test_cg(spd, x0kind):
    single = spd.dtype in (np.float32, np.complex64)
    rtol = HIST_SINGLE if single else HIST
    niter = 5 if single else 12
    y = dist(rand(N, spd.dtype, 1), spd.sizes)
    x0 = dist(rand(N, spd.dtype, 3) * (0.1 if x0kind == "nonzero" else 0), spd.sizes)
    (xa, ia, ca), (xb, ib, cb) = solve_both(rmaop.cg, pm.cg, spd.M, y, x0, niter=niter, tol=0)
    check_all(isinstance(xa, pm.DistributedArray) and isinstance(ia, int) and isinstance(ca, np.ndarray)
              and ca.ndim == 1 and ca.dtype == np.float64, f"{type(xa)} {type(ia)} {type(ca)}")
    check_all(ia == ib == niter, f"iterations {ia} vs {ib}")
    hist_ok(ca, cb, rtol, "cg")
    allclose_all(xa.local_array, xb.local_array, 1e-4 if single else 1e-10, "cg x")
    check_all(xa.global_shape == xb.global_shape and xa.local_shape == xb.local_shape, "cg x's shapes")
    if single:
        return
    # stopping on tol: the same iteration (tol between two of the squared residuals)
    k = 7
    tol = float(cb[k] * cb[k + 1])
    (_, ia, ca), (_, ib, cb2) = solve_both(rmaop.cg, pm.cg, spd.M, y, x0, niter=50, tol=tol)
    check_all(ia == ib == k + 1, f"tol stop after {ia} (rmaop) / {ib} (PyLops-MPI), expected {k + 1}")
    hist_ok(ca, cb2, rtol, "cg with tol")
    # pipelined CG: cg's iterates to rounding, with and without residual replacement
    for rr in (0, 3):
        xp, ip, cp = rmaop.pipecg(spd.M, y, x0, niter=niter, tol=0, residual_replacement=rr)
        check_all(isinstance(xp, pm.DistributedArray) and ip == niter, f"pipecg {type(xp)} {ip}")
        hist_ok(cp, cb, HIST, f"pipecg (residual_replacement={rr}) vs cg")
        allclose_all(xp.local_array, xb.local_array, 1e-10, "pipecg x")
    xp, ip, cp = rmaop.pipecg(spd.M, y, x0, niter=50, tol=tol)
    check_all(ip == k + 1, f"pipecg tol stop after {ip}, expected {k + 1}")


def test_cg_local_arrays():
    s = SPD(np.float64)
    try:
        g, g0 = rand(N, np.float64, 1), rand(N, np.float64, 3)
        y, x0 = dist(g, s.sizes), dist(g0, s.sizes)
        xd, idd, cd = rmaop.cg(s.M, y, x0, niter=9, tol=0)
        for fn in (rmaop.cg, rmaop.pipecg):
            xl, il, cl = fn(s.M, y.local_array.copy(), x0.local_array.copy(), niter=9, tol=0)
            check_all(type(xl) is np.ndarray and xl.shape == (s.sizes[rank],), f"{type(xl)} {xl.shape}")
            check_all(il == idd, f"{il} vs {idd}")
            hist_ok(cl, cd, HIST, f"{fn.__name__} on local arrays")
            allclose_all(xl, xd.local_array, 1e-10)
        # x0=None is a zero start (PyLops-MPI needs one)
        xz, iz, cz = rmaop.cg(s.M, y, None, niter=5, tol=0)
        xb, ib, cb = pm.cg(s.M, y, dist(np.zeros(N), s.sizes), niter=5, tol=0)
        hist_ok(cz, cb, HIST, "cg from x0=None")
    finally:
        s.close()


# ---- CGLS -----------------------------------------------------------------------------------------------

class LS:
    """A least-squares problem: rmaop's gradient (stacked data: 2 N rows, N columns) and y."""

    def __init__(self, dtype):
        self.G = rmaop.MPIGradient(DIMS, sampling=(1.0, 0.5), dtype=dtype)
        self.S = pylops.Gradient(DIMS, sampling=(1.0, 0.5), dtype=dtype)
        self.sizes = sizes_of(self.G)
        self.gy = rand(2 * N, dtype, 7)
        self.y = pm.StackedDistributedArray([dist(self.gy[:N], self.sizes), dist(self.gy[N:], self.sizes)])
        self.g0 = rand(N, dtype, 8)
        self.dtype = dtype

    def x0(self, nonzero):
        return dist(self.g0 * (1 if nonzero else 0), self.sizes)

    def close(self):
        self.G.close()


@pytest.fixture(params=DOUBLE, ids=lambda d: np.dtype(d).name)
def ls(request):
    p = LS(request.param)
    yield p
    p.close()


@pytest.mark.parametrize("damp,nonzero", [(0.0, False), (0.0, True), (0.3, False), (1.0, True)])
def test_cgls(ls, damp, nonzero):
    x0 = ls.x0(nonzero)
    ra = rmaop.cgls(ls.G, ls.y, x0, niter=10, damp=damp, tol=0)
    rb = pm.cgls(ls.G, ls.y, x0, niter=10, damp=damp, tol=0)
    check_all(len(ra) == len(rb) == 6, f"{len(ra)} values")
    xa, istop, it, r1, r2, cost = ra
    check_all(isinstance(xa, pm.DistributedArray) and isinstance(it, int) and isinstance(istop, int)
              and isinstance(r1, float) and isinstance(r2, float) and isinstance(cost, np.ndarray),
              f"types {[type(v).__name__ for v in ra]}")
    check_all(istop == rb[1] and it == rb[2] == 10, f"istop/iiter {istop}/{it} vs {rb[1]}/{rb[2]}")
    hist_ok(cost, rb[5], HIST, "cgls cost")
    # r1norm (squared normal-equation residual) is a difference of nearly equal terms: compare it at the
    # scale of the first one
    k0 = float(rb[5][0]) ** 2
    check_all(abs(r1 - rb[3]) <= 1e-10 * max(k0, 1.0), f"r1norm {r1!r} vs {rb[3]!r}")
    close_num(r2, float(rb[4]), HIST, "r2norm")
    allclose_all(xa.local_array, xb_local(rb), 1e-10, "cgls x")
    # tol: the same stop (istop = 1)
    tol = float(pm.cgls(ls.G, ls.y, x0, niter=4, damp=damp, tol=0)[3]) * 1.01
    ra = rmaop.cgls(ls.G, ls.y, x0, niter=40, damp=damp, tol=tol)
    rb = pm.cgls(ls.G, ls.y, x0, niter=40, damp=damp, tol=tol)
    check_all(ra[2] == rb[2] <= 4 and ra[1] == rb[1] == 1, f"tol stop: iiter {ra[2]} vs {rb[2]}, istop {ra[1]} vs {rb[1]}")
    hist_ok(ra[5], rb[5], HIST, "cgls cost with tol")


def xb_local(r):
    return r[0].local_array


def test_cgls_damped_x0():
    """damp not 0 or 1 with a non-zero x0: PyLops-MPI's first direction uses damp, not damp^2 (see
    rmaop.cgls); rmaop's iterates converge to the minimizer of ||y - A x||^2 + damp^2 ||x||^2."""
    p = LS(np.float64)
    try:
        damp = 0.3
        xa, istop, it, r1, r2, cost = rmaop.cgls(p.G, p.y, p.x0(True), niter=200, damp=damp, tol=1e-26)
        A = p.S.todense()
        xs = np.linalg.solve(A.T @ A + damp ** 2 * np.eye(N), A.T @ p.gy)
        allclose_all(xa.asarray(), xs, 1e-9, "damped minimizer")
        check_all(istop == 1 and it < 200, f"istop {istop} after {it}")
        # cost[0] is ||y - A x0|| in both
        rb = pm.cgls(p.G, p.y, p.x0(True), niter=3, damp=damp, tol=0)
        close_num(cost[0], rb[5][0], HIST, "cost[0]")
    finally:
        p.close()


def test_cgls_local_arrays():
    p = LS(np.float64)
    try:
        x0 = p.x0(True)
        rd = rmaop.cgls(p.G, p.y, x0, niter=8, damp=0.5, tol=0)
        yl = np.concatenate([a.local_array for a in p.y.distarrays])  # the stacked data's local layout
        rl = rmaop.cgls(p.G, yl, x0.local_array, niter=8, damp=0.5, tol=0)
        check_all(type(rl[0]) is np.ndarray and rl[2] == rd[2], f"{type(rl[0])} {rl[2]}")
        hist_ok(rl[5], rd[5], HIST, "cgls local")
        allclose_all(rl[0], rd[0].local_array, 1e-12)
        # a square operator, local arrays, against PyLops-MPI on the same operator
        D = rmaop.MPIFirstDerivative(DIMS, kind="centered", edge=True)
        try:
            gy = rand(N, np.float64, 4)
            y = dist(gy, sizes_of(D))
            ra = rmaop.cgls(D, y.local_array, None, niter=6, damp=0.1, tol=0)
            rb = pm.cgls(D, y, dist(np.zeros(N), sizes_of(D)), niter=6, damp=0.1, tol=0)
            hist_ok(ra[5], rb[5], HIST, "cgls square")
            allclose_all(ra[0], rb[0].local_array, 1e-10)
        finally:
            D.close()
    finally:
        p.close()


# ---- LSQR -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("damp,nonzero", [(0.0, False), (0.3, False), (0.3, True), (0.0, True)])
def test_lsqr(ls, damp, nonzero):
    x0 = ls.x0(True) if nonzero else None
    for niter, atol in ((8, 1e-8), (200, 1e-7)):
        ra = rmaop.lsqr(ls.G, ls.y, x0, damp=damp, atol=atol, btol=atol, niter=niter)
        rb = pylops_lsqr(ls.S, ls.gy, ls.g0 if nonzero else None, damp=damp, atol=atol, btol=atol, niter=niter)
        check_all(len(ra) == 6, f"{len(ra)} values")
        xa, istop, it, r1, r2, cost = ra
        check_all(it == rb[2], f"iterations {it} vs PyLops' {rb[2]}")
        hist_ok(cost, rb[10], HIST, "lsqr cost")
        close_num(r1, abs(float(rb[3])), HIST, "r1norm")
        close_num(r2, float(rb[4]), HIST, "r2norm")
        allclose_all(xa.asarray(), np.asarray(rb[0]).ravel(), 1e-10, "lsqr x")
        if niter == 8:  # PyLops 2.8 returns 0 when niter runs out (it documents 7)
            check_all(istop == 7 and rb[1] == 0, f"istop {istop} / PyLops {rb[1]}")
        else:
            check_all(istop == 1 and rb[1] in (1, 2, 4, 5) and it < niter, f"istop {istop} / PyLops {rb[1]}")


def test_lsqr_local_arrays():
    p = LS(np.complex128)
    try:
        rd = rmaop.lsqr(p.G, p.y, p.x0(True), damp=0.2, niter=7)
        yl = np.concatenate([a.local_array for a in p.y.distarrays])
        rl = rmaop.lsqr(p.G, yl, p.x0(True).local_array, damp=0.2, niter=7)
        check_all(type(rl[0]) is np.ndarray, type(rl[0]))
        hist_ok(rl[5], rd[5], HIST, "lsqr local")
        allclose_all(rl[0], rd[0].local_array, 1e-12)
        close_num(rl[4], rd[4], 1e-12, "r2norm")
    finally:
        p.close()


# ---- callbacks ------------------------------------------------------------------------------------------

def test_callbacks_called_each_iteration():
    s, p = SPD(np.float64), LS(np.float64)
    try:
        y = dist(rand(N, np.float64, 1), s.sizes)
        x0 = dist(rand(N, np.float64, 3), s.sizes)
        seen_a, seen_b = [], []
        rmaop.cg(s.M, y, x0, niter=6, tol=0, callback=lambda x: seen_a.append(x.local_array.copy()))
        pm.cg(s.M, y, x0, niter=6, tol=0, callback=lambda x: seen_b.append(x.local_array.copy()))
        check_all(len(seen_a) == len(seen_b) == 6, f"cg callback calls {len(seen_a)} vs {len(seen_b)}")
        for a, b in zip(seen_a, seen_b):  # called with the current iterate
            allclose_all(a, b, 1e-10, "cg callback's x")
        seen_p = []
        rmaop.pipecg(s.M, y, x0, niter=6, tol=0, callback=lambda x: seen_p.append(x.local_array.copy()))
        check_all(len(seen_p) == 6, f"pipecg callback calls {len(seen_p)}")
        for a, b in zip(seen_p, seen_b):
            allclose_all(a, b, 1e-10, "pipecg callback's x")
        calls = []
        _, _, it, _, _, _ = rmaop.cgls(p.G, p.y, p.x0(False), niter=5, tol=0, callback=calls.append)
        check_all(len(calls) == it == 5 and all(isinstance(c, pm.DistributedArray) for c in calls), len(calls))
        calls = []
        _, _, it, _, _, _ = rmaop.lsqr(p.G, p.y, None, niter=4, callback=calls.append)
        check_all(len(calls) == it == 4, f"lsqr callback calls {len(calls)}")
        calls = []  # local arrays: the callback gets the local array
        rmaop.cg(s.M, y.local_array, None, niter=3, tol=0, callback=calls.append)
        check_all(len(calls) == 3 and all(type(c) is np.ndarray for c in calls), f"{len(calls)}")
    finally:
        p.close()
        s.close()


class Stop(Exception):
    pass


@pytest.mark.parametrize("solver", ["cg", "pipecg", "cgls", "lsqr"])
@pytest.mark.parametrize("when", [1, 3])
def test_callback_raises(solver, when):
    """The callback's exception propagates (on every rank, each raising at the same iteration); the context
    and operator stay usable."""
    s = SPD(np.float64)
    try:
        y = dist(rand(N, np.float64, 1), s.sizes)
        calls = []

        def cb(x):
            calls.append(1)
            if len(calls) == when:
                raise Stop(f"stop at {when}")

        fn = getattr(rmaop, solver)
        with pytest.raises(Stop, match=f"stop at {when}"):
            fn(s.M, y, None, niter=10, callback=cb) if solver == "lsqr" else fn(s.M, y, None, niter=10, tol=0,
                                                                                  callback=cb)
        check_all(len(calls) == when, f"{len(calls)} calls")
        x, it, cost = rmaop.cg(s.M, y, None, niter=4, tol=0)  # still works
        check_all(it == 4 and np.all(np.isfinite(cost)), f"{it} {cost}")
    finally:
        s.close()


def test_show(capsys):
    s = SPD(np.float64)
    try:
        y = dist(rand(N, np.float64, 1), s.sizes)
        rmaop.cg(s.M, y, None, niter=3, tol=0, show=True)
        rmaop.lsqr(s.M, y, None, niter=3, show=True)
        out = capsys.readouterr().out
        check_all(("rmaop.cg: 3 iterations" in out and "rmaop.lsqr" in out) if rank == 0 else out == "", out)
        check_all(s.M.last_solve["iterations"] == 3 and s.M.last_solve["reason"] == "niter", s.M.last_solve)
    finally:
        s.close()


def test_bad_arguments():
    s = SPD(np.float64)
    try:
        y = dist(rand(N, np.float64, 1), s.sizes)
        B = pm.MPIFirstDerivative(DIMS)
        with pytest.raises(TypeError):
            rmaop.cg(B, y, None)
        with pytest.raises(ValueError):
            rmaop.cg(s.M, y, None, niter=-1)
        with pytest.raises(ValueError):  # a local y of the wrong size
            rmaop.cg(s.M, np.zeros(s.sizes[rank] + 1), None)
    finally:
        s.close()
