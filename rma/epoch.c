/* Epochs: what fence, pscw and lock mean for a window. Bytes and flags move through the transports
 * (transport_*.c), which never learn the mode that called them.
 *
 *   fence  MPI_Win_fence opens and closes (MPI-3.1 §11.5.1); collective over the context.
 *   pscw   exactly the epoch's neighbors (§11.5.2): MPI_Win_post(origins) + MPI_Win_start(targets),
 *          MPI_Win_complete + MPI_Win_wait, groups cached across epochs, on every host transport. Open
 *          MPI 4.1's osc/sm translates and sorts the group and allocates on each of those calls (0.5 us
 *          per 8-byte halo epoch on the 2-vCPU VM against 0.2 for lock's flags); pscw stays MPI's own so
 *          that users A/B MPI's PSCW against the flag protocol, which is what lock is.
 *   lock   the window sits in one MPI_Win_lock_all epoch (§11.5.3) and every epoch is the flag
 *          handshake, through the peer's transport (mpi: accumulate/fetch-and-op; shm: atomics).
 *
 * The flag handshake of epoch k between an origin and a target (per-pair counters, rma_win.h):
 *     begin  target -> each origin:  ready = k   (my memory may take epoch k)
 *            origin waits each target's ready >= k
 *     end    origin: flush each target, then -> each target: done = k
 *            target waits each origin's done >= k
 * No barrier anywhere: a rank only waits for the peers it exchanges data with.
 *
 * GPU windows (ipc transport, every rank on one node): fence, pscw and lock all run as this flag
 * handshake with the epoch's declared peers, and every step is stream-side (the transport's notify is
 * a flag write ordered after the puts on the context's stream, its wait_flag a stream wait; each step
 * ends in rma__ipc_submit, which makes the step's small puts, flags and waits one kernel), so no step
 * blocks the host and the data is in stream order for the unpack kernels:
 *   lock   exactly as on the host.
 *   pscw   post = "ready" to each origin, start = stream wait for each target's "ready", complete =
 *          "done" to each target, wait = stream wait for each origin's "done": PSCW's own semantics.
 *   fence  the same handshake with the declared targets and origins instead of a collective fence:
 *          it gives the data guarantees of a fence to every pair that declared each other, which is
 *          all the puts and gets of the epoch (the public calls reject undeclared targets); ranks that
 *          exchange nothing are not synchronized. Plans double-buffer as in lock mode (rma_backend.c).
 *
 * Shared-memory windows: payload stores are ordered with the synchronization by MPI_Win_sync, MPI's
 * memory barrier for load/store access to window memory (§11.5.4; unified model §11.4); the flags
 * themselves are release stores / acquire loads. */
#include "rma_win.h"

#include <sched.h>
#include <stdio.h>

#include "device/device.h"

static int skips_ready(rmaop_win w, int peer) {
  return (w->flags & RMA_EPOCH_SKIP_READY_MUTUAL) && w->role[peer] == (RMA_ROLE_TARGET | RMA_ROLE_ORIGIN);
}

/* ---- peer lists ---- */

static void clear_roles(rmaop_win w) {
  for (int i = 0; i < w->ntargets; ++i)
    w->role[w->targets[i]] = 0;
  for (int i = 0; i < w->norigins; ++i)
    w->role[w->origins[i]] = 0;
  w->ntargets = w->norigins = 0;
}

static rmaop_status add_peers(rmaop_win w, const char *what, int n, const int *list, unsigned char bit, int *out,
                              int *nout) {
  for (int i = 0; i < n; ++i) {
    const int r = list[i];
    RMAOP_REQUIRE(w->ctx, r >= 0 && r < w->size, RMAOP_ERR_ARG, "rmaop_win_epoch_begin: %s[%d] = %d is outside [0, %d)",
                  what, i, r, w->size);
    if (r == w->rank)
      continue;
    RMAOP_REQUIRE(w->ctx, !(w->role[r] & bit), RMAOP_ERR_ARG, "rmaop_win_epoch_begin: rank %d appears twice in %s", r,
                  what);
    w->role[r] |= bit;
    out[(*nout)++] = r;
  }
  return RMAOP_OK;
}

static rmaop_status set_peers(rmaop_win w, int nt, const int *t, int no, const int *o) {
  clear_roles(w);
  rmaop_status st = add_peers(w, "targets", nt, t, RMA_ROLE_TARGET, w->targets, &w->ntargets);
  if (st == RMAOP_OK)
    st = add_peers(w, "origins", no, o, RMA_ROLE_ORIGIN, w->origins, &w->norigins);
  if (st != RMAOP_OK)
    clear_roles(w);
  return st;
}

/* ---- the flag handshake (lock) ---- */

/* Spins until slot >= want. The first polls are tight (a node-local peer answers in ~100 ns); after
 * that each poll yields the core (oversubscribed runs) and checks the clock: after ctx->timeout
 * seconds the wait fails instead of hanging. `deadline` is shared by the waits of one epoch. */
static rmaop_status wait_slot(rmaop_win w, int peer, int slot, int64_t want, const char *what, double *deadline) {
  const rma_transport *tp = w->tp[peer];
  if (tp->wait_flag) /* stream-side: the stream waits, the host goes on (no timeout possible here) */
    return tp->wait_flag(w, slot, want);
  int64_t v = 0;
  for (unsigned spin = 0;; ++spin) {
    RMAOP_CHECK(tp->read_flag(w, slot, &v));
    if (v >= want)
      return RMAOP_OK;
    if (spin < 256)
      continue;
    const double now = rmaop__wtime();
    if (*deadline == 0.0)
      *deadline = now + w->ctx->timeout;
    if (now > *deadline)
      return RMAOP_ERROR(w->ctx, RMAOP_ERR_TIMEOUT,
                         "rma %s epoch: rank %d waited %g s (RMAOP_TIMEOUT) for rank %d to signal \"%s\" of epoch "
                         "%lld (has %lld); did rank %d enter the matching epoch with rank %d as %s?",
                         rmaop_sync_name(w->sync), w->rank, w->ctx->timeout, peer, what, (long long)want, (long long)v,
                         peer, w->rank, slot < w->size ? "an origin" : "a target");
    sched_yield();
  }
}

/* The end of an epoch step: a GPU window's step becomes one kernel on the stream (transport_ipc.c). */
static rmaop_status step_done(rmaop_win w, int may_defer) {
  return w->device ? rma__ipc_submit(w, may_defer) : RMAOP_OK;
}

static rmaop_status flags_begin(rmaop_win w) {
  /* Announce first, then wait: two ranks that are each other's target never wait on each other. */
  for (int i = 0; i < w->norigins; ++i) {
    const int o = w->origins[i];
    const int64_t k = ++w->in_epochs[o];
    if (skips_ready(w, o) || w->ready_sent[o] >= k)
      continue;
    RMAOP_CHECK(w->tp[o]->notify(w, o, w->rank, k));
    w->ready_sent[o] = k;
  }
  double deadline = 0.0;
  for (int i = 0; i < w->ntargets; ++i) {
    const int t = w->targets[i];
    const int64_t k = ++w->out_epochs[t];
    if (!skips_ready(w, t))
      RMAOP_CHECK(wait_slot(w, t, t, k, "ready", &deadline));
  }
  return step_done(w, 1);
}

static rmaop_status flags_origin_done(rmaop_win w) {
  for (int i = 0; i < w->ntargets; ++i)
    RMAOP_CHECK(w->tp[w->targets[i]]->flush(w, w->targets[i]));
  for (int i = 0; i < w->ntargets; ++i) {
    const int t = w->targets[i];
    RMAOP_CHECK(w->tp[t]->notify(w, t, w->size + w->rank, w->out_epochs[t]));
  }
  return step_done(w, 0);
}

static rmaop_status flags_end(rmaop_win w) {
  double deadline = 0.0;
  for (int i = 0; i < w->norigins; ++i) {
    const int o = w->origins[i];
    RMAOP_CHECK(wait_slot(w, o, w->size + o, w->in_epochs[o], "done", &deadline));
  }
  RMAOP_CHECK(step_done(w, w->fuse_unpack));
  /* The flags were read with acquire semantics; MPI_Win_sync makes the payload stores of the
   * origins visible to this process's loads in MPI's terms too (§11.5.4). */
  if (w->norigins > 0 && w->win != MPI_WIN_NULL) /* GPU windows: stream order, no MPI window */
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  return RMAOP_OK;
}

rmaop_status rma__post_ready(rmaop_win w) {
  if (!w->flag_sync)
    return RMAOP_OK;
  for (int i = 0; i < w->norigins; ++i) {
    const int o = w->origins[i];
    const int64_t next = w->in_epochs[o] + 1;
    if (skips_ready(w, o) || w->ready_sent[o] >= next)
      continue;
    RMAOP_CHECK(w->tp[o]->notify(w, o, w->rank, next));
    w->ready_sent[o] = next;
  }
  return step_done(w, 0);
}

/* ---- pscw through MPI ---- */

/* Group objects are not free: rebuild only when the ranks differ from the cached ones. */
static rmaop_status cached_group(rmaop_win w, MPI_Group *group, int *cached, int *ncached, const int *ranks, int n) {
  if (*group != MPI_GROUP_NULL && n == *ncached && (n == 0 || memcmp(ranks, cached, (size_t)n * sizeof *ranks) == 0))
    return RMAOP_OK;
  if (*group != MPI_GROUP_NULL)
    MPI_Group_free(group);
  RMAOP_CHECK_MPI(w->ctx, MPI_Group_incl(w->comm_group, n, ranks, group));
  if (n > 0) memcpy(cached, ranks, (size_t)n * sizeof *ranks);
  *ncached = n;
  return RMAOP_OK;
}

static rmaop_status pscw_begin(rmaop_win w) {
  /* Post before start: MPI_Win_start may block until the targets posted, and they may be waiting
   * in their own start for our post. */
  if (w->norigins > 0) {
    RMAOP_CHECK(cached_group(w, &w->post_group, w->post_ranks, &w->npost, w->origins, w->norigins));
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_post(w->post_group, 0, w->win));
  }
  if (w->ntargets > 0) {
    RMAOP_CHECK(cached_group(w, &w->start_group, w->start_ranks, &w->nstart, w->targets, w->ntargets));
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_start(w->start_group, 0, w->win));
  }
  return RMAOP_OK;
}

static rmaop_status pscw_origin_done(rmaop_win w) {
  if (w->ntargets == 0)
    return RMAOP_OK;
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win)); /* our stores before the completion */
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_complete(w->win));
  return RMAOP_OK;
}

static rmaop_status pscw_end(rmaop_win w) {
  if (w->norigins == 0)
    return RMAOP_OK;
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_wait(w->win));
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win)); /* the origins' stores before our loads */
  return RMAOP_OK;
}

/* ---- fence ---- */

static rmaop_status fence_begin(rmaop_win w) {
  if (w->local_only)
    return RMAOP_OK;
  if ((w->flags & RMA_EPOCH_SKIP_READY_MUTUAL) && w->fence_open)
    return RMAOP_OK;
  /* NOPRECEDE is always true here: every epoch's closing fence completed its operations. */
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
  return RMAOP_OK;
}

static rmaop_status fence_end(rmaop_win w) {
  /* Without the skip flag the next begin fences again, so this fence may say nothing follows it. */
  const int keep_open = (w->flags & RMA_EPOCH_SKIP_READY_MUTUAL) != 0;
  if (w->local_only)
    return RMAOP_OK;
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_fence(keep_open ? 0 : MPI_MODE_NOSUCCEED, w->win));
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  w->fence_open = keep_open;
  return RMAOP_OK;
}

/* ---- entry points ---- */

rmaop_status rma__epoch_begin(rmaop_win w, int ntargets, const int *targets, int norigins, const int *origins,
                              unsigned flags) {
  RMAOP_CHECK(set_peers(w, ntargets, targets, norigins, origins));
  w->flags = flags;
  /* GPU memory over MPI: MPI reads and writes device memory outside the stream's order, so what the
   * stream was computing into it (the data to put, the staging being unpacked) must be done first. */
  if (w->dev_mpi)
    RMAOP_CHECK(rmaop__dev_sync(w->ctx));
  if (w->flag_sync)
    RMAOP_CHECK(flags_begin(w));
  else if (w->sync == RMAOP_SYNC_PSCW)
    RMAOP_CHECK(pscw_begin(w));
  else
    RMAOP_CHECK(fence_begin(w));
  w->epoch++;
  w->in_epoch = 1;
  w->origin_done = 0;
  return RMAOP_OK;
}

rmaop_status rma__epoch_origin_done(rmaop_win w) {
  if (w->origin_done)
    return RMAOP_OK;
  if (w->flag_sync)
    RMAOP_CHECK(flags_origin_done(w));
  else if (w->sync == RMAOP_SYNC_PSCW)
    RMAOP_CHECK(pscw_origin_done(w));
  w->origin_done = 1; /* fence: nothing before the collective closing fence */
  return RMAOP_OK;
}

rmaop_status rma__epoch_end(rmaop_win w) {
  RMAOP_CHECK(rma__epoch_origin_done(w));
  if (w->flag_sync)
    RMAOP_CHECK(flags_end(w));
  else if (w->sync == RMAOP_SYNC_PSCW)
    RMAOP_CHECK(pscw_end(w));
  else
    RMAOP_CHECK(fence_end(w));
  w->in_epoch = 0;
  return RMAOP_OK;
}

void rma__epoch_free(rmaop_win w) {
  if (w->post_group != MPI_GROUP_NULL)
    MPI_Group_free(&w->post_group);
  if (w->start_group != MPI_GROUP_NULL)
    MPI_Group_free(&w->start_group);
  if (w->comm_group != MPI_GROUP_NULL)
    MPI_Group_free(&w->comm_group);
}
