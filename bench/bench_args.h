/* Strict numeric options for the bench programs: the whole string must be an integer in [lo, hi], so
 * "1e6" or "10x" are refused with the option named instead of being read as 1 or 10 (atoi's way). */
#ifndef RMAOP_BENCH_ARGS_H
#define RMAOP_BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Stores the value in @p out and returns 1; else returns 0 and, when @p say (rank 0), prints
 * "PROG: OPT VALUE: expected an integer in [lo, hi]". */
static inline int bench_int_arg(const char *prog, const char *opt, const char *s, long long lo, long long hi,
                                long long *out, int say) {
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    if (say) fprintf(stderr, "%s: %s %s: expected an integer in [%lld, %lld]\n", prog, opt, s, lo, hi);
    return 0;
  }
  *out = v;
  return 1;
}

/* For getopt loops: an int option into @p out, or *@p bad = 1 (the caller prints its usage once after the loop). */
static inline void bench_opt_int(const char *prog, const char *opt, const char *s, long long lo, long long hi, int *out,
                                 int *bad, int say) {
  long long v = 0;
  if (bench_int_arg(prog, opt, s, lo, hi, &v, say))
    *out = (int)v;
  else
    *bad = 1;
}

#endif
