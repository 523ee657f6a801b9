/* rmaop_plan_create_alltoall: an all-to-all of contiguous blocks becomes an ordinary plan (one transfer per peer
 * with a nonzero block) marked plan->alltoall, which the backends may execute as a collective (twosided:
 * MPI_Ialltoallv). Creation: the arguments are checked and agreed, the senders' counts reach the receivers, each
 * receiver checks its blocks against dst_len and each other, then tells each sender where its block lands; both
 * exchanges are MPI_Ialltoall waited for with the context's timeout. */
#include "ctx.h"
#include "error.h"
#include "plan.h"

static const char *const fn = "rmaop_plan_create_alltoall";

static int range_ok(int64_t off, int64_t count, int64_t len) {
  return off >= 0 && count >= 0 && off <= len && count <= len - off;
}

static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_alltoall_spec *spec, const rmaop_plan *out) {
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: plan (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, spec != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", fn);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(spec->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)spec->dtype);
  RMAOP_REQUIRE(ctx, spec->src_len >= 0 && spec->dst_len >= 0, RMAOP_ERR_ARG,
                "%s: negative buffer length (src_len %lld, dst_len %lld)", fn, (long long)spec->src_len,
                (long long)spec->dst_len);
  RMAOP_REQUIRE(ctx, spec->send_counts != NULL, RMAOP_ERR_ARG, "%s: send_counts is NULL", fn);
  int64_t packed = 0;
  for (int q = 0; q < ctx->size; ++q) {
    const int64_t c = spec->send_counts[q];
    RMAOP_REQUIRE(ctx, c >= 0, RMAOP_ERR_ARG, "%s: send_counts[%d] = %lld is negative", fn, q, (long long)c);
    if (spec->send_offsets) {
      RMAOP_REQUIRE(ctx, c == 0 || range_ok(spec->send_offsets[q], c, spec->src_len), RMAOP_ERR_ARG,
                    "%s: block %d (%lld elements at send_offsets[%d] = %lld) is outside this rank's src_len %lld", fn,
                    q, (long long)c, q, (long long)spec->send_offsets[q], (long long)spec->src_len);
    } else {
      RMAOP_REQUIRE(ctx, range_ok(packed, c, spec->src_len), RMAOP_ERR_ARG,
                    "%s: the blocks up to rank %d (%lld + %lld elements, packed) exceed this rank's src_len %lld", fn,
                    q, (long long)packed, (long long)c, (long long)spec->src_len);
      packed += c;
    }
  }
  return RMAOP_OK;
}

/* MPI_Ialltoall of `per` int64 per rank, waited for with the context's timeout. MPI works on heap copies, leaked
 * when the wait gives up (a rank that comes later still completes the collective into them). */
static rmaop_status exchange(rmaop_ctx ctx, const int64_t *in, int64_t *out, int per, const char *what) {
  const size_t n = (size_t)ctx->size * (size_t)per;
  int64_t *buf = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * n, sizeof *buf, "all-to-all exchange", (void **)&buf));
  memcpy(buf, in, n * sizeof *buf);
  MPI_Request req = MPI_REQUEST_NULL;
  const int rc = MPI_Ialltoall(buf, per, MPI_INT64_T, buf + n, per, MPI_INT64_T, ctx->comm, &req);
  if (rc != MPI_SUCCESS) {
    free(buf);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Ialltoall");
  }
  RMAOP_CHECK(rmaop__wait_bounded(ctx, &req, what));
  memcpy(out, buf + n, n * sizeof *out);
  free(buf);
  return RMAOP_OK;
}

typedef struct {
  int64_t off, count;
  int from;
} block;

static int by_offset(const void *a, const void *b) {
  const block *x = a, *y = b;
  if (x->off != y->off)
    return x->off < y->off ? -1 : 1;
  return (x->from > y->from) - (x->from < y->from);
}

/* Where each origin's block lands here (at[q]), checked against dst_len and against each other. */
static rmaop_status place_receives(rmaop_ctx ctx, const rmaop_alltoall_spec *spec, const int64_t *rc, int64_t *at) {
  const int P = ctx->size;
  int64_t packed = 0;
  for (int q = 0; q < P; ++q) {
    at[q] = spec->recv_offsets ? spec->recv_offsets[q] : packed;
    if (rc[q] == 0)
      continue;
    if (spec->recv_offsets)
      RMAOP_REQUIRE(ctx, range_ok(at[q], rc[q], spec->dst_len), RMAOP_ERR_ARG,
                    "%s: rank %d sends %lld elements to rank %d, whose recv_offsets[%d] = %lld puts them outside its "
                    "dst_len %lld",
                    fn, q, (long long)rc[q], ctx->rank, q, (long long)at[q], (long long)spec->dst_len);
    else
      RMAOP_REQUIRE(ctx, range_ok(packed, rc[q], spec->dst_len), RMAOP_ERR_ARG,
                    "%s: rank %d receives %lld + %lld elements (packed, up to rank %d's block), more than its dst_len "
                    "%lld",
                    fn, ctx->rank, (long long)packed, (long long)rc[q], q, (long long)spec->dst_len);
    packed += rc[q];
  }
  if (!spec->recv_offsets)
    return RMAOP_OK; /* packed blocks never overlap */
  block *b = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)P, sizeof *b, "all-to-all receive check", (void **)&b));
  int n = 0;
  for (int q = 0; q < P; ++q)
    if (rc[q] > 0)
      b[n++] = (block){at[q], rc[q], q};
  qsort(b, (size_t)n, sizeof *b, by_offset);
  rmaop_status st = RMAOP_OK;
  for (int i = 1; i < n && st == RMAOP_OK; ++i)
    if (b[i].off < b[i - 1].off + b[i - 1].count)
      st =
          RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                      "%s: on rank %d the blocks of rank %d (dst[%lld .. %lld)) and rank %d (dst[%lld .. %lld)) "
                      "overlap",
                      fn, ctx->rank, b[i - 1].from, (long long)b[i - 1].off, (long long)(b[i - 1].off + b[i - 1].count),
                      b[i].from, (long long)b[i].off, (long long)(b[i].off + b[i].count));
  free(b);
  return st;
}

/* The plan's transfers: one per nonzero block, to where the receiver placed it (dst_at[q]). */
static rmaop_status make_plan(rmaop_ctx ctx, const rmaop_alltoall_spec *spec, const int64_t *dst_at, rmaop_transfer *t,
                              rmaop_plan *out) {
  int n = 0;
  int64_t packed = 0;
  for (int q = 0; q < ctx->size; ++q) {
    const int64_t c = spec->send_counts[q], off = spec->send_offsets ? spec->send_offsets[q] : packed;
    packed += c;
    if (c > 0)
      t[n++] = (rmaop_transfer){q, off, dst_at[q], c};
  }
  const rmaop_plan_spec ps = {.dtype = spec->dtype,
                              .src_len = spec->src_len,
                              .dst_len = spec->dst_len,
                              .nsends = n,
                              .sends = t,
                              .nrecvs = -1,
                              .label = spec->label ? spec->label : "alltoall"};
  return rmaop__plan_create_marked(ctx, &ps, 1, out);
}

rmaop_status rmaop_plan_create_alltoall(rmaop_ctx ctx, const rmaop_alltoall_spec *spec, rmaop_plan *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_REQUIRE_USABLE(ctx, fn);
  RMAOP_CHECK(rmaop__agree(ctx, check_spec(ctx, spec, out), fn));
  static const char *const names[] = {"dtype"};
  const int64_t dt = spec->dtype;
  RMAOP_CHECK(rmaop__same_everywhere(ctx, &dt, 1, names, fn));
  const int P = ctx->size;
  int64_t *a = NULL; /* [4P]: counts received, where they land here, where mine land there, scratch */
  rmaop_transfer *t = NULL;
  rmaop_status st = rmaop__calloc(ctx, 4 * (size_t)P, sizeof *a, "all-to-all counts", (void **)&a);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, (size_t)P, sizeof *t, "all-to-all transfers", (void **)&t);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, fn), st, out);
  int64_t *rc = a, *here = a + P, *there = a + 2 * P;
  RMAOP_CHECK_GOTO(exchange(ctx, spec->send_counts, rc, 1, "rmaop_plan_create_alltoall (counts)"), st, out);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, place_receives(ctx, spec, rc, here), fn), st, out);
  RMAOP_CHECK_GOTO(exchange(ctx, here, there, 1, "rmaop_plan_create_alltoall (offsets)"), st, out);
  st = make_plan(ctx, spec, there, t, out);
out:
  free(a);
  free(t);
  return st;
}
