/* Tests of the distributed N-D FFT (rmaop_op_create_fftnd, include/rmaop/op_fft.h) and of the local transforms
 * under it (src/ops/fft_local.h).
 *
 * Reference: direct DFTs in double complex, O(n^2) per axis on a few dozen points, written here from the PyLops
 * and numpy definitions and independent of FFTW and cuFFT. Every rank knows the whole model x and data-side input
 * y (rt_value formulas rounded to the operator's dtype) and computes, serially:
 *   forward (PyLops FFTND._matvec): ifftshift (roll by -(n/2)) of the ifftshift_before axes; the real part of a real
 *     model; per listed axis X_k = sum_{j < min(n, nfft)} x_j e^{-2 pi i jk/nfft}, k < nfft (numpy.fft.fftn's s);
 *     real: the last listed axis kept to nfft/2 + 1 bins, bins 1 .. (nfft-1)/2 times sqrt(2); 1/prod(nffts) for
 *     norm "1/n"; fftshift (roll by n/2) of the fftshift_after axes;
 *   adjoint (PyLops FFTND._rmatvec): ifftshift of the fftshift_after axes; real: those bins divided by sqrt(2)
 *     and numpy.fft.irfftn's half-spectrum inverse, x_j = Re sum_k c_k X_k e^{+2 pi i jk/nfft} with c_k = 2 on the
 *     bins above, 1 on the zero and Nyquist bins; e^{+...} on the other axes; 1/prod(nffts) for "1/n", none
 *     for "none"; cropped or zero-padded back to dims; the real part of a real model; fftshift of the
 *     ifftshift_before axes.
 * Each rank compares its rows (balanced rows of axis 0, PyLops-MPI's split) element by element within rt_tol
 * relative to sum |input| times the scaling. Dot tests: rmaop_op_dottest for complex models; for real models
 * (linear over the reals, as PyLops) Re<A x, y> against <x, A^H y> for real x, and A^H y with zero imaginary
 * parts. Cases: 2-D and 3-D, axes in several orders (axes[-1] == 0, negative axes, axis 0 not listed), odd
 * sizes, dims[0] smaller than the rank count (ranks without rows), nffts longer and shorter than dims, real and
 * complex, both norms, ifftshift / fftshift, every dtype; the frequencies (numpy.fft.fftfreq, rfftfreq,
 * fftshift: also known values), creation errors on every rank. The local transforms are checked alone against
 * the same direct DFTs: every kind, real arrays and real parts of complex ones, rolls, padding, truncation,
 * weights and scale, both precisions. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"
#include "ops/fft_local.h"

#define RT_PI 3.14159265358979323846

static rmaop_ctx ctx;
static void setup(void) { ctx = rt_ctx(); }
static void teardown(void) { rmaop_ctx_destroy(&ctx); }

/* A rank-local failure (first message kept), asserted collectively later. */
static int lok;
static char lerr[640];
static void lfail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lfail(const char *fmt, ...) {
  if (!lok) return;
  lok = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lerr, sizeof lerr, fmt, ap);
  va_end(ap);
}
#define LCALL(expr)                                                                                          \
  do {                                                                                                       \
    rmaop_status lc__s = (expr);                                                                             \
    if (lc__s != RMAOP_OK) lfail("%s:%d: %s -> %s: %s", __FILE__, __LINE__, #expr, rmaop_status_string(lc__s), \
                                 rmaop_ctx_last_error(NULL));                                                \
  } while (0)

/* ---- serial reference on whole arrays (C order, double complex) ---- */

typedef struct {
  int ndim;
  int64_t d[RMAOP_MAX_DIMS];
} shp;

static int64_t numel(const shp *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; ++i) n *= s->d[i];
  return n;
}
static int64_t before(const shp *s, int a) {
  int64_t n = 1;
  for (int i = 0; i < a; ++i) n *= s->d[i];
  return n;
}
static int64_t after(const shp *s, int a) {
  int64_t n = 1;
  for (int i = a + 1; i < s->ndim; ++i) n *= s->d[i];
  return n;
}
static double _Complex *zalloc(int64_t n) {
  double _Complex *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
  if (!p) abort();
  return p;
}

/* numpy.roll(x, shift, axis), in place. */
static void roll(double _Complex *x, const shp *s, int a, int64_t shift) {
  const int64_t o = before(s, a), n = s->d[a], in = after(s, a);
  double _Complex *t = zalloc(n * in * o);
  for (int64_t p = 0; p < o; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t k = (((j + shift) % n) + n) % n;
      memcpy(&t[(p * n + k) * in], &x[(p * n + j) * in], (size_t)in * sizeof *x);
    }
  memcpy(x, t, (size_t)(o * n * in) * sizeof *x);
  free(t);
}

/* out[k] = sum_{j < min(n_in, nfft)} w_j x[j] e^{sign 2 pi i jk / nfft} for k < min(n_out, nfft), 0 beyond, along
 * axis a of x (shape s); w_j = 1, or the half-spectrum inverse's c_j when `half`. Returns the new array; s
 * gets n_out along a. */
static double _Complex *dft(const double _Complex *x, shp *s, int a, int64_t nfft, int64_t n_out, int sign, int half) {
  const int64_t o = before(s, a), n = s->d[a], in = after(s, a);
  double _Complex *y = zalloc(o * n_out * in);
  const int64_t jmax = n < nfft ? n : nfft, kmax = n_out < nfft ? n_out : nfft;
  for (int64_t p = 0; p < o; ++p)
    for (int64_t k = 0; k < kmax; ++k)
      for (int64_t j = 0; j < jmax; ++j) {
        double w = 1;
        if (half) w = j >= 1 && j <= (nfft - 1) / 2 ? 2 : 1;
        const double ang = sign * 2 * RT_PI * (double)((j * k) % nfft) / (double)nfft;
        const double _Complex e = w * (cos(ang) + I * sin(ang));
        for (int64_t i = 0; i < in; ++i) y[(p * n_out + k) * in + i] += e * x[(p * n + j) * in + i];
      }
  s->d[a] = n_out;
  return y;
}

/* Multiplies the entries [lo, hi) along axis a by w. */
static void scale_bins(double _Complex *x, const shp *s, int a, int64_t lo, int64_t hi, double w) {
  const int64_t o = before(s, a), n = s->d[a], in = after(s, a);
  for (int64_t p = 0; p < o; ++p)
    for (int64_t j = lo; j < hi && j < n; ++j)
      for (int64_t i = 0; i < in; ++i) x[(p * n + j) * in + i] *= w;
}

typedef struct {
  rmaop_fft_spec s;
  int axes[RMAOP_MAX_DIMS]; /* normalized */
  int64_t nffts[RMAOP_MAX_DIMS];
  shp dims, dimsd;
  int real_model;
  double N; /* prod(nffts) */
} ref_t;

static ref_t ref_of(const rmaop_fft_spec *s) {
  ref_t r = {.s = *s, .dims = {s->ndim, {0}}, .N = 1};
  memcpy(r.dims.d, s->dims, sizeof r.dims.d);
  r.dimsd = r.dims;
  for (int i = 0; i < s->naxes; ++i) {
    r.axes[i] = s->axes[i] < 0 ? s->axes[i] + s->ndim : s->axes[i];
    r.nffts[i] = s->nffts[i] > 0 ? s->nffts[i] : s->dims[r.axes[i]];
    r.dimsd.d[r.axes[i]] = r.nffts[i];
    r.N *= (double)r.nffts[i];
  }
  if (s->real) r.dimsd.d[r.axes[s->naxes - 1]] = r.nffts[s->naxes - 1] / 2 + 1;
  r.real_model = s->real || s->dtype == RMAOP_F32 || s->dtype == RMAOP_F64;
  return r;
}

/* y = A x, PyLops FFTND._matvec. */
static double _Complex *ref_forward(const ref_t *r, const double _Complex *x0) {
  shp s = r->dims;
  const int na = r->s.naxes, last = na - 1;
  double _Complex *x = zalloc(numel(&s));
  memcpy(x, x0, (size_t)numel(&s) * sizeof *x);
  for (int i = 0; i < na; ++i)
    if (r->s.ifftshift_before[i]) roll(x, &s, r->axes[i], -(s.d[r->axes[i]] / 2));
  if (r->real_model)
    for (int64_t j = 0; j < numel(&s); ++j) x[j] = creal(x[j]);
  for (int i = 0; i < na; ++i) {
    double _Complex *y = dft(x, &s, r->axes[i], r->nffts[i], r->nffts[i], -1, 0);
    free(x);
    x = y;
  }
  if (r->s.real) { /* rfftn: the first nfft/2 + 1 bins of the last axis, weighted */
    const int a = r->axes[last];
    const int64_t nf = r->nffts[last];
    const int64_t o = before(&s, a), in = after(&s, a), m = nf / 2 + 1; /* s.d[a] is nf here */
    double _Complex *y = zalloc(o * m * in);
    for (int64_t p = 0; p < o; ++p)
      for (int64_t k = 0; k < m; ++k) memcpy(&y[(p * m + k) * in], &x[(p * nf + k) * in], (size_t)in * sizeof *x);
    free(x);
    x = y;
    s.d[a] = m;
    scale_bins(x, &s, a, 1, 1 + (nf - 1) / 2, sqrt(2.0));
  }
  if (r->s.norm == RMAOP_FFT_NORM_1_OVER_N)
    for (int64_t j = 0; j < numel(&s); ++j) x[j] /= r->N;
  for (int i = 0; i < na; ++i)
    if (r->s.fftshift_after[i]) roll(x, &s, r->axes[i], s.d[r->axes[i]] / 2);
  return x;
}

/* x = A^H y, PyLops FFTND._rmatvec. */
static double _Complex *ref_adjoint(const ref_t *r, const double _Complex *y0) {
  shp s = r->dimsd;
  const int na = r->s.naxes, last = na - 1;
  double _Complex *y = zalloc(numel(&s));
  memcpy(y, y0, (size_t)numel(&s) * sizeof *y);
  for (int i = 0; i < na; ++i)
    if (r->s.fftshift_after[i]) roll(y, &s, r->axes[i], -(s.d[r->axes[i]] / 2));
  if (r->s.real) scale_bins(y, &s, r->axes[last], 1, 1 + (r->nffts[last] - 1) / 2, 1 / sqrt(2.0));
  for (int i = 0; i < na; ++i) {
    const int a = r->axes[i], half = r->s.real && i == last;
    double _Complex *x = dft(y, &s, a, r->nffts[i], r->dims.d[a], 1, half);
    free(y);
    y = x;
  }
  if (r->s.real)
    for (int64_t j = 0; j < numel(&s); ++j) y[j] = creal(y[j]);
  if (r->s.norm == RMAOP_FFT_NORM_1_OVER_N)
    for (int64_t j = 0; j < numel(&s); ++j) y[j] /= r->N;
  if (r->real_model)
    for (int64_t j = 0; j < numel(&s); ++j) y[j] = creal(y[j]);
  for (int i = 0; i < na; ++i)
    if (r->s.ifftshift_before[i]) roll(y, &s, r->axes[i], s.d[r->axes[i]] / 2);
  return y;
}

/* ---- the operator against the reference ---- */

static rmaop_dtype cdt_of(rmaop_dtype d) { return d == RMAOP_F32 || d == RMAOP_C64 ? RMAOP_C64 : RMAOP_C128; }

/* Balanced rows of n over the ranks (PyLops-MPI's local_split). */
static void rows_of(int64_t n, int64_t *cnt, int64_t *off) {
  *cnt = n / rt_size + (rt_rank < n % rt_size);
  *off = rt_rank * (n / rt_size) + (rt_rank < n % rt_size ? rt_rank : n % rt_size);
}

/* Writes this rank's rows of the global array g (shape s) into v. */
static void put_rows(rmaop_vec v, rmaop_dtype dt, const double _Complex *g, const shp *s) {
  int64_t cnt, off;
  rows_of(s->d[0], &cnt, &off);
  const int64_t row = after(s, 0), n = cnt * row;
  void *buf = rt_alloc(dt, n);
  for (int64_t i = 0; i < n; ++i) rt_store(dt, buf, i, g[off * row + i]);
  LCALL(rmaop_vec_write_local(v, buf));
  free(buf);
}

/* Compares this rank's rows of v with the global want (shape s); `scale` bounds the entries' magnitude; `real`:
 * imaginary parts must be exactly zero. */
static void cmp_rows(rmaop_vec v, rmaop_dtype dt, const double _Complex *want, const shp *s, double scale, int real,
                     const char *what) {
  int64_t cnt, off;
  rows_of(s->d[0], &cnt, &off);
  const int64_t row = after(s, 0), n = cnt * row;
  rmaop_vec_info vi;
  LCALL(rmaop_vec_get_info(v, &vi));
  if (lok && vi.local_n != n) lfail("%s: %lld local elements, want %lld", what, (long long)vi.local_n, (long long)n);
  if (!lok) return;
  void *buf = rt_alloc(dt, n);
  LCALL(rmaop_vec_read_local(v, buf));
  for (int64_t i = 0; i < n && lok; ++i) {
    const double _Complex got = rt_load(dt, buf, i), w = want[off * row + i];
    if (!rt_close(got, w, rt_tol(dt), scale))
      lfail("%s: element %lld (global %lld) is %.9g%+.9gi, want %.9g%+.9gi (scale %g)", what, (long long)i,
            (long long)(off * row + i), creal(got), cimag(got), creal(w), cimag(w), scale);
    else if (real && cimag(got) != 0)
      lfail("%s: element %lld has the imaginary part %g, want a real value", what, (long long)i, cimag(got));
  }
  free(buf);
}

static double sum_abs(const double _Complex *x, int64_t n) {
  double t = 0;
  for (int64_t i = 0; i < n; ++i) t += cabs(x[i]);
  return t;
}

/* The whole check of one spec: info, forward, input untouched, adjoint, dot test. `what` names the case. */
static void check_fft(const rmaop_fft_spec *spec, const char *what) {
  const ref_t r = ref_of(spec);
  const rmaop_dtype dt = cdt_of(spec->dtype);
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_fftnd(ctx, spec, &A));
  lok = 1;
  rmaop_fft_info info;
  rmaop_op_info oi;
  LCALL(rmaop_op_fft_get_info(A, &info));
  LCALL(rmaop_op_get_info(A, &oi));
  if (lok && oi.dtype != dt) lfail("%s: operator dtype %d, want %d", what, (int)oi.dtype, (int)dt);
  int64_t mc, mo, dc, dof;
  rows_of(r.dims.d[0], &mc, &mo);
  rows_of(r.dimsd.d[0], &dc, &dof);
  for (int d = 0; d < spec->ndim && lok; ++d)
    if (info.dims[d] != r.dims.d[d] || info.dimsd[d] != r.dimsd.d[d] ||
        info.model_local[d] != (d ? r.dims.d[d] : mc) || info.data_local[d] != (d ? r.dimsd.d[d] : dc))
      lfail("%s: info axis %d: dims %lld dimsd %lld local %lld %lld", what, d, (long long)info.dims[d],
            (long long)info.dimsd[d], (long long)info.model_local[d], (long long)info.data_local[d]);
  if (lok && (info.model_offset != mo || info.data_offset != dof || info.model_axis != 0 || info.data_axis != 0 ||
              info.real_model != r.real_model || info.naxes != spec->naxes))
    lfail("%s: info offsets %lld %lld axes %d %d real_model %d", what, (long long)info.model_offset,
          (long long)info.data_offset, info.model_axis, info.data_axis, info.real_model);
  for (int i = 0; i < spec->naxes && lok; ++i)
    if (info.axes[i] != r.axes[i] || info.nffts[i] != r.nffts[i] || info.nfreqs[i] != r.dimsd.d[r.axes[i]])
      lfail("%s: info listed axis %d: axis %d nfft %lld nfreqs %lld", what, i, info.axes[i], (long long)info.nffts[i],
            (long long)info.nfreqs[i]);

  const int64_t nm = numel(&r.dims), nd = numel(&r.dimsd);
  double _Complex *xg = zalloc(nm), *yg = zalloc(nd);
  for (int64_t i = 0; i < nm; ++i) xg[i] = rt_round(dt, rt_value(i, 1));
  for (int64_t i = 0; i < nd; ++i) yg[i] = rt_round(dt, rt_value(i, 2));
  rmaop_vec x = NULL, y = NULL, Ax = NULL, AHy = NULL;
  LCALL(rmaop_vec_create(oi.model, dt, &x));
  LCALL(rmaop_vec_create(oi.data, dt, &y));
  LCALL(rmaop_vec_create(oi.data, dt, &Ax));
  LCALL(rmaop_vec_create(oi.model, dt, &AHy));
  RT_CHECK(lok, "%s", lerr);
  put_rows(x, dt, xg, &r.dims);
  put_rows(y, dt, yg, &r.dimsd);
  LCALL(rmaop_vec_set(Ax, 7.0));  /* outputs are overwritten */
  LCALL(rmaop_vec_set(AHy, 7.0));
  RT_CHECK(lok, "%s", lerr);
  RT_OK(rmaop_op_apply(A, x, Ax));
  RT_OK(rmaop_op_apply_adjoint(A, y, AHy));
  const double scale_fwd = sum_abs(xg, nm) * sqrt(2.0) / (spec->norm == RMAOP_FFT_NORM_1_OVER_N ? r.N : 1.0);
  const double scale_adj = sum_abs(yg, nd) * 2.0 / (spec->norm == RMAOP_FFT_NORM_1_OVER_N ? r.N : 1.0);
  double _Complex *yw = ref_forward(&r, xg), *xw = ref_adjoint(&r, yg);
  char w1[200], w2[200];
  snprintf(w1, sizeof w1, "%s forward", what);
  snprintf(w2, sizeof w2, "%s adjoint", what);
  cmp_rows(Ax, dt, yw, &r.dimsd, scale_fwd, 0, w1);
  cmp_rows(AHy, dt, xw, &r.dims, scale_adj, r.real_model, w2);
  cmp_rows(x, dt, xg, &r.dims, 0, 0, "the model after the forward (must be untouched)");
  cmp_rows(y, dt, yg, &r.dimsd, 0, 0, "the data after the adjoint (must be untouched)");
  RT_CHECK(lok, "%s", lerr);

  /* begin / end with other work in between: the same result, bit for bit */
  rmaop_vec Ax2 = NULL;
  LCALL(rmaop_vec_create(oi.data, dt, &Ax2));
  RT_CHECK(lok, "%s", lerr);
  RT_OK(rmaop_op_apply_begin(A, x, Ax2));
  LCALL(rmaop_vec_scale(AHy, 2.0));
  RT_OK(rmaop_op_apply_end(A));
  LCALL(rmaop_vec_axpy(Ax2, -1.0, Ax));
  double dn = -1;
  LCALL(rmaop_vec_norm2(Ax2, &dn));
  RT_CHECK(lok && dn == 0, "%s: begin / end differs from apply by %g: %s", what, dn, lerr);
  rmaop_vec_destroy(&Ax2);

  /* dot test */
  const double tol = rt_tol(dt);
  if (!r.real_model) {
    double rel = 1;
    RT_OK(rmaop_op_dottest(A, 11, &rel));
    RT_CHECK(rel <= tol, "%s: dot test %g > %g", what, rel, tol);
  } else { /* linear over the reals: real x */
    for (int64_t i = 0; i < nm; ++i) xg[i] = creal(xg[i]);
    put_rows(x, dt, xg, &r.dims);
    RT_CHECK(lok, "%s", lerr);
    RT_OK(rmaop_op_apply(A, x, Ax));
    RT_OK(rmaop_op_apply_adjoint(A, y, AHy));
    double _Complex d1 = 0, d2 = 0;
    RT_OK(rmaop_vec_dot(Ax, y, &d1));
    RT_OK(rmaop_vec_dot(x, AHy, &d2));
    const double rel = fabs(creal(d1) - creal(d2)) / fmax(fmax(fabs(creal(d1)), cabs(d2)), 1e-300);
    RT_CHECK(rel <= tol && cimag(d2) == 0, "%s: real dot test Re<Ax,y> = %.15g, <x,A^H y> = %.15g%+.3gi (rel %g)",
             what, creal(d1), creal(d2), cimag(d2), rel);
  }
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&Ax);
  rmaop_vec_destroy(&AHy);
  rmaop_op_destroy(&A);
  free(xg);
  free(yg);
  free(yw);
  free(xw);
}

/* A spec: ndim, dims, naxes, axes from the arguments; the rest zero (PyLops' defaults). */
static rmaop_fft_spec spec_of(rmaop_dtype dt, int ndim, const int64_t *dims, int naxes, const int *axes) {
  rmaop_fft_spec s = {.ndim = ndim, .naxes = naxes, .dtype = dt};
  memcpy(s.dims, dims, (size_t)ndim * sizeof *dims);
  memcpy(s.axes, axes, (size_t)naxes * sizeof *axes);
  return s;
}

typedef struct {
  int ndim;
  int64_t dims[3];
  int naxes;
  int axes[3];
} geom_case;

/* Shapes and axes: axes[-1] == 0, negative axes, axis 0 not listed, axis 0 alone, dims[0] below the rank count
 * (ranks without rows), the axis that holds the split while axis 0 is transformed shorter than the rank count
 * ((6, 1): one rank holds all), odd sizes. */
static const geom_case geoms[] = {
    {2, {6, 5}, 2, {0, 1}},     {2, {5, 7}, 2, {1, 0}},   {2, {7, 6}, 1, {1}},       {2, {7, 6}, 1, {0}},
    {3, {4, 5, 6}, 3, {0, 1, 2}}, {3, {5, 3, 4}, 3, {2, 0, 1}}, {3, {3, 4, 5}, 2, {1, 2}}, {3, {6, 4, 3}, 2, {-1, 0}},
    {3, {2, 5, 4}, 2, {0, 2}},  {2, {1, 6}, 2, {1, 0}},   {3, {3, 2, 7}, 2, {0, -2}},  {2, {6, 1}, 2, {0, 1}},
};
enum { NGEOMS = sizeof geoms / sizeof geoms[0] };

/* Variant v of a geometry: nffts (dims, longer, shorter, mixed), shifts, norm. */
static void vary(rmaop_fft_spec *s, int v) {
  for (int i = 0; i < s->naxes; ++i) {
    const int a = s->axes[i] < 0 ? s->axes[i] + s->ndim : s->axes[i];
    switch (v % 4) {
    case 0: s->nffts[i] = 0; break;                                             /* dims */
    case 1: s->nffts[i] = s->dims[a] + 3; break;                                /* padded */
    case 2: s->nffts[i] = s->dims[a] > 2 ? s->dims[a] - 2 : 1; break;           /* truncated */
    default: s->nffts[i] = i % 2 ? (s->dims[a] > 1 ? s->dims[a] - 1 : 1) : s->dims[a] + 2; break;
    }
    s->ifftshift_before[i] = (v / 4 + i) % 3 == 1 || v / 4 % 3 == 2;
    s->fftshift_after[i] = (v / 4 + i) % 3 == 2 || v / 4 % 3 == 2;
    s->sampling[i] = 0.5 + i;
  }
  s->norm = (v / 2) % 2 ? RMAOP_FFT_NORM_1_OVER_N : RMAOP_FFT_NORM_NONE;
}

#ifndef RT_NO_FFTW
#define RT_HOST_FFTS 1
#else
#define RT_HOST_FFTS 0
#endif
/* 1 when this build transforms this context's memory (FFTW on host memory, cuFFT on device memory). */
static int ffts_here(void) { return rt_device() || RT_HOST_FFTS; }

/* Every geometry in every dtype, complex and real, with four variants each (12 per geometry and dtype in all,
 * spread so that every geometry meets every nfft kind, shift pattern and norm). */
START_TEST(test_fftnd_geometries) {
  if (!ffts_here()) return;
  for (int g = 0; g < NGEOMS; ++g)
    for (int di = 0; di < 4; ++di)
      for (int real = 0; real < 2; ++real)
        for (int k = 0; k < 2; ++k) {
          const int v = (g + 3 * di + 5 * real + 7 * k) % 12;
          rmaop_fft_spec s = spec_of(rt_dtypes[di], geoms[g].ndim, geoms[g].dims, geoms[g].naxes, geoms[g].axes);
          s.real = real;
          vary(&s, v);
          char what[160];
          snprintf(what, sizeof what, "geometry %d (ndim %d, naxes %d) dtype %d real %d variant %d", g, s.ndim,
                   s.naxes, (int)s.dtype, real, v);
          check_fft(&s, what);
        }
}
END_TEST

/* Axes in every order on a 3-D array: FFT2D semantics (every ordered pair of two axes) and every permutation of
 * the three, real and complex, three variants each, double precision. */
START_TEST(test_fft_axis_orders) {
  if (!ffts_here()) return;
  const int64_t dims[3] = {5, 4, 3};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      for (int v = 0; v < 12; v += 5) {
        const int axes[2] = {a, b};
        rmaop_fft_spec s = spec_of(v % 2 ? RMAOP_F64 : RMAOP_C128, 3, dims, 2, axes);
        s.real = (a + b + v) % 2;
        vary(&s, v);
        char what[120];
        snprintf(what, sizeof what, "fft2d axes (%d, %d) real %d variant %d", a, b, s.real, v);
        check_fft(&s, what);
        const int c = 3 - a - b, axes3[3] = {a, b, c};
        rmaop_fft_spec t = spec_of(v % 2 ? RMAOP_C128 : RMAOP_F64, 3, dims, 3, axes3);
        t.real = s.real;
        vary(&t, v + 1);
        snprintf(what, sizeof what, "fftnd axes (%d, %d, %d) real %d variant %d", a, b, c, t.real, v + 1);
        check_fft(&t, what);
      }
    }
}
END_TEST

/* Real transforms of even and odd lengths with the Nyquist bin, shifts on the real axis too (PyLops warns but
 * allows it), in single precision. */
START_TEST(test_fft_real_edges) {
  if (!ffts_here()) return;
  const int64_t dims[2] = {8, 9};
  for (int n = 0; n < 4; ++n) {
    const int axes[2] = {n % 2, 1 - n % 2};
    rmaop_fft_spec s = spec_of(n < 2 ? RMAOP_F32 : RMAOP_C64, 2, dims, 2, axes);
    s.real = 1;
    s.nffts[1] = n < 2 ? 8 : 7;
    s.fftshift_after[0] = s.fftshift_after[1] = 1;
    s.ifftshift_before[1] = n % 2;
    char what[80];
    snprintf(what, sizeof what, "real edges %d", n);
    check_fft(&s, what);
  }
}
END_TEST

/* numpy.fft.fftfreq / rfftfreq / fftshift: known values, and every listed axis against the formula. */
START_TEST(test_fft_freqs) {
  if (!ffts_here()) return;
  const int64_t dims[3] = {5, 6, 4};
  const int axes[3] = {0, 1, 2};
  rmaop_fft_spec s = spec_of(RMAOP_F64, 3, dims, 3, axes);
  s.sampling[0] = 0.1;
  s.sampling[1] = 0.5;
  s.fftshift_after[0] = 1;
  s.real = 1;
  s.nffts[2] = 7;
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_fftnd(ctx, &s, &A));
  rmaop_fft_info info;
  RT_OK(rmaop_op_fft_get_info(A, &info));
  double f[16];
  lok = 1;
  /* np.fft.fftshift(np.fft.fftfreq(5, 0.1)) = [-4, -2, 0, 2, 4] */
  const double f0[5] = {-4, -2, 0, 2, 4};
  LCALL(rmaop_op_fft_get_freqs(A, 0, f));
  for (int k = 0; k < 5 && lok; ++k)
    if (fabs(f[k] - f0[k]) > 1e-12) lfail("fs[0][%d] = %.17g, want %g", k, f[k], f0[k]);
  /* np.fft.fftfreq(6, 0.5) = [0, 1/3, 2/3, -1, -2/3, -1/3] */
  const double f1[6] = {0, 1.0 / 3, 2.0 / 3, -1, -2.0 / 3, -1.0 / 3};
  LCALL(rmaop_op_fft_get_freqs(A, 1, f));
  for (int k = 0; k < 6 && lok; ++k)
    if (fabs(f[k] - f1[k]) > 1e-12) lfail("fs[1][%d] = %.17g, want %g", k, f[k], f1[k]);
  /* np.fft.rfftfreq(7, 1) = [0, 1/7, 2/7, 3/7] */
  LCALL(rmaop_op_fft_get_freqs(A, 2, f));
  for (int k = 0; k < 4 && lok; ++k)
    if (fabs(f[k] - k / 7.0) > 1e-15) lfail("fs[2][%d] = %.17g, want %g", k, f[k], k / 7.0);
  if (lok && (info.nfreqs[0] != 5 || info.nfreqs[1] != 6 || info.nfreqs[2] != 4 || fabs(info.df[0] - 2) > 1e-15 ||
              fabs(info.df[1] - 1.0 / 3) > 1e-15 || fabs(info.df[2] - 1.0 / 7) > 1e-15))
    lfail("nfreqs %lld %lld %lld, df %g %g %g", (long long)info.nfreqs[0], (long long)info.nfreqs[1],
          (long long)info.nfreqs[2], info.df[0], info.df[1], info.df[2]);
  RT_CHECK(lok, "%s", lerr);
  RT_EXPECT(rmaop_op_fft_get_freqs(A, 3, f), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("i = 3");
  RT_EXPECT(rmaop_op_fft_get_freqs(A, 0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_fft_get_info(A, NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_op_destroy(&A);

  /* the formula on other lengths: bins 0 .. (n-1)/2, then -(n/2) .. -1, times 1 / (n d); shifted by m/2 */
  for (int n = 1; n <= 9; ++n)
    for (int shift = 0; shift < 2; ++shift) {
      const int64_t d2[2] = {n, 3};
      const int ax[2] = {1, 0};
      rmaop_fft_spec t = spec_of(RMAOP_C64, 2, d2, 2, ax);
      t.sampling[1] = 0.25;
      t.fftshift_after[1] = shift;
      RT_OK(rmaop_op_create_fftnd(ctx, &t, &A));
      LCALL(rmaop_op_fft_get_freqs(A, 1, f));
      for (int k = 0; k < n && lok; ++k) {
        const int kk = shift ? (k + n - n / 2) % n : k; /* unshifted bin of entry k */
        const int bin = kk <= (n - 1) / 2 ? kk : kk - n;
        if (fabs(f[k] - bin / (n * 0.25)) > 1e-13) lfail("fftfreq(%d, 0.25) shift %d [%d] = %g", n, shift, k, f[k]);
      }
      RT_CHECK(lok, "%s", lerr);
      rmaop_op_destroy(&A);
    }
}
END_TEST

/* Another library that shares FFTW's planner: mpi4py-fft (under PyLops-MPI's MPIFFT2D) calls fftw_plan_with_nthreads
 * without fftw_init_threads, and FFTW then runs fftw_cleanup, which frees what every plan made so far uses
 * (src/ops/fft_local.c). rmaop's plans made before such a call must give the same bits after it, with the freed
 * memory reused by other allocations in between, and be destroyed without harm. Host memory; the function is looked
 * up in the process (a build without FFTW's thread library has none, and nothing here to check). */
START_TEST(test_fft_foreign_planner) {
  if (rt_device() || !RT_HOST_FFTS)
    return;
  void (*with_nthreads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "fftw_plan_with_nthreads");
  void (*withf_nthreads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "fftwf_plan_with_nthreads");
  if (!with_nthreads || !withf_nthreads)
    return;
  const rmaop_dtype dts[2] = {RMAOP_C128, RMAOP_C64};
  for (int k = 0; k < 2; ++k) {
    const int64_t dims[2] = {1000, 6}; /* 1000 = 8 x 125: plans with twiddle tables */
    const int axes[2] = {0, 1};
    const rmaop_fft_spec s = spec_of(dts[k], 2, dims, 2, axes);
    rmaop_op A = NULL;
    RT_OK(rmaop_op_create_fftnd(ctx, &s, &A));
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(A, &oi));
    rmaop_vec x = NULL, y = NULL;
    RT_OK(rmaop_vec_create(oi.model, dts[k], &x));
    RT_OK(rmaop_vec_create(oi.data, dts[k], &y));
    rmaop_vec_info xi, yi;
    RT_OK(rmaop_vec_get_info(x, &xi));
    RT_OK(rmaop_vec_get_info(y, &yi));
    const int64_t n = xi.local_n, nd = yi.local_n;
    void *h = rt_alloc(dts[k], n), *before = rt_alloc(dts[k], nd), *after = rt_alloc(dts[k], nd);
    for (int64_t i = 0; i < n; ++i)
      rt_store(dts[k], h, i, rt_value(i + 1000 * rt_rank, 3));
    RT_OK(rmaop_vec_write_local(x, h));
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_vec_read_local(y, before));
    with_nthreads(3);
    withf_nthreads(3);
    enum { NCHURN = 8192 }; /* 8 blocks of every 32-byte size class up to 32 KiB, all bytes 0xff */
    static void *churn[NCHURN];
    for (int i = 0; i < NCHURN; ++i) {
      const size_t bytes = 32 * (size_t)(1 + i / 8);
      if ((churn[i] = malloc(bytes)) != NULL)
        memset(churn[i], 0xff, bytes);
    }
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_vec_read_local(y, after));
    RT_CHECK(memcmp(before, after, (size_t)nd * rmaop_dtype_size(dts[k])) == 0,
             "dtype %d: the transform changed after another library's fftw_plan_with_nthreads", (int)dts[k]);
    for (int i = 0; i < NCHURN; ++i)
      free(churn[i]);
    rmaop_op_destroy(&A);
    with_nthreads(1);
    withf_nthreads(1);
    rmaop_vec_destroy(&x);
    rmaop_vec_destroy(&y);
    free(h);
    free(before);
    free(after);
  }
}
END_TEST

START_TEST(test_fft_errors) {
  const int64_t dims[3] = {4, 5, 6};
  const int axes[3] = {0, 1, 2};
  rmaop_op A = NULL;
  rmaop_fft_spec s = spec_of(RMAOP_C128, 3, dims, 3, axes);
  if (!ffts_here()) {
    RT_EXPECT(rmaop_op_create_fftnd(ctx, &s, &A), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    RT_MESSAGE_HAS("FFTW");
    RT_CHECK(A == NULL, "output written on failure");
    return;
  }
  rmaop_fft_spec t;
  t = s, t.ndim = 1;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ndim = 1");
  t = s, t.ndim = RMAOP_MAX_DIMS + 1;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ndim");
  t = s, t.dims[1] = 0;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dims[1] = 0");
  t = s, t.naxes = 0;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("naxes = 0");
  t = s, t.naxes = 4;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("naxes = 4");
  t = s, t.axes[1] = 3;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("axes[1] = 3");
  t = s, t.axes[2] = -4;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("axes[2] = -4");
  t = s, t.axes[2] = -3; /* axis 0 again */
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("repeats axis 0");
  t = s, t.nffts[1] = -1;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("nffts[1] = -1");
  t = s, t.norm = (rmaop_fft_norm)5;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("norm 5");
  t = s, t.dtype = (rmaop_dtype)9;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype 9");
  t = s, t.sampling[0] = NAN;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("sampling[0]");
  t = s, t.dims[0] = (int64_t)1 << 40, t.dims[1] = (int64_t)1 << 30;
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("overflow");
  RT_EXPECT(rmaop_op_create_fftnd(ctx, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("spec is NULL");
  RT_EXPECT(rmaop_op_create_fftnd(ctx, &s, NULL), RT_BIT(RMAOP_ERR_ARG));
  /* bad on one rank only: that rank names it, the others fail too */
  const int last = rt_size - 1;
  t = s;
  if (rt_rank == last) t.axes[0] = 7;
  RT_EXPECT_ON(rmaop_op_create_fftnd(ctx, &t, &A), last, RMAOP_ERR_ARG);
  if (rt_size > 1) {
    t = s;
    if (rt_rank == last) t.dims[2] = 7;
    RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("dims[2] differs between ranks");
    t = s;
    if (rt_rank == 0) t.fftshift_after[1] = 1;
    RT_EXPECT(rmaop_op_create_fftnd(ctx, &t, &A), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("fftshift_after differs");
  }
  RT_CHECK(A == NULL, "output written on failure");

  /* queries on an operator of another kind */
  rmaop_layout l = NULL;
  rmaop_vec d = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 5, &l));
  RT_OK(rmaop_vec_create(l, RMAOP_C128, &d));
  RT_OK(rmaop_op_create_diagonal(d, &A));
  rmaop_fft_info info;
  double f[4];
  RT_EXPECT(rmaop_op_fft_get_info(A, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("not an FFT operator");
  RT_EXPECT(rmaop_op_fft_get_freqs(A, 0, f), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("not an FFT operator");
  rmaop_op_destroy(&A);
  rmaop_vec_destroy(&d);
  rmaop_layout_destroy(&l);
}
END_TEST

/* ---- the local transforms alone ---- */

/* One local transform against the direct DFT; the arrays are rmaop vectors (context memory) on a local layout. */
static void check_local(const rmaop__fft_desc *d, const char *what) {
  const int64_t nw = rmaop__fft_n_written(d), no = rmaop__fft_n_out(d);
  const int real_in = d->kind == RMAOP__FFT_R2C && !d->cplx_real, real_out = d->kind == RMAOP__FFT_C2R && !d->cplx_real;
  const rmaop_dtype cd = d->dtype, rd = cd == RMAOP_C64 ? RMAOP_F32 : RMAOP_F64;
  const rmaop_dtype idt = real_in ? rd : cd, odt = real_out ? rd : cd;
  const int64_t nin = d->outer * d->n_in * d->inner, nout = d->outer * no * d->inner;
  rmaop_layout li = NULL, lo = NULL;
  rmaop_vec vi = NULL, vo = NULL;
  rmaop__fft_local *p = NULL;
  lok = 1;
  RT_OK(rmaop_layout_create_local(ctx, nin, &li));
  RT_OK(rmaop_layout_create_local(ctx, nout, &lo));
  LCALL(rmaop_vec_create(li, idt, &vi));
  LCALL(rmaop_vec_create(lo, odt, &vo));
  LCALL(rmaop__fft_local_create(ctx, d, &p));
  RT_CHECK(lok, "%s: %s", what, lerr);
  /* the input as the transform reads it, and the reference computed from it */
  double _Complex *x = zalloc(nin);
  void *buf = rt_alloc(idt, nin);
  for (int64_t i = 0; i < nin; ++i) {
    x[i] = rt_round(cd, rt_value(i + 3 * rt_rank, 4));
    rt_store(idt, buf, i, x[i]);
  }
  LCALL(rmaop_vec_write_local(vi, buf));
  void *in = NULL, *out = NULL;
  LCALL(rmaop_vec_get_array(vi, &in));
  LCALL(rmaop_vec_get_array(vo, &out));
  LCALL(rmaop_vec_set(vo, 5.0));
  if (lok) LCALL(rmaop__fft_local_exec(p, in, out));
  LCALL(rmaop_ctx_synchronize(ctx));
  /* reference: roll, real part, pad / truncate, weights, DFT, pad / truncate to n_out, scale, roll */
  shp s = {3, {d->outer, d->n_in, d->inner}};
  const double sc = d->scale != 0 ? d->scale : 1, hw = d->half_weight != 0 ? d->half_weight : 1;
  roll(x, &s, 1, d->in_shift);
  const int take_re = d->kind == RMAOP__FFT_R2C || (d->kind == RMAOP__FFT_C2C && d->re_in);
  for (int64_t i = 0; i < nin; ++i)
    if (take_re) x[i] = creal(x[i]);
  double _Complex *y;
  if (d->kind == RMAOP__FFT_C2R) {
    /* numpy: the input cropped or padded to nfft/2 + 1 bins; those bins weighted, then the half inverse's real part */
    const int64_t m = d->nfft / 2 + 1;
    double _Complex *h = zalloc(d->outer * m * d->inner);
    for (int64_t o = 0; o < d->outer; ++o)
      for (int64_t j = 0; j < m && j < d->n_in; ++j)
        for (int64_t i = 0; i < d->inner; ++i) h[(o * m + j) * d->inner + i] = x[(o * d->n_in + j) * d->inner + i];
    s.d[1] = m;
    scale_bins(h, &s, 1, 1, 1 + (d->nfft - 1) / 2, hw);
    y = dft(h, &s, 1, d->nfft, no, 1, 1);
    free(h);
    for (int64_t i = 0; i < nout; ++i) y[i] = creal(y[i]);
  } else {
    y = dft(x, &s, 1, d->nfft, d->kind == RMAOP__FFT_R2C ? nw : no, d->sign < 0 ? -1 : 1, 0);
    if (d->kind == RMAOP__FFT_R2C) {
      scale_bins(y, &s, 1, 1, 1 + (d->nfft - 1) / 2, hw);
      double _Complex *z = zalloc(nout);
      for (int64_t o = 0; o < d->outer; ++o)
        for (int64_t k = 0; k < nw && k < no; ++k)
          for (int64_t i = 0; i < d->inner; ++i) z[(o * no + k) * d->inner + i] = y[(o * nw + k) * d->inner + i];
      free(y);
      y = z;
      s.d[1] = no;
    }
  }
  double mag = 0;
  for (int64_t i = 0; i < nin; ++i) mag += cabs(x[i]);
  for (int64_t i = 0; i < nout; ++i) {
    y[i] *= sc;
    if (d->kind == RMAOP__FFT_C2C && d->re_out) y[i] = creal(y[i]);
  }
  roll(y, &s, 1, d->out_shift);
  void *got = rt_alloc(odt, nout);
  LCALL(rmaop_vec_read_local(vo, got));
  void *back = rt_alloc(idt, nin);
  LCALL(rmaop_vec_read_local(vi, back));
  for (int64_t i = 0; i < nin && lok; ++i)
    if (rt_load(idt, back, i) != rt_load(idt, buf, i)) lfail("%s: the input changed at %lld", what, (long long)i);
  for (int64_t i = 0; i < nout && lok; ++i) {
    const double _Complex g = rt_load(odt, got, i);
    if (!rt_close(g, y[i], rt_tol(cd), 2 * fabs(sc) * fmax(hw, 1) * mag))
      lfail("%s: element %lld is %.9g%+.9gi, want %.9g%+.9gi", what, (long long)i, creal(g), cimag(g), creal(y[i]),
            cimag(y[i]));
    else if (((d->kind == RMAOP__FFT_C2C && d->re_out) || (d->kind == RMAOP__FFT_C2R && d->cplx_real)) && cimag(g) != 0)
      lfail("%s: element %lld has the imaginary part %g", what, (long long)i, cimag(g));
  }
  RT_CHECK(lok, "%s", lerr);
  free(x);
  free(y);
  free(buf);
  free(got);
  free(back);
  rmaop__fft_local_destroy(p);
  rmaop_vec_destroy(&vi);
  rmaop_vec_destroy(&vo);
  rmaop_layout_destroy(&li);
  rmaop_layout_destroy(&lo);
}

START_TEST(test_fft_local) {
  if (!ffts_here()) return;
  static const int64_t shapes[][3] = {{3, 5, 2}, {1, 6, 1}, {2, 4, 3}, {4, 7, 1}, {1, 9, 5}, {2, 1, 2}, {0, 5, 3}};
  int count = 0;
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; ++sh)
    for (int kind = 0; kind < 4; ++kind)  /* C2C forward, C2C backward, R2C, C2R */
      for (int prec = 0; prec < 2; ++prec)
        for (int v = 0; v < 6; ++v) {
          rmaop__fft_desc d = {.kind = kind < 2 ? RMAOP__FFT_C2C : kind == 2 ? RMAOP__FFT_R2C : RMAOP__FFT_C2R,
                               .dtype = prec ? RMAOP_C128 : RMAOP_C64, .sign = kind == 1 ? 1 : -1,
                               .outer = shapes[sh][0], .n_in = shapes[sh][1], .inner = shapes[sh][2]};
          const int64_t n = d.n_in;
          d.nfft = v % 3 == 0 ? n : v % 3 == 1 ? n + 3 : (n > 2 ? n - 2 : 1);
          if (d.kind == RMAOP__FFT_C2R && v % 3 == 0) d.nfft = 2 * (n - 1) > 0 ? 2 * (n - 1) : 1; /* numpy's default */
          d.n_out = v >= 3 ? rmaop__fft_n_written(&d) + (v % 2 ? 2 : -1) : 0;
          if (d.n_out < 0) d.n_out = 0;
          d.in_shift = v == 1 || v == 4 ? -(n / 2) : v == 5 ? 3 : 0;
          d.out_shift = v == 2 || v == 4 ? 1 + (sh % 2) : 0;
          d.scale = v == 3 ? 0.25 : 0;
          d.half_weight = v % 2 ? sqrt(2.0) : 0;
          d.re_in = v == 2;
          d.re_out = v == 5;
          d.cplx_real = v % 2;
          char what[160];
          snprintf(what, sizeof what, "local shape %zu kind %d prec %d variant %d (nfft %lld, n_out %lld)", sh, kind,
                   prec, v, (long long)d.nfft, (long long)d.n_out);
          check_local(&d, what);
          ++count;
        }
  RT_CHECK(count == 7 * 4 * 2 * 6, "ran %d local cases", count);
  /* bad descriptions, named */
  rmaop__fft_local *p = NULL;
  rmaop__fft_desc d = {.kind = RMAOP__FFT_C2C, .dtype = RMAOP_C128, .sign = -1, .outer = 1, .n_in = 4, .inner = 1,
                       .nfft = 0};
  RT_EXPECT(rmaop__fft_local_create(ctx, &d, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("nfft = 0");
  d.nfft = 4, d.sign = 0;
  RT_EXPECT(rmaop__fft_local_create(ctx, &d, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("sign 0");
  d.sign = 1, d.dtype = RMAOP_F64;
  RT_EXPECT(rmaop__fft_local_create(ctx, &d, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype");
  d.dtype = RMAOP_C64, d.n_in = -1;
  RT_EXPECT(rmaop__fft_local_create(ctx, &d, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("negative");
  RT_CHECK(p == NULL, "plan written on failure");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("fft");
  TCase *tc = tcase_create("fft");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_fft_local);
  tcase_add_test(tc, test_fftnd_geometries);
  tcase_add_test(tc, test_fft_axis_orders);
  tcase_add_test(tc, test_fft_real_edges);
  tcase_add_test(tc, test_fft_freqs);
  tcase_add_test(tc, test_fft_errors);
  tcase_add_test(tc, test_fft_foreign_planner);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, make_suite); }
