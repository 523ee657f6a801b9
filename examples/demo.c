/*
 * demo.c -- what scripts/demo.sh runs: one communication path (chosen by RMAOP_BACKEND, RMAOP_RMA_SYNC,
 * RMAOP_RMA_TRANSPORT) doing a ring halo exchange and two kinds of reduction, checked and timed.
 *
 *   RMAOP_BACKEND=rma RMAOP_RMA_SYNC=pscw RMAOP_RMA_TRANSPORT=shm mpiexec -n 2 ./rmaop-demo [-k K] [--reps N]
 *
 * Halo: every rank owns 4K doubles x_i = i (global index) and sends its first K to the left neighbour and its
 * last K to the right neighbour of a ring (one rmaop_plan, 2 transfers per rank). Reductions: rmaop_vec_dot
 * (<x,x>, exact in doubles) and rmaop_allreduce of one double. Times are per call, the slowest rank of each
 * repetition, median and minimum over the repetitions after a warm-up, in microseconds. A barrier (not
 * timed) starts every repetition.
 */
#include <rmaop/rmaop.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/bench_args.h" /* strict numeric options; the usage line names them */
#include "example_util.h"    /* CHECK, g_rank, g_ctx, example_print_sites */


static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Per-repetition times -> the slowest rank of each repetition -> median and minimum, in microseconds. */
static void summarize(double *t, int reps, double *median_us, double *min_us) {
  MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  *median_us = 1e6 * (reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]));
  *min_us = 1e6 * t[0];
}

typedef struct {
  int64_t k;
  int reps, warmup;
} demo_args;

static int parse_args(int argc, char **argv, demo_args *a) {
  a->k = 1024;
  a->reps = 1000;
  a->warmup = 50;
  long long v = 0;
  for (int i = 1; i < argc; i += 2) {
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (val && strcmp(opt, "-k") == 0 && bench_int_arg("rmaop-demo", opt, val, 1, 1LL << 30, &v, 0))
      a->k = v;
    else if (val && strcmp(opt, "--reps") == 0 && bench_int_arg("rmaop-demo", opt, val, 1, 100000000, &v, 0))
      a->reps = (int)v;
    else if (val && strcmp(opt, "--warmup") == 0 && bench_int_arg("rmaop-demo", opt, val, 0, 100000000, &v, 0))
      a->warmup = (int)v;
    else
      return 0;
  }
  return 1;
}

/* One exchange with tracing on, to show what the library did: sites, transports, messages, bytes. */
static void show_trace(const rmaop_ctx_info *ci, rmaop_plan plan, const double *x, double *ghost, rmaop_vec xv) {
  double _Complex d;
  double one = 1.0, sum;
  CHECK(rmaop_trace_reset(g_ctx));
  CHECK(rmaop_trace_enable(g_ctx, 1));
  CHECK(rmaop_plan_execute(plan, x, ghost, RMAOP_INSERT));
  CHECK(rmaop_vec_dot(xv, xv, &d));
  CHECK(rmaop_allreduce(g_ctx, &one, &sum, 1, RMAOP_SUM, "allreduce"));
  CHECK(rmaop_trace_enable(g_ctx, 0));
  int nsites;
  CHECK(rmaop_trace_count(g_ctx, &nsites));
  if (ci->rank == 0) {
    printf("  what rank 0 did (trace of one call each):\n");
    for (int i = 0; i < nsites; ++i) {
      rmaop_trace_site s;
      CHECK(rmaop_trace_get(g_ctx, i, &s));
      printf("    %-7s %-10s backend %-8s sync %-5s transport %-5s %3llu message(s) of %.0f B\n", s.kind, s.label,
             s.backend, s.sync, s.transport, (unsigned long long)s.messages, s.bytes_per_message);
    }
  }
  CHECK(rmaop_trace_reset(g_ctx));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  demo_args a;
  if (!parse_args(argc, argv, &a)) {
    if (g_rank == 0) {
      fprintf(stderr, "usage: %s [-k elements_per_neighbour] [--reps N] [--warmup N]\n", argv[0]);
    }
    MPI_Finalize();
    return 2;
  }

  CHECK(rmaop_ctx_create(MPI_COMM_WORLD, NULL, &g_ctx));
  rmaop_ctx_info ci;
  CHECK(rmaop_ctx_get_info(g_ctx, &ci));
  if (ci.memory != RMAOP_MEMORY_HOST) {
    if (ci.rank == 0) {
      fprintf(stderr, "the demo checks results on the host: run it with RMAOP_MEMORY=host\n");
    }
    rmaop_ctx_destroy(&g_ctx);
    MPI_Finalize();
    return 2;
  }
  const int left = (ci.rank + ci.size - 1) % ci.size, right = (ci.rank + 1) % ci.size;
  const int64_t k = a.k, n = 4 * k, N = n * ci.size;

  rmaop_layout layout;
  rmaop_vec xv;
  double *x;
  CHECK(rmaop_layout_create(g_ctx, RMAOP_LAYOUT_SCATTER, N, &layout));
  CHECK(rmaop_vec_create(layout, RMAOP_F64, &xv));
  CHECK(rmaop_vec_get_array(xv, (void **)&x));
  rmaop_vec_info vi;
  CHECK(rmaop_vec_get_info(xv, &vi));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = (double)(vi.offset + i);
  }

  /* ghost[0..k): the left neighbour's last k elements; ghost[k..2k): the right neighbour's first k. */
  double *ghost = malloc((size_t)(2 * k) * sizeof *ghost);
  double *t = malloc((size_t)a.reps * sizeof *t);
  if (!ghost || !t) {
    fprintf(stderr, "[rank %d] out of memory\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const rmaop_transfer sends[2] = {{left, 0, k, k}, {right, n - k, 0, k}};
  const rmaop_plan_spec spec = {RMAOP_F64, n, 2 * k, 2, sends, -1, NULL, "halo"};
  rmaop_plan plan;
  CHECK(rmaop_plan_create(g_ctx, &spec, &plan));

  if (ci.rank == 0) {
    printf("path: backend %s", ci.backend);
    if (strcmp(ci.backend, "rma") == 0) {
      printf(", sync %s, transport %s", rmaop_sync_name(ci.rma.sync), rmaop_transport_name(ci.rma.transport));
    }
    printf(" | %d ranks | halo: %lld doubles (%lld B) to each of 2 ring neighbours | %d reps\n", ci.size, (long long)k,
           (long long)(k * 8), a.reps);
  }
  show_trace(&ci, plan, x, ghost, xv);

  /* Check the ghosts against the neighbours' global indices. */
  int64_t ln, loff, rn, roff;
  CHECK(rmaop_layout_rank_range(layout, left, &ln, &loff));
  CHECK(rmaop_layout_rank_range(layout, right, &rn, &roff));
  int64_t bad = 0;
  for (int64_t j = 0; j < k; ++j) {
    bad += ghost[j] != (double)(loff + ln - k + j);
    bad += ghost[k + j] != (double)(roff + j);
  }

  /* Halo exchange: begin + end per repetition. */
  for (int r = -a.warmup; r < a.reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD); /* every repetition starts together; not timed */
    const double t0 = MPI_Wtime();
    CHECK(rmaop_plan_begin(plan, x, ghost, RMAOP_INSERT));
    CHECK(rmaop_plan_end(plan));
    if (r >= 0) {
      t[r] = MPI_Wtime() - t0;
    }
  }
  double halo_med, halo_min;
  summarize(t, a.reps, &halo_med, &halo_min);

  /* Reductions: <x,x> = sum_{i<N} i^2, and the sum of (rank + 1). Both exact in doubles here. */
  const double want_dot = (double)(N - 1) * (double)N * (double)(2 * N - 1) / 6.0;
  const double want_sum = 0.5 * ci.size * (ci.size + 1), mine = ci.rank + 1.0;
  double _Complex dot = 0;
  double sum = 0;
  for (int r = -a.warmup; r < a.reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD); /* every repetition starts together; not timed */
    const double t0 = MPI_Wtime();
    CHECK(rmaop_vec_dot(xv, xv, &dot));
    if (r >= 0) {
      t[r] = MPI_Wtime() - t0;
    }
  }
  double dot_med, dot_min;
  summarize(t, a.reps, &dot_med, &dot_min);
  for (int r = -a.warmup; r < a.reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD); /* every repetition starts together; not timed */
    const double t0 = MPI_Wtime();
    CHECK(rmaop_allreduce(g_ctx, &mine, &sum, 1, RMAOP_SUM, "allreduce"));
    if (r >= 0) {
      t[r] = MPI_Wtime() - t0;
    }
  }
  double red_med, red_min;
  summarize(t, a.reps, &red_med, &red_min);

  /* The last exchange must still be right, and every rank must agree. */
  for (int64_t j = 0; j < k; ++j) {
    bad += ghost[j] != (double)(loff + ln - k + j);
    bad += ghost[k + j] != (double)(roff + j);
  }
  bad += (double)dot != want_dot;
  bad += sum != want_sum;
  int64_t bad_all;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

  if (ci.rank == 0) {
    printf("  halo exchange   median %9.2f us   min %9.2f us   (begin + end, %lld B per message)\n", halo_med, halo_min,
           (long long)(k * 8));
    printf("  rmaop_vec_dot   median %9.2f us   min %9.2f us   <x,x> = %.17g (expected %.17g)\n", dot_med, dot_min,
           (double)dot, want_dot);
    printf("  rmaop_allreduce median %9.2f us   min %9.2f us   sum = %g (expected %g)\n", red_med, red_min, sum,
           want_sum);
    printf("  %s\n", bad_all == 0 ? "results OK" : "RESULTS WRONG");
  }

  rmaop_plan_destroy(&plan);
  rmaop_vec_destroy(&xv);
  rmaop_layout_destroy(&layout);
  rmaop_ctx_destroy(&g_ctx);
  free(t);
  free(ghost);
  MPI_Finalize();
  return bad_all == 0 ? 0 : 1;
}
