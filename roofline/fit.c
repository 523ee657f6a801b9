/* Least-squares fits of the message-roofline model (Ding et al., SC'23 workshops; ARCHITECTURE.md):
 *
 *   T(n, m) = alpha + n*o + n*m/beta          linear in (alpha, o, g = 1/beta)
 *
 * Why relative residuals: the probe spans 8 B to 64 MiB, i.e. times from microseconds to tens of
 * milliseconds. Plain least squares would fit the largest points and ignore the latency end, which is where
 * solvers live. Every row is divided by its measured time, so we minimize sum ((T_fit - T) / T)^2.
 *
 * Why nonnegative: a negative alpha, o or 1/beta has no physical meaning and would make predictions go
 * negative outside the measured range. With at most 5 unknowns the exact NNLS solution is found by trying
 * every support set (the optimum is the unconstrained solution on its own support).
 *
 * Piecewise variant: measured data switches regime in two ways. A protocol switch (eager/rendezvous)
 * depends on the message size m; a cache switch (the epoch's data fits in cache, or streams through DRAM)
 * depends on the bytes the epoch moves, n*m (on the 2-core CI machine shm bandwidth drops from ~25 to
 * ~5 GB/s between 2 and 8 MiB per epoch, whatever n is), and so does the protocol switch of the twosided
 * backend, which packs all messages to one peer into one. So splits are tried at the geometric middle of
 * every two neighbouring measured values of m and of n*m; each piece gets its own (o, beta), alpha is
 * shared. A first split is kept when it leaves at most ROOF_SPLIT_GAIN (half) of the one-piece squared
 * error; a second split (same variable: eager / in-cache rendezvous / DRAM-streaming) when it halves the
 * two-piece error again. Two more parameters and a free split point always help a little, so "a little"
 * is not a switch. Every piece must hold 3 points over 2 message sizes, or its o and beta are not
 * determined. */
#include "roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXK 7

/* Copies the columns @p cols of A into Q (rows x nc), each scaled to unit norm (1 and n*m differ by 1e9).
 * Returns -1 for an all-zero column. */
static int scaled_columns(const double *A, int rows, int k, const int *cols, int nc, double *Q, double *scale) {
  for (int j = 0; j < nc; ++j) {
    double s = 0;
    for (int i = 0; i < rows; ++i)
      s += A[i * k + cols[j]] * A[i * k + cols[j]];
    if (s <= 0)
      return -1;
    scale[j] = 1 / sqrt(s);
    for (int i = 0; i < rows; ++i)
      Q[i * nc + j] = A[i * k + cols[j]] * scale[j];
  }
  return 0;
}

/* Householder QR of Q (rows x nc) applied to y as well; R's upper triangle goes to R. Returns -1 when a
 * column is (numerically) dependent on the previous ones. */
static int householder(double *Q, double *y, int rows, int nc, double R[MAXK][MAXK]) {
  for (int j = 0; j < nc; ++j) {
    double norm = 0;
    for (int i = j; i < rows; ++i)
      norm += Q[i * nc + j] * Q[i * nc + j];
    norm = sqrt(norm);
    if (norm < 1e-10)
      return -1;
    double alpha = Q[j * nc + j] > 0 ? -norm : norm, v0 = Q[j * nc + j] - alpha;
    double vv = v0 * v0 + norm * norm - Q[j * nc + j] * Q[j * nc + j]; /* v^T v, v = column j - alpha e_j */
    if (vv <= 0)
      return -1;
    Q[j * nc + j] = v0;
    for (int c = j + 1; c <= nc; ++c) { /* reflect the remaining columns, then y (c == nc) */
      double d = 0;
      for (int i = j; i < rows; ++i)
        d += Q[i * nc + j] * (c < nc ? Q[i * nc + c] : y[i]);
      for (int i = j; i < rows; ++i) {
        if (c < nc)
          Q[i * nc + c] -= 2 * d / vv * Q[i * nc + j];
        else
          y[i] -= 2 * d / vv * Q[i * nc + j];
      }
    }
    R[j][j] = alpha;
    for (int c = j + 1; c < nc; ++c)
      R[j][c] = Q[j * nc + c];
  }
  return 0;
}

/* Solves min ||A x - b|| over the columns in @p cols (the others 0) by QR of the unit-scaled columns.
 * Returns the residual sum of squares, or -1 when the chosen columns are dependent. */
static double lsq_support(const double *A, const double *b, int rows, int k, const int *cols, int nc, double *x) {
  double *Q = malloc((size_t)rows * (size_t)nc * sizeof *Q), *y = malloc((size_t)rows * sizeof *y);
  double scale[MAXK], R[MAXK][MAXK] = {{0}}, z[MAXK], rss = -1;
  if (Q && y && rows >= nc && scaled_columns(A, rows, k, cols, nc, Q, scale) == 0) {
    memcpy(y, b, (size_t)rows * sizeof *y);
    if (householder(Q, y, rows, nc, R) == 0) {
      for (int j = nc - 1; j >= 0; --j) { /* back substitution */
        z[j] = y[j];
        for (int c = j + 1; c < nc; ++c)
          z[j] -= R[j][c] * z[c];
        z[j] /= R[j][j];
      }
      for (int j = 0; j < k; ++j)
        x[j] = 0;
      for (int j = 0; j < nc; ++j)
        x[cols[j]] = z[j] * scale[j];
      rss = 0;
      for (int i = 0; i < rows; ++i) {
        double r = -b[i];
        for (int j = 0; j < k; ++j)
          r += A[i * k + j] * x[j];
        rss += r * r;
      }
    }
  }
  free(Q);
  free(y);
  return rss;
}

double roof_nnls(const double *A, const double *b, int rows, int k, double *x) {
  double best = -1, trial[MAXK];
  if (k < 1 || k > MAXK)
    return -1;
  for (unsigned mask = 1; mask < (1u << k); ++mask) {
    int cols[MAXK], nc = 0, feasible = 1;
    for (int j = 0; j < k; ++j)
      if (mask & (1u << j))
        cols[nc++] = j;
    double rss = lsq_support(A, b, rows, k, cols, nc, trial);
    for (int j = 0; j < k && rss >= 0; ++j)
      feasible &= trial[j] >= 0;
    if (rss >= 0 && feasible && (best < 0 || rss < best * (1 - 1e-12))) {
      best = rss;
      memcpy(x, trial, (size_t)k * sizeof *x);
    }
  }
  return best;
}

static double inv_or_inf(double g) {
  return g > 0 ? 1 / g : INFINITY;
}

/* The piece an epoch of n messages of m bytes falls in. */
static const roof_piece *piece_of(const roof_fit *f, double n, double m) {
  double x = f->split_bytes ? n * m : m;
  int i = 0;
  while (i + 1 < f->npieces && x > f->piece[i].upto)
    ++i;
  return &f->piece[i];
}

double roof_beta_at(const roof_fit *f, double n, double m) {
  return piece_of(f, n, m)->beta;
}
double roof_o_at(const roof_fit *f, double n, double m) {
  return piece_of(f, n, m)->o;
}
double roof_ceiling(const roof_fit *f) {
  return f->piece[f->npieces > 0 ? f->npieces - 1 : 0].beta;
}

double roof_time(const roof_fit *f, double n, double m) {
  const roof_piece *p = piece_of(f, n, m);
  return f->alpha + n * p->o + n * m / p->beta;
}

double roof_latency(const roof_fit *f) {
  return roof_time(f, 1, 8);
}

double roof_pure_bw(const roof_fit *f, double n, double s) {
  return fmin(roof_beta_at(f, n, s), n * s / roof_latency(f));
}

double roof_fitted_bw(const roof_fit *f, double n, double s) {
  const roof_piece *p = piece_of(f, n, s);
  return n * s / (roof_latency(f) + n * fmax(p->o, s / p->beta));
}

/* Where the diagonal n*s/L first meets the (possibly stepped) ceiling: inside the first piece whose beta it
 * reaches before the piece ends, or at a piece's lower edge when the step drops below the diagonal. */
double roof_elbow(const roof_fit *f, double n) {
  double L = roof_latency(f), lower = 0;
  for (int i = 0; i < f->npieces; ++i) {
    double s = L * f->piece[i].beta / n;
    double upper = i + 1 < f->npieces ? (f->split_bytes ? f->piece[i].upto / n : f->piece[i].upto) : INFINITY;
    if (s <= upper)
      return fmax(s, lower);
    lower = upper;
  }
  return lower;
}

double roof_reduce_time(const roof_rfit *f, double bytes) {
  return f->alpha + bytes / f->beta;
}

double roof_path_reduce_time(const roof_path *p, double bytes) {
  const roof_rpoint *lo = NULL, *hi = NULL;
  for (int i = 0; i < p->nrpoints; ++i) {
    const roof_rpoint *q = &p->rpoints[i];
    const double b = 8.0 * (double)q->count;
    if (b <= bytes && (!lo || q->count > lo->count))
      lo = q;
    if (b >= bytes && (!hi || q->count < hi->count))
      hi = q;
  }
  if (p->nrpoints < 2 || !lo || !hi)
    return roof_reduce_time(&p->rfit, bytes);
  const double b0 = 8.0 * (double)lo->count, b1 = 8.0 * (double)hi->count;
  return b1 > b0 ? lo->t + (hi->t - lo->t) * (bytes - b0) / (b1 - b0) : lo->t;
}

int roof_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double roof_median(const double *v, int n) {
  if (n <= 0)
    return 0;
  double *s = malloc((size_t)n * sizeof *s);
  if (!s)
    return v[0];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, roof_cmp_double);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

double roof_rank_point(const double *t, int nranks, size_t stride, int reps, int per_rank) {
  if (nranks <= 0 || reps <= 0)
    return 0;
  double point = 0;
  if (per_rank) {
    for (int r = 0; r < nranks; ++r)
      point = fmax(point, roof_median(t + (size_t)r * stride, reps));
    return point;
  }
  double *m = malloc((size_t)reps * sizeof *m);
  if (!m)
    return -1;
  for (int i = 0; i < reps; ++i) {
    m[i] = t[i];
    for (int r = 1; r < nranks; ++r)
      m[i] = fmax(m[i], t[(size_t)r * stride + (size_t)i]);
  }
  point = roof_median(m, reps);
  free(m);
  return point;
}

/* Relative residuals of a model over the points: median and max of |T_fit - T| / T. */
static void plan_quality(roof_fit *f, const roof_point *pts, int npts) {
  double *r = malloc((size_t)npts * sizeof *r), mx = 0;
  if (!r)
    return;
  for (int i = 0; i < npts; ++i) {
    r[i] = fabs(roof_time(f, pts[i].n, pts[i].m) - pts[i].t) / pts[i].t;
    mx = fmax(mx, r[i]);
  }
  f->rel_median = roof_median(r, npts);
  f->rel_max = mx;
  f->npoints = npts;
  f->poor = f->rel_max > ROOF_POOR_MAX || f->rel_median > ROOF_POOR_MEDIAN;
  free(r);
}

/* Rows of the relative-residual system for @p f's pieces: columns alpha, then (o, g = 1/beta) per piece. */
static void plan_rows(const roof_point *pts, int npts, const roof_fit *f, int k, double *A, double *b) {
  for (int i = 0; i < npts; ++i) {
    double w = 1 / pts[i].t, n = pts[i].n, m = pts[i].m, *row = &A[i * k];
    int p = (int)(piece_of(f, n, m) - f->piece);
    memset(row, 0, (size_t)k * sizeof *row);
    row[0] = w;
    row[1 + 2 * p] = n * w;
    row[2 + 2 * p] = n * m * w;
    b[i] = 1;
  }
}

/* Fits (alpha, o, beta per piece) for @p f's pieces and split variable. Returns the squared error or -1. */
static double plan_solve(const roof_point *pts, int npts, roof_fit *f) {
  int k = 1 + 2 * f->npieces;
  double *A = malloc((size_t)npts * (size_t)k * sizeof *A), *b = malloc((size_t)npts * sizeof *b), x[MAXK] = {0};
  double rss = -1;
  if (A && b) {
    plan_rows(pts, npts, f, k, A, b);
    rss = roof_nnls(A, b, npts, k, x);
  }
  free(A);
  free(b);
  if (rss < 0)
    return -1;
  f->alpha = x[0];
  for (int p = 0; p < f->npieces; ++p) {
    f->piece[p].o = x[1 + 2 * p];
    f->piece[p].beta = inv_or_inf(x[2 + 2 * p]);
  }
  return rss;
}

/* Distinct values of m (bytes = 0) or n*m (bytes = 1), ascending. Returns how many. */
static int distinct(const roof_point *pts, int npts, int bytes, double *v) {
  int nv = 0;
  for (int i = 0; i < npts; ++i) {
    double x = bytes ? pts[i].n * pts[i].m : pts[i].m;
    int seen = 0;
    for (int j = 0; j < nv && !seen; ++j)
      seen = v[j] == x;
    if (!seen)
      v[nv++] = x;
  }
  qsort(v, (size_t)nv, sizeof *v, roof_cmp_double);
  return nv;
}

/* Every piece must determine its own o and beta: at least 3 points over 2 message sizes. */
static int pieces_ok(const roof_point *pts, int npts, const roof_fit *f) {
  int count[ROOF_MAX_PIECES] = {0}, two[ROOF_MAX_PIECES] = {0};
  double first[ROOF_MAX_PIECES] = {0};
  for (int i = 0; i < npts; ++i) {
    int p = (int)(piece_of(f, pts[i].n, pts[i].m) - f->piece);
    ++count[p];
    if (first[p] == 0)
      first[p] = pts[i].m;
    else if (pts[i].m != first[p])
      two[p] = 1;
  }
  for (int p = 0; p < f->npieces; ++p)
    if (count[p] < 3 || !two[p])
      return 0;
  return 1;
}

/* @p base's splits plus one at @p at, on variable @p bytes (coefficients are refitted by the caller). */
static roof_fit with_split(const roof_fit *base, double at, int bytes) {
  roof_fit f = {.split_bytes = bytes};
  double edges[ROOF_MAX_PIECES];
  int ne = 0;
  for (int i = 0; i + 1 < base->npieces; ++i)
    edges[ne++] = base->piece[i].upto;
  edges[ne++] = at;
  for (int i = 1; i < ne; ++i) /* ascending */
    for (int j = i; j > 0 && edges[j - 1] > edges[j]; --j) {
      double t = edges[j];
      edges[j] = edges[j - 1];
      edges[j - 1] = t;
    }
  for (int i = 0; i < ne; ++i)
    f.piece[i].upto = edges[i];
  f.piece[ne].upto = INFINITY;
  f.npieces = ne + 1;
  return f;
}

/* The best model with one split more than @p base over the variables allowed (@p bytes: 0 m, 1 n*m,
 * -1 both). Returns its squared error, or -1 when no split is admissible. */
static double add_split(const roof_point *pts, int npts, const roof_fit *base, int bytes, roof_fit *best) {
  double *v = malloc((size_t)npts * sizeof *v), best_rss = -1;
  for (int kind = 0; v && kind < 2; ++kind) {
    if (bytes >= 0 && kind != bytes)
      continue;
    int nv = distinct(pts, npts, kind, v);
    for (int s = 0; s + 1 < nv; ++s) {
      roof_fit f = with_split(base, sqrt(v[s] * v[s + 1]), kind);
      if (!pieces_ok(pts, npts, &f))
        continue;
      double rss = plan_solve(pts, npts, &f);
      if (rss >= 0 && (best_rss < 0 || rss < best_rss)) {
        best_rss = rss;
        *best = f;
      }
    }
  }
  free(v);
  return best_rss;
}

static int points_ok(const roof_point *pts, int npts, char *err, size_t errlen) {
  if (npts < 3)
    return roof_set_err(err, errlen, "%d points: at least 3 are needed to fit 3 parameters", npts), -1;
  for (int i = 0; i < npts; ++i)
    if (!(pts[i].t > 0) || !isfinite(pts[i].t) || pts[i].n < 1 || !(pts[i].m > 0))
      return roof_set_err(err, errlen, "point %d (n %d, m %g, t %g) is not a positive measurement", i, pts[i].n,
                          pts[i].m, pts[i].t),
             -1;
  return 0;
}

int roof_fit_plan(const roof_point *pts, int npts, roof_fit *fit, char *err, size_t errlen) {
  if (points_ok(pts, npts, err, errlen))
    return -1;
  roof_fit cur = {.npieces = 1, .piece = {{.upto = INFINITY}}};
  double rss = plan_solve(pts, npts, &cur);
  if (rss < 0)
    return roof_set_err(err, errlen, "the points do not determine alpha, o and beta"), -1;
  while (cur.npieces < ROOF_MAX_PIECES) {
    roof_fit next;
    double r = add_split(pts, npts, &cur, cur.npieces > 1 ? cur.split_bytes : -1, &next);
    if (r < 0 || r > ROOF_SPLIT_GAIN * rss)
      break;
    cur = next;
    rss = r;
  }
  plan_quality(&cur, pts, npts);
  *fit = cur;
  return 0;
}

int roof_fit_reduce(const roof_rpoint *pts, int npts, roof_rfit *fit, char *err, size_t errlen) {
  if (npts < 2)
    return roof_set_err(err, errlen, "%d reduction points: at least 2 are needed", npts), -1;
  for (int i = 0; i < npts; ++i)
    if (!(pts[i].t > 0) || !isfinite(pts[i].t) || pts[i].count < 1)
      return roof_set_err(err, errlen, "reduction point %d (count %lld, t %g) is not a positive measurement", i,
                          (long long)pts[i].count, pts[i].t),
             -1;
  double *A = malloc((size_t)npts * 2 * sizeof *A), *b = malloc((size_t)npts * sizeof *b), *r = NULL, x[2];
  double rss = -1, mx = 0;
  if (A && b) {
    for (int i = 0; i < npts; ++i) { /* relative residuals, as for plans */
      A[2 * i] = 1 / pts[i].t;
      A[2 * i + 1] = 8.0 * (double)pts[i].count / pts[i].t;
      b[i] = 1;
    }
    rss = roof_nnls(A, b, npts, 2, x);
  }
  free(A);
  free(b);
  if (rss < 0 || !(r = malloc((size_t)npts * sizeof *r)))
    return roof_set_err(err, errlen, "the reduction points do not determine alpha and beta"), -1;
  roof_rfit f = {.alpha = x[0], .beta = inv_or_inf(x[1]), .npoints = npts};
  for (int i = 0; i < npts; ++i) {
    r[i] = fabs(roof_reduce_time(&f, 8.0 * (double)pts[i].count) - pts[i].t) / pts[i].t;
    mx = fmax(mx, r[i]);
  }
  f.rel_median = roof_median(r, npts);
  f.rel_max = mx;
  f.poor = f.rel_max > ROOF_POOR_MAX || f.rel_median > ROOF_POOR_MEDIAN;
  free(r);
  *fit = f;
  return 0;
}
