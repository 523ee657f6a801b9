/* Box copies of the redistribution (src/ops/redistribute.c): each box is an N-D sub-array of a C-ordered array,
 * packed contiguously (in its own C order) at an offset of a packed buffer. The host loop is in redistribute.c;
 * the device copy is one kernel over every box (src/device/redist.cu, built only with CUDA; a refusal in
 * src/device/redist_stubs.c without it). It enqueues on the context's stream and never synchronizes. */
#ifndef RMAOP_REDIST_DEV_H
#define RMAOP_REDIST_DEV_H

#include "rmaop/rmaop.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Dimensions of a box after merging: at most the array's (RMAOP_MAX_DIMS). */
#define RMAOP__BOX_MAX_DIMS 8

/* One box: nd dimensions of shape[] (outermost first, every one > 1 unless nd == 1), their strides in the array
 * (elements), the array offset of its first element, and where it starts in the packed buffer. n elements. */
typedef struct {
  int nd;
  int64_t n;
  int64_t array_off, packed_off;
  int64_t shape[RMAOP__BOX_MAX_DIMS];
  int64_t stride[RMAOP__BOX_MAX_DIMS];
} rmaop__box;

/* Device memory: for every box b of boxes[0 .. nbox) (descriptors in device memory), packed[b.packed_off + i] =
 * array[b's element i] (to_packed = 1), or the reverse (0), elements of es bytes (4, 8 or 16); max_n: the largest
 * box's n (sizes the grid). One kernel on the context's stream; nothing when max_n is 0. */
rmaop_status rmaop__dev_box_copy(rmaop_ctx ctx, size_t es, int nbox, const rmaop__box *boxes, int64_t max_n,
                                 void *array, void *packed, int to_packed);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_REDIST_DEV_H */
