/* Local FFTs on device memory (src/device/fft_dev.h): cuFFT plans on the context's stream, and the copy kernels
 * into and out of the plan's scratch, which follow the same index rules as the host loops (fft_dev.h).
 *
 * cuFFT's advanced layout has one batch dimension (a stride along the line and a distance between lines),
 * the (outer, n, inner) array two: a C2C plan covers the lines of one outer slab (or of one inner column) and
 * runs once per slab (column), whichever of the two counts is smaller; a transform along the first or the last
 * axis is one call. The real kinds read and write contiguous lines of scratch (`lines`), one call for all. */
#include <cufft.h>
#include <cuda_runtime.h>

#include <stdlib.h>

#include "cuda_impl.h"
#include "fft_dev.h"

namespace {

const char *cufft_name(cufftResult r) {
  switch (r) {
  case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
  case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
  case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
  case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
  case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
  case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
  case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
  case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
  case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
  case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
  case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
  case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
  case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
  case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
  default: return "an unknown cufftResult";
  }
}

#define CUFFT_CHECK(ctx, call)                                                                               \
  do {                                                                                                       \
    cufftResult rmaop__f = (call);                                                                           \
    if (rmaop__f != CUFFT_SUCCESS)                                                                           \
      return rmaop__error((ctx), rmaop__f == CUFFT_ALLOC_FAILED ? RMAOP_ERR_NOMEM : RMAOP_ERR_CUDA, __FILE__, \
                          __LINE__, "%s failed: %s (%d)", #call, cufft_name(rmaop__f), (int)rmaop__f);       \
  } while (0)

struct dev_plan {
  cufftHandle h;
  int made;                   /* h holds a plan */
  rmaop__fft_kind kind;
  int dbl, sign;
  int64_t calls;              /* executions per transform, one per slab or column */
  int64_t in_step, out_step;  /* bytes between the first elements of consecutive calls */
};

/* Makes p's plan: the batch layout of one call and how many calls cover the array. */
rmaop_status make(rmaop_ctx ctx, const rmaop__fft_geom *g, dev_plan *p) {
  const rmaop__fft_desc *d = &g->d;
  const size_t rs = d->dtype == RMAOP_C64 ? sizeof(float) : sizeof(double);
  const size_t ie = rs * (d->kind == RMAOP__FFT_R2C ? 1 : 2), oe = rs * (d->kind == RMAOP__FFT_C2R ? 1 : 2);
  const long long u = g->in_unit, inner = d->inner, outer = d->outer;
  const long long in_line = g->in_rows * inner * u, out_line = g->n_written * inner; /* one outer slab */
  long long istride = inner * u, ostride = inner, idist, odist, batch;
  if (g->lines) { /* every line contiguous: one call for all */
    batch = outer * inner, istride = ostride = 1, idist = g->in_rows, odist = g->n_written;
    p->calls = 1;
  } else if (inner == 1 || (outer > 1 && outer > inner)) { /* lines of one column per call (all when inner is 1) */
    batch = outer, idist = in_line, odist = out_line;
    p->calls = inner;
    p->in_step = (int64_t)(u * ie), p->out_step = (int64_t)oe;
  } else { /* lines of one slab per call (all when outer is 1) */
    batch = inner, idist = u, odist = 1;
    p->calls = outer;
    p->in_step = (int64_t)(in_line * (long long)ie), p->out_step = (int64_t)(out_line * (long long)oe);
  }
  if (p->calls == 1) p->in_step = p->out_step = 0;
  cufftType type;
  switch (d->kind) {
  case RMAOP__FFT_C2C: type = p->dbl ? CUFFT_Z2Z : CUFFT_C2C; break;
  case RMAOP__FFT_R2C: type = p->dbl ? CUFFT_D2Z : CUFFT_R2C; break;
  default: type = p->dbl ? CUFFT_Z2D : CUFFT_C2R; break;
  }
  long long n[1] = {d->nfft}, inembed[1] = {g->in_rows}, onembed[1] = {g->n_written};
  size_t work = 0;
  CUFFT_CHECK(ctx, cufftCreate(&p->h));
  p->made = 1;
  CUFFT_CHECK(ctx, cufftMakePlanMany64(p->h, 1, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                                       &work));
  CUFFT_CHECK(ctx, cufftSetStream(p->h, STREAM(ctx)));
  return RMAOP_OK;
}

template <typename R> __global__ void pre_kernel(rmaop__fft_geom g, const R *x, R *y) {
  const rmaop__fft_desc &d = g.d;
  const int64_t inner = d.inner, nr = g.n_read;
  const bool cin = d.kind != RMAOP__FFT_R2C || d.cplx_real;
  GRID_STRIDE(t, d.outer * nr * inner) { /* t in the scratch's order */
    int64_t i, j, o;
    if (g.lines) j = t % nr, i = (t / nr) % inner, o = t / nr / inner;
    else i = t % inner, j = (t / inner) % nr, o = t / inner / nr;
    const int64_t s = rmaop__fft_pre_src(&g, j);
    const int64_t at = (o * d.n_in + s) * inner + i;
    if (d.kind == RMAOP__FFT_R2C) {
      y[t] = s < 0 ? (R)0 : cin ? x[2 * at] : x[at];
      continue;
    }
    R re = 0, im = 0;
    if (s >= 0) re = x[2 * at], im = x[2 * at + 1];
    if (d.kind == RMAOP__FFT_C2C) {
      if (d.re_in) im = 0;
    } else {
      const R w = (R)rmaop__fft_bin_weight(&g, j);
      re = w * re;
      im = rmaop__fft_bin_real(&g, j) ? (R)0 : w * im;
    }
    y[2 * t] = re, y[2 * t + 1] = im;
  }
}

template <typename R> __global__ void post_kernel(rmaop__fft_geom g, const R *x, R *y) {
  const rmaop__fft_desc &d = g.d;
  const int64_t inner = d.inner, no = d.n_out, nw = g.n_written;
  const bool cout = d.kind != RMAOP__FFT_C2R || d.cplx_real;
  GRID_STRIDE(t, d.outer * no * inner) {
    const int64_t i = t % inner, r = t / inner, k = r % no, o = r / no;
    const int64_t s = rmaop__fft_post_src(&g, k);
    const int64_t at = rmaop__fft_scratch_at(&g, o, s, i, nw);
    const double w = d.kind == RMAOP__FFT_R2C && s >= 0 ? rmaop__fft_bin_weight(&g, s) : 1.0;
    const R a = (R)(w * d.scale);
    if (d.kind == RMAOP__FFT_C2R) {
      const R v = s < 0 ? (R)0 : a * x[at];
      if (cout) y[2 * t] = v, y[2 * t + 1] = 0;
      else y[t] = v;
      continue;
    }
    R re = 0, im = 0;
    if (s >= 0) re = a * x[2 * at], im = d.re_out ? (R)0 : a * x[2 * at + 1];
    y[2 * t] = re, y[2 * t + 1] = im;
  }
}

template <typename R> rmaop_status launch_pre(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *in, void *out) {
  const int64_t n = g->d.outer * g->n_read * g->d.inner;
  if (n == 0) return RMAOP_OK;
  pre_kernel<R><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>(*g, (const R *)in, (R *)out);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

template <typename R> rmaop_status launch_post(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *in, void *out) {
  const int64_t n = g->d.outer * g->d.n_out * g->d.inner;
  if (n == 0) return RMAOP_OK;
  post_kernel<R><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>(*g, (const R *)in, (R *)out);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

} // namespace

extern "C" rmaop_status rmaop__dev_fft_plan(rmaop_ctx ctx, const rmaop__fft_geom *g, void **plan) {
  *plan = NULL;
  if (g->d.outer * g->d.inner == 0) return RMAOP_OK;
  dev_plan *p = (dev_plan *)calloc(1, sizeof *p);
  RMAOP_REQUIRE(ctx, p != NULL, RMAOP_ERR_NOMEM, "cannot allocate a cuFFT plan record");
  p->kind = g->d.kind;
  p->dbl = g->d.dtype == RMAOP_C128;
  p->sign = g->d.sign;
  rmaop_status st = make(ctx, g, p);
  if (st != RMAOP_OK) {
    rmaop__dev_fft_plan_destroy(p);
    return st;
  }
  *plan = p;
  return RMAOP_OK;
}

extern "C" void rmaop__dev_fft_plan_destroy(void *plan) {
  dev_plan *p = (dev_plan *)plan;
  if (!p) return;
  if (p->made) cufftDestroy(p->h);
  free(p);
}

extern "C" rmaop_status rmaop__dev_fft_run(rmaop_ctx ctx, void *plan, const void *in, void *out) {
  const dev_plan *p = (const dev_plan *)plan;
  if (!p) return RMAOP_OK;
  const int dir = p->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE;
  for (int64_t c = 0; c < p->calls; ++c) {
    void *i = (char *)in + c * p->in_step, *o = (char *)out + c * p->out_step;
    switch (p->kind) {
    case RMAOP__FFT_C2C:
      if (p->dbl) CUFFT_CHECK(ctx, cufftExecZ2Z(p->h, (cufftDoubleComplex *)i, (cufftDoubleComplex *)o, dir));
      else CUFFT_CHECK(ctx, cufftExecC2C(p->h, (cufftComplex *)i, (cufftComplex *)o, dir));
      break;
    case RMAOP__FFT_R2C:
      if (p->dbl) CUFFT_CHECK(ctx, cufftExecD2Z(p->h, (cufftDoubleReal *)i, (cufftDoubleComplex *)o));
      else CUFFT_CHECK(ctx, cufftExecR2C(p->h, (cufftReal *)i, (cufftComplex *)o));
      break;
    case RMAOP__FFT_C2R:
      if (p->dbl) CUFFT_CHECK(ctx, cufftExecZ2D(p->h, (cufftDoubleComplex *)i, (cufftDoubleReal *)o));
      else CUFFT_CHECK(ctx, cufftExecC2R(p->h, (cufftComplex *)i, (cufftReal *)o));
      break;
    }
  }
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_fft_pre(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *in, void *scratch) {
  return g->d.dtype == RMAOP_C64 ? launch_pre<float>(ctx, g, in, scratch) : launch_pre<double>(ctx, g, in, scratch);
}

extern "C" rmaop_status rmaop__dev_fft_post(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *scratch, void *out) {
  return g->d.dtype == RMAOP_C64 ? launch_post<float>(ctx, g, scratch, out) : launch_post<double>(ctx, g, scratch, out);
}
