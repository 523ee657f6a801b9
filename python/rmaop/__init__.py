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
from . import proximal, sparse  # noqa: F401
from .ops_fft import MPIFFT2D, MPIFFTND  # noqa: F401
from .ops_signal import MPIMDC, MPINonStationaryConvolve1D  # noqa: F401
from .redistribute import MPIRedistribute, redistribute  # noqa: F401
from .sparse import fista, ista, power_iteration  # noqa: F401
from .proximal import ADMML2, L1, L2, L21, MPIL2, MPIL21, PrimalDual, ProximalGradient  # noqa: F401

__version__ = "0.2.0"


def backends_available():
    """The backends built into the loaded library, e.g. ["rma", "twosided", "nccl"]."""
    return _clib.rmaop_backends_available().decode().split(",")
