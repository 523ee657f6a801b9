/* The non-stationary convolution's device kernel (src/device/nsconv_dev.h) in a build without CUDA, where nsconv.cu
 * is not compiled: a refusal, as every device call of src/device/stubs.c (never reached: no device context exists).
 * With CUDA this file compiles to nothing (CMake compiles every .c of src/device but stubs.c). */
#include "device/built.h"

#if !RMAOP__DEV_BUILT
#include "core/error.h"
#include "device/nsconv_dev.h"

rmaop_status rmaop__dev_nsconv(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__nsconv_geom *g, const void *hs, int adjoint,
                               int64_t k0, int64_t k1, const void *in, const void *ghost, void *out) {
  return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED, "%s: built without CUDA (no device layer)", __func__);
}
#else
typedef int rmaop__nsconv_stubs_unused; /* ISO C: a translation unit declares something */
#endif
