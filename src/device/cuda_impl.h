/* Private to src/device/: what every CUDA source of the core shares (the stream, error checks, the dtype
 * dispatch over the four element types, grid-stride loops). */
#ifndef RMAOP_CUDA_IMPL_H
#define RMAOP_CUDA_IMPL_H

#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/ctx.h"
#include "core/error.h"
#include "gpu_check.h"

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)

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

/* Blocks of `threads` for a grid-stride loop over n elements: at least one, and no more than 4 x 65535,
 * past which more blocks only add scheduling (the loop covers the rest). */
static inline unsigned grid_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b > 65535 * 4) b = 65535 * 4;
  return (unsigned)(b < 1 ? 1 : b);
}

/* cuBLAS by element type, for templates over the DISPATCH types: the routines the operators use (gemm:
 * src/device/matmul.cu, gemv: src/device/ops.cu) under one name, and a real scalar in the type. */
template <typename T> struct blas;
#define RMAOP__BLAS(T, P, SCALAR)                                                                                  \
  template <> struct blas<T> {                                                                                     \
    static T scalar(double v) { return SCALAR; }                                                                   \
    static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,  \
                               const T *a, const T *A, int lda, const T *B, int ldb, const T *b, T *C, int ldc) {  \
      return cublas##P##gemm(h, ta, tb, m, n, k, a, A, lda, B, ldb, b, C, ldc);                                    \
    }                                                                                                              \
    static cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const T *a, const T *A,       \
                               int lda, const T *x, int incx, const T *b, T *y, int incy) {                        \
      return cublas##P##gemv(h, op, m, n, a, A, lda, x, incx, b, y, incy);                                         \
    }                                                                                                              \
  };
RMAOP__BLAS(float, S, (float)v)
RMAOP__BLAS(double, D, v)
RMAOP__BLAS(cuFloatComplex, C, make_cuFloatComplex((float)v, 0.0f))
RMAOP__BLAS(cuDoubleComplex, Z, make_cuDoubleComplex(v, 0.0))
#undef RMAOP__BLAS

#endif /* RMAOP_CUDA_IMPL_H */
