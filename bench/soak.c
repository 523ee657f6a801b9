/* rmaop-soak: long runs on every path, for drift and leaks (not a CI test; docs/PERFORMANCE.md has its result).
 *
 *   mpiexec -n 2 rmaop-soak [--epochs 1000000] [--iters 10000] [--blocks 10] [--n 4096] [--memory host|device]
 *                           [--paths rma.lock.shm,twosided,...]
 *
 * Per path: --epochs plan executions (a ring exchange of one double each way, every rank's value the epoch
 * number, checked every epoch), then --iters CGLS iterations (deriv1d of --n unknowns, --iters / --blocks
 * iterations per solve, every solve's history compared bit for bit with the first). Both are split into
 * --blocks blocks; each block's time per epoch (iteration) and the process's resident memory after it are
 * kept. Printed per path (rank 0; times are the slowest rank's): the first and last block, the drift (last
 * / first - 1), the median block, and the resident memory growth from the end of the first block to the end
 * of the last (the first block includes first-use allocations). Exit status 1 when a value or history was
 * wrong or a call failed. For leaks, run the AddressSanitizer build (SANITIZE=1 scripts/test.sh builds
 * build-sanitize/) with ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=bench/soak.supp: the file
 * suppresses what Open MPI itself keeps until exit. */
#include <rmaop/rmaop.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problems.h"

#define MAX_BLOCKS 100
#define MAX_PATHS 16

static const char *const host_paths[] = {"rma.fence.shm", "rma.fence.mpi", "rma.pscw.shm", "rma.pscw.mpi",
                                         "rma.lock.shm",  "rma.lock.mpi",  "twosided",     NULL};
static const char *const device_paths[] = {"rma.fence.ipc", "rma.pscw.ipc", "rma.lock.ipc", "twosided", "nccl", NULL};

static int rank = 0, size = 1;

/* Resident memory of this process in KiB (/proc/self/statm), 0 when unknown. */
static double rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
  fclose(f);
  return (double)res * 4.0;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  double t[MAX_BLOCKS];   /* seconds per unit (epoch or iteration), slowest rank */
  double rss[MAX_BLOCKS]; /* KiB after the block, largest rank */
  int nblocks;
} series;

static void report(const char *path, const char *what, const series *s) {
  double sorted[MAX_BLOCKS];
  memcpy(sorted, s->t, sizeof(double) * (size_t)s->nblocks);
  qsort(sorted, (size_t)s->nblocks, sizeof(double), cmp_double);
  const int last = s->nblocks - 1;
  if (rank == 0)
    printf("%-16s %-6s %10.3f %10.3f %10.3f %+8.1f%% %10.0f %+10.0f\n", path, what, s->t[0] * 1e6, s->t[last] * 1e6,
           sorted[s->nblocks / 2] * 1e6, (s->t[last] / s->t[0] - 1) * 100, s->rss[0], s->rss[last] - s->rss[0]);
}

static void block_end(series *s, int b, double seconds, long units) {
  double t = seconds / (double)units, r = rss_kib();
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  s->t[b] = t;
  s->rss[b] = r;
  s->nblocks = b + 1;
}

static int fail(const char *path, const char *what, rmaop_status st) {
  fprintf(stderr, "rmaop-soak: rank %d, %s: %s -> %s: %s\n", rank, path, what, rmaop_status_string(st),
          rmaop_ctx_last_error(NULL));
  return 1;
}

/* --epochs ring exchanges of one double each way; every received value checked. */
static int soak_epochs(rmaop_ctx ctx, const char *path, long epochs, int blocks) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  rmaop_transfer t[2] = {{right, 0, 0, 1}, {left, 0, 1, 1}};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 1, .dst_len = 2, .nsends = 2, .sends = t, .nrecvs = -1,
                          .label = "soak"};
  rmaop_plan plan = NULL;
  rmaop_layout l1 = NULL, l2 = NULL;
  rmaop_vec vs = NULL, vd = NULL;
  rmaop_status st = rmaop_plan_create(ctx, &spec, &plan);
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, 1, &l1);
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, 2, &l2);
  if (st == RMAOP_OK) st = rmaop_vec_create(l1, RMAOP_F64, &vs);
  if (st == RMAOP_OK) st = rmaop_vec_create(l2, RMAOP_F64, &vd);
  if (st != RMAOP_OK) return fail(path, "plan set-up", st);
  void *src = NULL, *dst = NULL;
  rmaop_vec_get_array(vs, &src);
  rmaop_vec_get_array(vd, &dst);
  rmaop_vec_info info;
  rmaop_vec_get_info(vs, &info);
  const int device = info.memory == RMAOP_MEMORY_DEVICE;
  series s = {0};
  long bad = 0, per = epochs / blocks;
  for (int b = 0; b < blocks && st == RMAOP_OK; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long e = 0; e < per && st == RMAOP_OK; ++e) {
      const double v = (double)(b * per + e);
      if (device) {
        st = rmaop_vec_set(vs, v); /* device memory: a kernel; the received values are checked per block */
      } else {
        *(double *)src = v;
      }
      if (st == RMAOP_OK) st = rmaop_plan_execute(plan, src, dst, RMAOP_INSERT);
      if (!device && st == RMAOP_OK) bad += ((double *)dst)[0] != v || ((double *)dst)[1] != v;
    }
    if (device && st == RMAOP_OK) {
      double h[2] = {0, 0};
      st = rmaop_vec_read_local(vd, h);
      bad += h[0] != (double)(b * per + per - 1) || h[1] != (double)(b * per + per - 1);
    }
    block_end(&s, b, MPI_Wtime() - t0, per);
  }
  rmaop_vec_destroy(&vs);
  rmaop_vec_destroy(&vd);
  rmaop_layout_destroy(&l1);
  rmaop_layout_destroy(&l2);
  rmaop_plan_destroy(&plan);
  if (st != RMAOP_OK) return fail(path, "plan execution", st);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  report(path, "epoch", &s);
  if (bad && rank == 0) fprintf(stderr, "rmaop-soak: %s: %ld wrong values received\n", path, bad);
  return bad != 0;
}

/* --iters CGLS iterations in --blocks solves; every history equal to the first. */
static int soak_solver(rmaop_ctx ctx, const char *path, long iters, int blocks, int64_t n) {
  bench_problem p;
  rmaop_status st = bench_problem_create(ctx, "deriv1d", n, &p);
  if (st != RMAOP_OK) return fail(path, "problem set-up", st);
  rmaop_vec x = NULL;
  st = rmaop_vec_duplicate(p.x_true, &x);
  const int per = (int)(iters / blocks);
  double *first = calloc((size_t)per + 1, sizeof(double));
  series s = {0};
  long bad = 0;
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = per;
  for (int b = 0; b < blocks && st == RMAOP_OK && first; ++b) {
    rmaop_solver_info info = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    st = rmaop_solve_cgls(p.A, p.b, x, &o, &info);
    const double dt = MPI_Wtime() - t0;
    if (st == RMAOP_OK) {
      if (b == 0) memcpy(first, info.history, sizeof(double) * (size_t)(info.iterations + 1));
      else bad += memcmp(first, info.history, sizeof(double) * (size_t)(info.iterations + 1)) != 0;
      block_end(&s, b, dt, info.iterations > 0 ? info.iterations : 1);
    }
    rmaop_solver_info_destroy(&info);
  }
  free(first);
  rmaop_vec_destroy(&x);
  bench_problem_free(&p);
  if (st != RMAOP_OK) return fail(path, "CGLS", st);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  report(path, "cgls", &s);
  if (bad && rank == 0) fprintf(stderr, "rmaop-soak: %s: %ld solves whose history differs from the first\n", path, bad);
  return bad != 0;
}

static int path_ctx(const char *path, const char *memory, rmaop_ctx *ctx) {
  char b[32] = "", s[32] = "", t[32] = "";
  if (sscanf(path, "%31[^.].%31[^.].%31s", b, s, t) < 1) return -1;
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.backend = b;
  o.memory = memory;
  o.timeout = 60;
  if (!strcmp(b, "rma")) {
    o.rma.sync = s;
    o.rma.transport = t;
  }
  rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, ctx);
  if (st != RMAOP_OK && rank == 0) fprintf(stderr, "rmaop-soak: %s: %s\n", path, rmaop_ctx_last_error(NULL));
  return st == RMAOP_OK ? 0 : -1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long epochs = 1000000, iters = 10000;
  int blocks = 10;
  int64_t n = 4096;
  const char *memory = "host", *paths = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--epochs") && v) epochs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && v) iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--blocks") && v) blocks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--n") && v) n = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--memory") && v) memory = argv[++i];
    else if (!strcmp(argv[i], "--paths") && v) paths = argv[++i];
    else {
      if (rank == 0)
        fprintf(stderr, "usage: rmaop-soak [--epochs N] [--iters N] [--blocks B] [--n N] [--memory host|device] "
                        "[--paths LIST]\n(unknown or incomplete argument \"%s\")\n", argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  if (blocks < 1 || blocks > MAX_BLOCKS || epochs < blocks || iters < blocks || n < 16) {
    if (rank == 0) fprintf(stderr, "rmaop-soak: need 1 <= blocks <= %d, epochs and iters >= blocks, n >= 16\n", MAX_BLOCKS);
    MPI_Finalize();
    return 2;
  }
  const char *list[MAX_PATHS + 1] = {0};
  char buf[1024] = "";
  if (paths) {
    snprintf(buf, sizeof buf, "%s", paths);
    int k = 0;
    for (char *tok = strtok(buf, ","); tok && k < MAX_PATHS; tok = strtok(NULL, ",")) list[k++] = tok;
  } else {
    const char *const *d = strcmp(memory, "device") ? host_paths : device_paths;
    for (int k = 0; d[k] && k < MAX_PATHS; ++k) list[k] = d[k];
  }
  if (rank == 0) {
    printf("rmaop-soak: %d ranks, memory %s, %ld epochs and %ld CGLS iterations (deriv1d n %lld) per path in %d "
           "blocks\n", size, memory, epochs, iters, (long long)n, blocks);
    printf("%-16s %-6s %10s %10s %10s %9s %10s %10s\n", "path", "what", "first us", "last us", "median us", "drift",
           "RSS KiB", "growth");
  }
  int rc = 0;
  for (int k = 0; list[k]; ++k) {
    rmaop_ctx ctx = NULL;
    if (path_ctx(list[k], memory, &ctx)) {
      rc = 1;
      continue;
    }
    rc |= soak_epochs(ctx, list[k], epochs, blocks);
    rc |= soak_solver(ctx, list[k], iters, blocks, n);
    rmaop_ctx_destroy(&ctx);
  }
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
