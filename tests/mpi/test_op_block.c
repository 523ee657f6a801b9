/* Tests of the block operators: block-diagonal, vstack and hstack of one block per rank (sizes zero included),
 * dense or through callbacks, every dtype, against the dense matrix of every rank's block formula (PyLops
 * MPIBlockDiag / MPIVStack / MPIHStack; op_test_util.h: check_op); a failing callback; creation errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

START_TEST(test_block_operators) {
  for (int kind = 0; kind < 3; ++kind)
    for (int k = 0; k < 4; ++k)
      for (int cb = 0; cb < 2; ++cb) {
        const rmaop_dtype d = rt_dtypes[k];
        if (cb && (d == RMAOP_F32 || d == RMAOP_C64))
          continue; /* callbacks: f64 and c128 */
        blk_user user;
        rmaop_op A = make_block(kind, d, cb, &user);
        mat M = block_matrix(kind, d);
        local_shape ls = block_shape(kind);
        char name[96];
        snprintf(name, sizeof name, "%s (%s)", block_names[kind], cb ? "callbacks" : "dense");
        check_op(A, &M, d, &ls, name);
        mat_free(&M);
        rmaop_op_destroy(&A);
      }
}
END_TEST

START_TEST(test_block_callback_error) {
  /* a callback failing on every rank: its status comes back, with a message naming the callback */
  for (int kind = 0; kind < 3; ++kind) {
    blk_user user;
    rmaop_op A = make_block(kind, RMAOP_F64, 1, &user);
    rmaop_op_info info;
    RT_OK(rmaop_op_get_info(A, &info));
    rmaop_vec x = vec_on(info.model, RMAOP_F64), y = vec_on(info.data, RMAOP_F64);
    RT_LOK();
    user.fail = RMAOP_ERR_UNSUPPORTED;
    RT_EXPECT(rmaop_op_apply(A, x, y), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    RT_MESSAGE_HAS("callback");
    RT_EXPECT(rmaop_op_apply_adjoint(A, y, x), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    /* and the operator still works afterwards */
    user.fail = RMAOP_OK;
    user.calls = 0;
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_op_apply_adjoint(A, y, x));
    RT_CHECK(user.calls == 2, "%s: callbacks called %d times for one apply and one adjoint", block_names[kind],
             user.calls);
    rmaop_vec_destroy(&x);
    rmaop_vec_destroy(&y);
    rmaop_op_destroy(&A);
  }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_block_create_errors) {
  rmaop_op A = NULL;
  double dense[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  rmaop_block b = {.nrows = 2, .ncols = 2, .dense = dense};
  RT_EXPECT(rmaop_op_create_blockdiag(ctx, RMAOP_F64, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_vstack(ctx, RMAOP_F64, &b, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_hstack(ctx, (rmaop_dtype)5, &b, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_block nob = {.nrows = 2, .ncols = 2};
  RT_EXPECT(rmaop_op_create_blockdiag(ctx, RMAOP_F64, &nob, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_block neg = b;
  if (rt_rank == 0)
    neg.nrows = -1;
  RT_EXPECT_ON(rmaop_op_create_blockdiag(ctx, RMAOP_F64, &neg, &A), 0, RMAOP_ERR_ARG);
  if (rt_size > 1) {
    rmaop_block uneq = b;
    uneq.ncols = rt_rank == rt_size - 1 ? 3 : 2; /* vstack: the columns (model) must agree */
    RT_EXPECT(rmaop_op_create_vstack(ctx, RMAOP_F64, &uneq, &A), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
    uneq = b;
    uneq.nrows = rt_rank == 0 ? 1 : 2; /* hstack: the rows (data) must agree */
    RT_EXPECT(rmaop_op_create_hstack(ctx, RMAOP_F64, &uneq, &A), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
  }
  RT_CHECK(A == NULL, "output written on failure");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_block");
  TCase *tb = tcase_create("blocks");
  tcase_add_checked_fixture(tb, op_setup, op_teardown);
  tcase_add_test(tb, test_block_operators);
  tcase_add_test(tb, test_block_callback_error);
  suite_add_tcase(s, tb);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, op_setup, op_teardown);
  tcase_add_test(te, test_block_create_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
