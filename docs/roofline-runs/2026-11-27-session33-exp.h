/* What session 33's two device experiments (2026-11-27-session33-halo-exp.c, -series.c) share: stop the job on
 * an rmaop or CUDA error (with its message), and a comparison for qsort of doubles. */
#ifndef SESSION33_EXP_H
#define SESSION33_EXP_H

#include <rmaop/rmaop.h>

#include <cuda_runtime.h>
#include <stdio.h>

#define OK(ctx, call)                                                                                                  \
  do {                                                                                                                 \
    if ((call) != RMAOP_OK) {                                                                                          \
      fprintf(stderr, "%s: %s\n", #call, rmaop_ctx_last_error(ctx));                                                   \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

#define CU(call)                                                                                                       \
  do {                                                                                                                 \
    cudaError_t e_ = (call);                                                                                           \
    if (e_ != cudaSuccess) {                                                                                           \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                                                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#endif
