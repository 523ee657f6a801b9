/* The plan protocol: the one header a backend includes. A backend is one folder with one *_backend.c that
 * defines one `const rmaop_backend` and one row in the registry (src/core/backend.c); the core reaches a
 * backend only through this table, and whatever it needs to know about one is a slot here. */
#ifndef RMAOP_CORE_BACKEND_H
#define RMAOP_CORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ctx.h"
#include "device/device.h"
#include "error.h"
#include "plan.h"
#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rmaop_backend {
  const char *name;
  /* Options: the backend's rows of RMAOP_* variables, and its settings, parsed by settings_parse into
   * settings_size zeroed bytes at every context's creation whatever the backend chosen (a bad value is an error
   * on any backend, and a backend's public objects, rma's windows, work on every context). Read them with
   * rmaop__backend_settings. The context's memory kind, rank and size are set when it runs. */
  const rmaop__config_entry *config;
  int nconfig;
  size_t settings_size;
  rmaop_status (*settings_parse)(rmaop_ctx ctx, const rmaop_ctx_options *opts, void *settings);
  /* Optional: fills this backend's part of rmaop_ctx_info from its settings (any context). */
  void (*info)(const void *settings, rmaop_ctx_info *info);
  /* Context set-up and tear-down (collective). init may keep state in ctx->backend_data. */
  rmaop_status (*init)(rmaop_ctx ctx);
  void (*fini)(rmaop_ctx ctx);
  /* Plan set-up after the core computed both views (collective); free is collective too. setup sets
   * plan->trace_messages, plan->trace_bytes_per_message and plan->trace_transport. */
  rmaop_status (*plan_setup)(rmaop_plan plan);
  void (*plan_free)(rmaop_plan plan);
  /* Execution: begin starts moving plan->cur_src into the peers; end completes and hands what arrived to
   * rmaop__plan_unpack() (self transfers included), which writes plan->cur_dst. Neighbor-collective. */
  rmaop_status (*plan_begin)(rmaop_plan plan);
  rmaop_status (*plan_end)(rmaop_plan plan);
  /* Optional: why an execution of `plan` cannot be captured into a CUDA graph on the context's stream (a
   * static phrase), or NULL when it can: its begin and end then enqueue stream work only, and a replay of the
   * captured work is correct. The core asks only while the stream is capturing; NULL hook: only plans that move
   * nothing between ranks can be captured. While capturing, plan->capturing is 1 in begin and end. */
  const char *(*plan_capture_refusal)(rmaop_plan plan);
  /* Optional: 1 when every plan and device reduction of this device context can be captured (what
   * rmaop_ctx_get_info reports as graph_capture). NULL: only on one rank. */
  int (*ctx_capturable)(rmaop_ctx ctx);
  /* 1 when the work this backend's plans and device reductions capture can also go into the body of a conditional
   * (WHILE) node, so that a whole solve is one graph (RMAOP_SOLVER_SCALARS=while); 0: a graph per iteration at
   * most (NCCL's captured work in a WHILE body fails to instantiate, cudaErrorInvalidValue on 2 x H200). One rank
   * always can. */
  int while_bodies;
  /* Reduction of `count` doubles (collective); out valid after reduce_end. The result must be identical on
   * every rank. *req is backend state freed by reduce_end. */
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
   * core's gather plan: the backend fills a's slot-area fields (src/device/device.h, rmaop__dred_args: all but
   * in and out) and calls launch(ctx, a, user), which sets in and out and enqueues the one-block reduction
   * (rmaop__dev_dred) or a dot kernel that ends in it (rmaop__dev_dots_reduce). *done = 0 (launch not called)
   * leaves it to the plan. Rank order, identical bits on every rank. */
  rmaop_status (*reduce_device)(rmaop_ctx ctx, int64_t count, rmaop_redop op,
                                rmaop_status (*launch)(rmaop_ctx ctx, rmaop__dred_args *a, void *user), void *user,
                                int *done);
  /* Optional: the name of the epoch synchronization this context's plans use, for the trace (NULL slot: "-"). */
  const char *(*sync_name)(rmaop_ctx ctx);
  /* Optional: 1 when one-sided gets through rmaop_win_* on this context reach its memory directly, with no
   * staging (what SUMMA's panel gets need); NULL slot: the backend offers no such gets. */
  int (*win_gets_direct)(rmaop_ctx ctx);
} rmaop_backend;

/* Registry (src/core/backend.c). */
rmaop_status rmaop__backend_lookup(rmaop_ctx ctx, const char *name, const rmaop_backend **backend);
int rmaop__backend_count(void);
const rmaop_backend *rmaop__backend_at(int i);
/* Backend @p b's parsed settings on @p ctx (never NULL for a built-in backend with settings). */
void *rmaop__backend_settings(rmaop_ctx ctx, const rmaop_backend *b);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_BACKEND_H */
