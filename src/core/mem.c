/* Buffers in the context's memory kind (rmaop_impl.h): one place decides host or device, so the objects
 * that keep data in that memory (vectors, the dense operators) need no split of their own. */
#include "error.h"
#include "ctx.h"
#include "vec.h"
#include "device/device.h"

/* Without CUDA, rmaop_ctx_create refuses device memory: every buffer is host memory. */

rmaop_status rmaop__mem_calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out) {
#ifdef RMAOP_HAVE_CUDA
  if (RMAOP__ON_DEVICE(ctx)) {
    RMAOP_REQUIRE(ctx, !size || n <= SIZE_MAX / size, RMAOP_ERR_NOMEM, "%zu x %zu bytes for %s overflow size_t", n,
                  size, what);
    return rmaop__dev_malloc(ctx, n * size, what, out);
  }
#endif
  return rmaop__calloc(ctx, n, size, what, out);
}

void rmaop__mem_free(rmaop_ctx ctx, void **p) {
  if (!*p) return; /* also where the owner failed before it had a context */
#ifdef RMAOP_HAVE_CUDA
  if (RMAOP__ON_DEVICE(ctx)) rmaop__dev_free(*p);
  else
#endif
    free(*p);
  *p = NULL;
}

rmaop_status rmaop__mem_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes) {
#ifdef RMAOP_HAVE_CUDA
  if (RMAOP__ON_DEVICE(ctx)) return rmaop__dev_copy(ctx, dst, src, bytes);
#endif
  if (bytes > 0 && dst != src) memcpy(dst, src, bytes);
  return RMAOP_OK;
}

rmaop_status rmaop__mem_zero(rmaop_ctx ctx, rmaop_dtype dt, void *dst, int64_t n) {
#ifdef RMAOP_HAVE_CUDA
  if (RMAOP__ON_DEVICE(ctx)) return rmaop__dev_set(ctx, dt, dst, n, 0.0, 0.0);
#endif
  if (n > 0) memset(dst, 0, (size_t)n * rmaop_dtype_size(dt));
  return RMAOP_OK;
}
