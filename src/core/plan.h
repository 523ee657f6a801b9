/* The plan object as backends see it (src/core/plan.c): its views, execution state and the unpack. */
#ifndef RMAOP_CORE_PLAN_H
#define RMAOP_CORE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A plan, after creation. All transfers are in elements.
 * Receive staging layout (shared by every backend): the incoming non-self transfers are stored
 * contiguously, ordered by origin rank, then by the origin's send order; recv[i].src_offset holds the
 * origin's offset, recv_disp[i] the transfer's displacement in the staging buffer, and send_disp[j]
 * where send j lands in the target's staging buffer. */
struct rmaop_plan_s {
  rmaop_ctx ctx;
  char *label;
  rmaop_dtype dtype;
  size_t esize;
  int64_t src_len, dst_len;

  int nsend;                 /* non-self sends, sorted by (peer, given order) */
  rmaop_transfer *send;
  int64_t *send_disp;        /* [nsend] element displacement in the target's staging */
  int nsend_peers;
  int *send_peers;           /* [nsend_peers] ascending */
  int *send_peer_first;      /* [nsend_peers + 1] index ranges into send[] */
  int64_t *send_peer_count;  /* [nsend_peers] elements to that peer */
  int64_t *send_peer_disp;   /* [nsend_peers] where that peer's block starts in its staging */

  int nrecv;                 /* non-self receives, in staging order */
  rmaop_transfer *recv;      /* peer = origin, src_offset = origin's offset, dst_offset = mine */
  int64_t *recv_disp;        /* [nrecv] */
  int nrecv_peers;
  int *recv_peers;           /* [nrecv_peers] ascending */
  int *recv_peer_first;      /* [nrecv_peers + 1] */
  int64_t *recv_peer_count;  /* [nrecv_peers] */
  int64_t *recv_peer_disp;   /* [nrecv_peers] block start in my staging */
  int64_t recv_total;        /* elements in my staging buffer */

  int nself;                 /* transfers to myself (copied src -> dst at unpack, in rank order) */
  rmaop_transfer *self;

  /* Made by rmaop_plan_create_alltoall (src/core/alltoall.c), or reversed from such a plan: at most one transfer
   * per peer, and every rank of the context creates and executes it together, so a backend may execute it as a
   * collective (twosided: MPI_Ialltoallv). The views above are those of any plan. */
  int alltoall;

  /* execution state */
  int active;                /* between begin and end */
  const void *cur_src;
  void *cur_dst;
  rmaop_mode cur_mode;
  double t_begin;
  double t_inside;           /* seconds spent inside rmaop_plan_begin of the current execution */
  /* Device memory. dev_native: set by the backend's plan_setup when it reads device src and writes a
   * device staging itself (nccl, rma over ipc, CUDA-aware MPI); otherwise the core stages through host
   * memory: rmaop__plan_send_src() copies the send ranges to host_src, and rmaop__plan_unpack() copies
   * a host staging to dev_staging before the device kernels apply it. */
  int dev_native;
  int capturing;           /* this execution is being captured into a CUDA graph (rmaop_plan_begin) */
  void *host_src;          /* [src_len] host shadow of src: only the send ranges are written */
  void *dev_staging;       /* [recv_total] device copy of a host staging */

  /* trace: what one execution moves, set by the backend at setup */
  uint64_t trace_messages;
  double trace_bytes_per_message;
  const char *trace_transport;

  void *backend_data;
};



/* rmaop_plan_create with the all-to-all mark (plan->alltoall) given: 1 for the plans of
 * rmaop_plan_create_alltoall, whose spec has at most one send per peer. Collective. */
rmaop_status rmaop__plan_create_marked(rmaop_ctx ctx, const rmaop_plan_spec *spec, int alltoall, rmaop_plan *plan);

/* A growing list of transfers, for operators that build a plan's sends piece by piece (free t when done). */
typedef struct {
  rmaop_transfer *t;
  int n, cap;
} rmaop__tlist;
/* Appends @p t, merged into the previous transfer when both sides continue it contiguously. RMAOP_ERR_NOMEM
 * naming @p what when the list cannot grow. */
rmaop_status rmaop__tlist_push(rmaop_ctx ctx, rmaop__tlist *l, rmaop_transfer t, const char *what);

/* Whether no two incoming or self transfers of this rank write the same destination element (empty ones aside).
 * Then, in INSERT mode, the order in which they land does not matter, and a backend may let them write dst
 * directly (twosided: receives straight into dst; rma: puts straight into it). */
rmaop_status rmaop__plan_dst_disjoint(rmaop_plan plan, int *disjoint);

/* The source a backend that moves host memory reads its sends from: plan->cur_src itself for host
 * memory or a dev_native plan; else the host shadow with every send range copied from the device
 * (synchronizes). NULL only on a CUDA failure (recorded in the context). */
const void *rmaop__plan_send_src(rmaop_plan plan);

/* What a backend's plan_end hands the core to apply: its staging (NULL when nothing came), optionally the
 * origins it received straight into the destination (skip, indexed like recv_peers; NULL: none), and
 * optionally a hook that applies transfers itself: dst (=|+=) src, `bytes` long; *taken = 0 leaves the
 * transfer to the core (rma over ipc: copies into its epoch kernel). */
typedef struct {
  const void *staging;
  const unsigned char *skip;
  rmaop_status (*apply)(rmaop_plan plan, void *dst, const void *src, size_t bytes, rmaop_mode mode, int *taken);
} rmaop__unpack_from;
/* Applies the received data of the current execution: for every receive in canonical order (self transfers
 * included at their rank's position), cur_dst[dst_offset..] = or += staging[disp..] (self: from cur_src), in
 * cur_mode. Host memory, or device memory (kernels on the context's stream; a host staging is copied to the
 * device first). @p from NULL: nothing received, self transfers only. */
rmaop_status rmaop__plan_unpack(rmaop_plan plan, const rmaop__unpack_from *from);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_PLAN_H */
