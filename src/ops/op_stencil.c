/* Derivative operators on N-D arrays distributed along axis 0 (PyLops FirstDerivative, SecondDerivative,
 * Laplacian). A derivative along axis 0 exchanges ghost rows with one plan; its adjoint is the exact
 * transpose: contributions to rows owned by neighbours go back with the same plan reversed, in ADD mode. On a device
 * context over ipc (RMAOP_HALO) the kernels put instead: the forward's ghost rows and the adjoint's contributions are
 * stored into the neighbours' window by kernels and signalled (rmaop__khalo, src/device/dev_ops.h), no plan.
 *
 * The local array is seen as [nouter][N-axis rows][ninner]. Row g (global along the axis) of the output is
 * sum_k c_k(g) x[g + k], k in [-2, 2]. Rows whose coefficients are the interior ones and whose neighbours
 * are local go through a flat, vectorizable loop; the few others (global edges, rank boundaries) through
 * a per-row loop that may read ghost rows. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/plan.h"
#include "core/dtype.h"
#include "op_impl.h"

#include <math.h>
#include <stdio.h>

#include "device/dev_ops.h"
#include "device/device.h"

#define NK RMAOP__NK /* k = -2 .. 2 -> index k + 2 */

typedef struct {
  int order;              /* 1 or 2 */
  rmaop_deriv_kind kind;
  int edge;
  double h;
  double scale;           /* every coefficient is multiplied by it (a Laplacian's weight) */
  int accumulate;         /* 1: add into the output (a later part of a fused sum); 0: overwrite it */
  rmaop_dtype dtype;
  int64_t N;              /* rows along the axis (global) */
  int64_t off, n;         /* this rank's rows along the axis (0, N when not distributed) */
  int64_t nouter, ninner;
  int distributed;
  int hl, hr;             /* ghost rows before / after (distributed) */
  double cint[NK];        /* interior coefficients */
  int64_t int_lo, int_hi; /* global rows using cint */
  int il, ir;             /* reach of the interior stencil */
  rmaop_plan halo, halo_rev;
  void *ghost;               /* (hl + hr) * ninner elements, in the context's memory (plans only) */
  rmaop__khalo *kh, *kh_dev; /* ghost rows put by kernels (NULL: the plans): the host copy, the kernels' */
  rmaop_win kh_win;
  rmaop_vec in, out;
  int64_t run_lo, run_hi; /* device: the rows the forward's begin computed (its end computes the others) */
  rmaop_ctx ctx;
  int dev;                /* device memory: the local work runs as kernels on the context's stream */
} stencil;

/* Coefficients of output row g (PyLops conventions; one definition for host and device, src/device/dev_ops.h). */
static void coef_row(const stencil *s, int64_t g, double c[NK]) {
  const rmaop__coef_spec p = {.order = s->order, .kind = s->kind, .edge = s->edge, .h = s->h, .scale = s->scale,
                              .N = s->N};
  rmaop__stencil_coef(&p, g, c);
}

/* Interior range, interior coefficients and reaches; halo widths cover the edge stencils too. */
static void stencil_shape(stencil *s) {
  static const int64_t lo1[] = {0, 1, 1, 2}, hi1[] = {1, 0, 1, 2}; /* rows excluded at each end, per kind */
  static const int64_t lo2[] = {0, 2, 1, 0}, hi2[] = {2, 0, 1, 0};
  int kind = (int)s->kind;
  if (s->order == 2 && kind == RMAOP_DERIV_CENTERED5) kind = RMAOP_DERIV_CENTERED3;
  s->int_lo = s->order == 1 ? lo1[kind] : lo2[kind];
  s->int_hi = s->N - (s->order == 1 ? hi1[kind] : hi2[kind]);
  coef_row(s, s->int_lo, s->cint);
  s->il = s->ir = 0;
  for (int k = -2; k <= 2; ++k)
    if (s->cint[k + 2] != 0.0) {
      if (-k > s->il) s->il = -k;
      if (k > s->ir) s->ir = k;
    }
  /* Reach of every row's stencil: the edge rows (within 2 of either end) and one interior row. */
  s->hl = s->hr = 0;
  const int64_t probe[] = {0, 1, 2, s->N - 3, s->N - 2, s->N - 1, s->int_lo};
  for (int p = 0; p < 7; ++p) {
    int64_t g = probe[p];
    if (g < 0 || g >= s->N) continue;
    double c[NK];
    coef_row(s, g, c);
    for (int k = -2; k <= 2; ++k)
      if (c[k + 2] != 0.0) {
        if (-k > s->hl) s->hl = -k;
        if (k > s->hr) s->hr = k;
      }
  }
}

/* Rank r's ghost transfers, in rows: every rank sends the rows its neighbours' stencils reach (rows of others within
 * hl before or hr after their range), by ascending target; ghost layout on the receiver: hl rows before, then hr rows
 * after. t[] has room for 2 (P - 1); returns the count. */
static int ghost_transfers(const stencil *s, int P, int r, const int64_t *rows, const int64_t *offs,
                           rmaop__kh_xfer *t) {
  int nt = 0;
  const int64_t lo = offs[r], hi = offs[r] + rows[r];
  for (int q = 0; q < P; ++q) {
    if (q == r || rows[q] == 0)
      continue;
    const int64_t want[2][2] = {{offs[q] - s->hl, offs[q]}, {offs[q] + rows[q], offs[q] + rows[q] + s->hr}};
    const int64_t base[2] = {offs[q] - s->hl, offs[q] + rows[q] - s->hl};
    for (int side = 0; side < 2; ++side) {
      int64_t a = want[side][0] > lo ? want[side][0] : lo, b = want[side][1] < hi ? want[side][1] : hi;
      if (a < 0) a = 0;
      if (b > s->N) b = s->N;
      if (a < b)
        t[nt++] = (rmaop__kh_xfer){.peer = q, .rows = (int)(b - a), .src = a - lo, .dst = a - base[side]};
    }
  }
  return nt;
}

/* The ghost plan and its reverse (the adjoint's, ADD). */
static rmaop_status build_halo(rmaop_ctx ctx, stencil *s, rmaop_dtype dtype, const int64_t *rows, const int64_t *offs,
                               const char *label) {
  rmaop_transfer *t = NULL;
  rmaop__kh_xfer *x = NULL;
  rmaop_status st = rmaop__calloc(ctx, 2 * (size_t)ctx->size + 1, sizeof *t, "halo transfers", (void **)&t);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 2 * (size_t)ctx->size + 1, sizeof *x, "halo transfers", (void **)&x);
  st = rmaop__agree(ctx, st, "derivative halo");
  if (st != RMAOP_OK) {
    free(t);
    return st;
  }
  const int nt = ghost_transfers(s, ctx->size, ctx->rank, rows, offs, x);
  const int64_t w = s->ninner;
  for (int i = 0; i < nt; ++i)
    t[i] = (rmaop_transfer){x[i].peer, x[i].src * w, x[i].dst * w, x[i].rows * w};
  free(x);
  rmaop_plan_spec spec = {.dtype = dtype, .src_len = s->n * w, .dst_len = (int64_t)(s->hl + s->hr) * w,
                          .nsends = nt, .sends = t, .nrecvs = -1, .label = label};
  st = rmaop_plan_create(ctx, &spec, &s->halo);
  free(t);
  RMAOP_CHECK(st);
  char rev[128];
  snprintf(rev, sizeof rev, "%s^H", label);
  return rmaop_plan_reverse(s->halo, rev, &s->halo_rev);
}

/* Whether the ghost rows go by kernel puts: a distributed stencil where rmaop__kx_wanted. */
static int kh_wanted(rmaop_ctx ctx, const stencil *s) {
  return s->distributed && s->dev && rmaop__kx_wanted(ctx);
}

/* The kernel-put exchange (rmaop__khalo): every rank's transfers (each rank lays out the others' from the split),
 * the window and its device handle, the descriptor in device memory. Collective. */
static rmaop_status build_kh(rmaop_ctx ctx, stencil *s, const int64_t *rows, const int64_t *offs) {
  const int P = ctx->size, me = ctx->rank;
  rmaop__khalo *h = NULL;
  rmaop__kh_xfer *all = NULL;
  int *cnt = NULL;
  rmaop_status st = rmaop__calloc(ctx, 1, sizeof *h, "derivative ghost exchange", (void **)&h);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)P * RMAOP__KH_MAX, sizeof *all, "ghost transfers", (void **)&all);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)P, sizeof *cnt, "ghost transfers", (void **)&cnt);
  st = rmaop__agree(ctx, st, "derivative ghost exchange");
  if (st == RMAOP_OK) {
    s->kh = h;
    int64_t most = 0; /* receive rows of the rank with the most */
    for (int r = 0; r < P; ++r) {
      cnt[r] = ghost_transfers(s, P, r, rows, offs, all + (size_t)r * RMAOP__KH_MAX);
      int64_t sum = 0;
      for (int i = 0; i < cnt[r]; ++i)
        sum += all[(size_t)r * RMAOP__KH_MAX + i].rows;
      if (sum > most)
        most = sum;
    }
    const size_t es = rmaop_dtype_size(s->dtype);
    h->n = s->n, h->ninner = s->ninner;
    h->recv_at = rmaop__kx_round((size_t)((s->hl + s->hr) * s->ninner) * es);
    h->x.half = h->recv_at + rmaop__kx_round((size_t)(most * s->ninner) * es);
    int nb[RMAOP_DEVICE_MAX_PEERS] = {0};
    const rmaop__kh_xfer *mine = all + (size_t)me * RMAOP__KH_MAX;
    int64_t slot = 0;
    h->add_head = 0, h->add_tail = s->n;
    for (int i = 0; i < cnt[me]; ++i) { /* forward puts, and where their adjoint contributions come back */
      const rmaop__kh_xfer t = mine[i];
      h->fwd[h->nfwd++] = t;
      h->recv[h->nrecv++] = (rmaop__kh_xfer){.peer = t.peer, .rows = t.rows, .src = slot, .dst = t.src};
      slot += t.rows;
      nb[t.peer] = 1;
      if (t.peer < me && t.src + t.rows > h->add_head)
        h->add_head = t.src + t.rows;
      if (t.peer > me && t.src < h->add_tail)
        h->add_tail = t.src;
    }
    if (h->add_head > h->add_tail)
      h->add_head = h->add_tail = s->n; /* few rows: all of them */
    for (int p = 0; p < P; ++p) {       /* who puts ghost rows here: the adjoint's targets, with their receive rows */
      if (p == me)
        continue;
      int64_t at = 0;
      for (int i = 0; i < cnt[p]; ++i) {
        const rmaop__kh_xfer t = all[(size_t)p * RMAOP__KH_MAX + i];
        if (t.peer == me) {
          h->adj[h->nadj++] = (rmaop__kh_xfer){.peer = p, .rows = t.rows, .src = t.dst, .dst = at};
          if (!nb[p])
            nb[p] = 2;
          if (h->nfrom == 0 || h->from[h->nfrom - 1] != p)
            h->from[h->nfrom++] = p;
        }
        at += t.rows;
      }
    }
    for (int p = 0; p < P; ++p)
      if (nb[p])
        h->x.nb[h->x.nnb++] = p;
  }
  if (s->kh)
    st = rmaop__kx_build(ctx, st, &h->x, h, sizeof *h, &s->kh_win, (void **)&s->kh_dev, "derivative ghost exchange");
  free(all);
  free(cnt);
  if (!s->kh)
    free(h);
  return st;
}

/* ---- kernels: T the element type, R its real type ---- */

/* The interior stencil as (offset, coefficient) pairs; the flat loop is specialized on their number so
 * the compiler vectorizes it. `sign` flips the offsets (the adjoint's gather form). */
typedef struct {
  int nk;
  int64_t o[NK];
  double c[NK];
} terms;

static terms interior_terms(const stencil *s, int sign) {
  terms t = {0};
  for (int k = -2; k <= 2; ++k)
    if (s->cint[k + 2] != 0.0) t.o[t.nk] = sign * k * s->ninner, t.c[t.nk++] = s->cint[k + 2];
  return t;
}

/* y[i] (=|+=) sum_t c_t x[i + o_t] for i in [0, len). Specialized on the number of terms and on the
 * mode, so every variant is a plain loop the compiler vectorizes. */
#define FLAT_LOOP(expr)                                        \
  do {                                                         \
    if (acc) for (int64_t i = 0; i < len; ++i) y[i] += (expr); \
    else for (int64_t i = 0; i < len; ++i) y[i] = (expr);      \
  } while (0)

static void flat_stencil(rmaop_dtype dtype, const terms *t, const void *xv, void *yv, int64_t len, int acc) {
  RMAOP__FOR_DTYPE(dtype, {
    const T *x = xv;
    T *y = yv;
    const R c0 = (R)t->c[0], c1 = (R)t->c[1], c2 = (R)t->c[2], c3 = (R)t->c[3], c4 = (R)t->c[4];
    const int64_t o0 = t->o[0], o1 = t->o[1], o2 = t->o[2], o3 = t->o[3], o4 = t->o[4];
    switch (t->nk) {
    case 0: FLAT_LOOP((T)0); break;
    case 1: FLAT_LOOP(c0 * x[i + o0]); break;
    case 2: FLAT_LOOP(c0 * x[i + o0] + c1 * x[i + o1]); break;
    case 3: FLAT_LOOP(c0 * x[i + o0] + c1 * x[i + o1] + c2 * x[i + o2]); break;
    case 4: FLAT_LOOP(c0 * x[i + o0] + c1 * x[i + o1] + c2 * x[i + o2] + c3 * x[i + o3]); break;
    default: FLAT_LOOP(c0 * x[i + o0] + c1 * x[i + o1] + c2 * x[i + o2] + c3 * x[i + o3] + c4 * x[i + o4]); break;
    }
  });
}
#undef FLAT_LOOP

/* dst[0..w) (=|+=) c * src[0..w). */
static void row_axpy(rmaop_dtype dtype, void *dv, double c, const void *sv, int64_t w, int accumulate) {
  RMAOP__FOR_DTYPE(dtype, {
    T *d = dv;
    const T *src = sv;
    const R cc = (R)c;
    if (accumulate) for (int64_t i = 0; i < w; ++i) d[i] += cc * src[i];
    else for (int64_t i = 0; i < w; ++i) d[i] = cc * src[i];
  });
}

/* Row g of the axis in block `base` (local rows) or in the ghost buffer. */
static char *row_ptr(const stencil *s, char *base, char *ghost, int64_t g, size_t es) {
  const int64_t w = s->ninner;
  if (g >= s->off && g < s->off + s->n) return base + (size_t)((g - s->off) * w) * es;
  if (g < s->off) return ghost + (size_t)((g - (s->off - s->hl)) * w) * es;
  return ghost + (size_t)((s->hl + g - (s->off + s->n)) * w) * es;
}

typedef struct {
  int64_t flo, fhi; /* rows through the flat loop (forward) */
} fast_range;

static fast_range fast_rows(const stencil *s) {
  int64_t lo = s->int_lo > s->off + s->il ? s->int_lo : s->off + s->il;
  int64_t hi = s->int_hi < s->off + s->n - s->ir ? s->int_hi : s->off + s->n - s->ir;
  if (lo >= hi) lo = hi = s->off;
  return (fast_range){lo, hi};
}

/* Forward rows [a, b) one by one, reading ghost rows when needed. */
static void forward_rows(const stencil *s, rmaop_dtype dtype, char *x, char *y, int64_t a, int64_t b) {
  const size_t es = rmaop_dtype_size(dtype);
  for (int64_t g = a; g < b; ++g) {
    double c[NK];
    coef_row(s, g, c);
    char *yr = row_ptr(s, y, NULL, g, es);
    if (!s->accumulate) memset(yr, 0, (size_t)s->ninner * es); /* not 0 * y: y may hold NaN or -0 */
    for (int k = -2; k <= 2; ++k)
      if (c[k + 2] != 0.0) row_axpy(dtype, yr, c[k + 2], row_ptr(s, x, s->ghost, g + k, es), s->ninner, 1);
  }
}

/* Adjoint scatter of output rows [a, b): x[g + k] += c_k(g) y[g], into local or ghost rows. */
static void adjoint_rows(const stencil *s, rmaop_dtype dtype, char *y, char *x, int64_t a, int64_t b, int fast_skip_lo,
                         int fast_skip_hi) {
  const size_t es = rmaop_dtype_size(dtype);
  for (int64_t g = a; g < b; ++g) {
    double c[NK];
    coef_row(s, g, c);
    for (int k = -2; k <= 2; ++k) {
      int64_t j = g + k;
      if (c[k + 2] == 0.0 || (j >= fast_skip_lo && j < fast_skip_hi)) continue;
      row_axpy(dtype, row_ptr(s, x, s->ghost, j, es), c[k + 2], row_ptr(s, y, NULL, g, es), s->ninner, 1);
    }
  }
}

/* The adjoint's gather rows [jlo, jhi): R away from the fast range's ends, so no edge row (reach up to
 * hl/hr) scatters into them and every row feeding them is a fast row. */
static void gather_rows(const stencil *s, fast_range f, int64_t *jlo, int64_t *jhi) {
  const int64_t R = s->hl > s->hr ? s->hl : s->hr;
  *jlo = f.flo + R, *jhi = f.fhi - R;
  if (*jlo >= *jhi) *jlo = *jhi = f.flo;
}

/* The stencil as the kernels see it (src/device/dev_ops.h), with the host path's row split. */
static rmaop__stencil_desc dev_desc(const stencil *s) {
  const fast_range f = fast_rows(s);
  rmaop__stencil_desc d = {.cs = {.order = s->order, .kind = s->kind, .edge = s->edge, .h = s->h, .scale = s->scale,
                                  .N = s->N},
                           .int_lo = s->int_lo, .int_hi = s->int_hi, .off = s->off, .n = s->n, .nouter = s->nouter,
                           .ninner = s->ninner, .hl = s->hl, .hr = s->hr, .accumulate = s->accumulate,
                           .flo = f.flo, .fhi = f.fhi};
  memcpy(d.cint, s->cint, sizeof d.cint);
  gather_rows(s, f, &d.jlo, &d.jhi);
  return d;
}

/* Host forward of one outer block (x, y: its input and output): the fast rows through the flat loop, and the edge
 * rows too when the axis is local. */
static void forward_block(const stencil *s, const terms *t, fast_range f, char *x, char *y) {
  const size_t es = rmaop_dtype_size(s->dtype);
  flat_stencil(s->dtype, t, x + (size_t)((f.flo - s->off) * s->ninner) * es,
               y + (size_t)((f.flo - s->off) * s->ninner) * es, (f.fhi - f.flo) * s->ninner, s->accumulate);
  if (!s->distributed) {
    forward_rows(s, s->dtype, x, y, s->off, f.flo);
    forward_rows(s, s->dtype, x, y, f.fhi, s->off + s->n);
  }
}

/* The fast rows whose adjoint scatters outside the gather rows: [r[0], r[1]) within R + il of the fast range's
 * start, [r[2], r[3]) within R + ir of its end. */
static void scatter_rows(const stencil *s, fast_range f, int64_t r[4]) {
  const int64_t R = s->hl > s->hr ? s->hl : s->hr;
  r[0] = f.flo, r[1] = f.flo + R + s->il < f.fhi ? f.flo + R + s->il : f.fhi;
  r[2] = f.fhi - R - s->ir > r[1] ? f.fhi - R - s->ir : r[1], r[3] = f.fhi;
}

/* Host adjoint of one outer block (y, x: its input and output), the steps before the reverse halo begins: zero
 * the rows the gather does not set (overwrite mode), scatter the non-interior rows (into x and the ghost rows). */
static void adjoint_block_edges(const stencil *s, fast_range f, int64_t jlo, int64_t jhi, char *y, char *x) {
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t w = s->ninner;
  if (!s->accumulate) {
    memset(x, 0, (size_t)((jlo - s->off) * w) * es);
    memset(x + (size_t)((jhi - s->off) * w) * es, 0, (size_t)((s->off + s->n - jhi) * w) * es);
  }
  adjoint_rows(s, s->dtype, y, x, s->off, f.flo, 0, 0);
  adjoint_rows(s, s->dtype, y, x, f.fhi, s->off + s->n, 0, 0);
}

/* ... and the steps after: the gather of rows [jlo, jhi), then the fast rows that scatter outside it. */
static void adjoint_block_inner(const stencil *s, const terms *t, fast_range f, int64_t jlo, int64_t jhi, char *y,
                                char *x) {
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t w = s->ninner;
  flat_stencil(s->dtype, t, y + (size_t)((jlo - s->off) * w) * es, x + (size_t)((jlo - s->off) * w) * es,
               (jhi - jlo) * w, s->accumulate);
  int64_t r[4];
  scatter_rows(s, f, r);
  adjoint_rows(s, s->dtype, y, x, r[0], r[1], jlo, jhi);
  adjoint_rows(s, s->dtype, y, x, r[2], r[3], jlo, jhi);
}

/* Forward, first half: start the halo, compute the rows that need no ghost (all rows of a local axis). */
static rmaop_status st_forward_begin(stencil *s, rmaop_vec xv, rmaop_vec yv) {
  s->in = xv;
  s->out = yv;
  if (s->kh)
    RMAOP_CHECK(rmaop__dev_kh_put_rows(s->ctx, s->dtype, s->kh_dev, s->kh, xv->data));
  else if (s->distributed)
    RMAOP_CHECK(rmaop_plan_begin(s->halo, xv->data, s->ghost, RMAOP_INSERT));
  if (s->dev) { /* every row of a local axis; the rows that read no ghost (one launch) of a distributed one */
    const rmaop__stencil_desc d = dev_desc(s);
    if (!s->distributed)
      return rmaop__dev_stencil_forward(s->ctx, s->dtype, &d, xv->data, NULL, yv->data, s->off, s->off + s->n, 0, 0);
    s->run_lo = d.flo, s->run_hi = d.fhi;
    return rmaop__dev_stencil_forward_interior(s->ctx, s->dtype, &d, xv->data, yv->data, &s->run_lo, &s->run_hi);
  }
  const size_t es = rmaop_dtype_size(s->dtype);
  const fast_range f = fast_rows(s);
  const terms t = interior_terms(s, 1);
  for (int64_t o = 0; o < s->nouter; ++o)
    forward_block(s, &t, f, (char *)xv->data + (size_t)(o * s->n * s->ninner) * es,
                  (char *)yv->data + (size_t)(o * s->n * s->ninner) * es);
  return RMAOP_OK;
}

/* Forward, second half: the rows next to rank boundaries and global edges, once the ghosts are in. */
static rmaop_status st_forward_end(stencil *s) {
  if (!s->distributed)
    return RMAOP_OK;
  if (s->kh) { /* the launch waits for the ghost rows' signals */
    const rmaop__stencil_desc d = dev_desc(s);
    return rmaop__dev_stencil_forward_kh(s->ctx, s->dtype, &d, s->kh_dev, s->in->data, s->out->data, s->off, s->run_lo,
                                         s->run_hi, s->off + s->n);
  }
  RMAOP_CHECK(rmaop_plan_end(s->halo));
  if (s->dev) { /* the ghosts are on the stream before this launch */
    const rmaop__stencil_desc d = dev_desc(s);
    return rmaop__dev_stencil_forward(s->ctx, s->dtype, &d, s->in->data, s->ghost, s->out->data, s->off, s->run_lo,
                                      s->run_hi, s->off + s->n);
  }
  const fast_range f = fast_rows(s);
  forward_rows(s, s->dtype, s->in->data, s->out->data, s->off, f.flo);
  forward_rows(s, s->dtype, s->in->data, s->out->data, f.fhi, s->off + s->n);
  return RMAOP_OK;
}

/* Adjoint, per block: (1) zero the rows the gather does not set and the ghost rows (overwrite mode);
 * (2) scatter the non-interior rows (they alone reach ghost rows); (3) send the ghost contributions back
 * (ADD) while (4) the gather sets (or adds to) the rows fed only by interior rows and (5) the interior
 * rows near the ends of the fast range scatter into the remaining rows. Every (row, k) pair contributes
 * exactly once. */
static rmaop_status st_adjoint_begin(stencil *s, rmaop_vec yv, rmaop_vec xv) {
  s->in = yv;
  s->out = xv;
  if (s->dev) { /* the ghost rows' sums, sent back while the local rows are gathered */
    const rmaop__stencil_desc d = dev_desc(s);
    if (s->kh) {
      RMAOP_CHECK(rmaop__dev_kh_put_adjoint(s->ctx, s->dtype, &d, s->kh_dev, s->kh, yv->data));
    } else if (s->distributed) {
      RMAOP_CHECK(rmaop__dev_stencil_adjoint_ghost(s->ctx, s->dtype, &d, yv->data, s->ghost));
      RMAOP_CHECK(rmaop_plan_begin(s->halo_rev, s->ghost, xv->data, RMAOP_ADD));
    }
    return rmaop__dev_stencil_adjoint_local(s->ctx, s->dtype, &d, yv->data, xv->data);
  }
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t w = s->ninner;
  const fast_range f = fast_rows(s);
  int64_t jlo, jhi;
  gather_rows(s, f, &jlo, &jhi);
  if (s->ghost) memset(s->ghost, 0, (size_t)((s->hl + s->hr) * w) * es);
  for (int64_t o = 0; o < s->nouter; ++o)
    adjoint_block_edges(s, f, jlo, jhi, (char *)yv->data + (size_t)(o * s->n * w) * es,
                        (char *)xv->data + (size_t)(o * s->n * w) * es);
  if (s->distributed) RMAOP_CHECK(rmaop_plan_begin(s->halo_rev, s->ghost, xv->data, RMAOP_ADD));
  const terms t = interior_terms(s, -1);
  for (int64_t o = 0; o < s->nouter; ++o)
    adjoint_block_inner(s, &t, f, jlo, jhi, (char *)yv->data + (size_t)(o * s->n * w) * es,
                        (char *)xv->data + (size_t)(o * s->n * w) * es);
  return RMAOP_OK;
}

static rmaop_status st_adjoint_end(stencil *s) {
  if (s->kh)
    return rmaop__dev_kh_add(s->ctx, s->dtype, s->kh_dev, s->kh, s->out->data);
  return s->distributed ? rmaop_plan_end(s->halo_rev) : RMAOP_OK;
}

static void st_free(stencil *s) {
  if (!s) return;
  rmaop_plan_destroy(&s->halo);
  rmaop_plan_destroy(&s->halo_rev);
  rmaop__kx_free(&s->kh_win, (void **)&s->kh_dev);
  free(s->kh);
  if (s->dev) {
    rmaop__dev_free(s->ghost);
    s->ghost = NULL;
  }
  free(s->ghost);
  free(s);
}

static rmaop_status stencil_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) { return st_forward_begin(A->impl, x, y); }
static rmaop_status stencil_apply_end(rmaop_op A) { return st_forward_end(A->impl); }
static rmaop_status stencil_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) { return st_adjoint_begin(A->impl, y, x); }
static rmaop_status stencil_adjoint_end(rmaop_op A) { return st_adjoint_end(A->impl); }

static void stencil_destroy(rmaop_op A) { st_free(A->impl); }

/* ---- fused application (host memory): the solvers' update of the input, the stencil and the dots in one
 * pass over memory (op_impl.h, rmaop__fuse). Same element arithmetic as the unfused path (flat_stencil,
 * forward_rows, adjoint_rows, rmaop_vec_axpby's expression). Each kernel works on blocks of FUSE_BLOCK
 * elements, small enough to stay in L1: the block is computed by the plain vectorized loop, then summed by
 * simple lane loops that read it back from cache (one loop per sum vectorizes well; one loop doing it all
 * did not: spills). Element j of a block goes to lane j mod FUSE_LANES, blocks in a fixed order, lanes added
 * in order at the end: the partials depend on the layout alone, never on the backend or the machine. ---- */

#define FUSE_LANES RMAOP__SUM_LANES
#define FUSE_BLOCK 256
/* Input elements updated ahead of the stencil that reads them, in L1 when it does (CGLS deriv1d, 2-vCPU VM,
 * CPU time per iteration: 256-512 elements 30 % below the unfused loop, 2048-16384 only 5-10 %, a separate
 * update pass 15 %). */
#define FUSE_CHUNK 256

typedef struct {
  double v[RMAOP__NSUMS][FUSE_LANES];
  int want; /* RMAOP__WANT_* bits: the kernels compute only these (0: none) */
} fuse_acc;

/* The sums acc->want asks of elements [0, len) of in (x) and out (y), block by block; |x|^2 only with in2. */
static void fuse_sums(rmaop_dtype dtype, const void *xv, const void *yv, int64_t len, int in2, fuse_acc *acc) {
  const size_t es = rmaop_dtype_size(dtype);
  const unsigned what = ((acc->want & RMAOP__WANT_OUT2) ? 1u : 0u) | ((in2 && (acc->want & RMAOP__WANT_IN2)) ? 2u : 0u) |
                        ((acc->want & RMAOP__WANT_INOUT) ? 4u : 0u);
  for (int64_t b = 0; b < len; b += FUSE_BLOCK) {
    const int64_t m = len - b < FUSE_BLOCK ? len - b : FUSE_BLOCK;
    rmaop__host_sums(dtype, (const char *)xv + (size_t)b * es, (const char *)yv + (size_t)b * es, m, what, acc->v);
  }
}

/* For k in [0, n) of one block: w[k] += g x[k] (rmaop_vec_axpy's expression; w NULL: none), then
 * x[k] = a u[k] + b x[k] (rmaop_vec_axpby's). */
static void block_update(rmaop_dtype dtype, void *xv, const void *uv, void *wv, const rmaop__fuse *f, int64_t n) {
  RMAOP__FOR_DTYPE(dtype, {
    T *restrict x = xv;
    const T *restrict u = uv;
    const T a = (T)f->alpha, b = (T)f->beta;
    if (wv) {
      T *restrict w = wv;
      const T g = (T)f->gamma;
      for (int64_t k = 0; k < n; ++k) {
        w[k] += g * x[k];
        x[k] = a * u[k] + b * x[k];
      }
    } else {
      for (int64_t k = 0; k < n; ++k) x[k] = a * u[k] + b * x[k];
    }
  });
}

/* f's update of in's local elements [off, off + len) (and of f->w's), with the IN2 sum of the result when
 * asked; x is in's data at off. */
static void fuse_update(rmaop_dtype dtype, void *xv, const rmaop__fuse *f, int64_t off, int64_t len, fuse_acc *acc) {
  const size_t es = rmaop_dtype_size(dtype);
  const char *u = (const char *)f->u->data + (size_t)off * es;
  char *w = f->w ? (char *)f->w->data + (size_t)off * es : NULL;
  for (int64_t b = 0; b < len; b += FUSE_BLOCK) {
    const int64_t m = len - b < FUSE_BLOCK ? len - b : FUSE_BLOCK;
    char *x = (char *)xv + (size_t)b * es;
    block_update(dtype, x, u + (size_t)b * es, w ? w + (size_t)b * es : NULL, f, m);
    if (acc->want & RMAOP__WANT_IN2) rmaop__host_sums(dtype, x, x, m, 2u, acc->v);
  }
}

/* flat_stencil of outputs [0, len), block by block, each followed by its sums (|in|^2 at the same indices
 * with in2). */
static void fuse_flat(rmaop_dtype dtype, const terms *t, const void *xv, void *yv, int64_t len, int accm, int in2,
                      fuse_acc *acc) {
  if (!acc->want) {
    flat_stencil(dtype, t, xv, yv, len, accm);
    return;
  }
  const size_t es = rmaop_dtype_size(dtype);
  for (int64_t b = 0; b < len; b += FUSE_BLOCK) {
    const int64_t m = len - b < FUSE_BLOCK ? len - b : FUSE_BLOCK;
    const char *x = (const char *)xv + (size_t)b * es;
    char *y = (char *)yv + (size_t)b * es;
    flat_stencil(dtype, t, x, y, m, accm);
    fuse_sums(dtype, x, y, m, in2, acc);
  }
}

/* Streams one block (x, y: its input and output; base: its first element's index in the vectors): the update
 * of input elements [p0, p1) in chunks, each followed by the flat stencil of the outputs [q0, q1) whose
 * inputs (up to `reach` elements after them) are updated; the other input elements were updated before.
 * Without an update (f->u NULL) one flat call. Offsets are the block's. */
static void fuse_stream(const stencil *s, const terms *t, char *x, char *y, int64_t base, const rmaop__fuse *f,
                        int64_t p0, int64_t p1, int64_t q0, int64_t q1, int64_t reach, int sums_in2, fuse_acc *acc) {
  const size_t es = rmaop_dtype_size(s->dtype);
  if (!f || !f->u) p0 = p1;
  while (p0 < p1 || q0 < q1) {
    if (p0 < p1) {
      const int64_t p = p1 - p0 > FUSE_CHUNK ? p0 + FUSE_CHUNK : p1;
      fuse_update(s->dtype, x + (size_t)p0 * es, f, base + p0, p - p0, acc);
      p0 = p;
    }
    int64_t ready = p0 >= p1 ? q1 : p0 - reach;
    if (ready > q1) ready = q1;
    if (ready > q0) {
      fuse_flat(s->dtype, t, x + (size_t)q0 * es, y + (size_t)q0 * es, ready - q0, s->accumulate, sums_in2, acc);
      q0 = ready;
    }
  }
}

/* Updates input rows [a, b) of a block (x: its input; base: its first element's index), when f has an update. */
static void fuse_update_rows(const stencil *s, char *x, int64_t base, const rmaop__fuse *f, int64_t a, int64_t b,
                             fuse_acc *acc) {
  if (!f || !f->u || a >= b) return;
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t off = (a - s->off) * s->ninner;
  fuse_update(s->dtype, x + (size_t)off * es, f, base + off, (b - a) * s->ninner, acc);
}

/* The sums of rows [a, b) of a block, in and out. */
static void fuse_sum_rows(const stencil *s, const char *x, const char *y, int64_t a, int64_t b, int in2,
                          fuse_acc *acc) {
  if (!acc || a >= b) return;
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t off = (a - s->off) * s->ninner;
  fuse_sums(s->dtype, x + (size_t)off * es, y + (size_t)off * es, (b - a) * s->ninner, in2, acc);
}

/* Fused forward of one stencil: (f->u) in <- alpha u + beta in, out (=|+=) D in, and the sums of every output
 * row (|in|^2 too with `in2`; the update adds it otherwise). A distributed stencil first updates the rows its
 * neighbours read, begins the halo, streams the rest with the interior rows, ends the halo and computes the
 * boundary rows. */
static rmaop_status st_forward_fused(stencil *s, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f, fuse_acc *acc,
                                     int in2) {
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t w = s->ninner, blk = s->n * w;
  const fast_range fr = fast_rows(s);
  const terms t = interior_terms(s, 1);
  const int64_t E = s->hl > s->hr ? s->hl : s->hr;
  for (int64_t o = 0; o < s->nouter; ++o) {
    char *x = (char *)in->data + (size_t)(o * blk) * es, *y = (char *)out->data + (size_t)(o * blk) * es;
    /* Rows updated before the stream: those the halo sends (distributed), none otherwise. */
    int64_t h = s->off, tl = s->off + s->n;
    if (s->distributed) {
      h = s->off + (E < s->n ? E : s->n);
      tl = s->off + s->n - E > h ? s->off + s->n - E : h;
    }
    fuse_update_rows(s, x, o * blk, f, s->off, h, acc);
    fuse_update_rows(s, x, o * blk, f, tl, s->off + s->n, acc);
    if (s->distributed)
      RMAOP_CHECK(rmaop_plan_begin(s->halo, in->data, s->ghost, RMAOP_INSERT));
    fuse_stream(s, &t, x, y, o * blk, f, (h - s->off) * w, (tl - s->off) * w, (fr.flo - s->off) * w,
                (fr.fhi - s->off) * w, (int64_t)s->ir * w, in2, acc);
    if (!s->distributed) { /* the edge rows of the axis, all inputs updated */
      forward_rows(s, s->dtype, x, y, s->off, fr.flo);
      forward_rows(s, s->dtype, x, y, fr.fhi, s->off + s->n);
      fuse_sum_rows(s, x, y, s->off, fr.flo, in2, acc);
      fuse_sum_rows(s, x, y, fr.fhi, s->off + s->n, in2, acc);
    }
  }
  if (!s->distributed) return RMAOP_OK;
  RMAOP_CHECK(rmaop_plan_end(s->halo));
  char *x = in->data, *y = out->data;
  forward_rows(s, s->dtype, x, y, s->off, fr.flo);
  forward_rows(s, s->dtype, x, y, fr.fhi, s->off + s->n);
  fuse_sum_rows(s, x, y, s->off, fr.flo, in2, acc);
  fuse_sum_rows(s, x, y, fr.fhi, s->off + s->n, in2, acc);
  return RMAOP_OK;
}

/* Fused adjoint of one stencil (st_adjoint_begin/_end's steps): (f->u) in <- alpha u + beta in first on the
 * rows read outside the gather (before the ghost scatter), then streamed with the gather; the sums of the
 * gather's rows in the stream, of the other rows once the reverse halo has added into them. */
static rmaop_status st_adjoint_fused(stencil *s, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f, fuse_acc *acc) {
  const int in2 = !(f && f->u);
  const size_t es = rmaop_dtype_size(s->dtype);
  const int64_t w = s->ninner, blk = s->n * w;
  const fast_range fr = fast_rows(s);
  int64_t jlo, jhi, sr[4];
  gather_rows(s, fr, &jlo, &jhi);
  scatter_rows(s, fr, sr); /* fast rows that scatter outside [jlo, jhi) */
  const int64_t a1 = sr[0], b1 = sr[1], a2 = sr[2], b2 = sr[3];
  const terms t = interior_terms(s, -1);
  if (s->ghost) memset(s->ghost, 0, (size_t)((s->hl + s->hr) * w) * es);
  for (int64_t o = 0; o < s->nouter; ++o) {
    char *y = (char *)in->data + (size_t)(o * blk) * es, *x = (char *)out->data + (size_t)(o * blk) * es;
    fuse_update_rows(s, y, o * blk, f, s->off, b1, acc);
    fuse_update_rows(s, y, o * blk, f, a2, s->off + s->n, acc);
    adjoint_block_edges(s, fr, jlo, jhi, y, x);
    if (s->distributed) RMAOP_CHECK(rmaop_plan_begin(s->halo_rev, s->ghost, out->data, RMAOP_ADD));
    fuse_stream(s, &t, y, x, o * blk, f, (b1 - s->off) * w, (a2 - s->off) * w, (jlo - s->off) * w, (jhi - s->off) * w,
                (int64_t)s->il * w, in2, acc);
    adjoint_rows(s, s->dtype, y, x, a1, b1, jlo, jhi);
    adjoint_rows(s, s->dtype, y, x, a2, b2, jlo, jhi);
    if (!s->distributed) {
      fuse_sum_rows(s, y, x, s->off, jlo, in2, acc);
      fuse_sum_rows(s, y, x, jhi, s->off + s->n, in2, acc);
    }
  }
  if (!s->distributed) return RMAOP_OK;
  RMAOP_CHECK(rmaop_plan_end(s->halo_rev));
  fuse_sum_rows(s, in->data, out->data, s->off, jlo, in2, acc);
  fuse_sum_rows(s, in->data, out->data, jhi, s->off + s->n, in2, acc);
  return RMAOP_OK;
}

/* The lanes' totals in lane order. */
static void fuse_total(const fuse_acc *acc, double sums[RMAOP__NSUMS]) {
  for (int k = 0; k < RMAOP__NSUMS; ++k) {
    sums[k] = 0.0;
    for (int l = 0; l < FUSE_LANES; ++l) sums[k] += acc->v[k][l];
  }
}

static rmaop_status stencil_apply_fused(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                        double sums[RMAOP__NSUMS]) {
  stencil *s = A->impl;
  fuse_acc acc = {.want = f->want};
  RMAOP_CHECK(adjoint ? st_adjoint_fused(s, in, out, f, &acc) : st_forward_fused(s, in, out, f, &acc, !f->u));
  fuse_total(&acc, sums);
  return RMAOP_OK;
}

static const rmaop__op_ops stencil_ops = {stencil_apply_begin, stencil_apply_end, stencil_adjoint_begin,
                                          stencil_adjoint_end, stencil_destroy};

/* ---- constructors ---- */

static rmaop_status check_grid(rmaop_ctx ctx, const char *fn, const rmaop_grid *g) {
  RMAOP_REQUIRE(ctx, g->ndim >= 1 && g->ndim <= RMAOP_MAX_DIMS, RMAOP_ERR_ARG, "%s: ndim = %d is outside [1, %d]", fn,
                g->ndim, RMAOP_MAX_DIMS);
  int64_t total = 1;
  for (int d = 0; d < g->ndim; ++d) {
    RMAOP_REQUIRE(ctx, g->dims[d] >= 1, RMAOP_ERR_ARG, "%s: dims[%d] = %lld must be positive", fn, d,
                  (long long)g->dims[d]);
    RMAOP_REQUIRE(ctx, !__builtin_mul_overflow(total, g->dims[d], &total), RMAOP_ERR_ARG,
                  "%s: the grid's size overflows int64", fn);
  }
  RMAOP_REQUIRE(ctx, g->local_rows >= -1 && g->local_rows <= g->dims[0], RMAOP_ERR_ARG,
                "%s: local_rows = %lld is outside [-1, dims[0] = %lld]", fn, (long long)g->local_rows,
                (long long)g->dims[0]);
  return RMAOP_OK;
}

static rmaop_status check_deriv(rmaop_ctx ctx, const char *fn, const rmaop_deriv_spec *spec, int order) {
  RMAOP_REQUIRE(ctx, spec != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", fn);
  RMAOP_CHECK(check_grid(ctx, fn, &spec->grid));
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(spec->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)spec->dtype);
  RMAOP_REQUIRE(ctx, spec->axis >= 0 && spec->axis < spec->grid.ndim, RMAOP_ERR_ARG, "%s: axis %d is outside [0, %d)",
                fn, spec->axis, spec->grid.ndim);
  RMAOP_REQUIRE(ctx, (unsigned)spec->kind <= RMAOP_DERIV_CENTERED5 && !(order == 2 && spec->kind == RMAOP_DERIV_CENTERED5),
                RMAOP_ERR_ARG, "%s: kind %d is not valid for a derivative of order %d", fn, (int)spec->kind, order);
  RMAOP_REQUIRE(ctx, isfinite(spec->sampling), RMAOP_ERR_ARG, "%s: sampling is not finite", fn);
  const int64_t N = spec->grid.dims[spec->axis];
  const int64_t need = spec->kind == RMAOP_DERIV_CENTERED5 ? 5 : (order == 2 || spec->kind == RMAOP_DERIV_CENTERED3) ? 3 : 2;
  RMAOP_REQUIRE(ctx, N >= need, RMAOP_ERR_ARG, "%s: axis %d has %lld samples; this kind needs at least %lld", fn,
                spec->axis, (long long)N, (long long)need);
  return RMAOP_OK;
}

/* The element layout of a grid: this rank's rows times the size of the other axes. */
static rmaop_status grid_layout(rmaop_ctx ctx, const rmaop_grid *g, rmaop_layout *rows, rmaop_layout *elems, int64_t *inner) {
  *inner = 1;
  for (int d = 1; d < g->ndim; ++d) *inner *= g->dims[d];
  /* -1 takes this rank's balanced share; every rank then enters the same collective, so a mix of -1 and
   * explicit sizes is checked (they must add up to dims[0]) instead of hanging. */
  const int64_t P = ctx->size, share = g->dims[0] / P + (ctx->rank < g->dims[0] % P);
  RMAOP_CHECK(rmaop_layout_create_local(ctx, g->local_rows >= 0 ? g->local_rows : share, rows));
  rmaop_status st = RMAOP_OK;
  if ((*rows)->global_n != g->dims[0])
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "grid: the ranks' local_rows add up to %lld, not dims[0] = %lld",
                     (long long)(*rows)->global_n, (long long)g->dims[0]);
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, (*rows)->sizes[ctx->rank] * *inner, elems);
  if (st != RMAOP_OK) rmaop_layout_destroy(rows);
  return st;
}

/* One stencil along spec->axis of a grid whose rows are split as `rows` (collective: the halo plan). */
static rmaop_status stencil_build(rmaop_ctx ctx, const rmaop_deriv_spec *spec, int order, rmaop_layout rows,
                                  int64_t inner, double scale, stencil **out) {
  stencil *s = NULL;
  rmaop_status st = rmaop__calloc(ctx, 1, sizeof *s, "derivative", (void **)&s);
  RMAOP_CHECK(rmaop__agree(ctx, st, "derivative set-up"));
  const rmaop_grid *g = &spec->grid;
  *s = (stencil){.order = order, .kind = spec->kind, .edge = spec->edge != 0,
                 .h = spec->sampling != 0.0 ? spec->sampling : 1.0, .scale = scale, .dtype = spec->dtype,
                 .N = g->dims[spec->axis], .distributed = spec->axis == 0, .ctx = ctx,
                 .dev = RMAOP__ON_DEVICE(ctx)};
  const int64_t my_rows = rows->sizes[ctx->rank];
  if (s->distributed) {
    s->off = rows->offsets[ctx->rank], s->n = my_rows, s->nouter = 1, s->ninner = inner;
  } else {
    int64_t before = 1, after = 1;
    for (int d = 1; d < spec->axis; ++d) before *= g->dims[d];
    for (int d = spec->axis + 1; d < g->ndim; ++d) after *= g->dims[d];
    s->off = 0, s->n = s->N, s->nouter = my_rows * before, s->ninner = after;
  }
  stencil_shape(s);
  if (kh_wanted(ctx, s)) {
    st = build_kh(ctx, s, rows->sizes, rows->offsets);
  } else if (s->distributed) {
    const size_t ghost_n = (size_t)((s->hl + s->hr) * inner) + 1;
    if (s->dev) st = rmaop__dev_malloc(ctx, ghost_n * rmaop_dtype_size(spec->dtype), "ghost rows", &s->ghost);
    else st = rmaop__calloc(ctx, ghost_n, rmaop_dtype_size(spec->dtype), "ghost rows", &s->ghost);
    st = rmaop__agree(ctx, st, "derivative ghost rows");
    if (st == RMAOP_OK) st = build_halo(ctx, s, spec->dtype, rows->sizes, rows->offsets, spec->label ? spec->label : "deriv");
  }
  if (st != RMAOP_OK) {
    st_free(s);
    return st;
  }
  *out = s;
  return RMAOP_OK;
}

static rmaop_status create_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, int order, rmaop_op *out) {
  const char *fn = order == 1 ? "rmaop_op_create_first_derivative" : "rmaop_op_create_second_derivative";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  rmaop_status st = check_deriv(ctx, fn, spec, order);
  if (st == RMAOP_OK && out == NULL) st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  rmaop_layout rows = NULL, elems = NULL;
  int64_t inner = 1;
  RMAOP_CHECK(grid_layout(ctx, &spec->grid, &rows, &elems, &inner));
  stencil *s = NULL;
  st = stencil_build(ctx, spec, order, rows, inner, 1.0, &s);
  st = rmaop__op_new_agreed(st, ctx, order == 1 ? "first_derivative" : "second_derivative", spec->dtype, elems, elems,
                       &stencil_ops, s, out);
  if (st != RMAOP_OK) st_free(s);
  else (*out)->apply_fused = stencil_apply_fused;
  rmaop_layout_destroy(&rows);
  rmaop_layout_destroy(&elems); /* the operator holds its own references */
  return st;
}

rmaop_status rmaop_op_create_first_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A) {
  return create_derivative(ctx, spec, 1, A);
}

rmaop_status rmaop_op_create_second_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A) {
  return create_derivative(ctx, spec, 2, A);
}

/* ---- Laplacian: weighted second derivatives fused into one output ---- */

/* parts[0] overwrites the output and runs whole in begin (a local axis when there is one), the others
 * add into it; the axis-0 part's halo is in flight while the local axes compute. On the host, with more than
 * one part, row by row of axis 0 with every part of a row together (below). On device memory, with more than
 * one part, one kernel computes every part of an element (rmaop__dev_laplacian_*): the rows whose axis-0
 * stencil reads no ghost row in begin, the others in end; the same sums in the same order as part by part. */
typedef struct {
  int n;
  stencil *parts[RMAOP_MAX_DIMS];
  rmaop__lap_desc dev; /* the parts as the one-pass kernels see them (the host path reads off, rows, inner) */
  stencil *dist;       /* the axis-0 part, NULL if none */
  rmaop_vec in, out;   /* n > 1: the pending application's input and output */
} laplacian;

/* n > 1 on device memory: the one-pass kernels; on host memory: row by row (below). n = 1: the stencil's own path. */
static int lap_on_device(const laplacian *l) {
  return l->parts[0]->dev;
}

/* The one-pass description: this rank's rows of axis 0 (`rows`: their layout) and the parts. */
static void lap_describe(laplacian *l, rmaop_layout rows, int rank, int64_t inner) {
  rmaop__lap_desc *L = &l->dev;
  *L = (rmaop__lap_desc){.dpos = -1, .off = rows->offsets[rank], .rows = rows->sizes[rank], .inner = inner};
  for (int i = 0; i < l->n; ++i) {
    if (l->parts[i]->distributed)
      L->dpos = L->nloc, L->dist = dev_desc(l->parts[i]), l->dist = l->parts[i];
    else
      L->loc[L->nloc++] = dev_desc(l->parts[i]);
  }
}

/* ---- host: row by row of axis 0, every part of a row together, so that x's rows are read from cache by the
 * later parts and y's rows are written once. Per element the part-by-part path's operations in its order: the
 * parts in list order, except that a row whose axis-0 stencil reads ghost rows gets that part last (forward: after
 * the halo) and that, in the adjoint, rows outside the axis-0 part's gather rows get its scatters between the
 * parts before it and those after it. ---- */

/* Parts [p0, p1) of the list, the axis-0 part left out, on rows [g1, g2) (each part's outer blocks within them):
 * forward (in = x, out = y) or adjoint (in = y, out = x). */
static void row_local(const laplacian *l, int adjoint, int p0, int p1, const char *in, char *out, int64_t g1,
                      int64_t g2) {
  if (g1 >= g2)
    return; /* also: no rows at all, no outer blocks per row */
  for (int p = p0; p < p1; ++p) {
    const stencil *s = l->parts[p];
    if (s == l->dist)
      continue;
    const size_t es = rmaop_dtype_size(s->dtype), blk = (size_t)(s->n * s->ninner) * es;
    const int64_t per = s->nouter / l->dev.rows; /* the part's outer blocks in one row of axis 0 */
    const fast_range f = fast_rows(s);
    const terms t = interior_terms(s, adjoint ? -1 : 1);
    int64_t jlo = 0, jhi = 0;
    if (adjoint)
      gather_rows(s, f, &jlo, &jhi);
    for (int64_t o = (g1 - l->dev.off) * per; o < (g2 - l->dev.off) * per; ++o) {
      char *a = (char *)in + (size_t)o * blk, *b = out + (size_t)o * blk;
      if (!adjoint) {
        forward_block(s, &t, f, a, b);
        continue;
      }
      adjoint_block_edges(s, f, jlo, jhi, a, b);
      adjoint_block_inner(s, &t, f, jlo, jhi, a, b);
    }
  }
}

/* The axis-0 part's position in the list (n: none). */
static int dist_at(const laplacian *l) {
  for (int p = 0; p < l->n; ++p)
    if (l->parts[p] == l->dist)
      return p;
  return l->n;
}

/* f's update of rows [a, b) of axis 0 of v (the whole local array), when f has one. */
static void update_rows(const laplacian *l, char *v, const rmaop__fuse *f, int64_t a, int64_t b, fuse_acc *acc) {
  if (!f || !f->u || a >= b)
    return;
  const size_t es = rmaop_dtype_size(l->parts[0]->dtype);
  const int64_t at = (a - l->dev.off) * l->dev.inner;
  fuse_update(l->parts[0]->dtype, v + (size_t)at * es, f, at, (b - a) * l->dev.inner, acc);
}

/* Forward rows [g1, g2) (global), each followed by its sums when acc (|x|^2 too with in2). */
static void lap_forward_rows(const laplacian *l, const char *x, char *y, int64_t g1, int64_t g2, fuse_acc *acc,
                             int in2) {
  const stencil *d = l->dist;
  const int dp = dist_at(l);
  const size_t es = rmaop_dtype_size(l->parts[0]->dtype);
  const int64_t inner = l->dev.inner;
  const fast_range df = d ? fast_rows(d) : (fast_range){0, 0};
  const terms td = d ? interior_terms(d, 1) : (terms){0};
  for (int64_t g = g1; g < g2; ++g) {
    const size_t at = (size_t)((g - l->dev.off) * inner) * es;
    if (!d) {
      row_local(l, 0, 0, l->n, x, y, g, g + 1);
    } else if (g >= df.flo && g < df.fhi) { /* in order: all its taps are local rows */
      row_local(l, 0, 0, dp, x, y, g, g + 1);
      flat_stencil(d->dtype, &td, x + at, y + at, inner, 1);
      row_local(l, 0, dp + 1, l->n, x, y, g, g + 1);
    } else { /* last, with the ghost rows */
      row_local(l, 0, 0, l->n, x, y, g, g + 1);
      forward_rows(d, d->dtype, (char *)x, y, g, g + 1);
    }
    if (acc)
      fuse_sums(l->parts[0]->dtype, x + at, y + at, inner, in2, acc);
  }
}

/* Forward up to the halo's end: f's update of x (when f has one: the rows the halo sends first, the others just
 * ahead of the rows that read them), the halo begun, the rows that need no ghost row. */
static rmaop_status lap_forward_begin(laplacian *l, rmaop_vec x, rmaop_vec y, const rmaop__fuse *f, fuse_acc *acc,
                                      int in2) {
  const stencil *d = l->dist;
  const int64_t off = l->dev.off, end = off + l->dev.rows;
  const int64_t E = d ? (d->hl > d->hr ? d->hl : d->hr) : 0, reach = d ? d->ir : 0;
  const int64_t h = off + (E < l->dev.rows ? E : l->dev.rows), tl = end - E > h ? end - E : h;
  update_rows(l, x->data, f, off, h, acc);
  update_rows(l, x->data, f, tl, end, acc);
  if (d)
    RMAOP_CHECK(rmaop_plan_begin(d->halo, x->data, d->ghost, RMAOP_INSERT));
  const fast_range df = d ? fast_rows(d) : (fast_range){off, end};
  int64_t next = h; /* rows [h, next) updated */
  for (int64_t g = df.flo; g < df.fhi; ++g) {
    const int64_t want = g + reach + 1 < tl ? g + reach + 1 : tl;
    if (next < want)
      update_rows(l, x->data, f, next, want, acc), next = want;
    lap_forward_rows(l, x->data, y->data, g, g + 1, acc, in2);
  }
  update_rows(l, x->data, f, next, tl, acc);
  return RMAOP_OK;
}

/* Forward: the halo's end, then the rows next to rank boundaries and global edges. */
static rmaop_status lap_forward_end(laplacian *l, rmaop_vec x, rmaop_vec y, fuse_acc *acc, int in2) {
  const stencil *d = l->dist;
  if (!d)
    return RMAOP_OK;
  const fast_range df = fast_rows(d);
  RMAOP_CHECK(rmaop_plan_end(d->halo));
  lap_forward_rows(l, x->data, y->data, l->dev.off, df.flo, acc, in2);
  lap_forward_rows(l, x->data, y->data, df.fhi, l->dev.off + l->dev.rows, acc, in2);
  return RMAOP_OK;
}

/* Adjoint up to the reverse halo's begin and the axis-0 part's gather rows with their sums (acc): on the other rows
 * the parts before the axis-0 part, its scatters (into them and into the ghost rows), the reverse halo begun, the
 * parts after it; then each gather row's parts in order. f's update of y first on the rows read outside the gather
 * rows (as st_adjoint_fused), the others just ahead of the rows that read them. */
static rmaop_status lap_adjoint_begin_rows(laplacian *l, rmaop_vec yv, rmaop_vec xv, const rmaop__fuse *f,
                                           fuse_acc *acc, int in2) {
  stencil *d = l->dist;
  const int dp = dist_at(l);
  const size_t es = rmaop_dtype_size(l->parts[0]->dtype);
  const int64_t off = l->dev.off, end = off + l->dev.rows, inner = l->dev.inner;
  char *y = yv->data, *x = xv->data;
  int64_t jlo = off, jhi = end, r[4] = {off, off, end, end}, reach = 0;
  fast_range df = {off, end};
  if (d) {
    df = fast_rows(d);
    gather_rows(d, df, &jlo, &jhi);
    scatter_rows(d, df, r);
    reach = d->il;
  }
  update_rows(l, y, f, off, r[1], acc);
  update_rows(l, y, f, r[2], end, acc);
  if (d) {
    row_local(l, 1, 0, dp, y, x, off, jlo);
    row_local(l, 1, 0, dp, y, x, jhi, end);
    memset(d->ghost, 0, (size_t)((d->hl + d->hr) * inner) * es);
    adjoint_block_edges(d, df, jlo, jhi, y, x);
    RMAOP_CHECK(rmaop_plan_begin(d->halo_rev, d->ghost, x, RMAOP_ADD));
    adjoint_rows(d, d->dtype, y, x, r[0], r[1], jlo, jhi);
    adjoint_rows(d, d->dtype, y, x, r[2], r[3], jlo, jhi);
    row_local(l, 1, dp + 1, l->n, y, x, off, jlo);
    row_local(l, 1, dp + 1, l->n, y, x, jhi, end);
  }
  const terms td = d ? interior_terms(d, -1) : (terms){0};
  int64_t next = r[1]; /* rows [r[1], next) updated */
  for (int64_t g = jlo; g < jhi; ++g) {
    const int64_t want = g + reach + 1 < r[2] ? g + reach + 1 : r[2];
    if (next < want)
      update_rows(l, y, f, next, want, acc), next = want;
    const size_t at = (size_t)((g - off) * inner) * es;
    row_local(l, 1, 0, dp, y, x, g, g + 1);
    if (d)
      flat_stencil(d->dtype, &td, y + at, x + at, inner, 1);
    row_local(l, 1, dp + 1, l->n, y, x, g, g + 1);
    if (acc)
      fuse_sums(l->parts[0]->dtype, y + at, x + at, inner, in2, acc);
  }
  update_rows(l, y, f, next, r[2], acc);
  return RMAOP_OK;
}

/* The reverse halo's end, then the sums of the rows outside the gather rows (acc). */
static rmaop_status lap_adjoint_end_rows(laplacian *l, rmaop_vec yv, rmaop_vec xv, fuse_acc *acc, int in2) {
  stencil *d = l->dist;
  if (!d)
    return RMAOP_OK;
  RMAOP_CHECK(rmaop_plan_end(d->halo_rev));
  if (acc) {
    int64_t jlo, jhi;
    gather_rows(d, fast_rows(d), &jlo, &jhi);
    fuse_sum_rows(d, yv->data, xv->data, d->off, jlo, in2, acc);
    fuse_sum_rows(d, yv->data, xv->data, jhi, d->off + d->n, in2, acc);
  }
  return RMAOP_OK;
}

static rmaop_status lap_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  laplacian *l = A->impl;
  if (l->n == 1)
    return st_forward_begin(l->parts[0], x, y);
  l->in = x, l->out = y;
  if (!lap_on_device(l))
    return lap_forward_begin(l, x, y, NULL, NULL, 0);
  const rmaop__lap_desc *L = &l->dev;
  if (!l->dist)
    return rmaop__dev_laplacian_forward(A->ctx, A->dtype, L, x->data, NULL, y->data, L->off, L->off + L->rows, 0, 0);
  if (l->dist->kh)
    RMAOP_CHECK(rmaop__dev_kh_put_rows(A->ctx, A->dtype, l->dist->kh_dev, l->dist->kh, x->data));
  else
    RMAOP_CHECK(rmaop_plan_begin(l->dist->halo, x->data, l->dist->ghost, RMAOP_INSERT));
  return rmaop__dev_laplacian_forward(A->ctx, A->dtype, L, x->data, l->dist->ghost, y->data, L->dist.flo, L->dist.fhi,
                                      0, 0);
}
static rmaop_status lap_apply_end(rmaop_op A) {
  laplacian *l = A->impl;
  if (l->n == 1)
    return st_forward_end(l->parts[0]);
  if (!lap_on_device(l))
    return lap_forward_end(l, l->in, l->out, NULL, 0);
  if (!l->dist)
    return RMAOP_OK;
  const rmaop__lap_desc *L = &l->dev;
  if (l->dist->kh) /* the launch waits for the ghost rows' signals */
    return rmaop__dev_laplacian_forward_kh(A->ctx, A->dtype, L, l->dist->kh_dev, l->in->data, l->out->data, L->off,
                                           L->dist.flo, L->dist.fhi, L->off + L->rows);
  RMAOP_CHECK(rmaop_plan_end(l->dist->halo));
  return rmaop__dev_laplacian_forward(A->ctx, A->dtype, L, l->in->data, l->dist->ghost, l->out->data, L->off,
                                      L->dist.flo, L->dist.fhi, L->off + L->rows);
}
static rmaop_status lap_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  laplacian *l = A->impl;
  if (l->n == 1)
    return st_adjoint_begin(l->parts[0], y, x);
  l->in = y, l->out = x;
  if (!lap_on_device(l))
    return lap_adjoint_begin_rows(l, y, x, NULL, NULL, 0);
  if (l->dist && l->dist->kh) { /* the ghost rows' sums, put while the local rows are gathered */
    l->dist->out = x;           /* st_adjoint_end adds what comes back into it */
    RMAOP_CHECK(rmaop__dev_kh_put_adjoint(A->ctx, A->dtype, &l->dev.dist, l->dist->kh_dev, l->dist->kh, y->data));
  } else if (l->dist) { /* the ghost rows' sums, sent back while the local rows are gathered */
    RMAOP_CHECK(rmaop__dev_stencil_adjoint_ghost(A->ctx, A->dtype, &l->dev.dist, y->data, l->dist->ghost));
    RMAOP_CHECK(rmaop_plan_begin(l->dist->halo_rev, l->dist->ghost, x->data, RMAOP_ADD));
  }
  return rmaop__dev_laplacian_adjoint_local(A->ctx, A->dtype, &l->dev, y->data, x->data);
}
static rmaop_status lap_adjoint_end(rmaop_op A) {
  laplacian *l = A->impl;
  if (l->n > 1 && !lap_on_device(l))
    return lap_adjoint_end_rows(l, l->in, l->out, NULL, 0);
  for (int i = 0; i < l->n; ++i) RMAOP_CHECK(st_adjoint_end(l->parts[i]));
  return RMAOP_OK;
}
static void lap_destroy(rmaop_op A) {
  laplacian *l = A->impl;
  for (int i = 0; i < l->n; ++i) st_free(l->parts[i]);
  free(l);
}
/* Fused Laplacian (host memory). One part: that stencil's fused path. Several: row by row (lap_forward_begin,
 * lap_adjoint_begin_rows), the update just ahead of the rows that read it, each row summed once final. */
static rmaop_status lap_apply_fused(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                    double sums[RMAOP__NSUMS]) {
  laplacian *l = A->impl;
  fuse_acc acc = {.want = f->want};
  if (l->n == 1) {
    stencil *s = l->parts[0];
    RMAOP_CHECK(adjoint ? st_adjoint_fused(s, in, out, f, &acc) : st_forward_fused(s, in, out, f, &acc, !f->u));
  } else if (adjoint) {
    RMAOP_CHECK(lap_adjoint_begin_rows(l, in, out, f, &acc, !f->u));
    RMAOP_CHECK(lap_adjoint_end_rows(l, in, out, &acc, !f->u));
  } else {
    RMAOP_CHECK(lap_forward_begin(l, in, out, f, &acc, !f->u));
    RMAOP_CHECK(lap_forward_end(l, in, out, &acc, !f->u));
  }
  fuse_total(&acc, sums);
  return RMAOP_OK;
}

static const rmaop__op_ops laplacian_ops = {lap_apply_begin, lap_apply_end, lap_adjoint_begin, lap_adjoint_end,
                                            lap_destroy};

static rmaop_status check_laplacian(rmaop_ctx ctx, const rmaop_laplacian_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_laplacian";
  RMAOP_REQUIRE(ctx, spec != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", fn);
  RMAOP_REQUIRE(ctx, A != NULL, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, spec->naxes >= 0 && spec->naxes <= spec->grid.ndim && (spec->naxes > 0 || spec->grid.ndim >= 2),
                RMAOP_ERR_ARG, "%s: naxes = %d for a %d-D grid (0 needs 2-D or more)", fn, spec->naxes, spec->grid.ndim);
  const int naxes = spec->naxes ? spec->naxes : 2;
  for (int i = 0; i < naxes; ++i) {
    rmaop_deriv_spec d = {.grid = spec->grid, .axis = spec->naxes ? spec->axes[i] : spec->grid.ndim - 2 + i,
                          .kind = spec->kind, .edge = spec->edge, .sampling = spec->sampling[i], .dtype = spec->dtype};
    RMAOP_CHECK(check_deriv(ctx, fn, &d, 2));
    for (int j = 0; j < i; ++j)
      RMAOP_REQUIRE(ctx, !spec->naxes || spec->axes[j] != spec->axes[i], RMAOP_ERR_ARG, "%s: axis %d is listed twice",
                    fn, spec->axes[i]);
    RMAOP_REQUIRE(ctx, isfinite(spec->weights[i]), RMAOP_ERR_ARG, "%s: weights[%d] is not finite", fn, i);
  }
  return RMAOP_OK;
}

rmaop_status rmaop_op_create_laplacian(rmaop_ctx ctx, const rmaop_laplacian_spec *spec, rmaop_op *A) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_op_create_laplacian: ctx is NULL");
  RMAOP_CHECK(rmaop__agree(ctx, check_laplacian(ctx, spec, A), "rmaop_op_create_laplacian"));
  const int naxes = spec->naxes ? spec->naxes : 2;
  int all_zero = 1;
  for (int i = 0; i < naxes; ++i) all_zero &= spec->weights[i] == 0.0;
  rmaop_layout rows = NULL, elems = NULL;
  int64_t inner = 1;
  RMAOP_CHECK(grid_layout(ctx, &spec->grid, &rows, &elems, &inner));
  laplacian *l = NULL;
  rmaop_status st = rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *l, "laplacian", (void **)&l), "rmaop_op_create_laplacian");
  for (int i = 0; i < naxes && st == RMAOP_OK; ++i) {
    const double w = all_zero ? 1.0 : spec->weights[i];
    if (w == 0.0) continue; /* an axis with weight 0 adds nothing */
    rmaop_deriv_spec d = {.grid = spec->grid, .axis = spec->naxes ? spec->axes[i] : spec->grid.ndim - 2 + i,
                          .kind = spec->kind, .edge = spec->edge, .sampling = spec->sampling[i],
                          .dtype = spec->dtype, .label = spec->label ? spec->label : "laplacian"};
    st = stencil_build(ctx, &d, 2, rows, inner, w, &l->parts[l->n]);
    if (st == RMAOP_OK) l->n++;
  }
  if (st == RMAOP_OK) {
    /* parts[0] overwrites: a local axis if any (it completes in begin, before the others add). */
    for (int i = 0; i < l->n; ++i)
      if (!l->parts[i]->distributed) {
        stencil *t = l->parts[0];
        l->parts[0] = l->parts[i];
        l->parts[i] = t;
        break;
      }
    for (int i = 1; i < l->n; ++i)
      l->parts[i]->accumulate = 1;
    lap_describe(l, rows, ctx->rank, inner);
    st = rmaop__op_new_agreed(st, ctx, "laplacian", spec->dtype, elems, elems, &laplacian_ops, l, A);
    if (st == RMAOP_OK) (*A)->apply_fused = lap_apply_fused;
  }
  if (st != RMAOP_OK && l) {
    for (int i = 0; i < l->n; ++i) st_free(l->parts[i]);
    free(l);
  }
  rmaop_layout_destroy(&rows);
  rmaop_layout_destroy(&elems);
  return st;
}

/* ---- for the GPU-resident solvers (src/solvers/solver_resident.c; declared in src/device/resident.h) ---- */

/* A derivative along axis 0 (distributed rows) as the device kernels see it; RMAOP_ERR_UNSUPPORTED, recording
 * nothing, for any other operator (a Laplacian, another axis, a composite). Not collective. */
rmaop_status rmaop__op_stencil_desc(rmaop_op A, rmaop__stencil_desc *d) {
  if (!A || A->ops != &stencil_ops) return RMAOP_ERR_UNSUPPORTED;
  const stencil *s = A->impl;
  if (!s->distributed || s->accumulate || s->nouter != 1) return RMAOP_ERR_UNSUPPORTED;
  *d = dev_desc(s);
  return RMAOP_OK;
}
