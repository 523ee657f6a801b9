"""Proximal operators and solvers with PyLops-MPI's (and pyproximal's) names and signatures, on the library's
rmaop_prox and proximal solvers (include/rmaop/solver_sparse.h): the solvers' iterations run inside the library,
one call.

Proximal operators: ``L1(sigma=1., g=None)`` (pyproximal L1, which PyLops-MPI wraps in MPIProxOperator),
``L2`` / ``MPIL2(Op=None, b=None, q=None, sigma=1., alpha=1., qgrad=True, niter=10, x0=None, warm=True,
solver="cgls", kwargs_solver=None)``, ``L21`` / ``MPIL21(ndim, sigma=1.)``. Each has PyLops-MPI's ``__call__(x)``,
``prox(x, tau)``, ``proxdual(x, tau)`` (and ``grad(x)`` for L2) on DistributedArrays / StackedDistributedArrays or
this rank's local arrays, and ``close()``: an L2 holds a reference on its operator, so, like operators, proximal
operators are freed by ``close()`` in program order or at exit, never by the garbage collector.

Solvers: ``ProximalGradient(proxf, proxg, x0, epsg=1., tau=None, eta=1., niter=10, niterback=100,
acceleration=None, tol=None, callback=None, show=False) -> x``; ``ADMML2(proxg, Op, b, A, x0, tau, niter=10,
z0=None, gfirst=False, callback=None, show=False, kwargs_solver={}) -> (x, z)``; ``PrimalDual(proxf, proxg, A, x0,
y0, tau, mu, z=None, theta=1., niter=10, gfirst=True, callback=None, callbacky=False, returny=False, show=False)
-> x or (x, y)``. ``history=True`` (rmaop) records the objective every iteration; ``last_solve`` (this module's)
holds the iterations, the stopping reason, the history and the times of the last solve.
"""
from ctypes import POINTER, byref, c_double

import numpy as np

from . import _core, _lib
from . import _vectors as V
from ._core import DistributedArray, StackedDistributedArray, Vec, call, stream_order
from ._operator import RmaopOperator

last_solve = None

_ADAPTERS = {}


def _adapter(ctx, dtype, name):
    """An object with the operators' array handling (_local_in, _dist_out) for ``name``'s messages."""
    cls = _ADAPTERS.get(name)
    if cls is None:
        cls = _ADAPTERS[name] = type(name, (RmaopOperator,), {})
    a = cls.__new__(cls)
    a.context, a._dtype_np = ctx, np.dtype(dtype)
    return a


def _dtype_of(a):
    if isinstance(a, StackedDistributedArray if StackedDistributedArray else ()):
        return np.result_type(*[p.dtype for p in a.distarrays])
    if isinstance(a, (list, tuple)):
        return np.result_type(*[np.asarray(p).dtype if not _core.is_device_array(p) else p.dtype for p in a])
    return np.dtype(a.dtype)


def _flat(a):
    """A list of local arrays (L21's parts) as one flat array; others as they are."""
    if isinstance(a, (list, tuple)):
        mods = [p for p in a if _core.is_device_array(p)]
        xp = _core._cp if mods else np
        return xp.concatenate([xp.asarray(p).reshape(-1) for p in a])
    return a


class _Prox:
    """What every rmaop proximal operator does (see the module's docstring)."""
    hasgrad = False
    _side = None     # the side its vectors must have (an L2's Op's model, an L1's g's); None: any
    _dtype = None

    def _register(self, ctx, handle, keep=()):
        self.context, self._p, self._keep = ctx, handle, keep
        _core._register(self)

    @property
    def handle(self):
        if getattr(self, "_p", None) is None or not self._p.value:
            raise ValueError(f"rmaop: the {type(self).__name__} proximal operator is closed")
        return self._p

    def close(self):
        if getattr(self, "_p", None) is not None and self._p.value:
            _lib.lib.rmaop_prox_destroy(byref(self._p))
        self._p = None

    def __repr__(self):
        return f"<rmaop.{type(self).__name__} sigma={getattr(self, 'sigma', None)}>"

    # ---- arrays ----
    def _in(self, x, what="x"):
        """(adapter, side, this rank's flat local array) of x."""
        ctx = self.context
        dtype = self._dtype if self._dtype is not None else _dtype_of(x)
        ad = _adapter(ctx, dtype, type(self).__name__)
        side = self._side if self._side is not None else V.side_of(ctx, x)
        return ad, side, V.local_in(ad, side, _flat(x), what)

    def _apply(self, fn, x, tau):
        h = self.handle
        ad, side, xl = self._in(x)
        out, buf = V.out_like(ad, side, x if V.is_dist(x) else None)
        ctx = self.context
        with Vec(side.layout, xl) as vx, Vec(side.layout, buf) as vo, stream_order(ctx):
            call(fn, h, float(tau), vx, vo, ctx=ctx.handle)
        return out

    def __call__(self, x):
        """f(x) (PyLops-MPI: a sum over every rank's elements, a BROADCAST array counted once). Collective."""
        h = self.handle
        _, side, xl = self._in(x)
        v = c_double()
        with Vec(side.layout, xl) as vx, stream_order(self.context):
            call("rmaop_prox_norm", h, vx, byref(v), ctx=self.context.handle)
        return float(v.value)

    def prox(self, x, tau, **kwargs):
        """prox_{tau f}(x); tau must be positive (RmaopError with the library's "tau must be positive")."""
        return self._apply("rmaop_prox_apply", x, tau)

    def proxdual(self, x, tau, **kwargs):
        """prox_{tau f*}(x), f* the convex conjugate (pyproximal's proxdual)."""
        return self._apply("rmaop_prox_apply_dual", x, tau)


class L1(_Prox):
    """pyproximal L1 as PyLops-MPI uses it (``MPIProxOperator(pyproximal.L1(sigma, g))``): f(x) = sigma ||x - g||_1.
    ``g``: None, a DistributedArray or this rank's part (copied; x must then have its split). ``sigma`` is a
    number (pyproximal's callable sigma is not supported: TypeError). Proximal: soft thresholding; dual: the
    projection onto |x_i| <= sigma (complex values scaled to modulus sigma). Not collective except ``__call__``
    (one reduction) and the constructor with ``g`` (the layout of its split)."""

    def __init__(self, sigma=1.0, g=None, *, context=None, base_comm=None, backend=None, sync=None, transport=None,
                 memory=None):
        if callable(sigma):
            raise TypeError("rmaop: L1's sigma must be a number (a callable sigma is not supported)")
        comm = g.base_comm if isinstance(g, (DistributedArray,) if DistributedArray else ()) else base_comm
        ctx = _core.resolve_context(context, comm, backend, sync, transport, memory)
        self.sigma, self.g = float(sigma), g
        h = _lib.prox_t()
        if g is None:
            call("rmaop_prox_create_l1", ctx.handle, self.sigma, None, byref(h), ctx=ctx.handle)
        else:
            self._dtype = _dtype_of(g)
            ad = _adapter(ctx, self._dtype, "L1")
            self._side = V.side_of(ctx, g)
            gl = V.local_in(ad, self._side, g, "g")
            with Vec(self._side.layout, gl) as vg, stream_order(ctx):
                call("rmaop_prox_create_l1", ctx.handle, self.sigma, vg, byref(h), ctx=ctx.handle)
        self._register(ctx, h)


class L21(_Prox):
    """PyLops-MPI MPIL21: f(x) = sigma sum_i sqrt(sum_d |x_d,i|^2) over a StackedDistributedArray of ``ndim``
    DistributedArrays of one split (or a list of ``ndim`` local arrays). Not collective except ``__call__``."""

    def __init__(self, ndim, sigma=1.0, *, context=None, base_comm=None, backend=None, sync=None, transport=None,
                 memory=None):
        ctx = _core.resolve_context(context, base_comm, backend, sync, transport, memory)
        self.ndim, self.sigma = int(ndim), float(sigma)
        h = _lib.prox_t()
        call("rmaop_prox_create_l21", ctx.handle, self.ndim, self.sigma, byref(h), ctx=ctx.handle)
        self._register(ctx, h)

    def _in(self, x, what="x"):
        n = len(x.distarrays) if isinstance(x, StackedDistributedArray if StackedDistributedArray else ()) else (
            len(x) if isinstance(x, (list, tuple)) else None)
        if n != self.ndim:  # PyLops-MPI's check and message
            raise ValueError(f"Expected {self.ndim} DistributedArray, got {n}")
        return super()._in(x, what)


_KW_SOLVER = ("tol", "damp")


class L2(_Prox):
    """PyLops-MPI MPIL2: f(x) = sigma / 2 ||Op x - b||^2 + alpha q^T x. ``Op`` an rmaop operator (then ``x0`` is
    required, as in PyLops-MPI, and ``b`` lives on its data side, ``q`` and ``x0`` on its model side); without
    ``Op``, f = sigma / 2 ||x - b||^2 (+ alpha q^T x) in closed form. With ``Op`` and ``b`` the proximal runs the
    library's CGLS on [sqrt(tau sigma) Op; I] (``solver="cgls"``) or CG on the normal equations (``"cg"``),
    ``niter`` iterations from ``x0`` (the last result when ``warm``); ``kwargs_solver`` takes ``tol`` (1e-4) and
    ``damp``. ``niter`` is an int (PyLops-MPI's callable is not supported: TypeError). b, q and x0 are copied.
    Collective (constructor, prox with Op and b, ``__call__``, ``grad``)."""
    hasgrad = True

    def __init__(self, Op=None, b=None, q=None, sigma=1.0, alpha=1.0, qgrad=True, niter=10, x0=None, warm=True,
                 solver="cgls", kwargs_solver=None, *, context=None, base_comm=None, backend=None, sync=None,
                 transport=None, memory=None):
        if Op is not None and x0 is None:
            raise ValueError("x0 must be passed when Op is not None")
        if solver not in _lib.PROX_L2_SOLVER:
            raise ValueError(f"Provided solver={solver}. Available options are 'cg' or 'cgls'.")
        if callable(niter) or not isinstance(niter, (int, np.integer)):
            raise TypeError("rmaop: L2's niter must be an int (a callable niter is not supported)")
        kws = dict(kwargs_solver or {})
        unknown = set(kws) - set(_KW_SOLVER)
        if unknown:
            raise TypeError(f"rmaop: L2's kwargs_solver has {sorted(unknown)}; the inner solver takes {_KW_SOLVER}")
        self.Op, self.b, self.q, self.x0 = Op, b, q, x0
        self.sigma, self.alpha, self.qgrad, self.niter, self.warm = float(sigma), float(alpha), qgrad, niter, warm
        self.solver, self.kwargs_solver, self.count = solver, kws, 0
        spec = _lib.ProxL2Spec()
        _lib.lib.rmaop_prox_l2_spec_init(byref(spec))
        spec.sigma, spec.alpha, spec.qgrad, spec.niter = self.sigma, self.alpha, int(bool(qgrad)), int(niter)
        spec.warm, spec.solver = int(bool(warm)), _lib.PROX_L2_SOLVER[solver]
        spec.tol, spec.damp = float(kws.get("tol", 1e-4)), float(kws.get("damp", 0.0))
        vecs = []
        if Op is not None:
            Op = V.operator(Op, "L2")
            ctx = Op.context
            if any(v is not None for v in (context, backend, sync, transport, memory)):
                raise ValueError("rmaop: L2 with an Op runs on the Op's context; give no context= or path keywords")
            spec.Op = Op.handle
            self._side, self._dtype = Op._m, Op._dtype_np
            for name, v, side in (("b", b, Op._d), ("q", q, Op._m), ("x0", x0, Op._m)):
                if v is not None:
                    vecs.append((name, side, V.local_in(Op, side, v, name)))
            ad = Op
        else:
            ref = b if b is not None else q
            comm = ref.base_comm if V.is_dist(ref) else base_comm
            ctx = _core.resolve_context(context, comm, backend, sync, transport, memory)
            if ref is not None:
                self._dtype = np.result_type(*[_dtype_of(v) for v in (b, q) if v is not None])
                ad = _adapter(ctx, self._dtype, "L2")
                self._side = V.side_of(ctx, ref)
                for name, v in (("b", b), ("q", q)):
                    if v is not None:
                        vecs.append((name, self._side, V.local_in(ad, self._side, v, name)))
        handles = [Vec(side.layout, arr) for _, side, arr in vecs]
        try:
            for (name, _, _), hv in zip(vecs, handles):
                setattr(spec, name, hv._h)
            h = _lib.prox_t()
            with stream_order(ctx):
                call("rmaop_prox_create_l2", ctx.handle, byref(spec), byref(h), ctx=ctx.handle)
        finally:
            for hv in handles:
                hv.free()
        self._register(ctx, h, keep=(Op,))

    def prox(self, x, tau, **kwargs):
        self.count += 1
        return super().prox(x, tau)

    def grad(self, x):
        """grad f(x) = sigma Op^H (Op x - b) (+ alpha q when qgrad). Collective."""
        h = self.handle
        ad, side, xl = self._in(x)
        out, buf = V.out_like(ad, side, x if V.is_dist(x) else None)
        with Vec(side.layout, xl) as vx, Vec(side.layout, buf) as vg, stream_order(self.context):
            call("rmaop_prox_grad", h, vx, vg, ctx=self.context.handle)
        return out


MPIL2 = L2
MPIL21 = L21


# ---- solvers ---------------------------------------------------------------------------------------------------

def _prox(p, what):
    if not isinstance(p, _Prox):
        raise TypeError(f"rmaop: {what} must be an rmaop proximal operator (rmaop.L1, L2, L21), not "
                        f"{type(p).__name__}")
    p.handle  # noqa: B018 - raises when closed
    return p


def _floats(a, n, what):
    arr = np.ascontiguousarray(a.get() if _core.is_device_array(a) else a, dtype=np.float64).reshape(-1)
    if arr.size < n:
        raise ValueError(f"rmaop: {what} has {arr.size} values for niter = {n}")
    return arr


class _Run:
    """One proximal solve: the output x (on ``side`` of ``ad``, like x0), the callback over the library's
    iterate, the info and the results."""

    def __init__(self, name, ad, side, x0, callback, aux=None):
        self.name, self.ad, self.side, self.ctx = name, ad, side, ad.context
        self.x0l = V.local_in(ad, side, x0, "x0")
        self.x, self.xbuf = V.out_like(ad, side, x0 if V.is_dist(x0) else None)
        self.aux, self.errors, self.info = aux, [], _lib.SolverInfo()
        self.cb = None
        if callback is not None:
            def cb(user, it, vx, vaux):
                try:
                    with V.callback_order(self.ctx):
                        self.xbuf[...] = V.vec_view(self.ctx, vx, self.ad._dtype_np)
                        if aux is not None:
                            aux[1][...] = V.vec_view(self.ctx, vaux, self.ad._dtype_np)
                            callback(self.x, aux[0])
                        else:
                            callback(self.x)
                    return 0
                except BaseException as e:  # reported after the solver returns; a status stops it
                    self.errors.append(e)
                    return 1
            self.cb = _lib.PROX_CALLBACK(cb)

    def finish(self, st, show):
        global last_solve
        try:
            if self.errors:
                raise self.errors[0]
            _lib.check(st, self.ctx.handle)
            last_solve = V.results(self.info)
        finally:
            _lib.lib.rmaop_solver_info_destroy(byref(self.info))
        if show and self.ctx.rank == 0:
            h = last_solve["history"]
            print(f"rmaop.{self.name}: {last_solve['iterations']} iterations ({last_solve['reason']})"
                  + (f", objective {h[0]:.4e} -> {h[-1]:.4e}" if h is not None and h.size else "")
                  + f", {last_solve['time_total'] * 1e3:.3f} ms")


def _fixed_side(ctx, x0, *proxes):
    """The side that x0 must have: the first proximal's fixed one, else x0's own split."""
    for p in proxes:
        if p._side is not None:
            return p._side
    return V.side_of(ctx, x0)


def ProximalGradient(proxf, proxg, x0, epsg=1.0, tau=None, eta=1.0, niter=10, niterback=100, acceleration=None,
                     tol=None, callback=None, show=False, *, history=False):
    """Proximal gradient (PyLops-MPI ProximalGradient): min f(x) + epsg g(x), f smooth (an rmaop L2: its gradient),
    g with a proximal; ``acceleration`` None, "vandenberghe" or "fista"; ``eta`` < 1 relaxes. Returns x (a
    DistributedArray like x0, or a local array). Collective.

    ``tau`` is required (PyLops-MPI has no backtracking either: None is an RmaopError, "must be positive");
    ``niterback`` has no effect. ``tol`` stops once |1 - J_k / J_{k-1}| < tol, J = f(x) + epsg g(x).
    ``callback(x)`` after every iteration (x: a copy of the iterate)."""
    proxf, proxg = _prox(proxf, "proxf"), _prox(proxg, "proxg")
    if acceleration not in _lib.ACCEL:
        raise NotImplementedError("Acceleration should be None, vandenberghe or fista")
    ctx = proxf.context
    dtype = proxf._dtype or proxg._dtype or _dtype_of(x0)
    ad = _adapter(ctx, dtype, "ProximalGradient")
    run = _Run("ProximalGradient", ad, _fixed_side(ctx, x0, proxf, proxg), x0, callback)
    opts = _lib.ProxgradOptions()
    _lib.lib.rmaop_proxgrad_options_init(byref(opts))
    opts.niter, opts.tau, opts.eta = int(niter), float(tau or 0.0), float(eta)
    e = np.asarray(epsg.get() if _core.is_device_array(epsg) else epsg, dtype=float)
    eps_arr = None
    if e.size == 1:
        opts.epsg = float(np.float32(e.reshape(-1)[0]))  # PyLops-MPI: epsg * ones(niter, float32)
    else:
        eps_arr = _floats(e, niter, "epsg")
        opts.epsg_iter = eps_arr.ctypes.data_as(POINTER(c_double))
    opts.acceleration, opts.tol, opts.history = _lib.ACCEL[acceleration], float(tol or 0.0), int(bool(history))
    if run.cb is not None:
        opts.callback = run.cb
    with Vec(run.side.layout, run.x0l) as vx0, Vec(run.side.layout, run.xbuf) as vx, stream_order(ctx):
        st = _lib.lib.rmaop_solve_proximal_gradient(proxf.handle, proxg.handle, vx0, vx, byref(opts),
                                                    byref(run.info))
    run.finish(st, show)
    return run.x


def ADMML2(proxg, Op, b, A, x0, tau, niter=10, z0=None, gfirst=False, callback=None, show=False, kwargs_solver={},
           *, history=False):
    """ADMM for an L2 misfit (PyLops-MPI ADMML2): min 1/2 ||Op x - b||^2 + g(z) s.t. A x = z; each x-update is
    the library's CGLS on [Op; A / sqrt(tau)] from the last x (``kwargs_solver``: ``niter`` 10, ``tol`` 1e-4,
    ``damp``, PyLops-MPI cgls's defaults). ``Op`` and ``A`` are rmaop operators with one model side. Returns
    ``(x, z)`` (x like x0, z on A's data side). ``callback(x)`` after every iteration. Collective."""
    proxg = _prox(proxg, "proxg")
    Op, A = V.operator(Op, "ADMML2"), V.operator(A, "ADMML2", "A")
    kws = dict(kwargs_solver or {})
    unknown = set(kws) - {"niter", "tol", "damp"}
    if unknown:
        raise TypeError(f"rmaop: ADMML2's kwargs_solver has {sorted(unknown)}; the inner CGLS takes niter, tol, damp")
    ctx = Op.context
    run = _Run("ADMML2", Op, Op._m, x0, callback)
    bl = V.local_in(Op, Op._d, b, "b")
    z, zbuf = V.out_like(A, A._d, b if V.is_dist(b) else None)
    z0l = None if z0 is None else V.local_in(A, A._d, z0, "z0")
    opts = _lib.Admml2Options()
    _lib.lib.rmaop_admml2_options_init(byref(opts))
    opts.niter, opts.tau, opts.gfirst, opts.history = int(niter), float(tau), int(bool(gfirst)), int(bool(history))
    opts.inner.niter = int(kws.get("niter", 10))
    opts.inner.tol, opts.inner.damp = float(kws.get("tol", 1e-4)), float(kws.get("damp", 0.0))
    if run.cb is not None:
        opts.callback = run.cb
    vz0 = Vec(A._d.layout, z0l) if z0l is not None else None
    try:
        if vz0 is not None:
            opts.z0 = vz0._h
        with Vec(Op._d.layout, bl) as vb, Vec(Op._m.layout, run.x0l) as vx0, Vec(Op._m.layout, run.xbuf) as vx, \
                Vec(A._d.layout, zbuf) as vz, stream_order(ctx):
            st = _lib.lib.rmaop_solve_admml2(proxg.handle, Op.handle, vb, A.handle, vx0, vx, vz, byref(opts),
                                             byref(run.info))
    finally:
        if vz0 is not None:
            vz0.free()
    run.finish(st, show)
    return run.x, z


def PrimalDual(proxf, proxg, A, x0, y0, tau, mu, z=None, theta=1.0, niter=10, gfirst=True, callback=None,
               callbacky=False, returny=False, show=False, *, history=False):
    """The primal-dual algorithm (Chambolle & Pock 2011; PyLops-MPI PrimalDual): min f(x) + g(A x) + z^T x.
    ``tau`` and ``mu`` are numbers (rounded to float32 as PyLops-MPI's ``tau * ones(niter, float32)``) or arrays
    of ``niter`` steps (used as given). ``y0=None`` starts the dual from zero. Returns x, or ``(x, y)`` with
    ``returny``. ``callback(x)`` (``callbacky``: ``callback(x, y)``) after every iteration. Collective."""
    proxf, proxg = _prox(proxf, "proxf"), _prox(proxg, "proxg")
    A = V.operator(A, "PrimalDual", "A")
    ctx = A.context
    y, ybuf = V.out_like(A, A._d, y0 if V.is_dist(y0) else (x0 if V.is_dist(x0) else None))
    aux = (y, ybuf) if callbacky else None
    run = _Run("PrimalDual", A, A._m, x0, None if callback is None else
               (callback if callbacky else (lambda x, *_: callback(x))), aux=aux)
    y0l = None if y0 is None else V.local_in(A, A._d, y0, "y0")
    zl = None if z is None else V.local_in(A, A._m, z, "z")
    opts = _lib.PrimaldualOptions()
    _lib.lib.rmaop_primaldual_options_init(byref(opts))
    opts.niter, opts.theta, opts.gfirst, opts.history = int(niter), float(theta), int(bool(gfirst)), int(bool(history))
    keep = []
    for name, v in (("tau", tau), ("mu", mu)):
        if isinstance(v, (int, float)):
            setattr(opts, name, float(v))
        else:
            arr = _floats(v, niter, name)
            keep.append(arr)
            setattr(opts, f"{name}_iter", arr.ctypes.data_as(POINTER(c_double)))
    if run.cb is not None:
        opts.callback = run.cb
    extra = [Vec(A._d.layout, y0l) if y0l is not None else None, Vec(A._m.layout, zl) if zl is not None else None]
    try:
        if extra[1] is not None:
            opts.z = extra[1]._h
        with Vec(A._m.layout, run.x0l) as vx0, Vec(A._m.layout, run.xbuf) as vx, Vec(A._d.layout, ybuf) as vy, \
                stream_order(ctx):
            st = _lib.lib.rmaop_solve_primal_dual(proxf.handle, proxg.handle, A.handle, vx0,
                                                  extra[0]._h if extra[0] is not None else None, vx, vy, byref(opts),
                                                  byref(run.info))
    finally:
        for e in extra:
            if e is not None:
                e.free()
    run.finish(st, show)
    return (run.x, y) if returny else run.x
