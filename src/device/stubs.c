/* The device layer of a build without CUDA (CMakeLists.txt compiles this file only then; with CUDA the .cu
 * files define the same functions). The core and the operators call the device layer unconditionally behind
 * RMAOP__ON_DEVICE (src/core/ctx.h), a constant 0 here, and rmaop_ctx_create refuses device memory: nothing
 * below runs on a device path. What may be called on host paths does the host's harmless nothing (the frees
 * take the NULL a host object holds; "is it device memory", "is the stream capturing": no; no GPU is
 * visible); everything else refuses with RMAOP_ERR_UNSUPPORTED, naming itself, so a device path reached by
 * mistake fails loudly instead of touching memory. Every function of device.h, dev_ops.h, halo_dev.h and
 * matmul_dev.h's rmaop__dev_gemm is here (rmaop__gemm_host is host code: src/ops/op_matmul.c). */
#include "core/error.h"
#include "device/dev_ops.h"
#include "device/device.h"
#include "device/halo_dev.h"
#include "device/matmul_dev.h"
#include "device/resident.h"

/* Parameters go unused here (the library builds with -Wno-unused-parameter). */
#define NO_CUDA(ctx) RMAOP_ERROR((ctx), RMAOP_ERR_UNSUPPORTED, "%s: built without CUDA (no device layer)", __func__)

/* ---- device.h: queries and releases, harmless on host paths ---- */

void rmaop__dev_fini(rmaop_ctx ctx) {}
int rmaop__dev_count(void) { return 0; }
void rmaop__dev_free(void *p) {}
void rmaop__dev_host_free(void *p) {}
void rmaop__dev_graph_free(void *exec) {}
int rmaop__dev_capturing(rmaop_ctx ctx) { return 0; }
int rmaop__dev_is_device_ptr(const void *p) { return 0; }
double *rmaop__dev_dots_result(rmaop_ctx ctx) { return NULL; }

/* ---- device.h: refused ---- */

rmaop_status rmaop__dev_init(rmaop_ctx ctx) { return NO_CUDA(ctx); }
rmaop_status rmaop__dev_check_waits(rmaop_ctx ctx) { return NO_CUDA(ctx); }

rmaop_status rmaop__dev_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out) {
  if (out) *out = NULL;
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_host_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out) {
  if (out) *out = NULL;
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_drain(rmaop_ctx ctx, const char *what) { return NO_CUDA(ctx); }
rmaop_status rmaop__dev_sync(rmaop_ctx ctx) { return NO_CUDA(ctx); }

rmaop_status rmaop__dev_set(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n, double are, double aim) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_axpby(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n, double are, double aim,
                              double bre, double bim) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_pmult(rmaop_ctx ctx, rmaop_dtype dt, void *w, const void *x, const void *y, int64_t n) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_apply(rmaop_ctx ctx, rmaop_dtype dt, void *dst, const void *src, int64_t n, rmaop_mode mode) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_dots(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                             int64_t n, double *out) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_dots_enqueue(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                                     int64_t n, double *dev_out) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_axpby_s(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n, const double *s,
                                int ia, double sa, int ib, double bconst, int iskip) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_cgls_scalars(rmaop_ctx ctx, const double *d, double damp2, double *st, int step) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_pipecg_scalars(rmaop_ctx ctx, const double *d, double *st, double tol, int niter, int first) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_pipecg_update(rmaop_ctx ctx, rmaop_dtype dt, void *const vecs[], int64_t n, const double *st) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_lsqr_scalars(rmaop_ctx ctx, const double *d, double *st, int step) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_dred(rmaop_ctx ctx, const rmaop__dred_args *a) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_dots_reduce(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                                    int64_t n, const rmaop__dred_args *a) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_fetch_begin(rmaop_ctx ctx, double *host, const double *dev, int n) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_fetch_mark(rmaop_ctx ctx) { return NO_CUDA(ctx); }
rmaop_status rmaop__dev_fetch_wait(rmaop_ctx ctx, const char *what) { return NO_CUDA(ctx); }
rmaop_status rmaop__dev_capture_begin(rmaop_ctx ctx) { return NO_CUDA(ctx); }

rmaop_status rmaop__dev_capture_end(rmaop_ctx ctx, int keep, void **exec) {
  if (exec) *exec = NULL;
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_graph_launch(rmaop_ctx ctx, void *exec, const char *what, int part) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_while_begin(rmaop_ctx ctx, void **graph, uint64_t *cond) {
  *graph = NULL;
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_while_end(rmaop_ctx ctx, void *graph, int keep, void **exec) {
  if (exec)
    *exec = NULL;
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_while_stop(rmaop_ctx ctx, uint64_t cond, const double *st, rmaop__while_test t, int n,
                                   double *w) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_reduce_slots(rmaop_ctx ctx, const double *slots, int P, int64_t count, rmaop_redop op,
                                     double *out) {
  return NO_CUDA(ctx);
}

/* ---- dev_ops.h: stencil kernels and cuBLAS ---- */

rmaop_status rmaop__dev_stencil_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *x,
                                        const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_stencil_forward_interior(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                 const void *x, void *y, int64_t *lo, int64_t *hi) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_stencil_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                              const void *y, void *x) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_stencil_adjoint_ghost(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                              const void *y, void *ghost) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_laplacian_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, const void *x,
                                          const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_laplacian_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, const void *y,
                                                void *x) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_kh_put_rows(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev, const rmaop__khalo *host,
                                    const void *x) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_kh_put_adjoint(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, rmaop__khalo *dev,
                                       const rmaop__khalo *host, const void *y) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_kh_add(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev, const rmaop__khalo *host, void *x) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_stencil_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                           rmaop__khalo *dev, const void *x, void *y, int64_t a1, int64_t b1,
                                           int64_t a2, int64_t b2) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_laplacian_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, rmaop__khalo *dev,
                                             const void *x, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_blas_create(rmaop_ctx ctx, void **handle) {
  if (handle) *handle = NULL;
  return NO_CUDA(ctx);
}

void rmaop__dev_blas_destroy(void *handle) {} /* a host operator's NULL handle */

rmaop_status rmaop__dev_gemv(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int adjoint, const void *Bt, int64_t nr,
                             int64_t nc, const void *in, void *out) {
  return NO_CUDA(ctx);
}

/* ---- halo_dev.h and matmul_dev.h ---- */

rmaop_status rmaop__dev_halo_interior(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *local,
                                      const int64_t *ext_dims, const int64_t *lo, void *blk, void *ext, int to_ext) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_halo_zero(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *ext_dims, int nbox,
                                  const rmaop__halo_box *boxes, void *ext) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_hx_forward_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                         const void *blk, void *ext) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_hx_forward_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                       void *ext) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_hx_adjoint_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                         const void *ext, void *blk) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_hx_adjoint_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                       void *blk) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_gemm(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int conj_a, int64_t m, int64_t n, int64_t k,
                             const void *A, int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc,
                             int accumulate) {
  return NO_CUDA(ctx);
}

/* ---- resident.h (the GPU-resident solve) ---- */

int rmaop__dev_resident_grid(rmaop_ctx ctx, int nb, int share) { return 0; }

rmaop_status rmaop__dev_resident_run(rmaop_ctx ctx, const rmaop__res_args *a, int grid, const char *fn, int *stuck) {
  if (stuck) *stuck = 0;
  return NO_CUDA(ctx);
}
