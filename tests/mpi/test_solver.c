/* Tests of rmaop_solve_cg and rmaop_solve_cgls. Reference: serial implementations of PyLops' CG and CGLS
 * recurrences (pylops.optimization.cls_basic), written here in double complex on a dense global matrix that
 * every rank builds from the operator's formula (block-diagonal SPD blocks, a centered first derivative, a
 * vstack). The library's residual history must match the reference to 1e-10 relative at every iteration
 * (f64, c128; 1e-4 for f32, c64), on every backend: that is how backends are shown to agree on histories.
 * The final x, the iteration count and the stopping reason must match too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

enum { MAXIT = 64 };

/* ---- dense global matrices ---- */

typedef struct {
  int64_t m, n;
  double _Complex *a;
} mat;
#define AT(A, i, j) ((A).a[(size_t)(i) * (size_t)(A).n + (size_t)(j)])

static mat mat_new(int64_t m, int64_t n) {
  mat A = {m, n, calloc((size_t)(m * n > 0 ? m * n : 1), sizeof(double _Complex))};
  if (!A.a)
    abort();
  return A;
}
static void mat_free(mat *A) {
  free(A->a);
  A->a = NULL;
}
/* y = A x (adjoint = 0) or y = A^H x */
static void matvec(const mat *A, int adjoint, const double _Complex *x, double _Complex *y) {
  const int64_t m = adjoint ? A->n : A->m, n = adjoint ? A->m : A->n;
  for (int64_t i = 0; i < m; ++i) {
    double _Complex s = 0;
    for (int64_t j = 0; j < n; ++j)
      s += (adjoint ? conj(AT(*A, j, i)) : AT(*A, i, j)) * x[j];
    y[i] = s;
  }
}
static double _Complex vdot(int64_t n, const double _Complex *a, const double _Complex *b) {
  double _Complex s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += conj(a[i]) * b[i];
  return s;
}
static double _Complex *cvec(int64_t n) {
  double _Complex *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v)
    abort();
  return v;
}

/* ---- serial PyLops recurrences ---- */

typedef struct {
  int iterations;
  rmaop_reason reason;
  double history[MAXIT + 1];
  double _Complex *x; /* A->n */
} ref_result;

/* CG: r = y - A x0, c = r, kold = |r.r|; a = kold / |c^H A c|; x += a c; r -= a Ac; k = |r.r|;
 * c = r + (k / kold) c; kold = k; while it < niter and kold > tol. */
static void ref_cg(const mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                   ref_result *out) {
  const int64_t n = A->n;
  double _Complex *x = cvec(n), *r = cvec(n), *c = cvec(n), *Ac = cvec(n);
  if (x0)
    memcpy(x, x0, (size_t)n * sizeof *x);
  matvec(A, 0, x, r);
  for (int64_t i = 0; i < n; ++i)
    r[i] = y[i] - r[i], c[i] = r[i];
  double kold = cabs(vdot(n, r, r));
  int it = 0;
  out->history[0] = sqrt(kold);
  while (it < niter && kold > tol) {
    matvec(A, 0, c, Ac);
    const double a = kold / cabs(vdot(n, c, Ac));
    for (int64_t i = 0; i < n; ++i)
      x[i] += a * c[i], r[i] -= a * Ac[i];
    const double k = cabs(vdot(n, r, r));
    for (int64_t i = 0; i < n; ++i)
      c[i] = r[i] + (k / kold) * c[i];
    kold = k;
    out->history[++it] = sqrt(k);
  }
  out->iterations = it;
  out->reason = kold <= tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  out->x = x;
  free(r), free(c), free(Ac);
}

/* CGLS (damp2 = eps^2): s = y - A x0; r = A^H s - damp2 x0; c = r; q = A c; kold = |r.r|; history = ||s||;
 * a = kold / (q.q + damp2 c.c); x += a c; s -= a q; r = A^H s - damp2 x; k = |r.r|; c = r + (k / kold) c;
 * q = A c; kold = k. */
static void ref_cgls(const mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                     double damp, ref_result *out) {
  const int64_t m = A->m, n = A->n;
  const double damp2 = damp * damp;
  double _Complex *x = cvec(n), *s = cvec(m), *r = cvec(n), *c = cvec(n), *q = cvec(m);
  if (x0)
    memcpy(x, x0, (size_t)n * sizeof *x);
  matvec(A, 0, x, s);
  for (int64_t i = 0; i < m; ++i)
    s[i] = y[i] - s[i];
  matvec(A, 1, s, r);
  for (int64_t j = 0; j < n; ++j)
    r[j] -= damp2 * x[j], c[j] = r[j];
  matvec(A, 0, c, q);
  double kold = cabs(vdot(n, r, r));
  int it = 0;
  out->history[0] = sqrt(creal(vdot(m, s, s)));
  while (it < niter && kold > tol) {
    const double a = kold / (creal(vdot(m, q, q)) + damp2 * creal(vdot(n, c, c)));
    for (int64_t j = 0; j < n; ++j)
      x[j] += a * c[j];
    for (int64_t i = 0; i < m; ++i)
      s[i] -= a * q[i];
    matvec(A, 1, s, r);
    for (int64_t j = 0; j < n; ++j)
      r[j] -= damp2 * x[j];
    const double k = cabs(vdot(n, r, r));
    for (int64_t j = 0; j < n; ++j)
      c[j] = r[j] + (k / kold) * c[j];
    matvec(A, 0, c, q);
    kold = k;
    out->history[++it] = sqrt(creal(vdot(m, s, s)));
  }
  out->iterations = it;
  out->reason = kold <= tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  out->x = x;
  free(s), free(r), free(c), free(q);
}

/* ---- problems ---- */

/* (a) block-diagonal SPD: rank r's block A_r[i][j] = 1 / (1 + |i - j|) + (r + 1) delta_ij, of n_r rows
 * (rank 1 holds none). */
static int64_t spd_rows(int r) {
  return (int64_t[]){10, 0, 7, 5}[r % 4] + (r >= 4);
}
static double spd_val(int r, int64_t i, int64_t j) {
  return 1.0 / (1.0 + (double)llabs(i - j)) + (i == j ? r + 1.0 : 0.0);
}

/* (b) a vstack: rank r's rows B_r[i][j], VCOLS columns, n_r rows (rank 1 none). */
enum { VCOLS = 6 };
static int64_t vs_rows(int r) {
  return (int64_t[]){9, 0, 7, 4}[r % 4] + (r >= 4);
}
static double _Complex vs_val(int r, int64_t i, int64_t j) {
  return rt_value(17 * r + 5 * i + 11 * j, 8) + (i % VCOLS == j ? 2.0 : 0.0);
}

typedef struct {
  rmaop_op A;
  mat M; /* global, as the dtype holds it */
  const char *name;
} problem;

static problem make_spd(rmaop_dtype d) {
  problem p = {NULL, {0, 0, NULL}, "blockdiag SPD"};
  int64_t n = 0, off = 0;
  for (int r = 0; r < rt_size; ++r)
    n += spd_rows(r);
  p.M = mat_new(n, n);
  for (int r = 0; r < rt_size; ++r) {
    for (int64_t i = 0; i < spd_rows(r); ++i)
      for (int64_t j = 0; j < spd_rows(r); ++j)
        AT(p.M, off + i, off + j) = rt_round(d, spd_val(r, i, j));
    off += spd_rows(r);
  }
  const int64_t nr = spd_rows(rt_rank);
  void *B = rt_alloc(d, nr * nr);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      rt_store(d, B, i * nr + j, spd_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = nr, .dense = B};
  RT_OK(rmaop_op_create_blockdiag(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

static problem make_vstack(rmaop_dtype d) {
  problem p = {NULL, {0, 0, NULL}, "vstack"};
  int64_t m = 0, off = 0;
  for (int r = 0; r < rt_size; ++r)
    m += vs_rows(r);
  p.M = mat_new(m, VCOLS);
  for (int r = 0; r < rt_size; ++r) {
    for (int64_t i = 0; i < vs_rows(r); ++i)
      for (int64_t j = 0; j < VCOLS; ++j)
        AT(p.M, off + i, j) = rt_round(d, vs_val(r, i, j));
    off += vs_rows(r);
  }
  const int64_t nr = vs_rows(rt_rank);
  void *B = rt_alloc(d, nr * VCOLS);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < VCOLS; ++j)
      rt_store(d, B, i * VCOLS + j, vs_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = VCOLS, .dense = B};
  RT_OK(rmaop_op_create_vstack(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

/* (c) PyLops FirstDerivative, centered (3 points), edge False, N samples, h = 1, split: rank 0 one row, the
 * last rank the rest, the others none. y[i] = 0.5 (x[i+1] - x[i-1]) inside, 0 at both ends. */
enum { DN = 40 };
static problem make_derivative(rmaop_dtype d) {
  problem p = {NULL, mat_new(DN, DN), "first derivative centered3"};
  for (int64_t i = 1; i < DN - 1; ++i)
    AT(p.M, i, i + 1) = 0.5, AT(p.M, i, i - 1) = -0.5;
  int64_t rows = rt_size == 1 ? DN : rt_rank == 0 ? 1 : rt_rank == rt_size - 1 ? DN - 1 : 0;
  rmaop_deriv_spec spec = {.grid = {.ndim = 1, .dims = {DN}, .local_rows = rows},
                           .axis = 0,
                           .kind = RMAOP_DERIV_CENTERED3,
                           .edge = 0,
                           .dtype = d};
  RT_OK(rmaop_op_create_first_derivative(ctx, &spec, &p.A));
  return p;
}

static void problem_free(problem *p) {
  rmaop_op_destroy(&p->A);
  mat_free(&p->M);
}

/* ---- vectors ---- */

/* A vector on `l` holding series s (times `scale`) rounded to the dtype; *global gets the values. */
static rmaop_vec make_vec(rmaop_layout l, rmaop_dtype d, int s, double scale, double _Complex **global) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  double _Complex *g = cvec(info.global_n);
  for (int64_t i = 0; i < info.global_n; ++i)
    g[i] = rt_round(d, scale * rt_value(i, s));
  void *buf = rt_alloc(d, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i)
    rt_store(d, buf, i, g[info.offset + i]);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
  if (global)
    *global = g;
  else
    free(g);
  return v;
}

/* x's local elements against the reference (global), within tol relative to the largest |x_ref|. */
static int x_matches(rmaop_vec x, const double _Complex *ref, double tol, char *msg, size_t msz) {
  rmaop_vec_info info;
  if (rmaop_vec_get_info(x, &info) != RMAOP_OK)
    return 0;
  double scale = 0;
  for (int64_t i = 0; i < info.global_n; ++i)
    scale = fmax(scale, cabs(ref[i]));
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

static double hist_tol(rmaop_dtype d) {
  return d == RMAOP_F64 || d == RMAOP_C128 ? 1e-10 : 1e-4;
}

/* ---- one solve against the reference ---- */

typedef struct {
  int cgls;
  int niter;
  double tol, damp;
  int with_x0;
  int zero_y;
} run_cfg;

typedef struct {
  int calls, last_iteration, bad_order, fail_at;
  rmaop_status fail;
  double residuals[MAXIT + 1];
  rmaop_vec expect_x;
  int x_seen_ok;
} cb_state;

static rmaop_status record_cb(void *user, int iteration, double residual, rmaop_vec x) {
  cb_state *s = user;
  s->calls++;
  if (iteration != s->last_iteration + 1)
    s->bad_order = 1;
  s->last_iteration = iteration;
  if (iteration >= 0 && iteration <= MAXIT)
    s->residuals[iteration] = residual;
  if (x != s->expect_x)
    s->x_seen_ok = 0;
  if (s->fail_at > 0 && iteration == s->fail_at)
    return s->fail;
  return RMAOP_OK;
}

/* Solves with the library and serially; checks history, x, iterations, reason and the callback. Returns the
 * reference (caller frees ref->x). */
static void run_solve(const problem *p, rmaop_dtype d, const run_cfg *rc, ref_result *ref) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  double _Complex *yg = NULL, *x0g = NULL;
  rmaop_vec y = make_vec(oi.data, d, 3, rc->zero_y ? 0.0 : 1.0, &yg);
  rmaop_vec x0 = rc->with_x0 ? make_vec(oi.model, d, 4, 0.3, &x0g) : NULL;
  rmaop_vec x = make_vec(oi.model, d, 5, 9.0, NULL); /* garbage: the solver starts from x0 or zero */
  cb_state cb = {.expect_x = x, .x_seen_ok = 1};
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = rc->niter, o.tol = rc->tol, o.damp = rc->damp, o.x0 = x0, o.callback = record_cb, o.user = &cb;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  if (rc->cgls) {
    RT_OK(rmaop_solve_cgls(p->A, y, x, &o, &info));
    ref_cgls(&p->M, yg, x0g, rc->niter, rc->tol, rc->damp, ref);
  } else {
    RT_OK(rmaop_solve_cg(p->A, y, x, &o, &info));
    ref_cg(&p->M, yg, x0g, rc->niter, rc->tol, ref);
  }
  char what[200], msg[400] = "";
  snprintf(what, sizeof what, "%s on %s (%s, niter %d, tol %g, damp %g%s%s)", rc->cgls ? "CGLS" : "CG", p->name,
           rmaop_dtype_name(d), rc->niter, rc->tol, rc->damp, rc->with_x0 ? ", x0" : "", rc->zero_y ? ", y = 0" : "");
  RT_CHECK(info.iterations == ref->iterations && info.reason == ref->reason && info.history != NULL,
           "%s: %d iterations, reason %d; reference %d, reason %d", what, info.iterations, (int)info.reason,
           ref->iterations, (int)ref->reason);
  const double tol = hist_tol(d);
  int ok = 1;
  for (int k = 0; k <= info.iterations && ok; ++k)
    if (!(fabs(info.history[k] - ref->history[k]) <= tol * ref->history[k]))
      ok = 0, snprintf(msg, sizeof msg, "history[%d] = %.17g, reference %.17g (relative %.3g)", k, info.history[k],
                       ref->history[k], fabs(info.history[k] - ref->history[k]) / ref->history[k]);
  RT_CHECK(ok, "%s: %s", what, msg);
  RT_CHECK(rt_same_everywhere(info.history, (size_t)(info.iterations + 1) * sizeof(double)),
           "%s: ranks hold different histories", what);
  RT_CHECK(x_matches(x, ref->x, 100 * tol, msg, sizeof msg), "%s: %s", what, msg);
  /* the callback: once per iteration, in order, with the history value and the solver's x */
  ok = cb.calls == info.iterations && !cb.bad_order && cb.x_seen_ok;
  for (int k = 1; k <= info.iterations && ok; ++k)
    ok = cb.residuals[k] == info.history[k];
  RT_CHECK(ok, "%s: callback called %d times (iterations %d), order %s, x %s", what, cb.calls, info.iterations,
           cb.bad_order ? "wrong" : "right", cb.x_seen_ok ? "right" : "wrong");
  RT_CHECK(info.time_total >= 0 && info.time_comm >= 0 && info.time_comm <= info.time_total + 1e-6,
           "%s: times total %g, comm %g", what, info.time_total, info.time_comm);
  if (x0) { /* x0 is not modified */
    ok = x_matches(x0, x0g, 0.0, msg, sizeof msg);
    RT_CHECK(ok, "%s: x0 changed: %s", what, msg);
  }
  rmaop_solver_info_free(&info);
  RT_CHECK(info.history == NULL, "rmaop_solver_info_free did not clear history");
  free(yg), free(x0g);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x0), rmaop_vec_destroy(&x);
}

static void solve(const problem *p, rmaop_dtype d, run_cfg rc) {
  ref_result ref;
  run_solve(p, d, &rc, &ref);
  free(ref.x);
}

/* ---- tests ---- */

START_TEST(test_cg) {
  const rmaop_dtype ds[4] = {RMAOP_F64, RMAOP_C128, RMAOP_F32, RMAOP_C64};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = ds[k];
    problem p = make_spd(d);
    const int full = k < 2;
    solve(&p, d, (run_cfg){.niter = full ? 6 : 4});
    if (full) {
      solve(&p, d, (run_cfg){.niter = 6, .with_x0 = 1});
      solve(&p, d, (run_cfg){.niter = 1});
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_cg_stopping) {
  problem p = make_spd(RMAOP_F64);
  /* tol between the 2nd and 3rd squared residuals of the reference: stops after 3 iterations with TOL */
  ref_result ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 8}, &ref);
  free(ref.x);
  const double tol = ref.history[2] * ref.history[3];
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 8, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 3 && ref.reason == RMAOP_REASON_TOL, "reference: %d iterations, reason %d", ref.iterations,
           (int)ref.reason);
  /* the same tolerance but fewer iterations allowed: NITER */
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 2, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 2 && ref.reason == RMAOP_REASON_NITER, "reference: %d iterations", ref.iterations);
  /* tol above the initial residual: no iteration, TOL */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 8, .tol = 1e30});
  /* niter 0: no iteration, NITER, history[0] = ||y|| */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 0, .with_x0 = 1});
  /* y = 0 and no x0: the residual is 0 from the start (0 <= tol = 0): TOL, x = 0 */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 5, .zero_y = 1});
  problem_free(&p);
}
END_TEST

START_TEST(test_cgls_derivative) {
  const rmaop_dtype ds[3] = {RMAOP_F64, RMAOP_C128, RMAOP_C64};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    problem p = make_derivative(d);
    if (k < 2) {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10, .damp = 0.3});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10, .damp = 0.3, .with_x0 = 1});
    } else {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 5, .damp = 0.3, .with_x0 = 1});
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_cgls_vstack) {
  const rmaop_dtype ds[3] = {RMAOP_F64, RMAOP_C128, RMAOP_F32};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    problem p = make_vstack(d);
    solve(&p, d, (run_cfg){.cgls = 1, .niter = k < 2 ? 5 : 3});
    if (k < 2) {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 5, .damp = 0.5, .with_x0 = 1});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 4, .with_x0 = 1});
    }
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_cgls_stopping) {
  problem p = make_derivative(RMAOP_F64);
  /* CGLS's tol applies to kold = |r.r| (r = A^H s, the normal equations' residual), not to the history ||s|| */
  double _Complex *yg = cvec(p.M.m), *r = cvec(p.M.n);
  for (int64_t i = 0; i < p.M.m; ++i)
    yg[i] = rt_round(RMAOP_F64, rt_value(i, 3));
  matvec(&p.M, 1, yg, r);
  const double k0 = cabs(vdot(p.M.n, r, r));
  free(yg), free(r);
  /* a tolerance below kold at the start: some iterations, then TOL long before niter */
  ref_result ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.cgls = 1, .niter = 30, .tol = 0.2 * k0}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations >= 1 && ref.iterations < 30,
           "reference CGLS: %d iterations, reason %d", ref.iterations, (int)ref.reason);
  /* the same tolerance with fewer iterations allowed than it needs: NITER */
  if (ref.iterations > 1) {
    const int need = ref.iterations;
    run_solve(&p, RMAOP_F64, &(run_cfg){.cgls = 1, .niter = need - 1, .tol = 0.2 * k0}, &ref);
    free(ref.x);
    RT_CHECK(ref.reason == RMAOP_REASON_NITER, "reference CGLS: reason %d", (int)ref.reason);
  }
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 4, .tol = 2.0 * k0}); /* no iteration, TOL */
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 0, .damp = 0.2, .with_x0 = 1});
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 4, .zero_y = 1}); /* kold = 0 from the start: TOL */
  problem_free(&p);
}
END_TEST

START_TEST(test_callback_error) {
  /* a callback returning an error (on every rank) stops the solver with that error */
  for (int cgls = 0; cgls < 2; ++cgls) {
    problem p = cgls ? make_derivative(RMAOP_F64) : make_spd(RMAOP_F64);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    rmaop_vec y = make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
    cb_state cb = {.expect_x = x, .x_seen_ok = 1, .fail_at = 2, .fail = RMAOP_ERR_UNSUPPORTED};
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = 6, o.callback = record_cb, o.user = &cb;
    rmaop_solver_info info;
    memset(&info, 0, sizeof info);
    rmaop_status st = cgls ? rmaop_solve_cgls(p.A, y, x, &o, &info) : rmaop_solve_cg(p.A, y, x, &o, &info);
    RT_CHECK(st == RMAOP_ERR_UNSUPPORTED && cb.calls == 2, "%s: callback error at iteration 2 -> %s after %d calls",
             cgls ? "CGLS" : "CG", rmaop_status_string(st), cb.calls);
    rmaop_solver_info_free(&info);
    rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
    problem_free(&p);
  }
}
END_TEST

START_TEST(test_bad_options) {
  problem p = make_spd(RMAOP_F64);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p.A, &oi));
  rmaop_vec y = make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_layout big = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, p.M.n + 2 * rt_size, &big));
  rmaop_vec xbig = make_vec(big, RMAOP_F64, 5, 1.0, NULL), x32 = make_vec(oi.model, RMAOP_F32, 5, 1.0, NULL);
  rmaop_solver_options o;
  rmaop_solver_info info;
  for (int cgls = 0; cgls < 2; ++cgls) {
    rmaop_status (*solver)(rmaop_op, rmaop_vec, rmaop_vec, const rmaop_solver_options *, rmaop_solver_info *) =
        cgls ? rmaop_solve_cgls : rmaop_solve_cg;
    rmaop_solver_options_init(&o);
    RT_CHECK(o.niter > 0 && o.tol == 0 && o.damp == 0 && o.x0 == NULL && o.callback == NULL,
             "rmaop_solver_options_init: niter %d tol %g damp %g", o.niter, o.tol, o.damp);
    o.niter = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("niter");
    rmaop_solver_options_init(&o);
    RT_EXPECT(solver(NULL, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, NULL, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, NULL, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, x, NULL, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, x, &o, NULL), RT_BIT(RMAOP_ERR_ARG));
    o.tol = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    o.tol = 0, o.damp = NAN;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    o.damp = 0;
    /* x on a layout of another global size (on every rank) */
    RT_EXPECT(solver(p.A, y, xbig, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    /* x0 of the wrong dtype */
    o.x0 = x32;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
  }
  rmaop_solver_options_init(NULL); /* no-op */
  rmaop_solver_info_free(NULL);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x), rmaop_vec_destroy(&xbig), rmaop_vec_destroy(&x32);
  rmaop_layout_destroy(&big);
  problem_free(&p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver");
  TCase *tc = tcase_create("cg");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_cg);
  tcase_add_test(tc, test_cg_stopping);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("cgls");
  tcase_add_checked_fixture(tl, setup, teardown);
  tcase_add_test(tl, test_cgls_derivative);
  tcase_add_test(tl, test_cgls_vstack);
  tcase_add_test(tl, test_cgls_stopping);
  suite_add_tcase(s, tl);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_callback_error);
  tcase_add_test(te, test_bad_options);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
