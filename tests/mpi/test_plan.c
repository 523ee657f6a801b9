/* Tests of rmaop_plan. Reference: a serial simulation of the plan on every rank. Every rank can
 * generate every rank's transfer list (patterns are functions of (rank, size)) and source values, so it
 * replays all transfers aimed at it in the documented order (ascending origin rank, then the origin's
 * transfer order; self transfers at the own rank's position), in the dtype's own arithmetic: the
 * library's result must be bitwise identical, for INSERT and ADD, on every backend. The adjoint test
 * compares <P x, y> with <x, P^T y> (P^T = rmaop_plan_reverse + ADD) in long double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

enum { MAXT = 4 * 64 + 8 };

typedef struct {
  int nsends;
  rmaop_transfer sends[MAXT];
  int64_t src_len, dst_len;
} pat;
typedef void (*pattern_fn)(int r, int P, pat *p);

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
  RT_CHECK(rt_size <= 64, "the plan tests assume at most 64 ranks");
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

static void add(pat *p, int peer, int64_t src_offset, int64_t dst_offset, int64_t count) {
  p->sends[p->nsends++] = (rmaop_transfer){peer, src_offset, dst_offset, count};
}

/* ---- patterns ---- */

enum { HALO_N = 8, HALO_K = 2 };
/* Periodic 1-D halo: my first K elements go to the left neighbour's right ghost, my last K to the right
 * neighbour's left ghost (dst = [left ghost | right ghost]). One rank: both are self transfers; two
 * ranks: both go to the same peer. */
static void pat_halo(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = HALO_N;
  p->dst_len = 2 * HALO_K;
  add(p, (r + P - 1) % P, 0, HALO_K, HALO_K);
  add(p, (r + 1) % P, HALO_N - HALO_K, 0, HALO_K);
}

/* Every rank sends one transfer to every rank (self included); blocks ordered by origin. */
static int64_t a2a_count(int r, int q) {
  return 1 + (r + 2 * q) % 3;
}
static void pat_alltoall_single(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 6;
  for (int q = 0; q < P; ++q) {
    int64_t base = 0;
    for (int o = 0; o < r; ++o)
      base += a2a_count(o, q);
    add(p, q, (r + q) % 3, base, a2a_count(r, q));
  }
  p->dst_len = 0;
  for (int o = 0; o < P; ++o)
    p->dst_len += a2a_count(o, r);
}

/* Four transfers to every rank (one of them empty), interleaved across peers in the user's list and
 * landing in reverse order inside the origin's block; sources overlap. */
static int64_t multi_count(int r, int q, int t) {
  return t == 3 ? 0 : 1 + (r + q + t) % 3;
}
static int64_t multi_block(int r, int q) {
  int64_t s = 0;
  for (int t = 0; t < 4; ++t)
    s += multi_count(r, q, t);
  return s;
}
static void pat_alltoall_multi(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 8;
  for (int t = 0; t < 4; ++t) {
    for (int q = 0; q < P; ++q) {
      int64_t base = 0;
      for (int o = 0; o < r; ++o)
        base += multi_block(o, q);
      int64_t end = base + multi_block(r, q), at = end; /* t = 0 lands last in the block */
      for (int u = 0; u <= t; ++u)
        at -= multi_count(r, q, u);
      add(p, q, (2 * t + q) % 5, t == 3 ? base : at, multi_count(r, q, t));
    }
  }
  p->dst_len = 0;
  for (int o = 0; o < P; ++o)
    p->dst_len += multi_block(o, r);
}

static void pat_none(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 3;
  p->dst_len = 3;
}

static void pat_self(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 6;
  p->dst_len = 6;
  add(p, r, 0, 2, 4);
  add(p, r, 4, 0, 2);
}

/* Even ranks only send (to the next odd rank), odd ranks only receive. */
static void pat_senders_receivers(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 7;
  p->dst_len = 7;
  if (r % 2 == 0 && r + 1 < P) {
    add(p, r + 1, 0, 0, 5);
    add(p, r + 1, 5, 5, 2);
  }
}

/* Every rank adds into rank 0's overlapping ranges (and its own transfers overlap each other), and into
 * the next rank: ADD must sum in rank order, INSERT keep the last origin's value. */
static void pat_overlap(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 6;
  p->dst_len = 6;
  add(p, 0, 0, 0, 4);
  add(p, 0, 2, 1, 4);
  add(p, (r + 1) % P, 1, 2, 3);
}

/* Empty transfers: the only transfer to the right neighbour moves nothing (a zero-size message). */
static void pat_zero(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = 4;
  p->dst_len = 5;
  add(p, (r + 1) % P, 0, 0, 0);
  add(p, (r + P - 1) % P, 1, 2, 3);
}

/* Large messages (1 MiB of f64 to the right, 8 KiB to the left): past MPI's eager limits. */
enum { BIG_N = 1 << 17, BIG_K = 1000 };
static void pat_big(int r, int P, pat *p) {
  p->nsends = 0;
  p->src_len = BIG_N;
  p->dst_len = BIG_N + BIG_K;
  add(p, (r + 1) % P, 0, 0, BIG_N);
  add(p, (r + P - 1) % P, BIG_N - BIG_K, BIG_N, BIG_K);
}

typedef struct {
  const char *name;
  pattern_fn fn;
} pattern;
static const pattern patterns[] = {
    {"halo", pat_halo},
    {"alltoall_single", pat_alltoall_single},
    {"alltoall_multi", pat_alltoall_multi},
    {"none", pat_none},
    {"self", pat_self},
    {"senders_receivers", pat_senders_receivers},
    {"overlap", pat_overlap},
    {"zero", pat_zero},
    {"big", pat_big},
};
enum { NPATTERNS = sizeof patterns / sizeof patterns[0] };

/* ---- values and the serial reference ---- */

/* Source element j of rank r at iteration it; magnitudes spread over 13 decades so that summing in
 * another order changes the bits. */
static double _Complex src_value(int r, int64_t j, int it) {
  return rt_value(1000 * r + j, it) * pow(10.0, (double)((r * 7 + j * 3 + it) % 13) - 6.0);
}
static double _Complex dst_value(int r, int64_t j) {
  return rt_value(5000 + 100 * r + j, 99);
}

static void fill_src(rmaop_dtype d, void *buf, int r, int64_t n, int it) {
  for (int64_t j = 0; j < n; ++j)
    rt_store(d, buf, j, src_value(r, j, it));
}

/* expected (dst of this rank) after one execution at iteration it. */
static void reference(const pattern *pt, rmaop_dtype d, rmaop_mode mode, int it, void *expected) {
  pat *p = malloc(sizeof *p);
  for (int o = 0; o < rt_size; ++o) {
    pt->fn(o, rt_size, p);
    void *src = rt_alloc(d, p->src_len);
    fill_src(d, src, o, p->src_len, it);
    for (int i = 0; i < p->nsends; ++i) {
      const rmaop_transfer *t = &p->sends[i];
      if (t->peer != rt_rank)
        continue;
      for (int64_t e = 0; e < t->count; ++e) {
        if (mode == RMAOP_ADD)
          rt_add_elem(d, expected, t->dst_offset + e, src, t->src_offset + e);
        else
          rt_store(d, expected, t->dst_offset + e, rt_load(d, src, t->src_offset + e));
      }
    }
    free(src);
  }
  free(p);
}

/* The receives this rank expects, in canonical order (origin rank, then origin's order). */
static int expected_recvs(const pattern *pt, rmaop_transfer *out) {
  pat *p = malloc(sizeof *p);
  int n = 0;
  for (int o = 0; o < rt_size; ++o) {
    pt->fn(o, rt_size, p);
    for (int i = 0; i < p->nsends; ++i)
      if (p->sends[i].peer == rt_rank)
        out[n++] = (rmaop_transfer){o, 0, p->sends[i].dst_offset, p->sends[i].count};
  }
  free(p);
  return n;
}

static rmaop_plan make_plan(const pattern *pt, rmaop_dtype d, int with_expected, pat *mine) {
  pt->fn(rt_rank, rt_size, mine);
  rmaop_transfer *recvs = malloc(MAXT * sizeof *recvs);
  int nrecvs = with_expected ? expected_recvs(pt, recvs) : -1;
  rmaop_plan_spec spec = {.dtype = d,
                          .src_len = mine->src_len,
                          .dst_len = mine->dst_len,
                          .nsends = mine->nsends,
                          .sends = mine->sends,
                          .nrecvs = nrecvs,
                          .recvs = recvs,
                          .label = pt->name};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &plan));
  free(recvs);
  return plan;
}

/* Plan info against counts derived from the pattern. */
static void check_info(const pattern *pt, rmaop_plan plan, rmaop_dtype d) {
  pat *p = malloc(sizeof *p);
  int nsends = 0, nrecvs = 0, speers[64] = {0}, rpeers[64] = {0};
  int64_t sc = 0, rc = 0, selfc = 0;
  for (int o = 0; o < rt_size; ++o) {
    pt->fn(o, rt_size, p);
    for (int i = 0; i < p->nsends; ++i) {
      const rmaop_transfer *t = &p->sends[i];
      if (o == rt_rank && t->peer == rt_rank)
        selfc += t->count;
      else if (o == rt_rank)
        nsends++, sc += t->count, speers[t->peer] = 1;
      else if (t->peer == rt_rank)
        nrecvs++, rc += t->count, rpeers[o] = 1;
    }
  }
  pt->fn(rt_rank, rt_size, p);
  int nsp = 0, nrp = 0;
  for (int q = 0; q < rt_size; ++q)
    nsp += speers[q], nrp += rpeers[q];
  rmaop_plan_info info;
  RT_OK(rmaop_plan_get_info(plan, &info));
  RT_CHECK(info.dtype == d && info.src_len == p->src_len && info.dst_len == p->dst_len && info.nsends == nsends &&
               info.nrecvs == nrecvs && info.nsend_peers == nsp && info.nrecv_peers == nrp && info.send_count == sc &&
               info.recv_count == rc && info.self_count == selfc && info.label && strcmp(info.label, pt->name) == 0,
           "%s: info {nsends %d nrecvs %d peers %d/%d counts %lld/%lld/%lld} want {%d %d %d/%d %lld/%lld/%lld}",
           pt->name, info.nsends, info.nrecvs, info.nsend_peers, info.nrecv_peers, (long long)info.send_count,
           (long long)info.recv_count, (long long)info.self_count, nsends, nrecvs, nsp, nrp, (long long)sc,
           (long long)rc, (long long)selfc);
  free(p);
}

/* Executes a pattern `iters` times with changing data (dst kept across iterations, so ADD
 * accumulates) and compares every iteration bitwise with the reference. */
static void run_pattern(const pattern *pt, rmaop_dtype d, rmaop_mode mode, int iters, int with_expected) {
  pat *mine = malloc(sizeof *mine);
  rmaop_plan plan = make_plan(pt, d, with_expected, mine);
  check_info(pt, plan, d);
  size_t es = rmaop_dtype_size(d);
  void *src = rt_alloc(d, mine->src_len), *dst = rt_alloc(d, mine->dst_len), *want = rt_alloc(d, mine->dst_len);
  for (int64_t j = 0; j < mine->dst_len; ++j)
    rt_store(d, dst, j, dst_value(rt_rank, j));
  memcpy(want, dst, (size_t)mine->dst_len * es);
  int ok = 1, bad_it = -1;
  rmaop_status st = RMAOP_OK;
  for (int it = 0; it < iters && ok && st == RMAOP_OK; ++it) {
    fill_src(d, src, rt_rank, mine->src_len, it);
    if (it % 2) {
      st = rmaop_plan_execute(plan, src, dst, mode);
    } else {
      st = rmaop_plan_begin(plan, src, dst, mode);
      if (st == RMAOP_OK)
        st = rmaop_plan_end(plan);
    }
    reference(pt, d, mode, it, want);
    ok = memcmp(dst, want, (size_t)mine->dst_len * es) == 0;
    if (!ok)
      bad_it = it;
    ok = rt_all(ok) && rt_all(st == RMAOP_OK); /* stop together */
  }
  RT_CHECK(st == RMAOP_OK, "%s: execution failed: %s", pt->name, rmaop_ctx_last_error(NULL));
  int64_t bad_j = -1;
  for (int64_t j = 0; j < mine->dst_len && bad_j < 0; ++j)
    if (memcmp((char *)dst + j * es, (char *)want + j * es, es) != 0)
      bad_j = j;
  RT_CHECK(bad_j < 0, "%s %s %s: iteration %d, dst[%lld] = %.17g%+.17gi, want %.17g%+.17gi", pt->name,
           rmaop_dtype_name(d), mode == RMAOP_ADD ? "ADD" : "INSERT", bad_it, (long long)bad_j,
           bad_j < 0 ? 0 : creal(rt_load(d, dst, bad_j)), bad_j < 0 ? 0 : cimag(rt_load(d, dst, bad_j)),
           bad_j < 0 ? 0 : creal(rt_load(d, want, bad_j)), bad_j < 0 ? 0 : cimag(rt_load(d, want, bad_j)));
  RT_CHECK(ok, "%s: results differ on another rank", pt->name);
  free(src);
  free(dst);
  free(want);
  free(mine);
  rmaop_plan_destroy(&plan);
  RT_CHECK(plan == NULL, "destroy did not clear the handle");
}

START_TEST(test_patterns) {
  for (int k = 0; k < NPATTERNS; ++k)
    for (int m = 0; m < 2; ++m)
      run_pattern(&patterns[k], RMAOP_F64, m ? RMAOP_ADD : RMAOP_INSERT, 3, 0);
}
END_TEST

START_TEST(test_every_dtype) {
  const int which[] = {0, 2, 6}; /* halo, alltoall_multi, overlap */
  for (int k = 0; k < 3; ++k)
    for (int d = 0; d < 4; ++d)
      for (int m = 0; m < 2; ++m)
        run_pattern(&patterns[which[k]], rt_dtypes[d], m ? RMAOP_ADD : RMAOP_INSERT, 2, 0);
}
END_TEST

START_TEST(test_repeated_executions) {
  /* 100 executions with new data each time: a rank that races ahead into the next execution must not
   * overwrite data its neighbour has not consumed yet. */
  run_pattern(&patterns[0], RMAOP_F64, RMAOP_INSERT, 100, 0);
  run_pattern(&patterns[2], RMAOP_C128, RMAOP_ADD, 100, 0);
  run_pattern(&patterns[6], RMAOP_F32, RMAOP_ADD, 100, 0);
}
END_TEST

START_TEST(test_two_plans_in_flight) {
  /* Two plans begun before either ends (the overlap an operator's apply_begin uses). */
  pat *ph = malloc(sizeof *ph), *pm = malloc(sizeof *pm);
  rmaop_plan h = make_plan(&patterns[0], RMAOP_F64, 0, ph), m = make_plan(&patterns[2], RMAOP_F64, 0, pm);
  void *hs = rt_alloc(RMAOP_F64, ph->src_len), *hd = rt_alloc(RMAOP_F64, ph->dst_len);
  void *ms = rt_alloc(RMAOP_F64, pm->src_len), *md = rt_alloc(RMAOP_F64, pm->dst_len);
  void *hw = rt_alloc(RMAOP_F64, ph->dst_len), *mw = rt_alloc(RMAOP_F64, pm->dst_len);
  int ok = 1;
  for (int it = 0; it < 20; ++it) {
    fill_src(RMAOP_F64, hs, rt_rank, ph->src_len, it);
    fill_src(RMAOP_F64, ms, rt_rank, pm->src_len, it);
    RT_OK(rmaop_plan_begin(h, hs, hd, RMAOP_INSERT));
    RT_OK(rmaop_plan_begin(m, ms, md, RMAOP_INSERT));
    if (it % 2) {
      RT_OK(rmaop_plan_end(h));
      RT_OK(rmaop_plan_end(m));
    } else {
      RT_OK(rmaop_plan_end(m));
      RT_OK(rmaop_plan_end(h));
    }
    reference(&patterns[0], RMAOP_F64, RMAOP_INSERT, it, hw);
    reference(&patterns[2], RMAOP_F64, RMAOP_INSERT, it, mw);
    ok &= memcmp(hd, hw, (size_t)ph->dst_len * 8) == 0 && memcmp(md, mw, (size_t)pm->dst_len * 8) == 0;
  }
  RT_CHECK(ok, "two plans in flight mixed their data");
  rmaop_plan_destroy(&h);
  rmaop_plan_destroy(&m);
  free(hs), free(hd), free(ms), free(md), free(hw), free(mw), free(ph), free(pm);
}
END_TEST

START_TEST(test_expected_receives) {
  for (int k = 0; k < NPATTERNS; ++k)
    run_pattern(&patterns[k], RMAOP_F64, RMAOP_INSERT, 2, 1);
}
END_TEST

START_TEST(test_empty_plan_null_buffers) {
  /* Nothing to move: zero-length buffers may be NULL. */
  rmaop_plan_spec spec = {.dtype = RMAOP_F32, .src_len = 0, .dst_len = 0, .nsends = 0, .sends = NULL, .nrecvs = -1};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &plan));
  RT_OK(rmaop_plan_execute(plan, NULL, NULL, RMAOP_INSERT));
  RT_OK(rmaop_plan_execute(plan, NULL, NULL, RMAOP_ADD));
  rmaop_plan_info info;
  RT_OK(rmaop_plan_get_info(plan, &info));
  RT_CHECK(info.nsends == 0 && info.nrecvs == 0 && strcmp(info.label, "plan") == 0, "empty plan info, label %s",
           info.label);
  rmaop_plan rev = NULL;
  RT_OK(rmaop_plan_reverse(plan, NULL, &rev));
  RT_OK(rmaop_plan_execute(rev, NULL, NULL, RMAOP_ADD));
  rmaop_plan_destroy(&rev);
  rmaop_plan_destroy(&plan);
}
END_TEST

START_TEST(test_subcommunicator) {
  /* A context over a split of MPI_COMM_WORLD (ranks of one parity, in reverse order): plans address
   * ranks of the context's communicator. Reference: a ring among those ranks, sources tagged with the
   * world rank, mapped through an MPI_Allgather of world ranks over the split. */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rt_rank % 2, -rt_rank, &sub);
  int sr, ss;
  MPI_Comm_rank(sub, &sr);
  MPI_Comm_size(sub, &ss);
  int *world_of = calloc((size_t)ss, sizeof(int));
  MPI_Allgather(&rt_rank, 1, MPI_INT, world_of, 1, MPI_INT, sub);
  rmaop_ctx sctx = NULL;
  RT_OK(rmaop_ctx_create(sub, NULL, &sctx));
  rmaop_transfer t[2] = {{(sr + 1) % ss, 0, 0, 4}, {(sr + ss - 1) % ss, 4, 4, 2}};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 6, .dst_len = 6, .nsends = 2, .sends = t, .nrecvs = -1};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(sctx, &spec, &plan));
  const int left = world_of[(sr + ss - 1) % ss], right = world_of[(sr + 1) % ss];
  int ok = 1;
  for (int it = 0; it < 10; ++it) {
    double src[6], dst[6] = {0};
    for (int j = 0; j < 6; ++j)
      src[j] = 1000.0 * it + 10.0 * rt_rank + j;
    RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
    for (int j = 0; j < 4; ++j)
      ok &= dst[j] == 1000.0 * it + 10.0 * left + j;
    for (int j = 4; j < 6; ++j)
      ok &= dst[j] == 1000.0 * it + 10.0 * right + j;
  }
  RT_CHECK(ok, "ring on a split communicator (sub rank %d of %d) received the wrong data", sr, ss);
  rmaop_plan_destroy(&plan);
  rmaop_ctx_destroy(&sctx);
  free(world_of);
  MPI_Comm_free(&sub);
}
END_TEST

/* ---- adjoint ---- */

/* Global <a, b> = sum conj(a_i) b_i over all ranks' buffers, in long double then double. */
static double _Complex global_inner(rmaop_dtype d, const void *a, const void *b, int64_t n, double *scale) {
  long double re = 0, im = 0, sc = 0;
  for (int64_t i = 0; i < n; ++i) {
    double _Complex x = rt_load(d, a, i), y = rt_load(d, b, i), z = conj(x) * y;
    re += creal(z), im += cimag(z), sc += cabs(x) * cabs(y);
  }
  double loc[3] = {(double)re, (double)im, (double)sc}, glob[3];
  MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  *scale = glob[2];
  return glob[0] + I * glob[1];
}

START_TEST(test_reverse_is_adjoint) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < NPATTERNS; ++k) {
    for (int di = 0; di < 2; ++di) {
      rmaop_dtype d = ds[di];
      pat *p = malloc(sizeof *p);
      rmaop_plan fwd = make_plan(&patterns[k], d, 0, p), rev = NULL, revrev = NULL;
      RT_OK(rmaop_plan_reverse(fwd, "adjoint", &rev));
      rmaop_plan_info fi, ri;
      RT_OK(rmaop_plan_get_info(fwd, &fi));
      RT_OK(rmaop_plan_get_info(rev, &ri));
      RT_CHECK(ri.src_len == fi.dst_len && ri.dst_len == fi.src_len && ri.nsends == fi.nrecvs &&
                   ri.nrecvs == fi.nsends && ri.send_count == fi.recv_count && ri.recv_count == fi.send_count &&
                   ri.self_count == fi.self_count && strcmp(ri.label, "adjoint") == 0,
               "%s: reversed plan info does not mirror the plan", patterns[k].name);
      /* random-looking x (src shape) and y (dst shape), different on every rank */
      void *x = rt_alloc(d, p->src_len), *y = rt_alloc(d, p->dst_len);
      void *px = rt_alloc(d, p->dst_len), *pty = rt_alloc(d, p->src_len);
      for (int64_t j = 0; j < p->src_len; ++j)
        rt_store(d, x, j, rt_value(37 * rt_rank + 3 * j, 11));
      for (int64_t j = 0; j < p->dst_len; ++j)
        rt_store(d, y, j, rt_value(53 * rt_rank + 5 * j + 1, 17));
      RT_OK(rmaop_plan_execute(fwd, x, px, RMAOP_ADD));  /* px = P x (px starts at zero) */
      RT_OK(rmaop_plan_execute(rev, y, pty, RMAOP_ADD)); /* pty = P^T y */
      double s1, s2;
      double _Complex lhs = global_inner(d, px, y, p->dst_len, &s1), rhs = global_inner(d, x, pty, p->src_len, &s2);
      RT_CHECK(rt_close(lhs, rhs, 1e-13, s1 + s2), "%s %s: <Px,y> = %.17g%+.17gi, <x,P^T y> = %.17g%+.17gi",
               patterns[k].name, rmaop_dtype_name(d), creal(lhs), cimag(lhs), creal(rhs), cimag(rhs));
      /* a non-trivial pattern must move something: guards against a plan that does nothing */
      int moved = rt_sum_int(fi.send_count + fi.self_count > 0) > 0;
      RT_CHECK(!moved || s1 > 0, "%s: nothing arrived", patterns[k].name);
      /* reversing twice gives the original plan back */
      RT_OK(rmaop_plan_reverse(rev, NULL, &revrev));
      void *px2 = rt_alloc(d, p->dst_len);
      RT_OK(rmaop_plan_execute(revrev, x, px2, RMAOP_ADD));
      RT_CHECK(memcmp(px, px2, (size_t)p->dst_len * rmaop_dtype_size(d)) == 0, "%s: reverse(reverse(P)) != P",
               patterns[k].name);
      free(x), free(y), free(px), free(pty), free(px2), free(p);
      rmaop_plan_destroy(&revrev);
      rmaop_plan_destroy(&rev);
      rmaop_plan_destroy(&fwd);
    }
  }
}
END_TEST

/* ---- errors ---- */

/* Creates the halo pattern with one rank's spec altered by `mutate`; expects `local` on the mutated
 * rank, an error (that or REMOTE) everywhere else, and at least one precise error. */
typedef void (*mutate_fn)(pat *p, rmaop_plan_spec *spec);
static void expect_create_error(int bad, mutate_fn mutate, rmaop_status local, const char *needle) {
  pat *p = malloc(sizeof *p);
  pat_halo(rt_rank, rt_size, p);
  rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                          .src_len = p->src_len,
                          .dst_len = p->dst_len,
                          .nsends = p->nsends,
                          .sends = p->sends,
                          .nrecvs = -1,
                          .recvs = NULL,
                          .label = "bad"};
  if (rt_rank == bad)
    mutate(p, &spec);
  rmaop_plan plan = NULL;
  rmaop_status st = rmaop_plan_create(ctx, &spec, &plan);
  RT_CHECK(st == local || (rt_rank != bad && st == RMAOP_ERR_REMOTE), "plan_create -> %s (want %s%s): %s",
           rmaop_status_string(st), rmaop_status_string(local), rt_rank == bad ? "" : " or REMOTE",
           rmaop_ctx_last_error(NULL));
  RT_CHECK(plan == NULL, "output written on failure");
  RT_CHECK(rt_rank != bad || !needle || strstr(rmaop_ctx_last_error(NULL), needle), "message \"%s\" lacks \"%s\"",
           rmaop_ctx_last_error(NULL), needle ? needle : "");
  free(p);
  /* the context still works after the failure */
  pat *q = malloc(sizeof *q);
  rmaop_plan good = make_plan(&patterns[0], RMAOP_F64, 0, q);
  rmaop_plan_destroy(&good);
  free(q);
}

static void mut_src_range(pat *p, rmaop_plan_spec *s) {
  p->sends[1].src_offset = p->src_len - 1;
}
static void mut_src_negative(pat *p, rmaop_plan_spec *s) {
  p->sends[0].src_offset = -1;
}
static void mut_dst_range(pat *p, rmaop_plan_spec *s) {
  p->sends[1].dst_offset = 2 * HALO_K - 1;
}
static void mut_dst_negative(pat *p, rmaop_plan_spec *s) {
  p->sends[0].dst_offset = -2;
}
static void mut_count_negative(pat *p, rmaop_plan_spec *s) {
  p->sends[0].count = -3;
}
static void mut_peer_high(pat *p, rmaop_plan_spec *s) {
  p->sends[1].peer = rt_size;
}
static void mut_peer_negative(pat *p, rmaop_plan_spec *s) {
  p->sends[0].peer = -1;
}
static void mut_null_sends(pat *p, rmaop_plan_spec *s) {
  s->sends = NULL;
}
static void mut_nsends_negative(pat *p, rmaop_plan_spec *s) {
  s->nsends = -1;
}
static void mut_src_len_negative(pat *p, rmaop_plan_spec *s) {
  s->src_len = -8;
}
static void mut_dtype(pat *p, rmaop_plan_spec *s) {
  s->dtype = (rmaop_dtype)17;
}
static void mut_other_dtype(pat *p, rmaop_plan_spec *s) {
  s->dtype = RMAOP_F32;
}
static void mut_null_recvs(pat *p, rmaop_plan_spec *s) {
  s->nrecvs = 2, s->recvs = NULL;
}

START_TEST(test_bad_transfers) {
  const int last = rt_size - 1;
  expect_create_error(0, mut_src_range, RMAOP_ERR_ARG, "src");
  expect_create_error(last, mut_src_negative, RMAOP_ERR_ARG, NULL);
  expect_create_error(last, mut_count_negative, RMAOP_ERR_ARG, "-3");
  expect_create_error(0, mut_peer_high, RMAOP_ERR_ARG, NULL);
  expect_create_error(last, mut_peer_negative, RMAOP_ERR_ARG, "-1");
  expect_create_error(0, mut_null_sends, RMAOP_ERR_ARG, NULL);
  expect_create_error(last, mut_nsends_negative, RMAOP_ERR_ARG, NULL);
  expect_create_error(0, mut_src_len_negative, RMAOP_ERR_ARG, NULL);
  expect_create_error(last, mut_dtype, RMAOP_ERR_ARG, NULL);
  expect_create_error(0, mut_null_recvs, RMAOP_ERR_ARG, NULL);
}
END_TEST

/* A transfer writing outside the RECEIVER's dst buffer: the sender can know (dst lengths are
 * exchanged) or the receiver: every rank must get an error, at least one of them ARG. */
static void expect_everywhere_error(mutate_fn mutate, int bad) {
  pat *p = malloc(sizeof *p);
  pat_halo(rt_rank, rt_size, p);
  rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                          .src_len = p->src_len,
                          .dst_len = p->dst_len,
                          .nsends = p->nsends,
                          .sends = p->sends,
                          .nrecvs = -1,
                          .recvs = NULL,
                          .label = "bad"};
  if (rt_rank == bad)
    mutate(p, &spec);
  rmaop_plan plan = NULL;
  rmaop_status st = rmaop_plan_create(ctx, &spec, &plan);
  RT_CHECK(st == RMAOP_ERR_ARG || st == RMAOP_ERR_REMOTE, "plan_create -> %s", rmaop_status_string(st));
  RT_CHECK(rt_sum_int(st == RMAOP_ERR_ARG) >= 1, "no rank reported RMAOP_ERR_ARG");
  free(p);
}

START_TEST(test_bad_destination) {
  expect_everywhere_error(mut_dst_range, 0);
  expect_everywhere_error(mut_dst_negative, rt_size - 1);
  if (rt_size > 1)
    expect_everywhere_error(mut_other_dtype, 0); /* ranks disagree on the dtype */
}
END_TEST

/* Expected receives that do not match the senders: rank `bad` expects something else. */
static void expect_recv_mismatch(int bad, int how) {
  pat *p = malloc(sizeof *p);
  pat_halo(rt_rank, rt_size, p);
  rmaop_transfer *recvs = malloc(MAXT * sizeof *recvs);
  int nrecvs = expected_recvs(&patterns[0], recvs);
  if (rt_rank == bad) {
    if (how == 0)
      recvs[0].dst_offset = 0, recvs[0].count = HALO_K + 1; /* count differs (still in dst) */
    else if (how == 1)
      nrecvs = 0; /* one missing */
    else
      recvs[nrecvs++] = (rmaop_transfer){rt_rank, 0, 0, 1}; /* an extra one */
  }
  rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                          .src_len = p->src_len,
                          .dst_len = p->dst_len,
                          .nsends = p->nsends,
                          .sends = p->sends,
                          .nrecvs = nrecvs,
                          .recvs = recvs,
                          .label = "mismatch"};
  rmaop_plan plan = NULL;
  rmaop_status st = rmaop_plan_create(ctx, &spec, &plan);
  RT_CHECK(rt_rank == bad ? st == RMAOP_ERR_ARG : (st == RMAOP_ERR_ARG || st == RMAOP_ERR_REMOTE),
           "expected receives disagreeing (case %d) -> %s: %s", how, rmaop_status_string(st),
           rmaop_ctx_last_error(NULL));
  RT_CHECK(rt_rank != bad || strstr(rmaop_ctx_last_error(NULL), "disagree"),
           "message \"%s\" does not say the peers disagree", rmaop_ctx_last_error(NULL));
  free(recvs);
  free(p);
}

START_TEST(test_expected_receives_disagree) {
  for (int how = 0; how < 3; ++how)
    expect_recv_mismatch(rt_size - 1, how);
  expect_recv_mismatch(0, 0);
}
END_TEST

START_TEST(test_bad_execution) {
  pat *p = malloc(sizeof *p);
  rmaop_plan plan = make_plan(&patterns[0], RMAOP_F64, 0, p);
  double src[HALO_N] = {0}, dst[2 * HALO_K] = {0};
  /* NULL buffers on every rank (every rank sends and receives in the halo): ARG, nothing started. */
  RT_EXPECT(rmaop_plan_begin(plan, NULL, dst, RMAOP_INSERT), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("src");
  RT_EXPECT(rmaop_plan_begin(plan, src, NULL, RMAOP_INSERT), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_execute(plan, NULL, NULL, RMAOP_ADD), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_begin(plan, src, dst, (rmaop_mode)3), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_end(plan), RT_BIT(RMAOP_ERR_ARG)); /* not begun */
  /* begun twice: the second begin fails, the first still completes */
  RT_OK(rmaop_plan_begin(plan, src, dst, RMAOP_INSERT));
  RT_EXPECT(rmaop_plan_begin(plan, src, dst, RMAOP_INSERT), RT_BIT(RMAOP_ERR_ARG));
  RT_OK(rmaop_plan_end(plan));
  /* and after all that the plan works */
  fill_src(RMAOP_F64, src, rt_rank, HALO_N, 0);
  double want[2 * HALO_K] = {0};
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT));
  reference(&patterns[0], RMAOP_F64, RMAOP_INSERT, 0, want);
  RT_CHECK(memcmp(dst, want, sizeof dst) == 0, "halo wrong after failed calls");
  RT_EXPECT(rmaop_plan_begin(NULL, src, dst, RMAOP_INSERT), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_plan_info info;
  RT_EXPECT(rmaop_plan_get_info(NULL, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_get_info(plan, NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_plan rev = NULL;
  RT_EXPECT(rmaop_plan_reverse(NULL, NULL, &rev), RT_BIT(RMAOP_ERR_ARG));
  rmaop_plan_destroy(&plan);
  rmaop_plan_destroy(&plan); /* no-op on NULL */
  rmaop_plan_destroy(NULL);
  /* create: NULL spec / output on every rank */
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .nrecvs = -1};
  RT_EXPECT(rmaop_plan_create(ctx, NULL, &plan), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_create(ctx, &spec, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_plan_create(NULL, &spec, &plan), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(plan == NULL, "output written on failure");
  free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("plan");
  TCase *tc = tcase_create("execute");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_patterns);
  tcase_add_test(tc, test_every_dtype);
  tcase_add_test(tc, test_repeated_executions);
  tcase_add_test(tc, test_two_plans_in_flight);
  tcase_add_test(tc, test_expected_receives);
  tcase_add_test(tc, test_empty_plan_null_buffers);
  tcase_add_test(tc, test_subcommunicator);
  tcase_add_test(tc, test_reverse_is_adjoint);
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_bad_transfers);
  tcase_add_test(te, test_bad_destination);
  tcase_add_test(te, test_expected_receives_disagree);
  tcase_add_test(te, test_bad_execution);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
