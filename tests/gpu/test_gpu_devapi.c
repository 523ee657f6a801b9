/* The device-side window API (label gpu): rmaop_win_device_handle() and the kernels' puts, signals and waits of
 * <rmaop/rmaop_device.cuh> (kernels in devapi_kernels.cu). References: the byte pattern each origin sends
 * (devapi_kernels.h), computed independently by the receiving kernel and by the host; the contract of
 * rmaop_device.cuh (data read after a wait is the data put before the matching signal); plan.h for the
 * handle's errors.
 *   ring     every rank puts into both neighbours with the thread, warp and block forms at odd sizes and
 *            misaligned offsets, signals, waits, and checks inside the kernel what arrived, iteration after
 *            iteration with double buffering by parity (stale data differs: the pattern has the iteration);
 *            the host then checks the whole window (the last two iterations, zeros elsewhere).
 *   litmus   message passing under stress: many blocks store, one release per block (signal_add) or one for
 *            the grid (the last block of a GPU-scope acq_rel counter), the peer's blocks check other blocks'
 *            words after their wait: 0 mismatches.
 *   inline   inline messages (the payload its own signal) both ways round the ring, by a thread and a warp, odd
 *            sizes, odd and aligned buffers, slots by parity: every byte received checked in the kernel.
 *   timeout  with a 2 s timeout rank 0 waits for a signal (then an inline message) rank 1 never sends: the kernel
 *            returns after ~2 s and the next rmaop_ctx_synchronize is RMAOP_ERR_TIMEOUT naming rank 1; the other
 *            ranks go on.
 *   errors   NULL arguments, a host window, a GPU window over MPI.
 * At 3-4 ranks GPUs may be shared (rank r on GPU r % GPUs, as the context picks): spinning kernels of two
 * processes then time-slice, so the iteration counts stay small. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "devapi_kernels.h"
#include "rmaop_test.h"

enum { RING_ITERS = 64, INLINE_ITERS = 500, LIT_ROUNDS = 200, LIT_BLOCKS = 16, WATCHDOG_S = 120 };

#define CUDA_OK(call)                                                                                                  \
  do {                                                                                                                 \
    cudaError_t ce__ = (call);                                                                                         \
    RT_CHECK(ce__ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(ce__));                                          \
  } while (0)

static void *stream_of(rmaop_ctx ctx) {
  void *s = NULL;
  RT_OK(rmaop_ctx_get_stream(ctx, &s));
  return s;
}

/* A window of `bytes` on ctx and its device handle, whose fields are checked against what the library says. */
static rmaop_win window(rmaop_ctx ctx, size_t bytes, void **base, rmaop_win_device *d) {
  rmaop_win win = NULL;
  RT_OK(rmaop_win_allocate(ctx, bytes, &win, base));
  memset(d, 0xff, sizeof *d);
  RT_OK(rmaop_win_device_handle(win, d));
  rmaop_ctx_info info;
  RT_OK(rmaop_ctx_get_info(ctx, &info));
  int ok = d->rank == rt_rank && d->size == rt_size && d->base[rt_rank] == (char *)*base &&
           d->signal == d->peer_signal[rt_rank] && d->signal != NULL && d->wait_record != NULL &&
           d->wait_claim != NULL && d->timeout_ns == (uint64_t)(info.timeout * 1e9);
  for (int r = 0; r < RMAOP_DEVICE_MAX_PEERS; ++r)
    ok = ok && (r < rt_size ? d->base[r] != NULL && d->bytes[r] == bytes && d->peer_signal[r] != NULL
                            : d->base[r] == NULL && d->bytes[r] == 0 && d->peer_signal[r] == NULL);
  RT_CHECK(ok, "rmaop_win_device_handle: rank %d size %d base %p (window %p) timeout %llu ns (context %g s)", d->rank,
           d->size, (void *)d->base[rt_rank], *base, (unsigned long long)d->timeout_ns, info.timeout);
  return win;
}

/* Kernel results: out[0] mismatches, out[1] a wait gave up. */
static unsigned long long *results(void) {
  unsigned long long *out = NULL;
  CUDA_OK(cudaMalloc((void **)&out, 2 * sizeof *out));
  CUDA_OK(cudaMemset(out, 0, 2 * sizeof *out));
  CUDA_OK(cudaDeviceSynchronize()); /* the legacy stream's memsets (here and the caller's) before the kernel */
  return out;
}

static void read_results(unsigned long long *dev, unsigned long long host[2]) {
  host[0] = host[1] = ~0ull;
  CUDA_OK(cudaMemcpy(host, dev, 2 * sizeof *host, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(dev));
}

START_TEST(test_ring) {
  rmaop_ctx ctx = rt_ctx();
  void *base = NULL;
  rmaop_win_device d;
  rmaop_win win = window(ctx, DK_RING_BYTES, &base, &d);
  unsigned char *src = NULL;
  CUDA_OK(cudaMalloc((void **)&src, 2 * DK_REGION));
  unsigned long long *out = results(), res[2];
  rt_watchdog(WATCHDOG_S, "test_gpu_devapi ring");
  RT_CHECK(dk_ring(&d, stream_of(ctx), RING_ITERS, src, out) == 0, "dk_ring did not launch");
  RT_OK(rmaop_ctx_synchronize(ctx));
  rt_watchdog(0, NULL);
  read_results(out, res);
  RT_CHECK(res[1] == 0, "a wait of the ring kernel gave up");
  RT_CHECK(res[0] == 0, "the ring kernel found %llu wrong bytes in %d iterations", res[0], RING_ITERS);

  /* The whole window on the host: the last two iterations in their halves, zeros everywhere else. */
  unsigned char *h = malloc(DK_RING_BYTES), *want = calloc(1, DK_RING_BYTES);
  CUDA_OK(cudaMemcpy(h, base, DK_RING_BYTES, cudaMemcpyDeviceToHost));
  const int right = (rt_rank + 1) % rt_size, left = (rt_rank + rt_size - 1) % rt_size;
  for (int it = RING_ITERS - 2; it < RING_ITERS; ++it)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < DK_NCHUNK; ++c) {
        const dk_chunk k = dk_chunk_of(c);
        unsigned char *p = want + (size_t)(it & 1) * DK_HALF + r * DK_REGION + k.dst;
        for (size_t i = 0; i < k.len; ++i)
          p[i] = dk_pattern(r == 0 ? left : right, r, (uint64_t)it, c, i);
      }
  size_t bad = 0, first = 0;
  for (size_t i = DK_RING_BYTES; i-- > 0;)
    if (h[i] != want[i])
      ++bad, first = i;
  RT_CHECK(bad == 0, "%zu bytes of the window differ from the last two iterations' puts (first at %zu: %u, want %u)",
           bad, first, h[first], want[first]);
  free(h);
  free(want);
  CUDA_OK(cudaFree(src));
  rmaop_win_destroy(&win);
  rmaop_ctx_destroy(&ctx);
}
END_TEST

START_TEST(test_litmus) {
  static const char *const names[2] = {"one signal_add per block", "one signal by the last block"};
  rmaop_ctx ctx = rt_ctx();
  for (int mode = DK_LIT_ADD; mode <= DK_LIT_LAST; ++mode) {
    void *base = NULL;
    rmaop_win_device d;
    rmaop_win win = window(ctx, dk_lit_bytes(LIT_BLOCKS), &base, &d); /* fresh signal words */
    unsigned *counter = NULL;
    CUDA_OK(cudaMalloc((void **)&counter, LIT_ROUNDS * sizeof *counter));
    CUDA_OK(cudaMemset(counter, 0, LIT_ROUNDS * sizeof *counter));
    unsigned long long *out = results(), res[2];
    rt_watchdog(WATCHDOG_S, "test_gpu_devapi litmus");
    RT_CHECK(dk_litmus(&d, stream_of(ctx), mode, LIT_ROUNDS, LIT_BLOCKS, counter, out) == 0, "dk_litmus did not launch");
    RT_OK(rmaop_ctx_synchronize(ctx));
    rt_watchdog(0, NULL);
    read_results(out, res);
    RT_CHECK(res[1] == 0, "litmus (%s): a wait gave up", names[mode]);
    RT_CHECK(res[0] == 0, "litmus (%s): %llu words read after the wait were not the ones put before the signal",
             names[mode], res[0]);
    CUDA_OK(cudaFree(counter));
    rmaop_win_destroy(&win);
  }
  rmaop_ctx_destroy(&ctx);
}
END_TEST

START_TEST(test_inline) {
  rmaop_ctx ctx = rt_ctx();
  void *base = NULL;
  rmaop_win_device d;
  rmaop_win win = window(ctx, DK_INLINE_WINDOW, &base, &d);
  unsigned char *scratch = NULL;
  CUDA_OK(cudaMalloc((void **)&scratch, 4 * DK_INLINE_SLOT));
  CUDA_OK(cudaMemset(scratch, 0, 4 * DK_INLINE_SLOT));
  unsigned long long *out = results(), res[2];
  rt_watchdog(WATCHDOG_S, "test_gpu_devapi inline");
  RT_CHECK(dk_inline(&d, stream_of(ctx), INLINE_ITERS, scratch, out) == 0, "dk_inline did not launch");
  RT_OK(rmaop_ctx_synchronize(ctx));
  rt_watchdog(0, NULL);
  read_results(out, res);
  RT_CHECK(res[1] == 0, "a wait of the inline kernel gave up");
  RT_CHECK(res[0] == 0, "the inline kernel received %llu wrong bytes in %d iterations", res[0], INLINE_ITERS);
  CUDA_OK(cudaFree(scratch));
  rmaop_win_destroy(&win);
  rmaop_ctx_destroy(&ctx);
}
END_TEST

START_TEST(test_timeout) {
  for (int inline_msg = 0; inline_msg < 2; ++inline_msg) {
    const double timeout_s = 2.0;
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.timeout = timeout_s;
    rmaop_ctx ctx = NULL;
    RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx));
    void *base = NULL;
    rmaop_win_device d;
    rmaop_win win = window(ctx, 4096, &base, &d);
    unsigned long long *out = results(), res[2] = {0, 0};
    void *stream = stream_of(ctx); /* collective (RT_OK inside): on every rank, not in rank 0's branch */
    rt_watchdog(30, "test_gpu_devapi timeout: a device-side wait did not give up");
    rmaop_status st = RMAOP_OK;
    double waited = 0;
    if (rt_rank == 0) { /* rank 1 never signals */
      const double t0 = MPI_Wtime();
      st = dk_wait(&d, stream, inline_msg, 1, 1, out) == 0 ? rmaop_ctx_synchronize(ctx) : RMAOP_ERR_CUDA;
      waited = MPI_Wtime() - t0;
    }
    rt_watchdog(0, NULL);
    read_results(out, res);
    RT_CHECK(rt_rank != 0 || st == RMAOP_ERR_TIMEOUT, "rmaop_ctx_synchronize after a wait in vain -> %s: %s",
             rmaop_status_string(st), rmaop_ctx_last_error(ctx));
    RT_CHECK(rt_rank != 0 || (waited >= 0.9 * timeout_s && waited < 5 * timeout_s),
             "the wait ended after %.2f s with a %.1f s timeout", waited, timeout_s);
    RT_CHECK(rt_rank != 0 || strstr(rmaop_ctx_last_error(ctx), "rank 1") != NULL,
             "the timeout message does not name rank 1: %s", rmaop_ctx_last_error(ctx));
    RT_CHECK(rt_rank != 0 || res[1] != 0, "%s returned 0 without the message",
             inline_msg ? "rmaop_dev_wait_inline" : "rmaop_dev_wait");
    /* Rank 0's context is failed now: its destroys leak; the others' wait for it at most the timeout. */
    MPI_Barrier(MPI_COMM_WORLD);
    rmaop_win_destroy(&win);
    rmaop_ctx_destroy(&ctx);
  }
}
END_TEST

START_TEST(test_errors) {
  rmaop_win_device d;
  RT_EXPECT(rmaop_win_device_handle(NULL, &d), RT_BIT(RMAOP_ERR_ARG));
  rmaop_ctx ctx = rt_ctx();
  void *base = NULL;
  rmaop_win win = NULL;
  RT_OK(rmaop_win_allocate(ctx, 64, &win, &base));
  RT_EXPECT(rmaop_win_device_handle(win, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("out (output) is NULL");
  rmaop_win_destroy(&win);
  rmaop_ctx_destroy(&ctx);

  /* A host window: no device handle. */
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.memory = "host";
  o.rma.transport = "auto"; /* ipc needs device memory */
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx));
  RT_OK(rmaop_win_allocate(ctx, 64, &win, &base));
  RT_EXPECT(rmaop_win_device_handle(win, &d), RT_BIT(RMAOP_ERR_UNSUPPORTED));
  RT_MESSAGE_HAS("a host window");
  rmaop_win_destroy(&win);
  rmaop_ctx_destroy(&ctx);

  /* A GPU window over MPI (a CUDA-aware MPI, fence): no device handle either; without a CUDA-aware MPI the
   * window itself is refused. */
  rmaop_ctx_options_init(&o);
  o.rma.transport = "mpi";
  o.rma.sync = "fence";
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx));
  const rmaop_status st = rmaop_win_allocate(ctx, 64, &win, &base);
  RT_CHECK(st == RMAOP_OK || st == RMAOP_ERR_UNSUPPORTED, "rmaop_win_allocate over mpi -> %s: %s",
           rmaop_status_string(st), rmaop_ctx_last_error(ctx));
  if (st == RMAOP_OK) {
    RT_EXPECT(rmaop_win_device_handle(win, &d), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    RT_MESSAGE_HAS("goes through MPI");
    rmaop_win_destroy(&win);
  }
  rmaop_ctx_destroy(&ctx);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("gpu_devapi");
  TCase *tc = tcase_create("gpu_devapi");
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_ring);
  tcase_add_test(tc, test_litmus);
  tcase_add_test(tc, test_inline);
  tcase_add_test(tc, test_timeout); /* last: it leaves rank 0's context failed (destroyed, leaked) */
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
