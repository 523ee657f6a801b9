/* Tests of rmaop_layout. Reference: rmaop_layout_create's comment in rmaop.h (PyLops-MPI local_split:
 * the first global_n mod P ranks hold one more element) recomputed here, and MPI_Exscan / MPI_Allreduce
 * of the user's local sizes for rmaop_layout_create_local. */
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

/* Every rank's range, as seen from this rank, is consistent with the expected sizes. */
static void check_ranges(rmaop_layout l, const int64_t *want_sizes, const int64_t *want_offsets) {
  int ok = 1;
  for (int p = 0; p < rt_size; ++p) {
    int64_t n = -7, off = -7;
    ok &= rmaop_layout_rank_range(l, p, &n, &off) == RMAOP_OK && n == want_sizes[p] && off == want_offsets[p];
  }
  RT_CHECK(ok, "rmaop_layout_rank_range disagrees with the reference");
}

START_TEST(test_balanced) {
  const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 10, 13, 1000003};
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; ++c) {
    int64_t n = sizes[c];
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, n, &l));
    int64_t want_n[64], want_off[64], off = 0;
    for (int p = 0; p < rt_size; ++p) {
      want_n[p] = n / rt_size + (p < n % rt_size);
      want_off[p] = off;
      off += want_n[p];
    }
    rmaop_layout_info info;
    RT_OK(rmaop_layout_get_info(l, &info));
    RT_CHECK(info.kind == RMAOP_LAYOUT_SCATTER && info.global_n == n && info.local_n == want_n[rt_rank] &&
                 info.offset == want_off[rt_rank] && info.rank == rt_rank && info.size == rt_size,
             "n=%lld: kind %d global %lld local %lld offset %lld (want local %lld offset %lld)", (long long)n,
             (int)info.kind, (long long)info.global_n, (long long)info.local_n, (long long)info.offset,
             (long long)want_n[rt_rank], (long long)want_off[rt_rank]);
    check_ranges(l, want_n, want_off);
    rmaop_layout_destroy(&l);
    RT_CHECK(l == NULL, "destroy did not clear the handle");
  }
}
END_TEST

START_TEST(test_broadcast) {
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 11, &l));
  rmaop_layout_info info;
  RT_OK(rmaop_layout_get_info(l, &info));
  RT_CHECK(info.kind == RMAOP_LAYOUT_BROADCAST && info.global_n == 11 && info.local_n == 11 && info.offset == 0,
           "broadcast: global %lld local %lld offset %lld", (long long)info.global_n, (long long)info.local_n,
           (long long)info.offset);
  int64_t n[64], off[64];
  for (int p = 0; p < rt_size; ++p)
    n[p] = 11, off[p] = 0;
  check_ranges(l, n, off);
  rmaop_layout_destroy(&l);
}
END_TEST

/* Uneven user sizes, rank 1 (or rank 0 alone) holding nothing. */
START_TEST(test_local_sizes) {
  const int64_t patterns[3][4] = {{3, 0, 5, 1}, {0, 4, 0, 2}, {0, 0, 0, 0}};
  for (int c = 0; c < 3; ++c) {
    int64_t mine = patterns[c][rt_rank % 4] + (rt_rank >= 4 ? 1 : 0), want_off = 0, total = 0;
    MPI_Exscan(&mine, &want_off, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rt_rank == 0)
      want_off = 0; /* MPI_Exscan leaves rank 0's result undefined */
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create_local(ctx, mine, &l));
    rmaop_layout_info info;
    RT_OK(rmaop_layout_get_info(l, &info));
    RT_CHECK(info.kind == RMAOP_LAYOUT_SCATTER && info.local_n == mine && info.offset == want_off &&
                 info.global_n == total,
             "pattern %d: local %lld offset %lld global %lld (want %lld %lld %lld)", c, (long long)info.local_n,
             (long long)info.offset, (long long)info.global_n, (long long)mine, (long long)want_off, (long long)total);
    int64_t all_n[64], all_off[64], acc = 0;
    MPI_Allgather(&mine, 1, MPI_INT64_T, all_n, 1, MPI_INT64_T, MPI_COMM_WORLD);
    for (int p = 0; p < rt_size; ++p)
      all_off[p] = acc, acc += all_n[p];
    check_ranges(l, all_n, all_off);
    rmaop_layout_destroy(&l);
  }
}
END_TEST

START_TEST(test_negative_sizes) {
  rmaop_layout l = NULL;
  RT_EXPECT(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, -1, &l), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("-1");
  RT_EXPECT(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, -5, &l), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_create_local(ctx, -3, &l), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("-3");
  RT_EXPECT(rmaop_layout_create_local(ctx, INT64_MIN, &l), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(l == NULL, "output written on failure");
  /* Negative on one rank only: that rank ARG, the others an error too (no hang). */
  const int bad = rt_size - 1;
  RT_EXPECT_ON(rmaop_layout_create_local(ctx, rt_rank == bad ? -2 : 4, &l), bad, RMAOP_ERR_ARG);
  RT_EXPECT_ON(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, rt_rank == bad ? -2 : 4, &l), bad, RMAOP_ERR_ARG);
  RT_CHECK(l == NULL, "output written on failure");
}
END_TEST

START_TEST(test_sizes_differ_between_ranks) {
  rmaop_layout l = NULL;
  /* With one rank nothing can differ: the call must then succeed. */
  rmaop_status want = rt_size > 1 ? RMAOP_ERR_ARG : RMAOP_OK;
  rmaop_status st = rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10 + (rt_rank == 0), &l);
  RT_CHECK(st == want, "global size differing across ranks -> %s: %s", rmaop_status_string(st),
           rmaop_ctx_last_error(NULL));
  if (st == RMAOP_OK)
    rmaop_layout_destroy(&l);
  /* The kind differing between ranks is the same mistake. */
  st = rmaop_layout_create(ctx, rt_rank == 0 ? RMAOP_LAYOUT_SCATTER : RMAOP_LAYOUT_BROADCAST, 10, &l);
  RT_CHECK(st == want, "layout kind differing across ranks -> %s", rmaop_status_string(st));
  if (st == RMAOP_OK)
    rmaop_layout_destroy(&l);
  RT_EXPECT(rmaop_layout_create(ctx, (rmaop_layout_kind)7, 10, &l), RT_BIT(RMAOP_ERR_ARG));
}
END_TEST

START_TEST(test_overflowing_sum) {
  rmaop_layout l = NULL;
  if (rt_size >= 3) {
    /* INT64_MAX/2 on each of 3+ ranks overflows int64. */
    RT_EXPECT(rmaop_layout_create_local(ctx, INT64_MAX / 2, &l), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("overflow");
  } else if (rt_size == 2) {
    RT_EXPECT(rmaop_layout_create_local(ctx, rt_rank == 0 ? INT64_MAX : 1, &l), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("overflow");
    RT_EXPECT(rmaop_layout_create_local(ctx, INT64_MAX, &l), RT_BIT(RMAOP_ERR_ARG));
  } else {
    /* One rank cannot overflow: INT64_MAX alone is a valid (unallocated) layout, -1 is not. */
    RT_OK(rmaop_layout_create_local(ctx, INT64_MAX, &l));
    rmaop_layout_info info;
    RT_OK(rmaop_layout_get_info(l, &info));
    RT_CHECK(info.global_n == INT64_MAX, "global_n %lld", (long long)info.global_n);
    rmaop_layout_destroy(&l);
    RT_EXPECT(rmaop_layout_create_local(ctx, -1, &l), RT_BIT(RMAOP_ERR_ARG));
  }
  RT_CHECK(l == NULL, "output written on failure");
  /* A huge balanced global size is fine: nothing is allocated by a layout. */
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, INT64_MAX, &l));
  int64_t n = 0, off = 0;
  RT_OK(rmaop_layout_rank_range(l, rt_size - 1, &n, &off));
  RT_CHECK(off + n == INT64_MAX, "last range ends at %lld", (long long)(off + n));
  rmaop_layout_destroy(&l);
}
END_TEST

START_TEST(test_null_arguments) {
  RT_EXPECT(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 4, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_create_local(ctx, 4, NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_layout l = NULL;
  RT_EXPECT(rmaop_layout_create(NULL, RMAOP_LAYOUT_SCATTER, 4, &l), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_create_local(NULL, 4, &l), RT_BIT(RMAOP_ERR_ARG));
  /* NULL output on one rank only: the others must get an error too (it is collective). */
  const int bad = 0;
  rmaop_layout *out = rt_rank == bad ? NULL : &l;
  RT_EXPECT_ON(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 4, out), bad, RMAOP_ERR_ARG);
  RT_EXPECT_ON(rmaop_layout_create_local(ctx, 4, out), bad, RMAOP_ERR_ARG);
  RT_CHECK(l == NULL, "output written on failure");

  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 4, &l));
  rmaop_layout_info info;
  int64_t n, off;
  RT_EXPECT(rmaop_layout_get_info(NULL, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_get_info(l, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_rank_range(NULL, 0, &n, &off), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_rank_range(l, -1, &n, &off), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_layout_rank_range(l, rt_size, &n, &off), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("rank");
  rmaop_layout_destroy(&l);
  rmaop_layout_destroy(&l); /* no-op on NULL */
  rmaop_layout_destroy(NULL);
}
END_TEST

START_TEST(test_vectors_keep_layout_alive) {
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 9, &l));
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, RMAOP_F64, &v));
  rmaop_layout_destroy(&l);
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(v, &vi));
  rmaop_layout_info li;
  RT_OK(rmaop_layout_get_info(vi.layout, &li));
  RT_CHECK(li.global_n == 9 && vi.global_n == 9 && vi.local_n == li.local_n, "layout lost after destroy");
  rmaop_vec_destroy(&v);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("layout");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_balanced);
  tcase_add_test(tc, test_broadcast);
  tcase_add_test(tc, test_local_sizes);
  tcase_add_test(tc, test_negative_sizes);
  tcase_add_test(tc, test_sizes_differ_between_ranks);
  tcase_add_test(tc, test_overflowing_sum);
  tcase_add_test(tc, test_null_arguments);
  tcase_add_test(tc, test_vectors_keep_layout_alive);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
