"""The power iteration and the sparsity solvers ISTA and FISTA with PyLops-MPI's signatures and return tuples
(pylops_mpi.optimization.eigs.power_iteration, pylops_mpi.optimization.sparsity.ista / fista), on
rmaop_power_iteration, rmaop_solve_ista and rmaop_solve_fista: the iterations run inside the library, one call.

``power_iteration(Op, b_k, niter=10, tol=1e-5, dtype="float64", backend="numpy") -> (maxeig, b_k, iiter)``
``ista(Op, y, x0, niter=10, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10, rtol=0.0, rtol1=0.0,
threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10), callback=None)
-> (x, iiter, cost)``, ``fista`` likewise.

``Op`` (and ``SOp``) are rmaop operators; vectors are DistributedArrays / StackedDistributedArrays (results come
back as them) or this rank's local NumPy / CuPy arrays.
"""
from ctypes import byref, c_double, c_int

import numpy as np

from . import _core, _lib
from . import _vectors as V
from . import solvers
from ._core import Vec, call, stream_order

_STEP_EIGS = ("niter", "tol", "dtype", "backend", "seed")


def _start(Op, b, dtype, backend, seed):
    """The start of a power iteration on ``b`` (Op's model side): PyLops-MPI's random draw written into ``b``
    (seed None), else the library's own (seeded, by global index)."""
    if seed is None:
        xp = _core.array_module(Op.context)
        draws = V.random_start(V.local_parts(b, Op._m), dtype, np if backend == "numpy" else xp)
        draws = [xp.asarray(d) for d in draws]
        if isinstance(b, _core.StackedDistributedArray):
            for part, d in zip(b.distarrays, draws):
                part[:] = d
        elif V.is_dist(b):
            b[:] = draws[0]
        else:
            b = xp.concatenate(draws) if len(draws) > 1 else draws[0]
    return b


def power_iteration(Op, b_k, niter=10, tol=1e-5, dtype="float64", backend="numpy", *, seed=None):
    """The largest eigenvalue (in modulus) of the square rmaop operator ``Op`` and its eigenvector (PyLops-MPI
    power_iteration): returns ``(maxeig, b_k, iiter)``. Collective.

    As PyLops-MPI, ``b_k``'s values are replaced by ``numpy.random.rand`` draws (of ``dtype``, plus ``1j`` times a
    second draw for complex dtypes) of the global NumPy (``backend="cupy"``: CuPy) generator, so with the same
    seed the iterations are PyLops-MPI's number for number; on return ``b_k`` holds the normalized last iterate
    (in place when its split is the operator's; otherwise a new array comes back). ``seed=`` (rmaop) starts
    instead from the library's pseudo-random values by global index, the same at every rank count. ``maxeig``
    is a float for real operators, complex for complex ones; ``iiter`` the iterations run.
    Errors: RmaopError (RMAOP_ERR_ARG) for a non-square operator, niter < 1 or a negative tol, with the library's
    message.
    """
    Op = V.operator(Op, "power_iteration")
    ctx = Op.context
    b = _start(Op, b_k, dtype, backend, seed)
    bl = V.local_in(Op, Op._m, b, "b_k")
    opts = _lib.EigsOptions()
    _lib.lib.rmaop_eigs_options_init(byref(opts))
    opts.niter, opts.tol = int(niter), float(tol)
    opts.use_b, opts.seed = (1, 0) if seed is None else (0, int(seed))
    ev, it = (c_double * 2)(), c_int()
    with Vec(Op._m.layout, bl) as vb, stream_order(ctx):
        call("rmaop_power_iteration", Op.handle, vb, byref(opts), byref(ev), byref(it), ctx=ctx.handle)
    if not V.write_back(b_k, bl):
        b_k = V.as_like(Op, Op._m, bl, b_k)
    maxeig = complex(ev[0], ev[1]) if np.iscomplexobj(bl) else float(ev[0])
    return maxeig, b_k, int(it.value)


def _step(Op, x0, eigsdict):
    """PyLops-MPI's default step: 1 / |l|, l the power iteration's eigenvalue of Op^H Op started from a draw
    on x0's split (as pylops_mpi ISTA.setup: power_iteration(Op.H @ Op, x0.empty_like(), dtype=Op1.dtype))."""
    eigs = dict(eigsdict or {})
    unknown = set(eigs) - set(_STEP_EIGS)
    if unknown:
        raise TypeError(f"rmaop: eigsdict has unknown keys {sorted(unknown)} (power_iteration takes {_STEP_EIGS})")
    AH = solvers.adjoint(Op)
    try:
        AHA = solvers.product(AH, Op)
        try:
            eigs.setdefault("dtype", AHA.dtype)
            like = x0 if V.is_dist(x0) else _core.empty(Op.context, Op._m.local_n, Op._dtype_np)
            b = like.copy() if V.is_dist(like) else like
            maxeig = power_iteration(AHA, b, **eigs)[0]
        finally:
            AHA.close()
    finally:
        AH.close()
    if maxeig == 0:
        raise ValueError("rmaop: the power iteration of Op^H Op gave 0: no step size exists (pass alpha)")
    return float(1.0 / abs(maxeig))


class _Monitor:
    """PyLops-MPI's monitorres: step k stops with a ValueError when ||y - Op v_k|| exceeds the previous step's
    (v: x for ISTA, FISTA's z), checked in the callback after step k - 1 for the steps that PyLops-MPI runs."""

    def __init__(self, name, Op, yl, x0l, niter, tol, fista):
        self.name, self.Op, self.yl, self.niter, self.tol, self.fista = name, Op, yl, niter, tol, fista
        self.xold = x0l.copy()
        self.t = 1.0
        self.normresold = self._norm(x0l)

    def _norm(self, v):
        r = self.yl - self.Op.apply(v)
        return float(np.sqrt(abs(_core.ctx_dot(self.Op.context, self.Op._d.layout, r, r))))

    def __call__(self, k, x):
        ctx, lay = self.Op.context, self.Op._m.layout
        d = x - self.xold
        xupdate = float(np.sqrt(abs(_core.ctx_dot(ctx, lay, d, d))))
        v = x
        if self.fista:
            told = self.t
            self.t = (1.0 + np.sqrt(1.0 + 4.0 * self.t ** 2)) / 2.0
            v = x + ((told - 1.0) / self.t) * d
        self.xold = x.copy()
        if k >= self.niter or not xupdate > self.tol:  # PyLops-MPI runs no step k
            return
        normres = self._norm(v)
        if normres > self.normresold:
            raise ValueError(f"{self.name} stopped at iteration {k} due to residual increasing, consider modifying "
                             "eps and/or alpha...")
        self.normresold = normres


def _sparse(name, Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay, monitorres, show, callback,
            perc):
    fn = name.lower()
    Op = V.operator(Op, fn)
    ctx = Op.context
    if not isinstance(niter, (int, np.integer)) or niter < 0:
        raise ValueError(f"rmaop.{fn}: niter must be a non-negative integer, not {niter!r}")
    if threshkind not in _lib.THRESH:
        raise ValueError(f"threshkind must be hard, soft, half (rmaop: or soft-percentile, hard-percentile, "
                         f"half-percentile with perc), got {threshkind}")
    if threshkind.endswith("percentile") and perc is None:
        raise ValueError(f"rmaop.{fn}: threshkind {threshkind!r} needs perc (the percentage of values kept)")
    if SOp is not None:
        SOp = V.operator(SOp, fn, "SOp")
    yl = V.local_in(Op, Op._d, y, "y")
    x, xbuf = V.out_like(Op, Op._m, y if V.is_dist(y) else None)
    x0l = None if x0 is None else V.local_in(Op, Op._m, x0, "x0")
    dec = None
    if decay is not None:
        dec = np.ascontiguousarray(_core.array_module(ctx).asnumpy(decay) if _core.is_device_array(decay)
                                   else decay, dtype=np.float64).reshape(-1)
        if dec.size < niter:
            raise ValueError(f"rmaop.{fn}: decay has {dec.size} values for niter = {niter}")
    if alpha is None:
        alpha = _step(Op, x0 if x0 is not None else xbuf, eigsdict)
    opts = _lib.SparseOptions()
    _lib.lib.rmaop_sparse_options_init(byref(opts))
    opts.niter, opts.eps, opts.alpha, opts.tol = int(niter), float(eps), float(alpha), float(tol)
    opts.threshkind, opts.perc = _lib.THRESH[threshkind], float(perc or 0.0)
    opts.SOp = SOp.handle if SOp is not None else None
    if dec is not None:
        opts.decay = dec.ctypes.data_as(_lib.POINTER(c_double))
    monitor = None
    if monitorres:
        monitor = _Monitor(name, Op, yl, x0l if x0l is not None else
                           _core.array_module(ctx).zeros(Op._m.local_n, dtype=Op._dtype_np),
                           niter, tol, name == "FISTA")
    errors = []
    if callback is not None or monitor is not None:
        def body(it):
            if monitor is not None:
                monitor(it, xbuf)
            if callback is not None:
                callback(x)
        opts.callback = V.solver_callback(ctx, errors, body)
    res, _, _ = V.run_solver(fn, Op, yl, xbuf, x0l, opts, errors)
    hist = res.pop("history")
    res.update(alpha=alpha, cost0=float(hist[0]))
    Op.last_solve = res
    cost = hist[1:]
    if show and ctx.rank == 0:
        print(f"rmaop.{fn} ({threshkind} thresholding): {res['iterations']} iterations ({res['reason']}), alpha = "
              f"{alpha:.6e}, cost {hist[0]:.4e} -> {hist[-1]:.4e}, {res['time_total'] * 1e3:.3f} ms")
    return x, res["iterations"], cost


def ista(Op, y, x0, niter=10, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10, rtol=0.0, rtol1=0.0,
         threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10), callback=None, *,
         perc=None):
    """ISTA (PyLops-MPI ista): min 1/2 ||y - Op x||^2 + eps ||x||_p (``SOp``: of SOp^H x). Returns
    ``(x, iiter, cost)``, ``cost[k]`` PyLops-MPI's 1/2 ||y - Op x_k||^2 + eps ||x_{k+1}||_1 (the residual its step
    used); stops after ``niter`` or once ||x_{k+1} - x_k|| <= tol. Collective.

    ``alpha=None``: 1 / |l|, l from the power iteration of Op^H Op with PyLops-MPI's random start (the global
    NumPy generator, on x0's split; ``eigsdict`` as PyLops-MPI's, plus ``seed`` for the library's start).
    ``x0=None`` starts from zero (PyLops-MPI needs an x0). ``rtol`` and ``rtol1`` are accepted and, as in
    PyLops-MPI 0.8 (whose run loop does not read its callbacks' stop flags), stop nothing. ``monitorres`` raises
    PyLops-MPI's ValueError when the residual grows (one more application of Op per iteration). Beyond PyLops-MPI:
    the percentile thresholdings of PyLops ("soft-percentile", ... with ``perc``). ``callback(x)`` after every
    iteration. ``Op.last_solve`` holds the iterations, stopping reason, ``alpha``, the cost at x0 and the times.
    """
    return _sparse("ISTA", Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay, monitorres, show,
                   callback, perc)


def fista(Op, y, x0, niter=10, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10, rtol=0.0, rtol1=0.0,
          threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10), callback=None, *,
          perc=None):
    """FISTA (PyLops-MPI fista): ISTA's step from the extrapolated z_k (Beck & Teboulle 2009). Returns
    ``(x, iiter, cost)`` with ``cost[k]`` = 1/2 ||y - Op x_{k+1}||^2 + eps ||x_{k+1}||_1 (PyLops-MPI's: one more
    application of Op per iteration). Arguments and differences as ``ista``."""
    return _sparse("FISTA", Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay, monitorres, show,
                   callback, perc)
