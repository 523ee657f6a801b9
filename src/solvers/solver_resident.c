/* GPU-resident CG and CGLS (RMAOP_SOLVER_SCALARS=resident): the host side. Decides whether the path and the
 * operator allow it (the ranks agree), makes the solve's window (rmaop_win_allocate on the context: GPU memory
 * over ipc) and its device handle, lays out the halo transfers, launches the one cooperative kernel of
 * src/device/resident.cu, and reads back the history and the stopping state once the kernel ends. Anything it
 * cannot run goes to the device-scalar loops of solver_device.c, replayed from CUDA graphs where the path allows.
 *
 * Supported: float64; the rma backend on a device context whose ranks reach each other over ipc (RMAOP_RMA_TRANSPORT
 * ipc, or auto with every rank on one node), at most RMAOP_DEVICE_MAX_PEERS ranks, no per-iteration callback;
 * CGLS on a first or second derivative along axis 0 (any kind, 1-D or N-D), CG on D^H D or D^H D + diag(d) with
 * such a D (bench's derivspd). */
#include "solver_impl.h"

#include <stdio.h>

#include "core/config.h"
#include "device/device.h"
#include "device/resident.h"
#include "solver_resident.h"

enum { VIRTUAL_BLOCKS = 1056, VIRTUAL_THREADS = 256 }; /* rmaop__dev_dots' launch shape (src/device/device.cu) */

int rmaop__resident_wanted(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  const rmaop_ctx ctx = A->ctx;
  if (!RMAOP__ON_DEVICE(ctx) || !rmaop__vec_device_dots_ok(x) || !rmaop__vec_device_dots_ok(y)) return 0;
  if (ctx->solver_scalars == RMAOP__SCALARS_RESIDENT) return 1;
  /* auto: one node, a GPU per rank (two ranks sharing a GPU were not faster: PERFORMANCE.md) */
  return ctx->solver_scalars == RMAOP__SCALARS_AUTO && rmaop__gpu_per_rank(ctx);
}

/* A derivative along axis 0 of float64 (its descriptor in *d) whose ghost rows fit the kernel's table of their
 * owners (RMAOP__RES_MAX_GW a side: every stencil of RMAOP__NK taps). */
static int is_stencil(rmaop_op D, rmaop__stencil_desc *d) {
  return D && D->dtype == RMAOP_F64 && D->nparts == 0 && rmaop__op_stencil_desc(D, d) == RMAOP_OK &&
         d->hl <= RMAOP__RES_MAX_GW && d->hr <= RMAOP__RES_MAX_GW;
}

/* product(adjoint(D), D): *D set. */
static int is_normal(rmaop_op P, rmaop_op *D) {
  if (!P || strcmp(P->name, "product") != 0 || P->nparts != 2) return 0;
  const rmaop_op H = P->parts[0];
  if (strcmp(H->name, "adjoint") != 0 || H->nparts != 1 || H->parts[0] != P->parts[1]) return 0;
  *D = P->parts[1];
  return 1;
}

/* CG's operators: D^H D, or sum(D^H D, diagonal) in either order (*dg: the diagonal's own vector, else NULL). */
static int match_cg(rmaop_op A, rmaop_op *D, rmaop_vec *dg) {
  *dg = NULL;
  if (is_normal(A, D)) return 1;
  if (strcmp(A->name, "sum") != 0 || A->nparts != 2) return 0;
  for (int k = 0; k < 2; ++k)
    if (is_normal(A->parts[k], D) && (*dg = rmaop__op_diagonal_vec(A->parts[1 - k])) != NULL)
      return 1;
  return 0;
}

/* The halo transfers (rmaop__res_args: send, recv) of a stencil of gw ghost rows per side, rows split as rows[] /
 * offs[] (every rank's), like the derivative's own halo plan (op_stencil.c, build_halo). */
static void lay_out_halo(rmaop_ctx ctx, rmaop__res_args *a, const int64_t *rows, const int64_t *offs, int64_t N) {
  const int me = ctx->rank;
  const int64_t lo = offs[me], hi = offs[me] + rows[me], gw = a->gw;
  a->nsend = a->nsend_peers = a->nrecv = 0;
  for (int q = 0; q < ctx->size; ++q) {
    if (q == me || rows[q] == 0) continue;
    const int64_t want[2][2] = {{offs[q] - gw, offs[q]}, {offs[q] + rows[q], offs[q] + rows[q] + gw}};
    const int64_t base[2] = {offs[q] - gw, offs[q] + rows[q] - gw};
    int any = 0;
    for (int side = 0; side < 2; ++side) {
      int64_t s = want[side][0] > lo ? want[side][0] : lo, e = want[side][1] < hi ? want[side][1] : hi;
      if (s < 0) s = 0;
      if (e > N) e = N;
      if (s < e) {
        a->send[a->nsend++] = (rmaop__res_send){q, s - lo, e - s, s - base[side]};
        any = 1;
      }
    }
    if (any) a->send_peers[a->nsend_peers++] = q;
    /* q sends this rank ghost rows when it owns a row of [lo - gw, lo) or [hi, hi + gw) inside [0, N) */
    int from_q = 0;
    if (rows[me] > 0)
      for (int side = 0; side < 2; ++side) {
        int64_t s = side ? hi : lo - gw, e = side ? hi + gw : lo;
        if (s < offs[q]) s = offs[q];
        if (e > offs[q] + rows[q]) e = offs[q] + rows[q];
        if (s < 0) s = 0;
        if (e > N) e = N;
        from_q |= s < e;
      }
    if (from_q) a->recv[a->nrecv++] = q;
  }
  for (int gr = 0; gr < 2 * gw; ++gr) { /* ghost row gr: gw rows before lo, then gw after hi */
    const int64_t g = gr < gw ? lo - gw + gr : hi + (gr - gw);
    a->ghost_owner[gr] = -1; /* a row outside [0, N): nobody sends it, nobody reads it */
    for (int q = 0; q < ctx->size; ++q)
      if (g >= 0 && g < N && g >= offs[q] && g < offs[q] + rows[q])
        a->ghost_owner[gr] = q;
  }
}

/* The solve's scratch from the context's work buffers: s (CG: t), c, the dot partials, the history, the
 * control words (device), the progress word (host-mapped). */
enum { NSCRATCH = 6, SCRATCH_CTL = 4, SCRATCH_PROGRESS = 5 };

typedef struct {
  rmaop_win win;
  void *scratch[NSCRATCH];
  size_t bytes[NSCRATCH];
  uint64_t *stamps; /* RMAOP_RESIDENT_PROFILE */
} resident_mem;

static int scratch_pinned(int k) {
  return k == SCRATCH_PROGRESS;
}

/* After a solve that ran to its end (`keep`) the window stays with the context for the next solve; the scratch goes
 * back to the context's work buffers. Both go when the kernel may still run (`leak`: leaked). */
static void mem_free(rmaop_ctx ctx, resident_mem *m, int keep, int leak) {
  if (!leak) {
    for (int k = 0; k < NSCRATCH; ++k)
      rmaop__work_free(ctx, scratch_pinned(k), m->scratch[k], m->bytes[k]);
    rmaop__dev_free(m->stamps);
  }
  if (!keep)
    rmaop_win_destroy(&m->win);
}

/* The solve's window: the context's from the last solve when every rank's size and ghost layout (key) are the same
 * as then (agreed: its destroy and a new creation are collective), else a new one (the old one destroyed first).
 * The words peers write into a kept window were zeroed at the end of the solve that used it. */
static rmaop_status solve_window(rmaop_ctx ctx, size_t bytes, size_t key, rmaop_win *win, const char *fn) {
  int same = ctx->resident_win != NULL && ctx->resident_win_key == key, all = 0;
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, &same, &all, 1, MPI_INT, MPI_MIN, fn));
  if (all) {
    *win = ctx->resident_win;
    ctx->resident_win = NULL;
    return RMAOP_OK;
  }
  rmaop_win_destroy(&ctx->resident_win);
  void *base = NULL; /* the window's own memory; the kernel reaches it through the device handle */
  return rmaop_win_allocate(ctx, bytes, win, &base);
}

/* A solve that ran to its end on every rank leaves its window to the next: its kernel zeroed, at its end, the
 * words its peers write (every signal and message of the solve had arrived). The agreement makes every rank keep
 * the window, or every rank destroy it. Its bound covers a peer still in its kernel, whose device-side waits give
 * up after the context's timeout and whose host gives up on a kernel without progress after 1.25 times that + 1 s
 * (rmaop__dev_resident_run): a rank whose solve ended early must not give up on the agreement first, which would
 * leave that peer waiting once more in the agreement's confirmation. 1: kept. */
static int keep_window(rmaop_ctx ctx, resident_mem *m, size_t key, rmaop_status st, const char *fn) {
  int ok = st == RMAOP_OK, all = 0;
  if (rmaop__allreduce_bounded_for(ctx, &ok, &all, 1, MPI_INT, MPI_MIN, 1.25 * ctx->timeout + 2.0, fn) != RMAOP_OK ||
      !all)
    return 0;
  ctx->resident_win = m->win, ctx->resident_win_key = key;
  m->win = NULL;
  return 1;
}

/* RMAOP_RESIDENT_PROFILE=1: rank 0 prints block 0's mean time per phase over the iterations that ran whole. */
static rmaop_status print_profile(rmaop_ctx ctx, const rmaop__res_args *a, const uint64_t *dstamps, int iterations) {
  if (ctx->rank != 0 || iterations < 1) return RMAOP_OK;
  const size_t n = (size_t)iterations * RMAOP__RES_NSTAMP;
  uint64_t *t = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, n, sizeof *t, "resident solve profile", (void **)&t));
  rmaop_status st = rmaop__dev_copy(ctx, t, dstamps, n * sizeof *t);
  if (st == RMAOP_OK) st = rmaop__dev_sync(ctx);
  if (st == RMAOP_OK) {
    double sum[RMAOP__RES_NSTAMP] = {0};
    int whole = 0;
    for (int it = 0; it < iterations; ++it) {
      const uint64_t *s = t + (size_t)it * RMAOP__RES_NSTAMP;
      if (s[0] == 0 || s[RMAOP__RES_NSTAMP - 1] == 0) continue; /* the last iteration may skip its third phase */
      for (int k = 1; k < RMAOP__RES_NSTAMP; ++k) sum[k] += (double)(s[k] - s[k - 1]) * 1e-3;
      sum[0] += (double)(s[RMAOP__RES_NSTAMP - 1] - s[0]) * 1e-3;
      ++whole;
    }
    static const char *const names[2][3] = {{"alpha", "x, s, r = A^H s", "c, q = A c"},
                                            {"c, t = D c + grid sync", "A c = D^H t", "x, r update"}};
    const char *const *nm = names[a->cg ? 1 : 0];
    if (whole > 0)
      fprintf(stderr,
              "rmaop: resident %s profile (rank 0, block 0's clock), mean us per iteration over %d: %s %.1f | %s "
              "%.1f, then its reduction %.1f | %s %.1f, then its reduction %.1f | iteration %.1f\n",
              a->cg ? "CG" : "CGLS", whole, nm[0], sum[1] / whole, nm[1], sum[2] / whole, sum[3] / whole, nm[2],
              sum[4] / whole, sum[5] / whole, sum[0] / whole);
  }
  free(t);
  return st;
}

/* Everything but the vectors, then the kernel, then info. Collective: entered by every rank (eligibility agreed). */
static rmaop_status run(rmaop_op A, rmaop_op D, rmaop_vec dg, rmaop__res_args *a, rmaop_vec x,
                        const rmaop_solver_options *o, rmaop_solver_info *info, const char *fn) {
  rmaop_ctx ctx = A->ctx;
  resident_mem m = {0};
  rmaop_status st = RMAOP_OK;
  const int P = ctx->size;
  const int64_t ninner = a->sd.ninner, n = x->local_n;
  int64_t *rows = NULL, *offs = NULL;
  a->gw = a->sd.hl > a->sd.hr ? a->sd.hl : a->sd.hr;
  a->lean = a->gw == 1 && a->sd.cint[0] == 0.0 && a->sd.cint[RMAOP__NK - 1] == 0.0;
  a->n = n;
  const int64_t want = (n + VIRTUAL_THREADS * 4 - 1) / (VIRTUAL_THREADS * 4);
  a->nb = n <= 0 ? 0 : (int)(want < 1 ? 1 : want > VIRTUAL_BLOCKS ? VIRTUAL_BLOCKS : want);
  const size_t red = 2 * (size_t)P * RMAOP__RES_SLOT_WORDS * sizeof(uint64_t);
  a->ghost_off = (red + 127) & ~(size_t)127;
  a->inl = (int64_t)a->gw * ninner <= RMAOP__RES_INLINE_GHOST;
  const size_t ghosts = (size_t)(2 * 2 * 2 * a->gw) * (size_t)ninner; /* [2 halos][2 parities][2 gw][ninner] */
  a->inline_off = a->ghost_off + ghosts * sizeof(double);
  const size_t win_bytes = a->inline_off + (a->inl ? ghosts * 2 * sizeof(uint64_t) : 0);
  const size_t win_key = win_bytes * 2 + (size_t)a->inl;
  const size_t vbytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
  st = rmaop__calloc(ctx, 2 * (size_t)P, sizeof *rows, "resident solve layout", (void **)&rows);
  if (st == RMAOP_OK) {
    offs = rows + P;
    for (int q = 0; q < P; ++q) rows[q] = D->model->sizes[q] / ninner, offs[q] = D->model->offsets[q] / ninner;
    lay_out_halo(ctx, a, rows, offs, a->sd.cs.N);
  }
  static const char *const what[NSCRATCH] = {"resident solve scratch vector", "resident solve direction",
                                             "resident solve dot partials",   "resident solve history",
                                             "resident solve control",        "resident solve progress"};
  const size_t bytes[NSCRATCH] = {vbytes,
                                  vbytes,
                                  (size_t)(a->nb > 0 ? a->nb : 1) * 4 * sizeof(double),
                                  ((size_t)o->niter + 1) * sizeof(double),
                                  sizeof(rmaop__res_ctl),
                                  sizeof(int)};
  for (int k = 0; k < NSCRATCH && st == RMAOP_OK; ++k) {
    st = rmaop__work_alloc(ctx, scratch_pinned(k), bytes[k], what[k], &m.scratch[k]);
    if (st == RMAOP_OK)
      m.bytes[k] = bytes[k];
  }
  if (st == RMAOP_OK && ctx->resident_profile)
    st = rmaop__dev_malloc(ctx, ((size_t)o->niter + 1) * RMAOP__RES_NSTAMP * sizeof(uint64_t),
                           "resident solve profile stamps", (void **)&m.stamps);
  st = rmaop__agree(ctx, st, fn);
  if (st == RMAOP_OK)
    st = solve_window(ctx, win_bytes, win_key, &m.win, fn);
  int grid = 0;
  if (st == RMAOP_OK) {
    st = rmaop_win_device_handle(m.win, &a->w);
    const int ndev = rmaop__dev_count();
    grid = rmaop__dev_resident_grid(ctx, a->nb, ndev > 0 ? (P + ndev - 1) / ndev : 1);
    if (st == RMAOP_OK && grid < 1)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED, "%s: GPU %d cannot launch cooperative kernels", fn, ctx->device);
    st = rmaop__agree(ctx, st, fn);
  }
  int stuck = 0;
  if (st == RMAOP_OK) {
    a->c[1] = m.scratch[1];
    if (a->cg) a->t = m.scratch[0];
    else a->s[1] = m.scratch[0];
    a->part = m.scratch[2], a->hist = m.scratch[3], a->ctl = m.scratch[SCRATCH_CTL];
    a->progress = m.scratch[SCRATCH_PROGRESS], a->stamps = m.stamps;
    a->dg = dg ? dg->data : NULL;
    st = rmaop__dev_resident_run(ctx, a, grid, fn, &stuck);
  }
  if (st == RMAOP_OK) {
    rmaop__res_ctl ctl;
    st = rmaop__dev_copy(ctx, &ctl, a->ctl, sizeof ctl);
    if (st == RMAOP_OK) st = rmaop__dev_sync(ctx);
    if (st == RMAOP_OK && ctl.abort)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT, "%s: rank %d's GPU-resident solve stopped: a device-side wait for a peer "
                       "gave up", fn, ctx->rank);
    if (st == RMAOP_OK) {
      info->iterations = ctl.iterations, info->reason = (rmaop_reason)ctl.reason, info->kold = ctl.kold;
      ++ctx->resident_solves;
      st = rmaop__dev_copy(ctx, info->history, a->hist, ((size_t)ctl.iterations + 1) * sizeof(double));
      if (st == RMAOP_OK) st = rmaop__dev_sync(ctx);
      if (st == RMAOP_OK && m.stamps) st = print_profile(ctx, a, m.stamps, ctl.iterations);
    }
  }
  const int keep = m.win != NULL && keep_window(ctx, &m, win_key, st, fn);
  free(rows);
  mem_free(ctx, &m, keep, stuck);
  return st;
}

/* Whether the kernel can run this solve, agreed by the ranks (a rank's answer can only differ through a bug, but a
 * disagreement would leave the others waiting in the window's creation). */
static rmaop_status eligible(rmaop_op A, rmaop_vec x, const rmaop_solver_options *o, int ok, int *all) {
  rmaop_ctx ctx = A->ctx;
  ok = ok && o->callback == NULL && x->dtype == RMAOP_F64 && rmaop__dev_ipc_path(ctx) &&
       rmaop__dev_resident_grid(ctx, 1, 1) > 0; /* the GPU launches cooperative kernels */
  *all = 0;
  return rmaop__allreduce_bounded(ctx, &ok, all, 1, MPI_INT, MPI_MIN, "resident solve eligibility");
}

/* A solve the kernel cannot run: under RMAOP_SOLVER_SCALARS=auto none here (*ran = 0: the caller's host-scalar loop
 * runs it); under resident the device-scalar loops as under `while` (one CUDA graph for the solve, the fastest of
 * the graph forms measured, PERFORMANCE.md; with a callback a graph per iteration), where the path can capture
 * (solver_device.c falls back to eager device scalars where it cannot). */
#define FALLBACK(ctx, ran, call)                                                                                       \
  do {                                                                                                                 \
    const int saved_ = (ctx)->solver_scalars;                                                                          \
    if (saved_ == RMAOP__SCALARS_AUTO) {                                                                               \
      *(ran) = 0;                                                                                                      \
      return RMAOP_OK;                                                                                                 \
    }                                                                                                                  \
    (ctx)->solver_scalars = RMAOP__SCALARS_WHILE;                                                                      \
    const rmaop_status st_ = (call);                                                                                   \
    (ctx)->solver_scalars = saved_;                                                                                    \
    return st_;                                                                                                        \
  } while (0)

rmaop_status rmaop__solve_cg_resident(rmaop_op A, rmaop_vec x, rmaop_vec r, rmaop_vec c, rmaop_vec Ac,
                                      const rmaop_solver_options *o, rmaop_solver_info *info, int *ran) {
  static const char fn[] = "rmaop_solve_cg (resident)";
  rmaop_op D = NULL;
  rmaop_vec dg = NULL;
  rmaop__res_args *a = NULL;
  int ok = match_cg(A, &D, &dg);
  rmaop__stencil_desc sd;
  ok = ok && is_stencil(D, &sd) && x->local_n == sd.n * sd.ninner &&
       (!dg || (dg->dtype == RMAOP_F64 && dg->local_n == x->local_n && RMAOP__ON_DEVICE(dg)));
  int go = 0;
  RMAOP_CHECK(eligible(A, x, o, ok, &go));
  *ran = 1;
  if (!go) FALLBACK(A->ctx, ran, rmaop__solve_cg_device(A, x, r, c, Ac, o, info));
  rmaop_status st = rmaop__agree(A->ctx, rmaop__calloc(A->ctx, 1, sizeof *a, "resident solve", (void **)&a), fn);
  if (st != RMAOP_OK) return st;
  a->cg = 1, a->niter = o->niter, a->tol = o->tol, a->sd = sd;
  a->x = x->data, a->r = r->data, a->c[0] = c->data, a->q = Ac->data;
  st = run(A, D, dg, a, x, o, info, fn);
  free(a);
  return st;
}

rmaop_status rmaop__solve_cgls_resident(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                        double damp2, const rmaop_solver_options *o, rmaop_solver_info *info,
                                        int *ran) {
  static const char fn[] = "rmaop_solve_cgls (resident)";
  rmaop__res_args *a = NULL;
  rmaop__stencil_desc sd;
  const int ok = is_stencil(A, &sd) && x->local_n == sd.n * sd.ninner && s->local_n == x->local_n;
  int go = 0;
  RMAOP_CHECK(eligible(A, x, o, ok, &go));
  *ran = 1;
  if (!go) FALLBACK(A->ctx, ran, rmaop__solve_cgls_device(A, x, s, q, r, c, damp2, o, info));
  rmaop_status st = rmaop__agree(A->ctx, rmaop__calloc(A->ctx, 1, sizeof *a, "resident solve", (void **)&a), fn);
  if (st != RMAOP_OK) return st;
  a->cg = 0, a->niter = o->niter, a->tol = o->tol, a->damp2 = damp2, a->sd = sd;
  a->x = x->data, a->s[0] = s->data, a->q = q->data, a->r = r->data, a->c[0] = c->data;
  st = run(A, A, NULL, a, x, o, info, fn);
  free(a);
  return st;
}
