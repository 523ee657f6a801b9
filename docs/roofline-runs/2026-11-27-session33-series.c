/* Session 33 experiment (issue 6): do the CUDA-aware UCX paths' two latency states change within one process
 * launch (slow at the start, faster later)? The probe is a long launch and times its solver-site epochs last;
 * rmaop-bench's solves are short. Two device contexts side by side, rma lock over MPI and twosided (the
 * CUDA-aware MPI), each with deriv1d's halo plan (1 double to each existing neighbour) and a reduction of 5 host
 * doubles; WINDOWS windows of REPS repetitions of each of the four operations, timed as rmaop-bench
 * --trace-sync times a site (the stream drained and the ranks met before begin and before end; the time inside
 * the calls). Prints each window's median (the slowest rank's) for the first 20 windows and every 50th after,
 * with the seconds since MPI_Init.
 * Built as docs/roofline-runs/2026-11-27-session33-halo-exp.c is (CUDA-aware Open MPI first on PATH, bx/):
 *   mpicc -std=c11 -O2 docs/roofline-runs/2026-11-27-session33-series.c -I include -I bx/include \
 *     -I /usr/local/cuda/include bx/librmaop.a -L/usr/local/cuda/lib64 -lcudart -lnccl -lstdc++ -lm -o series
 *   mpiexec -n 2 ./series
 * (The shared header 2026-11-27-session33-exp.h came after the runs; the measurement is unchanged.) */
#include "2026-11-27-session33-exp.h"

#include <stdio.h>
#include <stdlib.h>

enum { WINDOWS = 1500, REPS = 100, NOPS = 4 };

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

typedef struct {
  rmaop_ctx ctx;
  rmaop_plan plan;
  double *src, *ghost;
} path;

static void path_create(path *p, const char *backend, const char *sync, const char *transport, int rank, int size) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.backend = backend;
  o.memory = "device";
  o.rma_sync = sync;
  o.rma_transport = transport;
  rmaop_ctx ctx = NULL;
  OK(ctx, rmaop_ctx_create(MPI_COMM_WORLD, &o, &p->ctx));
  ctx = p->ctx;
  CU(cudaMalloc((void **)&p->src, 16 * sizeof(double)));
  CU(cudaMalloc((void **)&p->ghost, 2 * sizeof(double)));
  CU(cudaMemset(p->src, 0, 16 * sizeof(double)));
  rmaop_transfer s[2];
  int ns = 0;
  if (rank > 0) s[ns++] = (rmaop_transfer){rank - 1, 0, 1, 1};
  if (rank < size - 1) s[ns++] = (rmaop_transfer){rank + 1, 15, 0, 1};
  rmaop_plan_spec spec = {RMAOP_F64, 16, 2, ns, s, -1, NULL, "halo"};
  OK(ctx, rmaop_plan_create(ctx, &spec, &p->plan));
}

static double halo_once(path *p) {
  rmaop_ctx ctx = p->ctx;
  CU(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  OK(ctx, rmaop_plan_begin(p->plan, p->src, p->ghost, RMAOP_INSERT));
  double in = MPI_Wtime() - t0;
  CU(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  OK(ctx, rmaop_plan_end(p->plan));
  return in + MPI_Wtime() - t0;
}

static double reduce_once(path *p) {
  rmaop_ctx ctx = p->ctx;
  double in5[5] = {1, 2, 3, 4, 5}, out5[5];
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  OK(ctx, rmaop_allreduce(ctx, in5, out5, 5, RMAOP_SUM, "mdot"));
  return MPI_Wtime() - t0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const double start = MPI_Wtime();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  path lock = {0}, ts = {0};
  path_create(&lock, "rma", "lock", "mpi", rank, size);
  path_create(&ts, "twosided", "lock", "auto", rank, size);
  if (rank == 0)
    printf("window  seconds  lock.mpi halo  twosided halo  lock.mpi reduce  twosided reduce   (us, slowest rank's median)\n");
  static double t[NOPS][REPS];
  for (int w = 0; w < WINDOWS; ++w) {
    for (int i = 0; i < REPS; ++i) {
      t[0][i] = halo_once(&lock);
      t[1][i] = halo_once(&ts);
      t[2][i] = reduce_once(&lock);
      t[3][i] = reduce_once(&ts);
    }
    double m[NOPS], mx[NOPS];
    for (int k = 0; k < NOPS; ++k)
      m[k] = median(t[k], REPS);
    MPI_Reduce(m, mx, NOPS, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && (w < 20 || w % 50 == 0 || w == WINDOWS - 1))
      printf("%6d  %7.2f  %13.2f  %13.2f  %15.2f  %15.2f\n", w, MPI_Wtime() - start, mx[0] * 1e6, mx[1] * 1e6,
             mx[2] * 1e6, mx[3] * 1e6);
  }
  path *all[2] = {&lock, &ts};
  for (int k = 0; k < 2; ++k) {
    rmaop_plan_destroy(&all[k]->plan);
    CU(cudaFree(all[k]->src));
    CU(cudaFree(all[k]->ghost));
    rmaop_ctx_destroy(&all[k]->ctx);
  }
  MPI_Finalize();
  return 0;
}
