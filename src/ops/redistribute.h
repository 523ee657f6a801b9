/* Redistribution of an N-D C-ordered array from one distributed axis to another (PyLops-MPI's
 * DistributedArray.redistribute), for the operators that need the whole of one axis on each rank (FFTs) and for
 * rmaop_op_create_redistribute (src/ops/op_redistribute.c).
 *
 * Each rank's block is the C-ordered sub-array it owns: the full extent of every axis but the distributed one,
 * and its share of that one. A redistribution packs each destination's sub-box into a contiguous send buffer,
 * moves the blocks with one all-to-all plan (rmaop_plan_create_alltoall) and unpacks each origin's sub-box into
 * the destination (src/ops/redistribute.c; the device box copies are in src/device/redist.cu). */
#ifndef RMAOP_OPS_REDISTRIBUTE_H
#define RMAOP_OPS_REDISTRIBUTE_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rmaop__redist rmaop__redist;

/* Collective; agreed on every rank (a bad argument on one rank fails them all). from_local: this rank's
 * extent along from_axis, -1 for the balanced split. The to side is always the balanced split. */
rmaop_status rmaop__redist_create(rmaop_ctx ctx, rmaop_dtype dtype, int ndim, const int64_t dims[], int from_axis,
                                  int64_t from_local, int to_axis, const char *label, rmaop__redist **out);
/* Moves src (this rank's block on the from side; reverse: the to side) into dst (the other side's block),
 * context memory, on the context's stream for device memory. src and dst must not alias. */
rmaop_status rmaop__redist_begin(rmaop__redist *r, int reverse, const void *src, void *dst);
rmaop_status rmaop__redist_end(rmaop__redist *r);
void rmaop__redist_destroy(rmaop__redist **r); /* collective; sets *r to NULL */
/* Elements of this rank's block on side 0 (from) or 1 (to). */
int64_t rmaop__redist_local_n(const rmaop__redist *r, int side);
/* PyLops-MPI's balanced split of n over size ranks: count and offset of rank. */
void rmaop__split_balanced(int64_t n, int size, int rank, int64_t *count, int64_t *offset);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_OPS_REDISTRIBUTE_H */
