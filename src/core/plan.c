/* Plans: a communication pattern declared once (origin's view), its inverse computed at creation,
 * executed through the backend. The staging layout and the unpack order are shared by all backends, so
 * every backend produces bitwise identical results. */
#include "error.h"
#include "ctx.h"
#include "plan.h"
#include "dtype.h"
#include "backend.h"
#include "device/device.h"

#include <stdio.h>

/* ---- validation ---- */

/* [off, off + count) inside [0, len), without overflow. */
static int range_ok(int64_t off, int64_t count, int64_t len) {
  return off >= 0 && count >= 0 && off <= len && count <= len - off;
}

static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_plan_spec *spec, rmaop_plan *out) {
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_plan_create: plan (output) is NULL");
  RMAOP_REQUIRE(ctx, spec != NULL, RMAOP_ERR_ARG, "rmaop_plan_create: spec is NULL");
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(spec->dtype) > 0, RMAOP_ERR_ARG, "rmaop_plan_create: dtype %d is not a rmaop_dtype",
                (int)spec->dtype);
  RMAOP_REQUIRE(ctx, spec->src_len >= 0 && spec->dst_len >= 0, RMAOP_ERR_ARG,
                "rmaop_plan_create: negative buffer length (src_len %lld, dst_len %lld)", (long long)spec->src_len,
                (long long)spec->dst_len);
  RMAOP_REQUIRE(ctx, spec->nsends >= 0 && (spec->nsends == 0 || spec->sends != NULL), RMAOP_ERR_ARG,
                "rmaop_plan_create: nsends = %d with sends %s", spec->nsends, spec->sends ? "given" : "NULL");
  RMAOP_REQUIRE(ctx, spec->nrecvs >= -1 && (spec->nrecvs <= 0 || spec->recvs != NULL), RMAOP_ERR_ARG,
                "rmaop_plan_create: nrecvs = %d with recvs %s (use -1 to derive them)", spec->nrecvs,
                spec->recvs ? "given" : "NULL");
  for (int i = 0; i < spec->nsends; ++i) {
    const rmaop_transfer *t = &spec->sends[i];
    RMAOP_REQUIRE(ctx, t->peer >= 0 && t->peer < ctx->size, RMAOP_ERR_ARG,
                  "rmaop_plan_create: sends[%d].peer = %d is outside [0, %d)", i, t->peer, ctx->size);
    RMAOP_REQUIRE(ctx, t->count >= 0, RMAOP_ERR_ARG, "rmaop_plan_create: sends[%d].count = %lld is negative", i,
                  (long long)t->count);
    RMAOP_REQUIRE(ctx, range_ok(t->src_offset, t->count, spec->src_len), RMAOP_ERR_ARG,
                  "rmaop_plan_create: sends[%d] reads %lld elements from src[%lld], outside this rank's src_len %lld",
                  i, (long long)t->count, (long long)t->src_offset, (long long)spec->src_len); /* no sum: it may overflow */
  }
  for (int i = 0; i < spec->nrecvs; ++i) {
    const rmaop_transfer *t = &spec->recvs[i];
    RMAOP_REQUIRE(ctx, t->peer >= 0 && t->peer < ctx->size, RMAOP_ERR_ARG,
                  "rmaop_plan_create: recvs[%d].peer = %d is outside [0, %d)", i, t->peer, ctx->size);
    RMAOP_REQUIRE(ctx, range_ok(t->dst_offset, t->count, spec->dst_len), RMAOP_ERR_ARG,
                  "rmaop_plan_create: recvs[%d] expects dst[%lld .. +%lld) outside this rank's dst_len %lld", i,
                  (long long)t->dst_offset, (long long)t->count, (long long)spec->dst_len);
  }
  return RMAOP_OK;
}

/* Agrees on failure and on the dtype in one reduction. */
static rmaop_status agree_spec(rmaop_ctx ctx, rmaop_status local, const rmaop_plan_spec *spec) {
  int64_t d = local == RMAOP_OK ? (int64_t)spec->dtype : 0;
  int64_t v[3] = {local != RMAOP_OK, local == RMAOP_OK ? d : INT64_MIN + 1, local == RMAOP_OK ? -d : INT64_MIN + 1}, r[3];
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, v, r, 3, MPI_INT64_T, MPI_MAX, "rmaop_plan_create"));
  if (local != RMAOP_OK) return local;
  if (r[0]) return RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "rmaop_plan_create failed on %lld other rank(s); their messages say why", (long long)r[0]);
  RMAOP_REQUIRE(ctx, r[1] == -r[2], RMAOP_ERR_ARG, "rmaop_plan_create: ranks passed different dtypes (%s here)",
                rmaop_dtype_name(spec->dtype));
  return RMAOP_OK;
}

/* ---- construction ---- */

typedef struct {
  const rmaop_transfer *t;
  int index;
} sort_item;

static int by_peer_then_index(const void *a, const void *b) {
  const sort_item *x = a, *y = b;
  if (x->t->peer != y->t->peer) return x->t->peer < y->t->peer ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Groups a peer-sorted transfer list: distinct peers, their index ranges and element counts. */
static rmaop_status group_by_peer(rmaop_ctx ctx, int n, const rmaop_transfer *t, int *npeers, int **peers,
                                  int **first, int64_t **count) {
  int np = 0;
  for (int i = 0; i < n; ++i) np += (i == 0 || t[i].peer != t[i - 1].peer);
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)np + 1, sizeof(int), "plan peers", (void **)peers));
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)np + 1, sizeof(int), "plan peer ranges", (void **)first));
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)np + 1, sizeof(int64_t), "plan peer counts", (void **)count));
  int g = -1;
  for (int i = 0; i < n; ++i) {
    if (i == 0 || t[i].peer != t[i - 1].peer) {
      ++g;
      (*peers)[g] = t[i].peer;
      (*first)[g] = i;
    }
    (*count)[g] += t[i].count;
  }
  (*first)[np] = n;
  *npeers = np;
  return RMAOP_OK;
}

/* Splits the user's sends into self and non-self lists, the latter stably sorted by peer. */
static rmaop_status sort_sends(rmaop_plan plan, const rmaop_plan_spec *spec) {
  rmaop_ctx ctx = plan->ctx;
  sort_item *items = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)spec->nsends + 1, sizeof *items, "plan sort", (void **)&items));
  rmaop_status st = rmaop__calloc(ctx, (size_t)spec->nsends + 1, sizeof(rmaop_transfer), "plan sends", (void **)&plan->send);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)spec->nsends + 1, sizeof(rmaop_transfer), "plan self transfers", (void **)&plan->self);
  if (st != RMAOP_OK) {
    free(items);
    return st;
  }
  int n = 0;
  for (int i = 0; i < spec->nsends; ++i) {
    if (spec->sends[i].peer == ctx->rank) plan->self[plan->nself++] = spec->sends[i];
    else items[n++] = (sort_item){&spec->sends[i], i};
  }
  qsort(items, (size_t)n, sizeof *items, by_peer_then_index);
  for (int i = 0; i < n; ++i) plan->send[i] = *items[i].t;
  plan->nsend = n;
  free(items);
  return RMAOP_OK;
}

/* Checks every send against the destination length of its target (known from an allgather). */
static rmaop_status check_targets(rmaop_plan plan, const int64_t *dst_len_of) {
  rmaop_ctx ctx = plan->ctx;
  for (int i = 0; i < plan->nsend + plan->nself; ++i) {
    const rmaop_transfer *t = i < plan->nsend ? &plan->send[i] : &plan->self[i - plan->nsend];
    RMAOP_REQUIRE(ctx, range_ok(t->dst_offset, t->count, dst_len_of[t->peer]), RMAOP_ERR_ARG,
                  "rmaop_plan_create: a send from rank %d writes %lld elements at dst[%lld] of rank %d, whose dst_len "
                  "is %lld",
                  ctx->rank, (long long)t->count, (long long)t->dst_offset, t->peer, (long long)dst_len_of[t->peer]);
  }
  return RMAOP_OK;
}

/* Exchanges transfer descriptors so every target knows its incoming transfers, in staging order. */
static rmaop_status exchange_descriptors(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  const int P = ctx->size;
  rmaop_status st = RMAOP_OK;
  int *cnt = NULL; /* [4P]: transfers to, from; int64 descriptor counts and displacements */
  int64_t *sbuf = NULL, *rbuf = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 6 * (size_t)P, sizeof(int), "plan exchange counts", (void **)&cnt));
  int *to = cnt, *from = cnt + P, *sc = cnt + 2 * P, *sd = cnt + 3 * P, *rc = cnt + 4 * P, *rd = cnt + 5 * P;
  for (int i = 0; i < plan->nsend; ++i) to[plan->send[i].peer]++;
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, ctx->comm), st, out);
  int64_t ns = 0, nr = 0;
  for (int p = 0; p < P; ++p) {
    ns += to[p];
    nr += from[p];
  }
  RMAOP_REQUIRE_INT(ctx, 3 * ns, "3 x transfers sent"); /* same on every rank's view of the pattern */
  if (3 * nr > INT_MAX) {
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_plan_create: %lld incoming transfers exceed an MPI count", (long long)nr);
    goto out;
  }
  for (int p = 0, s = 0, r = 0; p < P; ++p) {
    sc[p] = 3 * to[p], sd[p] = s, s += sc[p];
    rc[p] = 3 * from[p], rd[p] = r, r += rc[p];
  }
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, 3 * (size_t)ns + 1, sizeof(int64_t), "plan descriptors", (void **)&sbuf), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, 3 * (size_t)nr + 1, sizeof(int64_t), "plan descriptors", (void **)&rbuf), st, out);
  for (int i = 0; i < plan->nsend; ++i) {
    sbuf[3 * i] = plan->send[i].src_offset;
    sbuf[3 * i + 1] = plan->send[i].dst_offset;
    sbuf[3 * i + 2] = plan->send[i].count;
  }
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Alltoallv(sbuf, sc, sd, MPI_INT64_T, rbuf, rc, rd, MPI_INT64_T, ctx->comm), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, (size_t)nr + 1, sizeof(rmaop_transfer), "plan receives", (void **)&plan->recv), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, (size_t)nr + 1, sizeof(int64_t), "plan receive displacements", (void **)&plan->recv_disp), st, out);
  int64_t disp = 0;
  int k = 0;
  for (int p = 0; p < P; ++p) {
    for (int j = 0; j < from[p]; ++j, ++k) {
      plan->recv[k] = (rmaop_transfer){p, rbuf[3 * k], rbuf[3 * k + 1], rbuf[3 * k + 2]};
      plan->recv_disp[k] = disp;
      disp += rbuf[3 * k + 2];
    }
  }
  plan->nrecv = (int)nr;
  plan->recv_total = disp;
out:
  free(sbuf);
  free(rbuf);
  free(cnt);
  return st;
}

/* Tells every origin where its block starts in my staging buffer; computes send_disp. */
static rmaop_status exchange_displacements(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  const int P = ctx->size;
  rmaop_status st = RMAOP_OK;
  int64_t *start_from = NULL, *start_at = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)P, sizeof(int64_t), "plan displacements", (void **)&start_from));
  start_at = start_from + P;
  for (int g = 0; g < plan->nrecv_peers; ++g) start_from[plan->recv_peers[g]] = plan->recv_peer_disp[g];
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Alltoall(start_from, 1, MPI_INT64_T, start_at, 1, MPI_INT64_T, ctx->comm), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, (size_t)plan->nsend + 1, sizeof(int64_t), "plan send displacements", (void **)&plan->send_disp), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, (size_t)plan->nsend_peers + 1, sizeof(int64_t), "plan send peer displacements", (void **)&plan->send_peer_disp), st, out);
  for (int g = 0; g < plan->nsend_peers; ++g) {
    int64_t d = start_at[plan->send_peers[g]];
    plan->send_peer_disp[g] = d;
    for (int i = plan->send_peer_first[g]; i < plan->send_peer_first[g + 1]; ++i) {
      plan->send_disp[i] = d;
      d += plan->send[i].count;
    }
  }
out:
  free(start_from);
  return st;
}

static int by_peer_dst_count(const void *a, const void *b) {
  const rmaop_transfer *x = a, *y = b;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  if (x->dst_offset != y->dst_offset) return x->dst_offset < y->dst_offset ? -1 : 1;
  return (x->count > y->count) - (x->count < y->count);
}

/* Compares the receives the user expects with what the senders declared. */
static rmaop_status check_expected(rmaop_plan plan, const rmaop_plan_spec *spec) {
  rmaop_ctx ctx = plan->ctx;
  const int n = plan->nrecv + plan->nself;
  rmaop_transfer *got = NULL, *want = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * ((size_t)(n > spec->nrecvs ? n : spec->nrecvs) + 1), sizeof *got, "plan check", (void **)&got));
  want = got + (n > spec->nrecvs ? n : spec->nrecvs) + 1;
  if (plan->nrecv > 0) memcpy(got, plan->recv, (size_t)plan->nrecv * sizeof *got);
  for (int i = 0; i < plan->nself; ++i) got[plan->nrecv + i] = (rmaop_transfer){ctx->rank, 0, plan->self[i].dst_offset, plan->self[i].count};
  for (int i = 0; i < spec->nrecvs; ++i) want[i] = (rmaop_transfer){spec->recvs[i].peer, 0, spec->recvs[i].dst_offset, spec->recvs[i].count};
  qsort(got, (size_t)n, sizeof *got, by_peer_dst_count);
  qsort(want, (size_t)spec->nrecvs, sizeof *want, by_peer_dst_count);
  rmaop_status st = RMAOP_OK;
  for (int i = 0; i < n || i < spec->nrecvs; ++i) {
    const rmaop_transfer *g = i < n ? &got[i] : NULL, *w = i < spec->nrecvs ? &want[i] : NULL;
    if (g && w && by_peer_dst_count(g, w) == 0) continue;
    if (w && (!g || w->peer <= g->peer))
      st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "rmaop_plan_create: peers disagree on counts: rank %d expects %lld elements at dst offset %lld "
                       "from rank %d, but rank %d %s", ctx->rank, (long long)w->count, (long long)w->dst_offset, w->peer,
                       w->peer, g && g->peer == w->peer ? "sends a different transfer" : "sends nothing more to it");
    else
      st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "rmaop_plan_create: peers disagree on counts: rank %d sends %lld elements to dst offset %lld "
                       "of rank %d, which does not expect them", g->peer, (long long)g->count, (long long)g->dst_offset,
                       ctx->rank);
    break;
  }
  free(got);
  return st;
}

static void plan_free_arrays(rmaop_plan plan) {
  free(plan->label);
  free(plan->send);
  free(plan->send_disp);
  free(plan->send_peers);
  free(plan->send_peer_first);
  free(plan->send_peer_count);
  free(plan->send_peer_disp);
  free(plan->recv);
  free(plan->recv_disp);
  free(plan->recv_peers);
  free(plan->recv_peer_first);
  free(plan->recv_peer_count);
  free(plan->recv_peer_disp);
  free(plan->self);
  free(plan->host_src);
  rmaop__dev_free(plan->dev_staging);
  free(plan);
}

/* Everything after the specification was agreed valid: both views, staging, cross-rank checks. */
static rmaop_status build(rmaop_plan plan, const rmaop_plan_spec *spec) {
  rmaop_ctx ctx = plan->ctx;
  rmaop_status st = RMAOP_OK, local = RMAOP_OK;
  int64_t *dst_len_of = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)ctx->size, sizeof(int64_t), "dst lengths", (void **)&dst_len_of));
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Allgather(&spec->dst_len, 1, MPI_INT64_T, dst_len_of, 1, MPI_INT64_T, ctx->comm), st, out);
  local = sort_sends(plan, spec);
  if (local == RMAOP_OK) local = check_targets(plan, dst_len_of);
  /* An origin with a bad transfer must not ship it: agree before the descriptors travel. */
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, local, "rmaop_plan_create"), st, out);
  RMAOP_CHECK_GOTO(exchange_descriptors(plan), st, out);
  RMAOP_CHECK_GOTO(group_by_peer(ctx, plan->nsend, plan->send, &plan->nsend_peers, &plan->send_peers,
                                 &plan->send_peer_first, &plan->send_peer_count), st, out);
  RMAOP_CHECK_GOTO(group_by_peer(ctx, plan->nrecv, plan->recv, &plan->nrecv_peers, &plan->recv_peers,
                                 &plan->recv_peer_first, &plan->recv_peer_count), st, out);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, (size_t)plan->nrecv_peers + 1, sizeof(int64_t), "plan peer displacements",
                                 (void **)&plan->recv_peer_disp), st, out);
  for (int g = 0; g < plan->nrecv_peers; ++g) plan->recv_peer_disp[g] = plan->recv_disp[plan->recv_peer_first[g]];
  RMAOP_CHECK_GOTO(exchange_displacements(plan), st, out);
  local = spec->nrecvs >= 0 ? check_expected(plan, spec) : RMAOP_OK;
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, local, "rmaop_plan_create (expected receives)"), st, out);
out:
  free(dst_len_of);
  return st;
}

rmaop_status rmaop_plan_create(rmaop_ctx ctx, const rmaop_plan_spec *spec, rmaop_plan *out) {
  return rmaop__plan_create_marked(ctx, spec, 0, out);
}

rmaop_status rmaop__plan_create_marked(rmaop_ctx ctx, const rmaop_plan_spec *spec, int alltoall, rmaop_plan *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_plan_create: ctx is NULL");
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_plan_create");
  RMAOP_CHECK(agree_spec(ctx, check_spec(ctx, spec, out), spec));
  rmaop_plan plan = NULL;
  rmaop_status st = rmaop__calloc(ctx, 1, sizeof *plan, "plan", (void **)&plan);
  if (st == RMAOP_OK) {
    const char *label = spec->label ? spec->label : "plan";
    plan->label = strdup(label);
    plan->ctx = ctx;
    plan->dtype = spec->dtype;
    plan->esize = rmaop_dtype_size(spec->dtype);
    plan->src_len = spec->src_len;
    plan->dst_len = spec->dst_len;
    plan->trace_transport = "-";
    plan->alltoall = alltoall;
    if (!plan->label) st = RMAOP_ERROR(ctx, RMAOP_ERR_NOMEM, "rmaop_plan_create: cannot copy the label");
  }
  /* Collectives inside build() are entered by every rank: a NOMEM above is agreed first. */
  st = rmaop__agree(ctx, st, "rmaop_plan_create (allocation)");
  if (st == RMAOP_OK) st = build(plan, spec);
  if (st == RMAOP_OK) st = rmaop__agree(ctx, ctx->backend->plan_setup(plan), "rmaop_plan_create (backend set-up)");
  if (st != RMAOP_OK) {
    if (plan) plan_free_arrays(plan); /* backend set-up cleans up after itself on failure */
    return st;
  }
  *out = plan;
  return RMAOP_OK;
}

rmaop_status rmaop_plan_reverse(rmaop_plan plan, const char *label, rmaop_plan *out) {
  RMAOP_REQUIRE(NULL, plan != NULL, RMAOP_ERR_ARG, "rmaop_plan_reverse: plan is NULL");
  rmaop_ctx ctx = plan->ctx;
  rmaop_transfer *t = NULL;
  rmaop_status st = rmaop__calloc(ctx, (size_t)(plan->nrecv + plan->nself) + 1, sizeof *t, "reversed transfers", (void **)&t);
  RMAOP_CHECK(rmaop__agree(ctx, st, "rmaop_plan_reverse"));
  /* What came from origin p into dst[d..] now goes back from src'[d..] into p's dst'[origin offset..]. */
  for (int i = 0; i < plan->nrecv; ++i)
    t[i] = (rmaop_transfer){plan->recv[i].peer, plan->recv[i].dst_offset, plan->recv[i].src_offset, plan->recv[i].count};
  for (int i = 0; i < plan->nself; ++i)
    t[plan->nrecv + i] = (rmaop_transfer){ctx->rank, plan->self[i].dst_offset, plan->self[i].src_offset, plan->self[i].count};
  char name[256];
  if (!label) snprintf(name, sizeof name, "%s^T", plan->label);
  rmaop_plan_spec spec = {.dtype = plan->dtype, .src_len = plan->dst_len, .dst_len = plan->src_len,
                          .nsends = plan->nrecv + plan->nself, .sends = t, .nrecvs = -1, .recvs = NULL,
                          .label = label ? label : name};
  st = rmaop__plan_create_marked(ctx, &spec, plan->alltoall, out); /* one transfer per peer both ways */
  free(t);
  return st;
}

void rmaop_plan_destroy(rmaop_plan *pp) {
  if (!pp || !*pp) return;
  rmaop_plan plan = *pp;
  plan->ctx->backend->plan_free(plan);
  plan_free_arrays(plan);
  *pp = NULL;
}

/* ---- execution ---- */

rmaop_status rmaop_plan_begin(rmaop_plan plan, const void *src, void *dst, rmaop_mode mode) {
  RMAOP_REQUIRE(NULL, plan != NULL, RMAOP_ERR_ARG, "rmaop_plan_begin: plan is NULL");
  rmaop_ctx ctx = plan->ctx;
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_plan_begin");
  RMAOP_REQUIRE(ctx, !plan->active, RMAOP_ERR_ARG, "rmaop_plan_begin: plan \"%s\" is already active (call rmaop_plan_end)",
                plan->label);
  RMAOP_REQUIRE(ctx, mode == RMAOP_INSERT || mode == RMAOP_ADD, RMAOP_ERR_ARG,
                "rmaop_plan_begin: mode %d is neither RMAOP_INSERT nor RMAOP_ADD", (int)mode);
  RMAOP_REQUIRE(ctx, src != NULL || (plan->nsend == 0 && plan->nself == 0), RMAOP_ERR_ARG,
                "rmaop_plan_begin: src is NULL but plan \"%s\" sends data", plan->label);
  RMAOP_REQUIRE(ctx, dst != NULL || (plan->nrecv == 0 && plan->nself == 0), RMAOP_ERR_ARG,
                "rmaop_plan_begin: dst is NULL but plan \"%s\" receives data", plan->label);
  plan->capturing = 0;
  if (RMAOP__ON_DEVICE(ctx) && rmaop__dev_capturing(ctx)) {
    const int remote = plan->nsend_peers + plan->nrecv_peers > 0;
    const char *why = !plan->dev_native && plan->nsend + plan->nrecv > 0
                          ? "it stages through host memory, which waits for the stream on the host"
                      : ctx->backend->plan_capture_refusal ? ctx->backend->plan_capture_refusal(plan)
                      : remote                             ? "this backend's messages are host-side MPI calls"
                                                           : NULL;
    RMAOP_REQUIRE(ctx, why == NULL, RMAOP_ERR_UNSUPPORTED,
                  "rmaop_plan_begin: plan \"%s\" (backend %s) cannot be captured into a CUDA graph: %s (README, "
                  "\"CUDA graphs\", lists what can)",
                  plan->label, ctx->backend->name, why);
    plan->capturing = 1;
    ctx->captured_plans++;
  }
  plan->cur_src = src;
  plan->cur_dst = dst;
  plan->cur_mode = mode;
  if (ctx->trace_on) rmaop__trace_sync_start(ctx);
  const double t0 = rmaop__wtime();
  plan->t_begin = t0;
  RMAOP_CHECK(ctx->backend->plan_begin(plan));
  plan->t_inside = rmaop__wtime() - t0;
  ctx->comm_time += plan->t_inside;
  plan->active = 1;
  return RMAOP_OK;
}

rmaop_status rmaop_plan_end(rmaop_plan plan) {
  RMAOP_REQUIRE(NULL, plan != NULL, RMAOP_ERR_ARG, "rmaop_plan_end: plan is NULL");
  rmaop_ctx ctx = plan->ctx;
  RMAOP_REQUIRE(ctx, plan->active, RMAOP_ERR_ARG, "rmaop_plan_end: plan \"%s\" was not begun", plan->label);
  plan->active = 0;
  /* Its staging may hold anything a peer put there before giving up: nothing of it reaches dst. */
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_plan_end");
  if (ctx->trace_on) rmaop__trace_sync_start(ctx); /* a late peer's overlapped work is not this call's messaging */
  const double t0 = rmaop__wtime();
  RMAOP_CHECK(ctx->backend->plan_end(plan));
  if (ctx->trace_on) rmaop__trace_sync_end(ctx);
  const double t1 = rmaop__wtime();
  ctx->comm_time += t1 - t0;
  if (ctx->trace_on)
    rmaop__trace_record(ctx, plan->label, "plan", plan->trace_transport, plan->trace_messages,
                        plan->trace_bytes_per_message, t1 - plan->t_begin, plan->t_inside + (t1 - t0),
                        plan->cur_mode == RMAOP_ADD);
  return RMAOP_OK;
}

rmaop_status rmaop_plan_execute(rmaop_plan plan, const void *src, void *dst, rmaop_mode mode) {
  RMAOP_CHECK(rmaop_plan_begin(plan, src, dst, mode));
  return rmaop_plan_end(plan);
}

/* dst (=|+=) src for one transfer, in the plan's memory kind; the backend's hook first, when it has one. */
static rmaop_status apply_one(rmaop_plan plan, const rmaop__unpack_from *from, void *dst, const void *src, int64_t count,
                              rmaop_mode mode) {
  if (from->apply) {
    int taken = 0;
    RMAOP_CHECK(from->apply(plan, dst, src, (size_t)count * plan->esize, mode, &taken));
    if (taken) return RMAOP_OK;
  }
  if (RMAOP__ON_DEVICE(plan->ctx)) return rmaop__dev_apply(plan->ctx, plan->dtype, dst, src, count, mode);
  rmaop__host_apply(plan->dtype, dst, src, count, mode);
  return RMAOP_OK;
}

static rmaop_status apply_self(rmaop_plan plan, const rmaop__unpack_from *from, const void *src, void *dst,
                               rmaop_mode mode) {
  for (int i = 0; i < plan->nself; ++i) {
    const rmaop_transfer *t = &plan->self[i];
    RMAOP_CHECK(apply_one(plan, from, (char *)dst + t->dst_offset * (int64_t)plan->esize,
                          (const char *)src + t->src_offset * (int64_t)plan->esize, t->count, mode));
  }
  return RMAOP_OK;
}

/* A device plan whose backend received into host memory: the staging goes to the device first. A pageable
 * source is consumed before cudaMemcpyAsync returns, so the backend may reuse its staging at once. */
static rmaop_status staging_to_device(rmaop_plan plan, const void **staging) {
  if (plan->recv_total == 0 || *staging == NULL || rmaop__dev_is_device_ptr(*staging)) return RMAOP_OK;
  const size_t bytes = (size_t)plan->recv_total * plan->esize;
  if (!plan->dev_staging) RMAOP_CHECK(rmaop__dev_malloc(plan->ctx, bytes, "plan device staging", &plan->dev_staging));
  RMAOP_CHECK(rmaop__dev_copy(plan->ctx, plan->dev_staging, *staging, bytes));
  *staging = plan->dev_staging;
  return RMAOP_OK;
}

rmaop_status rmaop__plan_unpack(rmaop_plan plan, const rmaop__unpack_from *from) {
  static const rmaop__unpack_from nothing = {0};
  if (!from) from = &nothing;
  const int me = plan->ctx->rank;
  const int64_t es = (int64_t)plan->esize;
  const void *src = plan->cur_src, *staging = from->staging;
  void *dst = plan->cur_dst;
  const rmaop_mode mode = plan->cur_mode;
  if (RMAOP__ON_DEVICE(plan->ctx)) RMAOP_CHECK(staging_to_device(plan, &staging));
  int self_done = 0;
  for (int g = 0; g < plan->nrecv_peers; ++g) {
    if (!self_done && plan->recv_peers[g] > me) {
      RMAOP_CHECK(apply_self(plan, from, src, dst, mode));
      self_done = 1;
    }
    for (int i = plan->recv_peer_first[g]; i < plan->recv_peer_first[g + 1] && !(from->skip && from->skip[g]); ++i) {
      const rmaop_transfer *t = &plan->recv[i];
      RMAOP_CHECK(apply_one(plan, from, (char *)dst + t->dst_offset * es,
                            (const char *)staging + plan->recv_disp[i] * es, t->count, mode));
    }
  }
  if (!self_done) RMAOP_CHECK(apply_self(plan, from, src, dst, mode));
  return RMAOP_OK;
}

static int by_start(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

rmaop_status rmaop__plan_dst_disjoint(rmaop_plan plan, int *disjoint) {
  const int n = plan->nrecv + plan->nself;
  int64_t *r = NULL;
  RMAOP_CHECK(rmaop__calloc(plan->ctx, 2 * (size_t)n + 2, sizeof(int64_t), "plan range check", (void **)&r));
  int m = 0;
  for (int i = 0; i < n; ++i) {
    const rmaop_transfer *t = i < plan->nrecv ? &plan->recv[i] : &plan->self[i - plan->nrecv];
    if (t->count > 0)
      r[2 * m] = t->dst_offset, r[2 * m + 1] = t->dst_offset + t->count, ++m;
  }
  qsort(r, (size_t)m, 2 * sizeof(int64_t), by_start);
  *disjoint = 1;
  for (int i = 1; i < m; ++i)
    if (r[2 * i] < r[2 * i - 1])
      *disjoint = 0;
  free(r);
  return RMAOP_OK;
}

const void *rmaop__plan_send_src(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  if (!RMAOP__ON_DEVICE(ctx) || plan->dev_native || plan->nsend == 0) return plan->cur_src;
  const size_t es = plan->esize;
  if (!plan->host_src && rmaop__malloc(ctx, (size_t)plan->src_len * es + 1, "host copy of a device plan's source",
                                       &plan->host_src) != RMAOP_OK)
    return NULL;
  for (int j = 0; j < plan->nsend; ++j) {
    const rmaop_transfer *t = &plan->send[j];
    if (rmaop__dev_copy(ctx, (char *)plan->host_src + (size_t)t->src_offset * es,
                        (const char *)plan->cur_src + (size_t)t->src_offset * es, (size_t)t->count * es) != RMAOP_OK)
      return NULL;
  }
  return rmaop__dev_sync(ctx) == RMAOP_OK ? plan->host_src : NULL;
}

rmaop_status rmaop_plan_get_info(rmaop_plan plan, rmaop_plan_info *info) {
  RMAOP_REQUIRE(NULL, plan != NULL, RMAOP_ERR_ARG, "rmaop_plan_get_info: plan is NULL");
  RMAOP_REQUIRE(plan->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_plan_get_info: info (output) is NULL");
  int64_t sc = 0, rc = 0, selfc = 0;
  for (int i = 0; i < plan->nsend; ++i) sc += plan->send[i].count;
  for (int i = 0; i < plan->nself; ++i) selfc += plan->self[i].count;
  rc = plan->recv_total;
  *info = (rmaop_plan_info){.label = plan->label, .dtype = plan->dtype, .src_len = plan->src_len,
                            .dst_len = plan->dst_len, .nsends = plan->nsend, .nrecvs = plan->nrecv,
                            .nsend_peers = plan->nsend_peers, .nrecv_peers = plan->nrecv_peers,
                            .send_count = sc, .recv_count = rc, .self_count = selfc};
  return RMAOP_OK;
}

rmaop_status rmaop__tlist_push(rmaop_ctx ctx, rmaop__tlist *l, rmaop_transfer t, const char *what) {
  rmaop_transfer *p = l->n ? &l->t[l->n - 1] : NULL;
  if (p && p->peer == t.peer && p->src_offset + p->count == t.src_offset && p->dst_offset + p->count == t.dst_offset) {
    p->count += t.count;
    return RMAOP_OK;
  }
  if (l->n == l->cap) {
    RMAOP_REQUIRE(ctx, l->cap < INT_MAX / 2, RMAOP_ERR_NOMEM, "%s: more than %d transfers", what, l->cap);
    const int cap = l->cap ? 2 * l->cap : 64;
    rmaop_transfer *nt = realloc(l->t, (size_t)cap * sizeof *nt);
    RMAOP_REQUIRE(ctx, nt != NULL, RMAOP_ERR_NOMEM, "%s: out of memory for %d transfers", what, cap);
    l->t = nt, l->cap = cap;
  }
  l->t[l->n++] = t;
  return RMAOP_OK;
}
