/* LSQR (Paige & Saunders 1982, with PyLops' recurrences, pylops.optimization.cls_basic.LSQR) and pipelined CG
 * (Ghysels & Vanroose 2014, "Hiding global synchronization latency in the preconditioned Conjugate Gradient
 * algorithm", Alg. 4 without preconditioner). Like src/solvers/solver.c they use only rmaop_vec_* and rmaop_op_* calls
 * (so every backend and memory kind works the same) and keep the scalars on the host; with RMAOP_SOLVER_SCALARS=device
 * or graph a device context runs their iterations in src/solvers/solver_device.c (LSQR's scalar recurrences:
 * src/solvers/lsqr_scalars.h, shared with the device). */
#include "core/dtype.h"
#include "solver_impl.h"

/* The options only these solvers read (solver_start checks them with the shared ones). */
static rmaop_status check_extra(const char *fn, rmaop_ctx ctx, const rmaop_solver_options *o) {
  if (isnan(o->atol) || isnan(o->btol) || isnan(o->conlim))
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: atol = %g, btol = %g, conlim = %g must not be NaN", fn, o->atol,
                       o->btol, o->conlim);
  if (o->residual_replacement < 0)
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: residual_replacement = %d is negative", fn, o->residual_replacement);
  return RMAOP_OK;
}

/* ==== fused host passes ========================================================================
 * On host memory with vectors scattered over the ranks, the vector updates and the dots that follow them share
 * passes over blocks that stay in L1: each block is updated, then its dots are added to the host dots' own lanes
 * (rmaop__host_dot_lanes), so the reduced values are rmaop_vec_mdot's and rmaop_vec_norm2's bit for bit, and the
 * element expressions are rmaop_vec_axpby's and rmaop_vec_axpy's with their scalars converted as those calls
 * convert them. The element loops are functions of their own per element type, with restrict pointers: GCC
 * vectorizes them only so (several pointers are too many for its run-time alias checks). */

static int host_fusable(rmaop_vec x) {
  return !RMAOP__ON_DEVICE(x->ctx) && x->layout->kind == RMAOP_LAYOUT_SCATTER;
}

enum { FUSE_BLOCK = 1024 }; /* a multiple of RMAOP__DOT_LANES */

/* y = a x + b y, rmaop_vec_axpby's expression. */
#define FUSE_AXPBY(NAME, T)                                                                                            \
  static void NAME(T *restrict y, const T *restrict x, int64_t n, T a, T b) {                                          \
    for (int64_t i = 0; i < n; ++i)                                                                                    \
      y[i] = a * x[i] + b * y[i];                                                                                      \
  }
FUSE_AXPBY(axpby_f32, float)
FUSE_AXPBY(axpby_f64, double)
FUSE_AXPBY(axpby_c64, float _Complex)
FUSE_AXPBY(axpby_c128, double _Complex)

/* y = a x + b y (a = 1 here), block by block, and the lanes of y.y and, when z is given, z.z: parts[0..1] and
 * [2..3] (real, imaginary). */
static void axpby_dots(rmaop_vec y, rmaop_vec x, double b, rmaop_vec z, double parts[4]) {
  double re[2][RMAOP__DOT_LANES] = {{0}}, im[2][RMAOP__DOT_LANES] = {{0}};
  const int64_t n = y->local_n;
  RMAOP__FOR_DTYPE(y->dtype, {
    T *Y = y->data;
    const T *X = x->data, *Zv = z ? z->data : NULL;
    for (int64_t i0 = 0; i0 < n; i0 += FUSE_BLOCK) {
      const int64_t len = n - i0 < FUSE_BLOCK ? n - i0 : FUSE_BLOCK;
      _Generic((T)0, float
               : axpby_f32, double
               : axpby_f64, float _Complex
               : axpby_c64, double _Complex
               : axpby_c128)(Y + i0, X + i0, len, (T)1.0, (T)b);
      rmaop__host_dot_lanes(y->dtype, Y + i0, Y + i0, len, re[0], im[0]);
      if (Zv)
        rmaop__host_dot_lanes(y->dtype, Zv + i0, Zv + i0, len, re[1], im[1]);
    }
  });
  rmaop__host_dot_sum(re[0], im[0], parts);
  rmaop__host_dot_sum(re[1], im[1], parts + 2);
}

/* ==== LSQR ==================================================================================== */

/* PyLops' defaults for 0, "off" for a negative value. */
static double tol_or_default(double v, double deflt) { return v == 0.0 ? deflt : v < 0.0 ? 0.0 : v; }

rmaop_reason rmaop__lsqr_reason(int istop) {
  return istop == 0 ? RMAOP_REASON_NITER : istop == 3 || istop == 6 ? RMAOP_REASON_CONLIM : RMAOP_REASON_TOL;
}

/* Bidiagonalization step (Golub-Kahan): u = (A v - alfa u) / beta, v = (A^H u - beta v) / alfa; the norms of u
 * and of the previous w travel in one reduction (w is needed for ddnorm, and known already). On scattered host
 * vectors the two updates take their norms in the same pass (axpby_dots). */
static rmaop_status lsqr_bidiag(rmaop_op A, lsqr_state *S, rmaop_vec u, rmaop_vec v, rmaop_vec w, rmaop_vec Av,
                                rmaop_vec AHu, double *wnorm2) {
  const int fuse = host_fusable(u) && host_fusable(v);
  double parts[4];
  RMAOP_CHECK(rmaop_op_apply(A, v, Av));
  double _Complex d[2];
  rmaop_vec dx[2] = {u, w};
  if (fuse) {
    axpby_dots(u, Av, -S->alfa, w, parts);
    RMAOP_CHECK(rmaop__vec_mdot_parts(A->ctx, 2, parts, d));
  } else {
    RMAOP_CHECK(rmaop_vec_axpby(u, 1.0, -S->alfa, Av));
    RMAOP_CHECK(rmaop_vec_mdot(2, dx, dx, d));
  }
  *wnorm2 = creal(d[1]);
  if (!lsqr_set_beta(S, creal(d[0])))
    return RMAOP_OK;
  RMAOP_CHECK(rmaop_vec_scale(u, 1.0 / S->beta));
  RMAOP_CHECK(rmaop_op_apply_adjoint(A, u, AHu));
  if (fuse) {
    axpby_dots(v, AHu, -S->beta, NULL, parts);
    RMAOP_CHECK(rmaop__vec_norm2_part(A->ctx, parts[0], &S->alfa));
  } else {
    RMAOP_CHECK(rmaop_vec_axpby(v, 1.0, -S->beta, AHu));
    RMAOP_CHECK(rmaop_vec_norm2(v, &S->alfa));
  }
  return S->alfa > 0.0 ? rmaop_vec_scale(v, 1.0 / S->alfa) : RMAOP_OK;
}

/* x += t1 w; w = v + t2 w (rmaop_vec_axpy's and rmaop_vec_axpby's expressions), in one pass. */
#define LSQR_XW(NAME, T)                                                                                               \
  static void NAME(T *restrict X, T *restrict W, const T *restrict V, int64_t n, T t1, T one, T t2) {                  \
    for (int64_t i = 0; i < n; ++i) {                                                                                  \
      X[i] += t1 * W[i];                                                                                               \
      W[i] = one * V[i] + t2 * W[i];                                                                                   \
    }                                                                                                                  \
  }
LSQR_XW(lsqr_xw_f32, float)
LSQR_XW(lsqr_xw_f64, double)
LSQR_XW(lsqr_xw_c64, float _Complex)
LSQR_XW(lsqr_xw_c128, double _Complex)

static rmaop_status lsqr_update(rmaop_vec x, rmaop_vec w, rmaop_vec v, double t1, double t2) {
  if (!host_fusable(x)) {
    RMAOP_CHECK(rmaop_vec_axpy(x, t1, w));
    return rmaop_vec_axpby(w, 1.0, t2, v); /* w = v + t2 w */
  }
  RMAOP__FOR_DTYPE(x->dtype, {
    _Generic((T)0, float
             : lsqr_xw_f32, double
             : lsqr_xw_f64, float _Complex
             : lsqr_xw_c64, double _Complex
             : lsqr_xw_c128)(x->data, w->data, v->data, x->local_n, (T)t1, (T)1.0, (T)t2);
  });
  return RMAOP_OK;
}

/* The iterations, once the start is made. */
static rmaop_status lsqr_loop(rmaop_op A, rmaop_vec x, const lsqr_vecs *L, lsqr_state *S, const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  while (info->iterations < o->niter) {
    double wnorm2 = 0.0;
    RMAOP_CHECK(lsqr_bidiag(A, S, L->u, L->v, L->w, L->Av, L->AHu, &wnorm2));
    const lsqr_step k = lsqr_scalars(S, wnorm2);
    if (k.breakdown) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    RMAOP_CHECK(lsqr_update(x, L->w, L->v, k.t1, k.t2));
    RMAOP_CHECK(after_iteration(o, info, k.r1norm, x));
    if (k.istop != 0) {
      info->reason = rmaop__lsqr_reason(k.istop);
      break;
    }
  }
  return RMAOP_OK;
}

/* beta u = y - A x0, alfa v = A^H u, w = v (PyLops LSQR.setup). */
static rmaop_status lsqr_setup(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o, lsqr_state *S,
                               rmaop_vec u, rmaop_vec v, rmaop_vec w) {
  RMAOP_CHECK(initial_residual(A, y, x, o, u));
  RMAOP_CHECK(rmaop_vec_norm2(u, &S->beta));
  S->alfa = 0.0;
  if (S->beta > 0.0) {
    RMAOP_CHECK(rmaop_vec_scale(u, 1.0 / S->beta));
    RMAOP_CHECK(rmaop_op_apply_adjoint(A, u, v));
    RMAOP_CHECK(rmaop_vec_norm2(v, &S->alfa));
    if (S->alfa > 0.0) {
      RMAOP_CHECK(rmaop_vec_scale(v, 1.0 / S->alfa));
      RMAOP_CHECK(rmaop_vec_copy(v, w));
    }
  }
  S->arnorm0 = S->alfa * S->beta;
  S->rhobar = S->alfa;
  S->phibar = S->bnorm = S->rnorm = S->beta;
  return RMAOP_OK;
}

static lsqr_state lsqr_init_state(const rmaop_solver_options *o) {
  lsqr_state S;
  memset(&S, 0, sizeof S);
  S.damp = o->damp;
  S.dampsq = o->damp * o->damp;
  S.atol = tol_or_default(o->atol, 1e-8);
  S.btol = tol_or_default(o->btol, 1e-8);
  const double conlim = tol_or_default(o->conlim, 1e8);
  S.ctol = conlim > 0.0 ? 1.0 / conlim : 0.0;
  S.cs2 = -1.0;
  return S;
}

rmaop_status rmaop_solve_lsqr(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_lsqr", A, y, x, o, info, &clk, check_extra));
  lsqr_state S = lsqr_init_state(o);
  rmaop_vec u = NULL, Av = NULL, v = NULL, w = NULL, AHu = NULL;
  rmaop_status st = rmaop__vec_work(y, &u);
  if (st == RMAOP_OK) st = rmaop__vec_work(y, &Av);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &v);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &w);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &AHu);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(lsqr_setup(A, y, x, o, &S, u, v, w), st, out);
  info->history[0] = S.beta;
  /* A^H (y - A x0) = 0: x0 is the answer (PyLops stops here too; scipy's istop = 0). */
  info->reason = S.arnorm0 == 0.0 ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  int whole = 0; /* auto: one graph for the solve where that is faster */
  if (S.arnorm0 != 0.0 && o->niter > 0)
    st = rmaop__solver_auto_while(A, x, y, o, &whole);
  if (st == RMAOP_OK && S.arnorm0 != 0.0 && o->niter > 0) { /* device scalars: src/solvers/solver_device.c */
    const lsqr_vecs L = {u, v, w, Av, AHu};
    st = whole || solver_device_scalars(A, x, y) ? rmaop__solve_lsqr_device(A, x, &L, &S, o, info)
                                                 : lsqr_loop(A, x, &L, &S, o, info);
  }
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&u);
  rmaop_vec_destroy(&Av);
  rmaop_vec_destroy(&v);
  rmaop_vec_destroy(&w);
  rmaop_vec_destroy(&AHu);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}

/* ==== pipelined CG ============================================================================ */

/* The one synchronization point of an iteration: {r.r, w.r} reduced while q = A w is computed (skipped when
 * `matvec` is 0). On the rma backend the begin opens the reduction's epoch and puts the partials, the
 * operator's plans run on their own windows, and the wait closes the epoch: the latency is hidden behind the
 * matvec. `parts`: this rank's partials, made by the fused update (NULL: the dots are taken here). The reduction
 * is always completed, even when the matvec fails, so no rank is left in it. */
static rmaop_status pipecg_sync(rmaop_op A, const pipecg_vecs *V, int matvec, const double *parts, double *gamma,
                                double *delta) {
  double _Complex d[2];
  rmaop_vec dx[2] = {V->r, V->w}, dy[2] = {V->r, V->r};
  rmaop_request req = NULL;
  RMAOP_CHECK(parts ? rmaop__vec_mdot_parts_begin(A->ctx, 2, parts, d, &req)
                    : rmaop_vec_mdot_begin(2, dx, dy, d, &req));
  rmaop_status st = matvec ? rmaop_op_apply_begin(A, V->w, V->q) : RMAOP_OK;
  if (matvec && st == RMAOP_OK) st = rmaop_op_apply_end(A);
  const rmaop_status sw = rmaop_request_wait(&req);
  RMAOP_CHECK(st);
  RMAOP_CHECK(sw);
  *gamma = creal(d[0]);
  *delta = creal(d[1]);
  return RMAOP_OK;
}

/* r = y - A x, w = A r, s = A p, z = A s from their definitions (the recurrences only update them). */
rmaop_status rmaop__pipecg_replace(rmaop_op A, rmaop_vec y, rmaop_vec x, const pipecg_vecs *V) {
  RMAOP_CHECK(rmaop_op_apply(A, x, V->r));
  RMAOP_CHECK(rmaop_vec_axpby(V->r, 1.0, -1.0, y));
  RMAOP_CHECK(rmaop_op_apply(A, V->r, V->w));
  RMAOP_CHECK(rmaop_op_apply(A, V->p, V->s));
  return rmaop_op_apply(A, V->s, V->z);
}

/* Alg. 4's vector updates (z, s, p start at zero, so iteration 0 needs no special case). */
static rmaop_status pipecg_update(rmaop_vec x, const pipecg_vecs *V, double alpha, double beta) {
  RMAOP_CHECK(rmaop_vec_axpby(V->z, 1.0, beta, V->q)); /* z = q + beta z */
  RMAOP_CHECK(rmaop_vec_axpby(V->s, 1.0, beta, V->w)); /* s = w + beta s */
  RMAOP_CHECK(rmaop_vec_axpby(V->p, 1.0, beta, V->r)); /* p = r + beta p */
  RMAOP_CHECK(rmaop_vec_axpy(x, alpha, V->p));
  RMAOP_CHECK(rmaop_vec_axpy(V->r, -alpha, V->s));
  return rmaop_vec_axpy(V->w, -alpha, V->z);
}

/* The same updates in one pass over blocks that stay in L1, each block's new r and w then giving the next
 * reduction's partials {r.r, w.r} in the host dots' lanes (rmaop__host_dot_lanes): the expressions of
 * rmaop_vec_axpby and rmaop_vec_axpy with their scalars (one = 1, b = beta, a = alpha, ma = -alpha, as those
 * calls convert them), the sums of rmaop_vec_mdot, so x and the history are the separate calls' bit for bit,
 * from 13 vector streams instead of 18 and the dots' 2. One function per element type, with restrict pointers:
 * GCC vectorizes the loop only so (seven pointers are too many for its run-time alias checks). */
#define PIPECG_UPDATE(NAME, T)                                                                                         \
  static void NAME(T *restrict X, T *restrict R, T *restrict W, T *restrict Z, T *restrict S, T *restrict P,           \
                   const T *restrict Q, int64_t n, T one, T b, T a, T ma) {                                            \
    for (int64_t i = 0; i < n; ++i) {                                                                                  \
      const T z = one * Q[i] + b * Z[i], s = one * W[i] + b * S[i], p = one * R[i] + b * P[i];                         \
      Z[i] = z, S[i] = s, P[i] = p;                                                                                    \
      X[i] += a * p;                                                                                                   \
      R[i] += ma * s;                                                                                                  \
      W[i] += ma * z;                                                                                                  \
    }                                                                                                                  \
  }
PIPECG_UPDATE(pipecg_update_f32, float)
PIPECG_UPDATE(pipecg_update_f64, double)
PIPECG_UPDATE(pipecg_update_c64, float _Complex)
PIPECG_UPDATE(pipecg_update_c128, double _Complex)

static void pipecg_update_fused(rmaop_vec x, const pipecg_vecs *V, double alpha, double beta, double parts[4]) {
  double re[2][RMAOP__DOT_LANES] = {{0}}, im[2][RMAOP__DOT_LANES] = {{0}};
  const int64_t n = x->local_n;
  RMAOP__FOR_DTYPE(x->dtype, {
    T *X = x->data, *Rv = V->r->data, *W = V->w->data, *Z = V->z->data, *S = V->s->data, *P = V->p->data;
    const T *Q = V->q->data;
    for (int64_t i0 = 0; i0 < n; i0 += FUSE_BLOCK) {
      const int64_t len = n - i0 < FUSE_BLOCK ? n - i0 : FUSE_BLOCK;
      _Generic((T)0, float
               : pipecg_update_f32, double
               : pipecg_update_f64, float _Complex
               : pipecg_update_c64, double _Complex
               : pipecg_update_c128)(X + i0, Rv + i0, W + i0, Z + i0, S + i0, P + i0, Q + i0, len, (T)1.0, (T)beta,
                                     (T)alpha, (T)(-alpha));
      rmaop__host_dot_lanes(x->dtype, Rv + i0, Rv + i0, len, re[0], im[0]);
      rmaop__host_dot_lanes(x->dtype, W + i0, Rv + i0, len, re[1], im[1]);
    }
  });
  rmaop__host_dot_sum(re[0], im[0], parts);
  rmaop__host_dot_sum(re[1], im[1], parts + 2);
}

static rmaop_status pipecg_start(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                 const pipecg_vecs *V) {
  RMAOP_CHECK(initial_residual(A, y, x, o, V->r));
  return rmaop_op_apply(A, V->r, V->w);
}

/* The loop: reduction k gives ||r_k|| (history[k], the callback of iteration k) and, unless it stops there,
 * the step to x_{k+1}. */
static rmaop_status pipecg_loop(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                rmaop_solver_info *info, const pipecg_vecs *V) {
  double gamma_old = 0.0, alpha_old = 0.0, parts[4];
  const int fuse = host_fusable(x);
  int have_parts = 0; /* parts holds the local dots of the current r and w */
  info->reason = RMAOP_REASON_NITER;
  for (int k = 0;; ++k) {
    double gamma = 0.0, delta = 0.0;
    RMAOP_CHECK(pipecg_sync(A, V, k < o->niter, have_parts ? parts : NULL, &gamma, &delta));
    if (k == 0) info->history[0] = sqrt(gamma);
    else RMAOP_CHECK(after_iteration(o, info, sqrt(gamma), x));
    if (gamma <= o->tol) {
      info->reason = RMAOP_REASON_TOL;
      return RMAOP_OK;
    }
    if (k == o->niter) return RMAOP_OK;
    const double beta = k == 0 ? 0.0 : gamma / gamma_old;
    const double den = k == 0 ? delta : delta - beta * gamma / alpha_old;
    if (den == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      return RMAOP_OK;
    }
    const double alpha = gamma / den;
    const int replace = o->residual_replacement > 0 && (k + 1) % o->residual_replacement == 0;
    have_parts = fuse && !replace; /* a replacement remakes r and w: their dots are taken at the sync */
    if (fuse)
      pipecg_update_fused(x, V, alpha, beta, parts);
    else
      RMAOP_CHECK(pipecg_update(x, V, alpha, beta));
    if (replace)
      RMAOP_CHECK(rmaop__pipecg_replace(A, y, x, V));
    gamma_old = gamma;
    alpha_old = alpha;
  }
}

rmaop_status rmaop_solve_pipecg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_pipecg", A, y, x, o, info, &clk, check_extra));
  pipecg_vecs V = {NULL, NULL, NULL, NULL, NULL, NULL};
  rmaop_vec *all[6] = {&V.r, &V.w, &V.q, &V.z, &V.s, &V.p};
  rmaop_status st = RMAOP_OK;
  for (int i = 0; i < 6 && st == RMAOP_OK; ++i) st = rmaop__vec_work(x, all[i]); /* zero */
  if (st == RMAOP_OK) st = pipecg_start(A, y, x, o, &V);
  int whole = 0; /* auto: one graph for the solve where that is faster (not with residual replacement) */
  if (st == RMAOP_OK && o->residual_replacement == 0)
    st = rmaop__solver_auto_while(A, x, y, o, &whole);
  if (st == RMAOP_OK) /* device scalars on device memory: src/solvers/solver_device.c */
    st = whole || solver_device_scalars(A, x, y) ? rmaop__solve_pipecg_device(A, y, x, &V, o, info)
                                                 : pipecg_loop(A, y, x, o, info, &V);
  solver_stop(&clk);
  for (int i = 0; i < 6; ++i) rmaop_vec_destroy(all[i]);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}
