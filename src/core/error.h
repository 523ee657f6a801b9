/* Errors, check macros, allocation and the small helpers every file of the library uses (src/core/error.c). */
#ifndef RMAOP_CORE_ERROR_H
#define RMAOP_CORE_ERROR_H

#ifndef __cplusplus
#include <complex.h>
#endif
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records a message (printf-style, prefixed with file:line) in ctx (may be NULL: process-wide slot)
 * and returns status. The first function that detects an error calls it; callers only propagate. */
rmaop_status rmaop__error(rmaop_ctx ctx, rmaop_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Records an MPI failure: names the call and MPI's error string. */
rmaop_status rmaop__mpi_error(rmaop_ctx ctx, int mpi_code, const char *file, int line, const char *call);

/* While held (hold = 1 ... hold = 0, nested), errors recorded on ctx keep its message: cleanup after a failure
 * (draining requests) reports the first failure, not what the cleanup met. */
void rmaop__error_hold(rmaop_ctx ctx, int hold);

#define RMAOP_ERROR(ctx, status, ...) rmaop__error((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)

/* A failed exchange. rmaop__error marks the context failed on its own for RMAOP_ERR_TIMEOUT (a wait for a peer
 * gave up); RMAOP_FAIL records an error and marks the context failed whatever the status: RMAOP_ERR_REMOTE where a
 * peer gave up in the middle of an exchange (not where ranks agreed on an argument error: that leaves every rank
 * in step). Only the first failure is kept (ctx->failure). */
rmaop_status rmaop__fail(rmaop_ctx ctx, rmaop_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define RMAOP_FAIL(ctx, status, ...) rmaop__fail((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)
/* RMAOP_ERR_STATE for the call `fn` on a failed context, quoting the failure. */
rmaop_status rmaop__state_error(rmaop_ctx ctx, const char *fn);
/* Returns RMAOP_ERR_STATE from a communicating call `fn` when its context failed earlier. */
#define RMAOP_REQUIRE_USABLE(ctx, fn)                                       \
  do {                                                                      \
    if ((ctx)->failed != RMAOP_OK) return rmaop__state_error((ctx), (fn));  \
  } while (0)

/* MPI_Allreduce bounded by the context's timeout: MPI_Iallreduce polled until done or ctx->timeout passes,
 * then RMAOP_ERR_TIMEOUT naming `what` (a rank did not call the collective), and the context is failed; the
 * request and its (internal) buffers are left pending, never freed while active. Every argument agreement and collective creation of the
 * library goes through it, so no collective call of rmaop waits forever for a rank that never comes. */
rmaop_status rmaop__allreduce_bounded(rmaop_ctx ctx, const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                                      const char *what);
/* The same with a bound of its own, in seconds: where a peer may legitimately come later than the context's timeout
 * (after a device-side wait of that timeout, for instance). */
rmaop_status rmaop__allreduce_bounded_for(rmaop_ctx ctx, const void *in, void *out, int count, MPI_Datatype type,
                                          MPI_Op op, double bound, const char *what);
/* The wait of a started nonblocking collective, bounded the same way, then a bounded MPI_Ibarrier that confirms
 * it (error.c says why: a late rank must not go on alone). On a timeout the request stays active: the caller
 * leaks the buffers it passed to MPI. */
rmaop_status rmaop__wait_bounded(rmaop_ctx ctx, MPI_Request *req, const char *what);

/* Propagates a failing status without adding a message. */
#define RMAOP_CHECK(expr)                      \
  do {                                         \
    rmaop_status rmaop__s = (expr);            \
    if (rmaop__s != RMAOP_OK) return rmaop__s; \
  } while (0)

/* Validates an argument: on failure records the message and returns status. */
#define RMAOP_REQUIRE(ctx, cond, status, ...)                          \
  do {                                                                 \
    if (!(cond)) return RMAOP_ERROR((ctx), (status), __VA_ARGS__);     \
  } while (0)

/* Runs an MPI call; on failure records "MPI_Xxx(...) failed: <MPI error string>" and returns. */
#define RMAOP_CHECK_MPI(ctx, call)                                                   \
  do {                                                                               \
    int rmaop__m = (call);                                                           \
    if (rmaop__m != MPI_SUCCESS) return rmaop__mpi_error((ctx), rmaop__m, __FILE__, __LINE__, #call); \
  } while (0)

/* Same as RMAOP_CHECK_MPI but stores the status in `st` and jumps to `label` (for cleanup paths). */
#define RMAOP_CHECK_MPI_GOTO(ctx, call, st, label)                                  \
  do {                                                                              \
    int rmaop__m = (call);                                                          \
    if (rmaop__m != MPI_SUCCESS) {                                                  \
      (st) = rmaop__mpi_error((ctx), rmaop__m, __FILE__, __LINE__, #call);          \
      goto label;                                                                   \
    }                                                                               \
  } while (0)

#define RMAOP_CHECK_GOTO(expr, st, label) \
  do {                                    \
    (st) = (expr);                        \
    if ((st) != RMAOP_OK) goto label;     \
  } while (0)

/* Collective agreement on failure: every rank passes its local status; returns the local status on a
 * failing rank, RMAOP_ERR_REMOTE (with a message naming the failed ranks' count and `where`) on ranks
 * that were fine while another failed, RMAOP_OK when all succeeded. One MPI_Allreduce. */
rmaop_status rmaop__agree(rmaop_ctx ctx, rmaop_status local, const char *where);
/* The same in one phase (no confirming barrier: 0.3 us less at 2 ranks), for calls that go on only into waits that
 * are themselves bounded (the reductions), where a late rank whose agreement completed then times out instead of
 * going on alone into a blocking MPI call. */
rmaop_status rmaop__agree_unconfirmed(rmaop_ctx ctx, rmaop_status local, const char *where);
/* 1 when a * b elements of 16 bytes (the largest dtype) fit in 64-bit byte counts (a, b >= 0). */
static inline int rmaop__fits(int64_t a, int64_t b) {
  int64_t p;
  return !__builtin_mul_overflow(a, b, &p) && !__builtin_mul_overflow(p, (int64_t)16, &p);
}
/* Part c of n elements split over p parts as rmaop_layout_create splits (the first n mod p parts one more). */
static inline void rmaop__split(int64_t n, int64_t p, int64_t c, int64_t *off, int64_t *len) {
  const int64_t base = n / p, extra = n % p;
  *len = base + (c < extra);
  *off = c * base + (c < extra ? c : extra);
}
/* Collective: the n values v[i] (named names[i]) are the same on every rank; else RMAOP_ERR_ARG on every
 * rank naming the first that differs and its range ("fn: dims[1] differs between ranks (from 8 to 9)").
 * Creators of operators whose ranks compute each other's parts from the arguments call it, since a
 * mismatch would move data to the wrong place without any error. n <= 32. */
rmaop_status rmaop__same_everywhere(rmaop_ctx ctx, const int64_t *v, int n, const char *const names[], const char *fn);

/* Narrowing for MPI counts. */
#define RMAOP_REQUIRE_INT(ctx, v, what) \
  RMAOP_REQUIRE(ctx, (v) >= 0 && (v) <= INT_MAX, RMAOP_ERR_ARG, "%s = %lld does not fit an MPI count (int)", (what), (long long)(v))

/* Allocation helpers: record RMAOP_ERR_NOMEM naming what was allocated. */
rmaop_status rmaop__malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out);
rmaop_status rmaop__calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out);

double rmaop__wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_ERROR_H */
