/* Device (GPU) part of the halo operator (src/ops/op_halo.c): the interior copy between a rank's block and the
 * middle of its extended block, and the zeros outside the global array. Plain C declarations; the kernels
 * are in src/device/halo.cu (nvcc) with CUDA, refusals in src/device/stubs.c without it. Each enqueues on the
 * context's stream and returns; errors are recorded in the context. */
#ifndef RMAOP_HALO_DEV_H
#define RMAOP_HALO_DEV_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#include "kx.h"

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

/* The halo exchanged by kernel puts (RMAOP_HALO; src/ops/op_halo.c builds it), a kernel-put exchange (kx.h). Every
 * transfer is a box of cells packed row-major in a window half: a half holds, from 0, the forward's boxes from every
 * rank that puts here (ascending origin) and, from adj_at bytes, the adjoint's. fwd: my block's cells (at: block
 * coordinates) into a peer's forward area at element off; frecv: my forward area (from element off) into my extended
 * block (at: extended coordinates), the boxes disjoint; adj: the frecv boxes' cells of the extended block (the
 * adjoint's input) into their owners' adjoint areas at off; arecv: my adjoint area into my block's cells, the fwd
 * boxes, added in this (ascending origin) order, the reversed plan's. first: the cells of the boxes before (a list's
 * boxes laid end to end for one grid-stride loop). The struct lives in device memory. */
typedef struct {
  int peer;
  unsigned b0, nb; /* put boxes: its blocks in the begin launch (from b0, nb of them) */
  int64_t n[RMAOP_HALO_MAX_DIMS], at[RMAOP_HALO_MAX_DIMS];
  int64_t off, first;
} rmaop__hx_box;
/* A begin launch: the put boxes' blocks first (their last signals the neighbours), then the local copy's. */
#define RMAOP__HX_THREADS 256
#define RMAOP__HX_BOX_BLOCKS 64     /* at most, per box (ghost boxes are thin) */
#define RMAOP__HX_LOCAL_BLOCKS 2048 /* at most, for the local copy: enough to stream it */
typedef struct {
  rmaop__kx x;
  int ndim;
  int64_t loc[RMAOP_HALO_MAX_DIMS], ext[RMAOP_HALO_MAX_DIMS], lo[RMAOP_HALO_MAX_DIMS]; /* block, extended, offset */
  int64_t lst[RMAOP_HALO_MAX_DIMS], est[RMAOP_HALO_MAX_DIMS];                          /* their row-major strides */
  int64_t nloc, nzcells, nfcells, nacells; /* cells: the block, the zero boxes, frecv's, arecv's */
  size_t adj_at;
  int nzero, nfwd, nfrecv;
  int small;                                     /* every cell count below 2^32: 32-bit index arithmetic */
  unsigned fwd_blocks, adj_blocks;               /* the begin launches' put blocks (at least 1: the signals) */
  unsigned fwd_local, adj_local;                 /* and their local copy's */
  rmaop__hx_box inner;                           /* the block's cells in the extended block */
  rmaop__halo_box zero[2 * RMAOP_HALO_MAX_DIMS]; /* extended cells outside the global array */
  int64_t zfirst[2 * RMAOP_HALO_MAX_DIMS + 1];
  rmaop__hx_box fwd[RMAOP_DEVICE_MAX_PEERS], frecv[RMAOP_DEVICE_MAX_PEERS];
  rmaop__hx_box adj[RMAOP_DEVICE_MAX_PEERS], arecv[RMAOP_DEVICE_MAX_PEERS];
} rmaop__hxch;

/* The forward's first launch: my block's boxes stored into the peers' windows (each once the peer is done with the
 * half), the block into the middle of ext and zeros outside the global array, the neighbours signalled. */
rmaop_status rmaop__dev_hx_forward_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                         const void *blk, void *ext);
/* Its end: the ghost cells from the window once the signals are in (one launch, also with none: it ends the
 * exchange). */
rmaop_status rmaop__dev_hx_forward_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                       void *ext);
/* The adjoint: ghost cells of ext stored into their owners' windows, blk = the middle of ext; then blk += what the
 * others stored here, in ascending origin. */
rmaop_status rmaop__dev_hx_adjoint_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                         const void *ext, void *blk);
rmaop_status rmaop__dev_hx_adjoint_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev, const rmaop__hxch *host,
                                       void *blk);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_HALO_DEV_H */
