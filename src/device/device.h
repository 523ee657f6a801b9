/* Device (GPU) memory: the core's CUDA layer. Declarations are plain C; the definitions are in
 * src/device/device.cu (nvcc) with CUDA, in src/device/stubs.c without it: there rmaop_ctx_create refuses
 * device memory (RMAOP_ERR_UNSUPPORTED), the calls behind RMAOP__ON_DEVICE never run, and the stubs refuse
 * (RMAOP_ERR_UNSUPPORTED) or, for the frees and queries host paths make, do nothing.
 *
 * Stream semantics: everything runs on the context's stream (ctx->stream) in issue order; the calls
 * return once the work is enqueued, except where a comment says "synchronizes" (the host needs the
 * result). Errors are recorded in the context (RMAOP_ERR_CUDA, naming the CUDA call and its string). */
#ifndef RMAOP_DEVICE_H
#define RMAOP_DEVICE_H

#include <stdint.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Picks the GPU (node rank modulo the visible devices), creates the context's stream and scratch
 * buffers. RMAOP_ERR_UNSUPPORTED with a message when no GPU is visible. */
rmaop_status rmaop__dev_init(rmaop_ctx ctx);
void rmaop__dev_fini(rmaop_ctx ctx);

/* Number of visible CUDA devices (0 when none or when the driver is missing). */
int rmaop__dev_count(void);

/* cudaMalloc + zero fill (synchronizes, so the memory is ready for any stream or peer). */
rmaop_status rmaop__dev_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out);
void rmaop__dev_free(void *p);
/* Page-locked host memory (for staging), zero filled. */
rmaop_status rmaop__dev_host_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out);
void rmaop__dev_host_free(void *p);

/* cudaMemcpyAsync(cudaMemcpyDefault) on the context's stream. */
rmaop_status rmaop__dev_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes);
/* Waits for everything enqueued on the context's stream (polling, bounded by the context's timeout:
 * RMAOP_ERR_TIMEOUT, `what` in the message, when a stream-side wait for a peer never ends), then
 * reports a GPU-side wait that gave up (rmaop__dev_check_waits). rmaop__dev_sync: the same, generic. */
rmaop_status rmaop__dev_drain(rmaop_ctx ctx, const char *what);
rmaop_status rmaop__dev_sync(rmaop_ctx ctx);
/* Releases of stream work that can block the context's stream for good: the ipc copy path's stream memop waits
 * and NCCL's kernels, which wait for a peer without a timeout. When a host wait for the stream gives up
 * (rmaop__dev_drain, a reduction's wait), rmaop__dev_release_run calls each release: it appends the ranks it was
 * waiting for to `who` (", "-separated) and lets the stream go on (ipc: advances the own flags; nccl: aborts the
 * communicator), so the stream drains and the failed context's objects can be freed. Registered per object (`arg`
 * identifies it for removal). */
typedef void (*rmaop__dev_release_fn)(void *arg, char *who, size_t n);
struct rmaop__dev_release {
  rmaop__dev_release_fn fn;
  void *arg;
};
rmaop_status rmaop__dev_release_add(rmaop_ctx ctx, rmaop__dev_release_fn fn, void *arg);
void rmaop__dev_release_remove(rmaop_ctx ctx, void *arg);
void rmaop__dev_release_run(rmaop_ctx ctx, char *who, size_t n);
/* Appends "rank r" to `who` unless it is there already (for the releases). */
void rmaop__dev_release_name(char *who, size_t n, int rank);
/* 1 while the context's stream is being captured into a CUDA graph (cudaStreamIsCapturing: active). The
 * drain above then refuses (RMAOP_ERR_UNSUPPORTED, `what` in the message) before any CUDA call that would
 * invalidate the capture: the caller can still end it. */
int rmaop__dev_capturing(rmaop_ctx ctx);

/* Where a kernel that waited in vain for a peer's flag (the ipc transport's epoch kernels) records it:
 * host-mapped, one per context (ctx->dev_wait_record; the kernels get its device address), zero while
 * nothing went wrong. A slot s < size is the "ready" flag of rank s, else the "done" flag of s - size. */
typedef struct {
  unsigned failed; /* written last: 1 once a wait gave up */
  unsigned slot, want, seen;
} rmaop__dev_wait_record;
/* A reduction of device doubles in one thread block, across the ranks of one node through IPC-mapped memory
 * (the rma backend's window on the ipc kernel path, rma/rma_backend.c, reduce_device): each rank stores its
 * `count` values into slot [half][me] of every rank's slot area, fences, stores flag[me] = this reduction's number
 * into every rank's flag area (release, system scope), waits until its own flag area holds the number from every
 * rank (cyclic compare, bounded by timeout_ns: a wait that gives up records itself in `error` and the block
 * leaves), then combines slots 0..P-1 in rank order into `out` (identical bits on every rank). Halves alternate
 * by number: a rank writes half h again only two reductions later, after every peer that read it has stored its
 * next flag. The number is not a launch parameter but *counter + 1 (device memory, stored back): a kernel replayed
 * from a CUDA graph uses the number of its replay. The backend fills everything but `in` and `out`. */
enum { RMAOP__DRED_MAXP = 16, RMAOP__DRED_MAXC = 16 };
typedef struct {
  const double *in;
  double *out;
  int count, op, me, P;
  uint32_t *counter;                 /* reductions done on this context's slot area, device memory */
  double *slots[RMAOP__DRED_MAXP];   /* rank r's slot area, mapped here: [2][P][RMAOP__DRED_MAXC] doubles */
  uint32_t *flags[RMAOP__DRED_MAXP]; /* rank r's flag area, mapped here: P uint32 */
  uint64_t timeout_ns;
  rmaop__dev_wait_record *error;
} rmaop__dred_args;
/* The reduction alone (one block of 32 threads), enqueued. */
rmaop_status rmaop__dev_dred(rmaop_ctx ctx, const rmaop__dred_args *a);
/* k dots of n local elements (rmaop__dev_dots_enqueue's kernel and order) and their reduction in the same
 * kernel: the block that finishes the local sums last runs the reduction on them (a->in is not read; a->count
 * is 2k; a->out gets the sums). One launch instead of two; the same bits. */
rmaop_status rmaop__dev_dots_reduce(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                                    int64_t n, const rmaop__dred_args *a);
/* RMAOP_ERR_TIMEOUT naming the peer and the epoch when a GPU-side wait of this context gave up (the
 * record stays: what ran on the stream after it used data that never came). Host read, no sync. */
rmaop_status rmaop__dev_check_waits(rmaop_ctx ctx);
/* 1 when p is device (or managed) memory. */
int rmaop__dev_is_device_ptr(const void *p);

/* ---- element kernels: n elements of dtype; scalars as (re, im) pairs ---- */

/* x[i] = a */
rmaop_status rmaop__dev_set(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n, double are, double aim);
/* y[i] = a x[i] + b y[i]  (b = 1: axpy; x = y and b = 0: scale by a) */
rmaop_status rmaop__dev_axpby(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n, double are, double aim,
                              double bre, double bim);
/* w[i] = x[i] y[i] */
rmaop_status rmaop__dev_pmult(rmaop_ctx ctx, rmaop_dtype dt, void *w, const void *x, const void *y, int64_t n);
/* dst[i] = src[i] (RMAOP_INSERT) or dst[i] += src[i] (RMAOP_ADD) */
rmaop_status rmaop__dev_apply(rmaop_ctx ctx, rmaop_dtype dt, void *dst, const void *src, int64_t n, rmaop_mode mode);
/* k local dot products sum conj(x_j[i]) y_j[i], accumulated in double in a fixed order (deterministic):
 * out[2j] real part, out[2j+1] imaginary part, in host memory. Synchronizes. k <= 8. */
rmaop_status rmaop__dev_dots(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                             int64_t n, double *out);
/* The same dots left in device memory: dev_out[2j], [2j+1] (enqueued; nothing synchronizes). dev_out may be
 * rmaop__dev_dots_result(ctx), the context's 16 device doubles for that. */
rmaop_status rmaop__dev_dots_enqueue(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                                     int64_t n, double *dev_out);
double *rmaop__dev_dots_result(rmaop_ctx ctx);
/* y = (sa * s[ia]) x + b y with s in device memory: b = s[ib] (ib >= 0) or bconst, a = sa when ia < 0; no
 * write at all when iskip >= 0 and s[iskip] != 0. Same arithmetic as rmaop__dev_axpby (real scalars). */
rmaop_status rmaop__dev_axpby_s(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n, const double *s,
                                int ia, double sa, int ib, double bconst, int iskip);
/* CGLS's and CG's scalars on the device: slots of st (enqueued, one thread). step 0: a and the breakdown flag
 * from d = (q.q, c.c) (CGLS); step 1: b, kold, s.s from d = (r.r, s.s); step 2 (start): kold and s.s only;
 * step 3: a and the breakdown flag from d = c.Ac (CG: a = kold / |c.Ac|). */
enum { RMAOP__CG_KOLD = 0, RMAOP__CG_A, RMAOP__CG_B, RMAOP__CG_BREAKDOWN, RMAOP__CG_SS, RMAOP__CG_NSLOTS };
rmaop_status rmaop__dev_cgls_scalars(rmaop_ctx ctx, const double *d, double damp2, double *st, int step);
/* Pipelined CG's scalars on the device (slots of st; enqueued, one thread): from d = (r.r, w.r) as complex pairs,
 * gamma, the stop (1 tol, 2 niter, 3 breakdown; sticky: a later call changes nothing), and unless it stops a and b
 * for the update, then the iteration count; `first` zeroes the slots before (the start). The host copies slots
 * GAMMA, STOP and K. */
enum {
  RMAOP__PCG_GAMMA = 0,
  RMAOP__PCG_STOP,
  RMAOP__PCG_K,
  RMAOP__PCG_ALPHA,
  RMAOP__PCG_BETA,
  RMAOP__PCG_GOLD,
  RMAOP__PCG_AOLD,
  RMAOP__PCG_NSLOTS
};
enum { RMAOP__PCG_STOP_TOL = 1, RMAOP__PCG_STOP_NITER, RMAOP__PCG_STOP_BREAKDOWN };
rmaop_status rmaop__dev_pipecg_scalars(rmaop_ctx ctx, const double *d, double *st, double tol, int niter, int first);
/* Its six vector updates in one pass (the arithmetic of rmaop__dev_axpby with st's a and b; nothing written after a
 * stop); vecs[RMAOP__PCG_*]: local data of n elements each. */
enum {
  RMAOP__PCG_X = 0,
  RMAOP__PCG_R,
  RMAOP__PCG_W,
  RMAOP__PCG_Q,
  RMAOP__PCG_Z,
  RMAOP__PCG_S,
  RMAOP__PCG_P,
  RMAOP__PCG_NVECS
};
rmaop_status rmaop__dev_pipecg_update(rmaop_ctx ctx, rmaop_dtype dt, void *const vecs[], int64_t n, const double *st);
/* LSQR's scalars on the device (src/device/solver_scalars.cu; the slots of src/solvers/lsqr_scalars.h; enqueued,
 * one thread): step 0 beta from d = (u.u, w.w), 1 alfa from d = v.v, 2 the iteration's step and stop. */
rmaop_status rmaop__dev_lsqr_scalars(rmaop_ctx ctx, const double *d, double *st, int step);
/* n device doubles copied to page-locked host memory behind the stream's work (begin), and the wait for
 * them (polls, bounded by 1.25 x the context's timeout; reports a GPU-side wait that gave up). */
rmaop_status rmaop__dev_fetch_begin(rmaop_ctx ctx, double *host, const double *dev, int n);
/* The event rmaop__dev_fetch_wait waits for, alone: behind a replayed graph that holds the copy itself. */
rmaop_status rmaop__dev_fetch_mark(rmaop_ctx ctx);
/* CUDA graphs of the context's stream (capture mode: this thread only). capture_end always ends the
 * capture: *exec is the instantiated graph (NULL when `keep` is 0 or nothing was captured). graph_launch
 * launches one; `what` and `part` name it in an error. A NULL exec launches nothing: a rank whose share of
 * the captured work is empty (no rows, no messages) captured no nodes. */
rmaop_status rmaop__dev_capture_begin(rmaop_ctx ctx);
rmaop_status rmaop__dev_capture_end(rmaop_ctx ctx, int keep, void **exec);
rmaop_status rmaop__dev_graph_launch(rmaop_ctx ctx, void *exec, const char *what, int part);
void rmaop__dev_graph_free(void *exec);
rmaop_status rmaop__dev_fetch_wait(rmaop_ctx ctx, const char *what);
/* A CUDA graph of one conditional WHILE node (CUDA 12.4+), its body captured from the context's stream between
 * while_begin and while_end (capture mode: this thread only); the body's last kernel decides, through *cond, whether
 * it runs again (the value starts at 1 at every launch). while_end always ends the capture: *exec as capture_end's. */
rmaop_status rmaop__dev_while_begin(rmaop_ctx ctx, void **graph, uint64_t *cond);
rmaop_status rmaop__dev_while_end(rmaop_ctx ctx, void *graph, int keep, void **exec);
/* A solver's stop test inside a WHILE body (RMAOP_SOLVER_SCALARS=while), one thread, after an iteration's scalars st:
 * where st[brk] != 0 (brk >= 0: a breakdown the history does not record) w[1] = 1 and the loop stops; otherwise
 * iteration k = w[0] is recorded (w[2 + 2k] = st[rec0], w[3 + 2k] = st[rec1]), w[0] = k + 1, and the body runs
 * again while k + 1 < n, st[zero] == 0 (zero >= 0) and st[above] > tol (above >= 0): the host loop's test. */
typedef struct {
  int brk, rec0, rec1, zero, above;
  double tol;
} rmaop__while_test;
rmaop_status rmaop__dev_while_stop(rmaop_ctx ctx, uint64_t cond, const double *st, rmaop__while_test t, int n,
                                   double *w);
/* out[i] = slots[0 * count + i] op slots[1 * count + i] op ... in rank order (device memory, enqueued). */
rmaop_status rmaop__dev_reduce_slots(rmaop_ctx ctx, const double *slots, int P, int64_t count, rmaop_redop op,
                                     double *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_DEVICE_H */
