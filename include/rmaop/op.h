/**
 * @file op.h
 * @brief Linear operators: applying A and A^H, info, the dot test, and operators built from others (sums,
 *        products, scaled, adjoint, stacked), shell operators and the diagonal.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_OP_H
#define RMAOP_RMAOP_OP_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Linear operators (PyLops-MPI semantics): y = A x and x = A^H y                                   */
/* ------------------------------------------------------------------------------------------------ */

/**
 * y = A x. Collective (neighbor-collective for stencils). Arguments are checked on each rank without a
 * reduction (an allreduce per application would double a latency-bound solver's cost): with bad
 * arguments on one rank only, that rank returns RMAOP_ERR_ARG and its neighbours fail with
 * RMAOP_ERR_TIMEOUT after the context's timeout (their context is then failed). Pass the same kind of
 * arguments on every rank. @p x lives on the model layout, @p y on the data
 * layout, both of the operator's dtype. @p x is not modified; @p y is overwritten.
 */
rmaop_status rmaop_op_apply(rmaop_op A, rmaop_vec x, rmaop_vec y);
/** x = A^H y (the exact adjoint). Collective. */
rmaop_status rmaop_op_apply_adjoint(rmaop_op A, rmaop_vec y, rmaop_vec x);
/** Split application: begin starts the communication and does the work that does not need it; the caller
 *  may compute in between; end finishes. x and y must not be touched between the two. */
rmaop_status rmaop_op_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y);
rmaop_status rmaop_op_apply_end(rmaop_op A);
rmaop_status rmaop_op_apply_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x);
rmaop_status rmaop_op_apply_adjoint_end(rmaop_op A);
/** Drops a reference (composites keep their parts alive); sets *A to NULL. Collective (plans are freed). */
void rmaop_op_destroy(rmaop_op *A);

typedef struct {
  rmaop_layout model, data; /**< borrowed */
  rmaop_dtype dtype;
  const char *name;
} rmaop_op_info;
rmaop_status rmaop_op_get_info(rmaop_op A, rmaop_op_info *info);

/**
 * Dot test: random x, y (seeded, identical for every backend), compares <A x, y> with <x, A^H y>.
 * *rel_err = |<Ax,y> - <x,A^H y>| / max(|<Ax,y>|, |<x,A^H y>|, tiny). Collective.
 * @return RMAOP_OK when the test ran; compare *rel_err yourself (1e-6 f32/c64, 1e-12 f64/c128 are typical).
 */
rmaop_status rmaop_op_dottest(rmaop_op A, unsigned seed, double *rel_err);

/** A + B + ... (same layouts and dtype). Not collective. */
rmaop_status rmaop_op_create_sum(int n, const rmaop_op ops[], rmaop_op *A);
/** A B (A's model layout must match B's data layout). Not collective. */
rmaop_status rmaop_op_create_product(rmaop_op A, rmaop_op B, rmaop_op *AB);
/** alpha A. Not collective. */
rmaop_status rmaop_op_create_scaled(rmaop_op A, double _Complex alpha, rmaop_op *sA);
/** A^H as an operator. Not collective. */
rmaop_status rmaop_op_create_adjoint(rmaop_op A, rmaop_op *AH);

/* ---- Stacked operators (PyLops-MPI MPIStackedVStack, MPIStackedBlockDiag) ------------------------- */

/**
 * y = [A_0 x; A_1 x; ...] (PyLops-MPI MPIStackedVStack): operators that share one model layout (and dtype)
 * stacked vertically; the data layout is the stacked layout of their data layouts; the adjoint is
 * x = sum_i A_i^H y_i. Every part's communication is begun before any is ended when no operator occurs
 * twice among the parts (else they run one after the other). Not collective. Holds references on @p ops.
 * @return RMAOP_ERR_ARG for n < 1, a NULL operator, mixed dtypes or contexts, model layouts that differ, or
 *         an operator whose data layout is itself stacked.
 */
rmaop_status rmaop_op_create_stacked_vstack(int n, const rmaop_op ops[], rmaop_op *A);
/**
 * y_i = A_i x_i (PyLops-MPI MPIStackedBlockDiag): model and data are the stacked layouts of the operators'
 * model and data layouts; the adjoint applies A_i^H to part i. Overlaps like rmaop_op_create_stacked_vstack.
 * Not collective. @return RMAOP_ERR_ARG for n < 1, a NULL operator, mixed dtypes or contexts, or an
 * operator with a stacked layout.
 */
rmaop_status rmaop_op_create_stacked_blockdiag(int n, const rmaop_op ops[], rmaop_op *A);

/** Local callbacks of a shell operator. Forward: y_local = f(x_local, ghost) where ghost holds what the plan
 *  brought (dst of the plan). Adjoint: x_local = g(y_local) plus ghost contributions that the reversed plan
 *  adds to their owners; the callback writes x_local and ghost (ghost arrives zeroed). The arrays are in the
 *  context's memory: host arrays, or device pointers when the context's memory kind is device. On device,
 *  a callback is called once the context's stream has finished every earlier operation on them (the data
 *  is ready), and its own device work must be complete when it returns (synchronize the stream it used),
 *  because rmaop's later work on the context's stream is not ordered after it. */
typedef struct {
  rmaop_status (*apply)(void *user, const void *x, const void *ghost, void *y);
  rmaop_status (*apply_adjoint)(void *user, const void *y, void *x, void *ghost);
  void *user;
} rmaop_shell_ops;
/** A user operator: local callbacks plus a plan from x (src) to a ghost buffer (dst) of plan dst_len
 *  elements. The plan is borrowed and must outlive the operator. Collective (the reversed plan is made). */
rmaop_status rmaop_op_create_shell(rmaop_layout model, rmaop_layout data, rmaop_dtype dtype, rmaop_plan plan,
                                   const rmaop_shell_ops *ops, rmaop_op *A);
/** Diagonal operator (PyLops Diagonal): y = d .* x, adjoint x = conj(d) .* y, model = data = d's layout.
 *  @p d is copied (and conjugated once for the adjoint), so it may be changed or freed afterwards; its memory
 *  kind is the context's. No communication. Not collective. @return RMAOP_ERR_ARG for a NULL argument. */
rmaop_status rmaop_op_create_diagonal(rmaop_vec d, rmaop_op *A);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_OP_H */
