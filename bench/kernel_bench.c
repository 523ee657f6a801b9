/* rmaop-kernel-bench: the building blocks of one CGLS iteration, each timed alone on the context's memory
 * (RMAOP_MEMORY=host|device, RMAOP_BACKEND, ...), so a solver's gap to its streaming bound can be traced
 * to the operation that causes it.
 *
 *   mpiexec -n P rmaop-kernel-bench [--problem deriv1d] [--n N] [--reps R]
 *
 * Each operation runs R times after two warm-ups; every repetition starts after an MPI_Barrier and ends
 * when rmaop_ctx_synchronize says the GPU stream is done; the slowest rank counts (MPI_MAX) and the
 * median is printed with the bytes the operation must move (this rank's vectors, 8 B per float64) and
 * the resulting GB/s. rmaop_vec_copy is the reference: its GB/s is what a pure stream reaches here.
 * With a trace on (RMAOP_TRACE=1, or RMAOP_TRACE=sync for device memory, where only the synchronized trace times
 * the stream's transfers) it then prints every communication site: calls and the median time inside per call,
 * so an operator's time splits into its communication and the rest (fft2d: the redistributions' share).
 * Uses only the public API. */
#include "bench_args.h"
#include "problems.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  bench_problem p;
  rmaop_vec x, c, q, s, r;
  int64_t m, d; /* local elements of the model and data vectors */
  double es;    /* bytes per element (the problem's dtype) */
} blocks;

enum { OP_COPY, OP_AXPY, OP_AXPBY, OP_MDOT, OP_DOT, OP_APPLY, OP_ADJOINT, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"copy  c -> r", "axpy  x += a c", "axpby c = r + b c",
                                               "mdot  q.q, c.c", "dot   r.r", "apply q = A c",
                                               "adjoint r = A^H s"};

static rmaop_status run_op(blocks *b, int op) {
  double _Complex d[2];
  rmaop_vec dx[2] = {b->q, b->c};
  switch (op) {
  case OP_COPY: return rmaop_vec_copy(b->c, b->r);
  case OP_AXPY: return rmaop_vec_axpy(b->x, 1e-3, b->c);
  case OP_AXPBY: return rmaop_vec_axpby(b->c, 1.0, 0.5, b->r);
  case OP_MDOT: return rmaop_vec_mdot(2, dx, dx, d);
  case OP_DOT: return rmaop_vec_dot(b->r, b->r, d);
  case OP_APPLY: return rmaop_op_apply(b->p.A, b->c, b->q);
  default: return rmaop_op_apply_adjoint(b->p.A, b->s, b->r);
  }
}

/* Bytes each operation must move: reads plus writes of this rank's vectors. */
static double op_bytes(const blocks *b, int op) {
  const double m = b->es * (double)b->m, d = b->es * (double)b->d;
  const double bytes[OP_COUNT] = {2 * m, 3 * m, 3 * m, d + m, m, m + d, d + m};
  return bytes[op];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static rmaop_status time_op(rmaop_ctx ctx, blocks *b, int op, int reps, double *median) {
  double *t = calloc((size_t)reps, sizeof *t);
  rmaop_status st = t ? RMAOP_OK : RMAOP_ERR_NOMEM;
  for (int i = -2; i < reps && st == RMAOP_OK; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    st = run_op(b, op);
    if (st == RMAOP_OK) st = rmaop_ctx_synchronize(ctx);
    if (i >= 0) t[i] = MPI_Wtime() - t0;
  }
  if (st == RMAOP_OK) {
    MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *median = t[reps / 2];
  }
  free(t);
  return st;
}

/* The trace's sites over every timed operation (warm-ups included): the slowest rank's median time inside. */
static void print_sites(rmaop_ctx ctx, int rank) {
  int n = 0;
  if (rmaop_trace_count(ctx, &n) != RMAOP_OK) n = 0;
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* every rank loops alike */
  if (rank == 0) printf("%-24s %-7s %8s %14s %12s\n", "trace site", "kind", "calls", "bytes/message", "us inside");
  for (int i = 0; i < n; ++i) {
    rmaop_trace_site t = {0};
    double med = rmaop_trace_get(ctx, i, &t) == RMAOP_OK ? t.time_inside_median : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &med, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%-24s %-7s %8llu %14.0f %12.2f\n", t.label ? t.label : "?", t.kind ? t.kind : "?", (unsigned long long)t.calls, t.bytes_per_message,
             med * 1e6);
  }
}

static rmaop_status setup(rmaop_ctx ctx, const char *problem, int64_t n, blocks *b) {
  memset(b, 0, sizeof *b);
  rmaop_status st = bench_problem_create(ctx, problem, n, &b->p);
  rmaop_vec *model[] = {&b->x, &b->c, &b->r}, *data[] = {&b->q, &b->s};
  for (int i = 0; i < 3 && st == RMAOP_OK; ++i) st = rmaop_vec_duplicate(b->p.x_true, model[i]);
  for (int i = 0; i < 2 && st == RMAOP_OK; ++i) st = rmaop_vec_duplicate(b->p.b, data[i]);
  for (int i = 0; i < 3 && st == RMAOP_OK; ++i) st = rmaop_vec_copy(b->p.x_true, *model[i]);
  for (int i = 0; i < 2 && st == RMAOP_OK; ++i) st = rmaop_vec_copy(b->p.b, *data[i]);
  rmaop_vec_info mi, di;
  if (st == RMAOP_OK) st = rmaop_vec_get_info(b->x, &mi);
  if (st == RMAOP_OK) st = rmaop_vec_get_info(b->q, &di);
  if (st == RMAOP_OK) b->m = mi.local_n, b->d = di.local_n, b->es = (double)rmaop_dtype_size(mi.dtype);
  return st;
}

static void teardown(blocks *b) {
  rmaop_vec *all[] = {&b->x, &b->c, &b->r, &b->q, &b->s};
  for (int i = 0; i < 5; ++i) rmaop_vec_destroy(all[i]);
  bench_problem_free(&b->p);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *problem = "deriv1d";
  int64_t n = 1 << 20;
  int reps = 20, c;
  long long v = 0;
  static const struct option longopts[] = {
      {"problem", required_argument, 0, 'p'}, {"n", required_argument, 0, 'n'}, {"reps", required_argument, 0, 'r'}, {0, 0, 0, 0}};
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    if (c == 'p') problem = optarg;
    else if (c == 'n' && bench_int_arg("rmaop-kernel-bench", "--n", optarg, 8, 1LL << 40, &v, rank == 0)) n = v;
    else if (c == 'r' && bench_int_arg("rmaop-kernel-bench", "--reps", optarg, 1, 1000000, &v, rank == 0)) reps = (int)v;
    else {
      if (rank == 0) fprintf(stderr, "usage: rmaop-kernel-bench [--problem NAME] [--n N] [--reps R]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (reps < 1 || n < 8) {
    if (rank == 0) fprintf(stderr, "rmaop-kernel-bench: --reps must be >= 1 and --n >= 8\n");
    MPI_Finalize();
    return 2;
  }
  rmaop_ctx ctx = NULL;
  blocks b;
  rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (st == RMAOP_OK) st = setup(ctx, problem, n, &b);
  rmaop_ctx_info ci;
  if (st == RMAOP_OK) st = rmaop_ctx_get_info(ctx, &ci);
  if (st == RMAOP_OK && rank == 0)
    printf("rmaop-kernel-bench: %s n %lld, %d ranks, backend %s, memory %s, median of %d\n%-20s %12s %12s %10s %8s\n",
           problem, (long long)n, ci.size, ci.backend, ci.memory == RMAOP_MEMORY_DEVICE ? "device" : "host", reps,
           "operation", "us", "MB", "GB/s", "/copy");
  double copy_gbs = 0;
  for (int op = 0; op < OP_COUNT && st == RMAOP_OK; ++op) {
    double t = 0;
    if ((st = time_op(ctx, &b, op, reps, &t)) != RMAOP_OK) break;
    const double gbs = op_bytes(&b, op) / t * 1e-9;
    if (op == OP_COPY) copy_gbs = gbs;
    if (rank == 0)
      printf("%-20s %12.2f %12.2f %10.1f %8.2f\n", op_names[op], t * 1e6, op_bytes(&b, op) * 1e-6, gbs, gbs / copy_gbs);
  }
  if (st == RMAOP_OK && ci.trace) print_sites(ctx, rank);
  if (st != RMAOP_OK) fprintf(stderr, "rmaop-kernel-bench: rank %d: %s\n", rank, rmaop_ctx_last_error(ctx));
  if (ctx) teardown(&b);
  rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return st == RMAOP_OK ? 0 : 1;
}
