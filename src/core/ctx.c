/* Context: a duplicated communicator, the chosen backend, memory kind, every backend's settings and the trace. */
#include "ctx.h"

#include "backend.h"
#include "config.h"
#include "device/device.h"
#include "error.h"
#include "reduce.h"
#include "shmem.h"
#include "vec.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

static const char *const trace_names[] = {"0", "1", "sync", NULL}; /* = RMAOP_TRACE_OFF, _ON, _SYNCED */
static const char *const scalars_names[] = {"auto",     "host",  "device", "graph",
                                            "resident", "while", NULL}; /* = RMAOP__SCALARS_* */
static const char *const halo_names[] = {"auto", "plan", "kernel", NULL};                         /* = RMAOP__HALO_* */

void rmaop_ctx_options_init(rmaop_ctx_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->trace = -1;
  opts->timeout = -1.0;
}

static rmaop_status parse_options(rmaop_ctx ctx, const rmaop_ctx_options *opts) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  if (opts) o = *opts;
  int i = 0;
  /* The timeout first: the agreement on these options is bounded by it, also where a later option is bad. */
  if (o.timeout > 0)
    ctx->timeout = o.timeout;
  else
    RMAOP_CHECK(rmaop__option_number(ctx, "RMAOP_TIMEOUT", 0, DBL_TRUE_MIN, INFINITY, "a positive number of seconds",
                                     &ctx->timeout));
  RMAOP_CHECK(rmaop__backend_lookup(ctx, rmaop__option_value(o.backend, "RMAOP_BACKEND"), &ctx->backend));
  RMAOP_CHECK(rmaop__parse_name(ctx, "memory kind (RMAOP_MEMORY)", rmaop__option_value(o.memory, "RMAOP_MEMORY"),
                                rmaop__memory_names, &i));
  ctx->memory = (rmaop_memory)i;
  if (o.trace >= 0) {
    RMAOP_REQUIRE(ctx, o.trace <= RMAOP_TRACE_SYNCED, RMAOP_ERR_ARG,
                  "rmaop_ctx_options.trace = %d is not RMAOP_TRACE_OFF, RMAOP_TRACE_ON or RMAOP_TRACE_SYNCED", o.trace);
    ctx->trace_on = o.trace;
  } else {
    RMAOP_CHECK(rmaop__parse_name(ctx, "trace switch (RMAOP_TRACE)", rmaop__option_value(NULL, "RMAOP_TRACE"),
                                  trace_names, &i));
    ctx->trace_on = i;
  }
  RMAOP_CHECK(rmaop__parse_name(ctx, "solver scalars (RMAOP_SOLVER_SCALARS)",
                                rmaop__option_value(NULL, "RMAOP_SOLVER_SCALARS"), scalars_names, &i));
  ctx->solver_scalars = i;
  double profile = 0;
  RMAOP_CHECK(rmaop__option_number(ctx, "RMAOP_RESIDENT_PROFILE", 1, 0, 1, "0 or 1", &profile));
  ctx->resident_profile = profile != 0;
  RMAOP_CHECK(
      rmaop__parse_name(ctx, "halo exchange (RMAOP_HALO)", rmaop__option_value(NULL, "RMAOP_HALO"), halo_names, &i));
  ctx->halo = i;
  double group = 0;
  RMAOP_CHECK(rmaop__option_number(ctx, "RMAOP_NODE_SIZE", 1, 0, INT_MAX, "a rank count >= 0 (0: the real nodes)",
                                   &group));
  ctx->node_group = (int)group;
  RMAOP_REQUIRE(ctx, RMAOP__DEV_BUILT || ctx->memory == RMAOP_MEMORY_HOST, RMAOP_ERR_UNSUPPORTED,
                "memory kind \"device\" needs CUDA, which this build of rmaop does not have (rebuild with the CUDA toolkit)");
  /* Every built-in backend's options, whatever the backend chosen: a bad value is an error on any backend. */
  for (int b = 0; b < rmaop__backend_count(); ++b) {
    const rmaop_backend *be = rmaop__backend_at(b);
    if (!be->settings_size) continue;
    RMAOP_CHECK(rmaop__calloc(ctx, 1, be->settings_size, "backend settings", &ctx->settings[b]));
    RMAOP_CHECK(be->settings_parse(ctx, &o, ctx->settings[b]));
  }
  return RMAOP_OK;
}

/* Whether MPI accepts device pointers: compiled against a CUDA-aware Open MPI and the run-time library says
 * so (it may be built with CUDA and still run without it). */
static int mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

/* Which node every rank is on: the rank (in ctx->comm) of its node's first process. */
static rmaop_status find_nodes(rmaop_ctx ctx) {
  RMAOP_CHECK_MPI(ctx, MPI_Comm_split_type(ctx->comm, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &ctx->node_comm));
  RMAOP_CHECK_MPI(ctx, MPI_Comm_set_errhandler(ctx->node_comm, MPI_ERRORS_RETURN));
  RMAOP_CHECK_MPI(ctx, MPI_Comm_rank(ctx->node_comm, &ctx->host_rank));
  if (ctx->node_group > 0) { /* RMAOP_NODE_SIZE: every k consecutive ranks of a real node count as one node */
    MPI_Comm sim = MPI_COMM_NULL;
    RMAOP_CHECK_MPI(ctx, MPI_Comm_split(ctx->node_comm, ctx->rank / ctx->node_group, ctx->rank, &sim));
    MPI_Comm_free(&ctx->node_comm);
    ctx->node_comm = sim;
    RMAOP_CHECK_MPI(ctx, MPI_Comm_set_errhandler(ctx->node_comm, MPI_ERRORS_RETURN));
  }
  RMAOP_CHECK_MPI(ctx, MPI_Comm_rank(ctx->node_comm, &ctx->node_rank));
  RMAOP_CHECK_MPI(ctx, MPI_Comm_size(ctx->node_comm, &ctx->node_size));
  int leader = ctx->rank;
  RMAOP_CHECK_MPI(ctx, MPI_Bcast(&leader, 1, MPI_INT, 0, ctx->node_comm));
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)ctx->size, sizeof(int), "node map", (void **)&ctx->node_of));
  RMAOP_CHECK_MPI(ctx, MPI_Allgather(&leader, 1, MPI_INT, ctx->node_of, 1, MPI_INT, ctx->comm));
  return RMAOP_OK;
}

static void ctx_free(rmaop_ctx ctx) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  /* A failed context may have collectives that never complete on its communicator (a bounded wait gave up):
   * freeing it under them crashed Open MPI's progress later, so it is leaked like the failed context's windows. */
  if (!finalized && ctx->failed == RMAOP_OK) {
    if (ctx->node_comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->node_comm);
    if (ctx->comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->comm);
  }
  rmaop__trace_free(ctx);
  rmaop__request_pool_free(ctx);
  rmaop__work_flush(ctx);
  rmaop__shm_fini(ctx);
  rmaop__dev_fini(ctx); /* a host context's: nothing to release */
  for (int b = 0; b < RMAOP__MAX_BACKENDS; ++b) free(ctx->settings[b]);
  free(ctx->node_of);
  free(ctx);
}

rmaop_status rmaop_ctx_create(MPI_Comm comm, const rmaop_ctx_options *opts, rmaop_ctx *out) {
  RMAOP_REQUIRE(NULL, out != NULL, RMAOP_ERR_ARG, "rmaop_ctx_create: ctx (output) is NULL");
  RMAOP_REQUIRE(NULL, comm != MPI_COMM_NULL, RMAOP_ERR_ARG, "rmaop_ctx_create: comm is MPI_COMM_NULL");
  int initialized = 0;
  MPI_Initialized(&initialized);
  RMAOP_REQUIRE(NULL, initialized, RMAOP_ERR_ARG, "rmaop_ctx_create: MPI is not initialized (call MPI_Init first)");

  rmaop_ctx ctx = NULL;
  RMAOP_CHECK(rmaop__calloc(NULL, 1, sizeof *ctx, "context", (void **)&ctx));
  ctx->comm = ctx->node_comm = MPI_COMM_NULL;
  ctx->timeout = strtod(RMAOP__TIMEOUT_DEFAULT, NULL); /* until parse_options reads it (a bad RMAOP_TIMEOUT) */
  rmaop_status st = RMAOP_OK;
  RMAOP_CHECK_MPI_GOTO(NULL, MPI_Comm_dup(comm, &ctx->comm), st, err);
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN), st, err);
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Comm_rank(ctx->comm, &ctx->rank), st, err);
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Comm_size(ctx->comm, &ctx->size), st, err);

  st = parse_options(ctx, opts);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, "rmaop_ctx_create (options)"), st, err);
  RMAOP_CHECK_GOTO(find_nodes(ctx), st, err);
  if (RMAOP__ON_DEVICE(ctx)) {
    RMAOP_CHECK_GOTO(rmaop__agree(ctx, rmaop__dev_init(ctx), "rmaop_ctx_create (GPU)"), st, err);
    /* Every rank must take the same path: CUDA-aware only when all ranks' MPI says so. */
    int aware = mpi_cuda_aware(), all = 0;
    RMAOP_CHECK_MPI_GOTO(ctx, MPI_Allreduce(&aware, &all, 1, MPI_INT, MPI_MIN, ctx->comm), st, err);
    ctx->mpi_cuda_aware = all;
  }
  st = ctx->backend->init(ctx);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, "rmaop_ctx_create (backend init)"), st, err_fini);
  *out = ctx;
  return RMAOP_OK;

err_fini:
  if (st == RMAOP_ERR_REMOTE) ctx->backend->fini(ctx); /* init succeeded here, failed elsewhere */
err:
  /* The context goes away: its message stays in the process-wide slot (rmaop_ctx_last_error(NULL)). */
  ctx_free(ctx);
  return st;
}

rmaop_status rmaop_ctx_create_f(MPI_Fint comm, const rmaop_ctx_options *opts, rmaop_ctx *out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  RMAOP_REQUIRE(NULL, initialized, RMAOP_ERR_ARG, "rmaop_ctx_create_f: MPI is not initialized (call MPI_Init first)");
  return rmaop_ctx_create(MPI_Comm_f2c(comm), opts, out);
}

void rmaop_ctx_destroy(rmaop_ctx *pctx) {
  if (!pctx || !*pctx) return;
  rmaop_ctx ctx = *pctx;
  const char *file = getenv("RMAOP_TRACE_FILE");
  if (ctx->trace_on && file && *file) rmaop_trace_write_json(ctx, file);
  rmaop__dev_reduce_free(ctx); /* plans: before the backend goes */
  rmaop_win_destroy(&ctx->resident_win);
  ctx->backend->fini(ctx);
  ctx_free(ctx);
  *pctx = NULL;
}

rmaop_status rmaop_ctx_synchronize(rmaop_ctx ctx) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_ctx_synchronize: ctx is NULL");
  if (RMAOP__ON_DEVICE(ctx)) return rmaop__dev_sync(ctx);
  return RMAOP_OK;
}

rmaop_status rmaop_ctx_get_stream(rmaop_ctx ctx, void **stream) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_ctx_get_stream: ctx is NULL");
  RMAOP_REQUIRE(ctx, stream != NULL, RMAOP_ERR_ARG, "rmaop_ctx_get_stream: stream (output) is NULL");
  RMAOP_REQUIRE(ctx, ctx->memory == RMAOP_MEMORY_DEVICE, RMAOP_ERR_ARG,
                "rmaop_ctx_get_stream: the context uses host memory and has no GPU stream (RMAOP_MEMORY=device makes one)");
  *stream = ctx->stream;
  return RMAOP_OK;
}

rmaop_status rmaop_ctx_get_info(rmaop_ctx ctx, rmaop_ctx_info *info) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_ctx_get_info: ctx is NULL");
  RMAOP_REQUIRE(ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_ctx_get_info: info (output) is NULL");
  info->comm = ctx->comm;
  info->rank = ctx->rank;
  info->size = ctx->size;
  info->backend = ctx->backend->name;
  info->memory = ctx->memory;
  info->trace = ctx->trace_on;
  info->timeout = ctx->timeout;
  info->graph_capture = ctx->memory == RMAOP_MEMORY_DEVICE &&
                        (ctx->size == 1 || (ctx->backend->ctx_capturable && ctx->backend->ctx_capturable(ctx)));
  for (int b = 0; b < rmaop__backend_count(); ++b) {
    const rmaop_backend *be = rmaop__backend_at(b);
    if (be->info) be->info(ctx->settings[b], info);
  }
  return RMAOP_OK;
}

int rmaop__dev_ipc_path(rmaop_ctx ctx) {
  rmaop_ctx_info ci;
  if (!RMAOP__ON_DEVICE(ctx) || rmaop_ctx_get_info(ctx, &ci) != RMAOP_OK || strcmp(ci.backend, "rma") != 0)
    return 0;
  const int ipc = ci.rma.transport == RMAOP_TRANSPORT_IPC ||
                  (ci.rma.transport == RMAOP_TRANSPORT_AUTO && ctx->node_size == ctx->size);
  return ipc && ctx->size <= RMAOP_DEVICE_MAX_PEERS;
}

int rmaop__gpu_per_rank(rmaop_ctx ctx) {
  return ctx->node_size == ctx->size && ctx->size <= rmaop__dev_count();
}
