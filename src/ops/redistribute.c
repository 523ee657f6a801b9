/* Redistribution of an N-D C-ordered array from one distributed axis to another (redistribute.h), as PyLops-MPI's
 * DistributedArray.redistribute does it: each rank cuts its block into the sub-boxes the ranks own on the other
 * side, exchanges them all-to-all, and assembles what arrives. Here:
 *
 * - Boxes. Rank r's from-block is the whole array but rows [fo_r, fo_r + fl_r) of from_axis; rank q's to-block the
 *   whole array but its balanced rows of to_axis. What r sends q is the intersection, a box in both local arrays.
 *   Its dimensions are merged where the array is contiguous across them (rmaop__box), so the inner loop of a copy
 *   is as long as it can be. The boxes of one side partition that side's local array.
 * - Packing. A side whose every box is one contiguous run of its local array is "direct": the plan reads (or
 *   writes) the user's buffer in place, at the boxes' offsets. Otherwise the boxes are packed in rank order into
 *   a buffer of the side's size (a host loop of row copies, or one kernel for all boxes on the device), and the
 *   plan moves packed blocks. From axis 1 to axis 0 of a matrix, for example, the sends are direct (each block is
 *   a run of whole rows) and only the receives are unpacked.
 * - Exchange. One all-to-all plan (rmaop_plan_create_alltoall) from side 0 to side 1, and its reverse for the
 *   other direction. The reverse of a redistribution is the redistribution back, so the adjoint is exact.
 * - Copy. When from_axis == to_axis and the from split is the balanced one, every block is its own rank's: no plan,
 *   one copy.
 *
 * On host memory the unpack could be fused into the plan's copy out of its staging (one pass less over the
 * received data on the rma and nccl backends); it is not, since the plan API applies its staging itself. */
#include "redistribute.h"
#include "core/ctx.h"
#include "core/error.h"
#include "core/vec.h"

#include <stdio.h>

#include "device/device.h"
#include "device/redist_dev.h"

typedef struct {
  int direct;          /* every box is one run of the user's buffer: the plan uses it in place */
  rmaop__box *box;     /* [P]: box q is what goes to (side 0) or comes from (side 1) rank q; n = 0: none */
  rmaop__box *dev_box; /* device copy of box[] (device contexts that pack this side) */
  int64_t max_n;       /* the largest box */
  void *buf;           /* the packed boxes, in rank order (context memory; NULL when direct) */
} redist_side;

struct rmaop__redist {
  rmaop_ctx ctx;
  rmaop_dtype dtype;
  size_t es;
  char label[96];
  int64_t n[2];       /* elements of this rank's block: side 0 (from), side 1 (to) */
  int copy;           /* the two sides are the same blocks */
  rmaop_plan plan[2]; /* side 0 -> side 1, and back */
  redist_side s[2];
  int active;  /* between begin and end */
  int reverse; /* of the active execution */
  void *cur_dst;
};

void rmaop__split_balanced(int64_t n, int size, int rank, int64_t *count, int64_t *offset) {
  rmaop__split(n, size, rank, offset, count); /* the first n mod size ranks one more: PyLops-MPI's local_split */
}

int64_t rmaop__redist_local_n(const rmaop__redist *r, int side) {
  return r ? r->n[side != 0] : 0;
}

/* ---- arguments ---- */

typedef struct {
  int ndim, from_axis, to_axis;
  const int64_t *dims;
} geom;

static rmaop_status check_args(rmaop_ctx ctx, const char *who, rmaop_dtype dtype, const geom *g, int64_t from_local) {
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", who, (int)dtype);
  RMAOP_REQUIRE(ctx, g->ndim >= 1 && g->ndim <= RMAOP_MAX_DIMS, RMAOP_ERR_ARG, "%s: ndim = %d is outside [1, %d]", who,
                g->ndim, RMAOP_MAX_DIMS);
  RMAOP_REQUIRE(ctx, g->dims != NULL, RMAOP_ERR_ARG, "%s: dims is NULL", who);
  int64_t total = 1;
  for (int d = 0; d < g->ndim; ++d) {
    RMAOP_REQUIRE(ctx, g->dims[d] >= 0, RMAOP_ERR_ARG, "%s: dims[%d] = %lld is negative", who, d,
                  (long long)g->dims[d]);
    RMAOP_REQUIRE(ctx, rmaop__fits(total, g->dims[d]), RMAOP_ERR_ARG,
                  "%s: the array of %d dims overflows 64-bit byte counts at dims[%d] = %lld", who, g->ndim, d,
                  (long long)g->dims[d]);
    total *= g->dims[d];
  }
  RMAOP_REQUIRE(ctx, g->from_axis >= 0 && g->from_axis < g->ndim, RMAOP_ERR_ARG,
                "%s: from_axis = %d is outside [0, %d)", who, g->from_axis, g->ndim);
  RMAOP_REQUIRE(ctx, g->to_axis >= 0 && g->to_axis < g->ndim, RMAOP_ERR_ARG, "%s: to_axis = %d is outside [0, %d)", who,
                g->to_axis, g->ndim);
  RMAOP_REQUIRE(ctx, from_local >= -1, RMAOP_ERR_ARG, "%s: from_local = %lld is negative (-1: the balanced split)", who,
                (long long)from_local);
  return RMAOP_OK;
}

/* Every rank must describe the same array and axes. */
static rmaop_status same_geom(rmaop_ctx ctx, const char *who, rmaop_dtype dtype, const geom *g) {
  static const char *const names[] = {"dtype",   "ndim",    "from_axis", "to_axis", "dims[0]", "dims[1]",
                                      "dims[2]", "dims[3]", "dims[4]",   "dims[5]", "dims[6]", "dims[7]"};
  int64_t v[4 + RMAOP_MAX_DIMS] = {dtype, g->ndim, g->from_axis, g->to_axis};
  for (int d = 0; d < g->ndim; ++d)
    v[4 + d] = g->dims[d];
  return rmaop__same_everywhere(ctx, v, 4 + g->ndim, names, who);
}

/* Every rank's rows of from_axis (fl) and where they start (fo); -1 is the rank's balanced count. */
static rmaop_status from_split(rmaop_ctx ctx, const char *who, const geom *g, int64_t from_local, int64_t *fl,
                               int64_t *fo) {
  const int P = ctx->size;
  const int64_t n = g->dims[g->from_axis];
  int64_t mine = from_local, off = 0;
  if (mine < 0)
    rmaop__split_balanced(n, P, ctx->rank, &mine, &off);
  for (int p = 0; p < P; ++p)
    fo[p] = p == ctx->rank ? mine : 0; /* fo as scratch: an allgather by sum */
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, fo, fl, P, MPI_INT64_T, MPI_SUM, who));
  int64_t sum = 0;
  for (int p = 0; p < P; ++p) {
    fo[p] = sum;
    sum = fl[p] <= n - sum ? sum + fl[p] : n + 1; /* no overflow: every fl[p] >= 0 */
  }
  /* Every rank sees the same fl: the same verdict everywhere. */
  RMAOP_REQUIRE(ctx, sum == n, RMAOP_ERR_ARG,
                "%s: the ranks' from_local values (%lld here) add up to %s%lld, not dims[%d] = %lld", who,
                (long long)mine, sum > n ? "more than " : "", (long long)(sum > n ? n : sum), g->from_axis,
                (long long)n);
  return RMAOP_OK;
}

/* ---- boxes ---- */

/* Rows [lo, hi) of `axis`, all of every other axis. */
typedef struct {
  int64_t lo[RMAOP_MAX_DIMS], hi[RMAOP_MAX_DIMS];
} range;

static range block_range(const geom *g, int axis, int64_t off, int64_t count) {
  range r;
  for (int d = 0; d < g->ndim; ++d)
    r.lo[d] = 0, r.hi[d] = g->dims[d];
  r.lo[axis] = off, r.hi[axis] = off + count;
  return r;
}

/* The box `x` (global coordinates) inside the local array `blk` (its global range), dimensions merged where the
 * array is contiguous across them; packed at `packed_off`. */
static void make_box(const geom *g, const range *blk, const range *x, int64_t packed_off, rmaop__box *b) {
  int64_t stride[RMAOP_MAX_DIMS], n = 1, off = 0;
  for (int d = g->ndim - 1; d >= 0; --d) {
    stride[d] = d == g->ndim - 1 ? 1 : stride[d + 1] * (blk->hi[d + 1] - blk->lo[d + 1]);
    off += (x->lo[d] - blk->lo[d]) * stride[d];
    n *= x->hi[d] - x->lo[d];
  }
  *b = (rmaop__box){.nd = 0, .n = n, .array_off = off, .packed_off = packed_off};
  for (int d = 0; d < g->ndim && n > 0; ++d) {
    const int64_t e = x->hi[d] - x->lo[d];
    if (e == 1)
      continue;
    if (b->nd > 0 && b->stride[b->nd - 1] == e * stride[d]) { /* contiguous across: one longer dimension */
      b->shape[b->nd - 1] *= e;
      b->stride[b->nd - 1] = stride[d];
    } else {
      b->shape[b->nd] = e, b->stride[b->nd] = stride[d], b->nd++;
    }
  }
  if (b->nd == 0)
    b->nd = 1, b->shape[0] = n, b->stride[0] = 1; /* one element, or none */
}

static int contiguous(const rmaop__box *b) {
  return b->n == 0 || (b->nd == 1 && b->stride[0] == 1);
}

/* Side 0: my from-block cut by every rank's to-block; side 1: every rank's from-block cut by my to-block. */
static void make_side(rmaop__redist *r, const geom *g, const int64_t *fl, const int64_t *fo, int which) {
  const int P = r->ctx->size, me = r->ctx->rank;
  redist_side *s = &r->s[which];
  int64_t tl = 0, to = 0, packed = 0;
  rmaop__split_balanced(g->dims[g->to_axis], P, me, &tl, &to);
  const range mine = which == 0 ? block_range(g, g->from_axis, fo[me], fl[me]) : block_range(g, g->to_axis, to, tl);
  s->direct = 1;
  for (int q = 0; q < P; ++q) {
    int64_t ql = 0, qo = 0;
    rmaop__split_balanced(g->dims[g->to_axis], P, q, &ql, &qo);
    const range other = which == 0 ? block_range(g, g->to_axis, qo, ql) : block_range(g, g->from_axis, fo[q], fl[q]);
    range x;
    for (int d = 0; d < g->ndim; ++d) {
      x.lo[d] = mine.lo[d] > other.lo[d] ? mine.lo[d] : other.lo[d];
      x.hi[d] = mine.hi[d] < other.hi[d] ? mine.hi[d] : other.hi[d];
      if (x.hi[d] < x.lo[d])
        x.hi[d] = x.lo[d];
    }
    make_box(g, &mine, &x, packed, &s->box[q]);
    packed += s->box[q].n;
    s->direct &= contiguous(&s->box[q]);
    if (s->box[q].n > s->max_n)
      s->max_n = s->box[q].n;
  }
  r->n[which] = packed; /* the boxes partition the block */
}

/* ---- copies ---- */

/* One box between the array and the packed buffer on the host: rows of the innermost dimension. */
static void host_box_copy(size_t es, const rmaop__box *b, char *array, char *packed, int to_packed) {
  if (b->n == 0)
    return;
  const int nd = b->nd;
  const int64_t inner = b->shape[nd - 1], istride = b->stride[nd - 1], rows = b->n / inner;
  int64_t idx[RMAOP__BOX_MAX_DIMS] = {0};
  char *p = packed + (size_t)b->packed_off * es;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = b->array_off;
    for (int d = 0; d < nd - 1; ++d)
      off += idx[d] * b->stride[d];
    char *a = array + (size_t)off * es;
    if (istride == 1) {
      memcpy(to_packed ? p : a, to_packed ? a : p, (size_t)inner * es);
    } else {
      for (int64_t k = 0; k < inner; ++k)
        memcpy(to_packed ? p + (size_t)k * es : a + (size_t)(k * istride) * es,
               to_packed ? a + (size_t)(k * istride) * es : p + (size_t)k * es, es);
    }
    p += (size_t)inner * es;
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < b->shape[d])
        break;
      idx[d] = 0;
    }
  }
}

static rmaop_status box_copy(rmaop__redist *r, const redist_side *s, void *array, int to_packed) {
  if (RMAOP__ON_DEVICE(r->ctx))
    return rmaop__dev_box_copy(r->ctx, r->es, r->ctx->size, s->dev_box, s->max_n, array, s->buf, to_packed);
  for (int q = 0; q < r->ctx->size; ++q)
    host_box_copy(r->es, &s->box[q], array, s->buf, to_packed);
  return RMAOP_OK;
}

/* ---- creation ---- */

static void redist_free(rmaop__redist *r) {
  if (!r)
    return;
  rmaop_plan_destroy(&r->plan[0]);
  rmaop_plan_destroy(&r->plan[1]);
  for (int i = 0; i < 2; ++i) {
    rmaop__mem_free(r->ctx, &r->s[i].buf);
    rmaop__dev_free(r->s[i].dev_box);
    free(r->s[i].box);
  }
  free(r);
}

void rmaop__redist_destroy(rmaop__redist **pr) {
  if (!pr || !*pr)
    return;
  redist_free(*pr);
  *pr = NULL;
}

/* The exchange from side 0 to side 1 (and back): block q of side 0 goes to rank q, block p of side 1 comes from p. */
static rmaop_status make_plans(rmaop__redist *r, const char *label) {
  rmaop_ctx ctx = r->ctx;
  const int P = ctx->size;
  int64_t *a = NULL; /* [3P]: counts, send offsets, receive offsets */
  RMAOP_CHECK(
      rmaop__agree(ctx, rmaop__calloc(ctx, 3 * (size_t)P, sizeof *a, "redistribution counts", (void **)&a), r->label));
  for (int q = 0; q < P; ++q) {
    const rmaop__box *sb = &r->s[0].box[q], *rb = &r->s[1].box[q];
    a[q] = sb->n;
    a[P + q] = r->s[0].direct ? sb->array_off : sb->packed_off;
    a[2 * P + q] = r->s[1].direct ? rb->array_off : rb->packed_off;
  }
  const rmaop_alltoall_spec spec = {.dtype = r->dtype,
                                    .src_len = r->n[0],
                                    .dst_len = r->n[1],
                                    .send_counts = a,
                                    .send_offsets = a + P,
                                    .recv_offsets = a + 2 * P,
                                    .label = label};
  rmaop_status st = rmaop_plan_create_alltoall(ctx, &spec, &r->plan[0]);
  free(a);
  RMAOP_CHECK(st);
  RMAOP_CHECK(rmaop_plan_reverse(r->plan[0], NULL, &r->plan[1]));
  /* What arrives must be exactly my boxes of side 1: the two sides' arithmetic agrees across ranks. */
  rmaop_plan_info info;
  st = rmaop_plan_get_info(r->plan[0], &info);
  if (st == RMAOP_OK && info.recv_count + info.self_count != r->n[1])
    st = RMAOP_ERROR(ctx, RMAOP_ERR_INTERNAL, "%s: %lld elements arrive here, the block holds %lld", r->label,
                     (long long)(info.recv_count + info.self_count), (long long)r->n[1]);
  return rmaop__agree(ctx, st, r->label);
}

/* The packed buffers and, on a device context, the boxes' descriptors in device memory. */
static rmaop_status make_buffers(rmaop__redist *r) {
  rmaop_ctx ctx = r->ctx;
  for (int i = 0; i < 2; ++i) {
    redist_side *s = &r->s[i];
    if (s->direct)
      continue;
    RMAOP_CHECK(rmaop__mem_calloc_node(ctx, (size_t)r->n[i] + 1, r->es, "redistribution packing buffer", &s->buf));
    if (!RMAOP__ON_DEVICE(ctx))
      continue;
    const size_t bytes = (size_t)ctx->size * sizeof(rmaop__box);
    RMAOP_CHECK(rmaop__dev_malloc(ctx, bytes, "redistribution box descriptors", (void **)&s->dev_box));
    RMAOP_CHECK(rmaop__dev_copy(ctx, s->dev_box, s->box, bytes));
  }
  return RMAOP__ON_DEVICE(ctx) ? rmaop__dev_sync(ctx) : RMAOP_OK;
}

static rmaop_status make(rmaop__redist *r, const geom *g, int64_t from_local, const char *label) {
  rmaop_ctx ctx = r->ctx;
  const int P = ctx->size;
  int64_t *fl = NULL;
  rmaop_status st = rmaop__calloc(ctx, 2 * (size_t)P, sizeof *fl, "redistribution splits", (void **)&fl);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)P, sizeof(rmaop__box), "redistribution boxes", (void **)&r->s[0].box);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)P, sizeof(rmaop__box), "redistribution boxes", (void **)&r->s[1].box);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, r->label), st, out);
  int64_t *fo = fl + P;
  RMAOP_CHECK_GOTO(from_split(ctx, r->label, g, from_local, fl, fo), st, out);
  make_side(r, g, fl, fo, 0);
  make_side(r, g, fl, fo, 1);
  /* The same answer on every rank: from the agreed geometry and the gathered split. */
  r->copy = g->from_axis == g->to_axis;
  for (int p = 0; p < P && r->copy; ++p) {
    int64_t c = 0, o = 0;
    rmaop__split_balanced(g->dims[g->to_axis], P, p, &c, &o);
    r->copy = fl[p] == c;
  }
  if (r->copy)
    goto out;
  RMAOP_CHECK_GOTO(make_plans(r, label), st, out);
  st = rmaop__agree(ctx, make_buffers(r), r->label);
out:
  free(fl);
  return st;
}

rmaop_status rmaop__redist_create(rmaop_ctx ctx, rmaop_dtype dtype, int ndim, const int64_t dims[], int from_axis,
                                  int64_t from_local, int to_axis, const char *label, rmaop__redist **out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "redistribution: ctx is NULL");
  RMAOP_REQUIRE_USABLE(ctx, "redistribution");
  char who[96];
  snprintf(who, sizeof who, "redistribution \"%s\"", label ? label : "redistribute");
  const geom g = {.ndim = ndim, .from_axis = from_axis, .to_axis = to_axis, .dims = dims};
  rmaop_status st = out ? check_args(ctx, who, dtype, &g, from_local)
                        : RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: the output is NULL", who);
  RMAOP_CHECK(rmaop__agree(ctx, st, who));
  RMAOP_CHECK(same_geom(ctx, who, dtype, &g));
  rmaop__redist *r = NULL;
  st = rmaop__calloc(ctx, 1, sizeof *r, "redistribution", (void **)&r);
  if (st == RMAOP_OK) {
    r->ctx = ctx, r->dtype = dtype, r->es = rmaop_dtype_size(dtype);
    snprintf(r->label, sizeof r->label, "%s", who);
  }
  st = rmaop__agree(ctx, st, who);
  if (st == RMAOP_OK)
    st = make(r, &g, from_local, label ? label : "redistribute");
  if (st != RMAOP_OK) {
    redist_free(r); /* collective: its plans exist on every rank or on none */
    return st;
  }
  *out = r;
  return RMAOP_OK;
}

/* ---- execution ---- */

rmaop_status rmaop__redist_begin(rmaop__redist *r, int reverse, const void *src, void *dst) {
  RMAOP_REQUIRE(NULL, r != NULL, RMAOP_ERR_ARG, "redistribution: NULL handle");
  rmaop_ctx ctx = r->ctx;
  RMAOP_REQUIRE(ctx, !r->active, RMAOP_ERR_ARG, "%s: already begun (call its end)", r->label);
  reverse = reverse != 0;
  const int64_t nin = r->n[reverse], nout = r->n[!reverse];
  RMAOP_REQUIRE(ctx, (src != NULL || nin == 0) && (dst != NULL || nout == 0), RMAOP_ERR_ARG,
                "%s: %s is NULL with %lld elements here", r->label, src ? "dst" : "src", (long long)(src ? nout : nin));
  RMAOP_REQUIRE(ctx, src != dst || nin == 0, RMAOP_ERR_ARG, "%s: src and dst are the same buffer", r->label);
  if (r->copy) {
    if (nin > 0)
      RMAOP_CHECK(rmaop__mem_copy(ctx, dst, src, (size_t)nin * r->es));
  } else {
    const redist_side *in = &r->s[reverse], *out = &r->s[!reverse];
    if (!in->direct)
      RMAOP_CHECK(box_copy(r, in, (void *)src, 1));
    RMAOP_CHECK(
        rmaop_plan_begin(r->plan[reverse], in->direct ? src : in->buf, out->direct ? dst : out->buf, RMAOP_INSERT));
  }
  r->active = 1;
  r->reverse = reverse;
  r->cur_dst = dst;
  return RMAOP_OK;
}

rmaop_status rmaop__redist_end(rmaop__redist *r) {
  RMAOP_REQUIRE(NULL, r != NULL, RMAOP_ERR_ARG, "redistribution: NULL handle");
  RMAOP_REQUIRE(r->ctx, r->active, RMAOP_ERR_ARG, "%s: end without a begin", r->label);
  r->active = 0;
  if (r->copy)
    return RMAOP_OK;
  const redist_side *out = &r->s[!r->reverse];
  RMAOP_CHECK(rmaop_plan_end(r->plan[r->reverse]));
  return out->direct ? RMAOP_OK : box_copy(r, out, r->cur_dst, 0);
}
