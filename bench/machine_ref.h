/* The machine's speed right now, for rmaop-bench (before each --trace-sync repeat): two fixed pieces of CPU work
 * timed on every rank at once, the slowest rank's seconds. [0] a chain of dependent multiply-adds (the core's
 * clock and its share of the core); [1] dependent loads chasing one random cycle through 8 MiB (the caches and
 * memory behind them). On 2 x H200 the messaging of every device path moved with [1] over the
 * repeats of one launch (rank correlation +0.48 to +0.74 over 300 repeats; the CUDA-aware paths 1.2-1.3x slower
 * where the chase ran 1.15-1.6x longer), not with [0]. What [1] reads depends on what ran before it (how much of
 * the 8 MiB is still cached): compare it only between calls made in the same way, as the bench's repeats are.
 * Timed in the probe instead, 5 times in a row at the end of each path, it read 0.47-3.8x the bench's: a
 * different context, not a different machine, so the probe does not time it. Collective over MPI_COMM_WORLD. */
#ifndef RMAOP_MACHINE_REF_H
#define RMAOP_MACHINE_REF_H

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

enum { MACHINE_REF_CHASE_N = 1 << 20, MACHINE_REF_CHASE_STEPS = 20000, MACHINE_REF_ALU_STEPS = 100000 };

typedef struct {
  size_t *chase; /* MACHINE_REF_CHASE_N slots, one cycle; NULL until the first call */
} machine_ref;

/* Fills out[0] (multiply-adds) and out[1] (pointer chase), seconds, the slowest rank's. Returns 0, or -1 when
 * the 8 MiB buffer cannot be allocated on some rank (then out[] is 0 and nothing is timed). */
static inline int machine_ref_time(machine_ref *m, double out[2]) {
  int ok = 1, all = 0;
  if (!m->chase) {
    m->chase = malloc(MACHINE_REF_CHASE_N * sizeof *m->chase);
    if (m->chase) {
      for (size_t i = 0; i < MACHINE_REF_CHASE_N; ++i) m->chase[i] = i;
      unsigned long long r = 88172645463325252ULL; /* Sattolo's shuffle: one cycle through every slot */
      for (size_t i = MACHINE_REF_CHASE_N - 1; i > 0; --i) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t j = (size_t)(r % i), t = m->chase[i];
        m->chase[i] = m->chase[j], m->chase[j] = t;
      }
    }
  }
  ok = m->chase != NULL;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  out[0] = out[1] = 0;
  if (!all) return -1;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  volatile double sink = 1.0;
  double x = sink;
  for (int i = 0; i < MACHINE_REF_ALU_STEPS; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
  double t1 = MPI_Wtime();
  size_t k = 0;
  for (int i = 0; i < MACHINE_REF_CHASE_STEPS; ++i) k = m->chase[k];
  double t2 = MPI_Wtime();
  volatile size_t sink_k = k;
  (void)sink_k;
  double local[2] = {t1 - t0, t2 - t1};
  MPI_Allreduce(local, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return 0;
}

static inline void machine_ref_free(machine_ref *m) {
  free(m->chase);
  m->chase = NULL;
}

#endif
