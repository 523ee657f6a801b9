"""The proximal operators L1, L2, L21 against PyLops-MPI's (MPIProxOperator(pyproximal.L1), MPIL2, MPIL21) and the
proximal solvers ProximalGradient, ADMML2, PrimalDual against PyLops-MPI's on the same problems: solutions, and
rmaop's objective histories against the objective PyLops-MPI's iterates give (1e-10). Collective: any rank count
(1, 2, 3 tested)."""
import numpy as np
import pylops
import pylops_mpi
import pyproximal
import pytest
from pylops_mpi.proximal import ADMML2 as PM_ADMML2
from pylops_mpi.proximal import MPIL2, MPIL21, MPIProxOperator
from pylops_mpi.proximal import PrimalDual as PM_PrimalDual
from pylops_mpi.proximal import ProximalGradient as PM_ProximalGradient

import rmaop
from conftest import allclose_all, check_all, comm, rand, raises_all
from rmaop import proximal as rp

P, R = comm.Get_size(), comm.Get_rank()
N, M = 21, 19
BCAST = pylops_mpi.Partition.BROADCAST


def hist_ok(a, b, rtol, what):
    a, b = np.asarray(a), np.asarray(b)
    check_all(a.shape == b.shape, f"{what}: {a.shape} entries vs {b.shape}")
    e = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else 0.0
    check_all(e <= rtol, f"{what}: relative error {e:.3e} > {rtol:.1e}\n{a}\n{b}")


def scatter(g, sizes=None):
    sizes = sizes or [g.size // P + (r < g.size % P) for r in range(P)]
    x = pylops_mpi.DistributedArray(global_shape=g.size, local_shapes=[(s,) for s in sizes], dtype=g.dtype)
    off = sum(sizes[:R])
    x[:] = g[off:off + sizes[R]]
    return x


def bcast(g):
    x = pylops_mpi.DistributedArray(global_shape=g.size, partition=BCAST, dtype=g.dtype)
    x[:] = g
    return x


class LS:
    """A least-squares problem y = A x, rows of A over the ranks (rmaop's and PyLops-MPI's MPIVStack)."""

    def __init__(self, dtype=np.float64):
        self.A = rand((N, M), dtype, 11)
        rows = [N // P + (r < N % P) for r in range(P)]
        blk = self.A[sum(rows[:R]):sum(rows[:R + 1])]
        self.Op = rmaop.MPIVStack([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
        self.Ref = pylops_mpi.MPIVStack([pylops.MatrixMult(blk, dtype=dtype)], dtype=dtype)
        xt = np.zeros(M, dtype)
        xt[[2, 7, 11]] = [1.0, -2.0, 1.5]
        self.y = scatter(self.A @ xt, rows)
        self.x0 = bcast(np.zeros(M, dtype))
        # a float32 value: PyLops-MPI rounds epsg * tau to float32 (see ProximalGradient's docstring)
        self.tau = float(np.float32(0.9 / np.linalg.norm(self.A, 2) ** 2))


# ---- proximal operators -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("with_g", [False, True], ids=["g0", "g"])
def test_l1(dtype, with_g):
    x = scatter(rand(30, dtype, 1) * 2)
    g = scatter(rand(30, dtype, 2)) if with_g else None
    ours = rp.L1(sigma=0.7, g=g)
    ref = MPIProxOperator(pyproximal.L1(sigma=0.7, g=None if g is None else g.local_array))
    rtol = 1e-6 if np.dtype(dtype) == np.float32 else 1e-14
    check_all(abs(ours(x) - ref(x)) <= rtol * abs(ref(x)), f"{ours(x)} vs {ref(x)}")
    a = ours.prox(x, 0.4)
    check_all(isinstance(a, pylops_mpi.DistributedArray) and a.local_shapes == x.local_shapes, type(a))
    allclose_all(a.local_array, ref.prox(x, 0.4).local_array, rtol, "L1 prox")
    d = ours.proxdual(x, 0.3)
    if np.iscomplexobj(x.local_array):  # scaled to modulus sigma where larger (pyproximal clips parts)
        v = x.local_array - 0.3 * (0 if g is None else g.local_array)
        want = v * np.minimum(1.0, 0.7 / np.maximum(np.abs(v), 1e-300))
    else:
        want = ref.proxdual(x, 0.3).local_array
    allclose_all(d.local_array, want, rtol, "L1 proxdual")
    xb = bcast(rand(12, dtype, 3))  # a replicated array counts once
    if not with_g:
        check_all(abs(ours(xb) - 0.7 * np.abs(xb.local_array).sum()) <= rtol * ours(xb), "L1 of a BROADCAST array")
    e = raises_all(rmaop.RmaopError, ours.prox, x, 0.0)
    check_all(e is not None and "tau must be positive" in str(e), str(e))
    ours.close()


def test_l2():
    p = LS()
    x = bcast(rand(M, np.float64, 4))
    b = bcast(rand(M, np.float64, 5))
    q = bcast(rand(M, np.float64, 6))
    for kw in (dict(b=b), dict(b=b, q=q, alpha=0.5), dict(sigma=2.0)):
        ours, ref = rp.L2(**kw), MPIL2(**kw)
        check_all(abs(ours(x) - ref(x)) <= 1e-13 * abs(ref(x)), f"L2 {list(kw)}: {ours(x)} vs {ref(x)}")
        allclose_all(ours.prox(x, 0.3).local_array, ref.prox(x, 0.3).local_array, 1e-14, f"L2 prox {list(kw)}")
        allclose_all(ours.grad(x).local_array, ref.grad(x).local_array, 1e-14, f"L2 grad {list(kw)}")
        moreau = x.local_array - 0.3 * ref.prox(x * (1 / 0.3), 1 / 0.3).local_array  # PyLops-MPI's MPIL2 has none
        allclose_all(ours.proxdual(x, 0.3).local_array, moreau, 1e-13, "L2 proxdual")
        ours.close()
    for solver in ("cgls", "cg"):
        ours = rp.L2(Op=p.Op, b=p.y, x0=p.x0, niter=6, solver=solver, sigma=0.5)
        ref = MPIL2(Op=p.Ref, b=p.y, x0=p.x0, niter=6, solver=solver, sigma=0.5)
        check_all(abs(ours(x) - ref(x)) <= 1e-12 * abs(ref(x)), f"L2 Op: {ours(x)} vs {ref(x)}")
        allclose_all(ours.grad(x).local_array, ref.grad(x).local_array, 1e-12, f"L2 Op grad {solver}")
        for _ in range(2):  # the second from the first's result (warm)
            allclose_all(ours.prox(x, 0.2).local_array, ref.prox(x, 0.2).local_array, 1e-10, f"L2 Op prox {solver}")
        ours.close()
    raises_all(ValueError, rp.L2, Op=p.Op, b=p.y)
    raises_all(ValueError, rp.L2, b=b, solver="lsqr")
    raises_all(TypeError, rp.L2, b=b, niter=lambda k: 3)
    raises_all(TypeError, rp.L2, Op=p.Op, b=p.y, x0=p.x0, kwargs_solver={"show": True})


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_l21(dtype):
    dims = (7, 6)
    G = rmaop.MPIGradient(dims, dtype=dtype)
    x = scatter(rand(int(np.prod(dims)), dtype, 7), G._m.sizes)
    gx = G @ x  # a StackedDistributedArray of two parts
    ours, ref = rp.L21(ndim=2, sigma=0.4), MPIL21(ndim=2, sigma=0.4)
    check_all(abs(ours(gx) - ref(gx)) <= 1e-13 * ref(gx), f"{ours(gx)} vs {ref(gx)}")
    a, b = ours.prox(gx, 0.5), ref.prox(gx, 0.5)
    check_all(isinstance(a, pylops_mpi.StackedDistributedArray), type(a))
    allclose_all(a.asarray(), b.asarray(), 1e-14, "L21 prox")
    allclose_all(ours.proxdual(gx, 0.5).asarray(), ref.proxdual(gx, 0.5).asarray(), 1e-14, "L21 proxdual")
    raises_all(ValueError, rp.L21(ndim=3).prox, gx, 1.0)
    ours.close()
    G.close()


# ---- solvers ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("acceleration", [None, "vandenberghe", "fista"])
@pytest.mark.parametrize("eta", [1.0, 0.7])
def test_proximal_gradient(acceleration, eta):
    p = LS()
    f, g = rp.L2(Op=p.Op, b=p.y, x0=p.x0), rp.L1(sigma=0.5)
    fr, gr = MPIL2(Op=p.Ref, b=p.y, x0=p.x0), MPIProxOperator(pyproximal.L1(sigma=0.5))
    Js, seen = [], []

    def objective(x):
        Js.append(fr(x) + gr(x))

    x = rp.ProximalGradient(f, g, p.x0, tau=p.tau, eta=eta, niter=15, acceleration=acceleration, history=True,
                            callback=lambda x: seen.append(x.asarray().copy()))
    hist = rp.last_solve["history"]
    objective(p.x0)
    xr = PM_ProximalGradient(fr, gr, p.x0, tau=p.tau, eta=eta, niter=15, acceleration=acceleration,
                             callback=objective)
    allclose_all(x.asarray(), xr.asarray(), 1e-10, "ProximalGradient x")
    hist_ok(hist, Js, 1e-10, "ProximalGradient objective")
    check_all(len(seen) == 15 and np.array_equal(seen[-1], x.asarray()), f"{len(seen)} callbacks")
    # an epsg per iteration, and the stop on tol after PyLops-MPI's iteration
    epsg = np.linspace(1.0, 0.5, 15)
    x = rp.ProximalGradient(f, g, p.x0, tau=p.tau, epsg=epsg, niter=15, acceleration=acceleration)
    xr = PM_ProximalGradient(fr, gr, p.x0, tau=p.tau, epsg=epsg, niter=15, acceleration=acceleration)
    allclose_all(x.asarray(), xr.asarray(), 1e-10, "ProximalGradient epsg array")
    ncalls = []
    rp.ProximalGradient(f, g, p.x0, tau=p.tau, niter=200, tol=1e-4, acceleration=acceleration)
    PM_ProximalGradient(fr, gr, p.x0, tau=p.tau, niter=200, tol=1e-4, acceleration=acceleration,
                        callback=lambda x: ncalls.append(1))
    check_all(rp.last_solve["iterations"] == len(ncalls) < 200 and rp.last_solve["reason"] == "tol",
              f"tol stop after {rp.last_solve['iterations']} vs {len(ncalls)}")
    f.close()
    g.close()


@pytest.mark.parametrize("gfirst", [False, True])
def test_admml2(gfirst):
    p = LS()
    g, gr = rp.L1(sigma=0.1), MPIProxOperator(pyproximal.L1(sigma=0.1))
    Js = []

    def objective(x):
        Ax = p.Ref @ x
        Js.append(0.5 * (p.Ref @ x - p.y).norm() ** 2 + gr(Ax))

    x, z = rp.ADMML2(g, p.Op, p.y, p.Op, p.x0, tau=0.5, niter=8, gfirst=gfirst, history=True,
                     kwargs_solver=dict(niter=5))
    objective(p.x0)
    xr, zr = PM_ADMML2(gr, p.Ref, p.y, p.Ref, p.x0, tau=0.5, niter=8, gfirst=gfirst, callback=objective,
                       kwargs_solver=dict(niter=5))
    allclose_all(x.asarray(), xr.asarray(), 1e-10, "ADMML2 x")
    allclose_all(z.asarray(), zr.asarray(), 1e-10, "ADMML2 z")
    hist_ok(rp.last_solve["history"], Js, 1e-10, "ADMML2 objective")
    g.close()


def tv_problem(dtype=np.float64):
    dims = (7, 6)
    G = rmaop.MPIGradient(dims, kind="forward", dtype=dtype)
    Gr = pylops_mpi.MPIGradient(dims, kind="forward", dtype=dtype)
    b = scatter(rand(int(np.prod(dims)), dtype, 3), G._m.sizes)
    x0 = b.copy()
    x0[:] = 0
    return G, Gr, b, x0


@pytest.mark.parametrize("gfirst", [True, False])
@pytest.mark.parametrize("steps", ["scalars", "arrays"])
def test_primal_dual(gfirst, steps):
    """TV denoising: min 1/2 ||x - b||^2 + sigma ||grad x||_{2,1} (Chambolle & Pock 2011)."""
    G, Gr, b, x0 = tv_problem()
    f, g = rp.L2(b=b), rp.L21(ndim=2, sigma=0.3)
    fr, gr = MPIL2(b=b), MPIL21(ndim=2, sigma=0.3)
    niter = 10
    tau, mu = (0.25, 0.5) if steps == "scalars" else (np.linspace(0.2, 0.3, niter), np.linspace(0.5, 0.4, niter))
    z = b.copy()
    z[:] = 0.01
    y0 = Gr @ x0
    Js, ys = [], []

    def objective(x, y=None):
        Js.append(fr(x) + gr(Gr @ x) + float(np.real(x.dot(z))))

    x, y = rp.PrimalDual(f, g, G, x0, y0, tau, mu, z=z, theta=0.8, niter=niter, gfirst=gfirst, returny=True,
                         history=True, callback=lambda x, y: ys.append(y.asarray().copy()), callbacky=True)
    objective(x0)
    xr, yr = PM_PrimalDual(fr, gr, Gr, x0, y0, tau, mu, z=z, theta=0.8, niter=niter, gfirst=gfirst, returny=True,
                           callback=objective)
    check_all(isinstance(y, pylops_mpi.StackedDistributedArray), type(y))
    allclose_all(x.asarray(), xr.asarray(), 1e-10, "PrimalDual x")
    allclose_all(y.asarray(), yr.asarray(), 1e-10, "PrimalDual y")
    hist_ok(rp.last_solve["history"], Js, 1e-10, "PrimalDual objective")
    check_all(len(ys) == niter and np.array_equal(ys[-1], y.asarray()), "callbacky")
    x1 = rp.PrimalDual(f, g, G, x0, None, tau, mu, z=z, theta=0.8, niter=niter, gfirst=gfirst)
    allclose_all(x1.asarray(), x.asarray(), 1e-14, "y0=None is a zero dual start")
    f.close()
    g.close()
    G.close()


def test_solver_errors():
    p = LS()
    f, g = rp.L2(Op=p.Op, b=p.y, x0=p.x0), rp.L1()
    e = raises_all(rmaop.RmaopError, rp.ProximalGradient, f, g, p.x0)
    check_all(e is not None and "tau" in str(e), str(e))
    raises_all(NotImplementedError, rp.ProximalGradient, f, g, p.x0, tau=0.1, acceleration="nesterov")
    e = raises_all(rmaop.RmaopError, rp.ProximalGradient, g, f, p.x0, tau=0.1)
    check_all(e is not None and "no gradient" in str(e), str(e))
    raises_all(TypeError, rp.ProximalGradient, MPIL2(b=p.x0), g, p.x0, tau=0.1)
    raises_all(ValueError, rp.ProximalGradient, f, g, p.x0, tau=0.1, niter=5, epsg=np.ones(3))
    e = raises_all(rmaop.RmaopError, rp.ADMML2, g, p.Op, p.y, p.Op, p.x0, tau=-1.0)
    check_all(e is not None and "tau" in str(e), str(e))
    G, Gr, b, x0 = tv_problem()
    e = raises_all(rmaop.RmaopError, rp.PrimalDual, rp.L2(b=b), rp.L21(ndim=2), G, x0, None, 0.1, 0.1, theta=2.0)
    check_all(e is not None and "theta" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, rp.PrimalDual, rp.L2(b=b), rp.L21(ndim=3), G, x0, None, 0.1, 0.1)
    check_all(e is not None and "ndim" in str(e), str(e))
    G.close()
    f.close()


@pytest.fixture
def cp(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy
    return cupy


def test_primal_dual_device(cp):
    """TV denoising on CuPy arrays (device kernels) against the same on NumPy arrays."""
    G, _, b, x0 = tv_problem()
    xh = rp.PrimalDual(rp.L2(b=b), rp.L21(ndim=2, sigma=0.3), G, x0, None, 0.25, 0.5, niter=10, history=True)
    hh = rp.last_solve["history"]
    with rmaop.Context(memory="device") as ctx:
        Gd = rmaop.MPIGradient((7, 6), kind="forward", context=ctx)
        bd = pylops_mpi.DistributedArray(global_shape=b.global_shape, local_shapes=b.local_shapes, engine="cupy")
        bd[:] = cp.asarray(b.local_array)
        x0d = bd.copy()
        x0d[:] = 0
        f, g = rp.L2(b=bd, context=ctx), rp.L21(ndim=2, sigma=0.3, context=ctx)
        xd = rp.PrimalDual(f, g, Gd, x0d, None, 0.25, 0.5, niter=10, history=True)
        check_all(isinstance(xd.local_array, cp.ndarray), type(xd.local_array))
        allclose_all(cp.asnumpy(xd.local_array), xh.local_array, 1e-10, "PrimalDual device")
        hist_ok(rp.last_solve["history"], hh, 1e-10, "PrimalDual device history")
        f.close()
        g.close()
        Gd.close()
    G.close()
