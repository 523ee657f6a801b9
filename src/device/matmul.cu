/* Dense products of the matrix-multiply and Fredholm operators on device memory (src/device/matmul_dev.h):
 * cuBLAS gemm (blas<T>, src/device/cuda_impl.h) on the context's stream, through a handle made by
 * rmaop__dev_blas_create (src/device/ops.cu).
 *
 * cuBLAS is column-major and our matrices are row-major: a row-major m x n matrix is its column-major
 * transpose, so C = op(A) B is computed as C^T = B^T op(A)^T, i.e. gemm(N, opA', n, m, k, B, A) where the
 * row-major A seen column-major is A^T (op N gives A^T, and op C on the row-major k x m A gives
 * (A^T)^H = conj(A), whose product with B^T is (A^H B)^T). */
#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda_impl.h"
#include "device.h"
#include "matmul_dev.h"

namespace {

template <typename T>
rmaop_status gemm(rmaop_ctx ctx, cublasHandle_t h, int conj_a, int m, int n, int k, const T *A, int lda, const T *B,
                  int ldb, T *C, int ldc, int accumulate) {
  const T one = blas<T>::scalar(1.0), beta = blas<T>::scalar(accumulate ? 1.0 : 0.0);
  BLAS_CHECK(ctx, blas<T>::gemm(h, CUBLAS_OP_N, conj_a ? CUBLAS_OP_C : CUBLAS_OP_N, n, m, k, &one, B, ldb, A, lda,
                                   &beta, C, ldc));
  return RMAOP_OK;
}

int fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

} // namespace

extern "C" rmaop_status rmaop__dev_gemm(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int conj_a, int64_t m, int64_t n,
                                        int64_t k, const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                                        int64_t ldc, int accumulate) {
  RMAOP_REQUIRE(ctx, fits(m) && fits(n) && fits(k) && fits(lda) && fits(ldb) && fits(ldc), RMAOP_ERR_ARG,
                "gemm %lld x %lld x %lld (ld %lld, %lld, %lld): cuBLAS needs every size to fit an int", (long long)m,
                (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc);
  if (m == 0 || n == 0) return RMAOP_OK;
  if (k == 0) { /* the empty sum: cuBLAS would leave C alone only when beta = 1 */
    if (accumulate) return RMAOP_OK;
    if (ldc == n) return rmaop__dev_set(ctx, dt, C, m * n, 0.0, 0.0);
    for (int64_t i = 0; i < m; ++i)
      RMAOP_CHECK(rmaop__dev_set(ctx, dt, (char *)C + (size_t)(i * ldc) * rmaop_dtype_size(dt), n, 0.0, 0.0));
    return RMAOP_OK;
  }
  cublasHandle_t h = (cublasHandle_t)handle;
  rmaop_status st = RMAOP_OK;
  DISPATCH(dt, st = gemm(ctx, h, conj_a, (int)m, (int)n, (int)k, (const T *)A, (int)lda, (const T *)B, (int)ldb,
                         (T *)C, (int)ldc, accumulate));
  return st;
}
