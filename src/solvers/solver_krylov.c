/* LSQR (Paige & Saunders 1982, with PyLops' recurrences, pylops.optimization.cls_basic.LSQR) and pipelined CG
 * (Ghysels & Vanroose 2014, "Hiding global synchronization latency in the preconditioned Conjugate Gradient
 * algorithm", Alg. 4 without preconditioner). Like src/solvers/solver.c they use only rmaop_vec_* and rmaop_op_* calls
 * (so every backend and memory kind works the same) and keep the scalars on the host; with RMAOP_SOLVER_SCALARS=device
 * or graph a device context runs their iterations in src/solvers/solver_device.c (LSQR's scalar recurrences:
 * src/solvers/lsqr_scalars.h, shared with the device). */
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

/* ==== LSQR ==================================================================================== */

/* PyLops' defaults for 0, "off" for a negative value. */
static double tol_or_default(double v, double deflt) { return v == 0.0 ? deflt : v < 0.0 ? 0.0 : v; }

rmaop_reason rmaop__lsqr_reason(int istop) {
  return istop == 0 ? RMAOP_REASON_NITER : istop == 3 || istop == 6 ? RMAOP_REASON_CONLIM : RMAOP_REASON_TOL;
}

/* Bidiagonalization step (Golub-Kahan): u = (A v - alfa u) / beta, v = (A^H u - beta v) / alfa; the norms of u
 * and of the previous w travel in one reduction (w is needed for ddnorm, and known already). */
static rmaop_status lsqr_bidiag(rmaop_op A, lsqr_state *S, rmaop_vec u, rmaop_vec v, rmaop_vec w, rmaop_vec Av,
                                rmaop_vec AHu, double *wnorm2) {
  RMAOP_CHECK(rmaop_op_apply(A, v, Av));
  RMAOP_CHECK(rmaop_vec_axpby(u, 1.0, -S->alfa, Av));
  double _Complex d[2];
  rmaop_vec dx[2] = {u, w};
  RMAOP_CHECK(rmaop_vec_mdot(2, dx, dx, d));
  *wnorm2 = creal(d[1]);
  if (!lsqr_set_beta(S, creal(d[0])))
    return RMAOP_OK;
  RMAOP_CHECK(rmaop_vec_scale(u, 1.0 / S->beta));
  RMAOP_CHECK(rmaop_op_apply_adjoint(A, u, AHu));
  RMAOP_CHECK(rmaop_vec_axpby(v, 1.0, -S->beta, AHu));
  RMAOP_CHECK(rmaop_vec_norm2(v, &S->alfa));
  return S->alfa > 0.0 ? rmaop_vec_scale(v, 1.0 / S->alfa) : RMAOP_OK;
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
    RMAOP_CHECK(rmaop_vec_axpy(x, k.t1, L->w));
    RMAOP_CHECK(rmaop_vec_axpby(L->w, 1.0, k.t2, L->v)); /* w = v + t2 w */
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
  if (S.arnorm0 != 0.0 && o->niter > 0) { /* RMAOP_SOLVER_SCALARS=device or graph: src/solvers/solver_device.c */
    const lsqr_vecs L = {u, v, w, Av, AHu};
    st = solver_device_scalars(A, x, y) ? rmaop__solve_lsqr_device(A, x, &L, &S, o, info)
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
 * matvec. The reduction is always completed, even when the matvec fails, so no rank is left in it. */
static rmaop_status pipecg_sync(rmaop_op A, const pipecg_vecs *V, int matvec, double *gamma, double *delta) {
  double _Complex d[2];
  rmaop_vec dx[2] = {V->r, V->w}, dy[2] = {V->r, V->r};
  rmaop_request req = NULL;
  RMAOP_CHECK(rmaop_vec_mdot_begin(2, dx, dy, d, &req));
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

static rmaop_status pipecg_start(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                 const pipecg_vecs *V) {
  RMAOP_CHECK(initial_residual(A, y, x, o, V->r));
  return rmaop_op_apply(A, V->r, V->w);
}

/* The loop: reduction k gives ||r_k|| (history[k], the callback of iteration k) and, unless it stops there,
 * the step to x_{k+1}. */
static rmaop_status pipecg_loop(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                rmaop_solver_info *info, const pipecg_vecs *V) {
  double gamma_old = 0.0, alpha_old = 0.0;
  info->reason = RMAOP_REASON_NITER;
  for (int k = 0;; ++k) {
    double gamma = 0.0, delta = 0.0;
    RMAOP_CHECK(pipecg_sync(A, V, k < o->niter, &gamma, &delta));
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
    RMAOP_CHECK(pipecg_update(x, V, alpha, beta));
    if (o->residual_replacement > 0 && (k + 1) % o->residual_replacement == 0)
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
  if (st == RMAOP_OK) /* RMAOP_SOLVER_SCALARS=device or graph on device memory: src/solvers/solver_device.c */
    st = solver_device_scalars(A, x, y) ? rmaop__solve_pipecg_device(A, y, x, &V, o, info)
                                        : pipecg_loop(A, y, x, o, info, &V);
  solver_stop(&clk);
  for (int i = 0; i < 6; ++i) rmaop_vec_destroy(all[i]);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}
