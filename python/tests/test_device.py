"""CuPy arrays on device contexts (RMAOP_TEST_MEMORY=device; ctest python.gpu.np2, label gpu): the operators
against PyLops-MPI on the same CuPy DistributedArrays, zero-copy writes, the solvers' histories, on every
backend built with device memory."""
import numpy as np
import pylops_mpi
import pytest

import rmaop
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand

@pytest.fixture
def cp(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy
    return cupy


def paths():
    out = [dict(backend="rma"), dict(backend="twosided")]
    if "nccl" in rmaop.backends_available():
        out.append(dict(backend="nccl"))
    return out


def dist_cupy(cp, Op, dtype, seed):
    x = pylops_mpi.DistributedArray(global_shape=Op.shape[1], local_shapes=Op._m.sizes, engine="cupy",
                                    dtype=dtype)
    x[:] = cp.asarray(rand(Op._m.local_n, dtype, seed + comm.rank))
    return x


@pytest.mark.parametrize("path", paths(), ids=lambda p: p["backend"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_derivative_device(cp, path, dtype):
    with rmaop.Context(memory="device", **path) as ctx:
        dims = (4 * comm.size + 3, 5)
        Op = rmaop.MPIFirstDerivative(dims, dtype=dtype, context=ctx)
        Ref = pylops_mpi.MPIFirstDerivative(dims, dtype=dtype)
        x = dist_cupy(cp, Op, dtype, 3)
        y, yr = Op.matvec(x), Ref.matvec(x)
        check_all(isinstance(y.local_array, cp.ndarray), "the output is not a CuPy array")
        allclose_all(cp.asnumpy(y.local_array), cp.asnumpy(yr.local_array), RTOL[np.dtype(dtype)], "forward")
        z, zr = Op.rmatvec(y), Ref.rmatvec(y)
        allclose_all(cp.asnumpy(z.local_array), cp.asnumpy(zr.local_array), RTOL[np.dtype(dtype)], "adjoint")
        Op.close()


def test_zero_copy_device(cp):
    with rmaop.Context(memory="device") as ctx:
        Op = rmaop.MPISecondDerivative((8 * comm.size,), context=ctx)
        x = cp.arange(Op._m.local_n, dtype=cp.float64) ** 2
        out = cp.full(Op._d.local_n, -1.0)
        ret = Op.apply(x, out=out)
        check_all(ret.data.ptr == out.data.ptr, "apply(out=) did not write the CuPy array in place")
        check_all(not bool(cp.any(out == -1.0)), "the CuPy array was not written")
        Op.close()


def test_host_array_on_device_context(cp):
    with rmaop.Context(memory="device") as ctx:
        Op = rmaop.MPIFirstDerivative((4 * comm.size,), context=ctx)
        with pytest.raises(TypeError):
            Op.apply(cp.zeros(Op._m.local_n), out=np.zeros(Op._d.local_n))
        Op.close()


@pytest.mark.parametrize("path", paths(), ids=lambda p: p["backend"])
def test_cgls_device(cp, path):
    with rmaop.Context(memory="device", **path) as ctx:
        n = 1000 * comm.size + 7
        Op = rmaop.MPIFirstDerivative((n,), context=ctx)
        Ref = pylops_mpi.MPIFirstDerivative((n,))
        xt = dist_cupy(cp, Op, np.float64, 5)
        y = Ref.matvec(xt)
        x0 = pylops_mpi.DistributedArray(global_shape=n, local_shapes=Op._m.sizes, engine="cupy")
        x0[:] = 0
        r = rmaop.cgls(Op, y, x0, niter=20, tol=0)
        p = pylops_mpi.cgls(Ref, y, x0, niter=20, tol=0)
        check_all(r[2] == p[2] == 20, f"iterations {r[2]} / {p[2]}")
        h, hp = np.asarray(r[5]), np.asarray(p[5].get() if hasattr(p[5], "get") else p[5])
        check_all(float(np.max(np.abs(h - hp) / np.abs(hp))) < 1e-10, "cgls history differs from PyLops-MPI's")
        allclose_all(cp.asnumpy(r[0].local_array), cp.asnumpy(p[0].local_array), 1e-9, "cgls solution")
        Op.close()
