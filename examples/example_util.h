/* What the example programs share (demo.c, mdd.c, poststack.c; halo.c, the program to copy, stands alone): a check
 * that aborts the job with the library's message, and the communication per trace site. One translation unit each:
 * the state below is the program's. */
#ifndef RMAOP_EXAMPLE_UTIL_H
#define RMAOP_EXAMPLE_UTIL_H

#include <rmaop/rmaop.h>

#include <stdio.h>

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
