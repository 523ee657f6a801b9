/* The twosided backend: plans become one MPI message per peer (Irecv/Isend pairs, persistent where
 * the buffers are fixed), reductions are MPI_Iallreduce. It is the reference path the rma backend is
 * compared against, so it stays simple: no window, no epoch, no transport choice.
 *
 * Message format: everything rank A sends to rank B in one plan execution travels as ONE message whose
 * payload is A's send transfers to B, in A's send order. That is exactly the block the core reserved in
 * B's receive staging (struct rmaop_plan_s: recv_peer_disp / recv_peer_count), so a receive lands
 * straight in the staging buffer and rmaop__plan_unpack() applies it like every other backend does.
 *
 * Failure protocol: a rank whose MPI calls fail inside the backend's begin still sends one EMPTY
 * message to each of its send peers and still drains its own receives. A receiver that gets fewer
 * elements than the plan says returns RMAOP_ERR_REMOTE naming the sender, so such a failure never leaves
 * a neighbor waiting. (Bad arguments are rejected by the core before the backend runs; a neighbor of
 * that rank is released by the timeout.) Waits poll with the context's timeout (RMAOP_ERR_TIMEOUT)
 * instead of blocking in MPI_Waitall. A rank whose wait timed out, or that was told of a failure, sends a
 * failure note (tag TAG_ABORT) to the peers of that exchange; every context keeps one receive for such
 * notes posted, and every wait polls it with its own requests, so a peer that arrives after the others
 * gave up fails with RMAOP_ERR_REMOTE instead of returning the data they had sent before giving up. The
 * context is failed either way (src/core/error.c).
 *
 * Device memory. With a CUDA-aware MPI (ctx->mpi_cuda_aware) the plan is dev_native: staging and pack
 * buffers are device memory, MPI reads src and writes staging/dst on the GPU, and begin synchronizes the
 * context's stream first (the kernels that produced src must be done before MPI reads it). Without one,
 * sends read the core's host copy of the send ranges (rmaop__plan_send_src), receives land in host
 * staging, and rmaop__plan_unpack copies it to the device; nothing is received straight into dst.
 *
 * All-to-all plans (plan->alltoall: rmaop_plan_create_alltoall, one transfer per peer, created and executed by
 * every rank) are one MPI_Ialltoallv per execution instead of the messages above, when every rank's counts and
 * displacements fit an int and some rank sends to another (agreed at set-up; otherwise the messages). INSERT with
 * disjoint destinations on host memory (or a dev_native plan) receives straight into dst; otherwise into the
 * staging, which the shared unpack applies. Self blocks stay out of the collective (the unpack copies them). The
 * wait polls like every other (wait_all, with the context's failure notes); a collective cannot be cancelled, so
 * after a timeout its request and staging are leaked, never freed under MPI. A rank that fails before it joins
 * the collective tells every rank (send_abort), which then fails at once instead of timing out. */
#include "core/dtype.h"
#include "core/backend.h"
#include "device/device.h"

#include <sched.h>
#include <stdio.h>

/* Tags: plan messages use [TAG_PLAN_BASE, TAG_PLAN_BASE + TAG_PLAN_SPAN). Each plan gets its own tag
 * from a per-context counter (plans are created collectively, so every rank numbers them alike); two
 * plans in flight between the same pair of ranks therefore never match each other's messages.
 * The span stays below 32767, the smallest MPI_TAG_UB the standard allows. */
enum { TAG_PLAN_BASE = 0x4000, TAG_PLAN_SPAN = 0x3000, TAG_ABORT = TAG_PLAN_BASE + TAG_PLAN_SPAN };

typedef struct {
  unsigned plan_seq;     /* plans set up on this context so far */
  MPI_Request abort_req; /* receive of a peer's failure note (any source, TAG_ABORT), posted while healthy */
  int abort_buf;
  int *idx;              /* [cap] MPI_Testsome's indices */
  MPI_Status *st;        /* [cap] its statuses */
  int cap;
} ts_ctx;

/* How one peer's message is described to MPI: `count` items of `type`. Counts above INT_MAX use a
 * derived type (BigMPI's trick: a contiguous block of INT_MAX-element chunks plus the remainder). */
typedef struct {
  MPI_Datatype type;
  int count;
  int owns_type; /* type is a derived type this plan must free */
} ts_msg;

typedef struct {
  int tag;
  void *staging;      /* recv_total elements */
  void *pack;         /* packed messages of peers with several transfers */
  int64_t *pack_disp; /* [nsend_peers] element offset in pack, or -1: sent straight from src */
  ts_msg *rmsg;       /* [nrecv_peers] */
  ts_msg *smsg;       /* [nsend_peers] */
  MPI_Request *req;   /* [nrecv_peers] receives of this execution, [nsend_peers] sends, [nsend_peers] failure notes */
  MPI_Request *rpers; /* [nrecv_peers] persistent receives into the staging buffer (req[k] aliases them) */
  unsigned char *one; /* [nrecv_peers]: the origin sends one transfer, so it can land in dst directly */
  int disjoint;       /* no two incoming (or self) transfers write the same dst element */
  MPI_Datatype *stype; /* [nsend_peers] indexed type over src for a peer's several transfers (or NULL type) */
  MPI_Datatype *rtype; /* [nrecv_peers] indexed type over dst for an origin's several transfers (or NULL type) */
  unsigned char *in_place; /* [nrecv_peers] this execution received origin k straight into dst */
  MPI_Status *stat;   /* [nrecv_peers + 2 nsend_peers] */
  int *persistent;    /* [nsend_peers]: req[nrecv_peers + k] is a persistent send (from pack) */
  /* All-to-all plans executed as MPI_Ialltoallv (coll = 1) */
  int coll;
  int *a2a;           /* [5P]: send counts, send displacements (src), receive counts, receive displacements in dst,
                         and in the staging; elements, self left out (count 0) */
  MPI_Request coll_req[2]; /* the collective of this execution; [1]: wait_all's slot for the failure notes */
} ts_plan;

static MPI_Datatype elem_type(rmaop_dtype dtype) {
  switch (dtype) {
  case RMAOP_F32:
    return MPI_FLOAT;
  case RMAOP_F64:
    return MPI_DOUBLE;
  case RMAOP_C64:
    return MPI_C_FLOAT_COMPLEX;
  case RMAOP_C128:
    return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

static rmaop_status msg_make(rmaop_ctx ctx, rmaop_dtype dtype, int64_t count, ts_msg *m) {
  MPI_Datatype elem = elem_type(dtype);
  RMAOP_REQUIRE(ctx, elem != MPI_DATATYPE_NULL, RMAOP_ERR_INTERNAL, "twosided: invalid dtype %d", (int)dtype);
  m->owns_type = 0;
  if (count <= INT_MAX) {
    m->type = elem;
    m->count = (int)count;
    return RMAOP_OK;
  }
  int64_t nchunks = count / INT_MAX, rest = count % INT_MAX;
  RMAOP_REQUIRE(ctx, nchunks <= INT_MAX, RMAOP_ERR_ARG, "twosided: a message of %lld elements is too large for MPI",
                (long long)count);
  MPI_Datatype chunk, chunks, big;
  MPI_Aint lb, extent;
  RMAOP_CHECK_MPI(ctx, MPI_Type_get_extent(elem, &lb, &extent));
  RMAOP_CHECK_MPI(ctx, MPI_Type_contiguous(INT_MAX, elem, &chunk));
  RMAOP_CHECK_MPI(ctx, MPI_Type_contiguous((int)nchunks, chunk, &chunks));
  int blocklens[2] = {1, (int)rest};
  MPI_Aint displs[2] = {0, (MPI_Aint)(nchunks * INT_MAX) * extent};
  MPI_Datatype types[2] = {chunks, elem};
  int rc = MPI_Type_create_struct(rest ? 2 : 1, blocklens, displs, types, &big);
  MPI_Type_free(&chunk);
  MPI_Type_free(&chunks);
  if (rc != MPI_SUCCESS)
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Type_create_struct(large message)");
  RMAOP_CHECK_MPI(ctx, MPI_Type_commit(&big));
  m->type = big;
  m->count = 1;
  m->owns_type = 1;
  return RMAOP_OK;
}

static void msg_free(ts_msg *m) {
  if (m->owns_type && m->type != MPI_DATATYPE_NULL)
    MPI_Type_free(&m->type);
  m->owns_type = 0;
}

/* Tells the n ranks in `peers` (this rank skipped) that this rank's context failed: a 4-byte note each, sent
 * and forgotten (eager; MPI completes it whenever the peer drains it). */
static void send_abort(rmaop_ctx ctx, int n, const int *peers) {
  static const int note = 1;
  for (int i = 0; i < n; ++i) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (peers[i] != ctx->rank && MPI_Isend(&note, 1, MPI_INT, peers[i], TAG_ABORT, ctx->comm, &r) == MPI_SUCCESS)
      MPI_Request_free(&r);
  }
}

static rmaop_status scratch(rmaop_ctx ctx, ts_ctx *c, int n) {
  if (n <= c->cap)
    return RMAOP_OK;
  int *idx = NULL;
  MPI_Status *st = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)n, sizeof *idx, "twosided wait indices", (void **)&idx));
  if (rmaop__calloc(ctx, (size_t)n, sizeof *st, "twosided wait statuses", (void **)&st) != RMAOP_OK) {
    free(idx);
    return RMAOP_ERR_NOMEM;
  }
  free(c->idx);
  free(c->st);
  c->idx = idx, c->st = st, c->cap = n;
  return RMAOP_OK;
}

/* Polls until every request is complete, the context's timeout passes, or a peer's failure note arrives (the
 * context's abort receive rides in req[n], so `req` has room for n + 1). On a timeout or a note the first
 * `nrecv` requests (point-to-point receives from `peers[i]`; collectives cannot be cancelled) are cancelled
 * and completed, so a persistent receive can be started again and no late message lands in freed memory;
 * RMAOP_ERR_TIMEOUT names `what` and the first origin whose message never came, RMAOP_ERR_REMOTE the rank
 * that gave up. Either fails the context; the caller tells the exchange's peers (send_abort). */
static rmaop_status wait_all(rmaop_ctx ctx, int n, int nrecv, const int *peers, MPI_Request *req, MPI_Status *stat,
                             const char *what) {
  if (n == 0)
    return RMAOP_OK;
  ts_ctx *c = ctx->backend_data;
  RMAOP_CHECK(scratch(ctx, c, n + 1));
  req[n] = c->abort_req;
  int left = 0, gave_up = -1, progressed = 0;
  for (int i = 0; i < n; ++i)
    left += req[i] != MPI_REQUEST_NULL;
  double deadline = rmaop__wtime() + ctx->timeout;
  for (unsigned spin = 0; left > 0; ++spin) {
    int out = 0;
    int rc = MPI_Testsome(n + 1, req, &out, c->idx, c->st);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
      return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, what);
    for (int k = 0; k < out && out != MPI_UNDEFINED; ++k) {
      if (c->st[k].MPI_ERROR != MPI_SUCCESS && rc == MPI_ERR_IN_STATUS)
        return rmaop__mpi_error(ctx, c->st[k].MPI_ERROR, __FILE__, __LINE__, what);
      if (c->idx[k] == n) {
        gave_up = c->st[k].MPI_SOURCE;
      } else {
        stat[c->idx[k]] = c->st[k];
        --left;
      }
    }
    if (out == MPI_UNDEFINED) /* nothing active is left: requests that were never started */
      left = 0;
    progressed |= out == 0; /* MPI_Testsome progresses MPI only when nothing had completed */
    if (left > 0 && (spin & 63) == 63) {
      if (rmaop__wtime() > deadline)
        break;
      sched_yield(); /* ranks may outnumber cores (oversubscribed tests) */
    }
  }
  if (left == 0 && gave_up < 0 && !progressed && req[n] != MPI_REQUEST_NULL) {
    /* Everything had been matched before this wait (by an earlier call into MPI), and a note that came after
     * it was not: one more look, which progresses MPI. (Where this wait progressed MPI itself, the notes that
     * had come by then were matched with the data.) */
    int flag = 0;
    MPI_Status as;
    if (MPI_Test(&req[n], &flag, &as) == MPI_SUCCESS && flag)
      gave_up = as.MPI_SOURCE;
  }
  c->abort_req = req[n];
  if (left == 0 && gave_up < 0)
    return RMAOP_OK;
  if (left == 0) /* everything came, but a peer gave up: its data may be of an exchange it abandoned */
    return RMAOP_FAIL(ctx, RMAOP_ERR_REMOTE,
                      "%s: rank %d gave up an exchange with this rank (a wait timed out or its context failed; its "
                      "message says why), so rank %d stops too",
                      what, gave_up, ctx->rank);
  int missing = -1;
  for (int i = 0; i < nrecv; ++i) {
    if (req[i] == MPI_REQUEST_NULL)
      continue;
    MPI_Status cs;
    int cancelled = 0;
    MPI_Cancel(&req[i]);
    MPI_Wait(&req[i], &cs); /* a cancelled receive completes locally */
    MPI_Test_cancelled(&cs, &cancelled);
    if (cancelled && missing < 0)
      missing = peers ? peers[i] : -1;
  }
  if (missing >= 0)
    return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                       "%s: no message from rank %d after %.1f s (RMAOP_TIMEOUT); did it call rmaop_plan_begin?", what,
                       missing, ctx->timeout);
  return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                     "%s: no completion after %.1f s (RMAOP_TIMEOUT); a peer is not taking part", what, ctx->timeout);
}

static rmaop_status ts_init(rmaop_ctx ctx) {
  ts_ctx *c = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *c, "twosided context state", (void **)&c));
  const int rc = MPI_Irecv(&c->abort_buf, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ABORT, ctx->comm, &c->abort_req);
  if (rc != MPI_SUCCESS) {
    free(c);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Irecv(failure notes)");
  }
  ctx->backend_data = c;
  return RMAOP_OK;
}

static void ts_fini(rmaop_ctx ctx) {
  ts_ctx *c = ctx->backend_data;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c && c->abort_req != MPI_REQUEST_NULL && !finalized) {
    MPI_Cancel(&c->abort_req);
    MPI_Wait(&c->abort_req, MPI_STATUS_IGNORE); /* a cancelled receive completes locally */
  }
  if (c) {
    free(c->idx);
    free(c->st);
  }
  free(c);
  ctx->backend_data = NULL;
}

/* Staging and pack buffers: device memory for a dev_native plan, host memory otherwise. */
static rmaop_status buf_alloc(rmaop_plan plan, size_t n, const char *what, void **out) {
  if (plan->dev_native) return rmaop__dev_malloc(plan->ctx, n * plan->esize, what, out);
  return rmaop__calloc(plan->ctx, n, plan->esize, what, out);
}

static void buf_free(rmaop_plan plan, void *p) {
  if (plan->dev_native) {
    rmaop__dev_free(p);
    return;
  }
  free(p);
}

static void ts_plan_free(rmaop_plan plan) {
  ts_plan *t = plan->backend_data;
  if (!t)
    return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && t->req) {
    /* req[0..nrecv) alias rpers or are completed direct receives: free the persistent ones only. */
    for (int i = plan->nrecv_peers; i < plan->nrecv_peers + 2 * plan->nsend_peers; ++i)
      if (t->req[i] != MPI_REQUEST_NULL)
        MPI_Request_free(&t->req[i]);
    for (int k = 0; t->rpers && k < plan->nrecv_peers; ++k)
      if (t->rpers[k] != MPI_REQUEST_NULL)
        MPI_Request_free(&t->rpers[k]);
    for (int k = 0; t->rtype && k < plan->nrecv_peers; ++k)
      if (t->rtype[k] != MPI_DATATYPE_NULL)
        MPI_Type_free(&t->rtype[k]);
    for (int k = 0; t->stype && k < plan->nsend_peers; ++k)
      if (t->stype[k] != MPI_DATATYPE_NULL)
        MPI_Type_free(&t->stype[k]);
  }
  if (!finalized) {
    for (int k = 0; t->rmsg && k < plan->nrecv_peers; ++k)
      msg_free(&t->rmsg[k]);
    for (int k = 0; t->smsg && k < plan->nsend_peers; ++k)
      msg_free(&t->smsg[k]);
  }
  if (t->coll_req[0] != MPI_REQUEST_NULL)
    t->staging = NULL; /* a collective that never completed may still write it: leaked with its request */
  buf_free(plan, t->staging);
  buf_free(plan, t->pack);
  free(t->a2a);
  free(t->pack_disp);
  free(t->rmsg);
  free(t->smsg);
  free(t->req);
  free(t->rpers);
  free(t->one);
  free(t->stype);
  free(t->rtype);
  free(t->in_place);
  free(t->stat);
  free(t->persistent);
  free(t);
  plan->backend_data = NULL;
}

/* This execution receives origin k straight into dst. */
static int direct(const ts_plan *t, rmaop_plan plan, int k) {
  if (plan->ctx->memory == RMAOP_MEMORY_DEVICE && !plan->dev_native) return 0; /* dst is GPU memory */
  return plan->cur_mode == RMAOP_INSERT && t->disjoint && (t->one[k] || t->rtype[k] != MPI_DATATYPE_NULL);
}

/* An indexed datatype over the n transfers (their src offsets, or their dst offsets), so a message of several
 * transfers needs no packing or unpacking copy. MPI_DATATYPE_NULL when an offset or count does not fit an
 * int, or on GPU memory: the caller keeps the copying path. (Open MPI 5.0.7 + UCX 1.13 delivered zeros for
 * indexed types over GPU buffers: the halo test's ghost cells, 2 ranks on one H100.) */
static rmaop_status indexed_type(rmaop_plan plan, const rmaop_transfer *t, int n, int at_src, MPI_Datatype *out) {
  rmaop_ctx ctx = plan->ctx;
  *out = MPI_DATATYPE_NULL;
  if (plan->dev_native)
    return RMAOP_OK;
  for (int i = 0; i < n; ++i)
    if (t[i].count > INT_MAX || (at_src ? t[i].src_offset : t[i].dst_offset) > INT_MAX) return RMAOP_OK;
  int *len = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)n, sizeof(int), "twosided indexed type", (void **)&len));
  int *disp = len + n;
  for (int i = 0; i < n; ++i) {
    len[i] = (int)t[i].count;
    disp[i] = (int)(at_src ? t[i].src_offset : t[i].dst_offset);
  }
  rmaop_status st = RMAOP_OK;
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Type_indexed(n, len, disp, elem_type(plan->dtype), out), st, done);
  RMAOP_CHECK_MPI_GOTO(ctx, MPI_Type_commit(out), st, done);
done:
  free(len);
  return st;
}

/* An all-to-all plan's counts and displacements for MPI_Ialltoallv, and whether the plan runs as that collective:
 * every rank's fit an int and some rank sends to another (one bounded agreement, which also agrees on `local`, so
 * a rank that failed before it never leaves the others waiting). */
static rmaop_status coll_setup(rmaop_plan plan, ts_plan *t, rmaop_status local) {
  rmaop_ctx ctx = plan->ctx;
  const int P = ctx->size;
  if (local == RMAOP_OK)
    local = rmaop__calloc(ctx, 5 * (size_t)P, sizeof(int), "twosided all-to-all counts", (void **)&t->a2a);
  int fits = local == RMAOP_OK;
  if (fits) {
    int *sc = t->a2a, *sd = sc + P, *rc = sc + 2 * P, *rdd = sc + 3 * P, *rds = sc + 4 * P;
    for (int k = 0; k < plan->nsend_peers && fits; ++k) {
      const int q = plan->send_peers[k], i = plan->send_peer_first[k];
      const rmaop_transfer *tr = &plan->send[i];
      fits = plan->send_peer_first[k + 1] == i + 1 && tr->count <= INT_MAX && tr->src_offset <= INT_MAX;
      sc[q] = (int)tr->count, sd[q] = (int)tr->src_offset;
    }
    for (int k = 0; k < plan->nrecv_peers && fits; ++k) {
      const int q = plan->recv_peers[k], i = plan->recv_peer_first[k];
      const rmaop_transfer *tr = &plan->recv[i];
      fits = plan->recv_peer_first[k + 1] == i + 1 && tr->count <= INT_MAX && tr->dst_offset <= INT_MAX &&
             plan->recv_peer_disp[k] <= INT_MAX;
      rc[q] = (int)tr->count, rdd[q] = (int)tr->dst_offset, rds[q] = (int)plan->recv_peer_disp[k];
    }
  }
  int v[3] = {local != RMAOP_OK, !fits, plan->nsend_peers + plan->nrecv_peers > 0}, r[3];
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, v, r, 3, MPI_INT, MPI_MAX, "twosided all-to-all set-up"));
  if (local != RMAOP_OK) return local;
  if (r[0]) return RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "twosided all-to-all set-up failed on another rank; its message says why");
  t->coll = !r[1] && r[2];
  return RMAOP_OK;
}

static rmaop_status ts_plan_setup(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  ts_ctx *c = ctx->backend_data;
  const int nr = plan->nrecv_peers, ns = plan->nsend_peers;
  ts_plan *t = NULL;
  rmaop_status made = rmaop__calloc(ctx, 1, sizeof *t, "twosided plan", (void **)&t);
  if (made != RMAOP_OK) /* the other ranks are in the all-to-all agreement: failed there, not left waiting */
    return plan->alltoall ? coll_setup(plan, &(ts_plan){0}, made) : made;
  plan->backend_data = t;
  t->coll_req[0] = t->coll_req[1] = MPI_REQUEST_NULL;
  /* Numbered before anything can fail, so every rank's counter stays in step. */
  t->tag = TAG_PLAN_BASE + (int)(c->plan_seq++ % TAG_PLAN_SPAN);
  /* First: the all-to-all agreement is collective, and every rank must reach it whatever fails below. */
  rmaop_status st = plan->alltoall ? coll_setup(plan, t, RMAOP_OK) : RMAOP_OK;
  if (st != RMAOP_OK) {
    ts_plan_free(plan);
    return st;
  }

  const size_t n = (size_t)nr + 2 * (size_t)ns;
  /* One more: wait_all's slot for the context's abort receive. */
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, n + 1, sizeof(MPI_Request), "twosided requests", (void **)&t->req), st, err);
  for (size_t i = 0; i <= n; ++i)
    t->req[i] = MPI_REQUEST_NULL;
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, n ? n : 1, sizeof(MPI_Status), "twosided statuses", (void **)&t->stat), st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, nr ? (size_t)nr : 1, sizeof(ts_msg), "twosided receive types", (void **)&t->rmsg),
                   st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, ns ? (size_t)ns : 1, sizeof(ts_msg), "twosided send types", (void **)&t->smsg),
                   st, err);
  RMAOP_CHECK_GOTO(
      rmaop__calloc(ctx, ns ? (size_t)ns : 1, sizeof(int64_t), "twosided pack offsets", (void **)&t->pack_disp), st,
      err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, ns ? (size_t)ns : 1, sizeof(int), "twosided send kinds", (void **)&t->persistent),
                   st, err);

  /* Receive staging and one persistent receive per origin. */
  plan->dev_native = ctx->memory == RMAOP_MEMORY_DEVICE && ctx->mpi_cuda_aware;
  RMAOP_CHECK_GOTO(buf_alloc(plan, (size_t)plan->recv_total, "twosided receive staging", &t->staging), st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, nr ? (size_t)nr : 1, sizeof(MPI_Request), "twosided receives", (void **)&t->rpers),
                   st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, nr ? (size_t)nr : 1, 1, "twosided direct flags", (void **)&t->one), st, err);
  for (int k = 0; k < nr; ++k) t->rpers[k] = MPI_REQUEST_NULL;
  for (int k = 0; k < nr; ++k) {
    RMAOP_CHECK_GOTO(msg_make(ctx, plan->dtype, plan->recv_peer_count[k], &t->rmsg[k]), st, err);
    void *buf = (char *)t->staging + (size_t)plan->recv_peer_disp[k] * plan->esize;
    RMAOP_CHECK_MPI_GOTO(
        ctx, MPI_Recv_init(buf, t->rmsg[k].count, t->rmsg[k].type, plan->recv_peers[k], t->tag, ctx->comm, &t->rpers[k]),
        st, err);
    t->one[k] = plan->recv_peer_first[k + 1] - plan->recv_peer_first[k] == 1;
  }
  RMAOP_CHECK_GOTO(rmaop__plan_dst_disjoint(plan, &t->disjoint), st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, nr ? (size_t)nr : 1, sizeof(MPI_Datatype), "twosided receive types",
                                 (void **)&t->rtype), st, err);
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, nr ? (size_t)nr : 1, 1, "twosided in-place flags", (void **)&t->in_place), st, err);
  for (int k = 0; k < nr; ++k) t->rtype[k] = MPI_DATATYPE_NULL;
  for (int k = 0; k < nr && t->disjoint; ++k)
    if (!t->one[k])
      RMAOP_CHECK_GOTO(indexed_type(plan, &plan->recv[plan->recv_peer_first[k]],
                                    plan->recv_peer_first[k + 1] - plan->recv_peer_first[k], 0, &t->rtype[k]), st, err);

  /* Peers with several transfers get a slot in the pack buffer and a persistent send from it; peers
   * with one transfer are sent straight from the user's src, whose address is known only at begin. */
  RMAOP_CHECK_GOTO(rmaop__calloc(ctx, ns ? (size_t)ns : 1, sizeof(MPI_Datatype), "twosided send types",
                                 (void **)&t->stype), st, err);
  for (int k = 0; k < ns; ++k) t->stype[k] = MPI_DATATYPE_NULL;
  int64_t packed = 0;
  for (int k = 0; k < ns; ++k) {
    int ntr = plan->send_peer_first[k + 1] - plan->send_peer_first[k];
    /* An indexed type sends the transfers straight from src; packing is the fallback (and the only way on
     * device memory, indexed_type). */
    if (ntr > 1)
      RMAOP_CHECK_GOTO(indexed_type(plan, &plan->send[plan->send_peer_first[k]], ntr, 1, &t->stype[k]), st, err);
    const int pack = ntr > 1 && t->stype[k] == MPI_DATATYPE_NULL;
    t->pack_disp[k] = pack ? packed : -1;
    if (pack)
      packed += plan->send_peer_count[k];
  }
  if (packed > 0)
    RMAOP_CHECK_GOTO(buf_alloc(plan, (size_t)packed, "twosided pack buffer", &t->pack), st, err);
  for (int k = 0; k < ns; ++k) {
    RMAOP_CHECK_GOTO(msg_make(ctx, plan->dtype, plan->send_peer_count[k], &t->smsg[k]), st, err);
    if (t->pack_disp[k] < 0)
      continue;
    void *buf = (char *)t->pack + (size_t)t->pack_disp[k] * plan->esize;
    RMAOP_CHECK_MPI_GOTO(
        ctx,
        MPI_Send_init(buf, t->smsg[k].count, t->smsg[k].type, plan->send_peers[k], t->tag, ctx->comm, &t->req[nr + k]),
        st, err);
    t->persistent[k] = 1;
  }

  int64_t send_elems = 0;
  for (int k = 0; k < ns; ++k)
    send_elems += plan->send_peer_count[k];
  plan->trace_messages = (uint64_t)ns;
  plan->trace_bytes_per_message = ns ? (double)send_elems * (double)plan->esize / ns : 0.0;
  plan->trace_transport = "-";
  return RMAOP_OK;

err:
  ts_plan_free(plan);
  return st;
}

static inline void *elem_ptr(const rmaop_plan plan, const void *base, int64_t offset) {
  return (char *)base + (size_t)offset * plan->esize;
}

/* A local failure in begin must not leave a neighbor waiting: every receive is posted (so no sender
 * blocks), every send peer not yet served gets an empty message (so its rmaop_plan_end reports
 * RMAOP_ERR_REMOTE naming this rank), and everything is drained before the error is returned. */
static rmaop_status begin_failed(rmaop_plan plan, rmaop_status st, int nrecv_started, int nsend_started) {
  rmaop_ctx ctx = plan->ctx;
  ts_plan *t = plan->backend_data;
  const int nr = plan->nrecv_peers, ns = plan->nsend_peers;
  for (int k = nrecv_started; k < nr; ++k) {
    t->req[k] = t->rpers[k]; /* the staged receive: matching is all that matters here */
    t->in_place[k] = 0;
    if (MPI_Start(&t->req[k]) != MPI_SUCCESS)
      break; /* nothing better to do: the wait below times out */
  }
  /* Persistent sends never started are inactive, which wait_all's MPI_Testsome would wait for forever: out of
   * its view while it drains. */
  MPI_Request unstarted[ns > 0 ? ns : 1];
  for (int k = nsend_started; k < ns; ++k) {
    MPI_Isend(NULL, 0, MPI_BYTE, plan->send_peers[k], t->tag, ctx->comm, &t->req[nr + ns + k]);
    unstarted[k] = t->req[nr + k];
    t->req[nr + k] = MPI_REQUEST_NULL;
  }
  rmaop__error_hold(ctx, 1); /* the first failure is the one to report */
  (void)wait_all(ctx, nr + 2 * ns, nr, plan->recv_peers, t->req, t->stat, "twosided plan (draining after a failure)");
  rmaop__error_hold(ctx, 0);
  for (int k = nsend_started; k < ns; ++k)
    t->req[nr + k] = unstarted[k];
  return st;
}

/* Every other rank of the context learns that this one gave up (each wait of theirs polls for such notes). */
static void abort_all(rmaop_ctx ctx) {
  for (int p = 0; p < ctx->size; ++p)
    send_abort(ctx, 1, &p);
}

/* Whether this execution of an all-to-all receives straight into dst (else into the staging). */
static int coll_into_dst(rmaop_plan plan, const ts_plan *t) {
  const int dst_reachable = plan->ctx->memory == RMAOP_MEMORY_HOST || plan->dev_native;
  return plan->cur_mode == RMAOP_INSERT && t->disjoint && dst_reachable;
}

static rmaop_status coll_begin(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  ts_plan *t = plan->backend_data;
  const int P = ctx->size, into_dst = coll_into_dst(plan, t);
  const int *sc = t->a2a, *sd = sc + P, *rc = sc + 2 * P, *rd = sc + (into_dst ? 3 : 4) * P;
  const void *src = plan->cur_src;
  /* MPI reads src and may write dst on the GPU: the kernels that make or still read them must be done. */
  rmaop_status st = plan->dev_native ? rmaop__dev_sync(ctx) : RMAOP_OK;
  if (st == RMAOP_OK && plan->nsend_peers > 0 && (src = rmaop__plan_send_src(plan)) == NULL) st = RMAOP_ERR_CUDA;
  if (st == RMAOP_OK) {
    const MPI_Datatype type = elem_type(plan->dtype);
    const int e = MPI_Ialltoallv(src, sc, sd, type, into_dst ? plan->cur_dst : t->staging, rc, rd, type, ctx->comm,
                                 &t->coll_req[0]);
    if (e == MPI_SUCCESS) return RMAOP_OK;
    st = rmaop__mpi_error(ctx, e, __FILE__, __LINE__, "MPI_Ialltoallv(all-to-all plan)");
  }
  /* The others are in (or on their way into) the collective this rank cannot join: they are told, and fail at
   * once with RMAOP_ERR_REMOTE naming this rank instead of waiting for the timeout. */
  char why[sizeof ctx->last_error];
  snprintf(why, sizeof why, "%s", ctx->last_error);
  abort_all(ctx);
  return RMAOP_FAIL(ctx, st, "plan \"%s\": this rank could not join the all-to-all and told its peers: %s",
                    plan->label, why);
}

static rmaop_status coll_end(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  ts_plan *t = plan->backend_data;
  rmaop_status st = wait_all(ctx, 1, 0, NULL, t->coll_req, t->stat, "twosided all-to-all (MPI_Ialltoallv)");
  if (st == RMAOP_ERR_TIMEOUT || st == RMAOP_ERR_REMOTE) abort_all(ctx); /* every rank is in the collective */
  RMAOP_CHECK(st);
  const int into_dst = coll_into_dst(plan, t);
  for (int k = 0; k < plan->nrecv_peers; ++k) t->in_place[k] = (unsigned char)into_dst;
  const rmaop__unpack_from from = {.staging = t->staging, .skip = t->in_place};
  return rmaop__plan_unpack(plan, &from);
}

static rmaop_status ts_plan_begin(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  ts_plan *t = plan->backend_data;
  if (t->coll) return coll_begin(plan);
  const int nr = plan->nrecv_peers, ns = plan->nsend_peers;
  int rc = MPI_SUCCESS, k = 0;
  const void *src = plan->cur_src;
  if (plan->dev_native && ns > 0) {
    rmaop_status ds = rmaop__dev_sync(ctx); /* MPI reads src on the GPU: its producers must be done */
    if (ds != RMAOP_OK) return begin_failed(plan, ds, 0, 0);
  }
  if (ns > 0 && (src = rmaop__plan_send_src(plan)) == NULL) return begin_failed(plan, RMAOP_ERR_CUDA, 0, 0);

  /* Receives first, so that early senders find them posted. */
  for (k = 0; k < nr; ++k) {
    t->in_place[k] = (unsigned char)direct(t, plan, k);
    if (t->in_place[k] && t->one[k]) {
      const rmaop_transfer *tr = &plan->recv[plan->recv_peer_first[k]];
      rc = MPI_Irecv(elem_ptr(plan, plan->cur_dst, tr->dst_offset), t->rmsg[k].count, t->rmsg[k].type,
                     plan->recv_peers[k], t->tag, ctx->comm, &t->req[k]);
    } else if (t->in_place[k]) {
      rc = MPI_Irecv(plan->cur_dst, 1, t->rtype[k], plan->recv_peers[k], t->tag, ctx->comm, &t->req[k]);
    } else {
      t->req[k] = t->rpers[k];
      rc = MPI_Start(&t->req[k]);
    }
    if (rc != MPI_SUCCESS)
      return begin_failed(plan, rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Start(plan receive)"), k, 0);
  }

  for (k = 0; k < ns; ++k) {
    const int first = plan->send_peer_first[k], last = plan->send_peer_first[k + 1];
    MPI_Request *r = &t->req[nr + k];
    if (t->persistent[k]) {
      int64_t at = t->pack_disp[k];
      for (int j = first; j < last; ++j) {
        const rmaop_transfer *tr = &plan->send[j];
        if (tr->count > 0 && !plan->dev_native)
          rmaop__host_apply(plan->dtype, elem_ptr(plan, t->pack, at), elem_ptr(plan, src, tr->src_offset), tr->count,
                            RMAOP_INSERT);
        if (tr->count > 0 && plan->dev_native) {
          rmaop_status ds = rmaop__dev_copy(ctx, elem_ptr(plan, t->pack, at), elem_ptr(plan, src, tr->src_offset),
                                            (size_t)tr->count * plan->esize);
          if (ds == RMAOP_OK && j + 1 == last) ds = rmaop__dev_sync(ctx);
          if (ds != RMAOP_OK) return begin_failed(plan, ds, nr, k);
        }
        at += tr->count;
      }
      rc = MPI_Start(r);
    } else if (t->stype[k] != MPI_DATATYPE_NULL) {
      rc = MPI_Isend(src, 1, t->stype[k], plan->send_peers[k], t->tag, ctx->comm, r);
    } else {
      const void *buf = plan->send_peer_count[k] > 0 ? elem_ptr(plan, src, plan->send[first].src_offset) : NULL;
      rc = MPI_Isend(buf, t->smsg[k].count, t->smsg[k].type, plan->send_peers[k], t->tag, ctx->comm, r);
    }
    if (rc != MPI_SUCCESS)
      return begin_failed(plan, rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Isend/MPI_Start(plan send)"), nr, k);
  }
  return RMAOP_OK;
}

static rmaop_status ts_plan_end(rmaop_plan plan) {
  rmaop_ctx ctx = plan->ctx;
  ts_plan *t = plan->backend_data;
  if (t->coll) return coll_end(plan);
  const int nr = plan->nrecv_peers, ns = plan->nsend_peers;
  rmaop_status st = wait_all(ctx, nr + 2 * ns, nr, plan->recv_peers, t->req, t->stat, "twosided plan execution");
  if (st == RMAOP_ERR_TIMEOUT || st == RMAOP_ERR_REMOTE) { /* the peers of this exchange learn at once */
    send_abort(ctx, nr, plan->recv_peers);
    send_abort(ctx, ns, plan->send_peers);
  }
  RMAOP_CHECK(st);

  /* A short message is a peer's failure note (see begin_failed): its own message says why. */
  for (int k = 0; k < nr; ++k) {
    int got = 0;
    /* A message received through the indexed type is complete when it filled exactly one of it. */
    const int indexed = t->in_place[k] && !t->one[k];
    RMAOP_CHECK_MPI(ctx, MPI_Get_count(&t->stat[k], indexed ? t->rtype[k] : t->rmsg[k].type, &got));
    if (got != (indexed ? 1 : t->rmsg[k].count)) /* a peer gave up in the middle: the context failed */
      return RMAOP_FAIL(ctx, RMAOP_ERR_REMOTE,
                         "plan \"%s\": rank %d sent %d of %d item(s) (%lld elements expected); it failed in "
                         "rmaop_plan_begin and its message says why",
                         plan->label ? plan->label : "plan", plan->recv_peers[k], got, t->rmsg[k].count,
                         (long long)plan->recv_peer_count[k]);
  }
  /* Origins received straight into dst are already in place. */
  const rmaop__unpack_from from = {.staging = t->staging, .skip = t->in_place};
  return rmaop__plan_unpack(plan, &from);
}

/* ---- reductions ---------------------------------------------------------------------------------- */

/* MPI works on the request's own buffers, not the caller's: after a timeout the collective stays active (it
 * cannot be cancelled) and a rank that comes later completes it into them, so they are leaked with it. */
typedef struct {
  MPI_Request req;
  double *out;  /* the caller's */
  int count;
  double buf[]; /* [2 count]: in, out */
} ts_reduce;

static MPI_Op mpi_op(rmaop_redop op) {
  return op == RMAOP_SUM ? MPI_SUM : op == RMAOP_MAX ? MPI_MAX : op == RMAOP_MIN ? MPI_MIN : MPI_OP_NULL;
}

static rmaop_status ts_reduce_begin(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op,
                                    void **preq) {
  RMAOP_REQUIRE_INT(ctx, count, "twosided reduction count");
  const MPI_Op mop = mpi_op(op);
  RMAOP_REQUIRE(ctx, mop != MPI_OP_NULL, RMAOP_ERR_ARG, "reduction operation %d is not SUM, MAX or MIN", (int)op);
  ts_reduce *r = NULL;
  RMAOP_CHECK(rmaop__malloc(ctx, sizeof *r + 2 * (size_t)count * sizeof(double), "twosided reduction request",
                            (void **)&r));
  r->out = out, r->count = (int)count;
  memcpy(r->buf, in, (size_t)count * sizeof(double));
  int rc = MPI_Iallreduce(r->buf, r->buf + count, (int)count, MPI_DOUBLE, mop, ctx->comm, &r->req);
  if (rc != MPI_SUCCESS) {
    free(r);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Iallreduce");
  }
  *preq = r;
  return RMAOP_OK;
}

static rmaop_status ts_reduce_end(rmaop_ctx ctx, void *preq) {
  ts_reduce *r = preq;
  if (!r)
    return RMAOP_OK;
  MPI_Status stat;
  MPI_Request req[2] = {r->req, MPI_REQUEST_NULL};
  rmaop_status st = wait_all(ctx, 1, 0, NULL, req, &stat, "MPI_Iallreduce (wait)");
  r->req = req[0];
  if (st == RMAOP_ERR_TIMEOUT || st == RMAOP_ERR_REMOTE)
    for (int p = 0; p < ctx->size; ++p) /* every rank takes part in a reduction */
      send_abort(ctx, 1, &p);
  if (st == RMAOP_OK)
    memcpy(r->out, r->buf + r->count, (size_t)r->count * sizeof(double));
  /* A collective that did not complete cannot be cancelled; the request is leaked rather than freed while active. */
  if (r->req == MPI_REQUEST_NULL)
    free(r);
  return st;
}

static const char *ts_reduce_transport(rmaop_ctx ctx) {
  return "-";
}

const rmaop_backend rmaop__twosided_backend = {
    .name = "twosided",
    .init = ts_init,
    .fini = ts_fini,
    .plan_setup = ts_plan_setup,
    .plan_free = ts_plan_free,
    .plan_begin = ts_plan_begin,
    .plan_end = ts_plan_end,
    .reduce_begin = ts_reduce_begin,
    .reduce_end = ts_reduce_end,
    .reduce_transport = ts_reduce_transport,
};
