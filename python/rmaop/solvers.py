"""rmaop's solvers with PyLops-MPI's signatures and return tuples.

``cg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None) -> (x, iiter, cost)``
``cgls(Op, y, x0, niter=10, damp=0.0, tol=1e-4, show=False, itershow=..., callback=None)
    -> (x, istop, iiter, r1norm, r2norm, cost)``
``lsqr(Op, y, x0=None, damp=0.0, atol=1e-8, btol=1e-8, conlim=1e8, niter=10, show=False, callback=None)
    -> (x, istop, iiter, r1norm, r2norm, cost)`` (PyLops' lsqr without its anorm, acond, arnorm, xnorm, var)
``pipecg(Op, y, x0, niter=10, tol=1e-4, ..., residual_replacement=0) -> (x, iiter, cost)``

``Op`` is an rmaop operator; ``y`` and ``x0`` are DistributedArrays / StackedDistributedArrays (the solution
is returned as one) or this rank's local NumPy / CuPy arrays (the solution is returned as a local array).
The whole loop runs inside the library (one call); ``cost`` is the residual-norm history (``cost[0]`` for x0).
``callback(x)`` is called after each iteration with the current solution (a view of rmaop's vector).
"""
import ctypes
from ctypes import byref

import numpy as np

from . import _core, _lib
from ._core import DistributedArray, StackedDistributedArray, Vec, call, stream_order
from ._operator import RmaopOperator


def _operator(Op, name):
    if not isinstance(Op, RmaopOperator):
        raise TypeError(f"rmaop.{name}: Op must be an rmaop operator (rmaop.MPIFirstDerivative, ...), not "
                        f"{type(Op).__name__}; use pylops_mpi.{name} for other operators")
    return Op


def _is_dist(a):
    return DistributedArray is not None and isinstance(a, (DistributedArray, StackedDistributedArray))


def _run(name, Op, y, x0, niter, show, callback, **opt):
    Op = _operator(Op, name)
    ctx = Op.context
    if not isinstance(niter, (int, np.integer)) or niter < 0:
        raise ValueError(f"rmaop.{name}: niter must be a non-negative integer, not {niter!r}")
    dist = _is_dist(y)
    yl = Op._local_in(y, Op._d) if dist else y
    yl = _core.check_array(ctx, yl, Op._dtype_np, Op._d.local_n, "y")
    if dist:
        xd, xbuf = Op._dist_out(Op._m, y)
    else:
        xd, xbuf = None, _core.empty(ctx, Op._m.local_n, Op._dtype_np)
    x0l = None
    if x0 is not None:
        x0l = Op._local_in(x0, Op._m) if _is_dist(x0) else x0
        x0l = _core.check_array(ctx, x0l, Op._dtype_np, Op._m.local_n, "x0")
    opts = _lib.SolverOptions()
    _lib.lib.rmaop_solver_options_init(byref(opts))
    opts.niter = int(niter)
    for k, v in opt.items():
        setattr(opts, k, v)
    errors = []
    if callback is not None:
        def cb(user, it, res, vec):
            try:
                callback(xd if dist else xbuf)
                return 0
            except BaseException as e:  # reported after the solver returns; a status stops it
                errors.append(e)
                return 1
        opts.callback = _lib.SOLVER_CALLBACK(cb)
    info = _lib.SolverInfo()
    vx0 = Vec(Op._m.layout, x0l) if x0l is not None else None
    try:
        if vx0 is not None:
            opts.x0 = vx0._h
        with Vec(Op._d.layout, yl) as vy, Vec(Op._m.layout, xbuf) as vx, stream_order(ctx):
            st = getattr(_lib.lib, f"rmaop_solve_{name}")(Op.handle, vy, vx, byref(opts), byref(info))
        if errors:
            raise errors[0]
        _lib.check(st, ctx.handle)
        cost = np.array(info.history[:info.iterations + 1]) if info.history else np.zeros(0)
        iters, reason = info.iterations, _lib.REASONS.get(info.reason, str(info.reason))
        Op.last_solve = {"iterations": iters, "reason": reason, "time_total": info.time_total,
                         "time_comm": info.time_comm, "graph": bool(info.graph)}
    finally:
        _lib.lib.rmaop_solver_info_destroy(byref(info))
        if vx0 is not None:
            vx0.free()
    if show and ctx.rank == 0:
        print(f"rmaop.{name}: {iters} iterations ({reason}), residual {cost[0]:.4e} -> {cost[-1]:.4e}, "
              f"{Op.last_solve['time_total'] * 1e3:.3f} ms ({Op.last_solve['time_comm'] * 1e3:.3f} ms communicating)")
    return (xd if dist else xbuf), iters, reason, cost, xbuf, yl


def cg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """Conjugate gradient (PyLops-MPI cg): returns (x, iiter, cost)."""
    x, it, _, cost, _, _ = _run("cg", Op, y, x0, niter, show, callback, tol=float(tol))
    return x, it, cost


def pipecg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None,
           residual_replacement=0):
    """Pipelined CG (one fused non-blocking reduction per iteration): returns (x, iiter, cost) as cg."""
    x, it, _, cost, _, _ = _run("pipecg", Op, y, x0, niter, show, callback, tol=float(tol),
                                residual_replacement=int(residual_replacement))
    return x, it, cost


def _kold(Op, xbuf, yl, damp):
    """PyLops-MPI's r1norm of cgls: ||A^H (y - A x) - damp^2 x||^2 at the solution (two more applications)."""
    ctx = Op.context
    s = yl - Op.apply(xbuf)
    r = Op.apply_adjoint(s) - (damp ** 2) * xbuf
    return float(abs(_core.ctx_dot(ctx, Op._m.layout, r, r)))


def cgls(Op, y, x0, niter=10, damp=0.0, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """CGLS (PyLops-MPI cgls): returns (x, istop, iiter, r1norm, r2norm, cost); istop 1 when the tolerance
    stopped it, else 2; r1norm is PyLops-MPI's final kold, r2norm sqrt(cost[-1]^2 + damp^2 ||x||^2)."""
    x, it, reason, cost, xbuf, yl = _run("cgls", Op, y, x0, niter, show, callback, tol=float(tol),
                                         damp=float(damp))
    r1 = _kold(Op, xbuf, yl, damp)
    xx = float(abs(_core.ctx_dot(Op.context, Op._m.layout, xbuf, xbuf)))
    r2 = float(np.sqrt(cost[-1] ** 2 + damp ** 2 * xx))
    return x, (1 if r1 < tol else 2), it, r1, r2, cost


def lsqr(Op, y, x0=None, damp=0.0, atol=1e-8, btol=1e-8, conlim=1e8, niter=10, show=False,
         itershow=(10, 10, 10), callback=None):
    """LSQR (PyLops lsqr recurrences): returns (x, istop, iiter, r1norm, r2norm, cost) where istop is 1 for a
    tolerance stop, 3 for conlim, 7 for niter, 0 for an exact x0; r1norm = ||y - A x|| (PyLops' estimate),
    r2norm = sqrt(r1norm^2 + damp^2 ||x||^2)."""
    # PyLops: 0 switches a test off; rmaop: 0 means the default and < 0 off.
    a, b, c = (float(v) if v else -1.0 for v in (atol, btol, conlim))
    x, it, reason, cost, xbuf, yl = _run("lsqr", Op, y, x0, niter, show, callback, damp=float(damp), atol=a,
                                         btol=b, conlim=c)
    r1 = float(cost[-1])
    xx = float(abs(_core.ctx_dot(Op.context, Op._m.layout, xbuf, xbuf)))
    r2 = float(np.sqrt(r1 ** 2 + damp ** 2 * xx))
    istop = {"tol": 1 if it else 0, "conlim": 3, "niter": 7, "breakdown": 0}[reason]
    return x, istop, it, r1, r2, cost


del ctypes
