/* Tests of rmaop_allreduce / rmaop_allreduce_begin + rmaop_request_wait. Reference: the sum (in long
 * double), max and min over ranks of every rank's input, recomputed on every rank from the inputs'
 * definition in_r[j] = re(rt_value(1000 r + j, s)) * 10^((r + j) % 7 - 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

static double input(int r, int64_t j, int s) {
  return creal(rt_value(1000 * r + j, s)) * pow(10.0, (double)((r + j) % 7) - 3.0);
}

static void fill(double *in, int64_t n, int s) {
  for (int64_t j = 0; j < n; ++j)
    in[j] = input(rt_rank, j, s);
}

/* out matches the reference for op; reports the first bad element. */
static int check_result(const double *out, int64_t n, rmaop_redop op, int s, int64_t *bad) {
  for (int64_t j = 0; j < n; ++j) {
    long double sum = 0, scale = 0;
    double mx = -INFINITY, mn = INFINITY;
    for (int r = 0; r < rt_size; ++r) {
      double v = input(r, j, s);
      sum += v, scale += fabs(v);
      mx = v > mx ? v : mx;
      mn = v < mn ? v : mn;
    }
    int ok = op == RMAOP_SUM   ? fabsl(out[j] - sum) <= 1e-14L * (scale + 1e-300L)
             : op == RMAOP_MAX ? out[j] == mx
                               : out[j] == mn;
    if (!ok) {
      *bad = j;
      return 0;
    }
  }
  return 1;
}

static const char *op_name(rmaop_redop op) {
  return op == RMAOP_SUM ? "SUM" : op == RMAOP_MAX ? "MAX" : "MIN";
}

START_TEST(test_ops_and_counts) {
  const int64_t counts[] = {1, 3, 1000};
  for (int c = 0; c < 3; ++c) {
    int64_t n = counts[c];
    double *in = calloc((size_t)n, sizeof *in), *out = calloc((size_t)n, sizeof *out);
    for (int o = 0; o < 3; ++o) {
      rmaop_redop op = (rmaop_redop)o;
      int s = 3 * c + o;
      fill(in, n, s);
      RT_OK(rmaop_allreduce(ctx, in, out, n, op, "test"));
      int64_t bad = -1;
      int good = check_result(out, n, op, s, &bad); /* before RT_CHECK reads `bad` */
      RT_CHECK(good, "%s count %lld: out[%lld] = %.17g", op_name(op), (long long)n, (long long)bad,
               bad >= 0 ? out[bad] : 0.0);
      RT_CHECK(rt_same_everywhere(out, (size_t)n * sizeof *out), "%s count %lld differs between ranks", op_name(op),
               (long long)n);
      /* in place (in == out) */
      fill(out, n, s);
      RT_OK(rmaop_allreduce(ctx, out, out, n, op, NULL));
      good = check_result(out, n, op, s, &bad);
      RT_CHECK(good, "%s count %lld in place: out[%lld] wrong", op_name(op), (long long)n, (long long)bad);
      /* split form */
      memset(out, 0, (size_t)n * sizeof *out);
      rmaop_request req = NULL;
      RT_OK(rmaop_allreduce_begin(ctx, in, out, n, op, "split", &req));
      RT_OK(rmaop_request_wait(&req));
      RT_CHECK(req == NULL, "request_wait did not clear the handle");
      good = check_result(out, n, op, s, &bad);
      RT_CHECK(good, "%s count %lld begin/wait: out[%lld] wrong", op_name(op), (long long)n, (long long)bad);
    }
    free(in);
    free(out);
  }
}
END_TEST

START_TEST(test_count_zero) {
  RT_OK(rmaop_allreduce(ctx, NULL, NULL, 0, RMAOP_SUM, NULL));
  double a = 1, b = 2;
  RT_OK(rmaop_allreduce(ctx, &a, &b, 0, RMAOP_MAX, NULL));
  RT_CHECK(b == 2, "count 0 wrote the output");
}
END_TEST

START_TEST(test_many_consecutive) {
  /* 200 reductions with changing data, blocking and split alternately: one epoch's data must never
   * leak into the next. */
  double in[5], out[5];
  int ok = 1, bad_it = -1;
  for (int it = 0; it < 200 && ok; ++it) {
    rmaop_redop op = (rmaop_redop)(it % 3);
    fill(in, 5, it);
    rmaop_status st;
    if (it % 2) {
      st = rmaop_allreduce(ctx, in, out, 5, op, "loop");
    } else {
      rmaop_request req = NULL;
      st = rmaop_allreduce_begin(ctx, in, out, 5, op, "loop", &req);
      if (st == RMAOP_OK)
        st = rmaop_request_wait(&req);
    }
    int64_t bad = -1;
    ok = rt_all(st == RMAOP_OK && check_result(out, 5, op, it, &bad));
    if (!ok)
      bad_it = it;
  }
  RT_CHECK(ok, "reduction %d of 200 wrong: %s", bad_it, rmaop_ctx_last_error(NULL));
}
END_TEST

START_TEST(test_two_in_flight) {
  /* Two split reductions outstanding at once (pipelined solvers overlap them), waited in both orders. */
  double in1[3], in2[1000], out1[3], out2[1000];
  int ok = 1;
  for (int it = 0; it < 20; ++it) {
    fill(in1, 3, it);
    fill(in2, 1000, it + 50);
    rmaop_request r1 = NULL, r2 = NULL;
    RT_OK(rmaop_allreduce_begin(ctx, in1, out1, 3, RMAOP_SUM, "first", &r1));
    RT_OK(rmaop_allreduce_begin(ctx, in2, out2, 1000, RMAOP_MAX, "second", &r2));
    if (it % 2) {
      RT_OK(rmaop_request_wait(&r1));
      RT_OK(rmaop_request_wait(&r2));
    } else {
      RT_OK(rmaop_request_wait(&r2));
      RT_OK(rmaop_request_wait(&r1));
    }
    int64_t bad;
    ok &= check_result(out1, 3, RMAOP_SUM, it, &bad) && check_result(out2, 1000, RMAOP_MAX, it + 50, &bad);
  }
  RT_CHECK(ok, "two reductions in flight mixed their data");
}
END_TEST

START_TEST(test_subcommunicator) {
  /* Reductions over a context on a split of MPI_COMM_WORLD (ranks of one parity) involve only those
   * ranks. Reference: the sum / max of the world ranks of that parity. */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rt_rank % 2, rt_size - rt_rank, &sub);
  rmaop_ctx sctx = NULL;
  RT_OK(rmaop_ctx_create(sub, NULL, &sctx));
  double want_sum = 0, want_max = 0;
  for (int r = rt_rank % 2; r < rt_size; r += 2)
    want_sum += r, want_max = r;
  int ok = 1;
  for (int it = 0; it < 20; ++it) {
    double in[2] = {rt_rank + it, rt_rank + it}, out[2] = {-1, -1};
    RT_OK(rmaop_allreduce(sctx, in, out, 1, RMAOP_SUM, NULL));
    RT_OK(rmaop_allreduce(sctx, in + 1, out + 1, 1, RMAOP_MAX, NULL));
    int nsub = (rt_size - rt_rank % 2 + 1) / 2;
    ok &= out[0] == want_sum + nsub * it && out[1] == want_max + it;
  }
  RT_CHECK(ok, "reduction over a split communicator wrong");
  rmaop_ctx_destroy(&sctx);
  MPI_Comm_free(&sub);
}
END_TEST

START_TEST(test_bad_arguments) {
  double a[3] = {1, 2, 3}, b[3];
  rmaop_request req = NULL;
  RT_EXPECT(rmaop_allreduce(ctx, a, b, -1, RMAOP_SUM, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce(ctx, NULL, b, 3, RMAOP_SUM, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce(ctx, a, NULL, 3, RMAOP_SUM, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce(ctx, a, b, 3, (rmaop_redop)9, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce(NULL, a, b, 3, RMAOP_SUM, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce_begin(ctx, a, b, 3, RMAOP_SUM, NULL, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_request_wait(NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_request_wait(&req), RT_BIT(RMAOP_ERR_ARG));
  /* Bad input on ONE rank of the collective: that rank ARG, the others REMOTE, nobody hangs. */
  const int bad = rt_size - 1;
  RT_EXPECT_ON(rmaop_allreduce(ctx, a, b, rt_rank == bad ? -2 : 3, RMAOP_SUM, NULL), bad, RMAOP_ERR_ARG);
  RT_EXPECT_ON(rmaop_allreduce(ctx, a, b, 3, rt_rank == bad ? (rmaop_redop)7 : RMAOP_MIN, NULL), bad, RMAOP_ERR_ARG);
  RT_EXPECT_ON(rmaop_allreduce(ctx, rt_rank == bad ? NULL : a, b, 3, RMAOP_SUM, NULL), bad, RMAOP_ERR_ARG);
  /* and the context still works */
  RT_OK(rmaop_allreduce(ctx, a, b, 3, RMAOP_SUM, NULL));
  RT_CHECK(b[0] == rt_size && b[2] == 3.0 * rt_size, "sum of constants wrong: %g %g", b[0], b[2]);
}
END_TEST

/* n doubles in the context's memory kind (device memory in the gpu runs): the local array of a vector. */
static rmaop_vec mem_buffer(int64_t n, double **p) {
  rmaop_layout l = NULL;
  rmaop_vec v = NULL;
  RT_OK(rmaop_layout_create_local(ctx, n, &l));
  RT_OK(rmaop_vec_create(l, RMAOP_F64, &v));
  rmaop_layout_destroy(&l); /* the vector holds its own reference */
  RT_OK(rmaop_vec_get_array(v, (void **)p));
  return v;
}

/* rmaop_allreduce_enqueue: buffers in the context's memory kind, the reference result, identical bits on
 * every rank, in place too; counts that reuse and replace the per-count gather plans (1, 6, 40, 6, 1000). */
START_TEST(test_enqueue) {
  const int64_t counts[] = {1, 6, 40, 6, 1000};
  for (int c = 0; c < 5; ++c) {
    const int64_t n = counts[c];
    double *in = calloc((size_t)n, sizeof *in), *out = calloc((size_t)n, sizeof *out), *din = NULL, *dout = NULL;
    rmaop_vec vin = mem_buffer(n, &din), vout = mem_buffer(n, &dout);
    for (int o = 0; o < 3; ++o) {
      const rmaop_redop op = (rmaop_redop)o;
      const int s = 20 + 3 * c + o;
      int64_t bad = -1;
      fill(in, n, s);
      RT_OK(rmaop_vec_write_local(vin, in));
      RT_OK(rmaop_allreduce_enqueue(ctx, din, dout, n, op));
      RT_OK(rmaop_vec_read_local(vout, out));
      RT_CHECK(check_result(out, n, op, s, &bad), "enqueue %s count %lld: element %lld = %.17g wrong", op_name(op),
               (long long)n, (long long)bad, bad >= 0 ? out[bad] : 0.0);
      RT_CHECK(rt_same_everywhere(out, (size_t)n * sizeof *out), "enqueue %s count %lld differs between ranks",
               op_name(op), (long long)n);
      RT_OK(rmaop_allreduce_enqueue(ctx, din, din, n, op)); /* in place */
      memset(in, 0, (size_t)n * sizeof *in);
      RT_OK(rmaop_vec_read_local(vin, in));
      RT_CHECK(memcmp(in, out, (size_t)n * sizeof *in) == 0, "enqueue %s count %lld in place differs", op_name(op),
               (long long)n);
    }
    rmaop_vec_destroy(&vin);
    rmaop_vec_destroy(&vout);
    free(in);
    free(out);
  }
  RT_OK(rmaop_allreduce_enqueue(ctx, NULL, NULL, 0, RMAOP_SUM));
}
END_TEST

START_TEST(test_enqueue_bad_arguments) {
  double *d = NULL, host[4] = {1, 2, 3, 4};
  rmaop_vec v = mem_buffer(4, &d);
  RT_OK(rmaop_vec_write_local(v, host));
  RT_EXPECT(rmaop_allreduce_enqueue(NULL, d, d, 3, RMAOP_SUM), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce_enqueue(ctx, d, d, -1, RMAOP_SUM), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce_enqueue(ctx, NULL, d, 3, RMAOP_SUM), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_allreduce_enqueue(ctx, d, d, 3, (rmaop_redop)9), RT_BIT(RMAOP_ERR_ARG));
  const int bad = rt_size - 1;
  RT_EXPECT_ON(rmaop_allreduce_enqueue(ctx, d, d, 3, rt_rank == bad ? (rmaop_redop)7 : RMAOP_MIN), bad, RMAOP_ERR_ARG);
  if (rt_size > 1) /* counts that differ: every rank learns it, nobody waits for a gather that never comes */
    RT_EXPECT(rmaop_allreduce_enqueue(ctx, d, d, rt_rank == bad ? 2 : 3, RMAOP_SUM), RT_BIT(RMAOP_ERR_ARG));
  if (rt_device()) /* a host buffer on a device context */
    RT_EXPECT(rmaop_allreduce_enqueue(ctx, host, d, 3, RMAOP_SUM), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
  /* and the context still works */
  RT_OK(rmaop_allreduce_enqueue(ctx, d, d, 3, RMAOP_SUM));
  double r[4] = {0, 0, 0, 0};
  RT_OK(rmaop_vec_read_local(v, r));
  RT_CHECK(r[0] == rt_size && r[2] == 3.0 * rt_size && r[3] == 4.0, "sum of constants wrong: %g %g %g", r[0], r[2], r[3]);
  rmaop_vec_destroy(&v);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("reduce");
  TCase *tc = tcase_create("reduce");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_ops_and_counts);
  tcase_add_test(tc, test_count_zero);
  tcase_add_test(tc, test_many_consecutive);
  tcase_add_test(tc, test_two_in_flight);
  tcase_add_test(tc, test_subcommunicator);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_enqueue);
  tcase_add_test(tc, test_enqueue_bad_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
