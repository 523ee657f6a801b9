"""MPIMDC against serial PyLops' MDC (the whole G; any split of the frequencies, ranks without any included) and
PyLops-MPI's MPIMDC (every rank with frequencies); MPINonStationaryConvolve1D against serial PyLops'
NonStationaryConvolve1D on the gathered array (any split of the convolved axis, zero-size blocks included) and
PyLops-MPI's where its limits allow; dot tests, solvers and errors. Collective: any rank count (1, 2, 3 tested)."""
import numpy as np
import pylops
import pylops_mpi
import pytest
from pylops_mpi.signalprocessing import MPINonStationaryConvolve1D as PMNonStat
from pylops_mpi.waveeqprocessing import MPIMDC as PMMDC

import rmaop
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand, raises_all
from rmaop.ops_signal import MPIMDC, MPINonStationaryConvolve1D

P, R = comm.Get_size(), comm.Get_rank()
BCAST = pylops_mpi.Partition.BROADCAST
_REAL = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


def split(n, sizes=None):
    sizes = sizes or [n // P + (r < n % P) for r in range(P)]
    return sizes, sum(sizes[:R])


def bcast(g):
    x = pylops_mpi.DistributedArray(global_shape=g.size, partition=BCAST, dtype=g.dtype)
    x[:] = g
    return x


# ---- MDC ---------------------------------------------------------------------------------------------------------

def kernel(nfmax, ns, nr, dtype, seed=1):
    return rand((nfmax, ns, nr), dtype, seed)


MDC_CASES = [  # nt, ns, nr, nv, nfmax, twosided, conj, prescaled
    (9, 4, 3, 2, 5, True, False, False),
    (8, 3, 5, 1, 4, False, False, False),
    (11, 2, 2, 3, 6, True, True, False),
    (7, 3, 4, 2, 3, False, False, True),
    (9, 2, 3, 1, 2, True, False, False),   # at 3 ranks, a rank without frequencies
]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", MDC_CASES, ids=lambda c: f"nt{c[0]}-nf{c[4]}{'-two' if c[5] else ''}"
                         f"{'-conj' if c[6] else ''}{'-pre' if c[7] else ''}")
def test_mdc(case, dtype):
    nt, ns, nr, nv, nfmax, twosided, conj, prescaled = case
    dtype = np.dtype(dtype)
    Gall = kernel(nfmax, ns, nr, dtype)
    sizes, off = split(nfmax)
    G = Gall[off:off + sizes[R]]
    kw = dict(dt=0.5, dr=2.0, twosided=twosided, conj=conj, prescaled=prescaled)
    Op = MPIMDC(G, nt, nv, nfmax, **kw)
    Ser = pylops.waveeqprocessing.MDC(Gall, nt, nv, **kw)
    rdt = _REAL[dtype]
    check_all(Op.shape == Ser.shape and np.dtype(Op.dtype) == np.dtype(rdt), f"{Op.shape} {Op.dtype}")
    rtol = RTOL[dtype] * 10
    g = rand(Op.shape[1], rdt, 2)
    x = bcast(g)
    y = Op @ x
    check_all(y.partition is BCAST and y.dtype == rdt, f"{y.partition} {y.dtype}")
    allclose_all(y.local_array, np.real(Ser @ g), rtol, "MDC forward vs serial")
    d = rand(Op.shape[0], rdt, 3)
    z = Op.H @ bcast(d)
    allclose_all(z.local_array, np.real(Ser.H @ d), rtol, "MDC adjoint vs serial")
    e = Op.dottest(seed=2)
    check_all(e <= (1e-5 if rdt == np.float32 else 1e-12), f"dot test {e:.2e}")
    if min(sizes) >= 2:  # PyLops-MPI needs two frequencies on every rank (MPIFredholm1)
        Ref = PMMDC(G, nt, nv, nfmax, **kw)
        allclose_all((Op @ x).local_array, np.real((Ref @ x).local_array), rtol, "MDC forward vs PyLops-MPI")
        allclose_all(z.local_array, np.real((Ref.H @ bcast(d)).local_array), rtol, "MDC adjoint vs PyLops-MPI")
    Op.close()


def test_mdc_real_kernel_and_mdd():
    """A real G is the complex one with zero imaginary parts; MDD (lsqr on MDC) as rmaop.cgls and pylops_mpi.cgls."""
    nt, ns, nr, nv, nfmax = 9, 3, 3, 2, 5
    Gall = kernel(nfmax, ns, nr, np.float64)
    sizes, off = split(nfmax)
    Op = MPIMDC(Gall[off:off + sizes[R]], nt, nv, nfmax)
    Oc = MPIMDC(Gall[off:off + sizes[R]].astype(np.complex128), nt, nv, nfmax)
    x = bcast(rand(Op.shape[1], np.float64, 4))
    allclose_all((Op @ x).local_array, (Oc @ x).local_array, 1e-14, "real G")
    y = Oc @ x
    x0 = bcast(np.zeros(Op.shape[1]))
    xa, _, ia, _, _, ca = rmaop.cgls(Oc, y, x0, niter=8, tol=0)
    xb, _, ib, _, _, cb = pylops_mpi.cgls(Oc, y, x0, niter=8, tol=0)
    check_all(ia == ib == 8 and float(np.max(np.abs(ca - cb) / np.abs(cb))) < 1e-10, f"cgls {ca} {cb}")
    allclose_all(xa.local_array, xb.local_array, 1e-10, "MDD solution")
    Op.close()
    Oc.close()


def test_mdc_errors():
    G = kernel(2, 2, 2, np.complex128)
    raises_all(ValueError, MPIMDC, G, 8, 1, 2 * P)  # PyLops-MPI's "nt must be odd number"
    e = raises_all(rmaop.RmaopError, MPIMDC, G, 9, 1, 2 * P + 1)
    check_all(e is not None and e.status == "RMAOP_ERR_ARG" and "frequencies" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPIMDC, G, 9, 0, 2 * P)
    check_all(e is not None and "RMAOP_ERR_ARG" in str(e), str(e))
    if P > 1:  # a rank with a different nt: every rank raises, none waits
        e = raises_all(rmaop.RmaopError, MPIMDC, G, 9 if R == 0 else 11, 1, 2 * P)
        check_all(e is not None and "nt" in str(e), str(e))
    raises_all(ValueError, MPIMDC, G[0], 9, 1, 2 * P)
    raises_all(TypeError, MPIMDC, G.real.astype(np.int32), 9, 1, 2 * P)


# ---- non-stationary convolution ---------------------------------------------------------------------------------

def filters(nfilts, nh, dtype, seed=5):
    return rand((nfilts, nh), dtype, seed)


def block(g, dims, axis, sizes, off):
    sl = [slice(None)] * len(dims)
    sl[axis] = slice(off, off + sizes[R])
    return np.ascontiguousarray(g.reshape(dims)[tuple(sl)]).ravel()


def gather_blocks(loc, dims, axis, sizes):
    """The global array from every rank's block along axis."""
    parts = comm.allgather(loc)
    shp = list(dims)
    out = []
    for r, p in enumerate(parts):
        shp[axis] = sizes[r]
        out.append(p.reshape(shp))
    return np.concatenate(out, axis=axis).ravel()


NS_CASES = [  # dims, axis, nh, ih, local split ("balanced", "uneven", "zero")
    ((24,), 0, 5, (2, 8, 14, 20), "balanced"),
    ((5, 18), -1, 7, (1, 5, 9, 13), "uneven"),
    ((16, 4), 0, 3, (0, 5, 10, 15), "zero"),
    ((3, 13, 2), 1, 5, (3, 6, 9), "uneven"),
]


def local_sizes(n, kind):
    if kind == "balanced" or P == 1:
        return [n // P + (r < n % P) for r in range(P)]
    if kind == "zero":  # the last rank holds nothing
        m = n // (P - 1)
        return [m + (r < n % (P - 1)) for r in range(P - 1)] + [0]
    sizes = [max(1, n // P - 2 + 2 * r) for r in range(P)]  # growing blocks
    sizes[-1] = n - sum(sizes[:-1])
    return sizes


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", NS_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-ax{c[1]}-{c[4]}")
def test_nonstat(case, dtype):
    dims, axis, nh, ih, kind = case
    a = axis % len(dims)
    sizes = local_sizes(dims[a], kind)
    off = sum(sizes[:R])
    hs = filters(len(ih), nh, dtype)
    Op = MPINonStationaryConvolve1D(dims, hs, ih, axis=axis, dtype=dtype, local_n=sizes[R])
    Ser = pylops.signalprocessing.NonStationaryConvolve1D(dims=dims, hs=hs, ih=ih, axis=axis, dtype=dtype)
    check_all(Op.local_dims[a] == sizes[R], f"local dims {Op.local_dims}")
    n = int(np.prod(dims))
    g = rand(n, dtype, 6)
    loc = block(g, dims, a, sizes, off)
    x = pylops_mpi.DistributedArray(global_shape=n, local_shapes=comm.allgather((loc.size,)), dtype=dtype)
    x[:] = loc
    rtol = RTOL[np.dtype(dtype)] * 10
    y = Op @ x
    allclose_all(gather_blocks(y.local_array, dims, a, sizes), Ser @ g, rtol, "forward vs serial PyLops")
    d = rand(n, dtype, 7)
    yd = x.copy()
    yd[:] = block(d, dims, a, sizes, off)
    z = Op.H @ yd
    # PyLops does not conjugate the filters in its adjoint: the exact transpose is its adjoint with conj(hs)
    SerH = pylops.signalprocessing.NonStationaryConvolve1D(dims=dims, hs=hs.conj(), ih=ih, axis=axis, dtype=dtype)
    allclose_all(gather_blocks(z.local_array, dims, a, sizes), SerH.H @ d, rtol, "adjoint vs serial PyLops")
    e = Op.dottest(seed=1)
    check_all(e <= (1e-5 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-12), f"{e:.2e}")
    Op.close()


def test_nonstat_pylops_mpi():
    """PyLops-MPI's MPINonStationaryConvolve1D (dims[axis] divisible by P, a filter on every rank): the adjoint
    everywhere and the forward where no window reaches past a neighbour's first filter."""
    dims, nh = (4, 8 * P), 3
    ih = np.arange(1, 8 * P, 2)
    hs = filters(ih.size, nh, np.float64)
    Op = MPINonStationaryConvolve1D(dims, hs, ih, axis=-1)
    Ref = PMNonStat(dims, hs, ih, axis=-1)
    x = pylops_mpi.DistributedArray(global_shape=int(np.prod(dims)), local_shapes=comm.allgather((Op._m.local_n,)))
    x[:] = rand(Op._m.local_n, np.float64, 8 + R)
    allclose_all((Op @ x).local_array, (Ref @ x).local_array, 1e-12, "forward vs PyLops-MPI")
    allclose_all((Op.H @ x).local_array, (Ref.H @ x).local_array, 1e-12, "adjoint vs PyLops-MPI")
    xs, _, ia, _, _, ca = rmaop.cgls(Op, x, x.copy() * 0, niter=6, tol=0)
    xr, _, ib, _, _, cb = pylops_mpi.cgls(Ref, x, x.copy() * 0, niter=6, tol=0)
    check_all(float(np.max(np.abs(ca - cb) / np.abs(cb))) < 1e-10, "cgls histories")
    Op.close()


def test_nonstat_errors():
    hs = filters(3, 4, np.float64)
    e = raises_all(rmaop.RmaopError, MPINonStationaryConvolve1D, (12,), hs, (1, 5, 9))
    check_all(e is not None and "odd length" in str(e), str(e))
    hs = filters(3, 5, np.float64)
    e = raises_all(rmaop.RmaopError, MPINonStationaryConvolve1D, (12,), hs, (1, 5, 10))
    check_all(e is not None and "regularly spaced" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPINonStationaryConvolve1D, (12,), hs, (1, 5, 12))
    check_all(e is not None and "outside" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPINonStationaryConvolve1D, (12,), hs, (1, 5, 9), local_n=5)
    check_all(e is not None and "RMAOP_ERR_ARG" in str(e), str(e))
    raises_all(ValueError, MPINonStationaryConvolve1D, (12,), hs, (1, 5))
    raises_all(TypeError, MPINonStationaryConvolve1D, (12,), hs + 1j, (1, 5, 9))


@pytest.fixture
def cp(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy
    return cupy


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_signal_device(cp, dtype):
    """MDC (cuFFT, cuBLAS) and the non-stationary convolution (a kernel) on CuPy arrays against the host."""
    with rmaop.Context(memory="device") as ctx:
        dims, ih, hs = (5, 18), (1, 5, 9, 13), filters(4, 7, dtype)
        Oh = MPINonStationaryConvolve1D(dims, hs, ih, dtype=dtype)
        Od = MPINonStationaryConvolve1D(dims, hs, ih, dtype=dtype, context=ctx)
        xl = rand(Oh._m.local_n, dtype, 9 + R)
        allclose_all(cp.asnumpy(Od.apply(cp.asarray(xl))), Oh.apply(xl), RTOL[np.dtype(dtype)], "nsconv device")
        allclose_all(cp.asnumpy(Od.apply_adjoint(cp.asarray(xl))), Oh.apply_adjoint(xl), RTOL[np.dtype(dtype)],
                     "nsconv device adjoint")
        Od.close()
        Oh.close()
        if np.dtype(dtype).kind == "c":
            Gall = kernel(5, 3, 4, dtype)
            sizes, off = split(5)
            G = Gall[off:off + sizes[R]]
            Mh = MPIMDC(G, 9, 2, 5)
            Md = MPIMDC(G, 9, 2, 5, context=ctx)
            g = rand(Mh.shape[1], _REAL[np.dtype(dtype)], 3)
            allclose_all(cp.asnumpy(Md.apply(cp.asarray(g))), Mh.apply(g), RTOL[np.dtype(dtype)] * 10, "MDC device")
            Md.close()
            Mh.close()
