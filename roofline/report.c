/* Reports of the roofline analysis: terminal tables, one verdict line per solver run, JSON and CSV. Nothing
 * claims more than the data supports: the path table marks a poor fit's row "(fit: poor)", the verdict names the
 * poor fits once and never ranks them, and JSON and CSV say so in a field. */
#include "roofline.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define US 1e6
#define GB 1e9

static const char *const plan_time_note =
    "sites are measured by the time spent inside rmaop's calls (plan begin + end, reduction begin + wait) in "
    "solves traced with synchronized starts (RMAOP_TRACE_SYNCED: stream drained and ranks met in a barrier, "
    "untimed, before each begin and each end), so overlapped computation and waits for late peers are excluded, "
    "and us/call is the median call (the mean counts preempted calls too): that is what the model predicts. "
    "\"in-solver comm\" is the untraced solver's own time inside rmaop's calls, waits "
    "included; the difference is imbalance and arrival skew, not messaging. Trace files without time_inside "
    "fall back to the begin..end span";

void roof_format_bytes(double b, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  if (!isfinite(b)) {
    snprintf(buf, len, "inf");
    return;
  }
  while (fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  snprintf(buf, len, b == floor(b) ? "%.0f %s" : "%.3g %s", b, unit[u]);
}

static double gbs(double bytes_per_s) {
  return bytes_per_s / GB;
}

void roof_report_profile_table(FILE *f, const roof_profile *p) {
  fprintf(f, "profile: %d ranks, %s memory%s; T(n,m) = alpha + n*o + n*m/beta; L = T(1, 8 B)\n", p->ranks, p->memory,
          p->quick ? ", quick probe" : "");
  fprintf(f, "%-16s %8s %8s %9s %8s %10s %7s %7s  %-9s %s\n", "path", "alpha us", "o us", "beta GB/s", "L us", "s* n=1",
          "rel med", "rel max", "fit", "pieces above a split (/msg: on m, /epoch: on n*m)");
  for (int i = 0; i < p->npaths; ++i) {
    const roof_path *q = &p->paths[i];
    char elbow[32], pieces[256] = "", edge[32];
    for (int k = 1; k < q->fit.npieces; ++k) {
      roof_format_bytes(q->fit.piece[k - 1].upto, edge, sizeof edge);
      size_t n = strlen(pieces);
      snprintf(pieces + n, sizeof pieces - n, "%s>%s%s: o %.4f us, beta %.3g GB/s", k > 1 ? "; " : "", edge,
               q->fit.split_bytes ? "/epoch" : "/msg", q->fit.piece[k].o * US, gbs(q->fit.piece[k].beta));
    }
    roof_format_bytes(roof_elbow(&q->fit, 1), elbow, sizeof elbow);
    fprintf(f, "%-16s %8.3f %8.4f %9.3f %8.3f %10s %7.3f %7.3f  %-9s %s\n", q->name, q->fit.alpha * US,
            q->fit.piece[0].o * US, gbs(q->fit.piece[0].beta), roof_latency(&q->fit) * US, elbow, q->fit.rel_median,
            q->fit.rel_max, q->fit.poor ? "fit: poor" : "good", pieces);
    if (q->has_rfit)
      fprintf(f, "%-16s reduce: T = %.3f us + bytes / %.3g GB/s (rel med %.3f, max %.3f)%s\n", "", q->rfit.alpha * US,
              gbs(q->rfit.beta), q->rfit.rel_median, q->rfit.rel_max, q->rfit.poor ? "  fit: poor" : "");
    if (q->cold.has_epoch)
      fprintf(f, "%-16s cold: 8 B epoch %.2f -> %.2f us (+%.2f)", "", q->cold.epoch.warm * US, q->cold.epoch.cold * US,
              q->cold.epoch.penalty * US);
    if (q->cold.has_epoch && q->cold.has_reduce)
      fprintf(f, ", 1-element dot %.2f -> %.2f us (+%.2f)", q->cold.reduce.warm * US, q->cold.reduce.cold * US,
              q->cold.reduce.penalty * US);
    if (q->cold.has_epoch && q->cold.has_overlap) /* roof_overlap_share */
      fprintf(f, ", 8 B epoch with %.0f MiB between begin and end %.2f -> %.2f us (+%.2f)",
              q->cold.overlap_bytes / 1048576, q->cold.overlap.warm * US, q->cold.overlap.cold * US,
              q->cold.overlap.penalty * US);
    if (q->cold.has_epoch)
      fputc('\n', f);
    if (!q->cold.has_epoch && q->cold.has_reduce) /* device memory: the reduction after a device dot */
      fprintf(f, "%-16s reduction after a device dot: %.2f us (back to back %.2f, +%.2f)\n", "",
              q->cold.reduce.cold * US, q->cold.reduce.warm * US, q->cold.reduce.penalty * US);
    if (q->add.has)
      fprintf(f, "%-16s accumulate: 8 B epoch insert %.2f us, add %.2f us (+%.2f per RMAOP_ADD call)\n", "",
              q->add.insert * US, q->add.add * US, q->add.extra * US);
    const double off = roof_synced_offset(q);
    if (off != 0)
      fprintf(f,
              "%-16s timed as solver sites (ranks met and streams drained, untimed): 8 B epoch %.2f us against "
              "the fit's %.2f: plans %+.2f us per epoch\n",
              "", q->add.insert * US, roof_time(&q->fit, 1, 8) * US, off * US);
  }
  roof_report_cache(f, p);
}

void roof_report_cache(FILE *f, const roof_profile *p) {
  char llc[32], sweep[32], b[32];
  const roof_cache *c = &p->cache;
  if (!c->has && strcmp(p->memory, "host") != 0) {
    fprintf(f, "cold-cache term: none on device memory; each reduction site pays its path's reduction after a "
               "device dot where the probe measured it (older probes did not)\n");
    return;
  }
  if (!c->has) {
    fprintf(f, "cold-cache term: none in this profile (older probe, or --cold-reps 0): every site is predicted "
               "warm\n");
    return;
  }
  roof_format_bytes(c->llc_bytes, llc, sizeof llc);
  roof_format_bytes(c->sweep_bytes, sweep, sizeof sweep);
  fprintf(f,
          "cold-cache term: cold points after writing %s per rank (LLC %s, %s); a site pays the share of its "
          "path's penalty that %s's 8 B epoch shows at the site's reuse distance:\n  warm %.2f us; after",
          sweep, c->llc_bytes > 0 ? llc : "unknown", c->llc_source, c->curve_path, c->curve_warm * US);
  for (int i = 0; i < c->ncurve; ++i) {
    roof_format_bytes(c->curve_bytes[i], b, sizeof b);
    fprintf(f, " %s %.2f (%.0f%%)%s", b, c->curve_t[i] * US, 100 * roof_cold_fraction(c, c->curve_bytes[i]),
            i + 1 < c->ncurve ? "," : " us\n");
  }
  if (c->share_bytes > 0) {
    roof_format_bytes(c->share_bytes, b, sizeof b);
    char lc[32];
    roof_format_bytes(c->share_cache_bytes, lc, sizeof lc);
    fprintf(f,
            "  ranks and caches: %s (%.2g x a %s LLC) read by rank 0 took %.2fx as long with every rank reading "
            "its own as alone: %s\n",
            b, ROOF_SHARE_OF_LLC, lc, c->share_ratio,
            c->share_ratio >= ROOF_SHARED_RATIO ? "they share a core or a cache (sites whose data of all ranks "
                                                  "together overflows it can be colder than predicted)"
                                                : "a core and a cache each");
  }
  int any = 0;
  for (int j = 0; j < p->npaths; ++j)
    any |= p->paths[j].cold.has_reduce && p->paths[j].cold.nrcurve > 0;
  if (!any)
    return;
  fprintf(f, "  reduction sites read their own path's reduction curve (1-element dot, share of its full penalty):\n");
  for (int j = 0; j < p->npaths; ++j) {
    const roof_path *q = &p->paths[j];
    if (!q->cold.has_reduce || q->cold.nrcurve == 0)
      continue;
    fprintf(f, "  %-16s warm %.2f us; after", q->name, q->cold.reduce.warm * US);
    for (int i = 0; i < q->cold.nrcurve; ++i) {
      roof_format_bytes(q->cold.rcurve_bytes[i], b, sizeof b);
      fprintf(f, " %s %.2f (%.0f%%),", b, q->cold.rcurve_t[i] * US,
              100 * roof_path_cold_fraction(c, q, "reduce", q->cold.rcurve_bytes[i]));
    }
    roof_format_bytes(q->cold.sweep_bytes, b, sizeof b);
    fprintf(f, " %s %.2f us", b, q->cold.reduce.cold * US);
    const double rho = roof_after_epoch_share(q);
    if (rho >= 0) /* roof_analyze_gap: the rest is paid at the gap from the previous communication call */
      fprintf(f, "; with an 8 B epoch before it %.0f%% of the penalty left", 100 * rho);
    fputc('\n', f);
  }
}

static int append(size_t len, int n, int add) {
  return (size_t)n < len ? n + add : n;
}

/* The class that carries most of the run's measured messaging time (ROOF_UNKNOWN when nothing was timed),
 * whether every timed site is of it (@p all), and the messages per iteration and their size range over all sites. */
static roof_class run_class(const roof_run *r, int *all, double *msgs, double *smin, double *smax) {
  double t[ROOF_UNKNOWN + 1] = {0};
  for (int i = 0; i < r->nsites; ++i)
    t[r->an[i].cls] += r->an[i].calls_per_iter * r->an[i].per_call;
  roof_class c = ROOF_UNKNOWN;
  for (int k = 0; k < ROOF_UNKNOWN; ++k)
    if (t[k] > 0 && (c == ROOF_UNKNOWN || t[k] > t[c]))
      c = (roof_class)k;
  *all = 1, *msgs = 0, *smin = INFINITY, *smax = 0;
  for (int i = 0; i < r->nsites; ++i) {
    const roof_analysis *a = &r->an[i];
    if (a->cls != c && a->calls_per_iter * a->per_call > 0)
      *all = 0;
    *msgs += a->calls_per_iter * a->site->messages;
    *smin = fmin(*smin, a->site->bytes_per_message);
    *smax = fmax(*smax, a->site->bytes_per_message);
  }
  if (!(*smin <= *smax))
    *smin = *smax = 0;
  return c;
}

/* A share as a percentage a person reads: two significant digits below 10 %, whole percents above. */
static const char *pct(char *buf, double share) {
  snprintf(buf, 16, share < 0.1 ? "%.2g" : "%.0f", 100 * share);
  return buf;
}

/* The poor fits of @p prof as ", a, b" after @p lead (nothing when every fit is good). */
static int poor_fits(char *buf, size_t len, const roof_profile *prof, const char *lead) {
  int n = 0, k = 0;
  for (int j = 0; j < prof->npaths; ++j)
    if (prof->paths[j].fit.poor && (size_t)n < len)
      n = append(len, n, snprintf(buf + n, len - (size_t)n, "%s%s", k++ ? ", " : lead, prof->paths[j].name));
  return n;
}

/* A verdict a person reads, per solver run: what bounds its messaging (class, messages and their size per
 * iteration) and how much of the iteration it takes; then the path the model predicts fastest among the paths
 * with a good fit and what it would save, or that the path run is already the fastest. Poor fits are named once,
 * at the end, and not ranked unless every fit is poor. The path run is compared by its own model when that fit is
 * good (model against model), else by its measurement. */
void roof_verdict(const roof_run *r, const roof_profile *prof, char *buf, size_t len) {
  const char *per = r->iterations > 0 ? "per iteration" : "per solve";
  const int best = roof_run_best(r, prof);
  int home = -1, n;
  for (int j = 0; j < prof->npaths; ++j)
    if (strcmp(prof->paths[j].name, r->path) == 0)
      home = j;
  int all;
  double msgs, smin, smax;
  const roof_class cls = run_class(r, &all, &msgs, &smin, &smax);
  char b1[32], b2[32], size[80], p1[16];
  roof_format_bytes(smin, b1, sizeof b1);
  roof_format_bytes(smax, b2, sizeof b2);
  snprintf(size, sizeof size, smin == smax ? "of %s" : "of %s to %s", b1, b2);
  /* Sites come from synchronized solves: messaging alone, what the model predicts and a faster path shrinks. */
  const double meas = roof_run_measured(r, 0), iter = r->iterations > 0 ? r->time_total / r->iterations : 0;
  n = snprintf(buf, len, "%s%s%s: %s%s communication, %.3g message%s %s %s, taking %.2f us %s", r->solver,
               *r->path ? " on " : "", r->path, all || cls == ROOF_UNKNOWN ? "" : "mostly ",
               cls == ROOF_UNKNOWN ? "unclassified" : roof_class_name(cls), msgs, msgs == 1 ? "" : "s", size, per,
               meas * US, per);
  if (iter > 0 && (size_t)n < len)
    n = append(
        len, n,
        snprintf(buf + n, len - (size_t)n, " (%s %% of the %.2f us iteration)", pct(p1, meas / iter), iter * US));
  const int home_good = home >= 0 && !prof->paths[home].fit.poor;
  if (home_good && (size_t)n < len)
    n = append(len, n,
               snprintf(buf + n, len - (size_t)n, "; its model %.2f us (%+.0f %%)", roof_run_predicted(r, home) * US,
                        meas > 0 ? 100 * (roof_run_predicted(r, home) / meas - 1) : 0.0));
  if ((size_t)n < len)
    n = append(len, n, snprintf(buf + n, len - (size_t)n, "."));
  const double over = roof_run_shared_overflow(r, prof);
  if (over > 0 && (size_t)n < len) {
    roof_format_bytes(over, b1, sizeof b1);
    roof_format_bytes(prof->cache.share_cache_bytes, b2, sizeof b2);
    n = append(len, n,
               snprintf(buf + n, len - (size_t)n,
                        " The ranks share a core or a cache: %.1fx slower reading together, and touch %s together "
                        "between calls, more than the %s LLC: the calls can be colder than the model.",
                        prof->cache.share_ratio, b1, b2));
  }
  if (best < 0 || (size_t)n >= len)
    return;
  if (prof->paths[best].fit.poor) {
    snprintf(buf + n, len - (size_t)n,
             " No profiled path has a good fit (its points scatter too far from latency + size / bandwidth), so "
             "none is ranked: probe again on a quieter machine.");
    return;
  }
  const double tb = roof_run_predicted(r, best), here = home_good ? roof_run_predicted(r, home) : meas;
  if (best == home || (home_good && !(here > tb)))
    n = append(len, n, snprintf(buf + n, len - (size_t)n, " The path run is already the fastest predicted."));
  else if (!(here > tb))
    n = append(
        len, n,
        snprintf(buf + n, len - (size_t)n, " No path with a good fit is predicted faster than this run measured."));
  else {
    n = append(len, n,
               snprintf(buf + n, len - (size_t)n, " Fastest predicted: %s at %.2f us %s, saving %.2f us",
                        prof->paths[best].name, tb * US, per, (here - tb) * US));
    if (iter > 0 && (size_t)n < len)
      n = append(len, n, snprintf(buf + n, len - (size_t)n, " (%s %% of the iteration)", pct(p1, (here - tb) / iter)));
    if ((size_t)n < len)
      n = append(len, n, snprintf(buf + n, len - (size_t)n, "."));
  }
  if ((size_t)n < len) {
    const int k = poor_fits(buf + n, len - (size_t)n, prof, " Poor fits, not ranked: ");
    if (k > 0 && (size_t)(n = append(len, n, k)) < len)
      snprintf(buf + n, len - (size_t)n, ".");
  }
}

void roof_report_verdict(FILE *f, const roof_run *r, const roof_profile *prof) {
  char line[1024];
  roof_verdict(r, prof, line, sizeof line);
  fprintf(f, "verdict: %s\n", line);
}

static void table_sites(FILE *f, const roof_run *r, const roof_profile *prof) {
  fprintf(f, "%-18s %-6s %4s %10s %8s %10s %10s %10s %10s %6s %-20s %s\n", "site", "kind", "n", "bytes/msg",
          r->iterations > 0 ? "calls/it" : "calls", "us/call", "GB/s", "roof GB/s", "s*", "E", "cache (reuse)",
          "class");
  for (int i = 0; i < r->nsites; ++i) {
    const roof_analysis *a = &r->an[i];
    const roof_site *s = a->site;
    char bytes[32], elbow[32] = "-", roof[32] = "-", reuse[32], regime[48];
    roof_format_bytes(s->bytes_per_message, bytes, sizeof bytes);
    if (a->home >= 0) {
      roof_format_bytes(a->on[a->home].elbow, elbow, sizeof elbow);
      snprintf(roof, sizeof roof, "%.4g", gbs(a->on[a->home].fitted_bw));
    }
    roof_format_bytes(a->reuse_bytes, reuse, sizeof reuse);
    if (a->reuse_bytes > 0 && a->cold_fraction > 0 && a->cold_fraction < 1)
      snprintf(regime, sizeof regime, "cold %.0f%% (%s)", 100 * a->cold_fraction, reuse);
    else if (a->reuse_bytes > 0)
      snprintf(regime, sizeof regime, "%s (%s)", a->regime ? a->regime : "warm", reuse);
    else
      snprintf(regime, sizeof regime, "%s", a->regime ? a->regime : "warm");
    fprintf(f, "%-18.18s %-6s %4.0f %10s %8.2f %10.2f %10.4g %10s %10s %6.2f %-20s %s\n", s->label, s->kind,
            s->messages, bytes, a->calls_per_iter, a->per_call * US, gbs(a->achieved), roof, elbow, a->efficiency,
            regime, roof_class_name(a->cls));
    if (*a->cause)
      fprintf(f, "%-18s   bound by %s\n", "", a->cause);
    if (*a->hint)
      fprintf(f, "%-18s   hint: %s\n", "", a->hint);
  }
}

/* Predicted time of every site on every profiled path, and the per-iteration sum. */
static void table_paths(FILE *f, const roof_run *r, const roof_profile *prof) {
  fprintf(f, "%-18s %12s %12s", "predicted on", r->iterations > 0 ? "us/iter" : "us/solve", "warm model");
  for (int i = 0; i < r->nsites && i < 6; ++i)
    fprintf(f, " %14.14s", r->sites[i].label);
  fprintf(f, "  (us/call; cold sites include the path's penalty)\n");
  for (int j = 0; j < prof->npaths; ++j) {
    fprintf(f, "%-18s %12.2f %12.2f", prof->paths[j].name, roof_run_predicted(r, j) * US,
            roof_run_predicted_warm(r, j) * US);
    for (int i = 0; i < r->nsites && i < 6; ++i)
      fprintf(f, " %14.2f", r->an[i].on[j].predicted * US);
    fprintf(f, "%s%s\n", strcmp(prof->paths[j].name, r->path) == 0 ? "  <- ran here" : "",
            prof->paths[j].fit.poor ? "  (fit: poor)" : "");
  }
}

void roof_report_table(FILE *f, const roof_run *runs, int nruns, const roof_profile *prof) {
  for (int k = 0; k < nruns; ++k) {
    const roof_run *r = &runs[k];
    fprintf(f, "\n== %s%s%s", r->solver, *r->path ? " on " : "", r->path);
    if (r->iterations > 0 && r->time_total > 0)
      fprintf(f,
              ": %d iterations, %.2f us/iter; in-solver comm %.2f us/iter, synchronized trace sites %.2f us/iter "
              "(median calls; mean %.2f)",
              r->iterations, r->time_total / r->iterations * US, r->time_comm / r->iterations * US,
              roof_run_measured(r, 0) * US, roof_run_measured(r, 1) * US);
    fprintf(f, "\n");
    if (r->bytes_per_iter > 0) {
      char b[32], e[32];
      roof_format_bytes(r->bytes_per_iter, b, sizeof b);
      roof_format_bytes(r->footprint, e, sizeof e);
      fprintf(f, "streams %s (%s distinct) per rank and iteration; %d of %d sites pay a cold penalty%s\n", b, e,
              roof_run_cold_sites(r), r->nsites, prof->cache.has ? "" : " (the profile has no cold term)");
    }
    table_sites(f, r, prof);
    table_paths(f, r, prof);
  }
  fprintf(f, "\nnote: %s.\n\n", plan_time_note);
  for (int k = 0; k < nruns; ++k)
    roof_report_verdict(f, &runs[k], prof);
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static void json_kv_num(FILE *f, const char *key, double x, int comma) {
  fprintf(f, "\"%s\": ", key);
  json_write_number(f, x);
  if (comma)
    fputs(", ", f);
}

static void json_kv_str(FILE *f, const char *key, const char *s, int comma) {
  fprintf(f, "\"%s\": ", key);
  json_write_string(f, s);
  if (comma)
    fputs(", ", f);
}

static void json_site(FILE *f, const roof_analysis *a, const roof_profile *prof) {
  const roof_site *s = a->site;
  fputs("    {", f);
  json_kv_str(f, "label", s->label, 1);
  json_kv_str(f, "kind", s->kind, 1);
  json_kv_str(f, "path", s->path, 1);
  json_kv_num(f, "calls", s->calls, 1);
  json_kv_num(f, "calls_per_iter", a->calls_per_iter, 1);
  json_kv_num(f, "messages", s->messages, 1);
  json_kv_num(f, "bytes_per_message", s->bytes_per_message, 1);
  json_kv_num(f, "time_per_call", a->per_call, 1);
  json_kv_num(f, "achieved_Bps", a->achieved, 1);
  json_kv_str(f, "class", roof_class_name(a->cls), 1);
  json_kv_num(f, "efficiency", a->efficiency, 1);
  json_kv_str(f, "fit", a->home >= 0 && prof->paths[a->home].fit.poor ? "poor" : a->home >= 0 ? "good" : "none", 1);
  json_kv_str(f, "cause", a->cause, 1);
  json_kv_str(f, "hint", a->hint, 1);
  json_kv_str(f, "regime", a->regime ? a->regime : "warm", 1);
  json_kv_num(f, "reuse_bytes", a->reuse_bytes, 1);
  json_kv_num(f, "gap_bytes", a->gap_bytes, 1);
  json_kv_num(f, "cold_fraction", a->cold_fraction, 1);
  json_kv_num(f, "calls_add", s->calls_add, 1);
  fputs("\"on_paths\": [", f);
  for (int j = 0; j < prof->npaths; ++j) {
    const roof_onpath *o = &a->on[j];
    fputs(j ? ",\n      {" : "\n      {", f);
    json_kv_str(f, "path", o->path->name, 1);
    json_kv_str(f, "fit", o->path->fit.poor ? "poor" : "good", 1);
    json_kv_num(f, "pure_roof_Bps", o->pure_bw, 1);
    json_kv_num(f, "fitted_roof_Bps", o->fitted_bw, 1);
    json_kv_num(f, "elbow_bytes", o->elbow, 1);
    json_kv_num(f, "predicted_time", o->predicted, 1);
    json_kv_num(f, "predicted_time_warm", o->predicted_warm, 1);
    json_kv_num(f, "cold_fraction", o->cold_fraction, 1);
    json_kv_num(f, "cold_penalty", o->penalty, 0);
    fputs("}", f);
  }
  fputs("]}", f);
}

static void json_run(FILE *f, const roof_run *r, const roof_profile *prof) {
  char verdict[1024];
  roof_verdict(r, prof, verdict, sizeof verdict);
  int best = roof_run_best(r, prof);
  fputs("  {", f);
  json_kv_str(f, "solver", r->solver, 1);
  json_kv_str(f, "path", r->path, 1);
  fprintf(f, "\"iterations\": %d, ", r->iterations);
  json_kv_num(f, "time_total", r->time_total, 1);
  json_kv_num(f, "time_comm", r->time_comm, 1);
  json_kv_num(f, "measured_comm_per_iter", roof_run_measured(r, 0), 1);      /* median call inside x calls, per site */
  json_kv_num(f, "measured_comm_mean_per_iter", roof_run_measured(r, 1), 1); /* every call counted */
  json_kv_num(f, "incall_comm_per_iter", r->iterations > 0 ? r->time_comm / r->iterations : 0, 1);
  json_kv_num(f, "bytes_per_iter", r->bytes_per_iter, 1); /* streamed per rank: with the footprint, picks */
  json_kv_num(f, "footprint", r->footprint, 1);           /* each site's reuse distance and cold fraction */
  fprintf(f, "\"cold_sites\": %d, ", roof_run_cold_sites(r));
  json_kv_num(f, "shared_cache_overflow", roof_run_shared_overflow(r, prof), 1); /* roof_run_shared_overflow */
  fputs("\"predicted_comm_per_iter\": {", f);
  for (int j = 0; j < prof->npaths; ++j)
    json_kv_num(f, prof->paths[j].name, roof_run_predicted(r, j), j + 1 < prof->npaths);
  fputs("}, \"predicted_comm_per_iter_warm\": {", f);
  for (int j = 0; j < prof->npaths; ++j)
    json_kv_num(f, prof->paths[j].name, roof_run_predicted_warm(r, j), j + 1 < prof->npaths);
  fputs("}, ", f);
  json_kv_str(f, "best_path", best >= 0 ? prof->paths[best].name : "", 1);
  fprintf(f, "\"best_fit_poor\": %s, ", best >= 0 && prof->paths[best].fit.poor ? "true" : "false");
  json_kv_str(f, "verdict", verdict, 1);
  fputs("\"sites\": [\n", f);
  for (int i = 0; i < r->nsites; ++i) {
    json_site(f, &r->an[i], prof);
    fputs(i + 1 < r->nsites ? ",\n" : "\n", f);
  }
  fputs("  ]}", f);
}

static void json_profile_summary(FILE *f, const roof_profile *prof) {
  fprintf(f, " \"profile\": {\"ranks\": %d, ", prof->ranks);
  json_kv_str(f, "memory", prof->memory, 1);
  json_kv_str(f, "created", prof->created, 1);
  fputs("\"paths\": [", f);
  for (int j = 0; j < prof->npaths; ++j) {
    const roof_fit *fit = &prof->paths[j].fit;
    fputs(j ? ",\n   {" : "\n   {", f);
    json_kv_str(f, "name", prof->paths[j].name, 1);
    json_kv_num(f, "alpha", fit->alpha, 1);
    json_kv_str(f, "split_on", fit->split_bytes ? "bytes" : "m", 1);
    fputs("\"pieces\": [", f);
    for (int i = 0; i < fit->npieces; ++i) {
      fputs(i ? ", {" : "{", f);
      json_kv_num(f, "upto", fit->piece[i].upto, 1);
      json_kv_num(f, "o", fit->piece[i].o, 1);
      json_kv_num(f, "beta", fit->piece[i].beta, 0);
      fputs("}", f);
    }
    fputs("], ", f);
    json_kv_num(f, "L", roof_latency(fit), 1);
    json_kv_num(f, "ceiling", roof_ceiling(fit), 1);
    json_kv_num(f, "cold_penalty_epoch", roof_cold_penalty(&prof->paths[j], "plan"), 1);
    json_kv_num(f, "cold_penalty_reduce", roof_cold_penalty(&prof->paths[j], "reduce"), 1);
    json_kv_num(f, "accumulate_extra", prof->paths[j].add.has ? prof->paths[j].add.extra : 0, 1);
    json_kv_num(f, "synced_offset_epoch", roof_synced_offset(&prof->paths[j]), 1);
    json_kv_str(f, "fit", fit->poor ? "poor" : "good", 0);
    fputs("}", f);
  }
  fputs("],\n  \"cold\": ", f);
  if (prof->cache.has) {
    fputs("{", f);
    json_kv_str(f, "curve_path", prof->cache.curve_path, 1);
    json_kv_num(f, "llc_bytes", prof->cache.llc_bytes, 1);
    json_kv_num(f, "sweep_bytes", prof->cache.sweep_bytes, 1);
    json_kv_num(f, "share_ratio", prof->cache.share_ratio, 1);
    fputs("\"curve_fraction\": [", f);
    for (int i = 0; i < prof->cache.ncurve; ++i) {
      fprintf(f, "%s{\"bytes\": %.0f, \"fraction\": ", i ? ", " : "", prof->cache.curve_bytes[i]);
      json_write_number(f, roof_cold_fraction(&prof->cache, prof->cache.curve_bytes[i]));
      fputs("}", f);
    }
    fputs("]}", f);
  } else {
    fputs("null", f); /* no cold term: every site predicted warm */
  }
  fputs("},\n", f);
}

int roof_report_json(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                     size_t errlen) {
  FILE *f = fopen(file, "w");
  if (!f)
    return roof_set_err(err, errlen, "cannot write \"%s\": %s", file, strerror(errno)), -1;
  fputs("{\"format\": \"rmaop-roofline-report\", \"version\": 1,\n", f);
  fputs(" \"reference\": \"Ding, Haseeb, Groves, Williams, Evaluating the Performance of One-Sided Communication on "
        "CPUs and GPUs, SC'23 workshops\",\n",
        f);
  fputs(" \"note\": ", f);
  json_write_string(f, plan_time_note);
  fputs(",\n", f);
  json_profile_summary(f, prof);
  fputs(" \"runs\": [\n", f);
  for (int k = 0; k < nruns; ++k) {
    json_run(f, &runs[k], prof);
    fputs(k + 1 < nruns ? ",\n" : "\n", f);
  }
  fputs(" ]}\n", f);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad)
    return roof_set_err(err, errlen, "writing \"%s\" failed", file), -1;
  return 0;
}

/* ---- CSV: one row per (run, site, profiled path) -------------------------------------------------- */

static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void csv_row(FILE *f, const roof_run *r, const roof_analysis *a, int j) {
  const roof_site *s = a->site;
  const roof_onpath *o = &a->on[j];
  csv_field(f, r->solver);
  fputc(',', f);
  csv_field(f, r->path);
  fputc(',', f);
  csv_field(f, s->label);
  fprintf(f, ",%s,%s,%.6g,%.0f,%.9g,%.9g,%.9g,%s,%.4f,%s,%s,%.9g,%.9g,%.9g,%.9g,", s->kind, s->path, a->calls_per_iter,
          s->messages, s->bytes_per_message, a->per_call, gbs(a->achieved), roof_class_name(a->cls), a->efficiency,
          o->path->name, o->path->fit.poor ? "poor" : "good", gbs(o->pure_bw), gbs(o->fitted_bw), o->elbow,
          o->predicted);
  csv_field(f, a->regime ? a->regime : "warm");
  fprintf(f, ",%.0f,%.4f,%.9g,%.9g\n", a->reuse_bytes, o->cold_fraction, o->predicted_warm, o->penalty);
}

int roof_report_csv(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                    size_t errlen) {
  FILE *f = fopen(file, "w");
  if (!f)
    return roof_set_err(err, errlen, "cannot write \"%s\": %s", file, strerror(errno)), -1;
  fputs("solver,run_path,label,kind,site_path,calls_per_iter,messages,bytes_per_message,time_per_call_s,"
        "achieved_GBps,class,efficiency,profile_path,fit,pure_roof_GBps,fitted_roof_GBps,elbow_bytes,predicted_time_s,"
        "regime,reuse_bytes,cold_fraction,predicted_time_warm_s,cold_penalty_s\n",
        f);
  for (int k = 0; k < nruns; ++k)
    for (int i = 0; i < runs[k].nsites; ++i)
      for (int j = 0; j < prof->npaths; ++j)
        csv_row(f, &runs[k], &runs[k].an[i], j);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad)
    return roof_set_err(err, errlen, "writing \"%s\" failed", file), -1;
  return 0;
}
