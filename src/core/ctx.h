/* The context object: what every backend and every part of the core shares (src/core/ctx.c). */
#ifndef RMAOP_CORE_CTX_H
#define RMAOP_CORE_CTX_H

#include <stdint.h>

#include "rmaop/rmaop.h"
#include "device/built.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rmaop__trace_rec rmaop__trace_rec;
struct rmaop_backend;

/* Built-in backends at most (src/core/backend.c's registry). */
#define RMAOP__MAX_BACKENDS 4

enum {
  RMAOP__SCALARS_AUTO,
  RMAOP__SCALARS_HOST,
  RMAOP__SCALARS_DEVICE,
  RMAOP__SCALARS_GRAPH,
  RMAOP__SCALARS_RESIDENT,
  RMAOP__SCALARS_WHILE
};
enum { RMAOP__HALO_AUTO, RMAOP__HALO_PLAN, RMAOP__HALO_KERNEL }; /* RMAOP_HALO */

/* Whether an object with a `memory` field (a context, a vector) lives on the GPU; a constant 0 without CUDA
 * (src/device/built.h), where no device context can exist. */
#define RMAOP__ON_DEVICE(obj) (RMAOP__DEV_BUILT && (obj)->memory == RMAOP_MEMORY_DEVICE)

/* Work buffers a context keeps between solves (rmaop__work_alloc): more than one solve holds (a GPU-resident CGLS:
 * its 4 vectors, 3 scratch buffers and its control and progress words), so that a solve called again allocates
 * none of them. */
#define RMAOP__WORK_CACHE 16

struct rmaop_ctx_s {
  MPI_Comm comm;          /* duplicate, MPI_ERRORS_RETURN */
  int rank, size;
  MPI_Comm node_comm;     /* ranks sharing memory with this one (MPI_COMM_TYPE_SHARED) */
  int node_rank, node_size;
  int node_group;         /* RMAOP_NODE_SIZE: k > 0 splits real nodes into nodes of k consecutive ranks */
  int host_rank;          /* rank among the processes of the real node (which GPU to take) */
  int *node_of;           /* node_of[r]: index of r's node, to decide node-locality per peer */
  const struct rmaop_backend *backend;
  void *backend_data;     /* backend's per-context state */
  rmaop_memory memory;
  void *settings[RMAOP__MAX_BACKENDS]; /* every built-in backend's parsed options (rmaop__backend_settings) */
  double timeout;
  int trace_on;
  rmaop__trace_rec *trace;
  double comm_time;       /* seconds spent inside plan begin/end and reduction begin/wait calls */
  int defer_next;         /* set by blocking callers: the next reduction may run blocking at its wait */
  rmaop_request req_pool[8]; /* freed requests kept for reuse: no allocation per dot */
  int nreq_pool;
  /* Device reductions (rmaop_allreduce_enqueue, rmaop_vec_mdot_enqueue; src/core/reduce.c): a gather plan per
   * count (index = count for 1..16, index 0: the last larger count) and its slots, P x count device doubles. */
  struct {
    rmaop_plan plan;
    double *slots;
    int64_t count;
  } dred[17];
  /* Device memory (src/device/device.h; RMAOP_MEMORY=device only): the GPU this rank uses, the context's stream
   * (a cudaStream_t) on which every kernel, copy and device-side epoch runs, and scratch for reductions. */
  int device;
  int prev_device;      /* the GPU current before rmaop__dev_init (made current again at destroy; -1: none) */
  void *stream;
  double *dev_scratch;  /* device doubles: dot partials */
  double *host_scratch; /* page-locked doubles: where dot partials land on the host */
  void *fetch_event;    /* cudaEvent_t behind rmaop__dev_fetch_begin's copy (created at first use) */
  int solver_scalars;   /* RMAOP_SOLVER_SCALARS: RMAOP__SCALARS_* */
  int resident_profile; /* RMAOP_RESIDENT_PROFILE: the resident solve stamps its phases (solver_resident.c) */
  int halo;             /* RMAOP_HALO: RMAOP__HALO_* (src/ops/op_stencil.c) */
  uint64_t captured_plans;   /* plan executions captured into CUDA graphs so far (rmaop_plan_begin) */
  void *dev_wait_record;     /* host-mapped rmaop__dev_wait_record (device.h) */
  void *dev_wait_record_dev; /* its device address */
  struct rmaop__dev_release *dev_release; /* releases of stream work that can block for good (device.h) */
  int ndev_release, cap_dev_release;
  int mpi_cuda_aware;   /* the MPI library accepts device pointers (MPIX_Query_cuda_support at creation) */
  /* Internal work buffers kept for the next use (src/core/mem.c, rmaop__work_alloc): the solvers' vectors and
   * scalars, so that a solve called again allocates nothing (no cudaMalloc, cudaFree or page faults). */
  struct {
    void *p;
    size_t bytes;
    int pinned;
  } work[RMAOP__WORK_CACHE];
  int nwork;
  /* The GPU-resident solve's window (src/solvers/solver_resident.c), kept for the next solve of the same window size
   * and ghost layout (key: bytes * 2, + 1 for the inline layout): its creation maps every peer's memory (CUDA IPC)
   * and is collective. Destroyed with the context. */
  rmaop_win resident_win;
  size_t resident_win_key;
  unsigned long resident_solves; /* solves the resident kernel ran to their end (tests check the path taken) */
  /* Node-shared host buffers (src/core/shmem.c): NULL when the context makes none. */
  struct rmaop__shm *shm;
  char last_error[1024];
  int error_held;       /* rmaop__error_hold: > 0 keeps last_error */
  /* A failed exchange (a wait timed out, or a peer gave up in the middle of one: src/core/error.c) leaves peers in
   * unknown epochs, so every later communicating call returns RMAOP_ERR_STATE quoting `failure`, and destroys free
   * nothing that a collective MPI call would have to free (rma/win.c). */
  rmaop_status failed;  /* RMAOP_OK, or the status of the first failure */
  char failure[768];    /* its message */
};


/* ---- trace (src/core/trace.c) ---- */

/* `seconds`: begin to end; `inside`: the part spent inside rmaop's own calls; `add`: the call was a plan in
 * RMAOP_ADD mode (the receiver accumulates). */
void rmaop__trace_record(rmaop_ctx ctx, const char *label, const char *kind, const char *transport,
                         uint64_t messages, double bytes_per_message, double seconds, double inside, int add);
void rmaop__trace_free(rmaop_ctx ctx);
/* RMAOP_TRACE_SYNCED: drain + barrier before a traced call (untimed), drain before its end is timed. */
void rmaop__trace_sync_start(rmaop_ctx ctx);
void rmaop__trace_sync_end(rmaop_ctx ctx);

/* A device context whose kernels can store into every rank's GPU memory: the rma backend over the ipc transport
 * (ipc, or auto with every rank on one node), at most RMAOP_DEVICE_MAX_PEERS ranks (rmaop_win_device_handle's rule).
 * The same on every rank. */
int rmaop__dev_ipc_path(rmaop_ctx ctx);
/* Every rank on one node, with a GPU of its own. */
int rmaop__gpu_per_rank(rmaop_ctx ctx);

/* Frees the context's pooled reduction requests (src/core/reduce.c). */
void rmaop__request_pool_free(rmaop_ctx ctx);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_CTX_H */
