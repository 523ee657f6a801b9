/* rmaop-roofline: a site placed on every profiled path (classification, predictions, cold regime) and
 * a solver run's totals over its sites (classify.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_ANALYSIS_H
#define RMAOP_ROOFLINE_ROOF_ANALYSIS_H

#include "roof_profile.h"
#include "roof_site.h"

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

#endif
