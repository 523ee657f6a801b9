/* Tests of rmaop_solve_lsqr, rmaop_solve_pipecg and rmaop_op_create_diagonal. References, computed serially in
 * double complex on the dense global matrix every rank builds from the operator's formula:
 *  - LSQR: PyLops' LSQR (pylops.optimization.cls_basic.LSQR, Paige & Saunders 1982) line by line;
 *  - pipelined CG: Ghysels & Vanroose 2014, Alg. 4 (unpreconditioned), with the same residual replacement.
 * Histories must match to 1e-10 relative (f64, c128; 1e-4 for f32, c64; plus 1e-14 (1e-6) of history[0] where
 * the residual has converged far: hist_close_floor) at every iteration on every backend,
 * which also shows that backends agree; iteration counts and reasons must be equal. pipeCG is compared with
 * rmaop_solve_cg (same history up to rounding: 1e-8) and LSQR's solution with CGLS's on a well-posed problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static void setup(void) { ctx = rt_ctx(); }
static void teardown(void) { rmaop_ctx_destroy(&ctx); }

enum { MAXIT = 64 };

/* ---- dense global matrices and vectors ---- */

typedef struct {
  int64_t m, n;
  double _Complex *a;
} mat;
#define AT(A, i, j) ((A).a[(size_t)(i) * (size_t)(A).n + (size_t)(j)])

static double _Complex *cvec(int64_t n) {
  double _Complex *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v) abort();
  return v;
}
static mat mat_new(int64_t m, int64_t n) { return (mat){m, n, cvec(m * n)}; }
static void matvec(const mat *A, int adjoint, const double _Complex *x, double _Complex *y) {
  const int64_t m = adjoint ? A->n : A->m, n = adjoint ? A->m : A->n;
  for (int64_t i = 0; i < m; ++i) {
    double _Complex s = 0;
    for (int64_t j = 0; j < n; ++j) s += (adjoint ? conj(AT(*A, j, i)) : AT(*A, i, j)) * x[j];
    y[i] = s;
  }
}
static double _Complex vdot(int64_t n, const double _Complex *a, const double _Complex *b) {
  double _Complex s = 0;
  for (int64_t i = 0; i < n; ++i) s += conj(a[i]) * b[i];
  return s;
}
static double vnorm(int64_t n, const double _Complex *a) { return sqrt(creal(vdot(n, a, a))); }
static double norm_of(int n, const double *v) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += v[i] * v[i];
  return sqrt(s);
}
/* ---- serial references ---- */

typedef struct {
  int iterations;
  rmaop_reason reason;
  double history[MAXIT + 1];
  double _Complex *x;
} ref_result;

typedef struct {
  double damp, atol, btol, conlim; /* as rmaop_solver_options: 0 = PyLops default, < 0 = off */
} lsqr_opts;
static double dflt(double v, double d) { return v == 0 ? d : v < 0 ? 0 : v; }

/* PyLops LSQR.setup / step / run, transcribed (u, v, w vectors; names as there). */
static void ref_lsqr(const mat *A, const double _Complex *y, const double _Complex *x0, int niter, lsqr_opts lo,
                     ref_result *out) {
  const int64_t m = A->m, n = A->n;
  const double damp = lo.damp, dampsq = damp * damp, atol = dflt(lo.atol, 1e-8), btol = dflt(lo.btol, 1e-8);
  const double conlim = dflt(lo.conlim, 1e8), ctol = conlim > 0 ? 1.0 / conlim : 0;
  double _Complex *x = cvec(n), *u = cvec(m), *v = cvec(n), *w = cvec(n), *t = cvec(m > n ? m : n);
  if (x0) memcpy(x, x0, (size_t)n * sizeof *x);
  matvec(A, 0, x, t);
  for (int64_t i = 0; i < m; ++i) u[i] = y[i] - t[i];
  double anorm = 0, acond = 0, ddnorm = 0, res2 = 0, xnorm = 0, xxnorm = 0, z = 0, cs2 = -1, sn2 = 0, alfa = 0;
  double beta = vnorm(m, u);
  if (beta > 0) {
    for (int64_t i = 0; i < m; ++i) u[i] /= beta;
    matvec(A, 1, u, v);
    alfa = vnorm(n, v);
    if (alfa > 0) {
      for (int64_t j = 0; j < n; ++j) v[j] /= alfa, w[j] = v[j];
    }
  }
  const double arnorm0 = alfa * beta, bnorm = beta;
  double rhobar = alfa, phibar = beta, rnorm = beta;
  int it = 0, istop = 0, broke = 0;
  out->history[0] = rnorm;
  while (arnorm0 != 0 && it < niter && istop == 0) {
    matvec(A, 0, v, t);
    for (int64_t i = 0; i < m; ++i) u[i] = t[i] - alfa * u[i];
    beta = vnorm(m, u);
    if (beta > 0) {
      for (int64_t i = 0; i < m; ++i) u[i] /= beta;
      anorm = norm_of(4, (double[]){anorm, alfa, beta, damp});
      matvec(A, 1, u, t);
      for (int64_t j = 0; j < n; ++j) v[j] = t[j] - beta * v[j];
      alfa = vnorm(n, v);
      if (alfa > 0)
        for (int64_t j = 0; j < n; ++j) v[j] /= alfa;
    }
    const double rhobar1 = norm_of(2, (double[]){rhobar, damp}), cs1 = rhobar / rhobar1, sn1 = damp / rhobar1;
    const double psi = sn1 * phibar;
    phibar = cs1 * phibar;
    const double rho = norm_of(2, (double[]){rhobar1, beta}), cs = rhobar1 / rho, sn = beta / rho;
    const double theta = sn * alfa;
    rhobar = -cs * alfa;
    const double phi = cs * phibar;
    phibar = sn * phibar;
    const double tau = sn * phi, t1 = phi / rho, t2 = -theta / rho;
    const double delta = sn2 * rho, gambar = -cs2 * rho, gamma = norm_of(2, (double[]){gambar, theta});
    if (rho == 0 || gamma == 0) {
      broke = 1;
      break;
    }
    double dk2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double _Complex dk = w[j] / rho;
      dk2 += creal(conj(dk) * dk);
      x[j] += t1 * w[j];
      w[j] = v[j] + t2 * w[j];
    }
    ddnorm += dk2;
    const double rhs = phi - delta * z, zbar = rhs / gambar;
    xnorm = sqrt(xxnorm + zbar * zbar);
    cs2 = gambar / gamma, sn2 = theta / gamma, z = rhs / gamma;
    xxnorm += z * z;
    acond = anorm * sqrt(ddnorm);
    res2 += psi * psi;
    rnorm = sqrt(phibar * phibar + res2);
    const double arnorm = alfa * fabs(tau);
    out->history[++it] = sqrt(fabs(rnorm * rnorm - dampsq * xxnorm));
    const double test1 = rnorm / bnorm, test2 = arnorm / arnorm0, test3 = 1.0 / acond;
    const double tt1 = test1 / (1.0 + anorm * xnorm / bnorm), rtol = btol + atol * anorm * xnorm / bnorm;
    if (1 + test3 <= 1) istop = 6;
    if (1 + test2 <= 1) istop = 5;
    if (1 + tt1 <= 1) istop = 4;
    if (test3 <= ctol) istop = 3;
    if (test2 <= atol) istop = 2;
    if (test1 <= rtol) istop = 1;
  }
  out->iterations = it;
  out->reason = broke ? RMAOP_REASON_BREAKDOWN
                : arnorm0 == 0 || istop == 1 || istop == 2 || istop == 4 || istop == 5 ? RMAOP_REASON_TOL
                : istop == 3 || istop == 6 ? RMAOP_REASON_CONLIM : RMAOP_REASON_NITER;
  out->x = x;
  free(u), free(v), free(w), free(t);
}

/* Ghysels & Vanroose 2014, Alg. 4 without preconditioner: r = y - A x0, w = A r; per iteration gamma = r.r,
 * delta = w.r, q = A w, beta = gamma / gamma_old, alpha = gamma / (delta - beta gamma / alpha_old),
 * z = q + beta z, s = w + beta s, p = r + beta p, x += alpha p, r -= alpha s, w -= alpha z; every rr-th
 * iteration r = y - A x, w = A r, s = A p, z = A s. history[k] = sqrt(gamma_k); stop on gamma <= tol. */
static void ref_pipecg(const mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                       int rr, ref_result *out) {
  const int64_t n = A->n;
  double _Complex *x = cvec(n), *r = cvec(n), *w = cvec(n), *q = cvec(n), *z = cvec(n), *s = cvec(n), *p = cvec(n);
  if (x0) memcpy(x, x0, (size_t)n * sizeof *x);
  matvec(A, 0, x, r);
  for (int64_t i = 0; i < n; ++i) r[i] = y[i] - r[i];
  matvec(A, 0, r, w);
  double gamma_old = 0, alpha_old = 0;
  out->reason = RMAOP_REASON_NITER;
  for (int k = 0;; ++k) {
    const double gamma = creal(vdot(n, r, r)), delta = creal(vdot(n, w, r));
    out->history[k] = sqrt(gamma);
    out->iterations = k;
    if (gamma <= tol) {
      out->reason = RMAOP_REASON_TOL;
      break;
    }
    if (k == niter) break;
    matvec(A, 0, w, q);
    const double beta = k ? gamma / gamma_old : 0, alpha = gamma / (k ? delta - beta * gamma / alpha_old : delta);
    for (int64_t i = 0; i < n; ++i) {
      z[i] = q[i] + beta * z[i], s[i] = w[i] + beta * s[i], p[i] = r[i] + beta * p[i];
      x[i] += alpha * p[i], r[i] -= alpha * s[i], w[i] -= alpha * z[i];
    }
    if (rr > 0 && (k + 1) % rr == 0) {
      matvec(A, 0, x, r);
      for (int64_t i = 0; i < n; ++i) r[i] = y[i] - r[i];
      matvec(A, 0, r, w), matvec(A, 0, p, s), matvec(A, 0, s, z);
    }
    gamma_old = gamma, alpha_old = alpha;
  }
  out->x = x;
  free(r), free(w), free(q), free(z), free(s), free(p);
}

/* ---- problems ---- */

typedef struct {
  rmaop_op A;
  rmaop_op parts[4]; /* what A is built from (freed with it) */
  mat M;
  const char *name;
} problem;

static void problem_free(problem *p) {
  rmaop_op_destroy(&p->A);
  for (int i = 0; i < 4; ++i) rmaop_op_destroy(&p->parts[i]);
  free(p->M.a);
  p->M.a = NULL;
}

/* blockdiag SPD: rank r's block 1 / (1 + |i - j|) + (r + 1) delta_ij of spd_rows(r) rows (rank 1 none). */
static int64_t spd_rows(int r) { return (int64_t[]){10, 0, 7, 5}[r % 4] + (r >= 4); }
static double spd_val(int r, int64_t i, int64_t j) { return 1.0 / (1.0 + (double)llabs(i - j)) + (i == j ? r + 1.0 : 0.0); }

static problem make_spd(rmaop_dtype d) {
  problem p = {.name = "blockdiag SPD"};
  int64_t n = 0, off = 0;
  for (int r = 0; r < rt_size; ++r) n += spd_rows(r);
  p.M = mat_new(n, n);
  for (int r = 0; r < rt_size; off += spd_rows(r), ++r)
    for (int64_t i = 0; i < spd_rows(r); ++i)
      for (int64_t j = 0; j < spd_rows(r); ++j) AT(p.M, off + i, off + j) = rt_round(d, spd_val(r, i, j));
  const int64_t nr = spd_rows(rt_rank);
  void *B = rt_alloc(d, nr * nr);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < nr; ++j) rt_store(d, B, i * nr + j, spd_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = nr, .dense = B};
  RT_OK(rmaop_op_create_blockdiag(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

/* vstack: VCOLS columns (replicated model), vs_rows(r) rows on rank r; full column rank. */
enum { VCOLS = 6 };
static int64_t vs_rows(int r) { return (int64_t[]){9, 0, 7, 4}[r % 4] + (r >= 4); }
static double _Complex vs_val(int r, int64_t i, int64_t j) {
  return rt_value(17 * r + 5 * i + 11 * j, 8) + (i % VCOLS == j ? 2.0 : 0.0);
}
static problem make_vstack(rmaop_dtype d) {
  problem p = {.name = "vstack"};
  int64_t m = 0, off = 0;
  for (int r = 0; r < rt_size; ++r) m += vs_rows(r);
  p.M = mat_new(m, VCOLS);
  for (int r = 0; r < rt_size; off += vs_rows(r), ++r)
    for (int64_t i = 0; i < vs_rows(r); ++i)
      for (int64_t j = 0; j < VCOLS; ++j) AT(p.M, off + i, j) = rt_round(d, vs_val(r, i, j));
  const int64_t nr = vs_rows(rt_rank);
  void *B = rt_alloc(d, nr * VCOLS);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < VCOLS; ++j) rt_store(d, B, i * VCOLS + j, vs_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = VCOLS, .dense = B};
  RT_OK(rmaop_op_create_vstack(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

/* PyLops FirstDerivative centered3, edge False, DN samples; rank 0 one row, the last rank the rest. */
enum { DN = 40 };
static rmaop_op make_deriv_op(rmaop_dtype d) {
  const int64_t rows = rt_size == 1 ? DN : rt_rank == 0 ? 1 : rt_rank == rt_size - 1 ? DN - 1 : 0;
  rmaop_deriv_spec spec = {.grid = {.ndim = 1, .dims = {DN}, .local_rows = rows}, .axis = 0,
                           .kind = RMAOP_DERIV_CENTERED3, .edge = 0, .dtype = d};
  rmaop_op D = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &spec, &D));
  return D;
}
static mat deriv_mat(void) {
  mat M = mat_new(DN, DN);
  for (int64_t i = 1; i < DN - 1; ++i) AT(M, i, i + 1) = 0.5, AT(M, i, i - 1) = -0.5;
  return M;
}
static problem make_derivative(rmaop_dtype d) {
  problem p = {.name = "first derivative", .M = deriv_mat()};
  p.A = make_deriv_op(d);
  return p;
}

/* The bench's SPD operator D^H D + diag(g), g_i = 1 + 0.1 sin(i) (real for every dtype, so A stays Hermitian),
 * built from the derivative, the adjoint, product and sum composites and the diagonal operator. */
static double diag_val(int64_t i) { return 1.0 + 0.1 * sin((double)i); }
static rmaop_vec make_vec(rmaop_layout l, rmaop_dtype d, int s, double scale, double _Complex **global);
static problem make_dtd(rmaop_dtype d) {
  problem p = {.name = "D^H D + diag"};
  mat D = deriv_mat();
  p.M = mat_new(DN, DN);
  for (int64_t i = 0; i < DN; ++i)
    for (int64_t j = 0; j < DN; ++j) {
      double _Complex s = i == j ? rt_round(d, diag_val(i)) : 0;
      for (int64_t k = 0; k < DN; ++k) s += conj(AT(D, k, i)) * AT(D, k, j);
      AT(p.M, i, j) = s;
    }
  free(D.a);
  p.parts[0] = make_deriv_op(d);
  RT_OK(rmaop_op_create_adjoint(p.parts[0], &p.parts[1]));
  RT_OK(rmaop_op_create_product(p.parts[1], p.parts[0], &p.parts[2]));
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p.parts[0], &oi));
  rmaop_vec g = NULL;
  RT_OK(rmaop_vec_create(oi.model, d, &g));
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(g, &vi));
  void *buf = rt_alloc(d, vi.local_n);
  for (int64_t i = 0; i < vi.local_n; ++i) rt_store(d, buf, i, diag_val(vi.offset + i));
  RT_OK(rmaop_vec_write_local(g, buf));
  free(buf);
  RT_OK(rmaop_op_create_diagonal(g, &p.parts[3]));
  rmaop_vec_destroy(&g); /* the operator keeps its own copy */
  rmaop_op ops[2] = {p.parts[2], p.parts[3]};
  RT_OK(rmaop_op_create_sum(2, ops, &p.A));
  return p;
}

/* ---- vectors ---- */

static rmaop_vec make_vec(rmaop_layout l, rmaop_dtype d, int s, double scale, double _Complex **global) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  double _Complex *g = cvec(info.global_n);
  for (int64_t i = 0; i < info.global_n; ++i) g[i] = rt_round(d, scale * rt_value(i, s));
  void *buf = rt_alloc(d, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i) rt_store(d, buf, i, g[info.offset + i]);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
  if (global) *global = g;
  else free(g);
  return v;
}

static int x_matches(rmaop_vec x, const double _Complex *ref, double tol, char *msg, size_t msz) {
  rmaop_vec_info info;
  if (rmaop_vec_get_info(x, &info) != RMAOP_OK) return 0;
  double scale = 0;
  for (int64_t i = 0; i < info.global_n; ++i) scale = fmax(scale, cabs(ref[i]));
  void *buf = rt_alloc(info.dtype, info.local_n);
  rmaop_vec_read_local(x, buf);
  int ok = 1;
  for (int64_t i = 0; i < info.local_n && ok; ++i) {
    double _Complex got = rt_load(info.dtype, buf, i), want = ref[info.offset + i];
    if (!rt_close(got, want, tol, scale))
      ok = 0, snprintf(msg, msz, "x[%lld] = %.17g%+.17gi, reference %.17g%+.17gi", (long long)(info.offset + i),
                       creal(got), cimag(got), creal(want), cimag(want));
  }
  free(buf);
  return ok;
}

static double hist_tol(rmaop_dtype d) { return d == RMAOP_F64 || d == RMAOP_C128 ? 1e-10 : 1e-4; }

/* history[0..n] against a reference: relative per entry, with a floor of `floor` x history[0]: rounding
 * errors scale with the problem (||y||), so once a solver has converged by 1e-8 its residual estimate carries
 * ~1e-16 ||y|| of absolute error, which is 1e-8 relative to itself. msg says where it first differs. */
static int hist_close_floor(const double *got, const double *want, int n, double tol, double floor, char *msg,
                            size_t msz) {
  for (int k = 0; k <= n; ++k)
    if (!(fabs(got[k] - want[k]) <= tol * want[k] + floor * want[0])) {
      snprintf(msg, msz, "history[%d] = %.17g, reference %.17g (relative %.3g)", k, got[k], want[k],
               fabs(got[k] - want[k]) / want[k]);
      return 0;
    }
  return 1;
}
static int hist_close(const double *got, const double *want, int n, double tol, char *msg, size_t msz) {
  return hist_close_floor(got, want, n, tol, tol > 1e-6 ? 1e-6 : 1e-14, msg, msz);
}

/* ---- one solve against the reference ---- */

enum { LSQR, PIPECG };
typedef struct {
  int solver, niter;
  double tol;
  lsqr_opts lo;
  int rr, with_x0, zero_y;
} run_cfg;

typedef struct {
  int calls, last, bad_order;
  double residuals[MAXIT + 1];
  rmaop_vec expect_x;
  int x_ok;
} cb_state;

static rmaop_status record_cb(void *user, int iteration, double residual, rmaop_vec x) {
  cb_state *s = user;
  s->calls++;
  s->bad_order |= iteration != s->last + 1;
  s->last = iteration;
  if (iteration >= 0 && iteration <= MAXIT) s->residuals[iteration] = residual;
  s->x_ok &= x == s->expect_x;
  return RMAOP_OK;
}

static void set_options(rmaop_solver_options *o, const run_cfg *rc, rmaop_vec x0) {
  rmaop_solver_options_init(o);
  o->niter = rc->niter, o->tol = rc->tol, o->damp = rc->lo.damp, o->x0 = x0;
  o->atol = rc->lo.atol, o->btol = rc->lo.btol, o->conlim = rc->lo.conlim, o->residual_replacement = rc->rr;
}

/* Solves with the library and serially; checks history, x, iterations, reason, callback. The caller frees
 * ref->x; *keep (when given) receives the library's info (the caller frees it). */
static void run_solve(const problem *p, rmaop_dtype d, const run_cfg *rc, ref_result *ref, rmaop_solver_info *keep) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  double _Complex *yg = NULL, *x0g = NULL;
  rmaop_vec y = make_vec(oi.data, d, 3, rc->zero_y ? 0.0 : 1.0, &yg);
  rmaop_vec x0 = rc->with_x0 ? make_vec(oi.model, d, 4, 0.3, &x0g) : NULL;
  rmaop_vec x = make_vec(oi.model, d, 5, 9.0, NULL); /* garbage: the solver starts from x0 or zero */
  cb_state cb = {.expect_x = x, .x_ok = 1};
  rmaop_solver_options o;
  set_options(&o, rc, x0);
  o.callback = record_cb, o.user = &cb;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  if (rc->solver == LSQR) {
    RT_OK(rmaop_solve_lsqr(p->A, y, x, &o, &info));
    ref_lsqr(&p->M, yg, x0g, rc->niter, rc->lo, ref);
  } else {
    RT_OK(rmaop_solve_pipecg(p->A, y, x, &o, &info));
    ref_pipecg(&p->M, yg, x0g, rc->niter, rc->tol, rc->rr, ref);
  }
  char what[256], msg[400] = "";
  snprintf(what, sizeof what, "%s on %s (%s, niter %d, tol %g, damp %g, atol %g, btol %g, conlim %g, rr %d%s%s)",
           rc->solver == LSQR ? "LSQR" : "pipeCG", p->name, rmaop_dtype_name(d), rc->niter, rc->tol, rc->lo.damp,
           rc->lo.atol, rc->lo.btol, rc->lo.conlim, rc->rr, rc->with_x0 ? ", x0" : "", rc->zero_y ? ", y = 0" : "");
  RT_CHECK(info.iterations == ref->iterations && info.reason == ref->reason && info.history != NULL,
           "%s: %d iterations, reason %d; reference %d, reason %d", what, info.iterations, (int)info.reason,
           ref->iterations, (int)ref->reason);
  const double tol = hist_tol(d);
  RT_CHECK(hist_close(info.history, ref->history, info.iterations, tol, msg, sizeof msg), "%s: %s", what, msg);
  RT_CHECK(rt_same_everywhere(info.history, (size_t)(info.iterations + 1) * sizeof(double)),
           "%s: ranks hold different histories", what);
  RT_CHECK(x_matches(x, ref->x, 100 * tol, msg, sizeof msg), "%s: %s", what, msg);
  int ok = cb.calls == info.iterations && !cb.bad_order && cb.x_ok;
  for (int k = 1; k <= info.iterations && ok; ++k) ok = cb.residuals[k] == info.history[k];
  RT_CHECK(ok, "%s: callback called %d times (iterations %d), order %s, x %s", what, cb.calls, info.iterations,
           cb.bad_order ? "wrong" : "right", cb.x_ok ? "right" : "wrong");
  RT_CHECK(info.time_total >= 0 && info.time_comm >= 0 && info.time_comm <= info.time_total + 1e-6,
           "%s: times total %g, comm %g", what, info.time_total, info.time_comm);
  if (keep) *keep = info;
  else rmaop_solver_info_free(&info);
  free(yg), free(x0g);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x0), rmaop_vec_destroy(&x);
}

static void solve(const problem *p, rmaop_dtype d, run_cfg rc) {
  ref_result ref;
  run_solve(p, d, &rc, &ref, NULL);
  free(ref.x);
}

static const rmaop_dtype all_dtypes[4] = {RMAOP_F64, RMAOP_C128, RMAOP_F32, RMAOP_C64};

/* ---- LSQR ---- */

START_TEST(test_lsqr_derivative) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    problem p = make_derivative(d);
    if (k < 2) {
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10});
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3});
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3, .with_x0 = 1});
    } else {
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 4, .lo.damp = 0.3, .with_x0 = k == 3});
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_lsqr_vstack) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    problem p = make_vstack(d);
    solve(&p, d, (run_cfg){.solver = LSQR, .niter = k < 2 ? 5 : 3});
    if (k < 2) solve(&p, d, (run_cfg){.solver = LSQR, .niter = 5, .lo.damp = 0.5, .with_x0 = 1});
    problem_free(&p);
  }
}
END_TEST

/* A well-posed least-squares problem (vstack, full column rank, 6 unknowns): LSQR and CGLS reach the same x. */
START_TEST(test_lsqr_matches_cgls) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 2; ++k) {
    const rmaop_dtype d = ds[k];
    problem p = make_vstack(d);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    for (int damped = 0; damped < 2; ++damped) {
      rmaop_vec y = make_vec(oi.data, d, 3, 1.0, NULL), xl = make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_vec xc = make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 30, o.damp = damped ? 0.7 : 0.0, o.atol = o.btol = 1e-14;
      rmaop_solver_info il, ic;
      RT_OK(rmaop_solve_lsqr(p.A, y, xl, &o, &il));
      o.tol = 1e-26;
      RT_OK(rmaop_solve_cgls(p.A, y, xc, &o, &ic));
      double _Complex *cg = cvec(VCOLS);
      RT_OK(rmaop_vec_read_local(xc, cg)); /* BROADCAST: the whole x on every rank; f64 reads as pairs below */
      double _Complex ref[VCOLS];
      for (int64_t j = 0; j < VCOLS; ++j) ref[j] = rt_load(d, cg, j);
      char msg[400] = "";
      RT_CHECK(x_matches(xl, ref, 1e-8, msg, sizeof msg), "%s LSQR vs CGLS (damp %g, %d / %d iterations): %s",
               rmaop_dtype_name(d), o.damp, il.iterations, ic.iterations, msg);
      RT_CHECK(il.reason == RMAOP_REASON_TOL, "LSQR reason %d after %d iterations", (int)il.reason, il.iterations);
      free(cg);
      rmaop_solver_info_free(&il), rmaop_solver_info_free(&ic);
      rmaop_vec_destroy(&y), rmaop_vec_destroy(&xl), rmaop_vec_destroy(&xc);
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_lsqr_stopping) {
  problem p = make_spd(RMAOP_F64);
  ref_result ref;
  /* atol = btol = 1e-6 on a consistent square system: istop 1 or 2 well before niter (and before the Krylov space
   * of the 10..22 unknowns is exhausted, where the residual estimates are rounding noise) -> TOL */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 40, .lo = {.atol = 1e-6, .btol = 1e-6}}, &ref, NULL);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations < 40, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  /* tests switched off: NITER; a loose btol (the compatible-system test, istop 1): TOL early */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 6, .lo = {.atol = -1, .btol = -1, .conlim = -1}}, &ref,
            NULL);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_NITER && ref.iterations == 6, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 6, .lo = {.atol = -1, .btol = 0.3}}, &ref, NULL);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations < 6, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  /* conlim 3: the condition estimate (1.0 after the first iteration, where a tie would decide) exceeds it
   * after a few iterations -> CONLIM */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 12, .lo = {.conlim = 3.0}}, &ref, NULL);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_CONLIM, "reference: reason %d", (int)ref.reason);
  /* loose atol with damping (the least-squares test, istop 2) */
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 12, .lo = {.damp = 0.5, .atol = 1e-2, .btol = -1}});
  /* y = 0: A^H y = 0, no iteration, TOL, x = 0 */
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 5, .zero_y = 1});
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 0, .with_x0 = 1});
  problem_free(&p);
}
END_TEST

/* ---- pipelined CG ---- */

START_TEST(test_pipecg_reference) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    problem p = make_spd(d), q = make_dtd(d);
    const int full = k < 2;
    solve(&p, d, (run_cfg){.solver = PIPECG, .niter = full ? 8 : 4});
    solve(&q, d, (run_cfg){.solver = PIPECG, .niter = full ? 8 : 4, .with_x0 = !full});
    if (full) {
      solve(&p, d, (run_cfg){.solver = PIPECG, .niter = 8, .with_x0 = 1, .rr = 3});
      solve(&q, d, (run_cfg){.solver = PIPECG, .niter = 9, .rr = 2});
      solve(&q, d, (run_cfg){.solver = PIPECG, .niter = 1});
    }
    problem_free(&p), problem_free(&q);
  }
}
END_TEST

/* pipeCG and CG compute the same residuals in exact arithmetic: the histories agree to 1e-8. */
START_TEST(test_pipecg_vs_cg) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = ds[k % 2];
    problem p = k < 2 ? make_spd(d) : make_dtd(d);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    for (int rr = 0; rr <= 3; rr += 3) {
      rmaop_vec y = make_vec(oi.data, d, 3, 1.0, NULL), x = make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 6, o.residual_replacement = rr;
      rmaop_solver_info ic, ip;
      RT_OK(rmaop_solve_cg(p.A, y, x, &o, &ic));
      RT_OK(rmaop_solve_pipecg(p.A, y, x, &o, &ip));
      char msg[400] = "";
      RT_CHECK(ic.iterations == ip.iterations && hist_close(ip.history, ic.history, ic.iterations, 1e-8, msg, sizeof msg),
               "%s on %s, rr %d: pipeCG %d iterations vs CG %d: %s", rmaop_dtype_name(d), p.name, rr, ip.iterations,
               ic.iterations, msg);
      rmaop_solver_info_free(&ic), rmaop_solver_info_free(&ip);
      rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_pipecg_stopping) {
  problem p = make_spd(RMAOP_F64);
  ref_result ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 8}, &ref, NULL);
  free(ref.x);
  const double tol = ref.history[2] * ref.history[3]; /* between the 2nd and 3rd squared residuals */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 8, .tol = tol}, &ref, NULL);
  free(ref.x);
  RT_CHECK(ref.iterations == 3 && ref.reason == RMAOP_REASON_TOL, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 2, .tol = tol}, &ref, NULL);
  free(ref.x);
  RT_CHECK(ref.iterations == 2 && ref.reason == RMAOP_REASON_NITER, "reference: %d iterations", ref.iterations);
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 8, .tol = 1e30});
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 0, .with_x0 = 1});
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 5, .zero_y = 1});
  problem_free(&p);
}
END_TEST

/* Reductions per solve, counted by the trace (every reduction records one call at its wait): pipeCG has ONE per
 * iteration (plus the one that yields ||r_niter||), LSQR two per iteration plus two at set-up, CG two plus one. The
 * operator (block-diagonal) reduces nothing itself. */
static int reductions_of(const problem *p, int which, int niter) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  rmaop_vec y = make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = niter, o.atol = o.btol = o.conlim = -1;
  rmaop_solver_info info;
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, 1));
  RT_OK(which == 0 ? rmaop_solve_cg(p->A, y, x, &o, &info)
                   : which == 1 ? rmaop_solve_pipecg(p->A, y, x, &o, &info) : rmaop_solve_lsqr(p->A, y, x, &o, &info));
  RT_OK(rmaop_trace_enable(ctx, 0));
  RT_CHECK(info.iterations == niter, "solver %d: %d iterations of %d", which, info.iterations, niter);
  int nsites = 0, calls = 0;
  RT_OK(rmaop_trace_count(ctx, &nsites));
  for (int i = 0; i < nsites; ++i) {
    rmaop_trace_site site;
    RT_OK(rmaop_trace_get(ctx, i, &site));
    if (strcmp(site.kind, "reduce") == 0) calls += (int)site.calls;
  }
  rmaop_solver_info_free(&info);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
  return calls;
}

START_TEST(test_reduction_count) {
  problem p = make_spd(RMAOP_F64);
  const int niter = 5;
  const int cg = reductions_of(&p, 0, niter), pipe = reductions_of(&p, 1, niter), lsqr = reductions_of(&p, 2, niter);
  RT_CHECK(cg == 2 * niter + 1 && pipe == niter + 1 && lsqr == 2 * niter + 2,
           "reductions for %d iterations: CG %d (want %d), pipeCG %d (want %d), LSQR %d (want %d)", niter, cg,
           2 * niter + 1, pipe, niter + 1, lsqr, 2 * niter + 2);
  problem_free(&p);
}
END_TEST

/* ---- diagonal operator ---- */

START_TEST(test_diagonal) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 13, &l));
    double _Complex *dg = NULL, *xg = NULL;
    rmaop_vec dv = make_vec(l, d, 6, 1.0, &dg), x = make_vec(l, d, 2, 1.0, &xg), y = NULL, z = NULL;
    rmaop_op D = NULL;
    RT_OK(rmaop_op_create_diagonal(dv, &D));
    rmaop_vec_destroy(&dv); /* copied */
    double err = 1;
    RT_OK(rmaop_op_dottest(D, 11, &err));
    RT_CHECK(err < (d == RMAOP_F64 || d == RMAOP_C128 ? 1e-12 : 1e-5), "%s diagonal dot test %g", rmaop_dtype_name(d), err);
    RT_OK(rmaop_vec_duplicate(x, &y));
    RT_OK(rmaop_vec_duplicate(x, &z));
    RT_OK(rmaop_op_apply(D, x, y));
    RT_OK(rmaop_op_apply_adjoint(D, x, z));
    double _Complex *fy = cvec(13), *fz = cvec(13);
    for (int i = 0; i < 13; ++i) fy[i] = dg[i] * xg[i], fz[i] = conj(dg[i]) * xg[i];
    char msg[400] = "";
    RT_CHECK(x_matches(y, fy, rt_tol(d), msg, sizeof msg), "%s diagonal forward: %s", rmaop_dtype_name(d), msg);
    RT_CHECK(x_matches(z, fz, rt_tol(d), msg, sizeof msg), "%s diagonal adjoint: %s", rmaop_dtype_name(d), msg);
    free(dg), free(xg), free(fy), free(fz);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&z);
    rmaop_op_destroy(&D);
    rmaop_layout_destroy(&l);
  }
  /* and the composite of the bench passes its dot test */
  for (int k = 0; k < 4; ++k) {
    problem q = make_dtd(all_dtypes[k]);
    double err = 1;
    RT_OK(rmaop_op_dottest(q.A, 5, &err));
    RT_CHECK(err < (k < 2 ? 1e-12 : 1e-5), "%s D^H D + diag dot test %g", rmaop_dtype_name(all_dtypes[k]), err);
    problem_free(&q);
  }
  rmaop_op D = NULL;
  RT_EXPECT(rmaop_op_create_diagonal(NULL, &D), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("d is NULL");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_bad_input) {
  problem p = make_spd(RMAOP_F64);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p.A, &oi));
  rmaop_vec y = make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_layout big = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, p.M.n + 2 * rt_size, &big));
  rmaop_vec xbig = make_vec(big, RMAOP_F64, 5, 1.0, NULL), x32 = make_vec(oi.model, RMAOP_F32, 5, 1.0, NULL);
  rmaop_solver_options o;
  rmaop_solver_info info;
  for (int which = 0; which < 2; ++which) {
    rmaop_status (*solver)(rmaop_op, rmaop_vec, rmaop_vec, const rmaop_solver_options *, rmaop_solver_info *) =
        which ? rmaop_solve_pipecg : rmaop_solve_lsqr;
    const char *fn = which ? "rmaop_solve_pipecg" : "rmaop_solve_lsqr";
    rmaop_solver_options_init(&o);
    RT_CHECK(o.atol == 0 && o.btol == 0 && o.conlim == 0 && o.residual_replacement == 0,
             "rmaop_solver_options_init: atol %g btol %g conlim %g rr %d", o.atol, o.btol, o.conlim,
             o.residual_replacement);
    o.niter = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("niter = -1 is negative");
    RT_MESSAGE_HAS(fn);
    rmaop_solver_options_init(&o);
    RT_EXPECT(solver(NULL, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("operator is NULL");
    RT_EXPECT(solver(p.A, NULL, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("y is NULL");
    RT_EXPECT(solver(p.A, y, NULL, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("x is NULL");
    RT_EXPECT(solver(p.A, y, x, NULL, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("options is NULL");
    RT_EXPECT(solver(p.A, y, x, &o, NULL), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("info is NULL");
    o.atol = NAN;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("must not be NaN");
    o.atol = 0, o.residual_replacement = -2;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("residual_replacement = -2 is negative");
    /* one rank's bad option: every rank returns (they agree before the first reduction), none hangs */
    o.residual_replacement = rt_rank == rt_size - 1 ? -1 : 0;
    RT_EXPECT_ON(solver(p.A, y, x, &o, &info), rt_size - 1, RMAOP_ERR_ARG);
    o.residual_replacement = 0;
    o.niter = rt_rank == 0 ? -3 : 5;
    RT_EXPECT_ON(solver(p.A, y, x, &o, &info), 0, RMAOP_ERR_ARG);
    o.niter = 10;
    RT_EXPECT(solver(p.A, y, xbig, &o, &info), RT_BIT(RMAOP_ERR_ARG)); /* mismatched layout, on every rank */
    RT_MESSAGE_HAS("elements here");
    o.x0 = x32; /* x0 of another dtype */
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("f32");
  }
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x), rmaop_vec_destroy(&xbig), rmaop_vec_destroy(&x32);
  rmaop_layout_destroy(&big);
  problem_free(&p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_krylov");
  TCase *tl = tcase_create("lsqr");
  tcase_add_checked_fixture(tl, setup, teardown);
  tcase_add_test(tl, test_lsqr_derivative);
  tcase_add_test(tl, test_lsqr_vstack);
  tcase_add_test(tl, test_lsqr_matches_cgls);
  tcase_add_test(tl, test_lsqr_stopping);
  suite_add_tcase(s, tl);
  TCase *tp = tcase_create("pipecg");
  tcase_add_checked_fixture(tp, setup, teardown);
  tcase_add_test(tp, test_pipecg_reference);
  tcase_add_test(tp, test_pipecg_vs_cg);
  tcase_add_test(tp, test_pipecg_stopping);
  tcase_add_test(tp, test_reduction_count);
  suite_add_tcase(s, tp);
  TCase *te = tcase_create("misc");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_diagonal);
  tcase_add_test(te, test_bad_input);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, make_suite); }
