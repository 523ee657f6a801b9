/* The backend function table. A backend is one folder with one *_backend.c that defines one
 * `const rmaop_backend` and one row in the registry (src/backend.c). */
#ifndef RMAOP_BACKEND_H
#define RMAOP_BACKEND_H

#include "rmaop/rmaop.h"

typedef struct rmaop_backend {
  const char *name;
  /* Context set-up and tear-down (collective). init may keep state in ctx->backend_data. */
  rmaop_status (*init)(rmaop_ctx ctx);
  void (*fini)(rmaop_ctx ctx);
  /* Plan set-up after the core computed both views (collective); free is collective too. setup sets
   * plan->trace_messages, plan->trace_bytes_per_message and plan->trace_transport. */
  rmaop_status (*plan_setup)(rmaop_plan plan);
  void (*plan_free)(rmaop_plan plan);
  /* Execution: begin starts moving plan->cur_src into the peers; end completes and unpacks into
   * plan->cur_dst with rmaop__plan_unpack() (self transfers included). Neighbor-collective. */
  rmaop_status (*plan_begin)(rmaop_plan plan);
  rmaop_status (*plan_end)(rmaop_plan plan);
  /* Optional: why an execution of `plan` cannot be captured into a CUDA graph on the context's stream
   * (a static phrase), or NULL when it can: its begin and end then enqueue stream work only, and a replay
   * of the captured work is correct (flag values and buffer halves taken from device state, not from the
   * capture). The core asks only while the stream is capturing; NULL hook: only plans that move nothing
   * between ranks can be captured. While capturing, plan->capturing is 1 in begin and end. */
  const char *(*plan_capture_refusal)(rmaop_plan plan);
  /* Optional: 1 when every plan and device reduction of this device context can be captured (what
   * rmaop_ctx_get_info reports as graph_capture). NULL: only on one rank. */
  int (*ctx_capturable)(rmaop_ctx ctx);
  /* Reduction of `count` doubles (collective); out valid after reduce_end. The result must be
   * identical on every rank. *req is backend state freed by reduce_end. */
  rmaop_status (*reduce_begin)(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                               void **req);
  rmaop_status (*reduce_end)(rmaop_ctx ctx, void *req);
  /* Optional: the same reduction, blocking. The core uses it when the caller waits at once (rmaop_allreduce,
   * dots, norms): MPI's blocking collectives can be much faster than their nonblocking forms. */
  rmaop_status (*reduce)(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op);
  /* Transport name recorded in trace entries of reductions ("shm", "mpi", "-"). */
  const char *(*reduce_transport)(rmaop_ctx ctx);
  /* Optional: a reduction of count doubles in device memory into device memory, enqueued on the context's
   * stream (rmaop_allreduce_enqueue, the solvers' device dots), when the backend has a faster way than the
   * core's gather plan; *done = 0 leaves it to the plan. Rank order, identical bits on every rank. */
  rmaop_status (*reduce_device)(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                int *done);
} rmaop_backend;

/* Registry (src/backend.c). */
rmaop_status rmaop__backend_lookup(rmaop_ctx ctx, const char *name, const rmaop_backend **backend);

#endif /* RMAOP_BACKEND_H */
