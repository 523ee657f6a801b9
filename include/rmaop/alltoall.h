/**
 * @file alltoall.h
 * @brief All-to-all exchanges as plans, and redistribution of an N-D array from one distributed axis to another
 *        (PyLops-MPI DistributedArray.redistribute) as an operator and a vector call.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_ALLTOALL_H
#define RMAOP_RMAOP_ALLTOALL_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One rank's part of an all-to-all: block q of its source goes to rank q, rank q's block lands in its
 *  destination. Elements of the dtype; every array has one entry per rank of the context. */
typedef struct {
  rmaop_dtype dtype;
  int64_t src_len, dst_len;    /**< elements of this rank's source and destination buffers */
  const int64_t *send_counts;  /**< [size]: elements this rank sends to rank q (0 allowed; q == own rank allowed) */
  const int64_t *send_offsets; /**< [size]: where block q starts in src; NULL: packed in rank order */
  const int64_t *recv_offsets; /**< [size]: where rank q's block lands in dst; NULL: packed in rank order */
  const char *label;           /**< trace site; NULL: "alltoall" */
} rmaop_alltoall_spec;

/**
 * Creates an all-to-all plan: every rank sends block q of its source to rank q. Collective. The receive counts
 * come from the senders (one exchange, bounded by the context's timeout like every creation-time exchange) and
 * each received block must fit in dst_len; with recv_offsets NULL the blocks are packed in rank order. Source
 * blocks may overlap (the same data to several ranks); destination blocks may not.
 *
 * The result is an ordinary ::rmaop_plan: rmaop_plan_begin / _end / _execute (INSERT or ADD), rmaop_plan_reverse
 * (the exchange back: an all-to-all too), rmaop_plan_get_info and rmaop_plan_destroy work as for any plan, and
 * elements arrive unchanged, identical on every backend. It is marked as an all-to-all, which each backend
 * executes its best way:
 * - rma: one epoch of puts into the peers' staging windows, as every plan (zero blocks make no peer, so ranks
 *   with nothing to exchange skip the handshake); on GPUs over ipc each block is one copy-engine copy into the
 *   peer's window, then one device copy from the staging into dst at the end.
 * - twosided: one MPI_Ialltoallv per execution, polled with the context's timeout. In INSERT mode the blocks
 *   land straight in dst (host memory, or GPU memory with a CUDA-aware MPI); in ADD mode, or when counts or
 *   offsets do not fit an int, or without a CUDA-aware MPI on device memory, they go through the plan's staging
 *   and the shared unpack. Executions are then collective over the whole context, in the same order on every
 *   rank (as the rma backend's fence mode). After an RMAOP_ERR_TIMEOUT there the collective stays pending in
 *   MPI (collectives cannot be cancelled): the context is failed, and MPI may still read src and write dst if the
 *   missing rank comes later, so keep both buffers alive until MPI_Finalize.
 * - nccl: the grouped ncclSend/ncclRecv of every plan, one group per execution.
 * Self blocks are copied src -> dst at the end on every backend.
 * @return RMAOP_ERR_ARG (every rank agrees; the rank that saw it names it) for a bad dtype, negative length or
 *         count, NULL send_counts, a block outside src_len or dst_len, overlapping destination blocks, or ranks
 *         that disagree on the dtype.
 */
rmaop_status rmaop_plan_create_alltoall(rmaop_ctx ctx, const rmaop_alltoall_spec *spec, rmaop_plan *plan);

/* ---- redistribution: a change of the distributed axis (PyLops-MPI DistributedArray.redistribute) ---------- */

/**
 * The SCATTER layout of an @p ndim -D C-ordered array of shape @p dims distributed along @p axis with PyLops-MPI's
 * balanced split (local_split: the first dims[axis] mod P ranks one more): this rank's local part is the
 * sub-array of its rows of that axis, dims[axis] split x the product of the other dims elements. Collective.
 * @return RMAOP_ERR_ARG for ndim outside [1, RMAOP_MAX_DIMS], a negative dim, an axis outside [0, ndim), an
 *         overflowing size, or ranks that disagree on ndim, dims or axis.
 */
rmaop_status rmaop_layout_create_axis(rmaop_ctx ctx, int ndim, const int64_t dims[], int axis, rmaop_layout *layout);

/**
 * Redistribution as an operator: the N-D C-ordered array of shape @p dims (ndim <= RMAOP_MAX_DIMS), distributed
 * along @p from_axis with @p from_local elements of that axis here (-1: the balanced split), becomes the same
 * array distributed along @p to_axis with the balanced split. Each rank's local part, on both sides, is the
 * C-ordered sub-array it owns. Model layout: the from blocks; data layout: the to blocks (local-size SCATTER
 * layouts; on the to side rmaop_layout_create_axis's). The adjoint is the inverse redistribution (exact: the
 * operator is a permutation). Collective.
 *
 * Each application packs the sub-boxes bound for each rank into a contiguous buffer (a host loop or one CUDA
 * kernel; skipped where every block is already contiguous in place), moves them with one all-to-all plan
 * (rmaop_plan_create_alltoall) and unpacks each origin's sub-box (likewise skipped where it lands contiguously).
 * When from_axis == to_axis and the from split is the balanced one, it is a local copy.
 * @return RMAOP_ERR_ARG, agreed on every rank, for a bad dtype, ndim, dim or axis, a negative from_local other
 *         than -1, from_local values that do not add up to dims[from_axis], or ranks that disagree on dtype,
 *         ndim, dims or the axes.
 */
rmaop_status rmaop_op_create_redistribute(rmaop_ctx ctx, rmaop_dtype dtype, int ndim, const int64_t dims[],
                                          int from_axis, int64_t from_local, int to_axis, rmaop_op *A);

/**
 * y = x redistributed from @p from_axis to @p to_axis (as rmaop_op_create_redistribute; from_local is x's local
 * size divided by the product of the other dims). @p y must have the balanced layout along @p to_axis
 * (rmaop_layout_create_axis), the dtype and memory of x, and must not be x. Collective. One-off: it creates and
 * frees the exchange each call (a collective creation with its windows or requests): repeated redistributions
 * should keep the operator instead.
 * @return RMAOP_ERR_ARG, agreed on every rank, for the arguments above, a vector that is not SCATTER, x's local
 *         size not a whole number of rows of from_axis, or y's local size not the balanced one.
 */
rmaop_status rmaop_vec_redistribute(rmaop_vec x, int ndim, const int64_t dims[], int from_axis, int to_axis,
                                    rmaop_vec y);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_ALLTOALL_H */
