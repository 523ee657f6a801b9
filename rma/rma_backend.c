/* The rma backend: plans and reductions as put epochs on windows (win.c, epoch.c).
 *
 * Plans. One window per plan over a receive staging buffer (the core's staging layout: incoming
 * transfers by origin rank, then the origin's order). Begin: open the epoch with the plan's send peers
 * as targets and receive peers as origins, put every transfer into its target's staging, complete the
 * origin side. End: wait for the origins, unpack staging into dst (rmaop__plan_unpack, which applies
 * self transfers in rank order, so every backend gives bitwise identical results).
 *
 * Reductions. Every rank puts its `count` partials into slot[me] of every peer's reduction window in
 * one epoch; then every rank combines slots 0..P-1 in rank order: identical bits on every rank.
 *
 * Double buffering. In fence and lock modes the staging (and the reduction slots) has two halves,
 * used by epoch parity, which lets the epochs skip their "is the target ready" step:
 *  - lock, a pair of ranks that send to each other (all pairs of a reduction, every pair of a
 *    symmetric plan): my epoch k+2 put into t's half (k mod 2) happens after my epoch k+1 ended, i.e.
 *    after I saw t's epoch k+1 data arrive; t sent those in its begin k+1, after its end k, where it
 *    finished reading half (k mod 2). So t's previous use of the half is over without a handshake.
 *    Pairs that only go one way keep the ready handshake (a target announces readiness right after it
 *    unpacked, rma__post_ready, so the origin rarely waits for it).
 *  - fence: the closing fence of epoch k+1 is collective, and every rank reaches it only after it
 *    unpacked epoch k; so the next epoch's puts into half (k mod 2) need no opening fence: one fence
 *    per execution instead of two.
 * PSCW needs none of this: "start" waits for the target's "post", which the target issues once it
 * consumed the previous epoch (in its next begin, or right after its unpack: rma__post_ready).
 *
 * Device contexts (win.c says which transport when). A plan whose staging window is GPU memory (ipc)
 * reads the device src and writes the device staging itself (plan->dev_native = 1); every step is
 * enqueued on the context's stream, nothing synchronizes the host, and the unpack kernels follow the
 * flag waits in stream order. The double-buffering argument above holds in stream terms: t's "done"
 * of epoch k+1 is written on t's stream after t's unpack of epoch k, and my puts of epoch k+2 are
 * enqueued after my stream waited for that "done"; fence on ipc is the lock handshake, so the lock
 * half of the argument is the one that applies. With a CUDA-aware MPI and transport mpi (or auto across
 * nodes) the staging is GPU memory in an MPI window (win.c): src and staging are device pointers handed to
 * MPI_Put, and the epoch drains the stream when it opens (MPI does not follow it), which also finishes the
 * previous execution's unpack kernels before any origin may write the staging again, so the end leaves them
 * running (end_waits_for_stream). Any other plan on a device context keeps a HOST
 * staging window (mpi, shm): begin reads the host copy of the send ranges (rmaop__plan_send_src,
 * which synchronizes), end hands the host staging to rmaop__plan_unpack, which copies it to the GPU,
 * and waits for that copy before the staging can be announced as free again (rma__post_ready, and
 * the origins' next puts). Reductions always use host windows: the table passes host doubles.
 *
 * Ordering. Begin completes the origin side (lock: flush + "done" flags; pscw: MPI_Win_complete),
 * so an end only waits for peers' begins: several outstanding plans and reductions may be ended in
 * any order on any rank without deadlock (lock and pscw; fence is collective and completes in call
 * order). */
#include "rma_win.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/shmem.h"
#include "device/device.h"
#ifdef RMAOP_HAVE_CUDA
#include "ipc_batch.h"
#endif

/* ---- plans ---- */

typedef struct {
  rmaop_win win;  /* NULL when no rank sends anything to another rank */
  char *staging;  /* the window memory */
  int doubled;    /* staging has two halves (fence, lock) */
  int odd;        /* the current execution uses the second half */
  unsigned flags; /* epoch flags */
  /* All-to-all blocks straight into the destination (plan_setup_direct; empty lists when the plan has none). */
  int nto, nfrom;        /* pairs that take part, as origin and as target */
  int *to;               /* [nsend_peers] target ranks of those pairs */
  unsigned char *to_g;   /* [nsend_peers] 1: send group g's pair takes part */
  unsigned char *from_g; /* [nrecv_peers] 1: receive group g's pair takes part */
  unsigned char *skip;   /* [nrecv_peers] this execution's origins that put straight into dst */
  int offered;           /* this execution offered dst (skip has a 1) */
  const char *transport; /* the plan's trace transport when nothing came straight into dst */
  int disjoint;          /* this rank's receives, self included, write disjoint ranges of dst */
} rma_plan;

static int double_buffered(rmaop_ctx ctx) {
  return rma__settings(ctx)->sync != RMAOP_SYNC_PSCW;
}

/* "shm", "mpi", "mixed" over the plan's peers, "self" when nothing leaves this rank. */
static const char *plan_transport(rmaop_plan plan, rmaop_win win) {
  const char *name = NULL;
  for (int i = 0; i < plan->nsend_peers + plan->nrecv_peers; ++i) {
    int p = i < plan->nsend_peers ? plan->send_peers[i] : plan->recv_peers[i - plan->nsend_peers];
    const char *n = win->tp[p]->name;
    if (!name)
      name = n;
    else if (strcmp(name, n) != 0)
      return "mixed";
  }
  return name ? name : "self";
}

static void plan_trace_shape(rmaop_plan plan) {
  int64_t elems = 0;
  for (int i = 0; i < plan->nsend; ++i)
    elems += plan->send[i].count;
  plan->trace_messages = (uint64_t)plan->nsend; /* one put per transfer */
  plan->trace_bytes_per_message = plan->nsend ? (double)elems * (double)plan->esize / plan->nsend : 0.0;
}

/* Collective. Whether any rank sends to another one: if none, the plan needs no window at all. *direct_min:
 * RMAOP_RMA_DIRECT_MIN as all ranks take it, the largest of theirs, 0 when any rank has 0 (off). */
static rmaop_status plan_needs_window(rmaop_plan plan, rmaop_status local, int *needed, int64_t *direct_min) {
  rmaop_ctx ctx = plan->ctx;
  const size_t min = rma__settings(ctx)->direct_min;
  int64_t v[3] = {plan->nsend_peers + plan->nrecv_peers > 0, local != RMAOP_OK, min ? (int64_t)min : INT64_MAX}, r[3];
  RMAOP_CHECK_MPI(ctx, MPI_Allreduce(v, r, 3, MPI_INT64_T, MPI_MAX, ctx->comm));
  if (local != RMAOP_OK)
    return local;
  if (r[1])
    return RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "rma plan set-up failed on another rank; its message says why");
  *needed = (int)r[0];
  *direct_min = r[2] == INT64_MAX ? 0 : r[2];
  return RMAOP_OK;
}

/* ---- all-to-all blocks straight into the destination ----
 * A staged block is copied twice, into the target's staging and out of it at the end; a block put straight into
 * the target's destination once. That needs the destination's address per execution and memory the origin can
 * write: the target offers it at each begin (rma__offer: where in which node-shared buffer, src/core/shmem.h, or
 * "none") and its origins put there instead of into the staging, then flag "done" as always; the target's unpack
 * skips them. Taken by a pair of an all-to-all plan (its receives may not overlap, so the order in which origins
 * write does not matter) on a host window in lock mode, over shm, whose block is at least RMAOP_RMA_DIRECT_MIN
 * bytes; both ends know that from the plan alone, so both know whether an offer comes. The target offers only in
 * INSERT mode, when dst lies in one node-shared buffer (vectors and the operators' buffers of a host context,
 * rmaop__mem_calloc_node) and does not overlap src (an origin's writes may come before this rank read src). The
 * offer costs one flag wait in begin, which a pair that sends both ways skips when staged (double buffering, at
 * the top of this file): hence the size threshold. ARCHITECTURE.md, "All-to-all and redistribution", has the
 * measurements. */

/* Whether [a, a + na) and [b, b + nb) overlap. */
static int overlaps(const char *a, size_t na, const char *b, size_t nb) {
  return na && nb && a < b + nb && b < a + na;
}

static int direct_pair(rmaop_plan plan, rmaop_win w, int peer, int64_t elems, int64_t min) {
  return min > 0 && (uint64_t)elems * plan->esize >= (uint64_t)min && w->tp[peer] == &rma__transport_shm;
}

/* plan_setup_direct's lists and the disjointness check, before the plan's agreement (plan_needs_window), so that a
 * failure here fails the plan on every rank. Only for plans that may take part. */
static rmaop_status plan_alloc_direct(rmaop_plan plan, rma_plan *rp) {
  rmaop_ctx ctx = plan->ctx;
  if (!plan->alltoall || RMAOP__ON_DEVICE(ctx) || !ctx->shm)
    return RMAOP_OK;
  const size_t ns = (size_t)plan->nsend_peers, nr = (size_t)plan->nrecv_peers;
  RMAOP_CHECK(rmaop__calloc(ctx, ns + 1, sizeof *rp->to, "rma plan direct targets", (void **)&rp->to));
  RMAOP_CHECK(rmaop__calloc(ctx, ns + 2 * nr + 1, 1, "rma plan direct pairs", (void **)&rp->to_g));
  rp->from_g = rp->to_g + ns;
  rp->skip = rp->from_g + nr;
  return rmaop__plan_dst_disjoint(plan, &rp->disjoint);
}

/* Which pairs take part, once the window exists. `min`: RMAOP_RMA_DIRECT_MIN as every rank agreed on it (0: off).
 * Local, allocates nothing. */
static void plan_setup_direct(rmaop_plan plan, rma_plan *rp, int64_t min) {
  rmaop_win w = rp->win;
  if (!rp->to_g || !w || w->device || !w->flag_sync || min <= 0)
    return;
  for (int g = 0; g < plan->nsend_peers; ++g)
    if ((rp->to_g[g] = (unsigned char)direct_pair(plan, w, plan->send_peers[g], plan->send_peer_count[g], min)))
      rp->to[rp->nto++] = plan->send_peers[g];
  for (int g = 0; g < plan->nrecv_peers; ++g)
    if ((rp->from_g[g] = (unsigned char)direct_pair(plan, w, plan->recv_peers[g], plan->recv_peer_count[g], min)))
      rp->nfrom++;
  rp->transport = plan->trace_transport;
}

/* Target side of begin: the offer to every pair that takes part (rma__epoch_begin has counted the epoch). */
static rmaop_status offer_dst(rmaop_plan plan, rma_plan *rp) {
  const size_t es = plan->esize;
  rmaop__shm_ref ref = {0};
  const int offered = rp->disjoint && plan->cur_mode == RMAOP_INSERT &&
                      !overlaps(plan->cur_src, (size_t)plan->src_len * es, plan->cur_dst, (size_t)plan->dst_len * es) &&
                      rmaop__shm_find(plan->ctx, plan->cur_dst, (size_t)plan->dst_len * es, &ref);
  const int64_t fields[RMA_OFFER_FIELDS] = {offered ? ref.owner : 0, ref.seq, ref.offset};
  rp->offered = offered;
  for (int g = 0; g < plan->nrecv_peers; ++g) {
    rp->skip[g] = (unsigned char)(rp->from_g[g] && offered);
    if (rp->from_g[g])
      RMAOP_CHECK(rma__offer(rp->win, plan->recv_peers[g], fields));
  }
  return RMAOP_OK;
}

/* Origin side: send group g's transfers into the target's offered destination. *put = 0 when it offered none. */
static rmaop_status put_direct(rmaop_plan plan, rma_plan *rp, const char *src, int g, int *put) {
  const int t = plan->send_peers[g];
  int64_t f[RMA_OFFER_FIELDS];
  RMAOP_CHECK(rma__offer_read(rp->win, t, f));
  *put = f[0] != 0;
  const size_t es = plan->esize;
  for (int j = plan->send_peer_first[g]; *put && j < plan->send_peer_first[g + 1]; ++j) {
    const rmaop_transfer *x = &plan->send[j];
    const size_t bytes = (size_t)x->count * es;
    const rmaop__shm_ref at = {.owner = f[0], .seq = f[1], .offset = f[2] + x->dst_offset * (int64_t)es};
    char *dst = NULL;
    RMAOP_CHECK(rmaop__shm_map(plan->ctx, t, &at, bytes, &dst));
    memcpy(dst, src + (size_t)x->src_offset * es, bytes);
  }
  return RMAOP_OK;
}

static void plan_free_direct(rma_plan *rp) {
  free(rp->to);
  free(rp->to_g);
}

static rmaop_status plan_setup(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  rma_plan *rp = NULL;
  rmaop_status local = rmaop__calloc(ctx, 1, sizeof *rp, "rma plan state", (void **)&rp);
  if (local == RMAOP_OK && (uint64_t)plan->recv_total > (uint64_t)INT64_MAX / 4 / plan->esize)
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rma plan \"%s\": %lld incoming elements do not fit in a window",
                        plan->label, (long long)plan->recv_total);
  if (local == RMAOP_OK)
    local = plan_alloc_direct(plan, rp);
  int needed = 0;
  int64_t direct_min = 0;
  rmaop_status st = plan_needs_window(plan, local, &needed, &direct_min);
  if (st != RMAOP_OK) {
    if (rp)
      plan_free_direct(rp);
    free(rp);
    return st;
  }
  rp->doubled = double_buffered(ctx);
  rp->flags = rp->doubled ? RMA_EPOCH_SKIP_READY_MUTUAL : 0;
  plan_trace_shape(plan);
  plan->trace_transport = "self";
  /* Collective-consistent: every rank of the context takes the same branch. */
  const int on_device = rma__plan_on_device(ctx);
  /* No window at all moves nothing through host memory either. */
  plan->dev_native = ctx->memory == RMAOP_MEMORY_DEVICE && (on_device || !needed);
  if (needed) {
    size_t bytes = (size_t)plan->recv_total * plan->esize * (rp->doubled ? 2 : 1);
    void *base = NULL;
    st = rma__win_make(ctx, 1, NULL, bytes, on_device ? RMA_WIN_DEVICE : 0, &rp->win, &base);
    if (st != RMAOP_OK) {
      plan_free_direct(rp);
      free(rp);
      return st;
    }
    rp->staging = base;
    snprintf(rp->win->what, sizeof rp->win->what, "plan \"%s\"", plan->label);
    plan->trace_transport = plan_transport(plan, rp->win);
  }
  plan->backend_data = rp;
  plan_setup_direct(plan, rp, direct_min); /* this rank's view of pairs that both ends decide alike */
  return RMAOP_OK;
}

static void plan_free(rmaop_plan plan) {
  rma_plan *rp = plan->backend_data;
  if (!rp)
    return;
  rmaop_win_destroy(&rp->win);
  plan_free_direct(rp);
  free(rp);
  plan->backend_data = NULL;
}

static rmaop_status plan_begin(rmaop_plan plan) {
  rma_plan *rp = plan->backend_data;
  rmaop_win w = rp->win;
  if (!w)
    return RMAOP_OK;
  /* Host staging on a device context: the send ranges copied to the host (synchronizes); else cur_src. */
  const char *src = rmaop__plan_send_src(plan);
  if (!src && plan->nsend > 0)
    return RMAOP_ERR_CUDA; /* recorded by the core */
  /* Captured into a CUDA graph: the replays reuse the staging half of the capture, so no half may be
   * skipped into without a handshake: full "ready" handshake, first half. The first epoch after a capture
   * does the full handshake too, since its peers' last use of either half is unknown to the host. */
  unsigned flags = rp->flags;
  if (plan->capturing || w->captured)
    flags = 0;
  w->captured = plan->capturing;
  RMAOP_CHECK(rma__epoch_begin(w, plan->nsend_peers, plan->send_peers, plan->nrecv_peers, plan->recv_peers, flags));
  rp->odd = rp->doubled && !plan->capturing && (w->epoch & 1);
  if (rp->nfrom)
    RMAOP_CHECK(offer_dst(plan, rp));
  if (rp->nto) /* after this rank's own offers: two ranks that offer to each other never wait on each other */
    RMAOP_CHECK(rma__offers_wait(w, rp->nto, rp->to));
  /* The peers in ring order from this rank (the first one above it, wrapping): when every rank puts to several
   * peers, one after the other as a stream's copies go, no rank then has all the others writing into it at once
   * (ascending order would make rank 0 everyone's first target). 4 x H200, all-to-all of 64 MiB per pair: 1192 us
   * in ascending order, the raw IPC copy in ring order 584 us (docs/PERFORMANCE.md). */
  const size_t es = plan->esize;
  int g0 = 0;
  while (g0 < plan->nsend_peers && plan->send_peers[g0] < plan->ctx->rank) ++g0;
  for (int k = 0; k < plan->nsend_peers; ++k) {
    const int g = (g0 + k) % plan->nsend_peers;
    int put = 0;
    if (rp->nto && rp->to_g[g])
      RMAOP_CHECK(put_direct(plan, rp, src, g, &put));
    for (int j = plan->send_peer_first[g]; !put && j < plan->send_peer_first[g + 1]; ++j) {
      const rmaop_transfer *t = &plan->send[j];
      const size_t half = rp->odd ? w->sizes[t->peer] / 2 : 0; /* the target's staging is doubled too */
      RMAOP_CHECK(rma__put(w, src + (size_t)t->src_offset * es, (size_t)t->count * es, t->peer,
                           half + (size_t)plan->send_disp[j] * es));
    }
  }
  return rma__epoch_origin_done(w);
}

/* CUDA graphs: a plan without a window, or over an ipc window on the kernel path, whose flag values come
 * from device counters (transport_ipc.c) and whose captured epochs use one staging half with the full
 * handshake (plan_begin). */
static const char *plan_capture_refusal(rmaop_plan plan) {
  const rma_plan *rp = plan->backend_data;
  if (!rp->win)
    return NULL;
  if (!rp->win->device)
    return "its rma window is not GPU memory reached by ipc (MPI or host staging), so its epochs wait on the host";
  if (!rma__ipc_graph_ok(rp->win))
    return "the ipc copy path writes flag values fixed when the work is enqueued, which a replay would repeat; "
           "RMAOP_IPC_PATH=kernel takes them from device counters";
  return NULL;
}

/* Every plan window of such a context is an ipc window on the kernel path; the one-kernel device reduction
 * (or the gather plan) is capturable there too. */
static int ctx_capturable(rmaop_ctx ctx) {
  return rma__plan_on_device(ctx) && !rma__gpu_over_mpi(ctx) && rma__settings(ctx)->ipc_path == RMA_IPC_PATH_KERNEL;
}

/* Whether the end must wait until the context's stream has read the staging: when the stream reads it
 * outside the epochs' own order and nothing later waits for that before an origin may write it again.
 *  - Host staging on a device context: yes. The core copies it to the GPU on the stream, and neither
 *    rma__post_ready nor the origins' next epoch waits for the stream. (With pageable window memory
 *    cudaMemcpyAsync has read the source when it returns, but that is the runtime's behaviour, not a
 *    contract with MPI's window memory, which may be registered.)
 *  - GPU staging over MPI (dev_mpi, the unpack kernels read it): no. This rank's next rma__epoch_begin
 *    drains the stream before it lets any origin at the staging again: pscw posts only after that drain,
 *    and under fence the next puts into this half come after this rank's next closing fence, which
 *    follows that begin; a destroyed plan's window drains in rmaop_win_destroy. A flag handshake would
 *    announce readiness in rma__post_ready, right after this unpack, so such a window would still be
 *    drained here; lock, the only one, is not enabled over MPI on GPU memory (rma__gpu_over_mpi).
 *  - GPU staging over ipc: no, the flags that free it are stream-ordered after the unpack kernels.
 * The user's buffers need no drain either: on a device context the end completes in stream order
 * (rmaop_ctx_synchronize before other streams read dst), as on ipc; MPI_Win_complete (in begin) or
 * the closing fence (in rma__epoch_end) already completed MPI's reads of src. */
static int end_waits_for_stream(rmaop_plan plan, rmaop_win w) {
  if (plan->ctx->memory != RMAOP_MEMORY_DEVICE || w->device)
    return 0;
  return !w->dev_mpi || w->flag_sync;
}

static rmaop_status stream_done(rmaop_plan plan) {
  return rmaop__dev_sync(plan->ctx);
}

/* A GPU window's unpack: plain copies join the end's kernel (ipc kernel path); an ADD, or a copy the
 * kernel cannot take, goes to the core after the end's waits were launched. */
static rmaop_status unpack_into_kernel(rmaop_plan plan, void *dst, const void *src, size_t bytes, rmaop_mode mode,
                                       int *taken) {
  rmaop_win w = ((rma_plan *)plan->backend_data)->win;
  if (mode != RMAOP_INSERT)
    return rma__ipc_submit(w, 0);
  return rma__ipc_local_copy(w, dst, src, bytes, taken);
}

static rmaop_status plan_end(rmaop_plan plan) {
  rma_plan *rp = plan->backend_data;
  rmaop_win w = rp->win;
  if (!w)
    return rmaop__plan_unpack(plan, NULL);
  /* GPU window: the end's waits, the unpack's copies and the "ready" flags of rma__post_ready become one
   * kernel on the ipc kernel path (one launch instead of three or more; elsewhere nothing changes). */
  w->fuse_unpack = w->device;
  rmaop_status st = rma__epoch_end(w);
  w->fuse_unpack = 0;
  RMAOP_CHECK(st);
  const char *staging = rp->staging + (rp->odd ? w->bytes / 2 : 0);
  const rmaop__unpack_from from = {
      .staging = staging, .skip = rp->nfrom ? rp->skip : NULL, .apply = w->device ? unpack_into_kernel : NULL};
  st = rmaop__plan_unpack(plan, &from);
  RMAOP_CHECK(st); /* rma__post_ready below launches what is pending, with its flags */
  /* The trace says which way this execution's blocks came. */
  if (rp->nfrom)
    plan->trace_transport = rp->offered ? "shm-direct" : rp->transport;
  if (end_waits_for_stream(plan, w))
    RMAOP_CHECK(stream_done(plan));
  return rma__post_ready(w);
}

/* ---- reductions ---- */

/* One reduction in flight per context: a begin while another is outstanding completes that one
 * first (its result is written then; its end only returns the status). All ranks begin reductions in
 * the same order, so they complete them in the same order. */
typedef struct {
  double *out;
  int64_t count;
  rmaop_redop op;
  int odd;
  int finished;
  int in_use; /* handed out and not yet ended */
  int heap;   /* allocated because the ring was full */
  rmaop_status status;
} rma_reduce;

/* Requests come from a small ring, so a reduction allocates nothing; more than RMA_REDUCE_RING
 * requests begun and not yet ended fall back to the heap. */
#define RMA_REDUCE_RING 8

typedef struct {
  rmaop_win dwin; /* device reductions in one kernel (reduce_device): NULL until the first */
  int dstate;     /* 0: not tried yet, 1: dwin is an ipc window, -1: not available (the core's plan path) */
  rmaop_win win;  /* NULL until the first reduction on more than one rank */
  double *slots;  /* [2][size][cap] */
  int64_t cap;    /* doubles per slot */
  int *peers;     /* [size - 1] every other rank, ascending */
  rma_reduce *pending;
  rma_reduce ring[RMA_REDUCE_RING];
  unsigned next;
} rma_ctx;

/* ---- options ---- */

static const rmaop__config_entry rma_rows[] = {
    {"RMAOP_RMA_SYNC", "lock", "fence|pscw|lock", "epoch synchronization of the rma backend"},
    {"RMAOP_RMA_TRANSPORT", "auto", "auto|mpi|shm|ipc", "how the rma backend moves bytes to a peer"},
    {"RMAOP_IPC_STORE_MAX", "65536", "bytes",
     "on the kernel path, ipc puts up to this size are stores from the kernel"},
    {"RMAOP_IPC_PATH", "auto", "auto|kernel|copy", "how the ipc transport moves small epochs to a peer"},
    {"RMAOP_IPC_HOST_FLAGS", "1", "0|1",
     "public epochs of GPU windows exchange \"ready\" and \"done\" through host memory (0: through GPU memory)"},
    {"RMAOP_RMA_DIRECT_MIN", "32768", "bytes, 0 = off",
     "host memory, lock: all-to-all blocks of at least this size go straight into the peer's destination"},
};

static rmaop_status settings_parse(rmaop_ctx ctx, const rmaop_ctx_options *o, void *settings) {
  static const char *const ipc_path_names[] = {"auto", "kernel", "copy", NULL}; /* = RMA_IPC_PATH_* */
  rma_settings *st = settings;
  int i = 0;
  RMAOP_CHECK(rmaop__parse_name(ctx, "rma sync mode (RMAOP_RMA_SYNC)", rmaop__option_value(o->rma.sync, "RMAOP_RMA_SYNC"),
                                rmaop__sync_names, &i));
  st->sync = (rmaop_sync)i;
  RMAOP_CHECK(rmaop__parse_name(ctx, "rma transport (RMAOP_RMA_TRANSPORT)",
                                rmaop__option_value(o->rma.transport, "RMAOP_RMA_TRANSPORT"), rmaop__transport_names, &i));
  st->transport = (rmaop_transport)i;
  double store_max = 0;
  RMAOP_CHECK(rmaop__option_number(ctx, "RMAOP_IPC_STORE_MAX", 1, 0, 0x1p30, "a byte count in [0, 2^30]", &store_max));
  st->ipc_store_max = (size_t)store_max;
  RMAOP_CHECK(rmaop__parse_name(ctx, "ipc path (RMAOP_IPC_PATH)", rmaop__option_value(o->rma.ipc_path, "RMAOP_IPC_PATH"),
                                ipc_path_names, &i));
  st->ipc_path = i;
  double host_flags = 0;
  RMAOP_CHECK(rmaop__option_number(ctx, "RMAOP_IPC_HOST_FLAGS", 1, 0, 1, "0 or 1", &host_flags));
  st->ipc_host_flags = host_flags != 0;
  double direct_min = 0;
  RMAOP_CHECK(
      rmaop__option_number(ctx, "RMAOP_RMA_DIRECT_MIN", 1, 0, 0x1p40, "a byte count in [0, 2^40]", &direct_min));
  st->direct_min = (size_t)direct_min;
  RMAOP_REQUIRE(ctx, st->transport != RMAOP_TRANSPORT_IPC || ctx->memory == RMAOP_MEMORY_DEVICE, RMAOP_ERR_UNSUPPORTED,
                "rma transport \"ipc\" moves GPU memory: it needs RMAOP_MEMORY=device");
  return RMAOP_OK;
}

static void info(const void *settings, rmaop_ctx_info *info) {
  const rma_settings *st = settings;
  info->rma.sync = st->sync;
  info->rma.transport = st->transport;
}

static const char *sync_name(rmaop_ctx ctx) {
  return rmaop_sync_name(rma__settings(ctx)->sync);
}

/* Gets through the public windows reach host memory always, and device memory where the context's GPU windows
 * are ipc windows (public GPU windows over mpi or shm stage or are refused, win.c). */
static int win_gets_direct(rmaop_ctx ctx) {
  return ctx->memory == RMAOP_MEMORY_HOST || (rma__plan_on_device(ctx) && !rma__gpu_over_mpi(ctx));
}

/* ---- context ---- */

static rmaop_status init(rmaop_ctx ctx) {
  rma_ctx *s = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "rma context state", (void **)&s));
  if (rmaop__calloc(ctx, (size_t)ctx->size, sizeof(int), "rma peer list", (void **)&s->peers) != RMAOP_OK) {
    free(s);
    return RMAOP_ERR_NOMEM;
  }
  for (int r = 0, n = 0; r < ctx->size; ++r)
    if (r != ctx->rank)
      s->peers[n++] = r;
  ctx->backend_data = s;
  /* Node-shared buffers for the all-to-alls straight into the destination (plan_setup_direct). Collective: the
   * memory kind and the size are the same on every rank; RMAOP_RMA_DIRECT_MIN may not be, so every rank probes,
   * and a rank whose setting is 0 takes no shared buffers (its plans then make every rank agree on "off"). */
  const size_t min = rma__settings(ctx)->direct_min;
  if (ctx->memory == RMAOP_MEMORY_HOST && ctx->size > 1)
    rmaop__shm_init(ctx, min ? min : SIZE_MAX);
  return RMAOP_OK;
}

static void fini(rmaop_ctx ctx) {
  rma_ctx *s = ctx->backend_data;
  if (!s)
    return;
  rmaop_win_destroy(&s->win);  /* collective: every rank grew the window at the same calls */
  rmaop_win_destroy(&s->dwin); /* collective: made at the same device reduction everywhere */
  free(s->peers);
  free(s);
  ctx->backend_data = NULL;
}

static size_t slot_offset(const rma_ctx *s, rmaop_ctx ctx, int odd, int rank) {
  return ((size_t)odd * (size_t)ctx->size + (size_t)rank) * (size_t)s->cap * sizeof(double);
}

/* Collective: every rank reduces the same count, so every rank grows at the same call. */
static rmaop_status grow(rmaop_ctx ctx, rma_ctx *s, int64_t count) {
  int64_t cap = s->cap ? 2 * s->cap : 32;
  if (cap < count)
    cap = count;
  RMAOP_REQUIRE(ctx, (uint64_t)cap <= SIZE_MAX / 2 / sizeof(double) / (uint64_t)ctx->size, RMAOP_ERR_ARG,
                "rma reduction: %lld doubles per rank from %d ranks do not fit in memory", (long long)count, ctx->size);
  rmaop_win_destroy(&s->win);
  s->cap = 0;
  void *base = NULL;
  /* Host memory on every context: the reduction table passes host doubles. On a device context it takes the
   * node's shared memory when every rank is on one node, whatever the context's transport: there
   * RMAOP_RMA_TRANSPORT says how GPU memory moves (ipc, or a CUDA-aware MPI), and the table is host memory.
   * Over the CUDA-aware Open MPI 5 + UCX on 4 H200s the mpi transport's table took 55 us per reduction in lock
   * mode and 20 in fence and pscw, where NCCL's allreduce took 20 and the shm table 0.8 on 4 H100s
   * (rmaop-reduce-bench). A host context keeps the transport it names, so rma.*.mpi on host memory still measures
   * MPI's RMA for everything. */
  const int flags = ctx->memory == RMAOP_MEMORY_DEVICE ? RMA_WIN_NODE_SHM : 0;
  RMAOP_CHECK(rma__win_make(ctx, 1, NULL, 2 * (size_t)ctx->size * (size_t)cap * sizeof(double), flags, &s->win, &base));
  snprintf(s->win->what, sizeof s->win->what, "the reduction table");
  s->slots = base;
  s->cap = cap;
  return RMAOP_OK;
}

static void combine(const rma_ctx *s, rmaop_ctx ctx, const rma_reduce *r) {
  const double *slot = (const double *)((const char *)s->slots + slot_offset(s, ctx, r->odd, 0));
  double *out = r->out;
  const int64_t n = r->count;
  memcpy(out, slot, (size_t)n * sizeof *out);
  for (int p = 1; p < ctx->size; ++p) {
    const double *v = slot + (size_t)p * (size_t)s->cap;
    switch (r->op) {
    case RMAOP_SUM:
      for (int64_t i = 0; i < n; ++i)
        out[i] += v[i];
      break;
    case RMAOP_MAX:
      for (int64_t i = 0; i < n; ++i)
        out[i] = v[i] > out[i] ? v[i] : out[i];
      break;
    case RMAOP_MIN:
      for (int64_t i = 0; i < n; ++i)
        out[i] = v[i] < out[i] ? v[i] : out[i];
      break;
    }
  }
}

static rmaop_status finish(rmaop_ctx ctx, rma_ctx *s, rma_reduce *r) {
  rmaop_status st = rma__epoch_end(s->win);
  if (st == RMAOP_OK)
    combine(s, ctx, r);
  s->pending = NULL;
  r->finished = 1;
  r->status = st;
  return st;
}

static rmaop_status start(rmaop_ctx ctx, rma_ctx *s, const double *in, rma_reduce *r) {
  if (r->count > s->cap)
    RMAOP_CHECK(grow(ctx, s, r->count));
  rmaop_win w = s->win;
  const int others = ctx->size - 1;
  RMAOP_CHECK(rma__epoch_begin(w, others, s->peers, others, s->peers, RMA_EPOCH_SKIP_READY_MUTUAL));
  r->odd = (int)(w->epoch & 1);
  const size_t bytes = (size_t)r->count * sizeof(double), off = slot_offset(s, ctx, r->odd, ctx->rank);
  memcpy(w->base + off, in, bytes); /* own slot first: `in` may alias `out` */
  for (int i = 0; i < others; ++i)
    RMAOP_CHECK(rma__put(w, in, bytes, s->peers[i], off));
  s->pending = r;
  return rma__epoch_origin_done(w);
}

static void release(rma_ctx *s, rma_reduce *r) {
  if (r->heap)
    free(r);
  else
    r->in_use = 0;
}

static rmaop_status reduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                 void **req) {
  rma_ctx *s = ctx->backend_data;
  if (s->pending)
    RMAOP_CHECK(finish(ctx, s, s->pending));
  rma_reduce *r = &s->ring[s->next % RMA_REDUCE_RING];
  const int heap = r->in_use;
  if (heap)
    RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *r, "rma reduction", (void **)&r));
  else
    s->next++;
  *r = (rma_reduce){.out = out, .count = count, .op = op, .in_use = 1, .heap = heap};
  if (ctx->size == 1 || count == 0) { /* nothing to exchange; every rank takes this branch together */
    if (count > 0)
      memmove(out, in, (size_t)count * sizeof *out);
    r->finished = 1;
  } else {
    rmaop_status st = start(ctx, s, in, r);
    if (st != RMAOP_OK) {
      if (s->pending == r)
        s->pending = NULL;
      release(s, r);
      return st;
    }
  }
  *req = r;
  return RMAOP_OK;
}

static rmaop_status reduce_end(rmaop_ctx ctx, void *req) {
  rma_ctx *s = ctx->backend_data;
  rma_reduce *r = req;
  rmaop_status st = r->finished ? r->status : finish(ctx, s, r);
  release(s, r);
  return st;
}

#ifdef RMAOP_HAVE_CUDA
/* ---- device reductions in one kernel ----
 * On the ipc kernel path (RMAOP_IPC_PATH=kernel: the user accepted GPU-side spinning waits) a reduction
 * of device doubles (rmaop_allreduce_enqueue, the solvers' device dots) is ONE kernel instead of the
 * core's gather plan (pack, epoch steps, unpack, combine: a dozen launches and memops): it stores this
 * rank's values into a slot of every rank's GPU window, then a flag, waits for every rank's flag and
 * sums the slots in rank order (src/device/device.h, rmaop__dred_args); the solvers' dots run it in the last
 * block of their dot kernel (rmaop__dev_dots_reduce), so a reduced dot is one launch. The window is an ipc window of
 * [2][P][16] doubles, P flags and a counter of this rank's reductions (read and advanced by the kernel, so
 * that a replayed CUDA graph numbers its reductions right), made at the first such reduction (collective,
 * as every call here); halves alternate by reduction, flags hold the reduction's number. Nothing
 * synchronizes the host. */
static rmaop_status dred_window(rmaop_ctx ctx, rma_ctx *s) {
  s->dstate = -1;
  if (rma__settings(ctx)->ipc_path != RMA_IPC_PATH_KERNEL || ctx->size > RMAOP__DRED_MAXP ||
      ctx->node_size != ctx->size || !rma__plan_on_device(ctx) || rma__gpu_over_mpi(ctx))
    return RMAOP_OK; /* the same answer on every rank: the inputs are the context's, agreed at creation */
  const size_t P = (size_t)ctx->size, bytes = 2 * P * RMAOP__DRED_MAXC * sizeof(double) + (P + 1) * sizeof(uint32_t);
  void *base = NULL;
  RMAOP_CHECK(rma__win_make(ctx, 1, NULL, bytes, RMA_WIN_DEVICE, &s->dwin, &base));
  if (!s->dwin->device || !s->dwin->ipc) { /* not an ipc window after all: the plan path */
    rmaop_win_destroy(&s->dwin);
    return RMAOP_OK;
  }
  s->dstate = 1;
  return RMAOP_OK;
}

static rmaop_status reduce_device(rmaop_ctx ctx, int64_t count, rmaop_redop op,
                                  rmaop_status (*launch)(rmaop_ctx ctx, rmaop__dred_args *a, void *user), void *user,
                                  int *done) {
  rma_ctx *s = ctx->backend_data;
  *done = 0;
  if (ctx->memory != RMAOP_MEMORY_DEVICE || count > RMAOP__DRED_MAXC)
    return RMAOP_OK;
  if (s->dstate == 0) {
    RMAOP_REQUIRE(ctx, !rmaop__dev_capturing(ctx), RMAOP_ERR_UNSUPPORTED,
                  "rmaop_allreduce_enqueue: the first device reduction of a context creates its window (collective, "
                  "synchronizing), which a CUDA graph capture cannot hold; run one reduction before capturing");
    RMAOP_CHECK(dred_window(ctx, s));
  }
  if (s->dstate < 0)
    return RMAOP_OK;
  if (ctx->trace_on)
    rmaop__trace_sync_start(ctx);
  const double t0 = rmaop__wtime();
  RMAOP_CHECK(rmaop__dev_check_waits(ctx));
  rmaop__dred_args a = {.count = (int)count, .op = (int)op, .me = ctx->rank, .P = ctx->size};
  const size_t flags_at = 2 * (size_t)ctx->size * RMAOP__DRED_MAXC * sizeof(double);
  a.counter = (uint32_t *)(s->dwin->base + flags_at) + ctx->size;
  for (int r = 0; r < ctx->size; ++r) {
    a.slots[r] = (double *)s->dwin->peer_base[r];
    a.flags[r] = (uint32_t *)(s->dwin->peer_base[r] + flags_at);
  }
  a.timeout_ns = (uint64_t)(ctx->timeout * 1e9 < 1.8e19 ? ctx->timeout * 1e9 : 1.8e19);
  a.error = (rmaop__dev_wait_record *)ctx->dev_wait_record_dev;
  RMAOP_CHECK(launch(ctx, &a, user));
  const double t1 = rmaop__wtime();
  ctx->comm_time += t1 - t0;
  if (ctx->trace_on) /* host time: the kernel runs on after the call (stream-ordered) */
    rmaop__trace_record(ctx, "reduce.device", "reduce", "ipc", (uint64_t)(ctx->size - 1),
                        (double)count * (double)sizeof(double), t1 - t0, t1 - t0, 0);
  *done = 1;
  return RMAOP_OK;
}
#endif

static const char *reduce_transport(rmaop_ctx ctx) {
  rma_ctx *s = ctx->backend_data;
  if (ctx->size == 1)
    return "self";
  if (s && s->win)
    return s->win->transport_name;
  const int one_node = ctx->node_size == ctx->size;
  if (one_node && ctx->memory == RMAOP_MEMORY_DEVICE) /* grow()'s RMA_WIN_NODE_SHM */
    return rma__transport_shm.name;
  return rma__choose_transport(ctx, 0, one_node, (ctx->rank + 1) % ctx->size)->name;
}

const rmaop_backend rmaop__rma_backend = {
    .name = "rma",
    .config = rma_rows,
    .nconfig = (int)(sizeof rma_rows / sizeof rma_rows[0]),
    .settings_size = sizeof(rma_settings),
    .settings_parse = settings_parse,
    .info = info,
    .sync_name = sync_name,
    .win_gets_direct = win_gets_direct,
    .init = init,
    .fini = fini,
    .plan_setup = plan_setup,
    .plan_free = plan_free,
    .plan_begin = plan_begin,
    .plan_end = plan_end,
    .plan_capture_refusal = plan_capture_refusal,
    .ctx_capturable = ctx_capturable,
    .while_bodies = 1, /* its captured work is kernels and memops on the stream */
    .reduce_begin = reduce_begin,
    .reduce_end = reduce_end,
    .reduce_transport = reduce_transport,
#ifdef RMAOP_HAVE_CUDA
    .reduce_device = reduce_device,
#endif
};
