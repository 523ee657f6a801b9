/* rmaop-roofline: the probed points and the fitted models (plan epochs and reductions), the fits and
 * the roofline quantities read from them (fit.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_FIT_H
#define RMAOP_ROOFLINE_ROOF_FIT_H

#include <stddef.h>
#include <stdint.h>

/* One probed point: an epoch of n messages of m bytes took t seconds (median over reps of the max over
 * ranks). */
typedef struct {
  int n;
  double m, t;
  int reps;
} roof_point;

/* One reduction point: rmaop_allreduce of count doubles took t seconds. */
typedef struct {
  int64_t count;
  double t;
  int reps;
} roof_rpoint;

#define ROOF_MAX_PIECES 3

/* One piece of the model: (o, beta) for epochs whose split variable is <= upto (INFINITY: the last). */
typedef struct {
  double upto, o, beta;
} roof_piece;

/* T(n, m) = alpha + n*o + n*m/beta, with (o, beta) taken from the piece the epoch falls in: pieces split
 * the message size m (protocol switch: eager/rendezvous) or the epoch's bytes n*m (cache switch, and the
 * protocol switch of a backend that packs all messages to a peer into one). One piece: no switch. */
typedef struct {
  double alpha;
  roof_piece piece[ROOF_MAX_PIECES];
  int npieces;
  int split_bytes;            /* 1: pieces split n*m, 0: m */
  double rel_median, rel_max; /* |T_fit - T| / T over the points */
  int npoints;
  int poor; /* rel_max > ROOF_POOR_MAX or rel_median > ROOF_POOR_MEDIAN: never claimed as a good fit */
} roof_fit;

#define ROOF_POOR_MAX 0.5
#define ROOF_POOR_MEDIAN 0.2
/* A split is kept when it leaves at most this fraction of the squared relative error of the model
 * without it. */
#define ROOF_SPLIT_GAIN 0.5

/* Reduction model: T(bytes) = alpha + bytes/beta (bytes = 8 * count). */
typedef struct {
  double alpha, beta, rel_median, rel_max;
  int npoints, poor;
} roof_rfit;

/* Least squares with nonnegative coefficients, exact for k <= 7 columns (every support
 * set is tried). Rows are A[i*k + j]; minimizes sum_i (A_i x - b_i)^2. Returns the residual sum of
 * squares, or a negative value when no support set is solvable. */
double roof_nnls(const double *A, const double *b, int rows, int k, double *x);

/* Fits T(n, m) to @p pts (at least 3 points with 2 distinct n or m). Minimizes relative residuals (every
 * point counts alike from 8 B to 64 MiB). Tries split points between measured values of m and of n*m and
 * keeps up to two of them (one variable) by the ROOF_SPLIT_GAIN rule. Returns 0, or -1 + message. */
int roof_fit_plan(const roof_point *pts, int npts, roof_fit *fit, char *err, size_t errlen);
/* Fits the reduction model; same conventions. */
int roof_fit_reduce(const roof_rpoint *pts, int npts, roof_rfit *fit, char *err, size_t errlen);

/* Model time of one epoch of n messages of m bytes. */
double roof_time(const roof_fit *f, double n, double m);
double roof_reduce_time(const roof_rfit *f, double bytes);
/* beta and o that apply to an epoch of n messages of m bytes (the piece it falls in). */
double roof_beta_at(const roof_fit *f, double n, double m);
double roof_o_at(const roof_fit *f, double n, double m);
/* Large-transfer ceiling: beta of the last piece. */
double roof_ceiling(const roof_fit *f);
/* L: latency of one synchronized 8-byte message, T(1, 8). */
double roof_latency(const roof_fit *f);
/* Pure roof: min(beta(s), n*s/L) in bytes/s (Ding et al.). */
double roof_pure_bw(const roof_fit *f, double n, double s);
/* Fitted roof: n*s / t_sync with t_sync(s, n) = L + n*max(o(s), s/beta(s)) (ARCHITECTURE.md). */
double roof_fitted_bw(const roof_fit *f, double n, double s);
/* Elbow (ridge point) s* = L*beta/n, where the diagonal meets the (stepped) ceiling: below it a site is
 * latency-bound, above it bandwidth-bound. */
double roof_elbow(const roof_fit *f, double n);

#endif
