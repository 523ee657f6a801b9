/* The nccl backend: plans become grouped ncclSend/ncclRecv, reductions ncclAllReduce, everything on the
 * context's CUDA stream. GPU memory only: NCCL cannot read host buffers, and staging host vectors through
 * the GPU would only make a slower twosided backend.
 *
 * Messages: one ncclSend per non-empty send transfer, straight from the user's src (no packing kernel),
 * into the transfer's slot of the peer's device staging (struct rmaop_plan_s). NCCL matches the sends and
 * receives between a pair of ranks in issue order within a group, so both sides issue them in the core's
 * canonical order (sender: send[], sorted by peer then given order; receiver: recv[], the staging order).
 * Complex elements travel as pairs of reals; a plan only moves bytes, so that is exact.
 *
 * Nothing here waits on the host except reduce_end: plan_end enqueues the unpack kernels behind the
 * receives, so a plan execution is fully stream-ordered with the kernels around it. */
#include "device/device.h"
#include "core/backend.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdio.h>

#include "device/gpu_check.h"

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)

static rmaop_status nccl_error(rmaop_ctx ctx, ncclResult_t r, const char *file, int line, const char *call) {
  return rmaop__error(ctx, RMAOP_ERR_NCCL, file, line, "%s failed: %s (%s)", call, ncclGetErrorString(r),
                      ncclGetLastError(NULL));
}

static rmaop_status cuda_error(rmaop_ctx ctx, cudaError_t e, const char *file, int line, const char *call) {
  return rmaop__error(ctx, e == cudaErrorMemoryAllocation ? RMAOP_ERR_NOMEM : RMAOP_ERR_CUDA, file, line,
                      "%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* One reduction in flight: a device buffer NCCL reduces in place, a page-locked host buffer the input is
 * staged through and the result lands in, and an event marking the result's arrival. Slots are reused
 * (a solver reduces every iteration; cudaMalloc and cudaMallocHost are far too slow for that) and
 * several may be in flight at once (pipelined solvers). */
typedef struct nc_slot {
  double *dev, *host;
  size_t cap; /* doubles in dev and host */
  cudaEvent_t done;
  double *out;
  int64_t count;
  struct nc_slot *next; /* free list */
} nc_slot;

typedef struct {
  ncclComm_t comm;
  nc_slot *free_slots;
  int aborted;       /* ncclCommAbort ran (nc_release): the communicator is gone */
  int last_peers[8]; /* the peers of the last plan execution, for a timeout's message */
  int nlast;         /* -1: the last exchange was an allreduce */
} nc_ctx;

typedef struct {
  void *staging; /* recv_total elements, device */
} nc_plan;

static void slot_free(nc_slot *s) {
  if (s->done)
    cudaEventDestroy(s->done);
  rmaop__dev_free(s->dev);
  rmaop__dev_host_free(s->host);
  free(s);
}

/* ---- context -------------------------------------------------------------------------------------- */

/* The stream's release (rmaop__dev_release_add): NCCL's kernels wait for their peers without a timeout, and a
 * communicator that lost a peer is unusable anyway, so a host wait that gave up aborts it, which ends its kernels
 * and lets the stream drain. */
static void nc_release(void *arg, char *who, size_t n) {
  rmaop_ctx ctx = arg;
  nc_ctx *c = ctx->backend_data;
  if (!c || !c->comm || c->aborted)
    return;
  for (int i = 0; i < c->nlast; ++i)
    rmaop__dev_release_name(who, n, c->last_peers[i]);
  if (c->nlast < 0 && n > strlen(who))
    snprintf(who + strlen(who), n - strlen(who), "%sa rank of an ncclAllReduce", who[0] ? ", " : "");
  (void)ncclCommAbort(c->comm);
  c->aborted = 1;
}

static void nc_fini(rmaop_ctx ctx) {
  nc_ctx *c = ctx->backend_data;
  if (!c)
    return;
  rmaop__dev_release_remove(ctx, ctx);
  /* Nothing of ours may still be running: a failed context's stream may hold NCCL kernels waiting for a peer
   * that never comes (aborted), anything else drains in time. */
  if (ctx->stream && !c->aborted && ctx->failed != RMAOP_OK)
    nc_release(ctx, (char[1]){0}, 1);
  if (ctx->stream)
    cudaStreamSynchronize(STREAM(ctx));
  /* ncclCommDestroy, not Finalize: Finalize would wait for peers that may have failed in init. */
  if (c->comm && !c->aborted)
    ncclCommDestroy(c->comm);
  while (c->free_slots) {
    nc_slot *s = c->free_slots;
    c->free_slots = s->next;
    slot_free(s);
  }
  free(c);
  ctx->backend_data = NULL;
}

static rmaop_status nc_init(rmaop_ctx ctx) {
  RMAOP_REQUIRE(ctx, ctx->memory == RMAOP_MEMORY_DEVICE, RMAOP_ERR_UNSUPPORTED,
                "the nccl backend moves GPU memory only: set RMAOP_MEMORY=device (memory is \"%s\")",
                rmaop_memory_name(ctx->memory));
  nc_ctx *c = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *c, "nccl context state", (void **)&c));
  ctx->backend_data = c;

  /* Rank 0 broadcasts its status with the id, so a failed ncclGetUniqueId releases the other ranks
   * instead of leaving them in ncclCommInitRank. */
  struct {
    int ok;
    ncclUniqueId id;
  } boot = {0};
  rmaop_status st = RMAOP_OK;
  if (ctx->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&boot.id);
    boot.ok = r == ncclSuccess;
    if (!boot.ok)
      st = nccl_error(ctx, r, __FILE__, __LINE__, "ncclGetUniqueId");
  }
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, ctx->comm), st, err);
  if (st != RMAOP_OK)
    goto err;
  if (!boot.ok) {
    st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "nccl backend: rank 0 could not create the NCCL unique id");
    goto err;
  }
  /* The core already selected this rank's GPU: the communicator binds to the current device. */
  ncclResult_t r = ncclCommInitRank(&c->comm, ctx->size, boot.id, ctx->rank);
  if (r != ncclSuccess) {
    c->comm = NULL;
    st = nccl_error(ctx, r, __FILE__, __LINE__, "ncclCommInitRank");
    goto err;
  }
  st = rmaop__dev_release_add(ctx, nc_release, ctx);
  if (st != RMAOP_OK)
    goto err;
  return RMAOP_OK;

err:
  nc_fini(ctx);
  return st;
}

/* ---- plans ---------------------------------------------------------------------------------------- */

/* The real type a dtype travels as, and how many of them make one element. */
static ncclDataType_t wire_type(rmaop_dtype dtype, size_t *per_elem) {
  *per_elem = dtype == RMAOP_C64 || dtype == RMAOP_C128 ? 2 : 1;
  return dtype == RMAOP_F32 || dtype == RMAOP_C64 ? ncclFloat : ncclDouble;
}

static void nc_plan_free(rmaop_plan plan) {
  nc_plan *p = plan->backend_data;
  if (!p)
    return;
  rmaop__dev_free(p->staging); /* cudaFree waits for the device, so no receive still targets it */
  free(p);
  plan->backend_data = NULL;
}

static rmaop_status nc_plan_setup(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  nc_plan *p = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *p, "nccl plan", (void **)&p));
  plan->backend_data = p;
  rmaop_status st = rmaop__dev_malloc(ctx, (size_t)plan->recv_total * plan->esize, "nccl receive staging", &p->staging);
  if (st != RMAOP_OK) {
    nc_plan_free(plan);
    return st;
  }
  plan->dev_native = 1;

  /* Traced per transfer, as they are issued: each non-empty send transfer is one ncclSend. */
  uint64_t messages = 0;
  int64_t elems = 0;
  for (int j = 0; j < plan->nsend; ++j)
    if (plan->send[j].count > 0)
      ++messages, elems += plan->send[j].count;
  plan->trace_messages = messages;
  plan->trace_bytes_per_message = messages ? (double)elems * (double)plan->esize / (double)messages : 0.0;
  plan->trace_transport = "nccl";
  return RMAOP_OK;
}

static rmaop_status nc_plan_begin(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  nc_ctx *c = ctx->backend_data;
  nc_plan *p = plan->backend_data;
  size_t per;
  const ncclDataType_t type = wire_type(plan->dtype, &per);
  const char *src = plan->cur_src;
  char *staging = p->staging;

  c->nlast = 0;
  for (int j = 0; j < plan->nsend && c->nlast < 8; ++j)
    if (plan->send[j].count > 0)
      c->last_peers[c->nlast++] = plan->send[j].peer;
  for (int i = 0; i < plan->nrecv && c->nlast < 8; ++i)
    if (plan->recv[i].count > 0)
      c->last_peers[c->nlast++] = plan->recv[i].peer;
  /* Empty transfers are skipped on both sides (both know the count), so the pairing stays in step. */
  RMAOP_CHECK_NCCL(ctx, ncclGroupStart());
  ncclResult_t r = ncclSuccess;
  const char *failed = NULL;
  for (int j = 0; j < plan->nsend && r == ncclSuccess; ++j) {
    const rmaop_transfer *t = &plan->send[j];
    if (t->count == 0)
      continue;
    r = ncclSend(src + (size_t)t->src_offset * plan->esize, (size_t)t->count * per, type, t->peer, c->comm,
                 STREAM(ctx));
    failed = "ncclSend(plan transfer)";
  }
  for (int i = 0; i < plan->nrecv && r == ncclSuccess; ++i) {
    const rmaop_transfer *t = &plan->recv[i];
    if (t->count == 0)
      continue;
    r = ncclRecv(staging + (size_t)plan->recv_disp[i] * plan->esize, (size_t)t->count * per, type, t->peer, c->comm,
                 STREAM(ctx));
    failed = "ncclRecv(plan transfer)";
  }
  /* A group must be closed even after a failed call: NCCL discards its operations then. */
  ncclResult_t r_end = ncclGroupEnd();
  if (r != ncclSuccess)
    return nccl_error(ctx, r, __FILE__, __LINE__, failed);
  if (r_end != ncclSuccess)
    return nccl_error(ctx, r_end, __FILE__, __LINE__, "ncclGroupEnd(plan)");
  return RMAOP_OK;
}

static rmaop_status nc_plan_end(rmaop_plan plan) {
  nc_plan *p = plan->backend_data;
  /* Stream-ordered behind the receives: no host wait. */
  const rmaop__unpack_from from = {.staging = p->staging};
  return rmaop__plan_unpack(plan, &from);
}

/* NCCL captures its own grouped sends and receives into CUDA graphs; the unpack kernels follow them. */
static const char *nc_plan_capture_refusal(rmaop_plan plan) {
  (void)plan;
  return NULL;
}

static int nc_ctx_capturable(rmaop_ctx ctx) {
  (void)ctx;
  return 1;
}

/* ---- reductions ----------------------------------------------------------------------------------- */

static rmaop_status slot_get(rmaop_ctx ctx, size_t count, nc_slot **out) {
  nc_ctx *c = ctx->backend_data;
  nc_slot *s = c->free_slots;
  if (s) {
    c->free_slots = s->next;
  } else {
    RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "nccl reduction slot", (void **)&s));
    cudaError_t e = cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      s->done = NULL;
      slot_free(s);
      return cuda_error(ctx, e, __FILE__, __LINE__, "cudaEventCreateWithFlags(nccl reduction)");
    }
  }
  rmaop_status st = RMAOP_OK;
  if (s->cap < count) {
    const size_t cap = count < 64 ? 64 : count; /* dots and norms: one allocation for the whole run */
    rmaop__dev_free(s->dev);
    rmaop__dev_host_free(s->host);
    s->dev = NULL, s->host = NULL, s->cap = 0;
    st = rmaop__dev_malloc(ctx, cap * sizeof(double), "nccl reduction buffer", (void **)&s->dev);
    if (st == RMAOP_OK)
      st = rmaop__dev_host_malloc(ctx, cap * sizeof(double), "nccl reduction host buffer", (void **)&s->host);
    if (st != RMAOP_OK) {
      slot_free(s);
      return st;
    }
    s->cap = cap;
  }
  *out = s;
  return RMAOP_OK;
}

static void slot_put(rmaop_ctx ctx, nc_slot *s) {
  nc_ctx *c = ctx->backend_data;
  s->next = c->free_slots;
  c->free_slots = s;
}

static rmaop_status enqueue_reduce(rmaop_ctx ctx, nc_slot *s, const double *in, int64_t count, ncclRedOp_t op) {
  nc_ctx *c = ctx->backend_data;
  const size_t bytes = (size_t)count * sizeof(double);
  /* Through page-locked memory: a copy from pageable `in` would synchronize the stream first. */
  memcpy(s->host, in, bytes);
  RMAOP_CHECK_CUDA(ctx, cudaMemcpyAsync(s->dev, s->host, bytes, cudaMemcpyHostToDevice, STREAM(ctx)));
  RMAOP_CHECK_NCCL(ctx, ncclAllReduce(s->dev, s->dev, (size_t)count, ncclDouble, op, c->comm, STREAM(ctx)));
  RMAOP_CHECK_CUDA(ctx, cudaMemcpyAsync(s->host, s->dev, bytes, cudaMemcpyDeviceToHost, STREAM(ctx)));
  RMAOP_CHECK_CUDA(ctx, cudaEventRecord(s->done, STREAM(ctx)));
  return RMAOP_OK;
}

static rmaop_status nc_reduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                    void **preq) {
  RMAOP_REQUIRE(ctx, count >= 0, RMAOP_ERR_ARG, "nccl reduction: count %lld is negative", (long long)count);
  RMAOP_REQUIRE(ctx, op == RMAOP_SUM || op == RMAOP_MAX || op == RMAOP_MIN, RMAOP_ERR_ARG,
                "reduction operation %d is not SUM, MAX or MIN", (int)op);
  const ncclRedOp_t nop = op == RMAOP_SUM ? ncclSum : op == RMAOP_MAX ? ncclMax : ncclMin;
  ((nc_ctx *)ctx->backend_data)->nlast = -1;
  nc_slot *s = NULL;
  RMAOP_CHECK(slot_get(ctx, (size_t)count, &s));
  s->out = out;
  s->count = count;
  rmaop_status st = count > 0 ? enqueue_reduce(ctx, s, in, count, nop) : RMAOP_OK;
  if (st != RMAOP_OK) {
    slot_put(ctx, s);
    return st;
  }
  *preq = s;
  return RMAOP_OK;
}

/* Waits on the slot's event rather than the stream: work the caller enqueued after reduce_begin (the
 * computation it overlaps with the reduction) need not finish first. Polls so a peer that never joins
 * the allreduce becomes RMAOP_ERR_TIMEOUT instead of a hang. */
static rmaop_status nc_reduce_end(rmaop_ctx ctx, void *preq) {
  nc_slot *s = preq;
  if (!s)
    return RMAOP_OK;
  if (s->count > 0) {
    const double deadline = rmaop__wtime() + ctx->timeout;
    cudaError_t e;
    for (unsigned spin = 0; (e = cudaEventQuery(s->done)) == cudaErrorNotReady; ++spin) {
      if ((spin & 63) == 63) {
        /* The slot stays with the stuck allreduce: reusing it could corrupt a late result. */
        if (rmaop__wtime() > deadline) {
          char who[256] = "";
          rmaop__dev_release_run(ctx, who, sizeof who); /* aborts the communicator: the stream drains */
          return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                             "ncclAllReduce: not complete after %.1f s (RMAOP_TIMEOUT); a peer is not taking part "
                             "(the communicator was aborted: the context is failed)",
                             ctx->timeout);
        }
        sched_yield();
      }
    }
    if (e != cudaSuccess)
      return cuda_error(ctx, e, __FILE__, __LINE__, "cudaEventQuery(nccl reduction)");
    memcpy(s->out, s->host, (size_t)s->count * sizeof(double));
  }
  slot_put(ctx, s);
  return RMAOP_OK;
}

static rmaop_status nc_reduce(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op) {
  void *req = NULL;
  RMAOP_CHECK(nc_reduce_begin(ctx, in, out, count, op, &req));
  return nc_reduce_end(ctx, req);
}

static const char *nc_reduce_transport(rmaop_ctx ctx) {
  return "nccl";
}

const rmaop_backend rmaop__nccl_backend = {
    .name = "nccl",
    .init = nc_init,
    .fini = nc_fini,
    .plan_setup = nc_plan_setup,
    .plan_free = nc_plan_free,
    .plan_begin = nc_plan_begin,
    .plan_end = nc_plan_end,
    .plan_capture_refusal = nc_plan_capture_refusal,
    .ctx_capturable = nc_ctx_capturable,
    .reduce_begin = nc_reduce_begin,
    .reduce_end = nc_reduce_end,
    .reduce = nc_reduce,
    .reduce_transport = nc_reduce_transport,
};
