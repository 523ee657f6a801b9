"""pytest under mpiexec: every rank runs every test in the same order (the tests are collective).

A failed check must fail on every rank, or the others would go on to the next collective test and wait for
ever: tests check with ``allclose_all`` / ``check_all``, which agree over the communicator first.
"""
import os

import numpy as np
import pytest
from mpi4py import MPI

comm = MPI.COMM_WORLD

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# forward and adjoint against PyLops-MPI: 1e-12 relative in double precision, float32 rounding in single
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 1e-5,
        np.dtype(np.complex128): 1e-12}


def check_all(ok, msg=""):
    """Fails on every rank when ``ok`` is false on any."""
    bad = comm.allgather(bool(ok))
    if not all(bad):
        ranks = [r for r, v in enumerate(bad) if not v]
        pytest.fail(f"ranks {ranks}: {msg}")


def raises_all(exc, fn, *args, **kw):
    """fn raises ``exc`` on every rank (checked collectively)."""
    try:
        fn(*args, **kw)
        got = None
    except exc as e:  # noqa: PERF203
        got = e
    except Exception as e:  # noqa: BLE001
        check_all(False, f"raised {type(e).__name__}: {e}, expected {exc}")
        return None
    check_all(got is not None, f"did not raise {exc}")
    return got


def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    num = comm.allreduce(float(np.sum(np.abs(a - b) ** 2)))
    den = comm.allreduce(float(np.sum(np.abs(b) ** 2)))
    return np.sqrt(num / den) if den > 0 else np.sqrt(num)


def allclose_all(a, b, rtol, msg=""):
    """Relative 2-norm error over all ranks' local parts <= rtol, checked on every rank."""
    e = rel_err(a, b)
    check_all(e <= rtol, f"{msg} relative error {e:.3e} > {rtol:.1e}")


def rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


@pytest.fixture
def memory():
    """The memory kind the tests run on: RMAOP_TEST_MEMORY (device: the CuPy tests, label gpu)."""
    return os.environ.get("RMAOP_TEST_MEMORY", "host")
