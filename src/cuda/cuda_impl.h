/* Private to src/cuda/: what every CUDA source of the core shares (the stream, error checks, the dtype
 * dispatch over the four element types, grid-stride loops). */
#ifndef RMAOP_CUDA_IMPL_H
#define RMAOP_CUDA_IMPL_H

#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "rmaop_impl.h"

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)

#define DEV_CHECK(ctx, call)                                                                                \
  do {                                                                                                      \
    cudaError_t rmaop__e = (call);                                                                          \
    if (rmaop__e != cudaSuccess)                                                                            \
      return rmaop__error((ctx), RMAOP_ERR_CUDA, __FILE__, __LINE__, "%s failed: %s (%s)", #call,            \
                          cudaGetErrorString(rmaop__e), cudaGetErrorName(rmaop__e));                        \
  } while (0)

#define LAUNCH_CHECK(ctx)                                                                                 \
  do {                                                                                                    \
    cudaError_t rmaop__e = cudaGetLastError();                                                            \
    if (rmaop__e != cudaSuccess)                                                                          \
      return rmaop__error((ctx), RMAOP_ERR_CUDA, __FILE__, __LINE__, "kernel launch failed: %s",          \
                          cudaGetErrorString(rmaop__e));                                                  \
  } while (0)

#define BLAS_CHECK(ctx, call)                                                                             \
  do {                                                                                                    \
    cublasStatus_t rmaop__b = (call);                                                                     \
    if (rmaop__b != CUBLAS_STATUS_SUCCESS)                                                                \
      return rmaop__error((ctx), RMAOP_ERR_CUDA, __FILE__, __LINE__, "%s failed: %s", #call,              \
                          cublasGetStatusString(rmaop__b));                                               \
  } while (0)

/* Runs CALL with T bound to the element type of dt. */
#define DISPATCH(dt, CALL)                                       \
  switch (dt) {                                                  \
  case RMAOP_F32: { typedef float T; CALL; } break;              \
  case RMAOP_F64: { typedef double T; CALL; } break;             \
  case RMAOP_C64: { typedef cuFloatComplex T; CALL; } break;     \
  case RMAOP_C128: { typedef cuDoubleComplex T; CALL; } break;   \
  }

#define GRID_STRIDE(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#endif /* RMAOP_CUDA_IMPL_H */
