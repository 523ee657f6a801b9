/* The MPI side of rmaop-roofline: the probe and the run commands. Public rmaop API only. */
#ifndef RMAOP_ROOFLINE_TOOL_H
#define RMAOP_ROOFLINE_TOOL_H

#include "roofline.h"

#include <rmaop/rmaop.h>

#define ROOF_MAX_PATHS 32
#define ROOF_MAX_TRACES 16

typedef struct {
  const char *out;    /* profile JSON; the plot goes next to it (.svg) */
  const char *memory; /* "host" | "device" */
  const char *paths;  /* comma list, NULL: every path of the memory kind */
  int quick;
  double max_bytes; /* cap of n*m per rank and epoch (also bounded by physical memory) */
  double point_ms;  /* adaptive repetitions: aim at this much timed work per point */
  int min_reps, max_reps;
  int cold_reps; /* cold repetitions per cold point (host memory); 0: no cold points */
} roof_probe_options;

typedef struct {
  const char *problem; /* bench catalog name, or NULL with traces */
  int64_t n;
  int niter;  /* solver iterations; with traces, per-iteration scaling (0: per solve) */
  int repeat; /* traced solves per path (their numbers add up) */
  const char *backends, *syncs, *transports, *memory;
  const char *profile, *out;
  const char *traces[ROOF_MAX_TRACES]; /* each: a file or comma list of files (ranks) of one run */
  int ntraces;
  int save_traces; /* write PREFIX-<path>.trace.json with rmaop_trace_write_json */
} roof_run_options;

/* Collective over MPI_COMM_WORLD. Return the process exit status (identical on every rank). */
int roof_probe(const roof_probe_options *o);
/* A context on one path (rma: sync and transport apply), tracing off, a 60 s timeout. Collective. */
rmaop_status roof_path_ctx(const char *backend, const char *sync, const char *transport, const char *memory,
                           rmaop_ctx *ctx);
int roof_run_command(const roof_run_options *o);
/* Fits the raw medians of profile @p in again and writes profile @p out (+ its plot). */
int roof_refit(const char *in, const char *out);

/* The command line of rmaop-roofline (argv[1] is the command), in a program that has initialized MPI; collective over
 * MPI_COMM_WORLD. Returns the exit status: 0, 1 (failure) or 2 (usage). */
int rmaop_roofline_main(int argc, char **argv);

/* Rank 0 prints; everybody returns. */
void roof_msg(const char *fmt, ...);
/* Splits a comma list into at most @p max items inside @p buf (a copy). */
int roof_split(const char *list, char *buf, size_t len, char **items, int max);

#endif
