/* Tests of the power iteration, ISTA and FISTA (include/rmaop/solver_sparse.h). References, computed serially in
 * double complex on the dense global matrix every rank builds from the operator's formula:
 *  - power iteration: PyLops-MPI's power_iteration (pylops_mpi.optimization.eigs) line by line, from the same start;
 *    and a diagonal operator's known largest eigenvalue from the library's pseudo-random start;
 *  - ISTA / FISTA: PyLops-MPI's ISTA.step and FISTA.step (pylops_mpi.optimization.cls_sparsity) with PyLops'
 *    thresholdings (pylops.optimization.cls_sparsity: soft, hard, half and their percentile forms, the percentile
 *    taken by sorting the global magnitudes as numpy.percentile does).
 * Histories must match to 1e-10 relative (f64, c128; 1e-5 for f32, c64; solutions to 100 times that) at every
 * iteration on every backend, with the same iteration count and reason on tolerance stops. Also: a sparse recovery
 * by FISTA that finds the support, the reductions per iteration, and bad input (RMAOP_ERR_ARG naming it, on every
 * rank). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"
#include "solver_test_util.h"

static rmaop_ctx ctx;
static void setup(void) { ctx = rt_ctx(); }
static void teardown(void) { rmaop_ctx_destroy(&ctx); }

static const rmaop_dtype all_dtypes[4] = {RMAOP_F64, RMAOP_C128, RMAOP_F32, RMAOP_C64};
static int single(rmaop_dtype d) { return d == RMAOP_F32 || d == RMAOP_C64; }
/* The relative tolerance of a history (and, times 100, of a solution): 1e-10, 1e-5 in single precision. */
static double hist_tol(rmaop_dtype d) { return single(d) ? 1e-5 : 1e-10; }

/* ---- dense helpers ---- */

static double vnorm2(int64_t n, const double _Complex *a) { return creal(st_vdot(n, a, a)); }
static double vnorm1(int64_t n, const double _Complex *a) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += cabs(a[i]);
  return s;
}
static double fro2(const st_mat *A) {
  double s = 0;
  for (int64_t i = 0; i < A->m * A->n; ++i) s += creal(conj(A->a[i]) * A->a[i]);
  return s;
}

/* ---- serial references ---- */

/* PyLops' thresholdings of one element, written from their definitions (the complex ones keep the phase). */
static double _Complex thr_ref(int kind, double t, double _Complex z) {
  const double m = cabs(z);
  if (kind == 0) { /* soft: max(|z| - t, 0) z / |z| */
    return m > t ? z * ((m - t) / m) : 0;
  }
  if (kind == 1) /* hard */
    return m <= sqrt(2 * t) ? 0 : z;
  /* half (Xu et al. 2012, PyLops _halfthreshold) */
  if (m <= pow(54.0, 1.0 / 3.0) / 4.0 * pow(t, 2.0 / 3.0)) return 0;
  const double arg = fmin(t / 8.0 * pow(m / 3.0, -1.5), 1.0), phi = 2.0 / 3.0 * acos(arg);
  return 2.0 / 3.0 * z * (1.0 + cos(2.0 * 3.141592653589793 / 3.0 - phi));
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* numpy.percentile(|v|, q), method "linear". */
static double percentile_ref(int64_t n, const double _Complex *v, double q) {
  double *s = malloc((size_t)n * sizeof *s);
  for (int64_t i = 0; i < n; ++i) s[i] = cabs(v[i]);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  const double vi = (double)(n - 1) * q / 100.0, lo = floor(vi);
  const int64_t k = (int64_t)lo, k1 = k + 1 < n ? k + 1 : n - 1;
  const double r = s[k] + (s[k1] - s[k]) * (vi - lo);
  free(s);
  return r;
}

typedef struct {
  int fista, niter;
  rmaop_thresh_kind kind;
  double eps, alpha, tol, perc;
  const double *decay;
  const st_mat *S; /* analysis operator (its data size is A's model size); NULL: synthesis */
} ista_cfg;

/* x = thr(v) (kind of c, iteration k), v of length n. */
static void threshold_ref(const ista_cfg *c, int k, int64_t n, double _Complex *v) {
  const int base = c->kind % 3;
  double t = (c->decay ? c->decay[k] : 1.0) * c->eps * c->alpha * 0.5;
  if (c->kind >= RMAOP_THRESH_SOFT_PERCENTILE) {
    const double p = percentile_ref(n, v, 100.0 - c->perc);
    t = base == 0 ? p : base == 1 ? 0.5 * p * p : pow(4.0 / pow(54.0, 1.0 / 3.0) * p, 1.5);
  }
  for (int64_t i = 0; i < n; ++i) v[i] = thr_ref(base, t, v[i]);
}

/* PyLops-MPI ISTA / FISTA, with history[0] = the cost of x0. xupdates (when given) gets ||x_k - x_{k-1}||. */
static void ref_ista(const st_mat *A, const double _Complex *y, const double _Complex *x0, const ista_cfg *c,
                     st_ref *out, double *xupdates) {
  const int64_t m = A->m, n = A->n, ns = c->S ? c->S->n : 0;
  double _Complex *x = st_cvec(n), *xold = st_cvec(n), *z = st_cvec(n), *r = st_cvec(m), *u = st_cvec(n);
  double _Complex *s = st_cvec(ns);
  if (x0) memcpy(x, x0, (size_t)n * sizeof *x);
  memcpy(z, x, (size_t)n * sizeof *x);
  double t = 1, xupdate = INFINITY;
  int k = 0;
  st_matvec(A, 0, x, r);
  for (int64_t i = 0; i < m; ++i) r[i] = y[i] - r[i];
  out->history[0] = 0.5 * vnorm2(m, r) + c->eps * vnorm1(n, x);
  while (k < c->niter && xupdate > c->tol) {
    memcpy(xold, x, (size_t)n * sizeof *x);
    const double _Complex *base = c->fista ? z : x;
    st_matvec(A, 0, base, r);
    for (int64_t i = 0; i < m; ++i) r[i] = y[i] - r[i];
    st_matvec(A, 1, r, u);
    for (int64_t j = 0; j < n; ++j) u[j] = base[j] + c->alpha * u[j];
    if (c->S) {
      st_matvec(c->S, 1, u, s);
      threshold_ref(c, k, ns, s);
      st_matvec(c->S, 0, s, x);
    } else {
      threshold_ref(c, k, n, u);
      memcpy(x, u, (size_t)n * sizeof *x);
    }
    if (c->fista) {
      const double told = t;
      t = (1 + sqrt(1 + 4 * t * t)) / 2;
      for (int64_t j = 0; j < n; ++j) z[j] = x[j] + (told - 1) / t * (x[j] - xold[j]);
      st_matvec(A, 0, x, r);
      for (int64_t i = 0; i < m; ++i) r[i] = y[i] - r[i];
    }
    double d2 = 0;
    for (int64_t j = 0; j < n; ++j) d2 += creal(conj(x[j] - xold[j]) * (x[j] - xold[j]));
    xupdate = sqrt(d2);
    if (xupdates) xupdates[k] = xupdate;
    out->history[++k] = 0.5 * vnorm2(m, r) + c->eps * vnorm1(n, x);
  }
  out->iterations = k;
  out->reason = xupdate <= c->tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  out->x = x;
  free(xold), free(z), free(r), free(u), free(s);
}

/* PyLops-MPI power_iteration from b0 (normalized first); returns the eigenvalue, *it the iterations, b the vector. */
static double _Complex ref_power(const st_mat *M, const double _Complex *b0, int niter, double tol, int *it,
                                 double _Complex *b) {
  const int64_t n = M->n;
  double _Complex *b1 = st_cvec(n), l = 0, lold = 0;
  const double nb = sqrt(vnorm2(n, b0));
  for (int64_t i = 0; i < n; ++i) b[i] = b0[i] / nb;
  int k = 0;
  while (k < niter) {
    ++k;
    st_matvec(M, 0, b, b1);
    l = st_vdot(n, b, b1);
    const double n1 = sqrt(vnorm2(n, b1));
    for (int64_t i = 0; i < n; ++i) b[i] = b1[i] / n1;
    /* NumPy orders a real and a complex number by real parts, then imaginary parts */
    const double lhs = cabs(l - lold);
    const double _Complex rhs = tol * l;
    if (lhs < creal(rhs) || (lhs == creal(rhs) && 0 < cimag(rhs))) break;
    lold = l;
  }
  *it = k;
  free(b1);
  return l;
}

/* M = A^H A. */
static st_mat normal_mat(const st_mat *A) {
  st_mat M = st_mat_new(A->n, A->n);
  for (int64_t i = 0; i < A->n; ++i)
    for (int64_t j = 0; j < A->n; ++j) {
      double _Complex s = 0;
      for (int64_t k = 0; k < A->m; ++k) s += conj(ST_AT(*A, k, i)) * ST_AT(*A, k, j);
      ST_AT(M, i, j) = s;
    }
  return M;
}

/* ---- problems ---- */

static double _Complex mm_entry(int64_t i, int64_t j) { return 0.6 * rt_value(24 * i + j, 7) + (i == j ? 1.0 : 0.0); }
enum { MM_N = 14, MM_K = 24 };

/* The three test problems: a matmul (uneven splits), the block-diagonal SPD (rank 1 holds nothing), the vstack
 * (a replicated model: every rank holds x whole). */
static st_problem make_problem(int which, rmaop_dtype d) {
  if (which == 0) return st_make_matmul(ctx, d, MM_N, MM_K, mm_entry);
  if (which == 1) return st_make_spd(ctx, d);
  return st_make_vstack(ctx, d);
}

/* ---- one ISTA / FISTA solve against the reference ---- */

typedef struct {
  int calls, bad_order;
  double costs[ST_MAXIT + 1];
  rmaop_vec expect_x;
  int x_ok;
} cost_cb_state;

static rmaop_status cost_cb(void *user, int iteration, double cost, rmaop_vec x) {
  cost_cb_state *s = user;
  if (iteration != s->calls + 1) s->bad_order = 1;
  s->calls++;
  if (iteration >= 0 && iteration <= ST_MAXIT) s->costs[iteration] = cost;
  if (x != s->expect_x) s->x_ok = 0;
  return RMAOP_OK;
}

typedef struct {
  int with_x0;
  int analysis; /* SOp = diag(1 + 0.1 sin i) on A's model */
} run_extra;

static double sop_val(int64_t i) { return 1.0 + 0.1 * sin((double)i); }

/* Solves p with the library and the reference (cfg; cfg.alpha 0: 1 / ||A||_F^2; cfg.eps < 0: -eps times
 * max |A^H y|), checks history, iterations, reason, x and the callback. *xupd gets the reference's updates. */
static void run_ista(const st_problem *p, rmaop_dtype d, ista_cfg c, run_extra e, double *xupd) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  double _Complex *yg = NULL, *x0g = NULL;
  rmaop_vec y = st_make_vec(oi.data, d, 3, 1.0, &yg), x0 = e.with_x0 ? st_make_vec(oi.model, d, 4, 0.3, &x0g) : NULL;
  rmaop_vec x = st_make_vec(oi.model, d, 5, 9.0, NULL);
  if (c.alpha == 0) c.alpha = 1.0 / fro2(&p->M);
  if (c.eps < 0) {
    double _Complex *g = st_cvec(p->M.n);
    st_matvec(&p->M, 1, yg, g);
    double mx = 0;
    for (int64_t j = 0; j < p->M.n; ++j) mx = fmax(mx, cabs(g[j]));
    c.eps *= -mx;
    free(g);
  }
  st_mat S = {0, 0, NULL};
  rmaop_op sop = NULL;
  if (e.analysis) {
    S = st_mat_new(p->M.n, p->M.n);
    for (int64_t j = 0; j < p->M.n; ++j) ST_AT(S, j, j) = rt_round(d, sop_val(j));
    double _Complex *sg = st_cvec(p->M.n);
    for (int64_t j = 0; j < p->M.n; ++j) sg[j] = sop_val(j);
    rmaop_vec sv = st_vec_from(oi.model, d, sg);
    RT_OK(rmaop_op_create_diagonal(sv, &sop));
    rmaop_vec_destroy(&sv);
    free(sg);
    c.S = &S;
  }
  rmaop_sparse_options o;
  rmaop_sparse_options_init(&o);
  cost_cb_state cb = {.expect_x = x, .x_ok = 1};
  o.niter = c.niter, o.eps = c.eps, o.alpha = c.alpha, o.tol = c.tol, o.threshkind = c.kind, o.perc = c.perc;
  o.decay = c.decay, o.x0 = x0, o.SOp = sop, o.callback = cost_cb, o.user = &cb;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  RT_OK((c.fista ? rmaop_solve_fista : rmaop_solve_ista)(p->A, y, x, &o, &info));
  st_ref ref;
  ref_ista(&p->M, yg, x0g, &c, &ref, xupd);
  char what[300], msg[400] = "";
  snprintf(what, sizeof what, "%s %s on %s (%s, niter %d, eps %g, alpha %g, tol %g, perc %g%s%s%s)",
           c.fista ? "FISTA" : "ISTA", rmaop_thresh_name(c.kind), p->name, rmaop_dtype_name(d), c.niter, c.eps, c.alpha,
           c.tol, c.perc, e.with_x0 ? ", x0" : "", c.decay ? ", decay" : "", e.analysis ? ", SOp" : "");
  RT_CHECK(info.iterations == ref.iterations && info.reason == ref.reason, "%s: %d iterations, reason %d; reference %d, %d",
           what, info.iterations, (int)info.reason, ref.iterations, (int)ref.reason);
  const double tol = hist_tol(d);
  RT_CHECK(st_hist_close(info.history, ref.history, info.iterations, tol, msg, sizeof msg), "%s: %s", what, msg);
  RT_CHECK(rt_same_everywhere(info.history, (size_t)(info.iterations + 1) * sizeof(double)),
           "%s: ranks hold different histories", what);
  RT_CHECK(st_x_matches(x, ref.x, 100 * tol, msg, sizeof msg), "%s: %s", what, msg);
  int ok = cb.calls == info.iterations && !cb.bad_order && cb.x_ok;
  for (int k = 1; ok && k <= info.iterations; ++k) ok = cb.costs[k] == info.history[k];
  RT_CHECK(ok, "%s: callback called %d times for %d iterations (order %s, x %s), costs not the history's", what,
           cb.calls, info.iterations, cb.bad_order ? "wrong" : "right", cb.x_ok ? "right" : "wrong");
  RT_CHECK(info.time_total >= 0 && info.time_comm >= 0, "%s: times %g %g", what, info.time_total, info.time_comm);
  rmaop_solver_info_destroy(&info);
  free(ref.x), free(yg), free(x0g);
  st_mat_free(&S);
  rmaop_op_destroy(&sop);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x0), rmaop_vec_destroy(&x);
}

/* ---- tests: ISTA and FISTA ---- */

START_TEST(test_ista_kinds) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    for (int which = 0; which < 3; ++which) {
      st_problem p = make_problem(which, d);
      for (int fista = 0; fista < 2; ++fista) {
        /* the discontinuous thresholdings (hard, half) in double precision only: in single precision an element
         * within rounding of the threshold may fall on either side */
        const int nk = single(d) ? 1 : 3;
        for (int kind = 0; kind < nk; ++kind)
          run_ista(&p, d, (ista_cfg){.fista = fista, .niter = 12, .kind = kind, .eps = -0.3, .tol = 0},
                   (run_extra){.with_x0 = kind == 1}, NULL);
      }
      st_problem_free(&p);
    }
  }
}
END_TEST

START_TEST(test_ista_percentile) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    for (int which = 0; which < 3; which += single(d) ? 2 : 1) {
      st_problem p = make_problem(which, d);
      for (int kind = RMAOP_THRESH_SOFT_PERCENTILE; kind <= RMAOP_THRESH_HALF_PERCENTILE; ++kind) {
        if (single(d) && kind != RMAOP_THRESH_SOFT_PERCENTILE) continue;
        const double perc = kind == RMAOP_THRESH_HARD_PERCENTILE ? 35.0 : 60.0;
        run_ista(&p, d, (ista_cfg){.fista = kind == RMAOP_THRESH_HALF_PERCENTILE, .niter = 8, .kind = kind, .eps = 0.2,
                                   .perc = perc},
                 (run_extra){.with_x0 = 1}, NULL);
      }
      /* the ends of the range: keep everything (the smallest magnitude) and nothing but the largest */
      run_ista(&p, d, (ista_cfg){.niter = 4, .kind = RMAOP_THRESH_SOFT_PERCENTILE, .eps = 0.2, .perc = 100},
               (run_extra){0}, NULL);
      run_ista(&p, d, (ista_cfg){.fista = 1, .niter = 4, .kind = RMAOP_THRESH_SOFT_PERCENTILE, .eps = 0.2, .perc = 0},
               (run_extra){.with_x0 = 1}, NULL);
      st_problem_free(&p);
    }
  }
}
END_TEST

START_TEST(test_ista_options) {
  double decay[ST_MAXIT];
  for (int k = 0; k < ST_MAXIT; ++k) decay[k] = 1.0 - 0.03 * k;
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem p = make_problem(0, d);
    for (int fista = 0; fista < 2; ++fista) {
      run_ista(&p, d, (ista_cfg){.fista = fista, .niter = 10, .eps = -0.3, .decay = decay}, (run_extra){.with_x0 = 1},
               NULL);
      run_ista(&p, d, (ista_cfg){.fista = fista, .niter = 10, .eps = -0.2, .kind = single(d) ? 0 : RMAOP_THRESH_HALF},
               (run_extra){.analysis = 1}, NULL);
      run_ista(&p, d, (ista_cfg){.fista = fista, .niter = 0, .eps = 0.1}, (run_extra){.with_x0 = 1}, NULL);
      run_ista(&p, d, (ista_cfg){.fista = fista, .niter = 6, .eps = 0.0}, (run_extra){.with_x0 = 1}, NULL);
    }
    st_problem_free(&p);
  }
}
END_TEST

/* tol on the model update: the library stops at the reference's iteration (reason TOL) */
START_TEST(test_ista_tol_stop) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 2; ++k) {
    st_problem p = make_problem(0, ds[k]);
    for (int fista = 0; fista < 2; ++fista) {
      double xu[40];
      run_ista(&p, ds[k], (ista_cfg){.fista = fista, .niter = 40, .eps = -0.3}, (run_extra){0}, xu);
      /* the first clear drop after a few iterations: a tol between the two updates, 1e-4 relative from either
       * (far more than the rounding that separates the library's updates from the reference's) */
      int stop = 0;
      for (int j = 6; j < 39 && !stop; ++j)
        if (xu[j + 1] < (1 - 1e-4) * xu[j]) stop = j + 1;
      RT_CHECK(stop > 0, "no update drops by 1e-4 within 40 iterations (reference)");
      const double tol = sqrt(xu[stop - 1] * xu[stop]);
      double xu2[40];
      run_ista(&p, ds[k], (ista_cfg){.fista = fista, .niter = 40, .eps = -0.3, .tol = tol}, (run_extra){0}, xu2);
    }
    st_problem_free(&p);
  }
}
END_TEST

/* ---- power iteration and the step size ---- */

static double spec_val(int64_t i) { return i == 17 ? 5.0 : 1.0 + 0.5 * sin((double)i) * sin((double)i); }

START_TEST(test_power_known_spectrum) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 23, &l));
    double _Complex g[23];
    for (int i = 0; i < 23; ++i) g[i] = spec_val(i);
    rmaop_vec dv = st_vec_from(l, d, g), b = NULL;
    rmaop_op D = NULL;
    RT_OK(rmaop_op_create_diagonal(dv, &D));
    RT_OK(rmaop_vec_duplicate(dv, &b));
    rmaop_eigs_options e;
    rmaop_eigs_options_init(&e);
    e.niter = 120, e.tol = 0;
    double _Complex l1 = 0;
    int it = 0;
    RT_OK(rmaop_power_iteration(D, b, &e, &l1, &it));
    const double tol = single(d) ? 1e-5 : 1e-12;
    RT_CHECK(fabs(creal(l1) - 5.0) <= tol * 5 && fabs(cimag(l1)) <= tol * 5 && it == 120,
             "%s: power iteration %.17g%+.3gi after %d iterations, the largest eigenvalue is 5", rmaop_dtype_name(d),
             creal(l1), cimag(l1), it);
    RT_CHECK(rt_same_everywhere(&l1, sizeof l1), "%s: ranks disagree on the eigenvalue", rmaop_dtype_name(d));
    /* the eigenvector: e_17 up to a phase */
    double _Complex *bg = st_vec_global(b, NULL);
    RT_CHECK(fabs(cabs(bg[17]) - 1.0) <= 10 * tol, "%s: |b[17]| = %g, want 1", rmaop_dtype_name(d), cabs(bg[17]));
    free(bg);
    /* the default tol (1e-5) stops early at a close value; a start of zero is refused */
    rmaop_eigs_options_init(&e);
    e.niter = 100;
    RT_OK(rmaop_power_iteration(D, b, &e, &l1, &it));
    RT_CHECK(it < 100 && fabs(creal(l1) - 5.0) < 1e-3 * 5, "%s: tol 1e-5 stopped after %d iterations at %g",
             rmaop_dtype_name(d), it, creal(l1));
    RT_OK(rmaop_vec_set(b, 0.0));
    e.use_b = 1;
    RT_EXPECT(rmaop_power_iteration(D, b, &e, &l1, &it), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("the start b is zero");
    rmaop_vec_destroy(&dv), rmaop_vec_destroy(&b);
    rmaop_op_destroy(&D);
    rmaop_layout_destroy(&l);
  }
}
END_TEST

/* From a given start (use_b), on A^H A: the reference's eigenvalue, iterations and vector. */
START_TEST(test_power_reference) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    for (int which = 0; which < 3; ++which) {
      st_problem p = make_problem(which, d);
      rmaop_op AH = NULL, AHA = NULL;
      RT_OK(rmaop_op_create_adjoint(p.A, &AH));
      RT_OK(rmaop_op_create_product(AH, p.A, &AHA));
      rmaop_op_info oi;
      RT_OK(rmaop_op_get_info(p.A, &oi));
      st_mat M = normal_mat(&p.M);
      for (int t = 0; t < (single(d) ? 1 : 2); ++t) { /* tol 1e-9: below single precision's rounding */
        double _Complex *b0 = NULL;
        rmaop_vec b = st_make_vec(oi.model, d, 6, 1.0, &b0);
        rmaop_eigs_options e;
        rmaop_eigs_options_init(&e);
        e.use_b = 1, e.niter = t ? 60 : 10, e.tol = t ? 1e-9 : 1e-5;
        double _Complex l = 0;
        int it = 0, rit = 0;
        RT_OK(rmaop_power_iteration(AHA, b, &e, &l, &it));
        double _Complex *rb = st_cvec(M.n);
        const double _Complex rl = ref_power(&M, b0, e.niter, e.tol, &rit, rb);
        const double tol = hist_tol(d);
        char msg[400] = "";
        RT_CHECK(it == rit && cabs(l - rl) <= tol * cabs(rl), "%s on %s (niter %d, tol %g): %.17g%+.3gi after %d, reference "
                 "%.17g%+.3gi after %d", rmaop_dtype_name(d), p.name, e.niter, e.tol, creal(l), cimag(l), it, creal(rl),
                 cimag(rl), rit);
        RT_CHECK(st_x_matches(b, rb, 100 * tol, msg, sizeof msg), "%s on %s: eigenvector %s", rmaop_dtype_name(d), p.name,
                 msg);
        free(rb), free(b0);
        rmaop_vec_destroy(&b);
      }
      st_mat_free(&M);
      rmaop_op_destroy(&AHA), rmaop_op_destroy(&AH);
      st_problem_free(&p);
    }
  }
}
END_TEST

/* ISTA's default step is rmaop_sparse_step_size's, which is 1 / |the power iteration's eigenvalue of A^H A| from
 * the library's pseudo-random start (the same at every rank count), close to 1 / lambda_max. */
START_TEST(test_step_size) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem p = make_problem(0, d);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    rmaop_eigs_options e;
    rmaop_eigs_options_init(&e);
    e.niter = 30, e.seed = 5;
    double alpha = 0;
    RT_OK(rmaop_sparse_step_size(p.A, &e, &alpha));
    rmaop_op AH = NULL, AHA = NULL;
    RT_OK(rmaop_op_create_adjoint(p.A, &AH));
    RT_OK(rmaop_op_create_product(AH, p.A, &AHA));
    rmaop_vec b = NULL;
    RT_OK(rmaop_vec_create(oi.model, d, &b));
    double _Complex l = 0;
    RT_OK(rmaop_power_iteration(AHA, b, &e, &l, NULL));
    RT_CHECK(alpha == 1.0 / cabs(l), "%s: step %.17g, 1 / |power iteration| %.17g", rmaop_dtype_name(d), alpha,
             1.0 / cabs(l));
    /* against lambda_max of the reference (many iterations from a positive start) */
    st_mat M = normal_mat(&p.M);
    double _Complex *ones = st_cvec(M.n), *rb = st_cvec(M.n);
    for (int64_t i = 0; i < M.n; ++i) ones[i] = 1.0;
    int rit = 0;
    const double lmax = creal(ref_power(&M, ones, 500, 0, &rit, rb));
    RT_CHECK(fabs(1.0 / alpha - lmax) <= 1e-3 * lmax, "%s: 1 / step = %g, lambda_max(A^H A) = %g", rmaop_dtype_name(d),
             1.0 / alpha, lmax);
    /* ISTA with alpha = 0 runs with that step: the same history as with it given */
    rmaop_vec y = st_make_vec(oi.data, d, 3, 1.0, NULL), x = NULL;
    RT_OK(rmaop_vec_create(oi.model, d, &x));
    rmaop_sparse_options o;
    rmaop_sparse_options_init(&o);
    o.niter = 6, o.eps = 0.5, o.eigs = e;
    rmaop_solver_info i1, i2;
    RT_OK(rmaop_solve_fista(p.A, y, x, &o, &i1));
    o.alpha = alpha;
    RT_OK(rmaop_solve_fista(p.A, y, x, &o, &i2));
    RT_CHECK(i1.iterations == i2.iterations &&
                 !memcmp(i1.history, i2.history, (size_t)(i1.iterations + 1) * sizeof(double)),
             "%s: FISTA with the default step differs from FISTA with alpha = %g", rmaop_dtype_name(d), alpha);
    rmaop_solver_info_destroy(&i1), rmaop_solver_info_destroy(&i2);
    free(ones), free(rb);
    st_mat_free(&M);
    rmaop_vec_destroy(&y), rmaop_vec_destroy(&x), rmaop_vec_destroy(&b);
    rmaop_op_destroy(&AHA), rmaop_op_destroy(&AH);
    st_problem_free(&p);
  }
}
END_TEST

/* ---- sparse recovery ---- */

static double hash_unit(uint64_t i, uint64_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}
enum { RC_M = 24, RC_N = 48 };
static int rc_complex;
static double _Complex rc_entry(int64_t i, int64_t j) {
  const uint64_t h = (uint64_t)(i * RC_N + j);
  return (hash_unit(h, 11) + (rc_complex ? I * hash_unit(h, 12) : 0)) / sqrt((double)RC_M);
}

/* y = A x_true with 4 nonzeros of 48: FISTA (eps 0.01, 200 iterations) finds the support, and x within 5 %. */
START_TEST(test_sparse_recovery) {
  static const int support[4] = {3, 17, 29, 41};
  const double _Complex values[4] = {1.5, -2.0 + 0.5 * I, 1.0, 2.5 - I};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    rc_complex = rt_is_complex(d);
    st_problem p = st_make_matmul(ctx, d, RC_M, RC_N, rc_entry);
    double _Complex xt[RC_N] = {0}, yt[RC_M];
    for (int s = 0; s < 4; ++s) xt[support[s]] = rc_complex ? values[s] : creal(values[s]);
    st_matvec(&p.M, 0, xt, yt);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    rmaop_vec y = st_vec_from(oi.data, d, yt), x = NULL;
    RT_OK(rmaop_vec_create(oi.model, d, &x));
    rmaop_sparse_options o;
    rmaop_sparse_options_init(&o);
    o.niter = 200, o.eps = 0.01;
    rmaop_solver_info info;
    RT_OK(rmaop_solve_fista(p.A, y, x, &o, &info));
    double _Complex *xg = st_vec_global(x, NULL);
    double err = 0, nt = 0, off = 0, on = INFINITY;
    for (int j = 0; j < RC_N; ++j) {
      err += creal(conj(xg[j] - xt[j]) * (xg[j] - xt[j]));
      nt += creal(conj(xt[j]) * xt[j]);
      if (xt[j] != 0) on = fmin(on, cabs(xg[j]));
      else off = fmax(off, cabs(xg[j]));
    }
    RT_CHECK(sqrt(err / nt) < 0.05 && off < 0.05 && on > 0.5,
             "%s: FISTA recovered x with relative error %.3g, largest off-support %.3g, smallest on-support %.3g "
             "(%d iterations)", rmaop_dtype_name(d), sqrt(err / nt), off, on, info.iterations);
    RT_CHECK(info.history[info.iterations] < 0.05 * info.history[0], "%s: cost %g from %g", rmaop_dtype_name(d),
             info.history[info.iterations], info.history[0]);
    free(xg);
    rmaop_solver_info_destroy(&info);
    rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
    st_problem_free(&p);
  }
}
END_TEST

/* ---- reductions per iteration (the trace's "reduce" calls) ---- */

static int reductions_of(const st_problem *p, int fista, rmaop_thresh_kind kind, int niter) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  rmaop_vec y = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_sparse_options o;
  rmaop_sparse_options_init(&o);
  o.niter = niter, o.alpha = 0.01, o.tol = 0, o.threshkind = kind, o.perc = 50;
  rmaop_solver_info info;
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, 1));
  RT_OK((fista ? rmaop_solve_fista : rmaop_solve_ista)(p->A, y, x, &o, &info));
  RT_OK(rmaop_trace_enable(ctx, 0));
  int nsites = 0, calls = 0;
  RT_OK(rmaop_trace_count(ctx, &nsites));
  for (int i = 0; i < nsites; ++i) {
    rmaop_trace_site site;
    RT_OK(rmaop_trace_get(ctx, i, &site));
    if (strcmp(site.kind, "reduce") == 0) calls += (int)site.calls;
  }
  RT_CHECK(info.iterations == niter, "%d iterations of %d", info.iterations, niter);
  rmaop_solver_info_destroy(&info);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
  return calls;
}

START_TEST(test_reduction_count) {
  st_problem p = st_make_spd(ctx, RMAOP_F64); /* block-diagonal: the operator reduces nothing */
  const int niter = 5, ista = reductions_of(&p, 0, RMAOP_THRESH_SOFT, niter);
  const int fista = reductions_of(&p, 1, RMAOP_THRESH_HALF, niter);
  const int perc = reductions_of(&p, 0, RMAOP_THRESH_SOFT_PERCENTILE, niter);
  RT_CHECK(ista == niter && fista == niter, "reductions for %d iterations: ISTA %d, FISTA %d (want one per iteration)",
           niter, ista, fista);
  RT_CHECK(perc > niter && perc <= niter * (1 + 9), "percentile ISTA: %d reductions for %d iterations (1 + at most 9 "
           "per iteration)", perc, niter);
  st_problem_free(&p);
}
END_TEST

/* ---- bad input ---- */

static double _Complex zero_entry(int64_t i, int64_t j) { return 0; }

START_TEST(test_bad_input) {
  st_problem p = make_problem(0, RMAOP_F64);
  st_bad_vecs bv = st_bad_vecs_create(ctx, &p);
  rmaop_sparse_options o;
  rmaop_sparse_options_init(&o);
  o.alpha = 0.01;
  rmaop_solver_info info;
  rmaop_status (*const solvers[2])(rmaop_op, rmaop_vec, rmaop_vec, const rmaop_sparse_options *,
                                   rmaop_solver_info *) = {rmaop_solve_ista, rmaop_solve_fista};
  for (int s = 0; s < 2; ++s) {
    rmaop_status (*solve)(rmaop_op, rmaop_vec, rmaop_vec, const rmaop_sparse_options *, rmaop_solver_info *) =
        solvers[s];
    RT_EXPECT(solve(NULL, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("operator is NULL");
    RT_EXPECT(solve(p.A, NULL, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("y is NULL");
    RT_EXPECT(solve(p.A, bv.y, bv.x, NULL, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("options is NULL");
    o.niter = -1;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("niter = -1 is negative");
    o.niter = 10, o.eps = -0.5;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("eps = -0.5");
    o.eps = NAN;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("eps = nan");
    o.eps = 0.1, o.threshkind = (rmaop_thresh_kind)17;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("threshkind = 17 is unknown");
    o.threshkind = RMAOP_THRESH_HARD_PERCENTILE, o.perc = 100.5;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("perc = 100.5 is outside [0, 100]");
    o.perc = -1;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("perc = -1 is outside");
    o.threshkind = RMAOP_THRESH_SOFT, o.alpha = -1;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("alpha = -1");
    o.alpha = 0, o.eigs.niter = 0;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("eigs niter = 0");
    rmaop_eigs_options_init(&o.eigs);
    o.alpha = 0.01, o.tol = NAN;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("tol = nan");
    o.tol = 1e-10;
    double decay[10] = {1, 1, 1, -0.5, 1, 1, 1, 1, 1, 1};
    o.decay = decay;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("decay[3] = -0.5");
    o.decay = NULL;
    RT_EXPECT(solve(p.A, bv.y, bv.xbig, &o, &info), RT_BIT(RMAOP_ERR_ARG)); /* mismatched layout */
    RT_MESSAGE_HAS("x's layout");
    RT_EXPECT(solve(p.A, bv.x, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG)); /* y on the model layout */
    RT_MESSAGE_HAS("y's layout");
    o.x0 = bv.x32;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("x0 is f32");
    o.x0 = NULL;
    o.SOp = p.A; /* its data layout is not A's model layout */
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("SOp's data layout");
    o.SOp = NULL;
    /* one rank's bad option: that rank says why, the others RMAOP_ERR_REMOTE; nobody hangs */
    o.eps = rt_rank == rt_size - 1 ? -1.0 : 0.1;
    RT_EXPECT_ON(solve(p.A, bv.y, bv.x, &o, &info), rt_size - 1, RMAOP_ERR_ARG);
    /* options that differ between ranks, each valid: RMAOP_ERR_ARG everywhere, naming the option */
    o.eps = 0.1 + 0.1 * rt_rank;
    RT_EXPECT(solve(p.A, bv.y, bv.x, &o, &info), rt_size > 1 ? RT_BIT(RMAOP_ERR_ARG) : RT_BIT(RMAOP_OK));
    if (rt_size > 1) RT_MESSAGE_HAS("eps differs between ranks");
    else rmaop_solver_info_destroy(&info);
    o.eps = 0.1;
  }
  rmaop_thresh_kind kind = RMAOP_THRESH_SOFT;
  RT_EXPECT(rmaop_thresh_parse("medium", &kind), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("unknown threshkind \"medium\"");
  for (int k = 0; k <= RMAOP_THRESH_HALF_PERCENTILE; ++k) {
    RT_OK(rmaop_thresh_parse(rmaop_thresh_name((rmaop_thresh_kind)k), &kind));
    RT_CHECK(kind == (rmaop_thresh_kind)k, "thresh kind %d parses back as %d", k, (int)kind);
  }
  RT_CHECK(!strcmp(rmaop_thresh_name((rmaop_thresh_kind)9), "invalid"), "name of an invalid kind");
  /* power iteration and step size */
  rmaop_eigs_options e;
  rmaop_eigs_options_init(&e);
  double _Complex l;
  double alpha;
  RT_EXPECT(rmaop_power_iteration(NULL, bv.x, &e, &l, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("operator is NULL");
  RT_EXPECT(rmaop_power_iteration(p.A, bv.x, &e, &l, NULL), RT_BIT(RMAOP_ERR_ARG)); /* 14 x 24: not square */
  RT_MESSAGE_HAS("not square");
  rmaop_op AH = NULL, AHA = NULL;
  RT_OK(rmaop_op_create_adjoint(p.A, &AH));
  RT_OK(rmaop_op_create_product(AH, p.A, &AHA));
  RT_EXPECT(rmaop_power_iteration(AHA, bv.xbig, &e, &l, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("b's layout");
  RT_EXPECT(rmaop_power_iteration(AHA, bv.x, &e, NULL, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("maxeig (output) is NULL");
  e.niter = 0;
  RT_EXPECT(rmaop_power_iteration(AHA, bv.x, &e, &l, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("eigs niter = 0 must be at least 1");
  RT_EXPECT(rmaop_sparse_step_size(p.A, &e, &alpha), RT_BIT(RMAOP_ERR_ARG));
  e.niter = 10, e.tol = -1;
  RT_EXPECT(rmaop_power_iteration(AHA, bv.x, &e, &l, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("eigs tol = -1");
  RT_EXPECT(rmaop_sparse_step_size(NULL, NULL, &alpha), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_sparse_step_size(p.A, NULL, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("alpha (output) is NULL");
  /* a zero operator has no step */
  st_problem z = st_make_matmul(ctx, RMAOP_F64, 5, 7, zero_entry);
  RT_EXPECT(rmaop_sparse_step_size(z.A, NULL, &alpha), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("eigenvalue of A^H A is 0");
  st_problem_free(&z);
  rmaop_op_destroy(&AHA), rmaop_op_destroy(&AH);
  st_bad_vecs_free(&bv);
  st_problem_free(&p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_sparse");
  TCase *ti = tcase_create("ista");
  tcase_add_checked_fixture(ti, setup, teardown);
  tcase_add_test(ti, test_ista_kinds);
  tcase_add_test(ti, test_ista_percentile);
  tcase_add_test(ti, test_ista_options);
  tcase_add_test(ti, test_ista_tol_stop);
  tcase_add_test(ti, test_sparse_recovery);
  tcase_add_test(ti, test_reduction_count);
  suite_add_tcase(s, ti);
  TCase *tp = tcase_create("power");
  tcase_add_checked_fixture(tp, setup, teardown);
  tcase_add_test(tp, test_power_known_spectrum);
  tcase_add_test(tp, test_power_reference);
  tcase_add_test(tp, test_step_size);
  suite_add_tcase(s, tp);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_bad_input);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, make_suite); }
