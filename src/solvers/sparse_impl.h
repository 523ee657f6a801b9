/* The element layer the sparsity and proximal solvers share (defined in src/solvers/solver_sparse.c, used by
 * src/solvers/solver_prox.c too): thresholding, local sums, the distributed percentile, the L21 group work and
 * a conjugation, on host memory (loops in C) or device memory (src/device/sparse_dev.h), by the vector's
 * memory. Not part of the public API.
 *
 * Local sums are this rank's share of a global sum: a replicated vector (BROADCAST, or a stacked vector's
 * BROADCAST part) is counted by rank 0 alone, as rmaop_vec_mdot counts it, so an rmaop_allreduce of the shares
 * is the sum over the global vector (PyLops-MPI counts a broadcast array once). */
#ifndef RMAOP_SOLVERS_SPARSE_IMPL_H
#define RMAOP_SOLVERS_SPARSE_IMPL_H

#include "solver_impl.h"
#include "device/sparse_dev.h"

/* Device scratch of the element layer: RMAOP__SPARSE_SCRATCH doubles of device memory on a device context,
 * NULL on a host one. One per solve or proximal object. */
typedef struct {
  rmaop_ctx ctx;
  double *scratch;
} rmaop__sparse_ws;

rmaop_status rmaop__sparse_ws_init(rmaop_ctx ctx, rmaop__sparse_ws *ws);
void rmaop__sparse_ws_free(rmaop__sparse_ws *ws);

/* out = thr(in, t) element by element (out may be in; same layout and dtype, not checked). Not collective. */
rmaop_status rmaop__sparse_thresh(rmaop__sparse_ws *ws, rmaop__thr kind, double t, rmaop_vec in, rmaop_vec out);
/* *out = this rank's share of the sum `kind` over a (b: DIFF2's second vector, a's layout). Not collective. */
rmaop_status rmaop__sparse_local_sum(rmaop__sparse_ws *ws, rmaop__sum kind, rmaop_vec a, rmaop_vec b, double *out);
/* *value = numpy.percentile(|x|, q) over the global vector (method "linear"), q in [0, 100]; the vector must
 * hold at least one element globally. Exact: a radix selection over the magnitudes' bits (8 bits per step, the
 * two neighbours of the interpolation together), one rmaop_allreduce of 512 counts per step until both are
 * unique, then one of their 2 values. Collective. */
rmaop_status rmaop__sparse_percentile(rmaop__sparse_ws *ws, rmaop_vec x, double q, double *value);
/* L21 on a stacked vector of nparts parts of one local length: out = the group scaling of x (out may be x;
 * out of x's layout). Not collective. */
rmaop_status rmaop__sparse_group_scale(rmaop__sparse_ws *ws, rmaop__group mode, rmaop_vec x, rmaop_vec out, double c,
                                       double sigma);
/* *out = this rank's share of sum_i s_i (the group norms; without sigma). Not collective. */
rmaop_status rmaop__sparse_group_norm(rmaop__sparse_ws *ws, rmaop_vec x, double *out);
/* x = conj(x) (nothing for real dtypes). Not collective. */
rmaop_status rmaop__sparse_conj(rmaop__sparse_ws *ws, rmaop_vec x);

#endif /* RMAOP_SOLVERS_SPARSE_IMPL_H */
