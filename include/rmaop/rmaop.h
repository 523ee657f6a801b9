/**
 * @file rmaop.h
 * @brief rmaop: distributed linear operators and solvers over one-sided (rma), two-sided (MPI) and NCCL
 *        communication. The one header a user includes.
 *
 * Conventions
 * - Every function returns an ::rmaop_status; RMAOP_OK is 0. On failure the context keeps a message that
 *   names the bad argument or the failing library call (rmaop_ctx_last_error()). Output arguments are
 *   written only on success. Nothing in the library calls exit, abort or MPI_Abort.
 * - "Collective" means every rank of the context's communicator must call, in the same order. Collective
 *   calls agree on failure: if one rank detects bad input, every rank returns an error (that rank the
 *   precise one, the others RMAOP_ERR_REMOTE) instead of hanging.
 * - "Neighbor-collective" means every rank that a plan connects must call.
 * - Scalars are passed as `double _Complex`; for real dtypes the imaginary part must be zero.
 */
#ifndef RMAOP_RMAOP_H
#define RMAOP_RMAOP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RMAOP_VERSION_MAJOR 0
#define RMAOP_VERSION_MINOR 1
#define RMAOP_VERSION_PATCH 0

/** Status of every call. */
typedef enum {
  RMAOP_OK = 0,
  RMAOP_ERR_ARG,         /**< a bad argument; the message names it */
  RMAOP_ERR_MPI,         /**< an MPI call failed; the message names it and MPI's error string */
  RMAOP_ERR_CUDA,        /**< a CUDA call failed */
  RMAOP_ERR_NCCL,        /**< an NCCL call failed */
  RMAOP_ERR_UNSUPPORTED, /**< the backend, memory kind or transport cannot do this */
  RMAOP_ERR_NOMEM,       /**< an allocation failed */
  RMAOP_ERR_TIMEOUT,     /**< a wait for a peer exceeded the context's timeout */
  RMAOP_ERR_REMOTE,      /**< another rank failed in this collective call; its message says why */
  RMAOP_ERR_INTERNAL     /**< a bug in rmaop; please report it with the message */
} rmaop_status;

/** Static name of a status ("RMAOP_ERR_ARG", ...). Not collective. */
const char *rmaop_status_string(rmaop_status status);

typedef enum { RMAOP_F32 = 0, RMAOP_F64, RMAOP_C64, RMAOP_C128 } rmaop_dtype;
typedef enum { RMAOP_MEMORY_HOST = 0, RMAOP_MEMORY_DEVICE } rmaop_memory;
/** How a plan writes the destination: overwrite, or add (adjoints use ADD). */
typedef enum { RMAOP_INSERT = 0, RMAOP_ADD } rmaop_mode;
typedef enum { RMAOP_SUM = 0, RMAOP_MAX, RMAOP_MIN } rmaop_redop;
/** Epoch synchronization of the rma backend (RMAOP_RMA_SYNC). */
typedef enum { RMAOP_SYNC_FENCE = 0, RMAOP_SYNC_PSCW, RMAOP_SYNC_LOCK } rmaop_sync;
/** How the rma backend moves bytes to a peer (RMAOP_RMA_TRANSPORT). */
typedef enum {
  RMAOP_TRANSPORT_AUTO = 0,
  RMAOP_TRANSPORT_MPI,
  RMAOP_TRANSPORT_SHM,
  RMAOP_TRANSPORT_IPC,
  RMAOP_TRANSPORT_SELF /**< reported for a rank's own entry (local copies); not accepted as a choice */
} rmaop_transport;
typedef enum {
  RMAOP_LAYOUT_SCATTER = 0,
  RMAOP_LAYOUT_BROADCAST,
  RMAOP_LAYOUT_STACKED /**< a list of layouts (rmaop_layout_create_stacked); not accepted by rmaop_layout_create */
} rmaop_layout_kind;

/** Bytes of one element of @p dtype (0 for an invalid dtype). */
size_t rmaop_dtype_size(rmaop_dtype dtype);
/** "f32", "f64", "c64", "c128" (or "invalid"). */
const char *rmaop_dtype_name(rmaop_dtype dtype);
/** Parses "f32" ... "c128". Returns RMAOP_ERR_ARG naming the string when unknown. */
rmaop_status rmaop_dtype_parse(const char *name, rmaop_dtype *dtype);
const char *rmaop_sync_name(rmaop_sync sync);
const char *rmaop_transport_name(rmaop_transport transport);
const char *rmaop_memory_name(rmaop_memory memory);

typedef struct rmaop_ctx_s *rmaop_ctx;
typedef struct rmaop_layout_s *rmaop_layout;
typedef struct rmaop_vec_s *rmaop_vec;
typedef struct rmaop_plan_s *rmaop_plan;
typedef struct rmaop_win_s *rmaop_win;
typedef struct rmaop_request_s *rmaop_request;

/* ------------------------------------------------------------------------------------------------ */
/* Context                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/** Options of a context. A NULL string or a negative number means: take the RMAOP_* environment
 *  variable named beside it, else the default. */
typedef struct {
  const char *backend;       /**< "rma" | "twosided" | "nccl"; RMAOP_BACKEND; default "rma" */
  const char *memory;        /**< "host" | "device"; RMAOP_MEMORY; default "host" */
  int trace;                 /**< RMAOP_TRACE_OFF | _ON | _SYNCED; RMAOP_TRACE; default off */
  double timeout;            /**< seconds a wait on a peer may last (rma lock mode's flag waits; MPI's own
                                  fence and PSCW block inside MPI); RMAOP_TIMEOUT; default 300 */
  /** The rma backend's options (checked whatever the backend; the public window API reads them too). */
  struct {
    const char *sync;      /**< "fence" | "pscw" | "lock"; RMAOP_RMA_SYNC; default "lock" */
    const char *transport; /**< "auto" | "mpi" | "shm" | "ipc"; RMAOP_RMA_TRANSPORT; default "auto" */
    const char *ipc_path;  /**< "auto" | "kernel" | "copy": how the ipc transport moves small epochs
                                (README, RMAOP_IPC_PATH); default "auto" (= copy) */
  } rma;
} rmaop_ctx_options;

/** Fills @p opts with "unset" (NULL strings, -1 numbers) so every field comes from the environment. */
void rmaop_ctx_options_init(rmaop_ctx_options *opts);

/**
 * Creates a context over a duplicate of @p comm (errors return on the duplicate).
 * Collective over @p comm. @p opts may be NULL (all from the environment).
 * Reads RMAOP_BACKEND, RMAOP_MEMORY, RMAOP_RMA_SYNC, RMAOP_RMA_TRANSPORT, RMAOP_TRACE, RMAOP_TIMEOUT.
 * On device memory the context uses GPU (node rank modulo the visible GPUs) and makes it the calling thread's
 * current GPU; rmaop_ctx_destroy() makes the GPU that was current before the creation current again. A
 * thread that uses contexts on different GPUs at the same time makes a context's GPU current
 * (cudaSetDevice) before calling it.
 * @return RMAOP_ERR_ARG for an unknown name (the message lists the valid ones), RMAOP_ERR_UNSUPPORTED for
 *         a backend not built in, RMAOP_ERR_MPI. On failure no context exists: read the message with
 *         rmaop_ctx_last_error(NULL).
 */
rmaop_status rmaop_ctx_create(MPI_Comm comm, const rmaop_ctx_options *opts, rmaop_ctx *ctx);
/** Frees a context and sets *ctx to NULL. Collective. Every object made from it must be freed first. */
void rmaop_ctx_destroy(rmaop_ctx *ctx);
/** The last error message of @p ctx, or of the process when @p ctx is NULL ("" when none). Not collective. */
const char *rmaop_ctx_last_error(rmaop_ctx ctx);

/** What a context is. Not collective. */
typedef struct {
  MPI_Comm comm; /**< the context's duplicate; do not free */
  int rank, size;
  const char *backend;
  rmaop_memory memory;
  int trace;
  double timeout;
  int graph_capture; /**< 1: a device context whose plans, device reductions and vector kernels can be captured
                          into CUDA graphs (rmaop_ctx_get_stream says which paths); 0 otherwise */
  /** The rma backend's settings (what its public windows use, whatever the backend). */
  struct {
    rmaop_sync sync;
    rmaop_transport transport;
  } rma;
} rmaop_ctx_info;
rmaop_status rmaop_ctx_get_info(rmaop_ctx ctx, rmaop_ctx_info *info);

/**
 * Waits until everything rmaop has enqueued on the context's GPU stream (kernels, copies, device-side epoch
 * flags) has completed. Not collective. With host memory it returns at once. Use it before timing or
 * reading device results with your own CUDA calls on another stream.
 * @return RMAOP_ERR_CUDA with CUDA's message when the stream reports an error.
 */
rmaop_status rmaop_ctx_synchronize(rmaop_ctx ctx);

/**
 * The context's GPU stream (a cudaStream_t) in @p *stream, for ordering your own work with rmaop's and for
 * capturing rmaop's work into a CUDA graph. Not collective.
 *
 * CUDA graphs: between cudaStreamBeginCapture(stream, ...) and cudaStreamEndCapture() on this stream, plan
 * executions (rmaop_plan_begin/end, and the operators' applies built on them), the device vector kernels
 * that return nothing to the host and rmaop_allreduce_enqueue() are recorded instead of run, and every
 * cudaGraphLaunch() of the graph replays them with fresh epoch flags: each replay is a new epoch exchange
 * with the peers, which must replay the same graph, as often and in the same order relative to the other
 * rmaop work on these plans. Capturable (rmaop_ctx_info.graph_capture): every plan on one rank; the nccl
 * backend; the rma backend over ipc on the kernel path (RMAOP_IPC_PATH=kernel), whose flag values come from
 * device counters. Not capturable (RMAOP_ERR_UNSUPPORTED names the reason, before anything is enqueued, so
 * the capture can still be ended): the twosided backend and rma over MPI or host staging (their messages are host-side MPI calls),
 * the ipc copy path (its flag values are fixed when enqueued), public window epochs (their end waits on the
 * host), and any call that waits on the host or allocates: dots and norms returning doubles,
 * rmaop_ctx_synchronize(), the first execution of a plan or the first device reduction of a context (run
 * the work once before capturing). A replay is stream-ordered like any rmaop call: synchronize the stream
 * (or use rmaop_ctx_synchronize() after the capture ended) before the host reads results.
 * @return RMAOP_ERR_ARG when @p ctx is not a device context (host memory has no stream).
 */
rmaop_status rmaop_ctx_get_stream(rmaop_ctx ctx, void **stream);

/** Comma-separated names of the backends built into this library ("rma,twosided[,nccl]"). */
const char *rmaop_backends_available(void);

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

/* ------------------------------------------------------------------------------------------------ */
/* Layout                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

/**
 * SCATTER: @p global_n split over the ranks, the first (global_n mod P) ranks holding one more element
 * (PyLops-MPI's local_split). BROADCAST: every rank holds all @p global_n. Collective.
 * @return RMAOP_ERR_ARG for a negative size, or one that differs between ranks.
 */
rmaop_status rmaop_layout_create(rmaop_ctx ctx, rmaop_layout_kind kind, int64_t global_n, rmaop_layout *layout);
/** SCATTER with this rank's size @p local_n (uneven and zero sizes allowed). Collective. */
rmaop_status rmaop_layout_create_local(rmaop_ctx ctx, int64_t local_n, rmaop_layout *layout);
/** Drops a reference (vectors keep their layout alive); sets *layout to NULL. Not collective. */
void rmaop_layout_destroy(rmaop_layout *layout);

typedef struct {
  rmaop_layout_kind kind;
  int64_t global_n, local_n, offset; /**< offset: global index of this rank's first element (0 for BROADCAST) */
  int rank, size;
} rmaop_layout_info;
rmaop_status rmaop_layout_get_info(rmaop_layout layout, rmaop_layout_info *info);
/** Local size and offset of @p rank. Not collective. */
rmaop_status rmaop_layout_rank_range(rmaop_layout layout, int rank, int64_t *local_n, int64_t *offset);

/* ---- Stacked layouts and vectors (PyLops-MPI StackedDistributedArray) ---------------------------- */

/**
 * A stacked layout: the concatenation of @p nparts layouts (PyLops-MPI's StackedDistributedArray), each
 * SCATTER or BROADCAST (a stacked layout is not a part). A vector on it holds, on each rank, the parts'
 * local arrays one after the other, so every vector operation works on it unchanged; its dot products and
 * norms count every part once (a BROADCAST part enters the sum once, not once per rank), and its global
 * vector (gather / scatter) is the parts' global vectors one after the other. info.global_n is the sum of
 * the parts' sizes; info.local_n the sum of their local sizes; info.offset is the rank-major prefix sum of
 * local sizes (not a global index: the parts interleave). Not collective. Holds references on the parts.
 * @return RMAOP_ERR_ARG for nparts < 1, a NULL or stacked part, or parts of different contexts.
 */
rmaop_status rmaop_layout_create_stacked(int nparts, const rmaop_layout parts[], rmaop_layout *layout);
/** Number of parts of a stacked layout (0 for SCATTER and BROADCAST). Not collective. */
rmaop_status rmaop_layout_stack_nparts(rmaop_layout layout, int *nparts);
/** Part @p i of a stacked layout (borrowed: valid while @p layout lives). Not collective.
 *  @return RMAOP_ERR_ARG when @p layout is not stacked or @p i is out of range. */
rmaop_status rmaop_layout_stack_part(rmaop_layout layout, int i, rmaop_layout *part);

/**
 * A view of part @p i of a stacked vector: a vector on the part's layout whose local array is @p v's memory
 * at the part's offset (no copy, host or device memory alike), so an operator can be applied to one part
 * and writing through the view changes @p v. The view keeps @p v's memory alive (destroying @p v first is
 * allowed); destroying the view frees no vector memory. Not collective.
 * @return RMAOP_ERR_ARG when @p v is not stacked or @p i is out of range.
 */
rmaop_status rmaop_vec_stack_part(rmaop_vec v, int i, rmaop_vec *part);

/* ------------------------------------------------------------------------------------------------ */
/* Vectors                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/** A zero vector over @p layout in the context's memory. Not collective. */
rmaop_status rmaop_vec_create(rmaop_layout layout, rmaop_dtype dtype, rmaop_vec *vec);
/** A zero vector with the layout and dtype of @p x. Not collective. */
rmaop_status rmaop_vec_duplicate(rmaop_vec x, rmaop_vec *vec);
void rmaop_vec_destroy(rmaop_vec *vec);

typedef struct {
  rmaop_layout layout; /**< borrowed */
  rmaop_dtype dtype;
  rmaop_memory memory;
  int64_t local_n, global_n, offset;
} rmaop_vec_info;
rmaop_status rmaop_vec_get_info(rmaop_vec vec, rmaop_vec_info *info);
/** The local elements (in the vector's memory kind; local_n of them). Not collective. */
rmaop_status rmaop_vec_get_array(rmaop_vec vec, void **data);
/** Copies the local elements to / from host memory @p host (local_n elements of the dtype). */
rmaop_status rmaop_vec_read_local(rmaop_vec vec, void *host);
rmaop_status rmaop_vec_write_local(rmaop_vec vec, const void *host);

/* Local operations (not collective). Vectors must share layout sizes and dtype (else RMAOP_ERR_ARG). */
rmaop_status rmaop_vec_set(rmaop_vec x, double _Complex alpha);                          /**< x[:] = alpha */
rmaop_status rmaop_vec_copy(rmaop_vec x, rmaop_vec y);                                   /**< y = x */
rmaop_status rmaop_vec_axpy(rmaop_vec y, double _Complex alpha, rmaop_vec x);            /**< y += alpha x */
rmaop_status rmaop_vec_axpby(rmaop_vec y, double _Complex alpha, double _Complex beta, rmaop_vec x); /**< y = alpha x + beta y */
rmaop_status rmaop_vec_scale(rmaop_vec x, double _Complex alpha);                        /**< x *= alpha */
rmaop_status rmaop_vec_pointwise_mult(rmaop_vec w, rmaop_vec x, rmaop_vec y);            /**< w = x .* y */

/* Collective reductions over the layout (BROADCAST vectors reduce locally: every rank holds them whole).
 * Partial sums are accumulated in double precision; every rank gets the identical result. */
/** *r = sum_i conj(x_i) y_i (numpy.vdot order). Collective. */
rmaop_status rmaop_vec_dot(rmaop_vec x, rmaop_vec y, double _Complex *r);
/** *r = ||x||_2. Collective. */
rmaop_status rmaop_vec_norm2(rmaop_vec x, double *r);
/** r[k] = dot(x[k], y[k]) for k < n, all in ONE reduction. Collective. */
rmaop_status rmaop_vec_mdot(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[]);
/** Non-blocking rmaop_vec_mdot: @p r is written by rmaop_vec_mdot_end(). Collective. */
rmaop_status rmaop_vec_mdot_begin(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[],
                                  rmaop_request *req);
/** Completes rmaop_vec_mdot_begin() (rmaop_request_wait() under its own name); *req becomes NULL. */
rmaop_status rmaop_vec_mdot_end(rmaop_request *req);
/**
 * The n dots left where the vectors live: r[2k] and r[2k + 1] are the real and imaginary parts of
 * dot(x[k], y[k]). On a device context @p r is device memory (2n doubles), n <= 8, the vectors are
 * distributed (not BROADCAST, not stacked with BROADCAST parts: RMAOP_ERR_UNSUPPORTED), and the call is
 * stream-ordered as rmaop_allreduce_enqueue(): the local dots and their reduction are enqueued, the host
 * is not synchronized, and kernels the caller enqueues next can read the results (no host round trip per
 * dot). On a host context: rmaop_vec_mdot() with the results as pairs in @p r. Collective.
 */
rmaop_status rmaop_vec_mdot_enqueue(int n, const rmaop_vec x[], const rmaop_vec y[], double *r);

/** Gathers the whole vector into host buffer @p global (global_n elements) on @p root. Collective;
 *  @p global is ignored on other ranks. */
rmaop_status rmaop_vec_gather(rmaop_vec vec, int root, void *global);
/** Scatters host buffer @p global (global_n elements, read on @p root) into the vector. Collective. */
rmaop_status rmaop_vec_scatter(rmaop_vec vec, int root, const void *global);

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
 */
rmaop_status rmaop_win_epoch_begin(rmaop_win win, int ntargets, const int *targets, int norigins, const int *origins);
/** Puts @p bytes from @p origin to @p target's window at byte displacement @p disp. Inside an epoch. */
rmaop_status rmaop_win_put(rmaop_win win, const void *origin, size_t bytes, int target, size_t disp);
/** Gets @p bytes from @p target's window at @p disp into @p origin; valid after rmaop_win_epoch_end(). */
rmaop_status rmaop_win_get(rmaop_win win, void *origin, size_t bytes, int target, size_t disp);
/** Closes the epoch: this rank's puts/gets are complete and every origin's puts to this rank are
 *  visible in its window memory. */
rmaop_status rmaop_win_epoch_end(rmaop_win win);
/** Transport used towards @p peer ("shm", "mpi", "ipc", "self"). */
rmaop_status rmaop_win_peer_transport(rmaop_win win, int peer, rmaop_transport *transport);
/** Frees a window (and memory from rmaop_win_allocate). Collective. Sets *win to NULL. */
void rmaop_win_destroy(rmaop_win *win);

/* ------------------------------------------------------------------------------------------------ */
/* Linear operators (PyLops-MPI semantics): y = A x and x = A^H y                                   */
/* ------------------------------------------------------------------------------------------------ */

typedef struct rmaop_op_s *rmaop_op;

/**
 * y = A x. Collective (neighbor-collective for stencils). Arguments are checked on each rank without a
 * reduction (an allreduce per application would double a latency-bound solver's cost): with bad
 * arguments on one rank only, that rank returns RMAOP_ERR_ARG and its neighbours fail with
 * RMAOP_ERR_TIMEOUT in rma lock mode, or wait inside MPI on the other paths. Pass the same kind of
 * arguments on every rank. @p x lives on the model layout, @p y on the data
 * layout, both of the operator's dtype. @p x is not modified; @p y is overwritten.
 */
rmaop_status rmaop_op_apply(rmaop_op A, rmaop_vec x, rmaop_vec y);
/** x = A^H y (the exact adjoint). Collective. */
rmaop_status rmaop_op_apply_adjoint(rmaop_op A, rmaop_vec y, rmaop_vec x);
/** Split application: begin starts the communication and does the work that does not need it; the caller
 *  may compute in between; end finishes. x and y must not be touched between the two. */
rmaop_status rmaop_op_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y);
rmaop_status rmaop_op_apply_end(rmaop_op A);
rmaop_status rmaop_op_apply_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x);
rmaop_status rmaop_op_apply_adjoint_end(rmaop_op A);
/** Drops a reference (composites keep their parts alive); sets *A to NULL. Collective (plans are freed). */
void rmaop_op_destroy(rmaop_op *A);

typedef struct {
  rmaop_layout model, data; /**< borrowed */
  rmaop_dtype dtype;
  const char *name;
} rmaop_op_info;
rmaop_status rmaop_op_get_info(rmaop_op A, rmaop_op_info *info);

/**
 * Dot test: random x, y (seeded, identical for every backend), compares <A x, y> with <x, A^H y>.
 * *rel_err = |<Ax,y> - <x,A^H y>| / max(|<Ax,y>|, |<x,A^H y>|, tiny). Collective.
 * @return RMAOP_OK when the test ran; compare *rel_err yourself (1e-6 f32/c64, 1e-12 f64/c128 are typical).
 */
rmaop_status rmaop_op_dottest(rmaop_op A, unsigned seed, double *rel_err);

/** Derivative kinds. For second derivatives CENTERED3 means PyLops' "centered". */
typedef enum { RMAOP_DERIV_FORWARD = 0, RMAOP_DERIV_BACKWARD, RMAOP_DERIV_CENTERED3, RMAOP_DERIV_CENTERED5 } rmaop_deriv_kind;

#define RMAOP_MAX_DIMS 8
/** An N-D array distributed along axis 0 (C order: the last axis is contiguous). */
typedef struct {
  int ndim;
  int64_t dims[RMAOP_MAX_DIMS]; /**< global shape */
  int64_t local_rows;           /**< rows of axis 0 on this rank; -1: balanced split (PyLops-MPI local_split) */
} rmaop_grid;

/** Options of a derivative (first or second). */
typedef struct {
  rmaop_grid grid;
  int axis;               /**< axis of the derivative; 0 exchanges halos, others are local */
  rmaop_deriv_kind kind;
  int edge;               /**< PyLops' edge flag */
  double sampling;        /**< h; 0 means 1 */
  rmaop_dtype dtype;
  const char *label;      /**< trace name of its halo exchange; NULL: "deriv" */
} rmaop_deriv_spec;

/** PyLops FirstDerivative along @p spec->axis. Collective. Model and data layouts are equal. */
rmaop_status rmaop_op_create_first_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A);
/** PyLops SecondDerivative (kinds FORWARD, BACKWARD, CENTERED3). Collective. */
rmaop_status rmaop_op_create_second_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A);

typedef struct {
  rmaop_grid grid;
  int naxes;                      /**< 0: the last two axes (PyLops' default (-2, -1)) */
  int axes[RMAOP_MAX_DIMS];
  double weights[RMAOP_MAX_DIMS]; /**< per listed axis (per default axis when naxes = 0); all 0: ones */
  double sampling[RMAOP_MAX_DIMS];/**< likewise; 0: one */
  int edge;
  rmaop_deriv_kind kind;          /**< applied on every axis (PyLops applies it to the first only) */
  rmaop_dtype dtype;
  const char *label;
} rmaop_laplacian_spec;
/** Weighted sum of second derivatives (PyLops Laplacian). Collective. */
rmaop_status rmaop_op_create_laplacian(rmaop_ctx ctx, const rmaop_laplacian_spec *spec, rmaop_op *A);

/* ---- N-D halo on a cartesian process grid; gradient (src/ops/op_halo.c, src/ops/op_grad.c) ---- */

#define RMAOP_HALO_MAX_DIMS 4
/** An N-D halo (PyLops-MPI MPIHalo): the global array (row-major) is split in blocks over a cartesian
 *  process grid, not periodic. */
typedef struct {
  int ndim;                             /**< 1 .. RMAOP_HALO_MAX_DIMS */
  int64_t dims[RMAOP_HALO_MAX_DIMS];    /**< global shape */
  int procs[RMAOP_HALO_MAX_DIMS];       /**< ranks along each axis; 0 entries are filled by MPI_Dims_create; the
                                             product must equal the context's size */
  int64_t lo[RMAOP_HALO_MAX_DIMS];      /**< ghost cells before the block along each axis (>= 0) */
  int64_t hi[RMAOP_HALO_MAX_DIMS];      /**< ghost cells after the block along each axis (>= 0) */
  rmaop_dtype dtype;
  const char *label;                    /**< trace name of the exchange; NULL: "halo" */
} rmaop_halo_spec;

/** Where a rank's block sits (what a user needs to build its local arrays). */
typedef struct {
  int ndim;
  int procs[RMAOP_HALO_MAX_DIMS];       /**< the process grid (after MPI_Dims_create) */
  int coords[RMAOP_HALO_MAX_DIMS];      /**< this rank's coordinates: row-major, MPI_Cart_create with reorder = 0 */
  int64_t local[RMAOP_HALO_MAX_DIMS];   /**< extents of this rank's block: n/p + (coord < n mod p) */
  int64_t offset[RMAOP_HALO_MAX_DIMS];  /**< global index of the block's first cell along each axis */
  int64_t extended[RMAOP_HALO_MAX_DIMS];/**< local + lo + hi: the extents of the data block */
} rmaop_halo_info;

/**
 * The halo operator. Model: this rank's block (SCATTER, local_n = product of local extents, row-major).
 * Data: the block extended by lo/hi ghost cells per axis (local_n = product of extended extents). Forward:
 * the block is copied to the interior, ghost cells get the neighbours' values, diagonal (edge and corner)
 * neighbours included, and zeros outside the global array. Adjoint: the exact transpose: the interior is
 * copied back and every ghost cell is added at its owner (the plan reversed in ADD mode). The exchange is
 * one plan. Collective.
 * @return RMAOP_ERR_ARG when ndim is outside [1, RMAOP_HALO_MAX_DIMS], a dimension is < 1, the grid's product
 *         is not the context's size, or a width is negative or larger than the smallest block extent along its
 *         axis (the message names the axis and side: "lo[1]").
 */
rmaop_status rmaop_op_create_halo(rmaop_ctx ctx, const rmaop_halo_spec *spec, rmaop_op *A);
/** The grid and this rank's block of a halo operator. Not collective. RMAOP_ERR_ARG when @p A is not a halo. */
rmaop_status rmaop_op_halo_get_info(rmaop_op A, rmaop_halo_info *info);

/** Options of a gradient (PyLops Gradient: a first derivative along every axis). */
typedef struct {
  rmaop_grid grid;                  /**< distributed along axis 0 */
  double sampling[RMAOP_MAX_DIMS];  /**< per axis; 0: one */
  int edge;                         /**< PyLops' edge flag */
  rmaop_deriv_kind kind;            /**< FORWARD, BACKWARD, CENTERED3 (PyLops "centered"), CENTERED5 */
  rmaop_dtype dtype;
  const char *label;                /**< trace name of the axis-0 halo; NULL: "gradient" */
} rmaop_gradient_spec;
/**
 * The gradient (PyLops-MPI MPIGradient): the stacked vertical stack (rmaop_op_create_stacked_vstack) of a
 * first derivative along every axis. Model: the grid's elements. Data: a stacked layout of ndim parts, so
 * each rank holds the ndim derivative outputs of its rows one after the other (part d: the derivative along
 * axis d; rmaop_vec_stack_part gives it). Only the axis-0 part communicates. Collective.
 */
rmaop_status rmaop_op_create_gradient(rmaop_ctx ctx, const rmaop_gradient_spec *spec, rmaop_op *A);

/** A rank's local block: a dense row-major matrix (copied) or callbacks on host arrays. */
typedef struct {
  int64_t nrows, ncols;
  const void *dense; /**< nrows x ncols of the operator's dtype, row-major; NULL: use the callbacks */
  rmaop_status (*apply)(void *user, const void *x, void *y);         /**< y = B x */
  rmaop_status (*apply_adjoint)(void *user, const void *y, void *x); /**< x = B^H y */
  void *user;
} rmaop_block;

/** Block-diagonal: rank r applies its block to its part. Model SCATTER(ncols), data SCATTER(nrows). Collective. */
rmaop_status rmaop_op_create_blockdiag(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);
/** Vertical stack: model BROADCAST (ncols equal on every rank), data SCATTER(nrows); the adjoint sums
 *  every rank's B_r^H y_r with one reduction (PyLops-MPI MPIVStack). Collective. */
rmaop_status rmaop_op_create_vstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);
/** Horizontal stack: model SCATTER(ncols), data BROADCAST (nrows equal everywhere); y = sum_r B_r x_r. Collective. */
rmaop_status rmaop_op_create_hstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);

/* ---- dense matrix multiply and Fredholm1 (PyLops-MPI MPIMatrixMult, MPIFredholm1) ---------------- */

/** How MPIMatrixMult distributes A, X and Y (PyLops-MPI's `kind`). */
typedef enum {
  RMAOP_MATMUL_BLOCK = 0, /**< 1-D block rows over all P ranks: A, X and Y by rows (balanced split) */
  RMAOP_MATMUL_SUMMA      /**< 2-D blocks on a g x g grid, g = floor(sqrt(P)); ranks >= g*g idle */
} rmaop_matmul_kind;

/** The blocks one rank holds for Y = A X (A: N x K, X: K x M, Y: N x M; every block row-major).
 *  The model vector's local part is this rank's X block (x_nrows * x_ncols elements), the data vector's
 *  its Y block; their SCATTER layouts concatenate the ranks' blocks in rank order. */
typedef struct {
  int active;                               /**< 0: an idle rank (SUMMA, rank >= g*g): it owns nothing */
  int grid_dim, grid_row, grid_col;         /**< SUMMA: g and this rank's place (row-major); block: P, rank, 0 */
  int64_t a_row0, a_nrows, a_col0, a_ncols; /**< the block of A (global row / column offsets and sizes) */
  int64_t x_row0, x_nrows, x_col0, x_ncols; /**< the block of X */
  int64_t y_row0, y_nrows, y_col0, y_ncols; /**< the block of Y */
} rmaop_matmul_blocks;

/**
 * The blocks of @p rank for a @p kind multiply of global sizes @p N, @p K, @p M on @p ctx. Not collective.
 * block: rows of A and Y split like rmaop_layout_create (first N mod P ranks one more), rows of X likewise
 * over K; every block spans all columns. summa: PyLops-MPI's split, ceil(n / g) per grid row or column, the
 * last ones shorter (possibly empty): A(i, j) = rows of block i x columns of block j of K, X(i, j) = K block i
 * x M block j, Y(i, j) = N block i x M block j.
 * @return RMAOP_ERR_ARG for a bad kind, negative size or rank outside [0, P).
 */
rmaop_status rmaop_op_matmul_get_blocks(rmaop_ctx ctx, rmaop_matmul_kind kind, int64_t N, int64_t K, int64_t M, int rank,
                                     rmaop_matmul_blocks *blocks);

/** Options of a distributed dense multiply. */
typedef struct {
  rmaop_matmul_kind kind;
  rmaop_dtype dtype;
  int64_t N, K, M;       /**< global sizes (equal on every rank) */
  int64_t nrows, ncols;  /**< this rank's block of A: must be a_nrows x a_ncols of rmaop_op_matmul_get_blocks */
  const void *A;         /**< nrows x ncols of the dtype, row-major, host memory (copied; NULL when empty) */
  const char *label;     /**< trace name of its exchanges; NULL: "matmul" */
} rmaop_matmul_spec;

/**
 * Y = A X as an operator (PyLops-MPI MPIMatrixMult; adjoint X = A^H Y). Collective. Model and data are
 * SCATTER layouts of the blocks rmaop_op_matmul_get_blocks gives (x_nrows * x_ncols and y_nrows * y_ncols
 * elements here).
 * - RMAOP_MATMUL_BLOCK: the forward allgathers X's row blocks with one plan (every rank then holds X,
 *   K x M) and multiplies its rows of A; the adjoint multiplies A_r^H Y_r (K x M) and sums the row blocks
 *   onto their owners with the same plan reversed in ADD mode (a reduce-scatter, in ascending rank order).
 * - RMAOP_MATMUL_SUMMA: g steps; at step k, A(i, k) travels along grid row i and X(k, j) along grid column j
 *   (van de Geijn and Watts 1997). On the rma backend every panel is a one-sided get from the owner's
 *   window (rmaop_win_*; device memory needs the ipc transport, i.e. auto or ipc with every rank on one
 *   node; otherwise plans are used); on the other backends one plan per step pushes the panels. The
 *   adjoint fetches A(k, i) and Y(k, j) and accumulates A(k, i)^H Y(k, j).
 * The local products are a cache-blocked loop in the dtype on host memory, cuBLAS gemm on device memory.
 * @return RMAOP_ERR_ARG (on every rank) for a bad kind or dtype, sizes that differ between ranks, or an A
 *         block whose shape is not the expected one (the message names both shapes).
 */
rmaop_status rmaop_op_create_matmul(rmaop_ctx ctx, const rmaop_matmul_spec *spec, rmaop_op *A);

/**
 * PyLops Fredholm1 distributed like PyLops-MPI MPIFredholm1: d[s] = G[s] m[s] for every slice s, with G of
 * global shape (nsl, nx, ny), model (nsl, ny, nz) and data (nsl, nx, nz), all row-major; adjoint m[s] =
 * G[s]^H d[s]. Each rank holds @p nsl_local consecutive slices of G (rank order; zero allowed), @p G
 * being nsl_local x nx x ny of @p dtype in host memory (copied). Model and data are BROADCAST (every rank
 * holds them whole, as in PyLops-MPI): each rank computes its slices and one plan allgathers them (the
 * adjoint likewise, with a second plan). Collective.
 * @return RMAOP_ERR_ARG (on every rank) for negative sizes, nx / ny / nz differing between ranks, or a NULL
 *         G with slices.
 */
rmaop_status rmaop_op_create_fredholm1(rmaop_ctx ctx, rmaop_dtype dtype, int64_t nsl_local, int64_t nx, int64_t ny,
                                       int64_t nz, const void *G, rmaop_op *A);

/** A + B + ... (same layouts and dtype). Not collective. */
rmaop_status rmaop_op_create_sum(int n, const rmaop_op ops[], rmaop_op *A);
/** A B (A's model layout must match B's data layout). Not collective. */
rmaop_status rmaop_op_create_product(rmaop_op A, rmaop_op B, rmaop_op *AB);
/** alpha A. Not collective. */
rmaop_status rmaop_op_create_scaled(rmaop_op A, double _Complex alpha, rmaop_op *sA);
/** A^H as an operator. Not collective. */
rmaop_status rmaop_op_create_adjoint(rmaop_op A, rmaop_op *AH);

/* ---- Stacked operators (PyLops-MPI MPIStackedVStack, MPIStackedBlockDiag) ------------------------- */

/**
 * y = [A_0 x; A_1 x; ...] (PyLops-MPI MPIStackedVStack): operators that share one model layout (and dtype)
 * stacked vertically; the data layout is the stacked layout of their data layouts; the adjoint is
 * x = sum_i A_i^H y_i. Every part's communication is begun before any is ended when no operator occurs
 * twice among the parts (else they run one after the other). Not collective. Holds references on @p ops.
 * @return RMAOP_ERR_ARG for n < 1, a NULL operator, mixed dtypes or contexts, model layouts that differ, or
 *         an operator whose data layout is itself stacked.
 */
rmaop_status rmaop_op_create_stacked_vstack(int n, const rmaop_op ops[], rmaop_op *A);
/**
 * y_i = A_i x_i (PyLops-MPI MPIStackedBlockDiag): model and data are the stacked layouts of the operators'
 * model and data layouts; the adjoint applies A_i^H to part i. Overlaps like rmaop_op_create_stacked_vstack.
 * Not collective. @return RMAOP_ERR_ARG for n < 1, a NULL operator, mixed dtypes or contexts, or an
 * operator with a stacked layout.
 */
rmaop_status rmaop_op_create_stacked_blockdiag(int n, const rmaop_op ops[], rmaop_op *A);

/** Local callbacks of a shell operator. Forward: y_local = f(x_local, ghost) where ghost holds what the plan
 *  brought (dst of the plan). Adjoint: x_local = g(y_local) plus ghost contributions that the reversed plan
 *  adds to their owners; the callback writes x_local and ghost (ghost arrives zeroed). The arrays are in the
 *  context's memory: host arrays, or device pointers when the context's memory kind is device. On device,
 *  a callback is called once the context's stream has finished every earlier operation on them (the data
 *  is ready), and its own device work must be complete when it returns (synchronize the stream it used),
 *  because rmaop's later work on the context's stream is not ordered after it. */
typedef struct {
  rmaop_status (*apply)(void *user, const void *x, const void *ghost, void *y);
  rmaop_status (*apply_adjoint)(void *user, const void *y, void *x, void *ghost);
  void *user;
} rmaop_shell_ops;
/** A user operator: local callbacks plus a plan from x (src) to a ghost buffer (dst) of plan dst_len
 *  elements. The plan is borrowed and must outlive the operator. Collective (the reversed plan is made). */
rmaop_status rmaop_op_create_shell(rmaop_layout model, rmaop_layout data, rmaop_dtype dtype, rmaop_plan plan,
                                   const rmaop_shell_ops *ops, rmaop_op *A);
/** Diagonal operator (PyLops Diagonal): y = d .* x, adjoint x = conj(d) .* y, model = data = d's layout.
 *  @p d is copied (and conjugated once for the adjoint), so it may be changed or freed afterwards; its memory
 *  kind is the context's. No communication. Not collective. @return RMAOP_ERR_ARG for a NULL argument. */
rmaop_status rmaop_op_create_diagonal(rmaop_vec d, rmaop_op *A);

/* ------------------------------------------------------------------------------------------------ */
/* Solvers                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

typedef enum {
  RMAOP_REASON_NITER = 0,    /**< ran niter iterations */
  RMAOP_REASON_TOL,          /**< ||r||^2 fell to tol (PyLops: kold <= tol) */
  RMAOP_REASON_BREAKDOWN,    /**< a zero denominator; x is the last finite iterate */
  RMAOP_REASON_CONLIM        /**< LSQR: the estimate of cond(A) exceeded conlim, or 1/eps (PyLops' istop = 3, 6) */
} rmaop_reason;

typedef struct {
  int niter;          /**< iterations at most */
  double tol;         /**< stop when the squared residual (PyLops' kold) <= tol; 0: run niter */
  double damp;        /**< CGLS damping epsilon (minimizes ||y - Ax||^2 + epsilon^2 ||x||^2) */
  rmaop_vec x0;       /**< initial guess (copied into x); NULL: zero */
  /** Called after each iteration with the residual norm; a non-OK return stops the solver with it. */
  rmaop_status (*callback)(void *user, int iteration, double residual, rmaop_vec x);
  void *user;
  /* rmaop_solve_lsqr only (PyLops LSQR's atol, btol, conlim): 0 means PyLops' default (1e-8, 1e-8, 1e8), a
   * negative value switches that test off (PyLops' 0). Other solvers ignore them. */
  double atol;
  double btol;
  double conlim;
  /** rmaop_solve_pipecg only: every k-th iteration recomputes r = y - A x, w = A r, s = A p, z = A s from
   *  their definitions (4 extra operator applications) to stop the recurrences drifting; 0: never. */
  int residual_replacement;
} rmaop_solver_options;

typedef struct {
  int iterations;
  rmaop_reason reason;
  double *history;    /**< iterations + 1 residual norms (CGLS: ||y - A x_k||); free with rmaop_solver_info_destroy */
  double time_total;  /**< seconds in the solver */
  double time_comm;   /**< of which in plan executions and reductions (begin to end, from the trace clock) */
  int graph;          /**< 1: the iterations were replayed from a CUDA graph (CG, CGLS, RMAOP_SOLVER_SCALARS=graph, on a
                           path that can capture: rmaop_ctx_get_stream); the trace then holds the captured iteration
                           once, and time_comm only its capture */
} rmaop_solver_info;

void rmaop_solver_options_init(rmaop_solver_options *opts);
void rmaop_solver_info_destroy(rmaop_solver_info *info);
/** Conjugate gradient for Hermitian positive definite A (PyLops CG recurrences). Collective. */
rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/** CGLS with damping (PyLops CGLS recurrences; history[0] = ||y - A x0||). Collective. */
rmaop_status rmaop_solve_cgls(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/* ---- LSQR and pipelined CG (src/solvers/solver_krylov.c) ---- */
/**
 * LSQR with damping (Paige & Saunders 1982; PyLops LSQR recurrences): minimizes ||y - A x||^2 + damp^2 ||x||^2.
 * Collective (every rank of A's context, same options).
 * @param [in]  A     operator; y on its data layout, x on its model layout, all of A's dtype
 * @param [out] x     the solution (starts from opts->x0, or zero)
 * @param [in]  opts  niter, damp, x0, callback; atol, btol, conlim as in PyLops (0: PyLops' defaults, < 0: off).
 *                    tol is not used (PyLops' LSQR has none; it must still be >= 0).
 * @param [out] info  history[0] = ||y - A x0||, history[k] = PyLops' r1norm estimate of ||y - A x_k|| (its cost);
 *                    reason TOL for PyLops' istop = 1, 2, 4, 5 (and 0: A^H (y - A x0) = 0, no iteration), CONLIM
 *                    for istop = 3, 6, NITER when none fired, BREAKDOWN for a zero rotation (rho or gamma = 0).
 * Two fused reductions per iteration: {||u||^2, ||w||^2} and ||v||^2 (the recurrence needs beta before alfa).
 * @return RMAOP_ERR_ARG naming a bad argument (NULL, niter < 0, non-finite atol/btol/conlim, mismatched layouts
 *         or dtypes, found by the first vector operation), or a communication error; the callback's error.
 */
rmaop_status rmaop_solve_lsqr(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);
/**
 * Pipelined conjugate gradient for Hermitian positive definite A (Ghysels & Vanroose 2014, Alg. 4,
 * unpreconditioned). Each iteration has ONE non-blocking fused reduction {r.r, w.r}, and the operator
 * application q = A w runs between its begin and its wait, hiding the reduction's latency behind the matvec.
 * Collective. Options: niter, tol (stop when r.r <= tol, as rmaop_solve_cg), x0, callback, residual_replacement.
 * history[k] = ||r_k|| (the recurrence's residual, the same quantity as rmaop_solve_cg's: the two agree to
 * rounding on well-conditioned problems). Costs niter + 1 operator applications (+1 with x0) and 3 more vectors
 * than CG. The callback for iteration k runs once ||r_k|| is known, i.e. after the next reduction.
 * Overlap on the rma backend: the reduction's epoch stays open across the matvec (begin puts the partials,
 * the wait closes the epoch), unless A itself reduces (a vstack's adjoint, an hstack): then the operator's
 * reduction completes the pending one first (one reduction in flight per context) and nothing overlaps.
 * @return as rmaop_solve_lsqr(); RMAOP_ERR_ARG for residual_replacement < 0.
 */
rmaop_status rmaop_solve_pipecg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *opts, rmaop_solver_info *info);

/* ------------------------------------------------------------------------------------------------ */
/* Trace                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

/** Aggregated record of one trace site (one plan, reduction or epoch label on this rank). */
typedef struct {
  const char *label;
  const char *kind;      /**< "plan", "reduce", "epoch" */
  const char *backend;
  const char *transport; /**< "shm", "mpi", "ipc", "mixed", "-" (two-sided), ... */
  const char *sync;      /**< "fence", "pscw", "lock", "-" */
  uint64_t calls;
  uint64_t calls_add;      /**< of the calls, plans in RMAOP_ADD mode (the receiver accumulates: adjoints) */
  uint64_t messages;       /**< messages per call (to other ranks) */
  double bytes_per_message;
  double time_total, time_min, time_max; /**< seconds, begin to end (includes work overlapped in between) */
  double time_inside;                    /**< seconds inside rmaop's calls (begin + end, or begin + wait), summed */
  double time_inside_median; /**< seconds, median over the calls of the time inside (log histogram: within 2.2 %);
                                  the typical call, where a mean also carries the rare preempted one */
} rmaop_trace_site;

/** What rmaop_trace_enable() records. */
enum {
  RMAOP_TRACE_OFF = 0,
  RMAOP_TRACE_ON = 1,     /**< record every call as the application makes it (waits for late peers included) */
  /** Measurement mode: before each plan begin and end and each reduction begin and wait, the context's
   *  stream is drained and the ranks meet in a barrier (neither is timed), and a device context's stream is
   *  drained again before a plan's end is timed (the kernels the plan enqueued are its time; a reduction's
   *  result is on the host when its wait returns). time_inside is then the messaging time from synchronized starts,
   *  without the waits for late peers (also those whose overlapped work between begin and end ran long) or
   *  for earlier kernels. Every rank must make the traced calls in the same order (rmaop's operators and
   *  solvers do). It slows the application down: for measuring only. */
  RMAOP_TRACE_SYNCED = 2
};
/** Turns recording on (RMAOP_TRACE_ON or RMAOP_TRACE_SYNCED) or off (RMAOP_TRACE=1|sync sets it at
 *  creation). Not collective, but RMAOP_TRACE_SYNCED must be set on every rank. */
rmaop_status rmaop_trace_enable(rmaop_ctx ctx, int on);
/** Forgets all sites. Not collective. */
rmaop_status rmaop_trace_reset(rmaop_ctx ctx);
rmaop_status rmaop_trace_count(rmaop_ctx ctx, int *nsites);
/** Site @p i (0 <= i < count); strings owned by the context. */
rmaop_status rmaop_trace_get(rmaop_ctx ctx, int i, rmaop_trace_site *site);
/** Writes this rank's sites as JSON to @p path. "%r" in the path becomes the rank; without it only rank 0
 *  writes. Not collective. */
rmaop_status rmaop_trace_write_json(rmaop_ctx ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_H */
