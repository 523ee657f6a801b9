/* Error recording: the function that first detects an error records the message; callers only
 * propagate the status (UCX docs/CodeStyle.md). */
#include "error.h"
#include "ctx.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>

/* Process-wide copy of the latest message, for failures where no context exists (rmaop_ctx_create).
 * Like errno-style globals it is not thread-safe; rmaop objects are not to be shared between threads. */
static char process_last_error[1024];

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static rmaop_status record(rmaop_ctx ctx, rmaop_status status, int fails, const char *file, int line, const char *fmt,
                           va_list ap) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  snprintf(process_last_error, sizeof process_last_error, "%s: %s [%s:%d]", rmaop_status_string(status), msg,
           base_name(file), line);
  if (ctx && !ctx->error_held) memcpy(ctx->last_error, process_last_error, sizeof ctx->last_error);
  if (ctx && fails && ctx->failed == RMAOP_OK) {
    ctx->failed = status;
    const size_t n = strnlen(process_last_error, sizeof ctx->failure - 1); /* the start says what and where */
    memcpy(ctx->failure, process_last_error, n);
    ctx->failure[n] = '\0';
  }
  return status;
}

rmaop_status rmaop__error(rmaop_ctx ctx, rmaop_status status, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* Every timeout is a wait for a peer that gave up: the peers' epochs are unknown from here on. */
  record(ctx, status, status == RMAOP_ERR_TIMEOUT, file, line, fmt, ap);
  va_end(ap);
  return status;
}

rmaop_status rmaop__fail(rmaop_ctx ctx, rmaop_status status, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(ctx, status, 1, file, line, fmt, ap);
  va_end(ap);
  return status;
}

rmaop_status rmaop__state_error(rmaop_ctx ctx, const char *fn) {
  return RMAOP_ERROR(ctx, RMAOP_ERR_STATE,
                     "%s: the context failed in an earlier call and must be destroyed (rmaop_ctx_destroy on every "
                     "rank; create a new one to go on). The failure: %s",
                     fn, ctx->failure);
}

void rmaop__error_hold(rmaop_ctx ctx, int hold) {
  ctx->error_held += hold ? 1 : -1;
}

rmaop_status rmaop__mpi_error(rmaop_ctx ctx, int mpi_code, const char *file, int line, const char *call) {
  char mpi_msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpi_code, mpi_msg, &len) != MPI_SUCCESS) snprintf(mpi_msg, sizeof mpi_msg, "code %d", mpi_code);
  return rmaop__error(ctx, RMAOP_ERR_MPI, file, line, "%s failed: %s", call, mpi_msg);
}

const char *rmaop_ctx_last_error(rmaop_ctx ctx) { return ctx ? ctx->last_error : process_last_error; }

const char *rmaop_status_string(rmaop_status status) {
  switch (status) {
  case RMAOP_OK: return "RMAOP_OK";
  case RMAOP_ERR_ARG: return "RMAOP_ERR_ARG";
  case RMAOP_ERR_MPI: return "RMAOP_ERR_MPI";
  case RMAOP_ERR_CUDA: return "RMAOP_ERR_CUDA";
  case RMAOP_ERR_NCCL: return "RMAOP_ERR_NCCL";
  case RMAOP_ERR_UNSUPPORTED: return "RMAOP_ERR_UNSUPPORTED";
  case RMAOP_ERR_NOMEM: return "RMAOP_ERR_NOMEM";
  case RMAOP_ERR_TIMEOUT: return "RMAOP_ERR_TIMEOUT";
  case RMAOP_ERR_REMOTE: return "RMAOP_ERR_REMOTE";
  case RMAOP_ERR_INTERNAL: return "RMAOP_ERR_INTERNAL";
  case RMAOP_ERR_STATE: return "RMAOP_ERR_STATE";
  }
  return "RMAOP_ERR_(unknown)";
}

/* Polls one request until done or `bound` seconds pass. */
static rmaop_status poll_bounded(rmaop_ctx ctx, MPI_Request *req, double bound, const char *what, const char *step) {
  double deadline = 0.0;
  for (unsigned spin = 0;; ++spin) {
    int done = 0;
    RMAOP_CHECK_MPI(ctx, MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return RMAOP_OK;
    if (spin < 256 || (spin & 63) != 63) continue; /* the first polls are tight: the peers are usually there */
    const double now = rmaop__wtime();
    if (deadline == 0.0)
      deadline = now + bound;
    if (now > deadline)
      return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                         "%s: not every rank of the context %s within %.1f s (RMAOP_TIMEOUT %.1f s); a rank did not "
                         "call it, is stuck elsewhere, or gave up on it",
                         what, step, bound, ctx->timeout);
    sched_yield(); /* ranks may outnumber cores */
  }
}

/* Two phases, as the window handshakes (rma/epoch.c, sync_all): a rank whose first wait gave up never enters the
 * second, so a rank that comes late, whose first collective then completes with the parts the others left pending,
 * times out in the second instead of going on alone into the blocking MPI calls that follow an agreement. A rank
 * that saw the first complete enters the second at once, so either every rank completes it or none does. */
static rmaop_status wait_bounded(rmaop_ctx ctx, MPI_Request *req, double bound, const char *what, int confirm) {
  RMAOP_CHECK(poll_bounded(ctx, req, bound, what, "joined its collective step"));
  if (!confirm) return RMAOP_OK;
  MPI_Request commit = MPI_REQUEST_NULL;
  RMAOP_CHECK_MPI(ctx, MPI_Ibarrier(ctx->comm, &commit));
  return poll_bounded(ctx, &commit, bound, what, "confirmed its collective step");
}

rmaop_status rmaop__wait_bounded(rmaop_ctx ctx, MPI_Request *req, const char *what) {
  return wait_bounded(ctx, req, ctx->timeout, what, 1);
}

static rmaop_status allreduce_bounded(rmaop_ctx ctx, const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                                      double bound, const char *what, int confirm) {
  /* The buffers MPI holds are on the heap and leaked on a timeout: a rank that comes later completes the
   * collective into them, long after the caller's (stack) buffers are gone. */
  int size = 0;
  RMAOP_CHECK_MPI(ctx, MPI_Type_size(type, &size));
  const size_t bytes = (size_t)count * (size_t)size;
  char *buf = NULL;
  RMAOP_CHECK(rmaop__malloc(ctx, 2 * bytes + 1, "bounded collective buffers", (void **)&buf));
  memcpy(buf, in, bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Iallreduce(buf, buf + bytes, count, type, op, ctx->comm, &req);
  if (rc != MPI_SUCCESS) {
    free(buf);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Iallreduce");
  }
  RMAOP_CHECK(wait_bounded(ctx, &req, bound, what, confirm)); /* leaks buf on a timeout, on purpose */
  memcpy(out, buf + bytes, bytes);
  free(buf);
  return RMAOP_OK;
}

rmaop_status rmaop__allreduce_bounded(rmaop_ctx ctx, const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                                      const char *what) {
  return allreduce_bounded(ctx, in, out, count, type, op, ctx->timeout, what, 1);
}

rmaop_status rmaop__allreduce_bounded_for(rmaop_ctx ctx, const void *in, void *out, int count, MPI_Datatype type,
                                          MPI_Op op, double bound, const char *what) {
  return allreduce_bounded(ctx, in, out, count, type, op, bound, what, 1);
}

static rmaop_status agree(rmaop_ctx ctx, rmaop_status local, const char *where, int confirm) {
  /* A failed context communicates no more: every collective call that agrees on its arguments stops here. */
  RMAOP_REQUIRE_USABLE(ctx, where);
  int bad = local != RMAOP_OK, nbad = 0;
  RMAOP_CHECK(allreduce_bounded(ctx, &bad, &nbad, 1, MPI_INT, MPI_SUM, ctx->timeout, where, confirm));
  if (local != RMAOP_OK) return local;
  if (nbad > 0)
    return RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "%s failed on %d other rank(s); their error messages say why", where,
                       nbad);
  return RMAOP_OK;
}

rmaop_status rmaop__agree(rmaop_ctx ctx, rmaop_status local, const char *where) {
  return agree(ctx, local, where, 1);
}

rmaop_status rmaop__agree_unconfirmed(rmaop_ctx ctx, rmaop_status local, const char *where) {
  return agree(ctx, local, where, 0);
}

rmaop_status rmaop__same_everywhere(rmaop_ctx ctx, const int64_t *v, int n, const char *const names[], const char *fn) {
  enum { MAXV = 32 };
  RMAOP_REQUIRE_USABLE(ctx, fn);
  RMAOP_REQUIRE(ctx, n >= 0 && n <= MAXV, RMAOP_ERR_INTERNAL, "%s: %d values to compare (at most %d)", fn, n, MAXV);
  int64_t mine[2 * MAXV] = {0}, r[2 * MAXV]; /* max of v and of -v: both ends of every value's range */
  for (int i = 0; i < n; ++i) mine[i] = v[i], mine[n + i] = v[i] == INT64_MIN ? INT64_MAX : -v[i];
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, mine, r, 2 * n, MPI_INT64_T, MPI_MAX, fn));
  for (int i = 0; i < n; ++i)
    RMAOP_REQUIRE(ctx, r[i] == -r[n + i], RMAOP_ERR_ARG, "%s: %s differs between ranks (from %lld to %lld)", fn, names[i],
                  (long long)-r[n + i], (long long)r[i]);
  return RMAOP_OK;
}

rmaop_status rmaop__malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out) {
  void *p = NULL;
  /* 64-byte alignment: cache lines, and vector loads in the kernels. */
  if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
    return RMAOP_ERROR(ctx, RMAOP_ERR_NOMEM, "cannot allocate %zu bytes for %s", bytes, what);
  *out = p;
  return RMAOP_OK;
}

rmaop_status rmaop__calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out) {
  if (size && n > SIZE_MAX / size)
    return RMAOP_ERROR(ctx, RMAOP_ERR_NOMEM, "%zu x %zu bytes for %s overflow size_t", n, size, what);
  RMAOP_CHECK(rmaop__malloc(ctx, n * size, what, out));
  memset(*out, 0, n * size > 0 ? n * size : 1);
  return RMAOP_OK;
}

double rmaop__wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
