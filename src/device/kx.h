/* The state every kernel-put exchange shares (a derivative's ghost rows, rmaop__khalo in dev_ops.h; the N-D halo,
 * rmaop__hxch in halo_dev.h): the window, whose memory is two halves used by the parity of the exchange number s,
 * and the counters the kernels keep in device memory. The protocol (device functions in kx.cuh):
 * - exchange s's put kernel stores into a peer's half s & 1 once that peer's signal is >= s (the peer began
 *   exchange s - 1, stream-ordered after its reading of exchange s - 2, the last user of the half), and its last
 *   block signals every neighbour s + 1;
 * - the end kernel waits for s + 1 from the ranks that put here, reads its own half, and its last block sets
 *   seq to s + 1.
 * Every exchange signals every neighbour either way, so one signal word per pair carries both the data's arrival
 * and the credit. Plain C: the host fills it (rmaop__kx_build, src/ops/op.c) and copies it to device memory. */
#ifndef RMAOP_KX_H
#define RMAOP_KX_H

#include "rmaop/rmaop.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
  rmaop_win_device w;
  uint64_t seq;                   /* exchanges ended (device) */
  unsigned arrived[2];            /* blocks of the running end [0] and put [1] kernel that finished (device) */
  size_t half;                    /* bytes of a half (the same on every rank) */
  int nnb;                        /* the ranks this one exchanges with, either way: signalled every exchange */
  int nb[RMAOP_DEVICE_MAX_PEERS];
} rmaop__kx;

#ifdef __cplusplus
extern "C" {
#endif

/* b rounded up to the 128-byte boundary the areas of a half start on. */
static inline size_t rmaop__kx_round(size_t b) {
  return (b + 127) & ~(size_t)127;
}

/* Whether an operator's exchange goes by kernel puts (RMAOP_HALO; the same on every rank): a device context over ipc
 * that is not traced (a trace times each exchange from the host: plans), at 2+ ranks; under auto only where every
 * rank has its own GPU (two processes without MPS time-slice one GPU, and a kernel spinning for its peer waits for
 * the other's time slice). */
int rmaop__kx_wanted(rmaop_ctx ctx);

/* Collective, every rank with the same agreed status st: the window (two halves of x->half bytes) and x->w, then
 * the descriptor desc (bytes, x inside it) copied to new device memory *dev. The ranks agree on the outcome; on
 * failure the caller frees with rmaop__kx_free. */
rmaop_status rmaop__kx_build(rmaop_ctx ctx, rmaop_status st, rmaop__kx *x, const void *desc, size_t bytes,
                             rmaop_win *win, void **dev, const char *what);
void rmaop__kx_free(rmaop_win *win, void **dev);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_KX_H */
