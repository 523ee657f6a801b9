/* Tests of the composite operators: sum, product, scaled (real and complex alpha), adjoint, nested composites
 * and composites of block operators, against the same combination of the parts' dense matrices
 * (op_test_util.h: check_op); composites whose parts share an operator; creation errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

START_TEST(test_composites) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 2; ++k) {
    const rmaop_dtype d = ds[k];
    const double _Complex alpha = rt_is_complex(d) ? 0.75 - 1.25 * I : -1.75;
    const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED5, 1, 0.5, cube, 0}, c2 = {2, RMAOP_DERIV_CENTERED3, 0, 0, cube, 1},
                    c3 = {1, RMAOP_DERIV_BACKWARD, 0, 2.0, cube, 2};
    pair p1 = deriv_pair(&c1, SPLIT_ONES, d), p2 = deriv_pair(&c2, SPLIT_ONES, d), p3 = deriv_pair(&c3, SPLIT_ONES, d);
    rmaop_op C = NULL;
    mat M;

    /* sum of three different operators */
    rmaop_op three[3] = {p1.op, p2.op, p3.op};
    RT_OK(rmaop_op_create_sum(3, three, &C));
    mat t = mat_add(&p1.M, 1.0, &p2.M);
    M = mat_add(&t, 1.0, &p3.M);
    check_op(C, &M, d, &p1.ls, "sum D1 + D2 + D3");
    mat_free(&t), mat_free(&M), rmaop_op_destroy(&C);

    /* the same operator twice */
    rmaop_op twice[2] = {p1.op, p1.op};
    RT_OK(rmaop_op_create_sum(2, twice, &C));
    M = mat_scale(&p1.M, 2.0);
    check_op(C, &M, d, &p1.ls, "sum D1 + D1");
    mat_free(&M), rmaop_op_destroy(&C);

    /* product, and the square of one operator */
    RT_OK(rmaop_op_create_product(p1.op, p2.op, &C));
    M = mat_mul(&p1.M, &p2.M);
    check_op(C, &M, d, &p1.ls, "product D1 D2");
    mat_free(&M), rmaop_op_destroy(&C);
    RT_OK(rmaop_op_create_product(p3.op, p3.op, &C));
    M = mat_mul(&p3.M, &p3.M);
    check_op(C, &M, d, &p1.ls, "product D3 D3");
    mat_free(&M), rmaop_op_destroy(&C);

    /* scaled (complex alpha for complex dtypes: the adjoint takes conj(alpha)) */
    RT_OK(rmaop_op_create_scaled(p1.op, alpha, &C));
    M = mat_scale(&p1.M, alpha);
    check_op(C, &M, d, &p1.ls, "scaled alpha D1");
    mat_free(&M), rmaop_op_destroy(&C);

    /* adjoint as an operator */
    RT_OK(rmaop_op_create_adjoint(p1.op, &C));
    M = mat_adjoint(&p1.M);
    check_op(C, &M, d, &p1.ls, "adjoint D1^H");
    mat_free(&M), rmaop_op_destroy(&C);

    /* nested: 0.5 (D1 D2 + D3^H), with the parts dropped before use (the composite keeps them alive) */
    {
      rmaop_op prod = NULL, adj = NULL, sum = NULL, parts[2];
      RT_OK(rmaop_op_create_product(p1.op, p2.op, &prod));
      RT_OK(rmaop_op_create_adjoint(p3.op, &adj));
      parts[0] = prod, parts[1] = adj;
      RT_OK(rmaop_op_create_sum(2, parts, &sum));
      RT_OK(rmaop_op_create_scaled(sum, 0.5, &C));
      rmaop_op_destroy(&prod), rmaop_op_destroy(&adj), rmaop_op_destroy(&sum);
      mat a = mat_mul(&p1.M, &p2.M), b = mat_adjoint(&p3.M), s = mat_add(&a, 1.0, &b);
      M = mat_scale(&s, 0.5);
      check_op(C, &M, d, &p1.ls, "nested 0.5 (D1 D2 + D3^H)");
      mat_free(&a), mat_free(&b), mat_free(&s), mat_free(&M), rmaop_op_destroy(&C);
    }

    /* block composites: V^H V (broadcast -> scatter -> broadcast), H^H H (scatter -> broadcast -> scatter) and
     * V^H alone, with the parts dropped before use; V H cannot be formed (V's 4 broadcast columns are not H's
     * 3 broadcast rows) */
    {
      blk_user uv, uh;
      rmaop_op V = make_block(VSTACK, d, 0, &uv), H = make_block(HSTACK, d, 1, &uh);
      mat Mv = block_matrix(VSTACK, d), Mh = block_matrix(HSTACK, d);
      RT_CHECK(VSTACK_COLS != HSTACK_ROWS, "test setup: the two block sizes must differ");
      rmaop_op VH = NULL, VtV = NULL, HtH = NULL, Vadj = NULL, Hadj = NULL;
      RT_EXPECT(rmaop_op_create_product(V, H, &VH), RT_BIT(RMAOP_ERR_ARG));
      RT_CHECK(VH == NULL, "output written on failure");
      RT_OK(rmaop_op_create_adjoint(V, &Vadj));
      RT_OK(rmaop_op_create_product(Vadj, V, &VtV));
      rmaop_op_destroy(&Vadj);
      mat vh = mat_adjoint(&Mv);
      M = mat_mul(&vh, &Mv);
      local_shape bb = {VSTACK_COLS, 0, VSTACK_COLS, 0};
      check_op(VtV, &M, d, &bb, "product V^H V");
      mat_free(&M), rmaop_op_destroy(&VtV);
      RT_OK(rmaop_op_create_adjoint(H, &Hadj));
      RT_OK(rmaop_op_create_product(Hadj, H, &HtH));
      rmaop_op_destroy(&Hadj);
      mat hh = mat_adjoint(&Mh);
      M = mat_mul(&hh, &Mh);
      local_shape hs = block_shape(HSTACK);
      local_shape ss = {hs.model_n, hs.model_off, hs.model_n, hs.model_off};
      check_op(HtH, &M, d, &ss, "product H^H H");
      mat_free(&M), rmaop_op_destroy(&HtH);
      RT_OK(rmaop_op_create_adjoint(V, &Vadj)); /* model scatter, data broadcast */
      local_shape vs = block_shape(VSTACK);
      local_shape vsh = {vs.data_n, vs.data_off, vs.model_n, vs.model_off};
      check_op(Vadj, &vh, d, &vsh, "adjoint V^H");
      rmaop_op_destroy(&Vadj);
      mat_free(&vh), mat_free(&hh), mat_free(&Mv), mat_free(&Mh);
      rmaop_op_destroy(&V);
      rmaop_op_destroy(&H);
    }
    pair_free(&p1), pair_free(&p2), pair_free(&p3);
  }
}
END_TEST

/* Composites whose parts share an operator: alpha D + D (the scaled part wraps D itself) and D + D^H, which
 * PyLops writes 2 * D + D and D + D.H. */
START_TEST(test_sum_scaled_shares_part) {
  const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0};
  pair p = deriv_pair(&c1, SPLIT_BALANCED, RMAOP_F64);
  rmaop_op S = NULL, C = NULL;
  RT_OK(rmaop_op_create_scaled(p.op, 2.0, &S));
  rmaop_op parts[2] = {S, p.op};
  RT_OK(rmaop_op_create_sum(2, parts, &C));
  rmaop_op_destroy(&S);
  mat M = mat_scale(&p.M, 3.0);
  check_op(C, &M, RMAOP_F64, &p.ls, "sum 2 D + D");
  mat_free(&M), rmaop_op_destroy(&C);
  pair_free(&p);
}
END_TEST

START_TEST(test_sum_adjoint_shares_part) {
  const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0};
  pair p = deriv_pair(&c1, SPLIT_BALANCED, RMAOP_F64);
  rmaop_op H = NULL, C = NULL;
  RT_OK(rmaop_op_create_adjoint(p.op, &H));
  rmaop_op parts[2] = {p.op, H};
  RT_OK(rmaop_op_create_sum(2, parts, &C));
  rmaop_op_destroy(&H);
  mat DH = mat_adjoint(&p.M), M = mat_add(&p.M, 1.0, &DH);
  check_op(C, &M, RMAOP_F64, &p.ls, "sum D + D^H");
  mat_free(&M), mat_free(&DH), rmaop_op_destroy(&C);
  pair_free(&p);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_composite_create_errors) {
  rmaop_op A = NULL;
  pair p = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_BALANCED, RMAOP_F64);
  pair q = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_UNEVEN, RMAOP_F64);
  pair pc = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_BALANCED, RMAOP_C128);
  RT_EXPECT(rmaop_op_create_scaled(p.op, 1.0 + 2.0 * I, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("alpha");
  RT_EXPECT(rmaop_op_create_scaled(NULL, 1.0, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_scaled(p.op, 1.0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_adjoint(NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_op two[2] = {p.op, pc.op};
  RT_EXPECT(rmaop_op_create_sum(2, two, &A), RT_BIT(RMAOP_ERR_ARG)); /* dtypes differ */
  RT_EXPECT(rmaop_op_create_sum(0, two, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_sum(1, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_product(p.op, pc.op, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_product(NULL, p.op, &A), RT_BIT(RMAOP_ERR_ARG));
  if (rt_size > 1) { /* layouts of the same global size, split differently */
    two[1] = q.op;
    RT_EXPECT(rmaop_op_create_sum(2, two, &A), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(rmaop_op_create_product(p.op, q.op, &A), RT_BIT(RMAOP_ERR_ARG));
  }
  RT_CHECK(A == NULL, "output written on failure");
  /* a complex alpha on a complex operator is fine */
  RT_OK(rmaop_op_create_scaled(pc.op, 1.0 + 2.0 * I, &A));
  rmaop_op_destroy(&A);
  pair_free(&p), pair_free(&q), pair_free(&pc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_compose");
  TCase *tm = tcase_create("composites");
  tcase_add_checked_fixture(tm, op_setup, op_teardown);
  tcase_add_test(tm, test_composites);
  tcase_add_test(tm, test_sum_scaled_shares_part);
  tcase_add_test(tm, test_sum_adjoint_shares_part);
  suite_add_tcase(s, tm);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, op_setup, op_teardown);
  tcase_add_test(te, test_composite_create_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
