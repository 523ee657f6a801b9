/* Tests of the 1-D non-stationary convolution (rmaop_op_create_nonstationary_convolve1d, PyLops-MPI
 * MPINonStationaryConvolve1D).
 *
 * Reference: serial PyLops NonStationaryConvolve1D on the gathered array, written here from its definition: the
 * filter at entry i is _interpolate_h (floor((i - oh) / dh) picks the filter before i, the weight (i - oh) / dh
 * minus that, the first or last filter outside ih), and the forward spreads x[.., i, ..] h_i over the outputs
 * i - nh/2 .. i + nh/2 inside the array (PyLops' _matvec). The operator's vectors hold the ranks' blocks (every
 * axis whole but the convolved one) one after the other, so the dense matrix of the serial formula is taken in
 * that order (for axis 0 the array's own). check_op (op_test_util.c) compares y = A x with M x and x = A^H y with
 * M^H y (the conjugate transpose: PyLops' _rmatvec, which does not conjugate, equals it for real filters), begin/end
 * with apply, and runs the dot test. Shapes 1-D to 3-D along every kind of axis; splits balanced (local_n = -1),
 * uneven with empty ranks and one entry per rank (the nh/2 ghost entries then come from several ranks); filters
 * before, between and after ih, one filter, filters longer than the blocks; every dtype (complex filters for
 * complex dtypes). Then the creation errors, on every rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

typedef struct {
  shape_t shape;
  int axis;        /* as passed (negative allowed) */
  int64_t nh, nfilts;
  int64_t ih[8];
} ns_case;

typedef struct {
  const ns_case *c;
  int axis;                   /* non-negative */
  int split;
  const double _Complex *hs;  /* nfilts x nh, as the dtype holds them */
} ns_ref;

static int norm_axis(const ns_case *c) {
  return c->axis < 0 ? c->axis + c->shape.ndim : c->axis;
}

/* Entries of the axis on rank r (SPLIT_BALANCED is the library's own split: local_n = -1). */
static int64_t rows_of(const ns_ref *R, int r) {
  return split_rows(R->split, R->c->shape.dims[R->axis], r, rt_size);
}

/* PyLops' _interpolate_h: the filter at entry i into h (nh values). */
static void interpolate(const ns_case *c, const double _Complex *hs, int64_t i, double _Complex *h) {
  const double oh = (double)c->ih[0], dh = c->nfilts > 1 ? (double)(c->ih[1] - c->ih[0]) : 1.0;
  const int64_t f = (int64_t)floor(((double)i - oh) / dh);
  for (int64_t j = 0; j < c->nh; ++j) {
    if (f < 0)
      h[j] = hs[j];
    else if (f >= c->nfilts - 1)
      h[j] = hs[(c->nfilts - 1) * c->nh + j];
    else {
      const double d = ((double)i - oh) / dh - (double)f;
      h[j] = (1 - d) * hs[f * c->nh + j] + d * hs[(f + 1) * c->nh + j];
    }
  }
}

/* Position in the operator's vector (the ranks' blocks in rank order) of the array's element (o, k, i). */
static int64_t block_index(const ns_ref *R, int64_t outer, int64_t inner, int64_t o, int64_t k, int64_t i) {
  int64_t before = 0, start = 0;
  int r = 0;
  while (k >= start + rows_of(R, r))
    before += outer * rows_of(R, r) * inner, start += rows_of(R, r), ++r;
  return before + (o * rows_of(R, r) + k - start) * inner + i;
}

/* y = C x in the operator's order (a serial_fn; cfg is an ns_ref). */
static void nsconv_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const ns_ref *R = cfg;
  const ns_case *c = R->c;
  const int a = R->axis;
  const int64_t n = c->shape.dims[a], half = c->nh / 2;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < c->shape.ndim; ++d) {
    if (d < a) outer *= c->shape.dims[d];
    if (d > a) inner *= c->shape.dims[d];
  }
  for (int64_t m = 0; m < outer * n * inner; ++m)
    y[m] = 0;
  double _Complex h[64];
  for (int64_t ix = 0; ix < n; ++ix) {
    interpolate(c, R->hs, ix, h);
    for (int64_t k = ix - half; k <= ix + half; ++k) {
      if (k < 0 || k >= n) continue;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i)
          y[block_index(R, outer, inner, o, k, i)] += x[block_index(R, outer, inner, o, ix, i)] * h[k - ix + half];
    }
  }
}

static void check_case(const ns_case *c, int split, rmaop_dtype d) {
  const ns_ref R0 = {c, norm_axis(c), split, NULL};
  const int64_t nhs = c->nfilts * c->nh;
  double _Complex *hs = malloc((size_t)nhs * sizeof *hs);
  void *hbuf = rt_alloc(d, nhs);
  for (int64_t j = 0; j < nhs; ++j) {
    hs[j] = rt_round(d, rt_value(j, 5));
    rt_store(d, hbuf, j, hs[j]);
  }
  ns_ref R = R0;
  R.hs = hs;
  rmaop_nsconv_spec spec = {.ndim = c->shape.ndim, .axis = c->axis, .local_n = -1, .nfilts = c->nfilts, .nh = c->nh,
                            .hs = hbuf, .ih = c->ih, .dtype = d};
  memcpy(spec.dims, c->shape.dims, sizeof spec.dims);
  if (split != SPLIT_BALANCED) spec.local_n = rows_of(&R, rt_rank);
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_nonstationary_convolve1d(ctx, &spec, &op));
  free(hbuf);
  const int64_t total = shape_size(&c->shape);
  int64_t before = 0;
  for (int r = 0; r < rt_rank; ++r)
    before += rows_of(&R, r);
  const int64_t per_row = total / c->shape.dims[R.axis];
  const local_shape ls = {rows_of(&R, rt_rank) * per_row, before * per_row, rows_of(&R, rt_rank) * per_row,
                          before * per_row};
  mat M = mat_from_fn(total, total, nsconv_serial, &R);
  char name[160];
  snprintf(name, sizeof name, "nsconv %dd axis %d nh %lld nfilts %lld split %s", c->shape.ndim, c->axis,
           (long long)c->nh, (long long)c->nfilts, split_names[split]);
  check_op(op, &M, d, &ls, name);
  mat_free(&M);
  free(hs);
  rmaop_op_destroy(&op);
}

static const ns_case cases[] = {
    /* 1-D: entries before the first filter and after the last, nh 5 */
    {{1, {23}}, 0, 5, 5, {2, 6, 10, 14, 18}},
    /* 1-D: the window reaches past the neighbour's first filter at a block end (PyLops-MPI clamps there) */
    {{1, {16}}, -1, 7, 4, {1, 5, 9, 13}},
    /* 1-D: filters longer than the blocks (ghosts from several ranks), filters at both ends */
    {{1, {10}}, 0, 9, 2, {0, 9}},
    /* 1-D: one filter (a stationary convolution) */
    {{1, {12}}, 0, 3, 1, {5}},
    /* 2-D along the last axis (PyLops' default), lines of the first */
    {{2, {5, 11}}, -1, 3, 4, {1, 4, 7, 10}},
    /* 2-D along axis 0 */
    {{2, {13, 3}}, 0, 5, 3, {0, 6, 12}},
    /* 3-D along the middle axis */
    {{3, {2, 9, 3}}, 1, 5, 3, {3, 5, 7}},
};

START_TEST(test_nsconv_values) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
    for (int split = 0; split < NSPLITS; ++split)
      check_case(&cases[k], split, RMAOP_F64);
}
END_TEST

START_TEST(test_nsconv_dtypes) {
  for (int d = 0; d < 4; ++d) {
    check_case(&cases[0], SPLIT_UNEVEN, rt_dtypes[d]);
    check_case(&cases[4], SPLIT_BALANCED, rt_dtypes[d]);
    check_case(&cases[6], SPLIT_ONES, rt_dtypes[d]);
  }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_nsconv_errors) {
  double hs[3 * 5] = {0};
  int64_t ih[3] = {1, 4, 7};
  rmaop_nsconv_spec spec = {.ndim = 1, .dims = {10}, .axis = 0, .local_n = -1, .nfilts = 3, .nh = 5, .hs = hs,
                            .ih = ih, .dtype = RMAOP_F64};
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_nonstationary_convolve1d(ctx, &spec, &op)); /* the spec is good */
  rmaop_op_destroy(&op);

  rmaop_nsconv_spec bad = spec;
  bad.nh = 4;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("odd length");
  int64_t out_of_range[3] = {1, 5, 10}, decreasing[3] = {7, 4, 1}, irregular[3] = {1, 4, 8};
  bad = spec;
  bad.ih = out_of_range;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ih[2] = 10 is outside [0, dims[0] = 10)");
  bad.ih = decreasing;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ih is not increasing");
  bad.ih = irregular;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ih is not regularly spaced");
  bad = spec;
  bad.axis = 1;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("axis = 1 is outside [-1, 0]");
  bad = spec;
  bad.ndim = RMAOP_MAX_DIMS + 1;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ndim");
  bad = spec;
  bad.dims[0] = 0;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dims[0] = 0 must be positive");
  bad = spec;
  bad.nfilts = 0;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("nfilts = 0");
  bad = spec;
  bad.hs = NULL;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("hs is NULL");
  bad = spec;
  bad.dtype = (rmaop_dtype)7;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype");
  bad = spec;
  bad.local_n = 11;
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("local_n = 11 is outside");
  bad = spec;
  bad.local_n = rt_rank == 0 ? 9 : 0; /* the ranks' entries add up to 9 */
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("add up to 9, but dims[0] = 10");
  /* bad input on one rank only: that rank names it, the others learn of it */
  bad = spec;
  if (rt_rank == rt_size - 1) bad.nh = 2;
  RT_EXPECT_ON(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), rt_size - 1, RMAOP_ERR_ARG);
  RT_CHECK(rt_rank != rt_size - 1 || strstr(rmaop_ctx_last_error(NULL), "odd length") != NULL,
           "the last rank's message: %s", rmaop_ctx_last_error(NULL));
  if (rt_size > 1) { /* arguments every rank passes alone but that differ between ranks */
    double other[3 * 5] = {0};
    other[7] = 1.0;
    bad = spec;
    if (rt_rank == 1) bad.hs = other;
    RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("hs (a checksum of its values) differs between ranks");
    int64_t shifted[3] = {2, 5, 8};
    bad = spec;
    if (rt_rank == 1) bad.ih = shifted;
    RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("ih[0] differs between ranks");
  }
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, NULL, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("spec is NULL");
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(ctx, &spec, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_nonstationary_convolve1d(NULL, &spec, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(op == NULL, "output written on failure");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nsconv");
  TCase *tc = tcase_create("nsconv");
  tcase_add_checked_fixture(tc, op_setup, op_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_nsconv_values);
  tcase_add_test(tc, test_nsconv_dtypes);
  tcase_add_test(tc, test_nsconv_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
