/**
 * @file ctx.h
 * @brief Contexts: options, creation and destruction, info, the GPU stream, synchronization, the backends
 *        built in, the last error.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_CTX_H
#define RMAOP_RMAOP_CTX_H

#include <mpi.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Context                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/** Options of a context. A NULL string or a negative number means: take the RMAOP_* environment
 *  variable named beside it, else the default. */
typedef struct {
  const char *backend;       /**< "rma" | "twosided" | "nccl"; RMAOP_BACKEND; default "rma" */
  const char *memory;        /**< "host" | "device"; RMAOP_MEMORY; default "host" */
  int trace;                 /**< RMAOP_TRACE_OFF | _ON | _SYNCED; RMAOP_TRACE; default off */
  double timeout;            /**< seconds a wait on a peer may last (then RMAOP_ERR_TIMEOUT: README, "Errors");
                                  RMAOP_TIMEOUT; default 300 */
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
 * A context fails when one of its exchanges does: a wait for a peer gave up (RMAOP_ERR_TIMEOUT, after
 * @p opts->timeout), or a peer gave one up (RMAOP_ERR_REMOTE naming it; not the REMOTE of an argument
 * agreement, after which all ranks are still in step). From then on every communicating call on it returns
 * RMAOP_ERR_STATE, naming that failure, without communicating or writing its outputs; local calls work.
 * Destroy its objects and the context on every rank; the destroys do not wait for a failed peer (collective
 * MPI frees are skipped, those windows leaked). There is no recovery: create a new context.
 * @return RMAOP_ERR_ARG for an unknown name (the message lists the valid ones), RMAOP_ERR_UNSUPPORTED for
 *         a backend not built in, RMAOP_ERR_MPI. On failure no context exists: read the message with
 *         rmaop_ctx_last_error(NULL).
 */
rmaop_status rmaop_ctx_create(MPI_Comm comm, const rmaop_ctx_options *opts, rmaop_ctx *ctx);
/** rmaop_ctx_create() on the communicator whose Fortran handle is @p comm (MPI_Comm_c2f; mpi4py's
 *  Comm.py2f()): how bindings that cannot name the C handle type (Python's ctypes) pass a communicator. */
rmaop_status rmaop_ctx_create_f(MPI_Fint comm, const rmaop_ctx_options *opts, rmaop_ctx *ctx);
/** Frees a context and sets *ctx to NULL. Collective. Every object made from it must be freed first. On a
 *  failed context it waits for no peer (see rmaop_ctx_create). */
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
 * device counters; derivatives and Laplacians whose ghost rows go by kernel puts (RMAOP_HALO), on either ipc
 * path (their exchange numbers live in device memory). Not capturable (RMAOP_ERR_UNSUPPORTED names the reason, before anything is enqueued, so
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

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_CTX_H */
