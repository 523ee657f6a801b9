"""Contexts on every path, zero-copy arrays, errors, and closing."""
import ctypes

import numpy as np
import pylops_mpi as pm
import pytest
from conftest import check_all, comm, rand

import rmaop
from rmaop import _core, _lib, solvers

rank, size = comm.Get_rank(), comm.Get_size()
DIMS = (13, 4)
N = int(np.prod(DIMS))


def paths():
    """Every host path of the backends built: rma with each sync and transport, twosided."""
    out = []
    built = rmaop.backends_available()
    if "rma" in built:
        out += [dict(backend="rma", sync=s, transport=t) for s in ("fence", "pscw", "lock")
                for t in ("auto", "shm", "mpi")]
    if "twosided" in built:
        out.append(dict(backend="twosided"))
    return out


def dist(g, sizes):
    x = pm.DistributedArray(global_shape=g.size, local_shapes=[(s,) for s in sizes], dtype=g.dtype)
    off = sum(sizes[:rank])
    x[:] = g[off:off + sizes[rank]]
    return x


def run_path(ctx, dtype):
    """Forward, adjoint, gradient and a CG solve on one context: the local results."""
    D = rmaop.MPIFirstDerivative(DIMS, kind="centered", order=5, edge=True, dtype=dtype, context=ctx)
    G = rmaop.MPIGradient(DIMS, kind="forward", dtype=dtype, context=ctx)
    A = solvers.adjoint(D)
    M = solvers.add(solvers.product(A, D), solvers.diagonal(np.full(D._m.local_n, 0.5, dtype=dtype), D))
    sizes = D._m.sizes
    x = dist(rand(N, dtype, 1), sizes)
    out = [(D @ x).local_array.copy(), (D.H @ x).local_array.copy(), (G.H @ (G @ x)).local_array.copy()]
    xs, it, cost = rmaop.cg(M, x, None, niter=8, tol=0)
    out += [xs.local_array.copy(), cost]
    xs, it, cost = rmaop.pipecg(M, x, None, niter=8, tol=0)
    out += [xs.local_array.copy(), cost]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_paths_identical(dtype):
    ref = None
    for kw in paths():
        ctx = rmaop.Context(**kw)
        try:
            check_all(ctx.backend == kw["backend"] and ctx.memory == "host" and ctx.size == size, repr(ctx))
            if kw["backend"] == "rma":
                check_all(ctx.sync == kw["sync"], f"{ctx.sync} != {kw['sync']}")
            got = run_path(ctx, dtype)
        finally:
            ctx.close()
        if ref is None:
            ref = (kw, got)
            continue
        for i, (a, b) in enumerate(zip(got, ref[1])):  # the same arithmetic on every path: bitwise equal
            check_all(np.array_equal(a, b), f"result {i} on {kw} differs from {ref[0]}: "
                      f"{np.max(np.abs(a - b), initial=0)}")
    check_all(ref is not None, "no host path built")


def test_path_keywords_on_operators():
    """backend=/sync=/transport= on a constructor use the default context of those keywords."""
    A = rmaop.MPIFirstDerivative(DIMS, backend="rma", sync="pscw", transport="mpi")
    B = rmaop.MPISecondDerivative(DIMS, backend="rma", sync="pscw", transport="mpi")
    try:
        check_all(A.context is B.context and A.context.sync == "pscw", repr(A.context))
        with pytest.raises(ValueError):  # context= and path keywords together
            rmaop.MPIFirstDerivative(DIMS, context=A.context, backend="rma")
    finally:
        B.close()
        A.close()


def test_unknown_backend():
    with pytest.raises(rmaop.RmaopError) as e:
        rmaop.Context(backend="nosuchbackend")
    err = e.value
    check_all(err.status == "RMAOP_ERR_ARG" and err.code == 1, f"{err.status} {err.code}")
    names = rmaop.backends_available()
    check_all("nosuchbackend" in err.message and all(n in err.message for n in names),
              f"message {err.message!r} should name the valid backends {names}")
    with pytest.raises(rmaop.RmaopError) as e:
        rmaop.Context(backend="rma", sync="sometimes")
    check_all(e.value.status == "RMAOP_ERR_ARG" and "fence" in e.value.message, e.value.message)


def test_device_memory_without_gpu():
    """memory="device" where no GPU is visible: an RmaopError (RMAOP_ERR_UNSUPPORTED), no crash; nccl likewise
    on host memory."""
    try:
        ctx = rmaop.Context(memory="device")
    except rmaop.RmaopError as e:
        check_all(isinstance(e, rmaop.RmaopUnsupported) or e.status in ("RMAOP_ERR_CUDA", "RMAOP_ERR_UNSUPPORTED"),
                  f"{type(e).__name__} {e.status}")
    else:  # a GPU machine
        check_all(ctx.memory == "device")
        ctx.close()
    if "nccl" in rmaop.backends_available():
        try:
            ctx = rmaop.Context(backend="nccl")
        except rmaop.RmaopError as e:
            check_all(e.status in ("RMAOP_ERR_UNSUPPORTED", "RMAOP_ERR_CUDA", "RMAOP_ERR_NCCL"), e.status)
        else:
            ctx.close()


# ---- zero copy --------------------------------------------------------------------------------------------

def test_apply_out_in_place():
    A = rmaop.MPIFirstDerivative(DIMS, kind="backward", sampling=0.5)
    try:
        n = A._m.local_n
        x = rand(n, np.float64, 3)
        ref = A.apply(x)
        buf = np.full((n // DIMS[1], DIMS[1]), np.nan)  # a 2-D C-contiguous block of rows
        ptr = buf.ctypes.data
        out = A.apply(x, out=buf)
        check_all(out.ctypes.data == ptr and np.shares_memory(out, buf), "out is not buf's memory")
        check_all(np.array_equal(buf.ravel(), ref), "buf does not hold A x")
        buf2 = np.zeros(n)
        out2 = A.apply_adjoint(x, out=buf2)
        check_all(out2.ctypes.data == buf2.ctypes.data and np.array_equal(buf2, A.apply_adjoint(x)), "adjoint out")
        # the vector rmaop makes over an array is that array (rmaop_vec_get_array gives its address back)
        with _core.Vec(A._m.layout, buf2) as v:
            p = ctypes.c_void_p()
            _lib.call("rmaop_vec_get_array", v, ctypes.byref(p))
        check_all(p.value == buf2.ctypes.data, f"{p.value:#x} != {buf2.ctypes.data:#x}")
        # DistributedArray inputs in the operator's split are used in place (same values as the local call)
        xd = dist(rand(N, np.float64, 4), A._m.sizes)
        check_all(np.array_equal((A @ xd).local_array, A.apply(xd.local_array)), "A @ x vs apply")
    finally:
        A.close()


def test_solver_output_shares_memory():
    D = rmaop.MPIFirstDerivative(DIMS, kind="forward")
    M = solvers.add(solvers.product(solvers.adjoint(D), D), solvers.diagonal(np.ones(D._m.local_n), D))
    try:
        y = dist(rand(N, np.float64, 1), D._m.sizes)
        seen = []
        x, it, cost = rmaop.cg(M, y, None, niter=4, tol=0,
                               callback=lambda v: seen.append((v, v.local_array.ctypes.data, v.local_array.copy())))
        # the callback runs inside the solver with the vector rmaop iterates on: the returned x is that vector's
        # memory, and rmaop's writes (the iterates) showed in it during the solve
        check_all(len(seen) == 4 and all(s[0] is x for s in seen), "callback's x is not the returned x")
        check_all(all(s[1] == x.local_array.ctypes.data for s in seen), "x's memory moved")
        check_all(not np.array_equal(seen[0][2], seen[-1][2]) and np.array_equal(seen[-1][2], x.local_array),
                  "the iterates did not show in x")
        # stacked output: the parts are consecutive views of one buffer
        G = rmaop.MPIGradient(DIMS)
        try:
            g = G @ y
            a, b = g.distarrays[0].local_array, g.distarrays[1].local_array
            check_all(b.ctypes.data == a.ctypes.data + a.nbytes, "gradient parts are not one buffer")
            xg, _, _, _, _, _ = rmaop.cgls(G, g, None, niter=3, tol=0)
            check_all(isinstance(xg, pm.DistributedArray), type(xg))
        finally:
            G.close()
    finally:
        M.close()
        D.close()


# ---- errors ----------------------------------------------------------------------------------------------

def test_bad_inputs():
    A = rmaop.MPIFirstDerivative(DIMS)
    try:
        n = A._m.local_n
        with pytest.raises(TypeError):
            rmaop.MPIFirstDerivative(DIMS, dtype=np.int32)
        with pytest.raises(TypeError):  # complex into a real operator: no silent loss of the imaginary part
            A.apply(np.ones(n, dtype=np.complex128))
        out = A.apply(np.ones(n, dtype=np.float32))  # a real input of another precision is converted
        check_all(out.dtype == np.float64)
        with pytest.raises(ValueError):  # wrong local size (on every rank)
            A.apply(np.ones(n + 1))
        with pytest.raises(ValueError):  # out of the wrong dtype
            A.apply(np.ones(n), out=np.empty(n, dtype=np.float32))
        with pytest.raises(ValueError):  # out not contiguous
            A.apply(np.ones(n), out=np.empty(2 * n)[::2])
        ro = np.zeros(n)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            A.apply(np.ones(n), out=ro)
        with pytest.raises(ValueError):  # a DistributedArray of another global size
            rmaop.cg(A, dist(np.ones(N + 3), [N + 3 if r == 0 else 0 for r in range(size)]), None)
        with pytest.raises(ValueError):
            A @ dist(np.ones(N + 3), [N + 3 if r == 0 else 0 for r in range(size)])
    finally:
        A.close()


def test_close():
    ctx = rmaop.Context(backend="rma", sync="lock")
    A = rmaop.MPIFirstDerivative(DIMS, context=ctx)
    B = rmaop.MPIGradient(DIMS, context=ctx)
    n = A._m.local_n
    A.close()
    A.close()  # twice: harmless
    with pytest.raises(ValueError, match="closed"):
        A.apply(np.ones(n))
    with pytest.raises(ValueError, match="closed"):
        A.dottest()
    with pytest.raises(ValueError, match="closed"):
        rmaop.cg(A, np.ones(n), None)
    check_all(B.apply(np.ones(n)).size == 2 * n)
    ctx.close()  # closes B too
    ctx.close()
    B.close()
    with pytest.raises(ValueError, match="closed"):
        B.apply(np.ones(n))
    with pytest.raises(ValueError, match="closed"):
        rmaop.MPIFirstDerivative(DIMS, context=ctx)
    with rmaop.Context(backend="twosided") as c2:  # a with block closes it
        D = rmaop.MPISecondDerivative(DIMS, context=c2)
        check_all(D.dottest() < 1e-12)
    with pytest.raises(ValueError, match="closed"):
        D.apply(np.ones(n))
    # a composite outlives the parts it was built from
    D = rmaop.MPIFirstDerivative(DIMS)
    H = solvers.adjoint(D)
    D.close()
    check_all(H.dottest() < 1e-12 and H.apply(np.ones(n)).size == n)
    H.close()
    H.close()
