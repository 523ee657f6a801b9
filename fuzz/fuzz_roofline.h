/* What `rmaop-roofline run` does with what it read (roofline/run.c, report()), for the profile and trace
 * targets: every site analyzed on every path of the profile, the tables and verdicts printed, the JSON, CSV and
 * SVG reports written (to /dev/null). A fuzzed profile meets fixed sites here, fuzzed sites a fixed profile, so
 * whatever a reader accepts is also run through the code that uses it. Header-only: each target is one
 * translation unit. */
#ifndef RMAOP_FUZZ_ROOFLINE_H
#define RMAOP_FUZZ_ROOFLINE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "roofline.h"

/* Every JSON file the tool writes must parse, whatever the input held (labels, names, numbers): aborts with the
 * parser's message otherwise. */
static inline void fuzz_require_json(const char *file, const char *what) {
  char err[ROOF_ERR_MAX];
  json_value *v = json_parse_file(file, err, sizeof err);
  if (!v) {
    fprintf(stderr, "fuzz: %s is not valid JSON: %s\n", what, err);
    __builtin_trap();
  }
  json_free(v);
}

/* Analyzes every run's sites on @p prof and writes every report, as run.c's report() does; the JSON report must
 * parse. Aborts when out of memory (a harness failure). */
static inline void fuzz_report(roof_run *runs, int nruns, const roof_profile *prof) {
  char err[ROOF_ERR_MAX], buf[1024];
  FILE *sink = fuzz_sink();
  for (int k = 0; k < nruns; ++k) {
    roof_run *r = &runs[k];
    r->an = calloc((size_t)r->nsites + 1, sizeof *r->an);
    if (!r->an)
      abort();
    const double gap = roof_run_gap_bytes(r);
    for (int i = 0; i < r->nsites; ++i)
      if (roof_analyze_gap(&r->sites[i], prof, r->iterations, r->bytes_per_iter, r->footprint, gap, &r->an[i]))
        abort(); /* it fails only when out of memory */
  }
  roof_report_profile_table(sink, prof);
  roof_report_cache(sink, prof);
  roof_report_table(sink, runs, nruns, prof);
  for (int k = 0; k < nruns; ++k) {
    roof_verdict(&runs[k], prof, buf, sizeof buf);
    roof_report_verdict(sink, &runs[k], prof);
    (void)roof_run_shared_overflow(&runs[k], prof);
    (void)roof_run_cold_sites(&runs[k]);
    (void)roof_run_measured(&runs[k], 1);
    (void)roof_run_best_any(&runs[k], prof);
  }
  const char *json = fuzz_scratch_file();
  if (roof_report_json(json, runs, nruns, prof, err, sizeof err) == 0)
    fuzz_require_json(json, "the report roof_report_json wrote");
  (void)roof_report_csv(FUZZ_SINK_PATH, runs, nruns, prof, err, sizeof err);
  (void)roof_svg_roofline(FUZZ_SINK_PATH, runs, nruns, prof, err, sizeof err);
}

static inline void fuzz_free_runs(roof_run *runs, int nruns) {
  for (int k = 0; k < nruns; ++k) {
    for (int i = 0; runs[k].an && i < runs[k].nsites; ++i)
      roof_analysis_free(&runs[k].an[i]);
    free(runs[k].an);
    runs[k].an = NULL;
  }
}

/* A host profile as the probe writes one, built in code: rma.lock.shm (three pieces, reduction points, every
 * cold point and the accumulate point) and twosided (one piece, a poor fit), with a cache curve. */
static inline void fuzz_make_profile(roof_profile *p) {
  memset(p, 0, sizeof *p);
  p->ranks = 2;
  strcpy(p->memory, "host");
  strcpy(p->pattern, "ring");
  p->npaths = 2;
  p->paths = calloc(2, sizeof *p->paths);
  roof_path *a = &p->paths[0], *b = &p->paths[1];
  if (!p->paths || !(a->points = calloc(3, sizeof *a->points)) || !(a->rpoints = calloc(3, sizeof *a->rpoints)) ||
      !(b->points = calloc(1, sizeof *b->points)))
    abort();
  strcpy(a->name, "rma.lock.shm");
  strcpy(a->backend, "rma");
  strcpy(a->sync, "lock");
  strcpy(a->transport, "shm");
  strcpy(a->memory, "host");
  a->fit = (roof_fit){.alpha = 0.3e-6,
                      .npieces = 3,
                      .split_bytes = 1,
                      .rel_median = 0.05,
                      .rel_max = 0.2,
                      .npoints = 3,
                      .piece = {{4096, 0.01e-6, 10e9}, {4194304, 0.02e-6, 20e9}, {INFINITY, 0, 5e9}}};
  a->npoints = 3;
  for (int i = 0; i < 3; ++i)
    a->points[i] = (roof_point){.n = 1 << (3 * i), .m = 8 << (4 * i), .t = 1e-6 * (i + 1), .reps = 5};
  a->has_rfit = 1;
  a->rfit = (roof_rfit){.alpha = 0.2e-6, .beta = 8e9, .rel_median = 0.01, .rel_max = 0.02, .npoints = 3};
  a->nrpoints = 3;
  a->rpoints[0] = (roof_rpoint){1, 0.20e-6, 100};
  a->rpoints[1] = (roof_rpoint){8, 0.21e-6, 100};
  a->rpoints[2] = (roof_rpoint){64, 0.25e-6, 100};
  a->cold = (roof_cold){.has_epoch = 1,
                        .has_reduce = 1,
                        .sweep_bytes = 256 << 20,
                        .epoch = {0.2e-6, 5.2e-6, 5.0e-6, 3},
                        .reduce = {0.22e-6, 4.8e-6, 4.6e-6, 3},
                        .nrcurve = 2,
                        .rcurve_bytes = {1 << 20, 64 << 20},
                        .rcurve_t = {0.5e-6, 4.2e-6},
                        .has_after_epoch = 1,
                        .after_epoch = {0.22e-6, 1.9e-6, 1.7e-6, 3},
                        .nscurve = 2,
                        .scurve_bytes = {1 << 20, 64 << 20},
                        .scurve_t = {0.4e-6, 3.9e-6},
                        .has_overlap = 1,
                        .overlap = {0.34e-6, 0.99e-6, 0.65e-6, 3},
                        .overlap_bytes = 8 << 20,
                        .overlap_seconds = 1e-3};
  a->add = (roof_add_point){.has = 1, .insert = 0.16e-6, .add = 0.18e-6, .extra = 0.02e-6, .reps = 20};
  strcpy(b->name, "twosided");
  strcpy(b->backend, "twosided");
  strcpy(b->sync, "-");
  strcpy(b->transport, "-");
  strcpy(b->memory, "host");
  b->fit = (roof_fit){.alpha = 0.35e-6,
                      .npieces = 1,
                      .rel_median = 0.1,
                      .rel_max = 0.7,
                      .npoints = 1,
                      .poor = 1,
                      .piece = {{INFINITY, 0.002e-6, 7e9}}};
  b->npoints = 1;
  b->points[0] = (roof_point){1, 8, 0.36e-6, 100};
  roof_cache *c = &p->cache;
  c->has = 1;
  c->llc_bytes = 32 << 20;
  strcpy(c->llc_source, "sysconf");
  c->sweep_bytes = 128 << 20;
  c->sweep_barriers = 0;
  strcpy(c->curve_path, "rma.lock.shm");
  c->curve_warm = 0.2e-6;
  c->ncurve = 3;
  const double cb[] = {1 << 20, 16 << 20, 128 << 20}, ct[] = {0.5e-6, 1.4e-6, 5.2e-6};
  memcpy(c->curve_bytes, cb, sizeof cb);
  memcpy(c->curve_t, ct, sizeof ct);
  c->share_bytes = 27 << 20;
  c->share_ratio = 1.7;
  c->share_cache_bytes = 32 << 20;
}

#endif
