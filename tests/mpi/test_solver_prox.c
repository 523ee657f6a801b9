/* Tests of the proximal operators (rmaop_prox: L1, L2, L21) and the proximal solvers (ProximalGradient, ADMML2,
 * PrimalDual) of include/rmaop/solver_sparse.h. References, computed serially in double complex on dense global
 * matrices every rank builds from the operators' formulas:
 *  - the proximals from their definitions in pyproximal (L1: soft thresholding with the offset g; its conjugate's
 *    proximal a projection) and PyLops-MPI (MPIL2: closed form, or PyLops-MPI's CGLS on [sqrt(tau sigma) Op; I] or
 *    CG on I + tau sigma Op^H Op, warm started; MPIL21: the group shrinkage over the stacked parts), L2's conjugate
 *    by Moreau's identity;
 *  - the solvers line by line from pylops_mpi.proximal.optimization (ProximalGradient, ADMML2 with PyLops-MPI's CGLS
 *    on [Op; A / sqrt(tau)], PrimalDual with its scalar steps as float32 values, as PyLops-MPI's arrays hold them).
 * Objective histories must match to 1e-10 relative (f64, c128; 1e-5 for f32, c64), solutions to 100 times that, on
 * every backend. Also bad input: RMAOP_ERR_ARG naming it, on every rank. */
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

typedef double _Complex cplx;

static cplx *cdup(int64_t n, const cplx *a) {
  cplx *v = st_cvec(n);
  if (a) memcpy(v, a, (size_t)n * sizeof *v);
  return v;
}
static double nrm2(int64_t n, const cplx *a) { return creal(st_vdot(n, a, a)); }
/* sum a_i b_i (no conjugate): NumPy's dot, whose real part PyLops-MPI keeps */
static double tdot_re(int64_t n, const cplx *a, const cplx *b) {
  cplx s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return creal(s);
}
/* y = a + w (a - b) */
static void extrap(int64_t n, cplx *y, const cplx *a, const cplx *b, double w) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + w * (a[i] - b[i]);
}

/* Global values rounded to the dtype. */
static cplx *series(int64_t n, rmaop_dtype d, int s, double scale) {
  cplx *g = st_cvec(n);
  for (int64_t i = 0; i < n; ++i) g[i] = rt_round(d, scale * rt_value(i, s));
  return g;
}

/* A vector on any layout (stacked ones part by part) holding the global values g (parts one after the other). */
static rmaop_vec vec_from(rmaop_layout l, rmaop_dtype d, const cplx *g) {
  int np = 0;
  RT_OK(rmaop_layout_stack_nparts(l, &np));
  if (np == 0) return st_vec_from(l, d, g);
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  int64_t base = 0;
  for (int i = 0; i < np; ++i) {
    rmaop_vec part = NULL;
    RT_OK(rmaop_vec_stack_part(v, i, &part));
    rmaop_vec_info pi;
    RT_OK(rmaop_vec_get_info(part, &pi));
    void *buf = rt_alloc(d, pi.local_n);
    for (int64_t k = 0; k < pi.local_n; ++k) rt_store(d, buf, k, g[base + pi.offset + k]);
    RT_OK(rmaop_vec_write_local(part, buf));
    free(buf);
    base += pi.global_n;
    rmaop_vec_destroy(&part);
  }
  return v;
}

/* Collective: v's global values against ref within tol relative to the largest |ref| (every rank decides alike). */
static int close_global(rmaop_vec v, const cplx *ref, double tol, char *msg, size_t msz) {
  int64_t n = 0;
  cplx *g = st_vec_global(v, &n);
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = fmax(scale, cabs(ref[i]));
  int ok = 1;
  for (int64_t i = 0; i < n && ok; ++i)
    if (!rt_close(g[i], ref[i], tol, scale))
      ok = 0, snprintf(msg, msz, "[%lld] = %.17g%+.17gi, reference %.17g%+.17gi", (long long)i, creal(g[i]),
                       cimag(g[i]), creal(ref[i]), cimag(ref[i]));
  free(g);
  return ok;
}

/* ---- serial references: CG and CGLS (PyLops-MPI cls_basic, tol on the squared residual) ---- */

static void ref_cg(const st_mat *M, const cplx *y, const cplx *x0, int niter, double tol, cplx *x) {
  const int64_t n = M->n;
  cplx *r = st_cvec(n), *c = st_cvec(n), *Mc = st_cvec(n);
  memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(M, 0, x, r);
  for (int64_t i = 0; i < n; ++i) r[i] = y[i] - r[i], c[i] = r[i];
  double kold = nrm2(n, r);
  for (int it = 0; it < niter && kold > tol; ++it) {
    st_matvec(M, 0, c, Mc);
    const double a = kold / cabs(st_vdot(n, c, Mc));
    for (int64_t i = 0; i < n; ++i) x[i] += a * c[i], r[i] -= a * Mc[i];
    const double k = nrm2(n, r);
    for (int64_t i = 0; i < n; ++i) c[i] = r[i] + k / kold * c[i];
    kold = k;
  }
  free(r), free(c), free(Mc);
}

static void ref_cgls(const st_mat *M, const cplx *y, const cplx *x0, int niter, double tol, cplx *x) {
  const int64_t m = M->m, n = M->n;
  cplx *s = st_cvec(m), *q = st_cvec(m), *r = st_cvec(n), *c = st_cvec(n);
  memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(M, 0, x, s);
  for (int64_t i = 0; i < m; ++i) s[i] = y[i] - s[i];
  st_matvec(M, 1, s, r);
  memcpy(c, r, (size_t)n * sizeof *c);
  st_matvec(M, 0, c, q);
  double kold = nrm2(n, r);
  for (int it = 0; it < niter && kold > tol; ++it) {
    const double a = kold / nrm2(m, q);
    for (int64_t j = 0; j < n; ++j) x[j] += a * c[j];
    for (int64_t i = 0; i < m; ++i) s[i] -= a * q[i];
    st_matvec(M, 1, s, r);
    const double k = nrm2(n, r);
    for (int64_t j = 0; j < n; ++j) c[j] = r[j] + k / kold * c[j];
    st_matvec(M, 0, c, q);
    kold = k;
  }
  free(s), free(q), free(r), free(c);
}

/* ---- serial references: the proximals ---- */

enum { L1 = 0, L2, L21 };
typedef struct {
  int kind;
  double sigma;
  int64_t n;          /* length of x */
  const cplx *g;      /* L1 */
  const st_mat *Op;   /* L2 (with b: solved) */
  const cplx *b, *q;
  double alpha;
  int qgrad, niter, warm, cg;
  double tol;
  cplx *x0;           /* the inner solver's start (updated when warm); owned */
  int ndim;           /* L21: x is ndim parts of n / ndim */
} rprox;

/* tau s as PyLops-MPI multiplies: float32 when tau is a float32 step (PrimalDual's scalar steps). */
static double mul_ref(int f32, double tau, double s) { return f32 ? (double)((float)tau * (float)s) : tau * s; }

static cplx soft(cplx z, double t) {
  const double m = cabs(z);
  return m > t ? z * ((m - t) / m) : 0;
}
static cplx clip(cplx z, double s, int cplx_dtype) {
  if (!cplx_dtype) return creal(z) < -s ? -s : creal(z) > s ? s : creal(z);
  const double m = cabs(z);
  return m > s ? z * (s / m) : z;
}
static int g_complex; /* the dtype of the current test is complex (CLIP's form) */

static void rprox_apply(rprox *p, int dual, double tau, int f32, const cplx *x, cplx *out);

static void rl2_solve(rprox *p, double tau, int f32, const cplx *x, cplx *out) {
  const st_mat *A = p->Op;
  const int64_t m = A->m, n = A->n;
  const double ts = mul_ref(f32, tau, p->sigma), tq = mul_ref(f32, tau, p->alpha);
  if (!p->cg) { /* CGLS on [s A; I] x = [s b; x - tq q] */
    const double s = sqrt(ts);
    st_mat M = st_mat_new(m + n, n);
    cplx *rhs = st_cvec(m + n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) ST_AT(M, i, j) = s * ST_AT(*A, i, j);
      rhs[i] = s * p->b[i];
    }
    for (int64_t j = 0; j < n; ++j) ST_AT(M, m + j, j) = 1, rhs[m + j] = x[j] - (p->q ? tq * p->q[j] : 0);
    ref_cgls(&M, rhs, p->x0, p->niter, p->tol, out);
    st_mat_free(&M);
    free(rhs);
  } else { /* CG on (I + ts A^H A) x = x + tau sigma A^H b - tq q */
    st_mat M = st_mat_new(n, n);
    cplx *rhs = st_cvec(n), *ahb = st_cvec(n);
    st_matvec(A, 1, p->b, ahb);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        cplx s = 0;
        for (int64_t k = 0; k < m; ++k) s += conj(ST_AT(*A, k, i)) * ST_AT(*A, k, j);
        ST_AT(M, i, j) = (i == j) + ts * s;
      }
      rhs[i] = x[i] + tau * (p->sigma * ahb[i]) - (p->q ? tq * p->q[i] : 0);
    }
    ref_cg(&M, rhs, p->x0, p->niter, p->tol, out);
    st_mat_free(&M);
    free(rhs), free(ahb);
  }
  if (p->warm) memcpy(p->x0, out, (size_t)n * sizeof *out);
}

static void rprox_apply(rprox *p, int dual, double tau, int f32, const cplx *x, cplx *out) {
  const int64_t n = p->n;
  cplx *t = cdup(n, x);
  if (p->kind == L1) {
    if (dual)
      for (int64_t i = 0; i < n; ++i) out[i] = clip(t[i] - (p->g ? tau * p->g[i] : 0), p->sigma, g_complex);
    else
      for (int64_t i = 0; i < n; ++i)
        out[i] = p->g ? soft(t[i] - p->g[i], mul_ref(f32, tau, p->sigma)) + p->g[i] : soft(t[i], mul_ref(f32, tau, p->sigma));
  } else if (p->kind == L21) {
    const int64_t ng = n / p->ndim;
    const double c = dual ? p->sigma : mul_ref(f32, tau, p->sigma);
    for (int64_t i = 0; i < ng; ++i) {
      double s2 = 0;
      for (int d = 0; d < p->ndim; ++d) s2 += creal(conj(t[d * ng + i]) * t[d * ng + i]);
      const double s = sqrt(s2), mx = fmax(s, c);
      for (int d = 0; d < p->ndim; ++d) out[d * ng + i] = dual ? p->sigma * t[d * ng + i] / mx : (1 - c / mx) * t[d * ng + i];
    }
  } else if (dual) { /* Moreau: x - tau prox_{1/tau}(x / tau) */
    cplx *v = st_cvec(n);
    for (int64_t i = 0; i < n; ++i) v[i] = t[i] / tau;
    rprox_apply(p, 0, f32 ? (double)(1.0f / (float)tau) : 1.0 / tau, f32, v, v);
    for (int64_t i = 0; i < n; ++i) out[i] = t[i] - tau * v[i];
    free(v);
  } else if (p->Op && p->b) {
    rl2_solve(p, tau, f32, t, out);
  } else {
    const double ts = mul_ref(f32, tau, p->sigma), tq = mul_ref(f32, tau, p->alpha);
    const double f = f32 ? (double)(1.0f / (1.0f + (float)ts)) : 1.0 / (1.0 + ts);
    for (int64_t i = 0; i < n; ++i) out[i] = f * (t[i] + (p->b ? ts * p->b[i] : 0) - (p->q ? tq * p->q[i] : 0));
  }
  free(t);
}

static double rprox_norm(const rprox *p, const cplx *x) {
  const int64_t n = p->n;
  double s = 0;
  if (p->kind == L1) {
    for (int64_t i = 0; i < n; ++i) s += cabs(x[i] - (p->g ? p->g[i] : 0));
    return p->sigma * s;
  }
  if (p->kind == L21) {
    const int64_t ng = n / p->ndim;
    for (int64_t i = 0; i < ng; ++i) {
      double s2 = 0;
      for (int d = 0; d < p->ndim; ++d) s2 += creal(conj(x[d * ng + i]) * x[d * ng + i]);
      s += sqrt(s2);
    }
    return p->sigma * s;
  }
  if (p->Op && p->b) {
    cplx *r = st_cvec(p->Op->m);
    st_matvec(p->Op, 0, x, r);
    for (int64_t i = 0; i < p->Op->m; ++i) r[i] -= p->b[i];
    s = nrm2(p->Op->m, r);
    free(r);
  } else {
    for (int64_t i = 0; i < n; ++i) s += creal(conj(x[i] - (p->b ? p->b[i] : 0)) * (x[i] - (p->b ? p->b[i] : 0)));
  }
  return p->sigma / 2 * s + (p->q ? p->alpha * tdot_re(n, p->q, x) : 0);
}

static void rprox_grad(const rprox *p, const cplx *x, cplx *gr) {
  const int64_t n = p->n;
  if (p->Op && p->b) {
    cplx *r = st_cvec(p->Op->m);
    st_matvec(p->Op, 0, x, r);
    for (int64_t i = 0; i < p->Op->m; ++i) r[i] -= p->b[i];
    st_matvec(p->Op, 1, r, gr);
    free(r);
  } else {
    for (int64_t i = 0; i < n; ++i) gr[i] = x[i] - (p->b ? p->b[i] : 0);
  }
  for (int64_t i = 0; i < n; ++i) gr[i] = p->sigma * gr[i] + (p->q && p->qgrad ? p->alpha * p->q[i] : 0);
}

/* ---- problems ---- */

static cplx mm_entry(int64_t i, int64_t j) { return 0.5 * rt_value(24 * i + j, 7) + (i == j ? 1.0 : 0.0); }
enum { MM_N = 14, MM_K = 24 };

/* A 2-D grid (GX x GY, distributed along axis 0) and its gradient (PyLops forward differences, edge off): data
 * stacked in 2 parts. The dense matrix's rows: part 0 (d/dx0) then part 1 (d/dx1). */
enum { GX = 7, GY = 5, GN = GX * GY };
static rmaop_op make_gradient(rmaop_dtype d, st_mat *G) {
  rmaop_gradient_spec spec = {.grid = {.ndim = 2, .dims = {GX, GY}, .local_rows = -1}, .kind = RMAOP_DERIV_FORWARD,
                              .dtype = d};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_gradient(ctx, &spec, &A));
  *G = st_mat_new(2 * GN, GN);
  for (int i = 0; i < GX; ++i)
    for (int j = 0; j < GY; ++j) {
      const int r = i * GY + j;
      if (i < GX - 1) ST_AT(*G, r, r) = -1, ST_AT(*G, r, r + GY) = 1;
      if (j < GY - 1) ST_AT(*G, GN + r, r) = -1, ST_AT(*G, GN + r, r + 1) = 1;
    }
  return A;
}

/* PyLops FirstDerivative (forward, edge off) on n samples, split like `like` (a layout of n elements). */
static rmaop_op make_deriv(rmaop_dtype d, rmaop_layout like, int64_t n, st_mat *D) {
  rmaop_layout_info li;
  RT_OK(rmaop_layout_get_info(like, &li));
  rmaop_deriv_spec spec = {.grid = {.ndim = 1, .dims = {n}, .local_rows = li.local_n}, .axis = 0,
                           .kind = RMAOP_DERIV_FORWARD, .dtype = d};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &spec, &A));
  *D = st_mat_new(n, n);
  for (int64_t i = 0; i + 1 < n; ++i) ST_AT(*D, i, i) = -1, ST_AT(*D, i, i + 1) = 1;
  return A;
}

/* ---- the proximal operators ---- */

/* prox, dual (tau, in place and apart), f(x) and, for an L2, the gradient of lib against ref at x (global xg). */
static void check_prox(const char *what, rmaop_dtype d, rmaop_prox lib, rprox *ref, rmaop_vec x, const cplx *xg,
                       double tau) {
  rmaop_vec out = NULL;
  RT_OK(rmaop_vec_duplicate(x, &out));
  cplx *want = st_cvec(ref->n);
  char msg[400] = "";
  const double tol = hist_tol(d);
  for (int dual = 0; dual < 2; ++dual) {
    RT_OK((dual ? rmaop_prox_apply_dual : rmaop_prox_apply)(lib, tau, x, out));
    rprox_apply(ref, dual, tau, 0, xg, want);
    RT_CHECK(close_global(out, want, 100 * tol, msg, sizeof msg), "%s %s (tau %g): %s", what,
             dual ? "dual proximal" : "proximal", tau, msg);
  }
  double v = 0;
  RT_OK(rmaop_prox_norm(lib, x, &v));
  const double rv = rprox_norm(ref, xg);
  RT_CHECK(fabs(v - rv) <= 10 * tol * fabs(rv) + 1e-300, "%s: f(x) = %.17g, reference %.17g", what, v, rv);
  if (ref->kind == L2) {
    RT_OK(rmaop_prox_grad(lib, x, out));
    rprox_grad(ref, xg, want);
    RT_CHECK(close_global(out, want, 100 * tol, msg, sizeof msg), "%s gradient: %s", what, msg);
  } else {
    RT_EXPECT(rmaop_prox_grad(lib, x, out), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("has no gradient");
  }
  /* in place (out = x) */
  RT_OK(rmaop_vec_copy(x, out));
  RT_OK(rmaop_prox_apply(lib, tau, out, out));
  rprox_apply(ref, 0, tau, 0, xg, want);
  RT_CHECK(close_global(out, want, 100 * tol, msg, sizeof msg), "%s proximal in place: %s", what, msg);
  free(want);
  rmaop_vec_destroy(&out);
}

START_TEST(test_prox_l1) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    g_complex = rt_is_complex(d);
    for (int lk = 0; lk < 2; ++lk) { /* a SCATTER layout (uneven) and a BROADCAST one */
      const int64_t n = 17;
      rmaop_layout l = NULL;
      RT_OK(rmaop_layout_create(ctx, lk ? RMAOP_LAYOUT_BROADCAST : RMAOP_LAYOUT_SCATTER, n, &l));
      cplx *xg = series(n, d, 2, 1.0), *gg = series(n, d, 5, 0.4);
      rmaop_vec x = vec_from(l, d, xg), g = vec_from(l, d, gg);
      for (int withg = 0; withg < 2; ++withg) {
        rmaop_prox p = NULL;
        RT_OK(rmaop_prox_create_l1(ctx, 0.45, withg ? g : NULL, &p));
        rprox r = {.kind = L1, .sigma = 0.45, .n = n, .g = withg ? gg : NULL};
        char what[120];
        snprintf(what, sizeof what, "L1 %s%s (%s)", lk ? "broadcast" : "scatter", withg ? " with g" : "",
                 rmaop_dtype_name(d));
        check_prox(what, d, p, &r, x, xg, 0.7);
        check_prox(what, d, p, &r, x, xg, 3.0);
        rmaop_prox_destroy(&p);
      }
      free(xg), free(gg);
      rmaop_vec_destroy(&x), rmaop_vec_destroy(&g);
      rmaop_layout_destroy(&l);
    }
  }
}
END_TEST

START_TEST(test_prox_l2_closed) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    const int64_t n = 13;
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, n, &l));
    cplx *xg = series(n, d, 2, 1.0), *bg = series(n, d, 3, 0.7), *qg = series(n, d, 6, 0.3);
    rmaop_vec x = vec_from(l, d, xg), b = vec_from(l, d, bg), q = vec_from(l, d, qg);
    for (int c = 0; c < 4; ++c) { /* none, b, q, both */
      rmaop_prox_l2_spec s;
      rmaop_prox_l2_spec_init(&s);
      s.sigma = 1.3, s.alpha = 0.6, s.qgrad = c != 3, s.b = c & 1 ? b : NULL, s.q = c & 2 ? q : NULL;
      rmaop_prox p = NULL;
      RT_OK(rmaop_prox_create_l2(ctx, &s, &p));
      rprox r = {.kind = L2, .sigma = 1.3, .alpha = 0.6, .qgrad = c != 3, .n = n, .b = c & 1 ? bg : NULL,
                 .q = c & 2 ? qg : NULL};
      char what[120];
      snprintf(what, sizeof what, "L2 closed form%s%s (%s)", c & 1 ? " b" : "", c & 2 ? " q" : "", rmaop_dtype_name(d));
      check_prox(what, d, p, &r, x, xg, 0.8);
      rmaop_prox_destroy(&p);
    }
    free(xg), free(bg), free(qg);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&b), rmaop_vec_destroy(&q);
    rmaop_layout_destroy(&l);
  }
}
END_TEST

START_TEST(test_prox_l2_op) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem pb = st_make_matmul(ctx, d, MM_N, MM_K, mm_entry);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(pb.A, &oi));
    cplx *xg = series(MM_K, d, 2, 1.0), *bg = series(MM_N, d, 3, 1.0), *qg = series(MM_K, d, 6, 0.3);
    cplx *x0g = series(MM_K, d, 4, 0.2);
    rmaop_vec x = vec_from(oi.model, d, xg), b = vec_from(oi.data, d, bg), q = vec_from(oi.model, d, qg);
    rmaop_vec x0 = vec_from(oi.model, d, x0g);
    for (int c = 0; c < 4; ++c) { /* CGLS / CG, with q / without, warm / cold */
      rmaop_prox_l2_spec s;
      rmaop_prox_l2_spec_init(&s);
      s.Op = pb.A, s.b = b, s.x0 = x0, s.sigma = 0.9, s.alpha = 0.5, s.q = c & 1 ? q : NULL;
      s.solver = c & 2 ? RMAOP_PROX_L2_CG : RMAOP_PROX_L2_CGLS, s.warm = c != 1, s.niter = 6, s.tol = 1e-12;
      rmaop_prox p = NULL;
      RT_OK(rmaop_prox_create_l2(ctx, &s, &p));
      rprox r = {.kind = L2, .sigma = 0.9, .alpha = 0.5, .qgrad = 1, .n = MM_K, .Op = &pb.M, .b = bg,
                 .q = c & 1 ? qg : NULL, .niter = 6, .tol = 1e-12, .warm = c != 1, .cg = c >= 2,
                 .x0 = cdup(MM_K, x0g)};
      char what[120];
      snprintf(what, sizeof what, "L2 with Op (%s%s%s, %s)", c & 2 ? "CG" : "CGLS", c & 1 ? ", q" : "",
               c != 1 ? ", warm" : "", rmaop_dtype_name(d));
      check_prox(what, d, p, &r, x, xg, 0.6);
      rmaop_prox_destroy(&p);
      free(r.x0);
    }
    /* the inner solver's tolerance stops it early (PyLops-MPI's default 1e-4 on the squared residual) */
    rmaop_prox_l2_spec s;
    rmaop_prox_l2_spec_init(&s);
    s.Op = pb.A, s.b = b, s.x0 = x0, s.niter = 50, s.tol = 1e-3;
    rmaop_prox p = NULL;
    RT_OK(rmaop_prox_create_l2(ctx, &s, &p));
    rprox r = {.kind = L2, .sigma = 1, .alpha = 1, .qgrad = 1, .n = MM_K, .Op = &pb.M, .b = bg, .niter = 50,
               .tol = 1e-3, .warm = 1, .x0 = cdup(MM_K, x0g)};
    if (!single(d)) check_prox("L2 with Op, tol 1e-3", d, p, &r, x, xg, 0.6);
    rmaop_prox_destroy(&p);
    free(r.x0);
    free(xg), free(bg), free(qg), free(x0g);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&b), rmaop_vec_destroy(&q), rmaop_vec_destroy(&x0);
    st_problem_free(&pb);
  }
}
END_TEST

START_TEST(test_prox_l21) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    /* the gradient's data (2 parts of the grid's layout) and a stacked vector of 3 parts of one SCATTER layout */
    st_mat G;
    rmaop_op A = make_gradient(d, &G);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(A, &oi));
    rmaop_layout part = NULL, three = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 11, &part));
    rmaop_layout parts[3] = {part, part, part};
    RT_OK(rmaop_layout_create_stacked(3, parts, &three));
    for (int c = 0; c < 2; ++c) {
      const int ndim = c ? 3 : 2;
      const int64_t n = c ? 33 : 2 * GN;
      cplx *xg = series(n, d, 2, 1.0);
      for (int64_t i = 0; i < n; i += 7) xg[i] *= 0.05; /* some groups below the threshold */
      rmaop_vec x = vec_from(c ? three : oi.data, d, xg);
      rmaop_prox p = NULL;
      RT_OK(rmaop_prox_create_l21(ctx, ndim, 0.8, &p));
      rprox r = {.kind = L21, .sigma = 0.8, .n = n, .ndim = ndim};
      char what[120];
      snprintf(what, sizeof what, "L21 of %d parts (%s)", ndim, rmaop_dtype_name(d));
      check_prox(what, d, p, &r, x, xg, 0.5);
      check_prox(what, d, p, &r, x, xg, 2.5);
      rmaop_prox_destroy(&p);
      free(xg);
      rmaop_vec_destroy(&x);
    }
    st_mat_free(&G);
    rmaop_op_destroy(&A);
    rmaop_layout_destroy(&three), rmaop_layout_destroy(&part);
  }
}
END_TEST

/* ---- ProximalGradient ---- */

typedef struct {
  int niter, accel;
  double tau, epsg, eta, tol;
  const double *epsg_iter;
} pg_cfg;

/* pylops_mpi.proximal.optimization.ProximalGradient, with J = f + epsg g recorded (history[0] at x0). */
static void ref_pg(rprox *f, rprox *g, int64_t n, const cplx *x0, const pg_cfg *c, st_ref *out) {
  cplx *x = cdup(n, x0), *y = cdup(n, x0), *xold = st_cvec(n), *gr = st_cvec(n), *t = st_cvec(n);
  double tk = 1, J = INFINITY;
  out->history[0] = rprox_norm(f, x) + (c->epsg_iter ? c->epsg_iter[0] : c->epsg) * rprox_norm(g, x);
  out->reason = RMAOP_REASON_NITER;
  int k = 0;
  while (k < c->niter) {
    const double e = c->epsg_iter ? c->epsg_iter[k] : c->epsg;
    memcpy(xold, x, (size_t)n * sizeof *x);
    const cplx *from = c->eta == 1 ? y : x;
    rprox_grad(f, from, gr);
    for (int64_t i = 0; i < n; ++i) t[i] = from[i] - c->tau * gr[i];
    rprox_apply(g, 0, e * c->tau, 0, t, t);
    if (c->eta == 1) memcpy(x, t, (size_t)n * sizeof *x);
    else
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] + c->eta * (t[i] - x[i]);
    double omega = 0;
    if (c->accel == RMAOP_ACCEL_VANDENBERGHE) omega = (double)k / (k + 3);
    if (c->accel == RMAOP_ACCEL_FISTA) {
      const double told = tk;
      tk = (1 + sqrt(1 + 4 * tk * tk)) / 2;
      omega = (told - 1) / tk;
    }
    extrap(n, y, x, xold, omega);
    ++k;
    const double Jold = J;
    J = rprox_norm(f, x) + e * rprox_norm(g, x);
    out->history[k] = J;
    if (c->tol > 0 && fabs(1 - J / Jold) < c->tol) {
      out->reason = RMAOP_REASON_TOL;
      break;
    }
  }
  out->iterations = k;
  out->x = x;
  free(y), free(xold), free(gr), free(t);
}

typedef struct {
  int calls, bad_order;
  rmaop_vec expect_x;
  int x_ok, aux_null;
} pcb_state;

static rmaop_status pcb(void *user, int iteration, rmaop_vec x, rmaop_vec aux) {
  pcb_state *s = user;
  if (iteration != s->calls + 1) s->bad_order = 1;
  s->calls++;
  if (s->expect_x && x == NULL) s->x_ok = 0;
  if (aux == NULL) s->aux_null++;
  return RMAOP_OK;
}

/* A solve's info and x (global comparison) against a reference. */
static void check_run(const char *what, rmaop_dtype d, const rmaop_solver_info *info, const st_ref *ref, rmaop_vec x,
                      const pcb_state *cb) {
  char msg[400] = "";
  RT_CHECK(info->iterations == ref->iterations && info->reason == ref->reason && info->history != NULL,
           "%s: %d iterations, reason %d; reference %d, %d", what, info->iterations, (int)info->reason,
           ref->iterations, (int)ref->reason);
  RT_CHECK(st_hist_close(info->history, ref->history, info->iterations, hist_tol(d), msg, sizeof msg), "%s: %s", what,
           msg);
  RT_CHECK(rt_same_everywhere(info->history, (size_t)(info->iterations + 1) * sizeof(double)),
           "%s: ranks hold different histories", what);
  RT_CHECK(close_global(x, ref->x, 100 * hist_tol(d), msg, sizeof msg), "%s: x%s", what, msg);
  RT_CHECK(cb->calls == info->iterations && !cb->bad_order && cb->x_ok, "%s: callback called %d times for %d "
           "iterations", what, cb->calls, info->iterations);
}

static void run_pg(const char *name, rmaop_dtype d, rmaop_prox f, rmaop_prox g, rprox *rf, rprox *rg, rmaop_layout l,
                   int64_t n, const pg_cfg *c) {
  cplx *x0g = series(n, d, 4, 0.5);
  rmaop_vec x0 = vec_from(l, d, x0g), x = NULL;
  RT_OK(rmaop_vec_duplicate(x0, &x));
  rmaop_proxgrad_options o;
  rmaop_proxgrad_options_init(&o);
  pcb_state cb = {.expect_x = x, .x_ok = 1};
  o.niter = c->niter, o.tau = c->tau, o.epsg = c->epsg, o.eta = c->eta, o.tol = c->tol, o.epsg_iter = c->epsg_iter;
  o.acceleration = (rmaop_accel)c->accel, o.history = 1, o.callback = pcb, o.user = &cb;
  rmaop_solver_info info;
  RT_OK(rmaop_solve_proximal_gradient(f, g, x0, x, &o, &info));
  st_ref ref;
  ref_pg(rf, rg, n, x0g, c, &ref);
  char what[200];
  snprintf(what, sizeof what, "ProximalGradient %s (%s, accel %d, eta %g, tol %g%s)", name, rmaop_dtype_name(d),
           c->accel, c->eta, c->tol, c->epsg_iter ? ", epsg array" : "");
  check_run(what, d, &info, &ref, x, &cb);
  RT_CHECK(cb.aux_null == cb.calls, "%s: ProximalGradient passes no aux vector", what);
  rmaop_solver_info_destroy(&info);
  free(ref.x), free(x0g);
  rmaop_vec_destroy(&x0), rmaop_vec_destroy(&x);
}

START_TEST(test_proximal_gradient) {
  double epsg[12];
  for (int k = 0; k < 12; ++k) epsg[k] = 1.0 + 0.1 * k;
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    g_complex = rt_is_complex(d);
    /* f = 1/2 ||A x - b||^2 (matmul), g = 0.3 ||x||_1 */
    st_problem pb = st_make_matmul(ctx, d, MM_N, MM_K, mm_entry);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(pb.A, &oi));
    cplx *bg = series(MM_N, d, 3, 1.0), *z0 = st_cvec(MM_K);
    rmaop_vec b = vec_from(oi.data, d, bg), x0 = vec_from(oi.model, d, z0);
    rmaop_prox_l2_spec s;
    rmaop_prox_l2_spec_init(&s);
    s.Op = pb.A, s.b = b, s.x0 = x0;
    rmaop_prox f = NULL, g = NULL;
    RT_OK(rmaop_prox_create_l2(ctx, &s, &f));
    RT_OK(rmaop_prox_create_l1(ctx, 0.3, NULL, &g));
    rprox rf = {.kind = L2, .sigma = 1, .alpha = 1, .qgrad = 1, .n = MM_K, .Op = &pb.M, .b = bg, .niter = 10,
                .tol = 1e-4, .warm = 1, .x0 = cdup(MM_K, z0)};
    rprox rg = {.kind = L1, .sigma = 0.3, .n = MM_K};
    double fro = 0;
    for (int64_t i = 0; i < MM_N * MM_K; ++i) fro += creal(conj(pb.M.a[i]) * pb.M.a[i]);
    const double tau = 1.0 / fro;
    for (int acc = 0; acc < 3; ++acc)
      run_pg("L2(Op) + L1", d, f, g, &rf, &rg, oi.model, MM_K, &(pg_cfg){.niter = 12, .accel = acc, .tau = tau,
                                                                        .epsg = 1.5, .eta = 1});
    run_pg("L2(Op) + L1", d, f, g, &rf, &rg, oi.model, MM_K, &(pg_cfg){.niter = 8, .tau = tau, .epsg = 1, .eta = 0.6,
                                                                      .epsg_iter = epsg});
    if (!single(d)) { /* a tol stop: between two objective ratios that differ clearly */
      st_ref probe;
      cplx *x0g = series(MM_K, d, 4, 0.5);
      ref_pg(&rf, &rg, MM_K, x0g, &(pg_cfg){.niter = 40, .accel = 2, .tau = tau, .epsg = 1, .eta = 1}, &probe);
      double tol = 0;
      for (int j = 4; j < 39 && tol == 0; ++j) {
        const double r1 = fabs(1 - probe.history[j] / probe.history[j - 1]);
        const double r2 = fabs(1 - probe.history[j + 1] / probe.history[j]);
        if (r2 < 0.5 * r1) tol = sqrt(r1 * r2);
      }
      free(probe.x), free(x0g);
      RT_CHECK(tol > 0, "no objective ratio halves within 40 iterations (reference)");
      run_pg("L2(Op) + L1, tol", d, f, g, &rf, &rg, oi.model, MM_K, &(pg_cfg){.niter = 40, .accel = 2, .tau = tau,
                                                                             .epsg = 1, .eta = 1, .tol = tol});
    }
    rmaop_prox_destroy(&f), rmaop_prox_destroy(&g);
    free(rf.x0), free(bg), free(z0);
    rmaop_vec_destroy(&b), rmaop_vec_destroy(&x0);
    st_problem_free(&pb);
    /* f = 0.7 / 2 ||x - b||^2 (closed form) on a stacked vector of 3 parts, g = 0.4 L21 */
    rmaop_layout part = NULL, three = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 9, &part));
    rmaop_layout parts[3] = {part, part, part};
    RT_OK(rmaop_layout_create_stacked(3, parts, &three));
    cplx *tb = series(27, d, 3, 1.0);
    rmaop_vec b3 = vec_from(three, d, tb);
    rmaop_prox_l2_spec_init(&s);
    s.b = b3, s.sigma = 0.7;
    RT_OK(rmaop_prox_create_l2(ctx, &s, &f));
    RT_OK(rmaop_prox_create_l21(ctx, 3, 0.4, &g));
    rprox rf3 = {.kind = L2, .sigma = 0.7, .alpha = 1, .qgrad = 1, .n = 27, .b = tb};
    rprox rg3 = {.kind = L21, .sigma = 0.4, .n = 27, .ndim = 3};
    run_pg("L2 + L21", d, f, g, &rf3, &rg3, three, 27, &(pg_cfg){.niter = 10, .accel = 2, .tau = 0.9, .epsg = 1,
                                                                 .eta = 1});
    rmaop_prox_destroy(&f), rmaop_prox_destroy(&g);
    free(tb);
    rmaop_vec_destroy(&b3);
    rmaop_layout_destroy(&three), rmaop_layout_destroy(&part);
  }
}
END_TEST

/* ---- ADMML2 ---- */

typedef struct {
  int niter, gfirst, inner_niter, with_z0;
  double tau, inner_tol;
} admm_cfg;

/* pylops_mpi.proximal.optimization.ADMML2 with J = 1/2 ||Op x - b||^2 + g(A x) recorded; z returned. */
static void ref_admm(rprox *g, const st_mat *Op, const cplx *b, const st_mat *A, const cplx *x0, const cplx *z0,
                     const admm_cfg *c, st_ref *out, cplx *zout) {
  const int64_t n = Op->n, m = Op->m, p = A->m;
  const double sq = 1.0 / sqrt(c->tau);
  st_mat M = st_mat_new(m + p, n);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) ST_AT(M, i, j) = ST_AT(*Op, i, j);
    for (int64_t i = 0; i < p; ++i) ST_AT(M, m + i, j) = sq * ST_AT(*A, i, j);
  }
  cplx *x = cdup(n, x0), *z = st_cvec(p), *u = st_cvec(p), *Ax = st_cvec(p), *t = st_cvec(p), *rhs = st_cvec(m + p);
  cplx *xn = st_cvec(n), *r = st_cvec(m);
  if (z0) memcpy(z, z0, (size_t)p * sizeof *z);
  else st_matvec(A, 0, x, z);
#define J_OF(k)                                                                                                        \
  do {                                                                                                                 \
    st_matvec(Op, 0, x, r);                                                                                            \
    for (int64_t i = 0; i < m; ++i) r[i] -= b[i];                                                                      \
    st_matvec(A, 0, x, Ax);                                                                                            \
    out->history[k] = 0.5 * nrm2(m, r) + rprox_norm(g, Ax);                                                            \
  } while (0)
  J_OF(0);
  for (int k = 0; k < c->niter; ++k) {
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == (c->gfirst ? 0 : 1)) { /* z = prox_{tau g}(A x + u) */
        st_matvec(A, 0, x, Ax);
        for (int64_t i = 0; i < p; ++i) t[i] = Ax[i] + u[i];
        rprox_apply(g, 0, c->tau, 0, t, z);
      } else { /* x = CGLS([Op; A / sqrt(tau)], [b; (z - u) / sqrt(tau)]) from x */
        for (int64_t i = 0; i < m; ++i) rhs[i] = b[i];
        for (int64_t i = 0; i < p; ++i) rhs[m + i] = sq * (z[i] - u[i]);
        ref_cgls(&M, rhs, x, c->inner_niter, c->inner_tol, xn);
        memcpy(x, xn, (size_t)n * sizeof *x);
      }
    }
    for (int64_t i = 0; i < p; ++i) u[i] = u[i] + Ax[i] - z[i];
    J_OF(k + 1);
  }
#undef J_OF
  out->iterations = c->niter;
  out->reason = RMAOP_REASON_NITER;
  out->x = x;
  memcpy(zout, z, (size_t)p * sizeof *z);
  st_mat_free(&M);
  free(z), free(u), free(Ax), free(t), free(rhs), free(xn), free(r);
}

START_TEST(test_admml2) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    g_complex = rt_is_complex(d);
    st_problem pb = st_make_matmul(ctx, d, MM_N, MM_K, mm_entry);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(pb.A, &oi));
    st_mat D;
    rmaop_op A = make_deriv(d, oi.model, MM_K, &D);
    cplx *bg = series(MM_N, d, 3, 1.0), *x0g = series(MM_K, d, 4, 0.2), *z0g = series(MM_K, d, 7, 0.1);
    rmaop_vec b = vec_from(oi.data, d, bg), x0 = vec_from(oi.model, d, x0g), z0 = vec_from(oi.model, d, z0g);
    rmaop_vec x = NULL, z = NULL;
    RT_OK(rmaop_vec_duplicate(x0, &x));
    RT_OK(rmaop_vec_duplicate(x0, &z));
    rmaop_prox g = NULL;
    RT_OK(rmaop_prox_create_l1(ctx, 0.2, NULL, &g));
    rprox rg = {.kind = L1, .sigma = 0.2, .n = MM_K};
    /* few inner iterations: CGLS on [Op; D / sqrt(tau)] amplifies rounding ~30-fold per iteration once its Krylov
     * space is nearly exhausted (on a like system PyLops-MPI's own CGLS and a dense one differ by 3e-8 after 10), so a longer
     * inner solve could not be compared to 1e-10 with any implementation */
    const admm_cfg cfgs[3] = {{.niter = 6, .inner_niter = 5, .inner_tol = 1e-4, .tau = 0.8},
                              {.niter = 5, .gfirst = 1, .inner_niter = 4, .inner_tol = 0, .tau = 0.5, .with_z0 = 1},
                              {.niter = 0, .inner_niter = 5, .inner_tol = 1e-4, .tau = 0.8}};
    for (int c = 0; c < 3; ++c) {
      const admm_cfg *cf = &cfgs[c];
      rmaop_admml2_options o;
      rmaop_admml2_options_init(&o);
      pcb_state cb = {.expect_x = x, .x_ok = 1};
      o.niter = cf->niter, o.tau = cf->tau, o.gfirst = cf->gfirst, o.history = 1, o.z0 = cf->with_z0 ? z0 : NULL;
      o.inner.niter = cf->inner_niter, o.inner.tol = cf->inner_tol, o.callback = pcb, o.user = &cb;
      rmaop_solver_info info;
      RT_OK(rmaop_solve_admml2(g, pb.A, b, A, x0, x, z, &o, &info));
      st_ref ref;
      cplx *zr = st_cvec(MM_K);
      ref_admm(&rg, &pb.M, bg, &D, x0g, cf->with_z0 ? z0g : NULL, cf, &ref, zr);
      char what[160], msg[400] = "";
      snprintf(what, sizeof what, "ADMML2 (%s, tau %g, gfirst %d, inner niter %d%s)", rmaop_dtype_name(d), cf->tau,
               cf->gfirst, cf->inner_niter, cf->with_z0 ? ", z0" : "");
      check_run(what, d, &info, &ref, x, &cb);
      RT_CHECK(close_global(z, zr, 100 * hist_tol(d), msg, sizeof msg), "%s: z%s", what, msg);
      RT_CHECK(cb.aux_null == 0, "%s: the callback got no z", what);
      rmaop_solver_info_destroy(&info);
      free(ref.x), free(zr);
    }
    /* z may be left out; the history off leaves it NULL */
    rmaop_admml2_options o;
    rmaop_admml2_options_init(&o);
    o.niter = 2, o.tau = 0.8;
    rmaop_solver_info info;
    RT_OK(rmaop_solve_admml2(g, pb.A, b, A, x0, x, NULL, &o, &info));
    RT_CHECK(info.iterations == 2 && info.history == NULL, "ADMML2 without history: %d iterations, history %p",
             info.iterations, (void *)info.history);
    rmaop_solver_info_destroy(&info);
    rmaop_prox_destroy(&g);
    free(bg), free(x0g), free(z0g);
    rmaop_vec_destroy(&b), rmaop_vec_destroy(&x0), rmaop_vec_destroy(&z0), rmaop_vec_destroy(&x), rmaop_vec_destroy(&z);
    rmaop_op_destroy(&A);
    st_mat_free(&D);
    st_problem_free(&pb);
  }
}
END_TEST

/* ---- PrimalDual ---- */

typedef struct {
  int niter, gfirst;
  double tau, mu, theta;
  const double *tau_iter, *mu_iter;
  const cplx *z;
} pd_cfg;

/* pylops_mpi.proximal.optimization.PrimalDual, scalar steps as float32 values (PyLops-MPI's arrays), with
 * J = f(x) + g(A x) + Re z^T x recorded. */
static void ref_pd(rprox *f, rprox *g, const st_mat *A, const cplx *x0, const cplx *y0, const pd_cfg *c, st_ref *out,
                   cplx *yout) {
  const int64_t n = A->n, m = A->m;
  cplx *x = cdup(n, x0), *y = cdup(m, y0), *xhat = cdup(n, x0), *xold = st_cvec(n), *w = st_cvec(m), *aty = st_cvec(n);
  cplx *t = st_cvec(n);
#define J_OF(k)                                                                                                        \
  do {                                                                                                                 \
    st_matvec(A, 0, x, w);                                                                                             \
    out->history[k] = rprox_norm(f, x) + rprox_norm(g, w) + (c->z ? tdot_re(n, c->z, x) : 0);                          \
  } while (0)
  J_OF(0);
  for (int k = 0; k < c->niter; ++k) {
    const double tau = c->tau_iter ? c->tau_iter[k] : (double)(float)c->tau;
    const double mu = c->mu_iter ? c->mu_iter[k] : (double)(float)c->mu;
    memcpy(xold, x, (size_t)n * sizeof *x);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == (c->gfirst ? 0 : 1)) { /* y = prox_{mu g*}(y + mu A xhat) */
        st_matvec(A, 0, xhat, w);
        for (int64_t i = 0; i < m; ++i) w[i] = y[i] + mu * w[i];
        rprox_apply(g, 1, mu, !c->mu_iter, w, y);
      } else { /* x = prox_{tau f}(x - tau (A^H y + z)), xhat = x + theta (x - xold) */
        st_matvec(A, 1, y, aty);
        for (int64_t i = 0; i < n; ++i) t[i] = x[i] - tau * (aty[i] + (c->z ? c->z[i] : 0));
        rprox_apply(f, 0, tau, !c->tau_iter, t, x);
        extrap(n, xhat, x, xold, c->theta);
      }
    }
    J_OF(k + 1);
  }
#undef J_OF
  out->iterations = c->niter;
  out->reason = RMAOP_REASON_NITER;
  out->x = x;
  memcpy(yout, y, (size_t)m * sizeof *y);
  free(xhat), free(xold), free(w), free(aty), free(t), free(y);
}

static void run_pd(const char *name, rmaop_dtype d, rmaop_prox f, rmaop_prox g, rprox *rf, rprox *rg, rmaop_op A,
                   const st_mat *M, const pd_cfg *c, int with_y0) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(A, &oi));
  cplx *x0g = series(M->n, d, 4, 0.5), *y0g = with_y0 ? series(M->m, d, 8, 0.1) : st_cvec(M->m);
  rmaop_vec x0 = vec_from(oi.model, d, x0g), y0 = with_y0 ? vec_from(oi.data, d, y0g) : NULL, x = NULL, y = NULL;
  rmaop_vec zv = c->z ? vec_from(oi.model, d, c->z) : NULL;
  RT_OK(rmaop_vec_create(oi.model, d, &x));
  RT_OK(rmaop_vec_create(oi.data, d, &y));
  rmaop_primaldual_options o;
  rmaop_primaldual_options_init(&o);
  pcb_state cb = {.expect_x = x, .x_ok = 1};
  o.niter = c->niter, o.tau = c->tau, o.mu = c->mu, o.tau_iter = c->tau_iter, o.mu_iter = c->mu_iter;
  o.theta = c->theta, o.gfirst = c->gfirst, o.z = zv, o.history = 1, o.callback = pcb, o.user = &cb;
  rmaop_solver_info info;
  RT_OK(rmaop_solve_primal_dual(f, g, A, x0, y0, x, y, &o, &info));
  st_ref ref;
  cplx *yr = st_cvec(M->m);
  ref_pd(rf, rg, M, x0g, y0g, c, &ref, yr);
  char what[200], msg[400] = "";
  snprintf(what, sizeof what, "PrimalDual %s (%s, tau %g, mu %g%s, theta %g, gfirst %d%s%s)", name, rmaop_dtype_name(d),
           c->tau, c->mu, c->tau_iter ? " (arrays)" : "", c->theta, c->gfirst, c->z ? ", z" : "", with_y0 ? ", y0" : "");
  check_run(what, d, &info, &ref, x, &cb);
  RT_CHECK(close_global(y, yr, 100 * hist_tol(d), msg, sizeof msg), "%s: y%s", what, msg);
  rmaop_solver_info_destroy(&info);
  free(ref.x), free(yr), free(x0g), free(y0g);
  rmaop_vec_destroy(&x0), rmaop_vec_destroy(&y0), rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&zv);
}

START_TEST(test_primal_dual_tv) {
  const double taus[8] = {0.2, 0.21, 0.19, 0.2, 0.22, 0.2, 0.18, 0.2}, mus[8] = {0.5, 0.45, 0.5, 0.55, 0.5, 0.4, 0.5, 0.5};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    g_complex = rt_is_complex(d);
    /* TV denoising: f = 1/2 ||x - b||^2, g = 0.3 ||grad x||_{2,1} */
    st_mat G;
    rmaop_op A = make_gradient(d, &G);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(A, &oi));
    cplx *bg = series(GN, d, 3, 1.0), *zg = series(GN, d, 9, 0.05);
    rmaop_vec b = vec_from(oi.model, d, bg);
    rmaop_prox_l2_spec s;
    rmaop_prox_l2_spec_init(&s);
    s.b = b;
    rmaop_prox f = NULL, g = NULL;
    RT_OK(rmaop_prox_create_l2(ctx, &s, &f));
    RT_OK(rmaop_prox_create_l21(ctx, 2, 0.3, &g));
    rprox rf = {.kind = L2, .sigma = 1, .alpha = 1, .qgrad = 1, .n = GN, .b = bg};
    rprox rg = {.kind = L21, .sigma = 0.3, .n = 2 * GN, .ndim = 2};
    run_pd("TV", d, f, g, &rf, &rg, A, &G, &(pd_cfg){.niter = 8, .gfirst = 1, .tau = 0.2, .mu = 0.5, .theta = 1}, 0);
    run_pd("TV", d, f, g, &rf, &rg, A, &G, &(pd_cfg){.niter = 8, .gfirst = 0, .tau = 0.2, .mu = 0.5, .theta = 1}, 1);
    run_pd("TV", d, f, g, &rf, &rg, A, &G,
           &(pd_cfg){.niter = 8, .gfirst = 1, .tau_iter = taus, .mu_iter = mus, .theta = 0.5, .z = zg}, 1);
    rmaop_prox_destroy(&f), rmaop_prox_destroy(&g);
    free(bg), free(zg);
    rmaop_vec_destroy(&b);
    rmaop_op_destroy(&A);
    st_mat_free(&G);
  }
}
END_TEST

START_TEST(test_primal_dual_l2op) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    g_complex = rt_is_complex(d);
    /* f = 1/2 ||M x - b||^2 by CG / CGLS (warm), g = 0.2 ||D x||_1, and g an L2 whose dual is Moreau's */
    st_problem pb = st_make_matmul(ctx, d, MM_N, MM_K, mm_entry);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(pb.A, &oi));
    st_mat D;
    rmaop_op A = make_deriv(d, oi.model, MM_K, &D);
    cplx *bg = series(MM_N, d, 3, 1.0), *z0 = st_cvec(MM_K), *cg = series(MM_K, d, 5, 0.5);
    rmaop_vec b = vec_from(oi.data, d, bg), x0 = vec_from(oi.model, d, z0), c = vec_from(oi.model, d, cg);
    for (int solver = 0; solver < 2; ++solver) {
      rmaop_prox_l2_spec s;
      rmaop_prox_l2_spec_init(&s);
      s.Op = pb.A, s.b = b, s.x0 = x0, s.niter = 5, s.solver = solver ? RMAOP_PROX_L2_CG : RMAOP_PROX_L2_CGLS;
      rmaop_prox f = NULL, g = NULL;
      RT_OK(rmaop_prox_create_l2(ctx, &s, &f));
      rprox rf = {.kind = L2, .sigma = 1, .alpha = 1, .qgrad = 1, .n = MM_K, .Op = &pb.M, .b = bg, .niter = 5,
                  .tol = 1e-4, .warm = 1, .cg = solver, .x0 = cdup(MM_K, z0)};
      if (solver == 0) {
        RT_OK(rmaop_prox_create_l1(ctx, 0.2, NULL, &g));
        rprox rg = {.kind = L1, .sigma = 0.2, .n = MM_K};
        run_pd("L2(Op, CGLS) + L1(D)", d, f, g, &rf, &rg, A, &D,
               &(pd_cfg){.niter = 6, .gfirst = 1, .tau = 0.3, .mu = 0.4, .theta = 1}, 0);
      } else {
        rmaop_prox_l2_spec sg;
        rmaop_prox_l2_spec_init(&sg);
        sg.b = c, sg.sigma = 0.5;
        RT_OK(rmaop_prox_create_l2(ctx, &sg, &g));
        rprox rg = {.kind = L2, .sigma = 0.5, .alpha = 1, .qgrad = 1, .n = MM_K, .b = cg};
        run_pd("L2(Op, CG) + L2(D)", d, f, g, &rf, &rg, A, &D,
               &(pd_cfg){.niter = 6, .gfirst = 0, .tau = 0.3, .mu = 0.4, .theta = 0.7}, 1);
      }
      rmaop_prox_destroy(&f), rmaop_prox_destroy(&g);
      free(rf.x0);
    }
    free(bg), free(z0), free(cg);
    rmaop_vec_destroy(&b), rmaop_vec_destroy(&x0), rmaop_vec_destroy(&c);
    rmaop_op_destroy(&A);
    st_mat_free(&D);
    st_problem_free(&pb);
  }
}
END_TEST

/* ---- bad input ---- */

START_TEST(test_bad_input) {
  st_problem pb = st_make_matmul(ctx, RMAOP_F64, MM_N, MM_K, mm_entry);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(pb.A, &oi));
  st_bad_vecs bv = st_bad_vecs_create(ctx, &pb);
  st_mat G, D;
  rmaop_op grad = make_gradient(RMAOP_F64, &G), A = make_deriv(RMAOP_F64, oi.model, MM_K, &D);
  rmaop_prox p = NULL, l1 = NULL, l21 = NULL, l2 = NULL;
  /* creation */
  RT_EXPECT(rmaop_prox_create_l1(NULL, 1, NULL, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ctx is NULL");
  RT_EXPECT(rmaop_prox_create_l1(ctx, -1, NULL, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("sigma = -1");
  RT_EXPECT(rmaop_prox_create_l1(ctx, 1, NULL, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("prox (output) is NULL");
  RT_EXPECT(rmaop_prox_create_l21(ctx, 0, 1, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ndim = 0 is outside [1, 8]");
  RT_EXPECT(rmaop_prox_create_l21(ctx, 2, NAN, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("sigma = nan");
  rmaop_prox_l2_spec s;
  rmaop_prox_l2_spec_init(&s);
  RT_EXPECT(rmaop_prox_create_l2(ctx, NULL, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("spec is NULL");
  s.Op = pb.A, s.b = bv.y;
  RT_EXPECT(rmaop_prox_create_l2(ctx, &s, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x0 must be given when Op is");
  s.x0 = bv.x, s.b = bv.x; /* b on the model layout */
  RT_EXPECT(rmaop_prox_create_l2(ctx, &s, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("b's layout");
  s.b = bv.y, s.solver = (rmaop_prox_l2_solver)7;
  RT_EXPECT(rmaop_prox_create_l2(ctx, &s, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("solver = 7");
  s.solver = RMAOP_PROX_L2_CGLS, s.niter = rt_rank == 0 ? -2 : 10; /* one rank's bad spec: nobody hangs */
  RT_EXPECT_ON(rmaop_prox_create_l2(ctx, &s, &p), 0, RMAOP_ERR_ARG);
  s.niter = 10, s.sigma = -0.5;
  RT_EXPECT(rmaop_prox_create_l2(ctx, &s, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("sigma = -0.5");
  s.sigma = 1;
  RT_OK(rmaop_prox_create_l2(ctx, &s, &l2));
  RT_OK(rmaop_prox_create_l1(ctx, 0.5, NULL, &l1));
  RT_OK(rmaop_prox_create_l21(ctx, 2, 0.5, &l21));
  /* applications */
  RT_EXPECT(rmaop_prox_apply(l1, 0.0, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau must be positive");
  RT_EXPECT(rmaop_prox_apply_dual(l1, -2, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau must be positive");
  RT_EXPECT(rmaop_prox_apply(l2, NAN, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau must be positive");
  RT_EXPECT(rmaop_prox_apply(NULL, 1, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("prox is NULL");
  RT_EXPECT(rmaop_prox_apply(l1, 1, NULL, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x is NULL");
  RT_EXPECT(rmaop_prox_apply(l1, 1, bv.x, bv.xbig), RT_BIT(RMAOP_ERR_ARG)); /* out on another layout */
  RT_MESSAGE_HAS("out's layout");
  RT_EXPECT(rmaop_prox_apply(l1, 1, bv.x, bv.x32), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("out is f32");
  RT_EXPECT(rmaop_prox_apply(l2, 1, bv.xbig, bv.xbig), RT_BIT(RMAOP_ERR_ARG)); /* not Op's model */
  RT_MESSAGE_HAS("does not fit the L2's Op");
  RT_EXPECT(rmaop_prox_apply(l21, 1, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("must be a stacked vector of ndim = 2 parts");
  rmaop_layout p1 = NULL, p2 = NULL, st = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 6, &p1));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 7, &p2));
  rmaop_layout pp[2] = {p1, p2};
  RT_OK(rmaop_layout_create_stacked(2, pp, &st));
  rmaop_vec sv = NULL;
  RT_OK(rmaop_vec_create(st, RMAOP_F64, &sv));
  RT_EXPECT(rmaop_prox_apply(l21, 1, sv, sv), RT_BIT(RMAOP_ERR_ARG)); /* parts of different layouts */
  RT_MESSAGE_HAS("part 1 of x has another layout");
  RT_EXPECT(rmaop_prox_grad(l1, bv.x, bv.x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("the L1 proximal has no gradient");
  RT_EXPECT(rmaop_prox_norm(l1, bv.x, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("value is NULL");
  /* ProximalGradient */
  rmaop_proxgrad_options po;
  rmaop_proxgrad_options_init(&po);
  rmaop_solver_info info;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau = 0 must be positive");
  po.tau = 0.01;
  RT_EXPECT(rmaop_solve_proximal_gradient(NULL, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("proxf is NULL");
  RT_EXPECT(rmaop_solve_proximal_gradient(l1, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("proxf is an L1 proximal, which has no gradient");
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, NULL, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("proxg is NULL");
  po.eta = 1.5;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("eta = 1.5 is outside (0, 1]");
  po.eta = 1, po.acceleration = (rmaop_accel)5;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("acceleration = 5 is unknown");
  po.acceleration = RMAOP_ACCEL_NONE, po.niter = -1;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("niter = -1 is negative");
  po.niter = 10, po.tol = -1;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tol = -1");
  po.tol = 0;
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.xbig, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x's layout");
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l21, bv.x, bv.x, &po, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("stacked vector of ndim = 2");
  po.tau = rt_rank == rt_size - 1 ? -1 : 0.01;
  RT_EXPECT_ON(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info), rt_size - 1, RMAOP_ERR_ARG);
  po.tau = 0.01 * (1 + rt_rank); /* valid but different: every rank refuses */
  RT_EXPECT(rmaop_solve_proximal_gradient(l2, l1, bv.x, bv.x, &po, &info),
            rt_size > 1 ? RT_BIT(RMAOP_ERR_ARG) : RT_BIT(RMAOP_OK));
  if (rt_size > 1) RT_MESSAGE_HAS("tau differs between ranks");
  else rmaop_solver_info_destroy(&info);
  /* ADMML2 */
  rmaop_admml2_options ao;
  rmaop_admml2_options_init(&ao);
  RT_EXPECT(rmaop_solve_admml2(l1, pb.A, bv.y, A, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau = 0 must be positive");
  ao.tau = 1;
  RT_EXPECT(rmaop_solve_admml2(l1, NULL, bv.y, A, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("Op is NULL");
  RT_EXPECT(rmaop_solve_admml2(NULL, pb.A, bv.y, A, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("proxg is NULL");
  RT_EXPECT(rmaop_solve_admml2(l1, pb.A, bv.x, A, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("b's layout");
  RT_EXPECT(rmaop_solve_admml2(l1, pb.A, bv.y, grad, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("A's model layout is not Op's");
  RT_EXPECT(rmaop_solve_admml2(l21, pb.A, bv.y, A, bv.x, bv.x, NULL, &ao, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("stacked vector of ndim = 2");
  ao.niter = rt_rank == 0 ? -1 : 3;
  RT_EXPECT_ON(rmaop_solve_admml2(l1, pb.A, bv.y, A, bv.x, bv.x, NULL, &ao, &info), 0, RMAOP_ERR_ARG);
  /* PrimalDual */
  rmaop_primaldual_options pdo;
  rmaop_primaldual_options_init(&pdo);
  pdo.mu = 0.5;
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("tau = 0 must be positive");
  pdo.tau = 0.5, pdo.mu = 1e-50; /* zero as the float32 PyLops-MPI holds it in */
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("mu = 1e-50 must be positive");
  const double mus[3] = {0.5, 0.0, 0.5};
  pdo.mu_iter = mus, pdo.niter = 3;
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("mu_iter[1] = 0 must be positive");
  pdo.mu_iter = NULL, pdo.mu = 0.5, pdo.theta = 2;
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("theta = 2 is outside [0, 1]");
  pdo.theta = 1;
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, NULL, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("A is NULL");
  RT_EXPECT(rmaop_solve_primal_dual(l2, l21, A, bv.x, NULL, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("stacked vector of ndim = 2");
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, bv.xbig, bv.x, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("y0's layout");
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x32, NULL, &pdo, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x is f32");
  pdo.gfirst = rt_rank == 0; /* a flag that differs between ranks */
  RT_EXPECT(rmaop_solve_primal_dual(l2, l1, A, bv.x, NULL, bv.x, NULL, &pdo, &info),
            rt_size > 1 ? RT_BIT(RMAOP_ERR_ARG) : RT_BIT(RMAOP_OK));
  if (rt_size > 1) RT_MESSAGE_HAS("gfirst differs between ranks");
  else rmaop_solver_info_destroy(&info);
  rmaop_prox_destroy(&l1), rmaop_prox_destroy(&l2), rmaop_prox_destroy(&l21);
  rmaop_prox_destroy(&p); /* NULL: nothing */
  rmaop_vec_destroy(&sv);
  rmaop_layout_destroy(&st), rmaop_layout_destroy(&p1), rmaop_layout_destroy(&p2);
  rmaop_op_destroy(&grad), rmaop_op_destroy(&A);
  st_mat_free(&G), st_mat_free(&D);
  st_bad_vecs_free(&bv);
  st_problem_free(&pb);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_prox");
  TCase *tp = tcase_create("prox");
  tcase_add_checked_fixture(tp, setup, teardown);
  tcase_add_test(tp, test_prox_l1);
  tcase_add_test(tp, test_prox_l2_closed);
  tcase_add_test(tp, test_prox_l2_op);
  tcase_add_test(tp, test_prox_l21);
  suite_add_tcase(s, tp);
  TCase *ts = tcase_create("solvers");
  tcase_add_checked_fixture(ts, setup, teardown);
  tcase_add_test(ts, test_proximal_gradient);
  tcase_add_test(ts, test_admml2);
  tcase_add_test(ts, test_primal_dual_tv);
  tcase_add_test(ts, test_primal_dual_l2op);
  suite_add_tcase(s, ts);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_bad_input);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, make_suite); }
