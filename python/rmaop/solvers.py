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

Operators built from rmaop operators, for the solvers (a PyLops-MPI ``A.H @ A`` is PyLops-MPI's Python
composite, which rmaop's solvers cannot run): ``adjoint(A)``, ``product(A, B)``, ``add(A, B, ...)``,
``diagonal(d, like)``; e.g. ``add(product(adjoint(A), A), diagonal(np.full(n_local, eps), A))`` is
A^H A + eps I. They are rmaop operators too (apply, matvec, close); the parts may be closed first.
"""
import ctypes
from ctypes import byref

import numpy as np

from . import _core, _lib
from . import _vectors as V
from ._core import DistributedArray, StackedDistributedArray, Vec, call
from ._operator import LinearOperator, RmaopOperator, StackedLinearOperator

_lib.lib.rmaop_op_create_diagonal.argtypes = [_lib.vec_t, ctypes.POINTER(_lib.op_t)]
_lib.lib.rmaop_op_create_diagonal.restype = _lib.status_t


# ---- operators built from others ------------------------------------------------------------------------

def _composite(ctx, handle, dims, dimsd, keep):
    """An rmaop operator over a composite handle: stacked (PyLops-MPI MPIStackedLinearOperator) when a side
    is a stacked layout."""
    info = _lib.OpInfo()
    call("rmaop_op_get_info", handle, byref(info), ctx=ctx.handle)
    stacked = any(_core.layout_kind(side)[0] == _lib.LAYOUT_STACKED for side in (info.model, info.data))
    cls = StackedLinearOperator if stacked else LinearOperator
    op = cls.__new__(cls)
    op._rmaop_init(ctx, handle, dims, dimsd, keep=keep)
    return op


def _ops(ops, what):
    for A in ops:
        if not isinstance(A, RmaopOperator):
            raise TypeError(f"rmaop.{what}: {type(A).__name__} is not an rmaop operator")
        A.handle  # raises on a closed operator
    ctx = ops[0].context
    if any(A.context is not ctx for A in ops):
        raise ValueError(f"rmaop.{what}: the operators are on different contexts")
    return ctx


def adjoint(A):
    """A^H as an rmaop operator (rmaop_op_create_adjoint; not collective)."""
    ctx = _ops([A], "adjoint")
    h = _lib.op_t()
    call("rmaop_op_create_adjoint", A.handle, byref(h), ctx=ctx.handle)
    return _composite(ctx, h, A.dimsd, A.dims, (A,))


def product(A, B):
    """A B as an rmaop operator (rmaop_op_create_product: A's model layout must be B's data layout)."""
    ctx = _ops([A, B], "product")
    h = _lib.op_t()
    call("rmaop_op_create_product", A.handle, B.handle, byref(h), ctx=ctx.handle)
    return _composite(ctx, h, B.dims, A.dimsd, (A, B))


def add(*ops):
    """A + B + ... as an rmaop operator (rmaop_op_create_sum: same layouts and dtype)."""
    if not ops:
        raise ValueError("rmaop.add: no operator")
    ctx = _ops(list(ops), "add")
    arr = (_lib.op_t * len(ops))(*[A.handle for A in ops])
    h = _lib.op_t()
    call("rmaop_op_create_sum", len(ops), arr, byref(h), ctx=ctx.handle)
    return _composite(ctx, h, ops[0].dims, ops[0].dimsd, tuple(ops))


def diagonal(d, like):
    """The diagonal operator diag(d) on the model side of the rmaop operator ``like`` (rmaop_op_create_diagonal;
    d: this rank's part as a local array, or a DistributedArray; it is copied)."""
    ctx = _ops([like], "diagonal")
    dl = like._local_in(d, like._m) if _is_dist(d) else d
    dl = _core.check_array(ctx, dl, like._dtype_np, like._m.local_n, "d")
    h = _lib.op_t()
    with Vec(like._m.layout, dl) as vd:
        call("rmaop_op_create_diagonal", vd, byref(h), ctx=ctx.handle)
    return _composite(ctx, h, like.dims, like.dims, ())


def _operator(Op, name):
    if not isinstance(Op, RmaopOperator):
        raise TypeError(f"rmaop.{name}: Op must be an rmaop operator (rmaop.MPIFirstDerivative, ...), not "
                        f"{type(Op).__name__}; use pylops_mpi.{name} for other operators")
    return Op


def _is_dist(a):
    return DistributedArray is not None and isinstance(a, (DistributedArray, StackedDistributedArray))


def _run(name, Op, y, x0, niter, show, callback, **opt):
    Op = _operator(Op, name)
    Op.handle  # first: raises on a closed operator, whose layouts are freed
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
        opts.callback = V.solver_callback(ctx, errors, lambda it: callback(xd if dist else xbuf))
    res, kold, graph = V.run_solver(name, Op, yl, xbuf, x0l, opts, errors)
    hist = res["history"]
    cost = hist if hist is not None else np.zeros(0)
    iters, reason = res["iterations"], res["reason"]
    Op.last_solve = {"iterations": iters, "reason": reason, "time_total": res["time_total"],
                     "time_comm": res["time_comm"], "graph": graph, "kold": kold}
    if show and ctx.rank == 0:
        print(f"rmaop.{name}: {iters} iterations ({reason}), residual {cost[0]:.4e} -> {cost[-1]:.4e}, "
              f"{Op.last_solve['time_total'] * 1e3:.3f} ms ({Op.last_solve['time_comm'] * 1e3:.3f} ms communicating)")
    return _Result(x=xd if dist else xbuf, iters=iters, reason=reason, cost=cost, xbuf=xbuf, yl=yl, x0l=x0l)


class _Result:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def cg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """Conjugate gradient (PyLops-MPI cg): returns (x, iiter, cost); stops when ||r||^2 <= tol, as PyLops-MPI
    (``x0=None`` starts from zero; PyLops-MPI needs an x0)."""
    r = _run("cg", Op, y, x0, niter, show, callback, tol=float(tol))
    return r.x, r.iters, r.cost


def pipecg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None,
           residual_replacement=0):
    """Pipelined CG (one fused non-blocking reduction per iteration): returns (x, iiter, cost) as cg; the
    iterates are cg's to rounding (the recurrences differ)."""
    r = _run("pipecg", Op, y, x0, niter, show, callback, tol=float(tol),
             residual_replacement=int(residual_replacement))
    return r.x, r.iters, r.cost


def _norm2(Op, side, a):
    return float(abs(_core.ctx_dot(Op.context, side.layout, a, a)))


def cgls(Op, y, x0, niter=10, damp=0.0, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """CGLS (PyLops-MPI cgls): returns (x, istop, iiter, r1norm, r2norm, cost).

    As PyLops-MPI: ``istop`` is 1 when r1norm < tol, else 2; ``r1norm`` is PyLops-MPI's final ``kold``,
    ||A^H s - damp^2 x||^2 of the recurrence's residual s (squared); ``r2norm`` = sqrt(cost[-1]^2 + damp^2 ||x||^2); ``cost``
    the history of ||y - A x_k||. Difference: with ``x0`` and ``damp`` both non-zero PyLops-MPI (and PyLops)
    start from A^H (y - A x0) - damp x0, rmaop from the gradient A^H (y - A x0) - damp^2 x0, so the iterates
    differ unless damp is 1; both minimize ||y - A x||^2 + damp^2 ||x||^2."""
    r = _run("cgls", Op, y, x0, niter, show, callback, tol=float(tol), damp=float(damp))
    r1 = Op.last_solve["kold"]
    r2 = float(np.sqrt(r.cost[-1] ** 2 + damp ** 2 * _norm2(Op, Op._m, r.xbuf))) if damp else float(r.cost[-1])
    return r.x, (1 if r1 < tol else 2), r.iters, r1, r2, r.cost


def lsqr(Op, y, x0=None, damp=0.0, atol=1e-8, btol=1e-8, conlim=1e8, niter=10, show=False,
         itershow=(10, 10, 10), callback=None):
    """LSQR (PyLops lsqr recurrences; its iterates and cost to rounding): returns (x, istop, iiter, r1norm,
    r2norm, cost), PyLops lsqr's tuple without anorm, acond, arnorm, xnorm and var.

    ``cost`` and ``r1norm`` are PyLops' estimates of ||y - A x_k|| (PyLops negates r1norm when its r1sq < 0;
    rmaop does not); ``r2norm`` = sqrt(||y - A x||^2 + damp^2 ||x - x0||^2) (computed, one more application; it
    is PyLops' rnorm: with x0, PyLops and rmaop damp x - x0). ``istop``: 1 for any tolerance stop (PyLops
    tells 1, 2, 4 and 5 apart), 3 for conlim (PyLops 3 or 6), 0 when y - A x0 is already in A's null space or a
    rotation broke down, 7 when niter ran out (what PyLops documents; PyLops 2.8 returns 0 there)."""
    # PyLops: 0 switches a test off; rmaop: 0 means the default and < 0 off.
    a, b, c = (float(v) if v else -1.0 for v in (atol, btol, conlim))
    r = _run("lsqr", Op, y, x0, niter, show, callback, damp=float(damp), atol=a, btol=b, conlim=c)
    r1 = float(r.cost[-1])
    if damp:
        res = r.yl - Op.apply(r.xbuf)
        dx = r.xbuf if r.x0l is None else r.xbuf - r.x0l
        r2 = float(np.sqrt(_norm2(Op, Op._d, res) + damp ** 2 * _norm2(Op, Op._m, dx)))
    else:
        r2 = r1
    istop = {"tol": 1 if r.iters else 0, "conlim": 3, "niter": 7, "breakdown": 0}[r.reason]
    return r.x, istop, r.iters, r1, r2, r.cost
