/* Krylov solvers with PyLops' recurrences (pylops.optimization.cls_basic CG and CGLS; Hestenes & Stiefel
 * 1952), so residual histories can be compared number for number. The dot products of one iteration go
 * through one fused reduction at each of the recurrences' two synchronization points. */
#include "rmaop_impl.h"

#include <math.h>

void rmaop_solver_options_init(rmaop_solver_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
}

void rmaop_solver_info_free(rmaop_solver_info *info) {
  if (!info) return;
  free(info->history);
  info->history = NULL;
}

typedef struct {
  rmaop_ctx ctx;
  double t0, comm0;
  rmaop_solver_info *info;
} solve_clock;

static rmaop_status solver_start(const char *fn, rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                 rmaop_solver_info *info, solve_clock *clk) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  RMAOP_REQUIRE(ctx, y != NULL && x != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, y ? "x" : "y");
  RMAOP_REQUIRE(ctx, o != NULL && info != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, o ? "info" : "options");
  RMAOP_REQUIRE(ctx, o->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  RMAOP_REQUIRE(ctx, o->tol >= 0 && isfinite(o->tol) && o->damp >= 0 && isfinite(o->damp), RMAOP_ERR_ARG,
                "%s: tol = %g and damp = %g must be finite and non-negative", fn, o->tol, o->damp);
  memset(info, 0, sizeof *info);
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)o->niter + 1, sizeof(double), "residual history", (void **)&info->history));
  *clk = (solve_clock){ctx, rmaop__wtime(), ctx->comm_time, info};
  return RMAOP_OK;
}

static void solver_stop(solve_clock *clk) {
  clk->info->time_total = rmaop__wtime() - clk->t0;
  clk->info->time_comm = clk->ctx->comm_time - clk->comm0;
}

static rmaop_status initial_x(rmaop_vec x, const rmaop_solver_options *o) {
  return o->x0 ? rmaop_vec_copy(o->x0, x) : rmaop_vec_set(x, 0.0);
}

static rmaop_status after_iteration(const rmaop_solver_options *o, rmaop_solver_info *info, double res, rmaop_vec x) {
  info->history[++info->iterations] = res;
  return o->callback ? o->callback(o->user, info->iterations, res, x) : RMAOP_OK;
}

rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o, rmaop_solver_info *info) {
  solve_clock clk;
  RMAOP_CHECK(solver_start("rmaop_solve_cg", A, y, x, o, info, &clk));
  rmaop_vec r = NULL, c = NULL, Ac = NULL;
  rmaop_status st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &Ac);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_x(x, o), st, out);
  if (o->x0) {
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, x, r), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(r, 1.0, -1.0, y), st, out); /* r = y - A x0 */
  } else {
    RMAOP_CHECK_GOTO(rmaop_vec_copy(y, r), st, out);
  }
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
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
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  rmaop_vec_destroy(&Ac);
  if (st != RMAOP_OK) rmaop_solver_info_free(info);
  return st;
}

rmaop_status rmaop_solve_cgls(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  solve_clock clk;
  RMAOP_CHECK(solver_start("rmaop_solve_cgls", A, y, x, o, info, &clk));
  const double damp2 = o->damp * o->damp;
  rmaop_vec s = NULL, q = NULL, r = NULL, c = NULL;
  rmaop_status st = rmaop_vec_duplicate(y, &s);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(y, &q);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_x(x, o), st, out);
  if (o->x0) {
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, x, s), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(s, 1.0, -1.0, y), st, out); /* s = y - A x0 */
  } else {
    RMAOP_CHECK_GOTO(rmaop_vec_copy(y, s), st, out);
  }
  RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
  /* PyLops subtracts the unsquared damp here; the gradient of the damped functional needs damp^2. */
  if (o->x0 && damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
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
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&s);
  rmaop_vec_destroy(&q);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  if (st != RMAOP_OK) rmaop_solver_info_free(info);
  return st;
}
