"""rmaop from Python: distributed linear operators and solvers on one-sided communication, with PyLops-MPI's
names and signatures, on NumPy (host) or CuPy (device) arrays without copies.

    from mpi4py import MPI
    import rmaop
    Op = rmaop.MPIFirstDerivative((n,), backend="rma", sync="lock")   # or any RMAOP_* environment
    x, istop, iiter, r1, r2, cost = rmaop.cgls(Op, y, x0, niter=100)   # y, x0: DistributedArrays or local arrays

The library is librmaop.so: RMAOP_LIBRARY names it, else it is looked for next to this package and on the
usual search path (LD_LIBRARY_PATH).
"""
from . import roofline, trace  # noqa: F401
from ._core import Context, default_context  # noqa: F401
from ._lib import RmaopError, RmaopTimeout, RmaopUnsupported  # noqa: F401
from ._lib import lib as _clib
from ._operator import LinearOperator, RmaopOperator, StackedLinearOperator  # noqa: F401
from .ops_grid import MPIFirstDerivative, MPIGradient, MPILaplacian, MPISecondDerivative  # noqa: F401
from .ops_block import MPIBlockDiag, MPIFredholm1, MPIHStack, MPIMatrixMult, MPIStackedBlockDiag, MPIStackedVStack, MPIVStack  # noqa: F401,E501
from .ops_halo import MPIHalo  # noqa: F401
from .solvers import add, adjoint, cg, cgls, diagonal, lsqr, pipecg, product  # noqa: F401

__version__ = "0.2.0"


def backends_available():
    """The backends built into the loaded library, e.g. ["rma", "twosided", "nccl"]."""
    return _clib.rmaop_backends_available().decode().split(",")
