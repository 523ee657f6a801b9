/* The non-stationary convolution (src/ops/op_nsconv.c): the geometry of a rank's block and the index rules its
 * host loop and its device kernel share (defined here once), and the device call (src/device/nsconv.cu with
 * CUDA, a refusal in src/device/nsconv_stubs.c without it). The call enqueues on the context's stream and
 * returns; errors are recorded in the context.
 *
 * A rank's block is seen as (outer, len, inner): the axis of the convolution in the middle, this rank's entries
 * start .. start + len - 1 of it. Its ghost buffer (outer, lo + hi, inner) holds the lo entries before the block
 * (rows 0 .. lo-1: entries start-lo .. start-1) and the hi entries after it (rows lo .. lo+hi-1: entries
 * start+len .. start+len+hi-1), clipped to the array: lo = min(nh/2, start), hi = min(nh/2, n - start - len). */
#ifndef RMAOP_DEVICE_NSCONV_DEV_H
#define RMAOP_DEVICE_NSCONV_DEV_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int64_t outer, inner;     /* the block as (outer, len, inner) */
  int64_t n;                /* entries of the axis in the whole array */
  int64_t start, len;       /* this rank's entries of the axis */
  int64_t lo, hi;           /* ghost entries before and after the block */
  int64_t nh, half;         /* filter length (odd) and nh / 2 */
  int64_t nfilts, oh, dh;   /* the filters: nfilts of them at oh, oh + dh, ... */
} rmaop__nsconv_geom;

/* The filter at entry i of the axis (PyLops NonStationaryConvolve1D._interpolate_h): (1 - w) hs[f0] + w hs[f1]
 * with f0 = floor((i - oh) / dh) and w = (i - oh) / dh - f0 between two filters; before the first or after the
 * last, that filter (f0 = f1, w = 0). rmaop__nsconv_lerp takes q = i - oh and f = floor(q / dh), so that a loop
 * over consecutive entries can step f without a division. */
static inline RMAOP__HD void rmaop__nsconv_lerp(const rmaop__nsconv_geom *g, int64_t q, int64_t f, int64_t *f0,
                                                int64_t *f1, double *w) {
  if (f < 0) {
    *f0 = *f1 = 0, *w = 0.0;
  } else if (f >= g->nfilts - 1) {
    *f0 = *f1 = g->nfilts - 1, *w = 0.0;
  } else {
    *f0 = f, *f1 = f + 1, *w = (double)q / (double)g->dh - (double)f;
  }
}
/* floor(q / dh) (dh > 0). */
static inline RMAOP__HD int64_t rmaop__nsconv_floor(const rmaop__nsconv_geom *g, int64_t q) {
  const int64_t f = q / g->dh;
  return f * g->dh > q ? f - 1 : f;
}
static inline RMAOP__HD void rmaop__nsconv_weights(const rmaop__nsconv_geom *g, int64_t i, int64_t *f0,
                                                   int64_t *f1, double *w) {
  rmaop__nsconv_lerp(g, i - g->oh, rmaop__nsconv_floor(g, i - g->oh), f0, f1, w);
}

/* Where entry e of the axis (start - lo <= e < start + len + hi) of line o starts: in the block (in_ghost 0) or in
 * the ghost buffer (1), at the element offset *off (its inner elements follow contiguously). */
static inline RMAOP__HD int rmaop__nsconv_row(const rmaop__nsconv_geom *g, int64_t o, int64_t e, int64_t *off) {
  if (e < g->start) {
    *off = (o * (g->lo + g->hi) + e - (g->start - g->lo)) * g->inner;
    return 1;
  }
  if (e >= g->start + g->len) {
    *off = (o * (g->lo + g->hi) + g->lo + e - g->start - g->len) * g->inner;
    return 1;
  }
  *off = (o * g->len + e - g->start) * g->inner;
  return 0;
}

/* Output entries k0 .. k1-1 of the axis (this rank's: start <= k0 <= k1 <= start + len), every line and inner
 * element. Forward: out[o, k, i] = sum over e in [k - nh/2, k + nh/2] of in[o, e, i] h_e[k - e + nh/2]. Adjoint:
 * out[o, k, i] = sum over e of conj(h_k[e - k + nh/2]) in[o, e, i]. Both over entries inside the array, in
 * ascending e; `in` and `ghost` hold the entries as rmaop__nsconv_row says. hs: nfilts x nh of dt, device memory. */
rmaop_status rmaop__dev_nsconv(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__nsconv_geom *g, const void *hs, int adjoint,
                               int64_t k0, int64_t k1, const void *in, const void *ghost, void *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEVICE_NSCONV_DEV_H */
