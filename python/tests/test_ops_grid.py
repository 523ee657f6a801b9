"""rmaop's grid operators against PyLops-MPI's on the same DistributedArrays, and against serial PyLops on the
gathered arrays (the referee when the two distributed ones disagree, and the only reference where PyLops-MPI
cannot run: a rank with zero rows, ghost zones wider than a neighbour's rows)."""
import numpy as np
import pylops
import pylops_mpi as pm
import pytest
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand

import rmaop

rank, size = comm.Get_rank(), comm.Get_size()

# Every rank of the balanced split holds >= 4 rows of 13 at up to 3 ranks: PyLops-MPI's order-5 adjoint takes 4
# ghost rows from one neighbour.
N0 = 13
DIMS = [(N0,), (N0, 4), (N0, 3, 2)]
FIRST_KINDS = [("forward", 3), ("backward", 3), ("centered", 3), ("centered", 5)]
DOT_TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 1e-5,
           np.dtype(np.complex128): 1e-12}


def balanced(dims):
    """PyLops-MPI's split of a flattened N-D array along axis 0: every rank's element count."""
    row = int(np.prod(dims[1:]))
    return [(dims[0] // size + (r < dims[0] % size)) * row for r in range(size)]


def uneven(n, zero=False):
    """Another split of n elements, not along rows: rank r gets about (r + 1) parts of n; with ``zero`` rank 0
    gets nothing (at 2 ranks and more)."""
    w = np.arange(1, size + 1, dtype=float)
    if zero and size > 1:
        w[0] = 0
    s = np.floor(n * w / w.sum()).astype(int)
    s[-1] += n - s.sum()
    return [int(v) for v in s]


def mine(g, sizes):
    off = sum(sizes[:rank])
    return g[off:off + sizes[rank]]


def dist(g, sizes, partition=pm.Partition.SCATTER):
    """A flat DistributedArray of the global array g (identical on every rank) split as ``sizes``."""
    if partition is pm.Partition.BROADCAST:
        x = pm.DistributedArray(global_shape=g.size, partition=partition, dtype=g.dtype)
        x[:] = g
        return x
    x = pm.DistributedArray(global_shape=g.size, local_shapes=[(s,) for s in sizes], dtype=g.dtype)
    x[:] = mine(g, sizes)
    return x


def check_same(ya, yb, ys, rtol, what):
    """rmaop's output ya against PyLops-MPI's yb (when given) and serial PyLops' local part ys."""
    if yb is not None:
        check_all(tuple(ya.global_shape) == tuple(yb.global_shape) and tuple(ya.local_shape) == tuple(yb.local_shape),
                  f"{what}: shapes {ya.global_shape}/{ya.local_shape} != PyLops-MPI's {yb.global_shape}/{yb.local_shape}")
        allclose_all(ya.local_array, yb.local_array, rtol, f"{what} vs PyLops-MPI:")
    check_all(ya.local_array.shape == ys.shape, f"{what}: local shape {ya.local_array.shape} != {ys.shape}")
    allclose_all(ya.local_array, ys, rtol, f"{what} vs serial PyLops:")


def against(A, B, S, dims, dtype, seed, in_sizes=None, partition=pm.Partition.SCATTER, adjoint=True):
    """Forward and adjoint of rmaop's A, PyLops-MPI's B (None: skip) and serial S on one input (split
    ``in_sizes``, default the balanced one); the outputs are in the balanced split."""
    rtol = RTOL[np.dtype(dtype)]
    n = int(np.prod(dims))
    out = balanced(dims)
    g = rand(n, dtype, seed)
    x = dist(g, in_sizes or out, partition)
    check_same(A @ x, None if B is None else B @ x, mine(S @ g, out), rtol, "forward")
    if adjoint:
        gy = rand(n, dtype, seed + 1)
        y = dist(gy, in_sizes or out, partition)
        check_same(A.H @ y, None if B is None else B.H @ y, mine(S.H @ gy, out), rtol, "adjoint")
    e = A.dottest(seed)
    check_all(e <= DOT_TOL[np.dtype(dtype)], f"dottest {e:.3e}")


# ---- first derivative -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", [False, True])
@pytest.mark.parametrize("kind,order", FIRST_KINDS)
@pytest.mark.parametrize("dims", DIMS)
def test_first_derivative(dims, kind, order, edge, dtype):
    samp = {1: 1.0, 2: 0.7, 3: 2.5}[len(dims)]
    A = rmaop.MPIFirstDerivative(dims, sampling=samp, kind=kind, edge=edge, order=order, dtype=dtype)
    B = pm.MPIFirstDerivative(dims, sampling=samp, kind=kind, edge=edge, order=order, dtype=dtype)
    S = pylops.FirstDerivative(dims, axis=0, sampling=samp, kind=kind, edge=edge, order=order, dtype=dtype)
    check_all(A.shape == B.shape and A.dims == B.dims and A.dimsd == B.dimsd and A.dtype == B.dtype,
              f"attributes {A.shape} {A.dims} {A.dimsd} {A.dtype} vs {B.shape} {B.dims} {B.dimsd} {B.dtype}")
    try:
        against(A, B, S, dims, dtype, seed=11)
    finally:
        A.close()


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("kind,order", FIRST_KINDS)
@pytest.mark.parametrize("dims", [(N0,), (N0, 3)])
def test_first_derivative_other_split(dims, kind, order, dtype):
    """An input split unlike the operator's (not even on row boundaries), or broadcast: PyLops-MPI's answer."""
    A = rmaop.MPIFirstDerivative(dims, sampling=0.5, kind=kind, order=order, dtype=dtype)
    B = pm.MPIFirstDerivative(dims, sampling=0.5, kind=kind, order=order, dtype=dtype)
    S = pylops.FirstDerivative(dims, axis=0, sampling=0.5, kind=kind, order=order, dtype=dtype)
    try:
        n = int(np.prod(dims))
        against(A, B, S, dims, dtype, seed=3, in_sizes=uneven(n))
        against(A, B, S, dims, dtype, seed=4, partition=pm.Partition.BROADCAST)
        # a rank without any input element: PyLops-MPI's ghost exchange cannot take cells from an empty rank,
        # so serial PyLops is the reference
        against(A, None, S, dims, dtype, seed=5, in_sizes=uneven(n, zero=True))
    finally:
        A.close()


@pytest.mark.parametrize("kind,order,n0", [("forward", 3, 2), ("backward", 3, 2), ("centered", 3, 4),
                                           ("centered", 5, 5), ("centered", 5, 7)])
@pytest.mark.parametrize("edge", [False, True])
def test_first_derivative_few_rows(kind, order, n0, edge):
    """Ranks with fewer rows than the stencil's reach (and, at 3 ranks with n0 = 2, a rank with zero rows):
    PyLops-MPI cannot run these (its ghost cells come from one neighbour only), serial PyLops is the reference."""
    dims = (n0, 3)
    A = rmaop.MPIFirstDerivative(dims, sampling=1.5, kind=kind, order=order, edge=edge)
    S = pylops.FirstDerivative(dims, axis=0, sampling=1.5, kind=kind, order=order, edge=edge)
    try:
        check_all(len(balanced(dims)) == size)
        against(A, None, S, dims, np.float64, seed=7)
    finally:
        A.close()


def test_first_derivative_bad_arguments():
    with pytest.raises(NotImplementedError):
        rmaop.MPIFirstDerivative((N0,), kind="centered", order=4)
    with pytest.raises(NotImplementedError):
        rmaop.MPIFirstDerivative((N0,), kind="upwind")
    with pytest.raises(ValueError):  # the library would read 0 as 1
        rmaop.MPIFirstDerivative((N0,), sampling=0)
    with pytest.raises(rmaop.RmaopError) as e:  # too few samples for the stencil (collective: every rank raises)
        rmaop.MPIFirstDerivative((4,), kind="centered", order=5)
    check_all(e.value.status == "RMAOP_ERR_ARG", e.value.status)


# ---- second derivative ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", [False, True])
@pytest.mark.parametrize("kind", ["forward", "backward", "centered"])
@pytest.mark.parametrize("dims", [(N0,), (N0, 3, 2)])
def test_second_derivative(dims, kind, edge, dtype):
    samp = 1.0 if len(dims) == 1 else 0.6
    A = rmaop.MPISecondDerivative(dims, sampling=samp, kind=kind, edge=edge, dtype=dtype)
    B = pm.MPISecondDerivative(dims, sampling=samp, kind=kind, edge=edge, dtype=dtype)
    S = pylops.SecondDerivative(dims, axis=0, sampling=samp, kind=kind, edge=edge, dtype=dtype)
    check_all(A.shape == B.shape and A.dims == B.dims and A.dimsd == B.dimsd, "attributes")
    try:
        against(A, B, S, dims, dtype, seed=21)
        if dtype == np.float64:
            against(A, B, S, dims, dtype, seed=22, in_sizes=uneven(int(np.prod(dims))))
            against(A, None, S, dims, dtype, seed=23, in_sizes=uneven(int(np.prod(dims)), zero=True))
    finally:
        A.close()


@pytest.mark.parametrize("kind", ["forward", "backward", "centered"])
def test_second_derivative_few_rows(kind):
    dims = (4, 2)  # 2, 1, 1 rows at 3 ranks: 2-row ghost zones cross two ranks
    A = rmaop.MPISecondDerivative(dims, sampling=0.8, kind=kind, edge=True)
    S = pylops.SecondDerivative(dims, axis=0, sampling=0.8, kind=kind, edge=True)
    try:
        against(A, None, S, dims, np.float64, seed=8)
    finally:
        A.close()


# ---- Laplacian ------------------------------------------------------------------------------------------

LAPLACIANS = [  # dims, axes, weights, sampling, edge, kind
    ((N0, 4), (-2, -1), (1, 1), (1, 1), False, "centered"),
    ((N0, 4), (0, 1), (2.0, -0.5), (0.5, 2.0), True, "centered"),
    ((N0, 4), (1, 0), (1.5, 1), (1, 0.3), False, "forward"),
    ((N0, 4), (0,), (3.0,), (0.7,), True, "backward"),
    ((N0, 4), (1,), (1.0,), (1.3,), False, "centered"),
    ((N0, 3, 4), (-2, -1), (1, 1), (1, 1), True, "forward"),
    ((N0, 3, 4), (0, 2), (0.5, 2.0), (2.0, 0.5), False, "backward"),
    ((N0, 3, 4), (0, 1, 2), (1.0, 2.0, 3.0), (0.9, 1.1, 1.2), True, "centered"),
    ((N0, 3, 4), (2, 0, 1), (1.0, -1.0, 0.25), (1.0, 1.0, 1.0), False, "forward"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims,axes,weights,sampling,edge,kind", LAPLACIANS)
def test_laplacian(dims, axes, weights, sampling, edge, kind, dtype):
    kw = dict(axes=axes, weights=weights, sampling=sampling, edge=edge, kind=kind, dtype=dtype)
    A = rmaop.MPILaplacian(dims, **kw)
    B = pm.MPILaplacian(dims, **kw)
    S = pylops.Laplacian(dims, **kw)
    # PyLops-MPI's dimsd is its first term's: (prod(dims),) when axes[0] != 0; rmaop's is dims
    check_all(A.shape == B.shape and A.dims == B.dims and A.dimsd == tuple(dims) and A.axes == B.axes,
              f"attributes {A.shape} {A.dims} {A.dimsd} {A.axes} vs {B.shape} {B.dims} {B.dimsd} {B.axes}")
    try:
        against(A, B, S, dims, dtype, seed=31)
        if dtype == np.complex128:
            against(A, B, S, dims, dtype, seed=32, in_sizes=uneven(int(np.prod(dims))))
    finally:
        A.close()


@pytest.mark.parametrize("dims,axes", [((2, 5), (1,)), ((2, 5), (-1,)), ((4, 5), (0, 1)), ((5, 3, 4), (0, 2))])
def test_laplacian_few_rows(dims, axes):
    """At 3 ranks: (2, 5) leaves a rank without rows, (4, 5) gives ranks of 1 row (ghost zones cross ranks).
    PyLops-MPI cannot run these; serial PyLops is the reference."""
    kw = dict(axes=axes, weights=(1.5,) * len(axes), sampling=(0.8,) * len(axes), edge=True, kind="centered")
    A = rmaop.MPILaplacian(dims, **kw)
    S = pylops.Laplacian(dims, **kw)
    try:
        against(A, None, S, dims, np.float64, seed=33)
        against(A, None, S, dims, np.float64, seed=34, in_sizes=uneven(int(np.prod(dims)), zero=True))
    finally:
        A.close()


def test_laplacian_bad_arguments():
    with pytest.raises(ValueError):  # PyLops: the zero operator; the library would read them as ones
        rmaop.MPILaplacian((N0, 4), weights=(0, 0))
    with pytest.raises(ValueError):
        rmaop.MPILaplacian((N0, 4), sampling=(1.0, 0.0))
    with pytest.raises(ValueError):
        rmaop.MPILaplacian((N0, 4), axes=(0, 1), weights=(1,), sampling=(1, 1))
    with pytest.raises(ValueError):
        rmaop.MPILaplacian((N0, 4), axes=(0, 2), weights=(1, 1), sampling=(1, 1))


# ---- gradient -------------------------------------------------------------------------------------------

def stacked(parts, sizes):
    return pm.StackedDistributedArray([dist(g, sizes) for g in parts])


def check_grad(A, B, S, dims, dtype, seed, in_sizes=None, zero_ok=True):
    rtol = RTOL[np.dtype(dtype)]
    n = int(np.prod(dims))
    out = balanced(dims)
    g = rand(n, dtype, seed)
    x = dist(g, in_sizes or out)
    ya = A @ x
    check_all(isinstance(ya, pm.StackedDistributedArray) and len(ya.distarrays) == len(dims),
              f"forward returns {type(ya).__name__}")
    ys = (S @ g).reshape(len(dims), n)
    yb = B @ x if B is not None else None
    for d in range(len(dims)):
        check_same(ya.distarrays[d], None if yb is None else yb.distarrays[d], mine(ys[d], out), rtol,
                   f"forward part {d}")
    gy = rand(len(dims) * n, dtype, seed + 1).reshape(len(dims), n)
    y = stacked(list(gy), in_sizes or out)
    za = A.H @ y
    check_all(isinstance(za, pm.DistributedArray), f"adjoint returns {type(za).__name__}")
    check_same(za, None if B is None else B.H @ y, mine(S.H @ gy.ravel(), out), rtol, "adjoint")
    # the adjoint of rmaop's own stacked output (its parts are views of one buffer)
    check_same(A.H @ ya, None if B is None else B.H @ ya, mine(S.H @ ys.ravel(), out), rtol, "adjoint of A x")
    e = A.dottest(seed)
    check_all(e <= DOT_TOL[np.dtype(dtype)], f"dottest {e:.3e}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("edge", [False, True])
@pytest.mark.parametrize("kind", ["forward", "backward", "centered"])
@pytest.mark.parametrize("dims,sampling", [((N0,), 1), ((N0, 4), (0.5, 2.0)), ((N0, 3, 3), 1.5)])
def test_gradient(dims, sampling, kind, edge, dtype):
    A = rmaop.MPIGradient(dims, sampling=sampling, edge=edge, kind=kind, dtype=dtype)
    B = pm.MPIGradient(dims, sampling=sampling, edge=edge, kind=kind, dtype=dtype)
    S = pylops.Gradient(dims, sampling=sampling, edge=edge, kind=kind, dtype=dtype)
    # dimsd: rmaop's is serial PyLops' (ndim, *dims); PyLops-MPI's is flat
    check_all(A.shape == B.shape and tuple(A.dims) == tuple(B.dims) and tuple(A.dimsd) == tuple(S.dimsd),
              f"attributes {A.shape} {A.dims} {A.dimsd} vs {B.shape} {B.dims} {S.dimsd}")
    try:
        check_grad(A, B, S, dims, dtype, seed=41)
        if dtype == np.float64 and kind == "centered":
            check_grad(A, B, S, dims, dtype, seed=42, in_sizes=uneven(int(np.prod(dims))))
    finally:
        A.close()


def test_gradient_zero_rows():
    """dims[0] = 2: at 3 ranks the last holds no row (serial PyLops is the reference)."""
    dims = (2, 3)
    A = rmaop.MPIGradient(dims, sampling=(1.0, 0.5), kind="forward")
    S = pylops.Gradient(dims, sampling=(1.0, 0.5), kind="forward")
    try:
        check_grad(A, None, S, dims, np.float64, seed=43)
    finally:
        A.close()


@pytest.mark.parametrize("edge", [False, True])
def test_gradient_short_axis(edge):
    """A local axis of 2 samples with the centered stencil: PyLops computes it (zeros, or the edge
    differences); rmaop refuses it at creation (RMAOP_ERR_ARG, on every rank). Either is accepted here, a
    wrong answer is not."""
    dims = (N0, 2)
    S = pylops.Gradient(dims, edge=edge, kind="centered")
    try:
        A = rmaop.MPIGradient(dims, edge=edge, kind="centered")
    except rmaop.RmaopError as e:
        check_all(e.status == "RMAOP_ERR_ARG" and "axis 1" in str(e), str(e))
        return
    try:
        check_grad(A, pm.MPIGradient(dims, edge=edge, kind="centered"), S, dims, np.float64, seed=44)
    finally:
        A.close()


def test_gradient_bad_arguments():
    with pytest.raises(ValueError):
        rmaop.MPIGradient((N0, 4), sampling=(1.0, 2.0, 3.0))
    A = rmaop.MPIGradient((N0, 4))
    try:
        with pytest.raises(TypeError):  # the adjoint takes a StackedDistributedArray
            A.H @ dist(rand(2 * N0 * 4, np.float64, 0), uneven(2 * N0 * 4))
    finally:
        A.close()
