/* Epochs: what fence, pscw and lock mean for a window. Bytes and flags move through the transports
 * (transport_*.c), which never learn the mode that called them.
 *
 *   fence  MPI_Win_fence opens and closes (MPI-3.1 §11.5.1); collective over the context. Each fence is
 *          entered only after every rank committed to it in a two-phase flag handshake (sync_all below).
 *   pscw   exactly the epoch's neighbors (§11.5.2): MPI_Win_post(origins) + MPI_Win_start(targets),
 *          MPI_Win_complete + MPI_Win_wait, groups cached across epochs, on every host transport. Around them
 *          flags make every wait bounded: a target posts, then writes "ready" to each origin; an origin
 *          waits for its targets' "ready" before MPI_Win_start; it writes "done" to each target after
 *          MPI_Win_complete; a target waits for its origins' "done" before MPI_Win_wait. Every MPI call is
 *          thus entered after what it waits for has happened. Open MPI 4.1's osc/sm translates and sorts
 *          the group and allocates on each of those calls; pscw stays MPI's own so that users A/B MPI's
 *          PSCW against the flag protocol, which is what lock is.
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
 * Bounded waits (wait_flags, every host wait of this file). A wait gives up after the context's timeout
 * (RMAOP_ERR_TIMEOUT naming every rank that did not signal). A rank that gives up, or finds that a peer did,
 * writes ABORT into every slot it owns at every other rank (rma__epoch_abandon) and its context is failed
 * (src/core/error.c): a peer waiting for it, or arriving later, reads ABORT instead of a count and fails at
 * once with RMAOP_ERR_REMOTE naming it, instead of entering an MPI call that would wait for it forever. A
 * wait that sees ABORT from one peer still waits, up to the timeout, for the others, so that every waiting
 * rank names the rank that never came.
 *
 * Collective steps (fence, window free: sync_all) need more than arrival: a rank that saw everyone arrive
 * may enter MPI_Win_fence, while another rank, whose deadline passed just before the last arrival, gives
 * up; the first would wait inside MPI forever. So two phases, counted per window in the sync slots: each
 * rank writes "arrived" (2s - 1) to every rank and waits for everyone's; then writes "committed" (2s) and
 * waits for everyone's. A rank that gives up in phase 1 never commits, so nobody sees all commits and
 * nobody enters the MPI call; a rank that committed saw every rank arrive, so every rank decides within
 * its own timeout and the commits come. (O(P) flags per fence per rank: fine on the node-sized jobs
 * measured; lock and pscw involve only the declared peers.)
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
 * Their waits give up on the GPU (transport_ipc.c), not here.
 *
 * Shared-memory windows: payload stores are ordered with the synchronization by MPI_Win_sync, MPI's
 * memory barrier for load/store access to window memory (§11.5.4; unified model §11.4); the flags
 * themselves are release stores / acquire loads. */
#include "rma_win.h"

#include <sched.h>
#include <stdio.h>

#include "device/device.h"

/* The transport of the flags towards `peer`: host flags in a public epoch of a GPU window that has them. */
static const rma_transport *flag_tp(rmaop_win w, int peer) {
  return (w->flags & RMA_EPOCH_HOST_FLAGS) ? &rma__transport_ipc_host : w->ftp[peer];
}

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

/* ---- bounded waits ---- */

/* A slot value that no count reaches: its writer gave up (rma__epoch_abandon). */
#define RMA_FLAG_ABORT INT64_MIN

/* What a slot of the control area signals (rma_win.h: slot r "ready", size + r "done", 2 size + r the
 * collective steps' "arrived" and "committed", 3 size + (1 + RMA_OFFER_FIELDS) r target r's destination offer,
 * its fields after it). */
enum { SIG_READY, SIG_DONE, SIG_ARRIVED, SIG_COMMITTED, SIG_OFFER };
static const char *const sig_name[] = {"ready", "done", "arrived", "committed", "offer"};

static int slot_of(const rmaop_win w, int sig, int peer) {
  switch (sig) {
  case SIG_READY:
    return peer;
  case SIG_DONE:
    return w->size + peer;
  case SIG_OFFER:
    return 3 * w->size + (1 + RMA_OFFER_FIELDS) * peer;
  default:
    return 2 * w->size + peer;
  }
}

/* "rank 0", "rank 0 and rank 2", "rank 0, rank 2 and rank 3"; past 8 ranks the rest as a count. */
static void name_ranks(char *buf, size_t cap, int n, const int *ranks) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && i < 8 && at < cap; ++i) {
    const char *sep = i == 0 ? "" : (i == n - 1 && n <= 8) ? " and " : ", ";
    at += (size_t)snprintf(buf + at, cap - at, "%srank %d", sep, ranks[i]);
  }
  if (n > 8 && at < cap)
    snprintf(buf + at, cap - at, " and %d more", n - 8);
}

static rmaop_status timed_out(rmaop_win w, int sig, const char *step, int n, const int *missing, int64_t has,
                              int64_t want) {
  char who[160], question[320];
  name_ranks(who, sizeof who, n, missing);
  if (sig == SIG_READY || sig == SIG_DONE || sig == SIG_OFFER)
    snprintf(question, sizeof question, "did %s enter the matching epoch with rank %d as %s?", n == 1 ? who : "they",
             w->rank, sig == SIG_DONE ? "a target" : "an origin");
  else
    snprintf(question, sizeof question, "did %s make the same call?", n == 1 ? who : "they");
  return RMAOP_ERROR(w->ctx, RMAOP_ERR_TIMEOUT,
                     "rma %s %s of %s: rank %d waited %g s (RMAOP_TIMEOUT) for %s to signal \"%s\" (rank %d has "
                     "%lld, wants %lld); %s",
                     rmaop_sync_name(w->sync), step, w->what, w->rank, w->ctx->timeout, who, sig_name[sig], missing[0],
                     (long long)has, (long long)want, question);
}

static rmaop_status peers_gave_up(rmaop_win w, const char *step, int n, const int *ranks) {
  char who[160];
  name_ranks(who, sizeof who, n, ranks);
  return RMAOP_FAIL(w->ctx, RMAOP_ERR_REMOTE,
                    "rma %s %s of %s: %s gave up on it (a wait there timed out or its context failed; its own "
                    "message says why), so rank %d stops too",
                    rmaop_sync_name(w->sync), step, w->what, who, w->rank);
}

/* The one wait of every host-side handshake: polls this rank's slots `sig` of the n peers until each holds
 * at least want_of[peer] (want_of NULL: `want`). The first polls are tight (a node-local peer answers in
 * ~100 ns); after that each poll yields the core (oversubscribed runs) and checks the clock: after
 * ctx->timeout seconds it fails instead of hanging. A peer's ABORT ends its wait; the others keep theirs.
 * Any failure abandons the window (every peer is told) and fails the context. */
static rmaop_status wait_flags(rmaop_win w, int sig, int n, const int *peers, const int64_t *want_of, int64_t want,
                               const char *step) {
  if (n == 0)
    return RMAOP_OK;
  /* GPU windows: stream-side, the stream waits (and gives up on the GPU) and the host goes on; but over host flags a
   * target's end waits on the host, where a public end must come back anyway (it promises host visibility). */
  if (w->device && !((w->flags & RMA_EPOCH_HOST_FLAGS) && sig == SIG_DONE)) {
    for (int i = 0; i < n; ++i)
      RMAOP_CHECK(flag_tp(w, peers[i])->wait_flag(w, slot_of(w, sig, peers[i]), want_of ? want_of[peers[i]] : want));
    return RMAOP_OK;
  }
  int *left = w->scratch, *gave_up = w->scratch + w->size;
  int nleft = n, ngave_up = 0;
  memcpy(left, peers, (size_t)n * sizeof *left);
  double deadline = 0.0;
  int64_t has = 0;
  rmaop_status st = RMAOP_OK;
  for (unsigned spin = 0;; ++spin) {
    int m = 0;
    for (int i = 0; i < nleft; ++i) {
      const int p = left[i];
      int64_t v = 0;
      RMAOP_CHECK(flag_tp(w, p)->read_flag(w, slot_of(w, sig, p), &v));
      if (v == RMA_FLAG_ABORT)
        gave_up[ngave_up++] = p;
      else if (v < (want_of ? want_of[p] : want)) {
        if (m == 0)
          has = v;
        left[m++] = p;
      }
    }
    nleft = m;
    if (nleft == 0)
      break;
    if (spin < 256)
      continue;
    const double now = rmaop__wtime();
    if (deadline == 0.0)
      deadline = now + w->ctx->timeout;
    if (now > deadline) {
      st = timed_out(w, sig, step, nleft, left, has, want_of ? want_of[left[0]] : want);
      break;
    }
    sched_yield();
  }
  if (st == RMAOP_OK && ngave_up > 0)
    st = peers_gave_up(w, step, ngave_up, gave_up);
  if (st != RMAOP_OK)
    rma__epoch_abandon(w);
  return st;
}

void rma__epoch_abandon(rmaop_win w) {
  if (w->device || !w->ctrl || w->abandoned)
    return;
  w->abandoned = 1;
  /* Best effort: a failing notification changes nothing about the failure already recorded. */
  rmaop__error_hold(w->ctx, 1);
  for (int i = 0; i < w->size - 1; ++i) {
    const int r = w->others[i];
    for (int sig = SIG_READY; sig <= SIG_OFFER; ++sig)
      if (sig != SIG_COMMITTED) /* the same slot as "arrived" */
        (void)w->ftp[r]->notify(w, r, slot_of(w, sig, w->rank), RMA_FLAG_ABORT);
  }
  rmaop__error_hold(w->ctx, 0);
}

/* Every rank of the window meets here, in two phases (the header says why), before a collective MPI call
 * that would wait inside MPI for a rank that never comes. */
static rmaop_status sync_all(rmaop_win w, const char *step) {
  const int n = w->size - 1;
  const int64_t s = ++w->syncs;
  for (int phase = 0; phase < 2; ++phase) {
    const int64_t v = 2 * s - 1 + phase;
    for (int i = 0; i < n; ++i)
      RMAOP_CHECK(w->ftp[w->others[i]]->notify(w, w->others[i], slot_of(w, SIG_ARRIVED, w->rank), v));
    RMAOP_CHECK(wait_flags(w, phase ? SIG_COMMITTED : SIG_ARRIVED, n, w->others, NULL, v, step));
  }
  return RMAOP_OK;
}

int rma__epoch_free_agreed(rmaop_win w) {
  if (w->local_only || !w->built)
    return 1; /* no MPI window, or a creation that failed everywhere (its clean-up is collective as before) */
  if (w->ctx->failed != RMAOP_OK) {
    rma__epoch_abandon(w);
    return 0;
  }
  return !w->ctrl || sync_all(w, "window free") == RMAOP_OK;
}

/* ---- the flag handshake (lock) ---- */

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
    RMAOP_CHECK(flag_tp(w, o)->notify(w, o, slot_of(w, SIG_READY, w->rank), k));
    w->ready_sent[o] = k;
  }
  int *wait = w->scratch + 2 * w->size, n = 0;
  for (int i = 0; i < w->ntargets; ++i) {
    const int t = w->targets[i];
    ++w->out_epochs[t];
    if (!skips_ready(w, t))
      wait[n++] = t;
  }
  RMAOP_CHECK(wait_flags(w, SIG_READY, n, wait, w->out_epochs, 0, "epoch begin"));
  return step_done(w, 1);
}

static rmaop_status notify_done(rmaop_win w) {
  for (int i = 0; i < w->ntargets; ++i) {
    const int t = w->targets[i];
    RMAOP_CHECK(flag_tp(w, t)->notify(w, t, slot_of(w, SIG_DONE, w->rank), w->out_epochs[t]));
  }
  return RMAOP_OK;
}

static rmaop_status flags_origin_done(rmaop_win w) {
  for (int i = 0; i < w->ntargets; ++i)
    RMAOP_CHECK(w->tp[w->targets[i]]->flush(w, w->targets[i]));
  RMAOP_CHECK(notify_done(w));
  return step_done(w, 0);
}

static rmaop_status flags_end(rmaop_win w) {
  RMAOP_CHECK(wait_flags(w, SIG_DONE, w->norigins, w->origins, w->in_epochs, 0, "epoch end"));
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
    RMAOP_CHECK(flag_tp(w, o)->notify(w, o, slot_of(w, SIG_READY, w->rank), next));
    w->ready_sent[o] = next;
  }
  return step_done(w, 0);
}

/* ---- destination offers (rma_backend.c: all-to-all blocks straight into the destination) ---- */

rmaop_status rma__offer(rmaop_win w, int origin, const int64_t fields[RMA_OFFER_FIELDS]) {
  const int at = slot_of(w, SIG_OFFER, w->rank);
  for (int f = 0; f < RMA_OFFER_FIELDS; ++f)
    RMAOP_CHECK(w->ftp[origin]->notify(w, origin, at + 1 + f, fields[f]));
  return w->ftp[origin]->notify(w, origin, at, w->in_epochs[origin]); /* release: the fields before it */
}

rmaop_status rma__offers_wait(rmaop_win w, int n, const int *targets) {
  return wait_flags(w, SIG_OFFER, n, targets, w->out_epochs, 0, "epoch begin");
}

rmaop_status rma__offer_read(rmaop_win w, int target, int64_t fields[RMA_OFFER_FIELDS]) {
  const int at = slot_of(w, SIG_OFFER, target);
  for (int f = 0; f < RMA_OFFER_FIELDS; ++f)
    RMAOP_CHECK(w->ftp[target]->read_flag(w, at + 1 + f, &fields[f]));
  return RMAOP_OK;
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
  /* Post, then "ready" to each origin: its MPI_Win_start (which may block until the targets posted) and
   * MPI_Win_complete are entered only once it has seen that. Post before waiting: the targets may be
   * waiting for our "ready" in their own begin. */
  if (w->norigins > 0) {
    RMAOP_CHECK(cached_group(w, &w->post_group, w->post_ranks, &w->npost, w->origins, w->norigins));
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_post(w->post_group, 0, w->win));
    for (int i = 0; i < w->norigins; ++i) {
      const int o = w->origins[i];
      RMAOP_CHECK(w->ftp[o]->notify(w, o, slot_of(w, SIG_READY, w->rank), ++w->in_epochs[o]));
    }
  }
  if (w->ntargets > 0) {
    for (int i = 0; i < w->ntargets; ++i)
      ++w->out_epochs[w->targets[i]];
    RMAOP_CHECK(wait_flags(w, SIG_READY, w->ntargets, w->targets, w->out_epochs, 0, "epoch begin"));
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
  return notify_done(w); /* after the completion: a target's MPI_Win_wait then returns at once */
}

static rmaop_status pscw_end(rmaop_win w) {
  if (w->norigins == 0)
    return RMAOP_OK;
  RMAOP_CHECK(wait_flags(w, SIG_DONE, w->norigins, w->origins, w->in_epochs, 0, "epoch end"));
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_wait(w->win));
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win)); /* the origins' stores before our loads */
  return RMAOP_OK;
}

/* ---- fence ---- */

static rmaop_status fence(rmaop_win w, int assert) {
  RMAOP_CHECK(sync_all(w, "epoch"));
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_fence(assert, w->win));
  return RMAOP_OK;
}

static rmaop_status fence_begin(rmaop_win w) {
  if (w->local_only)
    return RMAOP_OK;
  if ((w->flags & RMA_EPOCH_SKIP_READY_MUTUAL) && w->fence_open)
    return RMAOP_OK;
  /* NOPRECEDE is always true here: every epoch's closing fence completed its operations. */
  return fence(w, MPI_MODE_NOPRECEDE);
}

static rmaop_status fence_end(rmaop_win w) {
  /* Without the skip flag the next begin fences again, so this fence may say nothing follows it. */
  const int keep_open = (w->flags & RMA_EPOCH_SKIP_READY_MUTUAL) != 0;
  if (w->local_only)
    return RMAOP_OK;
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  RMAOP_CHECK(fence(w, keep_open ? 0 : MPI_MODE_NOSUCCEED));
  if (w->shared)
    RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  w->fence_open = keep_open;
  return RMAOP_OK;
}

/* ---- entry points ---- */

rmaop_status rma__epoch_begin(rmaop_win w, int ntargets, const int *targets, int norigins, const int *origins,
                              unsigned flags) {
  RMAOP_CHECK(set_peers(w, ntargets, targets, norigins, origins));
  if (!(w->device && rma__ipc_host_flags(w)))
    flags &= ~(unsigned)RMA_EPOCH_HOST_FLAGS;
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
