/* Trace recorder: per (label, kind) site, the call count, message shape and time. Recording is a
 * linear search over the few sites of a solver; it costs one predictable branch when tracing is off. */
#include "error.h"
#include "ctx.h"
#include "backend.h"

#include <math.h>
#include <stdio.h>

/* Per-call times inside rmaop's calls go into a log histogram per site, so the median survives the
 * preempted calls that dominate a mean on a shared machine, in bounded memory however long the trace
 * runs: 16 bins per octave (each 4.4 % wide) from 2^-27 s (7.5 ns) to 8 s. */
enum { HIST_PER_OCTAVE = 16, HIST_BINS = 30 * HIST_PER_OCTAVE, HIST_LOG2_T0 = -27 };

struct rmaop__trace_rec {
  int n, cap;
  rmaop_trace_site *sites; /* label strings owned here */
  uint32_t (*hist)[HIST_BINS]; /* hist[i]: site i's histogram of time_inside per call */
};

static int hist_bin(double seconds) {
  if (!(seconds > 0)) return 0;
  const double b = floor(HIST_PER_OCTAVE * (log2(seconds) - HIST_LOG2_T0));
  return b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : (int)b;
}

/* The median call's bin, at its geometric centre (within half a bin, 2.2 %, of the true median). */
static double hist_median(const uint32_t *h, uint64_t calls) {
  uint64_t seen = 0;
  int b = 0;
  while (b < HIST_BINS - 1 && (seen += h[b]) < (calls + 1) / 2) ++b;
  return exp2(HIST_LOG2_T0 + (b + 0.5) / HIST_PER_OCTAVE);
}

void rmaop__trace_record(rmaop_ctx ctx, const char *label, const char *kind, const char *transport, uint64_t messages,
                         double bytes_per_message, double seconds, double inside, int add) {
  if (!ctx->trace) {
    ctx->trace = calloc(1, sizeof *ctx->trace);
    if (!ctx->trace) return; /* tracing is best effort: never fails the operation it observes */
  }
  rmaop__trace_rec *t = ctx->trace;
  rmaop_trace_site *s = NULL;
  for (int i = 0; i < t->n && !s; ++i)
    if (t->sites[i].kind == kind && strcmp(t->sites[i].label, label) == 0) s = &t->sites[i];
  if (!s) {
    if (t->n == t->cap) {
      int cap = t->cap ? 2 * t->cap : 16;
      rmaop_trace_site *grown = realloc(t->sites, (size_t)cap * sizeof *grown);
      if (!grown) return;
      t->sites = grown;
      uint32_t(*hist)[HIST_BINS] = realloc(t->hist, (size_t)cap * sizeof *hist);
      if (!hist) return;
      t->hist = hist;
      t->cap = cap;
    }
    char *copy = strdup(label);
    if (!copy) return;
    memset(t->hist[t->n], 0, sizeof t->hist[t->n]);
    s = &t->sites[t->n++];
    *s = (rmaop_trace_site){.label = copy, .kind = kind, .backend = ctx->backend->name, .transport = transport,
                            .sync = ctx->backend->sync_name ? ctx->backend->sync_name(ctx) : "-",
                            .time_min = seconds, .time_max = seconds};
  }
  s->calls++;
  s->calls_add += add != 0;
  s->messages = messages;
  s->bytes_per_message = bytes_per_message;
  s->transport = transport;
  s->time_total += seconds;
  s->time_inside += inside;
  t->hist[s - t->sites][hist_bin(inside)]++;
  if (seconds < s->time_min) s->time_min = seconds;
  if (seconds > s->time_max) s->time_max = seconds;
}

void rmaop__trace_free(rmaop_ctx ctx) {
  if (!ctx->trace) return;
  for (int i = 0; i < ctx->trace->n; ++i) free((char *)ctx->trace->sites[i].label);
  free(ctx->trace->sites);
  free(ctx->trace->hist);
  free(ctx->trace);
  ctx->trace = NULL;
}

rmaop_status rmaop_trace_enable(rmaop_ctx ctx, int on) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_trace_enable: ctx is NULL");
  RMAOP_REQUIRE(ctx, on >= RMAOP_TRACE_OFF && on <= RMAOP_TRACE_SYNCED, RMAOP_ERR_ARG,
                "rmaop_trace_enable: on = %d is not RMAOP_TRACE_OFF, RMAOP_TRACE_ON or RMAOP_TRACE_SYNCED", on);
  ctx->trace_on = on;
  return RMAOP_OK;
}

/* RMAOP_TRACE_SYNCED: what a probe does before each epoch (drain the stream, meet in a barrier), so a site's
 * time is messaging from a synchronized start. Untimed; best effort like all tracing (a failed barrier only
 * makes the measurement less clean, the call itself reports its own errors). */
void rmaop__trace_sync_start(rmaop_ctx ctx) {
  if (ctx->trace_on != RMAOP_TRACE_SYNCED) return;
  (void)rmaop_ctx_synchronize(ctx);
  (void)MPI_Barrier(ctx->comm);
}

/* The end of a synchronized measurement: device work the call enqueued is part of its time. */
void rmaop__trace_sync_end(rmaop_ctx ctx) {
  if (ctx->trace_on == RMAOP_TRACE_SYNCED) (void)rmaop_ctx_synchronize(ctx);
}

rmaop_status rmaop_trace_reset(rmaop_ctx ctx) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_trace_reset: ctx is NULL");
  rmaop__trace_free(ctx);
  return RMAOP_OK;
}

rmaop_status rmaop_trace_count(rmaop_ctx ctx, int *nsites) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_trace_count: ctx is NULL");
  RMAOP_REQUIRE(ctx, nsites != NULL, RMAOP_ERR_ARG, "rmaop_trace_count: nsites (output) is NULL");
  *nsites = ctx->trace ? ctx->trace->n : 0;
  return RMAOP_OK;
}

rmaop_status rmaop_trace_get(rmaop_ctx ctx, int i, rmaop_trace_site *site) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_trace_get: ctx is NULL");
  int n = ctx->trace ? ctx->trace->n : 0;
  RMAOP_REQUIRE(ctx, i >= 0 && i < n, RMAOP_ERR_ARG, "rmaop_trace_get: site %d is outside [0, %d)", i, n);
  RMAOP_REQUIRE(ctx, site != NULL, RMAOP_ERR_ARG, "rmaop_trace_get: site (output) is NULL");
  *site = ctx->trace->sites[i];
  site->time_inside_median = hist_median(ctx->trace->hist[i], site->calls);
  return RMAOP_OK;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

rmaop_status rmaop_trace_write_json(rmaop_ctx ctx, const char *path) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_trace_write_json: ctx is NULL");
  RMAOP_REQUIRE(ctx, path != NULL && *path, RMAOP_ERR_ARG, "rmaop_trace_write_json: path is NULL or empty");
  const char *r = strstr(path, "%r");
  if (!r && ctx->rank != 0) return RMAOP_OK;
  char name[4096];
  if (r) snprintf(name, sizeof name, "%.*s%d%s", (int)(r - path), path, ctx->rank, r + 2);
  else snprintf(name, sizeof name, "%s", path);
  FILE *f = fopen(name, "w");
  RMAOP_REQUIRE(ctx, f != NULL, RMAOP_ERR_ARG, "rmaop_trace_write_json: cannot open \"%s\" for writing", name);
  fprintf(f, "{\"rank\": %d, \"size\": %d, \"backend\": ", ctx->rank, ctx->size);
  json_string(f, ctx->backend->name);
  fprintf(f, ", \"sites\": [");
  int n = ctx->trace ? ctx->trace->n : 0;
  for (int i = 0; i < n; ++i) {
    const rmaop_trace_site *s = &ctx->trace->sites[i];
    fprintf(f, "%s\n  {\"label\": ", i ? "," : "");
    json_string(f, s->label);
    fprintf(f, ", \"kind\": \"%s\", \"backend\": \"%s\", \"transport\": \"%s\", \"sync\": \"%s\", ", s->kind,
            s->backend, s->transport, s->sync);
    fprintf(f, "\"calls\": %llu, \"calls_add\": %llu, \"messages\": %llu, \"bytes_per_message\": %.17g, ",
            (unsigned long long)s->calls, (unsigned long long)s->calls_add, (unsigned long long)s->messages,
            s->bytes_per_message);
    fprintf(f, "\"time_total\": %.9g, \"time_min\": %.9g, \"time_max\": %.9g, \"time_inside\": %.9g, ", s->time_total,
            s->time_min, s->time_max, s->time_inside);
    fprintf(f, "\"time_inside_median\": %.9g}", hist_median(ctx->trace->hist[i], s->calls));
  }
  fprintf(f, "\n]}\n");
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  RMAOP_REQUIRE(ctx, !bad, RMAOP_ERR_ARG, "rmaop_trace_write_json: writing \"%s\" failed", name);
  return RMAOP_OK;
}
