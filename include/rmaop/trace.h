/**
 * @file trace.h
 * @brief Tracing: what each plan, reduction and epoch site cost, recorded per rank and written as JSON.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_TRACE_H
#define RMAOP_RMAOP_TRACE_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Trace                                                                                            */
/* ------------------------------------------------------------------------------------------------ */

/** Aggregated record of one trace site (one plan, reduction or epoch label on this rank). */
typedef struct {
  const char *label;
  const char *kind;      /**< "plan", "reduce", "epoch" */
  const char *backend;
  const char *transport; /**< "shm", "mpi", "ipc", "mixed", "-" (two-sided), ... */
  const char *sync;      /**< "fence", "pscw", "lock", "-" */
  uint64_t calls;
  uint64_t calls_add;      /**< of the calls, plans in RMAOP_ADD mode (the receiver accumulates: adjoints) */
  uint64_t messages;       /**< messages per call (to other ranks) */
  double bytes_per_message;
  double time_total, time_min, time_max; /**< seconds, begin to end (includes work overlapped in between) */
  double time_inside;                    /**< seconds inside rmaop's calls (begin + end, or begin + wait), summed */
  double time_inside_median; /**< seconds, median over the calls of the time inside (log histogram: within 2.2 %);
                                  the typical call, where a mean also carries the rare preempted one */
} rmaop_trace_site;

/** What rmaop_trace_enable() records. */
enum {
  RMAOP_TRACE_OFF = 0,
  RMAOP_TRACE_ON = 1,     /**< record every call as the application makes it (waits for late peers included) */
  /** Measurement mode: before each plan begin and end and each reduction begin and wait, the context's
   *  stream is drained and the ranks meet in a barrier (neither is timed), and a device context's stream is
   *  drained again before a plan's end is timed (the kernels the plan enqueued are its time; a reduction's
   *  result is on the host when its wait returns). time_inside is then the messaging time from synchronized starts,
   *  without the waits for late peers (also those whose overlapped work between begin and end ran long) or
   *  for earlier kernels. Every rank must make the traced calls in the same order (rmaop's operators and
   *  solvers do). It slows the application down: for measuring only. */
  RMAOP_TRACE_SYNCED = 2
};
/** Turns recording on (RMAOP_TRACE_ON or RMAOP_TRACE_SYNCED) or off (RMAOP_TRACE=1|sync sets it at
 *  creation). Not collective, but RMAOP_TRACE_SYNCED must be set on every rank. */
rmaop_status rmaop_trace_enable(rmaop_ctx ctx, int on);
/** Forgets all sites. Not collective. */
rmaop_status rmaop_trace_reset(rmaop_ctx ctx);
rmaop_status rmaop_trace_count(rmaop_ctx ctx, int *nsites);
/** Site @p i (0 <= i < count); strings owned by the context. */
rmaop_status rmaop_trace_get(rmaop_ctx ctx, int i, rmaop_trace_site *site);
/** Writes this rank's sites as JSON to @p path. "%r" in the path becomes the rank; without it only rank 0
 *  writes. Not collective. */
rmaop_status rmaop_trace_write_json(rmaop_ctx ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_TRACE_H */
