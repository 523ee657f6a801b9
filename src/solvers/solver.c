/* Krylov solvers with PyLops' recurrences (pylops.optimization.cls_basic CG and CGLS; Hestenes & Stiefel
 * 1952), so residual histories can be compared number for number. The dot products of one iteration go
 * through one fused reduction at each of the recurrences' two synchronization points. The loops here keep the
 * scalars on the host; with RMAOP_SOLVER_SCALARS=device or graph a device context runs those of
 * src/solvers/solver_device.c instead. */
#include "solver_impl.h"

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

/* Whether a solver on this context keeps its scalars on the device (RMAOP_SOLVER_SCALARS=device or graph):
 * the loops of src/solvers/solver_device.c. Never on a host context (nor in a build without CUDA). */
static int device_scalars(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  const rmaop_ctx ctx = A->ctx;
  return RMAOP__ON_DEVICE(ctx) &&
         (ctx->solver_scalars == RMAOP__SCALARS_DEVICE || ctx->solver_scalars == RMAOP__SCALARS_GRAPH) &&
         rmaop__vec_device_dots_ok(x) && rmaop__vec_device_dots_ok(y);
}

rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o, rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_cg", A, y, x, o, info, &clk, NULL));
  rmaop_vec r = NULL, c = NULL, Ac = NULL;
  rmaop_status st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &Ac);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, r), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  if (device_scalars(A, x, y)) {
    st = rmaop__solve_cg_device(A, x, r, c, Ac, o, info);
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
  rmaop_status st = rmaop_vec_duplicate(y, &s);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(y, &q);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, s), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
  /* PyLops subtracts the unsquared damp here; the gradient of the damped functional needs damp^2. */
  if (o->x0 && damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
  /* Not the default (auto = host): on one H100 shared by 2 ranks under MPS it was not faster (PERFORMANCE.md). */
  if (device_scalars(A, x, y)) {
    st = rmaop__solve_cgls_device(A, x, s, q, r, c, damp2, o, info);
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
