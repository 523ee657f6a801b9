/* Tests of rmaop_win (the rma backend's public low-level API; run for every sync mode and transport).
 * Reference: after an epoch, my window holds exactly what my left neighbour put there in that epoch, and
 * a get from my right neighbour returns what it wrote into its own window before the epoch (rmaop.h:
 * rmaop_win_epoch_begin / _put / _get / _epoch_end). */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "rmaop_test.h"

enum { NPUT = 8 };

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

static const char *transport_env(void) {
  const char *t = getenv("RMAOP_RMA_TRANSPORT");
  return t && *t ? t : "auto";
}

static double value(int r, int j, int it) {
  return 1000.0 * it + 10.0 * r + j + 0.25;
}

/* Ring epochs over a window whose memory is `base` (at least 2 NPUT doubles on every rank): each rank
 * puts NPUT doubles into its right neighbour's [0, NPUT) and gets its right neighbour's [NPUT, 2 NPUT). */
static void ring_epochs(rmaop_win win, double *base, int iters) {
  const int left = (rt_rank + rt_size - 1) % rt_size, right = (rt_rank + 1) % rt_size;
  double out[NPUT], in[NPUT];
  int ok = 1, bad_it = -1;
  for (int it = 0; it < iters && ok; ++it) {
    for (int j = 0; j < NPUT; ++j) {
      out[j] = value(rt_rank, j, it);
      base[NPUT + j] = -value(rt_rank, j, it); /* what my left neighbour will get, written outside an epoch */
      in[j] = 0;
    }
    rmaop_status st = rmaop_win_epoch_begin(win, 1, &right, 1, &left);
    if (st == RMAOP_OK)
      st = rmaop_win_put(win, out, sizeof out, right, 0);
    if (st == RMAOP_OK)
      st = rmaop_win_get(win, in, sizeof in, right, NPUT * sizeof(double));
    rmaop_status st2 = st == RMAOP_OK ? rmaop_win_epoch_end(win) : st;
    int good = st2 == RMAOP_OK;
    for (int j = 0; j < NPUT && good; ++j)
      good = base[j] == value(left, j, it) && in[j] == -value(right, j, it);
    ok = rt_all(good);
    if (!ok)
      bad_it = it;
  }
  RT_CHECK(ok, "ring epoch %d: wrong data or failure (%s)", bad_it, rmaop_ctx_last_error(NULL));
}

START_TEST(test_allocate_ring) {
  rmaop_win win = NULL;
  void *base = NULL;
  size_t bytes = (2 * NPUT + (size_t)rt_rank) * sizeof(double); /* sizes differ between ranks */
  RT_OK(rmaop_win_allocate(ctx, bytes, &win, &base));
  RT_CHECK(base != NULL, "no window memory");
  ring_epochs(win, base, 30);
  rmaop_win_destroy(&win);
  RT_CHECK(win == NULL, "free did not clear the handle");
  rmaop_win_destroy(&win); /* no-op on NULL */
  rmaop_win_destroy(NULL);
}
END_TEST

START_TEST(test_out_of_bounds) {
  rmaop_win win = NULL;
  void *base = NULL;
  size_t bytes = (2 * NPUT + (size_t)rt_rank) * sizeof(double);
  RT_OK(rmaop_win_allocate(ctx, bytes, &win, &base));
  const int left = (rt_rank + rt_size - 1) % rt_size, right = (rt_rank + 1) % rt_size;
  size_t right_bytes = (2 * NPUT + (size_t)right) * sizeof(double);
  double buf[4] = {1, 2, 3, 4};
  /* outside an epoch */
  RT_EXPECT(rmaop_win_put(win, buf, sizeof buf, right, 0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_epoch_end(win), RT_BIT(RMAOP_ERR_ARG));
  RT_OK(rmaop_win_epoch_begin(win, 1, &right, 1, &left));
  /* the right neighbour's window is right_bytes long: the last 8 bytes fit, 16 do not */
  RT_EXPECT(rmaop_win_put(win, buf, 16, right, right_bytes - 8), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("outside");
  RT_EXPECT(rmaop_win_get(win, buf, 16, right, right_bytes - 8), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_put(win, buf, 8, right, right_bytes + 8), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_put(win, buf, 8, rt_size, 0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_put(win, buf, 8, -1, 0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_put(win, NULL, 8, right, 0), RT_BIT(RMAOP_ERR_ARG));
  if (rt_size >= 3) /* a rank that is not a target of this epoch */
    RT_EXPECT(rmaop_win_put(win, buf, 8, (rt_rank + 2) % rt_size, 0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_epoch_begin(win, 1, &right, 1, &left), RT_BIT(RMAOP_ERR_ARG)); /* already open */
  RT_OK(rmaop_win_put(win, buf, 8, right, right_bytes - 8));                         /* the last element is fine */
  RT_OK(rmaop_win_epoch_end(win));
  double last = ((double *)base)[bytes / sizeof(double) - 1];
  RT_CHECK(last == 1.0, "the in-bounds put did not land (%g)", last);
  /* the window still works after the rejected calls */
  ring_epochs(win, base, 3);
  rmaop_win_destroy(&win);
}
END_TEST

/* Can this MPI expose memory it did not allocate? Some cannot (Open MPI 4.1 without a cross-process
 * single-copy mechanism, e.g. in some containers and VMs): plain MPI_Win_create fails there. */
static int mpi_can_expose_user_memory(void) {
  if (rt_size == 1) return 1; /* one rank: rmaop needs no MPI window */
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  double mem[8];
  MPI_Win w;
  int ok = MPI_Win_create(mem, sizeof mem, 1, MPI_INFO_NULL, c, &w) == MPI_SUCCESS, all = 0;
  if (ok) MPI_Win_free(&w);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Comm_free(&c);
  return all;
}

START_TEST(test_create_over_user_memory) {
  size_t bytes = 2 * NPUT * sizeof(double);
  double *mem = calloc(2 * NPUT, sizeof(double));
  rmaop_win win = NULL;
  const int capable = strcmp(transport_env(), "shm") == 0 || mpi_can_expose_user_memory();
  rmaop_status st = rmaop_win_create(ctx, mem, bytes, &win);
  if (strcmp(transport_env(), "shm") == 0) {
    /* Header: only the mpi transport can reach user memory. */
    RT_CHECK(st == RMAOP_ERR_UNSUPPORTED, "win_create with transport shm -> %s", rmaop_status_string(st));
    RT_MESSAGE_HAS("shm");
    RT_CHECK(win == NULL, "output written on failure");
  } else if (capable) {
    RT_CHECK(st == RMAOP_OK, "win_create -> %s: %s", rmaop_status_string(st), rmaop_ctx_last_error(NULL));
    ring_epochs(win, mem, 30);
    rmaop_win_destroy(&win);
  } else {
    /* The MPI cannot do it: rmaop must say so clearly, on every rank, and leave no window behind. */
    if (rt_rank == 0) fprintf(stderr, "test_win: this MPI cannot expose user memory; checking the error path\n");
    RT_CHECK(st == RMAOP_ERR_MPI, "win_create without MPI support -> %s", rmaop_status_string(st));
    RT_MESSAGE_HAS("rmaop_win_allocate works everywhere");
    RT_CHECK(win == NULL, "output written on failure");
  }
  free(mem);
}
END_TEST

START_TEST(test_peer_transport) {
  rmaop_win win = NULL;
  void *base = NULL;
  RT_OK(rmaop_win_allocate(ctx, 64, &win, &base));
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt_rank, MPI_INFO_NULL, &node);
  const char *group = getenv("RMAOP_NODE_SIZE"); /* simulated nodes of k consecutive ranks */
  if (group && atoi(group) > 0) {
    MPI_Comm sim;
    MPI_Comm_split(node, rt_rank / atoi(group), rt_rank, &sim);
    MPI_Comm_free(&node);
    node = sim;
  }
  int node_rank, *node_of = calloc((size_t)rt_size, sizeof(int));
  MPI_Comm_rank(node, &node_rank);
  int leader = rt_rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  MPI_Allgather(&leader, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD);
  int ok = 1, bad = -1, one_node = 1;
  for (int p = 0; p < rt_size; ++p)
    one_node = one_node && node_of[p] == node_of[0];
  rmaop_transport got = RMAOP_TRANSPORT_AUTO;
  for (int p = 0; p < rt_size && ok; ++p) {
    if (p == rt_rank)
      continue; /* the own rank's transport is "self", which the enum cannot name */
    ok = rmaop_win_peer_transport(win, p, &got) == RMAOP_OK;
    /* shm, or auto with every rank on one node: one shared segment; across nodes every peer is reached by mpi */
    rmaop_transport want = strcmp(transport_env(), "mpi") != 0 && one_node ? RMAOP_TRANSPORT_SHM : RMAOP_TRANSPORT_MPI;
    ok = ok && got == want;
    if (!ok)
      bad = p;
  }
  RT_CHECK(ok, "transport towards rank %d is %s (RMAOP_RMA_TRANSPORT=%s)", bad, rmaop_transport_name(got),
           transport_env());
  RT_EXPECT(rmaop_win_peer_transport(win, rt_size, &got), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_peer_transport(win, 0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_peer_transport(NULL, 0, &got), RT_BIT(RMAOP_ERR_ARG));
  free(node_of);
  MPI_Comm_free(&node);
  rmaop_win_destroy(&win);
}
END_TEST

START_TEST(test_bad_arguments) {
  rmaop_win win = NULL;
  void *base = NULL;
  RT_EXPECT(rmaop_win_allocate(ctx, 64, NULL, &base), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_allocate(ctx, 64, &win, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_allocate(NULL, 64, &win, &base), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_create(ctx, NULL, 64, &win), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_UNSUPPORTED));
  RT_CHECK(win == NULL, "output written on failure");
  RT_EXPECT(rmaop_win_epoch_begin(NULL, 0, NULL, 0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_epoch_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  double b = 0;
  RT_EXPECT(rmaop_win_put(NULL, &b, 8, 0, 0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_win_get(NULL, &b, 8, 0, 0), RT_BIT(RMAOP_ERR_ARG));
  /* a NULL output on one rank of the collective creation: no hang, an error everywhere */
  RT_EXPECT_ON(rmaop_win_allocate(ctx, 64, rt_rank == 0 ? NULL : &win, &base), 0, RMAOP_ERR_ARG);
  RT_CHECK(win == NULL, "output written on failure");
  /* an empty epoch is fine */
  RT_OK(rmaop_win_allocate(ctx, 0, &win, &base));
  RT_OK(rmaop_win_epoch_begin(win, 0, NULL, 0, NULL));
  RT_EXPECT(rmaop_win_epoch_begin(win, -1, NULL, 0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_OK(rmaop_win_epoch_end(win));
  rmaop_win_destroy(&win);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("win");
  TCase *tc = tcase_create("win");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_allocate_ring);
  tcase_add_test(tc, test_out_of_bounds);
  tcase_add_test(tc, test_create_over_user_memory);
  tcase_add_test(tc, test_peer_transport);
  tcase_add_test(tc, test_bad_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
