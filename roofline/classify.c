/* Places trace sites on the message roofline and classifies them (Ding et al., SC'23 workshops; the rules
 * are ARCHITECTURE.md's "Roofline and bench"):
 *   - s bytes per message and n messages per synchronization; elbow s* = L*beta/n;
 *   - latency-bound when s < s*, bandwidth-bound when s >= s*;
 *   - efficiency E = achieved / fitted roof of the path the site ran on; E < 0.5 overrides the side with
 *     overhead-bound (named: synchronization or overlapped work), E < 0.1 with pathological. For a
 *     reduction the "fitted roof" is bytes / T_r(bytes), T_r the path's reduction points (roof_path_reduce_time)
 *     when the probe made them.
 * E is taken against the fitted roof (L + n*max(o, s/beta)), not the pure min(beta, n*s/L): the fitted roof
 * already charges the measured per-message cost, so a site running at its path's message rate is not
 * called overhead-bound for it. Both roofs are reported. */
#include "roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROOF_E_OVERHEAD 0.5
#define ROOF_E_PATHOLOGICAL 0.1

const char *roof_class_name(roof_class c) {
  switch (c) {
  case ROOF_LATENCY:
    return "latency-bound";
  case ROOF_BANDWIDTH:
    return "bandwidth-bound";
  case ROOF_OVERHEAD:
    return "overhead-bound";
  case ROOF_PATHOLOGICAL:
    return "pathological";
  case ROOF_LOCAL:
    return "local";
  default:
    return "unclassified";
  }
}

roof_class roof_classify(double bytes_per_message, double elbow, double efficiency) {
  if (efficiency < ROOF_E_PATHOLOGICAL)
    return ROOF_PATHOLOGICAL;
  if (efficiency < ROOF_E_OVERHEAD)
    return ROOF_OVERHEAD;
  return bytes_per_message < elbow ? ROOF_LATENCY : ROOF_BANDWIDTH;
}

/* ---- the cold-cache term ------------------------------------------------------------------------------ */

/* A curve's points: t[i] is the cold median after writing bytes[i] per rank (ascending; the last is the full
 * sweep), warm the same operation warm. */
typedef struct {
  const double *bytes, *t;
  int n;
  double warm;
} curve;

/* The curve as fractions of its full penalty, nondecreasing: g[i] is the smallest fraction at or above
 * sweep i (so a spike at a small sweep is noise, a dip at a large one counts). Returns the point count, or 0
 * when the curve shows no cache effect above the noise. */
static int curve_fractions(const curve *c, double *g) {
  const int n = c->n;
  if (n < 1 || n > ROOF_MAX_CURVE || !(c->warm > 0))
    return 0;
  const double full = c->t[n - 1] - c->warm;
  if (!(full >= ROOF_COLD_MIN_REL * c->warm))
    return 0;
  g[n - 1] = 1;
  for (int i = n - 2; i >= 0; --i)
    g[i] = fmin(g[i + 1], fmax(0, (c->t[i] - c->warm) / full));
  return n;
}

/* The fraction at reuse distance d > 0 (log-linear between sweeps, 1 from the full sweep on, the first
 * point's below it), or -1 when the curve is not usable. */
static double curve_fraction(const curve *c, double d) {
  double g[ROOF_MAX_CURVE];
  const int n = curve_fractions(c, g);
  if (n == 0)
    return -1;
  if (d >= c->bytes[n - 1])
    return 1;
  if (d <= c->bytes[0])
    return g[0];
  int i = 1;
  while (c->bytes[i] < d)
    ++i;
  const double w = log(d / c->bytes[i - 1]) / log(c->bytes[i] / c->bytes[i - 1]);
  return g[i - 1] + w * (g[i] - g[i - 1]);
}

double roof_cold_fraction(const roof_cache *c, double d) {
  if (!c->has || !(d > 0))
    return 0;
  const curve k = {c->curve_bytes, c->curve_t, c->ncurve, c->curve_warm};
  const double f = curve_fraction(&k, d);
  if (f < 0) /* no usable curve: the LLC as a step */
    return d > (c->llc_bytes > 0 ? c->llc_bytes : c->sweep_bytes / 4) ? 1 : 0;
  return f;
}

/* A path's reduction curve (n points below the full sweep, whose point ends it) at d, or -1 when not usable. */
static double reduce_curve_fraction(const roof_cold *q, const double *bytes, const double *t, int n, double d) {
  if (!q->has_reduce || n < 1 || n >= ROOF_MAX_CURVE || !(bytes[n - 1] < q->sweep_bytes))
    return -1;
  double b[ROOF_MAX_CURVE], tt[ROOF_MAX_CURVE];
  memcpy(b, bytes, (size_t)n * sizeof *b);
  memcpy(tt, t, (size_t)n * sizeof *tt);
  b[n] = q->sweep_bytes; /* the full sweep's point ends the curve */
  tt[n] = q->reduce.cold;
  const curve k = {b, tt, n + 1, q->reduce.warm};
  return curve_fraction(&k, d);
}

double roof_path_cold_fraction(const roof_cache *c, const roof_path *p, const char *kind, double d) {
  if (!c->has || !(d > 0))
    return 0;
  const roof_cold *q = &p->cold;
  const double f =
      strcmp(kind, "reduce") == 0 ? reduce_curve_fraction(q, q->rcurve_bytes, q->rcurve_t, q->nrcurve, d) : -1;
  return f >= 0 ? f : roof_cold_fraction(c, d);
}

double roof_path_same_fraction(const roof_cache *c, const roof_path *p, double d) {
  if (!c->has || !(d > 0))
    return 0;
  const roof_cold *q = &p->cold;
  const double f = reduce_curve_fraction(q, q->scurve_bytes, q->scurve_t, q->nscurve, d);
  return f >= 0 ? f : roof_path_cold_fraction(c, p, "reduce", d);
}

double roof_cgls_bytes(double model_local, double data_local, double elem, double op_bytes) {
  /* per iteration: mdot(q,c) m+d; x += a c 2m; s -= a q 2d; r = A^H s m+d+op; mdot(r,s) m+d; c = r + b c
   * 2m; q = A c m+d+op */
  return elem * (8 * model_local + 6 * data_local) + 2 * op_bytes;
}

double roof_cgls_footprint(double model_local, double data_local, double elem, double op_bytes) {
  return elem * (3 * model_local + 2 * data_local) + op_bytes;
}

double roof_cold_penalty(const roof_path *p, const char *kind) {
  if (strcmp(kind, "reduce") == 0 && p->cold.has_reduce && strcmp(p->memory, "device") == 0 && p->has_rfit)
    return p->cold.reduce.cold - roof_path_reduce_time(p, ROOF_DOT_BYTES);
  if (strcmp(kind, "reduce") == 0 && p->cold.has_reduce)
    return p->cold.reduce.penalty;
  return p->cold.has_epoch ? p->cold.epoch.penalty : 0;
}

static int device_profile(const roof_profile *prof) {
  return strcmp(prof->memory, "device") == 0;
}

/* Whether some path of a device profile measured its reduction after a device dot (probe.c). */
static int has_after_dot(const roof_profile *prof) {
  for (int j = 0; j < prof->npaths; ++j)
    if (prof->paths[j].cold.has_reduce)
      return 1;
  return 0;
}

double roof_after_epoch_share(const roof_path *p) {
  const roof_cold *c = &p->cold;
  if (!c->has_after_epoch || !c->has_reduce || !(c->reduce.penalty > 0))
    return -1;
  return fmin(1, fmax(0, (c->after_epoch.cold - c->after_epoch.warm) / c->reduce.penalty));
}

/* The share of path @p p's cold penalty a site pays per call (@p p NULL: the profile's epoch curve alone).
 * Host memory: the cache term at the site's reuse distance, a reduction on the path's own same-bytes curve where
 * the probe recorded one (roof_path_same_fraction: between two of its calls a solver touches again what it
 * touched in its previous iteration), else its fresh-bytes curve (roof_path_cold_fraction). A reduction closer to
 * the run's previous communication call (@p gap bytes, below its reuse distance) than to its own last call pays,
 * where the probe measured the dot after an epoch, rho of the fraction at its reuse distance and 1 - rho of the
 * fresh-bytes fraction at the gap: the epoch warmed the rest of what it shares with the reduction
 * (roof_after_epoch_share), and the bytes since the epoch are part of the way through the solver's data. Device memory
 * has no cache term (the vectors live on the GPU), but every reduction of a solver on a device context follows the
 * device dot that made its partials (a kernel, the copy to the host, a stream synchronization), and the probe's "cold"
 * reduction point there is timed right after one: reductions pay all of it, plans none. */
static double site_cold_fraction(const roof_profile *prof, const roof_site *s, const roof_path *p, double reuse,
                                 double gap) {
  if (s->messages <= 0)
    return 0;
  if (device_profile(prof))
    return strcmp(s->kind, "reduce") == 0 ? 1 : 0;
  if (!p)
    return roof_cold_fraction(&prof->cache, reuse);
  const int reduce = strcmp(s->kind, "reduce") == 0;
  const double f = reduce ? roof_path_same_fraction(&prof->cache, p, reuse)
                          : roof_path_cold_fraction(&prof->cache, p, s->kind, reuse),
               rho = reduce && gap > 0 && gap < reuse ? roof_after_epoch_share(p) : -1;
  return rho < 0 ? f : rho * f + (1 - rho) * roof_path_cold_fraction(&prof->cache, p, s->kind, gap);
}

/* Why a site is warm or cold, for the table and the report. */
static const char *regime_of(const roof_analysis *a, const roof_profile *prof) {
  if (device_profile(prof) && has_after_dot(prof))
    return strcmp(a->site->kind, "reduce") == 0 ? "after device dot" : "warm (device)";
  if (!prof->cache.has)
    return "warm: no cold term";
  if (a->reuse_bytes <= 0)
    return "warm: bytes unknown";
  return a->cold_fraction >= 1 ? "cold" : a->cold_fraction > 0 ? "partly cold" : "warm";
}

static double site_bytes(const roof_site *s) {
  return s->messages * s->bytes_per_message;
}

double roof_add_extra(const roof_site *s, const roof_path *p) {
  if (!p->add.has || strcmp(s->kind, "plan") != 0 || !(s->calls > 0) || !(s->calls_add > 0))
    return 0;
  return p->add.extra * fmin(1, s->calls_add / s->calls);
}

double roof_synced_offset(const roof_path *p) {
  if (!p->add.has || !(p->add.insert > 0) || !(roof_time(&p->fit, 1, 8) > 0))
    return 0;
  return p->add.insert - roof_time(&p->fit, 1, 8);
}

double roof_overlap_share(const roof_site *s, const roof_path *p) {
  const roof_cold *c = &p->cold;
  if (!c->has_overlap || !(c->overlap_seconds > 0) || strcmp(s->kind, "plan") != 0 || !(s->calls > 0) ||
      !(s->time_inside > 0) || !(s->time_total > s->time_inside))
    return 0;
  return fmin(1, (s->time_total - s->time_inside) / s->calls / c->overlap_seconds);
}

/* Model time of the site on one path. Reductions use the path's reduction points when the probe made them
 * (roof_path_reduce_time: its medians, the fit beyond them): an allreduce is not a neighbour epoch, and the
 * plan model would miss its algorithm. A plan pays @p extra on
 * top of the fit (plan_extra: the accumulate extra of its RMAOP_ADD calls and a device profile's timing
 * offset; 0 for reductions). */
static double predict(const roof_site *s, const roof_path *p, double extra) {
  if (s->messages <= 0)
    return 0;
  if (strcmp(s->kind, "reduce") == 0 && p->has_rfit)
    return roof_path_reduce_time(p, s->bytes_per_message);
  return roof_time(&p->fit, s->messages, s->bytes_per_message) + extra;
}

/* What a plan site pays on path @p p besides the fit: @p add (roof_add_extra) plus the timing offset
 * (roof_synced_offset) per epoch, which never takes the fit below itself scaled by the two timings' ratio at
 * 8 B (insert / T(1, 8 B)): an 8 B epoch is predicted as the measured one, larger epochs keep the fit's slope. */
static double plan_extra(const roof_site *s, const roof_path *p, double add) {
  const double off = roof_synced_offset(p);
  if (off == 0 || strcmp(s->kind, "plan") != 0 || s->messages <= 0)
    return add;
  const double t = roof_time(&p->fit, s->messages, s->bytes_per_message),
               ratio = fmin(1, p->add.insert / roof_time(&p->fit, 1, 8));
  return add + fmax(ratio * t, t + off) - t;
}

/* The measured time is spent inside rmaop's calls (or, for old trace files, the begin..end span, which
 * also holds computation overlapped in between): far above the roof it is mostly waiting for a late peer. */
static const char *cause_of(const roof_site *s, roof_class c) {
  int plan = strcmp(s->kind, "reduce") != 0, span = s->time_inside <= 0;
  if (c == ROOF_PATHOLOGICAL)
    return plan ? (span ? "overlapped computation inside begin..end, or a late neighbour (E < 0.1)"
                        : "waiting for a late neighbour (load imbalance), or progress/contention (E < 0.1)")
                : "waiting for the slowest rank (load imbalance), or progress/contention (E < 0.1)";
  if (c != ROOF_OVERHEAD)
    return "";
  return plan ? (span ? "overlapped computation inside begin..end, or synchronization with a late neighbour"
                      : "synchronization with a late neighbour")
              : "synchronization: waiting for the slowest rank to arrive";
}

static const char *hint_of(const roof_site *s, const roof_path *home, roof_class c) {
  double o = roof_o_at(&home->fit, s->messages, s->bytes_per_message);
  switch (c) {
  case ROOF_LATENCY:
    if (strcmp(s->kind, "reduce") == 0)
      return "fuse reductions (fewer, larger), or a lower-latency path";
    if (s->messages > 1 && s->messages * o > home->fit.alpha)
      return "coalesce small messages: the per-message cost n*o exceeds the synchronization cost";
    return "batch more messages per synchronization, or a lower-latency path (n*L dominates)";
  case ROOF_BANDWIDTH:
    return "near the path's beta: only a faster path or fewer bytes help";
  case ROOF_OVERHEAD:
  case ROOF_PATHOLOGICAL:
    if (strcmp(s->kind, "reduce") != 0)
      return "compare the solver's in-call comm time with the span; if the gap is overlap, the path is not the limit";
    return c == ROOF_OVERHEAD ? "check load balance before the reduction; compare with the model"
                              : "check MPI progress, oversubscription (ranks > cores), contention";
  default:
    return "";
  }
}

static int find_path(const roof_profile *prof, const char *name) {
  for (int j = 0; j < prof->npaths; ++j)
    if (strcmp(prof->paths[j].name, name) == 0)
      return j;
  return -1;
}

int roof_analyze(const roof_site *s, const roof_profile *prof, int iterations, double bytes_per_iter, double footprint,
                 roof_analysis *a) {
  return roof_analyze_gap(s, prof, iterations, bytes_per_iter, footprint, 0, a);
}

double roof_run_gap_bytes(const roof_run *r) {
  double calls = 0;
  for (int i = 0; i < r->nsites; ++i)
    calls += r->sites[i].calls;
  if (r->iterations <= 0 || !(r->bytes_per_iter > 0) || !(calls > 0))
    return 0;
  const double gap = r->bytes_per_iter / (calls / r->iterations);
  return r->footprint > 0 ? fmin(r->footprint, gap) : gap;
}

double roof_run_shared_overflow(const roof_run *r, const roof_profile *prof) {
  const roof_cache *c = &prof->cache;
  if (!c->has || !(c->share_ratio >= ROOF_SHARED_RATIO) || !(c->share_cache_bytes > 0) || !r->an)
    return 0;
  double most = 0;
  for (int i = 0; i < r->nsites; ++i)
    most = fmax(most, r->an[i].reuse_bytes * prof->ranks);
  return most > c->share_cache_bytes ? most : 0;
}

int roof_analyze_gap(const roof_site *s, const roof_profile *prof, int iterations, double bytes_per_iter,
                     double footprint, double gap_bytes, roof_analysis *a) {
  memset(a, 0, sizeof *a);
  a->site = s;
  a->on = calloc(prof->npaths ? (size_t)prof->npaths : 1, sizeof *a->on);
  if (!a->on)
    return -1;
  /* Measured: the median call's time inside rmaop's calls when the trace has it (the typical call, as the
   * profile's medians are; overlapped computation between begin and end excluded), else the mean time
   * inside, else the begin..end span. */
  const double t = s->time_inside > 0 ? s->time_inside : s->time_total;
  a->per_call_mean = s->calls > 0 ? t / s->calls : 0;
  a->per_call = s->inside_median > 0 ? s->inside_median : a->per_call_mean;
  a->achieved = a->per_call > 0 ? site_bytes(s) / a->per_call : 0;
  a->calls_per_iter = iterations > 0 ? s->calls / iterations : s->calls;
  /* The site's communication state was last used one call of the site ago: in between, the solver streamed
   * bytes_per_iter / calls_per_iter bytes, of which at most its footprint are distinct (the reuse distance
   * that decides what is still cached). */
  if (iterations > 0 && bytes_per_iter > 0 && a->calls_per_iter > 0)
    a->reuse_bytes =
        footprint > 0 ? fmin(footprint, bytes_per_iter / a->calls_per_iter) : bytes_per_iter / a->calls_per_iter;
  a->gap_bytes = a->reuse_bytes > 0 && gap_bytes > 0 ? fmin(gap_bytes, a->reuse_bytes) : 0;
  for (int j = 0; j < prof->npaths; ++j) {
    const roof_path *p = &prof->paths[j];
    const double n = s->messages > 0 ? s->messages : 1, extra = plan_extra(s, p, roof_add_extra(s, p)),
                 warm = predict(s, p, extra), pen = roof_cold_penalty(p, s->kind),
                 f = site_cold_fraction(prof, s, p, a->reuse_bytes, a->gap_bytes),
                 ov = s->messages > 0 ? roof_overlap_share(s, p) * p->cold.overlap.penalty : 0;
    a->on[j] = (roof_onpath){.path = p,
                             .pure_bw = roof_pure_bw(&p->fit, n, s->bytes_per_message),
                             .fitted_bw = roof_fitted_bw(&p->fit, n, s->bytes_per_message),
                             .elbow = roof_elbow(&p->fit, n),
                             .predicted = warm + f * pen + ov,
                             .predicted_warm = warm,
                             .penalty = pen,
                             .cold_fraction = f};
    /* A reduction's attainable rate is what the path's reduction points allow, not one neighbour epoch's. */
    if (strcmp(s->kind, "reduce") == 0 && p->has_rfit && a->on[j].predicted > 0)
      a->on[j].fitted_bw = site_bytes(s) / a->on[j].predicted;
    else if ((f > 0 || extra != 0 || ov > 0) && a->on[j].fitted_bw > 0) {
      /* a cold epoch pays its penalty, an accumulating one its extra, an overlapped one its overlap penalty,
       * every one its timing offset, on top of t_sync (the offset never takes the time below the fit's scaled by
       * insert / T(1, 8 B); plan_extra) */
      const double per_call = site_bytes(s) / a->on[j].fitted_bw + f * pen + extra + ov;
      if (per_call > 0)
        a->on[j].fitted_bw = site_bytes(s) / per_call;
    }
  }
  a->home = find_path(prof, s->path);
  a->cold_fraction = a->home >= 0 ? a->on[a->home].cold_fraction : site_cold_fraction(prof, s, NULL, a->reuse_bytes, 0);
  a->regime = regime_of(a, prof);
  a->cause = a->hint = "";
  if (s->messages <= 0 || s->bytes_per_message <= 0 || a->per_call <= 0) {
    a->cls = ROOF_LOCAL; /* nothing left the rank (1 rank, or a rank without neighbours) */
    return 0;
  }
  if (a->home < 0) {
    a->cls = ROOF_UNKNOWN;
    return 0;
  }
  a->efficiency = a->achieved / a->on[a->home].fitted_bw;
  a->cls = roof_classify(s->bytes_per_message, a->on[a->home].elbow, a->efficiency);
  a->cause = cause_of(s, a->cls);
  a->hint = hint_of(s, &prof->paths[a->home], a->cls);
  return 0;
}

void roof_analysis_free(roof_analysis *a) {
  free(a->on);
  a->on = NULL;
}

static double predicted_sum(const roof_run *r, int j, int warm) {
  double t = 0;
  for (int i = 0; i < r->nsites; ++i)
    t += r->an[i].calls_per_iter * (warm ? r->an[i].on[j].predicted_warm : r->an[i].on[j].predicted);
  return t;
}

double roof_run_predicted(const roof_run *r, int j) {
  return predicted_sum(r, j, 0);
}

double roof_run_predicted_warm(const roof_run *r, int j) {
  return predicted_sum(r, j, 1);
}

int roof_run_cold_sites(const roof_run *r) {
  int k = 0;
  for (int i = 0; i < r->nsites; ++i)
    k += r->an[i].cold_fraction > 0;
  return k;
}

double roof_run_measured(const roof_run *r, int mean) {
  double t = 0;
  for (int i = 0; i < r->nsites; ++i)
    t += r->an[i].calls_per_iter * (mean ? r->an[i].per_call_mean : r->an[i].per_call);
  return t;
}

static int best_of(const roof_run *r, const roof_profile *prof, int good_only) {
  int best = -1;
  for (int j = 0; j < prof->npaths; ++j) {
    if (good_only && prof->paths[j].fit.poor)
      continue;
    if (best < 0 || roof_run_predicted(r, j) < roof_run_predicted(r, best))
      best = j;
  }
  return best;
}

/* A poor fit's prediction is not trusted: the best path is chosen among good fits, falling back to all
 * paths only when every fit is poor (and the verdict then says so). */
int roof_run_best(const roof_run *r, const roof_profile *prof) {
  int best = best_of(r, prof, 1);
  return best >= 0 ? best : best_of(r, prof, 0);
}

int roof_run_best_any(const roof_run *r, const roof_profile *prof) {
  return best_of(r, prof, 0);
}
