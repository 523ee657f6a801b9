/* rmaop-roofline's core (roofline/roofline.h), no MPI. References: synthetic timings generated from known
 * alpha, o, beta (plus deterministic noise) for the fits; the classification rules of ARCHITECTURE.md
 * ("Roofline and bench", after Ding, Haseeb, Groves, Williams, SC'23 workshops); the files' own writers for
 * the JSON round trips; XML 1.0 well-formedness (a minimal checker below) for the SVG plots.
 *
 *   unit_roofline [DIR]   (DIR: where scratch files go; default ".") */
#include "roofline.h"

#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *dir = ".";

static char *scratch(const char *name) {
  static char buf[8][1024];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, sizeof buf[0], "%s/test_roofline_%s", dir, name);
  return b;
}

/* @p n bytes (the mutation test's may hold NULs), or a string */
static void write_bytes(const char *file, const char *b, size_t n) {
  FILE *f = fopen(file, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

static void write_text(const char *file, const char *text) {
  write_bytes(file, text, strlen(text));
}

static char *read_text(const char *file) {
  FILE *f = fopen(file, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

/* Deterministic noise in [-amp, amp] (an LCG: the test must not depend on rand()'s implementation). */
static double noise(unsigned *state, double amp) {
  *state = *state * 1664525u + 1013904223u;
  return amp * (2.0 * (double)(*state >> 8) / (double)(1u << 24) - 1.0);
}

typedef double (*truth_fn)(double n, double m);

/* The probe's grid (m = 8 B .. 64 MiB, n = 1 .. 64, n*m <= 64 MiB) timed by @p truth with relative noise. */
static int synth(truth_fn truth, double amp, roof_point *pts) {
  unsigned st = 12345;
  int k = 0;
  for (double m = 8; m <= 64.0 * 1048576; m *= 2)
    for (int n = 1; n <= 64; n *= 2)
      if (n * m <= 64.0 * 1048576)
        pts[k++] = (roof_point){.n = n, .m = m, .t = truth(n, m) * (1 + noise(&st, amp)), .reps = 10};
  return k;
}

static double rel(double a, double b) {
  return fabs(a - b) / fabs(b);
}

/* ---- fitting ------------------------------------------------------------------------------------------ */

static double one_piece(double n, double m) {
  return 2e-6 + n * 0.1e-6 + n * m / 10e9;
}

START_TEST(fit_recovers_one_piece) {
  roof_point pts[256];
  int np = synth(one_piece, 0.03, pts);
  roof_fit f;
  char err[ROOF_ERR_MAX];
  ck_assert_int_eq(roof_fit_plan(pts, np, &f, err, sizeof err), 0);
  ck_assert_int_eq(f.npieces, 1);
  ck_assert_msg(rel(f.alpha, 2e-6) < 0.1, "alpha %g", f.alpha);
  ck_assert_msg(rel(f.piece[0].o, 0.1e-6) < 0.15, "o %g", f.piece[0].o);
  ck_assert_msg(rel(f.piece[0].beta, 10e9) < 0.05, "beta %g", f.piece[0].beta);
  ck_assert(!f.poor);
  ck_assert(f.rel_max <= 0.06 + 1e-9 && f.rel_median < 0.04);
  ck_assert_double_eq_tol(roof_latency(&f), roof_time(&f, 1, 8), 1e-18);
}
END_TEST

/* Rendezvous above 64 KiB messages: a handshake per message (o 0.2 -> 3 us) and single-copy bandwidth. */
static double protocol(double n, double m) {
  return m <= 65536 ? 1e-6 + n * 0.2e-6 + n * m / 5e9 : 1e-6 + n * 3e-6 + n * m / 12e9;
}

START_TEST(fit_recovers_protocol_split) {
  roof_point pts[256];
  int np = synth(protocol, 0.02, pts);
  roof_fit f;
  ck_assert_int_eq(roof_fit_plan(pts, np, &f, NULL, 0), 0);
  ck_assert_int_ge(f.npieces, 2);
  ck_assert_int_eq(f.split_bytes, 0);
  ck_assert_msg(f.piece[0].upto > 32768 && f.piece[0].upto < 131072, "split at %g", f.piece[0].upto);
  ck_assert_msg(rel(f.piece[0].beta, 5e9) < 0.1, "beta below %g", f.piece[0].beta);
  ck_assert_msg(rel(roof_ceiling(&f), 12e9) < 0.1, "beta above %g", roof_ceiling(&f));
  ck_assert_msg(rel(f.piece[f.npieces - 1].o, 3e-6) < 0.25, "o above %g", f.piece[f.npieces - 1].o);
  ck_assert(!f.poor);
}
END_TEST

/* Cache switch: epochs of more than 4 MiB stream from DRAM (20 -> 4 GB/s) whatever the message size. */
static double cache(double n, double m) {
  return 0.5e-6 + n * 0.02e-6 + n * m / (n * m <= 4194304 ? 20e9 : 4e9);
}

START_TEST(fit_recovers_cache_split) {
  roof_point pts[256];
  int np = synth(cache, 0.02, pts);
  roof_fit f;
  ck_assert_int_eq(roof_fit_plan(pts, np, &f, NULL, 0), 0);
  ck_assert_int_ge(f.npieces, 2);
  ck_assert_int_eq(f.split_bytes, 1);
  ck_assert_msg(f.piece[0].upto > 2097152 && f.piece[0].upto < 8388608, "split at %g", f.piece[0].upto);
  ck_assert_msg(rel(f.piece[0].beta, 20e9) < 0.1, "beta below %g", f.piece[0].beta);
  ck_assert_msg(rel(roof_ceiling(&f), 4e9) < 0.1, "beta above %g", roof_ceiling(&f));
  ck_assert(!f.poor);
  /* the model picks the piece by n*m: 64 messages of 128 KiB (8 MiB) stream, one of them does not */
  ck_assert_double_eq_tol(roof_beta_at(&f, 64, 131072), roof_ceiling(&f), 1);
  ck_assert_double_eq_tol(roof_beta_at(&f, 1, 131072), f.piece[0].beta, 1);
}
END_TEST

/* No single split halves the error of a smooth curve that the model cannot follow: not a protocol switch. */
static double smooth(double n, double m) {
  return 1e-6 * pow(n * m, 0.33) + 1e-6;
}

START_TEST(fit_flags_poor) {
  roof_point pts[256];
  int np = synth(smooth, 0.0, pts);
  roof_fit f;
  ck_assert_int_eq(roof_fit_plan(pts, np, &f, NULL, 0), 0);
  ck_assert_msg(f.poor, "rel median %g max %g", f.rel_median, f.rel_max);
  /* and noise alone is no reason to split: 3 % noise on a one-piece truth keeps one piece */
  np = synth(one_piece, 0.03, pts);
  ck_assert_int_eq(roof_fit_plan(pts, np, &f, NULL, 0), 0);
  ck_assert_int_eq(f.npieces, 1);
}
END_TEST

START_TEST(fit_rejects_bad_points) {
  roof_point pts[3] = {{1, 8, 1e-6, 1}, {2, 8, 2e-6, 1}, {4, 8, -1, 1}};
  roof_fit f;
  char err[ROOF_ERR_MAX] = "";
  ck_assert_int_eq(roof_fit_plan(pts, 2, &f, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "at least 3"));
  ck_assert_int_eq(roof_fit_plan(pts, 3, &f, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not a positive measurement"));
  roof_rpoint r[1] = {{1, 1e-6, 1}};
  roof_rfit rf;
  ck_assert_int_eq(roof_fit_reduce(r, 1, &rf, err, sizeof err), -1);
}
END_TEST

START_TEST(nnls_keeps_coefficients_nonnegative) {
  /* y = 1 - x: the unconstrained slope is -1; with x >= 0 the best is the constant mean */
  double A[8], b[4] = {1, 0.67, 0.33, 0}, x[2];
  for (int i = 0; i < 4; ++i)
    A[2 * i] = 1, A[2 * i + 1] = i;
  ck_assert(roof_nnls(A, b, 4, 2, x) >= 0);
  ck_assert(x[0] >= 0 && x[1] >= 0);
  ck_assert_double_eq_tol(x[0], 0.5, 1e-9);
  ck_assert_double_eq_tol(x[1], 0, 1e-12);
}
END_TEST

START_TEST(fit_reduce_recovers) {
  roof_rpoint r[8];
  unsigned st = 7;
  for (int i = 0; i < 8; ++i) {
    r[i].count = (int64_t)1 << (2 * i);
    r[i].t = (3e-6 + 8.0 * (double)r[i].count / 2e9) * (1 + noise(&st, 0.02));
  }
  roof_rfit f;
  ck_assert_int_eq(roof_fit_reduce(r, 8, &f, NULL, 0), 0);
  ck_assert_msg(rel(f.alpha, 3e-6) < 0.05 && rel(f.beta, 2e9) < 0.05, "alpha %g beta %g", f.alpha, f.beta);
  ck_assert(!f.poor);
}
END_TEST

/* ---- the roofline model ------------------------------------------------------------------------------- */

/* Occurrences of @p what in @p s. */
static int count_of(const char *s, const char *what) {
  int k = 0;
  for (const char *q = s; (q = strstr(q, what)) != NULL; q += strlen(what))
    ++k;
  return k;
}

static roof_fit simple_fit(double alpha, double o, double beta) {
  roof_fit f = {.alpha = alpha, .npieces = 1, .piece = {{.upto = INFINITY, .o = o, .beta = beta}}};
  return f;
}

/* Repetitions read as the bench reads a solver's site (each rank's median, then the slowest rank's) and as a
 * wall-time span (each repetition's slowest rank, then the median). Two ranks taking turns waiting (0.25 and
 * 1.1 us, swapping every repetition, as a fence's barrier did on the 2-vCPU VM): every repetition's slowest
 * rank took 1.1 where each rank's median is the middle of its two values; a steady pair reads the same both
 * ways. Stride: rank 1's repetitions start @p stride doubles after rank 0's. */
START_TEST(rank_point_statistics) {
  enum { R = 9, STRIDE = 12 };
  double t[2 * STRIDE];
  for (int i = 0; i < R; ++i) {
    t[i] = i % 2 ? 1.1 : 0.25;
    t[STRIDE + i] = i % 2 ? 0.25 : 1.1;
  }
  /* rank 0 has five 0.25s of nine, rank 1 five 1.1s: their medians are 0.25 and 1.1 */
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R, 0), 1.1, 1e-12);
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R, 1), 1.1, 1e-12);
  /* an even count: each rank's median is the middle of 0.25 and 1.1, the slowest repetition's 1.1 */
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R - 1, 1), 0.675, 1e-12);
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R - 1, 0), 1.1, 1e-12);
  /* one rank always waits: both readings give the waiting rank's time */
  for (int i = 0; i < R; ++i)
    t[i] = 0.6 + 0.01 * i, t[STRIDE + i] = 0.1;
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R, 1), 0.64, 1e-12);
  ck_assert_double_eq_tol(roof_rank_point(t, 2, STRIDE, R, 0), 0.64, 1e-12);
  /* the slowest rank's median is not the median of the slowest repetitions when the slow calls move */
  const double a[4] = {1, 1, 5, 5}, b[4] = {5, 5, 1, 1};
  double u[8];
  memcpy(u, a, sizeof a);
  memcpy(u + 4, b, sizeof b);
  ck_assert_double_eq_tol(roof_rank_point(u, 2, 4, 4, 1), 3, 1e-12);
  ck_assert_double_eq_tol(roof_rank_point(u, 2, 4, 4, 0), 5, 1e-12);
  ck_assert_double_eq(roof_rank_point(u, 2, 4, 0, 1), 0);
  ck_assert_double_eq(roof_rank_point(u, 0, 4, 4, 0), 0);
}
END_TEST

START_TEST(model_derived_quantities) {
  roof_fit f = simple_fit(1e-6, 0.1e-6, 10e9);
  double L = 1e-6 + 0.1e-6 + 8 / 10e9;
  ck_assert_double_eq_tol(roof_latency(&f), L, 1e-18);
  ck_assert_double_eq_tol(roof_elbow(&f, 1), L * 10e9, 1e-6);
  ck_assert_double_eq_tol(roof_elbow(&f, 8), L * 10e9 / 8, 1e-6);
  ck_assert_double_eq_tol(roof_pure_bw(&f, 1, 8), 8 / L, 1e-3);      /* on the diagonal */
  ck_assert_double_eq_tol(roof_pure_bw(&f, 1, 1 << 26), 10e9, 1e-3); /* under the ceiling */
  ck_assert_double_eq_tol(roof_fitted_bw(&f, 4, 1024), 4096 / (L + 4 * fmax(0.1e-6, 1024 / 10e9)), 1e-3);
  for (double s = 8; s < 1e8; s *= 4)
    ck_assert(roof_fitted_bw(&f, 8, s) <= roof_pure_bw(&f, 8, s) * (1 + 1e-12));
  /* a stepped ceiling (20 GB/s up to 1 MiB per epoch, then 4 GB/s): with L = 1 us the diagonal meets the
   * first piece (s* = 20 KB); with L = 100 us it passes 20 GB/s only beyond the step, where the ceiling has
   * already dropped below it: the elbow is the step itself, n*s = 1 MiB */
  roof_fit g = {.alpha = 1e-6,
                .npieces = 2,
                .split_bytes = 1,
                .piece = {{.upto = 1 << 20, .o = 0, .beta = 20e9}, {.upto = INFINITY, .o = 0, .beta = 4e9}}};
  ck_assert_double_eq_tol(roof_elbow(&g, 1), roof_latency(&g) * 20e9, 1e-6);
  g.alpha = 100e-6;
  ck_assert_double_eq_tol(roof_elbow(&g, 64), (1 << 20) / 64.0, 1e-6);
  ck_assert_double_eq_tol(roof_elbow(&g, 1), 1 << 20, 1e-6);
}
END_TEST

START_TEST(classify_rules) {
  ck_assert_int_eq(roof_classify(8, 4096, 0.9), ROOF_LATENCY);
  ck_assert_int_eq(roof_classify(1 << 20, 4096, 0.8), ROOF_BANDWIDTH);
  ck_assert_int_eq(roof_classify(1 << 20, 4096, 0.3), ROOF_OVERHEAD);
  ck_assert_int_eq(roof_classify(8, 4096, 0.05), ROOF_PATHOLOGICAL);
  ck_assert_str_eq(roof_class_name(ROOF_OVERHEAD), "overhead-bound");
}
END_TEST

/* A synthetic two-path profile: "rma.lock.shm" fast (with a reduction fit), "twosided" slower. */
static void make_profile(roof_profile *p) {
  memset(p, 0, sizeof *p);
  p->ranks = 2;
  p->npaths = 2;
  strcpy(p->memory, "host");
  strcpy(p->pattern, "synthetic");
  strcpy(p->created, "2024-01-01T00:00:00Z");
  p->paths = calloc(2, sizeof *p->paths);
  roof_path *a = &p->paths[0], *b = &p->paths[1];
  strcpy(a->name, "rma.lock.shm");
  strcpy(a->backend, "rma");
  strcpy(a->sync, "lock");
  strcpy(a->transport, "shm");
  strcpy(a->memory, "host");
  a->fit = (roof_fit){.alpha = 0.5e-6,
                      .npieces = 3,
                      .split_bytes = 1,
                      .rel_median = 0.05,
                      .rel_max = 0.2,
                      .npoints = 3,
                      .piece = {{.upto = 4096, .o = 0.01e-6, .beta = 10e9},
                                {.upto = 4194304, .o = 0.02e-6, .beta = 20e9},
                                {.upto = INFINITY, .o = 0, .beta = 5e9}}};
  a->npoints = 3;
  a->points = calloc(3, sizeof *a->points);
  for (int i = 0; i < 3; ++i)
    a->points[i] = (roof_point){.n = 1 << (3 * i), .m = 8 << (4 * i), .t = 1e-6 * (i + 1), .reps = 5};
  a->has_rfit = 1;
  a->rfit = (roof_rfit){.alpha = 1e-6, .beta = 8e9, .rel_median = 0.01, .rel_max = 0.02, .npoints = 2};
  a->nrpoints = 2;
  a->rpoints = calloc(2, sizeof *a->rpoints);
  a->rpoints[0] = (roof_rpoint){1, 1.0e-6, 100};
  a->rpoints[1] = (roof_rpoint){64, 1.1e-6, 100};
  strcpy(b->name, "twosided");
  strcpy(b->backend, "twosided");
  strcpy(b->sync, "-");
  strcpy(b->transport, "-");
  strcpy(b->memory, "host");
  b->fit = simple_fit(2e-6, 0.1e-6, 5e9);
  b->fit.poor = 1;
  b->fit.rel_max = 0.9;
  b->npoints = 1;
  b->points = calloc(1, sizeof *b->points);
  b->points[0] = (roof_point){1, 8, 2e-6, 100};
}

static roof_site make_site(const char *label, const char *kind, double n, double s, double t_call, double calls) {
  roof_site x;
  memset(&x, 0, sizeof x);
  snprintf(x.label, sizeof x.label, "%s", label);
  snprintf(x.kind, sizeof x.kind, "%s", kind);
  strcpy(x.path, "rma.lock.shm");
  x.messages = n;
  x.bytes_per_message = s;
  x.calls = calls;
  x.time_total = t_call * calls;
  return x;
}

START_TEST(classify_synthetic_sites) {
  roof_profile p;
  make_profile(&p);
  const roof_fit *f = &p.paths[0].fit;
  /* at the model's own time a site is on its roof (E >= 1 against the fitted roof) */
  roof_site lat = make_site("halo", "plan", 2, 8, roof_time(f, 2, 8), 10);
  roof_site bw = make_site("big", "plan", 1, 64 << 20, roof_time(f, 1, 64 << 20), 10);
  roof_site ovh = make_site("slow", "plan", 2, 8, 3 * roof_time(f, 2, 8), 10);
  roof_site pat = make_site("stuck", "plan", 2, 8, 40 * roof_time(f, 2, 8), 10);
  roof_site red = make_site("dot", "reduce", 1, 16, 2e-6, 10);
  roof_site other = make_site("elsewhere", "plan", 1, 8, 1e-6, 1);
  strcpy(other.path, "rma.fence.mpi");
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&lat, &p, 5, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_LATENCY);
  ck_assert(a.efficiency >= 0.99);
  ck_assert_double_eq_tol(a.calls_per_iter, 2, 1e-12);
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(&p.paths[1].fit, 2, 8), 1e-15); /* on the other path */
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&bw, &p, 0, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_BANDWIDTH);
  ck_assert_double_eq_tol(a.calls_per_iter, 10, 1e-12); /* iterations unknown: per solve */
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&ovh, &p, 5, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_OVERHEAD);
  ck_assert_ptr_nonnull(strstr(a.cause, "begin..end")); /* named: a plan's span includes overlapped work */
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&pat, &p, 5, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_PATHOLOGICAL);
  roof_analysis_free(&a);
  /* the same calls whose median is at the model's time: a few preempted calls make the mean, not the class */
  pat.time_inside = pat.time_total;
  pat.inside_median = roof_time(f, 2, 8);
  ck_assert_int_eq(roof_analyze(&pat, &p, 5, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_LATENCY);
  ck_assert_double_eq_tol(a.per_call, roof_time(f, 2, 8), 1e-15);
  ck_assert_double_eq_tol(a.per_call_mean, 40 * roof_time(f, 2, 8), 1e-15);
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&red, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_path_reduce_time(&p.paths[0], 16), 1e-15); /* reduce fit */
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(&p.paths[1].fit, 1, 16), 1e-15);      /* none: plan model */
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&other, &p, 5, 0, 0, &a), 0);
  ck_assert_int_eq(a.cls, ROOF_UNKNOWN); /* its path was not profiled */
  ck_assert_int_eq(a.home, -1);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

START_TEST(best_path_skips_poor_fits) {
  roof_profile p;
  make_profile(&p);
  p.paths[1].fit = simple_fit(0.01e-6, 0, 100e9); /* faster than everything, but poor */
  p.paths[1].fit.poor = 1;
  roof_site s = make_site("halo", "plan", 2, 8, 5e-6, 10);
  roof_run r = {.iterations = 10, .sites = &s, .nsites = 1};
  strcpy(r.solver, "test");
  strcpy(r.path, "rma.lock.shm");
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&s, &p, 10, 0, 0, &a), 0);
  r.an = &a;
  ck_assert_int_eq(roof_run_best(&r, &p), 0);
  ck_assert_int_eq(roof_run_best_any(&r, &p), 1);
  char v[1024];
  roof_verdict(&r, &p, v, sizeof v);
  /* the path run (a good fit) is the fastest good fit: said so; the faster poor fit is named once, not ranked */
  ck_assert_msg(strstr(v, "The path run is already the fastest predicted.") &&
                    strstr(v, " Poor fits, not ranked: twosided.") && count_of(v, "twosided") == 1 &&
                    count_of(v, "Poor fits") == 1 && !strstr(v, "poor") && !strstr(v, "Fastest predicted"),
                "%s", v);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* The verdict a person reads: the class, the messages per iteration, the share of the iteration, and the path
 * predicted fastest among good fits with what it saves, or that the path run is already the fastest; a path run
 * on a poor fit is judged by its measurement, never called slower than a good fit's slower prediction. */
START_TEST(verdict_sentences) {
  roof_profile p;
  make_profile(&p); /* rma.lock.shm a good fit, twosided a poor one */
  p.paths[1].fit = simple_fit(0.1e-6, 0, 10e9);
  roof_site s = make_site("halo", "plan", 2, 8, 5e-6, 10);
  roof_run r = {.iterations = 10, .time_total = 10 * 50e-6, .sites = &s, .nsites = 1};
  strcpy(r.solver, "deriv1d n=64 CGLS");
  strcpy(r.path, "rma.lock.shm");
  roof_analysis a;
  char v[1024], want[256];
  ck_assert_int_eq(roof_analyze(&s, &p, 10, 0, 0, &a), 0);
  r.an = &a;
  roof_verdict(&r, &p, v, sizeof v);
  snprintf(want, sizeof want,
           "deriv1d n=64 CGLS on rma.lock.shm: %s communication, 2 messages of 8 B per iteration, taking 5.00 us per "
           "iteration (10 %% of the 50.00 us iteration); its model ",
           roof_class_name(a.cls));
  ck_assert_msg(strncmp(v, want, strlen(want)) == 0, "%s", v);
  const double tb = roof_run_predicted(&r, 1), th = roof_run_predicted(&r, 0);
  ck_assert(tb < th);
  snprintf(want, sizeof want, " Fastest predicted: twosided at %.2f us per iteration, saving %.2f us (", tb * 1e6,
           (th - tb) * 1e6);
  ck_assert_msg(strstr(v, want) && !strstr(v, "poor"), "%s\nwanted: %s", v, want);
  roof_analysis_free(&a);

  /* run on twosided, whose fit is poor, measured below the good fit's prediction: no good fit is predicted
   * faster; the poor fit is said once, and the run's own model is not quoted */
  p.paths[1].fit.poor = 1;
  strcpy(s.path, "twosided");
  strcpy(r.path, "twosided");
  s.time_total = 0.1e-6 * s.calls;
  ck_assert_int_eq(roof_analyze(&s, &p, 10, 0, 0, &a), 0);
  ck_assert(roof_run_predicted(&r, 0) > roof_run_measured(&r, 0));
  roof_verdict(&r, &p, v, sizeof v);
  ck_assert_msg(strstr(v, "No path with a good fit is predicted faster than this run measured. Poor fits, not "
                           "ranked: twosided.") &&
                    !strstr(v, "its model") && count_of(v, "Poor fits") == 1 && !strstr(v, "poor"),
                "%s", v);
  /* the same run measured slower than the good fit predicts: the good fit is named, saving against the
   * measurement */
  s.time_total = 5e-6 * s.calls;
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&s, &p, 10, 0, 0, &a), 0);
  roof_verdict(&r, &p, v, sizeof v);
  ck_assert_msg(strstr(v, " Fastest predicted: rma.lock.shm at "), "%s", v);
  /* every fit poor: nothing ranked, said once */
  p.paths[0].fit.poor = 1;
  roof_verdict(&r, &p, v, sizeof v);
  ck_assert_msg(strstr(v, "No profiled path has a good fit") && !strstr(v, "Fastest") && !strstr(v, "already") &&
                    count_of(v, "good fit") == 1,
                "%s", v);
  /* a buffer too short for the whole verdict: cut, terminated, no overrun */
  char small[40];
  roof_verdict(&r, &p, small, sizeof small);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* ---- the cold-cache term -------------------------------------------------------------------------------- */

#define MIB 1048576.0

/* The synthetic profile with the cold term: the curve (warm 1 us) is cold 0.5 us above warm at 4 MiB, 2 us at
 * 16 MiB, 4 us at 64 MiB (the full sweep): fractions 1/8, 1/2, 1. rma.lock.shm pays 2 us per cold epoch and
 * 5 us per cold reduction, twosided 3 us per cold epoch and has no reduction point (its epoch's applies). */
static void add_cold(roof_profile *p) {
  p->cache = (roof_cache){.has = 1,
                          .llc_bytes = 32 * MIB,
                          .sweep_bytes = 64 * MIB,
                          .curve_warm = 1e-6,
                          .ncurve = 3,
                          .curve_bytes = {4 * MIB, 16 * MIB, 64 * MIB},
                          .curve_t = {1.5e-6, 3e-6, 5e-6}};
  strcpy(p->cache.llc_source, "sysconf");
  strcpy(p->cache.curve_path, "rma.lock.shm");
  p->paths[0].cold = (roof_cold){.has_epoch = 1,
                                 .has_reduce = 1,
                                 .sweep_bytes = 64 * MIB,
                                 .epoch = {.warm = 0.5e-6, .cold = 2.5e-6, .penalty = 2e-6, .reps = 9},
                                 .reduce = {.warm = 1e-6, .cold = 6e-6, .penalty = 5e-6, .reps = 9}};
  p->paths[1].cold = (roof_cold){
      .has_epoch = 1, .sweep_bytes = 64 * MIB, .epoch = {.warm = 1e-6, .cold = 4e-6, .penalty = 3e-6, .reps = 9}};
}

START_TEST(cold_fraction_from_curve) {
  roof_profile p;
  make_profile(&p);
  add_cold(&p);
  const roof_cache *c = &p.cache;
  ck_assert_double_eq_tol(roof_cold_fraction(c, 4 * MIB), 0.125, 1e-12);
  ck_assert_double_eq_tol(roof_cold_fraction(c, 16 * MIB), 0.5, 1e-12);
  ck_assert_double_eq_tol(roof_cold_fraction(c, 64 * MIB), 1, 1e-12);
  ck_assert_double_eq_tol(roof_cold_fraction(c, 1e12), 1, 1e-12);
  /* between sweeps: linear in log(bytes): 8 MiB is halfway from 4 to 16 MiB, 32 MiB from 16 to 64 */
  ck_assert_double_eq_tol(roof_cold_fraction(c, 8 * MIB), (0.125 + 0.5) / 2, 1e-12);
  ck_assert_double_eq_tol(roof_cold_fraction(c, 32 * MIB), 0.75, 1e-12);
  ck_assert_double_eq_tol(roof_cold_fraction(c, 1 * MIB), 0.125, 1e-12); /* below the first sweep: its fraction */
  ck_assert_double_eq(roof_cold_fraction(c, 0), 0);                      /* reuse unknown */
  /* a spike at a small sweep is noise: the curve is made nondecreasing from the top down */
  p.cache.curve_t[0] = 4e-6;
  ck_assert_double_eq_tol(roof_cold_fraction(c, 4 * MIB), 0.5, 1e-12);
  /* cold below warm counts as no penalty */
  p.cache.curve_t[0] = 0.5e-6;
  ck_assert_double_eq(roof_cold_fraction(c, 4 * MIB), 0);
  /* no cache effect above the noise (cold < 1.5 x warm at the full sweep): a step at the LLC */
  p.cache.curve_t[2] = 1.4e-6;
  ck_assert_double_eq(roof_cold_fraction(c, 31 * MIB), 0);
  ck_assert_double_eq(roof_cold_fraction(c, 33 * MIB), 1);
  p.cache.llc_bytes = 0; /* LLC unknown: a quarter of the sweep */
  ck_assert_double_eq(roof_cold_fraction(c, 15 * MIB), 0);
  ck_assert_double_eq(roof_cold_fraction(c, 17 * MIB), 1);
  p.cache.has = 0; /* no cold term in the profile */
  ck_assert_double_eq(roof_cold_fraction(c, 1e12), 0);
  roof_profile_free(&p);
}
END_TEST

/* rma.lock.shm's own reduction curve (reduction warm 1 us, full cold 6 us at the 64 MiB sweep): 0.1 of the
 * penalty after 4 MiB, 0.5 after 16 MiB. */
static void add_reduce_curve(roof_profile *p) {
  roof_cold *c = &p->paths[0].cold;
  c->nrcurve = 2;
  c->rcurve_bytes[0] = 4 * MIB, c->rcurve_t[0] = 1.5e-6;
  c->rcurve_bytes[1] = 16 * MIB, c->rcurve_t[1] = 3.5e-6;
}

START_TEST(cold_fraction_per_path_reduction_curve) {
  roof_profile p;
  make_profile(&p);
  add_cold(&p);
  add_reduce_curve(&p);
  const roof_cache *c = &p.cache;
  const roof_path *lock = &p.paths[0], *two = &p.paths[1];
  /* a reduction on a path with its own curve reads it: 0.1, 0.5, log-linear between, 1 from the full sweep on */
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 4 * MIB), 0.1, 1e-12);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 16 * MIB), 0.5, 1e-12);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 8 * MIB), 0.3, 1e-12);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 32 * MIB), 0.75, 1e-12);
  ck_assert_double_eq(roof_path_cold_fraction(c, lock, "reduce", 64 * MIB), 1);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 1 * MIB), 0.1, 1e-12);
  ck_assert_double_eq(roof_path_cold_fraction(c, lock, "reduce", 0), 0); /* reuse unknown */
  /* plans, and reductions on a path without its own curve (or without a reduction point), read the epoch curve */
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "plan", 4 * MIB), roof_cold_fraction(c, 4 * MIB), 1e-12);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, two, "reduce", 8 * MIB), roof_cold_fraction(c, 8 * MIB), 1e-12);
  /* a reduction curve without a penalty above the noise (full cold < 1.5 x warm) is not used */
  p.paths[0].cold.reduce.cold = 1.4e-6;
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 4 * MIB), 0.125, 1e-12);
  p.paths[0].cold.reduce.cold = 6e-6;
  /* a curve that does not end below the full sweep is not used either */
  p.paths[0].cold.rcurve_bytes[1] = 64 * MIB;
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 4 * MIB), 0.125, 1e-12);
  p.paths[0].cold.rcurve_bytes[1] = 16 * MIB;
  /* no cold term in the profile: nothing */
  p.cache.has = 0;
  ck_assert_double_eq(roof_path_cold_fraction(c, lock, "reduce", 16 * MIB), 0);
  p.cache.has = 1;
  /* in the analysis: 20 calls in 10 iterations, 32 MiB streamed per iteration: 16 MiB between calls. The
   * reduction pays half of lock's reduction penalty (its own curve) and half of twosided's epoch penalty
   * (the epoch curve at 16 MiB: 1/2); the home path's fraction is the site's */
  roof_site dot = make_site("dot", "reduce", 1, 16, 4e-6, 20);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&dot, &p, 10, 32 * MIB, 0, &a), 0);
  ck_assert_double_eq(a.reuse_bytes, 16 * MIB);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.5, 1e-12);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_path_reduce_time(lock, 16) + 0.5 * 5e-6, 1e-18);
  ck_assert_double_eq_tol(a.on[1].cold_fraction, 0.5, 1e-12);
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(&two->fit, 1, 16) + 0.5 * 3e-6, 1e-18);
  ck_assert_double_eq(a.cold_fraction, a.on[0].cold_fraction);
  roof_analysis_free(&a);
  /* 8 MiB between calls: lock's own curve says 0.3, the epoch curve (twosided) 0.3125 */
  ck_assert_int_eq(roof_analyze(&dot, &p, 10, 16 * MIB, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.3, 1e-12);
  ck_assert_double_eq_tol(a.on[1].cold_fraction, 0.3125, 1e-12);
  ck_assert_str_eq(a.regime, "partly cold");
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* The same-bytes curve: rma.lock.shm's dot after re-writing the same 4 MiB leaves 0.04 of its penalty, the same
 * 16 MiB 0.2 (the fresh curve: 0.1 and 0.5). Reduction sites read it at their reuse distance; the gap
 * part of a reduction after an epoch reads the fresh curve; plans and paths without it are unchanged. */
START_TEST(cold_fraction_same_bytes_curve) {
  roof_profile p;
  make_profile(&p);
  add_cold(&p);
  add_reduce_curve(&p);
  const roof_cache *c = &p.cache;
  const roof_path *lock = &p.paths[0], *two = &p.paths[1];
  /* no same-bytes curve yet: the fresh one */
  ck_assert_double_eq_tol(roof_path_same_fraction(c, lock, 8 * MIB), 0.3, 1e-12);
  roof_cold *q = &p.paths[0].cold;
  q->nscurve = 2;
  q->scurve_bytes[0] = 4 * MIB, q->scurve_t[0] = 1.2e-6;
  q->scurve_bytes[1] = 16 * MIB, q->scurve_t[1] = 2e-6;
  ck_assert_double_eq_tol(roof_path_same_fraction(c, lock, 4 * MIB), 0.04, 1e-12);
  ck_assert_double_eq_tol(roof_path_same_fraction(c, lock, 8 * MIB), 0.12, 1e-12);
  ck_assert_double_eq_tol(roof_path_same_fraction(c, lock, 32 * MIB), 0.6, 1e-12); /* toward the full sweep's 1 */
  ck_assert_double_eq(roof_path_same_fraction(c, lock, 64 * MIB), 1);
  ck_assert_double_eq(roof_path_same_fraction(c, lock, 0), 0);
  ck_assert_double_eq_tol(roof_path_cold_fraction(c, lock, "reduce", 8 * MIB), 0.3, 1e-12); /* unchanged */
  /* a path without either curve reads the epoch curve */
  ck_assert_double_eq_tol(roof_path_same_fraction(c, two, 8 * MIB), roof_cold_fraction(c, 8 * MIB), 1e-12);
  /* 16 MiB between a reduction's calls: 0.2 of lock's penalty, not the fresh 0.5 */
  roof_site dot = make_site("dot", "reduce", 1, 16, 4e-6, 20), halo = make_site("halo", "plan", 2, 8, 3e-6, 20);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&dot, &p, 10, 32 * MIB, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.2, 1e-12);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_path_reduce_time(lock, 16) + 0.2 * 5e-6, 1e-18);
  roof_analysis_free(&a);
  /* after an epoch (a quarter of the penalty left): a quarter of the same-bytes fraction at its reuse distance
   * (32 MiB: 0.6), three quarters of the fresh fraction at the 8 MiB gap (0.3) */
  q->has_after_epoch = 1;
  q->after_epoch = (roof_cold_point){.warm = 1e-6, .cold = 2.25e-6, .penalty = 1.25e-6, .reps = 9};
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.25 * 0.6 + 0.75 * 0.3, 1e-12);
  roof_analysis_free(&a);
  /* plans keep the epoch curve */
  ck_assert_int_eq(roof_analyze_gap(&halo, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.75, 1e-12);
  roof_analysis_free(&a);
  /* a same-bytes curve that reaches the full sweep is not usable: the fresh one */
  q->scurve_bytes[1] = 256 * MIB;
  ck_assert_double_eq_tol(roof_path_same_fraction(c, lock, 8 * MIB), 0.3, 1e-12);
  roof_profile_free(&p);
}
END_TEST

/* A reduction right after another site's call: rma.lock.shm's probe left the dot a quarter of its penalty when an
 * 8 B epoch came after the sweep, so a reduction 8 MiB after the halo and 32 MiB after its own last call pays a
 * quarter of its curve at 32 MiB and three quarters at 8 MiB. */
START_TEST(cold_reduction_after_epoch) {
  roof_profile p;
  make_profile(&p);
  add_cold(&p);
  add_reduce_curve(&p);
  roof_cold *c = &p.paths[0].cold;
  c->has_after_epoch = 1;
  c->after_epoch = (roof_cold_point){.warm = 1e-6, .cold = 2.25e-6, .penalty = 1.25e-6, .reps = 9};
  ck_assert_double_eq_tol(roof_after_epoch_share(&p.paths[0]), 0.25, 1e-12);
  ck_assert_double_eq(roof_after_epoch_share(&p.paths[1]), -1); /* not measured */
  /* 20 calls in 10 iterations, 64 MiB per iteration: 32 MiB between its calls (own curve 0.75), 8 MiB gap (0.3) */
  roof_site dot = make_site("dot", "reduce", 1, 16, 4e-6, 20), halo = make_site("halo", "plan", 2, 8, 3e-6, 20);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq(a.reuse_bytes, 32 * MIB);
  ck_assert_double_eq(a.gap_bytes, 8 * MIB);
  const double f = 0.25 * 0.75 + 0.75 * 0.3;
  ck_assert_double_eq_tol(a.on[0].cold_fraction, f, 1e-12);
  ck_assert_double_eq_tol(a.cold_fraction, f, 1e-12);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_path_reduce_time(&p.paths[0], 16) + f * 5e-6, 1e-18);
  ck_assert_double_eq_tol(a.on[1].cold_fraction, 0.75, 1e-12); /* twosided: no point, its reuse distance alone */
  roof_analysis_free(&a);
  /* the gap unknown (roof_analyze), or not below the reuse distance: the reuse distance alone */
  ck_assert_int_eq(roof_analyze(&dot, &p, 10, 64 * MIB, 0, &a), 0);
  ck_assert_double_eq(a.gap_bytes, 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.75, 1e-12);
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 48 * MIB, &a), 0);
  ck_assert_double_eq(a.gap_bytes, 32 * MIB);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.75, 1e-12);
  roof_analysis_free(&a);
  /* plans keep their reuse distance (the epoch curve at 32 MiB) */
  ck_assert_int_eq(roof_analyze_gap(&halo, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.75, 1e-12);
  roof_analysis_free(&a);
  /* the share is clamped to 0..1: an epoch that warmed nothing (1) or everything (0) */
  c->after_epoch.cold = 9e-6;
  ck_assert_double_eq(roof_after_epoch_share(&p.paths[0]), 1);
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.75, 1e-12);
  roof_analysis_free(&a);
  c->after_epoch.cold = 0.9e-6;
  ck_assert_double_eq(roof_after_epoch_share(&p.paths[0]), 0);
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq_tol(a.on[0].cold_fraction, 0.3, 1e-12);
  roof_analysis_free(&a);
  /* a reduction without a penalty has no share */
  c->reduce.penalty = 0;
  ck_assert_double_eq(roof_after_epoch_share(&p.paths[0]), -1);
  c->reduce.penalty = 5e-6;
  /* a device profile: reductions pay all of it, whatever the gap */
  strcpy(p.memory, "device");
  ck_assert_int_eq(roof_analyze_gap(&dot, &p, 10, 64 * MIB, 0, 8 * MIB, &a), 0);
  ck_assert_double_eq(a.on[0].cold_fraction, 1);
  roof_analysis_free(&a);
  strcpy(p.memory, "host");
  /* the run's gap: 64 MiB over 4 calls per iteration (2 of each site), capped by the footprint; 0 when unknown */
  roof_site both[2] = {halo, dot};
  roof_run r = {.iterations = 10, .bytes_per_iter = 64 * MIB, .sites = both, .nsites = 2};
  ck_assert_double_eq(roof_run_gap_bytes(&r), 16 * MIB);
  r.footprint = 12 * MIB;
  ck_assert_double_eq(roof_run_gap_bytes(&r), 12 * MIB);
  r.iterations = 0;
  ck_assert_double_eq(roof_run_gap_bytes(&r), 0);
  r.iterations = 10, r.bytes_per_iter = 0;
  ck_assert_double_eq(roof_run_gap_bytes(&r), 0);
  roof_profile_free(&p);
}
END_TEST

START_TEST(cold_bytes_per_iteration) {
  /* deriv1d n = 2^20 on 2 ranks: 2^19 doubles per rank on each side, 14 vector passes of 4 MiB, 5 vectors */
  ck_assert_double_eq(roof_cgls_bytes(524288, 524288, 8, 0), 14 * 4 * MIB);
  ck_assert_double_eq(roof_cgls_footprint(524288, 524288, 8, 0), 5 * 4 * MIB);
  /* bdiag n = 1024: 8 KiB vectors, an 8 MiB dense block read by apply and adjoint */
  ck_assert_double_eq(roof_cgls_bytes(1024, 1024, 8, 8 * MIB), 14 * 8192 + 16 * MIB);
  ck_assert_double_eq(roof_cgls_footprint(1024, 1024, 8, 8 * MIB), 5 * 8192 + 8 * MIB);
  /* model and data sides count differently (8 and 6 passes; 3 and 2 vectors) */
  ck_assert_double_eq(roof_cgls_bytes(1, 0, 8, 0), 64);
  ck_assert_double_eq(roof_cgls_bytes(0, 1, 8, 0), 48);
  ck_assert_double_eq(roof_cgls_footprint(1, 0, 8, 0), 24);
  ck_assert_double_eq(roof_cgls_footprint(0, 1, 8, 0), 16);
}
END_TEST

START_TEST(cold_penalty_in_predictions) {
  roof_profile p;
  make_profile(&p);
  add_cold(&p);
  const roof_fit *f0 = &p.paths[0].fit, *f1 = &p.paths[1].fit;
  ck_assert_double_eq(roof_cold_penalty(&p.paths[0], "plan"), 2e-6);
  ck_assert_double_eq(roof_cold_penalty(&p.paths[0], "reduce"), 5e-6);
  ck_assert_double_eq(roof_cold_penalty(&p.paths[1], "reduce"), 3e-6); /* no reduction point: the epoch's */
  /* 10 calls in 5 iterations (2 per iteration), 256 MiB streamed per iteration: 128 MiB between calls, more
   * than the full sweep: all of the penalty */
  const double t_cold = roof_time(f0, 2, 8) + 2e-6;
  roof_site halo = make_site("halo", "plan", 2, 8, t_cold, 10), dot = make_site("dot", "reduce", 1, 16, 6e-6, 10);
  roof_analysis a[2];
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 256 * MIB, 0, &a[0]), 0);
  ck_assert_double_eq(a[0].reuse_bytes, 128 * MIB);
  ck_assert_double_eq(a[0].cold_fraction, 1);
  ck_assert_str_eq(a[0].regime, "cold");
  ck_assert_double_eq_tol(a[0].on[0].predicted_warm, roof_time(f0, 2, 8), 1e-18);
  ck_assert_double_eq_tol(a[0].on[0].predicted, roof_time(f0, 2, 8) + 2e-6, 1e-18);
  ck_assert_double_eq_tol(a[0].on[1].predicted, roof_time(f1, 2, 8) + 3e-6, 1e-18);
  ck_assert_double_eq_tol(a[0].on[1].penalty, 3e-6, 1e-18);
  /* measured at the cold model's time it is on its (cold) roof, not overhead-bound */
  ck_assert_msg(a[0].efficiency >= 0.99 && a[0].efficiency < 1.01, "E = %g", a[0].efficiency);
  ck_assert_int_eq(a[0].cls, ROOF_LATENCY);
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 256 * MIB, 0, &a[1]), 0);
  ck_assert_double_eq_tol(a[1].on[0].predicted, roof_path_reduce_time(&p.paths[0], 16) + 5e-6, 1e-18);
  ck_assert_double_eq_tol(a[1].on[1].predicted, roof_time(f1, 1, 16) + 3e-6, 1e-18);
  roof_site both[2] = {halo, dot};
  roof_run r = {.iterations = 5, .sites = both, .nsites = 2, .an = a};
  ck_assert_int_eq(roof_run_cold_sites(&r), 2);
  /* per iteration: 2 calls of each site, each paying its penalty */
  ck_assert_double_eq_tol(roof_run_predicted(&r, 0) - roof_run_predicted_warm(&r, 0), 2 * 2e-6 + 2 * 5e-6, 1e-15);
  ck_assert_double_eq_tol(roof_run_predicted(&r, 1) - roof_run_predicted_warm(&r, 1), 2 * 3e-6 + 2 * 3e-6, 1e-15);
  for (int i = 0; i < 2; ++i)
    roof_analysis_free(&a[i]);
  /* the footprint caps the reuse distance: 256 MiB streamed, but only 16 MiB distinct: half the penalty */
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 256 * MIB, 16 * MIB, &a[0]), 0);
  ck_assert_double_eq(a[0].reuse_bytes, 16 * MIB);
  ck_assert_double_eq_tol(a[0].cold_fraction, 0.5, 1e-12);
  ck_assert_str_eq(a[0].regime, "partly cold");
  ck_assert_double_eq_tol(a[0].on[0].predicted, roof_time(f0, 2, 8) + 1e-6, 1e-18);
  roof_analysis_free(&a[0]);
  /* 1 MiB between calls: below the first sweep, which is cold by 1/8 */
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 2 * MIB, 0, &a[0]), 0);
  ck_assert_double_eq_tol(a[0].on[0].predicted, roof_time(f0, 2, 8) + 0.25e-6, 1e-18);
  ck_assert(a[0].efficiency < 0.5); /* the cold-measured time is far above this nearly warm roof */
  roof_analysis_free(&a[0]);
  /* bytes unknown (a trace file): warm, and said why */
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 0, 0, &a[0]), 0);
  ck_assert_double_eq(a[0].cold_fraction, 0);
  ck_assert_str_eq(a[0].regime, "warm: bytes unknown");
  ck_assert_double_eq(a[0].on[0].predicted, a[0].on[0].predicted_warm);
  roof_analysis_free(&a[0]);
  /* a profile without the cold term (an older probe): warm whatever the solver streams */
  p.cache.has = 0;
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 1e12, 0, &a[0]), 0);
  ck_assert_double_eq(a[0].cold_fraction, 0);
  ck_assert_str_eq(a[0].regime, "warm: no cold term");
  ck_assert_double_eq(a[0].on[0].predicted, roof_time(f0, 2, 8));
  roof_analysis_free(&a[0]);
  roof_profile_free(&p);
}
END_TEST

/* The probe's sharing test: where the ranks share a cache (share_ratio >= ROOF_SHARED_RATIO) and a
 * site's data of all ranks together between two calls (reuse x ranks) overflows it, the verdict says the calls
 * can be colder than the model; nowhere else. The predictions do not change. */
START_TEST(shared_cache_in_verdict) {
  roof_profile p;
  make_profile(&p); /* 2 ranks */
  add_cold(&p);
  p.cache.share_cache_bytes = 32 * MIB, p.cache.share_bytes = 19 * MIB, p.cache.share_ratio = 2.07;
  roof_site halo = make_site("halo", "plan", 2, 8, 5e-6, 10);
  roof_analysis a;
  char v[1024];
  /* 10 calls in 5 iterations, 40 MiB streamed per iteration: 20 MiB per rank between calls, 40 MiB for both */
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 40 * MIB, 0, &a), 0);
  ck_assert_double_eq(a.reuse_bytes, 20 * MIB);
  const double predicted = a.on[0].predicted;
  roof_run r = {.iterations = 5, .sites = &halo, .nsites = 1, .an = &a};
  strcpy(r.solver, "test");
  strcpy(r.path, "rma.lock.shm");
  ck_assert_double_eq(roof_run_shared_overflow(&r, &p), 40 * MIB);
  roof_verdict(&r, &p, v, sizeof v);
  ck_assert_msg(strstr(v, "share a core or a cache: 2.1x") && strstr(v, "touch 40 MiB together") &&
                    strstr(v, "more than the 32 MiB LLC"),
                "%s", v);
  /* caches of their own: no clause, same prediction */
  p.cache.share_ratio = 1.07;
  ck_assert_double_eq(roof_run_shared_overflow(&r, &p), 0);
  roof_verdict(&r, &p, v, sizeof v);
  ck_assert_msg(!strstr(v, "share a core"), "%s", v);
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 40 * MIB, 0, &a), 0);
  ck_assert_double_eq(a.on[0].predicted, predicted);
  roof_analysis_free(&a);
  /* shared, but 10 MiB per rank between calls: 20 MiB together fit */
  p.cache.share_ratio = 2.07;
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 20 * MIB, 0, &a), 0);
  r.an = &a;
  ck_assert_double_eq(roof_run_shared_overflow(&r, &p), 0);
  roof_analysis_free(&a);
  /* not measured (an older profile, or one rank) */
  p.cache.share_ratio = p.cache.share_bytes = p.cache.share_cache_bytes = 0;
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 40 * MIB, 0, &a), 0);
  r.an = &a;
  ck_assert_double_eq(roof_run_shared_overflow(&r, &p), 0);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* An adjoint's reversed plan (RMAOP_ADD) pays its path's accumulate extra on top of the INSERT fit, in the
 * share of its calls made in ADD mode; reductions, INSERT plans and paths without the point pay nothing. */
START_TEST(accumulate_extra_in_predictions) {
  roof_profile p;
  make_profile(&p);
  const roof_fit *f0 = &p.paths[0].fit, *f1 = &p.paths[1].fit;
  /* the insert as the fit has it: no timing offset (synced_offset), the extra alone */
  p.paths[0].add = (roof_add_point){
      .has = 1, .insert = roof_time(f0, 1, 8), .add = roof_time(f0, 1, 8) + 8e-6, .extra = 8e-6, .reps = 41};
  roof_site fwd = make_site("halo", "plan", 1, 8, 10e-6, 10), adj = make_site("halo^H", "plan", 1, 8, 18e-6, 10);
  roof_site half = adj, dot = make_site("dot", "reduce", 1, 40, 1e-6, 10);
  adj.calls_add = 10;
  half.calls_add = 5;
  dot.calls_add = 10; /* not a plan: never pays it */
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&fwd, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_time(f0, 1, 8), 1e-18);
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&adj, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_time(f0, 1, 8) + 8e-6, 1e-18);
  ck_assert_double_eq_tol(a.on[0].predicted_warm, roof_time(f0, 1, 8) + 8e-6, 1e-18); /* not a cache effect */
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(f1, 1, 8), 1e-18);             /* not measured there */
  ck_assert_double_eq_tol(roof_add_extra(&adj, &p.paths[0]), 8e-6, 1e-18);
  /* its roof includes the extra, so a site running at the predicted time is on its roof */
  ck_assert_double_eq_tol(a.on[0].fitted_bw, 8 / (8 / roof_fitted_bw(f0, 1, 8) + 8e-6), 1e-6);
  roof_analysis_free(&a);
  ck_assert_double_eq_tol(roof_add_extra(&half, &p.paths[0]), 4e-6, 1e-18);
  ck_assert_double_eq(roof_add_extra(&dot, &p.paths[0]), 0);
  ck_assert_double_eq(roof_add_extra(&adj, &p.paths[1]), 0);
  p.paths[0].add.has = 0; /* an older probe */
  ck_assert_double_eq(roof_add_extra(&adj, &p.paths[0]), 0);
  roof_profile_free(&p);
}
END_TEST

/* Plan sites, host and device profiles alike, are shifted per epoch by the path's 8 B epoch timed as solver
 * sites are (the accumulate point's insert) minus the fit's T(1, 8 B); reductions and paths without the point
 * are not; the shift never takes a prediction below the fit scaled by insert / T(1, 8 B). */
START_TEST(synced_offset) {
  roof_profile p;
  make_profile(&p);
  p.paths[0].add = (roof_add_point){.has = 1, .insert = 0, .add = 0, .extra = 0, .reps = 41};
  const roof_fit *f0 = &p.paths[0].fit;
  const double t18 = roof_time(f0, 1, 8);
  p.paths[0].add.insert = t18 - 0.3 * t18; /* solver-style 30 % under the fit */
  p.paths[0].add.add = p.paths[0].add.insert + 2e-6;
  p.paths[0].add.extra = 2e-6;
  roof_site halo = make_site("halo", "plan", 2, 1024, 5e-6, 10), adj = make_site("halo^H", "plan", 1, 8, 5e-6, 10);
  roof_site dot = make_site("mdot", "reduce", 1, 40, 3e-6, 10);
  adj.calls_add = 10;
  roof_analysis a;
  /* host profile: the same shift (the untimed barriers hide what the fit's span counts) */
  ck_assert_double_eq_tol(roof_synced_offset(&p.paths[0]), -0.3 * t18, 1e-18);
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_time(f0, 2, 1024) - 0.3 * t18, 1e-18);
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(&p.paths[1].fit, 2, 1024), 1e-18);
  roof_analysis_free(&a);
  strcpy(p.memory, "device");
  for (int j = 0; j < p.npaths; ++j)
    strcpy(p.paths[j].memory, "device");
  ck_assert_double_eq_tol(roof_synced_offset(&p.paths[0]), -0.3 * t18, 1e-18);
  ck_assert_double_eq(roof_synced_offset(&p.paths[1]), 0); /* no accumulate point there */
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, roof_time(f0, 2, 1024) - 0.3 * t18, 1e-18);
  ck_assert_double_eq_tol(a.on[0].fitted_bw, 2048 / (2048 / roof_fitted_bw(f0, 2, 1024) - 0.3 * t18), 1e-6);
  ck_assert_double_eq_tol(a.on[1].predicted, roof_time(&p.paths[1].fit, 2, 1024), 1e-18);
  roof_analysis_free(&a);
  /* an 8 B adjoint epoch is predicted as the measured ADD epoch itself */
  ck_assert_int_eq(roof_analyze(&adj, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, p.paths[0].add.add, 1e-18);
  roof_analysis_free(&a);
  /* reductions are not epochs of the fit: no shift */
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted_warm, roof_path_reduce_time(&p.paths[0], 40), 1e-18);
  roof_analysis_free(&a);
  /* an insert far under the fit: an 8 B epoch is predicted as the insert itself, a smaller one is not shifted
   * below the fit scaled by insert / T(1, 8 B) (where the shift alone would give less) */
  p.paths[0].add.insert = 0.05 * t18;
  roof_site small = make_site("halo", "plan", 1, 8, 5e-6, 10), tiny = make_site("halo", "plan", 1, 4, 5e-6, 10);
  ck_assert_int_eq(roof_analyze(&small, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, 0.05 * t18, 1e-18);
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&tiny, &p, 5, 0, 0, &a), 0);
  ck_assert_double_lt(roof_time(f0, 1, 4) - 0.95 * t18, 0.05 * roof_time(f0, 1, 4));
  ck_assert_double_eq_tol(a.on[0].predicted, 0.05 * roof_time(f0, 1, 4), 1e-18);
  roof_analysis_free(&a);
  /* a fit whose T(1, 8 B) is not positive gives no shift */
  p.paths[0].fit.alpha = -1;
  ck_assert_double_eq(roof_synced_offset(&p.paths[0]), 0);
  roof_profile_free(&p);
}
END_TEST

/* A plan site with computation overlapped inside begin..end pays its path's overlap penalty scaled by the
 * overlapped time per call over the probe's pass (at most 1); back-to-back epochs, reductions, sites without the
 * time inside, and paths without the point pay none. */
START_TEST(overlap_in_predictions) {
  roof_profile p;
  make_profile(&p);
  roof_cold *c = &p.paths[0].cold;
  c->has_overlap = 1;
  c->overlap = (roof_cold_point){.warm = 1e-6, .cold = 1.4e-6, .penalty = 0.4e-6, .reps = 41};
  c->overlap_bytes = 8 * MIB;
  c->overlap_seconds = 200e-6;
  roof_site halo = make_site("halo", "plan", 1, 8, 0, 10), dot = make_site("mdot", "reduce", 1, 40, 0, 10);
  halo.time_inside = 10 * 2e-6;
  halo.time_total = halo.time_inside + 10 * 100e-6; /* 100 us of computation per call inside begin..end */
  dot.time_inside = 10 * 2e-6;
  dot.time_total = dot.time_inside + 10 * 100e-6;
  ck_assert_double_eq_tol(roof_overlap_share(&halo, &p.paths[0]), 0.5, 1e-12);
  ck_assert_double_eq(roof_overlap_share(&halo, &p.paths[1]), 0); /* not measured there */
  ck_assert_double_eq(roof_overlap_share(&dot, &p.paths[0]), 0);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted - a.on[0].predicted_warm, 0.5 * 0.4e-6, 1e-15);
  ck_assert_double_eq_tol(a.on[1].predicted, a.on[1].predicted_warm, 1e-18);
  ck_assert_double_eq_tol(a.on[0].fitted_bw, 8 / (8 / roof_fitted_bw(&p.paths[0].fit, 1, 8) + 0.2e-6), 1e-6);
  roof_analysis_free(&a);
  halo.time_total = halo.time_inside + 10 * 1e-3; /* longer than the pass: all of it */
  ck_assert_double_eq_tol(roof_overlap_share(&halo, &p.paths[0]), 1, 1e-12);
  halo.time_total = halo.time_inside; /* begin and end back to back */
  ck_assert_double_eq(roof_overlap_share(&halo, &p.paths[0]), 0);
  halo.time_inside = 0; /* an old trace file: only the span */
  halo.time_total = 10 * 100e-6;
  ck_assert_double_eq(roof_overlap_share(&halo, &p.paths[0]), 0);
  c->overlap_seconds = 0;
  halo.time_inside = 10 * 2e-6;
  ck_assert_double_eq(roof_overlap_share(&halo, &p.paths[0]), 0);
  roof_profile_free(&p);
}
END_TEST

/* A reduction's warm time: at a measured count the probe's median, between two counts their medians
 * interpolated linearly in bytes, outside them the fit; the points may come in any order. */
START_TEST(reduction_points_interpolated) {
  roof_path q = {.nrpoints = 3, .has_rfit = 1, .rfit = {.alpha = 0.5e-6, .beta = 1e9}};
  roof_rpoint pts[3] = {{64, 2.0e-6, 100}, {1, 0.4e-6, 100}, {8, 0.6e-6, 100}};
  q.rpoints = pts;
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 8), 0.4e-6, 1e-18);
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 64), 0.6e-6, 1e-18);
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 512), 2.0e-6, 1e-18);
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 40), 0.4e-6 + 0.2e-6 * 32 / 56, 1e-18);
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 288), 0.6e-6 + 1.4e-6 * 224 / 448, 1e-18);
  /* beyond the largest count, or below the smallest: the fit */
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 4096), 0.5e-6 + 4096 / 1e9, 1e-18);
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 4), 0.5e-6 + 4 / 1e9, 1e-18);
  /* one point: the fit */
  q.nrpoints = 1;
  ck_assert_double_eq_tol(roof_path_reduce_time(&q, 64), 0.5e-6 + 64 / 1e9, 1e-18);
  /* a reduction site is predicted from them (make_profile: 1.0 us at 8 B, 1.1 us at 512 B; fit 1 us + b / 8 GB/s) */
  roof_profile p;
  make_profile(&p);
  roof_site dot = make_site("mdot", "reduce", 1, 40, 1e-6, 10);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, 1.0e-6 + 0.1e-6 * 32 / 504, 1e-18);
  ck_assert(fabs(a.on[0].predicted - roof_reduce_time(&p.paths[0].rfit, 40)) > 1e-10);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* Device memory: no cache term; every reduction site is predicted as its path's measured reduction after a
 * device dot (24 B), carried to the site's size by the reduction points' slope, whatever the solver streams
 * (above or below the fit); plans pay no cold penalty. */
START_TEST(device_reduction_after_dot) {
  roof_profile p;
  make_profile(&p);
  strcpy(p.memory, "device");
  for (int j = 0; j < p.npaths; ++j)
    strcpy(p.paths[j].memory, "device");
  p.paths[0].cold = (roof_cold){.has_reduce = 1, .reduce = {.warm = 1e-6, .cold = 3e-6, .penalty = 2e-6, .reps = 41}};
  const roof_path *q = &p.paths[0]; /* reduction points: 1.0 us at 8 B, 1.1 us at 512 B */
  roof_site halo = make_site("halo", "plan", 1, 8, 5e-6, 10), dot = make_site("mdot", "reduce", 1, 40, 3e-6, 10);
  roof_analysis a;
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 0, 0, &a), 0); /* bytes unknown: still after a dot */
  ck_assert_double_eq(a.cold_fraction, 1);
  ck_assert_str_eq(a.regime, "after device dot");
  ck_assert_double_eq_tol(a.on[0].predicted, 3e-6 + (40 - 24) * 0.1e-6 / (512 - 8), 1e-18);
  ck_assert_double_eq_tol(a.on[0].predicted_warm, roof_path_reduce_time(q, 40), 1e-18);
  ck_assert_double_eq_tol(roof_cold_penalty(q, "reduce"), 3e-6 - roof_path_reduce_time(q, 24), 1e-18);
  roof_analysis_free(&a);
  /* a measured point below the fit (a poor fit at small counts) lowers the prediction */
  p.paths[0].cold.reduce.cold = 0.5e-6;
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 0, 0, &a), 0);
  ck_assert_double_eq_tol(a.on[0].predicted, 0.5e-6 + (40 - 24) * 0.1e-6 / (512 - 8), 1e-18);
  ck_assert(a.on[0].predicted < a.on[0].predicted_warm);
  ck_assert_double_eq_tol(a.on[1].predicted, a.on[1].predicted_warm, 1e-18); /* twosided measured none */
  roof_analysis_free(&a);
  ck_assert_int_eq(roof_analyze(&halo, &p, 5, 1e12, 0, &a), 0);
  ck_assert_double_eq(a.cold_fraction, 0);
  ck_assert_str_eq(a.regime, "warm (device)");
  ck_assert_double_eq_tol(a.on[0].predicted, roof_time(&p.paths[0].fit, 1, 8), 1e-18);
  roof_analysis_free(&a);
  /* a device profile of an older probe: warm, and said why */
  p.paths[0].cold.has_reduce = 0;
  ck_assert_int_eq(roof_analyze(&dot, &p, 5, 0, 0, &a), 0);
  ck_assert_str_eq(a.regime, "warm: no cold term");
  ck_assert_double_eq(a.on[0].predicted, a.on[0].predicted_warm);
  roof_analysis_free(&a);
  roof_profile_free(&p);
}
END_TEST

/* ---- files -------------------------------------------------------------------------------------------- */

/* A profile read back (@p q, from @p file) writes @p file2 with the same text. */
static void expect_rewrites_same(const roof_profile *q, const char *file, const char *file2) {
  char err[ROOF_ERR_MAX];
  ck_assert_msg(roof_profile_write(q, file2, err, sizeof err) == 0, "%s", err);
  char *t1 = read_text(file), *t2 = read_text(file2);
  ck_assert_str_eq(t1, t2);
  free(t1);
  free(t2);
}

START_TEST(profile_round_trip) {
  roof_profile p, q;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  const char *file = scratch("profile.json");
  ck_assert_int_eq(roof_profile_write(&p, file, err, sizeof err), 0);
  ck_assert_msg(roof_profile_read(file, &q, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(q.npaths, 2);
  ck_assert_int_eq(q.ranks, 2);
  ck_assert_str_eq(q.created, p.created);
  for (int j = 0; j < 2; ++j) {
    const roof_path *a = &p.paths[j], *b = &q.paths[j];
    ck_assert_str_eq(a->name, b->name);
    ck_assert_str_eq(a->backend, b->backend);
    ck_assert_int_eq(a->fit.npieces, b->fit.npieces);
    ck_assert_int_eq(a->fit.split_bytes, b->fit.split_bytes);
    ck_assert_int_eq(a->fit.poor, b->fit.poor);
    ck_assert(rel(a->fit.alpha, b->fit.alpha) < 1e-8);
    for (int i = 0; i < a->fit.npieces; ++i) {
      ck_assert(a->fit.piece[i].upto == b->fit.piece[i].upto || rel(a->fit.piece[i].upto, b->fit.piece[i].upto) < 1e-8);
      ck_assert(a->fit.piece[i].o == b->fit.piece[i].o || rel(a->fit.piece[i].o, b->fit.piece[i].o) < 1e-8);
      ck_assert(rel(a->fit.piece[i].beta, b->fit.piece[i].beta) < 1e-8);
    }
    ck_assert_int_eq(a->npoints, b->npoints);
    for (int i = 0; i < a->npoints; ++i) {
      ck_assert_int_eq(a->points[i].n, b->points[i].n);
      ck_assert(a->points[i].m == b->points[i].m && rel(a->points[i].t, b->points[i].t) < 1e-8);
    }
    ck_assert_int_eq(a->has_rfit, b->has_rfit);
    ck_assert_int_eq(a->nrpoints, b->nrpoints);
  }
  ck_assert(rel(q.paths[0].rfit.beta, 8e9) < 1e-8);
  ck_assert(isinf(q.paths[0].fit.piece[2].upto));
  /* written without the cold term (as older probes did), it reads back without one: penalty 0, warm */
  ck_assert_int_eq(q.cache.has, 0);
  for (int j = 0; j < 2; ++j) {
    ck_assert_int_eq(q.paths[j].cold.has_epoch + q.paths[j].cold.has_reduce, 0);
    ck_assert_double_eq(roof_cold_penalty(&q.paths[j], "plan"), 0);
    ck_assert_double_eq(roof_cold_penalty(&q.paths[j], "reduce"), 0);
  }
  char *text = read_text(file);
  ck_assert_ptr_null(strstr(text, "\"cold\""));
  ck_assert_ptr_null(strstr(text, "\"cache\""));
  ck_assert_ptr_null(strstr(text, "\"accumulate\""));
  free(text);
  for (int j = 0; j < 2; ++j)
    ck_assert_int_eq(q.paths[j].add.has, 0);
  roof_profile_free(&p);
  roof_profile_free(&q);
}
END_TEST

/* A device profile: the reduction after a device dot (a "cold" member without an epoch) and the accumulate
 * point read back as written, and write again identically. */
START_TEST(profile_round_trip_device_points) {
  roof_profile p, q;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  strcpy(p.memory, "device");
  p.paths[0].cold =
      (roof_cold){.has_reduce = 1, .reduce = {.warm = 1e-6, .cold = 3.5e-6, .penalty = 2.5e-6, .reps = 41}};
  p.paths[0].add = (roof_add_point){.has = 1, .insert = 10e-6, .add = 18e-6, .extra = 8e-6, .reps = 41};
  const char *file = scratch("profile-device.json"), *file2 = scratch("profile-device2.json");
  ck_assert_int_eq(roof_profile_write(&p, file, err, sizeof err), 0);
  ck_assert_msg(roof_profile_read(file, &q, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(q.paths[0].cold.has_epoch, 0);
  ck_assert_int_eq(q.paths[0].cold.has_reduce, 1);
  ck_assert(rel(q.paths[0].cold.reduce.penalty, 2.5e-6) < 1e-8);
  ck_assert_int_eq(q.paths[0].add.has, 1);
  ck_assert(rel(q.paths[0].add.insert, 10e-6) < 1e-8 && rel(q.paths[0].add.add, 18e-6) < 1e-8);
  ck_assert(rel(q.paths[0].add.extra, 8e-6) < 1e-8);
  ck_assert_int_eq(q.paths[0].add.reps, 41);
  ck_assert_int_eq(q.paths[1].add.has, 0);
  expect_rewrites_same(&q, file, file2);
  /* a malformed accumulate member is refused with its name */
  roof_profile_free(&q);
  char *text = read_text(file), *at = strstr(text, "\"extra\": ");
  ck_assert_ptr_nonnull(at);
  ck_assert_int_eq(strncmp(at + 9, "8e-06", 5), 0);
  memcpy(at + 9, "-1e-6", 5); /* a negative time */
  write_text(file2, text);
  free(text);
  ck_assert_int_eq(roof_profile_read(file2, &q, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "accumulate") && strstr(err, "extra"), "%s", err);
  roof_profile_free(&p);
}
END_TEST

START_TEST(profile_round_trip_cold) {
  roof_profile p, q;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  add_cold(&p);
  add_reduce_curve(&p);
  p.paths[0].cold.has_after_epoch = 1; /* the dot after an epoch: lock.shm only, twosided without */
  p.paths[0].cold.after_epoch = (roof_cold_point){.warm = 1.1e-6, .cold = 2.5e-6, .penalty = 1.4e-6, .reps = 9};
  roof_cold *c0 = &p.paths[0].cold; /* the same-bytes curve: lock.shm only */
  c0->nscurve = 2;
  c0->scurve_bytes[0] = 2 * MIB, c0->scurve_t[0] = 1.2e-6;
  c0->scurve_bytes[1] = 8 * MIB, c0->scurve_t[1] = 1.3e-6;
  c0->has_overlap = 1; /* the overlapped epoch: lock.shm only */
  c0->overlap = (roof_cold_point){.warm = 0.5e-6, .cold = 0.75e-6, .penalty = 0.25e-6, .reps = 41};
  c0->overlap_bytes = 8 * MIB;
  c0->overlap_seconds = 280e-6;
  p.cache.share_cache_bytes = 32 * MIB, p.cache.share_bytes = 19 * MIB, p.cache.share_ratio = 2.07;
  const char *file = scratch("profile-cold.json");
  ck_assert_int_eq(roof_profile_write(&p, file, err, sizeof err), 0);
  ck_assert_msg(roof_profile_read(file, &q, err, sizeof err) == 0, "%s", err);
  const roof_cache *a = &p.cache, *b = &q.cache;
  ck_assert_int_eq(b->has, 1);
  ck_assert_double_eq(b->llc_bytes, a->llc_bytes);
  ck_assert_double_eq(b->sweep_bytes, a->sweep_bytes);
  ck_assert_str_eq(b->llc_source, "sysconf");
  ck_assert_str_eq(b->curve_path, "rma.lock.shm");
  ck_assert_int_eq(a->sweep_barriers, 0); /* a probe whose ranks had a core each; a missing member reads 3 */
  ck_assert_int_eq(b->sweep_barriers, 0);
  ck_assert(b->share_cache_bytes == a->share_cache_bytes && b->share_bytes == a->share_bytes);
  ck_assert(rel(b->share_ratio, a->share_ratio) < 1e-8);
  ck_assert_double_eq_tol(roof_cold_fraction(b, 8 * MIB), roof_cold_fraction(a, 8 * MIB), 1e-12);
  ck_assert(rel(b->curve_warm, a->curve_warm) < 1e-8);
  ck_assert_int_eq(b->ncurve, 3);
  for (int i = 0; i < 3; ++i)
    ck_assert(b->curve_bytes[i] == a->curve_bytes[i] && rel(b->curve_t[i], a->curve_t[i]) < 1e-8);
  for (int j = 0; j < 2; ++j) {
    const roof_cold *x = &p.paths[j].cold, *y = &q.paths[j].cold;
    ck_assert_int_eq(y->has_epoch, x->has_epoch);
    ck_assert_int_eq(y->has_reduce, x->has_reduce);
    ck_assert_double_eq(y->sweep_bytes, x->sweep_bytes);
    ck_assert(rel(y->epoch.warm, x->epoch.warm) < 1e-8 && rel(y->epoch.cold, x->epoch.cold) < 1e-8);
    ck_assert(rel(y->epoch.penalty, x->epoch.penalty) < 1e-8);
    ck_assert_int_eq(y->epoch.reps, x->epoch.reps);
    ck_assert(y->reduce.penalty == x->reduce.penalty || rel(y->reduce.penalty, x->reduce.penalty) < 1e-8);
    ck_assert_int_eq(y->nrcurve, x->nrcurve);
    for (int i = 0; i < x->nrcurve; ++i)
      ck_assert(y->rcurve_bytes[i] == x->rcurve_bytes[i] && rel(y->rcurve_t[i], x->rcurve_t[i]) < 1e-8);
    ck_assert_int_eq(y->nscurve, x->nscurve);
    for (int i = 0; i < x->nscurve; ++i)
      ck_assert(y->scurve_bytes[i] == x->scurve_bytes[i] && rel(y->scurve_t[i], x->scurve_t[i]) < 1e-8);
    ck_assert_int_eq(y->has_after_epoch, x->has_after_epoch);
    ck_assert(rel(y->after_epoch.cold, x->after_epoch.cold) < 1e-8 || !x->has_after_epoch);
    ck_assert(rel(y->after_epoch.warm, x->after_epoch.warm) < 1e-8 || !x->has_after_epoch);
    ck_assert_int_eq(y->after_epoch.reps, x->after_epoch.reps);
    ck_assert_int_eq(y->has_overlap, x->has_overlap);
    ck_assert(!x->has_overlap ||
              (rel(y->overlap.warm, x->overlap.warm) < 1e-8 && rel(y->overlap.cold, x->overlap.cold) < 1e-8 &&
               rel(y->overlap.penalty, x->overlap.penalty) < 1e-8 && y->overlap.reps == 41 &&
               y->overlap_bytes == x->overlap_bytes && rel(y->overlap_seconds, x->overlap_seconds) < 1e-8));
  }
  ck_assert_int_eq(q.paths[0].cold.has_overlap, 1);
  ck_assert_int_eq(q.paths[1].cold.has_overlap, 0);
  ck_assert_int_eq(q.paths[0].cold.has_after_epoch, 1);
  ck_assert_int_eq(q.paths[0].cold.nrcurve, 2);
  ck_assert_int_eq(q.paths[0].cold.nscurve, 2);
  ck_assert_int_eq(q.paths[1].cold.nscurve, 0);
  /* recorded, not used: the fraction is the fresh curve's */
  ck_assert_double_eq_tol(roof_path_cold_fraction(&q.cache, &q.paths[0], "reduce", 8 * MIB), 0.3, 1e-8);
  ck_assert_double_eq_tol(roof_cold_penalty(&q.paths[0], "reduce"), 5e-6, 1e-15);
  ck_assert_double_eq_tol(roof_cold_penalty(&q.paths[1], "reduce"), 3e-6, 1e-15);
  /* and again: a profile read back writes the same cold term */
  expect_rewrites_same(&q, file, scratch("profile-cold2.json"));
  /* without the sharing test (one rank, older probes) the members are left out and read back as 0 */
  roof_profile_free(&q);
  p.cache.share_cache_bytes = p.cache.share_bytes = p.cache.share_ratio = 0;
  ck_assert_int_eq(roof_profile_write(&p, file, err, sizeof err), 0);
  ck_assert_msg(roof_profile_read(file, &q, err, sizeof err) == 0, "%s", err);
  ck_assert(q.cache.has && q.cache.share_bytes == 0 && q.cache.share_ratio == 0 && q.cache.share_cache_bytes == 0);
  roof_profile_free(&p);
  roof_profile_free(&q);
}
END_TEST

/* Each bad file must be refused with a message naming what is wrong. */
static void expect_profile_error(const char *text, const char *needle) {
  const char *file = scratch("bad.json");
  roof_profile q;
  char err[ROOF_ERR_MAX] = "";
  write_text(file, text);
  ck_assert_int_eq(roof_profile_read(file, &q, err, sizeof err), -1);
  ck_assert_msg(strstr(err, needle) != NULL, "error \"%s\" lacks \"%s\"", err, needle);
}

START_TEST(profile_rejects_bad_files) {
  roof_profile q;
  char err[ROOF_ERR_MAX] = "";
  ck_assert_int_eq(roof_profile_read(scratch("does-not-exist.json"), &q, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "cannot open"));
  expect_profile_error("", "not valid JSON");
  expect_profile_error("{\"format\": \"rmaop-roofline-profile\",}", "line 1, column 37");
  expect_profile_error("{\"format\": \"rmaop-roofline-profile\"", "expected ',' or '}'");
  expect_profile_error("[1, 2]", "not an object");
  expect_profile_error("{\"format\": \"something-else\", \"version\": 1}", "format");
  expect_profile_error("{\"format\": \"rmaop-roofline-profile\", \"version\": 7}", "version");
  const char *head = "{\"format\": \"rmaop-roofline-profile\", \"version\": 1, \"ranks\": 2, \"memory\": \"host\", "
                     "\"pattern\": \"p\", \"paths\": [";
  char buf[2048];
  snprintf(buf, sizeof buf, "%s]}", head);
  expect_profile_error(buf, "empty");
  snprintf(buf, sizeof buf,
           "%s{\"name\": \"rma.nosuch.shm\", \"backend\": \"rma\", \"sync\": \"x\", \"transport\": "
           "\"shm\", \"memory\": \"host\"}]}",
           head);
  expect_profile_error(buf, "unknown path");
  const char *path = "{\"name\": \"twosided\", \"backend\": \"twosided\", \"sync\": \"-\", \"transport\": \"-\", "
                     "\"memory\": \"host\", \"points\": [], \"fit\": ";
  snprintf(buf, sizeof buf,
           "%s%s{\"pieces\": [{\"upto\": null, \"o\": 0, \"beta\": 1e9}], \"rel_median\": 0, "
           "\"rel_max\": 0, \"npoints\": 0, \"quality\": \"good\"}}]}",
           head, path);
  expect_profile_error(buf, "paths[0].fit.alpha: missing");
  snprintf(buf, sizeof buf,
           "%s%s{\"alpha\": 1e-6, \"pieces\": [{\"upto\": null, \"o\": 0, \"beta\": -5}], "
           "\"rel_median\": 0, \"rel_max\": 0, \"npoints\": 0, \"quality\": \"good\"}}]}",
           head, path);
  expect_profile_error(buf, "beta: must be >= 0");
  snprintf(buf, sizeof buf, "%s%s{\"alpha\": \"fast\"}}]}", head, path);
  expect_profile_error(buf, "alpha: not a number");
  const char *fit = "{\"alpha\": 1e-6, \"pieces\": [{\"upto\": null, \"o\": 0, \"beta\": 1e9}], \"rel_median\": 0, "
                    "\"rel_max\": 0, \"npoints\": 0, \"quality\": \"good\"}";
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, \"epoch\": {\"warm\": 1e-6, \"cold\": 2e-6, \"penalty\": -1, "
           "\"reps\": 9}}}]}",
           head, path, fit);
  expect_profile_error(buf, "paths[0].cold.penalty: must be >= 0");
  snprintf(buf, sizeof buf, "%s%s%s, \"cold\": {\"epoch\": {}}}]}", head, path, fit);
  expect_profile_error(buf, "paths[0].cold.sweep_bytes: missing");
  const char *red = "\"reduce\": {\"count\": 1, \"warm\": 1e-6, \"cold\": 5e-6, \"penalty\": 4e-6, \"reps\": 9}";
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, %s, \"reduce_curve\": [{\"bytes\": 2e6, \"t\": 2e-6}, "
           "{\"bytes\": 1e8, \"t\": 3e-6}]}}]}",
           head, path, fit, red);
  expect_profile_error(buf, "paths[0].cold.reduce_curve: bytes must stay below the full sweep");
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, %s, \"reduce_curve\": [{\"bytes\": 4e6, \"t\": 2e-6}, "
           "{\"bytes\": 2e6, \"t\": 3e-6}]}}]}",
           head, path, fit, red);
  expect_profile_error(buf, "paths[0].cold.reduce_curve: bytes must be > 0 and increase");
  snprintf(buf, sizeof buf, "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, %s, \"reduce_curve\": {}}}]}", head, path, fit,
           red);
  expect_profile_error(buf, "paths[0].cold.reduce_curve");
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, %s, \"reduce_curve_same_bytes\": [{\"bytes\": 2e6, "
           "\"t\": 2e-6}, {\"bytes\": 2e8, \"t\": 3e-6}]}}]}",
           head, path, fit, red);
  expect_profile_error(buf, "paths[0].cold.reduce_curve_same_bytes: bytes must stay below the full sweep");
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, %s, \"reduce_after_epoch\": {\"count\": 1, \"warm\": 1e-6, "
           "\"cold\": 2e-6, \"penalty\": 1e-6}}}]}",
           head, path, fit, red);
  expect_profile_error(buf, "paths[0].cold.reps: missing");
  snprintf(buf, sizeof buf,
           "%s%s%s, \"cold\": {\"sweep_bytes\": 1e8, \"epoch\": {\"n\": 1, \"m\": 8, \"warm\": 1e-6, \"cold\": 2e-6, "
           "\"penalty\": 1e-6, \"reps\": 9}, \"epoch_overlapped\": {\"n\": 1, \"m\": 8, \"between_bytes\": 8e6, "
           "\"warm\": 1e-6, \"cold\": 1.2e-6, \"penalty\": 0.2e-6, \"reps\": 41}}}]}",
           head, path, fit);
  expect_profile_error(buf, "paths[0].cold.epoch_overlapped.between_seconds: missing");
  const char *cache_head = "{\"format\": \"rmaop-roofline-profile\", \"version\": 1, \"ranks\": 2, \"memory\": "
                           "\"host\", \"pattern\": \"p\", \"cache\": {\"llc_bytes\": 0, \"llc_source\": \"unknown\", "
                           "\"curve_path\": \"twosided\", \"curve_warm\": 1e-6, \"sweep_bytes\": ";
  snprintf(buf, sizeof buf, "%s\"many\", \"curve\": []}, \"paths\": [%s%s}]}", cache_head, path, fit);
  expect_profile_error(buf, "cache.sweep_bytes: not a number");
  snprintf(buf, sizeof buf,
           "%s1e8, \"curve\": [{\"bytes\": 2e6, \"t\": 1e-6}, {\"bytes\": 1e6, \"t\": 2e-6}]}, "
           "\"paths\": [%s%s}]}",
           cache_head, path, fit);
  expect_profile_error(buf, "cache.curve: bytes must be > 0 and increase");
  snprintf(buf, sizeof buf, "%s1e8, \"sweep_barriers\": -1, \"curve\": []}, \"paths\": [%s%s}]}", cache_head, path,
           fit);
  expect_profile_error(buf, "cache.sweep_barriers: not an integer in range");
  /* a profile from an older probe has no sweep_barriers: that probe met in 3 barriers after each sweep */
  snprintf(buf, sizeof buf, "%s1e8, \"curve\": [{\"bytes\": 1e6, \"t\": 2e-6}]}, \"paths\": [%s%s}]}", cache_head, path,
           fit);
  write_text(scratch("old-cache.json"), buf);
  ck_assert_msg(roof_profile_read(scratch("old-cache.json"), &q, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(q.cache.has, 1);
  ck_assert_int_eq(q.cache.sweep_barriers, 3);
  roof_profile_free(&q);
}
END_TEST

START_TEST(json_parser) {
  char err[ROOF_ERR_MAX];
  json_value *v =
      json_parse(" {\"a\": [1, -2.5e3, true, false, null], \"s\": \"\\u00e9\\ud83d\\ude00\\n\\\"\"} ", err, sizeof err);
  ck_assert_msg(v != NULL, "%s", err);
  const json_value *a = json_get(v, "a"), *s = json_get(v, "s");
  ck_assert_int_eq(a->type, JSON_ARRAY);
  ck_assert_int_eq((int)a->count, 5);
  ck_assert_double_eq(a->items[1].number, -2500);
  ck_assert_int_eq(a->items[2].type, JSON_BOOL);
  ck_assert_int_eq(a->items[4].type, JSON_NULL);
  ck_assert_str_eq(s->string, "\xc3\xa9\xf0\x9f\x98\x80\n\"");
  ck_assert_ptr_null(json_get(v, "missing"));
  json_free(v);
  static const char *const bad[] = {
      "01",  "1.",      "-",           ".5",           "[1,]",  "{\"a\" 1}",     "\"abc", "\"\\x\"",
      "tru", "[1] [2]", "\"\\ud800\"", "{\"a\": nan}", "1e999", "\"tab\there\"", NULL};
  for (int i = 0; bad[i]; ++i) {
    v = json_parse(bad[i], err, sizeof err);
    ck_assert_msg(v == NULL, "accepted %s", bad[i]);
    ck_assert_ptr_nonnull(strstr(err, "line 1, column"));
  }
  char deep[200];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 99);
  deep[199] = 0;
  ck_assert_ptr_null(json_parse(deep, err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "nesting"));
}
END_TEST

START_TEST(trace_files_merge_ranks) {
  const char *r0 = scratch("trace0.json"), *r1 = scratch("trace1.json");
  write_text(r0, "{\"rank\": 0, \"size\": 2, \"backend\": \"rma\", \"sites\": [\n"
                 "  {\"label\": \"halo\", \"kind\": \"plan\", \"backend\": \"rma\", \"transport\": \"shm\", \"sync\": "
                 "\"pscw\", \"calls\": 10, \"messages\": 1, \"bytes_per_message\": 8, \"time_total\": 1e-5, "
                 "\"time_min\": 1e-6, \"time_max\": 1e-6},\n"
                 "  {\"label\": \"dot\", \"kind\": \"reduce\", \"backend\": \"rma\", \"transport\": \"shm\", \"sync\": "
                 "\"pscw\", \"calls\": 20, \"messages\": 1, \"bytes_per_message\": 16, \"time_total\": 4e-5, "
                 "\"time_min\": 1e-6, \"time_max\": 1e-6}\n]}\n");
  write_text(r1, "{\"rank\": 1, \"size\": 2, \"backend\": \"rma\", \"sites\": [\n"
                 "  {\"label\": \"halo\", \"kind\": \"plan\", \"backend\": \"rma\", \"transport\": \"shm\", \"sync\": "
                 "\"pscw\", \"calls\": 10, \"messages\": 2, \"bytes_per_message\": 8, \"time_total\": 3e-5, "
                 "\"time_min\": 1e-6, \"time_max\": 1e-6, \"time_inside\": 2e-5, \"time_inside_median\": 1.5e-6, "
                 "\"calls_add\": 10}\n]}\n");
  roof_site *sites = NULL;
  int n = 0;
  char err[ROOF_ERR_MAX];
  ck_assert_int_eq(roof_trace_read(r0, &sites, &n, err, sizeof err), 0);
  ck_assert_int_eq(roof_trace_read(r1, &sites, &n, err, sizeof err), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(sites[0].path, "rma.pscw.shm");
  ck_assert_double_eq(sites[0].messages, 2); /* the slowest rank's view */
  ck_assert_double_eq(sites[0].time_total, 3e-5);
  ck_assert_double_eq(sites[0].time_inside, 2e-5);
  ck_assert_double_eq(sites[0].inside_median, 1.5e-6); /* rank 0's file has none (older traces): 0, then max */
  ck_assert_double_eq(sites[1].inside_median, 0);
  ck_assert_double_eq(sites[0].calls_add, 10); /* rank 0's file has none (older traces): 0, then max */
  ck_assert_double_eq(sites[1].calls_add, 0);
  ck_assert_str_eq(sites[1].kind, "reduce");
  write_text(r1, "{\"sites\": [{\"label\": \"x\", \"kind\": \"plan\"}]}");
  ck_assert_int_eq(roof_trace_read(r1, &sites, &n, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "sites[0].backend"));
  write_text(r1, "{\"rank\": 0}");
  ck_assert_int_eq(roof_trace_read(r1, &sites, &n, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not an rmaop trace file"));
  free(sites);
}
END_TEST

START_TEST(path_names) {
  char b[16], s[16], t[16], m[16], err[ROOF_ERR_MAX];
  ck_assert_int_eq(roof_path_parse("rma.pscw.mpi", b, s, t, m, err, sizeof err), 0);
  ck_assert_str_eq(b, "rma");
  ck_assert_str_eq(s, "pscw");
  ck_assert_str_eq(t, "mpi");
  ck_assert_str_eq(m, "host");
  ck_assert_int_eq(roof_path_parse("rma.lock.ipc.device", b, s, t, m, err, sizeof err), 0);
  ck_assert_str_eq(m, "device");
  ck_assert_int_eq(roof_path_parse("twosided", b, s, t, m, err, sizeof err), 0);
  ck_assert_str_eq(s, "-");
  ck_assert_int_eq(roof_path_parse("rma.fence.tcp", b, s, t, m, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "unknown path \"rma.fence.tcp\""));
  ck_assert_ptr_nonnull(strstr(err, "twosided"));
}
END_TEST

/* ---- XML well-formedness (enough of XML 1.0 for what a plot may contain) ------------------------------ */

typedef struct {
  const char *p;
  char stack[64][32];
  int depth, roots;
  int count_circle, count_rect, count_polyline, count_text, count_line, count_g;
} xml;

static int xml_entity(const char **p) {
  static const char *const ok[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", NULL};
  for (int i = 0; ok[i]; ++i)
    if (strncmp(*p, ok[i], strlen(ok[i])) == 0)
      return *p += strlen(ok[i]), 1;
  if ((*p)[1] == '#') {
    const char *q = *p + 2;
    while (*q && *q != ';' && (q - *p) < 10)
      ++q;
    if (*q == ';')
      return *p = q + 1, 1;
  }
  return 0;
}

static int xml_name(const char **p, char *out, size_t len) {
  size_t n = 0;
  while (**p && (isalnum((unsigned char)**p) || strchr(":_-.", **p))) {
    if (n + 1 < len)
      out[n++] = **p;
    ++*p;
  }
  out[n] = 0;
  return n > 0;
}

static int xml_attrs(xml *x) {
  char name[64];
  for (;;) {
    while (isspace((unsigned char)*x->p))
      ++x->p;
    if (*x->p == '>' || *x->p == '/' || *x->p == '?')
      return 1;
    if (!xml_name(&x->p, name, sizeof name) || *x->p++ != '=')
      return 0;
    char q = *x->p++;
    if (q != '"' && q != '\'')
      return 0;
    while (*x->p != q) {
      if (!*x->p || *x->p == '<')
        return 0;
      if (*x->p == '&' && !xml_entity(&x->p))
        return 0;
      else if (*x->p != '&')
        ++x->p;
    }
    ++x->p;
  }
}

static void xml_count(xml *x, const char *name) {
  if (!strcmp(name, "circle"))
    x->count_circle++;
  if (!strcmp(name, "rect"))
    x->count_rect++;
  if (!strcmp(name, "polyline"))
    x->count_polyline++;
  if (!strcmp(name, "text"))
    x->count_text++;
  if (!strcmp(name, "line"))
    x->count_line++;
  if (!strcmp(name, "g"))
    x->count_g++;
}

static int xml_tag(xml *x) {
  char name[32];
  if (!strncmp(x->p, "<?", 2))
    return (x->p = strstr(x->p, "?>")) ? (x->p += 2, 1) : 0;
  if (!strncmp(x->p, "<!--", 4))
    return (x->p = strstr(x->p, "-->")) ? (x->p += 3, 1) : 0;
  if (x->p[1] == '/') {
    x->p += 2;
    if (!xml_name(&x->p, name, sizeof name) || *x->p++ != '>' || x->depth == 0)
      return 0;
    return strcmp(x->stack[--x->depth], name) == 0;
  }
  ++x->p;
  if (!xml_name(&x->p, name, sizeof name) || !xml_attrs(x))
    return 0;
  if (x->depth == 0)
    x->roots++;
  xml_count(x, name);
  if (*x->p == '/')
    return x->p[1] == '>' ? (x->p += 2, 1) : 0;
  if (*x->p++ != '>' || x->depth == 64)
    return 0;
  snprintf(x->stack[x->depth++], sizeof x->stack[0], "%s", name);
  return 1;
}

static int xml_well_formed(const char *text, xml *x) {
  memset(x, 0, sizeof *x);
  x->p = text;
  while (*x->p) {
    if (*x->p == '<') {
      if (!xml_tag(x))
        return 0;
    } else if (*x->p == '&') {
      if (!xml_entity(&x->p))
        return 0;
    } else {
      if (*x->p == '>' && x->depth == 0)
        return 0;
      ++x->p;
    }
  }
  return x->depth == 0 && x->roots == 1;
}

START_TEST(xml_checker_itself) {
  xml x;
  ck_assert(xml_well_formed("<?xml version=\"1.0\"?>\n<a b=\"1 &amp; 2\"><c/><d>t &lt; u</d></a>\n", &x));
  ck_assert(!xml_well_formed("<a><b></a></b>", &x));
  ck_assert(!xml_well_formed("<a b=\"1\">", &x));
  ck_assert(!xml_well_formed("<a b=1/>", &x));
  ck_assert(!xml_well_formed("<a>x & y</a>", &x));
  ck_assert(!xml_well_formed("<a/><b/>", &x));
}
END_TEST

START_TEST(svg_plots_are_well_formed) {
  roof_profile p;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  roof_site sites[2] = {make_site("halo<&>\"", "plan", 2, 8, 5e-6, 10), make_site("dot", "reduce", 1, 16, 3e-6, 20)};
  roof_analysis an[2];
  for (int i = 0; i < 2; ++i)
    ck_assert_int_eq(roof_analyze(&sites[i], &p, 10, 0, 0, &an[i]), 0);
  roof_run r = {.iterations = 10, .sites = sites, .nsites = 2, .an = an};
  strcpy(r.solver, "deriv1d n=64 CGLS");
  strcpy(r.path, "rma.lock.shm");
  const char *file = scratch("roofline.svg");
  ck_assert_msg(roof_svg_roofline(file, &r, 1, &p, err, sizeof err) == 0, "%s", err);
  char *svg = read_text(file);
  xml x;
  ck_assert_msg(xml_well_formed(svg, &x), "not well-formed near: %.60s", x.p ? x.p : "");
  ck_assert_ptr_nonnull(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  ck_assert_ptr_nonnull(strstr(svg, ">bytes per message</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">bandwidth (GB/s)</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">8 B</text>")); /* x tick labels */
  ck_assert_ptr_nonnull(strstr(svg, ">2 MiB</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">10</text>")); /* y tick label (GB/s) */
  ck_assert_ptr_nonnull(strstr(svg, "class=\"ceiling\""));
  ck_assert_ptr_nonnull(strstr(svg, "class=\"diagonal\""));
  ck_assert_ptr_nonnull(strstr(svg, "class=\"fitted-roof\""));
  ck_assert_ptr_nonnull(strstr(svg, "halo&lt;&amp;&gt;&quot; (plan, n=2)")); /* site label, escaped */
  ck_assert_ptr_nonnull(strstr(svg, "twosided  (fit: poor)"));               /* legend says so */
  ck_assert_ptr_nonnull(strstr(svg, "class=\"legend\""));
  ck_assert_int_ge(x.count_circle, 1); /* the plan site */
  ck_assert_int_ge(x.count_rect, 3);   /* background, frame, the reduce site */
  ck_assert_int_ge(x.count_polyline, 2 * 5);
  free(svg);
  file = scratch("probe.svg");
  ck_assert_msg(roof_svg_probe(file, &p, err, sizeof err) == 0, "%s", err);
  svg = read_text(file);
  ck_assert_msg(xml_well_formed(svg, &x), "probe plot not well-formed near: %.60s", x.p ? x.p : "");
  ck_assert_ptr_nonnull(strstr(svg, "id=\"panel-rma.lock.shm\""));
  ck_assert_ptr_nonnull(strstr(svg, ">time per epoch (us)</text>"));
  ck_assert_int_ge(x.count_circle, 4); /* the probed points */
  free(svg);
  for (int i = 0; i < 2; ++i)
    roof_analysis_free(&an[i]);
  roof_profile_free(&p);
}
END_TEST

START_TEST(reports_json_and_csv) {
  roof_profile p;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  add_cold(&p);
  roof_site sites[2] = {make_site("halo", "plan", 2, 8, roof_time(&p.paths[0].fit, 2, 8), 10),
                        make_site("dot", "reduce", 1, 16, 3e-6, 20)};
  roof_analysis an[2];
  /* 128 MiB per iteration, 64 MiB distinct: the halo (1 call per iteration) is 64 MiB apart: cold; the dot
   * (2 calls) too; a 32 MiB footprint would make both 3/4 cold */
  for (int i = 0; i < 2; ++i)
    ck_assert_int_eq(roof_analyze(&sites[i], &p, 10, 128 * MIB, 64 * MIB, &an[i]), 0);
  roof_run r = {.iterations = 10,
                .sites = sites,
                .nsites = 2,
                .an = an,
                .time_total = 1e-3,
                .time_comm = 1e-4,
                .bytes_per_iter = 128 * MIB,
                .footprint = 64 * MIB};
  strcpy(r.solver, "deriv1d, \"quoted\"");
  strcpy(r.path, "rma.lock.shm");
  const char *jf = scratch("report.json"), *cf = scratch("report.csv");
  ck_assert_int_eq(roof_report_json(jf, &r, 1, &p, err, sizeof err), 0);
  json_value *v = json_parse_file(jf, err, sizeof err);
  ck_assert_msg(v != NULL, "report JSON: %s", err);
  const json_value *run = &json_get(v, "runs")->items[0];
  ck_assert_str_eq(json_get(run, "best_path")->string, "rma.lock.shm");
  ck_assert_int_eq((int)json_get(run, "sites")->count, 2);
  ck_assert_str_eq(json_get(&json_get(run, "sites")->items[0], "class")->string, "latency-bound");
  ck_assert_str_eq(json_get(&json_get(run, "sites")->items[0], "regime")->string, "cold");
  ck_assert_double_eq(json_get(&json_get(run, "sites")->items[0], "reuse_bytes")->number, 64 * MIB);
  ck_assert_double_eq(json_get(&json_get(run, "sites")->items[0], "cold_fraction")->number, 1);
  ck_assert_double_eq(json_get(run, "bytes_per_iter")->number, 128 * MIB);
  ck_assert_double_eq(json_get(run, "footprint")->number, 64 * MIB);
  ck_assert_double_eq(json_get(run, "cold_sites")->number, 2);
  const json_value *on0 = &json_get(&json_get(run, "sites")->items[0], "on_paths")->items[0];
  ck_assert_double_eq_tol(json_get(on0, "predicted_time")->number - json_get(on0, "predicted_time_warm")->number, 2e-6,
                          1e-12);
  ck_assert_double_eq_tol(json_get(on0, "cold_penalty")->number, 2e-6, 1e-15);
  ck_assert(json_get(json_get(run, "predicted_comm_per_iter"), "rma.lock.shm")->number >
            json_get(json_get(run, "predicted_comm_per_iter_warm"), "rma.lock.shm")->number);
  const json_value *fr = json_get(json_get(json_get(v, "profile"), "cold"), "curve_fraction");
  ck_assert_int_eq((int)fr->count, 3);
  ck_assert_double_eq_tol(json_get(&fr->items[1], "fraction")->number, 0.5, 1e-12);
  ck_assert_ptr_nonnull(strstr(json_get(v, "note")->string, "begin"));
  json_free(v);
  ck_assert_int_eq(roof_report_csv(cf, &r, 1, &p, err, sizeof err), 0);
  char *csv = read_text(cf);
  int lines = 0;
  for (char *c = csv; *c; ++c)
    lines += *c == '\n';
  ck_assert_int_eq(lines, 1 + 2 * 2); /* header + sites x paths */
  ck_assert_ptr_nonnull(strstr(csv, "\"deriv1d, \"\"quoted\"\"\""));
  ck_assert_ptr_nonnull(strstr(csv, ",regime,reuse_bytes,cold_fraction,predicted_time_warm_s,cold_penalty_s\n"));
  ck_assert_ptr_nonnull(strstr(csv, ",cold,67108864,1.0000,"));
  free(csv);
  /* the terminal table says which regime each site was predicted in */
  const char *tf = scratch("report.txt");
  FILE *f = fopen(tf, "w");
  roof_report_table(f, &r, 1, &p);
  roof_report_profile_table(f, &p);
  fclose(f);
  char *txt = read_text(tf);
  ck_assert_ptr_nonnull(strstr(txt, "cold (64 MiB)"));
  ck_assert_ptr_nonnull(strstr(txt, "streams 128 MiB (64 MiB distinct) per rank and iteration; 2 of 2 sites pay"));
  ck_assert_ptr_nonnull(strstr(txt, "verdict: deriv1d"));
  ck_assert_ptr_nonnull(strstr(txt, "rma.lock.shm's 8 B epoch shows"));
  ck_assert_ptr_nonnull(strstr(txt, "after 4 MiB 1.50 (12%), 16 MiB 3.00 (50%), 64 MiB 5.00 (100%) us"));
  free(txt);
  /* a partly cold site says how much */
  roof_analysis_free(&an[0]);
  ck_assert_int_eq(roof_analyze(&sites[0], &p, 10, 128 * MIB, 32 * MIB, &an[0]), 0);
  f = fopen(tf, "w");
  roof_report_table(f, &r, 1, &p);
  fclose(f);
  txt = read_text(tf);
  ck_assert_ptr_nonnull(strstr(txt, "cold 75% (32 MiB)"));
  free(txt);
  for (int i = 0; i < 2; ++i)
    roof_analysis_free(&an[i]);
  roof_profile_free(&p);
}
END_TEST

/* ---- check: predictions against bench measurements ---------------------------------------------------- */

/* A report with two runs (on rma.lock.shm and twosided) predicting three paths; each run predicts twosided
 * differently, and the check must take the prediction of the run on that path. */
static void write_check_report(const char *file, double lock_us, double two_us_home, double two_us_other) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"runs\": [\n"
           " {\"solver\": \"cgls\", \"path\": \"rma.lock.shm\", \"measured_comm_per_iter\": 9.5e-6, "
           "\"predicted_comm_per_iter\": {\"rma.lock.shm\": %g, "
           "\"twosided\": %g, \"rma.fence.shm\": 9e-6}, \"predicted_comm_per_iter_warm\": {\"rma.lock.shm\": %g, "
           "\"twosided\": 1e-6, \"rma.fence.shm\": 4e-6}},\n"
           " {\"solver\": \"cgls\", \"path\": \"twosided\", \"predicted_comm_per_iter\": {\"rma.lock.shm\": 1, "
           "\"twosided\": %g, \"rma.fence.shm\": 1}}\n]}\n",
           lock_us * 1e-6, two_us_other * 1e-6, lock_us * 0.5e-6, two_us_home * 1e-6);
  write_text(file, text);
}

static void write_check_bench(const char *file, const char *memory, double lock_us, double two_us) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"problem\": \"deriv1d\", \"memory\": \"%s\", \"paths\": [\n"
           " {\"path\": \"rma.lock.shm\", \"synchronized_comm_per_iter_seconds\": %g},\n"
           " {\"path\": \"twosided\", \"synchronized_comm_per_iter_seconds\": %g},\n"
           " {\"path\": \"rma.pscw.shm\", \"synchronized_comm_per_iter_seconds\": 5e-6},\n"
           " {\"path\": \"rma.lock.mpi\"}\n]}\n",
           memory, lock_us * 1e-6, two_us * 1e-6);
  write_text(file, text);
}

/* What roof_check_print writes for @p c, read back (free it). */
static char *check_text(const roof_check *c, const char *name) {
  const char *tf = scratch(name);
  FILE *f = fopen(tf, "w");
  ck_assert_ptr_nonnull(f);
  roof_check_print(f, c);
  fclose(f);
  return read_text(tf);
}

/* Deterministic mutation of valid input files (a profile with every optional member, a trace file, a report and a
 * bench file for `check`): flipped bytes, cut spans, inserted JSON tokens and extreme numbers, truncation. Every
 * reader must either accept the file or refuse it with a message; never crash or read out of bounds (under
 * SANITIZE=1, setup.sh, AddressSanitizer and UBSan watch it). 1250 such files through the command line under both
 * sanitizers found nothing; this keeps it so. */
static unsigned mut_rand(unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  return (*state >> 8) & 0xffffff;
}

static size_t mutate_text(const char *in, size_t n, char *out, size_t cap, unsigned *state) {
  static const char *const tokens[] = {
      "{",      "}",      "[",  "]",    ",",    ":",   "\"",      "-1",
      "1e308",  "-1e308", "0",  "null", "true", "nan", "\\u0000", "99999999999999999999",
      "1e-320", "[]",     "{}", "\\"};
  const size_t ntok = sizeof tokens / sizeof tokens[0];
  size_t m = n < cap ? n : cap;
  memcpy(out, in, m);
  for (int k = 1 + (int)(mut_rand(state) % 3); k > 0; --k) {
    const size_t at = m ? mut_rand(state) % m : 0;
    switch (mut_rand(state) % 4) {
    case 0: /* flip a byte */
      if (m)
        out[at] = (char)(mut_rand(state) & 0xff);
      break;
    case 1: { /* cut up to 40 bytes */
      const size_t len = 1 + mut_rand(state) % 40, cut = at + len > m ? m - at : len;
      memmove(out + at, out + at + cut, m - at - cut);
      m -= cut;
      break;
    }
    case 2: { /* insert a token */
      const char *t = tokens[mut_rand(state) % ntok];
      const size_t len = strlen(t);
      if (m + len <= cap) {
        memmove(out + at + len, out + at, m - at);
        memcpy(out + at, t, len);
        m += len;
      }
      break;
    }
    default: /* truncate */
      m = at;
    }
  }
  return m;
}

START_TEST(mutated_files_refused_or_read) {
  roof_profile p;
  char err[ROOF_ERR_MAX];
  make_profile(&p);
  add_cold(&p);
  add_reduce_curve(&p);
  p.cache.share_cache_bytes = 32 * MIB, p.cache.share_bytes = 19 * MIB, p.cache.share_ratio = 1.07;
  const char *src[4] = {scratch("mut-profile.json"), scratch("mut-trace.json"), scratch("mut-report.json"),
                        scratch("mut-bench.json")};
  const char *bad = scratch("mut-input.json");
  ck_assert_int_eq(roof_profile_write(&p, src[0], err, sizeof err), 0);
  roof_profile_free(&p);
  write_text(src[1],
             "{\"rank\": 0, \"size\": 2, \"backend\": \"rma\", \"sites\": [\n"
             "  {\"label\": \"halo\", \"kind\": \"plan\", \"backend\": \"rma\", \"transport\": \"shm\", \"sync\": "
             "\"pscw\", \"calls\": 10, \"messages\": 2, \"bytes_per_message\": 8, \"time_total\": 3e-5, "
             "\"time_min\": 1e-6, \"time_max\": 1e-6, \"time_inside\": 2e-5, \"time_inside_median\": 1.5e-6, "
             "\"calls_add\": 10}\n]}\n");
  write_check_report(src[2], 10, 6, 3);
  write_check_bench(src[3], "host", 9, 4);
  roof_check *c = malloc(sizeof *c);
  ck_assert_ptr_nonnull(c);
  unsigned state = 32;
  int accepted[4] = {0}, refused[4] = {0};
  for (int which = 0; which < 4; ++which) {
    char *text = read_text(src[which]);
    const size_t n = strlen(text), cap = n + 256;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 150; ++i) {
      write_bytes(bad, buf, mutate_text(text, n, buf, cap, &state));
      err[0] = 0;
      int rc;
      if (which == 0) {
        roof_profile q;
        rc = roof_profile_read(bad, &q, err, sizeof err);
        if (rc == 0)
          roof_profile_free(&q);
      } else if (which == 1) {
        roof_site *sites = NULL;
        int ns = 0;
        rc = roof_trace_read(bad, &sites, &ns, err, sizeof err);
        free(sites);
      } else {
        const char *r = which == 2 ? bad : src[2], *b = which == 3 ? bad : src[3];
        rc = roof_check_files(&r, 1, &b, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err);
      }
      ck_assert_msg(rc == 0 || rc == -1, "file %d, case %d: reader returned %d", which, i, rc);
      ck_assert_msg(rc == 0 || err[0] != 0, "file %d, case %d: refused without a message", which, i);
      ++(rc == 0 ? accepted : refused)[which];
    }
    free(buf);
    free(text);
  }
  free(c);
  for (int which = 0; which < 4; ++which) /* the mutations do reach the readers' error paths */
    ck_assert_msg(refused[which] > 75, "file %d: only %d of 150 refused", which, refused[which]);
}
END_TEST

START_TEST(check_predictions_against_bench) {
  const char *r1 = scratch("check-r1.json"), *r2 = scratch("check-r2.json"), *r3 = scratch("check-r3.json");
  const char *b1 = scratch("check-b1.json"), *b2 = scratch("check-b2.json"), *b3 = scratch("check-b3.json");
  char err[ROOF_ERR_MAX];
  roof_check *c = malloc(sizeof *c);
  ck_assert_ptr_nonnull(c);
  /* one round: lock 10 predicted against 9 measured (+11 %: within), twosided 6 (its own run's, not the
   * 3 of the lock run) against 4 (+50 %: outside); rma.pscw.shm has no prediction; rma.lock.mpi no measurement */
  write_check_report(r1, 10, 6, 3);
  write_check_bench(b1, "host", 9, 4);
  const char *reports[3] = {r1, r2, r3}, *benches[3] = {b1, b2, b3};
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->nrows, 3);
  ck_assert_str_eq(c->rows[0].path, "rma.lock.shm");
  ck_assert_double_eq_tol(c->rows[0].predicted, 10e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].predicted_warm, 5e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].error, 10.0 / 9 - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].within, 1);
  ck_assert_str_eq(c->rows[1].path, "twosided");
  ck_assert_double_eq_tol(c->rows[1].predicted, 6e-6, 1e-15);
  ck_assert_int_eq(c->rows[1].within, 0);
  ck_assert_int_eq(c->rows[2].compared, 0);
  ck_assert_int_eq(c->ncompared, 2);
  ck_assert_int_eq(c->nwithin, 1);
  /* the run's own measurement of its path (lock's run measured 9.5 us: +6 % against the bench's 9); the
   * twosided run recorded none, and the lock run's is not twosided's */
  ck_assert_double_eq_tol(c->rows[0].run, 9.5e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].run_gap, 9.5 / 9 - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].run_within, 1);
  ck_assert_int_eq(c->rows[1].run_compared, 0);
  ck_assert_int_eq(c->run_compared, 1);
  /* three rounds pool by the median: lock predictions 10, 20, 12 -> 12; measurements 9, 30, 11 -> 11 */
  write_check_report(r2, 20, 6, 3);
  write_check_bench(b2, "host", 30, 5);
  write_check_report(r3, 12, 5, 3);
  write_check_bench(b3, "host", 11, 5);
  ck_assert_int_eq(roof_check_files(reports, 3, benches, 3, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_double_eq_tol(c->rows[0].predicted, 12e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].measured, 11e-6, 1e-15);
  ck_assert_int_eq(c->rows[0].within, 1);
  ck_assert_double_eq_tol(c->rows[1].predicted, 6e-6, 1e-15); /* 6, 6, 5 against 4, 5, 5: +20 % */
  ck_assert_int_eq(c->rows[1].within, 1);
  ck_assert_int_eq(c->round_within[0], 1); /* round 1: lock within, twosided +50 % */
  ck_assert_int_eq(c->round_within[1], 1); /* round 2: lock -33 %, twosided +20 % */
  ck_assert_int_eq(c->round_compared[2], 2);
  char *txt = check_text(c, "check.txt");
  ck_assert_ptr_nonnull(strstr(txt, "check: 2 of 2 paths within 25 %"));
  ck_assert_ptr_nonnull(strstr(txt, "rounds (each report against its own bench): 1/2 1/2 2/2"));
  ck_assert_ptr_nonnull(strstr(txt, "no prediction"));
  ck_assert_ptr_nonnull(strstr(txt, "the run's own measurement against the bench: 1 of 1 paths within 25 %\n"));
  free(txt);
  /* device benches name paths without the memory suffix that profiles carry */
  write_text(r1, "{\"runs\": [{\"path\": \"rma.lock.ipc.device\", \"predicted_comm_per_iter\": "
                 "{\"rma.lock.ipc.device\": 2e-5}}]}");
  write_text(b1, "{\"memory\": \"device\", \"paths\": [{\"path\": \"rma.lock.ipc\", "
                 "\"synchronized_comm_per_iter_seconds\": 2e-5}]}");
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_str_eq(c->rows[0].path, "rma.lock.ipc.device");
  ck_assert_int_eq(c->nwithin, 1);
  /* bad input names the file and the problem */
  write_text(b1, "{\"paths\": [{\"path\": \"twosided\", \"iterations\": 20}]}");
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "--trace-sync"));
  ck_assert_ptr_nonnull(strstr(err, b1));
  write_text(b1, "{\"runs\": []}");
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not an rmaop-bench --json file"));
  write_check_bench(b1, "host", 9, 4);
  write_text(r1, "{\"paths\": []}");
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not a report of rmaop-roofline run"));
  write_text(r1, "{\"runs\": [");
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "is not valid JSON"));
  ck_assert_int_eq(roof_check_files(reports, 0, benches, 1, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0, ROOF_CENTER_MEDIAN, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "tolerance"));
  free(c);
}
END_TEST

/* 41 rounds (more than the 32 bits of a file mask) pool by the median over all of them, and a second set of
 * bench files (--again) is compared with the first: the measurement against itself. */
START_TEST(check_many_rounds_and_again) {
  enum { R = 41 };
  static char names[3][R][1024];
  const char *reports[R + 1], *benches[R + 1], *again[3];
  for (int k = 0; k < R; ++k) {
    snprintf(names[0][k], sizeof names[0][k], "%s/test_roofline_check-many-r%d.json", dir, k);
    snprintf(names[1][k], sizeof names[1][k], "%s/test_roofline_check-many-b%d.json", dir, k);
    reports[k] = names[0][k];
    benches[k] = names[1][k];
    /* rounds 0..19 measure lock at 9 us, rounds 20..40 at 30: the median of the 41 is 30 (21 of them) */
    write_check_report(reports[k], 28, 6, 3);
    write_check_bench(benches[k], "host", k < 20 ? 9 : 30, 5);
  }
  char err[ROOF_ERR_MAX];
  roof_check *c = malloc(sizeof *c);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_double_eq_tol(c->rows[0].measured, 30e-6, 1e-15);
  ck_assert_int_eq(c->rows[0].within, 1);   /* 28 against 30 */
  ck_assert_int_eq(c->round_within[40], 2); /* lock 28 against 30, twosided 6 against 5 */
  ck_assert_int_eq(c->round_within[0], 1);  /* lock 28 against 9: outside */
  benches[R] = benches[0];
  ck_assert_int_eq(roof_check_files(reports, R, benches, R + ROOF_CHECK_MAX_FILES - R + 1, 0.25, ROOF_CENTER_MEDIAN, c,
                                    err, sizeof err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "give 1..64"));
  /* measured again: lock 24, 40, 38 -> 38 (+27 %: outside), twosided 5.5, 6, 4 -> 5.5 (+10 %: within); a path
   * only in the second set (rma.lock.mpi has no time in the first) is not compared */
  const double lock[3] = {24, 40, 38}, two[3] = {5.5, 6, 4};
  for (int k = 0; k < 3; ++k) {
    snprintf(names[2][k], sizeof names[2][k], "%s/test_roofline_check-again%d.json", dir, k);
    write_check_bench(names[2][k], "host", lock[k], two[k]);
    again[k] = names[2][k];
  }
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(roof_check_again(c, again, 3, err, sizeof err), 0);
  ck_assert_int_eq(c->nagain, 3);
  ck_assert_double_eq_tol(c->rows[0].again, 38e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].gap, 38.0 / 30 - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].again_within, 0);
  ck_assert_double_eq_tol(c->rows[1].again, 5.5e-6, 1e-15);
  ck_assert_int_eq(c->rows[1].again_within, 1);
  ck_assert_int_eq(c->again_compared, 3); /* lock, twosided and rma.pscw.shm (5 against 5) */
  ck_assert_int_eq(c->again_within, 2);
  char *txt = check_text(c, "check-again.txt");
  ck_assert_ptr_nonnull(strstr(txt, "measurement against itself: 2 of 3 paths within 25 %"));
  ck_assert_ptr_nonnull(strstr(txt, "     38.00     +27%"));
  /* the lock run's own 9.5 us against the bench's 30: the measurement itself misses by more than the model */
  ck_assert_ptr_nonnull(strstr(txt, "       9.50     -68%"));
  ck_assert_ptr_nonnull(
      strstr(txt, "the run's own measurement against the bench: 0 of 1 paths within 25 % (where the same"));
  free(txt);
  /* bad input: an --again file that is not a bench file, and an empty list */
  write_text(names[2][1], "{\"runs\": []}");
  ck_assert_int_eq(roof_check_again(c, again, 3, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, names[2][1]));
  ck_assert_int_eq(roof_check_again(c, again, 0, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "--again"));
  free(c);
}
END_TEST

/* The error's bootstrap interval over the rounds: a point where every round agrees, wholly outside where every
 * round misses, across the bound where the rounds scatter; the same files give the same interval; too few rounds
 * give none. */
START_TEST(check_interval_over_rounds) {
  enum { R = 12 };
  static char names[2][R][1024];
  const char *reports[R], *benches[R];
  for (int k = 0; k < R; ++k) {
    snprintf(names[0][k], sizeof names[0][k], "%s/test_roofline_check-ci-r%d.json", dir, k);
    snprintf(names[1][k], sizeof names[1][k], "%s/test_roofline_check-ci-b%d.json", dir, k);
    reports[k] = names[0][k];
    benches[k] = names[1][k];
    write_check_report(reports[k], 10, 20, 3); /* lock 10 us, twosided 20 us predicted in every round */
    write_check_bench(benches[k], "host", 9, 5);
  }
  char err[ROOF_ERR_MAX];
  roof_check *c = malloc(sizeof *c);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->rows[0].has_interval, 1); /* every round 10 against 9: the interval is the point */
  ck_assert_double_eq_tol(c->rows[0].lo, 10.0 / 9 - 1, 1e-12);
  ck_assert_double_eq_tol(c->rows[0].hi, 10.0 / 9 - 1, 1e-12);
  ck_assert_double_eq_tol(c->rows[1].lo, 3.0, 1e-12); /* twosided 20 against 5 */
  ck_assert_int_eq(c->rows[2].has_interval, 0);       /* rma.pscw.shm: no prediction */
  ck_assert_int_eq(c->ninterval, 2);
  ck_assert_int_eq(c->interval_inside, 1);
  ck_assert_int_eq(c->interval_outside, 1);
  /* lock measured 7 and 11 in turns: pooled 9 (+11 %, within), but resampled rounds pool anywhere from 7 (+43 %)
   * to 11 (-9 %): the interval crosses the bound */
  for (int k = 0; k < R; ++k)
    write_check_bench(benches[k], "host", k % 2 ? 11 : 7, 5);
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->rows[0].within, 1);
  ck_assert_double_eq_tol(c->rows[0].error, 10.0 / 9 - 1, 1e-12);
  ck_assert(c->rows[0].lo < 0 && c->rows[0].lo >= 10.0 / 11 - 1 - 1e-12);
  ck_assert(c->rows[0].hi > 0.25 && c->rows[0].hi <= 10.0 / 7 - 1 + 1e-12);
  ck_assert_int_eq(c->interval_inside, 0);
  ck_assert_int_eq(c->interval_outside, 1);
  const double lo = c->rows[0].lo, hi = c->rows[0].hi;
  char *txt = check_text(c, "check-ci.txt");
  char want[64];
  snprintf(want, sizeof want, "[%+.0f%%, %+.0f%%]", 100 * lo, 100 * hi);
  ck_assert_ptr_nonnull(strstr(txt, want));
  ck_assert_ptr_nonnull(strstr(txt, "0 of 2 paths wholly within 25 %, 1 wholly outside, 1 across the bound"));
  free(txt);
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err),
                   0); /* same files */
  ck_assert_double_eq(c->rows[0].lo, lo);
  ck_assert_double_eq(c->rows[0].hi, hi);
  /* not paired (6 reports, 12 bench files): each side resampled on its own */
  ck_assert_int_eq(roof_check_files(reports, 6, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->rows[0].has_interval, 1);
  ck_assert(c->rows[0].lo < 0.25 && c->rows[0].hi > 0.25);
  /* four rounds: too few for an interval, and the table says nothing of one */
  ck_assert_int_eq(roof_check_files(reports, 4, benches, 4, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->ninterval, 0);
  ck_assert_int_eq(c->rows[0].has_interval, 0);
  txt = check_text(c, "check-ci4.txt");
  ck_assert_ptr_null(strstr(txt, "interval"));
  free(txt);
  free(c);
}
END_TEST

/* --center: a two-state machine. Six rounds whose lock predictions read 10 or 14 us and whose measurements read
 * 10 or 14 us, the slow state drawn by 4 of 6 probes and 2 of 6 benches: the medians fall on opposite states
 * (14 against 10: +40 %, outside) while the means, 12.67 against 11.33 (+12 %), weigh the states by their
 * shares. Either center prints the other's count. */
START_TEST(check_center_mean) {
  enum { R = 6 };
  const double pred[R] = {10, 14, 14, 14, 14, 10}, meas[R] = {10, 10, 14, 10, 14, 10},
               again[R] = {14, 14, 14, 10, 10, 14};
  static char names[3][R][1024];
  const char *reports[R], *benches[R], *agains[R];
  for (int k = 0; k < R; ++k) {
    snprintf(names[0][k], sizeof names[0][k], "%s/test_roofline_center-r%d.json", dir, k);
    snprintf(names[1][k], sizeof names[1][k], "%s/test_roofline_center-b%d.json", dir, k);
    snprintf(names[2][k], sizeof names[2][k], "%s/test_roofline_center-a%d.json", dir, k);
    reports[k] = names[0][k], benches[k] = names[1][k], agains[k] = names[2][k];
    write_check_report(reports[k], pred[k], 5, 3); /* twosided 5 against 5 in every round */
    write_check_bench(benches[k], "host", meas[k], 5);
    write_check_bench(agains[k], "host", again[k], 5);
  }
  char err[ROOF_ERR_MAX];
  roof_check *c = malloc(sizeof *c);
  ck_assert_ptr_nonnull(c);
  const double mean_p = 76.0 / 6, mean_m = 68.0 / 6, mean_a = 76.0 / 6;
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEDIAN, c, err, sizeof err), 0);
  ck_assert_double_eq_tol(c->rows[0].predicted, 14e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].measured, 10e-6, 1e-15);
  ck_assert_int_eq(c->rows[0].within, 0);
  ck_assert_double_eq_tol(c->rows[0].error_other, mean_p / mean_m - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].within_other, 1);
  ck_assert_int_eq(c->nwithin, 1);
  ck_assert_int_eq(c->nwithin_other, 2);
  char *txt = check_text(c, "check-center-median.txt");
  ck_assert_ptr_nonnull(strstr(txt, "; medians over 6 report(s) and 6 bench file(s)"));
  ck_assert_ptr_nonnull(
      strstr(txt, "by the means over the files instead (--center mean): +12% +0%; 2 of 2 paths within 25 %\n"));
  ck_assert_ptr_nonnull(strstr(txt, "check: 1 of 2 paths within 25 % (medians over the files)\n"));
  free(txt);
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, ROOF_CENTER_MEAN, c, err, sizeof err), 0);
  ck_assert_int_eq(c->center, ROOF_CENTER_MEAN);
  ck_assert_double_eq_tol(c->rows[0].predicted, mean_p * 1e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].measured, mean_m * 1e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].error, mean_p / mean_m - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].within, 1);
  ck_assert_double_eq_tol(c->rows[0].error_other, 14.0 / 10 - 1, 1e-12);
  ck_assert_int_eq(c->rows[0].within_other, 0);
  ck_assert_int_eq(c->nwithin, 2);
  ck_assert_int_eq(c->nwithin_other, 1);
  /* the interval resamples means too: it holds the point, and rounds of 10 and 14 on both sides bound it */
  ck_assert_int_eq(c->rows[0].has_interval, 1);
  ck_assert(c->rows[0].lo <= c->rows[0].error && c->rows[0].error <= c->rows[0].hi);
  ck_assert(c->rows[0].lo >= 10.0 / 14 - 1 - 1e-12 && c->rows[0].hi <= 14.0 / 10 - 1 + 1e-12);
  /* --again pools by the same center: mean 12.67 against 11.33 */
  ck_assert_int_eq(roof_check_again(c, agains, R, err, sizeof err), 0);
  ck_assert_double_eq_tol(c->rows[0].again, mean_a * 1e-6, 1e-15);
  ck_assert_double_eq_tol(c->rows[0].gap, mean_a / mean_m - 1, 1e-12);
  txt = check_text(c, "check-center-mean.txt");
  ck_assert_ptr_nonnull(strstr(txt, "; means over 6 report(s) and 6 bench file(s)"));
  ck_assert_ptr_nonnull(strstr(txt, "measured again: means over 6 more bench file(s)"));
  ck_assert_ptr_nonnull(
      strstr(txt, "by the medians over the files instead (--center median): +40% +0%; 1 of 2 paths within 25 %\n"));
  ck_assert_ptr_nonnull(strstr(txt, "check: 2 of 2 paths within 25 % (means over the files)\n"));
  free(txt);
  /* one file: both centers are the file's value, and the table names neither */
  ck_assert_int_eq(roof_check_files(reports, 1, benches, 1, 0.25, ROOF_CENTER_MEAN, c, err, sizeof err), 0);
  ck_assert_double_eq_tol(c->rows[0].error, 0.0, 1e-12);
  txt = check_text(c, "check-center-one.txt");
  ck_assert_ptr_null(strstr(txt, "over the files"));
  ck_assert_ptr_nonnull(strstr(txt, "check: 2 of 2 paths within 25 %\n"));
  free(txt);
  /* a center that is neither: refused, named */
  ck_assert_int_eq(roof_check_files(reports, R, benches, R, 0.25, (roof_center)7, c, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "center 7"));
  roof_center z = ROOF_CENTER_MEDIAN;
  ck_assert_int_eq(roof_center_parse("mean", &z), 0);
  ck_assert_int_eq(z, ROOF_CENTER_MEAN);
  ck_assert_int_eq(roof_center_parse("median", &z), 0);
  ck_assert_int_eq(z, ROOF_CENTER_MEDIAN);
  ck_assert_int_eq(roof_center_parse("Mean", &z), -1);
  ck_assert_int_eq(roof_center_parse("", &z), -1);
  ck_assert_int_eq(roof_center_parse(NULL, &z), -1);
  free(c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("roofline");
  TCase *fit = tcase_create("fit");
  tcase_add_test(fit, fit_recovers_one_piece);
  tcase_add_test(fit, fit_recovers_protocol_split);
  tcase_add_test(fit, fit_recovers_cache_split);
  tcase_add_test(fit, fit_flags_poor);
  tcase_add_test(fit, fit_rejects_bad_points);
  tcase_add_test(fit, nnls_keeps_coefficients_nonnegative);
  tcase_add_test(fit, fit_reduce_recovers);
  tcase_add_test(fit, model_derived_quantities);
  tcase_add_test(fit, rank_point_statistics);
  suite_add_tcase(s, fit);
  TCase *cls = tcase_create("classify");
  tcase_add_test(cls, classify_rules);
  tcase_add_test(cls, classify_synthetic_sites);
  tcase_add_test(cls, best_path_skips_poor_fits);
  tcase_add_test(cls, cold_fraction_from_curve);
  tcase_add_test(cls, cold_fraction_per_path_reduction_curve);
  tcase_add_test(cls, cold_fraction_same_bytes_curve);
  tcase_add_test(cls, cold_reduction_after_epoch);
  tcase_add_test(cls, cold_bytes_per_iteration);
  tcase_add_test(cls, cold_penalty_in_predictions);
  tcase_add_test(cls, shared_cache_in_verdict);
  tcase_add_test(cls, verdict_sentences);
  tcase_add_test(cls, accumulate_extra_in_predictions);
  tcase_add_test(cls, reduction_points_interpolated);
  tcase_add_test(cls, device_reduction_after_dot);
  tcase_add_test(cls, synced_offset);
  tcase_add_test(cls, overlap_in_predictions);
  suite_add_tcase(s, cls);
  TCase *files = tcase_create("files");
  tcase_add_test(files, profile_round_trip);
  tcase_add_test(files, profile_round_trip_cold);
  tcase_add_test(files, profile_round_trip_device_points);
  tcase_add_test(files, profile_rejects_bad_files);
  tcase_add_test(files, json_parser);
  tcase_add_test(files, trace_files_merge_ranks);
  tcase_add_test(files, path_names);
  tcase_add_test(files, xml_checker_itself);
  tcase_add_test(files, svg_plots_are_well_formed);
  tcase_add_test(files, reports_json_and_csv);
  tcase_add_test(files, check_predictions_against_bench);
  tcase_add_test(files, check_many_rounds_and_again);
  tcase_add_test(files, check_interval_over_rounds);
  tcase_add_test(files, check_center_mean);
  tcase_add_test(files, mutated_files_refused_or_read);
  suite_add_tcase(s, files);
  return s;
}

int main(int argc, char **argv) {
  if (argc > 1)
    dir = argv[1];
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
