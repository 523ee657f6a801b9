/**
 * @file rmaop.h
 * @brief rmaop: distributed linear operators and solvers over one-sided (rma), two-sided (MPI) and NCCL
 *        communication. The one header a user includes.
 *
 * Parts (each compiles alone; this header includes them all, in dependency order):
 * - types.h     status codes, enums, their names, the opaque handle types
 * - ctx.h       contexts: options, create/destroy, info, stream, synchronize, backends, last error
 * - plan.h      plans, the one-sided window API (rmaop_win_*), rmaop_allreduce* and requests
 * - layout.h    layouts (SCATTER, BROADCAST, stacked)
 * - vec.h       vectors: local arithmetic, dots and norms, gather and scatter
 * - op.h        operators: apply, adjoint, dot test, composites, shell, diagonal
 * - op_grid.h   derivatives, Laplacian, N-D halo, gradient
 * - op_block.h  per-rank blocks (block-diagonal, vstack, hstack), dense multiply, Fredholm1
 * - op_fft.h    distributed N-D FFTs (PyLops-MPI MPIFFTND, MPIFFT2D) on FFTW and cuFFT
 * - alltoall.h  all-to-all plans; redistribution of an N-D array to another distributed axis
 * - op_signal.h multi-dimensional convolution (PyLops-MPI MPIMDC), 1-D non-stationary convolution
 * - solver.h    CG, CGLS, LSQR, pipelined CG
 * - solver_sparse.h power iteration, ISTA, FISTA; proximal operators (L1, L2, L21), ProximalGradient, ADMML2,
 *                 PrimalDual
 * - trace.h     per-site communication traces
 *
 * Conventions
 * - Every function returns an ::rmaop_status; RMAOP_OK is 0. On failure the context keeps a message that
 *   names the bad argument or the failing library call (rmaop_ctx_last_error()). Output arguments are
 *   written only on success. Nothing in the library calls exit, abort or MPI_Abort.
 * - "Collective" means every rank of the context's communicator must call, in the same order. Collective
 *   calls agree on failure: if one rank detects bad input, every rank returns an error (that rank the
 *   precise one, the others RMAOP_ERR_REMOTE) instead of hanging.
 * - "Neighbor-collective" means every rank that a plan connects must call.
 * - Scalars are passed as `double _Complex`; for real dtypes the imaginary part must be zero.
 */
#ifndef RMAOP_RMAOP_H
#define RMAOP_RMAOP_H

#define RMAOP_VERSION_MAJOR 0
#define RMAOP_VERSION_MINOR 2
#define RMAOP_VERSION_PATCH 0

#include "types.h"
#include "ctx.h"
#include "plan.h"
#include "layout.h"
#include "vec.h"
#include "op.h"
#include "op_grid.h"
#include "op_block.h"
#include "alltoall.h"
#include "op_fft.h"
#include "op_signal.h"
#include "solver.h"
#include "solver_sparse.h"
#include "trace.h"

#endif /* RMAOP_RMAOP_H */
