/**
 * @file plan.h
 * @brief Communication: plans (a pattern declared once, executed many times), the one-sided window API
 *        (rmaop_win_*), and reductions of doubles (rmaop_allreduce*) with their requests.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_PLAN_H
#define RMAOP_RMAOP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Plans: a communication pattern declared once, executed many times                               */
/* ------------------------------------------------------------------------------------------------ */

/** One contiguous transfer: @p count elements from src[src_offset...] of the origin to
 *  dst[dst_offset...] of rank @p peer (as a send); as an expected receive, @p peer is the origin. */
typedef struct {
  int peer;
  int64_t src_offset, dst_offset, count;
} rmaop_transfer;

typedef struct {
  rmaop_dtype dtype;
  int64_t src_len;                /**< elements in this rank's source buffer (bounds checks) */
  int64_t dst_len;                /**< elements in this rank's destination buffer */
  int nsends;
  const rmaop_transfer *sends;    /**< this rank's outgoing transfers (peer == own rank allowed) */
  int nrecvs;                     /**< -1: derive the receives from the other ranks' sends */
  const rmaop_transfer *recvs;    /**< when nrecvs >= 0: the receives this rank expects (peer = origin;
                                       src_offset ignored); they must match the senders' view */
  const char *label;              /**< trace site name; NULL: "plan" */
} rmaop_plan_spec;

/**
 * Creates a plan. Collective. The inverse view (who sends to me) is computed here, every transfer is
 * checked against both ranks' buffer lengths, and expected receives (if given) against the senders.
 * @return RMAOP_ERR_ARG naming the transfer, peer and counts on any disagreement (on every rank).
 */
rmaop_status rmaop_plan_create(rmaop_ctx ctx, const rmaop_plan_spec *spec, rmaop_plan *plan);
/** The reversed plan (every transfer goes back: dst -> src), for adjoints with RMAOP_ADD. Collective. */
rmaop_status rmaop_plan_reverse(rmaop_plan plan, const char *label, rmaop_plan *reversed);
/**
 * Starts moving the data. Neighbor-collective. @p src (src_len elements) must not change and @p dst
 * (dst_len elements) must not be touched until rmaop_plan_end(). Memory kind of the context.
 * INSERT overwrites the destination ranges; ADD adds into them. Contributions to one destination are
 * applied in ascending origin rank (then the origin's transfer order): identical on every backend.
 * With the rma backend in fence mode, begin and end are collective over the whole context (MPI_Win_fence).
 * In ADD mode the destination is written only inside rmaop_plan_end() (every backend stages incoming
 * data), so the caller may keep accumulating into dst between begin and end (operators' adjoints do). In
 * INSERT mode the destination ranges may be written as data arrives: leave them alone until the end.
 */
rmaop_status rmaop_plan_begin(rmaop_plan plan, const void *src, void *dst, rmaop_mode mode);
/** Completes the plan's execution begun by rmaop_plan_begin(). Neighbor-collective. */
rmaop_status rmaop_plan_end(rmaop_plan plan);
/** rmaop_plan_begin() + rmaop_plan_end(). */
rmaop_status rmaop_plan_execute(rmaop_plan plan, const void *src, void *dst, rmaop_mode mode);
/** Frees a plan. Collective (windows are freed). Sets *plan to NULL. */
void rmaop_plan_destroy(rmaop_plan *plan);

typedef struct {
  const char *label;
  rmaop_dtype dtype;
  int64_t src_len, dst_len;
  int nsends, nrecvs;           /**< transfers to other ranks, from other ranks (self excluded) */
  int nsend_peers, nrecv_peers; /**< distinct peers (self excluded) */
  int64_t send_count, recv_count, self_count; /**< elements */
} rmaop_plan_info;
rmaop_status rmaop_plan_get_info(rmaop_plan plan, rmaop_plan_info *info);

/* ------------------------------------------------------------------------------------------------ */
/* Windows: the low-level one-sided API the rma backend is built on                                */
/* ------------------------------------------------------------------------------------------------ */

/**
 * Allocates @p bytes of window memory on every rank (context's memory kind) and exposes it. Collective.
 * Transport per peer follows the context (auto: shm for node-local peers, mpi otherwise); the epoch
 * synchronization is the context's rma sync mode.
 */
rmaop_status rmaop_win_allocate(rmaop_ctx ctx, size_t bytes, rmaop_win *win, void **base);
/** Exposes user memory @p base of @p bytes. Collective. Only the mpi transport can reach user memory:
 *  with RMAOP_RMA_TRANSPORT=shm this returns RMAOP_ERR_UNSUPPORTED; auto picks mpi. */
rmaop_status rmaop_win_create(rmaop_ctx ctx, void *base, size_t bytes, rmaop_win *win);
/**
 * Opens an access/exposure epoch. @p targets: ranks this rank will put to / get from; @p origins: ranks
 * that will put to / get from this rank. Fence: collective over the context. PSCW and lock:
 * neighbor-collective with exactly those groups. After it, this rank may put/get to @p targets.
 * Begin and end wait at most the context's timeout for the peers (RMAOP_ERR_TIMEOUT naming them).
 */
rmaop_status rmaop_win_epoch_begin(rmaop_win win, int ntargets, const int *targets, int norigins, const int *origins);
/** Puts @p bytes from @p origin to @p target's window at byte displacement @p disp. Inside an epoch. On a GPU window
 *  the put reads @p origin in the order of the context's stream: work of other streams that writes it must be
 *  complete first (as before an MPI call; a cudaMemcpy from pageable memory may return before its copy lands). */
rmaop_status rmaop_win_put(rmaop_win win, const void *origin, size_t bytes, int target, size_t disp);
/** Gets @p bytes from @p target's window at @p disp into @p origin; valid after rmaop_win_epoch_end(). */
rmaop_status rmaop_win_get(rmaop_win win, void *origin, size_t bytes, int target, size_t disp);
/** Closes the epoch: this rank's puts/gets are complete and every origin's puts to this rank are
 *  visible in its window memory. */
rmaop_status rmaop_win_epoch_end(rmaop_win win);
/** Transport used towards @p peer ("shm", "mpi", "ipc", "self"). */
rmaop_status rmaop_win_peer_transport(rmaop_win win, int peer, rmaop_transport *transport);
/** Frees a window (and memory from rmaop_win_allocate). Collective: waits at most the context's timeout for
 *  the other ranks; on a failed context, or when one does not come, the MPI window and its memory are leaked
 *  (a late peer may still write there) instead of freed. Sets *win to NULL. */
void rmaop_win_destroy(rmaop_win *win);

/* ------------------------------------------------------------------------------------------------ */
/* Device-side window access: CUDA kernels put and signal with no host step (rmaop_device.cuh)      */
/* ------------------------------------------------------------------------------------------------ */

/** Most ranks a device handle covers: rmaop_win_device_handle() refuses larger windows. */
#define RMAOP_DEVICE_MAX_PEERS 16

/**
 * What a CUDA kernel needs to put into the ranks' windows and signal them: the device functions of
 * <rmaop/rmaop_device.cuh> take its address (that header states their memory-ordering contract). Plain data:
 * pass it to a kernel by value (or copy it to device memory). Every pointer is a device address of this
 * process on the context's GPU, valid until rmaop_win_destroy(). Signal words count per pair of ranks: rank t's
 * word o is written only by origin o, holds 0 at creation, and never collides with the host epochs' flags.
 */
typedef struct {
  int rank, size;                                /**< this rank and the window's ranks (<= RMAOP_DEVICE_MAX_PEERS) */
  char *base[RMAOP_DEVICE_MAX_PEERS];            /**< rank r's window memory, mapped here (own: its memory) */
  size_t bytes[RMAOP_DEVICE_MAX_PEERS];          /**< rank r's window size in bytes */
  uint64_t *signal;                              /**< this rank's signal words, [size]: word o is origin o's */
  uint64_t *peer_signal[RMAOP_DEVICE_MAX_PEERS]; /**< rank r's signal words, mapped here (own: signal) */
  uint64_t timeout_ns;                           /**< how long a device-side wait lasts: the context's timeout */
  unsigned *wait_record; /**< device address of the context's record of GPU-side waits that gave up (host-mapped:
                              failed, slot, want, seen), which the next synchronization reports */
  unsigned *wait_claim;  /**< device word: the first device-side wait of this window that gives up claims it */
} rmaop_win_device;

/**
 * Fills @p out with the device handle of a GPU window, for kernels that put into the ranks' windows and signal
 * them themselves (<rmaop/rmaop_device.cuh>). Not collective; communicates nothing. A device-side wait that gives
 * up after the context's timeout is reported like the library's own GPU-side waits: the next synchronization of
 * the context (rmaop_ctx_synchronize(), a plan's or an epoch's step, a dot) returns RMAOP_ERR_TIMEOUT naming the
 * peer, and the context is failed. Launch such kernels on the context's stream (rmaop_ctx_get_stream()), or
 * synchronize their stream before asking the context.
 * @return RMAOP_ERR_ARG when @p win or @p out is NULL; RMAOP_ERR_UNSUPPORTED, naming why, unless the window is GPU
 *         memory over the ipc transport (a device context, RMAOP_RMA_TRANSPORT auto or ipc with every rank on one
 *         node) of at most RMAOP_DEVICE_MAX_PEERS ranks, and always in a build without CUDA; RMAOP_ERR_STATE on
 *         a failed context.
 */
rmaop_status rmaop_win_device_handle(rmaop_win win, rmaop_win_device *out);

/* ------------------------------------------------------------------------------------------------ */
/* Reductions of doubles and requests                                                               */
/* ------------------------------------------------------------------------------------------------ */

/**
 * Reduces @p count doubles from every rank into @p out on every rank (identical on all ranks),
 * through the context's backend. Collective. The ranks first agree that their arguments are valid (one
 * extra small allreduce); the vector reductions (rmaop_vec_dot, _mdot, _norm2) need no such step. @p in and @p out may alias. @p label names the trace site
 * (NULL: "allreduce"). Host memory buffers.
 */
rmaop_status rmaop_allreduce(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                             const char *label);
/** Non-blocking form of rmaop_allreduce(): @p out is valid after rmaop_allreduce_end(). Collective.
 *  @p in must not change and @p out must not be read before the end. */
rmaop_status rmaop_allreduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count,
                                   rmaop_redop op, const char *label, rmaop_request *req);
/** Completes rmaop_allreduce_begin() (rmaop_request_wait() under its own name); *req becomes NULL. */
rmaop_status rmaop_allreduce_end(rmaop_request *req);
/** Completes a request and frees it (sets *req to NULL). */
rmaop_status rmaop_request_wait(rmaop_request *req);
/**
 * rmaop_allreduce() on buffers in the context's memory kind. On a device context @p in and @p out
 * (count doubles) are device memory and the call is stream-ordered: it returns once the reduction is
 * enqueued on the context's stream, the result is in @p out for whatever is enqueued after it, and the
 * host is not synchronized where the backend's device plans do not synchronize (rma over ipc, nccl; over
 * MPI the exchange stages or waits for the stream as a plan does). Every rank's values go into a slot of
 * every rank's device buffer (one gather plan per count: one-sided puts into the peers' device windows on
 * the rma backend), then a kernel combines the slots in rank order: identical bits on every rank. The
 * trace records it as the plan "reduce.device". On a host context: rmaop_allreduce(). Collective; the
 * ranks agree on the arguments and the count first (one small host collective). @p in and @p out may alias.
 */
rmaop_status rmaop_allreduce_enqueue(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_PLAN_H */
