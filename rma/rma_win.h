/* Private to rma/: the window object, the transport table and the internal epoch entry points.
 *
 * Two layers, as in UCX's ucp/uct split:
 *   epoch.c              what an epoch means (fence | pscw | lock): who waits for whom, and when.
 *   transport_*.c        how bytes and flags move to one peer (mpi | shm | ipc | self). A transport
 *                        never knows which sync mode called it.
 * win.c creates windows, picks a transport per peer and validates the public calls; rma_backend.c
 * runs plans and reductions on windows. Nothing outside rma/ includes this header. */
#ifndef RMAOP_RMA_WIN_H
#define RMAOP_RMA_WIN_H

#include "rma_settings.h"

/* How bytes and notifications reach one peer. `disp` is a byte displacement in the peer's window;
 * `slot` indexes a control area (lock mode, see struct rmaop_win_s). */
typedef struct rma_transport {
  const char *name;     /* "mpi", "shm", "self" (static: trace records keep the pointer) */
  rmaop_transport kind; /* what rmaop_win_peer_transport() reports */
  rmaop_status (*put)(rmaop_win win, const void *origin, size_t bytes, int target, size_t disp);
  rmaop_status (*get)(rmaop_win win, void *origin, size_t bytes, int target, size_t disp);
  /* Completes this rank's puts/gets towards `peer` at the peer (remote completion). */
  rmaop_status (*flush)(rmaop_win win, int peer);
  /* Stores `value` into `peer`'s control slot `slot`; ordered after every put to `peer` that was
   * flushed before it. */
  rmaop_status (*notify)(rmaop_win win, int peer, int slot, int64_t value);
  /* Reads this rank's own control slot (written by a peer through the same transport: the choice is
   * symmetric, see rma__choose_transport). */
  rmaop_status (*read_flag)(rmaop_win win, int slot, int64_t *value);
  /* Optional (stream-side transports: ipc). Makes the context's stream, not the host, wait until this
   * rank's own slot `slot` >= value; work enqueued on the stream afterwards is ordered after the wait.
   * notify and flush of such a transport are stream-ordered too (after every put issued before them).
   * NULL: epoch.c polls read_flag on the host, with the context's timeout. */
  rmaop_status (*wait_flag)(rmaop_win win, int slot, int64_t value);
} rma_transport;

extern const rma_transport rma__transport_mpi;
extern const rma_transport rma__transport_shm;
extern const rma_transport rma__transport_self;
#ifdef RMAOP_HAVE_CUDA
/* This rank's own memory in a GPU window over MPI (a stream copy, finished before it returns). */
extern const rma_transport rma__transport_dev_self;
#endif
/* Node-local GPU memory through CUDA IPC (transport_ipc.c); also the own rank of a GPU window. In a
 * build without CUDA every call returns RMAOP_ERR_UNSUPPORTED (no GPU window can exist there). */
extern const rma_transport rma__transport_ipc;
/* The same with the flags of public epochs in host memory (transport_ipc.c, "Host flags" at its top): "ready" and
 * "done" are host stores once the stream is idle (done: once this rank's puts are complete); the origin's stream waits
 * for "ready" there, the target's host for "done". Used by epoch.c when rma__ipc_host_flags holds and the epoch is
 * public.
 */
extern const rma_transport rma__transport_ipc_host;

/* Largest piece handed to one MPI_Put/MPI_Get: MPI-3.1 RMA counts are int. (Overridable so a test
 * build can exercise the splitting with small buffers.) */
#ifndef RMA_MPI_CHUNK
#define RMA_MPI_CHUNK ((size_t)1 << 30)
#endif

/* Flags of the internal epoch begin. */
enum {
  /* The caller double-buffers its target memory by epoch parity and repeats one pattern, so: the
   * flag handshake (lock; every mode on a GPU window) skips "ready" with every peer that is both a target
   * and an origin of the epoch (host pscw does not: its "ready" says the target posted), and fence skips the opening
   * fence when the previous closing fence left an epoch open. rma_backend.c gives the argument for why that is safe. */
  RMA_EPOCH_SKIP_READY_MUTUAL = 1u << 0,
  /* A public epoch (rmaop_win_epoch_begin): a GPU window whose host flags exist exchanges "ready" and "done" through
   * them, so a target enqueues nothing and waits on the host, and an origin's epoch is its puts behind one stream-side
   * wait (one kernel on the kernel path, a memop and the copies on the copy path). epoch.c clears it elsewhere. */
  RMA_EPOCH_HOST_FLAGS = 1u << 1,
};

enum { RMA_ROLE_TARGET = 1, RMA_ROLE_ORIGIN = 2 };

/* int64 fields of a destination offer (epoch.c, rma__offer) and the control area's slots for `size` ranks. */
#define RMA_OFFER_FIELDS 3
#define RMA_CTRL_SLOTS(size) ((3 + 1 + RMA_OFFER_FIELDS) * (size_t)(size))

struct rmaop_win_s {
  rmaop_ctx ctx;
  int rank, size;
  rmaop_sync sync;
  MPI_Win win;                /* data window */
  MPI_Win cwin;               /* control window: == win when the control area is its tail */
  int cwin_separate;          /* cwin is a window of its own (beside user memory) */
  int locked, clocked;        /* MPI_Win_lock_all held on win / on a separate cwin */
  int local_only;             /* one-rank context: no MPI window at all (win.c, build_local) */
  int shared;                 /* one MPI_Win_allocate_shared segment: peers are load/store addressable */
  int owns_memory;            /* memory came from MPI (rmaop_win_allocate) or, device, from cudaMalloc */
  int device;                 /* GPU window memory: every rank (own included) reached by ipc, no MPI window */
  int dev_mpi;                /* GPU window memory exposed through a CUDA-aware MPI: an MPI window over device
                                 pointers, mpi towards every rank (own included), host-side epochs */
  int node_shm;               /* RMA_WIN_NODE_SHM: a shared host window reaches the other ranks over shm */
  int built;                  /* creation succeeded on every rank (collective free may synchronize) */
  void *ipc;                  /* transport_ipc.c's state of a GPU window */
  void *dev_base;             /* GPU memory over MPI allocated here (cudaMalloc), freed with the window */
  char *base;                 /* this rank's window memory */
  size_t bytes;               /* this rank's usable window size */
  size_t *sizes;              /* [size] every rank's usable window size (bounds checks) */
  char **peer_base;           /* [size] shared and GPU windows: every rank's memory, mapped here */
  const rma_transport **tp;   /* [size] transport towards every rank (own rank: self) */
  const rma_transport **ftp;  /* [size] the same for the control area's flags (win.c, set_transports) */
  const char *transport_name; /* towards the other ranks: "shm", "mpi", "mixed", or "self" if none */
  rmaop_transport self_kind;  /* reported for the own rank (the public enum has no "self") */

  /* Epochs are the flag handshake of epoch.c (lock; every mode on a GPU window). */
  int flag_sync;
  /* Set by a plan's end around rma__epoch_end on a GPU window: the end's waits stay pending, so that the
   * unpack (rma__ipc_local_copy) and the "ready" flags join them in one kernel on the ipc kernel path. */
  int fuse_unpack;
  /* The last plan epoch was captured into a CUDA graph (rma_backend.c, plan_begin). */
  int captured;

  /* Control area of the flag handshakes (every host window of more than one rank): int64 slots. Slot r:
   * "ready", written by target r (its memory may take my next epoch; pscw: it posted). Slot size + r:
   * "done", written by origin r (its puts of the epoch are complete here). Values count epochs per PAIR
   * of ranks, so a rank that skips epochs it takes no part in (they are neighbor-collective) never
   * desynchronizes the others. Slot 2 size + r: rank r's phase in the collective steps (fence, window
   * free: epoch.c, sync_all). Slots 3 size + 4 r .. + 3: target r's destination offer (rma__offer). Any slot may hold
   * ABORT: its writer gave up (rma__epoch_abandon). The area is the tail of the data window when MPI allocated it and
   * the window is shared (flags as atomics) or in lock mode's passive epoch; else a small window of its own in a
   * passive epoch (mpi flags beside an active-target fence or pscw window across nodes, or beside user memory). */
  int64_t *ctrl;       /* this rank's control area (NULL: GPU window, or one rank) */
  MPI_Aint *ctrl_disp; /* [size] byte displacement of each rank's control area in cwin */
  int64_t *out_epochs; /* [size] epochs opened with rank r as a target */
  int64_t *in_epochs;  /* [size] epochs opened with rank r as an origin */
  int64_t *ready_sent; /* [size] highest "ready" value already sent to origin r */

  /* The open epoch (own rank removed from the lists); role[r]: RMA_ROLE_* bits of rank r. The roles of
   * the last epoch stay until the next begin (rma__post_ready reads them). */
  int in_epoch;
  int origin_done; /* rma__epoch_origin_done() already ran for this epoch */
  unsigned flags;
  int ntargets, norigins;
  int *targets, *origins; /* [size] each */
  unsigned char *role;    /* [size] */
  int64_t epoch;          /* epochs begun on this window (buffer parity) */
  int fence_open;         /* fence mode: the last closing fence also opened the next epoch */

  int64_t syncs; /* collective steps (fences, the free) begun on this window */
  int abandoned; /* ABORT written to every peer (rma__epoch_abandon) */
  int *others;   /* [size - 1] every other rank, ascending (the collective steps' peers) */
  int *scratch;  /* [3 size] the waits' lists (epoch.c) */
  char what[96]; /* what the window serves, for messages: plan "label", the reduction table, a public window */

  /* PSCW: the groups of the last epoch, rebuilt only when the peer lists change. */
  MPI_Group comm_group, post_group, start_group;
  int npost, nstart;
  int *post_ranks, *start_ranks; /* [size] each */

  /* Public epochs' trace: operations and bytes since rmaop_win_epoch_begin. */
  uint64_t ops, op_bytes;
  double t_begin;
};

/* ---- win.c ---- */

/* Both public creators end here (collective). allocate: memory from MPI (device: cudaMalloc),
 * *base_out set; else over user memory `user_base`. `flags`: RMA_WIN_DEVICE, the window memory is GPU memory
 * (a device context only; ipc towards every rank, which needs them all on one node); else host memory (plans
 * staged through host, reductions). RMA_WIN_NODE_SHM (host memory): shm towards every rank when all share a node,
 * whatever transport the context names (the reduction table of a device context: see rma_backend.c, grow). */
#define RMA_WIN_DEVICE 1
#define RMA_WIN_NODE_SHM 2
rmaop_status rma__win_make(rmaop_ctx ctx, int allocate, void *user_base, size_t bytes, int flags, rmaop_win *out,
                           void **base_out);
/* The transport a window of `ctx` uses towards `peer` (`device`: a GPU window, ipc or, when
 * rma__gpu_over_mpi, mpi; `shared`: the window is one MPI_Win_allocate_shared segment over the whole
 * communicator). Symmetric in (rank, peer). */
const rma_transport *rma__choose_transport(rmaop_ctx ctx, int device, int shared, int peer);
/* Whether a plan of `ctx` gets a GPU staging window (ipc) rather than a host one staged through host
 * memory: device context, transport auto with every rank on one node, or ipc (whose creation then
 * names an off-node rank if there is one). */
int rma__plan_on_device(rmaop_ctx ctx);
/* Whether a GPU window of `ctx` goes through MPI rather than ipc: a CUDA-aware MPI on every rank, more
 * than one rank, and transport mpi, or auto with ranks on more than one node. */
int rma__gpu_over_mpi(rmaop_ctx ctx);

/* ---- transport_ipc.c (GPU windows) ---- */

/* The collective part of a GPU window's creation: memory (cudaMalloc when w->owns_memory, else the
 * user's cudaMalloc'd `user_base`, mapped through its allocation base), the flag area, the exchange
 * of IPC handles and the mapping of every peer. Sets w->base, w->bytes, w->peer_base, w->ipc. */
rmaop_status rma__ipc_build(rmaop_win w, void *user_base, size_t bytes);
/* Collective when w->built: drains the stream, then a barrier (no peer may still write into memory
 * about to be freed), then unmaps and frees. Never fails loudly. */
void rma__ipc_free(rmaop_win w);
/* Whether this GPU window has its public epochs' host flags (every rank mapped them; RMAOP_IPC_HOST_FLAGS=1). */
int rma__ipc_host_flags(rmaop_win w);
/* Whether epochs of this GPU window may be captured into a CUDA graph: the kernel path, whose flag
 * values come from device counters. */
int rma__ipc_graph_ok(rmaop_win w);
/* The device-side API's handle of a GPU window over ipc of at most RMAOP_DEVICE_MAX_PEERS ranks (the caller,
 * rmaop_win_device_handle, checked both): every rank's mapped memory and signal words (the flag area's tail),
 * the timeout, the context's wait record and the window's claim word. Local. */
rmaop_status rma__ipc_device_handle(rmaop_win w, rmaop_win_device *out);
/* Host-side completion of everything enqueued on the context's stream (the public epoch end promises
 * host visibility). Bounded by the context's timeout: RMAOP_ERR_TIMEOUT when a peer never signals. */
rmaop_status rma__ipc_host_sync(rmaop_win w);

/* Ends an epoch step of a GPU window (epoch.c, after begin, origin done and end): launches the kernel
 * holding the step's small puts, flag writes and flag waits (ipc_batch.h), and reports a GPU-side
 * wait that timed out earlier. `may_defer` (begin, and a plan's end with fuse_unpack): a step of nothing
 * but waits stays pending and runs first in the kernel of the next step. Nothing to do on other windows. */
rmaop_status rma__ipc_submit(rmaop_win w, int may_defer);
/* A copy within this rank's GPU memory (a plan's unpack; both ends device memory) joins the pending batch, after its
 * waits and before its flag writes, when the kernel path can take it (*taken = 1); else the pending batch is launched
 * (*taken = 0) so that the caller's own copy comes after it on the stream. */
rmaop_status rma__ipc_local_copy(rmaop_win w, void *dst, const void *src, size_t bytes, int *taken);

/* Puts without argument checks: the caller (a plan, a reduction) validated its pattern once. */
static inline rmaop_status rma__put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  if (bytes == 0)
    return RMAOP_OK;
  return w->tp[target]->put(w, origin, bytes, target, disp);
}

/* ---- epoch.c ---- */

/* Destination offers (lock mode, host windows; rma_backend.c sends all-to-all blocks straight into a destination
 * that node peers can map). After rma__epoch_begin a target writes an origin the offer of that epoch (the
 * fields, then the pair's epoch count as the flag, release); the origin waits for the count (bounded like every
 * handshake wait, an ABORT ends it) and reads the fields. Values are the pair's own epoch counts, as "ready" and
 * "done" are. */
rmaop_status rma__offer(rmaop_win w, int origin, const int64_t fields[RMA_OFFER_FIELDS]);
rmaop_status rma__offers_wait(rmaop_win w, int n, const int *targets);
rmaop_status rma__offer_read(rmaop_win w, int target, int64_t fields[RMA_OFFER_FIELDS]);

/* Opens an epoch with exactly these peers (own rank dropped: self transfers are local copies).
 * Unsorted lists are fine; a repeated rank or one outside the communicator is RMAOP_ERR_ARG. */
rmaop_status rma__epoch_begin(rmaop_win win, int ntargets, const int *targets, int norigins, const int *origins,
                              unsigned flags);
/* Optional, after this rank's last put of the epoch: completes the origin side now (lock: flush and
 * "done" flags; pscw: MPI_Win_complete), so that rma__epoch_end only waits for the origins. Plans and
 * reductions call it in their begin: a rank then never waits on a peer that waits on it, whatever
 * order the ends of several outstanding operations come in. Fence: nothing (the fence is collective). */
rmaop_status rma__epoch_origin_done(rmaop_win win);
/* Closes the epoch: this rank's puts/gets are complete, every origin's puts are visible here. */
rmaop_status rma__epoch_end(rmaop_win win);
/* Flag handshake (lock; every mode on a GPU window), once the data of the epoch that just ended was consumed: tells
 * its origins that this rank's memory may take their next epoch (an early "post"), so they need not
 * wait for it at their next begin. Other windows: nothing to do. */
rmaop_status rma__post_ready(rmaop_win win);
/* Releases the PSCW groups (window free). */
void rma__epoch_free(rmaop_win win);
/* Writes ABORT into every slot this rank owns at every other rank, once: whoever waits for this rank on this
 * window, now or later, fails at once with RMAOP_ERR_REMOTE instead of waiting for it. Host windows only. */
void rma__epoch_abandon(rmaop_win win);
/* Window free: 1 when the collective MPI frees may run (every rank arrived at the free and committed to it,
 * bounded by the timeout; or no MPI window; or a creation that never completed), 0 when they must not (the
 * context failed, or a peer did not come): the window is then abandoned and its MPI objects leaked, since a
 * collective free would wait for a rank that may never call it. */
int rma__epoch_free_agreed(rmaop_win win);

#endif /* RMAOP_RMA_WIN_H */
