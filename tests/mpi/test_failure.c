/* Test of the state after a failed exchange. Reference: README "Errors" and rmaop_ctx_create's comment
 * (include/rmaop/ctx.h): a wait for a peer gives up after the context's timeout with RMAOP_ERR_TIMEOUT naming
 * the peer, on every sync mode and backend; after RMAOP_ERR_TIMEOUT or RMAOP_ERR_REMOTE the context is failed,
 * every communicating call on it returns RMAOP_ERR_STATE saying which call failed, local calls still work, and
 * the destroy calls return (nothing waits inside MPI for a rank that may never come).
 *
 * Four exchanges, each in a context of its own: a halo plan, a public window epoch (the context's sync mode;
 * lock on twosided contexts), a dot (the rma backend's one-sided reduction, twosided's polled MPI_Iallreduce)
 * and the argument agreement of a collective call (rmaop_layout_create). Two ways to fail, rank 0 being the
 * odd one:
 *   absent     rank 0 never enters the exchange. The others return RMAOP_ERR_TIMEOUT within 2 x the timeout,
 *              naming rank 0; they are failed, rank 0 is not (it cannot know) and destroys its objects at once,
 *              which must not hang either.
 *   straggler  rank 0 enters 1.5 x the timeout late. The others time out as above; rank 0 returns an error
 *              (RMAOP_ERR_REMOTE: the others gave up; or its own timeout), never RMAOP_OK with data of an
 *              epoch the others abandoned. Then every rank is failed. (The agreement: MPI matches the late
 *              rank's part of the collective with the parts the others left pending; its confirming step then
 *              times out, so it does not go on alone into what follows the agreement.)
 * A watchdog (alarm) turns a hang into a quick failure. Needs 2+ ranks. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmaop_test.h"

enum { WATCHDOG_S = 30 };
static const double timeout_s = 0.5;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

enum { EX_PLAN, EX_WIN, EX_DOT, EX_AGREE };
static const char *const ex_name[] = {"plan", "window epoch", "dot", "agreement"};

/* Everything a scenario uses, made before the failure (creation communicates, so after it would fail). */
typedef struct {
  rmaop_ctx ctx;
  rmaop_plan plan;
  rmaop_op A;
  rmaop_vec x, y;
  rmaop_win win;
  double *wbase;
  int left, right;
  double src[4], dst[4];
} fixture;

static void fixture_make(fixture *f) {
  memset(f, 0, sizeof *f);
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.timeout = timeout_s;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &f->ctx));
  f->left = (rt_rank + rt_size - 1) % rt_size;
  f->right = (rt_rank + 1) % rt_size;
  rmaop_transfer t[2] = {{f->right, 0, 0, 2}, {f->left, 2, 2, 2}};
  rmaop_plan_spec spec = {
      .dtype = RMAOP_F64, .src_len = 4, .dst_len = 4, .nsends = 2, .sends = t, .nrecvs = -1, .label = "ring"};
  RT_OK(rmaop_plan_create(f->ctx, &spec, &f->plan));
  rmaop_deriv_spec d = {.grid = {.ndim = 1, .dims = {4 * (int64_t)rt_size}, .local_rows = -1},
                        .axis = 0,
                        .kind = RMAOP_DERIV_CENTERED3,
                        .dtype = RMAOP_F64};
  RT_OK(rmaop_op_create_first_derivative(f->ctx, &d, &f->A));
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(f->A, &info));
  RT_OK(rmaop_vec_create(info.model, RMAOP_F64, &f->x));
  RT_OK(rmaop_vec_create(info.data, RMAOP_F64, &f->y));
  RT_OK(rmaop_vec_set(f->x, 1.0));
  RT_OK(rmaop_win_allocate(f->ctx, 8 * sizeof(double), &f->win, (void **)&f->wbase));
  for (int j = 0; j < 4; ++j)
    f->src[j] = 10.0 * rt_rank + j;
  /* Everybody in step once (the reduction table is made at the first dot). */
  double _Complex r = 0;
  RT_OK(rmaop_plan_execute(f->plan, f->src, f->dst, RMAOP_INSERT));
  RT_OK(rmaop_op_apply(f->A, f->x, f->y));
  RT_OK(rmaop_vec_dot(f->x, f->x, &r));
  RT_CHECK(creal(r) == 4.0 * rt_size, "dot %g, want %d", creal(r), 4 * rt_size);
}

static rmaop_status win_epoch(fixture *f) {
  rmaop_status st = rmaop_win_epoch_begin(f->win, 1, &f->right, 1, &f->left);
  double v = 100.0 + rt_rank;
  if (st == RMAOP_OK)
    st = rmaop_win_put(f->win, &v, sizeof v, f->right, 0);
  return st == RMAOP_OK ? rmaop_win_epoch_end(f->win) : st;
}

static rmaop_status exchange(fixture *f, int ex) {
  double _Complex r = 0;
  switch (ex) {
  case EX_PLAN:
    return rmaop_plan_execute(f->plan, f->src, f->dst, RMAOP_INSERT);
  case EX_WIN:
    return win_epoch(f);
  case EX_DOT:
    return rmaop_vec_dot(f->x, f->x, &r);
  default: {
    rmaop_layout l = NULL;
    rmaop_status st = rmaop_layout_create(f->ctx, RMAOP_LAYOUT_SCATTER, 8, &l);
    rmaop_layout_destroy(&l);
    return st;
  }
  }
}

static int twosided(const fixture *f) {
  rmaop_ctx_info ci;
  return rmaop_ctx_get_info(f->ctx, &ci) == RMAOP_OK && strcmp(ci.backend, "twosided") == 0;
}

/* Which rank is missing from an MPI collective is unknown to the others: the agreement's message and twosided's
 * reduction name the call instead. */
static const char *culprit(const fixture *f, int ex) {
  return ex == EX_AGREE ? "rmaop_layout_create" : ex == EX_DOT && twosided(f) ? "MPI_Iallreduce" : "rank 0";
}

/* Every communicating call returns RMAOP_ERR_STATE quoting the failure (`failed`: this rank's context failed;
 * elsewhere nothing is called, but every rank takes part in the collective assertions), and writes nothing. */
#define EXPECT_STATE(call)                                                                                             \
  do {                                                                                                                 \
    rmaop_status s_ = failed ? (call) : RMAOP_ERR_STATE;                                                               \
    RT_CHECK(s_ == RMAOP_ERR_STATE && (!failed || strstr(rmaop_ctx_last_error(f->ctx), "failed in an earlier call")),  \
             "after the failure %s -> %s: %s", #call, rmaop_status_string(s_), rmaop_ctx_last_error(f->ctx));          \
  } while (0)

static void after_failure(fixture *f, int failed) {
  double h[4] = {-1, -1, -1, -1}, in = 1.0, out = -7.0;
  for (int j = 0; j < 4; ++j)
    f->dst[j] = -1.0;
  double _Complex r = -7.0;
  rmaop_request req = NULL;
  rmaop_plan p2 = NULL;
  rmaop_win w2 = NULL;
  void *b2 = NULL;
  rmaop_layout l2 = NULL;
  rmaop_solver_options so;
  rmaop_solver_options_init(&so);
  so.niter = 2;
  rmaop_solver_info si;
  memset(&si, 0, sizeof si);
  rmaop_transfer t = {f->right, 0, 0, 1};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 4, .dst_len = 4, .nsends = 1, .sends = &t, .nrecvs = -1};
  EXPECT_STATE(rmaop_plan_execute(f->plan, f->src, f->dst, RMAOP_INSERT));
  EXPECT_STATE(rmaop_plan_begin(f->plan, f->src, f->dst, RMAOP_ADD));
  EXPECT_STATE(rmaop_win_epoch_begin(f->win, 1, &f->right, 1, &f->left));
  EXPECT_STATE(rmaop_win_put(f->win, &in, sizeof in, f->right, 0));
  EXPECT_STATE(rmaop_vec_dot(f->x, f->y, &r));
  EXPECT_STATE(rmaop_vec_norm2(f->x, &out));
  EXPECT_STATE(rmaop_allreduce(f->ctx, &in, &out, 1, RMAOP_SUM, NULL));
  EXPECT_STATE(rmaop_allreduce_begin(f->ctx, &in, &out, 1, RMAOP_SUM, NULL, &req));
  EXPECT_STATE(rmaop_op_apply(f->A, f->x, f->y));
  EXPECT_STATE(rmaop_op_apply_adjoint(f->A, f->y, f->x));
  EXPECT_STATE(rmaop_solve_cgls(f->A, f->y, f->x, &so, &si));
  EXPECT_STATE(rmaop_plan_create(f->ctx, &spec, &p2));
  EXPECT_STATE(rmaop_win_allocate(f->ctx, 64, &w2, &b2));
  EXPECT_STATE(rmaop_layout_create(f->ctx, RMAOP_LAYOUT_SCATTER, 8, &l2));
  RT_CHECK(!failed || (f->dst[0] == -1.0 && f->dst[3] == -1.0 && out == -7.0 && creal(r) == -7.0),
           "a refused call wrote its output: dst %g %g, out %g, r %g", f->dst[0], f->dst[3], out, creal(r));
  RT_CHECK(p2 == NULL && w2 == NULL && l2 == NULL && req == NULL, "a refused creation returned an object");
  /* Local calls go on. */
  rmaop_ctx_info ci;
  RT_OK(rmaop_ctx_get_info(f->ctx, &ci));
  RT_OK(rmaop_vec_write_local(f->x, h));
  RT_OK(rmaop_vec_read_local(f->x, h));
  rmaop_solver_info_destroy(&si);
}

/* Destroys on a failed context (or, for rank 0 after "absent", on a context whose peers failed) return. */
static void destroy_all(fixture *f) {
  double t0 = MPI_Wtime();
  rmaop_win_destroy(&f->win);
  rmaop_op_destroy(&f->A);
  rmaop_plan_destroy(&f->plan);
  rmaop_vec_destroy(&f->x);
  rmaop_vec_destroy(&f->y);
  rmaop_ctx_destroy(&f->ctx);
  const double took = MPI_Wtime() - t0;
  RT_CHECK(f->ctx == NULL && f->win == NULL && f->plan == NULL, "a destroy left its handle set");
  RT_CHECK(took < 4 * timeout_s, "the destroys took %.2f s with a %.2f s timeout", took, timeout_s);
}

static void scenario(int ex, int straggler) {
  fixture f;
  fixture_make(&f);
  rt_watchdog(WATCHDOG_S, "test_failure: a wait or a destroy is not bounded by the context's timeout");
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  rmaop_status st = RMAOP_OK;
  if (rt_rank != 0 || straggler) {
    if (rt_rank == 0)
      sleep_s(1.5 * timeout_s);
    st = exchange(&f, ex);
  }
  const double waited = MPI_Wtime() - t0;
  const int waiting = rt_rank != 0;
  RT_CHECK(waiting     ? st == RMAOP_ERR_TIMEOUT
           : straggler ? (st == RMAOP_ERR_TIMEOUT || st == RMAOP_ERR_REMOTE || st == RMAOP_ERR_STATE)
                       : st == RMAOP_OK,
           "%s, rank 0 %s: %s after %.2f s: %s", ex_name[ex], straggler ? "late" : "absent", rmaop_status_string(st),
           waited, rmaop_ctx_last_error(NULL));
  RT_CHECK(!waiting || (waited >= 0.9 * timeout_s && waited < 2 * timeout_s),
           "%s: the timeout came after %.2f s (timeout %.2f s)", ex_name[ex], waited, timeout_s);
  RT_CHECK(!waiting || strstr(rmaop_ctx_last_error(NULL), culprit(&f, ex)), "%s: the message does not name %s: %s",
           ex_name[ex], culprit(&f, ex), rmaop_ctx_last_error(NULL));
  /* Rank 0 after "absent" has seen nothing fail: it destroys its objects straight away. */
  after_failure(&f, rt_rank != 0 || straggler);
  destroy_all(&f);
  rt_watchdog(0, NULL);
}

START_TEST(test_plan_absent) {
  scenario(EX_PLAN, 0);
}
END_TEST

START_TEST(test_plan_straggler) {
  scenario(EX_PLAN, 1);
}
END_TEST

START_TEST(test_win_absent) {
  scenario(EX_WIN, 0);
}
END_TEST

START_TEST(test_win_straggler) {
  scenario(EX_WIN, 1);
}
END_TEST

START_TEST(test_dot_absent) {
  scenario(EX_DOT, 0);
}
END_TEST

START_TEST(test_dot_straggler) {
  scenario(EX_DOT, 1);
}
END_TEST

START_TEST(test_agree_absent) {
  scenario(EX_AGREE, 0);
}
END_TEST

START_TEST(test_agree_straggler) {
  scenario(EX_AGREE, 1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("failure");
  TCase *tc = tcase_create("failure");
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_plan_absent);
  tcase_add_test(tc, test_plan_straggler);
  tcase_add_test(tc, test_win_absent);
  tcase_add_test(tc, test_win_straggler);
  tcase_add_test(tc, test_dot_absent);
  tcase_add_test(tc, test_dot_straggler);
  tcase_add_test(tc, test_agree_absent);
  tcase_add_test(tc, test_agree_straggler);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
