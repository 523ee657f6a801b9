/* rmaop-roofline: the message roofline of Ding, Haseeb, Groves, Williams, "Evaluating the Performance of
 * One-Sided Communication on CPUs and GPUs" (SC'23 workshops), applied to rmaop's communication paths.
 *
 * This header is the tool's core (library rmaop_roofline_core): fitting, classification, profile and trace
 * files, reports and plots. It needs neither MPI nor rmaop, so the unit tests link it alone. The parts that
 * talk to MPI (probe.c, run.c, main.c) live in the executable.
 *
 * Units everywhere: seconds, bytes, bytes per second. Reports convert to us and GB/s (1e9 B/s) at the edge. */
#ifndef RMAOP_ROOFLINE_H
#define RMAOP_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ROOF_NAME_MAX 64
#define ROOF_LABEL_MAX 128
#define ROOF_ERR_MAX 512

/* ---------------------------------------------------------------------------------------------------- */
/* JSON: a small DOM reader for the tool's own files (profiles, rmaop trace files) and writing helpers.  */
/* ---------------------------------------------------------------------------------------------------- */

typedef enum { JSON_NULL = 0, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
  json_type type;
  int boolean;
  double number;
  char *string;             /* JSON_STRING (NUL-terminated; embedded NULs are rejected) */
  size_t count;             /* items of an array, members of an object */
  struct json_value *items; /* array items / object member values */
  char **keys;              /* object member names */
} json_value;

/* Parses @p text (NUL-terminated). On failure returns NULL and writes "line L, column C: why" into @p err. */
json_value *json_parse(const char *text, char *err, size_t errlen);
/* Reads and parses a file; errors name the file. */
json_value *json_parse_file(const char *path, char *err, size_t errlen);
void json_free(json_value *v);
/* Member @p key of an object (NULL when absent or when @p obj is not an object). */
const json_value *json_get(const json_value *obj, const char *key);
/* Writes @p s as a JSON string literal (quotes, escapes). */
void json_write_string(FILE *f, const char *s);
/* Writes a number; non-finite values become null (JSON has no infinity). */
void json_write_number(FILE *f, double x);

/* ---------------------------------------------------------------------------------------------------- */
/* Paths and the fitted model                                                                            */
/* ---------------------------------------------------------------------------------------------------- */

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

/* One operation timed cold and warm (probe.c): before every cold repetition each rank writes a scratch
 * buffer larger than the last-level cache (untimed), then the ranks meet in a barrier (untimed) and the
 * operation is timed; warm repetitions are timed in between (barrier, operation), under the same conditions.
 * Both are medians over repetitions of the slowest rank. penalty = max(0, cold - warm). */
typedef struct {
  double warm, cold, penalty; /* seconds */
  int reps;                   /* cold repetitions */
} roof_cold_point;

#define ROOF_MAX_CURVE 16

/* A path's cold points: the epoch of one 8-byte message and the reduction of one double. Absent (has_* 0)
 * in profiles from older probes. On device memory (no cache term: the solver's vectors do not pass the host
 * caches) only the reduction, measured right after a device dot (cold) in turns with the same reduction back
 * to back (warm); sweep_bytes is 0 there, and roof_cold_penalty says how the model uses it.
 * Host memory also has the path's own reduction curve: the one-element dot's cold median after writing
 * rcurve_bytes[i] per rank (ascending, below sweep_bytes; the full sweep's point, `reduce`, ends it). A
 * reduction site scales its path's penalty by this curve where the profile has no same-bytes curve (below), and
 * by it for the bytes since the run's previous call (roof_path_cold_fraction); absent (nrcurve 0) in older
 * profiles, which use the profile's epoch curve for every site. */
typedef struct {
  int has_epoch, has_reduce;
  double sweep_bytes; /* bytes each rank wrote before every cold repetition */
  roof_cold_point epoch, reduce;
  int nrcurve;
  double rcurve_bytes[ROOF_MAX_CURVE], rcurve_t[ROOF_MAX_CURVE];
  /* Host memory: the same dot after the full sweep and an untimed 8 B epoch of the path (its cold median `cold`,
   * the warm one `warm`): how much of the reduction's cold penalty an epoch just before takes away (a solver's
   * reduction follows its matvec's halo; roof_after_epoch_share). Absent in profiles of older probes. */
  int has_after_epoch;
  roof_cold_point after_epoch;
  /* Host memory: the same dot's cold median after re-writing the same scurve_bytes[i] per rank before every
   * repetition (the first pieces of the sweep's ring each time, as a solver re-reads its footprint), where the
   * reduction curve above writes fresh bytes. Reduction sites read it (roof_path_same_fraction); the fresh curve
   * prices a reduction's gap part. Absent (nscurve 0) in profiles of older probes, which read the fresh curve. */
  int nscurve;
  double scurve_bytes[ROOF_MAX_CURVE], scurve_t[ROOF_MAX_CURVE];
  /* Host memory: the 8 B epoch with a pass over overlap_bytes of fresh memory between
   * its begin and its end (untimed; `cold`), in turns with the same epoch begun and ended back to back (`warm`),
   * both timed as solver sites; overlap_seconds is the pass's median duration (the slowest rank's). A solver
   * that computes between a plan's begin and end finds the end's state partly evicted: plan sites with
   * computation overlapped inside begin..end pay the penalty scaled by the overlapped time over
   * overlap_seconds, at most 1 (roof_overlap_share). Absent (has_overlap 0) in older profiles. */
  int has_overlap;
  roof_cold_point overlap;
  double overlap_bytes, overlap_seconds;
} roof_cold;

/* The price of accumulating: the 8-byte epoch (n = 1) in RMAOP_INSERT and in RMAOP_ADD mode, timed in turns
 * as solver sites are (time inside rmaop's calls, synchronized starts). An adjoint's reversed plan adds at the
 * receiver (unpack and add instead of a copy; on twosided over device pointers a receive into scratch and an
 * add kernel), which the INSERT points of the fit do not see: plan sites pay extra per RMAOP_ADD call. Absent
 * (has 0) in profiles of older probes. extra = max(0, add - insert). */
typedef struct {
  int has;
  double insert, add, extra; /* seconds, medians of the slowest rank */
  int reps;
} roof_add_point;

typedef struct {
  char name[ROOF_NAME_MAX]; /* "rma.lock.shm", "twosided", ... (".device" appended for device memory) */
  char backend[16], sync[16], transport[16], memory[16];
  roof_point *points;
  int npoints;
  roof_fit fit;
  roof_rpoint *rpoints;
  int nrpoints;
  roof_rfit rfit;
  int has_rfit;
  roof_cold cold;
  roof_add_point add;
} roof_path;

/* A cold penalty below this fraction of the warm time is no cache effect (noise): the curve is not used. */
#define ROOF_COLD_MIN_REL 0.5

/* The machine's cache as the cold-cache term sees it (one per profile). How cold a site is depends on its
 * reuse distance d (the bytes its solver touches per rank between two of its calls): the probe measures the
 * 8-byte epoch of one path after sweeps of 1 MiB, 2 MiB, ... up to sweep_bytes (the curve), and a site pays
 * the fraction of its path's full cold penalty that the curve shows at d (roof_cold_fraction). */
typedef struct {
  int has;             /* 0: older profile, device memory or --cold-reps 0: every site is predicted warm */
  double llc_bytes;    /* last-level cache the system reports (0: unknown) */
  char llc_source[32]; /* "sysconf", "sysfs", "unknown" */
  double sweep_bytes;  /* scratch written per rank before a cold repetition: 4 x LLC, <= 256 MiB; 64 MiB unknown */
  int sweep_barriers;  /* barriers between a sweep's end and the cold call's own: 0, as in a solver; 3 where the
                          ranks outnumber the cores (older profiles: 3) */
  char curve_path[ROOF_NAME_MAX];                              /* the path whose 8-byte epoch gave the curve */
  double curve_warm;                                           /* that epoch warm (seconds) */
  double curve_bytes[ROOF_MAX_CURVE], curve_t[ROOF_MAX_CURVE]; /* sweep bytes (ascending), cold median */
  int ncurve;                                                  /* the last point is the full sweep */
  /* Whether the ranks share a cache: rank 0's passes over share_bytes of a buffer (0.85 x
   * share_cache_bytes, the last-level cache of CPU 0's domain as sysfs reports it, else llc_bytes), timed while
   * every rank reads its own, over the same passes with the other ranks asleep. About 1 where each rank has a
   * last-level cache (and core) of its own; more where ranks share a core or a cache their data together
   * overflows. All 0: not measured (older profile, one rank, cache size unknown). */
  double share_bytes, share_ratio, share_cache_bytes;
} roof_cache;

/* share_ratio from which the ranks count as sharing a cache (the 2-vCPU VM over 66 probes: 0.84-1.12 in the
 * placement where its vCPUs have caches of their own, 1.22-1.55 where they share one). */
#define ROOF_SHARED_RATIO 1.2
/* The share of the last-level cache the sharing test reads per rank (probe.c, measure_sharing). */
#define ROOF_SHARE_OF_LLC 0.85

typedef struct {
  int ranks;
  char memory[16];
  int quick;
  char pattern[256];
  char created[64];
  roof_path *paths;
  int npaths;
  roof_cache cache;
} roof_profile;

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

/* ---- the cold-cache term ---- */

/* Fraction (0..1) of a path's full cold penalty that a site with reuse distance @p reuse_bytes pays: the
 * curve's penalty at that distance over its penalty at the full sweep, interpolated linearly in log(bytes)
 * between measured sweeps, made nondecreasing (each point is the smallest at or above its size, so a noisy
 * spike at a small sweep does not count), 1 beyond the full sweep, the first point's below the first sweep.
 * Without a usable curve (none, or a full penalty below ROOF_COLD_MIN_REL x warm) a step: 1 beyond the
 * LLC (sweep_bytes / 4 when unknown), else 0. 0 when the profile has no cold term or reuse is unknown (<= 0). */
double roof_cold_fraction(const roof_cache *c, double reuse_bytes);
/* The fraction a site of @p kind pays on path @p p: a reduction ("reduce") on a path with its own reduction
 * curve reads that curve (same rules: nondecreasing, log-linear, 1 at and beyond the full sweep; the first
 * point's fraction below the first sweep); when that curve shows no penalty above the noise (a full penalty
 * below ROOF_COLD_MIN_REL x warm), and for every other site, roof_cold_fraction of the profile's epoch curve.
 * 0 when the profile has no cold term or reuse is unknown. Host memory only (roof_analyze decides device). */
double roof_path_cold_fraction(const roof_cache *c, const roof_path *p, const char *kind, double reuse_bytes);
/* A reduction's fraction on path @p p from its same-bytes curve (cold.scurve: the dot after re-writing the same
 * bytes before every repetition), same rules; roof_path_cold_fraction(c, p, "reduce", ...) where the profile has
 * none or it is not usable. What `run` prices reduction sites with: in steady state a solver touches between two
 * reductions the data it touched in its previous iteration, not bytes last touched a whole scratch ago; over seven
 * stored VM checks that recorded the curve it puts bdiag within 25 % on 44 of 49 (path, check) pairs against 39
 * with the fresh-bytes curve, deriv1d on 47 against 45. */
double roof_path_same_fraction(const roof_cache *c, const roof_path *p, double reuse_bytes);
/* Bytes one rank streams per CGLS iteration (src/solvers/solver.c, rmaop_solve_cgls): every vector an operation
 * reads or writes counts once: 8 passes over model-space vectors (local length @p model_local), 6 over
 * data-space vectors (@p data_local), of @p elem bytes each, plus @p op_bytes (the operator's own storage,
 * e.g. a dense block) read by one apply and one adjoint. */
double roof_cgls_bytes(double model_local, double data_local, double elem, double op_bytes);
/* Distinct bytes CGLS touches per rank and iteration: its 3 model-space (x, r, c) and 2 data-space (s, q)
 * vectors and the operator's storage. A reuse distance never exceeds it (what is touched twice is cached once). */
double roof_cgls_footprint(double model_local, double data_local, double elem, double op_bytes);
/* Warm time of one reduction of @p bytes on path @p p: between two of the probe's reduction points
 * (counts 1, 8, 64, ... doubles) their medians interpolated linearly in bytes, at a point its median, outside
 * them (or with fewer than two) the fit (roof_reduce_time). The fit is a line over 8 B .. 32 KiB weighted by
 * relative error; at the 8-40 B a solver's dots reduce it missed the measured medians by ~5-10 % (2-vCPU VM,
 * 36 rounds: rma.lock.mpi's fit 0.457 us at 40 B against points of 0.420 and 0.421 us at 8 and 64 B). */
double roof_path_reduce_time(const roof_path *p, double bytes);
/* Cold penalty per call of a site of @p kind ("reduce": the reduction's, else the epoch's; a path without
 * a reduction point uses the epoch's) on path @p p; 0 when not measured. On device memory the reduction's is
 * a shift, not a penalty: the measured reduction after a device dot (ROOF_DOT_BYTES) minus the warm reduction
 * at that size (roof_path_reduce_time), so a reduction site is predicted as that measured point carried to its
 * own size by the reduction points' slope; negative where the warm curve lies above it. */
#define ROOF_DOT_BYTES 24.0 /* the probe's one-element dot reduces 3 doubles: real, imaginary part, flag */
double roof_cold_penalty(const roof_path *p, const char *kind);

/* ---------------------------------------------------------------------------------------------------- */
/* Profiles                                                                                              */
/* ---------------------------------------------------------------------------------------------------- */

/* Known path names for a memory kind, NULL-terminated ("rma.fence.shm", ..., "twosided"). */
extern const char *const roof_host_paths[];
extern const char *const roof_device_paths[];
/* Splits "rma.pscw.mpi" / "twosided" / "nccl" (optionally ".device") into its parts. Returns 0 for a known
 * path, -1 (message in @p err listing the known ones) otherwise. */
int roof_path_parse(const char *name, char *backend, char *sync, char *transport, char *memory, char *err,
                    size_t errlen);

int roof_profile_write(const roof_profile *p, const char *file, char *err, size_t errlen);
/* Reads a profile; rejects malformed or incomplete files with a message naming the file and the field. */
int roof_profile_read(const char *file, roof_profile *p, char *err, size_t errlen);
void roof_profile_free(roof_profile *p);
const roof_path *roof_profile_find(const roof_profile *p, const char *name);

/* ---------------------------------------------------------------------------------------------------- */
/* Trace sites and their analysis                                                                        */
/* ---------------------------------------------------------------------------------------------------- */

/* One site as the analysis needs it (the max over ranks when several ranks' records are merged). */
typedef struct {
  char label[ROOF_LABEL_MAX];
  char kind[16];            /* "plan", "reduce", "epoch" */
  char path[ROOF_NAME_MAX]; /* the path it ran on ("rma.lock.shm"), from backend/sync/transport */
  double calls, messages, bytes_per_message, time_total;
  double calls_add;     /* of the calls, plans in RMAOP_ADD mode (0 also in trace files written before it existed) */
  double time_inside;   /* seconds inside rmaop's calls (0: unknown, older trace files); measured time when > 0 */
  double inside_median; /* seconds, the median call's time inside (0: unknown); the measured per-call time when > 0 */
} roof_site;

/* Reads the JSON written by rmaop_trace_write_json(); merges into @p sites (same label and kind: max of
 * each field, so several ranks' files combine into the slowest rank's view). Returns 0 or -1 + message. */
int roof_trace_read(const char *file, roof_site **sites, int *nsites, char *err, size_t errlen);
/* The path name a trace names: rma + sync + transport, or the backend. "mixed"/"self" transports keep
 * their name (and then match no profiled path). */
void roof_trace_path_name(const char *backend, const char *sync, const char *transport, const char *memory, char *name,
                          size_t len);

typedef enum {
  ROOF_LATENCY = 0,
  ROOF_BANDWIDTH,
  ROOF_OVERHEAD,
  ROOF_PATHOLOGICAL,
  ROOF_LOCAL,
  ROOF_UNKNOWN
} roof_class;

/* A site on one profiled path's roofline. */
typedef struct {
  const roof_path *path;
  double pure_bw, fitted_bw, elbow; /* bytes/s, bytes/s, bytes; a cold site's fitted roof includes its penalty */
  double predicted;                 /* model time per call on this path (reductions: the reduce fit), cold-aware */
  double predicted_warm;            /* the same without the cold penalty */
  double penalty;                   /* the path's cold penalty per call (cold_fraction of it is in predicted) */
  double cold_fraction;             /* of penalty paid per call on this path (roof_path_cold_fraction) */
} roof_onpath;

typedef struct {
  const roof_site *site;
  double per_call, achieved; /* seconds (the median call where the trace has it), bytes/s */
  double per_call_mean;      /* seconds, every call counted (preempted ones too) */
  double calls_per_iter;
  roof_onpath *on;      /* one per profile path, in profile order */
  int home;             /* index of the site's own path in the profile, -1 when not profiled */
  roof_class cls;       /* against the home path */
  double efficiency;    /* achieved / fitted roof of the home path (0 when no home) */
  const char *cause;    /* what an overhead-bound site is bound by */
  const char *hint;     /* what to try */
  double reuse_bytes;   /* bytes one rank touches between two calls of the site (0: unknown) */
  double gap_bytes;     /* bytes one rank touches since the run's previous communication call (0: unknown) */
  double cold_fraction; /* of the home path's cold penalty paid per call (the epoch curve's without a home) */
  const char *regime;   /* "warm", "partly cold", "cold", or why warm ("warm: no cold term", ...) */
} roof_analysis;

/* The accumulate extra per call that site @p s pays on path @p p: the path's roof_add_point.extra times the
 * share of the site's calls made in RMAOP_ADD mode (plans only; 0 when the probe did not measure it). */
double roof_add_extra(const roof_site *s, const roof_path *p);
/* The fit's points are timed around the whole epoch (on device memory up to the stream's completion), solver
 * sites as the time inside rmaop's calls with the ranks met in a barrier (and the stream drained), untimed,
 * before each begin and end. The accumulate point's INSERT epoch (8 B, one message) is timed the solver's way,
 * so path @p p's plan sites are shifted by this, insert - T(1, 8 B), per epoch: negative where the untimed
 * drains hold GPU work or the untimed barrier the message's flight (host twosided: 0.15 against the fit's
 * 0.72 us on the 2-vCPU VM). 0 where the probe did not measure the point (older profiles). */
double roof_synced_offset(const roof_path *p);
/* The share of path @p p's overlap penalty (roof_cold.overlap) a plan site pays per call: its computation
 * overlapped inside begin..end per call (the begin..end span less the time inside rmaop's calls) over the
 * probe's pass, at most 1; 0 for reductions, sites without both times, and profiles without the point. */
double roof_overlap_share(const roof_site *s, const roof_path *p);
/* Places @p s on every path of @p prof. @p iterations scales calls to per-iteration (0: per solve).
 * @p bytes_per_iter and @p footprint: what one rank streams and the distinct bytes it touches per solver
 * iteration (0: unknown: warm); the site's reuse distance is min(footprint, bytes_per_iter / its calls per
 * iteration), and roof_path_cold_fraction of it gives the share of each path's cold penalty its predictions
 * on that path pay. */
int roof_analyze(const roof_site *s, const roof_profile *prof, int iterations, double bytes_per_iter, double footprint,
                 roof_analysis *a);
/* roof_analyze for a site @p gap_bytes from the run's previous communication call (roof_run_gap_bytes; 0:
 * unknown, as roof_analyze). A host reduction whose gap is below its reuse distance, on a path whose probe measured
 * the dot after an epoch, pays rho x the fraction at its reuse distance + (1 - rho) x the fraction at the gap
 * (rho: roof_after_epoch_share); every other site is analyzed as by roof_analyze. */
int roof_analyze_gap(const roof_site *s, const roof_profile *prof, int iterations, double bytes_per_iter,
                     double footprint, double gap_bytes, roof_analysis *a);
/* The share of path @p p's reduction penalty (after the full sweep) the dot still pays when an 8 B epoch of the same
 * path comes between the sweep and the dot: (after_epoch.cold - after_epoch.warm) / reduce.penalty, within 0..1;
 * -1 when the probe did not measure it (older profiles, device memory) or the reduction has no penalty. */
double roof_after_epoch_share(const roof_path *p);
void roof_analysis_free(roof_analysis *a);
const char *roof_class_name(roof_class c);
/* Class from the numbers alone (exposed for tests): s vs elbow, then the efficiency thresholds. */
roof_class roof_classify(double bytes_per_message, double elbow, double efficiency);

/* One solver run (a problem on one path) as the report sees it. */
typedef struct {
  char solver[64];              /* "deriv1d n=65536 CGLS" or the trace file's name */
  char path[ROOF_NAME_MAX];     /* the run path, "" for a trace file */
  int iterations;               /* 0 when unknown (trace files): totals are per solve */
  double time_total, time_comm; /* seconds per solve (max over ranks); 0 when unknown */
  double bytes_per_iter;        /* bytes one rank streams per iteration (roof_cgls_bytes); 0 when unknown */
  double footprint;             /* distinct bytes one rank touches per iteration (roof_cgls_footprint) */
  roof_site *sites;
  int nsites;
  roof_analysis *an; /* one per site */
} roof_run;

/* What the cold term does not price: the probe found the ranks sharing a cache (share_ratio >=
 * ROOF_SHARED_RATIO) and some site of run @p r reaches, with every rank's data between two of its calls together
 * (its reuse distance x the profile's ranks), past that cache (share_cache_bytes). There, on the 2-vCPU VM, the
 * solver's calls pay about their path's full cold penalty while the probe's curves show a tenth of it.
 * Returns that largest combined reuse distance in bytes, or 0 when none does (or nothing was measured). */
double roof_run_shared_overflow(const roof_run *r, const roof_profile *prof);
/* Bytes one rank touches between two consecutive communication calls of run @p r, any sites: bytes_per_iter over
 * all sites' calls per iteration, capped by the footprint (the gap roof_analyze_gap takes; 0 when the iterations
 * or the bytes are unknown). */
double roof_run_gap_bytes(const roof_run *r);

/* Predicted communication seconds per iteration (or per solve) of a run on profile path @p j: cold-aware
 * (each site pays its cold_fraction of the path's penalty per call); _warm without it. */
double roof_run_predicted(const roof_run *r, int j);
double roof_run_predicted_warm(const roof_run *r, int j);
/* Sites of the run that pay some cold penalty (cold_fraction > 0). */
int roof_run_cold_sites(const roof_run *r);
/* Measured communication seconds per iteration (or per solve) summed over the trace sites: each site's median
 * call (@p mean = 0; the mean where the trace has no median) or its mean call (@p mean = 1). */
double roof_run_measured(const roof_run *r, int mean);
/* Index of the profile path with the least predicted time (-1 when no path). */
int roof_run_best(const roof_run *r, const roof_profile *prof);
/* The same over every path, poor fits included (the verdict names it when it differs). */
int roof_run_best_any(const roof_run *r, const roof_profile *prof);

/* ---------------------------------------------------------------------------------------------------- */
/* Reports and plots                                                                                     */
/* ---------------------------------------------------------------------------------------------------- */

void roof_report_profile_table(FILE *f, const roof_profile *p);
/* The cold-cache term of the profile (sweep, LLC, the curve), or that it has none. */
void roof_report_cache(FILE *f, const roof_profile *p);
void roof_report_table(FILE *f, const roof_run *runs, int nruns, const roof_profile *prof);
/* One line: which path would serve the solver best and by how much (into @p buf, or printed). */
void roof_verdict(const roof_run *r, const roof_profile *prof, char *buf, size_t len);
void roof_report_verdict(FILE *f, const roof_run *r, const roof_profile *prof);
int roof_report_json(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                     size_t errlen);
int roof_report_csv(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                    size_t errlen);
/* The message roofline: ceilings, fitted roofs, latency diagonals (n = 1, 8, 64) and the sites. */
int roof_svg_roofline(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                      size_t errlen);
/* Probe data against the fit: one panel per path, time per epoch against bytes per message. */
int roof_svg_probe(const char *file, const roof_profile *prof, char *err, size_t errlen);

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

/* Small helpers shared by the files. */
double roof_median(const double *v, int n);
/* The point of @p reps repetitions timed on each of @p nranks ranks (rank r's repetition i at t[r * stride + i]):
 * with @p per_rank each rank's median repetition, then the slowest rank's: how rmaop-bench and `run` read a
 * solver's trace site (trace.c's per-call median, MPI_MAX over ranks); else each repetition's slowest rank, then
 * the median repetition (a wall-time span: OSU's way). 0 without repetitions, -1 when out of memory. */
double roof_rank_point(const double *t, int nranks, size_t stride, int reps, int per_rank);
int roof_cmp_double(const void *a, const void *b); /* qsort: ascending doubles */
void roof_set_err(char *err, size_t errlen, const char *fmt, ...);
/* "8 B", "64 KiB", "1 MiB" */
void roof_format_bytes(double b, char *buf, size_t len);

#endif
