/**
 * @file op_grid.h
 * @brief Operators on N-D grids: first and second derivatives, the Laplacian, the N-D halo on a
 *        cartesian process grid, and the gradient.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_OP_GRID_H
#define RMAOP_RMAOP_OP_GRID_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Derivative kinds. For second derivatives CENTERED3 means PyLops' "centered". */
typedef enum { RMAOP_DERIV_FORWARD = 0, RMAOP_DERIV_BACKWARD, RMAOP_DERIV_CENTERED3, RMAOP_DERIV_CENTERED5 } rmaop_deriv_kind;

#define RMAOP_MAX_DIMS 8
/** An N-D array distributed along axis 0 (C order: the last axis is contiguous). */
typedef struct {
  int ndim;
  int64_t dims[RMAOP_MAX_DIMS]; /**< global shape */
  int64_t local_rows;           /**< rows of axis 0 on this rank; -1: balanced split (PyLops-MPI local_split) */
} rmaop_grid;

/** Options of a derivative (first or second). */
typedef struct {
  rmaop_grid grid;
  int axis;               /**< axis of the derivative; 0 exchanges halos, others are local */
  rmaop_deriv_kind kind;
  int edge;               /**< PyLops' edge flag */
  double sampling;        /**< h; 0 means 1 */
  rmaop_dtype dtype;
  const char *label;      /**< trace name of its halo exchange; NULL: "deriv" */
} rmaop_deriv_spec;

/** PyLops FirstDerivative along @p spec->axis. Collective. Model and data layouts are equal. */
rmaop_status rmaop_op_create_first_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A);
/** PyLops SecondDerivative (kinds FORWARD, BACKWARD, CENTERED3). Collective. */
rmaop_status rmaop_op_create_second_derivative(rmaop_ctx ctx, const rmaop_deriv_spec *spec, rmaop_op *A);

typedef struct {
  rmaop_grid grid;
  int naxes;                      /**< 0: the last two axes (PyLops' default (-2, -1)) */
  int axes[RMAOP_MAX_DIMS];
  double weights[RMAOP_MAX_DIMS]; /**< per listed axis (per default axis when naxes = 0); all 0: ones */
  double sampling[RMAOP_MAX_DIMS];/**< likewise; 0: one */
  int edge;
  rmaop_deriv_kind kind;          /**< applied on every axis (PyLops applies it to the first only) */
  rmaop_dtype dtype;
  const char *label;
} rmaop_laplacian_spec;
/** Weighted sum of second derivatives (PyLops Laplacian). Collective. */
rmaop_status rmaop_op_create_laplacian(rmaop_ctx ctx, const rmaop_laplacian_spec *spec, rmaop_op *A);

/* ---- N-D halo on a cartesian process grid; gradient (src/ops/op_halo.c, src/ops/op_grad.c) ---- */

#define RMAOP_HALO_MAX_DIMS 4
/** An N-D halo (PyLops-MPI MPIHalo): the global array (row-major) is split in blocks over a cartesian
 *  process grid, not periodic. */
typedef struct {
  int ndim;                             /**< 1 .. RMAOP_HALO_MAX_DIMS */
  int64_t dims[RMAOP_HALO_MAX_DIMS];    /**< global shape */
  int procs[RMAOP_HALO_MAX_DIMS];       /**< ranks along each axis; 0 entries are filled by MPI_Dims_create; the
                                             product must equal the context's size */
  int64_t lo[RMAOP_HALO_MAX_DIMS];      /**< ghost cells before the block along each axis (>= 0) */
  int64_t hi[RMAOP_HALO_MAX_DIMS];      /**< ghost cells after the block along each axis (>= 0) */
  rmaop_dtype dtype;
  const char *label;                    /**< trace name of the exchange; NULL: "halo" */
} rmaop_halo_spec;

/** Where a rank's block sits (what a user needs to build its local arrays). */
typedef struct {
  int ndim;
  int procs[RMAOP_HALO_MAX_DIMS];       /**< the process grid (after MPI_Dims_create) */
  int coords[RMAOP_HALO_MAX_DIMS];      /**< this rank's coordinates: row-major, MPI_Cart_create with reorder = 0 */
  int64_t local[RMAOP_HALO_MAX_DIMS];   /**< extents of this rank's block: n/p + (coord < n mod p) */
  int64_t offset[RMAOP_HALO_MAX_DIMS];  /**< global index of the block's first cell along each axis */
  int64_t extended[RMAOP_HALO_MAX_DIMS];/**< local + lo + hi: the extents of the data block */
} rmaop_halo_info;

/**
 * The halo operator. Model: this rank's block (SCATTER, local_n = product of local extents, row-major).
 * Data: the block extended by lo/hi ghost cells per axis (local_n = product of extended extents). Forward:
 * the block is copied to the interior, ghost cells get the neighbours' values, diagonal (edge and corner)
 * neighbours included, and zeros outside the global array. Adjoint: the exact transpose: the interior is
 * copied back and every ghost cell is added at its owner (the plan reversed in ADD mode). The exchange is
 * one plan. Collective.
 * @return RMAOP_ERR_ARG when ndim is outside [1, RMAOP_HALO_MAX_DIMS], a dimension is < 1, the grid's product
 *         is not the context's size, or a width is negative or larger than the smallest block extent along its
 *         axis (the message names the axis and side: "lo[1]").
 */
rmaop_status rmaop_op_create_halo(rmaop_ctx ctx, const rmaop_halo_spec *spec, rmaop_op *A);
/** The grid and this rank's block of a halo operator. Not collective. RMAOP_ERR_ARG when @p A is not a halo. */
rmaop_status rmaop_op_halo_get_info(rmaop_op A, rmaop_halo_info *info);

/** Options of a gradient (PyLops Gradient: a first derivative along every axis). */
typedef struct {
  rmaop_grid grid;                  /**< distributed along axis 0 */
  double sampling[RMAOP_MAX_DIMS];  /**< per axis; 0: one */
  int edge;                         /**< PyLops' edge flag */
  rmaop_deriv_kind kind;            /**< FORWARD, BACKWARD, CENTERED3 (PyLops "centered"), CENTERED5 */
  rmaop_dtype dtype;
  const char *label;                /**< trace name of the axis-0 halo; NULL: "gradient" */
} rmaop_gradient_spec;
/**
 * The gradient (PyLops-MPI MPIGradient): the stacked vertical stack (rmaop_op_create_stacked_vstack) of a
 * first derivative along every axis. Model: the grid's elements. Data: a stacked layout of ndim parts, so
 * each rank holds the ndim derivative outputs of its rows one after the other (part d: the derivative along
 * axis d; rmaop_vec_stack_part gives it). Only the axis-0 part communicates. Collective.
 */
rmaop_status rmaop_op_create_gradient(rmaop_ctx ctx, const rmaop_gradient_spec *spec, rmaop_op *A);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_OP_GRID_H */
