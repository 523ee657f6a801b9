/**
 * @file solver.h
 * @brief Solvers: options, info, and CG, CGLS, LSQR and pipelined CG (rmaop_solve_*).
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_SOLVER_H
#define RMAOP_RMAOP_SOLVER_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Solvers                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

typedef enum {
  RMAOP_REASON_NITER = 0,    /**< ran niter iterations */
  RMAOP_REASON_TOL,          /**< ||r||^2 fell to tol (PyLops: kold <= tol) */
  RMAOP_REASON_BREAKDOWN,    /**< a zero denominator; x is the last finite iterate */
  RMAOP_REASON_CONLIM        /**< LSQR: the estimate of cond(A) exceeded conlim, or 1/eps (PyLops' istop = 3, 6) */
} rmaop_reason;

typedef struct {
  int niter;          /**< iterations at most */
  double tol;         /**< stop when the squared residual (PyLops' kold) <= tol; 0: run niter */
  double damp;        /**< CGLS damping epsilon (minimizes ||y - Ax||^2 + epsilon^2 ||x||^2) */
  rmaop_vec x0;       /**< initial guess (copied into x); NULL: zero */
  /** Called after each iteration with the residual norm; a non-OK return stops the solver with it. */
  rmaop_status (*callback)(void *user, int iteration, double residual, rmaop_vec x);
  void *user;
  /* rmaop_solve_lsqr only (PyLops LSQR's atol, btol, conlim): 0 means PyLops' default (1e-8, 1e-8, 1e8), a
   * negative value switches that test off (PyLops' 0). Other solvers ignore them. */
  double atol;
  double btol;
  double conlim;
  /** rmaop_solve_pipecg only: every k-th iteration recomputes r = y - A x, w = A r, s = A p, z = A s from
   *  their definitions (4 extra operator applications) to stop the recurrences drifting; 0: never. */
  int residual_replacement;
} rmaop_solver_options;

typedef struct {
  int iterations;
  rmaop_reason reason;
  double *history;    /**< iterations + 1 residual norms (CGLS: ||y - A x_k||); free with rmaop_solver_info_destroy */
  double time_total;  /**< seconds in the solver */
  double time_comm;   /**< of which in plan executions and reductions (begin to end, from the trace clock) */
  int graph;          /**< 1: the iterations were replayed from a CUDA graph (CG, CGLS, RMAOP_SOLVER_SCALARS=graph, on a
                           path that can capture: rmaop_ctx_get_stream); 2: the whole solve ran as one CUDA graph with a
                           conditional WHILE node (CG, CGLS, RMAOP_SOLVER_SCALARS=while, no callback); the trace then
                           holds the captured iteration once, and time_comm only its capture */
  double kold;        /**< CG and CGLS: the last squared residual of the recurrence, the quantity tol is compared with
                           (CG: r.r; CGLS: ||A^H s - damp^2 x||^2, PyLops-MPI's r1norm); other solvers 0 */
} rmaop_solver_info;

void rmaop_solver_options_init(rmaop_solver_options *opts);
void rmaop_solver_info_destroy(rmaop_solver_info *info);
/** Conjugate gradient for Hermitian positive definite A (PyLops CG recurrences). Collective. */
rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/** CGLS with damping (PyLops CGLS recurrences; history[0] = ||y - A x0||). Collective. */
rmaop_status rmaop_solve_cgls(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/* ---- LSQR and pipelined CG (src/solvers/solver_krylov.c) ---- */
/**
 * LSQR with damping (Paige & Saunders 1982; PyLops LSQR recurrences): minimizes ||y - A x||^2 + damp^2 ||x||^2.
 * Collective (every rank of A's context, same options).
 * @param [in]  A     operator; y on its data layout, x on its model layout, all of A's dtype
 * @param [out] x     the solution (starts from opts->x0, or zero)
 * @param [in]  opts  niter, damp, x0, callback; atol, btol, conlim as in PyLops (0: PyLops' defaults, < 0: off).
 *                    tol is not used (PyLops' LSQR has none; it must still be >= 0).
 * @param [out] info  history[0] = ||y - A x0||, history[k] = PyLops' r1norm estimate of ||y - A x_k|| (its cost);
 *                    reason TOL for PyLops' istop = 1, 2, 4, 5 (and 0: A^H (y - A x0) = 0, no iteration), CONLIM
 *                    for istop = 3, 6, NITER when none fired, BREAKDOWN for a zero rotation (rho or gamma = 0).
 * Two fused reductions per iteration: {||u||^2, ||w||^2} and ||v||^2 (the recurrence needs beta before alfa).
 * @return RMAOP_ERR_ARG naming a bad argument (NULL, niter < 0, non-finite atol/btol/conlim, mismatched layouts
 *         or dtypes, found by the first vector operation), or a communication error; the callback's error.
 */
rmaop_status rmaop_solve_lsqr(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/**
 * Pipelined conjugate gradient for Hermitian positive definite A (Ghysels & Vanroose 2014, Alg. 4,
 * unpreconditioned). Each iteration has ONE non-blocking fused reduction {r.r, w.r}, and the operator
 * application q = A w runs between its begin and its wait, hiding the reduction's latency behind the matvec.
 * Collective. Options: niter, tol (stop when r.r <= tol, as rmaop_solve_cg), x0, callback, residual_replacement.
 * history[k] = ||r_k|| (the recurrence's residual, the same quantity as rmaop_solve_cg's: the two agree to
 * rounding on well-conditioned problems). Costs niter + 1 operator applications (+1 with x0) and 3 more vectors
 * than CG. The callback for iteration k runs once ||r_k|| is known, i.e. after the next reduction.
 * Overlap on the rma backend: the reduction's epoch stays open across the matvec (begin puts the partials,
 * the wait closes the epoch), unless A itself reduces (a vstack's adjoint, an hstack): then the operator's
 * reduction completes the pending one first (one reduction in flight per context) and nothing overlaps.
 * @return as rmaop_solve_lsqr(); RMAOP_ERR_ARG for residual_replacement < 0.
 */
rmaop_status rmaop_solve_pipecg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_SOLVER_H */
