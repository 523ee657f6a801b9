/* The distributed N-D FFT (include/rmaop/op_fft.h; PyLops-MPI MPIFFTND / MPIFFT2D with PyLops FFTND's nffts).
 *
 * The model and data vectors are split by balanced rows of axis 0, as PyLops-MPI's vectors are (its reshaped
 * decorator rebalances the model along axis 0 and redistributes the output of mpi4py-fft's PFFT back to axis 0
 * before flattening it). The transform is a list of steps made at creation: local transforms along the axes that
 * are whole on this rank's block (src/ops/fft_local.h) and redistributions (src/ops/redistribute.h) that make
 * axis 0 whole, and back:
 *
 *   axis 0 not listed:          every listed axis on the row blocks; no communication.
 *   axis 0 listed:              the other listed axes on the row blocks (the real one first), redistribute to
 *                               axis q, axis 0, redistribute back to axis 0.
 *   real and axes[-1] == 0:     redistribute to axis q, the real transform along axis 0 (it must see the real
 *                               input, so it comes first), the listed axes other than q, back to axis 0, then
 *                               axis q when it is listed.
 *
 * q is the axis other than 0 with the most entries at that point (the most even split). One rank runs the steps
 * without the redistributions. The adjoint is the same list reversed, each local transform replaced by its
 * adjoint (backward C2C, or C2R for the real one) and each redistribution run in reverse.
 *
 * PyLops' per-axis operations fold into the local transform of their axis, which is the only step that sees the
 * axis whole: the ifftshift before (a roll of the input by -(n/2)), the padding or truncation to nfft, the
 * sqrt(2) weights of the real axis, the fftshift after (a roll of the output by n/2); the real part of a real
 * model into the first local transform (real parts commute with the other steps), the 1/n of norm "1/n" into
 * the last. So nothing else passes over the data. An ifftshift or fftshift of axis 0 needs no data from other
 * ranks beyond the redistribution that makes axis 0 whole anyway; where axis 0 is not listed no shift touches it. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "op_impl.h"
#include "ops/fft_local.h"
#include "ops/redistribute.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_STEPS (RMAOP_MAX_DIMS + 2)

typedef struct {
  rmaop__fft_local *fft; /* a local transform, or */
  rmaop__redist *rd;     /* a redistribution (owned by the impl's rd[]), run with `reverse` */
  int reverse;
} step;

typedef struct {
  rmaop_ctx ctx;
  rmaop_fft_info info;
  double sampling[RMAOP_MAX_DIMS];  /* per listed axis, 0 replaced by 1 */
  int ishift[RMAOP_MAX_DIMS], fshift[RMAOP_MAX_DIMS]; /* ifftshift_before, fftshift_after per listed axis */
  rmaop_fft_norm norm;
  char label[48];
  int nsteps;
  step fwd[MAX_STEPS], adj[MAX_STEPS];
  rmaop__redist *rd[2];
  int nrd;
  void *w[2];             /* buffers between the steps, context memory */
  rmaop__redist *pending; /* the last step's redistribution, begun and not ended */
} fft_impl;

static const char *const FN = "rmaop_op_create_fftnd";

/* The operator's dtype: the complex kind of the model's. */
static rmaop_dtype complex_of(rmaop_dtype d) { return d == RMAOP_F32 || d == RMAOP_C64 ? RMAOP_C64 : RMAOP_C128; }

/* ---- application ---- */

static rmaop_status run(fft_impl *f, const step *s, const void *in, void *out) {
  for (int k = 0; k < f->nsteps; ++k) {
    const void *src = k == 0 ? in : f->w[(k - 1) % 2];
    void *dst = k == f->nsteps - 1 ? out : f->w[k % 2];
    if (s[k].fft) {
      RMAOP_CHECK(rmaop__fft_local_exec(s[k].fft, src, dst));
      continue;
    }
    RMAOP_CHECK(rmaop__redist_begin(s[k].rd, s[k].reverse, src, dst));
    if (k == f->nsteps - 1) f->pending = s[k].rd; /* ended by apply_end: the caller may work meanwhile */
    else RMAOP_CHECK(rmaop__redist_end(s[k].rd));
  }
  return RMAOP_OK;
}

static rmaop_status finish(rmaop_op A) {
  fft_impl *f = A->impl;
  rmaop__redist *r = f->pending;
  f->pending = NULL;
  return r ? rmaop__redist_end(r) : RMAOP_OK;
}

static rmaop_status fft_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  fft_impl *f = A->impl;
  return run(f, f->fwd, x->data, y->data);
}
static rmaop_status fft_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  fft_impl *f = A->impl;
  return run(f, f->adj, y->data, x->data);
}

static void fft_free(fft_impl *f) {
  if (!f) return;
  for (int k = 0; k < f->nsteps; ++k) {
    rmaop__fft_local_destroy(f->fwd[k].fft);
    rmaop__fft_local_destroy(f->adj[k].fft);
  }
  for (int k = 0; k < f->nrd; ++k) rmaop__redist_destroy(&f->rd[k]);
  rmaop__mem_free(f->ctx, &f->w[0]);
  rmaop__mem_free(f->ctx, &f->w[1]);
  free(f);
}
static void fft_destroy(rmaop_op A) { fft_free(A->impl); }

static const rmaop__op_ops fft_ops = {fft_apply_begin, finish, fft_adjoint_begin, finish, fft_destroy};

/* ---- the spec ---- */

static int64_t prod(const int64_t *v, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; ++d) p *= v[d];
  return p;
}

/* 1 when the product of the n extents fits 64-bit byte counts of the largest dtype. */
static int fits_all(const int64_t *v, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; ++d) {
    if (!rmaop__fits(p, v[d])) return 0;
    p *= v[d];
  }
  return 1;
}

/* The local checks of the spec; fills the normalized axes, nffts and dimsd into info. */
static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_fft_spec *s, rmaop_op *A, rmaop_fft_info *info) {
  RMAOP_REQUIRE(ctx, s != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", FN);
  RMAOP_REQUIRE(ctx, A != NULL, RMAOP_ERR_ARG, "%s: operator (output) is NULL", FN);
  RMAOP_REQUIRE(ctx, s->ndim >= 2 && s->ndim <= RMAOP_MAX_DIMS, RMAOP_ERR_ARG,
                "%s: ndim = %d is outside [2, %d] (the distributed FFT needs at least two dimensions, as PyLops-MPI's "
                "MPIFFT2D and MPIFFTND)", FN, s->ndim, RMAOP_MAX_DIMS);
  for (int d = 0; d < s->ndim; ++d)
    RMAOP_REQUIRE(ctx, s->dims[d] >= 1, RMAOP_ERR_ARG, "%s: dims[%d] = %lld is smaller than 1", FN, d,
                  (long long)s->dims[d]);
  RMAOP_REQUIRE(ctx, s->naxes >= 1 && s->naxes <= s->ndim, RMAOP_ERR_ARG, "%s: naxes = %d is outside [1, ndim = %d]",
                FN, s->naxes, s->ndim);
  RMAOP_REQUIRE(ctx, s->norm == RMAOP_FFT_NORM_NONE || s->norm == RMAOP_FFT_NORM_1_OVER_N, RMAOP_ERR_ARG,
                "%s: norm %d is not RMAOP_FFT_NORM_NONE or RMAOP_FFT_NORM_1_OVER_N", FN, (int)s->norm);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(s->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", FN,
                (int)s->dtype);
  int seen[RMAOP_MAX_DIMS] = {0};
  for (int i = 0; i < s->naxes; ++i) {
    const int a = s->axes[i] < 0 ? s->axes[i] + s->ndim : s->axes[i];
    RMAOP_REQUIRE(ctx, a >= 0 && a < s->ndim, RMAOP_ERR_ARG, "%s: axes[%d] = %d is outside [-%d, %d)", FN, i,
                  s->axes[i], s->ndim, s->ndim);
    RMAOP_REQUIRE(ctx, !seen[a], RMAOP_ERR_ARG, "%s: axes[%d] = %d repeats axis %d", FN, i, s->axes[i], a);
    seen[a] = 1;
    RMAOP_REQUIRE(ctx, s->nffts[i] >= 0, RMAOP_ERR_ARG, "%s: nffts[%d] = %lld is negative (0 means dims[%d])", FN, i,
                  (long long)s->nffts[i], a);
    RMAOP_REQUIRE(ctx, isfinite(s->sampling[i]), RMAOP_ERR_ARG, "%s: sampling[%d] is not finite", FN, i);
    info->axes[i] = a;
    info->nffts[i] = s->nffts[i] > 0 ? s->nffts[i] : s->dims[a];
  }
  info->ndim = s->ndim;
  info->naxes = s->naxes;
  memcpy(info->dims, s->dims, sizeof info->dims);
  memcpy(info->dimsd, s->dims, sizeof info->dimsd);
  for (int i = 0; i < s->naxes; ++i) info->dimsd[info->axes[i]] = info->nffts[i];
  if (s->real) info->dimsd[info->axes[s->naxes - 1]] = info->nffts[s->naxes - 1] / 2 + 1;
  int64_t most[RMAOP_MAX_DIMS]; /* every intermediate array is at most this big */
  for (int d = 0; d < s->ndim; ++d) most[d] = s->dims[d] > info->dimsd[d] ? s->dims[d] : info->dimsd[d];
  RMAOP_REQUIRE(ctx, fits_all(most, s->ndim), RMAOP_ERR_ARG, "%s: the arrays overflow 64-bit byte counts", FN);
  RMAOP_REQUIRE(ctx, rmaop__fft_available(ctx), RMAOP_ERR_UNSUPPORTED,
                "%s: FFTs on host memory need FFTW, and rmaop was built without it (configure it with FFTW3 "
                "installed: libfftw3-dev); device contexts use cuFFT", FN);
  return RMAOP_OK;
}

/* Every field that decides where data goes and what is computed is the same on every rank. */
static rmaop_status same_spec(rmaop_ctx ctx, const rmaop_fft_spec *s) {
  static const char *const n1[] = {"ndim", "naxes", "norm", "real", "dtype", "dims[0]", "dims[1]", "dims[2]",
                                   "dims[3]", "dims[4]", "dims[5]", "dims[6]", "dims[7]", "axes[0]", "axes[1]",
                                   "axes[2]", "axes[3]", "axes[4]", "axes[5]", "axes[6]", "axes[7]"};
  static const char *const n2[] = {"nffts[0]", "nffts[1]", "nffts[2]", "nffts[3]", "nffts[4]", "nffts[5]",
                                   "nffts[6]", "nffts[7]", "sampling[0]", "sampling[1]", "sampling[2]",
                                   "sampling[3]", "sampling[4]", "sampling[5]", "sampling[6]", "sampling[7]",
                                   "ifftshift_before", "fftshift_after"};
  int64_t v1[21] = {s->ndim, s->naxes, s->norm, s->real != 0, s->dtype}, v2[18] = {0};
  for (int i = 0; i < s->ndim; ++i) v1[5 + i] = s->dims[i];
  for (int i = 0; i < s->naxes; ++i) {
    v1[13 + i] = s->axes[i];
    v2[i] = s->nffts[i];
    memcpy(&v2[8 + i], &s->sampling[i], sizeof(double)); /* the bits: the frequencies must agree exactly */
    v2[16] |= (int64_t)(s->ifftshift_before[i] != 0) << i;
    v2[17] |= (int64_t)(s->fftshift_after[i] != 0) << i;
  }
  RMAOP_CHECK(rmaop__same_everywhere(ctx, v1, 21, n1, FN));
  return rmaop__same_everywhere(ctx, v2, 18, n2, FN);
}

/* ---- the steps ---- */

typedef struct {
  int i;        /* listed axis of a local transform, or -1 for a redistribution */
  int from, to; /* a redistribution's axes */
} item;

/* The axis other than 0 with the most entries in shape g. */
static int pick_q(const int64_t *g, int ndim) {
  int q = 1;
  for (int d = 2; d < ndim; ++d)
    if (g[d] > g[q]) q = d;
  return q;
}

/* The forward's steps, in order (see the file's comment). Returns their count. */
static int plan_items(const fft_impl *f, int size, item *it) {
  const rmaop_fft_info *in = &f->info;
  const int last = in->naxes - 1;
  int n = 0, i0 = -1;
  for (int i = 0; i < in->naxes; ++i)
    if (in->axes[i] == 0) i0 = i;
  if (size == 1 || i0 < 0) {
    if (in->real) it[n++] = (item){last, 0, 0};
    for (int i = 0; i < in->naxes; ++i)
      if (!(in->real && i == last)) it[n++] = (item){i, 0, 0};
    return n;
  }
  if (in->real && i0 == last) {
    const int q = pick_q(in->dims, in->ndim);
    int iq = -1;
    it[n++] = (item){-1, 0, q};
    it[n++] = (item){last, 0, 0};
    for (int i = 0; i < last; ++i) {
      if (in->axes[i] == q) iq = i;
      else it[n++] = (item){i, 0, 0};
    }
    it[n++] = (item){-1, q, 0};
    if (iq >= 0) it[n++] = (item){iq, 0, 0};
    return n;
  }
  int64_t g[RMAOP_MAX_DIMS];
  memcpy(g, in->dims, sizeof g);
  if (in->real) it[n++] = (item){last, 0, 0}, g[in->axes[last]] = in->dimsd[in->axes[last]];
  for (int i = 0; i < in->naxes; ++i)
    if (i != i0 && !(in->real && i == last)) it[n++] = (item){i, 0, 0}, g[in->axes[i]] = in->dimsd[in->axes[i]];
  const int q = pick_q(g, in->ndim);
  it[n++] = (item){-1, 0, q};
  it[n++] = (item){i0, 0, 0};
  it[n++] = (item){-1, q, 0};
  return n;
}

/* The forward and adjoint local transforms of listed axis i, on an array of global shape g split along `cur`:
 * `first`: the forward's first local transform (the real part of a real model), `last`: its last (1/n). */
static rmaop_status make_ffts(fft_impl *f, const int64_t *g, int cur, int i, int first, int last, step *fs,
                              step *as) {
  rmaop_ctx ctx = f->ctx;
  const rmaop_fft_info *in = &f->info;
  const int a = in->axes[i], ndim = in->ndim, is_real = in->real && i == in->naxes - 1;
  int64_t L[RMAOP_MAX_DIMS], off;
  memcpy(L, g, sizeof L);
  rmaop__split_balanced(g[cur], ctx->size, ctx->rank, &L[cur], &off);
  rmaop__fft_desc fw = {.kind = is_real ? RMAOP__FFT_R2C : RMAOP__FFT_C2C, .dtype = complex_of(in->model_dtype),
                        .sign = -1,
                        .outer = prod(L, 0, a), .n_in = in->dims[a], .inner = prod(L, a + 1, ndim),
                        .nfft = in->nffts[i], .n_out = in->dimsd[a]};
  rmaop__fft_desc ad = fw;
  ad.kind = is_real ? RMAOP__FFT_C2R : RMAOP__FFT_C2C;
  ad.sign = 1;
  ad.n_in = in->dimsd[a];
  ad.n_out = in->dims[a];
  /* numpy.fft.ifftshift rolls by -(n/2), fftshift by n/2; the adjoint undoes each on the other side. */
  fw.in_shift = f->ishift[i] ? -(in->dims[a] / 2) : 0;
  fw.out_shift = f->fshift[i] ? in->dimsd[a] / 2 : 0;
  ad.in_shift = f->fshift[i] ? -(in->dimsd[a] / 2) : 0;
  ad.out_shift = f->ishift[i] ? in->dims[a] / 2 : 0;
  if (is_real) fw.half_weight = sqrt(2.0), ad.half_weight = 1.0 / sqrt(2.0);
  if (first && is_real) fw.cplx_real = ad.cplx_real = 1; /* the vectors are complex: real parts in, real values out */
  else if (first && in->real_model) fw.re_in = ad.re_out = 1;
  if (last && f->norm == RMAOP_FFT_NORM_1_OVER_N) fw.scale = ad.scale = 1.0 / (double)prod(in->nffts, 0, in->naxes);
  RMAOP_CHECK(rmaop__fft_local_create(ctx, &fw, &fs->fft));
  return rmaop__fft_local_create(ctx, &ad, &as->fft);
}

/* Local elements of an array of global shape g split along cur. */
static int64_t local_n(const fft_impl *f, const int64_t *g, int cur) {
  int64_t L[RMAOP_MAX_DIMS], off;
  memcpy(L, g, sizeof L);
  rmaop__split_balanced(g[cur], f->ctx->size, f->ctx->rank, &L[cur], &off);
  return prod(L, 0, f->info.ndim);
}

/* Makes the steps (local status: the redistributions' creations agree among themselves; a local failure is
 * returned for the caller's agreement) and the buffers between them. */
static rmaop_status make_steps(fft_impl *f) {
  rmaop_ctx ctx = f->ctx;
  const rmaop_fft_info *in = &f->info;
  item it[MAX_STEPS];
  const int n = plan_items(f, ctx->size, it);
  int first = -1, last = -1;
  for (int k = 0; k < n; ++k)
    if (it[k].i >= 0) {
      if (first < 0) first = k;
      last = k;
    }
  int64_t g[RMAOP_MAX_DIMS], most = 0;
  memcpy(g, in->dims, sizeof g);
  int cur = 0;
  rmaop_status st = RMAOP_OK;
  f->nsteps = n;
  for (int k = 0; k < n; ++k) {
    step *fs = &f->fwd[k], *as = &f->adj[n - 1 - k];
    if (it[k].i >= 0) {
      /* a local failure is kept until the next redistribution's (collective) creation, or the caller's agreement */
      if (st == RMAOP_OK) st = make_ffts(f, g, cur, it[k].i, k == first, k == last, fs, as);
      g[in->axes[it[k].i]] = in->dimsd[in->axes[it[k].i]];
    } else {
      char label[64];
      snprintf(label, sizeof label, "%s:%d>%d", f->label, it[k].from, it[k].to);
      rmaop_status made = rmaop__redist_create(ctx, complex_of(in->model_dtype), in->ndim, g, it[k].from, -1,
                                               it[k].to, label, &f->rd[f->nrd]);
      st = rmaop__agree(ctx, st != RMAOP_OK ? st : made, FN); /* collective from here on either way */
      if (made == RMAOP_OK) fs->rd = as->rd = f->rd[f->nrd++];
      if (st != RMAOP_OK) return st;
      fs->reverse = 0, as->reverse = 1;
      cur = it[k].to;
    }
    if (k < n - 1) {
      const int64_t m = local_n(f, g, cur);
      if (m > most) most = m;
    }
  }
  const size_t es = rmaop_dtype_size(complex_of(in->model_dtype));
  for (int b = 0; b < 2 && n > 1 + b && st == RMAOP_OK; ++b)
    st = rmaop__mem_calloc_node(ctx, (size_t)most + 1, es, "fftnd buffer", &f->w[b]);
  return st;
}

/* ---- the constructor and the queries ---- */

/* This rank's blocks of the model and data (balanced rows of axis 0). */
static void set_blocks(rmaop_ctx ctx, rmaop_fft_info *in) {
  memcpy(in->model_local, in->dims, sizeof in->model_local);
  memcpy(in->data_local, in->dimsd, sizeof in->data_local);
  rmaop__split_balanced(in->dims[0], ctx->size, ctx->rank, &in->model_local[0], &in->model_offset);
  rmaop__split_balanced(in->dimsd[0], ctx->size, ctx->rank, &in->data_local[0], &in->data_offset);
}

rmaop_status rmaop_op_create_fftnd(rmaop_ctx ctx, const rmaop_fft_spec *spec, rmaop_op *A) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", FN);
  rmaop_fft_info info = {0};
  RMAOP_CHECK(rmaop__agree(ctx, check_spec(ctx, spec, A, &info), FN));
  RMAOP_CHECK(same_spec(ctx, spec)); /* the same verdict on every rank already */
  info.real = spec->real != 0;
  info.model_dtype = spec->dtype;
  info.real_model = info.real || spec->dtype == RMAOP_F32 || spec->dtype == RMAOP_F64;
  info.model_axis = info.data_axis = 0;
  set_blocks(ctx, &info);
  fft_impl *f = NULL;
  rmaop_status st = rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *f, "fftnd operator", (void **)&f), FN);
  if (st != RMAOP_OK) {
    free(f); /* allocated here, failed on another rank */
    return st;
  }
  f->ctx = ctx;
  f->norm = spec->norm;
  snprintf(f->label, sizeof f->label, "%s", spec->label ? spec->label : "fftnd");
  for (int i = 0; i < info.naxes; ++i) {
    f->sampling[i] = spec->sampling[i] != 0 ? spec->sampling[i] : 1.0;
    f->ishift[i] = spec->ifftshift_before[i] != 0;
    f->fshift[i] = spec->fftshift_after[i] != 0;
    info.nfreqs[i] = info.dimsd[info.axes[i]];
    info.df[i] = 1.0 / ((double)info.nffts[i] * f->sampling[i]);
  }
  f->info = info;
  rmaop_layout model = NULL, data = NULL;
  st = rmaop__agree(ctx, make_steps(f), FN); /* the layouts' creation is collective: all go on, or none */
  if (st == RMAOP_OK)
    st = rmaop_layout_create_local(ctx, info.model_local[0] * prod(info.dims, 1, info.ndim), &model);
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, info.data_local[0] * prod(info.dimsd, 1, info.ndim), &data);
  if (st == RMAOP_OK) {
    char name[64];
    snprintf(name, sizeof name, "%s", f->label);
    st = rmaop__op_new_agreed(st, ctx, name, complex_of(spec->dtype), model, data, &fft_ops, f, A);
  }
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  if (st != RMAOP_OK) fft_free(f);
  return st;
}

static rmaop_status get_impl(rmaop_op A, const char *fn, fft_impl **f) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  RMAOP_REQUIRE(A->ctx, A->ops == &fft_ops, RMAOP_ERR_ARG, "%s: operator \"%s\" is not an FFT operator", fn, A->name);
  *f = A->impl;
  return RMAOP_OK;
}

rmaop_status rmaop_op_fft_get_info(rmaop_op A, rmaop_fft_info *info) {
  fft_impl *f = NULL;
  RMAOP_CHECK(get_impl(A, "rmaop_op_fft_get_info", &f));
  RMAOP_REQUIRE(A->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_op_fft_get_info: info (output) is NULL");
  *info = f->info;
  return RMAOP_OK;
}

/* numpy.fft.fftfreq(n, d) (rfftfreq when `half`), fftshifted when `shift`: integer bins times 1 / (n d), numpy's
 * arithmetic. */
rmaop_status rmaop_op_fft_get_freqs(rmaop_op A, int i, double *out) {
  fft_impl *f = NULL;
  RMAOP_CHECK(get_impl(A, "rmaop_op_fft_get_freqs", &f));
  const rmaop_fft_info *in = &f->info;
  RMAOP_REQUIRE(A->ctx, i >= 0 && i < in->naxes, RMAOP_ERR_ARG, "rmaop_op_fft_get_freqs: i = %d is outside [0, %d)", i,
                in->naxes);
  RMAOP_REQUIRE(A->ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_fft_get_freqs: f (output) is NULL");
  const int64_t n = in->nffts[i], m = in->nfreqs[i];
  const int half = in->real && i == in->naxes - 1;
  const double val = 1.0 / ((double)n * f->sampling[i]);
  const int64_t shift = f->fshift[i] ? m / 2 : 0;
  for (int64_t k = 0; k < m; ++k) {
    const int64_t j = half || k <= (n - 1) / 2 ? k : k - n; /* bin of entry k before the shift */
    out[(k + shift) % m] = (double)j * val;
  }
  return RMAOP_OK;
}
