/* rmaop-bench: the same problem and CGLS run on several communication paths, side by side.
 *
 *   mpiexec -n P rmaop-bench --problem deriv1d --n 1048576 --niter 50 --backends rma,twosided \
 *                            [--sync fence,pscw,lock] [--transport auto] [--repeat 5] [--json out.json]
 *
 * Every path solves from x0 = 0; the residual histories must agree with the first path's to 1e-10
 * (relative) or the run fails. Repeats are interleaved over the paths so machine noise hits all alike.
 * Uses only the public API. */
#include "problems.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATHS 32

typedef struct {
  char backend[16], sync[16], transport[16], name[64];
  rmaop_ctx ctx;
  bench_problem prob;
  rmaop_vec x;
  double *history;
  int iterations;
  double *t_iter, *comm_share; /* per repeat */
} path;

static int rank;

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
    fprintf(stderr, "usage: rmaop-bench --problem deriv1d|lap2d|bdiag|vstack --n N --niter K [--backends rma,twosided]\n"
                    "                   [--sync fence,pscw,lock] [--transport auto|mpi|shm] [--repeat R] [--json FILE]\n");
}

static void solve_once(path *p, int niter, int rep) {
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = niter;
  rmaop_solver_info info;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rmaop_solve_cgls(p->prob.A, p->prob.b, p->x, &o, &info) != RMAOP_OK) die("rmaop_solve_cgls", p->ctx);
  double t[2] = {info.time_total, info.time_comm}, tmax[2];
  MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  p->t_iter[rep] = tmax[0] / (info.iterations ? info.iterations : 1);
  p->comm_share[rep] = tmax[0] > 0 ? tmax[1] / tmax[0] : 0;
  if (rep == 0) {
    p->iterations = info.iterations;
    p->history = malloc((size_t)(info.iterations + 1) * sizeof(double));
    memcpy(p->history, info.history, (size_t)(info.iterations + 1) * sizeof(double));
  }
  rmaop_solver_info_free(&info);
}

static void write_json(const char *file, const char *problem, int64_t n, int niter, int P, path *paths, int np, int repeat) {
  FILE *f = fopen(file, "w");
  if (!f) {
    fprintf(stderr, "rmaop-bench: cannot write %s\n", file);
    return;
  }
  fprintf(f, "{\"problem\": \"%s\", \"n\": %lld, \"niter\": %d, \"ranks\": %d, \"repeat\": %d, \"paths\": [", problem,
          (long long)n, niter, P, repeat);
  for (int i = 0; i < np; ++i) {
    path *p = &paths[i];
    fprintf(f, "%s\n {\"path\": \"%s\", \"backend\": \"%s\", \"sync\": \"%s\", \"transport\": \"%s\", ", i ? "," : "",
            p->name, p->backend, p->sync, p->transport);
    fprintf(f, "\"iter_seconds\": {\"median\": %.9g, \"min\": %.9g, \"max\": %.9g, \"all\": [", median(p->t_iter, repeat),
            vmin(p->t_iter, repeat), vmax(p->t_iter, repeat));
    for (int r = 0; r < repeat; ++r) fprintf(f, "%s%.9g", r ? ", " : "", p->t_iter[r]);
    fprintf(f, "]}, \"comm_share\": %.4f, \"ratio_to_first\": %.4f, \"iterations\": %d, \"history\": [",
            median(p->comm_share, repeat), median(p->t_iter, repeat) / median(paths[0].t_iter, repeat), p->iterations);
    for (int k = 0; k <= p->iterations; ++k) fprintf(f, "%s%.17g", k ? ", " : "", p->history[k]);
    fprintf(f, "]}");
  }
  fprintf(f, "\n]}\n");
  fclose(f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  char problem[32] = "deriv1d", backends[256] = "rma,twosided", syncs[256] = "fence,pscw,lock", transports[256] = "auto";
  const char *json = NULL;
  int64_t n = 1 << 16;
  int niter = 20, repeat = 5;
  static struct option longopts[] = {{"problem", 1, 0, 'p'}, {"n", 1, 0, 'n'},      {"niter", 1, 0, 'k'},
                                     {"backends", 1, 0, 'b'}, {"sync", 1, 0, 's'},  {"transport", 1, 0, 't'},
                                     {"repeat", 1, 0, 'r'},  {"json", 1, 0, 'j'},   {"help", 0, 0, 'h'},
                                     {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'p': snprintf(problem, sizeof problem, "%s", optarg); break;
    case 'n': n = atoll(optarg); break;
    case 'k': niter = atoi(optarg); break;
    case 'b': snprintf(backends, sizeof backends, "%s", optarg); break;
    case 's': snprintf(syncs, sizeof syncs, "%s", optarg); break;
    case 't': snprintf(transports, sizeof transports, "%s", optarg); break;
    case 'r': repeat = atoi(optarg); break;
    case 'j': json = optarg; break;
    default: usage(); MPI_Finalize(); return c == 'h' ? 0 : 2;
    }
  }
  int known = 0;
  for (int i = 0; bench_problem_names[i]; ++i) known |= strcmp(problem, bench_problem_names[i]) == 0;
  if (!known || n < 8 || niter < 1 || repeat < 1) {
    if (rank == 0) fprintf(stderr, "rmaop-bench: bad arguments (problem \"%s\", n %lld, niter %d, repeat %d)\n", problem, (long long)n, niter, repeat);
    usage();
    MPI_Finalize();
    return 2;
  }

  char *bl[MAX_PATHS], *sl[MAX_PATHS], *tl[MAX_PATHS];
  int nb = split(backends, bl, MAX_PATHS), ns = split(syncs, sl, MAX_PATHS), nt = split(transports, tl, MAX_PATHS);
  path paths[MAX_PATHS];
  int np = 0;
  memset(paths, 0, sizeof paths);
  for (int b = 0; b < nb; ++b) {
    int is_rma = strcmp(bl[b], "rma") == 0;
    for (int s = 0; s < (is_rma ? ns : 1); ++s)
      for (int t = 0; t < (is_rma ? nt : 1) && np < MAX_PATHS; ++t) {
        path *p = &paths[np++];
        snprintf(p->backend, sizeof p->backend, "%s", bl[b]);
        snprintf(p->sync, sizeof p->sync, "%s", is_rma ? sl[s] : "-");
        snprintf(p->transport, sizeof p->transport, "%s", is_rma ? tl[t] : "-");
        if (is_rma) snprintf(p->name, sizeof p->name, "rma.%s.%s", p->sync, p->transport);
        else snprintf(p->name, sizeof p->name, "%s", p->backend);
      }
  }
  for (int i = 0; i < np; ++i) {
    path *p = &paths[i];
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.backend = p->backend;
    o.memory = "host";
    if (strcmp(p->backend, "rma") == 0) {
      o.rma_sync = p->sync;
      o.rma_transport = p->transport;
    }
    if (rmaop_ctx_create(MPI_COMM_WORLD, &o, &p->ctx) != RMAOP_OK) die(p->name, NULL);
    if (bench_problem_create(p->ctx, problem, n, &p->prob) != RMAOP_OK) die("problem set-up", p->ctx);
    if (rmaop_vec_duplicate(p->prob.x_true, &p->x) != RMAOP_OK) die("vector", p->ctx);
    p->t_iter = calloc((size_t)repeat, sizeof(double));
    p->comm_share = calloc((size_t)repeat, sizeof(double));
  }
  for (int i = 0; i < np; ++i) solve_once(&paths[i], niter, 0); /* warm-up, and the histories */
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < np; ++i) solve_once(&paths[i], niter, r);

  int mismatch = 0;
  for (int i = 1; i < np; ++i) {
    if (paths[i].iterations != paths[0].iterations) mismatch = 1;
    for (int k = 0; k <= paths[i].iterations && !mismatch; ++k) {
      double a = paths[0].history[k], b = paths[i].history[k];
      if (fabs(a - b) > 1e-10 * fmax(fabs(a), 1e-300)) {
        if (rank == 0)
          fprintf(stderr, "rmaop-bench: FAIL: %s's residual history differs from %s's at iteration %d: %.17g vs %.17g\n",
                  paths[i].name, paths[0].name, k, b, a);
        mismatch = 1;
      }
    }
  }
  if (rank == 0) {
    printf("rmaop-bench: problem %s, n %lld, %d ranks, CGLS %d iterations, %d repeats (interleaved)\n", problem,
           (long long)n, P, niter, repeat);
    printf("final residual %.6e (history[0] %.6e); histories %s across paths (rel 1e-10)\n",
           paths[0].history[paths[0].iterations], paths[0].history[0], mismatch ? "DIFFER" : "agree");
    printf("%-22s %12s %12s %12s %8s %8s\n", "path", "median us/it", "min us/it", "max us/it", "comm %", "ratio");
    for (int i = 0; i < np; ++i) {
      path *p = &paths[i];
      printf("%-22s %12.2f %12.2f %12.2f %7.1f%% %8.3f\n", p->name, 1e6 * median(p->t_iter, repeat),
             1e6 * vmin(p->t_iter, repeat), 1e6 * vmax(p->t_iter, repeat), 100 * median(p->comm_share, repeat),
             median(p->t_iter, repeat) / median(paths[0].t_iter, repeat));
    }
    if (json) write_json(json, problem, n, niter, P, paths, np, repeat);
  }
  for (int i = 0; i < np; ++i) {
    bench_problem_free(&paths[i].prob);
    rmaop_vec_destroy(&paths[i].x);
    rmaop_ctx_destroy(&paths[i].ctx);
    free(paths[i].history);
    free(paths[i].t_iter);
    free(paths[i].comm_share);
  }
  MPI_Finalize();
  return mismatch ? 1 : 0;
}
