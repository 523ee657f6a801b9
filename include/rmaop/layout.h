/**
 * @file layout.h
 * @brief Layouts: how a vector's elements are distributed over the ranks (SCATTER, BROADCAST, stacked),
 *        and the view of one part of a stacked vector.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_LAYOUT_H
#define RMAOP_RMAOP_LAYOUT_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Layout                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

/**
 * SCATTER: @p global_n split over the ranks, the first (global_n mod P) ranks holding one more element
 * (PyLops-MPI's local_split). BROADCAST: every rank holds all @p global_n. Collective.
 * @return RMAOP_ERR_ARG for a negative size, or one that differs between ranks.
 */
rmaop_status rmaop_layout_create(rmaop_ctx ctx, rmaop_layout_kind kind, int64_t global_n, rmaop_layout *layout);
/** SCATTER with this rank's size @p local_n (uneven and zero sizes allowed). Collective. */
rmaop_status rmaop_layout_create_local(rmaop_ctx ctx, int64_t local_n, rmaop_layout *layout);
/** Drops a reference (vectors keep their layout alive); sets *layout to NULL. Not collective. */
void rmaop_layout_destroy(rmaop_layout *layout);

typedef struct {
  rmaop_layout_kind kind;
  int64_t global_n, local_n, offset; /**< offset: global index of this rank's first element (0 for BROADCAST) */
  int rank, size;
} rmaop_layout_info;
rmaop_status rmaop_layout_get_info(rmaop_layout layout, rmaop_layout_info *info);
/** Local size and offset of @p rank. Not collective. */
rmaop_status rmaop_layout_rank_range(rmaop_layout layout, int rank, int64_t *local_n, int64_t *offset);

/* ---- Stacked layouts and vectors (PyLops-MPI StackedDistributedArray) ---------------------------- */

/**
 * A stacked layout: the concatenation of @p nparts layouts (PyLops-MPI's StackedDistributedArray), each
 * SCATTER or BROADCAST (a stacked layout is not a part). A vector on it holds, on each rank, the parts'
 * local arrays one after the other, so every vector operation works on it unchanged; its dot products and
 * norms count every part once (a BROADCAST part enters the sum once, not once per rank), and its global
 * vector (gather / scatter) is the parts' global vectors one after the other. info.global_n is the sum of
 * the parts' sizes; info.local_n the sum of their local sizes; info.offset is the rank-major prefix sum of
 * local sizes (not a global index: the parts interleave). Not collective. Holds references on the parts.
 * @return RMAOP_ERR_ARG for nparts < 1, a NULL or stacked part, or parts of different contexts.
 */
rmaop_status rmaop_layout_create_stacked(int nparts, const rmaop_layout parts[], rmaop_layout *layout);
/** Number of parts of a stacked layout (0 for SCATTER and BROADCAST). Not collective. */
rmaop_status rmaop_layout_stack_nparts(rmaop_layout layout, int *nparts);
/** Part @p i of a stacked layout (borrowed: valid while @p layout lives). Not collective.
 *  @return RMAOP_ERR_ARG when @p layout is not stacked or @p i is out of range. */
rmaop_status rmaop_layout_stack_part(rmaop_layout layout, int i, rmaop_layout *part);

/**
 * A view of part @p i of a stacked vector: a vector on the part's layout whose local array is @p v's memory
 * at the part's offset (no copy, host or device memory alike), so an operator can be applied to one part
 * and writing through the view changes @p v. The view keeps @p v's memory alive (destroying @p v first is
 * allowed); destroying the view frees no vector memory. Not collective.
 * @return RMAOP_ERR_ARG when @p v is not stacked or @p i is out of range.
 */
rmaop_status rmaop_vec_stack_part(rmaop_vec v, int i, rmaop_vec *part);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_LAYOUT_H */
