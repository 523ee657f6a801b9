/* The gradient (PyLops Gradient; distributed along axis 0 like PyLops-MPI MPIGradient, which stacks an
 * MPIFirstDerivative along axis 0 and block-diagonal FirstDerivatives along the other axes with
 * MPIStackedVStack). Until rmaop has stacked vectors, the data vector holds on each rank the ndim parts one
 * after the other: part d (local elements [d n, (d+1) n), n = the rank's model size) is the derivative
 * along axis d of the rank's rows.
 *
 * A "local vstack" of first-derivative operators: forward y_d = D_d x, each written straight into its
 * slice of y through a view vector; adjoint x = sum_d D_d^H y_d. Every part is begun before any is ended,
 * axis 0 first, so its halo exchange (the only communication: the other axes are local) is in flight while
 * the local axes compute. */
#include "rmaop_impl.h"

typedef struct {
  int n;
  int64_t nloc;                            /* model elements on this rank */
  rmaop_op parts[RMAOP_MAX_DIMS];          /* first derivative along axis d */
  rmaop_vec tmp[RMAOP_MAX_DIMS];           /* adjoint outputs of parts 1 .. n-1 */
  struct rmaop_vec_s view[RMAOP_MAX_DIMS]; /* part d's slice of the current data vector (borrowed memory) */
  rmaop_vec out;
} gradient;

/* view[d] = elements [d nloc, (d+1) nloc) of y, on part d's own layout (no allocation, nothing to free). */
static rmaop_vec slice(gradient *g, rmaop_vec y, int d) {
  rmaop_vec v = &g->view[d];
  *v = (struct rmaop_vec_s){.ctx = y->ctx,
                            .layout = g->parts[d]->data,
                            .dtype = y->dtype,
                            .memory = y->memory,
                            .local_n = g->nloc,
                            .data = (char *)y->data + (size_t)(d * g->nloc) * rmaop_dtype_size(y->dtype)};
  return v;
}

/* Ends the parts [0, n) after a failed begin (their own errors are secondary). */
static void end_parts(gradient *g, int n, int adjoint) {
  for (int d = 0; d < n; ++d)
    (void)(adjoint ? rmaop_op_apply_adjoint_end(g->parts[d]) : rmaop_op_apply_end(g->parts[d]));
}

static rmaop_status grad_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  gradient *g = A->impl;
  for (int d = 0; d < g->n; ++d) {
    rmaop_status st = rmaop_op_apply_begin(g->parts[d], x, slice(g, y, d));
    if (st != RMAOP_OK) {
      end_parts(g, d, 0);
      return st;
    }
  }
  return RMAOP_OK;
}

static rmaop_status grad_apply_end(rmaop_op A) {
  gradient *g = A->impl;
  rmaop_status first = RMAOP_OK;
  for (int d = 0; d < g->n; ++d) { /* end every part even after a failure: none stays active */
    rmaop_status st = rmaop_op_apply_end(g->parts[d]);
    if (first == RMAOP_OK)
      first = st;
  }
  return first;
}

static rmaop_status grad_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  gradient *g = A->impl;
  g->out = x;
  for (int d = 0; d < g->n; ++d) {
    rmaop_status st = rmaop_op_apply_adjoint_begin(g->parts[d], slice(g, y, d), d == 0 ? x : g->tmp[d]);
    if (st != RMAOP_OK) {
      end_parts(g, d, 1);
      return st;
    }
  }
  return RMAOP_OK;
}

static rmaop_status grad_adjoint_end(rmaop_op A) {
  gradient *g = A->impl;
  rmaop_status first = RMAOP_OK;
  for (int d = 0; d < g->n; ++d) {
    rmaop_status st = rmaop_op_apply_adjoint_end(g->parts[d]);
    if (first == RMAOP_OK)
      first = st;
  }
  RMAOP_CHECK(first);
  for (int d = 1; d < g->n; ++d)
    RMAOP_CHECK(rmaop_vec_axpy(g->out, 1.0, g->tmp[d]));
  return RMAOP_OK;
}

static void grad_free(gradient *g) {
  if (!g)
    return;
  for (int d = 0; d < RMAOP_MAX_DIMS; ++d) {
    rmaop_op_destroy(&g->parts[d]);
    rmaop_vec_destroy(&g->tmp[d]);
  }
  free(g);
}
static void grad_destroy(rmaop_op A) {
  grad_free(A->impl);
}

static const rmaop__op_ops gradient_ops = {grad_apply_begin, grad_apply_end, grad_adjoint_begin, grad_adjoint_end,
                                           grad_destroy};

/* The parts (collective: each derivative agrees on its arguments and builds its halo) and temporaries. */
static rmaop_status build_parts(rmaop_ctx ctx, const rmaop_gradient_spec *spec, gradient *g) {
  for (int d = 0; d < spec->grid.ndim; ++d) {
    const rmaop_deriv_spec ds = {.grid = spec->grid,
                                 .axis = d,
                                 .kind = spec->kind,
                                 .edge = spec->edge,
                                 .sampling = spec->sampling[d],
                                 .dtype = spec->dtype,
                                 .label = spec->label ? spec->label : "gradient"};
    RMAOP_CHECK(rmaop_op_create_first_derivative(ctx, &ds, &g->parts[d]));
    g->n = d + 1;
  }
  g->nloc = g->parts[0]->model->sizes[ctx->rank];
  rmaop_status st = RMAOP_OK;
  for (int d = 1; d < g->n && st == RMAOP_OK; ++d)
    st = rmaop_vec_create(g->parts[0]->model, spec->dtype, &g->tmp[d]);
  return rmaop__agree(ctx, st, "rmaop_op_create_gradient temporaries");
}

rmaop_status rmaop_op_create_gradient(rmaop_ctx ctx, const rmaop_gradient_spec *spec, rmaop_op *A) {
  const char *fn = "rmaop_op_create_gradient";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  rmaop_status st = RMAOP_OK;
  if (spec == NULL || A == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s is NULL", fn, spec ? "A (output)" : "spec");
  else if (spec->grid.ndim < 1 || spec->grid.ndim > RMAOP_MAX_DIMS)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: grid.ndim = %d is outside [1, %d]", fn, spec->grid.ndim, RMAOP_MAX_DIMS);
  gradient *g = NULL;
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 1, sizeof *g, "gradient", (void **)&g);
  st = rmaop__agree(ctx, st, fn);
  if (st != RMAOP_OK) {
    free(g);
    return st;
  }
  rmaop_layout data = NULL;
  st = build_parts(ctx, spec, g);
  if (st == RMAOP_OK)
    st = rmaop_layout_create_local(ctx, g->n * g->nloc, &data);
  if (st == RMAOP_OK)
    st = rmaop__op_new(ctx, "gradient", spec->dtype, g->parts[0]->model, data, &gradient_ops, g, A);
  rmaop_layout_destroy(&data); /* the operator holds its own reference */
  if (st != RMAOP_OK) {
    grad_free(g);
    return st;
  }
  (*A)->nparts = g->n; /* composites above see the derivatives as leaves */
  (*A)->parts = g->parts;
  return RMAOP_OK;
}
