/* Shared helpers of the solver tests (test_solver.c, test_solver_krylov.c): dense global matrices in double
 * complex for the serial references, the test problems built both as rmaop operators and as those matrices,
 * vectors with known global values, and the checks of one library solve against its serial reference.
 *
 * The problems' layouts depend on rt_rank / rt_size; every function that creates rmaop objects is collective
 * and asserts with RT_* (rmaop_test.h), so all ranks must call it in the same order. */
#ifndef RMAOP_SOLVER_TEST_UTIL_H
#define RMAOP_SOLVER_TEST_UTIL_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "rmaop_test.h"

/* The most iterations a test runs (sizes the reference's and the callback's histories). */
enum { ST_MAXIT = 64 };

/* ---- dense global matrices and vectors (serial, every rank holds all of it) ---- */

typedef struct {
  int64_t m, n;
  double _Complex *a; /* row-major, m x n */
} st_mat;
#define ST_AT(A, i, j) ((A).a[(size_t)(i) * (size_t)(A).n + (size_t)(j)])

/* n zeroed elements (at least one); never NULL (aborts when out of memory). */
double _Complex *st_cvec(int64_t n);
/* A zeroed m x n matrix; free with st_mat_free. */
st_mat st_mat_new(int64_t m, int64_t n);
void st_mat_free(st_mat *A);
/* y = A x (adjoint = 0) or y = A^H x. */
void st_matvec(const st_mat *A, int adjoint, const double _Complex *x, double _Complex *y);
/* a^H b. */
double _Complex st_vdot(int64_t n, const double _Complex *a, const double _Complex *b);

/* ---- problems: an operator and its global matrix (as the dtype holds it) ---- */

typedef struct {
  rmaop_op A;
  rmaop_op parts[4]; /* what A is built from, when it is a composite (destroyed with it) */
  st_mat M;
  const char *name;
} st_problem;

void st_problem_free(st_problem *p);

/* Block-diagonal SPD: rank r's block A_r[i][j] = 1 / (1 + |i - j|) + (r + 1) delta_ij, of 10, 0, 7, 5 rows on
 * ranks 0..3 (rank 1 holds none). */
st_problem st_make_spd(rmaop_ctx ctx, rmaop_dtype d);
/* A vstack: ST_VCOLS columns (replicated model), 9, 0, 7, 4 rows on ranks 0..3; full column rank. */
enum { ST_VCOLS = 6 };
st_problem st_make_vstack(rmaop_ctx ctx, rmaop_dtype d);
/* PyLops FirstDerivative, centered (3 points), edge False, ST_DN samples, h = 1; rank 0 holds one row, the last
 * rank the rest, the others none. y[i] = 0.5 (x[i+1] - x[i-1]) inside, 0 at both ends. */
enum { ST_DN = 40 };
st_problem st_make_derivative(rmaop_ctx ctx, rmaop_dtype d);
/* Its two halves: the operator alone and the ST_DN x ST_DN matrix alone. */
rmaop_op st_deriv_op(rmaop_ctx ctx, rmaop_dtype d);
st_mat st_deriv_mat(void);

/* ---- vectors ---- */

/* A vector on `l` holding series s (times `scale`) rounded to the dtype; *global (when given) gets the global
 * values (the caller frees them). */
rmaop_vec st_make_vec(rmaop_layout l, rmaop_dtype d, int s, double scale, double _Complex **global);
/* x's local elements against the reference (global), within tol relative to the largest |ref|; on a mismatch
 * msg says where. Not collective. */
int st_x_matches(rmaop_vec x, const double _Complex *ref, double tol, char *msg, size_t msz);

/* ---- histories ---- */

/* The relative tolerance of a history in dtype d: 1e-10 (f64, c128), 1e-4 (f32, c64). */
double st_hist_tol(rmaop_dtype d);
/* history[0..n] against a reference: |got - want| <= tol want + floor want[0] at every entry. The floor is there
 * because rounding errors scale with the problem (||y||): once a solver has converged by 1e-8 its residual
 * estimate carries ~1e-16 ||y|| of absolute error, which is 1e-8 relative to itself. msg says where it first
 * differs. */
int st_hist_close_floor(const double *got, const double *want, int n, double tol, double floor, char *msg, size_t msz);
/* The same with the floor that suits tol: 1e-6 for tol > 1e-6 (f32, c64), else 1e-14. */
double st_hist_floor(double tol);
int st_hist_close(const double *got, const double *want, int n, double tol, char *msg, size_t msz);

/* ---- one solve against its serial reference ---- */

/* A serial reference's result. */
typedef struct {
  int iterations;
  rmaop_reason reason;
  double history[ST_MAXIT + 1];
  double _Complex *x; /* the model's global size; the caller frees it */
} st_ref;

/* The solver's callback records here (st_record_cb, user = the state). */
typedef struct {
  int calls, last_iteration, bad_order;
  int fail_at; /* > 0: return `fail` at this iteration */
  rmaop_status fail;
  double residuals[ST_MAXIT + 1];
  rmaop_vec expect_x; /* the x the solver must pass */
  int x_seen_ok;      /* start at 1 */
} st_cb_state;

rmaop_status st_record_cb(void *user, int iteration, double residual, rmaop_vec x);

/* The vectors of one solve of p in dtype d: y (series 3, or 0 when zero_y), x0 (series 4 times 0.3, when
 * with_x0, else NULL) and x (series 5 times 9: garbage, the solver starts from x0 or zero), with the global
 * values of y and x0. Free with st_solve_vecs_free. */
typedef struct {
  rmaop_vec y, x0, x;
  double _Complex *yg, *x0g;
} st_solve_vecs;

st_solve_vecs st_solve_vecs_create(const st_problem *p, rmaop_dtype d, int with_x0, int zero_y);
void st_solve_vecs_free(st_solve_vecs *v);

/* Collective: a library solve (info, into x, with callback state cb) against the reference: iterations and
 * reason equal; the history within st_hist_tol(d) relative (plus hist_floor x history[0]) and the same on every
 * rank; x within 100 st_hist_tol(d) of ref->x; the callback called once per iteration, in order, with the
 * history value and the solver's x; the times sane. `what` names the solve in the messages. */
void st_check_solve(const char *what, rmaop_dtype d, const rmaop_solver_info *info, const st_ref *ref, rmaop_vec x,
                    const st_cb_state *cb, double hist_floor);

/* ---- argument errors ---- */

/* The signature all rmaop_solve_* share (the argument-error tests loop over solvers). */
typedef rmaop_status (*st_solver_fn)(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *options,
                                     rmaop_solver_info *info);

/* Collective: the vectors the argument-error tests pass to a solver on p (f64): y and x that fit, xbig on a
 * layout of another global size (on every rank), x32 on the model layout but f32. Free with
 * st_bad_vecs_free. */
typedef struct {
  rmaop_layout big;
  rmaop_vec y, x, xbig, x32;
} st_bad_vecs;

st_bad_vecs st_bad_vecs_create(rmaop_ctx ctx, const st_problem *p);
void st_bad_vecs_free(st_bad_vecs *v);

/* ---- sparsity and proximal solver tests (test_solver_sparse.c, test_solver_prox.c) ---- */

/* An entry of a dense test matrix by global (row, column). */
typedef double _Complex (*st_entry_fn)(int64_t i, int64_t j);
/* PyLops-MPI MPIMatrixMult (block rows, one column of X): an N x K matrix of entries f(i, j) (rounded to the dtype);
 * model SCATTER(K), data SCATTER(N), both split like rmaop_layout_create (uneven; zero rows where N < P). */
st_problem st_make_matmul(rmaop_ctx ctx, rmaop_dtype d, int64_t N, int64_t K, st_entry_fn f);
/* A vector on `l` (SCATTER or BROADCAST) holding the global values g (rounded to the dtype). */
rmaop_vec st_vec_from(rmaop_layout l, rmaop_dtype d, const double _Complex *g);
/* Every rank's copy of v's global values (its gather, broadcast); *n (when given) gets their count. The caller
 * frees them. Collective. */
double _Complex *st_vec_global(rmaop_vec v, int64_t *n);

/* ---- device scalars ---- */

/* Whether a solve with RMAOP_SOLVER_SCALARS=graph may replay a CUDA graph on this run's path (rmaop.h,
 * rmaop_ctx_get_stream): device memory and one rank, nccl, or rma over ipc on the kernel path. From the
 * environment the test list sets, not from the library. */
int st_graph_expected(void);
/* Collective: a context whose solvers keep their scalars on the host (mode -1), on the device (0), in CUDA graphs
 * (1), in the resident kernel (2) or in one CUDA graph with a WHILE node (3). */
rmaop_ctx st_scalars_ctx(int mode);
/* Whether RMAOP_SOLVER_SCALARS=while runs a solve as one graph here (st_graph_expected, on rma or one rank: NCCL's
 * captured work cannot go into a WHILE body). */
int st_one_graph_expected(void);
/* The RMAOP_SOLVER_SCALARS value of a mode of st_scalars_ctx. */
const char *st_scalars_name(int mode);

#endif /* RMAOP_SOLVER_TEST_UTIL_H */
