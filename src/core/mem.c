/* Buffers in the context's memory kind (src/core/vec.h): one place decides host or device, so the objects
 * that keep data in that memory (vectors, the dense operators) need no split of their own. */
#include "ctx.h"
#include "device/device.h"
#include "error.h"
#include "shmem.h"
#include "vec.h"

/* Without CUDA, rmaop_ctx_create refuses device memory: every buffer is host memory (RMAOP__ON_DEVICE is 0). */

rmaop_status rmaop__mem_calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out) {
  if (RMAOP__ON_DEVICE(ctx)) {
    RMAOP_REQUIRE(ctx, !size || n <= SIZE_MAX / size, RMAOP_ERR_NOMEM, "%zu x %zu bytes for %s overflow size_t", n,
                  size, what);
    return rmaop__dev_malloc(ctx, n * size, what, out);
  }
  return rmaop__calloc(ctx, n, size, what, out);
}

rmaop_status rmaop__mem_calloc_node(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out) {
  if (!RMAOP__ON_DEVICE(ctx) && (!size || n <= SIZE_MAX / size) && (*out = rmaop__shm_alloc(ctx, n * size)) != NULL)
    return RMAOP_OK;
  return rmaop__mem_calloc(ctx, n, size, what, out);
}

static void host_free(rmaop_ctx ctx, void *p) {
  if (!rmaop__shm_free(ctx, p))
    free(p);
}

void rmaop__mem_free(rmaop_ctx ctx, void **p) {
  if (!*p) return; /* also where the owner failed before it had a context */
  if (RMAOP__ON_DEVICE(ctx)) rmaop__dev_free(*p);
  else
    host_free(ctx, *p);
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

/* ---- work buffers (vec.h) ---- */

static int pinned_kind(rmaop_ctx ctx, int pinned) {
  return pinned && RMAOP__ON_DEVICE(ctx);
}

static void work_release(rmaop_ctx ctx, int pinned, void *p) {
  if (pinned_kind(ctx, pinned)) {
    rmaop__dev_host_free(p);
  } else if (RMAOP__ON_DEVICE(ctx)) {
    (void)rmaop__dev_sync(ctx); /* stream work still using it finishes first */
    rmaop__dev_free(p);
  } else {
    host_free(ctx, p);
  }
}

static rmaop_status work_new(rmaop_ctx ctx, int pinned, size_t bytes, const char *what, void **out) {
  if (pinned_kind(ctx, pinned)) return rmaop__dev_host_malloc(ctx, bytes, what, out);
  return rmaop__mem_calloc_node(ctx, 1, bytes, what, out);
}

rmaop_status rmaop__work_alloc(rmaop_ctx ctx, int pinned, size_t bytes, const char *what, void **out) {
  for (int i = ctx->nwork - 1; i >= 0; --i) {
    if (ctx->work[i].bytes != bytes || ctx->work[i].pinned != pinned) continue;
    void *p = ctx->work[i].p;
    memmove(&ctx->work[i], &ctx->work[i + 1], (size_t)(ctx->nwork - 1 - i) * sizeof ctx->work[0]);
    ctx->nwork--;
    rmaop_status st = RMAOP_OK;
    if (RMAOP__ON_DEVICE(ctx) && !pinned) /* ordered after its previous user's work on the stream */
      st = rmaop__dev_set(ctx, RMAOP_F32, p, (int64_t)(bytes / 4), 0.0, 0.0);
    else
      memset(p, 0, bytes);
    if (st != RMAOP_OK) {
      work_release(ctx, pinned, p);
      return st;
    }
    *out = p;
    return RMAOP_OK;
  }
  rmaop_status st = work_new(ctx, pinned, bytes, what, out);
  if (st == RMAOP_ERR_NOMEM && ctx->nwork > 0) { /* what the cache holds may be what is missing */
    rmaop__work_flush(ctx);
    st = work_new(ctx, pinned, bytes, what, out);
  }
  return st;
}

void rmaop__work_free(rmaop_ctx ctx, int pinned, void *p, size_t bytes) {
  if (!p) return;
  if (bytes == 0 || bytes % 4 != 0) { /* never handed out by the cache's zeroing (F32 elements) */
    work_release(ctx, pinned, p);
    return;
  }
  if (ctx->nwork == RMAOP__WORK_CACHE) { /* the oldest goes */
    work_release(ctx, ctx->work[0].pinned, ctx->work[0].p);
    memmove(&ctx->work[0], &ctx->work[1], (size_t)(RMAOP__WORK_CACHE - 1) * sizeof ctx->work[0]);
    ctx->nwork--;
  }
  ctx->work[ctx->nwork].p = p;
  ctx->work[ctx->nwork].bytes = bytes;
  ctx->work[ctx->nwork].pinned = pinned;
  ctx->nwork++;
}

void rmaop__work_flush(rmaop_ctx ctx) {
  for (int i = 0; i < ctx->nwork; ++i) work_release(ctx, ctx->work[i].pinned, ctx->work[i].p);
  ctx->nwork = 0;
}
