/* rmaop-reduce-bench: the small reduction of a solver's dots (1, 2, 4 and 8 doubles: 8 B .. 64 B) on P ranks, one
 * GPU each (node rank modulo the visible devices, the library's rule), every way side by side in one run.
 *
 *   mpiexec -n P rmaop-reduce-bench [--paths LIST] [--reps 400] [--warmup 20] [--json FILE]
 *
 *   NCCL allreduce        ncclAllReduce of device doubles (out of place) on one stream, then cudaStreamSynchronize:
 *                         NCCL's own latency, the result left on the GPU
 *   NCCL allreduce, host  the same with the input copied from and the sum copied back to page-locked host memory
 *                         (cudaMemcpyAsync both ways, one synchronize): the least a solver that needs the sum on
 *                         the host (every Krylov solver's step lengths) pays on NCCL
 *   MPI_Allreduce         host doubles over MPI_COMM_WORLD (the MPI this binary runs on)
 *   rmaop PATH            rmaop_allreduce of host doubles on a device context of each path in --paths (default
 *                         rma.lock.ipc, rma.fence.ipc, rma.pscw.ipc, twosided, nccl): the reduction the solvers'
 *                         dots make after copying their partials to the host. On the rma backend it is the
 *                         one-sided reduction (every rank puts its doubles into every rank's slot of a host
 *                         window, one epoch, each rank adds the slots in rank order). Timed as a solver's
 *                         reduction site and as rmaop-roofline probe times it: the trace's time inside the call
 *                         under RMAOP_TRACE_SYNCED (the ranks meet in an untimed barrier first), which leaves out
 *                         rmaop_allreduce's argument agreement, a collective the solvers' dots do not make.
 * Timing: an MPI_Barrier (untimed) before every repetition, MPI_Wtime around one operation; --warmup repetitions
 * excluded; each rank's median over --reps, then the slowest rank's median (as rmaop-bench reads a site). Every
 * way's sum is checked against the exact one (the ranks contribute rank + 1 + i / 8) before it is timed. A way that
 * fails prints its message below the table; the others go on. NCCL NVLS (multicast) is never used here. */
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

#include "bench_agree.h"

#define MAXC 8    /* doubles */
#define NCOUNT 4  /* 1, 2, 4, 8 */
#define MAXWAY 16 /* columns */
#define ERRLEN 512

static const int counts[NCOUNT] = {1, 2, 4, 8};
static int rank, size, reps = 400, warmup = 20;

typedef struct {
  char name[48];
  char why[ERRLEN]; /* rank 0: why it did not run ("" when it ran) */
  int ran;
  double t[NCOUNT]; /* seconds: the slowest rank's median */
  rmaop_ctx ctx;    /* the rmaop ways */
} way;

/* One operation of count doubles; fills out (host, when not NULL) with the sum; 0 or -1 with msg. An operation
 * that times itself (the rmaop ways: the trace's time inside) sets *own, the others leave it (wall time). */
typedef int (*op_fn)(way *w, int count, double *out, char *msg, double *own);

static double *hin, *hout; /* page-locked host doubles */
static double *din, *dout; /* device doubles */
static cudaStream_t stream;

static void input(int count) {
  for (int i = 0; i < count; ++i)
    hin[i] = rank + 1 + i / 8.0;
}

static int cuda_fail(cudaError_t e, const char *what, char *msg) {
  if (e == cudaSuccess)
    return 0;
  snprintf(msg, ERRLEN, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

#ifdef RMAOP_BENCH_HAVE_NCCL
static ncclComm_t nccl;

static int nccl_fail(ncclResult_t r, const char *what, char *msg) {
  if (r == ncclSuccess)
    return 0;
  snprintf(msg, ERRLEN, "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
  return -1;
}

static int op_nccl(way *w, int count, double *out, char *msg, double *own) {
  (void)w, (void)own;
  if (nccl_fail(ncclAllReduce(din, dout, (size_t)count, ncclDouble, ncclSum, nccl, stream), "ncclAllReduce", msg) ||
      cuda_fail(cudaStreamSynchronize(stream), "cudaStreamSynchronize", msg))
    return -1;
  if (out) /* the check only: copied back outside the timed repetitions */
    return cuda_fail(cudaMemcpy(out, dout, (size_t)count * sizeof *out, cudaMemcpyDeviceToHost), "cudaMemcpy", msg);
  return 0;
}

static int op_nccl_host(way *w, int count, double *out, char *msg, double *own) {
  (void)w, (void)own;
  const size_t b = (size_t)count * sizeof(double);
  if (cuda_fail(cudaMemcpyAsync(din, hin, b, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync", msg) ||
      nccl_fail(ncclAllReduce(din, dout, (size_t)count, ncclDouble, ncclSum, nccl, stream), "ncclAllReduce", msg) ||
      cuda_fail(cudaMemcpyAsync(hout, dout, b, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync", msg) ||
      cuda_fail(cudaStreamSynchronize(stream), "cudaStreamSynchronize", msg))
    return -1;
  if (out)
    memcpy(out, hout, b);
  return 0;
}
#endif

static int op_mpi(way *w, int count, double *out, char *msg, double *own) {
  (void)w, (void)own;
  const int e = MPI_Allreduce(hin, hout, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (e != MPI_SUCCESS) {
    snprintf(msg, ERRLEN, "MPI_Allreduce: error %d", e);
    return -1;
  }
  if (out)
    memcpy(out, hout, (size_t)count * sizeof *out);
  return 0;
}

/* rmaop_allreduce under RMAOP_TRACE_SYNCED: the site's time inside replaces the wall time (see the header). */
static int op_rmaop(way *w, int count, double *out, char *msg, double *own) {
  rmaop_trace_site site;
  rmaop_status st = rmaop_trace_reset(w->ctx);
  if (st == RMAOP_OK)
    st = rmaop_trace_enable(w->ctx, RMAOP_TRACE_SYNCED);
  if (st == RMAOP_OK)
    st = rmaop_allreduce(w->ctx, hin, hout, count, RMAOP_SUM, "bench.reduce");
  (void)rmaop_trace_enable(w->ctx, RMAOP_TRACE_OFF);
  if (st == RMAOP_OK && (st = rmaop_trace_get(w->ctx, 0, &site)) == RMAOP_OK)
    *own = site.time_inside;
  if (st != RMAOP_OK) {
    snprintf(msg, ERRLEN, "rmaop_allreduce: %s", rmaop_ctx_last_error(w->ctx));
    return -1;
  }
  if (out)
    memcpy(out, hout, (size_t)count * sizeof *out);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* bench_agree (bench_agree.h) with this program's message size. */
static int agree(int failed, const char *msg, char *why) { return bench_agree(failed, msg, why, ERRLEN); }

/* Checks the sum, then times reps repetitions; w->t[k] = the slowest rank's median. Collective. */
static void measure(way *w, op_fn op) {
  double *t = malloc((size_t)reps * sizeof *t), got[MAXC];
  char msg[ERRLEN] = "";
  int failed = t == NULL;
  if (failed)
    snprintf(msg, sizeof msg, "out of memory");
  for (int k = 0; k < NCOUNT && !agree(failed, msg, w->why); ++k) {
    const int c = counts[k];
    input(c);
    double own = -1;
    failed = cuda_fail(cudaMemcpy(din, hin, (size_t)c * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy", msg) ||
             op(w, c, got, msg, &own);
    for (int i = 0; i < c && !failed; ++i) { /* the sum over ranks of (r + 1 + i / 8): exact in doubles */
      const double want = size * (size + 1) / 2.0 + size * (i / 8.0);
      if (got[i] != want)
        failed = 1, snprintf(msg, sizeof msg, "wrong sum at element %d of %d: %.17g, want %.17g", i, c, got[i], want);
    }
    if (agree(failed, msg, w->why))
      break;
    for (int r = -warmup; r < reps && !failed; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      own = -1;
      failed = op(w, c, NULL, msg, &own);
      const double dt = MPI_Wtime() - t0;
      if (r >= 0)
        t[r] = own >= 0 ? own : dt;
    }
    if (agree(failed, msg, w->why))
      break;
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    const double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    MPI_Allreduce(&med, &w->t[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    w->ran = k == NCOUNT - 1;
  }
  free(t);
}

/* "rma.lock.ipc" / "twosided" / "nccl" -> a device context of that path. Collective. */
static int open_path(way *w, const char *path) {
  char b[48], *parts[3] = {NULL, NULL, NULL}, *save = NULL;
  snprintf(b, sizeof b, "%s", path);
  int n = 0;
  for (char *s = strtok_r(b, ".", &save); s && n < 3; s = strtok_r(NULL, ".", &save))
    parts[n++] = s;
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.backend = parts[0];
  o.memory = "device";
  o.rma.sync = parts[1];
  o.rma.transport = parts[2];
  o.trace = RMAOP_TRACE_OFF;
  const rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &w->ctx);
  char msg[ERRLEN];
  snprintf(msg, sizeof msg, "rmaop_ctx_create: %s", st == RMAOP_OK ? "" : rmaop_ctx_last_error(NULL));
  if (agree(st != RMAOP_OK, msg, w->why)) {
    if (w->ctx)
      rmaop_ctx_destroy(&w->ctx);
    return -1;
  }
  return 0;
}

static void usage(void) {
  if (rank == 0)
    fprintf(stderr, "usage: mpiexec -n P rmaop-reduce-bench [--paths rma.lock.ipc,twosided,nccl,...] [--reps 400] "
                    "[--warmup 20] [--json FILE]\n");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  setenv("NCCL_NVLS_ENABLE", "0", 1); /* never multicast (shared machines) */
  const char *paths = "rma.lock.ipc,rma.fence.ipc,rma.pscw.ipc,twosided,nccl", *json = NULL;
  static const struct option longs[] = {{"paths", 1, 0, 'p'}, {"reps", 1, 0, 'r'}, {"warmup", 1, 0, 'w'},
                                        {"json", 1, 0, 'j'},  {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "", longs, NULL)) != -1;) {
    char *end = NULL;
    switch (c) {
    case 'p':
      paths = optarg;
      break;
    case 'r':
      reps = (int)strtol(optarg, &end, 10);
      break;
    case 'w':
      warmup = (int)strtol(optarg, &end, 10);
      break;
    case 'j':
      json = optarg;
      break;
    default:
      usage();
      MPI_Finalize();
      return c == 'h' ? 0 : 2;
    }
    if (end && (*end || reps < 1 || reps > 1000000 || warmup < 0 || warmup > 1000000)) {
      if (rank == 0)
        fprintf(stderr, "rmaop-reduce-bench: --%s %s: want a whole number (reps 1..1000000, warmup 0..1000000)\n",
                c == 'r' ? "reps" : "warmup", optarg);
      MPI_Finalize();
      return 2;
    }
  }
  if (optind < argc) {
    if (rank == 0)
      fprintf(stderr, "rmaop-reduce-bench: unexpected argument \"%s\"\n", argv[optind]);
    usage();
    MPI_Finalize();
    return 2;
  }
  way ways[MAXWAY];
  memset(ways, 0, sizeof ways);
  int nw = 0;
  char msg[ERRLEN] = "";
  /* Buffers on this rank's GPU, chosen as the library chooses. */
  MPI_Comm node;
  int node_rank = 0, ndev = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  int failed = cuda_fail(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount", msg);
  if (!failed && ndev < 1)
    failed = 1, snprintf(msg, sizeof msg, "no GPU visible");
  if (!failed)
    failed = cuda_fail(cudaSetDevice(node_rank % ndev), "cudaSetDevice", msg) ||
             cuda_fail(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", msg) ||
             cuda_fail(cudaMallocHost((void **)&hin, MAXC * sizeof(double)), "cudaMallocHost", msg) ||
             cuda_fail(cudaMallocHost((void **)&hout, MAXC * sizeof(double)), "cudaMallocHost", msg) ||
             cuda_fail(cudaMalloc((void **)&din, MAXC * sizeof(double)), "cudaMalloc", msg) ||
             cuda_fail(cudaMalloc((void **)&dout, MAXC * sizeof(double)), "cudaMalloc", msg);
  char why[ERRLEN] = "";
  if (agree(failed, msg, why)) {
    if (rank == 0)
      fprintf(stderr, "rmaop-reduce-bench: needs a GPU per rank: %s\n", why);
    MPI_Finalize();
    return 1;
  }
  /* NCCL's own allreduce, result on the GPU and on the host. */
  snprintf(ways[0].name, sizeof ways[0].name, "NCCL allreduce");
  snprintf(ways[1].name, sizeof ways[1].name, "NCCL allreduce, host");
#ifdef RMAOP_BENCH_HAVE_NCCL
  {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    failed = rank == 0 && nccl_fail(ncclGetUniqueId(&id), "ncclGetUniqueId", msg);
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!agree(failed, msg, ways[0].why)) {
      failed = nccl_fail(ncclCommInitRank(&nccl, size, id, rank), "ncclCommInitRank", msg);
      if (agree(failed, msg, ways[0].why))
        nccl = NULL;
    }
    if (nccl) {
      measure(&ways[0], op_nccl);
      measure(&ways[1], op_nccl_host);
    } else
      snprintf(ways[1].why, ERRLEN, "%s", ways[0].why);
  }
#else
  snprintf(ways[0].why, ERRLEN, "not built: rmaop-reduce-bench was compiled without NCCL");
  snprintf(ways[1].why, ERRLEN, "%s", ways[0].why);
#endif
  nw = 2;
  snprintf(ways[nw].name, sizeof ways[nw].name, "MPI_Allreduce");
  measure(&ways[nw++], op_mpi);
  char list[512];
  snprintf(list, sizeof list, "%s", paths);
  char *save = NULL;
  for (char *p = strtok_r(list, ",", &save); p && nw < MAXWAY; p = strtok_r(NULL, ",", &save)) {
    way *w = &ways[nw++];
    snprintf(w->name, sizeof w->name, "rmaop %s", p);
    if (open_path(w, p) == 0) {
      measure(w, op_rmaop);
      rmaop_ctx_destroy(&w->ctx);
    }
  }
  if (rank == 0) {
    printf("rmaop-reduce-bench: %d ranks, %d GPU(s) visible per node, %d repetitions (+%d warm-up), each rank's "
           "median, the slowest rank's; us\n",
           size, ndev, reps, warmup);
    printf("%-28s", "way");
    for (int k = 0; k < NCOUNT; ++k)
      printf(" %9d B", 8 * counts[k]);
    printf("\n");
    for (int i = 0; i < nw; ++i) {
      printf("%-28s", ways[i].name);
      for (int k = 0; k < NCOUNT; ++k)
        ways[i].ran ? printf(" %11.2f", 1e6 * ways[i].t[k]) : printf(" %11s", "-");
      printf("\n");
    }
    for (int i = 0; i < nw; ++i)
      if (!ways[i].ran)
        printf("%s: not measured: %s\n", ways[i].name, ways[i].why[0] ? ways[i].why : "(no message)");
    FILE *f = json ? fopen(json, "w") : NULL;
    if (json && !f)
      fprintf(stderr, "rmaop-reduce-bench: cannot write %s\n", json);
    if (f) {
      fprintf(f, "{\"ranks\": %d, \"reps\": %d, \"bytes\": [8, 16, 32, 64], \"ways\": [", size, reps);
      for (int i = 0; i < nw; ++i) {
        fprintf(f, "%s{\"name\": \"%s\", \"seconds\": ", i ? ", " : "", ways[i].name);
        if (ways[i].ran)
          fprintf(f, "[%.9g, %.9g, %.9g, %.9g]}", ways[i].t[0], ways[i].t[1], ways[i].t[2], ways[i].t[3]);
        else
          fprintf(f, "null}");
      }
      fprintf(f, "]}\n");
      fclose(f);
    }
  }
#ifdef RMAOP_BENCH_HAVE_NCCL
  if (nccl)
    ncclCommDestroy(nccl);
#endif
  cudaFree(din);
  cudaFree(dout);
  cudaFreeHost(hin);
  cudaFreeHost(hout);
  cudaStreamDestroy(stream);
  MPI_Finalize();
  return 0;
}
