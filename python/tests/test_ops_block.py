"""Block operators against PyLops-MPI: MPIBlockDiag, MPIVStack, MPIHStack (dense blocks and PyLops callbacks),
MPIStackedVStack, MPIStackedBlockDiag, MPIMatrixMult (block, summa) and MPIFredholm1. Collective: run under
mpiexec at any rank count (1, 2, 3 are the tested ones)."""
import math

import numpy as np
import pylops
import pylops_mpi
import pytest
from pylops_mpi import DistributedArray, Partition, StackedDistributedArray
from pylops_mpi.signalprocessing import MPIFredholm1 as PMFredholm1

import rmaop
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand, raises_all

P, R = comm.Get_size(), comm.Get_rank()
# pylops_mpi.cgls after 5 iterations: both runs use the same solver code, the operators differ in rounding only
CGLS_RTOL = {k: v * 100 for k, v in RTOL.items()}


def _single(dtype):
    return np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))


def dist(global_n, local_n, dtype, seed, partition=Partition.SCATTER):
    """The same random global vector on every rank, as a DistributedArray (SCATTER: local_n elements here)."""
    full = rand(global_n, dtype, seed)
    if partition is Partition.BROADCAST:
        x = DistributedArray(global_shape=global_n, partition=Partition.BROADCAST, dtype=dtype)
        x[:] = full
        return x
    sizes = comm.allgather(int(local_n))
    assert sum(sizes) == global_n
    x = DistributedArray(global_shape=global_n, local_shapes=[(s,) for s in sizes], dtype=dtype)
    off = sum(sizes[:R])
    x[:] = full[off:off + sizes[R]]
    return x


def local(a):
    if isinstance(a, StackedDistributedArray):
        return np.concatenate([d.local_array.ravel() for d in a.distarrays])
    return a.local_array.ravel()


def compare(Op, Ref, x, y, dtype, what):
    """Forward on x and adjoint on y against the reference operator (collective checks)."""
    yo, yr = Op @ x, Ref @ x
    check_all(type(yo) is type(yr), f"{what}: forward gives {type(yo).__name__}, the reference {type(yr).__name__}")
    allclose_all(local(yo), local(yr), RTOL[np.dtype(dtype)], f"{what} forward")
    xo, xr = Op.H @ y, Ref.H @ y
    allclose_all(local(xo), local(xr), RTOL[np.dtype(dtype)], f"{what} adjoint")
    if not isinstance(yo, StackedDistributedArray):
        check_all(yo.partition == yr.partition and xo.partition == xr.partition, f"{what}: partitions differ")


def dottest(Op, dtype, what):
    e = Op.dottest(seed=3)
    check_all(e <= (1e-5 if _single(dtype) else 1e-12), f"{what}: dot test {e:.2e}")


def cgls_same(Op, Ref, y, x0, dtype, what):
    xo = pylops_mpi.cgls(Op, y, x0, niter=5)[0]
    xr = pylops_mpi.cgls(Ref, y, x0, niter=5)[0]
    allclose_all(local(xo), local(xr), CGLS_RTOL[np.dtype(dtype)], f"{what} cgls")


# ---- per-rank PyLops operators ----------------------------------------------------------------------------------

def mm(shape, dtype, seed):
    return pylops.MatrixMult(rand(shape, dtype, seed), dtype=dtype)


def blockdiag_ops(kind, dtype):
    """This rank's ops; sizes differ between ranks, and the last of several ranks has a block with no rows."""
    s = 100 + 10 * R
    zero_rows = P > 1 and R == P - 1
    dense = [mm((R + 2, R + 1), dtype, s), mm((0 if zero_rows else 1, 3), dtype, s + 1)]
    cb = [pylops.Diagonal(rand(R + 2, dtype, s + 2), dtype=dtype), pylops.FirstDerivative(4, dtype=dtype),
          mm((0 if zero_rows else 2, 2), dtype, s + 3)]
    if kind == "dense":
        return dense
    if kind == "callbacks":
        return cb
    return dense if R == 0 else cb  # mixed: rank 0 dense, the others callbacks


KINDS = ["dense", "callbacks", "mixed"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_blockdiag(kind, dtype):
    ops = blockdiag_ops(kind, dtype)
    Op = rmaop.MPIBlockDiag(ops, dtype=dtype)
    Ref = pylops_mpi.MPIBlockDiag(ops, dtype=dtype)
    check_all(Op.shape == Ref.shape and Op.local_shapes_m == Ref.local_shapes_m, f"shape {Op.shape} {Ref.shape}")
    check_all((Op._cb is None) == (kind == "dense" or (kind == "mixed" and R == 0)), "dense path not taken")
    x = dist(Op.shape[1], Op.mops, dtype, 1)
    y = dist(Op.shape[0], Op.nops, dtype, 2)
    compare(Op, Ref, x, y, dtype, f"MPIBlockDiag {kind}")
    dottest(Op, dtype, "MPIBlockDiag")
    cgls_same(Op, Ref, y, dist(Op.shape[1], Op.mops, dtype, 3), dtype, "MPIBlockDiag")
    # local arrays, and an input split differently from the operator's (redistributed)
    yl = Op.apply(x.local_array)
    allclose_all(yl, (Ref @ x).local_array, RTOL[np.dtype(dtype)], "apply")
    xe = DistributedArray(global_shape=Op.shape[1], dtype=dtype)  # PyLops-MPI's default split
    full = rand(Op.shape[1], dtype, 1)
    off = sum(comm.allgather(xe.local_shape[0])[:R])
    xe[:] = full[off:off + xe.local_shape[0]]
    allclose_all((Op @ xe).local_array, (Ref @ x).local_array, RTOL[np.dtype(dtype)], "redistributed input")
    Op.close()


def test_blockdiag_default_dtype():
    ops = [mm((2, 2), np.float32, 1), mm((1, 2), np.complex64, 2)] if R == 0 else [mm((2, 3), np.float32, 3)]
    Op = rmaop.MPIBlockDiag(ops)
    check_all(Op.dtype == np.complex64, f"dtype {Op.dtype}")  # the result type over every rank's ops
    Op.close()


class _Boom(pylops.LinearOperator):
    def __init__(self, n, dtype):
        super().__init__(dtype=np.dtype(dtype), shape=(n, n))

    def _matvec(self, x):
        raise RuntimeError("boom forward")

    def _rmatvec(self, x):
        raise RuntimeError("boom adjoint")


def test_blockdiag_errors():
    ops = blockdiag_ops("callbacks", np.float64)
    raises_all(NotImplementedError, rmaop.MPIBlockDiag, ops, mask=[0] * P)
    raises_all(TypeError, rmaop.MPIBlockDiag, ops + ([np.eye(2)] if R == P - 1 else []))
    raises_all(TypeError, rmaop.MPIBlockDiag, ops, dtype=np.int32)
    Op = rmaop.MPIBlockDiag(ops)
    raises_all(ValueError, Op.matvec, dist(Op.shape[1] + P, Op.mops + 1, np.float64, 1))
    raises_all(ValueError, Op.apply, np.zeros(Op.mops + 1))
    raises_all(ValueError, Op.apply, np.zeros(Op.mops), out=np.empty(Op.nops, np.float32))  # out's dtype
    Op.close()
    # a callback that raises: an exception on the caller, not a crash; the operator still works afterwards
    with rmaop.Context() as ctx:
        Op = rmaop.MPIBlockDiag([_Boom(3, np.float64), pylops.Identity(2)], context=ctx)
        e = raises_all(rmaop.RmaopError, Op.apply, np.ones(5))
        check_all(isinstance(e.__cause__, RuntimeError) and "boom forward" in str(e), f"{e!r}")
        e = raises_all(rmaop.RmaopError, Op.apply_adjoint, np.ones(5))
        check_all("boom adjoint" in str(e), f"{e!r}")
        Op2 = rmaop.MPIBlockDiag([pylops.Identity(2)], context=ctx)
        check_all(np.array_equal(Op2.apply(np.arange(2.0)), np.arange(2.0)), "context unusable after an error")
        V = rmaop.MPIVStack([_Boom(3, np.float64)], context=ctx)  # every rank fails before the reduction
        raises_all(rmaop.RmaopError, V.apply_adjoint, np.ones(3))


def vstack_ops(kind, dtype, M=4):
    s = 200 + 10 * R
    zero_rows = P > 1 and R == P - 1
    if kind == "dense":
        return [mm((R + 1, M), dtype, s), mm((0 if zero_rows else 2, M), dtype, s + 1)]
    return [pylops.Diagonal(rand(M, dtype, s), dtype=dtype), pylops.FirstDerivative(M, dtype=dtype),
            mm((R + 1, M), dtype, s + 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["dense", "callbacks"])
def test_vstack(kind, dtype):
    ops = vstack_ops(kind, dtype)
    Op = rmaop.MPIVStack(ops, dtype=dtype)
    Ref = pylops_mpi.MPIVStack(ops, dtype=dtype)
    check_all(Op.shape == Ref.shape, f"shape {Op.shape} {Ref.shape}")
    x = dist(Op.shape[1], 0, dtype, 1, Partition.BROADCAST)
    y = dist(Op.shape[0], Op.nops, dtype, 2)
    compare(Op, Ref, x, y, dtype, f"MPIVStack {kind}")
    dottest(Op, dtype, "MPIVStack")
    cgls_same(Op, Ref, y, dist(Op.shape[1], 0, dtype, 3, Partition.BROADCAST), dtype, "MPIVStack")
    Op.close()


def hstack_ops(kind, dtype, N=3):
    s = 300 + 10 * R
    zero_cols = P > 1 and R == P - 1
    if kind == "dense":
        return [mm((N, R + 1), dtype, s), mm((N, 0 if zero_cols else 2), dtype, s + 1)]
    return [pylops.Diagonal(rand(N, dtype, s), dtype=dtype), pylops.FirstDerivative(N, dtype=dtype),
            mm((N, R + 1), dtype, s + 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["dense", "callbacks"])
def test_hstack(kind, dtype):
    ops = hstack_ops(kind, dtype)
    Op = rmaop.MPIHStack(ops, dtype=dtype)
    Ref = pylops_mpi.MPIHStack(ops, dtype=dtype)
    check_all(Op.shape == Ref.shape, f"shape {Op.shape} {Ref.shape}")
    x = dist(Op.shape[1], Op.mops, dtype, 1)
    y = dist(Op.shape[0], 0, dtype, 2, Partition.BROADCAST)
    compare(Op, Ref, x, y, dtype, f"MPIHStack {kind}")
    dottest(Op, dtype, "MPIHStack")
    cgls_same(Op, Ref, y, dist(Op.shape[1], Op.mops, dtype, 3), dtype, "MPIHStack")
    Op.close()


def test_stack_errors():
    raises_all(ValueError, rmaop.MPIVStack, [mm((2, 3), np.float64, 1), mm((2, 3 + (R == P - 1)), np.float64, 1)])
    raises_all(ValueError, rmaop.MPIHStack, [mm((3, 2), np.float64, 1), mm((3 + (R == P - 1), 2), np.float64, 1)])
    raises_all(TypeError, rmaop.MPIVStack, [mm((2, 3), np.float64, 1)], dtype="int64")


# ---- stacked operators over rmaop operators -----------------------------------------------------------------------

def _split(n):
    return n // P + (R < n % P)


def stacked_parts(dtype, n=7):
    """Three rmaop operators and their PyLops-MPI twins on one model split (n over P, PyLops-MPI's default)."""
    m = _split(n)
    bd = [mm((R + 2, m), dtype, 400 + R)]
    hs = [mm((3, m), dtype, 410 + R)]
    ops = [rmaop.MPIBlockDiag(bd, dtype=dtype), rmaop.MPIFirstDerivative((n,), dtype=dtype),
           rmaop.MPIHStack(hs, dtype=dtype)]
    refs = [pylops_mpi.MPIBlockDiag(bd, dtype=dtype), pylops_mpi.MPIFirstDerivative((n,), dtype=dtype),
            pylops_mpi.MPIHStack(hs, dtype=dtype)]
    return ops, refs


def stacked_dist(parts, dtype, seed):
    return StackedDistributedArray([p(dtype, seed + i) for i, p in enumerate(parts)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_stacked_vstack(dtype):
    ops, refs = stacked_parts(dtype)
    Op = rmaop.MPIStackedVStack(ops)
    Ref = pylops_mpi.MPIStackedVStack(refs)
    check_all(Op.shape == Ref.shape, f"shape {Op.shape} {Ref.shape}")
    x = dist(7, _split(7), dtype, 1)
    y = StackedDistributedArray([dist(ops[0].shape[0], ops[0].nops, dtype, 2), dist(7, _split(7), dtype, 3),
                                 dist(3, 0, dtype, 4, Partition.BROADCAST)])
    compare(Op, Ref, x, y, dtype, "MPIStackedVStack")
    dottest(Op, dtype, "MPIStackedVStack")
    cgls_same(Op, Ref, y, dist(7, _split(7), dtype, 5), dtype, "MPIStackedVStack")
    Op.close()
    for o in ops:
        o.close()


@pytest.mark.parametrize("dtype", DTYPES)
def test_stacked_blockdiag(dtype):
    bd = blockdiag_ops("mixed", dtype)
    vs = vstack_ops("dense", dtype)
    ops = [rmaop.MPIBlockDiag(bd, dtype=dtype), rmaop.MPIVStack(vs, dtype=dtype)]
    refs = [pylops_mpi.MPIBlockDiag(bd, dtype=dtype), pylops_mpi.MPIVStack(vs, dtype=dtype)]
    Op = rmaop.MPIStackedBlockDiag(ops)
    Ref = pylops_mpi.MPIStackedBlockDiag(refs)
    check_all(Op.shape == Ref.shape, f"shape {Op.shape} {Ref.shape}")

    def model(seed):
        return StackedDistributedArray([dist(ops[0].shape[1], ops[0].mops, dtype, seed),
                                        dist(ops[1].shape[1], 0, dtype, seed + 1, Partition.BROADCAST)])
    y = StackedDistributedArray([dist(ops[0].shape[0], ops[0].nops, dtype, 2),
                                 dist(ops[1].shape[0], ops[1].nops, dtype, 3)])
    compare(Op, Ref, model(10), y, dtype, "MPIStackedBlockDiag")
    dottest(Op, dtype, "MPIStackedBlockDiag")
    cgls_same(Op, Ref, y, model(20), dtype, "MPIStackedBlockDiag")
    Op.close()
    for o in ops:
        o.close()


def test_stacked_errors():
    ops, refs = stacked_parts(np.float64)
    raises_all(TypeError, rmaop.MPIStackedVStack, refs)                   # PyLops-MPI operators
    raises_all(ValueError, rmaop.MPIStackedVStack, [])
    raises_all(TypeError, rmaop.MPIStackedVStack, ops, dtype=np.float32)   # rmaop does not convert
    f32 = rmaop.MPIFirstDerivative((7,), dtype=np.float32)
    raises_all(TypeError, rmaop.MPIStackedVStack, [ops[1], f32])
    other = rmaop.MPIFirstDerivative((8,))
    raises_all(ValueError, rmaop.MPIStackedVStack, [ops[1], other])      # different models
    Op = rmaop.MPIStackedBlockDiag(ops)
    raises_all(TypeError, Op.matvec, dist(Op.shape[1], 0, np.float64, 1, Partition.BROADCAST))  # not stacked
    for o in [Op, f32, other] + ops:
        o.close()


# ---- MPIMatrixMult --------------------------------------------------------------------------------------------------

def _ceil_block(n, g, b):
    bs = -(-n // g)
    o = min(b * bs, n)
    return o, min(o + bs, n) - o


def matmul_blocks(kind, N, K, M):
    """This rank's (rows, cols) slices of A, X and Y, computed independently of the library; None: idle."""
    if kind == "block":
        def rows(n):
            o = sum(n // P + (r < n % P) for r in range(R))
            return slice(o, o + n // P + (R < n % P))
        return (rows(N), slice(0, K)), (rows(K), slice(0, M)), (rows(N), slice(0, M))
    g = math.isqrt(P)
    if R >= g * g:
        return None
    i, j = divmod(R, g)

    def sl(n, b):
        o, ln = _ceil_block(n, g, b)
        return slice(o, o + ln)
    return (sl(N, i), sl(K, j)), (sl(K, i), sl(M, j)), (sl(N, i), sl(M, j))


def matmul_case(kind, dtype, N=5, K=4, M=3):
    A = rand((N, K), dtype, 7)
    X, Yd = rand((K, M), dtype, 8), rand((N, M), dtype, 9)
    b = matmul_blocks(kind, N, K, M)
    if b is None:
        Al, xl, yl = np.empty((0, 0), dtype), np.empty(0, dtype), np.empty(0, dtype)
    else:
        Al, xl, yl = A[b[0]], X[b[1]].ravel(), Yd[b[2]].ravel()
    x = dist(K * M, xl.size, dtype, 0)
    x[:] = xl
    y = dist(N * M, yl.size, dtype, 0)
    y[:] = yl
    return A, X, Yd, np.ascontiguousarray(Al), x, y, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N", [5, 2])  # 2 rows: a rank without rows of A and Y at 3 ranks (block)
@pytest.mark.parametrize("kind", ["block", "summa"])
def test_matrixmult(kind, N, dtype):
    A, X, Yd, Al, x, y, b = matmul_case(kind, dtype, N=N)
    Op = rmaop.MPIMatrixMult(Al, 3, saveAt=True, kind=kind, dtype=dtype)
    check_all(Op.shape == (3 * N, 12) and (Op.N, Op.K, Op.M) == (N, 4, 3), f"shape {Op.shape}")
    check_all(bool(Op.blocks.active) == (b is not None), "idle rank")
    # serial reference: every rank's block of A X and A^H Y
    yo, xo = Op @ x, Op.H @ y
    ye = (A @ X)[b[2]].ravel() if b else np.empty(0, dtype)
    xe = (A.conj().T @ Yd)[b[1]].ravel() if b else np.empty(0, dtype)
    allclose_all(yo.local_array, ye, RTOL[np.dtype(dtype)], f"matmul {kind} forward (serial)")
    allclose_all(xo.local_array, xe, RTOL[np.dtype(dtype)], f"matmul {kind} adjoint (serial)")
    dottest(Op, dtype, f"MPIMatrixMult {kind}")
    x0 = dist(12, x.local_array.size, dtype, 11)
    square = math.isqrt(P) ** 2 == P
    if (kind == "summa" and square) or P == 1:  # PyLops-MPI's layout is rmaop's: compare with it
        Ref = pylops_mpi.MPIMatrixMult(Al, 3, saveAt=True, kind=kind, dtype=dtype)
        compare(Op, Ref, x, y, dtype, f"MPIMatrixMult {kind}")
        cgls_same(Op, Ref, y, x0, dtype, f"MPIMatrixMult {kind}")
    else:  # PyLops-MPI needs a square grid (summa) or replicates X (block): serial pylops.cgls instead
        xs = pylops_mpi.cgls(Op, y, x0, niter=5)[0]
        x0f = np.zeros((4, 3), dtype)
        for r, (xb, sl) in enumerate(zip(comm.allgather(x0.local_array), comm.allgather(b))):
            if sl is not None:
                x0f[sl[1]] = xb.reshape(x0f[sl[1]].shape)
        ref = pylops.optimization.basic.cgls(pylops.MatrixMult(A, otherdims=3, dtype=dtype), Yd.ravel(),
                                             x0f.ravel(), niter=5)[0].reshape(4, 3)
        allclose_all(xs.local_array, ref[b[1]].ravel() if b else np.empty(0, dtype),
                     CGLS_RTOL[np.dtype(dtype)] * 10, f"matmul {kind} cgls (serial)")
    Op.close()


def test_matrixmult_errors():
    A, X, Yd, Al, x, y, b = matmul_case("block", np.float64)
    raises_all(NotImplementedError, rmaop.MPIMatrixMult, Al, 3, kind="cannon")
    raises_all(ValueError, rmaop.MPIMatrixMult, Al.ravel(), 3, kind="block")
    if P > 1:  # at one rank every A is the whole matrix
        bad = np.zeros((Al.shape[0] + (R == 0), Al.shape[1]))  # one row too many on rank 0
        e = raises_all(ValueError, rmaop.MPIMatrixMult, bad, 3, kind="block")
        check_all("rank 0" in str(e), str(e))
        raises_all(ValueError, rmaop.MPIMatrixMult, np.zeros((Al.shape[0], Al.shape[1] + (R == P - 1))), 3,
                   kind="block")
    raises_all(TypeError, rmaop.MPIMatrixMult, Al, 3, kind="block", dtype=np.int64)
    Op = rmaop.MPIMatrixMult(Al, 3, kind="block")
    raises_all(ValueError, Op.matvec, dist(13, x.local_array.size + (R == 0), np.float64, 1))
    Op.close()
    if P > 1:  # summa: a wrong block on one rank
        A, X, Yd, Al, x, y, b = matmul_case("summa", np.float64)
        raises_all(ValueError, rmaop.MPIMatrixMult, np.zeros((2, 2)) if R == P - 1 else Al, 3, kind="summa")


# ---- MPIFredholm1 ---------------------------------------------------------------------------------------------------

def fredholm_slices():
    """Slices per rank: uneven, and a rank with none at 3 ranks (PyLops-MPI refuses a rank with exactly one)."""
    return {1: [3], 2: [2, 3], 3: [2, 0, 3]}.get(P, [2] * P)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nz", [1, 2])
def test_fredholm1(nz, dtype):
    nsls = fredholm_slices()
    nsl, nx, ny = sum(nsls), 4, 3
    G = rand((nsl, nx, ny), dtype, 5)
    o = sum(nsls[:R])
    Gl = np.ascontiguousarray(G[o:o + nsls[R]])
    Op = rmaop.MPIFredholm1(Gl, nz=nz, dtype=dtype)
    Ref = PMFredholm1(Gl, nz=nz, dtype=dtype)
    check_all(Op.shape == Ref.shape and Op.dims == Ref.dims and Op.dimsd == Ref.dimsd, f"{Op.shape} {Ref.shape}")
    x = dist(nsl * ny * nz, 0, dtype, 1, Partition.BROADCAST)
    y = dist(nsl * nx * nz, 0, dtype, 2, Partition.BROADCAST)
    compare(Op, Ref, x, y, dtype, "MPIFredholm1")
    # and against serial PyLops
    S = pylops.signalprocessing.Fredholm1(G, nz=nz, dtype=dtype)
    allclose_all((Op @ x).local_array, S @ x.local_array, RTOL[np.dtype(dtype)], "Fredholm1 serial")
    dottest(Op, dtype, "MPIFredholm1")
    cgls_same(Op, Ref, y, dist(nsl * ny * nz, 0, dtype, 3, Partition.BROADCAST), dtype, "MPIFredholm1")
    Op.close()


def test_fredholm1_errors():
    raises_all(ValueError, rmaop.MPIFredholm1, np.zeros((2, 3)))
    raises_all(ValueError, rmaop.MPIFredholm1, np.zeros((2, 3, 2)), nz=0)
    raises_all(TypeError, rmaop.MPIFredholm1, np.zeros((2, 3, 2)), dtype="int32")
    if P > 1:
        raises_all(ValueError, rmaop.MPIFredholm1, np.zeros((2, 3 + (R == 1), 2)))
    Op = rmaop.MPIFredholm1(np.ones((2, 3, 2)), nz=2)
    raises_all(ValueError, Op.matvec, dist(4 * P * 2 + 1, 0, np.float64, 1, Partition.BROADCAST))
    Op.close()


# ---- device memory (RMAOP_TEST_MEMORY=device, CuPy) ----------------------------------------------------------------

def test_device_blocks(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy as cp
    with rmaop.Context(memory="device") as ctx:
        ops = blockdiag_ops("callbacks", np.float64)
        raises_all(rmaop.RmaopUnsupported, rmaop.MPIBlockDiag, ops, context=ctx)
        dense = blockdiag_ops("dense", np.float64)
        Op = rmaop.MPIBlockDiag(dense, context=ctx)
        Ref = pylops_mpi.MPIBlockDiag(dense)
        x = dist(Op.shape[1], Op.mops, np.float64, 1)
        y = Op.apply(cp.asarray(x.local_array))
        allclose_all(cp.asnumpy(y), (Ref @ x).local_array, 1e-12, "device blockdiag")
