/* rmaop-roofline: check: predictions (run reports) against measurements (rmaop-bench JSON), pooled
 * over rounds (check.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_CHECK_H
#define RMAOP_ROOFLINE_ROOF_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "roof_common.h"

/* ---------------------------------------------------------------------------------------------------- */
/* check: predictions (run reports) against measurements (rmaop-bench --trace-sync --json), check.c     */
/* ---------------------------------------------------------------------------------------------------- */

#define ROOF_CHECK_MAX_PATHS 32
#define ROOF_CHECK_MAX_FILES 64 /* rounds: the pooled medians of a noisy machine need a few dozen */

/* How check pools the rounds' values of a path (each round's value: a launch's median): by their median (the
 * default) or their mean. check.c says why the mean. */
typedef enum { ROOF_CENTER_MEDIAN = 0, ROOF_CENTER_MEAN = 1 } roof_center;

typedef struct {
  char path[ROOF_NAME_MAX]; /* profile path name ("rma.lock.shm", "rma.lock.ipc.device") */
  double predicted_k[ROOF_CHECK_MAX_FILES], predicted_warm_k[ROOF_CHECK_MAX_FILES]; /* per report, s/iteration */
  double measured_k[ROOF_CHECK_MAX_FILES];                                          /* per bench file */
  double again_k[ROOF_CHECK_MAX_FILES];                                             /* per --again bench file */
  double run_k[ROOF_CHECK_MAX_FILES]; /* per report: its own run's measurement on this path (measured_comm_per_iter) */
  uint64_t has_predicted, has_measured, has_again, has_run; /* bit k: file k (report, bench, --again) has the path */
  double predicted, predicted_warm, measured;               /* centers (median or mean) over the files */
  double error;                                             /* predicted / measured - 1 */
  int compared, within;
  double error_other; /* the same by the other center (mean where the check pools by medians, and back) */
  int within_other;
  double again, gap;                /* the --again files' center; gap = again / measured - 1 */
  int again_compared, again_within; /* |gap| <= tolerance */
  double run, run_gap;              /* the reports' own runs' center measurement; run_gap = run / measured - 1 */
  int run_compared, run_within;     /* |run_gap| <= tolerance */
  int has_interval;                 /* lo..hi: the error's 90 % bootstrap interval over the rounds (check.c) */
  double lo, hi;
} roof_check_row;

typedef struct {
  roof_check_row rows[ROOF_CHECK_MAX_PATHS]; /* the bench files' paths, in their order */
  int nrows, nreports, nbenches, ncompared, nwithin;
  int round_compared[ROOF_CHECK_MAX_FILES], round_within[ROOF_CHECK_MAX_FILES]; /* report k against bench k */
  int nagain, again_compared, again_within;         /* the measurement against itself (roof_check_again) */
  int run_compared, run_within;                     /* the run's own measurement against the bench's */
  int ninterval, interval_inside, interval_outside; /* rows with an interval; wholly inside / beyond the tolerance */
  int nwithin_other;                                /* paths within by the other center */
  double tolerance;
  roof_center center;
} roof_check;

/* Reads the reports and bench files and compares per path (check.c says which prediction and how files pool,
 * by `center`). Returns 0, or -1 with a message naming the file and the problem. */
int roof_check_files(const char *const *reports, int nreports, const char *const *benches, int nbenches, double tol,
                     roof_center center, roof_check *c, char *err, size_t errlen);
/* "median" or "mean" to its center; -1 for anything else. */
int roof_center_parse(const char *name, roof_center *out);
/* After roof_check_files: a second, independent set of bench files of the same paths (measured again in the
 * same rounds), pooled alike and compared with the first at the same tolerance: how well the measurement
 * agrees with itself on this machine, the floor under any model's agreement with it. Paths only in the
 * second set are ignored. Returns 0, or -1 with a message naming the file and the problem. */
int roof_check_again(roof_check *c, const char *const *benches, int nbenches, char *err, size_t errlen);
void roof_check_print(FILE *f, const roof_check *c);

#endif
