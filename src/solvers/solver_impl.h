/* Internal helpers shared by the solvers (src/solvers/solver.c: CG, CGLS; src/solvers/solver_device.c: their and
 * pipelined CG's loops with the scalars on the device; src/solvers/solver_krylov.c: LSQR, pipelined CG): argument
 * checks, the time split and the residual history. Not part of the public API. */
#ifndef RMAOP_SOLVER_IMPL_H
#define RMAOP_SOLVER_IMPL_H

#include "core/ctx.h"
#include "core/error.h"
#include "core/vec.h"
#include "lsqr_scalars.h"
#include "ops/op_impl.h"

#include <math.h>

typedef struct {
  rmaop_ctx ctx;
  double t0, comm0;
  rmaop_solver_info *info;
} solve_clock;

/* Options only some solvers read: checked with the shared ones, so one agreement covers both. */
typedef rmaop_status (*solver_check_fn)(const char *fn, rmaop_ctx ctx, const rmaop_solver_options *o);

/* Checks the arguments every solver shares (and @p extra's), zeroes *info and allocates niter + 1 history
 * entries. Collective: the ranks agree on the outcome, so one rank's bad option cannot leave the others
 * waiting in the solver's first reduction. On failure *info holds no history. */
static inline rmaop_status solver_start(const char *fn, rmaop_op A, rmaop_vec y, rmaop_vec x,
                                        const rmaop_solver_options *o, rmaop_solver_info *info, solve_clock *clk,
                                        solver_check_fn extra) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  rmaop_status st = RMAOP_OK;
  if (y == NULL || x == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s is NULL", fn, y ? "x" : "y");
  else if (o == NULL || info == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s is NULL", fn, o ? "info" : "options");
  else if (o->niter < 0)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  else if (!(o->tol >= 0 && isfinite(o->tol) && o->damp >= 0 && isfinite(o->damp)))
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: tol = %g and damp = %g must be finite and non-negative", fn, o->tol,
                     o->damp);
  else if (extra)
    st = extra(fn, ctx, o);
  if (st == RMAOP_OK) {
    memset(info, 0, sizeof *info);
    st = rmaop__calloc(ctx, (size_t)o->niter + 1, sizeof(double), "residual history", (void **)&info->history);
  }
  const int allocated = st == RMAOP_OK;
  st = rmaop__agree(ctx, st, fn);
  if (st != RMAOP_OK) {
    if (allocated) rmaop_solver_info_destroy(info);
    return st;
  }
  *clk = (solve_clock){ctx, rmaop__wtime(), ctx->comm_time, info};
  return RMAOP_OK;
}

static inline void solver_stop(solve_clock *clk) {
  clk->info->time_total = rmaop__wtime() - clk->t0;
  clk->info->time_comm = clk->ctx->comm_time - clk->comm0;
}

/* x = x0 (or 0) and the initial residual r = y - A x0 (r = y when there is no x0: no apply). */
static inline rmaop_status initial_residual(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                            rmaop_vec r) {
  if (!o->x0) {
    RMAOP_CHECK(rmaop_vec_set(x, 0.0));
    return rmaop_vec_copy(y, r);
  }
  RMAOP_CHECK(rmaop_vec_copy(o->x0, x));
  RMAOP_CHECK(rmaop_op_apply(A, x, r));
  return rmaop_vec_axpby(r, 1.0, -1.0, y); /* r = y - A x0 */
}

/* Appends the residual of the iteration just finished and calls the user's callback. */
static inline rmaop_status after_iteration(const rmaop_solver_options *o, rmaop_solver_info *info, double res,
                                           rmaop_vec x) {
  info->history[++info->iterations] = res;
  return o->callback ? o->callback(o->user, info->iterations, res, x) : RMAOP_OK;
}

/* Whether a solver on this context keeps its scalars on the device (RMAOP_SOLVER_SCALARS=device, graph or while, and
 * resident for the solvers the resident kernel does not run: they replay graphs): the loops of
 * src/solvers/solver_device.c. Never on a host context (nor in a build without CUDA). */
static inline int solver_device_scalars(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  const rmaop_ctx ctx = A->ctx;
  return RMAOP__ON_DEVICE(ctx) &&
         (ctx->solver_scalars == RMAOP__SCALARS_DEVICE || ctx->solver_scalars == RMAOP__SCALARS_GRAPH ||
          ctx->solver_scalars == RMAOP__SCALARS_RESIDENT || ctx->solver_scalars == RMAOP__SCALARS_WHILE) &&
         rmaop__vec_device_dots_ok(x) && rmaop__vec_device_dots_ok(y);
}

/* Pipelined CG's vectors (src/solvers/solver_krylov.c; Ghysels & Vanroose's names), and its residual
 * replacement: r = y - A x, w = A r, s = A p, z = A s from their definitions. */
typedef struct {
  rmaop_vec r, w, q, z, s, p;
} pipecg_vecs;
rmaop_status rmaop__pipecg_replace(rmaop_op A, rmaop_vec y, rmaop_vec x, const pipecg_vecs *V);

/* LSQR's vectors (src/solvers/solver_krylov.c; Paige & Saunders' names) and its stopping reason for PyLops'
 * istop. */
typedef struct {
  rmaop_vec u, v, w, Av, AHu;
} lsqr_vecs;
rmaop_reason rmaop__lsqr_reason(int istop);

/* ---- CG, CGLS, pipelined CG and LSQR with the scalars on the device (src/solvers/solver_device.c) ----
 * Called by rmaop_solve_cg and rmaop_solve_cgls on a device context whose RMAOP_SOLVER_SCALARS is device or
 * graph (x and y distributed), once the start's vectors are made; each runs the iterations, sets
 * info->history, iterations, reason and graph, and frees nothing of the caller's. Collective. */
/* CG: r = c = y - A x0; Ac: a vector like x for A c. */
/* RMAOP_SOLVER_SCALARS=auto where no resident kernel runs the solve: 1 in *yes when CG, CGLS, LSQR or pipelined CG
 * (the caller: without residual replacement) run as one CUDA graph (RMAOP_SOLVER_SCALARS=while's loop): a device
 * context that can capture graphs on the rma backend (the ipc kernel path) or on one rank, is not traced (a trace
 * times each exchange from the host, and a graph holds one iteration's), and no rank has a callback; faster than
 * host scalars on every setting measured (docs/PERFORMANCE.md). Collective where the context qualifies. */
rmaop_status rmaop__solver_auto_while(rmaop_op A, rmaop_vec x, rmaop_vec y, const rmaop_solver_options *o, int *yes);
rmaop_status rmaop__solve_cg_device(rmaop_op A, rmaop_vec x, rmaop_vec r, rmaop_vec c, rmaop_vec Ac,
                                    const rmaop_solver_options *o, rmaop_solver_info *info);
/* CGLS: s = y - A x0, r = c = A^H s (- damp2 x0 with an x0), q = A c; damp2 = damp^2. */
rmaop_status rmaop__solve_cgls_device(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                      double damp2, const rmaop_solver_options *o, rmaop_solver_info *info);
/* LSQR: the start made (L's u, v, w and the state S of src/solvers/lsqr_scalars.h, with S->arnorm0 != 0), niter > 0;
 * S is the host loop's state after the start (the device keeps its own copy). */
rmaop_status rmaop__solve_lsqr_device(rmaop_op A, rmaop_vec x, const lsqr_vecs *L, const lsqr_state *S,
                                      const rmaop_solver_options *o, rmaop_solver_info *info);
/* Pipelined CG: V's r = y - A x0 and w = A r made, z, s, p zero. */
rmaop_status rmaop__solve_pipecg_device(rmaop_op A, rmaop_vec y, rmaop_vec x, const pipecg_vecs *V,
                                        const rmaop_solver_options *o, rmaop_solver_info *info);

#endif /* RMAOP_SOLVER_IMPL_H */
