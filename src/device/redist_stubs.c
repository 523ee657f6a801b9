/* The redistribution's device box copy (src/device/redist_dev.h) in a build without CUDA, where redist.cu is not
 * compiled: a refusal, as every device call of src/device/stubs.c (never reached: no device context exists). With
 * CUDA this file compiles to nothing (CMake compiles every .c of src/device but stubs.c). */
#include "device/built.h"

#if !RMAOP__DEV_BUILT
#include "core/error.h"
#include "device/redist_dev.h"

rmaop_status rmaop__dev_box_copy(rmaop_ctx ctx, size_t es, int nbox, const rmaop__box *boxes, int64_t max_n,
                                 void *array, void *packed, int to_packed) {
  return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED, "%s: built without CUDA (no device layer)", __func__);
}
#else
typedef int rmaop__redist_stubs_unused; /* ISO C: a translation unit declares something */
#endif
