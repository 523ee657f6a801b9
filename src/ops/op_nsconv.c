/* 1-D non-stationary convolution (PyLops NonStationaryConvolve1D) distributed as PyLops-MPI's
 * MPINonStationaryConvolve1D: the array is split along the convolved axis, every rank holding its entries of it
 * (the other axes whole). PyLops-MPI sandwiches a local PyLops operator between halo exchanges of
 * max(distance to the next filter) + nh/2 + 1 entries and hands each rank the filters around its block; here every
 * rank keeps the whole filter bank (nfilts x nh, small) and interpolates with global indices, so an output needs
 * only the nh/2 entries on each side of it: the one exchange per application is a plan that brings those nh/2
 * entries (from as many ranks as hold them, so any split works, zero-size blocks included) into a ghost buffer.
 * The adjoint needs the same neighbouring entries of y, so both directions run the one plan in INSERT mode and
 * compute their outputs in gather form (sum over the inputs that reach an output), which makes the adjoint the
 * exact transpose without an ADD pass. Outputs whose window stays inside the block are computed while the plan
 * is in flight, the few next to the block's ends after it.
 *
 * The results are serial PyLops' whatever the split. PyLops-MPI's own operator differs from them next to a block
 * end when the window reaches past the neighbour's first filter (it clamps the filters it does not hold, e.g. 16
 * entries on 2 ranks, ih = 1, 5, 9, 13, nh = 7: y[7] differs by 0.024); its adjoint agrees with serial PyLops'. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/plan.h"
#include "op_impl.h"

#include <stdio.h>

#include "device/device.h"
#include "device/nsconv_dev.h"

/* Outputs per tile of the host loop: the tile's interpolated filters ((TILE + nh - 1) x nh) stay in cache and
 * serve every line of the block. */
enum { TILE = 256 };

typedef struct {
  rmaop_ctx ctx;
  rmaop_dtype dtype;
  rmaop__nsconv_geom g;
  int dev;
  void *hs;             /* nfilts x nh, context memory */
  void *ghost;          /* outer x (lo + hi) x inner, context memory */
  void *tile;           /* host memory: the interpolated filters of a tile of entries */
  int64_t in0, in1;     /* outputs computed while the plan is in flight */
  rmaop_plan plan;      /* my entries into the other ranks' ghost buffers */
  int adjoint;          /* the application begun: its direction, input and output */
  const void *in;
  void *out;
} nsconv;

/* ---- the host loop ---- */

/* out = the outputs k0 .. k1-1 (nsconv_dev.h, rmaop__dev_nsconv), tile by tile: first the filters of the tile's
 * entries (forward: every entry that reaches the tile; adjoint: the tile's own, conjugated), then every line.
 * Each output is a sum in ascending entry order. Lines of single elements (1-D arrays, the last axis) take
 * outputs whose whole window lies in the block four at a time (four independent sums, each in that order). */
#define NSCONV_HOST(NAME, T, R, CONJ)                                                                                  \
  /* One output: line o, entry k, every inner element. */                                                             \
  static void NAME##_one(const nsconv *s, const T *H, int64_t eb, int adjoint, int64_t o, int64_t k, const T *in,     \
                         const T *ghost, T *out) {                                                                     \
    const rmaop__nsconv_geom *g = &s->g;                                                                               \
    const int64_t nh = g->nh, half = g->half, inner = g->inner;                                                        \
    T *dst = out + (o * g->len + k - g->start) * inner;                                                                \
    for (int64_t i = 0; i < inner; ++i)                                                                                \
      dst[i] = 0;                                                                                                      \
    const int64_t e0 = k - half > 0 ? k - half : 0, e1 = k + half < g->n - 1 ? k + half : g->n - 1;                   \
    for (int64_t e = e0; e <= e1; ++e) {                                                                               \
      int64_t off;                                                                                                     \
      const T *src = (rmaop__nsconv_row(g, o, e, &off) ? ghost : in) + off;                                            \
      if (adjoint) {                                                                                                   \
        const T c = H[(k - eb) * nh + e - k + half];                                                                   \
        for (int64_t i = 0; i < inner; ++i)                                                                            \
          dst[i] = dst[i] + c * src[i];                                                                                \
      } else {                                                                                                         \
        const T c = H[(e - eb) * nh + k - e + half];                                                                   \
        for (int64_t i = 0; i < inner; ++i)                                                                            \
          dst[i] = dst[i] + src[i] * c;                                                                                \
      }                                                                                                                \
    }                                                                                                                  \
  }                                                                                                                    \
  /* Outputs k .. k+3 of a line of single elements, their windows inside the block (x: the line's block). */          \
  static void NAME##_four(const nsconv *s, const T *H, int64_t eb, int adjoint, int64_t k, const T *x, T *y) {       \
    const int64_t nh = s->g.nh, half = s->g.half, at = k - s->g.start;                                                 \
    T a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                                                  \
    const T *v = x + at - half;                                                                                        \
    if (adjoint) {                                                                                                     \
      const T *h = H + (k - eb) * nh;                                                                                  \
      for (int64_t j = 0; j < nh; ++j) {                                                                               \
        a0 = a0 + h[j] * v[j];                                                                                         \
        a1 = a1 + h[nh + j] * v[j + 1];                                                                                \
        a2 = a2 + h[2 * nh + j] * v[j + 2];                                                                            \
        a3 = a3 + h[3 * nh + j] * v[j + 3];                                                                            \
      }                                                                                                                \
    } else {                                                                                                           \
      const T *h = H + (k - half - eb) * nh + nh - 1; /* tap nh-1-j of the filter at entry k - half + j */             \
      for (int64_t j = 0; j < nh; ++j) {                                                                               \
        a0 = a0 + v[j] * h[j * (nh - 1)];                                                                              \
        a1 = a1 + v[j + 1] * h[(j + 1) * (nh - 1) + 1];                                                                \
        a2 = a2 + v[j + 2] * h[(j + 2) * (nh - 1) + 2];                                                                \
        a3 = a3 + v[j + 3] * h[(j + 3) * (nh - 1) + 3];                                                                \
      }                                                                                                                \
    }                                                                                                                  \
    y[at] = a0, y[at + 1] = a1, y[at + 2] = a2, y[at + 3] = a3;                                                        \
  }                                                                                                                    \
  static void NAME(const nsconv *s, int adjoint, int64_t k0, int64_t k1, const void *in_, const void *ghost_,        \
                   void *out_) {                                                                                       \
    const rmaop__nsconv_geom *g = &s->g;                                                                               \
    const T *hs = s->hs, *in = in_, *ghost = ghost_;                                                                   \
    T *out = out_, *H = s->tile;                                                                                       \
    const int64_t nh = g->nh, half = g->half;                                                                          \
    for (int64_t kt = k0; kt < k1; kt += TILE) {                                                                       \
      const int64_t kt1 = kt + TILE < k1 ? kt + TILE : k1;                                                             \
      const int64_t eb = adjoint ? kt : (kt - half > 0 ? kt - half : 0);                                               \
      const int64_t ee = adjoint ? kt1 - 1 : (kt1 - 1 + half < g->n - 1 ? kt1 - 1 + half : g->n - 1);                  \
      for (int64_t e = eb; e <= ee; ++e) {                                                                             \
        int64_t f0, f1;                                                                                                \
        double w;                                                                                                      \
        rmaop__nsconv_weights(g, e, &f0, &f1, &w);                                                                     \
        const R a = (R)(1.0 - w), b = (R)w;                                                                            \
        for (int64_t j = 0; j < nh; ++j) {                                                                             \
          const T h = a * hs[f0 * nh + j] + b * hs[f1 * nh + j];                                                       \
          H[(e - eb) * nh + j] = adjoint ? CONJ(h) : h;                                                                \
        }                                                                                                              \
      }                                                                                                                \
      /* the tile's outputs whose whole window lies in the block and the array: [fa, fb) */                           \
      int64_t fa = kt > s->in0 ? kt : s->in0, fb = kt1 < s->in1 ? kt1 : s->in1;                                       \
      if (fa < half) fa = half;                                                                                        \
      if (fb > g->n - half) fb = g->n - half;                                                                          \
      for (int64_t o = 0; o < g->outer; ++o) {                                                                         \
        int64_t k = kt;                                                                                                \
        if (g->inner == 1 && fa < fb) {                                                                                \
          for (; k < fa; ++k)                                                                                          \
            NAME##_one(s, H, eb, adjoint, o, k, in, ghost, out);                                                       \
          for (; k + 4 <= fb; k += 4)                                                                                  \
            NAME##_four(s, H, eb, adjoint, k, in + o * g->len, out + o * g->len);                                      \
        }                                                                                                              \
        for (; k < kt1; ++k)                                                                                           \
          NAME##_one(s, H, eb, adjoint, o, k, in, ghost, out);                                                         \
      }                                                                                                                \
    }                                                                                                                  \
  }
#define SAME(x) (x)
NSCONV_HOST(host_f32, float, float, SAME)
NSCONV_HOST(host_f64, double, double, SAME)
NSCONV_HOST(host_c64, float _Complex, float, conjf)
NSCONV_HOST(host_c128, double _Complex, double, conj)
#undef SAME
#undef NSCONV_HOST

static rmaop_status compute(const nsconv *s, int64_t k0, int64_t k1) {
  if (k1 <= k0) return RMAOP_OK;
  if (s->dev) return rmaop__dev_nsconv(s->ctx, s->dtype, &s->g, s->hs, s->adjoint, k0, k1, s->in, s->ghost, s->out);
  switch (s->dtype) {
  case RMAOP_F32: host_f32(s, s->adjoint, k0, k1, s->in, s->ghost, s->out); break;
  case RMAOP_F64: host_f64(s, s->adjoint, k0, k1, s->in, s->ghost, s->out); break;
  case RMAOP_C64: host_c64(s, s->adjoint, k0, k1, s->in, s->ghost, s->out); break;
  case RMAOP_C128: host_c128(s, s->adjoint, k0, k1, s->in, s->ghost, s->out); break;
  }
  return RMAOP_OK;
}

/* ---- operator callbacks: both directions bring the input's neighbouring entries with the one plan ---- */

static rmaop_status run_begin(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out) {
  nsconv *s = A->impl;
  s->adjoint = adjoint, s->in = in->data, s->out = out->data;
  RMAOP_CHECK(rmaop_plan_begin(s->plan, in->data, s->ghost, RMAOP_INSERT));
  return compute(s, s->in0, s->in1);
}
static rmaop_status run_end(rmaop_op A) {
  nsconv *s = A->impl;
  RMAOP_CHECK(rmaop_plan_end(s->plan));
  RMAOP_CHECK(compute(s, s->g.start, s->in0));
  return compute(s, s->in1, s->g.start + s->g.len);
}
static rmaop_status nsconv_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) { return run_begin(A, 0, x, y); }
static rmaop_status nsconv_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) { return run_begin(A, 1, y, x); }

static void nsconv_free(nsconv *s) {
  if (!s) return;
  rmaop_plan_destroy(&s->plan);
  rmaop__mem_free(s->ctx, &s->hs);
  rmaop__mem_free(s->ctx, &s->ghost);
  free(s->tile);
  free(s);
}
static void nsconv_destroy(rmaop_op A) { nsconv_free(A->impl); }

static const rmaop__op_ops nsconv_ops = {nsconv_apply_begin, run_end, nsconv_adjoint_begin, run_end, nsconv_destroy};

/* ---- the exchange plan ---- */

/* Ghost entries of a block [start, start + len) of n: nh/2 on each side, clipped to the array; none for an empty
 * block (it computes nothing). */
static void ghosts(int64_t n, int64_t half, int64_t start, int64_t len, int64_t *lo, int64_t *hi) {
  *lo = len ? (half < start ? half : start) : 0;
  *hi = len ? (half < n - start - len ? half : n - start - len) : 0;
}

/* My entries inside rank q's ghost ranges, line by line. */
static rmaop_status sends_to(const nsconv *s, int q, int64_t qstart, int64_t qlen, rmaop__tlist *l) {
  const rmaop__nsconv_geom *g = &s->g;
  int64_t qlo, qhi;
  ghosts(g->n, g->half, qstart, qlen, &qlo, &qhi);
  /* ghost ranges of q: [qstart - qlo, qstart) at its row 0, [qstart + qlen, + qhi) at its row qlo */
  const int64_t from[2] = {qstart - qlo, qstart + qlen}, to[2] = {qstart, qstart + qlen + qhi}, row[2] = {0, qlo};
  for (int side = 0; side < 2; ++side) {
    const int64_t a = from[side] > g->start ? from[side] : g->start;
    const int64_t b = to[side] < g->start + g->len ? to[side] : g->start + g->len;
    if (a >= b) continue;
    for (int64_t o = 0; o < g->outer; ++o) {
      const rmaop_transfer t = {q, (o * g->len + a - g->start) * g->inner,
                                (o * (qlo + qhi) + row[side] + a - from[side]) * g->inner, (b - a) * g->inner};
      RMAOP_CHECK(rmaop__tlist_push(s->ctx, l, t, "nsconv"));
    }
  }
  return RMAOP_OK;
}

/* `axis` gives every rank's entries (its sizes and offsets). */
static rmaop_status build_plan(nsconv *s, rmaop_layout axis, const char *label) {
  rmaop_ctx ctx = s->ctx;
  rmaop__tlist l = {0};
  rmaop_status st = RMAOP_OK;
  for (int q = 0; q < ctx->size && st == RMAOP_OK; ++q)
    if (q != ctx->rank && s->g.len > 0) st = sends_to(s, q, axis->offsets[q], axis->sizes[q], &l);
  st = rmaop__agree(ctx, st, "nsconv transfers");
  if (st == RMAOP_OK) {
    const rmaop__nsconv_geom *g = &s->g;
    const rmaop_plan_spec spec = {.dtype = s->dtype,
                                  .src_len = g->outer * g->len * g->inner,
                                  .dst_len = g->outer * (g->lo + g->hi) * g->inner,
                                  .nsends = l.n,
                                  .sends = l.t,
                                  .nrecvs = -1,
                                  .label = label};
    st = rmaop_plan_create(ctx, &spec, &s->plan);
  }
  free(l.t);
  return st;
}

/* ---- arguments ---- */

static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_nsconv_spec *sp, rmaop_op *out, int *axis) {
  const char *fn = "rmaop_op_create_nonstationary_convolve1d";
  RMAOP_REQUIRE(ctx, sp != NULL && out != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, sp ? "A (output)" : "spec");
  RMAOP_REQUIRE(ctx, sp->ndim >= 1 && sp->ndim <= RMAOP_MAX_DIMS, RMAOP_ERR_ARG, "%s: ndim = %d is outside [1, %d]", fn,
                sp->ndim, RMAOP_MAX_DIMS);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(sp->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)sp->dtype);
  int64_t total = 1;
  for (int d = 0; d < sp->ndim; ++d) {
    RMAOP_REQUIRE(ctx, sp->dims[d] >= 1, RMAOP_ERR_ARG, "%s: dims[%d] = %lld must be positive", fn, d,
                  (long long)sp->dims[d]);
    RMAOP_REQUIRE(ctx, !__builtin_mul_overflow(total, sp->dims[d], &total) && rmaop__fits(total, 1), RMAOP_ERR_ARG,
                  "%s: the array's size overflows 64-bit byte counts", fn);
  }
  RMAOP_REQUIRE(ctx, sp->axis >= -sp->ndim && sp->axis < sp->ndim, RMAOP_ERR_ARG, "%s: axis = %d is outside [%d, %d]",
                fn, sp->axis, -sp->ndim, sp->ndim - 1);
  const int a = sp->axis < 0 ? sp->axis + sp->ndim : sp->axis;
  const int64_t n = sp->dims[a];
  RMAOP_REQUIRE(ctx, sp->local_n >= -1 && sp->local_n <= n, RMAOP_ERR_ARG,
                "%s: local_n = %lld is outside [0, dims[%d] = %lld] (or -1: balanced split)", fn,
                (long long)sp->local_n, a, (long long)n);
  RMAOP_REQUIRE(ctx, sp->nh >= 1 && sp->nh % 2 == 1, RMAOP_ERR_ARG,
                "%s: nh = %lld: the filters must have an odd length (centred on their position)", fn, (long long)sp->nh);
  RMAOP_REQUIRE(ctx, sp->nfilts >= 1 && rmaop__fits(sp->nfilts, sp->nh), RMAOP_ERR_ARG,
                "%s: nfilts = %lld must be at least 1 (and nfilts x nh fit 64-bit byte counts)", fn,
                (long long)sp->nfilts);
  RMAOP_REQUIRE(ctx, sp->hs != NULL && sp->ih != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, sp->hs ? "ih" : "hs");
  const int64_t *ih = sp->ih;
  for (int64_t f = 0; f < sp->nfilts; ++f) {
    RMAOP_REQUIRE(ctx, ih[f] >= 0 && ih[f] < n, RMAOP_ERR_ARG, "%s: ih[%lld] = %lld is outside [0, dims[%d] = %lld)", fn,
                  (long long)f, (long long)ih[f], a, (long long)n);
    RMAOP_REQUIRE(ctx, f == 0 || ih[f] > ih[f - 1], RMAOP_ERR_ARG, "%s: ih is not increasing: ih[%lld] = %lld, ih[%lld] = %lld",
                  fn, (long long)(f - 1), (long long)ih[f - 1], (long long)f, (long long)ih[f]);
    RMAOP_REQUIRE(ctx, f < 2 || ih[f] - ih[f - 1] == ih[1] - ih[0], RMAOP_ERR_ARG,
                  "%s: ih is not regularly spaced: ih[%lld] - ih[%lld] = %lld, ih[1] - ih[0] = %lld", fn, (long long)f,
                  (long long)(f - 1), (long long)(ih[f] - ih[f - 1]), (long long)(ih[1] - ih[0]));
  }
  *axis = a;
  return RMAOP_OK;
}

/* FNV-1a of the filter bank's bytes: the ranks compare it instead of the values. */
static int64_t checksum(const void *p, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return (int64_t)h;
}

/* Every rank interpolates the same filters on the same axis: they must be everyone's. */
static rmaop_status same_spec(rmaop_ctx ctx, const rmaop_nsconv_spec *sp, int axis) {
  static const char *const names[] = {"ndim",    "dtype",   "axis",    "dims[0]", "dims[1]", "dims[2]",
                                      "dims[3]", "dims[4]", "dims[5]", "dims[6]", "dims[7]", "nh",
                                      "nfilts",  "ih[0]",   "the spacing of ih",   "hs (a checksum of its values)"};
  int64_t v[16] = {sp->ndim, sp->dtype, axis};
  for (int d = 0; d < sp->ndim; ++d) v[3 + d] = sp->dims[d];
  v[11] = sp->nh, v[12] = sp->nfilts, v[13] = sp->ih[0], v[14] = sp->nfilts > 1 ? sp->ih[1] - sp->ih[0] : 1;
  v[15] = checksum(sp->hs, (size_t)(sp->nfilts * sp->nh) * rmaop_dtype_size(sp->dtype));
  return rmaop__same_everywhere(ctx, v, 16, names, "rmaop_op_create_nonstationary_convolve1d");
}

/* The block's geometry, its buffers and the filters (local). */
static rmaop_status setup(nsconv *s, const rmaop_nsconv_spec *sp, int axis, rmaop_layout axl) {
  rmaop_ctx ctx = s->ctx;
  rmaop__nsconv_geom *g = &s->g;
  g->outer = g->inner = 1;
  for (int d = 0; d < sp->ndim; ++d) {
    if (d < axis) g->outer *= sp->dims[d];
    if (d > axis) g->inner *= sp->dims[d];
  }
  g->n = sp->dims[axis];
  g->start = axl->offsets[ctx->rank], g->len = axl->sizes[ctx->rank];
  g->nh = sp->nh, g->half = sp->nh / 2;
  g->nfilts = sp->nfilts, g->oh = sp->ih[0], g->dh = sp->nfilts > 1 ? sp->ih[1] - sp->ih[0] : 1;
  ghosts(g->n, g->half, g->start, g->len, &g->lo, &g->hi);
  /* outputs whose window stays inside the block (no ghost entries) */
  s->in0 = g->start + (g->lo ? g->half : 0);
  s->in1 = g->start + g->len - (g->hi ? g->half : 0);
  if (s->in0 > g->start + g->len) s->in0 = g->start + g->len;
  if (s->in1 < s->in0) s->in1 = s->in0;
  const size_t es = rmaop_dtype_size(s->dtype), nhs = (size_t)(g->nfilts * g->nh);
  RMAOP_CHECK(rmaop__mem_calloc(ctx, nhs + 1, es, "nsconv filters", &s->hs));
  RMAOP_CHECK(rmaop__mem_copy(ctx, s->hs, sp->hs, nhs * es));
  RMAOP_CHECK(rmaop__mem_calloc(ctx, (size_t)(g->outer * (g->lo + g->hi) * g->inner) + 1, es, "nsconv ghost entries",
                                &s->ghost));
  if (s->dev) return rmaop__dev_sync(ctx); /* the caller's hs may go once we return */
  return rmaop__calloc(ctx, (size_t)((TILE + g->nh) * g->nh), es, "nsconv filter tile", &s->tile);
}

rmaop_status rmaop_op_create_nonstationary_convolve1d(rmaop_ctx ctx, const rmaop_nsconv_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_nonstationary_convolve1d";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  int axis = 0;
  RMAOP_CHECK(rmaop__agree(ctx, check_spec(ctx, spec, A, &axis), fn));
  RMAOP_CHECK(same_spec(ctx, spec, axis));
  const int64_t n = spec->dims[axis];
  int64_t len = spec->local_n, off;
  if (len < 0) rmaop__split(n, ctx->size, ctx->rank, &off, &len);
  rmaop_layout axl = NULL, layout = NULL;
  RMAOP_CHECK(rmaop_layout_create_local(ctx, len, &axl)); /* every rank's entries */
  if (axl->global_n != n) { /* the same sum on every rank: the same verdict */
    rmaop_status st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: the ranks' local_n add up to %lld, but dims[%d] = %lld", fn,
                                  (long long)axl->global_n, axis, (long long)n);
    rmaop_layout_destroy(&axl);
    return st;
  }
  nsconv *s = NULL;
  rmaop_status st = rmaop__calloc(ctx, 1, sizeof *s, "nsconv operator", (void **)&s);
  if (st == RMAOP_OK) {
    *s = (nsconv){.ctx = ctx, .dtype = spec->dtype, .dev = RMAOP__ON_DEVICE(ctx)};
    st = setup(s, spec, axis, axl);
  }
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK) st = build_plan(s, axl, spec->label ? spec->label : "nsconv");
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, s->g.outer * s->g.len * s->g.inner, &layout);
  st = rmaop__op_new_agreed(st, ctx, "nsconv", spec->dtype, layout, layout, &nsconv_ops, s, A);
  if (st != RMAOP_OK) nsconv_free(s);
  rmaop_layout_destroy(&layout); /* the operator holds its own references */
  rmaop_layout_destroy(&axl);
  return st;
}
