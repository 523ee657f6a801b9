/* Element work of the sparsity and proximal solvers (src/solvers/solver_sparse.c, src/solvers/solver_prox.c):
 * thresholding, the local sums their reductions need (|a|^2, |a - b|^2, |a|_1, the L21 group norms), the group
 * shrinkage of the L21 proximal, the histograms of the distributed percentile, and a conjugation. The element
 * formulas are defined once, below, for the host loops (src/solvers/solver_sparse.c) and the CUDA kernels
 * (src/device/sparse.cu); the stubs of a build without CUDA are in src/device/sparse_stubs.c.
 *
 * Device calls enqueue on the context's stream; those that return host values (sums, histograms, maxima)
 * synchronize. They use a scratch of RMAOP__SPARSE_SCRATCH doubles of device memory that the caller owns (one
 * per solve); sums are deterministic: a fixed launch shape that depends on n alone, block partials added in
 * block order. Errors are recorded in the context (RMAOP_ERR_CUDA). */
#ifndef RMAOP_DEVICE_SPARSE_DEV_H
#define RMAOP_DEVICE_SPARSE_DEV_H

#include "rmaop/rmaop.h"

#include <math.h>
#include <stdint.h>

#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Thresholdings of one element (PyLops' _softthreshold, _hardthreshold, _halfthreshold; CLIP is the projection
 * onto {|x_i| <= t}, the proximal of the convex conjugate of t ||x||_1). */
typedef enum { RMAOP__THR_SOFT = 0, RMAOP__THR_HARD, RMAOP__THR_HALF, RMAOP__THR_CLIP } rmaop__thr;

/* |x| of one element in the dtype's real precision (single: float, as NumPy's abs of a float32 or complex64
 * array), as a double: the thresholds and the percentile's selection compare the same magnitudes. */
static inline RMAOP__HD double rmaop__mag(int single, int cplx, double re, double im) {
  if (single) return cplx ? (double)hypotf((float)re, (float)im) : (double)fabsf((float)re);
  return cplx ? hypot(re, im) : fabs(re);
}

/* One element (re, im) thresholded with t, in double (im = 0 and cplx = 0 for real dtypes; single for f32 and c64).
 * NaN propagates as NumPy's maximum and sign propagate it. Complex: soft keeps the phase (max(|x| - t, 0)
 * exp(i angle x)), hard and half scale by a real factor, CLIP scales to modulus t where |x| > t. */
static inline RMAOP__HD void rmaop__thr_elem(rmaop__thr kind, int single, int cplx, double t, double *re,
                                             double *im) {
  const double mag = rmaop__mag(single, cplx, *re, *im);
  switch (kind) {
  case RMAOP__THR_SOFT: {
    const double d = mag - t, r = d > 0.0 || d != d ? d : 0.0;
    if (cplx) {
      const double a = atan2(*im, *re);
      *re = r * cos(a);
      *im = r * sin(a);
    } else {
      *re = r * (*re > 0.0 ? 1.0 : *re < 0.0 ? -1.0 : *re);
    }
    break;
  }
  case RMAOP__THR_HARD:
    if (mag <= sqrt(2.0 * t)) *re = *im = 0.0;
    break;
  case RMAOP__THR_HALF: {
    if (mag <= pow(54.0, 1.0 / 3.0) / 4.0 * pow(t, 2.0 / 3.0)) {
      *re = *im = 0.0;
      break;
    }
    double arg = mag != 0.0 ? t / 8.0 * pow(mag / 3.0, -1.5) : 1.0;
    arg = arg > 1.0 ? 1.0 : arg < -1.0 ? -1.0 : arg;
    const double phi = 2.0 / 3.0 * acos(arg), f = 1.0 + cos(2.0 * 3.141592653589793 / 3.0 - phi);
    *re = 2.0 / 3.0 * *re * f;
    *im = 2.0 / 3.0 * *im * f;
    break;
  }
  case RMAOP__THR_CLIP:
    if (cplx) {
      if (mag > t) {
        const double s = t / mag;
        *re *= s;
        *im *= s;
      }
    } else {
      *re = *re < -t ? -t : *re > t ? t : *re;
    }
    break;
  }
}

/* The group factor of the L21 proximal at group norm s (sqrt of sum over parts of |x_p,i|^2): SHRINK (prox,
 * PyLops-MPI MPIL21.prox) 1 - c / max(s, c); DUAL (proxdual) sigma / max(s, sigma), applied as (sigma x) / max. */
typedef enum { RMAOP__GROUP_SHRINK = 0, RMAOP__GROUP_DUAL } rmaop__group;

/* One element (re, im) of a group of norm s scaled as `mode` says. */
static inline RMAOP__HD void rmaop__group_elem(rmaop__group mode, double s, double c, double sigma, double *re,
                                               double *im) {
  if (mode == RMAOP__GROUP_SHRINK) {
    const double f = 1.0 - c / (s > c ? s : c);
    *re *= f, *im *= f;
  } else {
    const double m = s > sigma ? s : sigma;
    *re = sigma * *re / m, *im = sigma * *im / m;
  }
}

/* Local sums over n elements, in double: ABS2 sum |a_i|^2, DIFF2 sum |a_i - b_i|^2 (in the dtype's arithmetic,
 * then squared in double), ABS1 sum |a_i|. */
typedef enum { RMAOP__SUM_ABS2 = 0, RMAOP__SUM_DIFF2, RMAOP__SUM_ABS1 } rmaop__sum;

/* The magnitude key of the percentile's radix selection: |x_i| in the dtype's real type, as a double, whose
 * bit pattern orders like the value (magnitudes are >= 0). Two targets are selected at once. */
enum { RMAOP__RADIX_BINS = 256, RMAOP__SPARSE_SCRATCH = 1024, RMAOP__GROUP_MAX = 8 };

/* ---- device memory (src/device/sparse.cu) ---- */

/* out[i] = thr(in[i], t) (out may be in). Enqueued. */
rmaop_status rmaop__dev_thresh(rmaop_ctx ctx, rmaop_dtype dt, rmaop__thr kind, double t, const void *in, void *out,
                               int64_t n);
/* *host_out = the local sum `kind` over n elements (b: DIFF2 only). Synchronizes. */
rmaop_status rmaop__dev_sum(rmaop_ctx ctx, rmaop_dtype dt, rmaop__sum kind, const void *a, const void *b, int64_t n,
                            double *scratch, double *host_out);
/* L21 over nparts (<= RMAOP__GROUP_MAX) arrays of n elements: out[p][i] = f(s_i) in[p][i] (out[p] may be in[p];
 * f as rmaop__group with c and sigma). Enqueued. */
rmaop_status rmaop__dev_group_scale(rmaop_ctx ctx, rmaop_dtype dt, rmaop__group mode, int nparts,
                                    const void *const in[], void *const out[], int64_t n, double c, double sigma);
/* *host_out = sum_i s_i, the local L21 norm without sigma. Synchronizes. */
rmaop_status rmaop__dev_group_norm(rmaop_ctx ctx, rmaop_dtype dt, int nparts, const void *const in[], int64_t n,
                                   double *scratch, double *host_out);
/* Histograms of byte `byte` (7: the top) of the keys whose bytes above it equal prefix[t] >> (8 (byte + 1)), for
 * t = 0, 1: counts[256 t + bin] (exact integers, as doubles). Synchronizes. */
rmaop_status rmaop__dev_radix_hist(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                   const uint64_t prefix[2], double *scratch, double counts[2 * RMAOP__RADIX_BINS]);
/* out[t] = the largest magnitude whose key's bytes from `byte` up equal prefix[t]'s (0 when none). Synchronizes. */
rmaop_status rmaop__dev_radix_max(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                  const uint64_t prefix[2], double *scratch, double out[2]);
/* x[i] = conj(x[i]) (complex dtypes; nothing for real ones). Enqueued. */
rmaop_status rmaop__dev_conj(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEVICE_SPARSE_DEV_H */
