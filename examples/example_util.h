/* What the example programs share (demo.c, mdd.c, poststack.c; halo.c, the program to copy, stands alone): a check
 * that aborts the job with the library's message, "--name value" options, and the communication per trace site. One translation unit each:
 * the state below is the program's. */
#ifndef RMAOP_EXAMPLE_UTIL_H
#define RMAOP_EXAMPLE_UTIL_H

#include <rmaop/rmaop.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_args.h" /* strict integer options */

static int g_rank;      /* this process's rank in MPI_COMM_WORLD, set by main */
static rmaop_ctx g_ctx; /* the context whose last error CHECK prints, set by main */

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    rmaop_status check_status_ = (call);                                                                               \
    if (check_status_ != RMAOP_OK) {                                                                                   \
      const char *check_msg_ = rmaop_ctx_last_error(g_ctx); /* starts with the status name */                          \
      fprintf(stderr, "[rank %d] %s:%d: %s: %s\n", g_rank, __FILE__, __LINE__, #call,                                  \
              check_msg_[0] ? check_msg_ : rmaop_status_string(check_status_));                                        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

/* One "--name value" option: an integer in [lo, hi] into *i64 or *i32, a finite number >= lo into *f64, or the
 * string itself into *str (exactly one of the four is set). */
typedef struct {
  const char *name;
  int64_t *i64;
  int *i32;
  double *f64;
  const char **str;
  long long lo, hi;
} example_opt;

/* Parses argv's "--name value" pairs against opts[0..n). 0, after saying which option was missing a value, unknown
 * or out of range and printing usage, on any bad one. */
static inline int example_parse(const char *me, const char *usage, int argc, char **argv, const example_opt *opts,
                                int n) {
  for (int i = 1; i < argc; i += 2) {
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    const example_opt *o = NULL;
    for (int k = 0; k < n && !o; ++k)
      if (strcmp(opt, opts[k].name) == 0) o = &opts[k];
    int ok = o != NULL && val != NULL;
    if (!o)
      fprintf(stderr, "%s: unknown option %s\n", me, opt);
    else if (!val)
      fprintf(stderr, "%s: %s needs a value\n", me, opt);
    else if (o->i64 || o->i32) {
      long long v = 0;
      ok = bench_int_arg(me, opt, val, o->lo, o->hi, &v, 1);
      if (ok && o->i64) *o->i64 = v;
      if (ok && o->i32) *o->i32 = (int)v;
    } else if (o->f64) {
      char *end = NULL;
      const double x = strtod(val, &end);
      ok = end != val && *end == '\0' && isfinite(x) && x >= (double)o->lo;
      if (ok) *o->f64 = x;
      else fprintf(stderr, "%s: %s %s: expected a finite number >= %lld\n", me, opt, val, o->lo);
    } else {
      *o->str = val;
    }
    if (!ok) {
      fputs(usage, stderr);
      return 0;
    }
  }
  return 1;
}

/* Prints rank 0's trace sites (calls, messages, bytes, time) and the bytes all ranks sent together. Collective. */
static inline void example_print_sites(rmaop_ctx ctx, int rank) {
  int n = 0;
  CHECK(rmaop_trace_count(ctx, &n));
  double total = 0.0;
  if (rank == 0)
    printf("communication per site (rank 0's view):\n  %-22s %-7s %8s %9s %14s %12s\n", "site", "kind", "calls",
           "msgs/call", "bytes/message", "time ms");
  for (int i = 0; i < n; ++i) {
    rmaop_trace_site s;
    CHECK(rmaop_trace_get(ctx, i, &s));
    total += (double)s.calls * (double)s.messages * s.bytes_per_message;
    if (rank == 0)
      printf("  %-22s %-7s %8llu %9llu %14.0f %12.3f\n", s.label, s.kind, (unsigned long long)s.calls,
             (unsigned long long)s.messages, s.bytes_per_message, 1e3 * s.time_total);
  }
  double all = 0.0;
  MPI_Reduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("communication volume: %.3f MB sent by all ranks together\n", all / 1e6);
}

#endif /* RMAOP_EXAMPLE_UTIL_H */
