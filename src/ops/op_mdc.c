/* Multi-dimensional convolution (PyLops-MPI MPIMDC): y = F1^H I1^H Fr I F x, distributed as PyLops-MPI does it:
 * the kernel G (nfmax, ns, nr) is split over the ranks by frequencies, the model (nt, nr, nv) and the data
 * (nt, ns, nv) are BROADCAST. F (F1) is PyLops' real FFT along time, norm "ortho", bins 1 .. (nt-1)/2 weighted by
 * sqrt(2) (and an ifftshift first when twosided); I keeps the first nfmax frequencies; Fr is Fredholm1 of the
 * scaled (and with conj, conjugated) G (src/ops/op_fredholm.c), whose allgather of the frequencies is the one
 * communication of an application.
 *
 * One operator, not a product of composites: an rmaop operator has one dtype for both of its vectors, and the
 * FFT stages change it (the MDC is real, its spectra complex). Its four stages are local FFT plans
 * (src/ops/fft_local.h), each fusing the shift, truncation or zero padding, the sqrt(2) weights and the 1/sqrt(nt)
 * scale into its one pass:
 *   forward  model --R2C (ifftshift, keep nfmax)--> fm --Fredholm1--> fd --C2R (pad to nt/2 + 1)--> data
 *   adjoint  data  --R2C (keep nfmax)-----------> fd --Fredholm1^H--> fm --C2R (pad, fftshift)---> model
 * The C2R with 1/sqrt(2) weights is the exact adjoint of the R2C with sqrt(2) weights over the reals (numpy's
 * irfft, like FFTW's and cuFFT's, drops the imaginary parts of the zero and Nyquist bins, which is that adjoint),
 * and the FFTs of the model and data are done whole on every rank, as in PyLops-MPI. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "op_impl.h"
#include "ops/fft_local.h"

#include <math.h>
#include <stdio.h>

typedef struct {
  rmaop_op fred;        /* Fredholm1 over the kept frequencies (complex) */
  rmaop_vec fm, fd;     /* the spectra: nfmax x nr x nv and nfmax x ns x nv, BROADCAST, complex */
  rmaop__fft_local *model_r2c, *data_c2r; /* forward */
  rmaop__fft_local *data_r2c, *model_c2r; /* adjoint */
  void *out;            /* the output of the application begun (written at its end) */
} mdc_impl;

static rmaop_status mdc_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  mdc_impl *m = A->impl;
  RMAOP_CHECK(rmaop__fft_local_exec(m->model_r2c, x->data, m->fm->data));
  RMAOP_CHECK(rmaop_op_apply_begin(m->fred, m->fm, m->fd));
  m->out = y->data;
  return RMAOP_OK;
}
static rmaop_status mdc_apply_end(rmaop_op A) {
  mdc_impl *m = A->impl;
  RMAOP_CHECK(rmaop_op_apply_end(m->fred));
  return rmaop__fft_local_exec(m->data_c2r, m->fd->data, m->out);
}
static rmaop_status mdc_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  mdc_impl *m = A->impl;
  RMAOP_CHECK(rmaop__fft_local_exec(m->data_r2c, y->data, m->fd->data));
  RMAOP_CHECK(rmaop_op_apply_adjoint_begin(m->fred, m->fd, m->fm));
  m->out = x->data;
  return RMAOP_OK;
}
static rmaop_status mdc_adjoint_end(rmaop_op A) {
  mdc_impl *m = A->impl;
  RMAOP_CHECK(rmaop_op_apply_adjoint_end(m->fred));
  return rmaop__fft_local_exec(m->model_c2r, m->fm->data, m->out);
}

static void mdc_free(mdc_impl *m) {
  if (!m) return;
  rmaop_op_destroy(&m->fred);
  rmaop_vec_destroy(&m->fm);
  rmaop_vec_destroy(&m->fd);
  rmaop__fft_local_destroy(m->model_r2c);
  rmaop__fft_local_destroy(m->data_c2r);
  rmaop__fft_local_destroy(m->data_r2c);
  rmaop__fft_local_destroy(m->model_c2r);
  free(m);
}
static void mdc_destroy(rmaop_op A) { mdc_free(A->impl); }

static const rmaop__op_ops mdc_ops = {mdc_apply_begin, mdc_apply_end, mdc_adjoint_begin, mdc_adjoint_end, mdc_destroy};

/* ---- arguments ---- */

static rmaop_dtype complex_of(rmaop_dtype d) { return d == RMAOP_F32 || d == RMAOP_C64 ? RMAOP_C64 : RMAOP_C128; }
static rmaop_dtype real_of(rmaop_dtype d) { return d == RMAOP_F32 || d == RMAOP_C64 ? RMAOP_F32 : RMAOP_F64; }

/* The frequencies PyLops keeps: nfmax, or ceil((nt + 1) / 2) = nt/2 + 1 when it is larger. */
static int64_t kept(const rmaop_mdc_spec *s) { return s->nfmax < s->nt / 2 + 1 ? s->nfmax : s->nt / 2 + 1; }

static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_mdc_spec *s, rmaop_op *out) {
  const char *fn = "rmaop_op_create_mdc";
  RMAOP_REQUIRE(ctx, s != NULL && out != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, s ? "A (output)" : "spec");
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(s->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)s->dtype);
  RMAOP_REQUIRE(ctx, s->nt >= 1 && s->nv >= 1 && s->ns >= 1 && s->nr >= 1 && s->nfmax >= 1, RMAOP_ERR_ARG,
                "%s: nt = %lld, nv = %lld, ns = %lld, nr = %lld and nfmax = %lld must be at least 1", fn,
                (long long)s->nt, (long long)s->nv, (long long)s->ns, (long long)s->nr, (long long)s->nfmax);
  RMAOP_REQUIRE(ctx, s->nf_local >= 0, RMAOP_ERR_ARG, "%s: nf_local = %lld is negative", fn, (long long)s->nf_local);
  RMAOP_REQUIRE(ctx, !s->twosided || s->nt % 2 == 1, RMAOP_ERR_ARG,
                "%s: nt = %lld must be odd with twosided (negative and positive times around zero)", fn,
                (long long)s->nt);
  RMAOP_REQUIRE(ctx, isfinite(s->dt) && isfinite(s->dr), RMAOP_ERR_ARG, "%s: dt = %g or dr = %g is not finite", fn,
                s->dt, s->dr);
  const int64_t nf = kept(s);
  RMAOP_REQUIRE(ctx,
                rmaop__fits(s->nt, s->nr) && rmaop__fits(s->nt * s->nr, s->nv) && rmaop__fits(s->nt, s->ns) &&
                    rmaop__fits(s->nt * s->ns, s->nv) && rmaop__fits(s->ns, s->nr) &&
                    rmaop__fits(s->nf_local, s->ns * s->nr) && rmaop__fits(nf, s->ns * s->nr),
                RMAOP_ERR_ARG, "%s: nt = %lld, ns = %lld, nr = %lld, nv = %lld, nf_local = %lld: sizes overflow 64-bit byte counts",
                fn, (long long)s->nt, (long long)s->ns, (long long)s->nr, (long long)s->nv, (long long)s->nf_local);
  RMAOP_REQUIRE(ctx, s->G != NULL || s->nf_local == 0, RMAOP_ERR_ARG, "%s: G is NULL with nf_local = %lld frequencies",
                fn, (long long)s->nf_local);
  RMAOP_REQUIRE(ctx, rmaop__fft_available(ctx), RMAOP_ERR_UNSUPPORTED,
                "%s: FFTs on host memory: rmaop was built without FFTW (configure it with FFTW3 installed: libfftw3-dev)",
                fn);
  return RMAOP_OK;
}

/* Every rank computes the same transforms and its part of one G: the options must be everyone's. */
static rmaop_status same_spec(rmaop_ctx ctx, const rmaop_mdc_spec *s) {
  static const char *const names[] = {"dtype", "ns", "nr", "nt", "nv", "nfmax", "twosided", "conj", "prescaled",
                                      "dt", "dr"};
  int64_t v[11] = {s->dtype, s->ns, s->nr, s->nt, s->nv, s->nfmax, !!s->twosided, !!s->conj, !!s->prescaled};
  memcpy(&v[9], &s->dt, sizeof s->dt);
  memcpy(&v[10], &s->dr, sizeof s->dr);
  return rmaop__same_everywhere(ctx, v, 11, names, "rmaop_op_create_mdc");
}

/* This rank's G as the Fredholm1 kernel: complex, times dr dt sqrt(nt) unless prescaled, conjugated with conj
 * (PyLops-MPI: Fredholm1(dr * dt * sqrt(nt) * G), then .conj()). Host memory, nf_local ns nr elements (+1). */
static rmaop_status kernel(rmaop_ctx ctx, const rmaop_mdc_spec *s, void **out) {
  const int64_t n = s->nf_local * s->ns * s->nr;
  const rmaop_dtype cd = complex_of(s->dtype);
  void *K = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)n + 1, rmaop_dtype_size(cd), "mdc kernel", &K));
  const double dt = s->dt == 0 ? 1 : s->dt, dr = s->dr == 0 ? 1 : s->dr;
  const double a = s->prescaled ? 1.0 : dr * dt * sqrt((double)s->nt);
  for (int64_t i = 0; i < n; ++i) {
    double _Complex g = 0;
    switch (s->dtype) {
    case RMAOP_F32: g = ((const float *)s->G)[i]; break;
    case RMAOP_F64: g = ((const double *)s->G)[i]; break;
    case RMAOP_C64: g = ((const float _Complex *)s->G)[i]; break;
    case RMAOP_C128: g = ((const double _Complex *)s->G)[i]; break;
    }
    g *= a;
    if (s->conj) g = conj(g);
    if (cd == RMAOP_C64)
      ((float _Complex *)K)[i] = (float _Complex)g;
    else
      ((double _Complex *)K)[i] = g;
  }
  *out = K;
  return RMAOP_OK;
}

/* The four local FFT plans (not collective). Lines: nr nv of the model, ns nv of the data, nt long in time. */
static rmaop_status make_ffts(rmaop_ctx ctx, const rmaop_mdc_spec *s, mdc_impl *m) {
  const rmaop_dtype cd = complex_of(s->dtype);
  const int64_t nt = s->nt, nf = kept(s);
  const double scale = 1.0 / sqrt((double)nt);
  const rmaop__fft_desc r2c = {.kind = RMAOP__FFT_R2C, .dtype = cd, .outer = 1, .n_in = nt, .nfft = nt, .n_out = nf,
                               .scale = scale, .half_weight = sqrt(2.0)};
  const rmaop__fft_desc c2r = {.kind = RMAOP__FFT_C2R, .dtype = cd, .outer = 1, .n_in = nf, .nfft = nt, .n_out = nt,
                               .scale = scale, .half_weight = 1.0 / sqrt(2.0)};
  rmaop__fft_desc d = r2c;
  d.inner = s->nr * s->nv;
  d.in_shift = s->twosided ? -(nt / 2) : 0; /* numpy.fft.ifftshift = roll by -(n // 2) */
  RMAOP_CHECK(rmaop__fft_local_create(ctx, &d, &m->model_r2c));
  d = r2c;
  d.inner = s->ns * s->nv;
  RMAOP_CHECK(rmaop__fft_local_create(ctx, &d, &m->data_r2c));
  d = c2r;
  d.inner = s->ns * s->nv;
  RMAOP_CHECK(rmaop__fft_local_create(ctx, &d, &m->data_c2r));
  d = c2r;
  d.inner = s->nr * s->nv;
  d.out_shift = s->twosided ? nt / 2 : 0; /* numpy.fft.fftshift = roll by n // 2 */
  return rmaop__fft_local_create(ctx, &d, &m->model_c2r);
}

/* The Fredholm1 of this rank's frequencies (collective) and the spectra on its layouts. */
static rmaop_status make_fredholm(rmaop_ctx ctx, const rmaop_mdc_spec *s, mdc_impl *m) {
  void *K = NULL;
  rmaop_status st = kernel(ctx, s, &K);
  st = rmaop__agree(ctx, st, "rmaop_op_create_mdc");
  if (st == RMAOP_OK)
    st = rmaop_op_create_fredholm1(ctx, complex_of(s->dtype), s->nf_local, s->ns, s->nr, s->nv, K, &m->fred);
  free(K);
  RMAOP_CHECK(st);
  st = rmaop_vec_create(m->fred->model, m->fred->dtype, &m->fm);
  if (st == RMAOP_OK) st = rmaop_vec_create(m->fred->data, m->fred->dtype, &m->fd);
  return st;
}

rmaop_status rmaop_op_create_mdc(rmaop_ctx ctx, const rmaop_mdc_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_mdc";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_CHECK(rmaop__agree(ctx, check_spec(ctx, spec, A), fn));
  RMAOP_CHECK(same_spec(ctx, spec));
  /* The frequencies of all ranks, from the layout's exchange of sizes: the same sum (and verdict) everywhere. */
  rmaop_layout freqs = NULL;
  RMAOP_CHECK(rmaop_layout_create_local(ctx, spec->nf_local, &freqs));
  const int64_t total = freqs->global_n, nf = kept(spec);
  rmaop_layout_destroy(&freqs);
  if (total != nf)
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "%s: the ranks hold %lld frequencies of G (nf_local summed) but the operator keeps %lld (nfmax "
                       "= %lld, at most nt/2 + 1 = %lld)",
                       fn, (long long)total, (long long)nf, (long long)spec->nfmax, (long long)(spec->nt / 2 + 1));
  mdc_impl *m = NULL;
  rmaop_layout model = NULL, data = NULL;
  rmaop_status st = rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *m, "mdc operator", (void **)&m), fn);
  if (st != RMAOP_OK) {
    free(m); /* made here, failed on another rank */
    return st;
  }
  st = make_fredholm(ctx, spec, m);
  if (st == RMAOP_OK) st = make_ffts(ctx, spec, m);
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK) st = rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, spec->nt * spec->nr * spec->nv, &model);
  if (st == RMAOP_OK) st = rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, spec->nt * spec->ns * spec->nv, &data);
  st = rmaop__op_new_agreed(st, ctx, "mdc", real_of(spec->dtype), model, data, &mdc_ops, m, A);
  if (st != RMAOP_OK) mdc_free(m);
  rmaop_layout_destroy(&model); /* the operator holds its own references */
  rmaop_layout_destroy(&data);
  return st;
}
