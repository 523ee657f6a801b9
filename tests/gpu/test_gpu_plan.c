/* Plans on device memory (label gpu): every backend, sync mode and transport moves GPU buffers. Reference:
 * the values each transfer must deliver, computed here from the senders' definition src_r[i] = v(r, i).
 * The pattern: to the right neighbour src[0..k) -> dst[k..2k), to the left neighbour src[n-k..n) ->
 * dst[0..k), to itself src[1..1+k) -> dst[2k..3k); at 1 rank all three are self transfers, at 2 ranks both
 * neighbours are one peer. INSERT and ADD (dst preset to w), and the reversed plan is the transpose
 * (<P x, y> = <x, P^T y>). Buffers are the arrays of device vectors (rmaop_vec_get_array). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "rmaop_test.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif

/* Whether this MPI takes device pointers (what the library checks at context creation). */
static int mpi_takes_device_pointers(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

static rmaop_ctx ctx;
static void setup(void) { ctx = rt_ctx(); }
static void teardown(void) { rmaop_ctx_destroy(&ctx); }

enum { N = 64, K = 5, M = 3 * K };

static double _Complex v(int r, int64_t i) { return rt_value(1000 * r + i, 1); }
static double _Complex w(int r, int64_t i) { return rt_value(1000 * r + i, 2); }

static rmaop_plan make_plan(rmaop_dtype d) {
  const int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
  rmaop_transfer sends[3] = {{right, 0, K, K}, {left, N - K, 0, K}, {rt_rank, 1, 2 * K, K}};
  rmaop_plan_spec spec = {.dtype = d, .src_len = N, .dst_len = M, .nsends = 3, .sends = sends, .nrecvs = -1,
                          .label = "gpu-ring"};
  rmaop_plan p = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &p));
  return p;
}

/* x[i] = f(my rank, i), or 0 when f is NULL. */
static void fill(rmaop_vec x, int64_t n, rmaop_dtype d, double _Complex (*f)(int, int64_t)) {
  void *h = malloc((size_t)n * rmaop_dtype_size(d));
  for (int64_t i = 0; i < n; ++i) rt_store(d, h, i, f ? f(rt_rank, i) : 0.0);
  RT_OK(rmaop_vec_write_local(x, h));
  free(h);
}

static rmaop_vec vec_of(int64_t n, rmaop_dtype d, double _Complex (*f)(int, int64_t)) {
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create_local(ctx, n, &l));
  rmaop_vec x = NULL;
  RT_OK(rmaop_vec_create(l, d, &x));
  rmaop_layout_destroy(&l);
  fill(x, n, d, f);
  return x;
}

static void *arr(rmaop_vec x) {
  void *a = NULL;
  RT_OK(rmaop_vec_get_array(x, &a));
  return a;
}

static double _Complex expected(int64_t j) {
  const int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
  if (j < K) return v(right, N - K + j);
  if (j < 2 * K) return v(left, j - K);
  return v(rt_rank, 1 + j - 2 * K);
}

START_TEST(test_plan_insert_add) {
  for (int di = 0; di < 4; ++di) {
    const rmaop_dtype d = rt_dtypes[di];
    const double tol = (d == RMAOP_F32 || d == RMAOP_C64) ? 1e-6 : 1e-14;
    rmaop_plan p = make_plan(d);
    for (int mode = 0; mode < 2; ++mode) {
      rmaop_vec x = vec_of(N, d, v), y = vec_of(M, d, mode ? w : NULL);
      for (int rep = 0; rep < 3; ++rep) { /* repeated executions reuse buffers and epochs */
        if (mode && rep) fill(y, M, d, w);
        RT_OK(rmaop_plan_begin(p, arr(x), arr(y), mode ? RMAOP_ADD : RMAOP_INSERT));
        RT_OK(rmaop_plan_end(p));
        void *h = malloc(M * rmaop_dtype_size(d));
        RT_OK(rmaop_vec_read_local(y, h));
        int ok = 1;
        int64_t bad = -1;
        for (int64_t j = 0; j < M && ok; ++j) {
          double _Complex want = expected(j) + (mode ? w(rt_rank, j) : 0.0);
          if (!rt_is_complex(d)) want = creal(want);
          if (!rt_close(rt_load(d, h, j), want, tol, 2.0)) ok = 0, bad = j;
        }
        free(h);
        RT_CHECK(ok, "%s %s rep %d: element %lld differs", rmaop_dtype_name(d), mode ? "ADD" : "INSERT", rep,
                 (long long)bad);
      }
      rmaop_vec_destroy(&x);
      rmaop_vec_destroy(&y);
    }
    rmaop_plan_destroy(&p);
  }
}
END_TEST

START_TEST(test_plan_reverse_is_transpose) {
  const rmaop_dtype d = RMAOP_F64;
  rmaop_plan p = make_plan(d), r = NULL;
  RT_OK(rmaop_plan_reverse(p, "gpu-ring-rev", &r));
  rmaop_vec x = vec_of(N, d, v), y = vec_of(M, d, w), px = vec_of(M, d, NULL), pty = vec_of(N, d, NULL);
  RT_OK(rmaop_plan_execute(p, arr(x), arr(px), RMAOP_ADD));
  RT_OK(rmaop_plan_execute(r, arr(y), arr(pty), RMAOP_ADD));
  double _Complex a = 0, b = 0;
  /* Local dots summed over ranks (the vectors' layouts are per-rank pieces), reduced by hand. */
  double hx[N], hpty[N], hpx[M], hy[M];
  RT_OK(rmaop_vec_read_local(x, hx));
  RT_OK(rmaop_vec_read_local(pty, hpty));
  RT_OK(rmaop_vec_read_local(px, hpx));
  RT_OK(rmaop_vec_read_local(y, hy));
  double s[2] = {0, 0}, t[2];
  for (int i = 0; i < M; ++i) s[0] += hpx[i] * hy[i];
  for (int i = 0; i < N; ++i) s[1] += hx[i] * hpty[i];
  MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  a = t[0], b = t[1];
  RT_CHECK(fabs(creal(a) - creal(b)) <= 1e-12 * fmax(fabs(creal(a)), 1.0), "<Px,y> = %.17g but <x,P^T y> = %.17g",
           creal(a), creal(b));
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&px);
  rmaop_vec_destroy(&pty);
  rmaop_plan_destroy(&r);
  rmaop_plan_destroy(&p);
}
END_TEST

/* A public window over GPU memory (a device vector's array): auto and ipc map it through CUDA IPC; mpi
 * needs an MPI that takes device pointers (then MPI_Put moves GPU memory, and the transport says mpi) and is
 * refused with a message otherwise. One put of one element to the right neighbour per rank. */
START_TEST(test_public_gpu_window) {
  const char *t = getenv("RMAOP_RMA_TRANSPORT"), *b = getenv("RMAOP_BACKEND");
  if (rt_size < 2 || !b || strcmp(b, "rma") != 0) return;
  const int over_mpi = t && strcmp(t, "mpi") == 0;
  const int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
  rmaop_vec src = vec_of(2, RMAOP_F64, v), dst = vec_of(2, RMAOP_F64, NULL);
  rmaop_win win = NULL;
  const rmaop_status st = rmaop_win_create(ctx, arr(dst), 2 * sizeof(double), &win);
  const char *sync = getenv("RMAOP_RMA_SYNC");
  const int lock = !sync || strcmp(sync, "lock") == 0; /* lock over a CUDA-aware MPI is not enabled (win.c) */
  if (over_mpi && (lock || !rt_all(mpi_takes_device_pointers()))) {
    RT_CHECK(st == RMAOP_ERR_UNSUPPORTED, "GPU window over an MPI without device pointers: %s",
             rmaop_status_string(st));
    RT_MESSAGE_HAS("CUDA-aware");
  } else {
    RT_CHECK(st == RMAOP_OK, "GPU window: %s: %s", rmaop_status_string(st), rmaop_ctx_last_error(ctx));
    rmaop_transport tp = RMAOP_TRANSPORT_AUTO;
    RT_OK(rmaop_win_peer_transport(win, right, &tp));
    RT_CHECK(tp == (over_mpi ? RMAOP_TRANSPORT_MPI : RMAOP_TRANSPORT_IPC), "transport to rank %d: %s", right,
             rmaop_transport_name(tp));
    RT_OK(rmaop_win_epoch_begin(win, 1, &right, 1, &left));
    RT_OK(rmaop_win_put(win, arr(src), sizeof(double), right, sizeof(double)));
    RT_OK(rmaop_win_epoch_end(win));
    double h[2] = {-1, -1};
    RT_OK(rmaop_vec_read_local(dst, h));
    RT_CHECK(h[0] == 0.0 && h[1] == creal(v(left, 0)), "window holds %g %g, want 0 %g", h[0], h[1], creal(v(left, 0)));
    rmaop_win_destroy(&win);
  }
  rmaop_vec_destroy(&src);
  rmaop_vec_destroy(&dst);
}
END_TEST

/* ---- CUDA graphs ---- */

/* Whether this run's path may capture plans (rmaop.h, rmaop_ctx_get_stream): one rank, nccl, or rma over ipc on
 * the kernel path. Taken from the environment the test list sets, not from the library. */
static int capture_expected(void) {
  const char *b = getenv("RMAOP_BACKEND"), *t = getenv("RMAOP_RMA_TRANSPORT"), *k = getenv("RMAOP_IPC_PATH");
  if (rt_size == 1 || (b && strcmp(b, "nccl") == 0))
    return 1;
  return b && strcmp(b, "rma") == 0 && t && strcmp(t, "ipc") == 0 && k && strcmp(k, "kernel") == 0;
}

#define CUDA_OK(call)                                                                                                  \
  do {                                                                                                                 \
    cudaError_t e_ = (call);                                                                                           \
    RT_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                                              \
  } while (0)

/* ---- public epochs on GPU windows, many in a row ---- */

/* Whether this run gives public GPU windows over ipc: the rma backend (the public windows' tests run there) on
 * transport auto or ipc, more than one rank. */
static int public_ipc_run(void) {
  const char *t = getenv("RMAOP_RMA_TRANSPORT"), *b = getenv("RMAOP_BACKEND");
  return rt_size > 1 && b && strcmp(b, "rma") == 0 && !(t && strcmp(t, "mpi") == 0);
}

/* The origin of a put: cudaMemcpy from pageable memory may return before its copy lands, and the put reads on the
 * context's stream, which does not wait for the legacy one: the copy must be complete first (as before an MPI call). */
static cudaError_t set_source(double *dsrc, double value) {
  const cudaError_t e = cudaMemcpy(dsrc, &value, sizeof value, cudaMemcpyHostToDevice);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

/* One epoch of rank `from` putting `value` into rank `to`'s window word 0 (the other ranks take no part), then `to`
 * checks the word. The checks are collective (RT_CHECK), so they come after the two ranks' own calls. */
static void one_way(rmaop_win win, double *dsrc, double *dwin, int from, int to, double value, const char *what) {
  rmaop_status st = RMAOP_OK;
  cudaError_t ce = cudaSuccess;
  double got = value;
  if (rt_rank == from) {
    ce = set_source(dsrc, value);
    st = rmaop_win_epoch_begin(win, 1, &to, 0, NULL);
    if (st == RMAOP_OK) {
      st = rmaop_win_put(win, dsrc, sizeof value, to, 0);
      const rmaop_status end = rmaop_win_epoch_end(win); /* closed even after a failed put */
      st = st != RMAOP_OK ? st : end;
    }
  } else if (rt_rank == to) {
    st = rmaop_win_epoch_begin(win, 0, NULL, 1, &from);
    if (st == RMAOP_OK)
      st = rmaop_win_epoch_end(win);
    if (st == RMAOP_OK)
      ce = cudaMemcpy(&got, dwin, sizeof got, cudaMemcpyDeviceToHost);
  }
  RT_CHECK(st == RMAOP_OK, "%s: rank %d's epoch: %s: %s", what, rt_rank, rmaop_status_string(st),
           rmaop_ctx_last_error(NULL));
  RT_CHECK(ce == cudaSuccess, "%s: rank %d: %s", what, rt_rank, cudaGetErrorString(ce));
  RT_CHECK(got == value, "%s: rank %d's window holds %g after the epoch, rank %d put %g", what, to, got, from, value);
}

/* 200 one-way epochs, rank 0 to 1 and back (each rank a target only, then an origin only), then 50 rounds of a
 * ring (every rank both): each value read after its epoch, so a "ready" or "done" that came early or late shows. */
START_TEST(test_public_gpu_epochs) {
  if (!public_ipc_run())
    return;
  rmaop_win win = NULL;
  void *base = NULL;
  RT_OK(rmaop_win_allocate(ctx, 2 * sizeof(double), &win, &base));
  double *dsrc = NULL;
  CUDA_OK(cudaMalloc((void **)&dsrc, sizeof(double)));
  for (int k = 0; k < 100; ++k) {
    one_way(win, dsrc, base, 0, 1, 1.0 + k, "ping");
    one_way(win, dsrc, base, 1, 0, -1.0 - k, "pong");
  }
  const int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
  for (int k = 0; k < 50; ++k) {
    const double mine = 1000.0 * rt_rank + k;
    CUDA_OK(set_source(dsrc, mine));
    RT_OK(rmaop_win_epoch_begin(win, 1, &right, 1, &left));
    RT_OK(rmaop_win_put(win, dsrc, sizeof mine, right, sizeof(double)));
    RT_OK(rmaop_win_epoch_end(win));
    double got = -1;
    CUDA_OK(cudaMemcpy(&got, (double *)base + 1, sizeof got, cudaMemcpyDeviceToHost));
    RT_CHECK(got == 1000.0 * left + k, "ring round %d: rank %d holds %g, want %g", k, rt_rank, got, 1000.0 * left + k);
  }
  CUDA_OK(cudaFree(dsrc));
  rmaop_win_destroy(&win);
}
END_TEST

/* A target whose stream is still busy at its begin: the work enqueued before the begin (a long memset, then one that
 * overwrites the window word) must be over before the origin's put lands, or the put is lost. */
START_TEST(test_public_gpu_busy_target) {
  if (!public_ipc_run())
    return;
  rmaop_win win = NULL;
  void *base = NULL;
  void *sv = NULL;
  RT_OK(rmaop_ctx_get_stream(ctx, &sv));
  RT_OK(rmaop_win_allocate(ctx, sizeof(double), &win, &base));
  double *dsrc = NULL;
  void *big = NULL;
  const size_t big_bytes = (size_t)1 << 30; /* about half a millisecond of memset on an H200 */
  CUDA_OK(cudaMalloc((void **)&dsrc, sizeof(double)));
  CUDA_OK(cudaMalloc(&big, big_bytes));
  for (int k = 0; k < 3; ++k) {
    const double value = 7.0 + k;
    cudaError_t ce = cudaSuccess;
    if (rt_rank == 1) {
      ce = cudaMemsetAsync(big, k, big_bytes, (cudaStream_t)sv);
      if (ce == cudaSuccess)
        ce = cudaMemsetAsync(base, 0xff, sizeof(double), (cudaStream_t)sv);
    }
    CUDA_OK(ce);
    one_way(win, dsrc, base, 0, 1, value, "a put to a target whose stream was busy at its begin");
  }
  CUDA_OK(cudaFree(big));
  CUDA_OK(cudaFree(dsrc));
  rmaop_win_destroy(&win);
}
END_TEST

/* A public GPU epoch whose peer never comes ends in RMAOP_ERR_TIMEOUT naming it, on either side: a target waiting for
 * "done" (rank 1, rank 0 never puts), then an origin waiting for "ready" (rank 0, rank 1 never begins). */
START_TEST(test_public_gpu_timeout) {
  if (!public_ipc_run())
    return;
  const double timeout_s = 2.0;
  for (int side = 0; side < 2; ++side) {
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.timeout = timeout_s;
    rmaop_ctx c = NULL;
    RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &c));
    rmaop_win win = NULL;
    void *base = NULL;
    RT_OK(rmaop_win_allocate(c, sizeof(double), &win, &base));
    const int waiter = side == 0 ? 1 : 0, missing = 1 - waiter;
    rmaop_status st = RMAOP_OK;
    double waited = 0;
    rt_watchdog(30, "test_public_gpu_timeout: a public GPU epoch did not give up");
    if (rt_rank == waiter) {
      const double t0 = MPI_Wtime();
      if (side == 0) {
        st = rmaop_win_epoch_begin(win, 0, NULL, 1, &missing);
        if (st == RMAOP_OK)
          st = rmaop_win_epoch_end(win);
      } else {
        st = rmaop_win_epoch_begin(win, 1, &missing, 0, NULL);
        if (st == RMAOP_OK)
          st = rmaop_win_put(win, base, sizeof(double), missing, 0); /* from its own window: device memory */
        if (st == RMAOP_OK)
          st = rmaop_win_epoch_end(win);
      }
      waited = MPI_Wtime() - t0;
    }
    rt_watchdog(0, NULL);
    char name[32];
    snprintf(name, sizeof name, "rank %d", missing);
    const char *side_name = side == 0 ? "a target's end" : "an origin's end";
    RT_CHECK(rt_rank != waiter || st == RMAOP_ERR_TIMEOUT, "%s without its peer -> %s: %s", side_name,
             rmaop_status_string(st), rmaop_ctx_last_error(c));
    RT_CHECK(rt_rank != waiter || (waited >= 0.9 * timeout_s && waited < 5 * timeout_s),
             "%s gave up after %.2f s with a %.1f s timeout", side_name, waited, timeout_s);
    RT_CHECK(rt_rank != waiter || strstr(rmaop_ctx_last_error(c), name) != NULL,
             "%s: the timeout message does not name %s: %s", side_name, name, rmaop_ctx_last_error(c));
    MPI_Barrier(MPI_COMM_WORLD);
    rmaop_win_destroy(&win);
    rmaop_ctx_destroy(&c);
  }
}
END_TEST

/* src = v(rank, i) * (1 + round), written on the context's stream (ordered before the next launch). */
static void set_round(rmaop_vec x, cudaStream_t st, double *h, int round) {
  for (int64_t i = 0; i < N; ++i)
    h[i] = creal(v(rt_rank, i)) * (1 + round);
  CUDA_OK(cudaMemcpyAsync(arr(x), h, N * sizeof(double), cudaMemcpyHostToDevice, st));
}

static void check_round(rmaop_vec y, cudaStream_t st, int round, const char *what) {
  double h[M];
  CUDA_OK(cudaStreamSynchronize(st));
  RT_OK(rmaop_vec_read_local(y, h));
  for (int64_t j = 0; j < M; ++j)
    RT_CHECK(h[j] == creal(expected(j)) * (1 + round), "%s, round %d: element %lld is %.17g, want %.17g", what, round,
             (long long)j, h[j], creal(expected(j)) * (1 + round));
}

/* One capture of `execs` executions of p (src x -> dst y), replayed `replays` times with new data before each
 * replay; then `eager` executions outside the graph. Every round checks all of dst. */
static void capture_and_replay(rmaop_plan p, rmaop_vec x, rmaop_vec y, cudaStream_t st, int execs, int replays,
                               int eager, int *round) {
  double h[N];
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  set_round(x, st, h, *round); /* before the capture: not part of the graph */
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int e = 0; e < execs; ++e)
    RT_OK(rmaop_plan_execute(p, arr(x), arr(y), RMAOP_INSERT));
  CUDA_OK(cudaStreamEndCapture(st, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < replays; ++r, ++*round) {
    set_round(x, st, h, *round);
    CUDA_OK(cudaGraphLaunch(ge, st));
    check_round(y, st, *round, "graph replay");
  }
  for (int r = 0; r < eager; ++r, ++*round) {
    set_round(x, st, h, *round);
    RT_OK(rmaop_plan_execute(p, arr(x), arr(y), RMAOP_INSERT));
    check_round(y, st, *round, "eager execution after replays");
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
}

/* A plan captured into a CUDA graph and replayed: every replay is a new exchange with fresh data, and eager
 * executions before, between and after graphs stay right (flag values from device counters, staging halves);
 * captures of one and of two executions (the staging's epoch parity). On paths that cannot capture, the
 * begin refuses with RMAOP_ERR_UNSUPPORTED naming the reason and leaves the capture valid; host waits
 * (rmaop_ctx_synchronize, dots) and public epochs refuse the same way on every path. */
START_TEST(test_plan_graph_capture) {
  void *sv = NULL;
  RT_OK(rmaop_ctx_get_stream(ctx, &sv));
  cudaStream_t st = (cudaStream_t)sv;
  rmaop_ctx_info ci;
  RT_OK(rmaop_ctx_get_info(ctx, &ci));
  RT_CHECK(ci.graph_capture == capture_expected(),
           "rmaop_ctx_get_info says graph_capture %d on a path where %d is "
           "expected",
           ci.graph_capture, capture_expected());
  rmaop_plan p = make_plan(RMAOP_F64);
  rmaop_vec x = vec_of(N, RMAOP_F64, v), y = vec_of(M, RMAOP_F64, NULL);
  RT_OK(rmaop_plan_execute(p, arr(x), arr(y), RMAOP_INSERT)); /* creates the window: before any capture */
  check_round(y, st, 0, "eager execution");

  /* Host waits refuse inside a capture, which stays valid. */
  cudaGraph_t g = NULL;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  rmaop_status s1 = rmaop_ctx_synchronize(ctx);
  char msg1[512];
  snprintf(msg1, sizeof msg1, "%s", rmaop_ctx_last_error(ctx));
  double _Complex dot = 0;
  rmaop_status s2 = rmaop_vec_dot(x, x, &dot);
  CUDA_OK(cudaStreamEndCapture(st, &g));
  if (g)
    cudaGraphDestroy(g);
  RT_CHECK(s1 == RMAOP_ERR_UNSUPPORTED && strstr(msg1, "CUDA graph"), "rmaop_ctx_synchronize while capturing: %s: %s",
           rmaop_status_string(s1), msg1);
  RT_CHECK(s2 == RMAOP_ERR_UNSUPPORTED, "rmaop_vec_dot while capturing: %s", rmaop_status_string(s2));

  int round = 1;
  if (rt_all(capture_expected())) {
    capture_and_replay(p, x, y, st, 1, 4, 2, &round);
    capture_and_replay(p, x, y, st, 2, 3, 3, &round);
    capture_and_replay(p, x, y, st, 1, 3, 1, &round); /* a graph after eager executions of either parity */
  } else {
    g = NULL;
    CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    const rmaop_status s = rmaop_plan_begin(p, arr(x), arr(y), RMAOP_INSERT);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rmaop_ctx_last_error(ctx));
    const cudaError_t e = cudaStreamEndCapture(st, &g);
    if (g)
      cudaGraphDestroy(g);
    RT_CHECK(s == RMAOP_ERR_UNSUPPORTED && strstr(msg, "cannot be captured"),
             "plan begin while capturing on a path "
             "without capture: %s: %s",
             rmaop_status_string(s), msg);
    RT_CHECK(e == cudaSuccess, "the refused capture could not be ended: %s", cudaGetErrorString(e));
    double h[N];
    set_round(x, st, h, round);
    RT_OK(rmaop_plan_execute(p, arr(x), arr(y), RMAOP_INSERT)); /* nothing was left half done */
    check_round(y, st, round, "eager execution after a refused capture");
  }
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_plan_destroy(&p);
}
END_TEST

/* rmaop_allreduce_enqueue captured and replayed: each replay reduces the values of its round. */
START_TEST(test_allreduce_graph_capture) {
  if (!rt_all(capture_expected()))
    return; /* the refusal is test_plan_graph_capture's */
  void *sv = NULL;
  RT_OK(rmaop_ctx_get_stream(ctx, &sv));
  cudaStream_t st = (cudaStream_t)sv;
  double *in = NULL, *out = NULL;
  CUDA_OK(cudaMalloc((void **)&in, 3 * sizeof(double)));
  CUDA_OK(cudaMalloc((void **)&out, 3 * sizeof(double)));
  double h[3] = {1, 2, 3}, got[3];
  CUDA_OK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
  RT_OK(rmaop_allreduce_enqueue(ctx, in, out, 3, RMAOP_SUM)); /* first one: sets up (not capturable) */
  RT_OK(rmaop_ctx_synchronize(ctx));
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  RT_OK(rmaop_allreduce_enqueue(ctx, in, out, 3, RMAOP_SUM));
  RT_OK(rmaop_allreduce_enqueue(ctx, out, out, 3, RMAOP_MAX)); /* two reductions per replay: both halves */
  CUDA_OK(cudaStreamEndCapture(st, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 5; ++r) {
    for (int i = 0; i < 3; ++i)
      h[i] = (r + 1) * (rt_rank + 1.0) + i;
    CUDA_OK(cudaMemcpyAsync(in, h, sizeof h, cudaMemcpyHostToDevice, st));
    CUDA_OK(cudaGraphLaunch(ge, st));
    CUDA_OK(cudaMemcpyAsync(got, out, sizeof got, cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaStreamSynchronize(st));
    for (int i = 0; i < 3; ++i) {
      const double want = (r + 1) * rt_size * (rt_size + 1) / 2.0 + (double)i * rt_size;
      RT_CHECK(got[i] == want, "replay %d: sum[%d] = %.17g, want %.17g", r, i, got[i], want);
    }
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaFree(in);
  cudaFree(out);
}
END_TEST

/* Whether this run's derivatives put their ghost rows from kernels (RMAOP_HALO=kernel on rma over ipc, 2+ ranks):
 * their applications then need no plan and can be captured on every ipc path. From the environment the test list
 * sets. */
static int kernel_halo_expected(void) {
  const char *h = getenv("RMAOP_HALO"), *b = getenv("RMAOP_BACKEND"), *t = getenv("RMAOP_RMA_TRANSPORT");
  return rt_size > 1 && h && strcmp(h, "kernel") == 0 && b && strcmp(b, "rma") == 0 && t && strcmp(t, "ipc") == 0;
}

/* A derivative's, a Laplacian's and an N-D halo's forward and adjoint captured into one CUDA graph and replayed: each
 * replay is two new exchanges per operator (the exchange numbers live in device memory), and gives the eager
 * applications' values bit for bit on new data every round, with eager applications between the replays. Runs where
 * the exchanges go by kernel puts (where they go by plans, capture is test_plan_graph_capture's); succeeding at all
 * shows the plans are not used on the copy path, which refuses capture. */
enum { KOPS = 3 };
static const char *const kop_names[KOPS] = {"derivative", "Laplacian", "halo"};

/* v's local values, bitwise those of w? Names the first element that differs. */
static void same_vec(rmaop_vec v, rmaop_vec w, double *a, double *b, int round, int k, const char *what) {
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(v, &vi));
  RT_OK(rmaop_vec_read_local(v, a));
  RT_OK(rmaop_vec_read_local(w, b));
  int64_t bad = -1; /* one check per vector: the ranks' element counts differ */
  for (int64_t i = 0; i < vi.local_n && bad < 0; ++i)
    if (a[i] != b[i])
      bad = i;
  RT_CHECK(bad < 0, "round %d, %s %s: element %lld replayed %.17g, eager %.17g", round, kop_names[k], what,
           (long long)bad, bad < 0 ? 0 : a[bad], bad < 0 ? 0 : b[bad]);
}

START_TEST(test_kernel_halo_graph_capture) {
  if (!rt_all(kernel_halo_expected()))
    return;
  void *sv = NULL;
  RT_OK(rmaop_ctx_get_stream(ctx, &sv));
  cudaStream_t st = (cudaStream_t)sv;
  const rmaop_grid grid = {.ndim = 2, .dims = {5 * rt_size + 1, 7}, .local_rows = -1};
  rmaop_op A[KOPS] = {NULL};
  const rmaop_deriv_spec ds = {.grid = grid, .axis = 0, .kind = RMAOP_DERIV_CENTERED5, .edge = 1, .dtype = RMAOP_F64};
  RT_OK(rmaop_op_create_first_derivative(ctx, &ds, &A[0]));
  const rmaop_laplacian_spec ls = {
      .grid = grid, .weights = {1.5, -0.5}, .kind = RMAOP_DERIV_CENTERED3, .edge = 1, .dtype = RMAOP_F64};
  RT_OK(rmaop_op_create_laplacian(ctx, &ls, &A[1]));
  const rmaop_halo_spec hs = {
      .ndim = 2, .dims = {5 * rt_size + 1, 7}, .lo = {2, 1}, .hi = {1, 1}, .dtype = RMAOP_F64, .label = "halo"};
  RT_OK(rmaop_op_create_halo(ctx, &hs, &A[2]));
  rmaop_vec x[KOPS], y[KOPS], z[KOPS], ye[KOPS], ze[KOPS];
  int64_t most = 1;
  for (int k = 0; k < KOPS; ++k) {
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(A[k], &oi));
    RT_OK(rmaop_vec_create(oi.model, RMAOP_F64, &x[k]));
    RT_OK(rmaop_vec_create(oi.data, RMAOP_F64, &y[k]));
    RT_OK(rmaop_vec_create(oi.model, RMAOP_F64, &z[k]));
    RT_OK(rmaop_vec_create(oi.data, RMAOP_F64, &ye[k]));
    RT_OK(rmaop_vec_create(oi.model, RMAOP_F64, &ze[k]));
    rmaop_vec_info xi, yi;
    RT_OK(rmaop_vec_get_info(x[k], &xi));
    RT_OK(rmaop_vec_get_info(y[k], &yi));
    most = xi.local_n > most ? xi.local_n : most;
    most = yi.local_n > most ? yi.local_n : most;
  }
  double *h = calloc((size_t)most, sizeof *h), *a = calloc((size_t)most, sizeof *a),
         *b = calloc((size_t)most, sizeof *b);
  RT_CHECK(h && a && b, "out of memory");
  for (int k = 0; k < KOPS; ++k) { /* first applications eagerly */
    RT_OK(rmaop_op_apply(A[k], x[k], y[k]));
    RT_OK(rmaop_op_apply_adjoint(A[k], y[k], z[k]));
  }
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  rmaop_status sc = RMAOP_OK;
  for (int k = 0; k < KOPS && sc == RMAOP_OK; ++k) {
    sc = rmaop_op_apply(A[k], x[k], y[k]);
    if (sc == RMAOP_OK)
      sc = rmaop_op_apply_adjoint(A[k], y[k], z[k]);
  }
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rmaop_ctx_last_error(ctx));
  CUDA_OK(cudaStreamEndCapture(st, &g));
  RT_CHECK(sc == RMAOP_OK, "capturing the operators' applications: %s: %s", rmaop_status_string(sc), msg);
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  for (int round = 0; round < 4; ++round) {
    for (int k = 0; k < KOPS; ++k) {
      rmaop_vec_info xi;
      RT_OK(rmaop_vec_get_info(x[k], &xi));
      for (int64_t i = 0; i < xi.local_n; ++i)
        h[i] = creal(rt_value(1000 * rt_rank + i + 17 * round, 3));
      CUDA_OK(cudaMemcpyAsync(arr(x[k]), h, (size_t)xi.local_n * sizeof *h, cudaMemcpyHostToDevice, st));
      CUDA_OK(cudaStreamSynchronize(st)); /* h is refilled for the next operator */
    }
    CUDA_OK(cudaGraphLaunch(ge, st));
    for (int k = 0; k < KOPS; ++k) { /* the same data eagerly, between the replays */
      RT_OK(rmaop_op_apply(A[k], x[k], ye[k]));
      RT_OK(rmaop_op_apply_adjoint(A[k], ye[k], ze[k]));
    }
    for (int k = 0; k < KOPS; ++k) {
      same_vec(y[k], ye[k], a, b, round, k, "forward");
      same_vec(z[k], ze[k], a, b, round, k, "adjoint");
    }
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  free(h);
  free(a);
  free(b);
  for (int k = 0; k < KOPS; ++k) {
    rmaop_vec_destroy(&x[k]);
    rmaop_vec_destroy(&y[k]);
    rmaop_vec_destroy(&z[k]);
    rmaop_vec_destroy(&ye[k]);
    rmaop_vec_destroy(&ze[k]);
    rmaop_op_destroy(&A[k]);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gpu_plan");
  TCase *tc = tcase_create("plan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_plan_insert_add);
  tcase_add_test(tc, test_plan_reverse_is_transpose);
  tcase_add_test(tc, test_public_gpu_window);
  tcase_add_test(tc, test_public_gpu_epochs);
  tcase_add_test(tc, test_public_gpu_busy_target);
  tcase_add_test(tc, test_public_gpu_timeout);
  tcase_add_test(tc, test_plan_graph_capture);
  tcase_add_test(tc, test_allreduce_graph_capture);
  tcase_add_test(tc, test_kernel_halo_graph_capture);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, suite); }
