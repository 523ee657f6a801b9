/* The gradient (PyLops Gradient; distributed along axis 0 like PyLops-MPI MPIGradient, which stacks an
 * MPIFirstDerivative along axis 0 and FirstDerivatives along the other axes with MPIStackedVStack): here
 * the stacked vertical stack (src/ops/op_stacked.c) of a first derivative per axis. Its data vector is stacked:
 * part d (on each rank, local elements [d n, (d+1) n), n = the rank's model size) is the derivative along
 * axis d of the rank's rows. The parts are begun in axis order, so the axis-0 halo exchange (the only
 * communication: the other axes are local) is in flight while the local axes compute. */
#include "core/error.h"
#include "op_impl.h"

#include <stdio.h>

rmaop_status rmaop_op_create_gradient(rmaop_ctx ctx, const rmaop_gradient_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_gradient";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  rmaop_status st = RMAOP_OK;
  if (spec == NULL || A == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s is NULL", fn, spec ? "A (output)" : "spec");
  else if (spec->grid.ndim < 1 || spec->grid.ndim > RMAOP_MAX_DIMS)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: grid.ndim = %d is outside [1, %d]", fn, spec->grid.ndim, RMAOP_MAX_DIMS);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  rmaop_op parts[RMAOP_MAX_DIMS] = {NULL};
  int n = 0;
  for (; n < spec->grid.ndim && st == RMAOP_OK; ++n) { /* collective: each derivative agrees on its arguments */
    const rmaop_deriv_spec ds = {.grid = spec->grid,
                                 .axis = n,
                                 .kind = spec->kind,
                                 .edge = spec->edge,
                                 .sampling = spec->sampling[n],
                                 .dtype = spec->dtype,
                                 .label = spec->label ? spec->label : "gradient"};
    st = rmaop_op_create_first_derivative(ctx, &ds, &parts[n]);
  }
  rmaop_op G = NULL;
  if (st == RMAOP_OK) st = rmaop_op_create_stacked_vstack(n, parts, &G);
  for (int d = 0; d < n; ++d) rmaop_op_destroy(&parts[d]); /* the stack holds its own references */
  RMAOP_CHECK(st);
  snprintf(G->name, sizeof G->name, "gradient");
  *A = G;
  return RMAOP_OK;
}
