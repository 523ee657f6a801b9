/* rmaop-roofline: trace sites as the analysis needs them, read from rmaop_trace_write_json files
 * (tracefile.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_SITE_H
#define RMAOP_ROOFLINE_ROOF_SITE_H

#include <stddef.h>

#include "roof_common.h"

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

#endif
