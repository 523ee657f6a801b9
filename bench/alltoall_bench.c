/* rmaop-alltoall-bench: an all-to-all of equal blocks (every rank sends `size` bytes to every rank) through
 * rmaop_plan_create_alltoall on each path, beside the exchanges it is measured against, in one run.
 *
 *   mpiexec -n P rmaop-alltoall-bench [--backends rma,twosided,nccl] [--sync lock] [--transport auto]
 *                                     [--memory host|device] [--max-size 67108864] [--reps 20] [--warmup 3]
 *                                     [--json FILE] [--strict]
 *
 * Sizes per pair of ranks 1 KiB, 4 KiB, ..., 64 MiB (powers of 4 up to --max-size); f64 blocks, packed in rank
 * order (src and dst hold P blocks). Columns:
 *   rmaop PATH        one context per path (--backends, and for rma every --sync x --transport), memory from
 *                     --memory; one all-to-all plan per size; rmaop_plan_begin + rmaop_plan_end (+ rmaop_ctx_
 *                     synchronize on device memory, as the plan's end is stream-ordered there)
 *   MPI_Alltoall      on host buffers; on device buffers only when MPI is CUDA-aware (MPIX_Query_cuda_support)
 *   NCCL send/recv    device memory: one group of ncclSend/ncclRecv per peer (self included), then
 *                     cudaStreamSynchronize: what the nccl backend's plans issue, without the library around it
 *   raw IPC copy      device memory, every rank on one node: each peer's destination mapped through CUDA IPC, one
 *                     cudaMemcpyAsync of the block into every rank's buffer (its own with a local copy) on one
 *                     stream, cudaStreamSynchronize, MPI_Barrier: the copy-engine bound of a put-based all-to-all
 * Timing: an MPI_Barrier (untimed) before every repetition, MPI_Wtime around one exchange (the raw IPC copy
 * includes its closing barrier: a rank's data is in place only when every rank's copies are done); --warmup
 * repetitions excluded; each rank's median over --reps, then the slowest rank's median. GB/s = the bytes a rank
 * sends to other ranks ((P - 1) x size) / time. Every column's first exchange of every size is checked (the first
 * and last element of every block). The table gives µs and GB/s per column, rma's bandwidth over NCCL's (the first
 * rma column) and as a percentage of the raw IPC copy's. A column that cannot run says why below the table; the
 * others go on (--strict: then exit 1). NCCL NVLS (multicast) is off (NCCL_NVLS_ENABLE=0 unless set). Uses only the
 * public API (and MPI, the CUDA runtime and NCCL for the baselines). */
#define _POSIX_C_SOURCE 200809L
#include <rmaop/rmaop.h>

#ifdef RMAOP_BENCH_HAVE_CUDA
#include <cuda_runtime.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#ifdef RMAOP_BENCH_HAVE_NCCL
#include <nccl.h>
#endif

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_agree.h"
#include "bench_args.h"

#define MAXS 16
#define MAXCOL 24
#define ERRLEN 512

enum { K_RMAOP, K_MPI, K_NCCL, K_IPC };

typedef struct {
  char name[48], backend[16], sync[16], transport[16];
  int kind;
  int ran[MAXS], check[MAXS]; /* check: 1 right, 0 wrong data */
  double t[MAXS];             /* seconds: the slowest rank's median */
  char why[ERRLEN];           /* rank 0: why it stopped ("" when it ran) */
} column;

static int rank, P, reps = 20, warmup = 3, device = 0, nsize = 0;
static int64_t sizes[MAXS];
static char err[ERRLEN];
#ifdef RMAOP_BENCH_HAVE_CUDA
static cudaStream_t stream;
#endif

/* ---- small helpers ---- */

/* bench_agree (bench_agree.h) with this program's message size. */
static int agree(int failed, const char *msg, char *why) { return bench_agree(failed, msg, why, ERRLEN); }

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Element k of the block rank p sends rank q: exact in a double for every size here. */
static double value(int p, int q, int64_t k) {
  return (double)(p * P + q) * 1e8 + (double)k;
}

/* A copy between host and the buffers (host or device), complete when it returns: a cudaMemcpy from pageable
 * memory may return before its DMA lands, and the exchanges run on non-blocking streams that do not wait for it. */
static int copy_in(void *dst, const void *src, size_t bytes) {
#ifdef RMAOP_BENCH_HAVE_CUDA
  if (device) {
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    if (e == cudaSuccess)
      e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
      snprintf(err, sizeof err, "cudaMemcpy: %s", cudaGetErrorString(e));
    return e != cudaSuccess;
  }
#endif
  memcpy(dst, src, bytes);
  return 0;
}

/* src = this rank's P blocks of n elements. */
static int fill_src(void *src, int64_t n, double *host) {
  for (int q = 0; q < P; ++q)
    for (int64_t k = 0; k < n; ++k)
      host[q * n + k] = value(rank, q, k);
  return copy_in(src, host, (size_t)(P * n) * sizeof(double));
}

/* The first and last element of every block of dst; 1 when right. */
static int check_dst(const void *dst, int64_t n) {
  for (int p = 0; p < P && n > 0; ++p)
    for (int e = 0; e < 2; ++e) {
      const int64_t k = e ? n - 1 : 0;
      double got = 0;
      if (copy_in(&got, (const double *)dst + p * n + k, sizeof got))
        return 0;
      if (got != value(p, rank, k)) {
        snprintf(err, sizeof err, "element %lld of the block from rank %d is %.17g, want %.17g", (long long)k, p, got,
                 value(p, rank, k));
        return 0;
      }
    }
  return 1;
}

/* ---- one exchange per kind ---- */

typedef struct {
  rmaop_ctx ctx;
  rmaop_plan plan;
  rmaop_vec v[2];  /* the rmaop columns' buffers */
  void *src, *dst; /* P blocks of the largest size */
  int64_t n;       /* elements per block of the current size */
#ifdef RMAOP_BENCH_HAVE_CUDA
  void *peer_dst[64]; /* raw IPC: every rank's dst mapped here (own: dst) */
#endif
#ifdef RMAOP_BENCH_HAVE_NCCL
  ncclComm_t nccl;
#endif
} exch;

static int once(const column *c, exch *x) {
  const size_t bytes = (size_t)x->n * sizeof(double); /* a block */
  (void)bytes;
  switch (c->kind) {
  case K_RMAOP: {
    rmaop_status st = rmaop_plan_begin(x->plan, x->src, x->dst, RMAOP_INSERT);
    if (st == RMAOP_OK)
      st = rmaop_plan_end(x->plan);
    if (st == RMAOP_OK && device)
      st = rmaop_ctx_synchronize(x->ctx);
    if (st != RMAOP_OK)
      snprintf(err, sizeof err, "%s", rmaop_ctx_last_error(x->ctx));
    return st != RMAOP_OK;
  }
  case K_MPI: {
    const int e = MPI_Alltoall(x->src, (int)x->n, MPI_DOUBLE, x->dst, (int)x->n, MPI_DOUBLE, MPI_COMM_WORLD);
    if (e != MPI_SUCCESS)
      snprintf(err, sizeof err, "MPI_Alltoall: error %d", e);
    return e != MPI_SUCCESS;
  }
#ifdef RMAOP_BENCH_HAVE_NCCL
  case K_NCCL: {
    ncclResult_t r = ncclGroupStart();
    for (int q = 0; q < P && r == ncclSuccess; ++q) {
      r = ncclSend((const char *)x->src + (size_t)q * bytes, bytes, ncclChar, q, x->nccl, stream);
      if (r == ncclSuccess)
        r = ncclRecv((char *)x->dst + (size_t)q * bytes, bytes, ncclChar, q, x->nccl, stream);
    }
    const ncclResult_t r2 = ncclGroupEnd();
    if (r == ncclSuccess)
      r = r2;
    cudaError_t e = r == ncclSuccess ? cudaStreamSynchronize(stream) : cudaSuccess;
    if (r != ncclSuccess)
      snprintf(err, sizeof err, "NCCL: %s", ncclGetErrorString(r));
    else if (e != cudaSuccess)
      snprintf(err, sizeof err, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
    return r != ncclSuccess || e != cudaSuccess;
  }
#endif
#ifdef RMAOP_BENCH_HAVE_CUDA
  case K_IPC: {
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < P && e == cudaSuccess; ++i) { /* start with the next rank: spread the load */
      const int q = (rank + 1 + i) % P;
      e = cudaMemcpyAsync((char *)x->peer_dst[q] + (size_t)rank * bytes, (const char *)x->src + (size_t)q * bytes,
                          bytes, cudaMemcpyDeviceToDevice, stream);
    }
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
      snprintf(err, sizeof err, "IPC copy: %s", cudaGetErrorString(e));
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's copies into my buffer are done */
    return e != cudaSuccess;
  }
#endif
  default:
    snprintf(err, sizeof err, "not built");
    return 1;
  }
}

/* Checks, then times every size; the slowest rank's medians in c->t. Collective. */
static void measure(column *c, exch *x, double *host) {
  double *t = malloc((size_t)reps * sizeof *t);
  for (int s = 0; s < nsize; ++s) {
    x->n = sizes[s] / (int64_t)sizeof(double);
    int failed = t == NULL;
    if (failed)
      snprintf(err, sizeof err, "out of memory");
    if (!failed && c->kind == K_RMAOP) {
      int64_t counts[64];
      for (int q = 0; q < P; ++q)
        counts[q] = x->n;
      const rmaop_alltoall_spec spec = {.dtype = RMAOP_F64,
                                        .src_len = P * x->n,
                                        .dst_len = P * x->n,
                                        .send_counts = counts,
                                        .label = "bench.alltoall"};
      const rmaop_status st = rmaop_plan_create_alltoall(x->ctx, &spec, &x->plan);
      if (st != RMAOP_OK)
        failed = 1, snprintf(err, sizeof err, "%s", rmaop_ctx_last_error(x->ctx));
    }
    if (agree(failed, err, c->why))
      break;
    /* dst cleared first: a column that moves nothing must not pass on what the one before left there */
    for (int64_t i = 0; i < P * x->n; ++i)
      host[i] = -1.0;
    failed = copy_in(x->dst, host, (size_t)(P * x->n) * sizeof(double)) || fill_src(x->src, x->n, host) || once(c, x);
    c->check[s] = !failed && check_dst(x->dst, x->n);
    failed |= !c->check[s];
    int stop = agree(failed, err, c->why);
    for (int r = -warmup; r < reps && !stop; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      failed = once(c, x);
      if (r >= 0)
        t[r] = MPI_Wtime() - t0;
      stop = agree(failed, err, c->why); /* untimed: a failure stops every rank at the same repetition */
    }
    if (stop) {
      rmaop_plan_destroy(&x->plan);
      break;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    const double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    MPI_Allreduce(&med, &c->t[s], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    c->ran[s] = 1;
    rmaop_plan_destroy(&x->plan);
  }
  free(t);
}

/* ---- the columns ---- */

static void close_rmaop(exch *x) {
  rmaop_plan_destroy(&x->plan);
  rmaop_vec_destroy(&x->v[0]);
  rmaop_vec_destroy(&x->v[1]);
  rmaop_ctx_destroy(&x->ctx);
}

/* An rmaop context of the column's path, with buffers of P blocks of the largest size. Collective. */
static int open_rmaop(column *c, exch *x) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.backend = c->backend;
  o.memory = device ? "device" : "host";
  if (strcmp(c->backend, "rma") == 0)
    o.rma.sync = c->sync, o.rma.transport = c->transport;
  o.trace = RMAOP_TRACE_OFF;
  rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &x->ctx);
  if (st != RMAOP_OK)
    snprintf(err, sizeof err, "rmaop_ctx_create: %s", rmaop_ctx_last_error(NULL));
  if (agree(st != RMAOP_OK, err, c->why))
    return -1;
  const int64_t n = P * (sizes[nsize - 1] / (int64_t)sizeof(double));
  rmaop_layout l = NULL;
  st = rmaop_layout_create_local(x->ctx, n, &l);
  for (int i = 0; i < 2 && st == RMAOP_OK; ++i)
    st = rmaop_vec_create(l, RMAOP_F64, &x->v[i]);
  if (st == RMAOP_OK)
    st = rmaop_vec_get_array(x->v[0], &x->src);
  if (st == RMAOP_OK)
    st = rmaop_vec_get_array(x->v[1], &x->dst);
  rmaop_layout_destroy(&l);
  if (st != RMAOP_OK)
    snprintf(err, sizeof err, "buffers: %s", rmaop_ctx_last_error(x->ctx));
  if (!agree(st != RMAOP_OK, err, c->why))
    return 0;
  close_rmaop(x);
  return -1;
}

static void usage(void) {
  if (rank == 0)
    fprintf(stderr, "usage: mpiexec -n P rmaop-alltoall-bench [--backends rma,twosided,nccl] [--sync lock,fence,pscw] "
                    "[--transport auto,mpi,shm,ipc]\n"
                    "                                        [--memory host|device] [--max-size BYTES] [--reps 20] "
                    "[--warmup 3] [--json FILE] [--strict]\n");
}

static int split(char *s, char **out, int max) {
  int n = 0;
  for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
    out[n++] = t;
  return n;
}

static void print_table(column *cols, int ncol) {
  int rma = -1, nccl = -1, ipc = -1;
  for (int i = 0; i < ncol; ++i) {
    if (rma < 0 && cols[i].kind == K_RMAOP && strcmp(cols[i].backend, "rma") == 0)
      rma = i;
    if (cols[i].kind == K_NCCL)
      nccl = i;
    if (cols[i].kind == K_IPC)
      ipc = i;
  }
  printf("rmaop-alltoall-bench: %d ranks, %s memory, f64 blocks, %d repetitions (+%d warm-up); the slowest rank's "
         "median; GB/s = (P - 1) x size / time\n",
         P, device ? "device" : "host", reps, warmup);
  printf("%-10s", "size/pair");
  for (int i = 0; i < ncol; ++i)
    printf(" | %21.21s", cols[i].name);
  if (rma >= 0 && nccl >= 0)
    printf(" | rma/NCCL");
  if (rma >= 0 && ipc >= 0)
    printf(" | rma %% of IPC");
  printf("\n%-10s", "");
  for (int i = 0; i < ncol; ++i)
    printf(" | %10s %10s", "us", "GB/s");
  printf("\n");
  for (int s = 0; s < nsize; ++s) {
    const int64_t b = sizes[s];
    char sz[16];
    snprintf(sz, sizeof sz, b >= (1 << 20) ? "%lld MiB" : "%lld KiB", (long long)(b >= (1 << 20) ? b >> 20 : b >> 10));
    printf("%-10s", sz);
    for (int i = 0; i < ncol; ++i) {
      if (cols[i].ran[s])
        printf(" | %10.1f %10.2f", 1e6 * cols[i].t[s], (double)(P - 1) * (double)b / cols[i].t[s] / 1e9);
      else
        printf(" | %10s %10s", "-", "-");
    }
    if (rma >= 0 && nccl >= 0)
      cols[rma].ran[s] && cols[nccl].ran[s] ? printf(" | %7.2fx", cols[nccl].t[s] / cols[rma].t[s])
                                            : printf(" | %8s", "-");
    if (rma >= 0 && ipc >= 0)
      cols[rma].ran[s] && cols[ipc].ran[s] ? printf(" | %11.0f%%", 100 * cols[ipc].t[s] / cols[rma].t[s])
                                           : printf(" | %12s", "-");
    printf("\n");
  }
  for (int i = 0; i < ncol; ++i)
    if (cols[i].why[0])
      printf("%s: not measured (further): %s\n", cols[i].name, cols[i].why);
}

static void write_json(const char *path, const column *cols, int ncol) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "rmaop-alltoall-bench: cannot write %s\n", path);
    return;
  }
  fprintf(
      f,
      "{\"ranks\": %d, \"memory\": \"%s\", \"dtype\": \"f64\", \"reps\": %d, \"warmup\": %d,\n \"bytes_per_pair\": [",
      P, device ? "device" : "host", reps, warmup);
  for (int s = 0; s < nsize; ++s)
    fprintf(f, "%s%lld", s ? ", " : "", (long long)sizes[s]);
  fprintf(f, "],\n \"columns\": [");
  for (int i = 0; i < ncol; ++i) {
    fprintf(f, "%s\n  {\"name\": \"%s\", \"seconds\": [", i ? "," : "", cols[i].name);
    for (int s = 0; s < nsize; ++s)
      cols[i].ran[s] ? fprintf(f, "%s%.9g", s ? ", " : "", cols[i].t[s]) : fprintf(f, "%snull", s ? ", " : "");
    fprintf(f, "], \"gbps\": [");
    for (int s = 0; s < nsize; ++s)
      cols[i].ran[s] ? fprintf(f, "%s%.6g", s ? ", " : "", (double)(P - 1) * (double)sizes[s] / cols[i].t[s] / 1e9)
                     : fprintf(f, "%snull", s ? ", " : "");
    fprintf(f, "], \"error\": \"%s\"}", cols[i].why);
  }
  fprintf(f, "\n ]}\n");
  fclose(f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  char backends[256] = "", syncs[256] = "lock", transports[256] = "auto", memory[16] = "host";
  const char *json = NULL, *me = "rmaop-alltoall-bench";
  long long max_size = 64LL << 20;
  int strict = 0, bad = 0;
  static const struct option longs[] = {{"backends", 1, 0, 'b'},
                                        {"sync", 1, 0, 's'},
                                        {"transport", 1, 0, 't'},
                                        {"memory", 1, 0, 'm'},
                                        {"max-size", 1, 0, 'M'},
                                        {"reps", 1, 0, 'r'},
                                        {"warmup", 1, 0, 'w'},
                                        {"json", 1, 0, 'j'},
                                        {"strict", 0, 0, 'S'},
                                        {"help", 0, 0, 'h'},
                                        {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "", longs, NULL)) != -1;) {
    switch (c) {
    case 'b':
      snprintf(backends, sizeof backends, "%s", optarg);
      break;
    case 's':
      snprintf(syncs, sizeof syncs, "%s", optarg);
      break;
    case 't':
      snprintf(transports, sizeof transports, "%s", optarg);
      break;
    case 'm':
      snprintf(memory, sizeof memory, "%s", optarg);
      break;
    case 'M':
      bad |= !bench_int_arg(me, "--max-size", optarg, 1024, 1LL << 32, &max_size, rank == 0);
      break;
    case 'r':
      bench_opt_int(me, "--reps", optarg, 1, 1000000, &reps, &bad, rank == 0);
      break;
    case 'w':
      bench_opt_int(me, "--warmup", optarg, 0, 1000000, &warmup, &bad, rank == 0);
      break;
    case 'j':
      json = optarg;
      break;
    case 'S':
      strict = 1;
      break;
    default:
      usage();
      MPI_Finalize();
      return c == 'h' ? 0 : 2;
    }
  }
  if (strcmp(memory, "host") != 0 && strcmp(memory, "device") != 0) {
    if (rank == 0)
      fprintf(stderr, "%s: --memory %s: expected host or device\n", me, memory);
    bad = 1;
  }
  if (P > 64) {
    if (rank == 0)
      fprintf(stderr, "%s: at most 64 ranks (got %d)\n", me, P);
    bad = 1;
  }
  if (bad || optind < argc) {
    usage();
    MPI_Finalize();
    return 2;
  }
  device = strcmp(memory, "device") == 0;
  if (!backends[0])
    snprintf(backends, sizeof backends, "%s", device ? "rma,twosided,nccl" : "rma,twosided");
  for (int64_t b = 1024; b <= max_size && nsize < MAXS; b *= 4)
    sizes[nsize++] = b;

  const int64_t nmax = P * (sizes[nsize - 1] / (int64_t)sizeof(double));
  double *host = malloc((size_t)nmax * sizeof(double));
  exch base = {0}; /* the baselines' buffers */
  int failed = host == NULL;
  if (failed)
    snprintf(err, sizeof err, "out of memory");
  int one_node = 0;
  {
    MPI_Comm node;
    int node_rank = 0, node_size = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    MPI_Allreduce(&(int){node_size == P}, &one_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#ifdef RMAOP_BENCH_HAVE_CUDA
    int ndev = 0;
    cudaError_t e = cudaSuccess;
    if (device && !failed) { /* the GPU the library takes: node rank modulo the visible devices */
      e = cudaGetDeviceCount(&ndev);
      if (e == cudaSuccess && ndev < 1)
        e = cudaErrorNoDevice;
      if (e == cudaSuccess)
        e = cudaSetDevice(node_rank % ndev);
      if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      if (e == cudaSuccess)
        e = cudaMalloc(&base.src, (size_t)nmax * sizeof(double));
      if (e == cudaSuccess)
        e = cudaMalloc(&base.dst, (size_t)nmax * sizeof(double));
      if (e != cudaSuccess)
        failed = 1, snprintf(err, sizeof err, "GPU set-up: %s", cudaGetErrorString(e));
    }
#else
    if (device)
      failed = 1, snprintf(err, sizeof err, "built without CUDA: --memory device is not available");
#endif
    if (!device && !failed) {
      base.src = malloc((size_t)nmax * sizeof(double));
      base.dst = malloc((size_t)nmax * sizeof(double));
      if (!base.src || !base.dst)
        failed = 1, snprintf(err, sizeof err, "out of memory");
    }
  }
  char why[ERRLEN] = "";
  if (agree(failed, err, why)) {
    if (rank == 0)
      fprintf(stderr, "%s: %s\n", me, why);
    MPI_Finalize();
    return 1;
  }

  column cols[MAXCOL];
  memset(cols, 0, sizeof cols);
  int ncol = 0;
  char *bl[8], *sl[8], *tl[8];
  const int nb = split(backends, bl, 8), ns = split(syncs, sl, 8), nt = split(transports, tl, 8);
  for (int b = 0; b < nb; ++b) {
    const int is_rma = strcmp(bl[b], "rma") == 0;
    for (int s = 0; s < (is_rma ? ns : 1); ++s)
      for (int t = 0; t < (is_rma ? nt : 1) && ncol < MAXCOL - 3; ++t) {
        column *c = &cols[ncol++];
        c->kind = K_RMAOP;
        snprintf(c->backend, sizeof c->backend, "%s", bl[b]);
        snprintf(c->sync, sizeof c->sync, "%s", is_rma ? sl[s] : "-");
        snprintf(c->transport, sizeof c->transport, "%s", is_rma ? tl[t] : "-");
        if (is_rma)
          snprintf(c->name, sizeof c->name, "rma.%s.%s", sl[s], tl[t]);
        else
          snprintf(c->name, sizeof c->name, "%s", bl[b]);
      }
  }
  for (int i = 0; i < ncol; ++i) {
    exch x = {0};
    if (open_rmaop(&cols[i], &x) == 0) {
      measure(&cols[i], &x, host);
      close_rmaop(&x);
    }
  }

  /* MPI_Alltoall: host buffers, or device buffers with a CUDA-aware MPI */
  column *c = &cols[ncol++];
  c->kind = K_MPI;
  snprintf(c->name, sizeof c->name, "MPI_Alltoall");
  int aware = 0;
#if defined(RMAOP_BENCH_HAVE_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT)
  aware = MPIX_Query_cuda_support() == 1;
#endif
  if (sizes[nsize - 1] / (int64_t)sizeof(double) > 0x7fffffff)
    snprintf(c->why, ERRLEN, "blocks beyond an int count");
  else if (device && !aware)
    snprintf(c->why, ERRLEN, "MPI is not CUDA-aware (MPIX_Query_cuda_support)");
  else
    measure(c, &base, host);

  if (device) {
    c = &cols[ncol++];
    c->kind = K_NCCL;
    snprintf(c->name, sizeof c->name, "NCCL send/recv");
#ifdef RMAOP_BENCH_HAVE_NCCL
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (r == ncclSuccess)
      r = ncclCommInitRank(&base.nccl, P, id, rank);
    if (r != ncclSuccess)
      snprintf(err, sizeof err, "NCCL set-up: %s", ncclGetErrorString(r));
    if (!agree(r != ncclSuccess, err, c->why)) {
      measure(c, &base, host);
      ncclCommDestroy(base.nccl);
    }
#else
    snprintf(c->why, ERRLEN, "built without NCCL");
#endif
    c = &cols[ncol++];
    c->kind = K_IPC;
    snprintf(c->name, sizeof c->name, "raw IPC copy");
#ifdef RMAOP_BENCH_HAVE_CUDA
    if (!one_node) {
      snprintf(c->why, ERRLEN, "the ranks are on more than one node");
    } else {
      cudaIpcMemHandle_t mine, all[64];
      cudaError_t e = cudaIpcGetMemHandle(&mine, base.dst);
      MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
      for (int q = 0; q < P && e == cudaSuccess; ++q)
        e = q == rank ? cudaSuccess : cudaIpcOpenMemHandle(&base.peer_dst[q], all[q], cudaIpcMemLazyEnablePeerAccess);
      base.peer_dst[rank] = base.dst;
      if (e != cudaSuccess)
        snprintf(err, sizeof err, "CUDA IPC: %s", cudaGetErrorString(e));
      if (!agree(e != cudaSuccess, err, c->why))
        measure(c, &base, host);
      MPI_Barrier(MPI_COMM_WORLD);
      for (int q = 0; q < P; ++q)
        if (q != rank && base.peer_dst[q])
          cudaIpcCloseMemHandle(base.peer_dst[q]);
    }
#endif
  }

  int missing = 0; /* the reasons are on rank 0 */
  for (int i = 0; i < ncol; ++i)
    missing |= cols[i].why[0] != 0;
  MPI_Bcast(&missing, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    print_table(cols, ncol);
    if (json)
      write_json(json, cols, ncol);
  }
#ifdef RMAOP_BENCH_HAVE_CUDA
  if (device) {
    cudaFree(base.src);
    cudaFree(base.dst);
    cudaStreamDestroy(stream);
  }
#endif
  if (!device) {
    free(base.src);
    free(base.dst);
  }
  free(host);
  MPI_Finalize();
  return strict && missing ? 1 : 0;
}
