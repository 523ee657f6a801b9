/**
 * @file op_block.h
 * @brief Block-distributed matrix operators: per-rank blocks (block-diagonal, vertical and horizontal
 *        stacks), the distributed dense multiply (block rows, SUMMA) and Fredholm1.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_OP_BLOCK_H
#define RMAOP_RMAOP_OP_BLOCK_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A rank's local block: a dense row-major matrix (copied) or callbacks on host arrays. */
typedef struct {
  int64_t nrows, ncols;
  const void *dense; /**< nrows x ncols of the operator's dtype, row-major; NULL: use the callbacks */
  rmaop_status (*apply)(void *user, const void *x, void *y);         /**< y = B x */
  rmaop_status (*apply_adjoint)(void *user, const void *y, void *x); /**< x = B^H y */
  void *user;
} rmaop_block;

/** Block-diagonal: rank r applies its block to its part. Model SCATTER(ncols), data SCATTER(nrows). Collective. */
rmaop_status rmaop_op_create_blockdiag(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);
/** Vertical stack: model BROADCAST (ncols equal on every rank), data SCATTER(nrows); the adjoint sums
 *  every rank's B_r^H y_r with one reduction (PyLops-MPI MPIVStack). Collective. */
rmaop_status rmaop_op_create_vstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);
/** Horizontal stack: model SCATTER(ncols), data BROADCAST (nrows equal everywhere); y = sum_r B_r x_r. Collective. */
rmaop_status rmaop_op_create_hstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A);

/* ---- dense matrix multiply and Fredholm1 (PyLops-MPI MPIMatrixMult, MPIFredholm1) ---------------- */

/** How MPIMatrixMult distributes A, X and Y (PyLops-MPI's `kind`). */
typedef enum {
  RMAOP_MATMUL_BLOCK = 0, /**< 1-D block rows over all P ranks: A, X and Y by rows (balanced split) */
  RMAOP_MATMUL_SUMMA      /**< 2-D blocks on a g x g grid, g = floor(sqrt(P)); ranks >= g*g idle */
} rmaop_matmul_kind;

/** The blocks one rank holds for Y = A X (A: N x K, X: K x M, Y: N x M; every block row-major).
 *  The model vector's local part is this rank's X block (x_nrows * x_ncols elements), the data vector's
 *  its Y block; their SCATTER layouts concatenate the ranks' blocks in rank order. */
typedef struct {
  int active;                               /**< 0: an idle rank (SUMMA, rank >= g*g): it owns nothing */
  int grid_dim, grid_row, grid_col;         /**< SUMMA: g and this rank's place (row-major); block: P, rank, 0 */
  int64_t a_row0, a_nrows, a_col0, a_ncols; /**< the block of A (global row / column offsets and sizes) */
  int64_t x_row0, x_nrows, x_col0, x_ncols; /**< the block of X */
  int64_t y_row0, y_nrows, y_col0, y_ncols; /**< the block of Y */
} rmaop_matmul_blocks;

/**
 * The blocks of @p rank for a @p kind multiply of global sizes @p N, @p K, @p M on @p ctx. Not collective.
 * block: rows of A and Y split like rmaop_layout_create (first N mod P ranks one more), rows of X likewise
 * over K; every block spans all columns. summa: PyLops-MPI's split, ceil(n / g) per grid row or column, the
 * last ones shorter (possibly empty): A(i, j) = rows of block i x columns of block j of K, X(i, j) = K block i
 * x M block j, Y(i, j) = N block i x M block j.
 * @return RMAOP_ERR_ARG for a bad kind, negative size or rank outside [0, P).
 */
rmaop_status rmaop_op_matmul_get_blocks(rmaop_ctx ctx, rmaop_matmul_kind kind, int64_t N, int64_t K, int64_t M, int rank,
                                     rmaop_matmul_blocks *blocks);

/** Options of a distributed dense multiply. */
typedef struct {
  rmaop_matmul_kind kind;
  rmaop_dtype dtype;
  int64_t N, K, M;       /**< global sizes (equal on every rank) */
  int64_t nrows, ncols;  /**< this rank's block of A: must be a_nrows x a_ncols of rmaop_op_matmul_get_blocks */
  const void *A;         /**< nrows x ncols of the dtype, row-major, host memory (copied; NULL when empty) */
  const char *label;     /**< trace name of its exchanges; NULL: "matmul" */
} rmaop_matmul_spec;

/**
 * Y = A X as an operator (PyLops-MPI MPIMatrixMult; adjoint X = A^H Y). Collective. Model and data are
 * SCATTER layouts of the blocks rmaop_op_matmul_get_blocks gives (x_nrows * x_ncols and y_nrows * y_ncols
 * elements here).
 * - RMAOP_MATMUL_BLOCK: the forward allgathers X's row blocks with one plan (every rank then holds X,
 *   K x M) and multiplies its rows of A; the adjoint multiplies A_r^H Y_r (K x M) and sums the row blocks
 *   onto their owners with the same plan reversed in ADD mode (a reduce-scatter, in ascending rank order).
 * - RMAOP_MATMUL_SUMMA: g steps; at step k, A(i, k) travels along grid row i and X(k, j) along grid column j
 *   (van de Geijn and Watts 1997). On the rma backend every panel is a one-sided get from the owner's
 *   window (rmaop_win_*; device memory needs the ipc transport, i.e. auto or ipc with every rank on one
 *   node; otherwise plans are used); on the other backends one plan per step pushes the panels. The
 *   adjoint fetches A(k, i) and Y(k, j) and accumulates A(k, i)^H Y(k, j).
 * The local products are a cache-blocked loop in the dtype on host memory, cuBLAS gemm on device memory.
 * @return RMAOP_ERR_ARG (on every rank) for a bad kind or dtype, sizes that differ between ranks, or an A
 *         block whose shape is not the expected one (the message names both shapes).
 */
rmaop_status rmaop_op_create_matmul(rmaop_ctx ctx, const rmaop_matmul_spec *spec, rmaop_op *A);

/**
 * PyLops Fredholm1 distributed like PyLops-MPI MPIFredholm1: d[s] = G[s] m[s] for every slice s, with G of
 * global shape (nsl, nx, ny), model (nsl, ny, nz) and data (nsl, nx, nz), all row-major; adjoint m[s] =
 * G[s]^H d[s]. Each rank holds @p nsl_local consecutive slices of G (rank order; zero allowed), @p G
 * being nsl_local x nx x ny of @p dtype in host memory (copied). Model and data are BROADCAST (every rank
 * holds them whole, as in PyLops-MPI): each rank computes its slices and one plan allgathers them (the
 * adjoint likewise, with a second plan). Collective.
 * @return RMAOP_ERR_ARG (on every rank) for negative sizes, nx / ny / nz differing between ranks, or a NULL
 *         G with slices.
 */
rmaop_status rmaop_op_create_fredholm1(rmaop_ctx ctx, rmaop_dtype dtype, int64_t nsl_local, int64_t nx, int64_t ny,
                                       int64_t nz, const void *G, rmaop_op *A);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_OP_BLOCK_H */
