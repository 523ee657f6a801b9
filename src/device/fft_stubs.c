/* The device FFTs (src/device/fft_dev.h) in a build without CUDA, where fft_local.cu is not compiled: refusals, as
 * every device call of src/device/stubs.c (never reached: no device context exists), and a destructor that does
 * nothing. With CUDA this file compiles to nothing (CMake compiles every .c of src/device but stubs.c). */
#include "device/built.h"

#if !RMAOP__DEV_BUILT
#include "core/error.h"
#include "device/fft_dev.h"

#define NO_CUDA(ctx) RMAOP_ERROR((ctx), RMAOP_ERR_UNSUPPORTED, "%s: built without CUDA (no cuFFT)", __func__)

rmaop_status rmaop__dev_fft_plan(rmaop_ctx ctx, const rmaop__fft_geom *g, void **plan) {
  if (plan) *plan = NULL;
  return NO_CUDA(ctx);
}
rmaop_status rmaop__dev_fft_run(rmaop_ctx ctx, void *plan, const void *in, void *out) { return NO_CUDA(ctx); }
void rmaop__dev_fft_plan_destroy(void *plan) {}
rmaop_status rmaop__dev_fft_pre(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *in, void *scratch) {
  return NO_CUDA(ctx);
}
rmaop_status rmaop__dev_fft_post(rmaop_ctx ctx, const rmaop__fft_geom *g, const void *scratch, void *out) {
  return NO_CUDA(ctx);
}
#else
typedef int rmaop__fft_stubs_unused; /* ISO C: a translation unit declares something */
#endif
