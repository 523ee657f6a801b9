/* The bench problem catalog (shared by rmaop-bench and, later, rmaop-roofline). Public API only. */
#ifndef RMAOP_BENCH_PROBLEMS_H
#define RMAOP_BENCH_PROBLEMS_H

#include <rmaop/rmaop.h>

typedef struct {
  rmaop_op A;
  rmaop_vec x_true, b; /* b = A x_true */
  void *storage;       /* per-problem memory (dense blocks), freed by bench_problem_free */
  double storage_bytes; /* what the operator itself holds per rank and reads per application (0: matrix-free) */
} bench_problem;

/* Names of the problems, NULL-terminated. */
extern const char *const bench_problem_names[];

/* Builds problem `name` of size n on ctx (float64; fft2d, an n x n FFT2D, complex128; mdc, n sources and
 * receivers). Collective. derivspd (D^H D + I) is SPD: the one for CG
 * and pipelined CG; the others are least-squares problems (CGLS, LSQR). */
rmaop_status bench_problem_create(rmaop_ctx ctx, const char *name, int64_t n, bench_problem *p);
void bench_problem_free(bench_problem *p);

#endif
