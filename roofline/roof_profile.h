/* rmaop-roofline: a profile: its paths (points, fits, cold and accumulate points), the machine's cache,
 * path names, and reading and writing profile files (profile.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_PROFILE_H
#define RMAOP_ROOFLINE_ROOF_PROFILE_H

#include <stddef.h>

#include "roof_common.h"
#include "roof_fit.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Paths and the fitted model                                                                            */
/* ---------------------------------------------------------------------------------------------------- */

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

#endif
