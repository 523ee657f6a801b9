/* Buffers in the context's memory kind (src/core/vec.h): one place decides host or device, so the objects
 * that keep data in that memory (vectors, the dense operators) need no split of their own. */
#include "error.h"
#include "ctx.h"
#include "vec.h"
#include "device/device.h"

/* Without CUDA, rmaop_ctx_create refuses device memory: every buffer is host memory (RMAOP__ON_DEVICE is 0). */

rmaop_status rmaop__mem_calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out) {
  if (RMAOP__ON_DEVICE(ctx)) {
    RMAOP_REQUIRE(ctx, !size || n <= SIZE_MAX / size, RMAOP_ERR_NOMEM, "%zu x %zu bytes for %s overflow size_t", n,
                  size, what);
    return rmaop__dev_malloc(ctx, n * size, what, out);
  }
  return rmaop__calloc(ctx, n, size, what, out);
}

void rmaop__mem_free(rmaop_ctx ctx, void **p) {
  if (!*p) return; /* also where the owner failed before it had a context */
  if (RMAOP__ON_DEVICE(ctx)) rmaop__dev_free(*p);
  else free(*p);
  *p = NULL;
}

rmaop_status rmaop__mem_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes) {
  if (RMAOP__ON_DEVICE(ctx)) return rmaop__dev_copy(ctx, dst, src, bytes);
  if (bytes > 0 && dst != src) memcpy(dst, src, bytes);
  return RMAOP_OK;
}

rmaop_status rmaop__mem_zero(rmaop_ctx ctx, rmaop_dtype dt, void *dst, int64_t n) {
  if (RMAOP__ON_DEVICE(ctx)) return rmaop__dev_set(ctx, dt, dst, n, 0.0, 0.0);
  if (n > 0) memset(dst, 0, (size_t)n * rmaop_dtype_size(dt));
  return RMAOP_OK;
}
