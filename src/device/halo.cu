/* The halo operator on the device (src/device/halo_dev.h): the interior copy, one grid-stride kernel over the
 * block's cells, each mapped to its place in the extended block; and the zeros outside the global array,
 * one kernel over the cells of a few thin boxes. Copies and zeros only, so the element type matters for its
 * size alone. */
#include "cuda_impl.h"
#include "halo_dev.h"

namespace {

const int HALO_THREADS = 256;

struct box {
  int ndim;
  int64_t local[RMAOP_HALO_MAX_DIMS], est[RMAOP_HALO_MAX_DIMS], lo[RMAOP_HALO_MAX_DIMS];
};

template <typename T> __global__ void k_interior(box b, T *blk, T *ext, int64_t total, int to_ext) {
  GRID_STRIDE(i, total) {
    int64_t rest = i, e = 0;
    for (int d = b.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % b.local[d];
      rest /= b.local[d];
      e += (c + b.lo[d]) * b.est[d];
    }
    if (to_ext)
      ext[e] = blk[i];
    else
      blk[i] = ext[e];
  }
}

/* The boxes laid end to end: cell i is in box k when first[k] <= i < first[k + 1]. */
struct zero_boxes {
  int ndim, nbox;
  rmaop__halo_box box[2 * RMAOP_HALO_MAX_DIMS];
  int64_t est[RMAOP_HALO_MAX_DIMS], first[2 * RMAOP_HALO_MAX_DIMS + 1];
};

template <typename T> __global__ void k_zero(zero_boxes z, T *ext, int64_t total) {
  GRID_STRIDE(i, total) {
    int k = 0;
    while (i >= z.first[k + 1])
      ++k;
    int64_t rest = i - z.first[k], e = 0;
    for (int d = z.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % z.box[k].n[d];
      rest /= z.box[k].n[d];
      e += (c + z.box[k].at[d]) * z.est[d];
    }
    ext[e] = T();
  }
}

} // namespace

extern "C" rmaop_status rmaop__dev_halo_interior(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *local,
                                                 const int64_t *ext_dims, const int64_t *lo, void *blk, void *ext,
                                                 int to_ext) {
  box b = {};
  b.ndim = ndim;
  int64_t total = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    b.local[d] = local[d], b.lo[d] = lo[d];
    b.est[d] = d == ndim - 1 ? 1 : b.est[d + 1] * ext_dims[d + 1];
    total *= local[d];
  }
  if (total <= 0)
    return RMAOP_OK;
  DISPATCH(dt, (k_interior<T><<<grid_for(total, HALO_THREADS), HALO_THREADS, 0, STREAM(ctx)>>>(b, (T *)blk, (T *)ext,
                                                                                               total, to_ext)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_halo_zero(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *ext_dims, int nbox,
                                             const rmaop__halo_box *boxes, void *ext) {
  RMAOP_REQUIRE(ctx, nbox >= 0 && nbox <= 2 * RMAOP_HALO_MAX_DIMS, RMAOP_ERR_INTERNAL,
                "rmaop__dev_halo_zero: %d boxes (at most %d)", nbox, 2 * RMAOP_HALO_MAX_DIMS);
  zero_boxes z = {};
  z.ndim = ndim, z.nbox = nbox;
  for (int d = ndim - 1; d >= 0; --d)
    z.est[d] = d == ndim - 1 ? 1 : z.est[d + 1] * ext_dims[d + 1];
  for (int k = 0; k < nbox; ++k) {
    int64_t cells = 1;
    for (int d = 0; d < ndim; ++d)
      cells *= boxes[k].n[d];
    z.box[k] = boxes[k];
    z.first[k + 1] = z.first[k] + cells;
  }
  const int64_t total = z.first[nbox];
  if (total <= 0)
    return RMAOP_OK;
  DISPATCH(dt, (k_zero<T><<<grid_for(total, HALO_THREADS), HALO_THREADS, 0, STREAM(ctx)>>>(z, (T *)ext, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}
