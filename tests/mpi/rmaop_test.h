/* Shared helpers of the MPI tests: context from the environment, assertions that every rank agrees on
 * (so a failing rank cannot leave the others waiting in a collective), and serial reference values.
 *
 * Every RT_* assertion is collective over MPI_COMM_WORLD: all ranks must reach it, in the same order.
 * A rank-local condition is computed first, then asserted collectively. */
#ifndef RMAOP_TEST_H
#define RMAOP_TEST_H

#include <check.h>
#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "rmaop/rmaop.h"

extern int rt_rank, rt_size;

/* MPI_Init, runs the suite (Check in no-fork mode; rank 0 prints), MPI_Finalize. Returns the exit code:
 * non-zero when any rank saw a failure. */
int rt_main(int argc, char **argv, Suite *(*make_suite)(void));

/* The context for the test, from the RMAOP_* environment (ctest sets it per entry). */
rmaop_ctx rt_ctx(void);
/* A host-memory context of the twosided backend whatever the environment (transport and ipc path auto): the
 * reference that device paths are compared with bit for bit. */
rmaop_ctx rt_host_ctx(void);
/* 1 when the tests run on device memory (RMAOP_MEMORY=device): local arrays are GPU memory then. */
int rt_device(void);
/* Arms a watchdog: after @p seconds the process writes "@p what: a rank did not return within the watchdog's N s
 * (hang)" to stderr and exits with status 3, so a hang fails fast. rt_watchdog(0, NULL) disarms it. */
void rt_watchdog(int seconds, const char *what);

/* Collective assertion: fails on every rank when `ok` is false on any rank. The failing ranks print the
 * formatted message (with their rank) to stderr; the Check message names file:line. */
void rt_check(int ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define RT_CHECK(cond, ...) rt_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Collective: `expr` returned RMAOP_OK on every rank. */
#define RT_OK(expr)                                                                                                    \
  do {                                                                                                                 \
    rmaop_status rt__s = (expr);                                                                                       \
    RT_CHECK(rt__s == RMAOP_OK, "%s -> %s: %s", #expr, rmaop_status_string(rt__s), rmaop_ctx_last_error(NULL));        \
  } while (0)

/* Collective: `expr` returned one of the statuses in `mask` (RT_BIT(s) | ...) on this rank. */
#define RT_BIT(s) (1u << (unsigned)(s))
#define RT_EXPECT(expr, mask)                                                                                          \
  do {                                                                                                                 \
    rmaop_status rt__s = (expr);                                                                                       \
    RT_CHECK((RT_BIT(rt__s) & (mask)) != 0, "%s -> %s (expected mask 0x%x): %s", #expr, rmaop_status_string(rt__s),    \
             (unsigned)(mask), rmaop_ctx_last_error(NULL));                                                            \
  } while (0)
/* The usual outcome of bad input on ONE rank of a collective call: that rank gets `local`, the others
 * RMAOP_ERR_REMOTE (or the same precise error, when they could see the problem themselves). */
#define RT_EXPECT_ON(expr, bad_rank, local)                                                                            \
  RT_EXPECT(expr, rt_rank == (bad_rank) ? RT_BIT(local) : (RT_BIT(RMAOP_ERR_REMOTE) | RT_BIT(local)))

/* Collective: the last error message of this process contains `needle`. */
#define RT_MESSAGE_HAS(needle)                                                                                         \
  RT_CHECK(strstr(rmaop_ctx_last_error(NULL), (needle)) != NULL, "message \"%s\" does not name \"%s\"",                \
           rmaop_ctx_last_error(NULL), (needle))

/* Collective: `n` bytes at `p` are identical on every rank. */
int rt_same_everywhere(const void *p, size_t n);
/* Collective: sum / min over ranks of an int. */
int rt_sum_int(int v);
int rt_all(int v);

/* ---- serial reference values ---- */

/* The test value of global index i, series s: sin(0.1 i + 0.7 s) + I cos(0.3 i + 1.3 s). Real dtypes
 * take the real part. */
double _Complex rt_value(int64_t i, int s);
/* Element i of a buffer of dtype, as double complex; and the reverse (rounded to the dtype). */
double _Complex rt_load(rmaop_dtype dtype, const void *buf, int64_t i);
void rt_store(rmaop_dtype dtype, void *buf, int64_t i, double _Complex z);
/* z rounded to the dtype (stored and loaded back). */
double _Complex rt_round(rmaop_dtype dtype, double _Complex z);
/* dst[i] += src[j] computed in the dtype's own arithmetic (what an ADD must produce bit for bit). */
void rt_add_elem(rmaop_dtype dtype, void *dst, int64_t i, const void *src, int64_t j);
/* Relative tolerance for results computed in the dtype (f32/c64: 1e-5, f64/c128: 1e-12). */
double rt_tol(rmaop_dtype dtype);
int rt_is_complex(rmaop_dtype dtype);
/* |a - b| <= tol * (scale + |b|). */
int rt_close(double _Complex a, double _Complex b, double tol, double scale);
/* A zeroed host buffer for n elements of any dtype (16 bytes each); never NULL. */
void *rt_alloc(rmaop_dtype dtype, int64_t n);

extern const rmaop_dtype rt_dtypes[4];

#endif /* RMAOP_TEST_H */
