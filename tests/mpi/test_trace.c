/* Tests of the trace recorder. Reference: what the traced calls moved, known from the test itself: a ring
 * plan sending K doubles to the right neighbour moves one message of 8 K bytes per execution to another
 * rank (none on one rank), a reduction involves the P - 1 other ranks; labels and kinds as documented
 * in rmaop.h (rmaop_trace_site), the dot's site named "dot". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmaop_test.h"

enum { K = 3 };

static rmaop_ctx ctx;
static void setup(void) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.trace = 1;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx));
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

static const char *env_or(const char *name, const char *deflt) {
  const char *v = getenv(name);
  return v && *v ? v : deflt;
}

/* The site with this label and kind, or -1. */
static int find_site(const char *label, const char *kind, rmaop_trace_site *site) {
  int n = 0;
  if (rmaop_trace_count(ctx, &n) != RMAOP_OK)
    return -1;
  for (int i = 0; i < n; ++i)
    if (rmaop_trace_get(ctx, i, site) == RMAOP_OK && strcmp(site->label, label) == 0 && strcmp(site->kind, kind) == 0)
      return i;
  return -1;
}

static rmaop_plan ring_plan(const char *label) {
  rmaop_transfer t = {(rt_rank + 1) % rt_size, 0, 0, K};
  rmaop_plan_spec spec = {
      .dtype = RMAOP_F64, .src_len = K, .dst_len = K, .nsends = 1, .sends = &t, .nrecvs = -1, .label = label};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &plan));
  return plan;
}

START_TEST(test_plan_site) {
  RT_OK(rmaop_trace_reset(ctx));
  rmaop_plan plan = ring_plan("trace_ring");
  double src[K] = {1, 2, 3}, dst[K];
  for (int i = 0; i < 3; ++i)
    RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  rmaop_trace_site s;
  int at = find_site("trace_ring", "plan", &s);
  RT_CHECK(at >= 0, "no plan site labelled trace_ring");
  const int others = rt_size > 1;
  const char *backend = env_or("RMAOP_BACKEND", "rma");
  int is_rma = strcmp(backend, "rma") == 0;
  RT_CHECK(s.calls == 3, "calls %llu, want 3", (unsigned long long)s.calls);
  RT_CHECK(s.calls_add == 0, "calls_add %llu after INSERT calls, want 0", (unsigned long long)s.calls_add);
  RT_CHECK(s.messages == (uint64_t)others, "messages %llu, want %d", (unsigned long long)s.messages, others);
  RT_CHECK(!others || s.bytes_per_message == 8.0 * K, "bytes per message %g, want %d", s.bytes_per_message, 8 * K);
  RT_CHECK(strcmp(s.backend, backend) == 0, "backend %s, want %s", s.backend, backend);
  RT_CHECK(strcmp(s.sync, is_rma ? env_or("RMAOP_RMA_SYNC", "lock") : "-") == 0, "sync %s", s.sync);
  RT_CHECK(!others || strcmp(s.transport, is_rma ? env_or("RMAOP_RMA_TRANSPORT", "mpi") : "-") == 0, "transport %s",
           s.transport);
  RT_CHECK(s.time_min >= 0 && s.time_min <= s.time_max && s.time_max <= s.time_total && s.time_total > 0,
           "times min %g max %g total %g", s.time_min, s.time_max, s.time_total);
  RT_CHECK(s.time_inside > 0 && s.time_inside <= s.time_total, "time inside %g, total %g", s.time_inside, s.time_total);
  /* the split form counts too; a plan without a label is the site "plan". Work between begin and end (50 ms
   * here, on every rank) belongs to the span, not to the time inside rmaop's calls. The margin allows for
   * ranks that the scheduler starts late on an oversubscribed machine. */
  const double total0 = s.time_total, inside0 = s.time_inside;
  RT_OK(rmaop_plan_begin(plan, src, dst, RMAOP_ADD));
  for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 50e-3;) {
  }
  RT_OK(rmaop_plan_end(plan));
  RT_OK(rmaop_trace_get(ctx, at, &s));
  RT_CHECK(s.calls == 4, "calls %llu after begin/end, want 4", (unsigned long long)s.calls);
  RT_CHECK(s.calls_add == 1, "calls_add %llu after one RMAOP_ADD call, want 1", (unsigned long long)s.calls_add);
  RT_CHECK(s.time_total - total0 >= 50e-3 && (s.time_inside - inside0) < 0.5 * (s.time_total - total0),
           "overlapped work: span grew %g s, time inside grew %g s", s.time_total - total0, s.time_inside - inside0);
  rmaop_plan anon = ring_plan(NULL);
  RT_OK(rmaop_plan_execute(anon, src, dst, RMAOP_INSERT));
  RT_CHECK(find_site("plan", "plan", &s) >= 0 && s.calls == 1, "no site \"plan\" for an unlabelled plan");
  rmaop_plan_destroy(&anon);
  rmaop_plan_destroy(&plan);
}
END_TEST

START_TEST(test_reduce_sites) {
  RT_OK(rmaop_trace_reset(ctx));
  int n = -1;
  RT_OK(rmaop_trace_count(ctx, &n));
  RT_CHECK(n == 0, "%d sites after reset", n);
  double in[4] = {1, 2, 3, 4}, out[4];
  RT_OK(rmaop_allreduce(ctx, in, out, 4, RMAOP_SUM, "trace_sum"));
  RT_OK(rmaop_allreduce(ctx, in, out, 4, RMAOP_MAX, "trace_sum"));
  rmaop_trace_site s;
  RT_CHECK(find_site("trace_sum", "reduce", &s) >= 0, "no reduce site labelled trace_sum");
  RT_CHECK(s.calls == 2 && s.messages == (uint64_t)(rt_size - 1), "calls %llu messages %llu",
           (unsigned long long)s.calls, (unsigned long long)s.messages);
  RT_CHECK(rt_size == 1 || s.bytes_per_message >= 4 * sizeof(double), "bytes per message %g", s.bytes_per_message);
  RT_OK(rmaop_allreduce(ctx, in, out, 4, RMAOP_SUM, NULL));
  RT_CHECK(find_site("allreduce", "reduce", &s) >= 0 && s.calls == 1, "no site \"allreduce\" for an unlabelled one");
  /* a dot of a scattered vector is one reduction: site "dot" */
  rmaop_layout l = NULL;
  rmaop_vec x = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &l));
  RT_OK(rmaop_vec_create(l, RMAOP_C128, &x));
  RT_OK(rmaop_vec_set(x, 1.0 + 1.0 * I));
  double _Complex r = 0;
  RT_OK(rmaop_vec_dot(x, x, &r));
  RT_CHECK(r == 20.0, "dot = %g%+gi", creal(r), cimag(r));
  RT_CHECK(find_site("dot", "reduce", &s) >= 0, "no reduce site labelled dot");
  RT_CHECK(s.calls == 1 && s.messages == (uint64_t)(rt_size - 1) &&
               (rt_size == 1 || s.bytes_per_message >= sizeof(double _Complex)),
           "dot site: calls %llu messages %llu bytes %g", (unsigned long long)s.calls, (unsigned long long)s.messages,
           s.bytes_per_message);
  rmaop_vec_destroy(&x);
  rmaop_layout_destroy(&l);
}
END_TEST

START_TEST(test_off_records_nothing) {
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, 0));
  rmaop_plan plan = ring_plan("quiet");
  double src[K] = {0}, dst[K], v = 1, w;
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  RT_OK(rmaop_allreduce(ctx, &v, &w, 1, RMAOP_SUM, "quiet"));
  int n = -1;
  RT_OK(rmaop_trace_count(ctx, &n));
  RT_CHECK(n == 0, "%d sites recorded with tracing off", n);
  RT_OK(rmaop_trace_enable(ctx, 1));
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  RT_OK(rmaop_trace_count(ctx, &n));
  RT_CHECK(n == 1, "%d sites after turning tracing back on", n);
  rmaop_plan_destroy(&plan);
  rmaop_trace_site s;
  RT_EXPECT(rmaop_trace_get(ctx, 1, &s), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_get(ctx, -1, &s), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_get(ctx, 0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_count(ctx, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_count(NULL, &n), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_enable(NULL, 1), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_trace_write_json(ctx, NULL), RT_BIT(RMAOP_ERR_ARG));
}
END_TEST

/* Inside-time of one ring execution where rank 0 arrives 100 ms late, as the slowest rank sees it (long
 * enough that a loaded, oversubscribed machine's scheduling, ~10-20 ms, cannot blur the checks). */
static double late_peer_inside(rmaop_plan plan, int mode) {
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, mode));
  double src[K] = {1, 2, 3}, dst[K], inside = 0, worst = 0;
  if (rt_rank == 0)
    for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 100e-3;) {
    }
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  rmaop_trace_site s;
  if (find_site("late", "plan", &s) >= 0)
    inside = s.time_inside;
  MPI_Allreduce(&inside, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

/* RMAOP_TRACE_SYNCED leaves the wait for a late peer out of the site's time (the barrier before the call
 * absorbs it, untimed); plain tracing keeps it in. */
START_TEST(test_synced_excludes_late_peer) {
  rmaop_plan plan = ring_plan("late");
  double plain = late_peer_inside(plan, RMAOP_TRACE_ON), synced = late_peer_inside(plan, RMAOP_TRACE_SYNCED);
  RT_CHECK(rt_size == 1 || plain >= 60e-3, "plain tracing: slowest rank's time inside %g s, want >= 60 ms", plain);
  RT_CHECK(synced > 0 && synced < 30e-3, "synced tracing: time inside %g s, want > 0 and < 30 ms", synced);
  rmaop_plan_destroy(&plan);
  RT_EXPECT(rmaop_trace_enable(ctx, 3), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("RMAOP_TRACE_SYNCED");
  RT_OK(rmaop_trace_enable(ctx, RMAOP_TRACE_ON));
}
END_TEST

/* The same for a peer that works long between its begin and end (overlapped work): synchronized tracing
 * meets the ranks again before the end, so the slowest rank's end does not count rank 0's 100 ms. On paths
 * whose end waits for the peer (fence, pscw) plain tracing would count it; the check is on synced. */
START_TEST(test_synced_excludes_late_end) {
  rmaop_plan plan = ring_plan("late_end");
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, RMAOP_TRACE_SYNCED));
  double src[K] = {1, 2, 3}, dst[K] = {0}, inside = 0, worst = 0;
  RT_OK(rmaop_plan_begin(plan, src, dst, RMAOP_INSERT));
  if (rt_rank == 0)
    for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 100e-3;) {
    }
  RT_OK(rmaop_plan_end(plan));
  rmaop_trace_site s;
  if (find_site("late_end", "plan", &s) >= 0)
    inside = s.time_inside;
  MPI_Allreduce(&inside, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  RT_CHECK(worst > 0 && worst < 30e-3, "synced tracing: time inside %g s with a peer late to its end, want < 30 ms",
           worst);
  for (int i = 0; i < K; ++i) /* the ring: each rank receives its left neighbour's source */
    RT_CHECK(dst[i] == src[i], "dst[%d] = %g after the traced exchange, want %g", i, dst[i], src[i]);
  rmaop_plan_destroy(&plan);
  RT_OK(rmaop_trace_enable(ctx, RMAOP_TRACE_ON));
}
END_TEST

/* The median call: one of five ring exchanges waits 100 ms for rank 0 (plain tracing counts it, as in
 * test_synced_excludes_late_peer); the waiting rank's mean time inside carries it, the median does not.
 * The margins allow for a waiting rank that the scheduler itself starts late on a loaded machine. */
START_TEST(test_median_ignores_one_slow_call) {
  RT_OK(rmaop_trace_reset(ctx));
  rmaop_plan plan = ring_plan("median_ring");
  double src[K] = {1, 2, 3}, dst[K];
  for (int k = 0; k < 5; ++k) {
    if (k == 2 && rt_rank == 0)
      for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 100e-3;) {
      }
    RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  }
  rmaop_plan_destroy(&plan);
  rmaop_trace_site s;
  RT_CHECK(find_site("median_ring", "plan", &s) >= 0 && s.calls == 5, "no plan site median_ring of 5 calls");
  RT_CHECK(s.time_inside_median > 0 && s.time_inside_median <= s.time_inside, "median %g, total inside %g",
           s.time_inside_median, s.time_inside);
  double mine[2] = {s.time_inside, s.time_inside_median}, worst[2];
  MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  RT_CHECK(rt_size == 1 || (worst[0] >= 50e-3 && worst[1] < 30e-3),
           "one call waiting 100 ms for rank 0: slowest rank's total inside %g s (want >= 50 ms), median %g s "
           "(want < 30 ms)",
           worst[0], worst[1]);
}
END_TEST

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *s = calloc(1, 1 << 16);
  size_t n = s ? fread(s, 1, (1 << 16) - 1, f) : 0;
  (void)n;
  fclose(f);
  return s;
}

START_TEST(test_json) {
  RT_OK(rmaop_trace_reset(ctx));
  rmaop_plan plan = ring_plan("json_site_label");
  double src[K] = {0}, dst[K];
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  rmaop_plan_destroy(&plan);
  /* unique names: ctest runs several jobs in the same directory */
  long pid = (long)getpid();
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  char pattern[256], mine[256], single[256];
  snprintf(pattern, sizeof pattern, "rmaop_trace_%ld_%%r.json", pid);
  snprintf(mine, sizeof mine, "rmaop_trace_%ld_%d.json", pid, rt_rank);
  snprintf(single, sizeof single, "rmaop_trace_%ld_single.json", pid);
  RT_OK(rmaop_trace_write_json(ctx, pattern)); /* every rank writes its own file */
  char *text = slurp(mine);
  RT_CHECK(text != NULL, "%s was not written", mine);
  RT_CHECK(strstr(text, "\"json_site_label\"") != NULL && strstr(text, "\"plan\"") != NULL &&
               strstr(text, "\"time_inside_median\"") != NULL && strstr(text, "\"calls_add\": 0") != NULL &&
               (text[0] == '{' || text[0] == '['),
           "%s lacks the site: %.200s", mine, text);
  free(text);
  remove(mine);
  RT_OK(rmaop_trace_write_json(ctx, single)); /* no %r: only rank 0 writes */
  MPI_Barrier(MPI_COMM_WORLD);
  text = slurp(single);
  RT_CHECK(text != NULL && strstr(text, "json_site_label") != NULL, "%s not written by rank 0", single);
  free(text);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rt_rank == 0)
    remove(single);
  RT_EXPECT(rmaop_trace_write_json(ctx, "/nonexistent-dir/x_%r.json"), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("nonexistent-dir");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("trace");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_plan_site);
  tcase_add_test(tc, test_reduce_sites);
  tcase_add_test(tc, test_off_records_nothing);
  tcase_add_test(tc, test_json);
  tcase_add_test(tc, test_synced_excludes_late_peer);
  tcase_add_test(tc, test_synced_excludes_late_end);
  tcase_add_test(tc, test_median_ignores_one_slow_call);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
