/* Tests of the all-to-all plan (rmaop_plan_create_alltoall) and of redistribution (rmaop_op_create_redistribute,
 * rmaop_vec_redistribute, rmaop_layout_create_axis).
 *
 * All-to-all reference: the test knows every rank's counts from a formula cnt(pattern, p, q) and the value of
 * every element (element k of the block p sends q is rt_value((p * 64 + q) * 100000 + k), rounded to the dtype).
 * Each rank builds the destination it must hold serially: INSERT writes the blocks where its recv_offsets put them
 * (or packed in rank order), ADD adds them to what was there in the dtype's arithmetic, and every element outside
 * the blocks keeps its sentinel. Results are compared bit for bit (elements move unchanged). Patterns: uneven
 * counts with zero blocks, a rank that sends nothing and one that receives nothing, self blocks only, large
 * blocks; packed and custom offsets with gaps on either side; every dtype; repeated executions, a begin/end with
 * other work in between, and the reversed plan (the exchange back, INSERT and ADD).
 *
 * Redistribution reference: the global C-ordered array g[i] = rt_value(i) (rounded). Each rank writes its
 * from-block (its rows of from_axis: PyLops-MPI's balanced split, or an uneven one), the operator moves it, and
 * the to-blocks are gathered on rank 0 (rmaop_vec_gather concatenates them in rank order), put back at their rows
 * of to_axis (the balanced split) and compared with g bit for bit; the adjoint likewise back to the from split.
 * Every operator passes rmaop_op_dottest. 2-D, 3-D and 4-D shapes, every pair of axes (equal ones too), shapes
 * with fewer rows than ranks and with a zero dimension. Creation errors are checked on every rank (RT_EXPECT_ON:
 * the rank with the bad argument gets RMAOP_ERR_ARG naming it, the others RMAOP_ERR_REMOTE). */
#include <stdio.h>
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

/* A rank-local failure, kept and asserted collectively later. */
static int lok = 1;
static char lerr[512];
#define LFAIL(...)                                                                                                     \
  do {                                                                                                                 \
    if (lok)                                                                                                           \
      lok = 0, snprintf(lerr, sizeof lerr, __VA_ARGS__);                                                               \
  } while (0)
#define LOK(expr)                                                                                                      \
  do {                                                                                                                 \
    rmaop_status lok__s = (expr);                                                                                      \
    if (lok__s != RMAOP_OK)                                                                                            \
      LFAIL("%s:%d: %s -> %s: %s", __FILE__, __LINE__, #expr, rmaop_status_string(lok__s),                             \
            rmaop_ctx_last_error(NULL));                                                                               \
  } while (0)
#define RT_LOK() RT_CHECK(lok, "%s", lerr)

/* The rank that saw the bad argument names it (the others report RMAOP_ERR_REMOTE). */
#define MESSAGE_ON(bad, needle)                                                                                        \
  RT_CHECK(rt_rank != (bad) || strstr(rmaop_ctx_last_error(NULL), (needle)) != NULL,                                   \
           "message \"%s\" does not name \"%s\"", rmaop_ctx_last_error(NULL), (needle))

/* n elements in the context's memory (a vector over a local layout: device memory on device contexts). */
typedef struct {
  rmaop_vec v;
  void *p;
  int64_t n;
} buf;

static buf buf_make(rmaop_dtype d, int64_t n) {
  buf b = {NULL, NULL, n};
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create_local(ctx, n, &l));
  RT_OK(rmaop_vec_create(l, d, &b.v));
  rmaop_layout_destroy(&l);
  RT_OK(rmaop_vec_get_array(b.v, &b.p));
  return b;
}

static void buf_free(buf *b) {
  rmaop_vec_destroy(&b->v);
}

static size_t es(rmaop_dtype d) {
  return rmaop_dtype_size(d);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* all-to-all                                                                                                    */
/* ------------------------------------------------------------------------------------------------------------ */

enum { PAT_UNEVEN, PAT_QUIET, PAT_SELF, PAT_LARGE, NPAT };
static const char *const pat_name[NPAT] = {"uneven", "quiet ranks", "self only", "large"};

/* Elements rank p sends rank q. */
static int64_t cnt(int pat, int p, int q) {
  switch (pat) {
  case PAT_UNEVEN:
    return (p * 3 + q * 5 + 1) % 7; /* zero blocks among them */
  case PAT_QUIET:
    return rt_size > 1 && (p == rt_size - 1 || q == 0) ? 0 : 2 + p + 2 * q; /* P-1 sends, 0 gets nothing */
  case PAT_SELF:
    return p == q ? 4 + p : 0;
  default:
    return 3000 + 17 * p + 29 * q;
  }
}

static double _Complex val(rmaop_dtype d, int p, int q, int64_t k, int s) {
  return rt_round(d, rt_value((int64_t)(p * 64 + q) * 100000 + k, s));
}
static double _Complex sentinel(rmaop_dtype d, int64_t i) {
  return rt_round(d, rt_value(-7 - i, 11));
}

/* Offsets variants: packed (NULL) or custom (blocks in reverse rank order with gaps) on each side. */
enum { OFF_PACKED, OFF_CUSTOM, OFF_CUSTOM_SEND, OFF_CUSTOM_RECV, NOFF };
static const char *const off_name[NOFF] = {"packed", "custom", "custom sends", "custom receives"};

typedef struct {
  int64_t sc[64], soff[64], rc[64], roff[64];
  int64_t src_len, dst_len;
  int custom_send, custom_recv;
  rmaop_alltoall_spec spec;
} a2a;

static void a2a_make(a2a *a, rmaop_dtype d, int pat, int off) {
  const int P = rt_size, me = rt_rank;
  a->custom_send = off == OFF_CUSTOM || off == OFF_CUSTOM_SEND;
  a->custom_recv = off == OFF_CUSTOM || off == OFF_CUSTOM_RECV;
  int64_t at = 0;
  for (int q = 0; q < P; ++q)
    a->sc[q] = cnt(pat, me, q), a->soff[q] = at, at += a->sc[q];
  a->src_len = at;
  if (a->custom_send) {
    at = 1;
    for (int q = P - 1; q >= 0; --q)
      a->soff[q] = at, at += a->sc[q] + 2;
    a->src_len = at + 1;
  }
  at = 0;
  for (int p = 0; p < P; ++p)
    a->rc[p] = cnt(pat, p, me), a->roff[p] = at, at += a->rc[p];
  a->dst_len = at + (off == OFF_CUSTOM_SEND ? 3 : 0); /* a tail the plan never writes */
  if (a->custom_recv) {
    at = 3;
    for (int p = P - 1; p >= 0; --p)
      a->roff[p] = at, at += a->rc[p] + 1;
    a->dst_len = at + 2;
  }
  a->spec = (rmaop_alltoall_spec){.dtype = d,
                                  .src_len = a->src_len,
                                  .dst_len = a->dst_len,
                                  .send_counts = a->sc,
                                  .send_offsets = a->custom_send ? a->soff : NULL,
                                  .recv_offsets = a->custom_recv ? a->roff : NULL,
                                  .label = "test.alltoall"};
}

/* This rank's source (series s), sentinels in the gaps. */
static void *make_src(const a2a *a, rmaop_dtype d, int s) {
  void *h = rt_alloc(d, a->src_len);
  for (int64_t i = 0; i < a->src_len; ++i)
    rt_store(d, h, i, sentinel(d, 1000 + i));
  for (int q = 0; q < rt_size; ++q)
    for (int64_t k = 0; k < a->sc[q]; ++k)
      rt_store(d, h, a->soff[q] + k, val(d, rt_rank, q, k, s));
  return h;
}

/* The destination this rank must hold: the sentinels with every block written (INSERT) or added (ADD). */
static void *expect_dst(const a2a *a, rmaop_dtype d, int s, rmaop_mode mode) {
  void *h = rt_alloc(d, a->dst_len), *blk = rt_alloc(d, 1);
  for (int64_t i = 0; i < a->dst_len; ++i)
    rt_store(d, h, i, sentinel(d, i));
  for (int p = 0; p < rt_size; ++p)
    for (int64_t k = 0; k < a->rc[p]; ++k) {
      rt_store(d, blk, 0, val(d, p, rt_rank, k, s));
      if (mode == RMAOP_ADD)
        rt_add_elem(d, h, a->roff[p] + k, blk, 0);
      else
        rt_store(d, h, a->roff[p] + k, val(d, p, rt_rank, k, s));
    }
  free(blk);
  return h;
}

static void sentinels(buf *b, rmaop_dtype d, int64_t first) {
  void *h = rt_alloc(d, b->n);
  for (int64_t i = 0; i < b->n; ++i)
    rt_store(d, h, i, sentinel(d, first + i));
  LOK(rmaop_vec_write_local(b->v, h));
  free(h);
}

/* b against want, bit for bit; the first difference recorded. */
static void same(const buf *b, const void *want, rmaop_dtype d, const char *what) {
  void *got = rt_alloc(d, b->n);
  LOK(rmaop_vec_read_local(b->v, got));
  for (int64_t i = 0; i < b->n && lok; ++i)
    if (memcmp((char *)got + i * es(d), (const char *)want + i * es(d), es(d)) != 0) {
      const double _Complex g = rt_load(d, got, i), w = rt_load(d, want, i);
      LFAIL("%s: element %lld is %.9g%+.9gi, want %.9g%+.9gi", what, (long long)i, creal(g), cimag(g), creal(w),
            cimag(w));
    }
  free(got);
}

static void check_info(rmaop_plan plan, const a2a *a, const char *what) {
  rmaop_plan_info info;
  LOK(rmaop_plan_get_info(plan, &info));
  int64_t sent = 0, got = 0;
  int peers = 0;
  for (int q = 0; q < rt_size; ++q) {
    if (q == rt_rank)
      continue;
    sent += a->sc[q], got += a->rc[q], peers += a->sc[q] > 0;
  }
  if (lok && (info.send_count != sent || info.recv_count != got || info.self_count != a->sc[rt_rank] ||
              info.nsend_peers != peers || info.src_len != a->src_len || info.dst_len != a->dst_len ||
              strcmp(info.label, "test.alltoall") != 0))
    LFAIL("%s: info says %lld sent to %d peers, %lld received, %lld self, label %s; want %lld, %d, %lld, %lld", what,
          (long long)info.send_count, info.nsend_peers, (long long)info.recv_count, (long long)info.self_count,
          info.label, (long long)sent, peers, (long long)got, (long long)a->sc[rt_rank]);
}

static void run_alltoall(rmaop_dtype d, int pat, int off) {
  char what[160];
  snprintf(what, sizeof what, "all-to-all %s, %s, %s", rmaop_dtype_name(d), pat_name[pat], off_name[off]);
  a2a a;
  a2a_make(&a, d, pat, off);
  rmaop_plan plan = NULL, back = NULL;
  RT_OK(rmaop_plan_create_alltoall(ctx, &a.spec, &plan));
  buf src = buf_make(d, a.src_len), dst = buf_make(d, a.dst_len), other = buf_make(d, 3);
  lok = 1;
  check_info(plan, &a, what);
  /* INSERT, three times with new data; the second as begin / other work / end. */
  for (int s = 0; s < 3; ++s) {
    void *h = make_src(&a, d, s), *want = expect_dst(&a, d, s, RMAOP_INSERT);
    LOK(rmaop_vec_write_local(src.v, h));
    sentinels(&dst, d, 0);
    if (s == 1) {
      RT_OK(rmaop_plan_begin(plan, src.p, dst.p, RMAOP_INSERT));
      LOK(rmaop_vec_set(other.v, 2.0));
      RT_OK(rmaop_plan_end(plan));
    } else {
      RT_OK(rmaop_plan_execute(plan, src.p, dst.p, RMAOP_INSERT));
    }
    same(&dst, want, d, what);
    free(h);
    free(want);
  }
  RT_LOK();
  /* ADD onto the sentinels. */
  void *h = make_src(&a, d, 3), *want = expect_dst(&a, d, 3, RMAOP_ADD);
  LOK(rmaop_vec_write_local(src.v, h));
  sentinels(&dst, d, 0);
  RT_OK(rmaop_plan_execute(plan, src.p, dst.p, RMAOP_ADD));
  same(&dst, want, d, what);
  RT_LOK();
  free(want);
  /* The reversed plan moves every block back: INSERT restores the source's blocks, ADD adds them. */
  RT_OK(rmaop_plan_execute(plan, src.p, dst.p, RMAOP_INSERT));
  RT_OK(rmaop_plan_reverse(plan, NULL, &back));
  buf again = buf_make(d, a.src_len);
  for (int mode = 0; mode < 2; ++mode) {
    void *exp = rt_alloc(d, a.src_len), *blk = rt_alloc(d, 1);
    for (int64_t i = 0; i < a.src_len; ++i)
      rt_store(d, exp, i, sentinel(d, 500 + i));
    for (int q = 0; q < rt_size; ++q)
      for (int64_t k = 0; k < a.sc[q]; ++k) {
        rt_store(d, blk, 0, val(d, rt_rank, q, k, 3));
        if (mode == RMAOP_ADD)
          rt_add_elem(d, exp, a.soff[q] + k, blk, 0);
        else
          rt_store(d, exp, a.soff[q] + k, val(d, rt_rank, q, k, 3));
      }
    sentinels(&again, d, 500);
    RT_OK(rmaop_plan_execute(back, dst.p, again.p, mode == 0 ? RMAOP_INSERT : RMAOP_ADD));
    same(&again, exp, d, what);
    free(exp);
    free(blk);
  }
  RT_LOK();
  free(h);
  buf_free(&again);
  buf_free(&src);
  buf_free(&dst);
  buf_free(&other);
  rmaop_plan_destroy(&back);
  rmaop_plan_destroy(&plan);
  RT_CHECK(plan == NULL && back == NULL, "rmaop_plan_destroy leaves the handle");
}

START_TEST(test_alltoall_patterns) {
  for (int pat = 0; pat < NPAT; ++pat)
    for (int off = 0; off < NOFF; ++off)
      run_alltoall(RMAOP_F64, pat, off);
}
END_TEST

START_TEST(test_alltoall_dtypes) {
  for (int i = 0; i < 4; ++i)
    if (rt_dtypes[i] != RMAOP_F64) {
      run_alltoall(rt_dtypes[i], PAT_UNEVEN, OFF_CUSTOM);
      run_alltoall(rt_dtypes[i], PAT_QUIET, OFF_PACKED);
    }
}
END_TEST

/* Creation errors: each rank's own arguments, and what only the exchange can show. */
START_TEST(test_alltoall_errors) {
  const int P = rt_size, me = rt_rank, bad = P - 1;
  int64_t sc[64], off[64];
  for (int q = 0; q < P; ++q)
    sc[q] = 2, off[q] = 2 * q;
  rmaop_alltoall_spec ok = {.dtype = RMAOP_F64, .src_len = 2 * P, .dst_len = 2 * P, .send_counts = sc};
  rmaop_plan plan = NULL;
  rmaop_alltoall_spec s = ok;
  int64_t neg[64];
  memcpy(neg, sc, sizeof neg);
  neg[0] = -1;
  s.send_counts = me == bad ? neg : sc;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "send_counts[0] = -1 is negative");
  s = ok;
  s.src_len = me == bad ? 2 * P - 1 : 2 * P; /* packed blocks beyond src_len */
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "src_len");
  s = ok;
  int64_t far[64];
  memcpy(far, off, sizeof far);
  far[P - 1] = 2 * P - 1; /* the last block sticks out of src */
  s.send_offsets = me == bad ? far : off;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "outside this rank's src_len");
  s = ok;
  s.dst_len = me == bad ? 2 * P - 1 : 2 * P; /* what the others send does not fit here */
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "dst_len");
  s = ok;
  s.recv_offsets = me == bad ? far : off;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "outside its dst_len");
  if (P > 1) { /* two blocks at the same place */
    int64_t dup[64];
    memcpy(dup, off, sizeof dup);
    dup[1] = 1;
    s = ok;
    s.recv_offsets = me == bad ? dup : off;
    RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
    MESSAGE_ON(bad, "overlap");
    /* the dtype on one rank only: every rank sees it */
    s = ok;
    s.dtype = me == bad ? RMAOP_C128 : RMAOP_F64;
    RT_EXPECT(rmaop_plan_create_alltoall(ctx, &s, &plan), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("dtype differs between ranks");
  }
  s = ok;
  s.send_counts = me == bad ? NULL : sc;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "send_counts is NULL");
  s = ok;
  s.dtype = me == bad ? (rmaop_dtype)9 : RMAOP_F64;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "not a rmaop_dtype");
  s = ok;
  s.src_len = me == bad ? -1 : s.src_len;
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &s, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "negative buffer length");
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, me == bad ? NULL : &ok, &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "spec is NULL");
  RT_EXPECT_ON(rmaop_plan_create_alltoall(ctx, &ok, me == bad ? NULL : &plan), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "plan (output) is NULL");
  RT_EXPECT(rmaop_plan_create_alltoall(NULL, &ok, &plan), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(plan == NULL, "a plan was returned on failure");
  /* The context still works: a good plan moves its blocks. */
  RT_OK(rmaop_plan_create_alltoall(ctx, &ok, &plan));
  buf a = buf_make(RMAOP_F64, 2 * P), b = buf_make(RMAOP_F64, 2 * P);
  double h[128], g[128];
  for (int i = 0; i < 2 * P; ++i)
    h[i] = 100 * me + i;
  LOK(rmaop_vec_write_local(a.v, h));
  RT_OK(rmaop_plan_execute(plan, a.p, b.p, RMAOP_INSERT));
  LOK(rmaop_vec_read_local(b.v, g));
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < 2; ++k)
      if (g[2 * p + k] != 100 * p + 2 * me + k)
        LFAIL("after the errors: element %d is %g", 2 * p + k, g[2 * p + k]);
  RT_LOK();
  buf_free(&a);
  buf_free(&b);
  rmaop_plan_destroy(&plan);
}
END_TEST

/* A rank that never joins an execution (absent), or joins after the others' timeout (late). Absent: the others
 * return RMAOP_ERR_TIMEOUT (or RMAOP_ERR_REMOTE from a peer that timed out first). Late: how far each rank got
 * depends on when its deadline fired (the deadlines start after a first spell of polling, slow when ranks outnumber
 * cores), so any rank may fail or complete, but one that returns RMAOP_OK holds every block, never what a peer
 * abandoned. Either way a rank that failed refuses later calls (RMAOP_ERR_STATE) and every call and destroy returns
 * (a watchdog turns a hang into a failure). Host memory, 2+ ranks. The buffers are static: after a timeout the
 * twosided backend's MPI_Ialltoallv stays pending over them (alltoall.h), so they must outlive the process's MPI
 * calls. */
static double fail_src[2][64], fail_dst[2][64];

static void absent_or_late(int late) {
  const double timeout = 0.5;
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.timeout = timeout;
  rmaop_ctx c = NULL;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &c));
  int64_t sc[64];
  for (int q = 0; q < rt_size; ++q)
    sc[q] = 1;
  const rmaop_alltoall_spec spec = {.dtype = RMAOP_F64, .src_len = rt_size, .dst_len = rt_size, .send_counts = sc};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create_alltoall(c, &spec, &plan));
  /* On rma the buffers are vectors, which an all-to-all may write straight into (with RMAOP_RMA_DIRECT_MIN=8): the
   * wait for a destination's offer is bounded too, and a vector freed after the failure stays valid for a peer
   * that may still write it. */
  rmaop_ctx_info info;
  RT_OK(rmaop_ctx_get_info(c, &info));
  rmaop_vec v[2] = {NULL, NULL};
  double *src = fail_src[late], *dst = fail_dst[late];
  if (strcmp(info.backend, "rma") == 0) {
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create_local(c, rt_size, &l));
    for (int i = 0; i < 2; ++i)
      RT_OK(rmaop_vec_create(l, RMAOP_F64, &v[i]));
    rmaop_layout_destroy(&l);
    RT_OK(rmaop_vec_get_array(v[0], (void **)&src));
    RT_OK(rmaop_vec_get_array(v[1], (void **)&dst));
  }
  RT_OK(rmaop_plan_execute(plan, src, dst, RMAOP_INSERT)); /* once in step */
  for (int q = 0; q < rt_size; ++q)
    src[q] = 100 * rt_rank + q + 1, dst[q] = -1;
  rt_watchdog(30, "test_alltoall: an all-to-all wait or destroy is not bounded by the context's timeout");
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  rmaop_status st = RMAOP_OK;
  if (rt_rank != 0 || late) {
    if (rt_rank == 0) {
      const double until = MPI_Wtime() + 3 * timeout;
      while (MPI_Wtime() < until) {
      }
    }
    st = rmaop_plan_execute(plan, src, dst, RMAOP_INSERT);
  }
  const double waited = MPI_Wtime() - t0;
  const int absent_wait = !late && rt_rank != 0, failed = st == RMAOP_ERR_TIMEOUT || st == RMAOP_ERR_REMOTE;
  RT_CHECK(absent_wait ? failed : st == RMAOP_OK || failed, "rank 0 %s: %s after %.2f s: %s", late ? "late" : "absent",
           rmaop_status_string(st), waited, rmaop_ctx_last_error(c));
  int whole = 1;
  for (int p = 0; p < rt_size && st == RMAOP_OK && (rt_rank != 0 || late); ++p)
    whole &= dst[p] == 100 * p + rt_rank + 1;
  RT_CHECK(whole, "rank 0 %s: RMAOP_OK without every block", late ? "late" : "absent");
  if (failed)
    st = rmaop_plan_execute(plan, src, dst, RMAOP_INSERT);
  RT_CHECK(!failed || st == RMAOP_ERR_STATE, "after the failure: %s", rmaop_status_string(st));
  rmaop_plan_destroy(&plan);
  rmaop_vec_destroy(&v[0]);
  rmaop_vec_destroy(&v[1]);
  rmaop_ctx_destroy(&c);
  RT_CHECK(plan == NULL && c == NULL, "a destroy left its handle");
  rt_watchdog(0, NULL);
}

START_TEST(test_alltoall_failure) {
  if (rt_size < 2 || rt_device())
    return; /* device paths: the timeout test of tests/CMakeLists.txt */
  absent_or_late(0);
  absent_or_late(1);
}
END_TEST

/* Blocks straight into the destination (rma, host memory, lock, shm: rma/rma_backend.c). A block of at least
 * RMAOP_RMA_DIRECT_MIN bytes (default 32768) into a vector arrives directly, which the trace reports as transport
 * "shm-direct"; into ordinary memory, in ADD mode, or with RMAOP_RMA_DIRECT_MIN=0 it is staged. Every execution
 * against the reference, whichever way it went; the ways are checked where the context takes them. */
static const char *site_transport(rmaop_ctx c, const char *label) {
  int n = 0;
  RT_OK(rmaop_trace_count(c, &n));
  for (int i = 0; i < n; ++i) {
    rmaop_trace_site s;
    RT_OK(rmaop_trace_get(c, i, &s));
    if (strcmp(s.label, label) == 0)
      return s.transport;
  }
  return "";
}

static int direct_expected(rmaop_ctx c, size_t block) {
  rmaop_ctx_info info;
  RT_OK(rmaop_ctx_get_info(c, &info));
  const char *min_env = getenv("RMAOP_RMA_DIRECT_MIN"), *nodes = getenv("RMAOP_NODE_SIZE");
  const double min = min_env && *min_env ? strtod(min_env, NULL) : 32768;
  return rt_size > 1 && strcmp(info.backend, "rma") == 0 && info.memory == RMAOP_MEMORY_HOST &&
         info.rma.sync == RMAOP_SYNC_LOCK && info.rma.transport != RMAOP_TRANSPORT_MPI && !(nodes && *nodes) &&
         min > 0 && (double)block >= min;
}

/* One execution of `plan` from src into dst (P blocks of n each way) with fresh values, checked; returns whether
 * the trace says it went straight into dst. */
static int direct_run(rmaop_plan plan, double *src, double *dst, int64_t n, rmaop_mode mode, int s, const char *what) {
  for (int q = 0; q < rt_size; ++q)
    for (int64_t k = 0; k < n; ++k)
      src[q * n + k] = 1e6 * (rt_rank * rt_size + q) + k + 0.25 * s, dst[q * n + k] = 1.0;
  RT_OK(rmaop_plan_execute(plan, src, dst, mode));
  int64_t bad = -1;
  for (int p = 0; p < rt_size && bad < 0; ++p)
    for (int64_t k = 0; k < n && bad < 0; ++k)
      if (dst[p * n + k] != 1e6 * (p * rt_size + rt_rank) + k + 0.25 * s + (mode == RMAOP_ADD))
        bad = p * n + k;
  RT_CHECK(bad < 0, "%s: dst[%lld] = %.17g is wrong", what, (long long)bad, bad < 0 ? 0.0 : dst[bad]);
  return strcmp(site_transport(ctx, "test.direct"), "shm-direct") == 0;
}

START_TEST(test_alltoall_direct) {
  if (rt_device())
    return;               /* host memory only: device plans put into the peers' GPU staging (ipc) */
  const int64_t n = 5000; /* 40000 bytes per pair */
  const int want = direct_expected(ctx, (size_t)n * sizeof(double));
  int64_t sc[64];
  for (int q = 0; q < rt_size; ++q)
    sc[q] = n;
  const int64_t len = rt_size * n;
  const rmaop_alltoall_spec spec = {
      .dtype = RMAOP_F64, .src_len = len, .dst_len = len, .send_counts = sc, .label = "test.direct"};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create_alltoall(ctx, &spec, &plan));
  RT_OK(rmaop_trace_enable(ctx, 1));
  buf v = buf_make(RMAOP_F64, 2 * len), u = buf_make(RMAOP_F64, len);
  double *a = v.p, *b = a + len, *heap = rt_alloc(RMAOP_F64, len);
  struct {
    double *src, *dst;
    rmaop_mode mode;
    int direct;
    const char *what;
  } cases[] = {
      {a, u.p, RMAOP_INSERT, want, "into a vector"},
      {a, heap, RMAOP_INSERT, 0, "into malloc'd memory"},
      {a, u.p, RMAOP_ADD, 0, "ADD into a vector"},
      {u.p, b, RMAOP_INSERT, want, "into a vector again"},
      {a, b, RMAOP_INSERT, want, "between two halves of one vector"},
      {heap, a, RMAOP_INSERT, want, "from malloc'd memory into a vector"},
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); ++i) {
    const int got = direct_run(plan, cases[i].src, cases[i].dst, n, cases[i].mode, i, cases[i].what);
    RT_CHECK(got == cases[i].direct, "%s: the trace says %s, want %s", cases[i].what,
             site_transport(ctx, "test.direct"), cases[i].direct ? "shm-direct" : "a staged transport");
  }
  RT_OK(rmaop_trace_enable(ctx, 0));
  free(heap);
  buf_free(&v);
  buf_free(&u);
  rmaop_plan_destroy(&plan);
}
END_TEST

/* ------------------------------------------------------------------------------------------------------------ */
/* redistribution                                                                                                */
/* ------------------------------------------------------------------------------------------------------------ */

typedef struct {
  int ndim;
  int64_t dims[4];
} shape;

static int64_t shape_n(const shape *s) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; ++d)
    n *= s->dims[d];
  return n;
}
/* The product of the dims other than `axis`: the elements of one row of it. */
static int64_t rest_of(const shape *s, int axis) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; ++d)
    if (d != axis)
      n *= s->dims[d];
  return n;
}

enum { SPLIT_BALANCED, SPLIT_HALF, SPLIT_LAST, NSPLIT };
static const char *const split_name[NSPLIT] = {"balanced", "half on rank 0", "all on the last rank"};

/* Rows of `axis` (n of them) on rank r: PyLops-MPI's balanced split, or uneven ones. */
static int64_t rows_of(int split, int64_t n, int r) {
  const int P = rt_size;
  switch (split) {
  case SPLIT_BALANCED:
    return n / P + (r < n % P);
  case SPLIT_HALF: {
    const int64_t first = P == 1 ? n : (n + 1) / 2, rest = n - first;
    return r == 0 ? first : rest / (P - 1) + (r - 1 < rest % (P - 1));
  }
  default:
    return r == P - 1 ? n : 0;
  }
}
static int64_t rows_at(int split, int64_t n, int r) {
  int64_t at = 0;
  for (int p = 0; p < r; ++p)
    at += rows_of(split, n, p);
  return at;
}

/* Global flat index of element k of the block holding rows [at, at + rows) of `axis`. */
static int64_t global_index(const shape *s, int axis, int64_t at, int64_t rows, int64_t k) {
  int64_t g = 0, stride = 1;
  for (int d = s->ndim - 1; d >= 0; --d) {
    const int64_t e = d == axis ? rows : s->dims[d];
    const int64_t c = k % e;
    k /= e;
    g += (c + (d == axis ? at : 0)) * stride;
    stride *= s->dims[d];
  }
  return g;
}

static double _Complex gval(rmaop_dtype d, int64_t i) {
  return rt_round(d, rt_value(i, 3));
}

/* This rank's block (rows of `axis` by `split`) of the global array. */
static void *block_of(const shape *s, rmaop_dtype d, int axis, int split, int64_t *n) {
  const int64_t rows = rows_of(split, s->dims[axis], rt_rank), at = rows_at(split, s->dims[axis], rt_rank);
  *n = rows * rest_of(s, axis);
  void *h = rt_alloc(d, *n);
  for (int64_t k = 0; k < *n; ++k)
    rt_store(d, h, k, gval(d, global_index(s, axis, at, rows, k)));
  return h;
}

/* Gathers v (every rank's block of `axis` by `split`) on rank 0 and compares the assembled array with the global
 * one, bit for bit. Collective. */
static void check_gathered(rmaop_vec v, const shape *s, rmaop_dtype d, int axis, int split, const char *what) {
  const int64_t N = shape_n(s);
  void *cat = rt_alloc(d, N), *whole = rt_alloc(d, N), *want = rt_alloc(d, N);
  LOK(rmaop_vec_gather(v, 0, cat));
  if (rt_rank == 0) {
    int64_t k0 = 0;
    for (int p = 0; p < rt_size; ++p) {
      const int64_t rows = rows_of(split, s->dims[axis], p), at = rows_at(split, s->dims[axis], p);
      const int64_t n = rows * rest_of(s, axis);
      for (int64_t k = 0; k < n; ++k)
        memcpy((char *)whole + global_index(s, axis, at, rows, k) * es(d), (char *)cat + (k0 + k) * es(d), es(d));
      k0 += n;
    }
    for (int64_t i = 0; i < N; ++i)
      rt_store(d, want, i, gval(d, i));
    for (int64_t i = 0; i < N && lok; ++i)
      if (memcmp((char *)whole + i * es(d), (char *)want + i * es(d), es(d)) != 0)
        LFAIL("%s: global element %lld is %.9g, want %.9g", what, (long long)i, creal(rt_load(d, whole, i)),
              creal(rt_load(d, want, i)));
  }
  free(cat);
  free(whole);
  free(want);
}

static void run_redistribute(const shape *s, rmaop_dtype d, int fa, int ta, int split) {
  char what[200];
  int n = snprintf(what, sizeof what, "redistribute %s [", rmaop_dtype_name(d));
  for (int k = 0; k < s->ndim; ++k)
    n += snprintf(what + n, sizeof what - (size_t)n, "%s%lld", k ? "," : "", (long long)s->dims[k]);
  snprintf(what + n, sizeof what - (size_t)n, "] axis %d -> %d, %s", fa, ta, split_name[split]);
  const int64_t fl = split == SPLIT_BALANCED ? -1 : rows_of(split, s->dims[fa], rt_rank);
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_redistribute(ctx, d, s->ndim, s->dims, fa, fl, ta, &A));
  rmaop_op_info info;
  rmaop_layout_info mi, di;
  RT_OK(rmaop_op_get_info(A, &info));
  RT_OK(rmaop_layout_get_info(info.model, &mi));
  RT_OK(rmaop_layout_get_info(info.data, &di));
  const int64_t want_m = rows_of(split, s->dims[fa], rt_rank) * rest_of(s, fa);
  const int64_t want_d = rows_of(SPLIT_BALANCED, s->dims[ta], rt_rank) * rest_of(s, ta);
  RT_CHECK(mi.local_n == want_m && di.local_n == want_d && mi.global_n == shape_n(s) && di.global_n == shape_n(s),
           "%s: layouts %lld and %lld here, want %lld and %lld", what, (long long)mi.local_n, (long long)di.local_n,
           (long long)want_m, (long long)want_d);
  rmaop_vec x = NULL, y = NULL;
  RT_OK(rmaop_vec_create(info.model, d, &x));
  RT_OK(rmaop_vec_create(info.data, d, &y));
  lok = 1;
  int64_t nx = 0;
  void *hx = block_of(s, d, fa, split, &nx);
  LOK(rmaop_vec_write_local(x, hx));
  RT_OK(rmaop_vec_set(y, 9.0));
  RT_OK(rmaop_op_apply(A, x, y));
  check_gathered(y, s, d, ta, SPLIT_BALANCED, what);
  RT_LOK();
  /* The adjoint is the way back, exactly. */
  RT_OK(rmaop_vec_set(x, 7.0));
  RT_OK(rmaop_op_apply_adjoint(A, y, x));
  check_gathered(x, s, d, fa, split, what);
  RT_LOK();
  double rel = 1;
  RT_OK(rmaop_op_dottest(A, 5u, &rel));
  RT_CHECK(rel < rt_tol(d), "%s: dot test relative error %g", what, rel);
  free(hx);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_op_destroy(&A);
}

static const shape shapes[] = {{2, {7, 5}}, {3, {4, 3, 5}}, {4, {3, 2, 4, 3}}, {2, {2, 9}}, {3, {3, 0, 2}}};

static void run_shape(const shape *s, int nsplit) {
  for (int fa = 0; fa < s->ndim; ++fa)
    for (int ta = 0; ta < s->ndim; ++ta)
      for (int split = 0; split < nsplit; ++split)
        run_redistribute(s, RMAOP_F64, fa, ta, split);
}

START_TEST(test_redistribute_2d) {
  run_shape(&shapes[0], NSPLIT);
  run_shape(&shapes[3], NSPLIT); /* fewer rows than ranks on axis 0 */
}
END_TEST

START_TEST(test_redistribute_3d) {
  run_shape(&shapes[1], NSPLIT);
  run_shape(&shapes[4], 2); /* a zero dimension: nothing to move, every rank takes part */
}
END_TEST

START_TEST(test_redistribute_4d) {
  run_shape(&shapes[2], 2);
}
END_TEST

START_TEST(test_redistribute_dtypes) {
  for (int i = 0; i < 4; ++i) {
    run_redistribute(&shapes[1], rt_dtypes[i], 0, 2, SPLIT_HALF);
    run_redistribute(&shapes[1], rt_dtypes[i], 2, 1, SPLIT_BALANCED);
  }
}
END_TEST

/* rmaop_vec_redistribute between rmaop_layout_create_axis layouts, and from an uneven split. */
START_TEST(test_vec_redistribute) {
  const shape *s = &shapes[1];
  const rmaop_dtype d = RMAOP_C128;
  for (int fa = 0; fa < s->ndim; ++fa)
    for (int ta = 0; ta < s->ndim; ++ta)
      for (int split = 0; split < 2; ++split) {
        char what[96];
        snprintf(what, sizeof what, "rmaop_vec_redistribute axis %d -> %d, %s", fa, ta, split_name[split]);
        rmaop_layout lf = NULL, lt = NULL;
        if (split == SPLIT_BALANCED)
          RT_OK(rmaop_layout_create_axis(ctx, s->ndim, s->dims, fa, &lf));
        else
          RT_OK(rmaop_layout_create_local(ctx, rows_of(split, s->dims[fa], rt_rank) * rest_of(s, fa), &lf));
        RT_OK(rmaop_layout_create_axis(ctx, s->ndim, s->dims, ta, &lt));
        rmaop_layout_info li;
        RT_OK(rmaop_layout_get_info(lt, &li));
        RT_CHECK(li.local_n == rows_of(SPLIT_BALANCED, s->dims[ta], rt_rank) * rest_of(s, ta),
                 "rmaop_layout_create_axis: %lld elements here", (long long)li.local_n);
        rmaop_vec x = NULL, y = NULL;
        RT_OK(rmaop_vec_create(lf, d, &x));
        RT_OK(rmaop_vec_create(lt, d, &y));
        lok = 1;
        int64_t n = 0;
        void *hx = block_of(s, d, fa, split, &n);
        LOK(rmaop_vec_write_local(x, hx));
        RT_OK(rmaop_vec_redistribute(x, s->ndim, s->dims, fa, ta, y));
        check_gathered(y, s, d, ta, SPLIT_BALANCED, what);
        RT_LOK();
        free(hx);
        rmaop_vec_destroy(&x);
        rmaop_vec_destroy(&y);
        rmaop_layout_destroy(&lf);
        rmaop_layout_destroy(&lt);
      }
}
END_TEST

START_TEST(test_redistribute_errors) {
  const int bad = rt_size - 1, me = rt_rank;
  const int64_t dims[3] = {4, 3, 5}, neg[3] = {4, -3, 5};
  rmaop_op A = NULL;
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, me == bad ? 0 : 3, dims, 0, -1, 1, &A), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "ndim = 0");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, me == bad ? 9 : 3, dims, 0, -1, 1, &A), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "ndim = 9");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, me == bad ? neg : dims, 0, -1, 1, &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "dims[1] = -3 is negative");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, me == bad ? NULL : dims, 0, -1, 1, &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "dims is NULL");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, me == bad ? 3 : 0, -1, 1, &A), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "from_axis = 3 is outside [0, 3)");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, -1, me == bad ? -1 : 1, &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "to_axis = -1 is outside");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, me == bad ? -2 : -1, 1, &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "from_local = -2");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, me == bad ? (rmaop_dtype)7 : RMAOP_F64, 3, dims, 0, -1, 1, &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "not a rmaop_dtype");
  RT_EXPECT_ON(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, -1, 1, me == bad ? NULL : &A), bad,
               RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "(output) is NULL");
  /* Values every rank can check only together: the same verdict everywhere. */
  RT_EXPECT(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, me == bad ? 5 : 0, 1, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("add up to more than 4, not dims[0] = 4");
  if (rt_size > 1) {
    RT_EXPECT(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, me == bad ? 0 : -1, 1, &A),
              RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("not dims[0] = 4");
    const int64_t other[3] = {4, 4, 5};
    RT_EXPECT(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, me == bad ? other : dims, 0, -1, 1, &A),
              RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("dims[1] differs between ranks");
    RT_EXPECT(rmaop_op_create_redistribute(ctx, RMAOP_F64, 3, dims, 0, -1, me == bad ? 2 : 1, &A),
              RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("to_axis differs between ranks");
  }
  RT_EXPECT(rmaop_op_create_redistribute(NULL, RMAOP_F64, 3, dims, 0, -1, 1, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "an operator was returned on failure");
  /* rmaop_layout_create_axis */
  rmaop_layout l = NULL;
  RT_EXPECT_ON(rmaop_layout_create_axis(ctx, 3, dims, me == bad ? 3 : 1, &l), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "axis = 3 is outside [0, 3)");
  RT_EXPECT_ON(rmaop_layout_create_axis(ctx, 3, me == bad ? neg : dims, 1, &l), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "dims[1] = -3");
  RT_CHECK(l == NULL, "a layout was returned on failure");
  /* rmaop_vec_redistribute: the vectors must fit the arrays and the axes */
  rmaop_layout l0 = NULL, l1 = NULL, l2 = NULL, lb = NULL;
  RT_OK(rmaop_layout_create_axis(ctx, 3, dims, 0, &l0));
  RT_OK(rmaop_layout_create_axis(ctx, 3, dims, 1, &l1));
  RT_OK(rmaop_layout_create_axis(ctx, 3, dims, 2, &l2));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 60, &lb));
  rmaop_vec x = NULL, y = NULL, z = NULL, c = NULL, b = NULL, odd = NULL;
  RT_OK(rmaop_vec_create(l0, RMAOP_F64, &x));
  RT_OK(rmaop_vec_create(l1, RMAOP_F64, &y));
  RT_OK(rmaop_vec_create(l2, RMAOP_F64, &z));
  RT_OK(rmaop_vec_create(l1, RMAOP_C64, &c));
  RT_OK(rmaop_vec_create(lb, RMAOP_F64, &b));
  rmaop_layout lodd = NULL;
  RT_OK(rmaop_layout_create_local(ctx, me == bad ? 1 : 0, &lodd));
  RT_OK(rmaop_vec_create(lodd, RMAOP_F64, &odd));
  if (rt_size > 1) { /* z's layout (balanced along axis 2) is not the balanced one along axis 1 */
    RT_EXPECT(rmaop_vec_redistribute(x, 3, dims, 0, 1, z), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
    RT_CHECK(rt_sum_int(strstr(rmaop_ctx_last_error(NULL), "the balanced split along axis 1") != NULL) > 0,
             "no rank named the balanced split: %s", rmaop_ctx_last_error(NULL));
  }
  RT_EXPECT(rmaop_vec_redistribute(x, 3, dims, 0, 1, c), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x is f64 but y is c64");
  RT_EXPECT(rmaop_vec_redistribute(x, 3, dims, 0, 1, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("the same vector");
  RT_EXPECT(rmaop_vec_redistribute(b, 3, dims, 0, 1, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("SCATTER");
  RT_EXPECT_ON(rmaop_vec_redistribute(odd, 3, dims, 0, 1, y), bad, RMAOP_ERR_ARG);
  MESSAGE_ON(bad, "not a whole number of rows of axis 0");
  RT_EXPECT(rmaop_vec_redistribute(x, 3, dims, 0, 1, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_redistribute(x, 3, dims, 0, 4, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("to_axis = 4 is outside [0, 3)");
  /* and then it works */
  RT_OK(rmaop_vec_redistribute(x, 3, dims, 0, 1, y));
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&z);
  rmaop_vec_destroy(&c);
  rmaop_vec_destroy(&b);
  rmaop_vec_destroy(&odd);
  rmaop_layout_destroy(&l0);
  rmaop_layout_destroy(&l1);
  rmaop_layout_destroy(&l2);
  rmaop_layout_destroy(&lb);
  rmaop_layout_destroy(&lodd);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("alltoall");
  TCase *tc = tcase_create("alltoall");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_alltoall_patterns);
  tcase_add_test(tc, test_alltoall_dtypes);
  tcase_add_test(tc, test_alltoall_errors);
  tcase_add_test(tc, test_alltoall_failure);
  tcase_add_test(tc, test_alltoall_direct);
  tcase_add_test(tc, test_redistribute_2d);
  tcase_add_test(tc, test_redistribute_3d);
  tcase_add_test(tc, test_redistribute_4d);
  tcase_add_test(tc, test_redistribute_dtypes);
  tcase_add_test(tc, test_vec_redistribute);
  tcase_add_test(tc, test_redistribute_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
