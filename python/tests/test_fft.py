"""MPIFFTND and MPIFFT2D against serial PyLops' FFTND on the gathered array (every split, ranks without rows and
nffts included) and against PyLops-MPI's own (mpi4py-fft) where it runs: forward, adjoint, frequencies, shapes,
the dot test and the errors. Collective: run under mpiexec at any rank count (1, 2, 3 are the tested ones)."""
import numpy as np
import pylops
import pylops_mpi
import pytest

import rmaop
from conftest import DTYPES, RTOL, allclose_all, check_all, comm, rand, raises_all
from rmaop.ops_fft import MPIFFT2D, MPIFFTND

P, R = comm.Get_size(), comm.Get_rank()

try:
    import mpi4py_fft  # noqa: F401 - PyLops-MPI's FFTs need it
    from pylops_mpi.signalprocessing import MPIFFT2D as PMFFT2D
    from pylops_mpi.signalprocessing import MPIFFTND as PMFFTND
except ImportError:  # pragma: no cover - requirements-test.txt installs it
    PMFFTND = PMFFT2D = None

_COMPLEX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def rows(n):
    """PyLops-MPI's balanced split of n rows."""
    return [n // P + (r < n % P) for r in range(P)]


def dist_rows(g, dims, dtype):
    """The global C-ordered array g (flat) split by rows of axis 0, as a 1-D DistributedArray."""
    inner = int(np.prod(dims[1:]))
    sizes = [r * inner for r in rows(dims[0])]
    x = pylops_mpi.DistributedArray(global_shape=int(np.prod(dims)), local_shapes=[(s,) for s in sizes], dtype=dtype)
    off = sum(sizes[:R])
    x[:] = g[off:off + sizes[R]]
    return x


# dims, axes, real, ifftshift_before, fftshift_after, norm, nffts
CASES = [
    ((5, 4, 3), (0, 1, 2), False, False, False, "none", None),
    ((7, 6), (0, 1), True, False, True, "none", None),
    ((6, 5, 4), (1, 0), True, True, False, "1/n", None),
    ((5, 4, 6), (2, 1), False, (True, False), (False, True), "none", None),
    ((4, 7, 3), (-1, 0), True, False, False, "1/n", None),
    ((9, 2, 2, 3), (3, 0, 2), False, True, True, "none", None),
    ((6, 5), (0, 1), False, False, False, "none", (8, 3)),   # padded and truncated (PyLops FFTND's nffts)
    ((5, 6), (1, 0), True, False, False, "none", (4, 7)),
    ((2, 9), (0, 1), False, False, False, "none", None),      # at 3 ranks, a rank without rows
]


def ids(c):
    axes = "".join(str(a) for a in c[1])
    return f"{'x'.join(map(str, c[0]))}-ax{axes}{'-real' if c[2] else ''}{'-nfft' if c[6] else ''}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_fftnd_serial(case, dtype):
    dims, axes, real, ifs, ffs, norm, nffts = case
    dtype = np.dtype(dtype)
    Op = MPIFFTND(dims, axes=axes, real=real, ifftshift_before=ifs, fftshift_after=ffs, norm=norm, nffts=nffts,
                  dtype=dtype)
    Ref = pylops.signalprocessing.FFTND(dims, axes=axes, nffts=nffts, real=real, ifftshift_before=ifs,
                                        fftshift_after=ffs, norm=norm, engine="numpy", dtype=dtype)
    check_all(Op.shape == Ref.shape and tuple(Op.dimsd) == tuple(Ref.dimsd), f"shape {Op.shape} vs {Ref.shape}")
    check_all(np.dtype(Op.dtype) == np.dtype(_COMPLEX.get(dtype, dtype)), f"dtype {Op.dtype}")
    check_all(all(np.allclose(a, b, rtol=1e-14) for a, b in zip(Op.fs, Ref.fs)), "frequencies differ from PyLops'")
    check_all(Op.nffts == tuple(Ref.nffts) and list(Op.axes) == list(Ref.axes), f"{Op.nffts} {Op.axes}")
    g = rand(Op.shape[1], dtype, 1)
    x = dist_rows(g, dims, dtype)
    y = Op @ x
    check_all(isinstance(y, pylops_mpi.DistributedArray) and y.partition is pylops_mpi.Partition.SCATTER, type(y))
    check_all(tuple(y.local_shapes) == tuple((r * int(np.prod(Op.dimsd[1:])),) for r in rows(int(Op.dimsd[0]))),
              f"data split {y.local_shapes}: not rows of axis 0")
    rtol = RTOL[dtype] * 10
    allclose_all(y.asarray(), Ref @ g, rtol, "forward")
    d = rand(Op.shape[0], _COMPLEX.get(dtype, dtype), 2)
    yd = dist_rows(d, tuple(int(v) for v in Op.dimsd), d.dtype)
    xa = Op.H @ yd
    ref = Ref.H @ d
    allclose_all(xa.asarray(), ref, rtol, "adjoint")
    if not Op.clinear:
        check_all(not np.any(xa.local_array.imag), "a real model's adjoint has imaginary parts")
    tol = 1e-5 if dtype in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-12
    if Op.clinear:
        e = Op.dottest(seed=4)
    else:  # linear over the reals only: Re<A x, y> = <x, A^H y> for real x
        xr = dist_rows(rand(Op.shape[1], np.float64, 7).astype(Op.dtype), dims, Op.dtype)
        lhs = np.vdot((Op @ xr).asarray(), d).real
        rhs = np.vdot(xr.asarray(), xa.asarray()).real
        e = abs(lhs - rhs) / max(abs(lhs), abs(rhs))
    check_all(e <= tol, f"dot test {e:.2e}")
    Op.close()


@pytest.mark.skipif(PMFFTND is None, reason="PyLops-MPI's FFTs need mpi4py-fft")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", [c for c in CASES if c[6] is None and c[0][0] >= P and
                                  (len(c[0]) < 4)], ids=ids)
def test_fftnd_pylops_mpi(case, dtype):
    """PyLops-MPI's MPIFFTND (mpi4py-fft pencils) on the same DistributedArrays: element for element."""
    dims, axes, real, ifs, ffs, norm, _ = case
    if real and np.issubdtype(dtype, np.complexfloating) and np.dtype(dtype) != np.complex128:
        pytest.skip("PyLops-MPI's real transform of a complex64 model")
    Op = MPIFFTND(dims, axes=axes, real=real, ifftshift_before=ifs, fftshift_after=ffs, norm=norm, dtype=dtype)
    Ref = PMFFTND(dims, axes=axes, real=real, ifftshift_before=ifs, fftshift_after=ffs, norm=norm, dtype=dtype)
    check_all(Op.shape == Ref.shape and Op.clinear == Ref.clinear and Op.cdtype == Ref.cdtype
              and Op.rdtype == Ref.rdtype and Op.norm == Ref.norm, "attributes differ from PyLops-MPI's")
    check_all(all(np.allclose(a, b, rtol=1e-14) for a, b in zip(Op.fs, Ref.fs)), "fs")
    x = dist_rows(rand(Op.shape[1], dtype, 3), dims, dtype)
    y, yr = Op @ x, Ref @ x
    check_all(tuple(y.local_shapes) == tuple(yr.local_shapes), f"splits {y.local_shapes} vs {yr.local_shapes}")
    rtol = RTOL[np.dtype(dtype)] * 10
    allclose_all(y.local_array, yr.local_array, rtol, "forward vs PyLops-MPI")
    z, zr = Op.H @ yr, Ref.H @ yr
    allclose_all(z.local_array, zr.local_array, rtol, "adjoint vs PyLops-MPI")
    # PyLops-MPI's cgls runs on rmaop's FFT as on its own
    xs = pylops_mpi.cgls(Op, yr, x.copy() * 0, niter=3, tol=0)[0]
    xr = pylops_mpi.cgls(Ref, yr, x.copy() * 0, niter=3, tol=0)[0]
    allclose_all(xs.local_array, xr.local_array, rtol * 100, "pylops_mpi.cgls")
    Op.close()


def test_fft2d():
    dims = (6, 5, 3)
    Op = MPIFFT2D(dims, axes=(0, 2), sampling=(0.5, 2.0), fftshift_after=True)
    check_all(not hasattr(Op, "fs") and np.allclose(Op.f1, np.fft.fftshift(np.fft.fftfreq(6, 0.5)))
              and np.allclose(Op.f2, np.fft.fftshift(np.fft.fftfreq(3, 2.0))), "f1, f2")
    if PMFFT2D is not None:
        Ref = PMFFT2D(dims, axes=(0, 2), sampling=(0.5, 2.0), fftshift_after=True)
        x = dist_rows(rand(Op.shape[1], np.complex128, 5), dims, np.complex128)
        allclose_all((Op @ x).local_array, (Ref @ x).local_array, 1e-12, "MPIFFT2D vs PyLops-MPI")
    Op.close()
    raises_all(ValueError, MPIFFT2D, (6,), axes=(0, 1))
    raises_all(ValueError, MPIFFT2D, (6, 5, 3), axes=(0, 1, 2))


def test_local_arrays_and_context():
    dims = (5, 4)
    with rmaop.Context(backend="twosided") as ctx:
        Op = MPIFFTND(dims, axes=(0, 1), real=True, dtype=np.float64, context=ctx)
        g = rand(Op.shape[1], np.float64, 6)
        x = dist_rows(g, dims, np.float64)
        y = Op.apply(x.local_array)
        check_all(y.dtype == np.complex128 and y.size == Op._d.local_n, f"{y.dtype} {y.size}")
        allclose_all(y, (Op @ x).local_array, 1e-14, "apply vs matvec")
        out = np.empty(Op._m.local_n, dtype=np.complex128)
        ret = Op.apply_adjoint(y, out=out)
        check_all(np.shares_memory(ret, out) and np.array_equal(out, ret), "apply_adjoint(out=) not in place")
        Op.close()


def test_errors():
    e = raises_all(rmaop.RmaopError, MPIFFTND, (4, 4, 4), axes=(0, 1, 0))
    check_all(e is not None and e.status == "RMAOP_ERR_ARG" and "repeats axis" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPIFFTND, (8,), axes=(0,))
    check_all(e is not None and "ndim" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPIFFTND, (4, 4), axes=(0, 2))
    check_all(e is not None and "axes[1]" in str(e), str(e))
    e = raises_all(rmaop.RmaopError, MPIFFTND, (4, 0), axes=(0, 1))
    check_all(e is not None and "dims[1]" in str(e), str(e))
    raises_all(ValueError, MPIFFTND, (4, 4), axes=(0, 1), norm="ortho")
    raises_all(ValueError, MPIFFTND, (4, 4), axes=(0, 1), norm="backward")
    raises_all(ValueError, MPIFFTND, (4, 4), axes=(0, 1), sampling=(1.0, 2.0, 3.0))
    raises_all(TypeError, MPIFFTND, (4, 4), axes=(0, 1), dtype=np.int32)


@pytest.fixture
def cp(memory):
    if memory != "device":
        pytest.skip("device memory: RMAOP_TEST_MEMORY=device")
    import cupy
    return cupy


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASES[:5], ids=ids)
def test_fftnd_device(cp, case, dtype):
    """cuFFT on CuPy DistributedArrays against serial PyLops on the host."""
    dims, axes, real, ifs, ffs, norm, nffts = case
    with rmaop.Context(memory="device") as ctx:
        Op = MPIFFTND(dims, axes=axes, real=real, ifftshift_before=ifs, fftshift_after=ffs, norm=norm, dtype=dtype,
                      context=ctx)
        Ref = pylops.signalprocessing.FFTND(dims, axes=axes, real=real, ifftshift_before=ifs, fftshift_after=ffs,
                                            norm=norm, engine="numpy", dtype=dtype)
        g = rand(Op.shape[1], dtype, 1)
        xh = dist_rows(g, dims, dtype)
        x = pylops_mpi.DistributedArray(global_shape=xh.global_shape, local_shapes=xh.local_shapes, engine="cupy",
                                        dtype=dtype)
        x[:] = cp.asarray(xh.local_array)
        y = Op @ x
        check_all(isinstance(y.local_array, cp.ndarray), "the output is not a CuPy array")
        allclose_all(cp.asnumpy(y.asarray()), Ref @ g, RTOL[np.dtype(dtype)] * 10, "device forward")
        z = Op.H @ y
        allclose_all(cp.asnumpy(z.asarray()), Ref.H @ (Ref @ g), RTOL[np.dtype(dtype)] * 10, "device adjoint")
        Op.close()
