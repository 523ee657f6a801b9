/* The halo operator's interior copy on the device (src/halo_dev.h): one grid-stride kernel over the
 * block's cells, each mapped to its place in the extended block. A copy only, so the element type matters
 * for its size alone. */
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
  int64_t blocks = (total + HALO_THREADS - 1) / HALO_THREADS;
  if (blocks > 65535 * 4)
    blocks = 65535 * 4; /* the grid-stride loop covers the rest */
  DISPATCH(dt,
           (k_interior<T><<<(unsigned)blocks, HALO_THREADS, 0, STREAM(ctx)>>>(b, (T *)blk, (T *)ext, total, to_ext)));
  LAUNCH_CHECK(ctx);
  return RMAOP_OK;
}
