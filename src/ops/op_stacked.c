/* Stacked operators (PyLops-MPI MPIStackedVStack and MPIStackedBlockDiag): operators whose model or data
 * is a stacked vector (rmaop_layout_create_stacked). Part i of a stacked operand is a view into its local
 * array (rmaop__vec_part_view: an offset into host or device memory, no copy), so the parts are applied
 * with the ordinary operator calls and the same code serves both memory kinds.
 *
 * Overlap: like op.c's sum, every part is begun before any is ended when no leaf operator occurs twice
 * below the parts (an operator has one execution state); otherwise each part runs whole inside begin. */
#include "core/error.h"
#include "core/vec.h"
#include "op_impl.h"

#include <stdio.h>

enum { STACKED_VSTACK, STACKED_BLOCKDIAG };

typedef struct {
  int kind;
  int n;
  rmaop_op *ops;                 /* references held */
  struct rmaop_vec_s *in_view;   /* [n] views of the stacked input of the current application */
  struct rmaop_vec_s *out_view;  /* [n] views of the stacked output */
  rmaop_vec *tmp;                /* vstack: n - 1 model vectors for A_i^H y_i, i >= 1 (summed into x) */
  rmaop_vec out;                 /* vstack adjoint: x */
  int overlap;
} stacked_impl;

/* ---- application ---- */

/* Forward: in = model, out = data; adjoint: in = data, out = model. The vstack's model is not stacked:
 * every part reads the whole x, and its adjoint writes part 0 into x and the others into temporaries.
 * op.c's check_operands already held the operands to the operator's layouts, parts included. */
static rmaop_status stacked_begin(rmaop_op A, rmaop_vec in, rmaop_vec out, int adjoint) {
  stacked_impl *s = A->impl;
  const int in_stacked = s->kind == STACKED_BLOCKDIAG || adjoint;
  const int out_stacked = s->kind == STACKED_BLOCKDIAG || !adjoint;
  s->out = out;
  for (int i = 0; i < s->n; ++i) {
    rmaop_vec pin = in, pout = i == 0 ? out : s->tmp ? s->tmp[i - 1] : NULL;
    if (in_stacked) rmaop__vec_part_view(in, i, pin = &s->in_view[i]);
    if (out_stacked) rmaop__vec_part_view(out, i, pout = &s->out_view[i]);
    RMAOP_CHECK(rmaop__op_part_begin(s->ops, i, pin, pout, adjoint, s->overlap));
  }
  return RMAOP_OK;
}

static rmaop_status stacked_end(rmaop_op A, int adjoint) {
  stacked_impl *s = A->impl;
  RMAOP_CHECK(rmaop__op_parts_end(s->n, s->ops, adjoint, s->overlap));
  if (s->kind == STACKED_VSTACK && adjoint)
    for (int i = 1; i < s->n; ++i) RMAOP_CHECK(rmaop_vec_axpy(s->out, 1.0, s->tmp[i - 1]));
  return RMAOP_OK;
}

static rmaop_status stacked_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) { return stacked_begin(A, x, y, 0); }
static rmaop_status stacked_apply_end(rmaop_op A) { return stacked_end(A, 0); }
static rmaop_status stacked_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) { return stacked_begin(A, y, x, 1); }
static rmaop_status stacked_adjoint_end(rmaop_op A) { return stacked_end(A, 1); }

static void stacked_free(stacked_impl *s) {
  for (int i = 0; i < s->n; ++i) rmaop_op_destroy(&s->ops[i]);
  for (int i = 0; s->tmp && i + 1 < s->n; ++i) rmaop_vec_destroy(&s->tmp[i]);
  free(s->ops);
  free(s->in_view);
  free(s->tmp);
  free(s);
}
static void stacked_destroy(rmaop_op A) { stacked_free(A->impl); }

static const rmaop__op_ops stacked_ops = {stacked_apply_begin, stacked_apply_end, stacked_adjoint_begin,
                                          stacked_adjoint_end, stacked_destroy};

/* ---- creation ---- */

static rmaop_status check_ops(const char *fn, int kind, int n, const rmaop_op ops[], rmaop_op *out) {
  RMAOP_REQUIRE(NULL, n >= 1 && ops != NULL, RMAOP_ERR_ARG, "%s: need n >= 1 operators (n = %d%s)", fn, n,
                ops ? "" : ", ops is NULL");
  RMAOP_REQUIRE(NULL, ops[0] != NULL, RMAOP_ERR_ARG, "%s: ops[0] is NULL", fn);
  rmaop_ctx ctx = ops[0]->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: result (output) is NULL", fn);
  for (int i = 0; i < n; ++i) {
    RMAOP_REQUIRE(ctx, ops[i] != NULL, RMAOP_ERR_ARG, "%s: ops[%d] is NULL", fn, i);
    RMAOP_REQUIRE(ctx, ops[i]->ctx == ctx, RMAOP_ERR_ARG, "%s: ops[%d] (\"%s\") belongs to another context", fn, i,
                  ops[i]->name);
    RMAOP_REQUIRE(ctx, ops[i]->dtype == ops[0]->dtype, RMAOP_ERR_ARG, "%s: ops[%d] (\"%s\") is %s but ops[0] (\"%s\") is %s",
                  fn, i, ops[i]->name, rmaop_dtype_name(ops[i]->dtype), ops[0]->name, rmaop_dtype_name(ops[0]->dtype));
    if (kind == STACKED_VSTACK)
      RMAOP_REQUIRE(ctx, rmaop__layout_same(ops[i]->model, ops[0]->model), RMAOP_ERR_ARG,
                    "%s: ops[%d] (\"%s\") has another model layout than ops[0] (\"%s\"): %s of %lld versus %s of %lld "
                    "(a vertical stack applies every operator to the same x)",
                    fn, i, ops[i]->name, ops[0]->name, rmaop__layout_kind_name(ops[i]->model->kind),
                    (long long)ops[i]->model->global_n, rmaop__layout_kind_name(ops[0]->model->kind),
                    (long long)ops[0]->model->global_n);
  }
  return RMAOP_OK;
}

/* The stacked layout of the operators' model (which = 0) or data (which = 1) layouts. */
static rmaop_status stack_layouts(rmaop_ctx ctx, int n, const rmaop_op ops[], int which, rmaop_layout *out) {
  rmaop_layout *ls = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, (size_t)n, sizeof *ls, "stacked operator layouts", (void **)&ls));
  for (int i = 0; i < n; ++i) ls[i] = which ? ops[i]->data : ops[i]->model;
  rmaop_status st = rmaop_layout_create_stacked(n, ls, out);
  free(ls);
  return st;
}

static rmaop_status impl_new(rmaop_ctx ctx, int kind, int n, const rmaop_op ops[], stacked_impl **out) {
  stacked_impl *s = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "stacked operator", (void **)&s));
  s->kind = kind;
  rmaop_status st = rmaop__calloc(ctx, (size_t)n, sizeof(rmaop_op), "stacked operator parts", (void **)&s->ops);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 2 * (size_t)n, sizeof(struct rmaop_vec_s), "stacked operator views", (void **)&s->in_view);
  if (st == RMAOP_OK && kind == STACKED_VSTACK && n > 1)
    st = rmaop__calloc(ctx, (size_t)n - 1, sizeof(rmaop_vec), "stacked operator temporaries", (void **)&s->tmp);
  if (st != RMAOP_OK) {
    stacked_free(s);
    return st;
  }
  s->out_view = s->in_view + n;
  s->overlap = rmaop__op_parts_independent(n, ops);
  for (int i = 0; i < n; ++i) {
    s->ops[i] = ops[i];
    ops[i]->refs++;
  }
  s->n = n;
  for (int i = 1; s->tmp && i < n && st == RMAOP_OK; ++i) st = rmaop_vec_create(ops[0]->model, ops[0]->dtype, &s->tmp[i - 1]);
  if (st != RMAOP_OK) {
    stacked_free(s);
    return st;
  }
  *out = s;
  return RMAOP_OK;
}

static rmaop_status create_stacked(const char *fn, const char *name, int kind, int n, const rmaop_op ops[],
                                   rmaop_op *out) {
  RMAOP_CHECK(check_ops(fn, kind, n, ops, out));
  rmaop_ctx ctx = ops[0]->ctx;
  rmaop_layout model = NULL, data = NULL;
  rmaop_status st = kind == STACKED_VSTACK ? RMAOP_OK : stack_layouts(ctx, n, ops, 0, &model);
  if (st == RMAOP_OK) st = stack_layouts(ctx, n, ops, 1, &data);
  stacked_impl *s = NULL;
  if (st == RMAOP_OK) st = impl_new(ctx, kind, n, ops, &s);
  if (st == RMAOP_OK) {
    st = rmaop__op_new(ctx, name, ops[0]->dtype, model ? model : ops[0]->model, data, &stacked_ops, s, out);
    if (st != RMAOP_OK) stacked_free(s);
  }
  if (st == RMAOP_OK) {
    (*out)->nparts = n; /* composites above see the leaves below (sum's overlap rule) */
    (*out)->parts = s->ops;
  }
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  return st;
}

rmaop_status rmaop_op_create_stacked_vstack(int n, const rmaop_op ops[], rmaop_op *A) {
  return create_stacked("rmaop_op_create_stacked_vstack", "stacked_vstack", STACKED_VSTACK, n, ops, A);
}

rmaop_status rmaop_op_create_stacked_blockdiag(int n, const rmaop_op ops[], rmaop_op *A) {
  return create_stacked("rmaop_op_create_stacked_blockdiag", "stacked_blockdiag", STACKED_BLOCKDIAG, n, ops, A);
}
