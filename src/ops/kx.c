/* A kernel-put exchange's window and device copy (src/device/kx.h), for the derivatives' ghost rows and the N-D
 * halo. */
#include "core/ctx.h"
#include "core/error.h"
#include "device/device.h"
#include "device/kx.h"

int rmaop__kx_wanted(rmaop_ctx ctx) {
  if (!RMAOP__ON_DEVICE(ctx) || ctx->size < 2 || ctx->trace_on || ctx->halo == RMAOP__HALO_PLAN)
    return 0;
  return rmaop__dev_ipc_path(ctx) && (ctx->halo == RMAOP__HALO_KERNEL || rmaop__gpu_per_rank(ctx));
}

rmaop_status rmaop__kx_build(rmaop_ctx ctx, rmaop_status st, rmaop__kx *x, const void *desc, size_t bytes,
                             rmaop_win *win, void **dev, const char *what) {
  void *base = NULL;
  if (st == RMAOP_OK)
    st = rmaop_win_allocate(ctx, 2 * x->half, win, &base);
  if (st == RMAOP_OK)
    st = rmaop_win_device_handle(*win, &x->w);
  st = rmaop__agree(ctx, st, what);
  if (st == RMAOP_OK)
    st = rmaop__dev_malloc(ctx, bytes, what, dev);
  if (st == RMAOP_OK)
    st = rmaop__dev_copy(ctx, *dev, desc, bytes);
  if (st == RMAOP_OK)
    st = rmaop__dev_sync(ctx);
  return rmaop__agree(ctx, st, what);
}

void rmaop__kx_free(rmaop_win *win, void **dev) {
  rmaop_win_destroy(win);
  rmaop__dev_free(*dev);
  *dev = NULL;
}
