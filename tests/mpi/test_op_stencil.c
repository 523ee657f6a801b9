/* Tests of the stencil operators: first and second derivatives (every kind, edge, sampling, axis and split of
 * axis 0, every dtype) and the Laplacian (default and listed axes, weights, sampling), each against its dense
 * matrix (op_test_util.h: check_op, the serial PyLops formulas), and their creation errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

static void run_deriv(const deriv_cfg *c, int split, rmaop_dtype d) {
  char name[200];
  snprintf(name, sizeof name, "%s derivative %s edge=%d h=%g axis %d of %dD, %s", c->order == 1 ? "first" : "second",
           kind_names[c->kind], c->edge, c->h, c->axis, c->shape.ndim, split_names[split]);
  rmaop_op A = make_deriv(c, split, d);
  const int64_t n = shape_size(&c->shape);
  mat M = mat_from_fn(n, n, deriv_serial, c);
  local_shape ls = grid_shape(&c->shape, split);
  check_op(A, &M, d, &ls, name);
  mat_free(&M);
  rmaop_op_destroy(&A);
  RT_CHECK(A == NULL, "destroy did not clear the handle");
}

/* Splits per case: axis 0 (halo exchange) of the 1-D line and of the 3-D grid under two splits each, the
 * local axes under the uneven split with an empty rank. Across the two grids every split is used. */
static void run_all_axes(int order, rmaop_deriv_kind kind, int edge, double h) {
  const deriv_cfg c1 = {order, kind, edge, h, line11, 0};
  run_deriv(&c1, SPLIT_FIRST_ONE, RMAOP_F64);
  run_deriv(&c1, SPLIT_UNEVEN, RMAOP_F64);
  for (int axis = 0; axis < 3; ++axis) {
    const deriv_cfg c = {order, kind, edge, h == 0 ? 2.0 : 0.0, cube, axis};
    if (axis == 0) {
      run_deriv(&c, SPLIT_BALANCED, RMAOP_F64);
      run_deriv(&c, SPLIT_ONES, RMAOP_F64);
    } else {
      run_deriv(&c, SPLIT_UNEVEN, RMAOP_F64);
    }
  }
}

START_TEST(test_first_derivative_f64) {
  for (int kind = 0; kind < 4; ++kind)
    for (int edge = 0; edge < 2; ++edge)
      run_all_axes(1, (rmaop_deriv_kind)kind, edge, kind % 2 ? 0.5 : 0.0);
}
END_TEST

START_TEST(test_second_derivative_f64) {
  for (int kind = 0; kind < 3; ++kind)
    for (int edge = 0; edge < 2; ++edge)
      run_all_axes(2, (rmaop_deriv_kind)kind, edge, kind == 1 ? 0.5 : 0.0);
}
END_TEST

START_TEST(test_derivatives_other_dtypes) {
  const rmaop_dtype ds[3] = {RMAOP_F32, RMAOP_C64, RMAOP_C128};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    const deriv_cfg cs[] = {
        {1, RMAOP_DERIV_CENTERED5, 1, 0.5, cube, 0},  {1, RMAOP_DERIV_CENTERED3, 0, 0.0, cube, 2},
        {1, RMAOP_DERIV_FORWARD, 0, 2.0, cube, 0},    {1, RMAOP_DERIV_BACKWARD, 1, 0.0, cube, 1},
        {2, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0},  {2, RMAOP_DERIV_FORWARD, 0, 0.0, cube, 2},
        {2, RMAOP_DERIV_BACKWARD, 0, 1.5, line11, 0},
    };
    const int splits[] = {SPLIT_ONES,   SPLIT_UNEVEN,   SPLIT_FIRST_ONE, SPLIT_BALANCED,
                          SPLIT_UNEVEN, SPLIT_BALANCED, SPLIT_ONES};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i)
      run_deriv(&cs[i], splits[i], d);
  }
}
END_TEST

/* ---- Laplacian ---- */

typedef struct {
  shape_t shape;
  int naxes;
  int axes[RMAOP_MAX_DIMS];
  double weights[RMAOP_MAX_DIMS], sampling[RMAOP_MAX_DIMS];
  int edge;
  rmaop_deriv_kind kind;
} lap_cfg;

/* sum over the listed axes of w_a * SecondDerivative(axis a, h_a); naxes = 0: the last two axes, unit weights
 * and sampling; all weights 0: ones. */
static void lap_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const lap_cfg *c = cfg;
  memset(y, 0, (size_t)shape_size(&c->shape) * sizeof *y);
  const int n = c->naxes ? c->naxes : 2;
  int all_zero = 1;
  for (int i = 0; i < n && c->naxes; ++i)
    all_zero &= c->weights[i] == 0.0;
  for (int i = 0; i < n; ++i) {
    deriv_cfg d = {
        2, c->kind, c->edge, c->naxes ? c->sampling[i] : 1.0, c->shape, c->naxes ? c->axes[i] : c->shape.ndim - 2 + i};
    deriv_add(&d, c->naxes && !all_zero ? c->weights[i] : 1.0, x, y);
  }
}

static rmaop_laplacian_spec lap_spec(const lap_cfg *c, int split, rmaop_dtype d) {
  rmaop_laplacian_spec spec = {.grid = make_grid(&c->shape, split),
                               .naxes = c->naxes,
                               .edge = c->edge,
                               .kind = c->kind,
                               .dtype = d,
                               .label = "test-lap"};
  for (int i = 0; i < c->naxes; ++i)
    spec.axes[i] = c->axes[i], spec.weights[i] = c->weights[i], spec.sampling[i] = c->sampling[i];
  return spec;
}

static void run_laplacian(const lap_cfg *c, int split, rmaop_dtype d, const char *what) {
  const rmaop_laplacian_spec spec = lap_spec(c, split, d);
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_laplacian(ctx, &spec, &A));
  const int64_t n = shape_size(&c->shape);
  mat M = mat_from_fn(n, n, lap_serial, c);
  local_shape ls = grid_shape(&c->shape, split);
  char name[200];
  snprintf(name, sizeof name, "laplacian %s, %s", what, split_names[split]);
  check_op(A, &M, d, &ls, name);
  mat_free(&M);
  rmaop_op_destroy(&A);
}

/* The Laplacian cases of both tests (the shapes are objects of op_test_util.c, so the cases are built here). */
enum { LAP_DEFAULT, LAP_DEFAULT3, LAP_WEIGHTED, LAP_THREE, LAP_ONE };
static lap_cfg lap_case(int which) {
  const lap_cfg c_default = {.shape = plane, .naxes = 0, .edge = 0, .kind = RMAOP_DERIV_CENTERED3};
  const lap_cfg c_default3 = {.shape = cube, .naxes = 0, .edge = 1, .kind = RMAOP_DERIV_CENTERED3};
  const lap_cfg c_weighted = {.shape = cube,
                              .naxes = 2,
                              .axes = {0, 2},
                              .weights = {2.0, -0.5},
                              .sampling = {0.5, 2.0},
                              .edge = 1,
                              .kind = RMAOP_DERIV_FORWARD};
  const lap_cfg c_three = {.shape = cube,
                           .naxes = 3,
                           .axes = {2, 0, 1},
                           .weights = {0, 0, 0},
                           .sampling = {0, 1.5, 0},
                           .edge = 0,
                           .kind = RMAOP_DERIV_BACKWARD};
  const lap_cfg c_one = {.shape = line11,
                         .naxes = 1,
                         .axes = {0},
                         .weights = {3.0},
                         .sampling = {0.25},
                         .edge = 1,
                         .kind = RMAOP_DERIV_CENTERED3};
  const lap_cfg all[] = {c_default, c_default3, c_weighted, c_three, c_one};
  return all[which];
}

START_TEST(test_laplacian) {
  const lap_cfg c_default = lap_case(LAP_DEFAULT), c_default3 = lap_case(LAP_DEFAULT3),
                c_weighted = lap_case(LAP_WEIGHTED), c_three = lap_case(LAP_THREE), c_one = lap_case(LAP_ONE);
  run_laplacian(&c_default, SPLIT_BALANCED, RMAOP_F64, "2D default axes");
  run_laplacian(&c_default, SPLIT_FIRST_ONE, RMAOP_F64, "2D default axes");
  run_laplacian(&c_default3, SPLIT_UNEVEN, RMAOP_F64, "3D default axes (local only)");
  run_laplacian(&c_weighted, SPLIT_ONES, RMAOP_F64, "axes (0,2) weighted, forward");
  run_laplacian(&c_weighted, SPLIT_UNEVEN, RMAOP_C128, "axes (0,2) weighted, forward");
  run_laplacian(&c_three, SPLIT_UNEVEN, RMAOP_F64, "axes (2,0,1) zero weights, backward");
  run_laplacian(&c_three, SPLIT_BALANCED, RMAOP_F32, "axes (2,0,1) zero weights, backward");
  run_laplacian(&c_one, SPLIT_ONES, RMAOP_F64, "1D weighted");
  run_laplacian(&c_default, SPLIT_ONES, RMAOP_C64, "2D default axes");
}
END_TEST

/* The Laplacian of the test's context (on device memory the one-pass kernels) against the same operator on a
 * host context of the twosided backend (part by part): bitwise the same values, forward and adjoint. */
static void lap_same_bits(rmaop_ctx hctx, const lap_cfg *c, int split, rmaop_dtype d, const char *what) {
  const rmaop_laplacian_spec spec = lap_spec(c, split, d);
  rmaop_op A = NULL, H = NULL;
  RT_OK(rmaop_op_create_laplacian(ctx, &spec, &A));
  RT_OK(rmaop_op_create_laplacian(hctx, &spec, &H));
  rmaop_op_info ai = {0}, hi = {0};
  RT_OK(rmaop_op_get_info(A, &ai));
  RT_OK(rmaop_op_get_info(H, &hi));
  const int64_t n = shape_size(&c->shape);
  rmaop_vec x = vec_on(ai.model, d), y = vec_on(ai.data, d), hx = vec_on(hi.model, d), hy = vec_on(hi.data, d);
  free(fill(x, n, 1));
  free(fill(hx, n, 1));
  RT_OK(rmaop_op_apply(A, x, y));
  RT_OK(rmaop_op_apply(H, hx, hy));
  char msg[300] = "";
  RT_CHECK(same_local_msg(y, hy, 1, msg, sizeof msg), "laplacian %s, %s, %s: forward differs from the host's: %s", what,
           split_names[split], rmaop_dtype_name(d), msg);
  free(fill(y, n, 2));
  free(fill(hy, n, 2));
  RT_OK(rmaop_op_apply_adjoint(A, y, x));
  RT_OK(rmaop_op_apply_adjoint(H, hy, hx));
  RT_CHECK(same_local_msg(x, hx, 1, msg, sizeof msg), "laplacian %s, %s, %s: adjoint differs from the host's: %s", what,
           split_names[split], rmaop_dtype_name(d), msg);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&hx), rmaop_vec_destroy(&hy);
  rmaop_op_destroy(&A), rmaop_op_destroy(&H);
}

START_TEST(test_laplacian_same_bits) {
  rmaop_ctx hctx = rt_host_ctx();
  const lap_cfg c_default = lap_case(LAP_DEFAULT), c_default3 = lap_case(LAP_DEFAULT3),
                c_weighted = lap_case(LAP_WEIGHTED), c_three = lap_case(LAP_THREE);
  const lap_cfg wide = {.shape = {2, {23, 300}}, .naxes = 0, .edge = 1, .kind = RMAOP_DERIV_CENTERED3};
  lap_same_bits(hctx, &wide, SPLIT_BALANCED, RMAOP_F64, "2D 23 x 300");
  lap_same_bits(hctx, &wide, SPLIT_UNEVEN, RMAOP_C128, "2D 23 x 300");
  lap_same_bits(hctx, &c_default, SPLIT_ONES, RMAOP_F64, "2D default axes");
  lap_same_bits(hctx, &c_default3, SPLIT_UNEVEN, RMAOP_F64, "3D default axes (local only)");
  lap_same_bits(hctx, &c_weighted, SPLIT_FIRST_ONE, RMAOP_F32, "axes (0,2) weighted, forward");
  lap_same_bits(hctx, &c_three, SPLIT_UNEVEN, RMAOP_F64, "axes (2,0,1) zero weights, backward");
  lap_same_bits(hctx, &c_three, SPLIT_BALANCED, RMAOP_C64, "axes (2,0,1) zero weights, backward");
  rmaop_ctx_destroy(&hctx);
}
END_TEST

/* ---- errors ---- */

/* Creation with `spec` must fail: ARG on `bad` (every rank when bad < 0), ARG or REMOTE elsewhere; the
 * output stays NULL and, where given, the failing rank's message contains `needle`. */
static void expect_deriv_error(int order, const rmaop_deriv_spec *spec, int bad, const char *needle, const char *what) {
  rmaop_op A = NULL;
  rmaop_status st =
      order == 1 ? rmaop_op_create_first_derivative(ctx, spec, &A) : rmaop_op_create_second_derivative(ctx, spec, &A);
  const int here = bad < 0 || bad == rt_rank;
  RT_CHECK(here ? st == RMAOP_ERR_ARG : (st == RMAOP_ERR_ARG || st == RMAOP_ERR_REMOTE), "%s -> %s: %s", what,
           rmaop_status_string(st), rmaop_ctx_last_error(NULL));
  RT_CHECK(A == NULL, "%s: output written on failure", what);
  RT_CHECK(!here || !needle || strstr(rmaop_ctx_last_error(NULL), needle), "%s: message \"%s\" lacks \"%s\"", what,
           rmaop_ctx_last_error(NULL), needle ? needle : "");
}

START_TEST(test_stencil_create_errors) {
  const shape_t narrow = {3, {9, 4, 6}}, short0 = {2, {4, 6}};
  rmaop_deriv_spec base = {
      .grid = make_grid(&cube, SPLIT_BALANCED), .axis = 0, .kind = RMAOP_DERIV_CENTERED3, .dtype = RMAOP_F64};
  rmaop_deriv_spec s = base;
  s.axis = 3;
  expect_deriv_error(1, &s, -1, "axis", "axis 3 of a 3-D grid");
  s.axis = -1;
  expect_deriv_error(2, &s, -1, "axis", "axis -1");
  s = base;
  s.grid = make_grid(&narrow, SPLIT_BALANCED), s.axis = 1, s.kind = RMAOP_DERIV_CENTERED5;
  expect_deriv_error(1, &s, -1, "4 samples", "centered5 along an axis of 4 samples");
  s.grid = make_grid(&short0, SPLIT_BALANCED), s.axis = 0;
  expect_deriv_error(1, &s, -1, NULL, "centered5 along axis 0 of 4 samples");
  s = base;
  s.kind = RMAOP_DERIV_CENTERED5;
  expect_deriv_error(2, &s, -1, "kind", "second derivative centered5");
  s.kind = (rmaop_deriv_kind)7;
  expect_deriv_error(1, &s, -1, "kind", "kind 7");
  s = base;
  s.dtype = (rmaop_dtype)9;
  expect_deriv_error(1, &s, -1, NULL, "dtype 9");
  s = base;
  s.sampling = NAN;
  expect_deriv_error(1, &s, -1, NULL, "sampling NaN");
  s = base;
  s.grid.ndim = 0;
  expect_deriv_error(1, &s, -1, NULL, "ndim 0");
  s = base;
  s.grid.dims[1] = 0;
  expect_deriv_error(1, &s, -1, NULL, "dims[1] = 0");
  /* local rows that do not add up to dims[0]: error on every rank */
  s = base;
  s.grid.local_rows = 1; /* sum P, dims[0] = P + 3 */
  s.grid.dims[0] = rt_size + 3;
  expect_deriv_error(1, &s, -1, "dims[0]", "local_rows adding up to P, not P + 3");
  s = base;
  s.grid.local_rows = split_rows(SPLIT_UNEVEN, 9, rt_rank, rt_size) - (rt_rank == rt_size - 1);
  expect_deriv_error(1, &s, -1, "dims[0]", "local_rows adding up to dims[0] - 1");
  /* one rank's local_rows is out of range: ARG there, REMOTE (or ARG) elsewhere */
  s = base;
  if (rt_rank == rt_size - 1)
    s.grid.local_rows = -2;
  expect_deriv_error(1, &s, rt_size - 1, "local_rows", "local_rows -2 on the last rank");
  s = base;
  if (rt_rank == 0)
    s.grid.local_rows = 10;
  expect_deriv_error(2, &s, 0, "local_rows", "local_rows > dims[0] on rank 0");
  /* NULL arguments */
  rmaop_op A = NULL;
  RT_EXPECT(rmaop_op_create_first_derivative(ctx, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_first_derivative(ctx, &base, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_second_derivative(NULL, &base, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");

  /* Laplacian */
  rmaop_laplacian_spec ls = {
      .grid = make_grid(&cube, SPLIT_BALANCED), .naxes = 4, .kind = RMAOP_DERIV_CENTERED3, .dtype = RMAOP_F64};
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("naxes");
  ls.naxes = 0, ls.grid = make_grid(&line11, SPLIT_BALANCED);
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  ls.grid = make_grid(&cube, SPLIT_BALANCED), ls.kind = RMAOP_DERIV_CENTERED5;
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  ls.kind = RMAOP_DERIV_CENTERED3, ls.naxes = 2, ls.axes[0] = 0, ls.axes[1] = 3;
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_laplacian(ctx, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_stencil");
  TCase *tc = tcase_create("stencils");
  tcase_add_checked_fixture(tc, op_setup, op_teardown);
  tcase_add_test(tc, test_first_derivative_f64);
  tcase_add_test(tc, test_second_derivative_f64);
  tcase_add_test(tc, test_derivatives_other_dtypes);
  tcase_add_test(tc, test_laplacian);
  tcase_add_test(tc, test_laplacian_same_bits);
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, op_setup, op_teardown);
  tcase_add_test(te, test_stencil_create_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
