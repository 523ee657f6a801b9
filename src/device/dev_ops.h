/* Operators on device (GPU) memory: the local work of the stencil (derivatives, Laplacian) and block
 * operators as CUDA kernels and cuBLAS calls. Declarations are plain C; the definitions are in
 * src/device/ops.cu (nvcc) with CUDA, refusals in src/device/stubs.c without it. Every call enqueues on the
 * context's stream and returns (nothing here synchronizes); errors are recorded in the context (RMAOP_ERR_CUDA).
 *
 * The stencil coefficients are defined once, below, for the host (src/ops/op_stencil.c) and the device
 * kernels, so both paths use the same numbers. */
#ifndef RMAOP_DEV_OPS_H
#define RMAOP_DEV_OPS_H

#include "rmaop/rmaop.h"

#include <stdint.h>

#include "hd.h"
#include "kx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RMAOP__NK 5 /* stencil offsets k = -2 .. 2, stored at index k + 2 */

/* What decides the coefficients of a row (PyLops conventions). */
typedef struct {
  int order; /* 1 or 2 */
  rmaop_deriv_kind kind;
  int edge;
  double h;
  double scale; /* every coefficient is multiplied by it */
  int64_t N;    /* rows along the axis (global) */
} rmaop__coef_spec;

/* Coefficients c[k + 2] of output row g: row g of the output is sum_k c_k(g) x[g + k]. */
static inline RMAOP__HD void rmaop__stencil_coef(const rmaop__coef_spec *p, int64_t g, double c[RMAOP__NK]) {
  const int64_t N = p->N;
  const double h = p->h;
  for (int k = 0; k < RMAOP__NK; ++k) c[k] = 0.0;
#define C(k) c[(k) + 2]
  if (p->order == 1) {
    switch (p->kind) {
    case RMAOP_DERIV_FORWARD:
      if (g < N - 1) C(0) = -1 / h, C(1) = 1 / h;
      break;
    case RMAOP_DERIV_BACKWARD:
      if (g >= 1) C(0) = 1 / h, C(-1) = -1 / h;
      break;
    case RMAOP_DERIV_CENTERED3:
      if (g >= 1 && g <= N - 2) C(-1) = -0.5 / h, C(1) = 0.5 / h;
      else if (p->edge && g == 0) C(0) = -1 / h, C(1) = 1 / h;
      else if (p->edge && g == N - 1) C(0) = 1 / h, C(-1) = -1 / h;
      break;
    case RMAOP_DERIV_CENTERED5:
      if (g >= 2 && g <= N - 3) C(-2) = 1 / (12 * h), C(-1) = -2 / (3 * h), C(1) = 2 / (3 * h), C(2) = -1 / (12 * h);
      else if (p->edge && g == 0) C(0) = -1 / h, C(1) = 1 / h;
      else if (p->edge && g == 1) C(-1) = -0.5 / h, C(1) = 0.5 / h;
      else if (p->edge && g == N - 2) C(-1) = -0.5 / h, C(1) = 0.5 / h;
      else if (p->edge && g == N - 1) C(0) = 1 / h, C(-1) = -1 / h;
      break;
    }
  } else {
    const double h2 = h * h;
    switch (p->kind) {
    case RMAOP_DERIV_FORWARD:
      if (g <= N - 3) C(0) = 1 / h2, C(1) = -2 / h2, C(2) = 1 / h2;
      break;
    case RMAOP_DERIV_BACKWARD:
      if (g >= 2) C(-2) = 1 / h2, C(-1) = -2 / h2, C(0) = 1 / h2;
      break;
    default: /* centered */
      if (g >= 1 && g <= N - 2) C(-1) = 1 / h2, C(0) = -2 / h2, C(1) = 1 / h2;
      else if (p->edge && g == 0) C(0) = 1 / h2, C(1) = -2 / h2, C(2) = 1 / h2;
      else if (p->edge && g == N - 1) C(-2) = 1 / h2, C(-1) = -2 / h2, C(0) = 1 / h2;
      break;
    }
  }
#undef C
  for (int k = 0; k < RMAOP__NK; ++k) c[k] *= p->scale;
}

/* One stencil's geometry, by value for the kernels. The local array is [nouter][n rows][ninner]; rows
 * are global indices along the axis, this rank's being [off, off + n). Ghost rows (distributed only, nouter
 * = 1): hl rows before off, then hr rows after off + n, ninner elements each. */
typedef struct {
  rmaop__coef_spec cs;
  double cint[RMAOP__NK]; /* coefficients of the rows in [int_lo, int_hi) */
  int64_t int_lo, int_hi;
  int64_t off, n, nouter, ninner;
  int hl, hr;
  int accumulate; /* 1: add into the output's local rows; 0: overwrite them */
  /* The host path's split, reproduced so both paths add the same terms in the same order (bit for bit
   * but for fused multiply-adds, which the kernels do not use): forward rows in [flo, fhi) are summed
   * term by term from the interior coefficients, others are accumulated row by row; adjoint rows in
   * [jlo, jhi) are gathered from interior rows, others receive the edge rows' contributions first, then
   * the interior rows'. */
  int64_t flo, fhi, jlo, jhi;
} rmaop__stencil_desc;

/* Forward rows [a1, b1) and [a2, b2) of every outer block: y[g] (=|+=) sum_k c_k(g) x[g + k], reading
 * ghost rows (the halo's destination) where g + k is not local. One thread per output element. */
rmaop_status rmaop__dev_stencil_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *x,
                                        const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2);

/* Forward rows [*lo, *hi) that read no ghost row (a distributed stencil's fast rows), in one launch: the rows whose
 * taps are all local through the flat kernel, *lo and *hi set to that range, the others of [*lo, *hi) left for the
 * caller's edge-row launch; where none are flat (N-D, short blocks), all of [*lo, *hi) through the general kernel,
 * the range unchanged. */
rmaop_status rmaop__dev_stencil_forward_interior(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                 const void *x, void *y, int64_t *lo, int64_t *hi);

/* Adjoint, local rows: x[j] (=|+=) sum_k c_k(j - k) y[j - k] over the local rows j - k (the transpose in
 * gather form, one thread per element of x). */
rmaop_status rmaop__dev_stencil_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                              const void *y, void *x);

/* Adjoint, ghost rows: ghost[j] = sum_k c_k(j - k) y[j - k] over the local rows j - k, for the hl + hr
 * ghost rows (overwritten: no need to zero them first). Distributed stencils only. */
rmaop_status rmaop__dev_stencil_adjoint_ghost(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                              const void *y, void *ghost);

/* A Laplacian (src/ops/op_stencil.c) as its one-pass kernels see it. The local array is [rows][inner]: this
 * rank's rows [off, off + rows) of axis 0, each of `inner` elements. loc[] are the parts along local axes in the
 * operator's order (loc[0] overwrites, the others add: accumulate is set), dist the part along axis 0 (ghost
 * rows from its halo) at position dpos of that order (before loc[dpos]; -1: no such part). */
#define RMAOP__LAP_MAX_LOCAL (RMAOP_MAX_DIMS - 1)
typedef struct {
  int nloc, dpos;
  int64_t off, rows, inner;
  rmaop__stencil_desc dist;
  rmaop__stencil_desc loc[RMAOP__LAP_MAX_LOCAL];
} rmaop__lap_desc;

/* Every element of rows [a1, b1) and [a2, b2) (global, axis 0) of y = L x, each output element once with all its
 * parts: the sums and their order are the part-by-part path's (the forward stencil kernels'). A row whose axis-0
 * stencil needs ghost rows adds that part last, as the part-by-part path does once the halo is in. */
rmaop_status rmaop__dev_laplacian_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, const void *x,
                                          const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2);

/* Every local element of x = L^H y (the adjoint stencil kernels' gather form, parts in order); the axis-0
 * part's contributions to the neighbours' rows are rmaop__dev_stencil_adjoint_ghost's. */
rmaop_status rmaop__dev_laplacian_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, const void *y,
                                                void *x);

/* A distributed stencil's ghost rows put by its own kernels (RMAOP_HALO, src/ops/op_stencil.c builds it; the kernels
 * are in src/device/ops.cu), a kernel-put exchange (kx.h: the window's halves, the credits and signals): a half holds
 * the ghost rows (hl rows, then hr) and, from recv_at, the adjoint's receive rows (one slot per forward transfer of
 * the rank, in order). The struct lives in device memory (the kernels update its counters); the host keeps a copy
 * for launch shapes. Rows count ninner elements each. */
#define RMAOP__KH_MAX (2 * RMAOP_DEVICE_MAX_PEERS)
typedef struct {
  int peer, rows;
  int64_t src, dst;
} rmaop__kh_xfer;
typedef struct {
  rmaop__kx x;
  int64_t n, ninner;          /* local rows, elements per row */
  size_t recv_at;             /* the receive rows' offset in a half */
  int64_t add_head, add_tail; /* adjoint contributions land in local rows [0, add_head) and [add_tail, n) */
  int nfwd, nadj, nrecv, nfrom;
  rmaop__kh_xfer fwd[RMAOP__KH_MAX]; /* forward: local rows [src, +rows) into peer's ghost rows from dst */
  rmaop__kh_xfer adj[RMAOP__KH_MAX]; /* adjoint: ghost rows [src, +rows) into peer's receive rows from dst */
  rmaop__kh_xfer
      recv[RMAOP__KH_MAX];          /* adjoint, added in this order: receive rows [src, +rows) into local rows dst.. */
  int from[RMAOP_DEVICE_MAX_PEERS]; /* the ranks that put forward ghost rows here */
} rmaop__khalo;

/* Exchange s's puts: the forward's ghost rows of x (one kernel; nothing launched where there is no neighbour). */
rmaop_status rmaop__dev_kh_put_rows(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev, const rmaop__khalo *host,
                                    const void *x);
/* The adjoint's ghost rows computed from y (k_adjoint's rule) and stored straight into their owners' receive rows. */
rmaop_status rmaop__dev_kh_put_adjoint(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, rmaop__khalo *dev,
                                       const rmaop__khalo *host, const void *y);
/* The adjoint's end: x's receiving rows += the received rows, in the plan's unpack order (ascending origin). */
rmaop_status rmaop__dev_kh_add(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev, const rmaop__khalo *host, void *x);
/* The forward's end: rmaop__dev_stencil_forward / rmaop__dev_laplacian_forward of rows [a1, b1) and [a2, b2), ghost
 * rows from the window once their signals are in (one launch, also with no rows: it ends the exchange). */
rmaop_status rmaop__dev_stencil_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                           rmaop__khalo *dev, const void *x, void *y, int64_t a1, int64_t b1,
                                           int64_t a2, int64_t b2);
rmaop_status rmaop__dev_laplacian_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l, rmaop__khalo *dev,
                                             const void *x, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2);

/* A cuBLAS handle bound to the context's stream (set on the current device). */
rmaop_status rmaop__dev_blas_create(rmaop_ctx ctx, void **handle);
void rmaop__dev_blas_destroy(void *handle);

/* Dense block products with Bt, the nc x nr row-major transpose of an nr x nc row-major block B, in device
 * memory (seen by cuBLAS, column-major, as B itself): adjoint = 0: out[nr] = B in[nc]; adjoint = 1:
 * out[nc] = B^H in[nr]. Sizes must fit an int (checked). An empty input zeroes the output. */
rmaop_status rmaop__dev_gemv(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int adjoint, const void *Bt, int64_t nr,
                             int64_t nc, const void *in, void *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEV_OPS_H */
