/* Session 33 experiment (issue 6): is a device halo epoch over the CUDA-aware MPI slower in the solver than in
 * the probe because of the source's allocation size, or because of GPU work between begin and end?
 * One context (RMAOP_BACKEND / RMAOP_RMA_SYNC / RMAOP_RMA_TRANSPORT from the environment, device memory), a
 * deriv1d-like halo plan (1 double to each existing neighbour, no wrap), timed as rmaop-bench --trace-sync
 * times a plan site: begin and end each after a barrier with the stream drained, the time inside the two calls
 * summed; the slowest rank's median per condition over blocks interleaved in time:
 *   small   source of 16 doubles
 *   big     source of 2^19 doubles (deriv1d 2^20 on 2 ranks)
 *   work    big, plus an axpy over 2^19 doubles enqueued between begin and end (deriv1d's interior)
 *   reduce  rmaop_allreduce of 5 host doubles (bdiag's mdot), after a barrier, the call timed
 * With the argument "bigfirst" every rank first sends 4 MiB of device memory to each neighbour 30 times (a plan
 * of its own), as the probe's large points come before its reductions and its solver-site epochs.
 * Built and run as in session 33's calls 5 and 7 (CUDA-aware Open MPI first on PATH, rmaop built in bx/):
 *   mpicc -std=c11 -O2 docs/roofline-runs/2026-11-27-session33-halo-exp.c -I include -I bx/include \
 *     -I /usr/local/cuda/include bx/librmaop.a -L/usr/local/cuda/lib64 -lcudart -lnccl -lstdc++ -lm -o halo-exp
 *   RMAOP_MEMORY=device RMAOP_BACKEND=rma RMAOP_RMA_SYNC=lock RMAOP_RMA_TRANSPORT=mpi mpiexec -n 2 ./halo-exp [bigfirst]
 * The reduction is rmaop_allreduce, so it includes the argument agreement (a second small collective).
 * (The CUDA error checks and the shared header 2026-11-27-session33-exp.h came after those runs; the
 * measurement is unchanged.) */
#include "2026-11-27-session33-exp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rmaop_ctx ctx = NULL;
  OK(ctx, rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  rmaop_ctx_info ci;
  OK(ctx, rmaop_ctx_get_info(ctx, &ci));
  const int rank = ci.rank, size = ci.size;
  const int64_t big = (int64_t)1 << 19, small = 16;
  double *src_small = NULL, *src_big = NULL, *ghost = NULL;
  CU(cudaMalloc((void **)&src_small, small * sizeof(double)));
  CU(cudaMalloc((void **)&src_big, big * sizeof(double)));
  CU(cudaMalloc((void **)&ghost, 2 * sizeof(double)));
  CU(cudaMemset(src_small, 0, small * sizeof(double)));
  CU(cudaMemset(src_big, 0, big * sizeof(double)));
  rmaop_layout lay = NULL;
  rmaop_vec y = NULL, x = NULL;
  OK(ctx, rmaop_layout_create_local(ctx, big, &lay));
  OK(ctx, rmaop_vec_create(lay, RMAOP_F64, &y));
  OK(ctx, rmaop_vec_create(lay, RMAOP_F64, &x));
  OK(ctx, rmaop_vec_set(x, 1.0));
  OK(ctx, rmaop_vec_set(y, 0.0));
  rmaop_plan plan[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    const int64_t n = k ? big : small;
    rmaop_transfer s[2];
    int ns = 0;
    if (rank > 0) s[ns++] = (rmaop_transfer){rank - 1, 0, 1, 1};         /* my first to the left's right ghost */
    if (rank < size - 1) s[ns++] = (rmaop_transfer){rank + 1, n - 1, 0, 1}; /* my last to the right's left ghost */
    rmaop_plan_spec spec = {RMAOP_F64, n, 2, ns, s, -1, NULL, "halo"};
    OK(ctx, rmaop_plan_create(ctx, &spec, &plan[k]));
  }
  if (argc > 1 && strcmp(argv[1], "bigfirst") == 0) {
    double *dst_big = NULL;
    CU(cudaMalloc((void **)&dst_big, 2 * big * sizeof(double)));
    rmaop_transfer s[2];
    int ns = 0;
    if (rank > 0) s[ns++] = (rmaop_transfer){rank - 1, 0, big, big};
    if (rank < size - 1) s[ns++] = (rmaop_transfer){rank + 1, 0, 0, big};
    rmaop_plan_spec spec = {RMAOP_F64, big, 2 * big, ns, s, -1, NULL, "big"};
    rmaop_plan bp = NULL;
    OK(ctx, rmaop_plan_create(ctx, &spec, &bp));
    for (int i = 0; i < 30; ++i) OK(ctx, rmaop_plan_execute(bp, src_big, dst_big, RMAOP_INSERT));
    cudaDeviceSynchronize();
    rmaop_plan_destroy(&bp);
    cudaFree(dst_big);
    if (rank == 0) printf("bigfirst: 30 plans of 4 MiB per neighbour first\n");
  }
  enum { NCOND = 4, BLOCK = 50, CYCLES = 6 };
  static const char *names[NCOND] = {"small", "big", "big + work", "reduce 40 B"};
  static double t[NCOND][BLOCK * CYCLES];
  for (int c = 0; c < CYCLES; ++c)
    for (int k = 0; k < NCOND; ++k)
      for (int i = -5; i < BLOCK; ++i) {
        if (k == 3) {
          double in5[5] = {1, 2, 3, 4, 5}, out5[5];
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          OK(ctx, rmaop_allreduce(ctx, in5, out5, 5, RMAOP_SUM, "mdot"));
          if (i >= 0) t[k][c * BLOCK + i] = MPI_Wtime() - t0;
          continue;
        }
        const int p = k ? 1 : 0;
        double *src = k ? src_big : src_small;
        cudaDeviceSynchronize();
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        OK(ctx, rmaop_plan_begin(plan[p], src, ghost, RMAOP_INSERT));
        double in = MPI_Wtime() - t0;
        if (k == 2) OK(ctx, rmaop_vec_axpy(y, 1e-9, x));
        cudaDeviceSynchronize();
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        OK(ctx, rmaop_plan_end(plan[p]));
        in += MPI_Wtime() - t0;
        if (i >= 0) t[k][c * BLOCK + i] = in;
      }
  for (int k = 0; k < NCOND; ++k) {
    qsort(t[k], BLOCK * CYCLES, sizeof(double), cmp_double);
    double med = t[k][BLOCK * CYCLES / 2], p10 = t[k][BLOCK * CYCLES / 10], p90 = t[k][BLOCK * CYCLES * 9 / 10];
    double m[3] = {med, p10, p90}, mx[3];
    MPI_Reduce(m, mx, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%-12s median %7.2f us (p10 %7.2f, p90 %7.2f)\n", names[k], mx[0] * 1e6, mx[1] * 1e6, mx[2] * 1e6);
  }
  rmaop_plan_destroy(&plan[0]);
  rmaop_plan_destroy(&plan[1]);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_layout_destroy(&lay);
  cudaFree(src_small);
  cudaFree(src_big);
  cudaFree(ghost);
  rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return 0;
}
