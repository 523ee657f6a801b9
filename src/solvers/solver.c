/* Krylov solvers with PyLops' recurrences (pylops.optimization.cls_basic CG and CGLS; Hestenes & Stiefel
 * 1952), so residual histories can be compared number for number. The dot products of one iteration go
 * through one fused reduction at each of the recurrences' two synchronization points. The loops here keep the
 * scalars on the host; with RMAOP_SOLVER_SCALARS=device or graph a device context runs those of
 * src/solvers/solver_device.c instead. */
#include "solver_impl.h"
#include "solver_resident.h"
#include "core/dtype.h"

void rmaop_solver_options_init(rmaop_solver_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
}

void rmaop_solver_info_destroy(rmaop_solver_info *info) {
  if (!info) return;
  free(info->history);
  info->history = NULL;
}

/* ---- host memory: the fused iterations ----
 * The operator's fused application (rmaop__op_apply_fused: the stencils in one pass, others apply then dot)
 * updates its input, applies and returns this rank's dots; vector updates share one loop with the next dot;
 * each synchronization point reduces its partial doubles once (rmaop_allreduce: in rank order on rma). Same
 * recurrences and element expressions as the loops below them; only the dots' summation order differs. */

#define SOLVER_LANES 8
/* |e|^2 in double of an element of type T (real type R). */
#define ABS2(e)                                                        \
  (sizeof(T) == sizeof(R) ? (double)creal(e) * (double)creal(e)         \
                          : (double)creal(e) * (double)creal(e) + (double)cimag(e) * (double)cimag(e))

/* x += a c (x not NULL) and r += m v in one loop (rmaop_vec_axpy's expressions), and *r2 = this rank's
 * part of |r|^2, summed over SOLVER_LANES lanes in a fixed order (replicated layouts: the update, then
 * rmaop__vec_local_dots, which counts them on rank 0 only). */
static rmaop_status axpy2_norm(rmaop_vec x, double a, rmaop_vec c, rmaop_vec r, double m, rmaop_vec v, double *r2) {
  if (r->layout->kind != RMAOP_LAYOUT_SCATTER) {
    if (x) RMAOP_CHECK(rmaop_vec_axpy(x, a, c));
    RMAOP_CHECK(rmaop_vec_axpy(r, m, v));
    double part[2];
    RMAOP_CHECK(rmaop__vec_local_dots(1, &r, &r, part));
    *r2 = part[0];
    return RMAOP_OK;
  }
  double lane[SOLVER_LANES] = {0};
  const int64_t n = r->local_n, body = n - n % SOLVER_LANES;
  RMAOP__FOR_DTYPE(r->dtype, {
    T *rr = r->data;
    const T *vv = v->data;
    const T mm = (T)m;
    if (x) {
      T *xx = x->data;
      const T *cc = c->data;
      const T aa = (T)a;
      for (int64_t i = 0; i < n; ++i) xx[i] += aa * cc[i];
    }
    int64_t i = 0;
    for (; i < body; i += SOLVER_LANES)
      for (int l = 0; l < SOLVER_LANES; ++l) {
        const T e = rr[i + l] + mm * vv[i + l];
        rr[i + l] = e;
        lane[l] += ABS2(e);
      }
    for (; i < n; ++i) {
      const T e = rr[i] + mm * vv[i];
      rr[i] = e;
      lane[i % SOLVER_LANES] += ABS2(e);
    }
  });
  double sum = 0.0;
  for (int l = 0; l < SOLVER_LANES; ++l) sum += lane[l];
  *r2 = sum;
  return RMAOP_OK;
}

/* The solvers' reductions of partial doubles (one per synchronization point). */
static rmaop_status reduce_sums(rmaop_ctx ctx, const double *part, double *out, int n) {
  return rmaop_allreduce(ctx, part, out, n, RMAOP_SUM, "mdot");
}

/* CG, r = c = y - A x0 given: c = r + b c is fused into the next A c (with c . Ac), x += a c and r -= a Ac
 * share one loop with r . r. */
static rmaop_status cg_host(rmaop_op A, rmaop_vec x, rmaop_vec r, rmaop_vec c, rmaop_vec Ac,
                            const rmaop_solver_options *o, rmaop_solver_info *info) {
  double _Complex d;
  RMAOP_CHECK(rmaop_vec_dot(r, r, &d));
  double kold = cabs(d), b = 0.0, sums[RMAOP__NSUMS], red[2];
  info->history[0] = sqrt(kold);
  info->reason = RMAOP_REASON_NITER;
  while (info->iterations < o->niter && kold > o->tol) {
    /* c = r + b c (not before the first), Ac = A c and c . Ac in one pass */
    const rmaop__fuse f = {.u = info->iterations ? r : NULL, .alpha = 1.0, .beta = b, .want = RMAOP__WANT_INOUT};
    RMAOP_CHECK(rmaop__op_apply_fused(A, 0, c, Ac, &f, sums));
    RMAOP_CHECK(reduce_sums(A->ctx, sums + RMAOP__SUM_INOUT_RE, red, 2));
    const double cAc = cabs(CMPLX(red[0], red[1]));
    if (cAc == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / cAc;
    double r2, k;
    RMAOP_CHECK(axpy2_norm(x, a, c, r, -a, Ac, &r2)); /* x += a c, r -= a Ac, r . r */
    RMAOP_CHECK(reduce_sums(A->ctx, &r2, &k, 1));
    b = k / kold;
    kold = k;
    RMAOP_CHECK(after_iteration(o, info, sqrt(kold), x));
  }
  info->kold = kold;
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
  return RMAOP_OK;
}

/* CGLS, s = y - A x0, r = c = A^H s (- damp2 x0), q = A c given: s -= a q is fused into r = A^H s (with r . r
 * and s . s), c = r + b c into q = A c (with q . q and c . c, reduced at the next iteration's start). */
static rmaop_status cgls_host(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                              double damp2, const rmaop_solver_options *o, rmaop_solver_info *info) {
  double _Complex d[2];
  rmaop_vec dx[2] = {r, s}, ex[2] = {q, c};
  RMAOP_CHECK(rmaop_vec_mdot(2, dx, dx, d));
  double kold = cabs(d[0]), part[4], sums[RMAOP__NSUMS], red[2];
  info->history[0] = sqrt(creal(d[1]));
  info->reason = RMAOP_REASON_NITER;
  RMAOP_CHECK(rmaop__vec_local_dots(2, ex, ex, part));
  double pend[2] = {part[0], part[2]}; /* q . q and c . c */
  while (info->iterations < o->niter && kold > o->tol) {
    RMAOP_CHECK(reduce_sums(A->ctx, pend, red, 2));
    const double den = red[0] + damp2 * red[1];
    if (den == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / den;
    /* x += a c: rides on c's update below, unless the damping reads x before */
    const int ride = damp2 == 0.0;
    if (!ride) RMAOP_CHECK(rmaop_vec_axpy(x, a, c));
    /* s -= a q, r = A^H s, r . r and s . s in one pass */
    const rmaop__fuse fs = {.u = q, .alpha = -a, .beta = 1.0,
                            .want = RMAOP__WANT_IN2 | (damp2 != 0.0 ? 0 : RMAOP__WANT_OUT2)};
    RMAOP_CHECK(rmaop__op_apply_fused(A, 1, s, r, &fs, sums));
    pend[0] = sums[RMAOP__SUM_OUT2], pend[1] = sums[RMAOP__SUM_IN2];
    if (damp2 != 0.0) RMAOP_CHECK(axpy2_norm(NULL, 0.0, NULL, r, -damp2, x, &pend[0])); /* r -= damp2 x, r . r */
    RMAOP_CHECK(reduce_sums(A->ctx, pend, red, 2));
    const double k = red[0];
    /* (x += a c,) c = r + b c, q = A c, q . q and c . c in one pass */
    const rmaop__fuse fc = {.u = r, .alpha = 1.0, .beta = k / kold, .w = ride ? x : NULL, .gamma = a,
                            .want = RMAOP__WANT_OUT2 | RMAOP__WANT_IN2};
    RMAOP_CHECK(rmaop__op_apply_fused(A, 0, c, q, &fc, sums));
    pend[0] = sums[RMAOP__SUM_OUT2], pend[1] = sums[RMAOP__SUM_IN2];
    kold = k;
    RMAOP_CHECK(after_iteration(o, info, sqrt(red[1]), x));
  }
  info->kold = kold;
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
  return RMAOP_OK;
}

rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o, rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_cg", A, y, x, o, info, &clk, NULL));
  rmaop_vec r = NULL, c = NULL, Ac = NULL;
  rmaop_status st = rmaop__vec_work(x, &r);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &c);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &Ac);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, r), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  if (rmaop__resident_wanted(A, x, y)) { /* RMAOP_SOLVER_SCALARS=resident or auto: src/solvers/solver_resident.c */
    int ran = 0;
    st = rmaop__solve_cg_resident(A, x, r, c, Ac, o, info, &ran);
    if (st != RMAOP_OK || ran) goto out;
  }
  int whole = 0; /* auto: one graph for the solve where that is faster */
  RMAOP_CHECK_GOTO(rmaop__solver_auto_while(A, x, y, o, &whole), st, out);
  if (whole || solver_device_scalars(A, x, y)) {
    st = rmaop__solve_cg_device(A, x, r, c, Ac, o, info);
    goto out;
  }
  if (!RMAOP__ON_DEVICE(A->ctx)) { /* host memory: the fused iterations */
    st = cg_host(A, x, r, c, Ac, o, info);
    goto out;
  }
  double _Complex d[2];
  RMAOP_CHECK_GOTO(rmaop_vec_dot(r, r, &d[0]), st, out);
  double kold = cabs(d[0]);
  info->history[0] = sqrt(kold);
  info->reason = RMAOP_REASON_NITER;
  while (info->iterations < o->niter && kold > o->tol) {
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, Ac), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_dot(Ac, c, &d[0]), st, out);
    const double cAc = cabs(d[0]);
    if (cAc == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / cAc;
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(x, a, c), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -a, Ac), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_dot(r, r, &d[1]), st, out);
    const double k = cabs(d[1]);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(c, 1.0, k / kold, r), st, out); /* c = r + b c */
    kold = k;
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(kold), x), st, out);
  }
  info->kold = kold;
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  rmaop_vec_destroy(&Ac);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}

rmaop_status rmaop_solve_cgls(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_cgls", A, y, x, o, info, &clk, NULL));
  const double damp2 = o->damp * o->damp;
  rmaop_vec s = NULL, q = NULL, r = NULL, c = NULL;
  rmaop_status st = rmaop__vec_work(y, &s);
  if (st == RMAOP_OK) st = rmaop__vec_work(y, &q);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &r);
  if (st == RMAOP_OK) st = rmaop__vec_work(x, &c);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, s), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
  /* PyLops subtracts the unsquared damp here; the gradient of the damped functional needs damp^2. */
  if (o->x0 && damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
  if (rmaop__resident_wanted(A, x, y)) { /* RMAOP_SOLVER_SCALARS=resident or auto: src/solvers/solver_resident.c */
    int ran = 0;
    st = rmaop__solve_cgls_resident(A, x, s, q, r, c, damp2, o, info, &ran);
    if (st != RMAOP_OK || ran) goto out;
  }
  int whole = 0; /* auto: one graph for the solve where that is faster */
  RMAOP_CHECK_GOTO(rmaop__solver_auto_while(A, x, y, o, &whole), st, out);
  if (whole || solver_device_scalars(A, x, y)) {
    st = rmaop__solve_cgls_device(A, x, s, q, r, c, damp2, o, info);
    goto out;
  }
  if (!RMAOP__ON_DEVICE(A->ctx)) { /* host memory: the fused iterations */
    st = cgls_host(A, x, s, q, r, c, damp2, o, info);
    goto out;
  }
  double _Complex d[2];
  rmaop_vec dx[2] = {r, s}, dy[2] = {r, s};
  RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, dx, dy, d), st, out);
  double kold = cabs(d[0]);
  info->history[0] = sqrt(creal(d[1]));
  info->reason = RMAOP_REASON_NITER;
  while (info->iterations < o->niter && kold > o->tol) {
    rmaop_vec ex[2] = {q, c};
    RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, ex, ex, d), st, out); /* q.q and c.c in one reduction */
    const double den = creal(d[0]) + damp2 * creal(d[1]);
    if (den == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / den;
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(x, a, c), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(s, -a, q), st, out);
    RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
    if (damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, dx, dy, d), st, out); /* r.r and s.s in one reduction */
    const double k = cabs(d[0]);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(c, 1.0, k / kold, r), st, out); /* c = r + b c */
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
    kold = k;
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(creal(d[1])), x), st, out);
  }
  info->kold = kold;
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&s);
  rmaop_vec_destroy(&q);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}
