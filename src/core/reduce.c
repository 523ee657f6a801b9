/* Reductions through the backend, and requests. */
#include "error.h"
#include "ctx.h"
#include "plan.h"
#include "reduce.h"
#include "backend.h"

#include <stddef.h>
#include <stdio.h>

#include "device/device.h"

/* Requests come from a small per-context pool; buffers of up to 16 doubles live inside the request.
 * A solver's reductions therefore allocate nothing per iteration. */
static rmaop_status request_new(rmaop_ctx ctx, const char *label, int64_t count, rmaop_request *out) {
  rmaop_request r = ctx->nreq_pool > 0 ? ctx->req_pool[--ctx->nreq_pool] : NULL;
  if (!r) RMAOP_CHECK(rmaop__malloc(ctx, sizeof *r, "request", (void **)&r));
  memset(r, 0, offsetof(struct rmaop_request_s, inline_buf));
  if (count > 16 && rmaop__malloc(ctx, (size_t)count * sizeof(double), "reduction buffer", (void **)&r->buf) != RMAOP_OK) {
    free(r);
    return RMAOP_ERR_NOMEM;
  }
  if (count > 0 && count <= 16) r->buf = r->inline_buf;
  r->ctx = ctx;
  r->count = count;
  r->out = r->buf;
  const size_t n = strnlen(label, sizeof r->label - 1);
  memcpy(r->label, label, n);
  r->label[n] = '\0';
  *out = r;
  return RMAOP_OK;
}

static void request_free(rmaop_request r) {
  rmaop_ctx ctx = r->ctx;
  if (r->buf != r->inline_buf) free(r->buf);
  if (ctx->nreq_pool < (int)(sizeof ctx->req_pool / sizeof ctx->req_pool[0])) ctx->req_pool[ctx->nreq_pool++] = r;
  else free(r);
}

void rmaop__request_pool_free(rmaop_ctx ctx) {
  while (ctx->nreq_pool > 0) free(ctx->req_pool[--ctx->nreq_pool]);
}

static rmaop_status start(rmaop_request r, const double *in, rmaop_redop op) {
  rmaop_ctx ctx = r->ctx;
  r->in = in;
  r->op = op;
  if (ctx->trace_on) rmaop__trace_sync_start(ctx);
  const double t0 = rmaop__wtime();
  r->t_begin = t0;
  if (ctx->defer_next && ctx->backend->reduce) { /* the caller waits at once: one blocking call there */
    r->deferred = 1;
    return RMAOP_OK;
  }
  rmaop_status st = ctx->backend->reduce_begin(ctx, in, r->out, r->count, op, &r->backend_req);
  r->t_inside = rmaop__wtime() - t0;
  ctx->comm_time += r->t_inside;
  if (st != RMAOP_OK) request_free(r);
  else r->started = 1;
  return st;
}

static rmaop_status finish_copy(rmaop_request r) {
  if (r->nresult > 0) memmove(r->result, r->buf, (size_t)r->nresult * sizeof(double));
  return RMAOP_OK;
}

rmaop_status rmaop_allreduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                   const char *label, rmaop_request *req) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_allreduce: ctx is NULL");
  RMAOP_REQUIRE(ctx, req != NULL, RMAOP_ERR_ARG, "rmaop_allreduce: req (output) is NULL");
  rmaop_status local = RMAOP_OK;
  if (count < 0 || count > INT_MAX - 1) {
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: count %lld is outside [0, INT_MAX - 1]", (long long)count);
    count = 0; /* still take part, with the flag alone */
  } else if (count > 0 && (in == NULL || out == NULL)) {
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: %s is NULL with count %lld", in ? "out" : "in",
                        (long long)count);
  } else if (op != RMAOP_SUM && op != RMAOP_MAX && op != RMAOP_MIN) {
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: op %d is not SUM, MAX or MIN", (int)op);
    op = RMAOP_SUM;
  }
  /* Agree before the backend's collective: a rank whose count is bad cannot know the others' count, so
   * the failure cannot ride inside the reduction as it does for dots (whose sizes are fixed). The solvers'
   * reductions therefore go through rmaop_vec_mdot, which needs no second collective. */
  RMAOP_CHECK(rmaop__agree_unconfirmed(ctx, local, "rmaop_allreduce"));
  return rmaop__reduce_flagged_begin(ctx, RMAOP_OK, in, count, op, label ? label : "allreduce", 0, finish_copy, out,
                                     (int)count, req);
}

rmaop_status rmaop_allreduce(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                             const char *label) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_allreduce: ctx is NULL");
  rmaop_request r = NULL;
  ctx->defer_next = 1; /* waited at once: the backend may reduce blocking */
  rmaop_status st = rmaop_allreduce_begin(ctx, in, out, count, op, label, &r);
  ctx->defer_next = 0;
  RMAOP_CHECK(st);
  return rmaop_request_wait(&r);
}

rmaop_status rmaop__reduce_flagged_begin(rmaop_ctx ctx, rmaop_status local, const double *partials, int64_t np,
                                         rmaop_redop op, const char *label, int local_only,
                                         rmaop_status (*finish)(rmaop_request), void *result, int nresult,
                                         rmaop_request *req) {
  RMAOP_REQUIRE_USABLE(ctx, label);
  rmaop_request r = NULL;
  RMAOP_CHECK(request_new(ctx, label, np + 1, &r));
  r->has_flag = 1;
  r->local = local;
  r->finish = finish;
  r->result = result;
  r->nresult = nresult;
  /* np may be 0 with partials NULL (an allreduce of nothing still agrees on the flag): memcpy forbids NULL. */
  if (local == RMAOP_OK && np > 0) memcpy(r->buf, partials, (size_t)np * sizeof(double));
  else if (np > 0) memset(r->buf, 0, (size_t)np * sizeof(double));
  /* The flag counts failed ranks under SUM and MAX; under MIN it is negative. */
  r->buf[np] = local == RMAOP_OK ? 0.0 : op == RMAOP_MIN ? -1.0 : 1.0;
  if (local_only) { /* every rank holds the whole data: the partials are the result */
    *req = r;
    return RMAOP_OK;
  }
  /* The backend reduces in place: in == out is allowed by the table's contract. */
  RMAOP_CHECK(start(r, r->buf, op));
  *req = r;
  return RMAOP_OK;
}

rmaop_status rmaop_allreduce_end(rmaop_request *req) {
  RMAOP_REQUIRE(NULL, req != NULL && *req != NULL, RMAOP_ERR_ARG, "rmaop_allreduce_end: request is NULL");
  return rmaop_request_wait(req);
}

rmaop_status rmaop_vec_mdot_end(rmaop_request *req) {
  RMAOP_REQUIRE(NULL, req != NULL && *req != NULL, RMAOP_ERR_ARG, "rmaop_vec_mdot_end: request is NULL");
  return rmaop_request_wait(req);
}

rmaop_status rmaop_request_wait(rmaop_request *preq) {
  RMAOP_REQUIRE(NULL, preq != NULL && *preq != NULL, RMAOP_ERR_ARG, "rmaop_request_wait: request is NULL");
  rmaop_request r = *preq;
  rmaop_ctx ctx = r->ctx;
  rmaop_status st = RMAOP_OK;
  if (ctx->failed != RMAOP_OK) { /* begun before the failure: whatever arrived since is no result */
    st = rmaop__state_error(ctx, r->label);
    *preq = NULL;
    request_free(r);
    return st;
  }
  /* As in rmaop_plan_end; a deferred reduction was synchronized by its start, just before. */
  if (ctx->trace_on && r->started) rmaop__trace_sync_start(ctx);
  const double t0 = rmaop__wtime();
  if (r->deferred) st = ctx->backend->reduce(ctx, r->in, r->out, r->count, r->op);
  else if (r->started) st = ctx->backend->reduce_end(ctx, r->backend_req);
  /* No rmaop__trace_sync_end: the result is on the host when the backend returns (nccl waits for its own
   * event), so a stream drain here would only time an idle stream, which the probe's reduction does not. */
  const double t1 = rmaop__wtime();
  ctx->comm_time += t1 - t0;
  *preq = NULL;
  if (st == RMAOP_OK && ctx->trace_on && (r->started || r->deferred))
    rmaop__trace_record(ctx, r->label, "reduce", ctx->backend->reduce_transport(ctx), (uint64_t)(ctx->size - 1),
                        (double)(r->count * (int64_t)sizeof(double)), t1 - r->t_begin, r->t_inside + (t1 - t0), 0);
  if (st == RMAOP_OK && r->has_flag) {
    if (r->local != RMAOP_OK) st = r->local; /* message recorded when the argument was checked */
    else if (r->buf[r->count - 1] != 0.0)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "%s: bad arguments on another rank; its message says why", r->label);
    else if (r->finish) st = r->finish(r);
  }
  request_free(r);
  return st;
}

/* ---- reductions whose data stays in device memory ----
 * Each rank's `count` doubles go into slot[me] of every rank's slots by a plan (a gather of P x count
 * doubles: puts into the peers' device windows on the rma backend, grouped send/recv on nccl, whatever the
 * backend's plans do), then a kernel combines slots 0..P-1 in rank order into `out`: identical bits on every
 * rank, the same order as the rma backend's host reductions. Nothing synchronizes the host where the
 * backend's device plans do not (rma over ipc, nccl); over MPI the plan synchronizes or stages as it does
 * for halos. One plan per count, created at first use (collective, like every call here). */

void rmaop__dev_reduce_free(rmaop_ctx ctx) {
  for (size_t i = 0; i < sizeof ctx->dred / sizeof ctx->dred[0]; ++i) {
    if (ctx->dred[i].plan) rmaop_plan_destroy(&ctx->dred[i].plan);
    rmaop__dev_free(ctx->dred[i].slots);
    ctx->dred[i].slots = NULL;
    ctx->dred[i].count = 0;
  }
}

/* The gather plan for `count` doubles (collective when it is created). */
static rmaop_status gather_plan(rmaop_ctx ctx, int64_t count, int *slot) {
  const int i = count <= 16 ? (int)count : 0;
  *slot = i;
  if (ctx->dred[i].plan && ctx->dred[i].count == count) return RMAOP_OK;
  if (ctx->dred[i].plan) rmaop_plan_destroy(&ctx->dred[i].plan);
  rmaop__dev_free(ctx->dred[i].slots);
  ctx->dred[i].slots = NULL;
  ctx->dred[i].count = 0;
  const int P = ctx->size;
  rmaop_transfer *tr = NULL;
  rmaop_status st = rmaop__malloc(ctx, (size_t)P * sizeof *tr, "device reduction transfers", (void **)&tr);
  if (st == RMAOP_OK)
    st = rmaop__dev_malloc(ctx, (size_t)P * (size_t)count * sizeof(double), "device reduction slots",
                           (void **)&ctx->dred[i].slots);
  st = rmaop__agree(ctx, st, "device reduction set-up");
  if (st == RMAOP_OK) {
    for (int p = 0; p < P; ++p) tr[p] = (rmaop_transfer){p, 0, (int64_t)ctx->rank * count, count};
    const rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = count, .dst_len = (int64_t)P * count, .nsends = P,
                                  .sends = tr, .nrecvs = -1, .label = "reduce.device"};
    st = rmaop_plan_create(ctx, &spec, &ctx->dred[i].plan);
  }
  free(tr);
  if (st != RMAOP_OK) {
    rmaop__dev_free(ctx->dred[i].slots);
    ctx->dred[i].slots = NULL;
    ctx->dred[i].plan = NULL;
    return st;
  }
  ctx->dred[i].count = count;
  return RMAOP_OK;
}

typedef struct {
  const double *in;
  double *out;
} dred_io;

static rmaop_status dred_launch(rmaop_ctx ctx, rmaop__dred_args *a, void *user) {
  const dred_io *io = user;
  a->in = io->in, a->out = io->out;
  return rmaop__dev_dred(ctx, a);
}

rmaop_status rmaop__reduce_device_fused(rmaop_ctx ctx, int64_t count, rmaop_redop op,
                                        rmaop_status (*launch)(rmaop_ctx ctx, rmaop__dred_args *a, void *user),
                                        void *user, int *done) {
  *done = 0;
  if (!ctx->backend->reduce_device)
    return RMAOP_OK;
  return ctx->backend->reduce_device(ctx, count, op, launch, user, done);
}

rmaop_status rmaop__allreduce_device(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op) {
  RMAOP_REQUIRE_USABLE(ctx, "device reduction");
  if (count == 0) return RMAOP_OK;
  int done = 0;
  dred_io io = {in, out};
  RMAOP_CHECK(rmaop__reduce_device_fused(ctx, count, op, dred_launch, &io, &done));
  if (done)
    return RMAOP_OK;
  int i = 0;
  RMAOP_CHECK(gather_plan(ctx, count, &i));
  RMAOP_CHECK(rmaop_plan_execute(ctx->dred[i].plan, in, ctx->dred[i].slots, RMAOP_INSERT));
  return rmaop__dev_reduce_slots(ctx, ctx->dred[i].slots, ctx->size, count, op, out);
}

rmaop_status rmaop_allreduce_enqueue(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_allreduce_enqueue: ctx is NULL");
  rmaop_status local = RMAOP_OK;
  if (count < 0 || count > INT_MAX / 2)
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce_enqueue: count %lld is outside [0, INT_MAX / 2]",
                        (long long)count);
  else if (count > 0 && (in == NULL || out == NULL))
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce_enqueue: %s is NULL with count %lld", in ? "out" : "in",
                        (long long)count);
  else if (op != RMAOP_SUM && op != RMAOP_MAX && op != RMAOP_MIN)
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce_enqueue: op %d is not SUM, MAX or MIN", (int)op);
  else if (RMAOP__ON_DEVICE(ctx) && count > 0 &&
           (!rmaop__dev_is_device_ptr(in) || !rmaop__dev_is_device_ptr(out)))
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                        "rmaop_allreduce_enqueue: %s is not device memory (a device context reduces device buffers; "
                        "rmaop_allreduce takes host buffers)",
                        !rmaop__dev_is_device_ptr(in) ? "in" : "out");
  /* As rmaop_allreduce: a bad rank cannot know the others' count, so every rank agrees first, on the
   * arguments and on the count and op (the gather plan is created per count, collectively). */
  RMAOP_CHECK(rmaop__agree_unconfirmed(ctx, local, "rmaop_allreduce_enqueue"));
  const int64_t v[2] = {count, (int64_t)op};
  static const char *const names[2] = {"count", "op"};
  RMAOP_CHECK(rmaop__same_everywhere(ctx, v, 2, names, "rmaop_allreduce_enqueue"));
  if (ctx->memory != RMAOP_MEMORY_DEVICE) return rmaop_allreduce(ctx, in, out, count, op, "allreduce");
  return rmaop__allreduce_device(ctx, in, out, count, op);
}
