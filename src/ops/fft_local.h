/* Local FFTs: batched 1-D transforms along one axis of a C-ordered array in this rank's memory, the building
 * block of the distributed FFT operator (src/ops/op_fft.c) and of the operators that work in the frequency
 * domain. Host memory uses FFTW (src/ops/fft_local.c, built with RMAOP_HAVE_FFTW), device memory cuFFT
 * (src/device/fft_local.cu, built with CUDA); which one follows the context's memory (RMAOP_MEMORY).
 *
 * The array is seen as three dimensions (outer, n_in, inner): a C-ordered array of shape
 * (d_0, ..., d_{k-1}) transformed along axis a has outer = d_0 ... d_{a-1}, n_in = d_a, inner = the product of
 * the dimensions after a. The output has the shape (outer, n_out, inner), the same order.
 *
 * Every transform has a length nfft >= 1 and follows numpy.fft: the input along the axis is truncated to its
 * first entries or zero-padded at its end to the length the transform reads, and nothing is normalized:
 *   RMAOP__FFT_C2C  complex -> complex, reads nfft entries, writes nfft;
 *                   sign -1: X_k = sum_j x_j e^{-2 pi i jk/nfft} (numpy.fft.fft), +1: e^{+...} (nfft * ifft).
 *   RMAOP__FFT_R2C  real -> complex, reads nfft entries, writes nfft/2 + 1 (numpy.fft.rfft).
 *   RMAOP__FFT_C2R  complex -> real, reads nfft/2 + 1 entries of a Hermitian half spectrum and writes nfft
 *                   (nfft * numpy.fft.irfft(x, nfft)): the result is the real part of the full sum, so the
 *                   imaginary parts of the zero and (even nfft) Nyquist frequencies do not count, as in numpy.
 * The written entries are then truncated or zero-padded at their end to n_out. The precision is the complex
 * dtype's (RMAOP_C64: float, RMAOP_C128: double); real arrays hold float or double, or, with cplx_real, are the
 * real parts of complex arrays; complex arrays are interleaved (re, im) pairs.
 *
 * The optional steps around the transform, in this order (each costs a pass over the data, fused with the
 * copy into or out of the plan's scratch):
 *   input:  numpy.roll(x, in_shift, axis) on the n_in entries; real part (re_in); truncation / padding;
 *           C2R: bins 1 .. (nfft-1)/2 weighted by half_weight;
 *   output: R2C: bins 1 .. (nfft-1)/2 weighted by half_weight; truncation / padding to n_out; scale;
 *           real part (re_out); numpy.roll(y, out_shift, axis) on the n_out entries.
 * With none of them the plan reads `in` and writes `out` in place of the scratch (truncation is a stride).
 *
 * Plans are made once, at creation (FFTW's planner is not thread-safe: never at execution; creation holds a
 * process-wide lock around it), for one shape and any arrays of that shape: exec may be given different arrays
 * on every call, at any alignment. */
#ifndef RMAOP_OPS_FFT_LOCAL_H
#define RMAOP_OPS_FFT_LOCAL_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RMAOP__FFT_C2C, RMAOP__FFT_R2C, RMAOP__FFT_C2R } rmaop__fft_kind;

typedef struct {
  rmaop__fft_kind kind;
  rmaop_dtype dtype;          /* RMAOP_C64 or RMAOP_C128: the precision */
  int sign;                   /* C2C: -1 forward, +1 backward; R2C is -1 and C2R +1 whatever it says */
  int64_t outer, n_in, inner; /* the input's shape seen as (outer, n_in, inner); any may be 0 */
  int64_t nfft;               /* transform length, >= 1 */
  int64_t n_out;              /* entries along the axis of the output; 0: what the transform writes */
  int64_t in_shift, out_shift;/* rolls of the input (by n_in) and output (by n_out), any sign */
  double scale;               /* the output is multiplied by it; 0 means 1 */
  double half_weight;         /* R2C, C2R: weight of the bins 1 .. (nfft-1)/2; 0 means 1 */
  int re_in;                  /* C2C: transform the input's real parts (its imaginary parts read as 0) */
  int re_out;                 /* C2C: keep the output's real parts (its imaginary parts written as 0) */
  int cplx_real;              /* R2C input, C2R output: the real parts of a complex array (the imaginary
                                 parts ignored on input, written as 0 on output) instead of a real array */
} rmaop__fft_desc;

typedef struct rmaop__fft_local rmaop__fft_local;

/* Entries along the axis that the transform itself writes: nfft/2 + 1 for R2C, nfft otherwise. */
int64_t rmaop__fft_n_written(const rmaop__fft_desc *d);
/* Entries along the axis of the output: n_out, or rmaop__fft_n_written when n_out is 0. */
int64_t rmaop__fft_n_out(const rmaop__fft_desc *d);

/* 1 when this build can transform the context's memory: FFTW on host memory, cuFFT on device memory. */
int rmaop__fft_available(rmaop_ctx ctx);

/* Makes the plan (and the scratch that zero padding or a complex-to-real transform needs) for arrays in the
 * context's memory. Not collective. Errors: RMAOP_ERR_ARG for a bad description (named in the message),
 * RMAOP_ERR_UNSUPPORTED when the build lacks FFTW (host) or CUDA (device), RMAOP_ERR_NOMEM, RMAOP_ERR_CUDA
 * (cuFFT's status named). *out is written only on success. */
rmaop_status rmaop__fft_local_create(rmaop_ctx ctx, const rmaop__fft_desc *d, rmaop__fft_local **out);

/* out = the transform of in: `in` holds outer * n_in * inner elements of the input's type, `out`
 * outer * n_out * inner of the output's, both in the context's memory and not overlapping. `in` is not
 * modified. Device memory: enqueued on the context's stream (returns before the work is done). Not
 * collective. */
rmaop_status rmaop__fft_local_exec(rmaop__fft_local *p, const void *in, void *out);

/* Frees the plan and its scratch (NULL: nothing). Device memory: after the context's stream has run the
 * transforms enqueued with it. */
void rmaop__fft_local_destroy(rmaop__fft_local *p);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_OPS_FFT_LOCAL_H */
