/* The N-D halo operator on a cartesian process grid (PyLops-MPI MPIHalo, with an exact adjoint).
 *
 * Grid: rank <-> coordinates row-major, as MPI_Cart_create(reorder = 0) / MPI_Cart_rank; not periodic.
 * Blocks: along an axis of n cells over p ranks, coordinate c holds n/p + (c < n mod p) cells (MPI's and
 * PyLops-MPI local_split's usual balanced split; MPIHalo itself uses ceil(n/p) blocks, which can leave the
 * last ranks empty).
 *
 * The exchange is ONE plan from the model block (src) to the extended block (dst): every rank sends to
 * every other rank the part of its block that falls inside that rank's extended block. Intersecting boxes
 * instead of swapping faces axis by axis brings edges and corners (diagonal neighbours) in the same single
 * epoch. A strided N-D region is sent as one contiguous transfer per row of the last axis; rows that are
 * contiguous on both sides are merged (a split along axis 0 only sends one transfer per neighbour and side).
 * The interior (the rank's own block) is not in the plan: it is a local strided copy, so a device plan needs
 * no per-row launches for it.
 *
 * Adjoint: the exact transpose (MPIHalo's adjoint only crops the interior): x = interior of y, then the plan
 * reversed in ADD mode adds every ghost cell at its owner. Ghost cells outside the global array are
 * dropped (forward writes zeros there). */
#include "core/error.h"
#include "core/vec.h"
#include "core/ctx.h"
#include "core/plan.h"
#include "op_impl.h"

#include <stdio.h>

#include "device/halo_dev.h"

#define HMAX RMAOP_HALO_MAX_DIMS

typedef struct {
  rmaop_halo_info info;
  int64_t N[HMAX], lo[HMAX], hi[HMAX];
  rmaop_dtype dtype;
  /* Where the extended block reaches outside the global array (ghosts the forward writes as zeros): the
   * plan and the interior copy write every other cell, so only these boxes are zeroed. */
  int nzero;
  rmaop__halo_box zero[2 * HMAX];
  rmaop_plan fwd, rev;
  rmaop__hxch *kx, *kx_dev; /* the exchange by kernel puts (NULL: the plans): the host copy, the kernels' */
  rmaop_win kx_win;
  void *out; /* the running application's output (kernel puts) */
  rmaop_ctx ctx;
} halo;

/* Row-major coordinates of `rank` (MPI_Cart_coords of a reorder = 0 communicator). */
static void rank_coords(int rank, int ndim, const int *procs, int *coords) {
  for (int d = ndim - 1; d >= 0; --d) {
    coords[d] = rank % procs[d];
    rank /= procs[d];
  }
}

/* ---- argument checks ---- */

static rmaop_status check_grid(rmaop_ctx ctx, const rmaop_halo_spec *s, int procs[HMAX]) {
  const char *fn = "rmaop_op_create_halo";
  RMAOP_REQUIRE(ctx, s->ndim >= 1 && s->ndim <= HMAX, RMAOP_ERR_ARG, "%s: ndim = %d is outside [1, %d]", fn, s->ndim,
                HMAX);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(s->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)s->dtype);
  int64_t fixed = 1, total = 1;
  int nfree = 0;
  for (int d = 0; d < s->ndim; ++d) {
    RMAOP_REQUIRE(ctx, s->dims[d] >= 1, RMAOP_ERR_ARG, "%s: dims[%d] = %lld must be positive", fn, d,
                  (long long)s->dims[d]);
    RMAOP_REQUIRE(ctx, !__builtin_mul_overflow(total, s->dims[d], &total), RMAOP_ERR_ARG,
                  "%s: the array's size overflows int64", fn);
    RMAOP_REQUIRE(ctx, s->procs[d] >= 0, RMAOP_ERR_ARG, "%s: procs[%d] = %d is negative", fn, d, s->procs[d]);
    if (s->procs[d] == 0)
      nfree++;
    else if (fixed <= ctx->size)
      fixed *= s->procs[d]; /* past the size it can only mismatch: no overflow */
  }
  if (fixed > ctx->size || (nfree ? ctx->size % fixed != 0 : fixed != ctx->size)) {
    char list[64] = "";
    for (int d = 0, k = 0; d < s->ndim; ++d)
      k += snprintf(list + k, sizeof list - (size_t)k, "%s%d", d ? ", " : "", s->procs[d]);
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "%s: the process grid's product (procs = {%s}, 0 = free) cannot match the context's %d ranks",
                       fn, list, ctx->size);
  }
  for (int d = 0; d < s->ndim; ++d)
    procs[d] = s->procs[d];
  RMAOP_CHECK_MPI(ctx, MPI_Dims_create(ctx->size, s->ndim, procs));
  return RMAOP_OK;
}

/* Widths may reach the neighbour's block only (the smallest extent along the axis is n / p). */
static rmaop_status check_widths(rmaop_ctx ctx, const rmaop_halo_spec *s, const int procs[HMAX]) {
  for (int d = 0; d < s->ndim; ++d) {
    const int64_t smallest = s->dims[d] / procs[d];
    const int64_t w[2] = {s->lo[d], s->hi[d]};
    for (int side = 0; side < 2; ++side)
      RMAOP_REQUIRE(ctx, w[side] >= 0 && w[side] <= smallest, RMAOP_ERR_ARG,
                    "rmaop_op_create_halo: %s[%d] = %lld is outside [0, %lld], the smallest block extent along axis %d "
                    "(%lld cells over %d ranks)",
                    side ? "hi" : "lo", d, (long long)w[side], (long long)smallest, d, (long long)s->dims[d], procs[d]);
  }
  return RMAOP_OK;
}

/* ---- the exchange plan ---- */

/* Row-major strides of a box of extents `ext`. */
static void strides(int ndim, const int64_t *ext, int64_t *st) {
  st[ndim - 1] = 1;
  for (int d = ndim - 2; d >= 0; --d)
    st[d] = st[d + 1] * ext[d + 1];
}

/* The part of my block inside rank q's extended block (clipped to the array), one transfer per row. */
static rmaop_status sends_to(const halo *h, int q, rmaop__tlist *l) {
  const int nd = h->info.ndim;
  int qc[HMAX];
  int64_t a[HMAX], b[HMAX], qbase[HMAX], qext[HMAX], qst[HMAX], myst[HMAX];
  rank_coords(q, nd, h->info.procs, qc);
  for (int d = 0; d < nd; ++d) {
    int64_t len, off;
    rmaop__split(h->N[d], h->info.procs[d], qc[d], &off, &len);
    qbase[d] = off - h->lo[d], qext[d] = len + h->lo[d] + h->hi[d];
    const int64_t mine_lo = h->info.offset[d], mine_hi = mine_lo + h->info.local[d];
    a[d] = qbase[d] > mine_lo ? qbase[d] : mine_lo;
    b[d] = qbase[d] + qext[d] < mine_hi ? qbase[d] + qext[d] : mine_hi;
    if (a[d] >= b[d])
      return RMAOP_OK;
  }
  strides(nd, qext, qst);
  strides(nd, h->info.local, myst);
  int64_t i[HMAX];
  memcpy(i, a, sizeof i);
  for (;;) { /* odometer over the rows (axes 0 .. nd-2) */
    rmaop_transfer t = {q, 0, 0, b[nd - 1] - a[nd - 1]};
    for (int d = 0; d < nd; ++d) {
      t.src_offset += (i[d] - h->info.offset[d]) * myst[d];
      t.dst_offset += (i[d] - qbase[d]) * qst[d];
    }
    RMAOP_CHECK(rmaop__tlist_push(h->ctx, l, t, "halo"));
    int d = nd - 2;
    while (d >= 0 && ++i[d] == b[d])
      i[d] = a[d], --d;
    if (d < 0)
      return RMAOP_OK;
  }
}

static rmaop_status build_plan(halo *h, const char *label) {
  rmaop_ctx ctx = h->ctx;
  rmaop__tlist l = {0};
  rmaop_status st = RMAOP_OK;
  for (int q = 0; q < ctx->size && st == RMAOP_OK; ++q)
    if (q != ctx->rank)
      st = sends_to(h, q, &l);
  st = rmaop__agree(ctx, st, "halo transfers");
  if (st == RMAOP_OK) {
    int64_t src_len = 1, dst_len = 1;
    for (int d = 0; d < h->info.ndim; ++d)
      src_len *= h->info.local[d], dst_len *= h->info.extended[d];
    const rmaop_plan_spec spec = {.dtype = h->dtype,
                                  .src_len = src_len,
                                  .dst_len = dst_len,
                                  .nsends = l.n,
                                  .sends = l.t,
                                  .nrecvs = -1,
                                  .label = label};
    st = rmaop_plan_create(ctx, &spec, &h->fwd);
  }
  free(l.t);
  RMAOP_CHECK(st);
  char rev[128];
  snprintf(rev, sizeof rev, "%s^H", label);
  return rmaop_plan_reverse(h->fwd, rev, &h->rev);
}

/* ---- the exchange by kernel puts (rmaop__hxch, src/device/halo_dev.h) ---- */

/* Rank p's block along every axis (global offsets and extents). */
static void block_of(const halo *h, int p, int64_t *off, int64_t *len) {
  int c[HMAX];
  rank_coords(p, h->info.ndim, h->info.procs, c);
  for (int d = 0; d < h->info.ndim; ++d)
    rmaop__split(h->N[d], h->info.procs[d], c[d], &off[d], &len[d]);
}

/* Rank p's block inside rank q's extended block: its first cell (global) and extents; the cell count (0: none). */
static int64_t meet(const halo *h, int p, int q, int64_t *at, int64_t *n) {
  int64_t po[HMAX], pl[HMAX], qo[HMAX], ql[HMAX], c = 1;
  block_of(h, p, po, pl);
  block_of(h, q, qo, ql);
  for (int d = 0; d < h->info.ndim; ++d) {
    const int64_t a = po[d] > qo[d] - h->lo[d] ? po[d] : qo[d] - h->lo[d];
    const int64_t b = po[d] + pl[d] < qo[d] + ql[d] + h->hi[d] ? po[d] + pl[d] : qo[d] + ql[d] + h->hi[d];
    at[d] = a, n[d] = b > a ? b - a : 0;
    c *= n[d];
  }
  return c;
}

/* Where rank p's box from `from` begins in p's area (elements): the boxes of the origins before it. fwd: p's forward
 * area holds the blocks of the others inside its extended block; else p's adjoint area holds its block inside the
 * others' extended blocks. */
static int64_t area_at(const halo *h, int p, int from, int fwd) {
  int64_t at[HMAX], n[HMAX], o = 0;
  for (int q = 0; q < from; ++q)
    if (q != p)
      o += fwd ? meet(h, q, p, at, n) : meet(h, p, q, at, n);
  return o;
}

/* A box of the exchange: peer, extents n, first cell `at` (global) made local to `base`, element offset off. */
static rmaop__hx_box hx_box(int nd, int peer, const int64_t *n, const int64_t *at, const int64_t *base, int64_t off) {
  rmaop__hx_box b = {.peer = peer, .off = off};
  for (int d = 0; d < nd; ++d)
    b.n[d] = n[d], b.at[d] = at[d] - base[d];
  return b;
}

static int64_t box_cells(const rmaop__hx_box *b, int nd) {
  int64_t c = 1;
  for (int d = 0; d < nd; ++d)
    c *= b->n[d];
  return c;
}

/* Blocks of RMAOP__HX_THREADS for `cells`: at least 1, at most `most`. */
static unsigned blocks_for(int64_t cells, unsigned most) {
  const int64_t b = (cells + RMAOP__HX_THREADS - 1) / RMAOP__HX_THREADS;
  return b < 1 ? 1u : b > most ? most : (unsigned)b;
}

/* The put boxes' blocks laid end to end; their number (1 with none: the block that signals). */
static unsigned lay_blocks(rmaop__hx_box *list, int n, int nd) {
  unsigned b = 0;
  for (int k = 0; k < n; ++k) {
    list[k].b0 = b, list[k].nb = blocks_for(box_cells(&list[k], nd), RMAOP__HX_BOX_BLOCKS);
    b += list[k].nb;
  }
  return b ? b : 1;
}

/* The descriptor (every rank's boxes from the split, each rank's areas laid out alike), the window, the device copy.
 * Collective. */
static rmaop_status build_kx(halo *h) {
  rmaop_ctx ctx = h->ctx;
  const int P = ctx->size, me = ctx->rank, nd = h->info.ndim;
  rmaop__hxch *x = NULL;
  rmaop_status st = rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *x, "halo exchange", (void **)&x), "halo exchange");
  if (st != RMAOP_OK)
    return st;
  h->kx = x;
  x->ndim = nd;
  int64_t ebase[HMAX], at[HMAX], n[HMAX], fwd_most = 0, adj_most = 0;
  for (int d = 0; d < nd; ++d) {
    x->loc[d] = h->info.local[d], x->ext[d] = h->info.extended[d], x->lo[d] = h->lo[d];
    ebase[d] = h->info.offset[d] - h->lo[d];
    x->inner.n[d] = x->loc[d], x->inner.at[d] = x->lo[d];
  }
  strides(nd, x->loc, x->lst);
  strides(nd, x->ext, x->est);
  x->nloc = 1;
  for (int d = 0; d < nd; ++d)
    x->nloc *= x->loc[d];
  for (int k = 0; k < h->nzero; ++k) {
    int64_t c = 1;
    for (int d = 0; d < nd; ++d)
      c *= h->zero[k].n[d];
    x->zero[k] = h->zero[k], x->zfirst[k + 1] = x->zfirst[k] + c;
  }
  x->nzero = h->nzero, x->nzcells = x->zfirst[h->nzero];
  for (int p = 0; p < P; ++p) { /* the largest areas, so that every rank's halves are laid out alike */
    const int64_t f = area_at(h, p, P, 1), a = area_at(h, p, P, 0);
    fwd_most = f > fwd_most ? f : fwd_most, adj_most = a > adj_most ? a : adj_most;
  }
  int nb[RMAOP_DEVICE_MAX_PEERS] = {0};
  for (int q = 0; q < P; ++q) {
    if (q == me)
      continue;
    int64_t c = meet(h, me, q, at, n);
    if (c > 0) { /* my block in q's extended block: q's ghosts, and q's adjoint contribution */
      x->fwd[x->nfwd] = hx_box(nd, q, n, at, h->info.offset, area_at(h, q, me, 1));
      x->arecv[x->nfwd] = hx_box(nd, q, n, at, h->info.offset, area_at(h, me, q, 0));
      x->arecv[x->nfwd].first = x->nacells;
      x->nacells += c;
      x->nfwd++, nb[q] = 1;
    }
    c = meet(h, q, me, at, n);
    if (c > 0) { /* q's block in my extended block: my ghosts from q */
      x->frecv[x->nfrecv] = hx_box(nd, q, n, at, ebase, area_at(h, me, q, 1));
      x->frecv[x->nfrecv].first = x->nfcells;
      x->adj[x->nfrecv] = hx_box(nd, q, n, at, ebase, area_at(h, q, me, 0));
      x->nfcells += c;
      x->nfrecv++, nb[q] = 1;
    }
  }
  for (int p = 0; p < P; ++p)
    if (nb[p])
      x->x.nb[x->x.nnb++] = p;
  x->fwd_blocks = lay_blocks(x->fwd, x->nfwd, nd), x->adj_blocks = lay_blocks(x->adj, x->nfrecv, nd);
  x->fwd_local = blocks_for(x->nloc + x->nzcells, RMAOP__HX_LOCAL_BLOCKS);
  x->adj_local = blocks_for(x->nloc, RMAOP__HX_LOCAL_BLOCKS);
  const int64_t most = x->nloc + x->nzcells > x->nfcells ? x->nloc + x->nzcells : x->nfcells;
  x->small = most < ((int64_t)1 << 32) && x->nacells < ((int64_t)1 << 32);
  const size_t es = rmaop_dtype_size(h->dtype);
  x->adj_at = rmaop__kx_round((size_t)fwd_most * es);
  x->x.half = x->adj_at + rmaop__kx_round((size_t)adj_most * es);
  if (x->x.half == 0)
    x->x.half = 128; /* no ghost cells anywhere: a window all the same */
  return rmaop__kx_build(ctx, st, &x->x, x, sizeof *x, &h->kx_win, (void **)&h->kx_dev, "halo exchange");
}

/* ---- the interior: my block <-> the middle of the extended block ---- */

/* to_ext: ext[interior] = blk; else blk = ext[interior]. A strided copy, row by row on the host. */
static rmaop_status interior_copy(const halo *h, void *blk, void *ext, int to_ext) {
  const int nd = h->info.ndim;
  int64_t total = 1;
  for (int d = 0; d < nd; ++d)
    total *= h->info.local[d];
  if (total == 0)
    return RMAOP_OK;
  if (RMAOP__ON_DEVICE(h->ctx))
    return rmaop__dev_halo_interior(h->ctx, h->dtype, nd, h->info.local, h->info.extended, h->lo, blk, ext, to_ext);
  const size_t es = rmaop_dtype_size(h->dtype);
  int64_t est[HMAX], i[HMAX] = {0};
  strides(nd, h->info.extended, est);
  const int64_t w = h->info.local[nd - 1];
  for (int64_t row = 0; row < total / w; ++row) {
    int64_t eo = h->lo[nd - 1];
    for (int d = 0; d < nd - 1; ++d)
      eo += (i[d] + h->lo[d]) * est[d];
    char *b = (char *)blk + (size_t)(row * w) * es, *e = (char *)ext + (size_t)eo * es;
    memcpy(to_ext ? e : b, to_ext ? b : e, (size_t)w * es);
    for (int d = nd - 2; d >= 0 && ++i[d] == h->info.local[d]; --d)
      i[d] = 0;
  }
  return RMAOP_OK;
}

/* ---- the ghosts outside the global array ---- */

/* The extended block less the box of its cells inside the array, as up to two boxes per axis d: the
 * slabs below and above the inside along d, inside along the axes before d, whole along those after. */
static void outside_boxes(halo *h) {
  const int nd = h->info.ndim;
  int64_t in_lo[HMAX], in_hi[HMAX]; /* the inside, in extended coordinates */
  for (int d = 0; d < nd; ++d) {
    if (h->info.extended[d] == 0)
      return; /* no cells at all */
    const int64_t base = h->info.offset[d] - h->lo[d]; /* global index of extended cell 0 */
    in_lo[d] = base < 0 ? -base : 0;
    in_hi[d] = base + h->info.extended[d] > h->N[d] ? h->N[d] - base : h->info.extended[d];
  }
  for (int d = 0; d < nd; ++d)
    for (int side = 0; side < 2; ++side) {
      rmaop__halo_box b = {{0}, {0}};
      for (int e = 0; e < nd; ++e) {
        b.at[e] = e < d ? in_lo[e] : 0;
        b.n[e] = e < d ? in_hi[e] - in_lo[e] : h->info.extended[e];
      }
      b.at[d] = side ? in_hi[d] : 0;
      b.n[d] = side ? h->info.extended[d] - in_hi[d] : in_lo[d];
      if (b.n[d] > 0)
        h->zero[h->nzero++] = b;
    }
}

/* ext = 0 on the boxes; host: one memset per run of cells contiguous in the extended block. */
static rmaop_status zero_outside(const halo *h, void *ext) {
  if (RMAOP__ON_DEVICE(h->ctx))
    return rmaop__dev_halo_zero(h->ctx, h->dtype, h->info.ndim, h->info.extended, h->nzero, h->zero, ext);
  const int nd = h->info.ndim;
  const size_t es = rmaop_dtype_size(h->dtype);
  int64_t est[HMAX];
  strides(nd, h->info.extended, est);
  for (int k = 0; k < h->nzero; ++k) {
    const rmaop__halo_box *b = &h->zero[k];
    int r = nd - 1; /* the axes after r are whole in the box: a run spans them */
    while (r > 0 && b->n[r] == h->info.extended[r])
      --r;
    const int64_t run = b->n[r] * est[r];
    int64_t rows = 1, i[HMAX] = {0};
    for (int d = 0; d < r; ++d)
      rows *= b->n[d];
    for (int64_t row = 0; row < rows; ++row) {
      int64_t eo = b->at[r] * est[r];
      for (int d = 0; d < r; ++d)
        eo += (b->at[d] + i[d]) * est[d];
      memset((char *)ext + (size_t)eo * es, 0, (size_t)run * es);
      for (int d = r - 1; d >= 0 && ++i[d] == b->n[d]; --d)
        i[d] = 0;
    }
  }
  return RMAOP_OK;
}

/* ---- operator callbacks ---- */

/* The zeros and the interior are written before the plan begins: the rma backend may put into y's window as
 * soon as the epoch opens, and local stores into an exposed window are safest outside it. */
static rmaop_status halo_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  halo *h = A->impl;
  if (h->kx) {
    h->out = y->data;
    return rmaop__dev_hx_forward_begin(h->ctx, h->dtype, h->kx_dev, h->kx, x->data, y->data);
  }
  if (h->nzero)
    RMAOP_CHECK(zero_outside(h, y->data));
  RMAOP_CHECK(interior_copy(h, x->data, y->data, 1));
  return rmaop_plan_begin(h->fwd, x->data, y->data, RMAOP_INSERT);
}
static rmaop_status halo_apply_end(rmaop_op A) {
  halo *h = A->impl;
  if (h->kx)
    return rmaop__dev_hx_forward_end(h->ctx, h->dtype, h->kx_dev, h->kx, h->out);
  return rmaop_plan_end(h->fwd);
}

/* ADD-mode plans write x only inside plan_end, so the interior copy overlaps the exchange. */
static rmaop_status halo_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  halo *h = A->impl;
  if (h->kx) {
    h->out = x->data;
    return rmaop__dev_hx_adjoint_begin(h->ctx, h->dtype, h->kx_dev, h->kx, y->data, x->data);
  }
  RMAOP_CHECK(rmaop_plan_begin(h->rev, y->data, x->data, RMAOP_ADD));
  return interior_copy(h, x->data, y->data, 0);
}
static rmaop_status halo_adjoint_end(rmaop_op A) {
  halo *h = A->impl;
  if (h->kx)
    return rmaop__dev_hx_adjoint_end(h->ctx, h->dtype, h->kx_dev, h->kx, h->out);
  return rmaop_plan_end(h->rev);
}

static void halo_free(halo *h) {
  if (!h)
    return;
  rmaop_plan_destroy(&h->fwd);
  rmaop_plan_destroy(&h->rev);
  rmaop__kx_free(&h->kx_win, (void **)&h->kx_dev);
  free(h->kx);
  free(h);
}
static void halo_destroy(rmaop_op A) {
  halo_free(A->impl);
}

static const rmaop__op_ops halo_ops = {halo_apply_begin, halo_apply_end, halo_adjoint_begin, halo_adjoint_end,
                                       halo_destroy};

/* ---- constructor and query ---- */

/* This rank's block and its extension, from the grid. */
static void place_block(halo *h, const rmaop_halo_spec *s, const int procs[HMAX]) {
  rmaop_halo_info *in = &h->info;
  in->ndim = s->ndim;
  memcpy(in->procs, procs, sizeof in->procs);
  rank_coords(h->ctx->rank, s->ndim, procs, in->coords);
  for (int d = 0; d < s->ndim; ++d) {
    h->N[d] = s->dims[d], h->lo[d] = s->lo[d], h->hi[d] = s->hi[d];
    rmaop__split(s->dims[d], procs[d], in->coords[d], &in->offset[d], &in->local[d]);
    in->extended[d] = in->local[d] + s->lo[d] + s->hi[d];
  }
  outside_boxes(h);
}

static rmaop_status create_layouts(halo *h, rmaop_layout *model, rmaop_layout *data) {
  int64_t n = 1, e = 1;
  for (int d = 0; d < h->info.ndim; ++d)
    n *= h->info.local[d], e *= h->info.extended[d];
  RMAOP_CHECK(rmaop_layout_create_local(h->ctx, n, model));
  rmaop_status st = rmaop_layout_create_local(h->ctx, e, data);
  if (st != RMAOP_OK)
    rmaop_layout_destroy(model);
  return st;
}

/* Collective (after the local checks passed everywhere). */
static rmaop_status same_spec(rmaop_ctx ctx, const rmaop_halo_spec *s, const int procs[HMAX]) {
  static const char *const names[] = {"ndim",     "dtype",    "dims[0]",  "dims[1]",  "dims[2]", "dims[3]", "procs[0]",
                                      "procs[1]", "procs[2]", "procs[3]", "lo[0]",    "lo[1]",   "lo[2]",   "lo[3]",
                                      "hi[0]",    "hi[1]",    "hi[2]",    "hi[3]"};
  int64_t v[2 + 4 * HMAX] = {s->ndim, s->dtype};
  for (int d = 0; d < s->ndim; ++d)
    v[2 + d] = s->dims[d], v[2 + HMAX + d] = procs[d], v[2 + 2 * HMAX + d] = s->lo[d], v[2 + 3 * HMAX + d] = s->hi[d];
  return rmaop__same_everywhere(ctx, v, 2 + 4 * HMAX, names, "rmaop_op_create_halo");
}

rmaop_status rmaop_op_create_halo(rmaop_ctx ctx, const rmaop_halo_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_halo";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  int procs[HMAX] = {0};
  rmaop_status st = RMAOP_OK;
  if (spec == NULL || A == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s is NULL", fn, spec ? "A (output)" : "spec");
  if (st == RMAOP_OK)
    st = check_grid(ctx, spec, procs);
  if (st == RMAOP_OK)
    st = check_widths(ctx, spec, procs);
  halo *h = NULL;
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 1, sizeof *h, "halo", (void **)&h);
  st = rmaop__agree(ctx, st, fn);
  /* Each rank computes its peers' blocks from its own arguments: they must be everyone's. */
  if (st == RMAOP_OK) st = same_spec(ctx, spec, procs);
  if (st != RMAOP_OK) {
    free(h);
    return st;
  }
  h->ctx = ctx, h->dtype = spec->dtype;
  place_block(h, spec, procs);
  rmaop_layout model = NULL, data = NULL;
  st = rmaop__kx_wanted(ctx) ? build_kx(h) : build_plan(h, spec->label ? spec->label : "halo");
  if (st == RMAOP_OK)
    st = create_layouts(h, &model, &data);
  st = rmaop__op_new_agreed(st, ctx, "halo", spec->dtype, model, data, &halo_ops, h, A);
  if (st != RMAOP_OK)
    halo_free(h);
  rmaop_layout_destroy(&model); /* the operator holds its own references */
  rmaop_layout_destroy(&data);
  return st;
}

rmaop_status rmaop_op_halo_get_info(rmaop_op A, rmaop_halo_info *info) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_halo_get_info: operator is NULL");
  RMAOP_REQUIRE(A->ctx, A->ops == &halo_ops, RMAOP_ERR_ARG, "rmaop_op_halo_get_info: \"%s\" is not a halo operator",
                A->name);
  RMAOP_REQUIRE(A->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_op_halo_get_info: info (output) is NULL");
  *info = ((const halo *)A->impl)->info;
  return RMAOP_OK;
}
