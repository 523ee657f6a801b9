/* Redistribution as an operator (rmaop_op_create_redistribute), as a one-off vector call (rmaop_vec_redistribute),
 * and the balanced layout along an axis (rmaop_layout_create_axis): thin layers over src/ops/redistribute.c. The
 * forward moves the from blocks (model) to the to blocks (data); the adjoint is the redistribution back, which is
 * the exact adjoint because the operator is a permutation. */
#include "core/ctx.h"
#include "core/error.h"
#include "core/vec.h"
#include "op_impl.h"
#include "redistribute.h"

static rmaop_status redist_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  return rmaop__redist_begin(A->impl, 0, x->data, y->data);
}
static rmaop_status redist_apply_end(rmaop_op A) {
  return rmaop__redist_end(A->impl);
}
static rmaop_status redist_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  return rmaop__redist_begin(A->impl, 1, y->data, x->data);
}
static rmaop_status redist_adjoint_end(rmaop_op A) {
  return rmaop__redist_end(A->impl);
}
static void redist_destroy(rmaop_op A) {
  rmaop__redist *r = A->impl;
  rmaop__redist_destroy(&r);
}

static const rmaop__op_ops redist_ops = {redist_apply_begin, redist_apply_end, redist_adjoint_begin, redist_adjoint_end,
                                         redist_destroy};

rmaop_status rmaop_op_create_redistribute(rmaop_ctx ctx, rmaop_dtype dtype, int ndim, const int64_t dims[],
                                          int from_axis, int64_t from_local, int to_axis, rmaop_op *A) {
  static const char *const fn = "rmaop_op_create_redistribute";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_CHECK(
      rmaop__agree(ctx, A ? RMAOP_OK : RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn), fn));
  rmaop__redist *r = NULL;
  RMAOP_CHECK(rmaop__redist_create(ctx, dtype, ndim, dims, from_axis, from_local, to_axis, "redistribute", &r));
  rmaop_layout model = NULL, data = NULL;
  rmaop_status st = rmaop_layout_create_local(ctx, rmaop__redist_local_n(r, 0), &model);
  if (st == RMAOP_OK)
    st = rmaop_layout_create_local(ctx, rmaop__redist_local_n(r, 1), &data);
  st = rmaop__op_new_agreed(st, ctx, "redistribute", dtype, model, data, &redist_ops, r, A);
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  if (st != RMAOP_OK)
    rmaop__redist_destroy(&r); /* collective: every rank made one */
  return st;
}

/* The elements of dims[] other than `axis`, and whether the product fits (0 when ndim or dims are bad: the
 * redistribution's own checks name them). */
static int64_t others(int ndim, const int64_t dims[], int axis) {
  if (ndim < 1 || ndim > RMAOP_MAX_DIMS || !dims)
    return 0;
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) {
    if (d == axis)
      continue;
    if (dims[d] < 0 || !rmaop__fits(n, dims[d]))
      return 0;
    n *= dims[d];
  }
  return n;
}

rmaop_status rmaop_layout_create_axis(rmaop_ctx ctx, int ndim, const int64_t dims[], int axis, rmaop_layout *layout) {
  static const char *const fn = "rmaop_layout_create_axis";
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  rmaop_status st = RMAOP_OK;
  if (!layout)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: layout (output) is NULL", fn);
  else if (ndim < 1 || ndim > RMAOP_MAX_DIMS || !dims)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: ndim = %d (want 1 .. %d) with dims %s", fn, ndim, RMAOP_MAX_DIMS,
                     dims ? "given" : "NULL");
  else if (axis < 0 || axis >= ndim)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: axis = %d is outside [0, %d)", fn, axis, ndim);
  int64_t total = 1;
  for (int d = 0; st == RMAOP_OK && d < ndim; ++d) {
    if (dims[d] < 0 || !rmaop__fits(total, dims[d]))
      st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: dims[%d] = %lld is negative or overflows the array's size", fn, d,
                       (long long)dims[d]);
    else
      total *= dims[d];
  }
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  static const char *const names[] = {"ndim",    "axis",    "dims[0]", "dims[1]", "dims[2]",
                                      "dims[3]", "dims[4]", "dims[5]", "dims[6]", "dims[7]"};
  int64_t v[2 + RMAOP_MAX_DIMS] = {ndim, axis};
  for (int d = 0; d < ndim; ++d)
    v[2 + d] = dims[d];
  RMAOP_CHECK(rmaop__same_everywhere(ctx, v, 2 + ndim, names, fn));
  int64_t count = 0, off = 0;
  rmaop__split_balanced(dims[axis], ctx->size, ctx->rank, &count, &off);
  return rmaop_layout_create_local(ctx, count * others(ndim, dims, axis), layout);
}

/* x and y as rmaop_vec_redistribute needs them, and x's rows of from_axis. */
static rmaop_status check_vecs(rmaop_ctx ctx, rmaop_vec x, int ndim, const int64_t dims[], int from_axis, int to_axis,
                               rmaop_vec y, int64_t *from_local) {
  static const char *const fn = "rmaop_vec_redistribute";
  RMAOP_REQUIRE(ctx, y != NULL, RMAOP_ERR_ARG, "%s: y is NULL", fn);
  RMAOP_REQUIRE(ctx, x != y, RMAOP_ERR_ARG, "%s: x and y are the same vector", fn);
  RMAOP_REQUIRE(ctx, y->ctx == ctx, RMAOP_ERR_ARG, "%s: x and y belong to different contexts", fn);
  RMAOP_REQUIRE(ctx, x->dtype == y->dtype, RMAOP_ERR_ARG, "%s: x is %s but y is %s", fn, rmaop_dtype_name(x->dtype),
                rmaop_dtype_name(y->dtype));
  RMAOP_REQUIRE(ctx, x->layout->kind == RMAOP_LAYOUT_SCATTER && y->layout->kind == RMAOP_LAYOUT_SCATTER, RMAOP_ERR_ARG,
                "%s: x and y must be SCATTER vectors (x is %s, y is %s)", fn, rmaop__layout_kind_name(x->layout->kind),
                rmaop__layout_kind_name(y->layout->kind));
  *from_local = -1;
  if (ndim < 1 || ndim > RMAOP_MAX_DIMS || !dims || from_axis < 0 || from_axis >= ndim || to_axis < 0 ||
      to_axis >= ndim)
    return RMAOP_OK; /* the redistribution names the bad argument, on every rank */
  const int64_t rest = others(ndim, dims, from_axis);
  RMAOP_REQUIRE(ctx, rest > 0 ? x->local_n % rest == 0 : x->local_n == 0, RMAOP_ERR_ARG,
                "%s: x has %lld elements here, not a whole number of rows of axis %d (%lld elements each)", fn,
                (long long)x->local_n, from_axis, (long long)rest);
  if (rest > 0)
    *from_local = x->local_n / rest;
  int64_t count = 0, off = 0;
  rmaop__split_balanced(dims[to_axis], ctx->size, ctx->rank, &count, &off);
  const int64_t want = count * others(ndim, dims, to_axis);
  RMAOP_REQUIRE(ctx, y->local_n == want, RMAOP_ERR_ARG,
                "%s: y has %lld elements here; the balanced split along axis %d holds %lld (rmaop_layout_create_axis)",
                fn, (long long)y->local_n, to_axis, (long long)want);
  return RMAOP_OK;
}

rmaop_status rmaop_vec_redistribute(rmaop_vec x, int ndim, const int64_t dims[], int from_axis, int to_axis,
                                    rmaop_vec y) {
  RMAOP_REQUIRE(NULL, x != NULL, RMAOP_ERR_ARG, "rmaop_vec_redistribute: x is NULL");
  rmaop_ctx ctx = x->ctx;
  int64_t from_local = -1;
  RMAOP_CHECK(
      rmaop__agree(ctx, check_vecs(ctx, x, ndim, dims, from_axis, to_axis, y, &from_local), "rmaop_vec_redistribute"));
  rmaop__redist *r = NULL;
  RMAOP_CHECK(rmaop__redist_create(ctx, x->dtype, ndim, dims, from_axis, from_local, to_axis, "vec_redistribute", &r));
  rmaop_status st = rmaop__redist_begin(r, 0, x->data, y->data);
  if (st == RMAOP_OK)
    st = rmaop__redist_end(r);
  rmaop__redist_destroy(&r);
  return st;
}
