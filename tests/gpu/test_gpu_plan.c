/* Plans on device memory (label gpu): every backend, sync mode and transport moves GPU buffers. Reference:
 * the values each transfer must deliver, computed here from the senders' definition src_r[i] = v(r, i).
 * The pattern: to the right neighbour src[0..k) -> dst[k..2k), to the left neighbour src[n-k..n) ->
 * dst[0..k), to itself src[1..1+k) -> dst[2k..3k); at 1 rank all three are self transfers, at 2 ranks both
 * neighbours are one peer. INSERT and ADD (dst preset to w), and the reversed plan is the transpose
 * (<P x, y> = <x, P^T y>). Buffers are the arrays of device vectors (rmaop_vec_get_array). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    rmaop_win_free(&win);
  }
  rmaop_vec_destroy(&src);
  rmaop_vec_destroy(&dst);
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
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, suite); }
