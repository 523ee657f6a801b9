/* Local FFTs on device memory (src/ops/fft_local.h): cuFFT plans and the copy kernels around them, in
 * src/device/fft_local.cu with CUDA, refusals in src/device/fft_stubs.c without it. The geometry below is made
 * by src/ops/fft_local.c for both memories; the index rules of the copies are defined here once, for the host
 * loops and the kernels alike. Every call enqueues on the context's stream and returns (nothing synchronizes);
 * errors are recorded in the context (RMAOP_ERR_CUDA, naming cuFFT's status). */
#ifndef RMAOP_DEVICE_FFT_DEV_H
#define RMAOP_DEVICE_FFT_DEV_H

#include "ops/fft_local.h"

#include <stdint.h>

#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transform's layout. d is the description with defaults filled in: n_out set, shifts reduced to
 * [0, n), scale and half_weight 1 where they were 0. The plan reads `in_rows` entries per line of the
 * input (n_in, or n_read when `pre` copied it into scratch) at a stride of `in_unit` elements of its type
 * (2: the real parts of a complex array), and writes n_written entries per line (into scratch when `post`).
 * The scratch is laid out as the caller's arrays, (outer, n, inner), or with `lines` as (outer, inner, n):
 * every line contiguous, the layout cuFFT's real transforms are given (device memory only; its real-to-complex
 * and complex-to-real plans refuse pointers that are not aligned to the complex type, which the lines of a
 * strided real array are not). */
typedef struct {
  rmaop__fft_desc d;
  int64_t n_read, n_written; /* entries along the axis the transform reads and writes */
  int64_t in_rows, in_unit;
  int pre, post, lines;
} rmaop__fft_geom;

/* Offset (in elements) of entry j of line (o, i) in a scratch of n entries per line. */
static inline RMAOP__HD int64_t rmaop__fft_scratch_at(const rmaop__fft_geom *g, int64_t o, int64_t j, int64_t i,
                                                      int64_t n) {
  return g->lines ? (o * g->d.inner + i) * n + j : (o * n + j) * g->d.inner + i;
}

/* Pre-copy: the source entry (along the axis) of scratch entry j < n_read, -1 for a padding zero. */
static inline RMAOP__HD int64_t rmaop__fft_pre_src(const rmaop__fft_geom *g, int64_t j) {
  if (j >= g->d.n_in) return -1;
  const int64_t s = j - g->d.in_shift;
  return s < 0 ? s + g->d.n_in : s;
}
/* Post-copy: the scratch entry that output entry k < n_out comes from, -1 for a padding zero. */
static inline RMAOP__HD int64_t rmaop__fft_post_src(const rmaop__fft_geom *g, int64_t k) {
  int64_t s = k - g->d.out_shift;
  if (s < 0) s += g->d.n_out;
  return s < g->n_written ? s : -1;
}
/* Weight of half-spectrum bin j (R2C output, C2R input): half_weight on 1 .. (nfft-1)/2, else 1. */
static inline RMAOP__HD double rmaop__fft_bin_weight(const rmaop__fft_geom *g, int64_t j) {
  return j >= 1 && j <= (g->d.nfft - 1) / 2 ? g->d.half_weight : 1.0;
}
/* C2R input bin j whose imaginary part does not count: the zero and the (even nfft) Nyquist frequency. */
static inline RMAOP__HD int rmaop__fft_bin_real(const rmaop__fft_geom *g, int64_t j) {
  return j == 0 || (g->d.nfft % 2 == 0 && j == g->d.nfft / 2);
}

/* The cuFFT plan(s) of g on the context's stream (none when the array is empty: *plan NULL). */
rmaop_status rmaop__dev_fft_plan(rmaop_ctx ctx, const rmaop__fft_geom *g, void **plan);
/* The transform alone: in laid out as the plan reads it, out as it writes it (scratch or the caller's). */
rmaop_status rmaop__dev_fft_run(rmaop_ctx ctx, void *plan, const void *in, void *out);
void rmaop__dev_fft_plan_destroy(void *plan);
/* The copies around it: in (the caller's input) into the scratch the plan reads (n_read entries per line);
 * the scratch the plan wrote into out (the caller's output, n_out entries per line). */
rmaop_status rmaop__dev_fft_pre(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *in, void *scratch);
rmaop_status rmaop__dev_fft_post(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *scratch, void *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEVICE_FFT_DEV_H */
