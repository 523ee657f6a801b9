/* Local dense products of the matrix-multiply and Fredholm operators (src/ops/op_matmul.c, src/ops/op_fredholm.c):
 * a cache-blocked host loop in the dtype, and cuBLAS gemm on device memory (src/device/matmul.cu, built only
 * with CUDA, a refusal in src/device/stubs.c without it; it enqueues on the context's stream and never
 * synchronizes).
 *
 * Every matrix is row-major. C is m x n (leading dimension ldc); B is k x n (ldb); A is m x k (lda) when
 * conj_a = 0, or k x m (lda) when conj_a = 1, in which case the product uses A^H. accumulate = 0
 * overwrites C (the empty sum k = 0 zeroes it), 1 adds to it. */
#ifndef RMAOP_MATMUL_DEV_H
#define RMAOP_MATMUL_DEV_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Host memory: C (=|+=) op(A) B in the dtype's own arithmetic. */
void rmaop__gemm_host(rmaop_dtype dt, int conj_a, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                      const void *B, int64_t ldb, void *C, int64_t ldc, int accumulate);

/* Device memory, through the cuBLAS handle of rmaop__dev_blas_create (src/device/dev_ops.h): the same product.
 * Sizes and leading dimensions must fit an int (checked: RMAOP_ERR_ARG). */
rmaop_status rmaop__dev_gemm(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int conj_a, int64_t m, int64_t n, int64_t k,
                             const void *A, int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc,
                             int accumulate);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_MATMUL_DEV_H */
