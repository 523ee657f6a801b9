/* Reductions through the backend, and requests. */
#include "rmaop_impl.h"

#include <stdio.h>

static rmaop_status request_new(rmaop_ctx ctx, const char *label, int64_t count, rmaop_request *out) {
  rmaop_request r = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *r, "request", (void **)&r));
  if (count > 0 && rmaop__malloc(ctx, (size_t)count * sizeof(double), "reduction buffer", (void **)&r->buf) != RMAOP_OK) {
    free(r);
    return RMAOP_ERR_NOMEM;
  }
  r->ctx = ctx;
  r->count = count;
  r->out = r->buf;
  snprintf(r->label, sizeof r->label, "%s", label);
  r->t_begin = rmaop__wtime();
  *out = r;
  return RMAOP_OK;
}

static void request_free(rmaop_request r) {
  free(r->buf);
  free(r);
}

static rmaop_status start(rmaop_request r, const double *in, rmaop_redop op) {
  rmaop_ctx ctx = r->ctx;
  const double t0 = rmaop__wtime();
  rmaop_status st = ctx->backend->reduce_begin(ctx, in, r->out, r->count, op, &r->backend_req);
  ctx->comm_time += rmaop__wtime() - t0;
  if (st != RMAOP_OK) request_free(r);
  else r->started = 1;
  return st;
}

rmaop_status rmaop_allreduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                   const char *label, rmaop_request *req) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_allreduce: ctx is NULL");
  rmaop_status local = RMAOP_OK;
  if (req == NULL) local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: req (output) is NULL");
  else if (count < 0) local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: count %lld is negative", (long long)count);
  else if (count > 0 && (in == NULL || out == NULL))
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: %s is NULL with count %lld", in ? "out" : "in",
                        (long long)count);
  else if (op != RMAOP_SUM && op != RMAOP_MAX && op != RMAOP_MIN)
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_allreduce: op %d is not SUM, MAX or MIN", (int)op);
  /* Ranks must agree before the backend's collective starts: a bad count on one rank would otherwise
   * hang the others. Checked here, not per element, so the hot path (dots) uses the flagged form. */
  RMAOP_CHECK(rmaop__agree(ctx, local, "rmaop_allreduce"));
  rmaop_request r = NULL;
  RMAOP_CHECK(request_new(ctx, label ? label : "allreduce", 0, &r));
  r->count = count;
  r->out = out;
  RMAOP_CHECK(start(r, in, op));
  *req = r;
  return RMAOP_OK;
}

rmaop_status rmaop_allreduce(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                             const char *label) {
  rmaop_request r = NULL;
  RMAOP_CHECK(rmaop_allreduce_begin(ctx, in, out, count, op, label, &r));
  return rmaop_request_wait(&r);
}

rmaop_status rmaop__reduce_flagged_begin(rmaop_ctx ctx, rmaop_status local, const double *partials, int64_t np,
                                         const char *label, int local_only, rmaop_status (*finish)(rmaop_request),
                                         void *result, int nresult, rmaop_request *req) {
  rmaop_request r = NULL;
  RMAOP_CHECK(request_new(ctx, label, np + 1, &r));
  r->has_flag = 1;
  r->local = local;
  r->finish = finish;
  r->result = result;
  r->nresult = nresult;
  if (local == RMAOP_OK) memcpy(r->buf, partials, (size_t)np * sizeof(double));
  else memset(r->buf, 0, (size_t)np * sizeof(double));
  r->buf[np] = local != RMAOP_OK;
  if (local_only) { /* every rank holds the whole data: the partials are the result */
    *req = r;
    return RMAOP_OK;
  }
  /* The backend reduces in place: in == out is allowed by the table's contract. */
  RMAOP_CHECK(start(r, r->buf, RMAOP_SUM));
  *req = r;
  return RMAOP_OK;
}

rmaop_status rmaop_request_wait(rmaop_request *preq) {
  RMAOP_REQUIRE(NULL, preq != NULL && *preq != NULL, RMAOP_ERR_ARG, "rmaop_request_wait: request is NULL");
  rmaop_request r = *preq;
  rmaop_ctx ctx = r->ctx;
  rmaop_status st = RMAOP_OK;
  const double t0 = rmaop__wtime();
  if (r->started) st = ctx->backend->reduce_end(ctx, r->backend_req);
  ctx->comm_time += rmaop__wtime() - t0;
  *preq = NULL;
  if (st == RMAOP_OK && ctx->trace_on && r->started)
    rmaop__trace_record(ctx, r->label, "reduce", ctx->backend->reduce_transport(ctx), (uint64_t)(ctx->size - 1),
                        (double)(r->count * (int64_t)sizeof(double)), rmaop__wtime() - r->t_begin);
  if (st == RMAOP_OK && r->has_flag) {
    if (r->local != RMAOP_OK) st = r->local; /* message recorded when the argument was checked */
    else if (r->buf[r->count - 1] > 0)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "%s: bad arguments on %.0f other rank(s); their messages say why",
                       r->label, r->buf[r->count - 1]);
    else if (r->finish) st = r->finish(r);
  }
  request_free(r);
  return st;
}
