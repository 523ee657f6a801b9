/* rmaop-bench: the same problem and solver run on several communication paths, side by side.
 *
 *   mpiexec -n P rmaop-bench --problem deriv1d --n 1048576 --niter 50 --backends rma,twosided,nccl \
 *                            [--sync fence,pscw,lock] [--transport auto] [--memory host|device] [--repeat 5]
 *                            [--solver cgls|lsqr|cg|pipecg|ista|fista] [--json out.json]
 *
 * --solver picks the solver (default cgls), or a list of them (--solver cg,pipecg): every path then runs every
 * listed solver, all repeats interleaved, and histories are compared between paths of the same solver.
 * cg and pipecg need an SPD operator: --problem derivspd (D^H D + I); timing them side by side shows what
 * hiding the reduction behind the matvec buys on each path.
 *
 * Every path solves from x0 = 0; the residual histories must agree with the first path's or the run fails:
 * on 1 or 2 ranks to 1e-10 of each entry; on 3 or more to 1e-6 of the initial residual. There the paths add the
 * ranks' partial dots in different orders (the rma backend in rank order, MPI_Allreduce and NCCL in trees or
 * rings of their own), the sums differ in the last bits, and a Krylov solver carries that forward: in its fast
 * phase a rounding difference shifts when the residual drops, so two paths' residuals at one iteration can
 * differ by a percent of a residual that has already shrunk by orders of magnitude. CGLS on bdiag at 4 ranks
 * (2-vCPU VM, n = 256, 50 iterations): rma and twosided 7e-11 of the initial residual apart at iteration 24,
 * 5e-8 (1 % of the entry) at 26; on 4 H100s (n = 8192) 4e-10 of the entry at iteration 30. A wrong message
 * moves the first iterations' residuals by far more than 1e-6 of the initial one; the tests (serial
 * references) are the correctness check. Repeats are interleaved over the paths so machine noise hits all alike.
 * A path whose context the library cannot create (RMAOP_ERR_UNSUPPORTED: a backend not built in, ...) is
 * skipped with a line saying why; the others run.
 *
 * --memory device puts every path's vectors in GPU memory (options.memory = "device"). The bench then
 * also measures the device copy bandwidth (cudaMemcpy device-to-device of 1 GiB, CUDA events, median of 5,
 * bytes read + written) and gives each path its streaming bound: the vector passes of one solver iteration
 * (CGLS below; the other solvers in the table beside `solvers[]`) times their bytes, divided by that bandwidth.
 * Per CGLS iteration (src/solvers/solver.c, damp = 0), with M the
 * model part and D the data part of this rank:
 *   mdot(q.q, c.c)      reads q, c                  1 D + 1 M
 *   axpy x += a c       reads x, c, writes x        3 M
 *   axpy s -= a q       reads s, q, writes s        3 D
 *   A^H s -> r          reads s, writes r           1 D + 1 M
 *   mdot(r.r, s.s)      reads r, s                  1 M + 1 D
 *   axpby c = r + b c   reads r, c, writes c        3 M
 *   A c -> q            reads c, writes q           1 M + 1 D
 *   total               10 M + 7 D vector passes (17 x local_n when M = D)
 * Uses only the public API (and the CUDA runtime for the bandwidth measurement). */
#include "bench_args.h"
#include "machine_ref.h"
#include "problems.h"

#ifdef RMAOP_BENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATHS 32

typedef struct {
  char backend[16], sync[16], transport[16], name[64];
  const struct bench_solver_s *solver;
  rmaop_ctx ctx;
  bench_problem prob;
  rmaop_vec x;
  double *history;
  int graph; /* info.graph: 1, iterations replayed from CUDA graphs; 2, the solve as one graph (WHILE node) */
  int iterations;
  double *t_iter, *comm_share; /* per repeat */
  double *t_start;             /* when each timed repeat started, seconds after MPI_Init */
  double bytes_iter;           /* streaming bytes of one solver iteration on the busiest rank */
  double bound;                /* seconds: max over ranks of local bytes / local copy bandwidth; 0: none */
  double *sync_comm;           /* --trace-sync, per repeat: seconds per iteration inside rmaop's calls, synchronized:
                                * each site's median call x its calls (the typical iteration) */
  double *sync_comm_mean;      /* the same from the sites' summed times (every preempted call counted) */
  double *sync_start;          /* when each synchronized solve started, seconds after the bench's MPI_Init */
  double *sync_cpu;            /* the machine's speed right before each synchronized solve (machine_ref.h) */
} path;

typedef struct {
  char name[64], why[512];
} skipped_path;

/* CGLS vector passes per iteration (see the comment at the top): model part, data part. */
enum { CGLS_PASSES_MODEL = 10, CGLS_PASSES_DATA = 7 };

/* The solvers --solver offers, with their vector passes per iteration counted the same way (src/solvers/solver.c,
 * src/solvers/solver_krylov.c; an operator application counts one read of its input and one write of its output):
 *   cg      A c, c.Ac, x += a c, r -= a Ac, r.r, c = r + b c                    14 M
 *   pipecg  {r.r, w.r} + A w, z/s/p = . + b ., x += a p, r -= a s, w -= a z      22 M
 *   lsqr    A v, u = Av - alfa u, {u.u, w.w}, u /= beta, A^H u, v = A^H u - beta v, ||v||, v /= alfa,
 *           x += t1 w, w = v + t2 w                                              15 M + 8 D
 *   ista    A x, r = y - Ax, A^H r, u *= alpha, u += x, thr(u), xold = x, sums   14 M + 6 D
 *   fista   ista's from z, the cost's A x and r, z = x + c (x - xold)           24 M + 10 D
 * (ista and fista: src/solvers/solver_sparse.c, its unfused calls counted; eps 0.1, soft thresholding, the step
 * 1 / maxeig(A^H A) from its power iteration, which is inside the solve's time; tol 0: every iteration runs;
 * the history compared between paths is the cost.) */
typedef struct bench_solver_s {
  const char *name, *label;
  rmaop_status (*solve)(rmaop_op, rmaop_vec, rmaop_vec, const rmaop_solver_options *, rmaop_solver_info *);
  int passes_model, passes_data;
} bench_solver;
/* ISTA and FISTA under the common signature: PyLops-MPI's defaults but tol 0 and the bench's niter. */
static rmaop_status sparse_solve(int fista, rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                 rmaop_solver_info *info) {
  rmaop_sparse_options so;
  rmaop_sparse_options_init(&so);
  so.niter = o->niter;
  so.tol = 0.0;
  return fista ? rmaop_solve_fista(A, y, x, &so, info) : rmaop_solve_ista(A, y, x, &so, info);
}
static rmaop_status bench_ista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                               rmaop_solver_info *info) {
  return sparse_solve(0, A, y, x, o, info);
}
static rmaop_status bench_fista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                                rmaop_solver_info *info) {
  return sparse_solve(1, A, y, x, o, info);
}

static const bench_solver solvers[] = {
    {"cgls", "CGLS", rmaop_solve_cgls, CGLS_PASSES_MODEL, CGLS_PASSES_DATA},
    {"lsqr", "LSQR", rmaop_solve_lsqr, 15, 8},
    {"cg", "CG", rmaop_solve_cg, 14, 0},
    {"pipecg", "pipeCG", rmaop_solve_pipecg, 22, 0},
    {"ista", "ISTA", bench_ista, 14, 6},
    {"fista", "FISTA", bench_fista, 24, 10},
};
enum { NSOLVERS = sizeof solvers / sizeof solvers[0] };

static int rank;
static double g_t0; /* MPI_Wtime() right after MPI_Init */
static struct {
  int ms, rounds;        /* --warmup-ms; rounds of warm-up solves over all paths that ran */
  double start, seconds; /* warm-up start (after MPI_Init) and length; the timed solves begin at start + seconds */
} warm;

static void die(const char *what, rmaop_ctx ctx) {
  fprintf(stderr, "rmaop-bench: rank %d: %s: %s\n", rank, what, rmaop_ctx_last_error(ctx));
  MPI_Abort(MPI_COMM_WORLD, 1); /* a tool, not the library: aborting the job on failure is right here */
}

static int split(char *list, char *items[], int max) {
  int n = 0;
  for (char *tok = strtok(list, ","); tok && n < max; tok = strtok(NULL, ",")) items[n++] = tok;
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double *s = malloc((size_t)n * sizeof *s);
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

static double vmin(const double *v, int n) { double m = v[0]; for (int i = 1; i < n; ++i) m = fmin(m, v[i]); return m; }
static double vmax(const double *v, int n) { double m = v[0]; for (int i = 1; i < n; ++i) m = fmax(m, v[i]); return m; }

static void usage(void) {
  if (rank == 0)
    fprintf(
        stderr,
        "usage: rmaop-bench --problem deriv1d|lap2d|halo2d|bdiag|vstack|derivspd|fft2d|mdc --n N --niter K [--backends "
        "rma,twosided]\n"
        "                   [--sync fence,pscw,lock] [--transport auto|mpi|shm|ipc] [--memory host|device]\n"
        "                   [--repeat R] [--warmup-ms MS] [--solver cgls|lsqr|cg|pipecg|ista|fista] [--trace-sync]\n"
        "                   [--json FILE]\n"
        "  --warmup-ms (default 2000): untimed solves, every path in turn, until MS milliseconds have\n"
        "  passed (at least one each): first-use costs and a slow start stay out (README, rmaop-bench).\n"
        "  --backends takes any of rma, twosided, nccl; a backend this library lacks is skipped.\n"
        "  --solver defaults to cgls; cg and pipecg need an SPD operator (--problem derivspd).\n"
        "  --trace-sync: R more solves per path traced with synchronized starts (RMAOP_TRACE_SYNCED):\n"
        "  the messaging time per iteration without waits for late peers (what rmaop-roofline predicts):\n"
        "  each site's median call times its calls per iteration; \"sync mean\" counts every call.\n"
        "  The JSON gives the medians and every repeat's time per iteration (iter_seconds; with --trace-sync\n"
        "  synchronized_repeats, with the machine's CPU speed timed right before each) and when it started\n"
        "  (seconds after MPI_Init), in the order they ran.\n");
}

/* Device copy bandwidth of this rank's GPU in bytes/s: cudaMemcpy device-to-device of 1 GiB timed with
 * CUDA events, median of 5 (after one untimed copy), counting bytes read + written (2 GiB per copy).
 * Returns 0 and a message in why when it cannot be measured. */
static double device_copy_bandwidth(char *why, size_t whylen) {
#ifdef RMAOP_BENCH_HAVE_CUDA
  /* The GPU the library picks: node rank modulo the visible devices. */
  MPI_Comm node;
  int node_rank = 0, count = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(why, whylen, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
    return 0;
  }
  const size_t bytes = (size_t)1 << 30;
  void *a = NULL, *b = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double ms[5], bw = 0;
#define BW_TRY(call)                                                                 \
  do {                                                                               \
    e = (call);                                                                      \
    if (e != cudaSuccess) {                                                          \
      snprintf(why, whylen, "%s: %s", #call, cudaGetErrorString(e));                 \
      goto out;                                                                      \
    }                                                                                \
  } while (0)
  BW_TRY(cudaSetDevice(node_rank % count));
  BW_TRY(cudaMalloc(&a, bytes));
  BW_TRY(cudaMalloc(&b, bytes));
  BW_TRY(cudaMemset(a, 1, bytes));
  BW_TRY(cudaMemset(b, 0, bytes));
  BW_TRY(cudaEventCreate(&e0));
  BW_TRY(cudaEventCreate(&e1));
  BW_TRY(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); /* untimed */
  BW_TRY(cudaDeviceSynchronize());
  for (int k = 0; k < 5; ++k) {
    float t = 0;
    BW_TRY(cudaEventRecord(e0, 0));
    BW_TRY(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    BW_TRY(cudaEventRecord(e1, 0));
    BW_TRY(cudaEventSynchronize(e1));
    BW_TRY(cudaEventElapsedTime(&t, e0, e1));
    ms[k] = t;
  }
  {
    double s[5];
    memcpy(s, ms, sizeof s);
    qsort(s, 5, sizeof *s, cmp_double);
    bw = s[2] > 0 ? 2.0 * (double)bytes / (s[2] * 1e-3) : 0;
  }
out:
#undef BW_TRY
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (a) cudaFree(a);
  if (b) cudaFree(b);
  return bw;
#else
  snprintf(why, whylen, "rmaop-bench was built without CUDA");
  return 0;
#endif
}

/* One timed solve: repeat rep's time per iteration and communication share; rep < 0 is a warm-up solve (nothing
 * recorded). The first solve of a path keeps its residual history (compared between paths below). */
static void solve_once(path *p, int niter, int rep) {
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = niter;
  rmaop_solver_info info;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rep >= 0) p->t_start[rep] = MPI_Wtime() - g_t0;
  if (p->solver->solve(p->prob.A, p->prob.b, p->x, &o, &info) != RMAOP_OK) die(p->solver->label, p->ctx);
  double t[2] = {info.time_total, info.time_comm}, tmax[2];
  MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rep >= 0) {
    p->t_iter[rep] = tmax[0] / (info.iterations ? info.iterations : 1);
    p->comm_share[rep] = tmax[0] > 0 ? tmax[1] / tmax[0] : 0;
  }
  if (!p->history) {
    p->iterations = info.iterations;
    p->graph = info.graph;
    p->history = malloc((size_t)(info.iterations + 1) * sizeof(double));
    if (!p->history) die("residual history (out of memory)", p->ctx);
    memcpy(p->history, info.history, (size_t)(info.iterations + 1) * sizeof(double));
  }
  rmaop_solver_info_destroy(&info);
}

static machine_ref g_ref; /* the machine's speed before each synchronized repeat (machine_ref.h) */

/* One more solve traced with synchronized starts: the sum over the trace sites of the slowest rank's time
 * inside rmaop's calls (site by site, as rmaop-roofline run measures), per iteration. Every rank records
 * the same sites in the same order (the same solver on the same operator). */
static void solve_synced(path *p, int niter, int rep) {
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = niter;
  rmaop_solver_info info;
  if (machine_ref_time(&g_ref, p->sync_cpu + 2 * rep)) die("CPU reference buffer (out of memory)", p->ctx);
  if (rmaop_trace_reset(p->ctx) != RMAOP_OK || rmaop_trace_enable(p->ctx, RMAOP_TRACE_SYNCED) != RMAOP_OK)
    die("trace", p->ctx);
  MPI_Barrier(MPI_COMM_WORLD);
  p->sync_start[rep] = MPI_Wtime() - g_t0;
  if (p->solver->solve(p->prob.A, p->prob.b, p->x, &o, &info) != RMAOP_OK) die(p->solver->label, p->ctx);
  rmaop_trace_enable(p->ctx, RMAOP_TRACE_OFF);
  int n = 0, nmin = 0, nmax = 0;
  rmaop_trace_count(p->ctx, &n);
  MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  double *t = calloc(2 * (size_t)nmax + 1, sizeof *t), total[2] = {0, 0};
  if (!t) die("trace site times (out of memory)", p->ctx); /* before the collective below, not around it */
  rmaop_trace_site site;
  for (int i = 0; i < n; ++i)
    if (rmaop_trace_get(p->ctx, i, &site) == RMAOP_OK) {
      t[2 * i] = site.time_inside_median * (double)site.calls;
      t[2 * i + 1] = site.time_inside;
    }
  MPI_Allreduce(MPI_IN_PLACE, t, 2 * nmax, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < nmax; ++i) {
    total[0] += t[2 * i];
    total[1] += t[2 * i + 1];
  }
  if (rank == 0 && nmin != nmax) fprintf(stderr, "rmaop-bench: %s: ranks traced %d..%d sites\n", p->name, nmin, nmax);
  p->sync_comm[rep] = total[0] / (info.iterations ? info.iterations : 1);
  p->sync_comm_mean[rep] = total[1] / (info.iterations ? info.iterations : 1);
  free(t);
  rmaop_solver_info_destroy(&info);
}

/* "[v[0], v[stride], ...]" (n values) in format @p fmt. */
static void json_array(FILE *f, const double *v, int n, int stride, const char *fmt) {
  fputc('[', f);
  for (int r = 0; r < n; ++r) {
    if (r) fputs(", ", f);
    fprintf(f, fmt, v[(size_t)r * stride]);
  }
  fputc(']', f);
}

static void write_json(const char *file, const char *problem, const char *solver_list, int64_t n, int niter, int P,
                       path *paths, int np, int repeat, const char *memory, const double bw[3],
                       const skipped_path *skipped, int nskipped) {
  FILE *f = fopen(file, "w");
  if (!f) {
    fprintf(stderr, "rmaop-bench: cannot write %s\n", file);
    return;
  }
  fprintf(f, "{\"problem\": \"%s\", \"solver\": \"%s\", \"n\": %lld, \"niter\": %d, \"ranks\": %d, \"repeat\": %d, "
             "\"memory\": \"%s\", ", problem, solver_list, (long long)n, niter, P, repeat, memory);
  fprintf(f, "\"warmup\": {\"ms\": %d, \"rounds\": %d, \"start_seconds\": %.6f, \"seconds\": %.6f, "
             "\"timed_start_seconds\": %.6f}, ", warm.ms, warm.rounds, warm.start, warm.seconds, warm.start + warm.seconds);
  if (strcmp(memory, "device") == 0)
    fprintf(f, "\"device_copy_bw_bytes_per_s\": {\"rank0\": %.6g, \"min\": %.6g, \"max\": %.6g}, "
               "\"cgls_passes_per_iter\": {\"model\": %d, \"data\": %d}, ",
            bw[0], bw[1], bw[2], CGLS_PASSES_MODEL, CGLS_PASSES_DATA);
  fprintf(f, "\"skipped\": [");
  for (int i = 0; i < nskipped; ++i) {
    fprintf(f, "%s{\"path\": \"%s\", \"why\": \"", i ? ", " : "", skipped[i].name);
    for (const char *c = skipped[i].why; *c; ++c) {
      if (*c == '"' || *c == '\\') fputc('\\', f);
      fputc((unsigned char)*c < 32 ? ' ' : *c, f);
    }
    fprintf(f, "\"}");
  }
  fprintf(f, "], \"paths\": [");
  for (int i = 0; i < np; ++i) {
    path *p = &paths[i];
    fprintf(f, "%s\n {\"path\": \"%s\", \"solver\": \"%s\", \"backend\": \"%s\", \"sync\": \"%s\", \"transport\": \"%s\", ",
            i ? "," : "", p->name, p->solver->name, p->backend, p->sync, p->transport);
    fprintf(f, "\"passes_per_iter\": {\"model\": %d, \"data\": %d}, ", p->solver->passes_model, p->solver->passes_data);
    fprintf(f, "\"iter_seconds\": {\"median\": %.9g, \"min\": %.9g, \"max\": %.9g, \"all\": ", median(p->t_iter, repeat),
            vmin(p->t_iter, repeat), vmax(p->t_iter, repeat));
    json_array(f, p->t_iter, repeat, 1, "%.9g");
    fprintf(f, ", \"start_seconds\": ");
    json_array(f, p->t_start, repeat, 1, "%.6f");
    fprintf(f, "}, \"comm_share\": %.4f, \"ratio_to_first\": %.4f, \"iterations\": %d, ", median(p->comm_share, repeat),
            median(p->t_iter, repeat) / median(paths[0].t_iter, repeat), p->iterations);
    fprintf(f, "\"bytes_per_iter\": %.0f, \"cuda_graph\": %s, ", p->bytes_iter, p->graph ? "true" : "false");
    if (p->sync_comm) {
      fprintf(f, "\"synchronized_comm_per_iter_seconds\": %.9g, \"synchronized_comm_mean_per_iter_seconds\": %.9g, ",
              median(p->sync_comm, repeat), median(p->sync_comm_mean, repeat));
      fprintf(f, "\"synchronized_repeats\": {\"comm_per_iter_seconds\": ");
      json_array(f, p->sync_comm, repeat, 1, "%.9g");
      fprintf(f, ", \"start_seconds\": ");
      json_array(f, p->sync_start, repeat, 1, "%.6f");
      fprintf(f, ", \"cpu_alu_seconds\": "); /* machine_ref.h: compare within this run's repeats only */
      json_array(f, p->sync_cpu, repeat, 2, "%.9g");
      fprintf(f, ", \"cpu_chase_seconds\": ");
      json_array(f, p->sync_cpu + 1, repeat, 2, "%.9g");
      fprintf(f, "}, ");
    }
    if (p->bound > 0)
      fprintf(f, "\"streaming_bound_seconds\": %.9g, \"measured_over_bound\": %.4f, ", p->bound,
              median(p->t_iter, repeat) / p->bound);
    fprintf(f, "\"history\": [");
    for (int k = 0; k <= p->iterations; ++k) fprintf(f, "%s%.17g", k ? ", " : "", p->history[k]);
    fprintf(f, "]}");
  }
  fprintf(f, "\n]}\n");
  fclose(f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  g_t0 = MPI_Wtime();
  int P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  char problem[32] = "deriv1d", backends[256] = "rma,twosided", syncs[256] = "fence,pscw,lock", transports[256] = "auto";
  char memory[16] = "host", solver_list[64] = "cgls";
  const char *json = NULL;
  int64_t n = 1 << 16;
  int niter = 20, repeat = 5, trace_sync = 0, warmup_ms = 2000;
  static struct option longopts[] = {{"problem", 1, 0, 'p'}, {"n", 1, 0, 'n'},      {"niter", 1, 0, 'k'},
                                     {"backends", 1, 0, 'b'}, {"sync", 1, 0, 's'},  {"transport", 1, 0, 't'},
                                     {"repeat", 1, 0, 'r'},  {"json", 1, 0, 'j'},   {"help", 0, 0, 'h'},
                                     {"memory", 1, 0, 'm'},  {"solver", 1, 0, 'S'}, {"trace-sync", 0, 0, 'T'},
                                     {"warmup-ms", 1, 0, 'w'}, {0, 0, 0, 0}};
  int bad = 0;
  long long ival = 0;
  const char *me = "rmaop-bench";
  const int say = rank == 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'p': snprintf(problem, sizeof problem, "%s", optarg); break;
    case 'n':
      if (bench_int_arg(me, "--n", optarg, 8, 1LL << 40, &ival, say))
        n = (int64_t)ival;
      else
        bad = 1;
      break;
    case 'k': bench_opt_int(me, "--niter", optarg, 1, 1000000, &niter, &bad, say); break;
    case 'b': snprintf(backends, sizeof backends, "%s", optarg); break;
    case 's': snprintf(syncs, sizeof syncs, "%s", optarg); break;
    case 't': snprintf(transports, sizeof transports, "%s", optarg); break;
    case 'r': bench_opt_int(me, "--repeat", optarg, 1, 1000000, &repeat, &bad, say); break;
    case 'w': bench_opt_int(me, "--warmup-ms", optarg, 0, 3600000, &warmup_ms, &bad, say); break;
    case 'j': json = optarg; break;
    case 'm': snprintf(memory, sizeof memory, "%s", optarg); break;
    case 'S': snprintf(solver_list, sizeof solver_list, "%s", optarg); break;
    case 'T': trace_sync = 1; break;
    default: usage(); MPI_Finalize(); return c == 'h' ? 0 : 2;
    }
  }
  int known = 0;
  for (int i = 0; bench_problem_names[i]; ++i) known |= strcmp(problem, bench_problem_names[i]) == 0;
  const int on_device = strcmp(memory, "device") == 0;
  if (!known && rank == 0) {
    fprintf(stderr, "rmaop-bench: unknown problem \"%s\" (known:", problem);
    for (int i = 0; bench_problem_names[i]; ++i) fprintf(stderr, " %s", bench_problem_names[i]);
    fprintf(stderr, ")\n");
  }
  if (!on_device && strcmp(memory, "host") != 0 && rank == 0)
    fprintf(stderr, "rmaop-bench: --memory %s: expected host or device\n", memory);
  if (bad || !known || (!on_device && strcmp(memory, "host") != 0)) {
    usage();
    MPI_Finalize();
    return 2;
  }

  /* Device memory: one probe context first, so a library without CUDA (or a machine without a GPU) ends
   * the run with the library's message instead of skipping every path. */
  double bw_local = 0, bw[3] = {0, 0, 0}; /* rank 0's, min, max over ranks (bytes/s) */
  if (on_device) {
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.backend = "twosided";
    o.memory = "device";
    rmaop_ctx probe = NULL;
    rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &probe);
    if (st != RMAOP_OK) {
      if (rank == 0)
        fprintf(stderr, "rmaop-bench: --memory device: %s\n", rmaop_ctx_last_error(NULL));
      MPI_Finalize();
      return 1;
    }
    rmaop_ctx_destroy(&probe);
    char why[256] = "";
    bw_local = device_copy_bandwidth(why, sizeof why);
    if (bw_local <= 0) fprintf(stderr, "rmaop-bench: rank %d: device copy bandwidth not measured: %s\n", rank, why);
    MPI_Allreduce(&bw_local, &bw[1], 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&bw_local, &bw[2], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    bw[0] = bw_local;
    MPI_Bcast(&bw[0], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }

  const bench_solver *sel[NSOLVERS];
  int nsel = 0;
  {
    char list[64], *items[NSOLVERS + 1];
    snprintf(list, sizeof list, "%s", solver_list);
    const int ni = split(list, items, NSOLVERS + 1);
    for (int i = 0; i < ni; ++i) {
      const bench_solver *found = NULL;
      for (int k = 0; k < NSOLVERS; ++k)
        if (strcmp(items[i], solvers[k].name) == 0) found = &solvers[k];
      if (!found || nsel == NSOLVERS) {
        if (rank == 0) fprintf(stderr, "rmaop-bench: bad --solver \"%s\" (a list of cgls, lsqr, cg, pipecg)\n", solver_list);
        usage();
        MPI_Finalize();
        return 2;
      }
      sel[nsel++] = found;
    }
  }
  char *bl[MAX_PATHS], *sl[MAX_PATHS], *tl[MAX_PATHS];
  int nb = split(backends, bl, MAX_PATHS), ns = split(syncs, sl, MAX_PATHS), nt = split(transports, tl, MAX_PATHS);
  path paths[MAX_PATHS];
  int np = 0;
  memset(paths, 0, sizeof paths);
  for (int v = 0; v < nsel; ++v)
    for (int b = 0; b < nb; ++b) {
      int is_rma = strcmp(bl[b], "rma") == 0;
      for (int s = 0; s < (is_rma ? ns : 1); ++s)
        for (int t = 0; t < (is_rma ? nt : 1) && np < MAX_PATHS; ++t) {
          path *p = &paths[np++];
          p->solver = sel[v];
          snprintf(p->backend, sizeof p->backend, "%s", bl[b]);
          snprintf(p->sync, sizeof p->sync, "%s", is_rma ? sl[s] : "-");
          snprintf(p->transport, sizeof p->transport, "%s", is_rma ? tl[t] : "-");
          char base[48];
          if (is_rma) snprintf(base, sizeof base, "rma.%s.%s", p->sync, p->transport);
          else snprintf(base, sizeof base, "%s", p->backend);
          if (nsel > 1) snprintf(p->name, sizeof p->name, "%s/%s", sel[v]->name, base);
          else snprintf(p->name, sizeof p->name, "%s", base);
        }
    }
  skipped_path skipped[MAX_PATHS];
  int nskipped = 0, nrun = 0;
  for (int i = 0; i < np; ++i) {
    path *p = &paths[i];
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.backend = p->backend;
    o.memory = memory;
    if (strcmp(p->backend, "rma") == 0) {
      o.rma.sync = p->sync;
      o.rma.transport = p->transport;
    }
    /* Collective and agreed: every rank gets the same status, so every rank skips alike. */
    rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &p->ctx);
    if (st == RMAOP_ERR_UNSUPPORTED) {
      skipped_path *k = &skipped[nskipped++];
      snprintf(k->name, sizeof k->name, "%s", p->name);
      snprintf(k->why, sizeof k->why, "%s", rmaop_ctx_last_error(NULL));
      if (rank == 0) printf("rmaop-bench: path %s skipped: %s\n", k->name, k->why);
      continue;
    }
    if (st != RMAOP_OK) die(p->name, NULL);
    if (bench_problem_create(p->ctx, problem, n, &p->prob) != RMAOP_OK) die("problem set-up", p->ctx);
    if (rmaop_vec_duplicate(p->prob.x_true, &p->x) != RMAOP_OK) die("vector", p->ctx);
    p->t_iter = calloc((size_t)repeat, sizeof(double));
    p->comm_share = calloc((size_t)repeat, sizeof(double));
    p->t_start = calloc((size_t)repeat, sizeof(double));
    if (!p->t_iter || !p->comm_share || !p->t_start) die("repeat times (out of memory)", p->ctx);
    if (trace_sync) {
      p->sync_comm = calloc((size_t)repeat, sizeof(double));
      p->sync_comm_mean = calloc((size_t)repeat, sizeof(double));
      p->sync_start = calloc((size_t)repeat, sizeof(double));
      p->sync_cpu = calloc(2 * (size_t)repeat, sizeof(double));
      if (!p->sync_comm || !p->sync_comm_mean || !p->sync_start || !p->sync_cpu)
        die("--trace-sync times (out of memory)", p->ctx);
    }
    rmaop_vec_info mi, di;
    if (rmaop_vec_get_info(p->prob.x_true, &mi) != RMAOP_OK || rmaop_vec_get_info(p->prob.b, &di) != RMAOP_OK)
      die("vector info", p->ctx);
    double local[2] = {(double)(p->solver->passes_model * mi.local_n + p->solver->passes_data * di.local_n) *
                           (double)rmaop_dtype_size(mi.dtype), 0};
    local[1] = bw_local > 0 ? local[0] / bw_local : 0;
    double worst[2];
    MPI_Allreduce(local, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int all_measured = bw_local > 0, every = 0;
    MPI_Allreduce(&all_measured, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    p->bytes_iter = worst[0];
    p->bound = on_device && every ? worst[1] : 0;
    if (nrun != i) paths[nrun] = *p; /* keep the paths that run contiguous */
    ++nrun;
  }
  np = nrun;
  if (np == 0) {
    if (rank == 0) fprintf(stderr, "rmaop-bench: no path could run (%d skipped)\n", nskipped);
    MPI_Finalize();
    return 1;
  }
  /* Warm-up (and the histories): rounds over the paths until warmup_ms have passed; rank 0's clock decides, so
   * every rank runs the same solves. */
  const double warm_start = MPI_Wtime();
  warm.ms = warmup_ms;
  for (int more = 1; more; ++warm.rounds) {
    for (int i = 0; i < np; ++i) solve_once(&paths[i], niter, -1);
    more = MPI_Wtime() - warm_start < 1e-3 * warmup_ms;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  warm.start = warm_start - g_t0;
  warm.seconds = MPI_Wtime() - warm_start;
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < np; ++i) solve_once(&paths[i], niter, r);
  for (int r = 0; r < repeat && trace_sync; ++r) /* interleaved like the timed repeats */
    for (int i = 0; i < np; ++i) solve_synced(&paths[i], niter, r);

  int mismatch = 0;
  const double tol = P <= 2 ? 1e-10 : 1e-6; /* see the header: reduction order on 3 or more ranks */
  for (int i = 1; i < np; ++i) {
    int f = 0; /* the first path of the same solver: histories are compared within a solver */
    while (paths[f].solver != paths[i].solver) ++f;
    if (f == i) continue;
    if (paths[i].iterations != paths[f].iterations) mismatch = 1;
    for (int k = 0; k <= paths[i].iterations && !mismatch; ++k) {
      double a = paths[f].history[k], b = paths[i].history[k];
      const double scale = P <= 2 ? fabs(a) : fabs(paths[f].history[0]);
      if (fabs(a - b) > tol * fmax(scale, 1e-300)) {
        if (rank == 0)
          fprintf(stderr, "rmaop-bench: FAIL: %s's residual history differs from %s's at iteration %d: %.17g vs %.17g\n",
                  paths[i].name, paths[f].name, k, b, a);
        mismatch = 1;
      }
    }
  }
  if (rank == 0) {
    printf("rmaop-bench: problem %s, n %lld, %d ranks, solver %s, %d iterations, %d repeats (interleaved), memory %s\n",
           problem, (long long)n, P, solver_list, niter, repeat, memory);
    printf("warm-up: %d round(s) over the paths in %.2f s (--warmup-ms %d), from %.2f s after MPI_Init\n", warm.rounds,
           warm.seconds, warm.ms, warm.start);
    if (on_device) {
      if (bw[1] > 0)
        printf("device copy bandwidth: %.1f GB/s on rank 0 (ranks: %.1f .. %.1f GB/s); cudaMemcpy D2D 1 GiB, CUDA events, "
               "median of 5, bytes read + written\n", 1e-9 * bw[0], 1e-9 * bw[1], 1e-9 * bw[2]);
      else
        printf("device copy bandwidth: not measured on every rank (see stderr); no streaming bound\n");
      for (int v = 0; v < nsel; ++v)
        printf("streaming bound = %s bytes per iteration (%d model + %d data vector passes x 8 B x local_n, busiest "
               "rank) / that rank's copy bandwidth\n", sel[v]->label, sel[v]->passes_model, sel[v]->passes_data);
    }
    for (int i = 0; i < nskipped; ++i) printf("skipped: %-22s %s\n", skipped[i].name, skipped[i].why);
    for (int i = 0; i < np; ++i)
      if (i == 0 || paths[i].solver != paths[i - 1].solver)
        printf("%s: %d iterations, final residual %.6e (history[0] %.6e)\n", paths[i].solver->label,
               paths[i].iterations, paths[i].history[paths[i].iterations], paths[i].history[0]);
    printf("histories %s across the paths of each solver (%.0e of %s)\n", mismatch ? "DIFFER" : "agree", tol,
           P <= 2 ? "each entry" : "the initial residual: the ranks' partial sums are added in different orders");
    printf("%-22s %12s %12s %12s %8s %8s", "path", "median us/it", "min us/it", "max us/it", "comm %", "ratio");
    if (on_device) printf(" %12s %12s %11s", "MB/it", "bound us/it", "meas/bound");
    if (trace_sync) printf(" %14s %15s", "sync comm us/it", "sync mean us/it");
    printf("\n");
    for (int i = 0; i < np; ++i) {
      path *p = &paths[i];
      printf("%-22s %12.2f %12.2f %12.2f %7.1f%% %8.3f", p->name, 1e6 * median(p->t_iter, repeat),
             1e6 * vmin(p->t_iter, repeat), 1e6 * vmax(p->t_iter, repeat), 100 * median(p->comm_share, repeat),
             median(p->t_iter, repeat) / median(paths[0].t_iter, repeat));
      if (on_device && p->bound > 0)
        printf(" %12.3f %12.2f %11.2f", 1e-6 * p->bytes_iter, 1e6 * p->bound, median(p->t_iter, repeat) / p->bound);
      else if (on_device)
        printf(" %12.3f %12s %11s", 1e-6 * p->bytes_iter, "-", "-");
      if (trace_sync) printf(" %14.2f %15.2f", 1e6 * median(p->sync_comm, repeat), 1e6 * median(p->sync_comm_mean, repeat));
      printf("%s\n", p->graph == 2 ? "  (one CUDA graph, WHILE node)" : p->graph ? "  (CUDA graph per iteration)" : "");
    }
    if (json) write_json(json, problem, solver_list, n, niter, P, paths, np, repeat, memory, bw, skipped, nskipped);
  }
  for (int i = 0; i < np; ++i) {
    bench_problem_free(&paths[i].prob);
    rmaop_vec_destroy(&paths[i].x);
    rmaop_ctx_destroy(&paths[i].ctx);
    free(paths[i].history);
    free(paths[i].t_iter);
    free(paths[i].comm_share);
    free(paths[i].t_start);
    free(paths[i].sync_comm);
    free(paths[i].sync_comm_mean);
    free(paths[i].sync_start);
    free(paths[i].sync_cpu);
  }
  machine_ref_free(&g_ref);
  MPI_Finalize();
  return mismatch ? 1 : 0;
}
