/* Tests of the shell operator: a 1-D forward first derivative written as user callbacks with a one-element
 * ghost filled by a plan, against the dense matrix of PyLops' FirstDerivative (op_test_util.h: check_op) and the
 * library's own first derivative on every split; failing callbacks; creation errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

/* ---- shell: a 1-D forward first derivative with a one-element ghost from the next non-empty rank ---- */

typedef struct {
  rmaop_dtype d;
  int64_t n, off, N;
  double h;
  rmaop_status fail;
} fwd_user;

static rmaop_status fwd_apply(void *u, const void *x, const void *ghost, void *y) {
  const fwd_user *f = u;
  if (f->fail != RMAOP_OK)
    return f->fail;
  for (int64_t i = 0; i < f->n; ++i) {
    const int64_t g = f->off + i;
    double _Complex v = 0;
    if (g < f->N - 1) {
      double _Complex next = i + 1 < f->n ? rt_load(f->d, x, i + 1) : rt_load(f->d, ghost, 0);
      v = (next - rt_load(f->d, x, i)) / f->h;
    }
    rt_store(f->d, y, i, v);
  }
  return RMAOP_OK;
}

static rmaop_status fwd_adjoint(void *u, const void *y, void *x, void *ghost) {
  const fwd_user *f = u;
  if (f->fail != RMAOP_OK)
    return f->fail;
  double _Complex *acc = calloc((size_t)f->n + 1, sizeof *acc); /* acc[n]: the ghost's contribution */
  for (int64_t i = 0; i < f->n; ++i) {
    if (f->off + i >= f->N - 1)
      continue;
    const double _Complex c = rt_load(f->d, y, i) / f->h; /* the coefficients are real */
    acc[i] -= c;
    acc[i + 1] += c;
  }
  for (int64_t i = 0; i < f->n; ++i)
    rt_store(f->d, x, i, acc[i]);
  if (f->n > 0 && f->off + f->n < f->N)
    rt_store(f->d, ghost, 0, acc[f->n]);
  free(acc);
  return RMAOP_OK;
}

/* The plan: every non-empty rank but the first non-empty one sends its first element to the ghost of the
 * previous non-empty rank. */
static rmaop_plan forward_plan(rmaop_dtype d, const int64_t *rows) {
  rmaop_transfer t[1];
  int nt = 0;
  if (rows[rt_rank] > 0)
    for (int q = rt_rank - 1; q >= 0; --q)
      if (rows[q] > 0) {
        t[nt++] = (rmaop_transfer){q, 0, 0, 1};
        break;
      }
  rmaop_plan_spec spec = {.dtype = d,
                          .src_len = rows[rt_rank],
                          .dst_len = 1,
                          .nsends = nt,
                          .sends = t,
                          .nrecvs = -1,
                          .label = "shell-forward"};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &plan));
  return plan;
}

START_TEST(test_shell_forward_derivative) {
  /* The callbacks below compute on host arrays; on device memory they would get GPU pointers. */
  if (rt_device())
    return;
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  const shape_t line = {1, {13}};
  for (int k = 0; k < 2; ++k)
    for (int split = 0; split < NSPLITS; ++split) {
      const rmaop_dtype d = ds[k];
      int64_t *rows = calloc((size_t)rt_size, sizeof *rows);
      for (int r = 0; r < rt_size; ++r)
        rows[r] = split_rows(split, 13, r, rt_size);
      const int64_t off = split_offset(split, 13, rt_rank, rt_size);
      rmaop_layout l = NULL;
      RT_OK(rmaop_layout_create_local(ctx, rows[rt_rank], &l));
      rmaop_plan plan = forward_plan(d, rows);
      fwd_user user = {d, rows[rt_rank], off, 13, 0.5, RMAOP_OK};
      rmaop_shell_ops ops = {fwd_apply, fwd_adjoint, &user};
      rmaop_op S = NULL;
      RT_OK(rmaop_op_create_shell(l, l, d, plan, &ops, &S));
      deriv_cfg c = {1, RMAOP_DERIV_FORWARD, 0, 0.5, line, 0};
      mat M = mat_from_fn(13, 13, deriv_serial, &c);
      local_shape ls = {rows[rt_rank], off, rows[rt_rank], off};
      char name[120];
      snprintf(name, sizeof name, "shell forward derivative, %s", split_names[split]);
      check_op(S, &M, d, &ls, name);

      /* against the library's own forward derivative on the same split: forward and adjoint */
      rmaop_op D = make_deriv(&c, split, d);
      rmaop_vec x = vec_on(l, d), y1 = vec_on(l, d), y2 = vec_on(l, d);
      free(fill(x, 13, 3));
      RT_LOK();
      RT_OK(rmaop_op_apply(S, x, y1));
      RT_OK(rmaop_op_apply(D, x, y2));
      char msg[320] = "";
      double _Complex *g1 = calloc(14, sizeof *g1), *g2 = calloc(14, sizeof *g2);
      RT_OK(rmaop_vec_gather(y1, 0, g1));
      RT_OK(rmaop_vec_gather(y2, 0, g2));
      int ok = 1;
      for (int i = 0; i < 13 && rt_rank == 0 && ok; ++i)
        if (!rt_close(rt_load(d, g1, i), rt_load(d, g2, i), rt_tol(d), 1.0))
          ok = 0, snprintf(msg, sizeof msg, "shell and first derivative differ at %d", i);
      RT_OK(rmaop_op_apply_adjoint(S, x, y1));
      RT_OK(rmaop_op_apply_adjoint(D, x, y2));
      RT_OK(rmaop_vec_gather(y1, 0, g1));
      RT_OK(rmaop_vec_gather(y2, 0, g2));
      for (int i = 0; i < 13 && rt_rank == 0 && ok; ++i)
        if (!rt_close(rt_load(d, g1, i), rt_load(d, g2, i), rt_tol(d), 1.0))
          ok = 0, snprintf(msg, sizeof msg, "shell and first derivative adjoints differ at %d", i);
      RT_CHECK(ok, "%s %s: %s", name, rmaop_dtype_name(d), msg);
      free(g1), free(g2);

      /* a failing callback (every rank): its status comes back */
      user.fail = RMAOP_ERR_NOMEM;
      RT_EXPECT(rmaop_op_apply(S, x, y1), RT_BIT(RMAOP_ERR_NOMEM));
      RT_EXPECT(rmaop_op_apply_adjoint(S, x, y1), RT_BIT(RMAOP_ERR_NOMEM));
      user.fail = RMAOP_OK;
      RT_OK(rmaop_op_apply(S, x, y1));

      rmaop_vec_destroy(&x), rmaop_vec_destroy(&y1), rmaop_vec_destroy(&y2);
      rmaop_op_destroy(&D);
      rmaop_op_destroy(&S);
      rmaop_plan_destroy(&plan);
      rmaop_layout_destroy(&l);
      mat_free(&M);
      free(rows);
    }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_shell_create_errors) {
  rmaop_op A = NULL;
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create_local(ctx, 3, &l));
  rmaop_plan_spec ps = {.dtype = RMAOP_F64, .src_len = 3, .dst_len = 1, .nrecvs = -1};
  rmaop_plan plan = NULL, plan4 = NULL;
  RT_OK(rmaop_plan_create(ctx, &ps, &plan));
  ps.src_len = 4;
  RT_OK(rmaop_plan_create(ctx, &ps, &plan4));
  fwd_user user = {RMAOP_F64, 3, 3 * rt_rank, 3 * rt_size, 1.0, RMAOP_OK};
  rmaop_shell_ops ops = {fwd_apply, fwd_adjoint, &user}, noops = {NULL, fwd_adjoint, &user};
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_C128, plan, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, plan4, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, plan, &noops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, NULL, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(NULL, l, RMAOP_F64, plan, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");
  rmaop_plan_destroy(&plan), rmaop_plan_destroy(&plan4);
  rmaop_layout_destroy(&l);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_shell");
  TCase *tm = tcase_create("shell");
  tcase_add_checked_fixture(tm, op_setup, op_teardown);
  tcase_add_test(tm, test_shell_forward_derivative);
  suite_add_tcase(s, tm);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, op_setup, op_teardown);
  tcase_add_test(te, test_shell_create_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
