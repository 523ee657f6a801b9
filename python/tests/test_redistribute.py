"""redistribute(x, axis) against PyLops-MPI's DistributedArray.redistribute (exact: a permutation), on
DistributedArrays and on local blocks, and MPIRedistribute as an operator (forward, adjoint = the way back, dot
test). Collective: any rank count (1, 2, 3 tested)."""
import numpy as np
import pylops_mpi
import pytest

import rmaop
from conftest import DTYPES, check_all, comm, rand, raises_all
from rmaop.redistribute import MPIRedistribute, redistribute

P, R = comm.Get_size(), comm.Get_rank()

CASES = [((5, 4, 3), 0, 1), ((7, 2), 1, 0), ((3, 5, 4), 0, 2), ((2, 3), 0, 1), ((4, 1, 6, 2), 2, 0), ((6, 5), 0, -1)]


def dist(g, axis, sizes=None):
    x = pylops_mpi.DistributedArray(global_shape=g.shape, axis=axis, dtype=g.dtype,
                                    local_shapes=None if sizes is None else [
                                        tuple(s if d == axis else n for d, n in enumerate(g.shape)) for s in sizes])
    n = g.shape[axis]
    sizes = sizes or [n // P + (r < n % P) for r in range(P)]
    sl = [slice(None)] * g.ndim
    sl[axis] = slice(sum(sizes[:R]), sum(sizes[:R + 1]))
    x[:] = g[tuple(sl)]
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{c[1]}to{c[2]}")
def test_redistribute(case, dtype):
    dims, fa, ta = case
    g = rand(dims, dtype, 1)
    x = dist(g, fa)
    y, yr = redistribute(x, ta), x.redistribute(ta % len(dims))
    check_all(y.axis == yr.axis and tuple(y.local_shape) == tuple(yr.local_shape), f"{y.local_shape} {yr.local_shape}")
    check_all(np.array_equal(y.local_array, yr.local_array) and np.array_equal(y.asarray(), g), "values")
    check_all(np.array_equal(redistribute(x.local_array, ta, from_axis=fa), yr.local_array), "local blocks")
    check_all(redistribute(x, fa) is x, "the same axis must return x itself")
    Op = MPIRedistribute(dims, fa, ta, dtype=dtype)
    z = Op.apply(x.local_array.ravel())
    check_all(np.array_equal(z, yr.local_array.ravel()), "operator forward")
    check_all(np.array_equal(Op.apply_adjoint(z), x.local_array.ravel()), "operator adjoint: the way back")
    check_all(Op.dottest(seed=2) <= 1e-6, "dot test")
    Op.close()


def test_uneven_source():
    """An unbalanced source split (a rank with none when P > 1) lands balanced, as PyLops-MPI's."""
    dims = (7, 4)
    sizes = [7] + [0] * (P - 1)
    g = rand(dims, np.float64, 2)
    x = dist(g, 0, sizes)
    y = redistribute(x, 1)
    check_all(np.array_equal(y.asarray(), g) and np.array_equal(y.local_array, x.redistribute(1).local_array), "")
    Op = MPIRedistribute(dims, 0, 1, from_local=sizes[R])
    check_all(np.array_equal(Op.apply(x.local_array.ravel()), y.local_array.ravel()), "operator from_local")
    Op.close()


def test_errors():
    if P > 1:
        raises_all(ValueError, redistribute, np.zeros((2, 3 + R)), 1, from_axis=0)  # the blocks are not one array
    raises_all(ValueError, redistribute, np.zeros((2, 3)), 5)
    e = raises_all(rmaop.RmaopError, MPIRedistribute, (4, 4), 0, 2)
    check_all(e is not None and e.status == "RMAOP_ERR_ARG", str(e))
    e = raises_all(rmaop.RmaopError, MPIRedistribute, (4, 4), 0, 1, from_local=5)
    check_all(e is not None and e.status == "RMAOP_ERR_ARG", str(e))
    raises_all(TypeError, redistribute, dist(np.zeros((3, 2), dtype=np.int64), 0), 1)
