/* rmaop-p2p-bench: one GPU-to-GPU message, four ways, side by side in one run (exactly 2 MPI ranks, one
 * GPU each: node rank modulo the visible devices, the rule the library uses).
 *
 *   mpiexec -n 2 rmaop-p2p-bench [--sync lock|fence|pscw] [--reps 50] [--reps-large 10] [--warmup 5]
 *                                [--lat-reps 1000] [--max-size 134217728] [--json FILE] [--ipc-path auto]
 *                                [--dev-iters 1000] [--device-only] [--no-nvshmem]
 *
 * Sizes 8 B, 32 B, ..., 8 B x 4^k, ..., 128 MiB; device buffers (cudaMalloc) everywhere.
 *   raw IPC copy   rank 1's buffer is mapped on rank 0 through CUDA IPC (cudaIpcGetMemHandle, MPI,
 *                  cudaIpcOpenMemHandle); rank 0 issues a batch of back-to-back cudaMemcpyAsync into it on
 *                  one stream, then cudaStreamSynchronize. GB/s = batch bytes / median batch time.
 *                  Latency: one 8 B copy + cudaStreamSynchronize.
 *   NCCL           ncclSend on rank 0 / ncclRecv on rank 1 (same stream semantics: a batch of back-to-back
 *                  messages, then cudaStreamSynchronize on both). Latency: half of an 8 B ping-pong round
 *                  trip (send, recv on one stream, one synchronize per round trip).
 *   rmaop win put  the public API only: a context (backend rma, memory device, transport ipc, sync from
 *                  --sync), rmaop_win_allocate of the largest size; one epoch per repetition: rank 0
 *                  rmaop_win_epoch_begin(1 target) + rmaop_win_put + rmaop_win_epoch_end, rank 1
 *                  rmaop_win_epoch_begin(1 origin) + rmaop_win_epoch_end. GB/s = bytes / median epoch time.
 *                  Latency: half of an 8 B ping-pong of two epochs (0 puts to 1, then 1 puts to 0).
 *                  Every public epoch end synchronizes the host (the API promises host visibility).
 *   rmaop plan     on the same context: rmaop_plan_create with one transfer of m bytes to the peer on each
 *                  rank (a symmetric exchange, the halo path); rmaop_plan_begin + rmaop_plan_end +
 *                  cudaDeviceSynchronize timed. GB/s = bytes each rank sends / median time.
 *                  Latency also as NCCL's is measured: two one-way 8 B plans (0 -> 1, then 1 forwards what
 *                  it got back to 0), stream-ordered, one cudaDeviceSynchronize per round trip; half of it.
 *   --ipc-path       the ipc transport's path for the two rmaop columns (auto | copy | kernel; default auto).
 *                  The 8 B latencies of rmaop are also measured on the other path (copy <-> kernel) in the
 *                  same run, on a second context and window, so the two are compared side by side.
 *   device-initiated  (p2p_device.cu) one persistent kernel per rank, no host step: rank 0 puts m bytes into
 *                  rank 1's window and signals (<rmaop/rmaop_device.cuh>: rmaop_dev_put_signal by one thread,
 *                  rmaop_dev_put_signal_block by a block of 256), rank 1 waits and answers the same way;
 *                  --dev-iters round trips per launch timed on the GPU's global timer after 100 untimed ones;
 *                  half a round trip, median of --reps launches; 8 B, 64 B, 1 KiB, 64 KiB, and a bare signal
 *                  (no payload). Inline messages (rmaop_dev_put_inline / rmaop_dev_wait_inline: the payload
 *                  carries its own signal, no fence; the wait copies it out) by one thread up to 1 KiB and by
 *                  a warp (_warp forms). Beside it NVSHMEM's nvshmem_putmem_signal(_block) + nvshmem_signal_wait_until
 * in the same kernel (p2p_nvshmem.cu; built when CMake finds NVSHMEM; --no-nvshmem skips it), and this run's NCCL and
 * rmaop epoch/plan 8 B figures. Then a message-passing litmus: 32 blocks store 8 KiB each per round, then one release
 * per block (signal_add), one for the grid (the last block of an acq_rel counter), or none (relaxed stores: shows
 * whether the release matters here; its mismatches are reported, not a failure); the peer's blocks check after their
 * wait.
 *                  --device-only runs this part alone.
 * Timing: every repetition starts after an MPI_Barrier; t = MPI_Wtime around the host-synchronized region;
 * a repetition counts as its slowest rank (MPI_MAX over ranks); warm-up excluded; median over
 * --reps repetitions (--reps-large for sizes >= 32 MiB). After each path and size rank 1 checks the first
 * and last byte it received. NCCL NVLS (multicast) is never used: NCCL_NVLS_ENABLE defaults to 0 here.
 * A path that fails prints the library's (or CUDA's, NCCL's) message below the table; the others go on. */
#define _POSIX_C_SOURCE 200809L
#include <rmaop/rmaop.h>

#include <cuda_runtime.h>
#ifdef RMAOP_BENCH_HAVE_NCCL
#include <nccl.h>
#endif

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

enum { RAW = 0, NCCLP, PUT, PLAN, NPATH };
#define MAXS 24
#define ERRLEN 1024

static const char *const path_key[NPATH] = {"raw_ipc_copy", "nccl", "rmaop_win_put", "rmaop_plan"};
static const char *const path_title[NPATH] = {"raw IPC copy GB/s", "NCCL GB/s", "rmaop win put GB/s", "rmaop plan GB/s"};

typedef struct {
  int alive;          /* 1 while the path can run */
  char why[ERRLEN];   /* rank 0: why it stopped ("" when it did not) */
  int ran[MAXS];      /* 1: measured at this size */
  double t[MAXS];     /* median seconds per repetition */
  double bw[MAXS];    /* bytes/s */
  int batch[MAXS], reps[MAXS], check[MAXS]; /* check: 1 ok, 0 wrong data, -1 not checked */
} column;

static int rank, peer;
static char err[ERRLEN]; /* this rank's last failure */

/* Buffers and handles of the paths. */
static void *sbuf, *rbuf, *peer_rbuf; /* peer_rbuf: rank 1's rbuf mapped on rank 0 (raw path) */
static cudaStream_t stream;
static rmaop_ctx ctx;
static rmaop_win win;
static void *wbase;
static rmaop_plan plan;
static rmaop_plan ping, pong; /* 8 B, rank 0 -> 1 and rank 1 -> 0: the stream-ordered ping-pong */
static int cur_batch = 1;
static int dev_iters = 1000, dev_reps = 50; /* the device-initiated ping-pong: round trips per launch, launches */
#ifdef RMAOP_BENCH_HAVE_NCCL
static ncclComm_t nccl;
#endif

#define CU(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      snprintf(err, sizeof err, "%s: %s", #call, cudaGetErrorString(e_));                          \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define RM(call)                                                                                   \
  do {                                                                                             \
    rmaop_status s_ = (call);                                                                      \
    if (s_ != RMAOP_OK) {                                                                          \
      snprintf(err, sizeof err, "%s: %s", #call, rmaop_ctx_last_error(ctx)); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#ifdef RMAOP_BENCH_HAVE_NCCL
#define NC(call)                                                                                   \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      snprintf(err, sizeof err, "%s: %s (%s)", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#endif

/* Both ranks learn whether either failed; rank 0 gets the failing rank's message (its own first). */
static int agree(int failed, char *why) {
  int f[2] = {0, 0};
  MPI_Allgather(&failed, 1, MPI_INT, f, 1, MPI_INT, MPI_COMM_WORLD);
  if (!f[0] && !f[1]) return 0;
  if (rank == 0) {
    if (f[0]) snprintf(why, ERRLEN, "rank 0: %.*s", ERRLEN - 16, err);
    else {
      char m[ERRLEN];
      MPI_Recv(m, ERRLEN, MPI_CHAR, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      m[ERRLEN - 1] = '\0';
      snprintf(why, ERRLEN, "rank 1: %.*s", ERRLEN - 16, m);
    }
  } else if (!f[0]) {
    MPI_Send(err, ERRLEN, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
  }
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- the operations: 0 on success, else 1 with the message in err ---- */

static int op_raw(size_t m) {
  if (rank == 0) {
    for (int i = 0; i < cur_batch; ++i) CU(cudaMemcpyAsync(peer_rbuf, sbuf, m, cudaMemcpyDeviceToDevice, stream));
    CU(cudaStreamSynchronize(stream));
  }
  return 0;
}

#ifdef RMAOP_BENCH_HAVE_NCCL
static int op_nccl(size_t m) {
  for (int i = 0; i < cur_batch; ++i) {
    if (rank == 0) NC(ncclSend(sbuf, m, ncclInt8, peer, nccl, stream));
    else NC(ncclRecv(rbuf, m, ncclInt8, peer, nccl, stream));
  }
  CU(cudaStreamSynchronize(stream));
  return 0;
}

static int op_nccl_pingpong(size_t m) {
  if (rank == 0) {
    NC(ncclSend(sbuf, m, ncclInt8, peer, nccl, stream));
    NC(ncclRecv(rbuf, m, ncclInt8, peer, nccl, stream));
  } else {
    NC(ncclRecv(rbuf, m, ncclInt8, peer, nccl, stream));
    NC(ncclSend(sbuf, m, ncclInt8, peer, nccl, stream));
  }
  CU(cudaStreamSynchronize(stream));
  return 0;
}
#endif

/* One epoch in which @p from puts m bytes into the other rank's window. */
static int epoch(int from, size_t m) {
  if (rank == from) {
    RM(rmaop_win_epoch_begin(win, 1, &peer, 0, NULL));
    rmaop_status s = rmaop_win_put(win, sbuf, m, peer, 0);
    if (s != RMAOP_OK) {
      snprintf(err, sizeof err, "rmaop_win_put(%zu B): %s", m, rmaop_ctx_last_error(ctx));
      rmaop_win_epoch_end(win); /* close the epoch even after a failed put, so the peer is not left waiting */
      return 1;
    }
    RM(rmaop_win_epoch_end(win));
  } else {
    RM(rmaop_win_epoch_begin(win, 0, NULL, 1, &peer));
    RM(rmaop_win_epoch_end(win));
  }
  return 0;
}

static int op_put(size_t m) { return epoch(0, m); }
static int op_put_pingpong(size_t m) { return epoch(0, m) || epoch(1, m); }

static int op_plan(size_t m) {
  (void)m;
  RM(rmaop_plan_begin(plan, sbuf, rbuf, RMAOP_INSERT));
  RM(rmaop_plan_end(plan));
  CU(cudaDeviceSynchronize()); /* host-synchronized whatever plan_end leaves on the library's stream */
  return 0;
}

/* One 8 B round trip as two one-way plans (rank 1 forwards what it received), enqueued on the stream. */
static int plan_round_trip(void) {
  RM(rmaop_plan_begin(ping, sbuf, rbuf, RMAOP_INSERT));
  RM(rmaop_plan_end(ping));
  RM(rmaop_plan_begin(pong, rank == 1 ? rbuf : sbuf, rank == 1 ? sbuf : rbuf, RMAOP_INSERT));
  RM(rmaop_plan_end(pong));
  return 0;
}

/* The round trip, then one stream synchronize: the structure of NCCL's ping-pong above (no host
 * synchronization between the halves). */
static int op_plan_pingpong(size_t m) {
  (void)m;
  if (plan_round_trip())
    return 1;
  CU(cudaDeviceSynchronize());
  return 0;
}

/* warmup + reps repetitions of op; *med = median over repetitions of the slowest rank's time.
 * Returns 1 (on both ranks) when op failed anywhere, with rank 0's message in why. */
static int measure(int (*op)(size_t), size_t m, int warmup, int reps, double *med, char *why) {
  double *t = calloc((size_t)reps, sizeof *t), *tmax = calloc((size_t)reps, sizeof *tmax);
  int failed = 0;
  for (int r = 0; r < warmup + reps && !failed; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int f = op(m);
    double t1 = MPI_Wtime();
    if (r >= warmup) t[r - warmup] = t1 - t0;
    failed = agree(f, why); /* outside the timed region */
  }
  if (!failed) {
    MPI_Allreduce(t, tmax, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *med = median(tmax, reps);
  }
  free(t);
  free(tmax);
  return failed;
}

/* ---- CUDA graphs: the same round trips captured once and replayed (one launch per graph) ---- */
enum { GRAPH_RT = 64 };               /* round trips in the long graph */
static cudaGraphExec_t graph_exec[2]; /* [0]: one round trip, [1]: GRAPH_RT round trips */
static cudaStream_t graph_stream;     /* the stream the graphs were captured on */
static int cur_graph;

static int op_graph(size_t m) {
  (void)m;
  CU(cudaGraphLaunch(graph_exec[cur_graph], graph_stream));
  CU(cudaStreamSynchronize(graph_stream));
  return 0;
}

/* Captures `n` round trips made by `rt` on `st` into graph_exec[which]. */
static int capture(int (*rt)(void), int n, cudaStream_t st, int which) {
  cudaGraph_t g = NULL;
  CU(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  int f = 0;
  for (int i = 0; i < n && !f; ++i)
    f = rt();
  cudaError_t e = cudaStreamEndCapture(st, &g);
  if (f) {
    if (g)
      cudaGraphDestroy(g);
    return 1;
  }
  CU(e);
  e = cudaGraphInstantiate(&graph_exec[which], g, 0);
  cudaGraphDestroy(g);
  CU(e);
  return 0;
}

static void drop_graphs(void) {
  for (int i = 0; i < 2; ++i)
    if (graph_exec[i])
      cudaGraphExecDestroy(graph_exec[i]), graph_exec[i] = NULL;
}

/* Half a round trip from the one-round-trip graph (out[0]) and from the GRAPH_RT one (out[1]), each
 * replayed with one synchronize per launch. 0 on success (both ranks agree). */
static int graph_latency(int (*rt)(void), cudaStream_t st, int lat_reps, double out[2], char *why) {
  graph_stream = st;
  int f = capture(rt, 1, st, 0);
  if (!f)
    f = capture(rt, GRAPH_RT, st, 1);
  f = agree(f, why);
  cur_graph = 0;
  if (!f)
    f = measure(op_graph, 8, 20, lat_reps, &out[0], why);
  cur_graph = 1;
  if (!f)
    f = measure(op_graph, 8, 5, lat_reps / 10 > 10 ? lat_reps / 10 : 10, &out[1], why);
  out[0] *= 0.5;
  out[1] *= 0.5 / GRAPH_RT;
  drop_graphs();
  return f;
}

#ifdef RMAOP_BENCH_HAVE_NCCL
static int nccl_round_trip(void) {
  if (rank == 0) {
    NC(ncclSend(sbuf, 8, ncclInt8, peer, nccl, stream));
    NC(ncclRecv(rbuf, 8, ncclInt8, peer, nccl, stream));
  } else {
    NC(ncclRecv(rbuf, 8, ncclInt8, peer, nccl, stream));
    NC(ncclSend(sbuf, 8, ncclInt8, peer, nccl, stream));
  }
  return 0;
}
#endif

/* The stream-ordered 8 B plan ping-pong on the current context: creates the two one-way plans, measures
 * (half a round trip in *half), checks that rank 0 got its own 8 bytes back, frees the plans. 0 on success
 * (both ranks agree). */
static int plan_pingpong_latency(int lat_reps, double *half, double graph[2], char *why) {
  rmaop_transfer tr = {peer, 0, 0, 1};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 1, .dst_len = 1, .sends = &tr, .nrecvs = -1};
  int f = 0;
  spec.nsends = rank == 0, spec.label = "p2p.ping";
  if (rmaop_plan_create(ctx, &spec, &ping) != RMAOP_OK) {
    snprintf(err, sizeof err, "rmaop_plan_create(8 B, 0 -> 1): %s", rmaop_ctx_last_error(ctx));
    ping = NULL;
    f = 1;
  }
  spec.nsends = rank == 1, spec.label = "p2p.pong";
  if (!f && rmaop_plan_create(ctx, &spec, &pong) != RMAOP_OK) {
    snprintf(err, sizeof err, "rmaop_plan_create(8 B, 1 -> 0): %s", rmaop_ctx_last_error(ctx));
    pong = NULL;
    f = 1;
  }
  const double pat = 1234.5 + rank;
  if (!f && rank == 0 && (cudaMemcpy(sbuf, &pat, 8, cudaMemcpyHostToDevice) != cudaSuccess ||
                          cudaMemset(rbuf, 0, 8) != cudaSuccess)) {
    snprintf(err, sizeof err, "setting the ping-pong's 8 bytes: %s", cudaGetErrorString(cudaGetLastError()));
    f = 1;
  }
  f = agree(f, why);
  if (!f) f = measure(op_plan_pingpong, 8, 20, lat_reps, half, why);
  if (!f) {
    double back = 0;
    int bad = rank == 0 && (cudaMemcpy(&back, rbuf, 8, cudaMemcpyDeviceToHost) != cudaSuccess || back != pat);
    if (bad) snprintf(err, sizeof err, "plan ping-pong: rank 0 got %g back, sent %g", back, pat);
    f = agree(bad, why);
  }
  *half *= 0.5;
  if (!f && graph) { /* the same round trips from CUDA graphs (the kernel path captures; else the message) */
    void *st = NULL;
    const double pat2 = pat + 1;
    int g = rmaop_ctx_get_stream(ctx, &st) != RMAOP_OK;
    if (g)
      snprintf(err, sizeof err, "rmaop_ctx_get_stream: %s", rmaop_ctx_last_error(ctx));
    if (!g && rank == 0 &&
        (cudaMemcpy(sbuf, &pat2, 8, cudaMemcpyHostToDevice) != cudaSuccess || cudaMemset(rbuf, 0, 8) != cudaSuccess)) {
      snprintf(err, sizeof err, "setting the ping-pong's 8 bytes: %s", cudaGetErrorString(cudaGetLastError()));
      g = 1;
    }
    char gwhy[ERRLEN] = "";
    g = agree(g, gwhy);
    if (!g)
      g = graph_latency(plan_round_trip, (cudaStream_t)st, lat_reps, graph, gwhy);
    if (!g) {
      double back = 0;
      int bad = rank == 0 && (cudaMemcpy(&back, rbuf, 8, cudaMemcpyDeviceToHost) != cudaSuccess || back != pat2);
      if (bad)
        snprintf(err, sizeof err, "plan ping-pong from a CUDA graph: rank 0 got %g back, sent %g", back, pat2);
      g = agree(bad, gwhy);
    }
    if (g) {
      graph[0] = graph[1] = 0;
      if (rank == 0)
        printf("(rmaop plan ping-pong from CUDA graphs: n/a: %s)\n", gwhy);
    }
  }
  if (ping) rmaop_plan_destroy(&ping);
  if (pong) rmaop_plan_destroy(&pong);
  return f;
}

/* The destination rank 1 reads for path p. */
static void *dest_of(int p) { return p == PUT ? wbase : rbuf; }

/* Before a measurement: rank 0's source holds pattern pat, rank 1's destination zeros. */
static int prepare(int p, size_t m, unsigned char pat) {
  if (rank == 0) CU(cudaMemset(sbuf, pat, m));
  else CU(cudaMemset(dest_of(p), 0, m));
  CU(cudaDeviceSynchronize());
  return 0;
}

/* After: rank 1 checks the first and last byte; 1 ok, 0 wrong (same on both ranks). */
static int check(int p, size_t m, unsigned char pat) {
  int ok = 1;
  if (rank == 1) {
    unsigned char a = 0, b = 0;
    const unsigned char *d = dest_of(p);
    if (cudaMemcpy(&a, d, 1, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(&b, d + m - 1, 1, cudaMemcpyDeviceToHost) != cudaSuccess || a != pat || b != pat)
      ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 1, MPI_COMM_WORLD);
  return ok;
}

static void fmt_size(size_t m, char *out, size_t len) {
  if (m >= (1u << 20)) snprintf(out, len, "%zu MiB", m >> 20);
  else if (m >= 1024) snprintf(out, len, "%zu KiB", m >> 10);
  else snprintf(out, len, "%zu B", m);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc((unsigned char)*s < 32 ? ' ' : *s, f);
  }
  fputc('"', f);
}

/* ---- device-initiated ping-pong and litmus (p2p_device.cu, p2p_nvshmem.cu) ---- */

size_t p2pd_litmus_bytes(int nblocks);
int p2pd_pingpong(const rmaop_win_device *w, void *stream, int form, const void *src, void *recv, size_t bytes,
                  int warm, int iters, unsigned long long base, unsigned long long *out);
int p2pd_litmus(const rmaop_win_device *w, void *stream, int mode, int rounds, int nblocks, unsigned *counter,
                unsigned long long *out);
#ifdef RMAOP_BENCH_HAVE_NVSHMEM
size_t p2pn_uid_size(void);
int p2pn_get_uid(void *uid, char *err, size_t errlen);
int p2pn_init(int rank, int nranks, const void *uid, size_t max_bytes, char *err, size_t errlen);
int p2pn_pingpong(int form, size_t bytes, int warm, int iters, double *seconds, int *bad, char *err, size_t errlen);
void p2pn_fini(void);
#endif

/* p2p_device.cu's forms; p2p_nvshmem.cu has the first three (NVSHMEM has no inline messages) */
enum { DEV_SIGNAL = 0, DEV_THREAD, DEV_BLOCK, DEV_INLINE, DEV_INLINE_WARP, NDFORM };
enum { LIB_RMAOP = 0, LIB_NVSHMEM, NDLIB };
enum { LIT_ADD = 0, LIT_LAST, LIT_RELAXED, NLIT };         /* p2p_device.cu's litmus modes */
enum { NDSIZE = 4, DEV_WARM = 100, LIT_ROUNDS = 1000, LIT_BLOCKS = 32 };
static const size_t dev_sizes[NDSIZE] = {8, 64, 1024, 65536};
#define DEV_MAX ((size_t)65536)
#define DEV_INLINE_THREAD_MAX ((size_t)1024) /* one thread storing 64 KiB word by word says nothing new */
static const char *const lit_name[NLIT] = {"signal_add by every block (a release per block)",
                                           "signal by the last block of an acq_rel counter (one release)",
                                           "no release (relaxed counter and signal store)"};

typedef struct {
  int iters, reps;
  double half[NDLIB][NDFORM][NDSIZE]; /* rank 0: seconds per half round trip (median); 0: not measured */
  int bad[NDLIB][NDFORM][NDSIZE];     /* a rank did not find the peer's bytes after the run */
  char why[NDLIB][ERRLEN];            /* why a library's rows stopped ("" when they did not) */
  long long litmus[NLIT];             /* mismatches; -1: not run */
  char lit_why[ERRLEN];
} devres;

static rmaop_win dwin;
static void *dbase;
static unsigned char *dsrc, *drecv; /* drecv: where the inline forms' waits copy the payload */
static unsigned long long *dout;

/* One row of rmaop's ping-pong: both ranks, `reps` launches after one untimed. 0 on success (both agree). */
static int dev_row_rmaop(const rmaop_win_device *h, void *st, int form, size_t m, devres *d, unsigned long long *next,
                         double *half, int *bad, char *why) {
  double *t = calloc((size_t)d->reps, sizeof *t);
  int f = 0;
  if (cudaMemset(dbase, 0, 2 * DEV_MAX) != cudaSuccess || cudaMemset(drecv, 0, DEV_MAX) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    f = 1, snprintf(err, sizeof err, "clearing the window: %s", cudaGetErrorString(cudaGetLastError()));
  f = agree(f, why); /* cleared on both ranks before either puts */
  for (int r = -1; r < d->reps && !f; ++r) {
    unsigned long long res[2] = {0, 0};
    MPI_Barrier(MPI_COMM_WORLD);
    cudaError_t e = cudaMemsetAsync(dout, 0, sizeof res, (cudaStream_t)st);
    if (e == cudaSuccess)
      e = (cudaError_t)p2pd_pingpong(h, st, form, dsrc, drecv, m, DEV_WARM, d->iters, *next, dout);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)st);
    if (e == cudaSuccess) e = cudaMemcpy(res, dout, sizeof res, cudaMemcpyDeviceToHost);
    *next += (unsigned long long)(DEV_WARM + d->iters);
    int g = e != cudaSuccess || res[1] != 0;
    if (e != cudaSuccess) snprintf(err, sizeof err, "device ping-pong (%zu B): %s", m, cudaGetErrorString(e));
    else if (res[1]) snprintf(err, sizeof err, "device ping-pong (%zu B): a device-side wait gave up after the "
                                               "context's timeout", m);
    if (r >= 0) t[r] = 1e-9 * (double)res[0] / d->iters / 2;
    f = agree(g, why);
  }
  if (!f) {
    *half = rank == 0 ? median(t, d->reps) : 0;
    int b = 0;
    if (form != DEV_SIGNAL) { /* the last message here came from the peer: in the window, or copied out of it */
      unsigned char a = 0, z = 0;
      const unsigned char want = (unsigned char)(0x20 + peer);
      const char *got = form >= DEV_INLINE ? (const char *)drecv : (const char *)dbase;
      b = cudaMemcpy(&a, got, 1, cudaMemcpyDeviceToHost) != cudaSuccess ||
          cudaMemcpy(&z, got + m - 1, 1, cudaMemcpyDeviceToHost) != cudaSuccess || a != want || z != want;
    }
    MPI_Allreduce(&b, bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  free(t);
  return f;
}

#ifdef RMAOP_BENCH_HAVE_NVSHMEM
static int dev_row_nvshmem(int form, size_t m, devres *d, double *half, int *bad, char *why) {
  double *t = calloc((size_t)d->reps, sizeof *t);
  int f = 0, b = 0;
  for (int r = -1; r < d->reps && !f; ++r) {
    double sec = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const int g = p2pn_pingpong(form, m, DEV_WARM, d->iters, &sec, &b, err, sizeof err);
    if (r >= 0) t[r] = sec / d->iters / 2;
    f = agree(g, why);
  }
  if (!f) {
    *half = rank == 0 ? median(t, d->reps) : 0;
    MPI_Allreduce(&b, bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  free(t);
  return f;
}
#endif

/* One litmus mode on a window of its own (fresh signal words); *mismatches summed over both ranks. */
static int dev_litmus(void *st, int mode, long long *mismatches, char *why) {
  rmaop_win lw = NULL;
  void *lbase = NULL;
  rmaop_win_device h;
  unsigned *counter = NULL;
  unsigned long long res[2] = {0, 0};
  int f = 0;
  if (rmaop_win_allocate(ctx, p2pd_litmus_bytes(LIT_BLOCKS), &lw, &lbase) != RMAOP_OK ||
      rmaop_win_device_handle(lw, &h) != RMAOP_OK)
    f = 1, snprintf(err, sizeof err, "litmus window: %s", rmaop_ctx_last_error(ctx));
  if (!f && (cudaMalloc((void **)&counter, LIT_ROUNDS * sizeof *counter) != cudaSuccess ||
             cudaMemset(counter, 0, LIT_ROUNDS * sizeof *counter) != cudaSuccess ||
             cudaMemset(dout, 0, sizeof res) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess))
    f = 1, snprintf(err, sizeof err, "litmus set-up: %s", cudaGetErrorString(cudaGetLastError()));
  f = agree(f, why);
  if (!f) {
    MPI_Barrier(MPI_COMM_WORLD);
    cudaError_t e = (cudaError_t)p2pd_litmus(&h, st, mode, LIT_ROUNDS, LIT_BLOCKS, counter, dout);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)st);
    if (e == cudaSuccess) e = cudaMemcpy(res, dout, sizeof res, cudaMemcpyDeviceToHost);
    int g = e != cudaSuccess || res[1] != 0;
    if (g) snprintf(err, sizeof err, "litmus: %s", e != cudaSuccess ? cudaGetErrorString(e) : "a wait gave up");
    f = agree(g, why);
    long long mine = (long long)res[0];
    MPI_Allreduce(&mine, mismatches, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  if (counter) cudaFree(counter);
  if (lw) rmaop_win_destroy(&lw);
  return f;
}

/* Every device-initiated measurement, into *d (rank 0's figures). Returns 1 when data arrived wrong anywhere on a
 * path that promises it (the no-release litmus excepted). */
static int device_section(devres *d, int nvshmem) {
  memset(d, 0, sizeof *d);
  for (int k = 0; k < NLIT; ++k) d->litmus[k] = -1;
  d->iters = dev_iters, d->reps = dev_reps;
  void *st = NULL;
  rmaop_win_device h;
  int f = 0, wrong_here = 0;
  if (!ctx) f = 1, snprintf(err, sizeof err, "no rmaop context");
  if (!f && (rmaop_ctx_get_stream(ctx, &st) != RMAOP_OK ||
             rmaop_win_allocate(ctx, 2 * DEV_MAX, &dwin, &dbase) != RMAOP_OK || /* an inline message's words */
             rmaop_win_device_handle(dwin, &h) != RMAOP_OK))
    f = 1, snprintf(err, sizeof err, "%s", rmaop_ctx_last_error(ctx));
  if (!f &&
      (cudaMalloc((void **)&dsrc, DEV_MAX) != cudaSuccess || cudaMemset(dsrc, 0x20 + rank, DEV_MAX) != cudaSuccess ||
       cudaMalloc((void **)&drecv, DEV_MAX) != cudaSuccess ||
       cudaMalloc((void **)&dout, 2 * sizeof *dout) != cudaSuccess))
    f = 1, snprintf(err, sizeof err, "device buffers: %s", cudaGetErrorString(cudaGetLastError()));
  if (agree(f, d->why[LIB_RMAOP])) {
    snprintf(d->lit_why, ERRLEN, "%s", d->why[LIB_RMAOP]);
    return 0;
  }
  unsigned long long next = 0; /* signal values used so far on dwin's words (the same on both ranks) */
  int dead = 0;                /* a row failed (agreed: the same on both ranks, unlike the message) */
  for (int form = 0; form < NDFORM && !dead; ++form)
    for (int i = 0; i < (form == DEV_SIGNAL ? 1 : NDSIZE) && !dead; ++i) {
      if (form == DEV_INLINE && dev_sizes[i] > DEV_INLINE_THREAD_MAX)
        continue;
      dead = dev_row_rmaop(&h, st, form, dev_sizes[i], d, &next, &d->half[LIB_RMAOP][form][i],
                           &d->bad[LIB_RMAOP][form][i], d->why[LIB_RMAOP]);
      wrong_here |= !dead && d->bad[LIB_RMAOP][form][i];
    }
#ifdef RMAOP_BENCH_HAVE_NVSHMEM
  if (nvshmem) {
    unsigned char uid[512];
    int g = p2pn_uid_size() > sizeof uid;
    if (g) snprintf(err, sizeof err, "NVSHMEM's unique id is larger than %zu bytes", sizeof uid);
    if (!g && rank == 0) g = p2pn_get_uid(uid, err, sizeof err);
    int g0 = g;
    MPI_Bcast(&g0, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(uid, (int)sizeof uid, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!g0) g = p2pn_init(rank, 2, uid, DEV_MAX, err, sizeof err);
    const int up = !agree(g0 ? 1 : g, d->why[LIB_NVSHMEM]); /* else NVSHMEM stays as it is: its finalize is collective */
    dead = !up;
    for (int form = 0; form < DEV_INLINE && !dead; ++form)
      for (int i = 0; i < (form == DEV_SIGNAL ? 1 : NDSIZE) && !dead; ++i) {
        dead = dev_row_nvshmem(form, dev_sizes[i], d, &d->half[LIB_NVSHMEM][form][i], &d->bad[LIB_NVSHMEM][form][i],
                               d->why[LIB_NVSHMEM]);
        wrong_here |= !dead && d->bad[LIB_NVSHMEM][form][i];
      }
    if (up) p2pn_fini();
  } else {
    snprintf(d->why[LIB_NVSHMEM], ERRLEN, "skipped (--no-nvshmem)");
  }
#else
  (void)nvshmem;
  snprintf(d->why[LIB_NVSHMEM], ERRLEN, "not built: CMake did not find NVSHMEM (RMAOP_NVSHMEM_HOME, or pip install "
                                        "nvidia-nvshmem-cu13)");
#endif
  for (int k = 0; k < NLIT; ++k)
    if (dev_litmus(st, k, &d->litmus[k], d->lit_why)) {
      d->litmus[k] = -1;
      break;
    }
  wrong_here |= d->litmus[LIT_ADD] > 0 || d->litmus[LIT_LAST] > 0;
  return wrong_here;
}

static void print_device(const devres *d, const double lat_nccl, const double lat_epoch, const double plan_pp) {
  static const char *const lib_name[NDLIB] = {"rmaop", "NVSHMEM"};
  printf("device-initiated ping-pong: one persistent kernel per rank, %d round trips per launch after %d untimed, "
         "GPU timer; half a round trip in us, median of %d launches; thread: one thread puts and signals, block: "
         "256 threads put, one signals; inline: the payload carries its own signal (no fence), sent and received "
         "by one thread or a warp\n",
         d->iters, DEV_WARM, d->reps);
  printf("%24s | %12s | %12s | %13s | %12s | %14s | %14s\n", "message", "rmaop thread", "rmaop block", "inline thread",
         "inline warp", "NVSHMEM thread", "NVSHMEM block");
  for (int row = 0; row <= NDSIZE; ++row) {
    char label[32];
    if (row == 0) snprintf(label, sizeof label, "signal only (no payload)");
    else fmt_size(dev_sizes[row - 1], label, sizeof label);
    printf("%24s", label);
    for (int lib = 0; lib < NDLIB; ++lib)
      for (int form = DEV_THREAD; form < (lib == LIB_RMAOP ? NDFORM : DEV_INLINE); ++form) {
        const int w = lib == LIB_NVSHMEM ? 14 : form == DEV_INLINE ? 13 : 12;
        const int f = row == 0 ? DEV_SIGNAL : form, i = row == 0 ? 0 : row - 1;
        if ((row == 0 && form != DEV_THREAD) || (row > 0 && form == DEV_INLINE && dev_sizes[i] > DEV_INLINE_THREAD_MAX))
          printf(" | %*s", w, "-");
        else if (d->half[lib][f][i] > 0) printf(" | %*.2f%s", w - 1, 1e6 * d->half[lib][f][i], d->bad[lib][f][i] ? "!" : " ");
        else printf(" | %*s", w, "n/a");
      }
    printf("\n");
  }
  for (int lib = 0; lib < NDLIB; ++lib)
    if (d->why[lib][0]) printf("%s device-initiated: n/a from here on: %s\n", lib_name[lib], d->why[lib]);
  /* the 8 B row's best form of each library (0: not measured), against the target of 1.5 us and NVSHMEM */
  static const char *const form_name[NDFORM] = {"signal", "put + signal, thread", "put + signal, block",
                                                "inline, thread", "inline, warp"};
  double best[NDLIB] = {0, 0};
  int best_form = DEV_THREAD;
  for (int lib = 0; lib < NDLIB; ++lib)
    for (int form = DEV_THREAD; form < NDFORM; ++form) {
      const double t = d->half[lib][form][0];
      if (t > 0 && !d->bad[lib][form][0] && (best[lib] == 0 || t < best[lib])) {
        best[lib] = t;
        if (lib == LIB_RMAOP)
          best_form = form;
      }
    }
  if (best[LIB_RMAOP] > 0)
    printf("8 B device-initiated, best of each: rmaop %.2f us (%s), NVSHMEM %s%.2f us; target <= 1.50 us and below "
           "NVSHMEM: %s\n",
           1e6 * best[LIB_RMAOP], form_name[best_form], best[LIB_NVSHMEM] > 0 ? "" : "n/a ", 1e6 * best[LIB_NVSHMEM],
           best[LIB_RMAOP] <= 1.5e-6 && (best[LIB_NVSHMEM] == 0 || best[LIB_RMAOP] < best[LIB_NVSHMEM])
               ? (best[LIB_NVSHMEM] > 0 ? "MET" : "MET (NVSHMEM not measured)")
               : "NOT MET");
  printf("('!': a rank did not find the peer's bytes after that row; '-': not run)\n");
  printf("this run, 8 B, half a round trip: NCCL send/recv %s%.2f us, rmaop epoch (host calls) %s%.2f us, rmaop "
         "plan epochs (stream-ordered) %s%.2f us\n", lat_nccl > 0 ? "" : "n/a ", 1e6 * lat_nccl,
         lat_epoch > 0 ? "" : "n/a ", 1e6 * lat_epoch, plan_pp > 0 ? "" : "n/a ", 1e6 * plan_pp);
  printf("message-passing litmus, %d blocks x %d B per round into the peer, %d rounds each way, the peer's blocks "
         "checking another block's words after their wait: mismatches\n", LIT_BLOCKS, 8192, LIT_ROUNDS);
  for (int k = 0; k < NLIT; ++k) {
    if (d->litmus[k] >= 0)
      printf("  %-62s %lld%s\n", lit_name[k], d->litmus[k],
             k == LIT_RELAXED ? (d->litmus[k] ? " (the release is observable here)" : " (no reordering observed)")
                              : d->litmus[k] ? " WRONG" : "");
    else
      printf("  %-62s n/a\n", lit_name[k]);
  }
  if (d->lit_why[0]) printf("litmus: %s\n", d->lit_why);
}

static void json_device(FILE *f, const devres *d) {
  static const char *const lib_key[NDLIB] = {"rmaop", "nvshmem"};
  static const char *const form_key[NDFORM] = {"signal", "thread", "block", "inline_thread", "inline_warp"};
  fprintf(f, " \"device_initiated\": {\"round_trips_per_launch\": %d, \"launches\": %d, \"half_round_trip_seconds\": {",
          d->iters, d->reps);
  for (int lib = 0; lib < NDLIB; ++lib) {
    fprintf(f, "%s\"%s\": {\"error\": ", lib ? ", " : "", lib_key[lib]);
    if (d->why[lib][0]) json_str(f, d->why[lib]);
    else fprintf(f, "null");
    for (int form = 0; form < NDFORM; ++form) {
      fprintf(f, ", \"%s\": [", form_key[form]);
      int first = 1;
      for (int i = 0; i < (form == DEV_SIGNAL ? 1 : NDSIZE); ++i) {
        if (d->half[lib][form][i] <= 0) continue;
        fprintf(f, "%s{\"bytes\": %zu, \"seconds\": %.9g, \"check\": %s}", first ? "" : ", ",
                form == DEV_SIGNAL ? (size_t)0 : dev_sizes[i], d->half[lib][form][i],
                d->bad[lib][form][i] ? "false" : "true");
        first = 0;
      }
      fprintf(f, "]");
    }
    fprintf(f, "}");
  }
  fprintf(f, "}, \"litmus_mismatches\": {\"add\": %lld, \"last_block\": %lld, \"no_release\": %lld}, "
             "\"litmus_rounds\": %d, \"litmus_blocks\": %d},\n", d->litmus[LIT_ADD], d->litmus[LIT_LAST],
          d->litmus[LIT_RELAXED], LIT_ROUNDS, LIT_BLOCKS);
}

/* Frees everything, finalizes MPI, returns `status` (main's exit status). */
static int clean_up(int status) {
  if (dwin) rmaop_win_destroy(&dwin);
  if (dsrc) cudaFree(dsrc);
  if (drecv)
    cudaFree(drecv);
  if (dout) cudaFree(dout);
  if (win) rmaop_win_destroy(&win);
  if (ctx) rmaop_ctx_destroy(&ctx);
#ifdef RMAOP_BENCH_HAVE_NCCL
  if (nccl) ncclCommDestroy(nccl);
#endif
  MPI_Barrier(MPI_COMM_WORLD); /* rank 1's buffer stays until rank 0 has unmapped it */
  if (peer_rbuf) cudaIpcCloseMemHandle(peer_rbuf);
  MPI_Barrier(MPI_COMM_WORLD);
  cudaFree(sbuf);
  cudaFree(rbuf);
  cudaStreamDestroy(stream);
  MPI_Finalize();
  return status;
}

static void usage(void) {
  if (rank == 0)
    fprintf(stderr, "usage: mpiexec -n 2 rmaop-p2p-bench [--sync lock|fence|pscw] [--reps N] [--reps-large N]\n"
                    "                                  [--warmup N] [--lat-reps N] [--max-size BYTES] [--json FILE]\n"
                    "                                  [--ipc-path auto|copy|kernel] [--dev-iters N] [--device-only]\n"
                    "                                  [--no-nvshmem]\n");
}

/* Opens the rmaop context, window (max bytes) for paths PUT and PLAN; 0 on success. */
static int open_rmaop(const char *sync, const char *ipc_path) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.backend = "rma";
  o.memory = "device";
  o.rma.transport = "ipc";
  o.rma.sync = sync;
  o.rma.ipc_path = ipc_path;
  rmaop_status s = rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx);
  if (s != RMAOP_OK) {
    snprintf(err, sizeof err, "rmaop_ctx_create(rma, device, ipc, %s, ipc path %s): %s", sync, ipc_path,
             rmaop_ctx_last_error(NULL));
    ctx = NULL;
    return 1;
  }
  return 0;
}

/* The 8 B epoch half ping-pong, plan exchange and plan half ping-pong on another ipc path, on a context and
 * window of its own (the main ones are set aside meanwhile). 0 on success (both ranks agree), with the times
 * in out[3]. */
static int other_path_latency(const char *sync, const char *ipc_path, int lat_reps, double out[3], double graph[2],
                              char *why) {
  rmaop_ctx ctx0 = ctx;
  rmaop_win win0 = win;
  void *wbase0 = wbase;
  int f = open_rmaop(sync, ipc_path);
  if (!f && rmaop_win_allocate(ctx, 4096, &win, &wbase) != RMAOP_OK) {
    snprintf(err, sizeof err, "rmaop_win_allocate(4096 B): %s", rmaop_ctx_last_error(ctx));
    win = NULL;
    f = 1;
  }
  rmaop_transfer tr = {peer, 0, 0, 1};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 1, .dst_len = 1, .nsends = 1, .sends = &tr, .nrecvs = -1,
                          .label = "p2p.plan"};
  if (!f && rmaop_plan_create(ctx, &spec, &plan) != RMAOP_OK) {
    snprintf(err, sizeof err, "rmaop_plan_create(8 B): %s", rmaop_ctx_last_error(ctx));
    plan = NULL;
    f = 1;
  }
  f = agree(f, why);
  if (!f) f = measure(op_put_pingpong, 8, 20, lat_reps, &out[0], why);
  if (!f) f = measure(op_plan, 8, 20, lat_reps, &out[1], why);
  out[0] *= 0.5;
  if (plan) rmaop_plan_destroy(&plan);
  if (!f)
    f = plan_pingpong_latency(lat_reps, &out[2], strcmp(ipc_path, "kernel") == 0 ? graph : NULL, why);
  if (win) rmaop_win_destroy(&win);
  if (ctx) rmaop_ctx_destroy(&ctx);
  ctx = ctx0;
  win = win0;
  wbase = wbase0;
  return f;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int P = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  char sync[16] = "lock", ipc_path[16] = "auto";
  const char *json = NULL;
  int reps = 50, reps_large = 10, warmup = 5, lat_reps = 1000;
  long long max_size = 128LL << 20;
  static struct option longopts[] = {{"sync", 1, 0, 's'},     {"reps", 1, 0, 'r'},     {"reps-large", 1, 0, 'R'},
                                     {"warmup", 1, 0, 'w'},   {"lat-reps", 1, 0, 'l'}, {"max-size", 1, 0, 'M'},
                                     {"json", 1, 0, 'j'},     {"help", 0, 0, 'h'},     {"ipc-path", 1, 0, 'i'},
                                     {"dev-iters", 1, 0, 'd'}, {"device-only", 0, 0, 'D'}, {"no-nvshmem", 0, 0, 'N'},
                                     {0, 0, 0, 0}};
  int device_only = 0, nvshmem = 1;
  int bad_arg = 0;
  const char *me = "rmaop-p2p-bench";
  const int say = rank == 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 's': snprintf(sync, sizeof sync, "%s", optarg); break;
    case 'r': bench_opt_int(me, "--reps", optarg, 1, 100000000, &reps, &bad_arg, say); break;
    case 'R': bench_opt_int(me, "--reps-large", optarg, 1, 100000000, &reps_large, &bad_arg, say); break;
    case 'w': bench_opt_int(me, "--warmup", optarg, 0, 100000000, &warmup, &bad_arg, say); break;
    case 'l': bench_opt_int(me, "--lat-reps", optarg, 1, 100000000, &lat_reps, &bad_arg, say); break;
    case 'M': bad_arg |= !bench_int_arg(me, "--max-size", optarg, 8, 1LL << 40, &max_size, say); break;
    case 'j': json = optarg; break;
    case 'i': snprintf(ipc_path, sizeof ipc_path, "%s", optarg); break;
    case 'd': bench_opt_int(me, "--dev-iters", optarg, 1, 100000000, &dev_iters, &bad_arg, say); break;
    case 'D': device_only = 1; break;
    case 'N': nvshmem = 0; break;
    default: usage(); MPI_Finalize(); return c == 'h' ? 0 : 2;
    }
  }
  if (bad_arg) {
    usage();
    MPI_Finalize();
    return 2;
  }
  if (P != 2) { /* the options' ranges were checked as they were read (bench_args.h) */
    if (rank == 0) fprintf(stderr, "rmaop-p2p-bench: needs exactly 2 ranks (got %d)\n", P);
    usage();
    MPI_Finalize();
    return 2;
  }
  peer = 1 - rank;
  dev_reps = reps;
  setenv("NCCL_NVLS_ENABLE", "0", 0); /* no NVLink multicast; a value from the caller wins */

  /* ---- GPU: node rank modulo the visible devices (the library's rule) ---- */
  MPI_Comm node;
  int node_rank = 0, ndev = 0, dev = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  cudaError_t ce = cudaGetDeviceCount(&ndev);
  int bad = ce != cudaSuccess || ndev < 1, anybad = 0;
  if (bad) snprintf(err, sizeof err, "no CUDA device: %s", ce != cudaSuccess ? cudaGetErrorString(ce) : "count 0");
  else {
    dev = node_rank % ndev;
    ce = cudaSetDevice(dev);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaMalloc(&sbuf, (size_t)max_size);
    if (ce == cudaSuccess) ce = cudaMalloc(&rbuf, (size_t)max_size);
    if (ce != cudaSuccess) {
      bad = 1;
      snprintf(err, sizeof err, "GPU set-up on device %d: %s", dev, cudaGetErrorString(ce));
    }
  }
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anybad) {
    if (bad) fprintf(stderr, "rmaop-p2p-bench: rank %d: %s\n", rank, err);
    MPI_Finalize();
    return 1;
  }
  char devname[2][128] = {"", ""}, mine[128];
  {
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaGetDeviceProperties(&prop, dev);
    snprintf(mine, sizeof mine, "GPU %d (%.64s, PCI %02x:%02x.0) of %d", dev, prop.name, (unsigned)prop.pciBusID & 0xffu,
             (unsigned)prop.pciDeviceID & 0xffu, ndev % 1000);
    MPI_Gather(mine, 128, MPI_CHAR, devname, 128, MPI_CHAR, 0, MPI_COMM_WORLD);
  }

  size_t sizes[MAXS];
  int ns = 0;
  for (size_t m = 8; m <= (size_t)max_size && ns < MAXS; m *= 4) sizes[ns++] = m;
  column col[NPATH];
  memset(col, 0, sizeof col);
  for (int p = 0; p < NPATH; ++p) col[p].alive = 1;
  double lat[NPATH] = {0, 0, 0, 0}; /* raw: copy+sync; nccl, put: half ping-pong; plan: 8 B exchange */
  double raw1_bw[MAXS] = {0}, raw1_t[MAXS] = {0}; /* raw: one copy + sync per repetition */
  char tr_name[16] = "?";

  /* ---- raw IPC mapping: rank 1's rbuf on rank 0 ---- */
  {
    int f = 0;
    cudaIpcMemHandle_t h;
    memset(&h, 0, sizeof h);
    if (rank == 1) {
      cudaError_t e = cudaIpcGetMemHandle(&h, rbuf);
      if (e != cudaSuccess) f = 1, snprintf(err, sizeof err, "cudaIpcGetMemHandle: %s", cudaGetErrorString(e));
    }
    MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 1, MPI_COMM_WORLD);
    int f1 = f;
    MPI_Bcast(&f1, 1, MPI_INT, 1, MPI_COMM_WORLD);
    if (rank == 0 && !f1) {
      cudaError_t e = cudaIpcOpenMemHandle(&peer_rbuf, h, cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) f = 1, snprintf(err, sizeof err, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
    }
    if (agree(f, col[RAW].why)) col[RAW].alive = 0;
  }
  /* ---- NCCL communicator ---- */
#ifdef RMAOP_BENCH_HAVE_NCCL
  {
    int f = 0;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (rank == 0) {
      ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) f = 1, snprintf(err, sizeof err, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    }
    int f0 = f;
    MPI_Bcast(&f0, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!f0) {
      ncclResult_t r = ncclCommInitRank(&nccl, 2, id, rank);
      if (r != ncclSuccess) f = 1, nccl = NULL, snprintf(err, sizeof err, "ncclCommInitRank: %s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
    }
    if (agree(f, col[NCCLP].why)) col[NCCLP].alive = 0;
  }
#else
  col[NCCLP].alive = 0;
  snprintf(col[NCCLP].why, ERRLEN, "not built: rmaop-p2p-bench was compiled without NCCL");
#endif
  /* ---- rmaop: context and window ---- */
  {
    int f = open_rmaop(sync, ipc_path);
    if (agree(f, col[PUT].why)) {
      col[PUT].alive = col[PLAN].alive = 0;
      snprintf(col[PLAN].why, ERRLEN, "%s", col[PUT].why);
    } else {
      rmaop_status s = rmaop_win_allocate(ctx, (size_t)max_size, &win, &wbase);
      f = s != RMAOP_OK;
      if (f) snprintf(err, sizeof err, "rmaop_win_allocate(%lld B): %s", max_size, rmaop_ctx_last_error(ctx));
      if (agree(f, col[PUT].why)) {
        col[PUT].alive = 0;
        win = NULL;
      } else {
        rmaop_transport tr;
        if (rmaop_win_peer_transport(win, peer, &tr) == RMAOP_OK) snprintf(tr_name, sizeof tr_name, "%s", rmaop_transport_name(tr));
      }
    }
  }

  /* ---- --device-only: the device-initiated part alone ---- */
  devres dres;
  if (device_only) {
    const int dwrong = device_section(&dres, nvshmem);
    if (rank == 0) {
      printf("rmaop-p2p-bench --device-only: 2 ranks; rank 0 on %s, rank 1 on %s; rmaop window over %s\n", devname[0],
             devname[1], tr_name);
      print_device(&dres, 0, 0, 0);
      FILE *f = json ? fopen(json, "w") : NULL;
      if (json && !f) fprintf(stderr, "rmaop-p2p-bench: cannot write %s\n", json);
      if (f) {
        fprintf(f, "{\"ranks\": 2, \"devices\": [");
        json_str(f, devname[0]);
        fprintf(f, ", ");
        json_str(f, devname[1]);
        fprintf(f, "],\n");
        json_device(f, &dres);
        fprintf(f, " \"device_only\": true}\n");
        fclose(f);
      }
    }
    fflush(stdout);
    return clean_up(dwrong);
  }

  /* ---- sizes x paths ---- */
  int wrong = 0;
  for (int i = 0; i < ns; ++i) {
    const size_t m = sizes[i];
    const int large = m >= ((size_t)32 << 20);
    const int nrep = large ? reps_large : reps, nwarm = large ? (warmup < 2 ? warmup : 2) : warmup;
    /* back-to-back batch for the raw and NCCL bandwidth: about 512 MiB, 4 .. 100 messages */
    int batch = (int)(((size_t)512 << 20) / m);
    batch = batch < 4 ? 4 : batch > 100 ? 100 : batch;
    for (int p = 0; p < NPATH; ++p) {
      column *c = &col[p];
      c->check[i] = -1;
      if (!c->alive) continue;
      const unsigned char pat = (unsigned char)(1 + (p * 37 + i * 11) % 250);
      int (*op)(size_t) = NULL;
      cur_batch = 1;
      switch (p) {
      case RAW: op = op_raw; cur_batch = batch; break;
#ifdef RMAOP_BENCH_HAVE_NCCL
      case NCCLP: op = op_nccl; cur_batch = batch; break;
#endif
      case PUT: op = op_put; break;
      case PLAN: {
        rmaop_transfer tr = {peer, 0, 0, (int64_t)(m / 8)};
        rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = (int64_t)(max_size / 8), .dst_len = (int64_t)(max_size / 8),
                                .nsends = 1, .sends = &tr, .nrecvs = -1, .label = "p2p.plan"};
        rmaop_status s = rmaop_plan_create(ctx, &spec, &plan);
        int f = s != RMAOP_OK;
        if (f) snprintf(err, sizeof err, "rmaop_plan_create(%zu B each way): %s", m, rmaop_ctx_last_error(ctx));
        if (agree(f, c->why)) {
          c->alive = 0;
          plan = NULL;
        }
        op = op_plan;
        break;
      }
      default: break;
      }
      if (!c->alive || !op) continue;
      int f = prepare(p, m, pat);
      if (agree(f, c->why)) {
        c->alive = 0;
      } else if (measure(op, m, nwarm, nrep, &c->t[i], c->why)) {
        c->alive = 0;
      } else {
        c->ran[i] = 1;
        c->batch[i] = cur_batch;
        c->reps[i] = nrep;
        c->bw[i] = (double)m * cur_batch / c->t[i];
        c->check[i] = check(p, m, pat);
        if (!c->check[i]) {
          wrong = 1;
          if (rank == 0) fprintf(stderr, "rmaop-p2p-bench: %s at %zu B: rank 1 did not receive the data\n", path_key[p], m);
        }
      }
      if (p == RAW && c->alive) { /* one copy + sync per repetition, for the like-for-like ratio */
        cur_batch = 1;
        if (!measure(op_raw, m, nwarm, nrep, &raw1_t[i], c->why)) raw1_bw[i] = (double)m / raw1_t[i];
        else c->alive = 0;
      }
      if (p == PLAN && m == 8 && c->ran[i]) lat[PLAN] = c->t[i];
      if (p == PLAN && plan) rmaop_plan_destroy(&plan);
    }
  }

  /* ---- 8 B latencies ---- */
  cur_batch = 1;
  if (col[RAW].alive && measure(op_raw, 8, 20, lat_reps, &lat[RAW], col[RAW].why)) col[RAW].alive = 0, lat[RAW] = 0;
#ifdef RMAOP_BENCH_HAVE_NCCL
  if (col[NCCLP].alive) {
    if (measure(op_nccl_pingpong, 8, 20, lat_reps, &lat[NCCLP], col[NCCLP].why)) col[NCCLP].alive = 0, lat[NCCLP] = 0;
    else lat[NCCLP] *= 0.5;
  }
#endif
  if (col[PUT].alive) {
    if (measure(op_put_pingpong, 8, 20, lat_reps, &lat[PUT], col[PUT].why)) col[PUT].alive = 0, lat[PUT] = 0;
    else lat[PUT] *= 0.5;
  }
  double plan_pp = 0; /* the stream-ordered plan ping-pong, half a round trip */
  char plan_pp_why[ERRLEN] = "";
  double plan_graph[2] = {0, 0}; /* the plan ping-pong from CUDA graphs (kernel path): 1 and GRAPH_RT per launch */
  if (col[PLAN].alive &&
      plan_pingpong_latency(lat_reps, &plan_pp, strcmp(ipc_path, "kernel") == 0 ? plan_graph : NULL, plan_pp_why))
    plan_pp = 0;
  double nccl_graph[2] = {0, 0};
#ifdef RMAOP_BENCH_HAVE_NCCL
  char nccl_graph_why[ERRLEN] = "";
  if (col[NCCLP].alive) {
    if (graph_latency(nccl_round_trip, stream, lat_reps, nccl_graph, nccl_graph_why)) {
      nccl_graph[0] = nccl_graph[1] = 0;
      if (rank == 0)
        printf("(NCCL ping-pong from CUDA graphs: n/a: %s)\n", nccl_graph_why);
    }
  }
#endif

  /* the other ipc path's 8 B latencies, same run */
  const char *other = strcmp(ipc_path, "kernel") == 0 ? "copy" : "kernel";
  double other_lat[3] = {0, 0, 0};
  char other_why[ERRLEN] = "";
  const int other_ok =
      col[PUT].alive && !other_path_latency(sync, other, lat_reps, other_lat,
                                            strcmp(other, "kernel") == 0 ? plan_graph : NULL, other_why);

  /* ---- device-initiated: kernels that put and signal themselves ---- */
  const int dwrong = device_section(&dres, nvshmem);

  /* ---- report ---- */
  const int last = ns - 1;
  const int have_bw_ratio = col[PUT].ran[last] && col[RAW].ran[last] && col[RAW].bw[last] > 0;
  const double bw_ratio = have_bw_ratio ? col[PUT].bw[last] / col[RAW].bw[last] : 0;
  const int have_lat_ratio = lat[PUT] > 0 && lat[NCCLP] > 0;
  const int have_pp_ratio = plan_pp > 0 && lat[NCCLP] > 0;
  if (rank == 0) {
    char big[32];
    fmt_size(sizes[last], big, sizeof big);
    printf("rmaop-p2p-bench: 2 ranks; rank 0 on %s -> rank 1 on %s; device buffers\n", devname[0], devname[1]);
    printf("rmaop path: backend rma, memory device, transport ipc (window peer transport: %s), sync %s; "
           "NCCL_NVLS_ENABLE=%s\n", tr_name, sync, getenv("NCCL_NVLS_ENABLE"));
    printf("median of %d repetitions (%d for >= 32 MiB) of the slowest rank, %d warm-up; raw and NCCL: a batch of "
           "4..100 back-to-back messages per repetition; put: one epoch; plan: one symmetric exchange (bytes each way)\n",
           reps, reps_large, warmup);
    printf("%10s | %17s | %10s | %18s | %15s\n", "size", path_title[RAW], path_title[NCCLP], path_title[PUT], path_title[PLAN]);
    const int w[NPATH] = {17, 10, 18, 15};
    for (int i = 0; i < ns; ++i) {
      char sz[32];
      fmt_size(sizes[i], sz, sizeof sz);
      printf("%10s", sz);
      for (int p = 0; p < NPATH; ++p) {
        if (col[p].ran[i]) printf(" | %*.3f%s", w[p] - 1, 1e-9 * col[p].bw[i], col[p].check[i] == 0 ? "!" : " ");
        else printf(" | %*s", w[p], col[p].why[0] ? "n/a" : "-");
      }
      printf("\n");
    }
    for (int p = 0; p < NPATH; ++p)
      if (col[p].why[0]) printf("%s: n/a from here on: %s\n", path_title[p], col[p].why);
    if (wrong) printf("('!': rank 1 did not find the sent bytes after that measurement)\n");
    printf("8 B latency:\n");
    printf("  raw IPC copy + cudaStreamSynchronize (rank 0):            %s%.2f us\n", lat[RAW] > 0 ? "" : "n/a ", 1e6 * lat[RAW]);
    printf("  NCCL send/recv, half ping-pong round trip:                %s%.2f us\n", lat[NCCLP] > 0 ? "" : "n/a ", 1e6 * lat[NCCLP]);
    printf("  rmaop epoch (begin + put + end), half ping-pong:          %s%.2f us\n", lat[PUT] > 0 ? "" : "n/a ", 1e6 * lat[PUT]);
    printf("  rmaop plan, one 8 B symmetric exchange (not a ping-pong): %s%.2f us\n", lat[PLAN] > 0 ? "" : "n/a ", 1e6 * lat[PLAN]);
    printf("  rmaop plan epochs, half ping-pong, one sync per round trip: %s%.2f us%s%s%s\n", plan_pp > 0 ? "" : "n/a ",
           1e6 * plan_pp, plan_pp_why[0] ? " (" : "", plan_pp_why, plan_pp_why[0] ? ")" : "");
    printf("  from CUDA graphs (captured once, replayed; one synchronize per launch), half a round trip:\n");
    printf("    NCCL send/recv, 1 round trip per graph:                 %s%.2f us\n", nccl_graph[0] > 0 ? "" : "n/a ",
           1e6 * nccl_graph[0]);
    printf("    NCCL send/recv, %d round trips per graph:               %s%.2f us\n", GRAPH_RT,
           nccl_graph[1] > 0 ? "" : "n/a ", 1e6 * nccl_graph[1]);
    printf("    rmaop plan epochs (ipc kernel path), 1 round trip per graph:  %s%.2f us\n",
           plan_graph[0] > 0 ? "" : "n/a ", 1e6 * plan_graph[0]);
    printf("    rmaop plan epochs (ipc kernel path), %d round trips per graph: %s%.2f us\n", GRAPH_RT,
           plan_graph[1] > 0 ? "" : "n/a ", 1e6 * plan_graph[1]);
    if (other_ok)
      printf("  the same three on the ipc %s path (RMAOP_IPC_PATH=%s; above: %s): epoch %.2f us, plan %.2f us, plan "
             "ping-pong %.2f us\n", other, other, ipc_path, 1e6 * other_lat[0], 1e6 * other_lat[1], 1e6 * other_lat[2]);
    else
      printf("  the same three on the ipc %s path: n/a (%s)\n", other, other_why[0] ? other_why : "the put path did not run");
    print_device(&dres, lat[NCCLP], lat[PUT], plan_pp);
    printf("acceptance:\n");
    if (have_bw_ratio)
      printf("  rmaop put bandwidth at %s / raw IPC copy bandwidth = %.3f / %.3f GB/s = %.3f (target >= 0.90): %s\n", big,
             1e-9 * col[PUT].bw[last], 1e-9 * col[RAW].bw[last], bw_ratio, bw_ratio >= 0.90 ? "MET" : "NOT MET");
    else
      printf("  rmaop put bandwidth at %s / raw IPC copy bandwidth: n/a (a path did not run)\n", big);
    if (have_bw_ratio && raw1_bw[last] > 0)
      printf("  (against one raw copy + sync per repetition, as the put epoch does: %.3f GB/s, ratio %.3f)\n",
             1e-9 * raw1_bw[last], col[PUT].bw[last] / raw1_bw[last]);
    if (have_lat_ratio)
      printf("  rmaop 8 B epoch latency %.2f us vs NCCL 8 B latency %.2f us = %.3f (target: lower): %s\n", 1e6 * lat[PUT],
             1e6 * lat[NCCLP], lat[PUT] / lat[NCCLP], lat[PUT] < lat[NCCLP] ? "MET" : "NOT MET");
    else
      printf("  rmaop 8 B epoch latency vs NCCL 8 B latency: n/a (a path did not run)\n");
    if (have_pp_ratio)
      printf("  rmaop 8 B plan-epoch half ping-pong %.2f us vs NCCL %.2f us (same structure: stream-ordered, one "
             "synchronize per round trip) = %.3f (target: lower): %s\n", 1e6 * plan_pp, 1e6 * lat[NCCLP],
             plan_pp / lat[NCCLP], plan_pp < lat[NCCLP] ? "MET" : "NOT MET");
    else
      printf("  rmaop 8 B plan-epoch half ping-pong vs NCCL: n/a (a path did not run)\n");
    for (int k = 0; k < 2; ++k) {
      if (plan_graph[k] > 0 && nccl_graph[k] > 0)
        printf("  from CUDA graphs, %d round trip%s per launch: rmaop %.2f us vs NCCL %.2f us = %.3f (lower: %s)\n",
               k ? GRAPH_RT : 1, k ? "s" : "", 1e6 * plan_graph[k], 1e6 * nccl_graph[k], plan_graph[k] / nccl_graph[k],
               plan_graph[k] < nccl_graph[k] ? "yes" : "no");
      else
        printf("  from CUDA graphs, %d round trip%s per launch: n/a (a path did not run)\n", k ? GRAPH_RT : 1,
               k ? "s" : "");
    }
    if (json) {
      FILE *f = fopen(json, "w");
      if (!f) fprintf(stderr, "rmaop-p2p-bench: cannot write %s\n", json);
      else {
        fprintf(f, "{\"ranks\": 2, \"devices\": [");
        json_str(f, devname[0]);
        fprintf(f, ", ");
        json_str(f, devname[1]);
        fprintf(f, "], \"sync\": \"%s\", \"window_transport\": \"%s\", \"reps\": %d, \"reps_large\": %d, \"warmup\": %d, "
                   "\"lat_reps\": %d,\n \"sizes\": [", sync, tr_name, reps, reps_large, warmup, lat_reps);
        for (int i = 0; i < ns; ++i) fprintf(f, "%s%zu", i ? ", " : "", sizes[i]);
        fprintf(f, "],\n \"paths\": {");
        for (int p = 0; p < NPATH; ++p) {
          fprintf(f, "%s\n  \"%s\": {\"error\": ", p ? "," : "", path_key[p]);
          if (col[p].why[0]) json_str(f, col[p].why);
          else fprintf(f, "null");
          fprintf(f, ", \"results\": [");
          int first = 1;
          for (int i = 0; i < ns; ++i) {
            if (!col[p].ran[i]) continue;
            fprintf(f, "%s\n    {\"bytes\": %zu, \"median_seconds\": %.9g, \"messages_per_rep\": %d, \"reps\": %d, "
                       "\"bytes_per_s\": %.6g, \"check\": %s", first ? "" : ",", sizes[i], col[p].t[i], col[p].batch[i],
                    col[p].reps[i], col[p].bw[i], col[p].check[i] ? "true" : "false");
            if (p == RAW) fprintf(f, ", \"single_copy_sync_seconds\": %.9g, \"single_copy_sync_bytes_per_s\": %.6g", raw1_t[i], raw1_bw[i]);
            fprintf(f, "}");
            first = 0;
          }
          fprintf(f, "]}");
        }
        fprintf(
            f,
            "},\n \"latency_8B_seconds\": {\"raw_copy_sync\": %.9g, \"nccl_half_pingpong\": %.9g, "
            "\"rmaop_epoch_half_pingpong\": %.9g, \"rmaop_plan_exchange\": %.9g, "
            "\"rmaop_plan_half_pingpong\": %.9g, \"ipc_path\": \"%s\", \"other_ipc_path\": \"%s\", "
            "\"other_epoch_half_pingpong\": %.9g, \"other_plan_exchange\": %.9g, "
            "\"other_plan_half_pingpong\": %.9g, \"graph_nccl_half_pingpong\": [%.9g, %.9g], "
            "\"graph_rmaop_plan_kernel_half_pingpong\": [%.9g, %.9g], \"graph_round_trips_per_launch\": [1, %d]},\n",
            lat[RAW], lat[NCCLP], lat[PUT], lat[PLAN], plan_pp, ipc_path, other, other_ok ? other_lat[0] : 0.0,
            other_ok ? other_lat[1] : 0.0, other_ok ? other_lat[2] : 0.0, nccl_graph[0], nccl_graph[1], plan_graph[0],
            plan_graph[1], GRAPH_RT);
        json_device(f, &dres);
        fprintf(f, " \"acceptance\": {\"put_over_raw_bw_at_max\": ");
        if (have_bw_ratio) fprintf(f, "%.6g, \"put_over_raw_bw_met\": %s", bw_ratio, bw_ratio >= 0.90 ? "true" : "false");
        else fprintf(f, "null, \"put_over_raw_bw_met\": null");
        fprintf(f, ", \"put_over_raw_single_copy_bw_at_max\": ");
        if (have_bw_ratio && raw1_bw[last] > 0) fprintf(f, "%.6g", col[PUT].bw[last] / raw1_bw[last]);
        else fprintf(f, "null");
        fprintf(f, ", \"epoch_over_nccl_latency\": ");
        if (have_lat_ratio) fprintf(f, "%.6g, \"epoch_latency_lower\": %s", lat[PUT] / lat[NCCLP], lat[PUT] < lat[NCCLP] ? "true" : "false");
        else fprintf(f, "null, \"epoch_latency_lower\": null");
        fprintf(f, ", \"plan_pingpong_over_nccl_latency\": ");
        if (have_pp_ratio) fprintf(f, "%.6g, \"plan_pingpong_latency_lower\": %s", plan_pp / lat[NCCLP], plan_pp < lat[NCCLP] ? "true" : "false");
        else fprintf(f, "null, \"plan_pingpong_latency_lower\": null");
        fprintf(f, "}}\n");
        fclose(f);
      }
    }
  }
  fflush(stdout);

  return clean_up(wrong || dwrong ? 1 : 0);
}
