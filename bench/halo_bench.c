/*
 * halo_bench.c -- rmaop-halo-bench: the first benchmark of rmaop's communication paths against plain MPI.
 *
 *   mpiexec -n 2 rmaop-halo-bench [--reps N] [--warmup N] [--rounds N] [--json FILE] [--strict]
 *
 * On P ranks in a ring, for every path -- the rma backend with each epoch synchronization (fence, pscw, lock)
 * over each transport (shm, mpi), the twosided backend, and plain MPI as the baseline -- it times:
 *   halo 8B    an rmaop_plan sending 1 double to the left and 1 double to the right neighbour
 *              (baselines: MPI_Irecv x2 + MPI_Isend x2 + MPI_Waitall on the same buffers, and two
 *              MPI_Sendrecv shifts)
 *   halo 1MiB  the same with 131072 doubles (1 MiB) per neighbour
 *   reduce 8B  rmaop_allreduce of 1 double (baseline: MPI_Allreduce); its arguments are agreed first (one
 *              extra small allreduce: a bad count on one rank must not hang the others)
 *   dot 8B     rmaop_vec_dot of vectors holding 1 double per rank: the solvers' reduction, one collective
 *              carrying the data and the failure flag (baseline: MPI_Allreduce)
 * and, as a floor for the halo columns, "memcpy floor": each rank copies the same bytes locally (two memcpy
 * of m doubles, no communication, no synchronization), the least any path that copies once can cost.
 *
 * Method: one context per path, all created up front (rmaop_ctx_options with explicit names, so the
 * RMAOP_* environment does not matter). Every path's results are checked once before timing. Then
 * --rounds rounds; in each round every path (in an order rotated per round, so slow drifts of the machine
 * hit all paths alike) runs each test: --warmup untimed repetitions, then reps/rounds timed ones. Every
 * repetition starts after an (untimed) MPI_Barrier and times one complete operation (plan begin + end, or
 * one allreduce) with MPI_Wtime. After all rounds, the per-repetition times are reduced with MPI_MAX over the
 * ranks (the slowest rank defines a repetition) and we report the median and the minimum. GB/s for the
 * 1 MiB halo: bytes sent per rank per exchange (2 x 1 MiB) / median time.
 *
 * Uses only <rmaop/rmaop.h> and MPI.
 */
#include <rmaop/rmaop.h>

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

#define SMALL_COUNT 1       /* doubles per neighbour: 8 B */
#define BIG_COUNT (1 << 17) /* doubles per neighbour: 1 MiB */
enum { T_HALO_SMALL, T_HALO_BIG, T_REDUCE, T_DOT, NTESTS };
static const char *const test_name[NTESTS] = {"halo_8B", "halo_1MiB", "reduce_8B", "dot_8B"};

static int g_rank, g_size;

typedef struct {
  int64_t m;         /* doubles per neighbour */
  double *src, *dst; /* 2m each: src[0..m) goes left, src[m..2m) right; dst[0..m) from left, dst[m..2m) from right */
  rmaop_plan plan;   /* NULL for the MPI baseline */
} halo_case;

typedef struct {
  const char *name, *backend, *sync, *transport; /* backend NULL: plain MPI baseline or memcpy floor */
  int floor;                                     /* 1: the memcpy floor (halo tests only) */
  int sendrecv;                                  /* baseline halo as two MPI_Sendrecv instead of Isend/Irecv */
  int64_t wrong_after;                           /* wrong values in the check after timing */
  rmaop_ctx ctx;
  MPI_Comm comm; /* the baseline's duplicate of MPI_COMM_WORLD */
  halo_case halo[2];
  rmaop_layout one;  /* one element per rank (dot test) */
  rmaop_vec x, y;
  char transport_used[32];
  char error[512]; /* non-empty: path unavailable or wrong; not timed */
  double *t[NTESTS];
  double median[NTESTS], min[NTESTS];
} path;

static path g_paths[] = {
    {.name = "rma/fence/shm", .backend = "rma", .sync = "fence", .transport = "shm"},
    {.name = "rma/pscw/shm", .backend = "rma", .sync = "pscw", .transport = "shm"},
    {.name = "rma/lock/shm", .backend = "rma", .sync = "lock", .transport = "shm"},
    {.name = "rma/fence/mpi", .backend = "rma", .sync = "fence", .transport = "mpi"},
    {.name = "rma/pscw/mpi", .backend = "rma", .sync = "pscw", .transport = "mpi"},
    {.name = "rma/lock/mpi", .backend = "rma", .sync = "lock", .transport = "mpi"},
    {.name = "twosided", .backend = "twosided", .sync = "-", .transport = "-"},
    {.name = "MPI Isend/Irecv", .backend = NULL, .sync = "-", .transport = "-"},
    {.name = "MPI Sendrecv", .backend = NULL, .sync = "-", .transport = "-", .sendrecv = 1},
    {.name = "memcpy floor", .backend = NULL, .sync = "-", .transport = "-", .floor = 1},
};
enum { NPATHS = (int)(sizeof g_paths / sizeof g_paths[0]) };

typedef struct {
  int reps, warmup, rounds, strict;
  const char *json;
} bench_args;

/* An error while timing leaves the other ranks waiting inside an operation: stop the job. */
/* The library's message (it starts with the status name), or the status name when there is none. A failed
 * rmaop_ctx_create leaves no context: its message is the process-wide one (p->ctx is NULL then). */
static const char *status_message(const path *p, rmaop_status st) {
  const char *msg = rmaop_ctx_last_error(p->ctx);
  return msg[0] ? msg : rmaop_status_string(st);
}

static void fail(const path *p, const char *what, rmaop_status st) {
  fprintf(stderr, "[rank %d] %s: %s: %s\n", g_rank, p->name, what, status_message(p, st));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "[rank %d] out of memory (%zu bytes)\n", g_rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static int left_of(int r) {
  return (r + g_size - 1) % g_size;
}
static int right_of(int r) {
  return (r + 1) % g_size;
}

/* ---- one operation of each test ---------------------------------------------------------------------- */

static void halo_once(path *p, halo_case *h) {
  if (p->backend) {
    rmaop_status st = rmaop_plan_begin(h->plan, h->src, h->dst, RMAOP_INSERT);
    if (st == RMAOP_OK) {
      st = rmaop_plan_end(h->plan);
    }
    if (st != RMAOP_OK) {
      fail(p, "halo exchange", st);
    }
    return;
  }
  if (p->floor) {
    memcpy(h->dst, h->src + h->m, (size_t)h->m * sizeof(double));
    memcpy(h->dst + h->m, h->src, (size_t)h->m * sizeof(double));
    return;
  }
  const int m = (int)h->m, left = left_of(g_rank), right = right_of(g_rank);
  if (p->sendrecv) { /* shift left, then shift right */
    MPI_Sendrecv(h->src, m, MPI_DOUBLE, left, 0, h->dst + m, m, MPI_DOUBLE, right, 0, p->comm, MPI_STATUS_IGNORE);
    MPI_Sendrecv(h->src + m, m, MPI_DOUBLE, right, 1, h->dst, m, MPI_DOUBLE, left, 1, p->comm, MPI_STATUS_IGNORE);
    return;
  }
  MPI_Request req[4];
  MPI_Irecv(h->dst, m, MPI_DOUBLE, left, 1, p->comm, &req[0]);
  MPI_Irecv(h->dst + m, m, MPI_DOUBLE, right, 0, p->comm, &req[1]);
  MPI_Isend(h->src, m, MPI_DOUBLE, left, 0, p->comm, &req[2]);
  MPI_Isend(h->src + m, m, MPI_DOUBLE, right, 1, p->comm, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

static double reduce_once(path *p) {
  const double in = g_rank + 1.0;
  double out = 0;
  if (p->backend) {
    const rmaop_status st = rmaop_allreduce(p->ctx, &in, &out, 1, RMAOP_SUM, "reduce_8B");
    if (st != RMAOP_OK) {
      fail(p, "rmaop_allreduce", st);
    }
  } else {
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, p->comm);
  }
  return out;
}

/* sum over ranks of (rank + 1) * 1, as a dot product of two distributed vectors */
static double dot_once(path *p) {
  const double in = g_rank + 1.0;
  double out = 0;
  if (p->backend) {
    double _Complex d = 0;
    const rmaop_status st = rmaop_vec_dot(p->x, p->y, &d);
    if (st != RMAOP_OK) {
      fail(p, "rmaop_vec_dot", st);
    }
    out = creal(d);
  } else {
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, p->comm);
  }
  return out;
}

static void run_once(path *p, int test) {
  if (test == T_DOT) {
    (void)dot_once(p);
  } else if (test == T_REDUCE) {
    (void)reduce_once(p);
  } else {
    halo_once(p, &p->halo[test]);
  }
}

/* ---- set-up and checks -------------------------------------------------------------------------------- */

static rmaop_status halo_setup(path *p, halo_case *h, int64_t m) {
  h->m = m;
  h->src = xmalloc(2 * (size_t)m * sizeof(double));
  h->dst = xmalloc(2 * (size_t)m * sizeof(double));
  h->plan = NULL;
  if (!p->backend) {
    return RMAOP_OK;
  }
  const rmaop_transfer sends[2] = {{left_of(g_rank), 0, m, m}, {right_of(g_rank), m, 0, m}};
  const rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                                .src_len = 2 * m,
                                .dst_len = 2 * m,
                                .nsends = 2,
                                .sends = sends,
                                .nrecvs = -1,
                                .recvs = NULL,
                                .label = m == SMALL_COUNT ? "halo_8B" : "halo_1MiB"};
  return rmaop_plan_create(p->ctx, &spec, &h->plan);
}

/* Source element i of rank r in check generation gen: unique over the ring and over generations, so a
 * misplaced or stale element shows. */
static double src_value(int64_t gen, int64_t r, int64_t m, int64_t i) {
  return (double)(gen * 1000000000 + r * 2 * m + i);
}

/* Number of wrong destination elements after one exchange of fresh source values (this rank). */
static int64_t halo_check(path *p, halo_case *h, int64_t gen) {
  const int64_t m = h->m, l = left_of(g_rank), r = right_of(g_rank);
  for (int64_t i = 0; i < 2 * m; ++i) {
    h->src[i] = src_value(gen, g_rank, m, i);
  }
  memset(h->dst, 0, 2 * (size_t)m * sizeof(double));
  halo_once(p, h);
  int64_t bad = 0;
  for (int64_t j = 0; j < m; ++j) {
    bad += h->dst[j] != src_value(gen, l, m, m + j); /* the left neighbour's right half */
    bad += h->dst[m + j] != src_value(gen, r, m, j); /* the right neighbour's left half */
  }
  return bad;
}

/* Collective. Wrong values over all ranks, both halo sizes and the reduction. */
static int64_t path_check(path *p, int64_t gen) {
  int64_t bad = halo_check(p, &p->halo[0], gen) + halo_check(p, &p->halo[1], gen);
  bad += reduce_once(p) != 0.5 * g_size * (g_size + 1);
  bad += dot_once(p) != 0.5 * g_size * (g_size + 1);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return bad;
}

/* The transport rank 0's small halo actually used, from one traced exchange. */
static void record_transport(path *p) {
  snprintf(p->transport_used, sizeof p->transport_used, "%s", p->backend ? "?" : "-");
  if (!p->backend || rmaop_trace_reset(p->ctx) != RMAOP_OK || rmaop_trace_enable(p->ctx, 1) != RMAOP_OK) {
    return;
  }
  halo_once(p, &p->halo[T_HALO_SMALL]);
  rmaop_trace_enable(p->ctx, 0);
  int n = 0;
  rmaop_trace_count(p->ctx, &n);
  for (int i = 0; i < n; ++i) {
    rmaop_trace_site s;
    if (rmaop_trace_get(p->ctx, i, &s) == RMAOP_OK && strcmp(s.kind, "plan") == 0 && s.transport) {
      snprintf(p->transport_used, sizeof p->transport_used, "%s", s.transport);
    }
  }
  rmaop_trace_reset(p->ctx);
}

/* Collective. Creates the path's context and plans and checks one exchange and one reduction. On failure
 * (the same on every rank: rmaop's collective calls agree) the path keeps a message and is not timed. */
static void path_setup(path *p) {
  rmaop_status st = RMAOP_OK;
  const char *what = "";
  if (p->backend) {
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.backend = p->backend;
    o.memory = "host";
    o.rma.sync = strcmp(p->sync, "-") ? p->sync : "lock";
    o.rma.transport = strcmp(p->transport, "-") ? p->transport : "auto";
    o.trace = 0;
    what = "rmaop_ctx_create";
    st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &p->ctx);
  } else if (!p->floor) {
    MPI_Comm_dup(MPI_COMM_WORLD, &p->comm);
  }
  for (int i = 0; i < 2 && st == RMAOP_OK; ++i) {
    what = "rmaop_plan_create";
    st = halo_setup(p, &p->halo[i], i == 0 ? SMALL_COUNT : BIG_COUNT);
  }
  if (st == RMAOP_OK && p->backend) {
    what = "dot vectors";
    st = rmaop_layout_create(p->ctx, RMAOP_LAYOUT_SCATTER, g_size, &p->one);
    if (st == RMAOP_OK) st = rmaop_vec_create(p->one, RMAOP_F64, &p->x);
    if (st == RMAOP_OK) st = rmaop_vec_create(p->one, RMAOP_F64, &p->y);
    if (st == RMAOP_OK) st = rmaop_vec_set(p->x, g_rank + 1.0);
    if (st == RMAOP_OK) st = rmaop_vec_set(p->y, 1.0);
  }
  if (st != RMAOP_OK) {
    snprintf(p->error, sizeof p->error, "%s: %s", what, status_message(p, st));
    return;
  }
  if (p->floor) {
    for (int i = 0; i < 2; ++i) {
      memset(p->halo[i].src, 0, 2 * (size_t)p->halo[i].m * sizeof(double));
    }
    snprintf(p->transport_used, sizeof p->transport_used, "memcpy");
    return;
  }
  const int64_t bad = path_check(p, 0);
  if (bad) {
    snprintf(p->error, sizeof p->error, "WRONG RESULTS: %lld wrong values over all ranks", (long long)bad);
    return;
  }
  record_transport(p);
}

static void path_free(path *p) {
  for (int i = 0; i < 2; ++i) {
    if (p->halo[i].plan) {
      rmaop_plan_destroy(&p->halo[i].plan);
    }
    free(p->halo[i].src);
    free(p->halo[i].dst);
  }
  if (p->backend) {
    rmaop_vec_destroy(&p->x);
    rmaop_vec_destroy(&p->y);
    rmaop_layout_destroy(&p->one);
    rmaop_ctx_destroy(&p->ctx);
  } else if (!p->floor) {
    MPI_Comm_free(&p->comm);
  }
  for (int t = 0; t < NTESTS; ++t) {
    free(p->t[t]);
  }
}

/* ---- timing ------------------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void time_test(path *p, int test, int warmup, int reps, double *t) {
  for (int r = -warmup; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    run_once(p, test);
    const double t1 = MPI_Wtime();
    if (r >= 0) {
      t[r] = t1 - t0;
    }
  }
}

static void run_rounds(const bench_args *a) {
  const int per_round = (a->reps + a->rounds - 1) / a->rounds, total = per_round * a->rounds;
  for (int i = 0; i < NPATHS; ++i) {
    for (int t = 0; t < NTESTS; ++t) {
      g_paths[i].t[t] = xmalloc((size_t)total * sizeof(double));
    }
  }
  for (int round = 0; round < a->rounds; ++round) {
    for (int k = 0; k < NPATHS; ++k) {
      path *p = &g_paths[(k + round) % NPATHS];
      if (p->error[0]) {
        continue;
      }
      for (int t = 0; t < (p->floor ? T_REDUCE : NTESTS); ++t) {
        time_test(p, t, a->warmup, per_round, p->t[t] + (size_t)round * per_round);
      }
    }
  }
  /* Outside the timed region: the slowest rank of every repetition, then median and minimum. */
  for (int i = 0; i < NPATHS; ++i) {
    path *p = &g_paths[i];
    if (p->error[0]) {
      continue;
    }
    for (int t = 0; t < (p->floor ? T_REDUCE : NTESTS); ++t) {
      MPI_Allreduce(MPI_IN_PLACE, p->t[t], total, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      qsort(p->t[t], (size_t)total, sizeof(double), cmp_double);
      const double med = total % 2 ? p->t[t][total / 2] : 0.5 * (p->t[t][total / 2 - 1] + p->t[t][total / 2]);
      p->median[t] = 1e6 * med;
      p->min[t] = 1e6 * p->t[t][0];
    }
  }
}

/* ---- output ------------------------------------------------------------------------------------------- */

static double big_gbs(const path *p) {
  return 2.0 * BIG_COUNT * sizeof(double) / (p->median[T_HALO_BIG] * 1e-6) / 1e9;
}

static void print_table(const bench_args *a, int total_reps, const char *host, const char *mpi_version) {
  printf("rmaop-halo-bench: %d ranks on %s | %s\n", g_size, host, mpi_version);
  printf("%d timed repetitions per test and path (%d rounds, %d warm-up per round); per repetition the slowest "
         "rank; times in microseconds\n\n",
         total_reps, a->rounds, a->warmup);
  printf("%-14s %-9s | %18s | %19s %8s | %18s | %18s\n", "path", "transport", "halo 2x8B med/min",
         "halo 2x1MiB med/min", "GB/s", "reduce 8B med/min", "dot 8B med/min");
  for (int i = 0; i < 120; ++i) {
    putchar('-');
  }
  putchar('\n');
  for (int i = 0; i < NPATHS; ++i) {
    const path *p = &g_paths[i];
    if (p->error[0]) {
      printf("%-14s not run: %s\n", p->name, p->error);
      continue;
    }
    printf("%-14s %-9s | %8.2f / %7.2f | %9.1f / %7.1f %8.2f | ", p->name, p->transport_used, p->median[T_HALO_SMALL],
           p->min[T_HALO_SMALL], p->median[T_HALO_BIG], p->min[T_HALO_BIG], big_gbs(p));
    if (p->floor) {
      printf("%18s\n", "-");
    } else {
      printf("%8.2f / %7.2f | %8.2f / %7.2f%s\n", p->median[T_REDUCE], p->min[T_REDUCE], p->median[T_DOT],
             p->min[T_DOT], p->wrong_after ? "  WRONG RESULTS after timing" : "");
    }
  }
  printf("\nGB/s: 2 x 1 MiB sent per rank per exchange / median time. Halo baselines: MPI_Irecv/Isend/Waitall "
         "and two MPI_Sendrecv; "
         "reduce and dot baseline: MPI_Allreduce.\n"
         "memcpy floor: the same bytes copied locally on each rank, no communication.\n");
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') {
      fprintf(f, "\\%c", *s);
    } else if ((unsigned char)*s < 0x20) {
      fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
    } else {
      fputc(*s, f);
    }
  }
  fputc('"', f);
}

static int write_json(const char *file, const bench_args *a, int total_reps, const char *host,
                      const char *mpi_version) {
  FILE *f = fopen(file, "w");
  if (!f) {
    perror(file);
    return 0;
  }
  fprintf(f, "{\n  \"bench\": \"rmaop-halo-bench\",\n  \"ranks\": %d,\n  \"host\": ", g_size);
  json_string(f, host);
  fprintf(f, ",\n  \"mpi\": ");
  json_string(f, mpi_version);
  fprintf(f, ",\n  \"reps\": %d,\n  \"rounds\": %d,\n  \"warmup_per_round\": %d,\n", total_reps, a->rounds, a->warmup);
  fprintf(f, "  \"unit\": \"us\",\n  \"statistic\": \"per repetition max over ranks; median and min over "
             "repetitions\",\n");
  fprintf(f, "  \"bytes\": {\"halo_8B\": %d, \"halo_1MiB\": %d, \"reduce_8B\": 8, \"dot_8B\": 8},\n  \"paths\": [\n",
          (int)(SMALL_COUNT * sizeof(double)), (int)(BIG_COUNT * sizeof(double)));
  for (int i = 0; i < NPATHS; ++i) {
    const path *p = &g_paths[i];
    fprintf(f, "    {\"path\": ");
    json_string(f, p->name);
    fprintf(f, ", \"backend\": ");
    json_string(f, p->backend ? p->backend : p->floor ? "none" : "mpi");
    fprintf(f, ", \"sync\": \"%s\", \"transport\": \"%s\", \"transport_used\": ", p->sync, p->transport);
    json_string(f, p->transport_used[0] ? p->transport_used : "-");
    if (p->error[0]) {
      fprintf(f, ", \"error\": ");
      json_string(f, p->error);
    } else {
      for (int t = 0; t < (p->floor ? T_REDUCE : NTESTS); ++t) {
        fprintf(f, ", \"%s_median_us\": %.4f, \"%s_min_us\": %.4f", test_name[t], p->median[t], test_name[t],
                p->min[t]);
      }
      fprintf(f, ", \"halo_1MiB_GBps\": %.4f, \"wrong_after_timing\": %lld", big_gbs(p), (long long)p->wrong_after);
    }
    fprintf(f, "}%s\n", i + 1 < NPATHS ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  return fclose(f) == 0;
}

/* ---- main --------------------------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, bench_args *a) {
  a->reps = 1000;
  a->warmup = 20;
  a->rounds = 5;
  a->json = NULL;
  a->strict = 0;
  long long v = 0;
  for (int i = 1; i < argc; ++i) {
    const int has_value = i + 1 < argc;
    if (has_value && strcmp(argv[i], "--reps") == 0) {
      if (!bench_int_arg("rmaop-halo-bench", "--reps", argv[++i], 1, 100000000, &v, g_rank == 0)) return 0;
      a->reps = (int)v;
    } else if (has_value && strcmp(argv[i], "--warmup") == 0) {
      if (!bench_int_arg("rmaop-halo-bench", "--warmup", argv[++i], 0, 100000000, &v, g_rank == 0)) return 0;
      a->warmup = (int)v;
    } else if (has_value && strcmp(argv[i], "--rounds") == 0) {
      if (!bench_int_arg("rmaop-halo-bench", "--rounds", argv[++i], 1, 1000000, &v, g_rank == 0)) return 0;
      a->rounds = (int)v;
    } else if (has_value && strcmp(argv[i], "--json") == 0) {
      a->json = argv[++i];
    } else if (strcmp(argv[i], "--strict") == 0) {
      a->strict = 1;
    } else {
      return 0;
    }
  }
  return a->rounds <= a->reps; /* each range is bench_int_arg's */
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  bench_args a;
  if (!parse_args(argc, argv, &a)) {
    if (g_rank == 0) {
      fprintf(stderr,
              "usage: %s [--reps N (1000)] [--warmup N per round (20)] [--rounds N (5)] [--json FILE] [--strict]\n"
              "Times a 2 x 8 B and a 2 x 1 MiB ring halo exchange and an 8 B allreduce on every rmaop path and\n"
              "on plain MPI. Run it with mpiexec -n 2 (any number of ranks works). --strict: fail when a path\n"
              "cannot run (by default a path that cannot be created, e.g. shm across nodes, is reported).\n",
              argv[0]);
    }
    MPI_Finalize();
    return 2;
  }

  for (int i = 0; i < NPATHS; ++i) {
    path_setup(&g_paths[i]);
  }
  run_rounds(&a);
  /* Still right after thousands of repetitions, with new source values (stale data would show). */
  for (int i = 0; i < NPATHS; ++i) {
    path *p = &g_paths[i];
    if (!p->error[0] && !p->floor) {
      p->wrong_after = path_check(p, 1);
    }
  }

  const int total_reps = (a.reps + a.rounds - 1) / a.rounds * a.rounds;
  char host[MPI_MAX_PROCESSOR_NAME] = "", version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len;
  MPI_Get_processor_name(host, &len);
  MPI_Get_library_version(version, &len);
  version[strcspn(version, ",\n")] = '\0'; /* first clause of the first line, e.g. "Open MPI v4.1.4" */
  int ok = 1;
  if (g_rank == 0) {
    print_table(&a, total_reps, host, version);
    if (a.json) {
      ok = write_json(a.json, &a, total_reps, host, version);
      if (ok) {
        printf("wrote %s\n", a.json);
      }
    }
  }
  int wrong = 0;
  for (int i = 0; i < NPATHS; ++i) {
    wrong += a.strict ? g_paths[i].error[0] != '\0' : strncmp(g_paths[i].error, "WRONG", 5) == 0;
    wrong += g_paths[i].wrong_after != 0;
    path_free(&g_paths[i]);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  /* A path that could not be created (e.g. shm across nodes) is reported, not failed; wrong data fails. */
  return ok && wrong == 0 ? 0 : 1;
}
