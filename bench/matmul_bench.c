/*
 * matmul_bench.c -- rmaop-matmul-bench: times the distributed dense multiply Y = A X (rmaop_op_create_matmul)
 * for the block-row and SUMMA kinds on the context's backend and memory kind.
 *
 *   mpiexec -n P rmaop-matmul-bench [--n N] [--reps R] [--warmup W] [--memory host|device] [--dtype f64]
 *                                   [--kinds block,summa]
 *
 * Square problem: A, X, Y are N x N. The backend, rma sync and transport come from the RMAOP_* environment;
 * --memory overrides RMAOP_MEMORY.
 *
 * Method: per kind, W untimed applications, then R timed ones; each starts after an (untimed) MPI_Barrier
 * and ends when the result is complete on this rank (device memory: rmaop_ctx_synchronize after the apply).
 * A repetition's time is the slowest rank's (MPI_MAX); we print the median over R.
 * Share of time in communication, measured two ways:
 *   trace   the trace's time_inside summed over every site (plans, the SUMMA epochs): seconds spent inside
 *           rmaop's communication calls on the slowest rank, over the apply time. On device memory a plan's
 *           end only enqueues stream-side waits, so its transfer time lands in the next synchronizing call:
 *           read "trace" as a lower bound there. (A SUMMA epoch on a GPU window drains the stream.)
 *   local   1 - (this rank's local products alone) / apply: the same products timed on a one-rank context
 *           over MPI_COMM_SELF (block: a_nrows x N times N x N; SUMMA: the g steps as one
 *           (N/g) x N times N x (N/g) product), the slowest rank's. Everything that is not local compute:
 *           transfers, synchronization, waiting for a slower rank. On device memory the one-rank contexts
 *           all select GPU 0, so the ranks time their products one after the other there.
 * Uses only <rmaop/rmaop.h> and MPI.
 */
#include <rmaop/rmaop.h>

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

static int g_rank, g_size;

typedef struct {
  int64_t n;
  int reps, warmup;
  const char *memory, *kinds;
  rmaop_dtype dtype;
} args;

static int parse(int argc, char **argv, args *a) {
  *a = (args){.n = 1024, .reps = 5, .warmup = 1, .memory = NULL, .kinds = "block,summa", .dtype = RMAOP_F64};
  long long x = 0;
  for (int i = 1; i < argc; ++i) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--n") && v) {
      if (!bench_int_arg("rmaop-matmul-bench", "--n", v, 1, 1LL << 20, &x, g_rank == 0)) return 0;
      a->n = x, ++i;
    } else if (!strcmp(argv[i], "--reps") && v) {
      if (!bench_int_arg("rmaop-matmul-bench", "--reps", v, 1, 1000000, &x, g_rank == 0)) return 0;
      a->reps = (int)x, ++i;
    } else if (!strcmp(argv[i], "--warmup") && v) {
      if (!bench_int_arg("rmaop-matmul-bench", "--warmup", v, 0, 1000000, &x, g_rank == 0)) return 0;
      a->warmup = (int)x, ++i;
    } else if (!strcmp(argv[i], "--memory") && v) a->memory = v, ++i;
    else if (!strcmp(argv[i], "--kinds") && v) a->kinds = v, ++i;
    else if (!strcmp(argv[i], "--dtype") && v) {
      if (rmaop_dtype_parse(v, &a->dtype) != RMAOP_OK) return 0;
      ++i;
    } else return 0;
  }
  return 1; /* each range is bench_int_arg's */
}

static int report(rmaop_status st, const char *what, rmaop_ctx ctx) {
  if (st != RMAOP_OK) fprintf(stderr, "[rank %d] %s: %s: %s\n", g_rank, what, rmaop_status_string(st), rmaop_ctx_last_error(ctx));
  return st == RMAOP_OK;
}
#define TRY(ctx, expr) \
  do {                 \
    if (!report((expr), #expr, (ctx))) goto out; \
  } while (0)

/* A deterministic value in [-0.5, 0.5) for element (i, j) of matrix s (host buffer of the dtype). */
static void fill(rmaop_dtype dt, void *buf, int64_t rows, int64_t cols, int64_t row0, int64_t col0, int s) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const uint64_t h = (uint64_t)(row0 + i) * 2654435761u + (uint64_t)(col0 + j) * 40503u + (uint64_t)s * 977u;
      const double v = (double)(h % 1009u) / 1009.0 - 0.5;
      const int64_t k = i * cols + j;
      switch (dt) {
      case RMAOP_F32: ((float *)buf)[k] = (float)v; break;
      case RMAOP_F64: ((double *)buf)[k] = v; break;
      case RMAOP_C64: ((float _Complex *)buf)[k] = (float _Complex)(v + 0.5 * I * v); break;
      case RMAOP_C128: ((double _Complex *)buf)[k] = v + 0.5 * I * v; break;
      }
    }
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A multiply op on ctx for A (rows x K at row0, col0), X of this rank's block; x filled, y allocated. */
static rmaop_status make(rmaop_ctx ctx, rmaop_matmul_kind kind, rmaop_dtype dt, int64_t N, int64_t K, int64_t M,
                         rmaop_op *op, rmaop_vec *x, rmaop_vec *y) {
  rmaop_ctx_info ci;
  rmaop_status st = rmaop_ctx_get_info(ctx, &ci);
  rmaop_matmul_blocks b;
  if (st == RMAOP_OK) st = rmaop_op_matmul_get_blocks(ctx, kind, N, K, M, ci.rank, &b);
  if (st != RMAOP_OK) return st;
  const size_t es = rmaop_dtype_size(dt);
  void *A = malloc((size_t)(b.a_nrows * b.a_ncols) * es + es);
  void *X = malloc((size_t)(b.x_nrows * b.x_ncols) * es + es);
  if (!A || !X) {
    free(A), free(X);
    return RMAOP_ERR_NOMEM;
  }
  fill(dt, A, b.a_nrows, b.a_ncols, b.a_row0, b.a_col0, 0);
  fill(dt, X, b.x_nrows, b.x_ncols, b.x_row0, b.x_col0, 1);
  rmaop_matmul_spec spec = {.kind = kind, .dtype = dt, .N = N, .K = K, .M = M, .nrows = b.a_nrows,
                            .ncols = b.a_ncols, .A = A, .label = kind == RMAOP_MATMUL_BLOCK ? "block" : "summa"};
  st = rmaop_op_create_matmul(ctx, &spec, op);
  rmaop_op_info oi;
  if (st == RMAOP_OK) st = rmaop_op_get_info(*op, &oi);
  if (st == RMAOP_OK) st = rmaop_vec_create(oi.model, dt, x);
  if (st == RMAOP_OK) st = rmaop_vec_create(oi.data, dt, y);
  if (st == RMAOP_OK) st = rmaop_vec_write_local(*x, X);
  free(A), free(X);
  return st;
}

/* Median over reps of one apply, the slowest rank's; *inside: the matching trace time_inside (median). */
static rmaop_status time_apply(rmaop_ctx ctx, MPI_Comm comm, rmaop_op op, rmaop_vec x, rmaop_vec y, const args *a,
                               double *t_med, double *inside_med) {
  double *t = calloc((size_t)a->reps, sizeof *t), *in = calloc((size_t)a->reps, sizeof *in);
  rmaop_status st = t && in ? RMAOP_OK : RMAOP_ERR_NOMEM;
  for (int r = 0; r < a->warmup && st == RMAOP_OK; ++r) st = rmaop_op_apply(op, x, y);
  if (st == RMAOP_OK) st = rmaop_ctx_synchronize(ctx);
  for (int r = 0; r < a->reps && st == RMAOP_OK; ++r) {
    MPI_Barrier(comm);
    rmaop_trace_reset(ctx);
    const double t0 = MPI_Wtime();
    st = rmaop_op_apply(op, x, y);
    if (st == RMAOP_OK) st = rmaop_ctx_synchronize(ctx);
    double v[2] = {MPI_Wtime() - t0, 0.0};
    int ns = 0;
    rmaop_trace_count(ctx, &ns);
    for (int i = 0; i < ns; ++i) {
      rmaop_trace_site s;
      if (rmaop_trace_get(ctx, i, &s) == RMAOP_OK) v[1] += s.time_inside;
    }
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, comm);
    t[r] = v[0], in[r] = v[1];
  }
  if (st == RMAOP_OK) *t_med = median(t, a->reps), *inside_med = median(in, a->reps);
  free(t), free(in);
  return st;
}

/* This rank's local products alone, on a one-rank context (see the header); 0 for an idle SUMMA rank. */
static rmaop_status time_local(rmaop_ctx ctx, rmaop_matmul_kind kind, const args *a, const rmaop_ctx_options *opts,
                               double *t_max) {
  rmaop_matmul_blocks b;
  rmaop_status st = rmaop_op_matmul_get_blocks(ctx, kind, a->n, a->n, a->n, g_rank, &b);
  double t = 0.0;
  rmaop_ctx_info ci;
  if (st == RMAOP_OK) st = rmaop_ctx_get_info(ctx, &ci);
  /* A context over MPI_COMM_SELF picks GPU 0 on every rank (node rank 0): on device memory the ranks take
   * turns, so each one times its products alone on a GPU like its own. Host ranks run together, as in the
   * apply (they share the memory bandwidth there too). */
  const int turns = st == RMAOP_OK && ci.memory == RMAOP_MEMORY_DEVICE ? g_size : 1;
  for (int turn = 0; turn < turns; ++turn) {
    if (turns > 1) MPI_Barrier(MPI_COMM_WORLD);
    if (turns > 1 && turn != g_rank) continue;
    if (st != RMAOP_OK || !b.active || b.a_nrows == 0) continue;
    rmaop_ctx self = NULL;
    rmaop_op op = NULL;
    rmaop_vec x = NULL, y = NULL;
    const int64_t cols = kind == RMAOP_MATMUL_BLOCK ? a->n : b.y_ncols;
    st = rmaop_ctx_create(MPI_COMM_SELF, opts, &self);
    if (st == RMAOP_OK) st = make(self, RMAOP_MATMUL_BLOCK, a->dtype, b.a_nrows, a->n, cols, &op, &x, &y);
    double in = 0.0;
    if (st == RMAOP_OK) st = time_apply(self, MPI_COMM_SELF, op, x, y, a, &t, &in);
    if (st != RMAOP_OK) report(st, "local products on MPI_COMM_SELF", self);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_op_destroy(&op);
    rmaop_ctx_destroy(&self);
  }
  if (turns > 1) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Allreduce(&t, t_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  args a;
  if (!parse(argc, argv, &a)) {
    if (g_rank == 0)
      fprintf(stderr, "usage: rmaop-matmul-bench [--n N] [--reps R] [--warmup W] [--memory host|device] "
                      "[--dtype f32|f64|c64|c128] [--kinds block,summa]\n");
    MPI_Finalize();
    return 2;
  }
  rmaop_ctx_options opts;
  rmaop_ctx_options_init(&opts);
  opts.memory = a.memory;
  opts.trace = 1;
  rmaop_ctx ctx = NULL;
  int rc = 1;
  TRY(ctx, rmaop_ctx_create(MPI_COMM_WORLD, &opts, &ctx));
  rmaop_ctx_info ci;
  TRY(ctx, rmaop_ctx_get_info(ctx, &ci));
  if (g_rank == 0) {
    printf("# rmaop-matmul-bench: P = %d, backend %s, sync %s, transport %s, memory %s, dtype %s, N = %lld, "
           "reps %d (median)\n", g_size, ci.backend, rmaop_sync_name(ci.rma.sync),
           rmaop_transport_name(ci.rma.transport), rmaop_memory_name(ci.memory), rmaop_dtype_name(a.dtype),
           (long long)a.n, a.reps);
    printf("%-6s %5s %12s %10s %12s %12s %12s\n", "kind", "grid", "apply_ms", "GFLOP/s", "local_ms", "comm_local",
           "comm_trace");
  }
  rc = 0;
  for (int kind = 0; kind < 2 && rc == 0; ++kind) {
    const char *name = kind == RMAOP_MATMUL_BLOCK ? "block" : "summa";
    if (!strstr(a.kinds, name)) continue;
    rmaop_op op = NULL;
    rmaop_vec x = NULL, y = NULL;
    double t = 0, inside = 0, local = 0;
    rmaop_status st = make(ctx, (rmaop_matmul_kind)kind, a.dtype, a.n, a.n, a.n, &op, &x, &y);
    if (st == RMAOP_OK) st = time_apply(ctx, MPI_COMM_WORLD, op, x, y, &a, &t, &inside);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_op_destroy(&op);
    if (!report(st, name, ctx)) {
      rc = 1;
      break;
    }
    if (!report(time_local(ctx, (rmaop_matmul_kind)kind, &a, &opts, &local), "local products", ctx)) rc = 1;
    rmaop_matmul_blocks b;
    rmaop_op_matmul_get_blocks(ctx, (rmaop_matmul_kind)kind, a.n, a.n, a.n, 0, &b);
    const double flops = 2.0 * (double)a.n * (double)a.n * (double)a.n *
                         (a.dtype == RMAOP_C64 || a.dtype == RMAOP_C128 ? 4.0 : 1.0);
    char grid[16];
    if (kind == RMAOP_MATMUL_BLOCK) snprintf(grid, sizeof grid, "1x%d", b.grid_dim);
    else snprintf(grid, sizeof grid, "%dx%d", b.grid_dim, b.grid_dim);
    if (g_rank == 0)
      printf("%-6s %5s %12.3f %10.2f %12.3f %11.1f%% %11.1f%%\n", name, grid, 1e3 * t, flops / t * 1e-9, 1e3 * local,
             100.0 * (1.0 - local / t), 100.0 * inside / t);
  }
out:
  rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return rc;
}
