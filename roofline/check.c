/* rmaop-roofline check: the model's predictions against rmaop-bench's measurements (the 25 % prediction check).
 *
 * A report (rmaop-roofline run --out PREFIX: PREFIX.json) predicts, for every profiled path, the messaging
 * time per iteration of the solver it ran ("predicted_comm_per_iter": the sites' warm model plus their share
 * of the path's cold penalty). rmaop-bench --trace-sync --json measures the same quantity on each path it
 * ran ("synchronized_comm_per_iter_seconds": per site the median call inside rmaop's calls times the calls,
 * summed, from solves traced with synchronized starts). Per path, the check compares the two.
 *
 * Which prediction: the one made from the run on that very path (its sites' shapes are that path's: the
 * twosided trace coalesces messages per peer), else from the first run that predicts the path at all.
 * Several reports and several bench files (rounds of probe + run + bench, interleaved in time) are pooled
 * per path by the median over the files, predictions and measurements separately: on a shared machine the
 * medians of a minute move by up to 2x between busy and quiet phases, and pooling rounds that alternate probe
 * and bench lets both sides see the same mix of phases. Every round's own comparison is printed too when there
 * are as many reports as bench files.
 *
 * The measurement against itself (--again): a second set of bench files measured in the same rounds, pooled
 * alike, compared with the first at the same tolerance. On the 2-vCPU VM, rmaop-bench on CGLS bdiag (n = 1024)
 * agreed with itself, pooled over 12 rounds seconds apart, on 5 of 7 paths within 25 %: where the measurement
 * does not reproduce within the tolerance, no model can be checked to it there, and the check says so instead of
 * leaving a model miss and machine noise looking alike.
 *
 * How firm the pooled error is: with 5 or more rounds, the error's 90 % bootstrap interval over the
 * rounds (see "the error's uncertainty" below); the verdict stays the pooled point.
 *
 * Median or mean over the rounds (--center). Each round's values rest on medians inside a launch (rmaop-bench's
 * over its repeats, the model on the probe's medians), robust to a stray repeat. Across rounds the median is the
 * default: a shared VM's outlier rounds pull a mean. But the lent GPU machines run the CUDA-aware paths in two
 * states 1.3-1.9x apart that last seconds, and each
 * launch, probe or bench, reads one or the other: the rounds' values are two-valued, and where the two states
 * come about equally often their median falls on one or the other by a single round, for the model and the bench
 * independently. The mean over rounds moves smoothly with the states' shares and estimates what a long solve
 * pays per iteration (its time is the sum over iterations, phases and all). The check prints the other
 * center's count as well, so neither is hidden. */
#include "roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bench path names carry no memory suffix ("rma.lock.ipc" with "memory": "device"); profile paths do. */
static void bench_path_name(const char *name, const char *memory, char *out, size_t len) {
  const int dev = memory && strcmp(memory, "device") == 0 && !strstr(name, ".device");
  snprintf(out, len, "%s%s", name, dev ? ".device" : "");
}

/* The row of `path`; a new one when `create` (NULL when full), else NULL when there is none. */
static roof_check_row *row_for(roof_check *c, const char *path, int create) {
  for (int i = 0; i < c->nrows; ++i)
    if (strcmp(c->rows[i].path, path) == 0)
      return &c->rows[i];
  if (!create || c->nrows == ROOF_CHECK_MAX_PATHS)
    return NULL;
  roof_check_row *r = &c->rows[c->nrows++];
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path);
  return r;
}

static int number(const json_value *v, double *out) {
  if (!v || v->type != JSON_NUMBER || !isfinite(v->number) || v->number < 0)
    return 0;
  *out = v->number;
  return 1;
}

/* One bench file: each path's synchronized messaging per iteration into its row's k-th slot (of the --again
 * set when `again`: then only into rows the first set made). */
static int read_bench(roof_check *c, const char *file, int k, int again, char *err, size_t errlen) {
  json_value *root = json_parse_file(file, err, errlen);
  if (!root)
    return -1;
  int rc = -1;
  const json_value *paths = json_get(root, "paths"), *mem = json_get(root, "memory");
  if (!paths || paths->type != JSON_ARRAY) {
    roof_set_err(err, errlen, "%s: no \"paths\" array: not an rmaop-bench --json file", file);
    goto out;
  }
  int found = 0;
  for (size_t i = 0; i < paths->count; ++i) {
    const json_value *p = &paths->items[i], *name = json_get(p, "path");
    double t;
    if (!name || name->type != JSON_STRING)
      continue;
    if (!number(json_get(p, "synchronized_comm_per_iter_seconds"), &t))
      continue;
    char full[ROOF_NAME_MAX];
    bench_path_name(name->string, mem && mem->type == JSON_STRING ? mem->string : NULL, full, sizeof full);
    roof_check_row *r = row_for(c, full, !again);
    if (!r && !again) {
      roof_set_err(err, errlen, "%s: more than %d paths", file, ROOF_CHECK_MAX_PATHS);
      goto out;
    }
    if (r && again) {
      r->again_k[k] = t;
      r->has_again |= UINT64_C(1) << k;
    } else if (r) {
      r->measured_k[k] = t;
      r->has_measured |= UINT64_C(1) << k;
    }
    ++found;
  }
  if (!found) {
    roof_set_err(err, errlen,
                 "%s: no path has \"synchronized_comm_per_iter_seconds\": run rmaop-bench with --trace-sync", file);
    goto out;
  }
  rc = 0;
out:
  json_free(root);
  return rc;
}

/* The run's predictions for `path`: { "path": seconds, ... } of predicted_comm_per_iter(_warm). */
static int run_prediction(const json_value *run, const char *key, const char *path, double *out) {
  return number(json_get(json_get(run, key), path), out);
}

/* One report: every row's prediction into its k-th slot. */
static int read_report(roof_check *c, const char *file, int k, char *err, size_t errlen) {
  json_value *root = json_parse_file(file, err, errlen);
  if (!root)
    return -1;
  int rc = -1;
  const json_value *runs = json_get(root, "runs");
  if (!runs || runs->type != JSON_ARRAY || runs->count == 0) {
    roof_set_err(err, errlen, "%s: no \"runs\": not a report of rmaop-roofline run", file);
    goto out;
  }
  for (int i = 0; i < c->nrows; ++i) {
    roof_check_row *r = &c->rows[i];
    const json_value *use = NULL;
    for (size_t j = 0; j < runs->count && !use; ++j) { /* the run on this path first */
      const json_value *p = json_get(&runs->items[j], "path");
      if (p && p->type == JSON_STRING && strcmp(p->string, r->path) == 0)
        use = &runs->items[j];
    }
    double t, w;
    if (use && number(json_get(use, "measured_comm_per_iter"), &t)) { /* the run's own measurement of the path */
      r->run_k[k] = t;
      r->has_run |= UINT64_C(1) << k;
    }
    for (size_t j = 0; j < runs->count && !use; ++j)
      if (run_prediction(&runs->items[j], "predicted_comm_per_iter", r->path, &t))
        use = &runs->items[j];
    if (!use || !run_prediction(use, "predicted_comm_per_iter", r->path, &t))
      continue; /* this profile has no such path: the row says so */
    r->predicted_k[k] = t;
    r->predicted_warm_k[k] = run_prediction(use, "predicted_comm_per_iter_warm", r->path, &w) ? w : t;
    r->has_predicted |= UINT64_C(1) << k;
  }
  rc = 0;
out:
  json_free(root);
  return rc;
}

/* The gap t / ref - 1 where `compared` (else 0), and whether it is within the tolerance: the model's error, the
 * other center's, the run's and the again measurement's gap are all this. */
static int gap_within(int compared, double t, double ref, double tol, double *gap) {
  *gap = compared ? t / ref - 1.0 : 0.0;
  return compared && fabs(*gap) <= tol;
}

/* Round k's own error (report k against bench k), when both have the path. */
static int round_error(const roof_check_row *r, int k, double *e) {
  const uint64_t bit = UINT64_C(1) << k;
  if (!(r->has_predicted & bit) || !(r->has_measured & bit) || !(r->measured_k[k] > 0))
    return 0;
  *e = r->predicted_k[k] / r->measured_k[k] - 1.0;
  return 1;
}

int roof_center_parse(const char *name, roof_center *out) {
  if (name && !strcmp(name, "median"))
    *out = ROOF_CENTER_MEDIAN;
  else if (name && !strcmp(name, "mean"))
    *out = ROOF_CENTER_MEAN;
  else
    return -1;
  return 0;
}

/* The median or the mean of n values (0 for none). */
static double center_of(const double *v, int n, roof_center center) {
  if (n <= 0)
    return 0.0;
  if (center == ROOF_CENTER_MEDIAN)
    return roof_median(v, n);
  double sum = 0;
  for (int k = 0; k < n; ++k)
    sum += v[k];
  return sum / n;
}

/* The center of the slots whose bit is set in `mask`. */
static double masked_center(const double *v, uint64_t mask, int n, roof_center center, int *count) {
  double tmp[ROOF_CHECK_MAX_FILES];
  int m = 0;
  for (int k = 0; k < n; ++k)
    if (mask & (UINT64_C(1) << k))
      tmp[m++] = v[k];
  *count = m;
  return center_of(tmp, m, center);
}

/* ---- the error's uncertainty ------------------------------------------------------------------------------ */

/* The pooled error is a ratio of two centers (medians or means) over rounds whose values scatter by 2x on a
 * shared machine (per round -60 ... +150 % on the 2-vCPU VM), so the figure itself is uncertain: how much, the
 * bootstrap says.
 * Resample the rounds with replacement ROOF_CHECK_BOOT times, pool each resample as the check does, and take the
 * 5th and 95th percentiles of its error. Paired (as many reports as bench files): report k and bench k are one
 * round, resampled together, which keeps whatever the two shared in their minutes; otherwise each side on its
 * own. Fewer than ROOF_CHECK_BOOT_MIN values on either side: no interval. The generator has a fixed seed, so
 * the same files print the same interval. */
#define ROOF_CHECK_BOOT 2000
#define ROOF_CHECK_BOOT_MIN 5
#define ROOF_CHECK_LEVEL 0.90

static int pick(uint64_t *s, int n) { /* xorshift64*; n <= 64, so the modulo's bias is below 1e-17 */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (int)(((*s * UINT64_C(2685821657736338717)) >> 32) % (uint64_t)n);
}

static void interval(const roof_check *c, roof_check_row *r) {
  const int paired = c->nreports == c->nbenches, n = paired ? c->nreports : 0;
  int kp[ROOF_CHECK_MAX_FILES], km[ROOF_CHECK_MAX_FILES], np = 0, nm = 0;
  for (int k = 0; k < c->nreports; ++k)
    if (r->has_predicted & (UINT64_C(1) << k))
      kp[np++] = k;
  for (int k = 0; k < c->nbenches; ++k)
    if (r->has_measured & (UINT64_C(1) << k))
      km[nm++] = k;
  r->has_interval = 0;
  if (!r->compared || np < ROOF_CHECK_BOOT_MIN || nm < ROOF_CHECK_BOOT_MIN)
    return;
  double e[ROOF_CHECK_BOOT];
  double p[ROOF_CHECK_MAX_FILES], m[ROOF_CHECK_MAX_FILES];
  uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
  int ne = 0;
  for (int b = 0; b < ROOF_CHECK_BOOT; ++b) {
    int a = 0, z = 0;
    if (paired)
      for (int i = 0; i < n; ++i) {
        const int k = pick(&seed, n);
        if (r->has_predicted & (UINT64_C(1) << k))
          p[a++] = r->predicted_k[k];
        if (r->has_measured & (UINT64_C(1) << k))
          m[z++] = r->measured_k[k];
      }
    else {
      for (; a < np; ++a)
        p[a] = r->predicted_k[kp[pick(&seed, np)]];
      for (; z < nm; ++z)
        m[z] = r->measured_k[km[pick(&seed, nm)]];
    }
    const double mm = center_of(m, z, c->center);
    if (a > 0 && mm > 0) /* a paired resample may draw no round with one side: not a resample of the check */
      e[ne++] = center_of(p, a, c->center) / mm - 1.0;
  }
  if (ne < ROOF_CHECK_BOOT / 2)
    return;
  qsort(e, (size_t)ne, sizeof *e, roof_cmp_double);
  const int tail = (int)(0.5 * (1 - ROOF_CHECK_LEVEL) * (ne - 1));
  r->lo = e[tail];
  r->hi = e[ne - 1 - tail];
  r->has_interval = 1;
}

int roof_check_files(const char *const *reports, int nreports, const char *const *benches, int nbenches, double tol,
                     roof_center center, roof_check *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  c->tolerance = tol;
  if (center != ROOF_CENTER_MEDIAN && center != ROOF_CENTER_MEAN) {
    roof_set_err(err, errlen, "center %d: expected the median or the mean over the rounds", (int)center);
    return -1;
  }
  c->center = center;
  if (nreports < 1 || nbenches < 1 || nreports > ROOF_CHECK_MAX_FILES || nbenches > ROOF_CHECK_MAX_FILES) {
    roof_set_err(err, errlen, "give 1..%d reports and 1..%d bench files (got %d and %d)", ROOF_CHECK_MAX_FILES,
                 ROOF_CHECK_MAX_FILES, nreports, nbenches);
    return -1;
  }
  if (!(tol > 0) || tol >= 10) {
    roof_set_err(err, errlen, "tolerance %g: expected a fraction in (0, 10), e.g. 0.25", tol);
    return -1;
  }
  c->nreports = nreports;
  c->nbenches = nbenches;
  for (int k = 0; k < nbenches; ++k)
    if (read_bench(c, benches[k], k, 0, err, errlen))
      return -1;
  for (int k = 0; k < nreports; ++k)
    if (read_report(c, reports[k], k, err, errlen))
      return -1;
  for (int i = 0; i < c->nrows; ++i) {
    roof_check_row *r = &c->rows[i];
    int np, nm;
    r->predicted = masked_center(r->predicted_k, r->has_predicted, nreports, center, &np);
    r->predicted_warm = masked_center(r->predicted_warm_k, r->has_predicted, nreports, center, &np);
    r->measured = masked_center(r->measured_k, r->has_measured, nbenches, center, &nm);
    r->compared = np > 0 && nm > 0 && r->measured > 0;
    r->within = gap_within(r->compared, r->predicted, r->measured, tol, &r->error);
    c->ncompared += r->compared;
    c->nwithin += r->within;
    const roof_center other = center == ROOF_CENTER_MEDIAN ? ROOF_CENTER_MEAN : ROOF_CENTER_MEDIAN;
    const double po = masked_center(r->predicted_k, r->has_predicted, nreports, other, &np);
    const double mo = masked_center(r->measured_k, r->has_measured, nbenches, other, &nm);
    r->within_other = gap_within(r->compared && mo > 0, po, mo, tol, &r->error_other);
    c->nwithin_other += r->within_other;
    r->run = masked_center(r->run_k, r->has_run, nreports, center, &np);
    r->run_compared = np > 0 && r->measured > 0;
    r->run_within = gap_within(r->run_compared, r->run, r->measured, tol, &r->run_gap);
    c->run_compared += r->run_compared;
    c->run_within += r->run_within;
    interval(c, r);
    c->ninterval += r->has_interval;
    c->interval_inside += r->has_interval && r->lo >= -tol && r->hi <= tol;
    c->interval_outside += r->has_interval && (r->lo > tol || r->hi < -tol);
    double e;
    for (int k = 0; k < nreports && nreports == nbenches; ++k)
      if (round_error(r, k, &e)) {
        c->round_compared[k]++;
        c->round_within[k] += fabs(e) <= tol;
      }
  }
  return 0;
}

int roof_check_again(roof_check *c, const char *const *benches, int nbenches, char *err, size_t errlen) {
  if (nbenches < 1 || nbenches > ROOF_CHECK_MAX_FILES) {
    roof_set_err(err, errlen, "give 1..%d --again bench files (got %d)", ROOF_CHECK_MAX_FILES, nbenches);
    return -1;
  }
  c->nagain = nbenches;
  c->again_compared = c->again_within = 0;
  for (int i = 0; i < c->nrows; ++i)
    c->rows[i].has_again = 0;
  for (int k = 0; k < nbenches; ++k)
    if (read_bench(c, benches[k], k, 1, err, errlen))
      return -1;
  for (int i = 0; i < c->nrows; ++i) {
    roof_check_row *r = &c->rows[i];
    int n;
    r->again = masked_center(r->again_k, r->has_again, nbenches, c->center, &n);
    r->again_compared = n > 0 && r->measured > 0;
    r->again_within = gap_within(r->again_compared, r->again, r->measured, c->tolerance, &r->gap);
    c->again_compared += r->again_compared;
    c->again_within += r->again_within;
  }
  return 0;
}

/* A measurement column and its gap to the bench's (again, run), or dashes. */
static void print_gap(FILE *f, int shown, int compared, double t, double gap) {
  if (!shown)
    return;
  if (compared)
    fprintf(f, "  %10.2f %+7.0f%%", t * 1e6, 100 * gap);
  else
    fprintf(f, "  %10s %8s", "-", "-");
}

/* The columns after the check: the --again files' measurement and the reports' own runs', each with its gap. */
static void print_gaps(FILE *f, const roof_check *c, const roof_check_row *r) {
  print_gap(f, c->nagain > 0, r->again_compared, r->again, r->gap);
  print_gap(f, c->run_compared > 0, r->run_compared, r->run, r->run_gap);
}

/* The error's interval column ("[-13%, +41%]"), or a dash where the row has none. */
static void print_interval(FILE *f, int shown, const roof_check_row *r) {
  char t[40] = "-";
  if (!shown)
    return;
  if (r->has_interval)
    snprintf(t, sizeof t, "[%+.0f%%, %+.0f%%]", 100 * r->lo, 100 * r->hi);
  fprintf(f, "  %-14s", t);
}

void roof_check_print(FILE *f, const roof_check *c) {
  const double US = 1e6;
  const int paired = c->nreports == c->nbenches && c->nreports > 1, pooled = c->nreports > 1 || c->nbenches > 1;
  const char *centers = c->center == ROOF_CENTER_MEAN ? "means" : "medians";
  fprintf(f, "prediction (model) against measurement (rmaop-bench --trace-sync), us of messaging per iteration");
  if (pooled)
    fprintf(f, "; %s over %d report(s) and %d bench file(s)", centers, c->nreports, c->nbenches);
  if (c->nagain > 0)
    fprintf(f, "; measured again: %s over %d more bench file(s), gap = again / measured - 1", centers, c->nagain);
  if (c->run_compared > 0)
    fprintf(f, "; run: the reports' own measurement of the path (rmaop-roofline run, same rounds), gap = run / "
               "measured - 1");
  const int ci = c->ninterval > 0, w = c->nagain > 0 || c->run_compared > 0 || ci ? 7 : 0; /* padded when followed */
  fprintf(f, "\n%-22s %10s %10s %10s %8s  %-*s", "path", "model", "warm", "measured", "error", w, "check");
  if (ci)
    fprintf(f, "  %-14s", "90 % interval");
  if (c->nagain > 0)
    fprintf(f, "  %10s %8s", "again", "gap");
  if (c->run_compared > 0)
    fprintf(f, "  %10s %8s", "run", "gap");
  fputc('\n', f);
  for (int i = 0; i < c->nrows; ++i) {
    const roof_check_row *r = &c->rows[i];
    if (!r->compared) {
      fprintf(f, "%-22s %10s %10s %10.2f %8s  %-*s", r->path, "-", "-", r->measured * US, "-", w, "-");
      print_interval(f, ci, r);
      print_gaps(f, c, r);
      fprintf(f, "  no prediction (the profile has no such path)\n");
      continue;
    }
    fprintf(f, "%-22s %10.2f %10.2f %10.2f %+7.0f%%  %-*s", r->path, r->predicted * US, r->predicted_warm * US,
            r->measured * US, 100 * r->error, w, r->within ? "within" : "OUTSIDE");
    print_interval(f, ci, r);
    print_gaps(f, c, r);
    fputc('\n', f);
    if (paired) {
      fprintf(f, "%-22s", "  per round");
      double e;
      for (int k = 0; k < c->nreports; ++k)
        if (round_error(r, k, &e))
          fprintf(f, " %+.0f%%", 100 * e);
        else
          fprintf(f, " -");
      fputc('\n', f);
    }
  }
  if (paired) {
    fprintf(f, "rounds (each report against its own bench):");
    for (int k = 0; k < c->nreports; ++k)
      fprintf(f, " %d/%d", c->round_within[k], c->round_compared[k]);
    fputc('\n', f);
  }
  if (c->nagain > 0)
    fprintf(f, "measurement against itself: %d of %d paths within %.0f %%%s\n", c->again_within, c->again_compared,
            100 * c->tolerance,
            c->again_within < c->again_compared ? " (where it is not, this machine's noise is larger than the "
                                                  "tolerance: a miss there is not the model's alone)"
                                                : "");
  if (c->run_compared > 0)
    fprintf(f, "the run's own measurement against the bench: %d of %d paths within %.0f %%%s\n", c->run_within,
            c->run_compared, 100 * c->tolerance,
            c->run_within < c->run_compared ? " (where the same sites, timed by rmaop-roofline run in the same rounds, "
                                              "miss the bench, so can a model probed there)"
                                            : "");
  if (c->ninterval > 0) {
    const int straddle = c->ninterval - c->interval_inside - c->interval_outside;
    fprintf(f,
            "the error's %.0f %% interval (%d resamples of the %s): %d of %d paths wholly within %.0f %%, %d wholly "
            "outside, %d across the bound%s\n",
            100 * ROOF_CHECK_LEVEL, ROOF_CHECK_BOOT,
            c->nreports == c->nbenches ? "rounds, report and bench together" : "files", c->interval_inside,
            c->ninterval, 100 * c->tolerance, c->interval_outside, straddle,
            straddle ? " (these rounds cannot tell within from outside there: more rounds can)" : "");
  }
  if (pooled) {
    fprintf(f, "by the %s over the files instead (--center %s):", c->center == ROOF_CENTER_MEAN ? "medians" : "means",
            c->center == ROOF_CENTER_MEAN ? "median" : "mean");
    for (int i = 0; i < c->nrows; ++i)
      if (c->rows[i].compared)
        fprintf(f, " %+.0f%%", 100 * c->rows[i].error_other);
    fprintf(f, "; %d of %d paths within %.0f %%\n", c->nwithin_other, c->ncompared, 100 * c->tolerance);
  }
  fprintf(f, "check: %d of %d paths within %.0f %%", c->nwithin, c->ncompared, 100 * c->tolerance);
  fprintf(f, pooled ? " (%s over the files)\n" : "\n", centers);
}
