/* src/device/sparse_dev.h in a build without CUDA: every call refuses with RMAOP_ERR_UNSUPPORTED, naming itself
 * (rmaop_ctx_create refuses device memory there, so the solvers never reach them). CMakeLists.txt compiles every
 * C file of src/device; this one defines its functions only when src/device/sparse.cu is not built. */
#include "core/error.h"
#include "device/sparse_dev.h"

#ifndef RMAOP_HAVE_CUDA

#define NO_CUDA(ctx) RMAOP_ERROR((ctx), RMAOP_ERR_UNSUPPORTED, "%s: built without CUDA (no device layer)", __func__)

rmaop_status rmaop__dev_thresh(rmaop_ctx ctx, rmaop_dtype dt, rmaop__thr kind, double t, const void *in, void *out,
                               int64_t n) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_sum(rmaop_ctx ctx, rmaop_dtype dt, rmaop__sum kind, const void *a, const void *b, int64_t n,
                            double *scratch, double *host_out) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_group_scale(rmaop_ctx ctx, rmaop_dtype dt, rmaop__group mode, int nparts,
                                    const void *const in[], void *const out[], int64_t n, double c, double sigma) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_group_norm(rmaop_ctx ctx, rmaop_dtype dt, int nparts, const void *const in[], int64_t n,
                                   double *scratch, double *host_out) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_radix_hist(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                   const uint64_t prefix[2], double *scratch, double counts[2 * RMAOP__RADIX_BINS]) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_radix_max(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                  const uint64_t prefix[2], double *scratch, double out[2]) {
  return NO_CUDA(ctx);
}

rmaop_status rmaop__dev_conj(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n) { return NO_CUDA(ctx); }

#endif /* !RMAOP_HAVE_CUDA */
