/* Internal helpers shared by the solvers (src/solver.c: CG, CGLS; src/solver_krylov.c: LSQR, pipelined CG):
 * argument checks, the time split and the residual history. Not part of the public API. */
#ifndef RMAOP_SOLVER_IMPL_H
#define RMAOP_SOLVER_IMPL_H

#include "rmaop_impl.h"

#include <math.h>

typedef struct {
  rmaop_ctx ctx;
  double t0, comm0;
  rmaop_solver_info *info;
} solve_clock;

/* Checks the arguments every solver shares, zeroes *info and allocates niter + 1 history entries. */
static inline rmaop_status solver_start(const char *fn, rmaop_op A, rmaop_vec y, rmaop_vec x,
                                        const rmaop_solver_options *o, rmaop_solver_info *info, solve_clock *clk) {
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

static inline void solver_stop(solve_clock *clk) {
  clk->info->time_total = rmaop__wtime() - clk->t0;
  clk->info->time_comm = clk->ctx->comm_time - clk->comm0;
}

static inline rmaop_status initial_x(rmaop_vec x, const rmaop_solver_options *o) {
  return o->x0 ? rmaop_vec_copy(o->x0, x) : rmaop_vec_set(x, 0.0);
}

/* Appends the residual of the iteration just finished and calls the user's callback. */
static inline rmaop_status after_iteration(const rmaop_solver_options *o, rmaop_solver_info *info, double res,
                                           rmaop_vec x) {
  info->history[++info->iterations] = res;
  return o->callback ? o->callback(o->user, info->iterations, res, x) : RMAOP_OK;
}

#endif /* RMAOP_SOLVER_IMPL_H */
