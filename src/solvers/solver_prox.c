/* Proximal operators and solvers with PyLops-MPI 0.8's definitions (pylops_mpi.proximal: MPIProxOperator over
 * pyproximal.L1, MPIL2, MPIL21; pylops_mpi.proximal.optimization: ProximalGradient, ADMML2, PrimalDual), after
 * Combettes & Pesquet 2011 (proximal splitting), Boyd et al. 2011 (ADMM) and Chambolle & Pock 2011 (primal-dual).
 * Element work goes through the layer of src/solvers/sparse_impl.h, vector arithmetic through rmaop_vec_*,
 * inner solves through rmaop_solve_cg / rmaop_solve_cgls, reductions through rmaop_allreduce. */
#include "sparse_impl.h"

typedef enum { PROX_L1 = 0, PROX_L2, PROX_L21 } prox_kind;
static const char *const kind_names[] = {"L1", "L2", "L21"};

struct rmaop_prox_s {
  rmaop_ctx ctx;
  prox_kind kind;
  double sigma;
  rmaop__sparse_ws ws;
  rmaop_vec g;         /* L1's offset (a copy); NULL: none */
  int ndim;            /* L21's parts */
  /* L2 */
  rmaop_op Op;         /* a reference; NULL: the closed form */
  rmaop_vec b, q, qc;  /* copies; qc = conj(q), for q^T x as a conjugated dot */
  rmaop_vec x0;        /* the inner solver's start (the last result when warm) */
  rmaop_vec OpTb;      /* sigma Op^H b (the CG form) */
  double alpha, tol, damp;
  int qgrad, niter, warm;
  rmaop_prox_l2_solver solver;
  rmaop_op ident;      /* identity on Op's model layout */
  rmaop_op reg;        /* the inner system's operator, kept while its scale stays the same */
  double reg_scale;
  rmaop_vec breg, tmp; /* CGLS's stacked data; the model- or data-layout scratch of the CG form and of f(x) */
};

/* How the proximals multiply tau by their scalars. PyLops-MPI's PrimalDual turns scalar steps into float32
 * arrays, so there tau is a float32 value and its products with Python floats (tau * sigma, ...) are float32
 * operations (NumPy's promotion of a float32 scalar with a Python float); F32 reproduces that. */
typedef enum { SCALARS_F64 = 0, SCALARS_F32 } scalars;

static double mul(scalars sc, double tau, double s) {
  return sc == SCALARS_F32 ? (double)((float)tau * (float)s) : tau * s;
}
/* 1 / (1 + ts), NumPy's (1.0 / (1.0 + tau * sigma)) in the same precision. */
static double damping(scalars sc, double ts) {
  return sc == SCALARS_F32 ? (double)(1.0f / (1.0f + (float)ts)) : 1.0 / (1.0 + ts);
}

/* ==== creation ===================================================================================== */

void rmaop_prox_l2_spec_init(rmaop_prox_l2_spec *spec) {
  if (!spec) return;
  memset(spec, 0, sizeof *spec);
  spec->sigma = 1.0;
  spec->alpha = 1.0;
  spec->qgrad = 1;
  spec->niter = 10;
  spec->warm = 1;
  spec->solver = RMAOP_PROX_L2_CGLS;
  spec->tol = 1e-4;
}

static rmaop_status prox_new(rmaop_ctx ctx, prox_kind kind, double sigma, rmaop_prox *out) {
  rmaop_prox p = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *p, "proximal operator", (void **)&p));
  p->ctx = ctx;
  p->kind = kind;
  p->sigma = sigma;
  rmaop_status st = rmaop__sparse_ws_init(ctx, &p->ws);
  if (st != RMAOP_OK) {
    free(p);
    return st;
  }
  *out = p;
  return RMAOP_OK;
}

void rmaop_prox_destroy(rmaop_prox *prox) {
  if (!prox || !*prox) return;
  rmaop_prox p = *prox;
  rmaop_vec_destroy(&p->g);
  rmaop_vec_destroy(&p->b);
  rmaop_vec_destroy(&p->q);
  rmaop_vec_destroy(&p->qc);
  rmaop_vec_destroy(&p->x0);
  rmaop_vec_destroy(&p->OpTb);
  rmaop_vec_destroy(&p->breg);
  rmaop_vec_destroy(&p->tmp);
  rmaop_op_destroy(&p->reg);
  rmaop_op_destroy(&p->ident);
  rmaop_op_destroy(&p->Op);
  rmaop__sparse_ws_free(&p->ws);
  free(p);
  *prox = NULL;
}

/* A copy of v (NULL stays NULL). */
static rmaop_status copy_of(rmaop_vec v, rmaop_vec *out) {
  if (!v) return RMAOP_OK;
  RMAOP_CHECK(rmaop_vec_duplicate(v, out));
  return rmaop_vec_copy(v, *out);
}

rmaop_status rmaop_prox_create_l1(rmaop_ctx ctx, double sigma, rmaop_vec g, rmaop_prox *prox) {
  static const char fn[] = "rmaop_prox_create_l1";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_REQUIRE(ctx, prox != NULL, RMAOP_ERR_ARG, "%s: prox (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, sigma >= 0 && isfinite(sigma), RMAOP_ERR_ARG, "%s: sigma = %g must be finite and >= 0", fn, sigma);
  RMAOP_REQUIRE(ctx, !g || g->ctx == ctx, RMAOP_ERR_ARG, "%s: g belongs to another context", fn);
  rmaop_prox p = NULL;
  RMAOP_CHECK(prox_new(ctx, PROX_L1, sigma, &p));
  rmaop_status st = copy_of(g, &p->g);
  if (st == RMAOP_OK && g) st = rmaop_vec_duplicate(g, &p->tmp);
  if (st != RMAOP_OK) {
    rmaop_prox_destroy(&p);
    return st;
  }
  *prox = p;
  return RMAOP_OK;
}

rmaop_status rmaop_prox_create_l21(rmaop_ctx ctx, int ndim, double sigma, rmaop_prox *prox) {
  static const char fn[] = "rmaop_prox_create_l21";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_REQUIRE(ctx, prox != NULL, RMAOP_ERR_ARG, "%s: prox (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, ndim >= 1 && ndim <= RMAOP__GROUP_MAX, RMAOP_ERR_ARG, "%s: ndim = %d is outside [1, %d]", fn, ndim,
                (int)RMAOP__GROUP_MAX);
  RMAOP_REQUIRE(ctx, sigma >= 0 && isfinite(sigma), RMAOP_ERR_ARG, "%s: sigma = %g must be finite and >= 0", fn, sigma);
  rmaop_prox p = NULL;
  RMAOP_CHECK(prox_new(ctx, PROX_L21, sigma, &p));
  p->ndim = ndim;
  *prox = p;
  return RMAOP_OK;
}

/* Whether v (named `what`) is on layout l with dtype dt, with a message. */
static rmaop_status fits(rmaop_ctx ctx, const char *fn, const char *what, rmaop_vec v, rmaop_layout l, rmaop_dtype dt) {
  RMAOP_REQUIRE(ctx, v != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, what);
  RMAOP_REQUIRE(ctx, v->ctx == ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context", fn, what);
  RMAOP_REQUIRE(ctx, v->dtype == dt, RMAOP_ERR_ARG, "%s: %s is %s, expected %s", fn, what, rmaop_dtype_name(v->dtype),
                rmaop_dtype_name(dt));
  RMAOP_REQUIRE(ctx, rmaop__layout_compatible(v->layout, l), RMAOP_ERR_ARG,
                "%s: %s's layout (%lld of %lld elements here) does not fit (%lld of %lld expected)", fn, what,
                (long long)v->local_n, (long long)v->layout->global_n, (long long)l->sizes[ctx->rank],
                (long long)l->global_n);
  return RMAOP_OK;
}

static rmaop_status l2_check(rmaop_ctx ctx, const char *fn, const rmaop_prox_l2_spec *s) {
  RMAOP_REQUIRE(ctx, s != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", fn);
  RMAOP_REQUIRE(ctx, s->sigma >= 0 && isfinite(s->sigma), RMAOP_ERR_ARG, "%s: sigma = %g must be finite and >= 0", fn,
                s->sigma);
  RMAOP_REQUIRE(ctx, isfinite(s->alpha), RMAOP_ERR_ARG, "%s: alpha = %g is not finite", fn, s->alpha);
  RMAOP_REQUIRE(ctx, s->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, s->niter);
  RMAOP_REQUIRE(ctx, s->tol >= 0 && isfinite(s->tol) && s->damp >= 0 && isfinite(s->damp), RMAOP_ERR_ARG,
                "%s: tol = %g and damp = %g must be finite and >= 0", fn, s->tol, s->damp);
  RMAOP_REQUIRE(ctx, s->solver == RMAOP_PROX_L2_CGLS || s->solver == RMAOP_PROX_L2_CG, RMAOP_ERR_ARG,
                "%s: solver = %d is neither RMAOP_PROX_L2_CGLS nor RMAOP_PROX_L2_CG", fn, (int)s->solver);
  const rmaop_vec ref = s->b ? s->b : s->q;
  if (s->Op) {
    RMAOP_REQUIRE(ctx, s->Op->ctx == ctx, RMAOP_ERR_ARG, "%s: Op belongs to another context", fn);
    RMAOP_REQUIRE(ctx, s->x0 != NULL, RMAOP_ERR_ARG, "%s: x0 must be given when Op is (the inner solver's start)", fn);
    RMAOP_CHECK(fits(ctx, fn, "x0", s->x0, s->Op->model, s->Op->dtype));
    if (s->b) RMAOP_CHECK(fits(ctx, fn, "b", s->b, s->Op->data, s->Op->dtype));
    if (s->q) RMAOP_CHECK(fits(ctx, fn, "q", s->q, s->Op->model, s->Op->dtype));
  } else if (s->b && s->q) {
    RMAOP_CHECK(fits(ctx, fn, "q", s->q, s->b->layout, s->b->dtype));
  } else if (ref) {
    RMAOP_REQUIRE(ctx, ref->ctx == ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context", fn, s->b ? "b" : "q");
  }
  return RMAOP_OK;
}

/* The operator's part of an L2, local: the reference, the copy of x0, the identity, the scratch. */
static rmaop_status l2_operator(rmaop_prox p, const rmaop_prox_l2_spec *s) {
  rmaop_vec ones = NULL;
  p->Op = s->Op;
  s->Op->refs++;
  RMAOP_CHECK(copy_of(s->x0, &p->x0));
  RMAOP_CHECK(rmaop_vec_create(s->Op->data, s->Op->dtype, &p->tmp)); /* Op x - b of f(x) and the gradient */
  if (p->b && p->solver == RMAOP_PROX_L2_CG) RMAOP_CHECK(rmaop_vec_create(s->Op->model, s->Op->dtype, &p->OpTb));
  RMAOP_CHECK(rmaop_vec_create(s->Op->model, s->Op->dtype, &ones));
  rmaop_status st = rmaop_vec_set(ones, 1.0);
  if (st == RMAOP_OK) st = rmaop_op_create_diagonal(ones, &p->ident);
  rmaop_vec_destroy(&ones);
  return st;
}

/* sigma Op^H b of the CG form (PyLops-MPI: (sigma Op.H) @ b). Collective. */
static rmaop_status l2_optb(rmaop_prox p) {
  if (!p->OpTb) return RMAOP_OK;
  RMAOP_CHECK(rmaop_op_apply_adjoint(p->Op, p->b, p->OpTb));
  return rmaop_vec_scale(p->OpTb, p->sigma);
}

rmaop_status rmaop_prox_create_l2(rmaop_ctx ctx, const rmaop_prox_l2_spec *spec, rmaop_prox *prox) {
  static const char fn[] = "rmaop_prox_create_l2";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  rmaop_status st = prox ? l2_check(ctx, fn, spec) : RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: prox (output) is NULL", fn);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  rmaop_prox p = NULL;
  st = prox_new(ctx, PROX_L2, spec->sigma, &p);
  if (st == RMAOP_OK) {
    p->alpha = spec->alpha, p->tol = spec->tol, p->damp = spec->damp;
    p->qgrad = spec->qgrad, p->niter = spec->niter, p->warm = spec->warm, p->solver = spec->solver;
    st = copy_of(spec->b, &p->b);
    if (st == RMAOP_OK) st = copy_of(spec->q, &p->qc);
    if (st == RMAOP_OK) st = copy_of(spec->q, &p->q);
    if (st == RMAOP_OK && p->qc) st = rmaop__sparse_conj(&p->ws, p->qc);
    if (st == RMAOP_OK && !spec->Op && (spec->b || spec->q)) st = rmaop_vec_duplicate(spec->b ? spec->b : spec->q, &p->tmp);
  }
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK && spec->Op) st = rmaop__agree(ctx, l2_operator(p, spec), fn);
  if (st == RMAOP_OK && spec->Op) st = l2_optb(p);
  if (st != RMAOP_OK) {
    rmaop_prox_destroy(&p);
    return st;
  }
  *prox = p;
  return RMAOP_OK;
}

/* ==== argument checks of the applications ========================================================== */

/* 1 when the proximal of p solves (communicates): an L2 with an Op and b. */
static int collective(rmaop_prox p) { return p->kind == PROX_L2 && p->Op && p->b; }

/* Whether vectors on layout l of dtype dt fit p's function (local; `what` names them). */
static rmaop_status prox_fits_layout(rmaop_prox p, const char *fn, const char *what, rmaop_layout l, rmaop_dtype dt) {
  rmaop_ctx ctx = p->ctx;
  rmaop_vec ref = p->kind == PROX_L1 ? p->g : p->kind == PROX_L2 && !p->Op ? p->tmp : NULL;
  if (p->kind == PROX_L2 && p->Op) {
    RMAOP_REQUIRE(ctx, dt == p->Op->dtype && rmaop__layout_compatible(l, p->Op->model), RMAOP_ERR_ARG,
                  "%s: %s (%s, %lld of %lld elements here) does not fit the L2's Op (%s, model %lld of %lld)", fn, what,
                  rmaop_dtype_name(dt), (long long)l->sizes[ctx->rank], (long long)l->global_n,
                  rmaop_dtype_name(p->Op->dtype), (long long)p->Op->model->sizes[ctx->rank],
                  (long long)p->Op->model->global_n);
  } else if (ref) {
    RMAOP_REQUIRE(ctx, dt == ref->dtype && rmaop__layout_compatible(l, ref->layout), RMAOP_ERR_ARG,
                  "%s: %s (%s, %lld of %lld elements here) does not fit the %s's %s (%s, %lld of %lld)", fn, what,
                  rmaop_dtype_name(dt), (long long)l->sizes[ctx->rank], (long long)l->global_n, kind_names[p->kind],
                  p->kind == PROX_L1 ? "g" : p->b ? "b" : "q", rmaop_dtype_name(ref->dtype),
                  (long long)ref->local_n, (long long)ref->layout->global_n);
  } else if (p->kind == PROX_L21) {
    RMAOP_REQUIRE(ctx, l->kind == RMAOP_LAYOUT_STACKED && l->nparts == p->ndim, RMAOP_ERR_ARG,
                  "%s: %s must be a stacked vector of ndim = %d parts (L21), not %s with %d", fn, what, p->ndim,
                  l->kind == RMAOP_LAYOUT_STACKED ? "one" : "a vector", l->kind == RMAOP_LAYOUT_STACKED ? l->nparts : 0);
    for (int d = 1; d < l->nparts; ++d)
      RMAOP_REQUIRE(ctx, rmaop__layout_compatible(l->parts[d], l->parts[0]), RMAOP_ERR_ARG,
                    "%s: part %d of %s has another layout than part 0 (L21 groups element i of every part)", fn, d,
                    what);
  }
  return RMAOP_OK;
}

/* Whether x fits p's function (local). */
static rmaop_status prox_fits(rmaop_prox p, const char *fn, const char *what, rmaop_vec x) {
  RMAOP_REQUIRE(p->ctx, x != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, what);
  RMAOP_REQUIRE(p->ctx, x->ctx == p->ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context than the %s proximal", fn,
                what, kind_names[p->kind]);
  return prox_fits_layout(p, fn, what, x->layout, x->dtype);
}

/* x and out of one application, and tau. */
static rmaop_status apply_check(rmaop_prox p, const char *fn, double tau, rmaop_vec x, rmaop_vec out) {
  RMAOP_REQUIRE(p->ctx, tau > 0 && isfinite(tau), RMAOP_ERR_ARG, "%s: tau = %g: tau must be positive (and finite)", fn,
                tau);
  RMAOP_CHECK(prox_fits(p, fn, "x", x));
  RMAOP_REQUIRE(p->ctx, out != NULL, RMAOP_ERR_ARG, "%s: out is NULL", fn);
  return fits(p->ctx, fn, "out", out, x->layout, x->dtype);
}

/* ==== the proximals ================================================================================ */

/* out = x (nothing when they are one vector). */
static rmaop_status assign(rmaop_vec x, rmaop_vec out) { return x == out ? RMAOP_OK : rmaop_vec_copy(x, out); }

/* L1: soft(x - g, tau sigma) + g, or the projection of x - tau g onto {|x_i| <= sigma}. */
static rmaop_status l1_apply(rmaop_prox p, int dual, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  if (!p->g) {
    if (dual) return rmaop__sparse_thresh(&p->ws, RMAOP__THR_CLIP, p->sigma, x, out);
    return rmaop__sparse_thresh(&p->ws, RMAOP__THR_SOFT, mul(sc, tau, p->sigma), x, out);
  }
  RMAOP_CHECK(assign(x, out));
  if (dual) {
    RMAOP_CHECK(rmaop_vec_axpy(out, -tau, p->g)); /* x - tau g */
    return rmaop__sparse_thresh(&p->ws, RMAOP__THR_CLIP, p->sigma, out, out);
  }
  RMAOP_CHECK(rmaop_vec_axpy(out, -1.0, p->g));
  RMAOP_CHECK(rmaop__sparse_thresh(&p->ws, RMAOP__THR_SOFT, mul(sc, tau, p->sigma), out, out));
  return rmaop_vec_axpy(out, 1.0, p->g);
}

/* L21: the group scaling (prox: c = tau sigma; dual: sigma). */
static rmaop_status l21_apply(rmaop_prox p, int dual, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  if (dual) return rmaop__sparse_group_scale(&p->ws, RMAOP__GROUP_DUAL, x, out, 0.0, p->sigma);
  return rmaop__sparse_group_scale(&p->ws, RMAOP__GROUP_SHRINK, x, out, mul(sc, tau, p->sigma), p->sigma);
}

/* The inner system's operator for scale s, made again only when s changes. */
static rmaop_status l2_reg(rmaop_prox p, double s) {
  if (p->reg && p->reg_scale == s) return RMAOP_OK;
  rmaop_op_destroy(&p->reg);
  rmaop_op scaled = NULL, AH = NULL, AHA = NULL, sAHA = NULL;
  rmaop_status st;
  if (p->solver == RMAOP_PROX_L2_CGLS) { /* [sqrt(tau sigma) Op; I] */
    st = rmaop_op_create_scaled(p->Op, s, &scaled);
    rmaop_op parts[2] = {scaled, p->ident};
    if (st == RMAOP_OK) st = rmaop_op_create_stacked_vstack(2, parts, &p->reg);
    if (st == RMAOP_OK && !p->breg) st = rmaop_vec_create(p->reg->data, p->reg->dtype, &p->breg);
  } else { /* I + tau sigma Op^H Op */
    st = rmaop_op_create_adjoint(p->Op, &AH);
    if (st == RMAOP_OK) st = rmaop_op_create_product(AH, p->Op, &AHA);
    if (st == RMAOP_OK) st = rmaop_op_create_scaled(AHA, s, &sAHA);
    rmaop_op parts[2] = {p->ident, sAHA};
    if (st == RMAOP_OK) st = rmaop_op_create_sum(2, parts, &p->reg);
  }
  rmaop_op_destroy(&scaled);
  rmaop_op_destroy(&sAHA);
  rmaop_op_destroy(&AHA);
  rmaop_op_destroy(&AH);
  if (st != RMAOP_OK) rmaop_op_destroy(&p->reg);
  p->reg_scale = s;
  return st;
}

/* The L2 proximal with an Op (PyLops-MPI MPIL2.prox): CGLS on [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b;
 * x - tau alpha q] or CG on (I + tau sigma Op^H Op) x = x + tau OpTb - tau alpha q, from x0. */
static rmaop_status l2_solve(rmaop_prox p, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  const double ts = mul(sc, tau, p->sigma), tq = mul(sc, tau, p->alpha);
  rmaop_solver_options so;
  rmaop_solver_options_init(&so);
  so.niter = p->niter, so.tol = p->tol, so.damp = p->damp, so.x0 = p->x0;
  rmaop_solver_info info;
  if (p->solver == RMAOP_PROX_L2_CGLS) {
    const double s = sqrt(ts);
    RMAOP_CHECK(l2_reg(p, s));
    rmaop_vec top = NULL, bot = NULL;
    rmaop_status st = rmaop_vec_stack_part(p->breg, 0, &top);
    if (st == RMAOP_OK) st = rmaop_vec_stack_part(p->breg, 1, &bot);
    if (st == RMAOP_OK) st = rmaop_vec_copy(p->b, top);
    if (st == RMAOP_OK) st = rmaop_vec_scale(top, s);
    if (st == RMAOP_OK) st = rmaop_vec_copy(x, bot);
    if (st == RMAOP_OK && p->q) st = rmaop_vec_axpy(bot, -tq, p->q);
    rmaop_vec_destroy(&top);
    rmaop_vec_destroy(&bot);
    RMAOP_CHECK(st);
    RMAOP_CHECK(rmaop_solve_cgls(p->reg, p->breg, out, &so, &info));
  } else {
    RMAOP_CHECK(l2_reg(p, ts));
    rmaop_vec y = NULL;
    RMAOP_CHECK(rmaop_vec_duplicate(x, &y));
    rmaop_status st = rmaop_vec_copy(x, y);
    if (st == RMAOP_OK) st = rmaop_vec_axpy(y, tau, p->OpTb); /* x + tau OpTb */
    if (st == RMAOP_OK && p->q) st = rmaop_vec_axpy(y, -tq, p->q);
    if (st == RMAOP_OK) st = rmaop_solve_cg(p->reg, y, out, &so, &info);
    rmaop_vec_destroy(&y);
    RMAOP_CHECK(st);
  }
  rmaop_solver_info_destroy(&info);
  return p->warm ? rmaop_vec_copy(out, p->x0) : RMAOP_OK;
}

/* The L2 proximal in closed form: (x + tau sigma b - tau alpha q) / (1 + tau sigma). */
static rmaop_status l2_closed(rmaop_prox p, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  const double ts = mul(sc, tau, p->sigma);
  RMAOP_CHECK(assign(x, out));
  if (p->b) RMAOP_CHECK(rmaop_vec_axpy(out, ts, p->b));
  if (p->q) RMAOP_CHECK(rmaop_vec_axpy(out, -mul(sc, tau, p->alpha), p->q));
  return rmaop_vec_scale(out, damping(sc, ts));
}

static rmaop_status prox_do(rmaop_prox p, int dual, double tau, scalars sc, rmaop_vec x, rmaop_vec out);

/* The L2's conjugate by Moreau (pyproximal's _proxdual_moreau): x - tau prox_{f / tau}(x / tau). */
static rmaop_status l2_dual(rmaop_prox p, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  rmaop_vec v = NULL;
  RMAOP_CHECK(rmaop_vec_duplicate(x, &v));
  const double inv = sc == SCALARS_F32 ? (double)(1.0f / (float)tau) : 1.0 / tau;
  rmaop_status st = rmaop_vec_copy(x, v);
  if (st == RMAOP_OK) st = rmaop_vec_scale(v, 1.0 / tau); /* x / tau */
  if (st == RMAOP_OK) st = prox_do(p, 0, inv, sc, v, v);
  if (st == RMAOP_OK) st = assign(x, out);
  if (st == RMAOP_OK) st = rmaop_vec_axpy(out, -tau, v);
  rmaop_vec_destroy(&v);
  return st;
}

static rmaop_status prox_do(rmaop_prox p, int dual, double tau, scalars sc, rmaop_vec x, rmaop_vec out) {
  switch (p->kind) {
  case PROX_L1: return l1_apply(p, dual, tau, sc, x, out);
  case PROX_L21: return l21_apply(p, dual, tau, sc, x, out);
  case PROX_L2:
    if (dual) return l2_dual(p, tau, sc, x, out);
    return p->Op && p->b ? l2_solve(p, tau, sc, x, out) : l2_closed(p, tau, sc, x, out);
  }
  return RMAOP_OK;
}

/* f(x): this rank's share in part[0] (and, for an L2, the q term's share in part[1]), reduced once. */
static rmaop_status prox_value(rmaop_prox p, rmaop_vec x, double *value) {
  double part[2] = {0, 0}, sum[2];
  rmaop_vec v = x;
  if (p->kind == PROX_L1 && p->g) { /* |x - g| */
    RMAOP_CHECK(rmaop_vec_copy(x, p->tmp));
    RMAOP_CHECK(rmaop_vec_axpy(p->tmp, -1.0, p->g));
    v = p->tmp;
  }
  if (p->kind == PROX_L2 && p->b) { /* Op x - b, or x - b */
    if (p->Op) RMAOP_CHECK(rmaop_op_apply(p->Op, x, p->tmp));
    else RMAOP_CHECK(rmaop_vec_copy(x, p->tmp));
    RMAOP_CHECK(rmaop_vec_axpy(p->tmp, -1.0, p->b));
    v = p->tmp;
  }
  if (p->kind == PROX_L21) RMAOP_CHECK(rmaop__sparse_group_norm(&p->ws, v, &part[0]));
  else RMAOP_CHECK(rmaop__sparse_local_sum(&p->ws, p->kind == PROX_L1 ? RMAOP__SUM_ABS1 : RMAOP__SUM_ABS2, v, NULL,
                                           &part[0]));
  if (p->kind == PROX_L2 && p->q) { /* q^T x = conj(conj(q))^T x: the real part of rmaop's conjugated dot */
    double d[2];
    rmaop_vec qs[1] = {p->qc}, xs[1] = {x};
    RMAOP_CHECK(rmaop__vec_local_dots(1, qs, xs, d));
    part[1] = d[0];
  }
  RMAOP_CHECK(rmaop_allreduce(p->ctx, part, sum, 2, RMAOP_SUM, "prox norm"));
  if (p->kind != PROX_L2) {
    *value = p->sigma * sum[0];
    return RMAOP_OK;
  }
  const double n = sqrt(sum[0]); /* PyLops-MPI: (sigma / 2) * (norm ** 2) */
  *value = p->sigma / 2.0 * (n * n) + (p->q ? p->alpha * sum[1] : 0.0);
  return RMAOP_OK;
}

/* grad f(x) for an L2 (PyLops-MPI MPIL2.grad). */
static rmaop_status prox_gradient(rmaop_prox p, rmaop_vec x, rmaop_vec g) {
  if (p->Op && p->b) {
    RMAOP_CHECK(rmaop_op_apply(p->Op, x, p->tmp));
    RMAOP_CHECK(rmaop_vec_axpy(p->tmp, -1.0, p->b));
    RMAOP_CHECK(rmaop_op_apply_adjoint(p->Op, p->tmp, g));
  } else {
    RMAOP_CHECK(assign(x, g));
    if (p->b) RMAOP_CHECK(rmaop_vec_axpy(g, -1.0, p->b));
  }
  RMAOP_CHECK(rmaop_vec_scale(g, p->sigma));
  if (p->q && p->qgrad) RMAOP_CHECK(rmaop_vec_axpy(g, p->alpha, p->q));
  return RMAOP_OK;
}

/* ==== public applications ========================================================================== */

/* Local checks, agreed on when the call is collective. */
static rmaop_status checked(rmaop_prox p, rmaop_status local, const char *fn) {
  return collective(p) ? rmaop__agree(p->ctx, local, fn) : local;
}

rmaop_status rmaop_prox_apply(rmaop_prox prox, double tau, rmaop_vec x, rmaop_vec out) {
  static const char fn[] = "rmaop_prox_apply";
  RMAOP_REQUIRE(NULL, prox != NULL, RMAOP_ERR_ARG, "%s: prox is NULL", fn);
  RMAOP_CHECK(checked(prox, apply_check(prox, fn, tau, x, out), fn));
  return prox_do(prox, 0, tau, SCALARS_F64, x, out);
}

rmaop_status rmaop_prox_apply_dual(rmaop_prox prox, double tau, rmaop_vec x, rmaop_vec out) {
  static const char fn[] = "rmaop_prox_apply_dual";
  RMAOP_REQUIRE(NULL, prox != NULL, RMAOP_ERR_ARG, "%s: prox is NULL", fn);
  RMAOP_CHECK(checked(prox, apply_check(prox, fn, tau, x, out), fn));
  return prox_do(prox, 1, tau, SCALARS_F64, x, out);
}

rmaop_status rmaop_prox_norm(rmaop_prox prox, rmaop_vec x, double *value) {
  static const char fn[] = "rmaop_prox_norm";
  RMAOP_REQUIRE(NULL, prox != NULL, RMAOP_ERR_ARG, "%s: prox is NULL", fn);
  rmaop_status st = value ? prox_fits(prox, fn, "x", x) : RMAOP_ERROR(prox->ctx, RMAOP_ERR_ARG, "%s: value is NULL", fn);
  RMAOP_CHECK(rmaop__agree(prox->ctx, st, fn));
  return prox_value(prox, x, value);
}

rmaop_status rmaop_prox_grad(rmaop_prox prox, rmaop_vec x, rmaop_vec g) {
  static const char fn[] = "rmaop_prox_grad";
  RMAOP_REQUIRE(NULL, prox != NULL, RMAOP_ERR_ARG, "%s: prox is NULL", fn);
  rmaop_status st = RMAOP_OK;
  if (prox->kind != PROX_L2)
    st = RMAOP_ERROR(prox->ctx, RMAOP_ERR_ARG, "%s: the %s proximal has no gradient (only L2 has)", fn,
                     kind_names[prox->kind]);
  else if ((st = prox_fits(prox, fn, "x", x)) == RMAOP_OK && g == NULL)
    st = RMAOP_ERROR(prox->ctx, RMAOP_ERR_ARG, "%s: g is NULL", fn);
  else if (st == RMAOP_OK)
    st = fits(prox->ctx, fn, "g", g, x->layout, x->dtype);
  RMAOP_CHECK(checked(prox, st, fn));
  return prox_gradient(prox, x, g);
}

/* ==== solvers: shared pieces ======================================================================= */

static rmaop_status no_null(rmaop_ctx ctx, const char *fn, int n, const void *const ptr[], const char *const names[]) {
  for (int i = 0; i < n; ++i) RMAOP_REQUIRE(ctx, ptr[i] != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, names[i]);
  return RMAOP_OK;
}

/* A double's bits, for comparing options between ranks. */
static int64_t bits_of(double v) {
  int64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* The agreed start of a proximal solver: local checks agreed, the options the same everywhere, *info zeroed
 * and, when `record`, a history of niter + 1 entries. */
static rmaop_status prox_start(rmaop_ctx ctx, const char *fn, rmaop_status local, int n, const int64_t v[],
                               const char *const names[], int niter, int record, rmaop_solver_info *info,
                               solve_clock *clk) {
  RMAOP_CHECK(rmaop__agree(ctx, local, fn));
  RMAOP_CHECK(rmaop__same_everywhere(ctx, v, n, names, fn));
  memset(info, 0, sizeof *info);
  info->reason = RMAOP_REASON_NITER;
  rmaop_status st = record ? rmaop__calloc(ctx, (size_t)niter + 1, sizeof(double), "history", (void **)&info->history)
                           : RMAOP_OK;
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  *clk = (solve_clock){ctx, rmaop__wtime(), ctx->comm_time, info};
  return RMAOP_OK;
}

static void prox_finish(solve_clock *clk, rmaop_status st, rmaop_solver_info *info) {
  solver_stop(clk);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
}

/* v = a + w (b - a) for NumPy's a + w * (b - a): the extrapolations of the solvers. */
static rmaop_status extrapolate(rmaop_vec v, rmaop_vec a, rmaop_vec b, double w) {
  RMAOP_CHECK(rmaop_vec_copy(a, v));
  RMAOP_CHECK(rmaop_vec_axpy(v, -1.0, b)); /* a - b */
  RMAOP_CHECK(rmaop_vec_scale(v, w));
  return rmaop_vec_axpy(v, 1.0, a);
}

/* ==== ProximalGradient ============================================================================== */

void rmaop_proxgrad_options_init(rmaop_proxgrad_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
  opts->epsg = 1.0;
  opts->eta = 1.0;
}

static rmaop_status pg_check(const char *fn, rmaop_prox f, rmaop_prox g, rmaop_vec x0, rmaop_vec x,
                             const rmaop_proxgrad_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = f->ctx;
  static const char *const names[] = {"proxg", "x0", "x", "options", "info"};
  const void *const ptr[] = {g, x0, x, o, info};
  RMAOP_CHECK(no_null(ctx, fn, 5, ptr, names));
  RMAOP_REQUIRE(ctx, g->ctx == ctx, RMAOP_ERR_ARG, "%s: proxf and proxg belong to different contexts", fn);
  RMAOP_REQUIRE(ctx, f->kind == PROX_L2, RMAOP_ERR_ARG, "%s: proxf is an %s proximal, which has no gradient (use L2)",
                fn, kind_names[f->kind]);
  RMAOP_REQUIRE(ctx, o->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  RMAOP_REQUIRE(ctx, o->tau > 0 && isfinite(o->tau), RMAOP_ERR_ARG,
                "%s: tau = %g must be positive (PyLops-MPI has no backtracking to find one)", fn, o->tau);
  RMAOP_REQUIRE(ctx, o->eta > 0 && o->eta <= 1, RMAOP_ERR_ARG, "%s: eta = %g is outside (0, 1]", fn, o->eta);
  RMAOP_REQUIRE(ctx, (unsigned)o->acceleration <= RMAOP_ACCEL_FISTA, RMAOP_ERR_ARG,
                "%s: acceleration = %d is unknown (none, vandenberghe, fista)", fn, (int)o->acceleration);
  RMAOP_REQUIRE(ctx, o->tol >= 0 && isfinite(o->tol), RMAOP_ERR_ARG, "%s: tol = %g must be finite and >= 0", fn, o->tol);
  RMAOP_REQUIRE(ctx, isfinite(o->epsg), RMAOP_ERR_ARG, "%s: epsg = %g is not finite", fn, o->epsg);
  for (int k = 0; o->epsg_iter && k < o->niter; ++k)
    RMAOP_REQUIRE(ctx, isfinite(o->epsg_iter[k]), RMAOP_ERR_ARG, "%s: epsg_iter[%d] = %g is not finite", fn, k,
                  o->epsg_iter[k]);
  RMAOP_CHECK(prox_fits(f, fn, "x0", x0));
  RMAOP_CHECK(prox_fits(g, fn, "x0", x0));
  return fits(ctx, fn, "x", x, x0->layout, x0->dtype);
}

/* J = f(x) + e g(x). */
static rmaop_status pg_objective(rmaop_prox f, rmaop_prox g, rmaop_vec x, double e, double *J) {
  double pf, pg;
  RMAOP_CHECK(prox_value(f, x, &pf));
  RMAOP_CHECK(prox_value(g, x, &pg));
  *J = pf + e * pg;
  return RMAOP_OK;
}

typedef struct {
  rmaop_vec xk, xold, y, grad, t;
} pg_vecs;

static rmaop_status pg_run(rmaop_prox f, rmaop_prox g, const rmaop_proxgrad_options *o, pg_vecs *v,
                           rmaop_solver_info *info) {
  const int record = info->history != NULL;
  double tk = 1.0, J = INFINITY; /* PyLops-MPI's pfg starts at inf: the first ratio is 0 */
  if (record) RMAOP_CHECK(pg_objective(f, g, v->xk, o->epsg_iter && o->niter > 0 ? o->epsg_iter[0] : o->epsg,
                                       &info->history[0]));
  for (int k = 0; k < o->niter; ++k) {
    const double e = o->epsg_iter ? o->epsg_iter[k] : o->epsg;
    RMAOP_CHECK(rmaop_vec_copy(v->xk, v->xold));
    rmaop_vec from = o->eta == 1.0 ? v->y : v->xk; /* PyLops-MPI steps from y, or relaxes from x */
    RMAOP_CHECK(prox_gradient(f, from, v->grad));
    RMAOP_CHECK(rmaop_vec_copy(from, v->t));
    RMAOP_CHECK(rmaop_vec_axpy(v->t, -o->tau, v->grad)); /* from - tau grad f(from) */
    if (o->eta == 1.0) {
      RMAOP_CHECK(prox_do(g, 0, e * o->tau, SCALARS_F64, v->t, v->xk));
    } else {
      RMAOP_CHECK(prox_do(g, 0, e * o->tau, SCALARS_F64, v->t, v->t));
      RMAOP_CHECK(rmaop_vec_axpy(v->t, -1.0, v->xk)); /* x + eta (prox - x) */
      RMAOP_CHECK(rmaop_vec_scale(v->t, o->eta));
      RMAOP_CHECK(rmaop_vec_axpy(v->xk, 1.0, v->t));
    }
    double omega = 0.0;
    if (o->acceleration == RMAOP_ACCEL_VANDENBERGHE) {
      omega = (double)k / (double)(k + 3);
    } else if (o->acceleration == RMAOP_ACCEL_FISTA) {
      const double told = tk;
      tk = (1.0 + sqrt(1.0 + 4.0 * (tk * tk))) / 2.0;
      omega = (told - 1.0) / tk;
    }
    RMAOP_CHECK(extrapolate(v->y, v->xk, v->xold, omega)); /* y = x + omega (x - xold) */
    info->iterations = k + 1;
    if (o->callback) RMAOP_CHECK(o->callback(o->user, k + 1, v->xk, NULL));
    if (record) {
      const double Jold = J;
      RMAOP_CHECK(pg_objective(f, g, v->xk, e, &J));
      info->history[k + 1] = J;
      if (o->tol > 0 && fabs(1.0 - J / Jold) < o->tol) {
        info->reason = RMAOP_REASON_TOL;
        break;
      }
    }
  }
  return RMAOP_OK;
}

rmaop_status rmaop_solve_proximal_gradient(rmaop_prox proxf, rmaop_prox proxg, rmaop_vec x0, rmaop_vec x,
                                           const rmaop_proxgrad_options *o, rmaop_solver_info *info) {
  static const char fn[] = "rmaop_solve_proximal_gradient";
  RMAOP_REQUIRE(NULL, proxf != NULL, RMAOP_ERR_ARG, "%s: proxf is NULL", fn);
  rmaop_ctx ctx = proxf->ctx;
  rmaop_status local = pg_check(fn, proxf, proxg, x0, x, o, info);
  static const char *const names[] = {"niter", "tau", "epsg", "eta", "acceleration", "tol", "history", "epsg_iter"};
  const int ok = local == RMAOP_OK;
  const int64_t v[] = {ok ? o->niter : 0,        ok ? bits_of(o->tau) : 0, ok ? bits_of(o->epsg) : 0,
                       ok ? bits_of(o->eta) : 0, ok ? o->acceleration : 0, ok ? bits_of(o->tol) : 0,
                       ok ? o->history : 0,      ok ? o->epsg_iter != NULL : 0};
  solve_clock clk;
  RMAOP_CHECK(prox_start(ctx, fn, local, 8, v, names, ok ? o->niter : 0, ok && (o->history || o->tol > 0), info, &clk));
  pg_vecs w = {NULL, NULL, NULL, NULL, NULL};
  rmaop_status st = rmaop_vec_duplicate(x0, &w.xk);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.xold);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.y);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.grad);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.t);
  if (st == RMAOP_OK) st = rmaop_vec_copy(x0, w.xk);
  if (st == RMAOP_OK) st = rmaop_vec_copy(x0, w.y);
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK) st = pg_run(proxf, proxg, o, &w, info);
  if (st == RMAOP_OK) st = rmaop_vec_copy(w.xk, x);
  rmaop_vec_destroy(&w.xk), rmaop_vec_destroy(&w.xold), rmaop_vec_destroy(&w.y);
  rmaop_vec_destroy(&w.grad), rmaop_vec_destroy(&w.t);
  prox_finish(&clk, st, info);
  return st;
}

/* ==== ADMML2 ======================================================================================== */

void rmaop_admml2_options_init(rmaop_admml2_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
  rmaop_solver_options_init(&opts->inner);
  opts->inner.tol = 1e-4;
}

static rmaop_status admm_check(const char *fn, rmaop_prox g, rmaop_op Op, rmaop_vec b, rmaop_op A, rmaop_vec x0,
                               rmaop_vec x, rmaop_vec z, const rmaop_admml2_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = g->ctx;
  static const char *const names[] = {"Op", "b", "A", "x0", "x", "options", "info"};
  const void *const ptr[] = {Op, b, A, x0, x, o, info};
  RMAOP_CHECK(no_null(ctx, fn, 7, ptr, names));
  RMAOP_REQUIRE(ctx, Op->ctx == ctx && A->ctx == ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context than proxg", fn,
                Op->ctx != ctx ? "Op" : "A");
  RMAOP_REQUIRE(ctx, A->dtype == Op->dtype, RMAOP_ERR_ARG, "%s: A is %s but Op is %s", fn, rmaop_dtype_name(A->dtype),
                rmaop_dtype_name(Op->dtype));
  RMAOP_REQUIRE(ctx, rmaop__layout_same(A->model, Op->model), RMAOP_ERR_ARG, "%s: A's model layout is not Op's", fn);
  RMAOP_REQUIRE(ctx, Op->data->kind != RMAOP_LAYOUT_STACKED && A->data->kind != RMAOP_LAYOUT_STACKED, RMAOP_ERR_ARG,
                "%s: %s's data layout is stacked; the x-update stacks [Op; A / sqrt(tau)] and takes unstacked parts", fn,
                Op->data->kind == RMAOP_LAYOUT_STACKED ? "Op" : "A");
  RMAOP_REQUIRE(ctx, o->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  RMAOP_REQUIRE(ctx, o->tau > 0 && isfinite(o->tau), RMAOP_ERR_ARG, "%s: tau = %g must be positive", fn, o->tau);
  RMAOP_REQUIRE(ctx, o->inner.niter >= 0 && o->inner.tol >= 0 && isfinite(o->inner.tol) && o->inner.damp >= 0 &&
                         isfinite(o->inner.damp),
                RMAOP_ERR_ARG, "%s: inner niter = %d, tol = %g, damp = %g must be >= 0 (and finite)", fn,
                o->inner.niter, o->inner.tol, o->inner.damp);
  RMAOP_CHECK(fits(ctx, fn, "b", b, Op->data, Op->dtype));
  RMAOP_CHECK(fits(ctx, fn, "x0", x0, Op->model, Op->dtype));
  RMAOP_CHECK(fits(ctx, fn, "x", x, Op->model, Op->dtype));
  if (z) RMAOP_CHECK(fits(ctx, fn, "z", z, A->data, A->dtype));
  if (o->z0) RMAOP_CHECK(fits(ctx, fn, "z0", o->z0, A->data, A->dtype));
  return prox_fits_layout(g, fn, "A x (g's argument)", A->data, A->dtype);
}

typedef struct {
  rmaop_op reg, sA;  /* [Op; A / sqrt(tau)] and A / sqrt(tau) */
  rmaop_vec breg, top, bot, xk, xn, z, u, Ax, t;
} admm_vecs;

static void admm_free(admm_vecs *v) {
  rmaop_vec *vs[] = {&v->top, &v->bot, &v->breg, &v->xk, &v->xn, &v->z, &v->u, &v->Ax, &v->t};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; ++i) rmaop_vec_destroy(vs[i]);
  rmaop_op_destroy(&v->reg);
  rmaop_op_destroy(&v->sA);
}

static rmaop_status admm_alloc(rmaop_op Op, rmaop_op A, double sqrttau, admm_vecs *v) {
  RMAOP_CHECK(rmaop_op_create_scaled(A, sqrttau, &v->sA));
  rmaop_op parts[2] = {Op, v->sA};
  RMAOP_CHECK(rmaop_op_create_stacked_vstack(2, parts, &v->reg));
  RMAOP_CHECK(rmaop_vec_create(v->reg->data, Op->dtype, &v->breg));
  RMAOP_CHECK(rmaop_vec_stack_part(v->breg, 0, &v->top));
  RMAOP_CHECK(rmaop_vec_stack_part(v->breg, 1, &v->bot));
  RMAOP_CHECK(rmaop_vec_create(Op->model, Op->dtype, &v->xk));
  RMAOP_CHECK(rmaop_vec_create(Op->model, Op->dtype, &v->xn));
  RMAOP_CHECK(rmaop_vec_create(A->data, A->dtype, &v->z));
  RMAOP_CHECK(rmaop_vec_create(A->data, A->dtype, &v->u));
  RMAOP_CHECK(rmaop_vec_create(A->data, A->dtype, &v->Ax));
  return rmaop_vec_create(A->data, A->dtype, &v->t);
}

/* x = CGLS([Op; A / sqrt(tau)], [b; (z - u) / sqrt(tau)]) from the current x. */
static rmaop_status admm_xupdate(const rmaop_admml2_options *o, double sqrttau, rmaop_vec b, admm_vecs *v) {
  RMAOP_CHECK(rmaop_vec_copy(b, v->top));
  RMAOP_CHECK(rmaop_vec_copy(v->z, v->bot));
  RMAOP_CHECK(rmaop_vec_axpy(v->bot, -1.0, v->u));
  RMAOP_CHECK(rmaop_vec_scale(v->bot, sqrttau));
  rmaop_solver_options so = o->inner;
  so.x0 = v->xk;
  so.callback = NULL;
  rmaop_solver_info inner;
  RMAOP_CHECK(rmaop_solve_cgls(v->reg, v->breg, v->xn, &so, &inner));
  rmaop_solver_info_destroy(&inner);
  return rmaop_vec_copy(v->xn, v->xk);
}

/* z = prox_{tau g}(A x + u) with Ax = A x. */
static rmaop_status admm_zupdate(rmaop_prox g, rmaop_op A, double tau, admm_vecs *v) {
  RMAOP_CHECK(rmaop_op_apply(A, v->xk, v->Ax));
  RMAOP_CHECK(rmaop_vec_copy(v->Ax, v->t));
  RMAOP_CHECK(rmaop_vec_axpy(v->t, 1.0, v->u));
  return prox_do(g, 0, tau, SCALARS_F64, v->t, v->z);
}

/* J = 1/2 ||Op x - b||^2 + g(A x) (PyLops-MPI's log line); Ax holds A x. */
static rmaop_status admm_objective(rmaop_prox g, rmaop_op Op, rmaop_vec b, admm_vecs *v, double *J) {
  rmaop_vec r = NULL;
  double pf, pg;
  RMAOP_CHECK(rmaop_vec_duplicate(b, &r));
  rmaop_status st = rmaop_op_apply(Op, v->xk, r);
  if (st == RMAOP_OK) st = rmaop_vec_axpby(r, -1.0, 1.0, b); /* Op x - b */
  if (st == RMAOP_OK) st = rmaop_vec_norm2(r, &pf);
  rmaop_vec_destroy(&r);
  RMAOP_CHECK(st);
  RMAOP_CHECK(prox_value(g, v->Ax, &pg));
  *J = 0.5 * (pf * pf) + pg;
  return RMAOP_OK;
}

static rmaop_status admm_run(rmaop_prox g, rmaop_op Op, rmaop_vec b, rmaop_op A, const rmaop_admml2_options *o,
                             admm_vecs *v, rmaop_solver_info *info) {
  const double sqrttau = 1.0 / sqrt(o->tau);
  if (info->history) {
    RMAOP_CHECK(rmaop_op_apply(A, v->xk, v->Ax));
    RMAOP_CHECK(admm_objective(g, Op, b, v, &info->history[0]));
  }
  for (int k = 0; k < o->niter; ++k) {
    if (o->gfirst) {
      RMAOP_CHECK(admm_zupdate(g, A, o->tau, v));
      RMAOP_CHECK(admm_xupdate(o, sqrttau, b, v));
    } else {
      RMAOP_CHECK(admm_xupdate(o, sqrttau, b, v));
      RMAOP_CHECK(admm_zupdate(g, A, o->tau, v));
    }
    RMAOP_CHECK(rmaop_vec_axpy(v->u, 1.0, v->Ax)); /* u = u + A x - z */
    RMAOP_CHECK(rmaop_vec_axpy(v->u, -1.0, v->z));
    info->iterations = k + 1;
    if (o->callback) RMAOP_CHECK(o->callback(o->user, k + 1, v->xk, v->z));
    if (info->history) {
      if (o->gfirst) RMAOP_CHECK(rmaop_op_apply(A, v->xk, v->Ax)); /* the log's A x is the new x's */
      RMAOP_CHECK(admm_objective(g, Op, b, v, &info->history[k + 1]));
    }
  }
  return RMAOP_OK;
}

rmaop_status rmaop_solve_admml2(rmaop_prox proxg, rmaop_op Op, rmaop_vec b, rmaop_op A, rmaop_vec x0, rmaop_vec x,
                                rmaop_vec z, const rmaop_admml2_options *o, rmaop_solver_info *info) {
  static const char fn[] = "rmaop_solve_admml2";
  RMAOP_REQUIRE(NULL, proxg != NULL, RMAOP_ERR_ARG, "%s: proxg is NULL", fn);
  rmaop_ctx ctx = proxg->ctx;
  rmaop_status local = admm_check(fn, proxg, Op, b, A, x0, x, z, o, info);
  const int ok = local == RMAOP_OK;
  static const char *const names[] = {"niter", "tau", "gfirst", "history", "z0", "inner.niter", "inner.tol"};
  const int64_t v[] = {ok ? o->niter : 0,   ok ? bits_of(o->tau) : 0, ok ? o->gfirst : 0,           ok ? o->history : 0,
                       ok ? o->z0 != NULL : 0, ok ? o->inner.niter : 0, ok ? bits_of(o->inner.tol) : 0};
  solve_clock clk;
  RMAOP_CHECK(prox_start(ctx, fn, local, 7, v, names, ok ? o->niter : 0, ok && o->history, info, &clk));
  admm_vecs w;
  memset(&w, 0, sizeof w);
  rmaop_status st = rmaop__agree(ctx, admm_alloc(Op, A, 1.0 / sqrt(o->tau), &w), fn);
  if (st == RMAOP_OK) st = rmaop_vec_copy(x0, w.xk);
  if (st == RMAOP_OK) st = o->z0 ? rmaop_vec_copy(o->z0, w.z) : rmaop_op_apply(A, x0, w.z); /* z0, or A x0 */
  if (st == RMAOP_OK) st = admm_run(proxg, Op, b, A, o, &w, info);
  if (st == RMAOP_OK) st = rmaop_vec_copy(w.xk, x);
  if (st == RMAOP_OK && z) st = rmaop_vec_copy(w.z, z);
  admm_free(&w);
  prox_finish(&clk, st, info);
  return st;
}

/* ==== PrimalDual ==================================================================================== */

void rmaop_primaldual_options_init(rmaop_primaldual_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
  opts->theta = 1.0;
  opts->gfirst = 1;
}

static rmaop_status steps_check(rmaop_ctx ctx, const char *fn, const char *name, double s, const double *arr, int n) {
  if (!arr) {
    RMAOP_REQUIRE(ctx, s > 0 && (float)s > 0 && isfinite((float)s), RMAOP_ERR_ARG,
                  "%s: %s = %g must be positive (and a finite float32, as PyLops-MPI stores it)", fn, name, s);
    return RMAOP_OK;
  }
  for (int k = 0; k < n; ++k)
    RMAOP_REQUIRE(ctx, arr[k] > 0 && isfinite(arr[k]), RMAOP_ERR_ARG, "%s: %s_iter[%d] = %g must be positive", fn, name,
                  k, arr[k]);
  return RMAOP_OK;
}

static rmaop_status pd_check(const char *fn, rmaop_prox f, rmaop_prox g, rmaop_op A, rmaop_vec x0, rmaop_vec y0,
                             rmaop_vec x, rmaop_vec y, const rmaop_primaldual_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = f->ctx;
  static const char *const names[] = {"proxg", "A", "x0", "x", "options", "info"};
  const void *const ptr[] = {g, A, x0, x, o, info};
  RMAOP_CHECK(no_null(ctx, fn, 6, ptr, names));
  RMAOP_REQUIRE(ctx, g->ctx == ctx && A->ctx == ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context than proxf", fn,
                g->ctx != ctx ? "proxg" : "A");
  RMAOP_REQUIRE(ctx, o->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  RMAOP_CHECK(steps_check(ctx, fn, "tau", o->tau, o->tau_iter, o->niter));
  RMAOP_CHECK(steps_check(ctx, fn, "mu", o->mu, o->mu_iter, o->niter));
  RMAOP_REQUIRE(ctx, o->theta >= 0 && o->theta <= 1, RMAOP_ERR_ARG, "%s: theta = %g is outside [0, 1]", fn, o->theta);
  RMAOP_CHECK(fits(ctx, fn, "x0", x0, A->model, A->dtype));
  RMAOP_CHECK(fits(ctx, fn, "x", x, A->model, A->dtype));
  if (y0) RMAOP_CHECK(fits(ctx, fn, "y0", y0, A->data, A->dtype));
  if (y) RMAOP_CHECK(fits(ctx, fn, "y", y, A->data, A->dtype));
  if (o->z) RMAOP_CHECK(fits(ctx, fn, "z", o->z, A->model, A->dtype));
  RMAOP_CHECK(prox_fits(f, fn, "x0", x0));
  return prox_fits_layout(g, fn, "A x (g's argument)", A->data, A->dtype);
}

typedef struct {
  rmaop_vec xk, xold, xhat, yk, w, ATy, t;
} pd_vecs;

/* J = f(x) + g(A x) + Re z^T x (PyLops-MPI's log line). */
static rmaop_status pd_objective(rmaop_prox f, rmaop_prox g, rmaop_op A, const rmaop_primaldual_options *o,
                                 pd_vecs *v, double *J) {
  double pf, pg, zx = 0.0;
  RMAOP_CHECK(prox_value(f, v->xk, &pf));
  RMAOP_CHECK(rmaop_op_apply(A, v->xk, v->w));
  RMAOP_CHECK(prox_value(g, v->w, &pg));
  if (o->z) { /* z^T x = conj(conj(z))^T x */
    RMAOP_CHECK(rmaop_vec_copy(o->z, v->t));
    RMAOP_CHECK(rmaop__sparse_conj(&f->ws, v->t));
    double _Complex d;
    RMAOP_CHECK(rmaop_vec_dot(v->t, v->xk, &d));
    zx = creal(d);
  }
  *J = pf + pg + zx;
  return RMAOP_OK;
}

/* y = prox_{mu g*}(y + mu A xhat). */
static rmaop_status pd_dual(rmaop_prox g, rmaop_op A, double mu, scalars sc, pd_vecs *v) {
  RMAOP_CHECK(rmaop_op_apply(A, v->xhat, v->w));
  RMAOP_CHECK(rmaop_vec_scale(v->w, mu));
  RMAOP_CHECK(rmaop_vec_axpy(v->w, 1.0, v->yk));
  return prox_do(g, 1, mu, sc, v->w, v->yk);
}

/* x = prox_{tau f}(x - tau (A^H y + z)), xhat = x + theta (x - xold). */
static rmaop_status pd_primal(rmaop_prox f, rmaop_op A, const rmaop_primaldual_options *o, double tau, scalars sc,
                              pd_vecs *v) {
  RMAOP_CHECK(rmaop_op_apply_adjoint(A, v->yk, v->ATy));
  if (o->z) RMAOP_CHECK(rmaop_vec_axpy(v->ATy, 1.0, o->z));
  RMAOP_CHECK(rmaop_vec_copy(v->xk, v->t));
  RMAOP_CHECK(rmaop_vec_axpy(v->t, -tau, v->ATy));
  RMAOP_CHECK(prox_do(f, 0, tau, sc, v->t, v->xk));
  return extrapolate(v->xhat, v->xk, v->xold, o->theta);
}

static rmaop_status pd_run(rmaop_prox f, rmaop_prox g, rmaop_op A, const rmaop_primaldual_options *o, pd_vecs *v,
                           rmaop_solver_info *info) {
  /* Scalar steps are PyLops-MPI's float32 arrays (tau * ones(niter, float32)); arrays are used as given. */
  const scalars sc_tau = o->tau_iter ? SCALARS_F64 : SCALARS_F32, sc_mu = o->mu_iter ? SCALARS_F64 : SCALARS_F32;
  if (info->history) RMAOP_CHECK(pd_objective(f, g, A, o, v, &info->history[0]));
  for (int k = 0; k < o->niter; ++k) {
    const double tau = o->tau_iter ? o->tau_iter[k] : (double)(float)o->tau;
    const double mu = o->mu_iter ? o->mu_iter[k] : (double)(float)o->mu;
    RMAOP_CHECK(rmaop_vec_copy(v->xk, v->xold));
    if (o->gfirst) {
      RMAOP_CHECK(pd_dual(g, A, mu, sc_mu, v));
      RMAOP_CHECK(pd_primal(f, A, o, tau, sc_tau, v));
    } else {
      RMAOP_CHECK(pd_primal(f, A, o, tau, sc_tau, v));
      RMAOP_CHECK(pd_dual(g, A, mu, sc_mu, v));
    }
    info->iterations = k + 1;
    if (o->callback) RMAOP_CHECK(o->callback(o->user, k + 1, v->xk, v->yk));
    if (info->history) RMAOP_CHECK(pd_objective(f, g, A, o, v, &info->history[k + 1]));
  }
  return RMAOP_OK;
}

rmaop_status rmaop_solve_primal_dual(rmaop_prox proxf, rmaop_prox proxg, rmaop_op A, rmaop_vec x0, rmaop_vec y0,
                                     rmaop_vec x, rmaop_vec y, const rmaop_primaldual_options *o,
                                     rmaop_solver_info *info) {
  static const char fn[] = "rmaop_solve_primal_dual";
  RMAOP_REQUIRE(NULL, proxf != NULL, RMAOP_ERR_ARG, "%s: proxf is NULL", fn);
  rmaop_ctx ctx = proxf->ctx;
  rmaop_status local = pd_check(fn, proxf, proxg, A, x0, y0, x, y, o, info);
  const int ok = local == RMAOP_OK;
  static const char *const names[] = {"niter", "tau", "mu", "theta", "gfirst", "history", "z", "tau_iter", "mu_iter"};
  const int64_t v[] = {ok ? o->niter : 0,          ok ? bits_of(o->tau) : 0,    ok ? bits_of(o->mu) : 0,
                       ok ? bits_of(o->theta) : 0, ok ? o->gfirst : 0,          ok ? o->history : 0,
                       ok ? o->z != NULL : 0,      ok ? o->tau_iter != NULL : 0, ok ? o->mu_iter != NULL : 0};
  solve_clock clk;
  RMAOP_CHECK(prox_start(ctx, fn, local, 9, v, names, ok ? o->niter : 0, ok && o->history, info, &clk));
  pd_vecs w = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  rmaop_status st = rmaop_vec_duplicate(x0, &w.xk);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.xold);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.xhat);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.ATy);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x0, &w.t);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->data, A->dtype, &w.yk);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->data, A->dtype, &w.w);
  if (st == RMAOP_OK) st = rmaop_vec_copy(x0, w.xk);
  if (st == RMAOP_OK) st = rmaop_vec_copy(x0, w.xhat);
  if (st == RMAOP_OK && y0) st = rmaop_vec_copy(y0, w.yk);
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK) st = pd_run(proxf, proxg, A, o, &w, info);
  if (st == RMAOP_OK) st = rmaop_vec_copy(w.xk, x);
  if (st == RMAOP_OK && y) st = rmaop_vec_copy(w.yk, y);
  rmaop_vec *vs[] = {&w.xk, &w.xold, &w.xhat, &w.yk, &w.w, &w.ATy, &w.t};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; ++i) rmaop_vec_destroy(vs[i]);
  prox_finish(&clk, st, info);
  return st;
}
