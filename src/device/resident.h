/* GPU-resident CG and CGLS (RMAOP_SOLVER_SCALARS=resident): the arguments of the one cooperative kernel that runs
 * every iteration of a solve (src/device/resident.cu) and its host calls; the host side is
 * src/solvers/solver_resident.c. Plain C: definitions in resident.cu with CUDA, refusals in stubs.c without. */
#ifndef RMAOP_DEVICE_RESIDENT_H
#define RMAOP_DEVICE_RESIDENT_H

#include <stdint.h>

#include "device/dev_ops.h"
#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most ghost-row transfers one rank makes per halo (two sides towards every other rank). */
#define RMAOP__RES_MAX_SENDS (2 * RMAOP_DEVICE_MAX_PEERS)

/* One transfer of a halo: local rows [row, row + nrows) of this rank go to ghost rows [dst_row, dst_row + nrows)
 * of rank `peer` (its ghost area: gw rows before its first row, then gw rows after its last). */
typedef struct {
  int peer;
  int64_t row, nrows, dst_row;
} rmaop__res_send;

/* Ghost elements per side (gw rows of ninner) up to which the halos go as inline messages (resident.cu). */
#define RMAOP__RES_INLINE_GHOST 512
/* Ghost rows per side at most: the stencils' reach (RMAOP__NK taps, k = -2..2). */
#define RMAOP__RES_MAX_GW 2

/* 8-byte words of one rank's slot in a reduction: 4 doubles as an inline message (resident.cu, reduce_one). */
#define RMAOP__RES_SLOT_WORDS 8

/* Device words of one solve (device memory, zeroed at the start). */
typedef struct {
  uint64_t go;        /* the reducing block's release of a reduction's scalars: the step number */
  uint64_t bar;       /* the last block's release of a grid barrier: its arrival event + 1 */
  unsigned abort;     /* 1: a wait gave up; every block leaves at its next check */
  unsigned pad;
  uint64_t arrived;   /* blocks that finished a reduction's phase, counted over the solve (acq_rel) */
  double sc[8];       /* the scalars the reducing block made (RMAOP__RES_*) */
  int iterations, reason, stop, pad2;
  double kold;
} rmaop__res_ctl;
enum { RMAOP__RES_A, RMAOP__RES_B, RMAOP__RES_KOLD, RMAOP__RES_QQ, RMAOP__RES_CC, RMAOP__RES_STOP };

/* RMAOP_RESIDENT_PROFILE: block 0's global-timer stamps (ns) per iteration, at the iteration's start, after the
 * step size (CGLS) or after the first phase and its grid barrier (CG: c and t = D c), after block 0's
 * own share of the next phase (CGLS: x, s and r = A^H s; CG: A c = D^H t) and after that phase's reduction
 * reached it, likewise for the last phase (c and q; x and r). */
enum { RMAOP__RES_NSTAMP = 6 };

typedef struct {
  int cg;                  /* 1: CG on D^H D (+ diag); 0: CGLS on D */
  int niter;
  double tol, damp2;
  int64_t n;               /* local elements (rows * ninner) */
  rmaop__stencil_desc sd;  /* D: this rank's rows [sd.off, sd.off + sd.n), sd.ninner elements each */
  int gw;                  /* ghost rows on each side: max(hl, hr) */
  int inl;                 /* 1: the ghost areas hold inline messages (gw * ninner <= RMAOP__RES_INLINE_GHOST) */
  int lean;                /* 1: the interior coefficients reach one row (cint[0] = cint[4] = 0, gw = 1) */
  int ghost_owner[2 * RMAOP__RES_MAX_GW]; /* the rank that sends ghost row gr (-1: a row outside the operator) */
  int nb;                  /* virtual dot blocks (rmaop__dev_dots' launch shape for n elements) */
  /* vectors (device memory, n elements). CGLS: x, s[0] = y - A x0, q = A c, r = A^H s, c[0] = r; s[1], c[1]
   * scratch. CG: x, r = y - A x0, c[0] = r, q (A c), t (D c), c[1] scratch; dg: the diagonal or NULL. */
  double *x, *s[2], *q, *r, *c[2], *t;
  const double *dg;
  double *part;            /* [nb][4] dot partials */
  double *hist;            /* [niter + 1] */
  uint64_t *stamps;        /* [niter + 1][RMAOP__RES_NSTAMP] (zeroed) with RMAOP_RESIDENT_PROFILE=1, else NULL */
  rmaop__res_ctl *ctl;
  volatile int *progress;  /* host-mapped: the last iteration reduced (the host's liveness check) */
  /* window: reduction slots at 0 ([2][P][RMAOP__RES_SLOT_WORDS] words), ghost areas at ghost_off ([2 halos][2
   * parities][2 gw][ninner] doubles), in the inline layout their messages (2 words each) at inline_off */
  size_t ghost_off, inline_off;
  int nsend, nsend_peers, nrecv;
  rmaop__res_send send[RMAOP__RES_MAX_SENDS];
  int send_peers[RMAOP_DEVICE_MAX_PEERS]; /* distinct peers of send[] */
  int recv[RMAOP_DEVICE_MAX_PEERS];       /* ranks that send this one ghost rows */
  rmaop_win_device w;
} rmaop__res_args;

/* Blocks of 256 threads the solve kernel runs with on this context's GPU (all co-resident; fewer when `share`
 * ranks use the GPU), at most what nb virtual blocks need; 0 when the GPU cannot launch cooperative kernels. */
int rmaop__dev_resident_grid(rmaop_ctx ctx, int nb, int share);
/* Launches the kernel on the context's stream with `grid` blocks and waits for it: polling, bounded by the
 * context's timeout without progress (then RMAOP_ERR_TIMEOUT; the kernel's buffers must then be leaked, *stuck
 * = 1). A GPU-side wait that gave up is reported as RMAOP_ERR_TIMEOUT naming the peer. */
rmaop_status rmaop__dev_resident_run(rmaop_ctx ctx, const rmaop__res_args *a, int grid, const char *fn, int *stuck);

/* The device descriptor of a derivative along axis 0 (src/ops/op_stencil.c): RMAOP_OK, or RMAOP_ERR_UNSUPPORTED
 * (nothing recorded) for any other operator. Not collective. */
rmaop_status rmaop__op_stencil_desc(rmaop_op A, rmaop__stencil_desc *d);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEVICE_RESIDENT_H */
