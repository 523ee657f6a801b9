/* Tests of the application interface every operator shares (rmaop_op_apply, _adjoint, _begin / _end,
 * rmaop_op_dottest, rmaop_op_get_info): outputs overwritten whatever they held (NaN), against the dense matrices
 * of derivatives and block operators (op_test_util.h); argument errors, misuse of begin / end, and the operator
 * still right afterwards. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

/* Outputs are overwritten whatever they held: y (forward) and x (adjoint) start as NaN. */
static void nan_fill(rmaop_vec v) {
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(info.dtype, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i)
    rt_store(info.dtype, buf, i, NAN + I * NAN);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
}

/* Applies A (forward and adjoint) into NaN-filled outputs and compares with M; appends failures to msg. */
static void overwrite_case(rmaop_op A, const mat *M, const char *name, char *msg, size_t msz) {
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(A, &info));
  rmaop_vec x = vec_on(info.model, info.dtype), y = vec_on(info.data, info.dtype);
  double _Complex *xg = fill(x, M->n, 1);
  RT_LOK();
  nan_fill(y);
  RT_OK(rmaop_op_apply(A, x, y));
  char one[400] = "";
  if (!compare(y, M, xg, "forward", one, sizeof one))
    snprintf(msg + strlen(msg), msz - strlen(msg), "[%s %s] ", name, one);
  mat MH = mat_adjoint(M);
  double _Complex *yg = fill(y, M->m, 2);
  RT_LOK();
  nan_fill(x);
  RT_OK(rmaop_op_apply_adjoint(A, y, x));
  if (!compare(x, &MH, yg, "adjoint", one, sizeof one))
    snprintf(msg + strlen(msg), msz - strlen(msg), "[%s %s] ", name, one);
  mat_free(&MH);
  free(xg), free(yg);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y);
}

START_TEST(test_output_overwritten) {
  char msg[4000] = "";
  const deriv_cfg cs[] = {
      {1, RMAOP_DERIV_CENTERED3, 0, 0, cube, 0}, {1, RMAOP_DERIV_CENTERED5, 1, 0, cube, 0},
      {1, RMAOP_DERIV_FORWARD, 0, 0, cube, 2},   {2, RMAOP_DERIV_CENTERED3, 0, 0, cube, 1},
      {2, RMAOP_DERIV_BACKWARD, 1, 0, cube, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i)
    for (int k = 0; k < 2; ++k) {
      const rmaop_dtype d = k ? RMAOP_C64 : RMAOP_F64;
      pair p = deriv_pair(&cs[i], SPLIT_ONES, d);
      char name[120];
      snprintf(name, sizeof name, "%s derivative %s edge=%d axis %d %s", cs[i].order == 1 ? "first" : "second",
               kind_names[cs[i].kind], cs[i].edge, cs[i].axis, rmaop_dtype_name(d));
      overwrite_case(p.op, &p.M, name, msg, sizeof msg);
      pair_free(&p);
    }
  for (int kind = 0; kind < 3; ++kind) {
    blk_user u;
    rmaop_op A = make_block(kind, RMAOP_F64, 0, &u);
    mat M = block_matrix(kind, RMAOP_F64);
    overwrite_case(A, &M, block_names[kind], msg, sizeof msg);
    mat_free(&M);
    rmaop_op_destroy(&A);
  }
  RT_CHECK(msg[0] == 0, "outputs not overwritten (they started as NaN): %s", msg);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_apply_errors) {
  const deriv_cfg c = {1, RMAOP_DERIV_CENTERED3, 1, 0, cube, 0};
  rmaop_op D = make_deriv(&c, SPLIT_FIRST_ONE, RMAOP_F64);
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(D, &info));
  rmaop_layout bigger = NULL, bcast = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, shape_size(&cube) + 1, &bigger));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, shape_size(&cube), &bcast));
  rmaop_vec x = vec_on(info.model, RMAOP_F64), y = vec_on(info.data, RMAOP_F64), y2 = vec_on(info.data, RMAOP_F64);
  rmaop_vec xbig = vec_on(bigger, RMAOP_F64), xbc = vec_on(bcast, RMAOP_F64), x32 = vec_on(info.model, RMAOP_F32);
  rmaop_vec yc = vec_on(info.data, RMAOP_C128);
  free(fill(x, shape_size(&cube), 1));
  RT_LOK();

  /* wrong layout or dtype: ARG on every rank, the message names the vector */
  RT_EXPECT(rmaop_op_apply(D, xbig, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x");
  RT_EXPECT(rmaop_op_apply(D, xbc, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x32, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("f32");
  RT_EXPECT(rmaop_op_apply(D, x, yc), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(D, xbig, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(D, y, x32), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_begin(D, xbc, y), RT_BIT(RMAOP_ERR_ARG));
  /* NULL operator / vectors / outputs */
  RT_EXPECT(rmaop_op_apply(NULL, x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(NULL, y, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_begin(NULL, x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, NULL, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x, NULL), RT_BIT(RMAOP_ERR_ARG));
  double rel;
  RT_EXPECT(rmaop_op_dottest(NULL, 1u, &rel), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_dottest(D, 1u, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_get_info(NULL, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_get_info(D, NULL), RT_BIT(RMAOP_ERR_ARG));
  /* x == y */
  RT_EXPECT(rmaop_op_apply(D, x, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("same");
  RT_EXPECT(rmaop_op_apply_adjoint(D, y, y), RT_BIT(RMAOP_ERR_ARG));
  /* end without begin */
  RT_EXPECT(rmaop_op_apply_end(D), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(D), RT_BIT(RMAOP_ERR_ARG));
  /* a second begin while one is in flight; the first one still completes */
  RT_OK(rmaop_op_apply_begin(D, x, y));
  RT_EXPECT(rmaop_op_apply_begin(D, x, y2), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("already");
  RT_EXPECT(rmaop_op_apply_adjoint_begin(D, y2, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x, y2), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(D), RT_BIT(RMAOP_ERR_ARG));
  RT_OK(rmaop_op_apply_end(D));
  RT_EXPECT(rmaop_op_apply_end(D), RT_BIT(RMAOP_ERR_ARG));
  /* after all that the operator works and gave the right result */
  RT_OK(rmaop_op_apply(D, x, y2));
  RT_CHECK(same_local(y, y2), "the begun application before the failed calls differs from a plain apply");
  mat M = mat_from_fn(shape_size(&cube), shape_size(&cube), deriv_serial, &c);
  local_shape ls = grid_shape(&cube, SPLIT_FIRST_ONE);
  check_op(D, &M, RMAOP_F64, &ls, "after errors");
  mat_free(&M);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&y2), rmaop_vec_destroy(&xbig);
  rmaop_vec_destroy(&xbc), rmaop_vec_destroy(&x32), rmaop_vec_destroy(&yc);
  rmaop_layout_destroy(&bigger), rmaop_layout_destroy(&bcast);
  rmaop_op_destroy(&D);
  rmaop_op_destroy(&D); /* no-op on NULL */
  rmaop_op_destroy(NULL);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_apply");
  TCase *tm = tcase_create("overwrite");
  tcase_add_checked_fixture(tm, op_setup, op_teardown);
  tcase_add_test(tm, test_output_overwritten);
  suite_add_tcase(s, tm);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, op_setup, op_teardown);
  tcase_add_test(te, test_apply_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
