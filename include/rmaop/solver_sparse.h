/**
 * @file solver_sparse.h
 * @brief Sparsity and proximal solvers (PyLops-MPI 0.8): the power iteration, ISTA and FISTA; the proximal
 *        operators L1, L2 and L21 (rmaop_prox); ProximalGradient, ADMML2 and PrimalDual.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 * The solvers follow PyLops-MPI's recurrences, defaults and stopping rules (pylops_mpi.optimization.sparsity,
 * pylops_mpi.optimization.eigs, pylops_mpi.proximal), so their histories compare number for number. Every
 * reduction goes through the context's backend (rmaop_vec_mdot, rmaop_allreduce): every backend gives the same
 * history. Host and device memory alike (the element work runs as host loops or CUDA kernels).
 */
#ifndef RMAOP_RMAOP_SOLVER_SPARSE_H
#define RMAOP_RMAOP_SOLVER_SPARSE_H

#include "solver.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Power iteration (pylops_mpi.optimization.eigs.power_iteration)                                   */
/* ------------------------------------------------------------------------------------------------ */

typedef struct {
  int niter;     /**< iterations at most (>= 1); default 10 */
  double tol;    /**< stop when |l_k - l_{k-1}| < tol l_k (PyLops-MPI's test; l_0 = 0); default 1e-5 */
  int use_b;     /**< 0 (default): b is overwritten with pseudo-random values uniform in [0, 1) (+ i [0, 1) for
                      complex dtypes), by global index, so the same at every rank count and on every backend
                      (PyLops-MPI draws numpy.random.rand); 1: start from b as given (not zero) */
  unsigned seed; /**< of the pseudo-random start; default 0 */
} rmaop_eigs_options;

/** Fills @p opts with the defaults above. */
void rmaop_eigs_options_init(rmaop_eigs_options *opts);

/**
 * The largest eigenvalue (in modulus, for complex operators) of a square operator: b <- b / ||b||, then per
 * iteration b1 = A b, l = b^H b1, b = b1 / ||b1|| until |l - l_old| < tol l or niter (PyLops-MPI
 * power_iteration; for Hermitian A, l converges to the largest eigenvalue). Collective.
 * One fused reduction per iteration ({b^H b1, ||b1||^2} in one rmaop_vec_mdot) and one at the start.
 * @param [in]     A          square operator (model and data layouts alike)
 * @param [in,out] b          on A's model layout: the start (use_b) and, on return, the normalized last iterate
 * @param [in]     opts       NULL: the defaults
 * @param [out]    maxeig     the last l (complex: PyLops-MPI returns b^H A b as it is)
 * @param [out]    iterations iterations run (PyLops-MPI's iiter + 1); may be NULL
 * @return RMAOP_ERR_ARG naming a NULL argument, niter < 1, a negative or NaN tol, a non-square operator, a b on
 *         another layout or dtype, or a zero start (use_b with b = 0); a communication error.
 */
rmaop_status rmaop_power_iteration(rmaop_op A, rmaop_vec b, const rmaop_eigs_options *opts, double _Complex *maxeig,
                                   int *iterations);

/**
 * ISTA's and FISTA's default step: 1 / |l|, l the power iteration's eigenvalue of A^H A from a pseudo-random
 * start on A's model layout (PyLops-MPI: alpha = 1 / abs(power_iteration(Op.H @ Op, **eigsdict)[0])). What
 * rmaop_solve_ista() uses when opts->alpha is 0. Collective.
 * @return as rmaop_power_iteration(); RMAOP_ERR_ARG when the eigenvalue is 0 (no step exists).
 */
rmaop_status rmaop_sparse_step_size(rmaop_op A, const rmaop_eigs_options *eigs, double *alpha);

/* ------------------------------------------------------------------------------------------------ */
/* ISTA and FISTA (pylops_mpi.optimization.sparsity.ista, fista)                                    */
/* ------------------------------------------------------------------------------------------------ */

/** Thresholdings (PyLops' threshkind). PyLops-MPI 0.8 has the first three; the percentile kinds are PyLops'
 *  (pylops.optimization.sparsity), with the percentile taken over the whole distributed vector. */
typedef enum {
  RMAOP_THRESH_SOFT = 0,        /**< "soft": max(|x| - t, 0) sign(x) (proximal of ||x||_1) */
  RMAOP_THRESH_HARD,            /**< "hard": x where |x| > sqrt(2 t), else 0 (||x||_0) */
  RMAOP_THRESH_HALF,            /**< "half": the ||x||_{1/2}^{1/2} rule (Xu et al. 2012) */
  RMAOP_THRESH_SOFT_PERCENTILE, /**< "soft-percentile": soft with t = the (100 - perc)-th percentile of |x| */
  RMAOP_THRESH_HARD_PERCENTILE, /**< "hard-percentile": hard with t = p^2 / 2, p that percentile */
  RMAOP_THRESH_HALF_PERCENTILE  /**< "half-percentile": half with t = (4 p / 54^(1/3))^(3/2) */
} rmaop_thresh_kind;

/** Parses PyLops' name ("soft", "hard", "half", "soft-percentile", ...). RMAOP_ERR_ARG naming an unknown one
 *  (the message lists the valid names). Not collective. */
rmaop_status rmaop_thresh_parse(const char *name, rmaop_thresh_kind *kind);
/** PyLops' name of @p kind ("invalid" for another value). */
const char *rmaop_thresh_name(rmaop_thresh_kind kind);

typedef struct {
  int niter;                    /**< iterations at most; default 10 */
  rmaop_vec x0;                 /**< initial guess (copied into x); NULL: zero */
  rmaop_op SOp;                 /**< analysis operator: thresholds SOp^H x and maps back with SOp (its data layout is
                                     A's model layout); NULL (default): the synthesis problem */
  double eps;                   /**< sparsity damping (>= 0); default 0.1 */
  double alpha;                 /**< step (> 0); 0 (default): rmaop_sparse_step_size(A, &eigs) */
  rmaop_eigs_options eigs;      /**< the power iteration of the default step (PyLops-MPI's eigsdict) */
  double tol;                   /**< stop once ||x_k - x_{k-1}|| <= tol; default 1e-10 */
  rmaop_thresh_kind threshkind; /**< default RMAOP_THRESH_SOFT */
  double perc;                  /**< percentile kinds: percentage of values kept, in [0, 100] */
  const double *decay;          /**< niter factors of the threshold (not of the percentile kinds); NULL: ones */
  /** Called after each iteration with its cost (history[iteration]); a non-OK return stops the solver with it. */
  rmaop_status (*callback)(void *user, int iteration, double cost, rmaop_vec x);
  void *user;
} rmaop_sparse_options;

/** Fills @p opts with the defaults above (PyLops-MPI's). */
void rmaop_sparse_options_init(rmaop_sparse_options *opts);

/**
 * ISTA (Daubechies et al. 2004; PyLops-MPI ista): minimizes 1/2 ||y - A x||^2 + eps ||x||_p by
 * r = y - A x_k, x_{k+1} = thr(x_k + alpha A^H r, decay[k] eps alpha / 2) (with SOp: SOp thr(SOp^H (...))),
 * stopping after niter iterations or once ||x_{k+1} - x_k|| <= tol. Collective (every rank, same options).
 * One reduction per iteration: {||r||^2, ||x_{k+1} - x_k||^2, ||x_{k+1}||_1} in one rmaop_allreduce; the
 * percentile kinds add the percentile's selection (at most 8 reductions of 512 doubles and one of 2: a radix
 * select over the magnitudes' bits, exact).
 * @param [in]  A    operator; y on its data layout, x on its model layout, all of A's dtype (real or complex)
 * @param [out] x    the solution (starts from opts->x0, or zero)
 * @param [out] info iterations; reason NITER, TOL (the update fell to tol) or BREAKDOWN (a NaN update);
 *                   history[0] = 1/2 ||y - A x0||^2 + eps ||x0||_1 and history[k] = PyLops-MPI's cost[k - 1] =
 *                   1/2 ||y - A x_{k-1}||^2 + eps ||x_k||_1 (its residual is the one the step used); kold 0.
 *                   Free with rmaop_solver_info_destroy().
 * @return RMAOP_ERR_ARG (on every rank) naming a NULL argument, niter < 0, eps < 0 or NaN, alpha < 0 or NaN,
 *         tol < 0 or NaN, an unknown threshkind, perc outside [0, 100] (percentile kinds), a negative or NaN decay entry
 *         (decay is read for niter entries), an SOp whose layouts do not fit, or vectors on other layouts or dtypes;
 *         the power iteration's errors; a communication error; the callback's error.
 */
rmaop_status rmaop_solve_ista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_sparse_options *opts,
                              rmaop_solver_info *info);
/**
 * FISTA (Beck & Teboulle 2009; PyLops-MPI fista): ISTA's step taken from z_k, x_{k+1} = thr(z_k + alpha A^H
 * (y - A z_k), ...), t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2, z_{k+1} = x_{k+1} + (t_k - 1) / t_{k+1} (x_{k+1} - x_k).
 * Collective. Options, stops and errors as rmaop_solve_ista(). Its cost is PyLops-MPI's: history[k] =
 * 1/2 ||y - A x_k||^2 + eps ||x_k||_1 (an extra application of A per iteration, as PyLops-MPI makes);
 * history[0] the same at x0. One reduction per iteration ({||y - A x_k||^2, ||x_k - x_{k-1}||^2, ||x_k||_1}),
 * plus the percentile's.
 */
rmaop_status rmaop_solve_fista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_sparse_options *opts,
                               rmaop_solver_info *info);

/* ------------------------------------------------------------------------------------------------ */
/* Proximal operators (pylops_mpi.proximal: MPIProxOperator(pyproximal.L1), MPIL2, MPIL21)          */
/* ------------------------------------------------------------------------------------------------ */

/** A proximal operator of a convex function f (opaque). */
typedef struct rmaop_prox_s *rmaop_prox;

/**
 * f(x) = sigma ||x - g||_1 (pyproximal L1 wrapped by PyLops-MPI's MPIProxOperator): prox_{tau f}(x) =
 * soft(x - g, tau sigma) + g; the proximal of its conjugate projects x - tau g onto {|x_i| <= sigma}
 * (pyproximal clips real values; complex values are scaled to modulus sigma where larger). Not collective.
 * @param [in] g  offset (copied; on the layout the operator is applied to); NULL: none
 * @return RMAOP_ERR_ARG for a NULL ctx or output, sigma < 0 or NaN, or a g of another context.
 */
rmaop_status rmaop_prox_create_l1(rmaop_ctx ctx, double sigma, rmaop_vec g, rmaop_prox *prox);

/** How an L2 proximal with an operator solves its inner problem (PyLops-MPI MPIL2's `solver`). */
typedef enum {
  RMAOP_PROX_L2_CGLS = 0, /**< "cgls" (default): [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b; x_in] by CGLS */
  RMAOP_PROX_L2_CG        /**< "cg": (I + tau sigma Op^H Op) x = x_in + tau sigma Op^H b by CG */
} rmaop_prox_l2_solver;

/** The function of an L2 proximal: f(x) = sigma / 2 ||Op x - b||^2 + alpha q^T x (PyLops-MPI MPIL2). */
typedef struct {
  rmaop_op Op;                 /**< NULL: f = sigma / 2 ||x - b||^2 (+ alpha q^T x), with a closed-form proximal */
  rmaop_vec b;                 /**< data; NULL: zero (with an Op, PyLops-MPI then drops the Op term: the closed form
                                    of f = sigma / 2 ||x||^2 applies) */
  rmaop_vec q;                 /**< NULL: no linear term */
  double sigma;                /**< >= 0; default 1 */
  double alpha;                /**< default 1 */
  int qgrad;                   /**< 1 (default): the gradient includes alpha q */
  int niter;                   /**< inner iterations (>= 0); default 10 */
  rmaop_vec x0;                /**< with an Op: the inner solver's first start (required, as PyLops-MPI) */
  int warm;                    /**< 1 (default): each proximal starts from the previous one's result */
  rmaop_prox_l2_solver solver; /**< default RMAOP_PROX_L2_CGLS */
  double tol;                  /**< inner solver's tol (rmaop_solver_options.tol); default 1e-4 (PyLops-MPI's) */
  double damp;                 /**< inner CGLS's damping; default 0 */
} rmaop_prox_l2_spec;

/** Fills @p spec with the defaults above. */
void rmaop_prox_l2_spec_init(rmaop_prox_l2_spec *spec);
/**
 * The L2 proximal of @p spec (copies b, q and x0; holds a reference on Op). With an Op and b and the CG
 * solver it computes sigma Op^H b once (an adjoint application). Collective (every rank, the same spec).
 * @return RMAOP_ERR_ARG naming a NULL argument, an Op without x0, sigma < 0, niter < 0, tol < 0, damp < 0,
 *         an unknown solver, or vectors on layouts that do not fit Op.
 */
rmaop_status rmaop_prox_create_l2(rmaop_ctx ctx, const rmaop_prox_l2_spec *spec, rmaop_prox *prox);

/**
 * f(x) = sigma sum_i sqrt(sum_d |x_d,i|^2) (PyLops-MPI MPIL21): x is a stacked vector of @p ndim parts on one
 * layout (the gradient's output, rmaop_op_create_gradient), part d holding the d-th component of every group i.
 * prox_{tau f}: x_d,i (1 - tau sigma / max(s_i, tau sigma)); proximal of the conjugate: sigma x_d,i / max(s_i,
 * sigma), s_i the group norms. Not collective.
 * @return RMAOP_ERR_ARG for ndim outside [1, 8], sigma < 0 or NaN, a NULL ctx or output.
 */
rmaop_status rmaop_prox_create_l21(rmaop_ctx ctx, int ndim, double sigma, rmaop_prox *prox);

/** Frees the proximal operator (its copies and references); sets *prox to NULL. Not collective, unless it drops the
 *  last reference to an L2's Op (then as rmaop_op_destroy()). */
void rmaop_prox_destroy(rmaop_prox *prox);

/**
 * out = prox_{tau f}(x) = argmin_u f(u) + ||u - x||^2 / (2 tau). Collective (an L2 with an Op solves; the others
 * communicate nothing). @p out may be @p x. An L2 with an Op runs its inner solver (warm: from its last result).
 * @return RMAOP_ERR_ARG for tau <= 0 or NaN ("tau must be positive"), NULL vectors, vectors of other layouts or
 *         dtypes (L21: x not stacked in ndim parts of one layout); the inner solver's errors.
 */
rmaop_status rmaop_prox_apply(rmaop_prox prox, double tau, rmaop_vec x, rmaop_vec out);
/**
 * out = prox_{tau f*}(x), f* the convex conjugate (pyproximal's proxdual): L1 and L21 in closed form, L2 by
 * Moreau's identity x - tau prox_{f / tau}(x / tau). Collective. Errors as rmaop_prox_apply().
 */
rmaop_status rmaop_prox_apply_dual(rmaop_prox prox, double tau, rmaop_vec x, rmaop_vec out);
/** *value = f(x) (PyLops-MPI's __call__: a sum over every rank's elements, a replicated vector counted once).
 *  Collective: one reduction (L2 with an Op: also one application of Op). */
rmaop_status rmaop_prox_norm(rmaop_prox prox, rmaop_vec x, double *value);
/** g = grad f(x) (L2 only: sigma Op^H (Op x - b) (+ alpha q)). Collective.
 *  @return RMAOP_ERR_ARG for an L1 or L21 (no gradient) or vectors that do not fit. */
rmaop_status rmaop_prox_grad(rmaop_prox prox, rmaop_vec x, rmaop_vec g);

/* ------------------------------------------------------------------------------------------------ */
/* Proximal solvers (pylops_mpi.proximal.optimization: ProximalGradient, ADMML2, PrimalDual)         */
/* ------------------------------------------------------------------------------------------------ */

/** The callback of the proximal solvers, after each iteration: x, and @p aux = ADMML2's z, PrimalDual's dual y,
 *  NULL for ProximalGradient. A non-OK return stops the solver with it. */
typedef rmaop_status (*rmaop_prox_callback)(void *user, int iteration, rmaop_vec x, rmaop_vec aux);

/** ProximalGradient's acceleration (PyLops-MPI: None, "vandenberghe", "fista"). */
typedef enum { RMAOP_ACCEL_NONE = 0, RMAOP_ACCEL_VANDENBERGHE, RMAOP_ACCEL_FISTA } rmaop_accel;

typedef struct {
  int niter;                /**< default 10 */
  double tau;               /**< step, required > 0 (PyLops-MPI has no backtracking: tau=None fails there) */
  double epsg;              /**< scaling of g every iteration; default 1 */
  const double *epsg_iter;  /**< niter scalings instead (PyLops-MPI's array epsg); NULL: epsg */
  double eta;               /**< relaxation in (0, 1]; default 1 */
  rmaop_accel acceleration; /**< default RMAOP_ACCEL_NONE */
  double tol;               /**< stop once |1 - J_k / J_{k-1}| < tol, J = f(x) + epsg g(x); 0 (default): off
                                 (PyLops-MPI's None) */
  int history;              /**< 1: record J every iteration (as tol does; one more f and g evaluation per
                                 iteration when tol is off); default 0 */
  rmaop_prox_callback callback;
  void *user;
} rmaop_proxgrad_options;

void rmaop_proxgrad_options_init(rmaop_proxgrad_options *opts);
/**
 * Proximal gradient (PyLops-MPI ProximalGradient): minimizes f(x) + epsg g(x) with f smooth (an L2: its gradient
 * is used) by x_{k+1} = prox_{epsg_k tau g}(y_k - tau grad f(y_k)) (eta < 1: x_k + eta (prox(x_k - tau grad f
 * (x_k)) - x_k)), y_{k+1} = x_{k+1} + omega_k (x_{k+1} - x_k), omega_k = k / (k + 3) (vandenberghe), (t_k - 1) /
 * t_{k+1} (fista) or 0. Collective. Reductions per iteration: those of grad f (an L2 with an Op: none) and g's
 * proximal (L1, L21: none); with tol or history, f(x) and g(x) (two more).
 * @param [in]  proxf, proxg  proxf must have a gradient (L2)
 * @param [in]  x0   initial vector; @p x may be @p x0
 * @param [out] info iterations; reason NITER or TOL; history (tol or opts->history, else NULL): history[0] = J(x0),
 *                   history[k] = J(x_k) with epsg_{k-1}.
 * @return RMAOP_ERR_ARG (on every rank) naming a NULL argument, niter < 0, tau <= 0, eta outside (0, 1], an
 *         unknown acceleration, tol < 0 or NaN, a proxf without gradient; the proximals' and callback's errors.
 */
rmaop_status rmaop_solve_proximal_gradient(rmaop_prox proxf, rmaop_prox proxg, rmaop_vec x0, rmaop_vec x,
                                           const rmaop_proxgrad_options *opts, rmaop_solver_info *info);

typedef struct {
  int niter;           /**< default 10 */
  double tau;          /**< required > 0 (convergence: tau <= 1 / lambda_max(A^H A)) */
  rmaop_vec z0;        /**< initial z on A's data layout; NULL (default): A x0 */
  int gfirst;          /**< 1: the proximal of g first; default 0 (PyLops-MPI's False) */
  rmaop_solver_options inner; /**< the x-update's CGLS (niter, tol, damp; PyLops-MPI's kwargs_solver); default
                                   rmaop_solver_options_init() with tol 1e-4 (PyLops-MPI cgls's defaults) */
  int history;         /**< 1: record J = 1/2 ||Op x - b||^2 + g(A x) every iteration (one application of Op and
                            two reductions more); default 0 */
  rmaop_prox_callback callback; /**< aux = z */
  void *user;
} rmaop_admml2_options;

void rmaop_admml2_options_init(rmaop_admml2_options *opts);
/**
 * ADMM for an L2 misfit (PyLops-MPI ADMML2): minimizes 1/2 ||Op x - b||^2 + g(z) subject to A x = z. Each
 * iteration solves [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)] by CGLS from the last x (a stacked
 * vstack), then z = prox_{tau g}(A x + u), u = u + A x - z (gfirst: the z update first). Collective.
 * Reductions per iteration: the inner CGLS's and g's proximal's.
 * @param [in]  Op, b  the misfit (b on Op's data layout); @p A  the constraint (A's model layout is Op's)
 * @param [out] x, z   x on Op's model layout, z on A's data layout (z may be NULL: not returned)
 * @param [out] info   iterations, reason NITER; history as opts->history (else NULL; history[0] at x0)
 * @return RMAOP_ERR_ARG (on every rank) naming a NULL argument, niter < 0, tau <= 0, layouts that do not fit;
 *         the inner solver's, proximal's and callback's errors.
 */
rmaop_status rmaop_solve_admml2(rmaop_prox proxg, rmaop_op Op, rmaop_vec b, rmaop_op A, rmaop_vec x0, rmaop_vec x,
                                rmaop_vec z, const rmaop_admml2_options *opts, rmaop_solver_info *info);

typedef struct {
  int niter;             /**< default 10 */
  double tau, mu;        /**< steps of f and of g* (> 0; convergence: tau mu ||A||^2 < 1). Given as scalars
                              PyLops-MPI stores them in float32 arrays: so does rmaop (each is rounded to float,
                              and the proximals' scalar products with them follow float arithmetic), so the
                              histories compare with PyLops-MPI's to double precision */
  const double *tau_iter, *mu_iter; /**< niter steps each instead (PyLops-MPI's arrays; used as given); NULL:
                                         tau, mu */
  double theta;          /**< extrapolation in [0, 1]; default 1 */
  rmaop_vec z;           /**< the linear term z^T x (model layout); NULL: none */
  int gfirst;            /**< 1 (default, PyLops-MPI's True): the dual update first */
  int history;           /**< 1: record J = f(x) + g(A x) + Re z^T x every iteration (one application of A and
                              two or three reductions more); default 0 */
  rmaop_prox_callback callback; /**< aux = y */
  void *user;
} rmaop_primaldual_options;

void rmaop_primaldual_options_init(rmaop_primaldual_options *opts);
/**
 * The primal-dual algorithm (Chambolle & Pock 2011; PyLops-MPI PrimalDual): min_x f(x) + g(A x) + z^T x.
 * gfirst: y = prox_{mu g*}(y + mu A xhat), x = prox_{tau f}(x - tau (A^H y + z)), xhat = x + theta (x - x_old);
 * otherwise the x update first, then y with the new xhat. Collective. Reductions per iteration: those of
 * the proximals (L1, L21: none; L2 with an Op: its inner solver's).
 * @param [in]  x0, y0  initial primal (model layout) and dual (A's data layout) vectors; y0 NULL: zero
 * @param [out] x, y    the solution and the dual variable (y may be NULL: not returned)
 * @param [out] info    iterations, reason NITER; history as opts->history (else NULL)
 * @return RMAOP_ERR_ARG (on every rank) naming a NULL argument, niter < 0, tau or mu <= 0 (or an entry of their
 *         arrays), theta outside [0, 1], layouts that do not fit; the proximals' and callback's errors.
 */
rmaop_status rmaop_solve_primal_dual(rmaop_prox proxf, rmaop_prox proxg, rmaop_op A, rmaop_vec x0, rmaop_vec y0,
                                     rmaop_vec x, rmaop_vec y, const rmaop_primaldual_options *opts,
                                     rmaop_solver_info *info);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_SOLVER_SPARSE_H */
