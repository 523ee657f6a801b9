/* Device (GPU) part of the halo operator (src/ops/op_halo.c): the interior copy between a rank's block and the
 * middle of its extended block, and the zeros outside the global array. Plain C declarations; the kernels
 * are in src/device/halo.cu (nvcc) with CUDA, refusals in src/device/stubs.c without it. Each enqueues on the
 * context's stream and returns; errors are recorded in the context. */
#ifndef RMAOP_HALO_DEV_H
#define RMAOP_HALO_DEV_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A box of cells of the extended block: extents n, first cell at `at` (extended coordinates). */
typedef struct {
  int64_t n[RMAOP_HALO_MAX_DIMS], at[RMAOP_HALO_MAX_DIMS];
} rmaop__halo_box;

/* to_ext: ext[lo + i] = blk[i] for every cell i of the block (extents `local`, row-major); else
 * blk[i] = ext[lo + i]. `ext_dims` are the extended block's extents. ndim <= RMAOP_HALO_MAX_DIMS. */
rmaop_status rmaop__dev_halo_interior(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *local,
                                      const int64_t *ext_dims, const int64_t *lo, void *blk, void *ext, int to_ext);

/* ext = 0 on every cell of the nbox boxes (nbox <= 2 RMAOP_HALO_MAX_DIMS), in one launch. `ext_dims`: the
 * extended block's extents. */
rmaop_status rmaop__dev_halo_zero(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *ext_dims, int nbox,
                                  const rmaop__halo_box *boxes, void *ext);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_HALO_DEV_H */
