/* rmaop-roofline probe: time one synchronization epoch of n messages of m bytes on every path, and
 * rmaop_allreduce of 1..k doubles, then fit the message-roofline model (fit.c).
 *
 * Pattern (documented in roofline/README.md): one rmaop_plan per point. Each rank sends n transfers of m
 * bytes, each from its own slot of an n*m-byte source: ceil(n/2) to its right ring neighbour (rank+1) and
 * floor(n/2) to its left one (rank-1), each into its own destination slot (receivers hold n*m bytes). With
 * 2 ranks both neighbours are the same rank, so all n messages go to one peer. One epoch =
 * rmaop_plan_begin + rmaop_plan_end, i.e. what a solver pays per halo exchange on that path. Distinct
 * source slots (not one m-byte buffer sent n times) keep the cache footprint that of a real exchange,
 * about 4*n*m bytes per rank: the cache switch then depends on n*m alone, as the fit assumes.
 *
 * Timing (as bench/halo_bench.c and OSU): MPI_Barrier (untimed), then MPI_Wtime around one epoch (on device
 * memory until rmaop_ctx_synchronize says the stream has finished it); two warm-up epochs
 * excluded; the repetition count adapts so each point gets ~point_ms of timed work, within [min_reps,
 * max_reps], decided from the slowest rank's warm-up so every rank runs the same count; each
 * repetition counts as its slowest rank (MPI_MAX over ranks), and the point is the median repetition.
 * A reduction is timed as a solver's reduction site is: its time inside rmaop's calls under
 * RMAOP_TRACE_SYNCED (reduce_run), without rmaop_allreduce's argument agreement, and read as one: each rank's
 * median repetition, then the slowest rank's (rank_points; so are the accumulate point and the cold points).
 *
 * Cold points (host memory): the same epoch of one 8-byte message and a one-element dot (dot_run), timed right after
 * every rank wrote a scratch buffer of 4x the last-level cache (at most 256 MiB; 64 MiB when the LLC is unknown),
 * untimed: what a solver pays when it streams more than the cache between two calls and the communication state
 * (window control words, MPI's queues) comes back from DRAM. Smaller sweeps take fresh bytes of the same scratch
 * (sweep()). Warm repetitions are timed in between, so warm and cold come from the same minutes of a shared machine.
 * On the first path the 8-byte epoch is also timed after sweeps of 1 MiB, 2 MiB, ... (the curve): how its penalty
 * grows with the bytes swept is how `run` scales a path's epoch penalty to a site's reuse distance
 * (roof_cold_fraction). On every path the dot is also timed after sweeps of 2, 4, ... 64 MiB (the path's reduction
 * curve): reductions scale their penalty by their own path's curve (roof_path_cold_fraction), since the paths'
 * reductions warm up differently (on the 2-vCPU VM lock's paid 24-29 % of its full penalty after 8 MiB where fence's
 * paid 38-52 %). Device memory gets no cold points: a solver's vectors then live in GPU memory and do not pass
 * through the host caches. */
#include "tool.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One timed operation. It may measure itself (*own >= 0, seconds) where the wall time would include work
 * that its solver-side counterpart does not time; else it leaves *own negative. */
typedef rmaop_status (*roof_op)(void *arg, double *own);

typedef struct {
  rmaop_ctx ctx;
  rmaop_plan plan;
  rmaop_vec src, dst;
  rmaop_mode mode; /* RMAOP_INSERT (every point of the fit) or RMAOP_ADD (the accumulate point) */
} epoch_state;

typedef struct {
  rmaop_ctx ctx;
  double in[8192], out[8192];
  int64_t count;
} reduce_state;

static reduce_state reduce_buf; /* 128 KiB of buffers: not on the stack */

/* The scratch written before every cold repetition: host vectors of a context of its own, swept by the
 * library's own vector update (sweep()), as a ring of pieces: each sweep takes the pieces after the last one. */
#define ROOF_SWEEP_PIECE ((size_t)1 << 20)
#define ROOF_SWEEP_MAX_PIECES 256 /* ROOF_SWEEP_CAP / ROOF_SWEEP_PIECE */
typedef struct {
  rmaop_ctx ctx;
  rmaop_vec piece[ROOF_SWEEP_MAX_PIECES]; /* ROOF_SWEEP_PIECE each, the last the remainder */
  int npiece;
  int next;         /* the piece the next sweep starts at */
  int same;         /* every sweep starts at piece 0: the same bytes each time (measure_same_curve) */
  int end_barriers; /* after the last piece (sweep_barriers in the profile) */
  size_t bytes;
} sweeper;

static int world_rank(void) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

void roof_msg(const char *fmt, ...) {
  if (world_rank() != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
}

/* ---- one epoch ---------------------------------------------------------------------------------------- */

static void epoch_free(epoch_state *e) {
  rmaop_plan_destroy(&e->plan);
  rmaop_vec_destroy(&e->src);
  rmaop_vec_destroy(&e->dst);
}

/* Vectors (not raw buffers) hold the data, so they live in the context's memory kind: the same code
 * probes host and device memory. */
static rmaop_status epoch_buffers(rmaop_ctx ctx, int64_t cnt, int n, epoch_state *e) {
  rmaop_layout ls = NULL, ld = NULL;
  rmaop_status st = rmaop_layout_create_local(ctx, cnt * n, &ls);
  if (st == RMAOP_OK)
    st = rmaop_layout_create_local(ctx, cnt * n, &ld);
  /* source and destination both hold n slots of m bytes */
  if (st == RMAOP_OK)
    st = rmaop_vec_create(ls, RMAOP_F64, &e->src);
  if (st == RMAOP_OK)
    st = rmaop_vec_create(ld, RMAOP_F64, &e->dst);
  if (st == RMAOP_OK)
    st = rmaop_vec_set(e->src, 1.0);
  rmaop_layout_destroy(&ls);
  rmaop_layout_destroy(&ld);
  return st;
}

static rmaop_status epoch_setup(rmaop_ctx ctx, int n, double m, epoch_state *e) {
  rmaop_ctx_info ci;
  rmaop_status st = rmaop_ctx_get_info(ctx, &ci);
  const int64_t cnt = (int64_t)(m / 8);
  rmaop_transfer *t = calloc((size_t)n, sizeof *t);
  memset(e, 0, sizeof *e);
  e->ctx = ctx;
  if (!t)
    return RMAOP_ERR_NOMEM;
  if (st == RMAOP_OK)
    st = epoch_buffers(ctx, cnt, n, e);
  const int right = (ci.rank + 1) % ci.size, left = (ci.rank + ci.size - 1) % ci.size, nright = (n + 1) / 2;
  for (int i = 0; i < n; ++i)
    t[i] =
        (rmaop_transfer){.peer = i < nright ? right : left, .src_offset = i * cnt, .dst_offset = i * cnt, .count = cnt};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                          .src_len = cnt * n,
                          .dst_len = cnt * n,
                          .nsends = n,
                          .sends = t,
                          .nrecvs = -1,
                          .label = "probe.epoch"};
  /* Buffer allocation is local: agree on it before the collective plan creation, or a rank that ran out
   * of memory would leave the others waiting there. */
  int bad = st != RMAOP_OK, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any && st == RMAOP_OK)
    st = RMAOP_ERR_REMOTE;
  if (st == RMAOP_OK)
    st = rmaop_plan_create(ctx, &spec, &e->plan); /* collective: agrees on failure */
  free(t);
  if (st != RMAOP_OK)
    epoch_free(e);
  return st;
}

/* Begins the epoch's plan on its buffers, in its mode. */
static rmaop_status epoch_begin(epoch_state *e) {
  void *src = NULL, *dst = NULL;
  rmaop_status st = rmaop_vec_get_array(e->src, &src);
  if (st == RMAOP_OK)
    st = rmaop_vec_get_array(e->dst, &dst);
  return st == RMAOP_OK ? rmaop_plan_begin(e->plan, src, dst, e->mode) : st;
}

static rmaop_status epoch_run(void *arg, double *own) {
  (void)own;
  epoch_state *e = arg;
  rmaop_status st = epoch_begin(e);
  if (st == RMAOP_OK)
    st = rmaop_plan_end(e->plan);
  /* On device memory the epoch's copies and flags run on the stream: the epoch ends when they are done. */
  if (st == RMAOP_OK)
    st = rmaop_ctx_synchronize(e->ctx);
  return st;
}

/* Runs @p call once with synchronized tracing (RMAOP_TRACE_SYNCED: a barrier, untimed, before each begin,
 * end and wait) and leaves in *own the time inside rmaop's calls of the one site of kind @p kind it records:
 * how rmaop-bench --trace-sync and `run` measure a solver's sites. */
static rmaop_status synced_inside(rmaop_ctx ctx, const char *kind, rmaop_status (*call)(void *), void *arg,
                                  double *own) {
  rmaop_trace_site site;
  rmaop_status st = rmaop_trace_reset(ctx);
  if (st == RMAOP_OK)
    st = rmaop_trace_enable(ctx, RMAOP_TRACE_SYNCED);
  if (st == RMAOP_OK)
    st = call(arg);
  (void)rmaop_trace_enable(ctx, RMAOP_TRACE_OFF);
  if (st == RMAOP_OK && rmaop_trace_get(ctx, 0, &site) == RMAOP_OK && strcmp(site.kind, kind) == 0)
    *own = site.time_inside;
  return st;
}

static rmaop_status epoch_call(void *arg) {
  double unused;
  return epoch_run(arg, &unused);
}

/* The cold points time the epoch as a solver's plan site is measured (rmaop-bench --trace-sync, `run`): the
 * trace's time inside rmaop's calls under RMAOP_TRACE_SYNCED, which meets the ranks in a barrier (untimed)
 * before the begin and again before the end. Timed as one span from begin to end instead, a cold epoch also
 * counted the wait, inside the end, for the peer's own cold begin when the ranks left the barrier apart;
 * the solver's sites never count it (their end follows a barrier). On the GPU machine's 16-vCPU host, pooled
 * over 5 rounds, timing the span put deriv1d's lock.shm and fence.mpi predictions at +42 % and +54 % against the
 * bench, timing it this way at -8 % and -7 %. */
static rmaop_status epoch_synced_run(void *arg, double *own) {
  return synced_inside(((epoch_state *)arg)->ctx, "plan", epoch_call, arg, own);
}

static rmaop_status reduce_call(void *arg) {
  reduce_state *r = arg; /* host result: synchronous */
  return rmaop_allreduce(r->ctx, r->in, r->out, r->count, RMAOP_SUM, "probe.reduce");
}

/* Timed as a solver's reduction site is (the trace's time inside, synchronized start): rmaop_allreduce
 * first agrees on its arguments, a collective of its own that the solvers' rmaop_vec_mdot does not make,
 * and the wall time would count it (the agreement records no trace site). */
static rmaop_status reduce_run(void *arg, double *own) {
  return synced_inside(((reduce_state *)arg)->ctx, "reduce", reduce_call, arg, own);
}

/* The cold reduction point is a dot of one element per rank (rmaop_vec_dot: one reduction of the real
 * part, the imaginary part and the failure flag), timed like reduce_run. Not rmaop_allreduce: its argument
 * agreement is a collective of its own, untimed but run just before, which brings back into the cache the
 * state that a reduction through the same MPI path reads (twosided's MPI_Allreduce: every cold repetition
 * was then warm, 2-3.5 us after a 256 MiB sweep where a bare MPI_Allreduce takes 21 us on the 2-vCPU VM,
 * and CGLS's mdot was predicted at a fifth of what it measured). A solver's mdot makes no agreement. */
typedef struct {
  rmaop_ctx ctx;
  rmaop_vec x;
} dot_state;

static rmaop_status dot_call(void *arg) {
  const dot_state *d = arg;
  double _Complex r = 0;
  return rmaop_vec_dot(d->x, d->x, &r);
}

static rmaop_status dot_run(void *arg, double *own) {
  return synced_inside(((dot_state *)arg)->ctx, "reduce", dot_call, arg, own);
}

/* The dot after an 8 B epoch of the same path, the epoch untimed (timed as the solver's halo is, synchronized),
 * the dot timed as dot_run: a solver's reduction follows its matvec's halo, and on the RMA paths the two share
 * most of what a sweep makes cold (on the 2-vCPU VM this point leaves the dot 0.23-0.48 of its penalty on the RMA
 * paths, 0.43-0.56 on twosided, whose barriers warm MPI_Allreduce too; an unsynchronized halo left twosided 0.92).
 * roof_after_epoch_share reads it. */
typedef struct {
  epoch_state *e;
  dot_state *d;
} after_epoch_state;

static rmaop_status after_epoch_run(void *arg, double *own) {
  const after_epoch_state *a = arg;
  double untimed = 0;
  rmaop_status st = epoch_synced_run(a->e, &untimed);
  return st != RMAOP_OK ? st : dot_run(a->d, own);
}

/* A vector of @p n local doubles on @p ctx, every element 1 (its pages touched). Local. */
static rmaop_status ones_vec(rmaop_ctx ctx, int64_t n, rmaop_vec *v) {
  rmaop_layout l = NULL;
  rmaop_status st = rmaop_layout_create_local(ctx, n, &l);
  if (st == RMAOP_OK)
    st = rmaop_vec_create(l, RMAOP_F64, v);
  if (st == RMAOP_OK)
    st = rmaop_vec_set(*v, 1.0);
  rmaop_layout_destroy(&l);
  return st;
}

/* Creates the dot's one-element vector. Collective: vector creation is local, so the ranks agree, or a rank
 * that failed would leave the others in a timing loop. Returns 0 when every rank has its vector. */
static int dot_setup(rmaop_ctx ctx, dot_state *d) {
  d->ctx = ctx;
  d->x = NULL;
  rmaop_status st = ones_vec(ctx, 1, &d->x);
  int mine = st != RMAOP_OK, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any ? -1 : 0;
}

/* ---- timing ------------------------------------------------------------------------------------------- */

/* Runs @p op once: its own time when it measures one, else the wall time. Clears *@p own when it did not
 * measure itself. */
static double run_timed(roof_op op, void *arg, rmaop_status *st, int *own) {
  double mine = -1, t0 = MPI_Wtime();
  *st = op(arg, &mine);
  const double wall = MPI_Wtime() - t0;
  *own = *own && mine >= 0;
  return mine >= 0 ? mine : wall;
}

/* The points of @p nseg runs of repetitions, one after the other in @p t (@p len[k] each), into @p point[k].
 * Collective; returns -1 when @p failed on some rank. @p own is this rank's (run_timed); the ranks agree on it.
 *   - Operations timed as solver sites (@p own: every repetition measured itself, synced_inside) are read as
 *     rmaop-bench and `run` read a solver's site: each rank's median repetition, then the slowest rank's
 *     (trace.c's per-call median, MPI_MAX over ranks in bench/rmaop_bench.c and run.c). Read as below
 *     instead, the two differ where the ranks take turns waiting: on the 2-vCPU VM a fence epoch's barrier
 *     costs one rank 0.25 us and the other 1.1, swapping every repetition, so every repetition's slowest rank
 *     takes 1.1 us where each rank's median is 0.55, and which of the two patterns a loop falls into changes
 *     from run to run (read that way, rma.fence.shm's reduction fit read 0.6 or 1.05 us in 12 probes, the
 *     bench 0.67 in every round).
 *   - Wall-time spans (the fit's epochs, as bench/halo_bench.c and OSU): every repetition counts as its slowest
 *     rank, and the point is the median repetition. */
static int rank_points(double *t, const int *len, int nseg, int own, int failed, double *point) {
  int n = 0, size = 1, bad = 0, any = 0;
  for (int k = 0; k < nseg; ++k)
    n += len[k];
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double *all = malloc((size_t)size * (size_t)n * sizeof *all);
  int v[2] = {!all || failed, !own}; /* any rank failed; some rank's operation did not time itself */
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (v[0]) {
    free(all);
    return -1;
  }
  own = !v[1];
  MPI_Allgather(t, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int k = 0, at = 0; k < nseg; at += len[k++])
    point[k] = roof_rank_point(all + at, size, (size_t)n, len[k], own);
  free(all);
  for (int k = 0; k < nseg; ++k)
    bad |= point[k] < 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any ? -1 : 0;
}

/* The point of @p op (rank_points): its repetition count adapts so the point gets ~point_ms of timed work.
 * Collective. Returns 0, or -1 when the operation failed on some rank. */
static int time_op(roof_op op, void *arg, const roof_probe_options *o, double *median, int *reps_out) {
  rmaop_status st = RMAOP_OK;
  double warm = 0;
  int own = 1;
  for (int w = 0; w < 2 && st == RMAOP_OK; ++w) {
    MPI_Barrier(MPI_COMM_WORLD);
    warm = run_timed(op, arg, &st, &own);
  }
  double v[2] = {st != RMAOP_OK, warm}, r[2];
  MPI_Allreduce(v, r, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (r[0] > 0)
    return -1;
  const int reps = (int)fmin(o->max_reps, fmax(o->min_reps, ceil(o->point_ms * 1e-3 / fmax(r[1], 1e-7))));
  double *t = calloc((size_t)reps, sizeof *t);
  int bad = !t, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    free(t);
    return -1;
  }
  for (int i = 0; i < reps && st == RMAOP_OK; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    t[i] = run_timed(op, arg, &st, &own);
  }
  const int failed = rank_points(t, &reps, 1, own, st != RMAOP_OK, median);
  *reps_out = reps;
  free(t);
  return failed;
}

/* ---- cold timing ------------------------------------------------------------------------------------------ */

#define ROOF_COLD_MAX_REPS 64
#define ROOF_WARM_PER_COLD 4
/* Barriers between a sweep and the cold call's own synchronizing barrier where the ranks outnumber the cores:
 * Open MPI then yields the CPU while it waits, so a rank may still be off the CPU when a barrier released its
 * peer, and the timed call would wait a scheduler tick (4 ms) for it; the later barriers are passed with every
 * rank running. Otherwise none, as in a solver, whose pass over its data is followed by the site's call and
 * nothing else: on the 2-vCPU VM these barriers warmed twosided's reduction (MPI_Allreduce shares the barrier's
 * shared-memory path), whose dot after 8 MiB of fresh bytes read 0.16-0.26 of its full penalty with them and
 * 0.26-0.35 without (30 blocks each, in turns; the other paths within 0.02; CGLS bdiag's mdot, after its matvec,
 * 0.36-0.50). */
#define ROOF_COLD_BARRIERS 3
#define ROOF_SWEEP_CAP (256.0 * 1024 * 1024)
#define ROOF_SWEEP_DEFAULT (64.0 * 1024 * 1024)
#define ROOF_SWEEP_CHUNK ((size_t)16 << 20)

/* Streams @p bytes (the full sweep, or one of the smaller sizes: a power of two from 1 MiB) as a solver's vector
 * update does: rmaop_vec_scale, the library's own loop as this build compiled it, reads and writes every
 * element, so the caches then hold the scratch and whatever the communication touched before must come back
 * from DRAM.
 *
 * Fresh bytes every time: the sweep takes the next pieces of the scratch, a ring, so what it streams was last
 * touched a whole scratch earlier and comes from DRAM, as a solver's matrix and vectors do when its data
 * outgrows the cache. Sweeping the same bytes keeps them in the cache below half the LLC per rank: on the 2-vCPU
 * VM (32 MiB L3 for both ranks), in one process in turns, the same 8 MiB took 0.46-0.86 ms to sweep where fresh
 * 8 MiB took 0.81-1.16 ms and bdiag's matvec 0.83-1.54 ms, and left the dot after it warmer.
 *
 * Every double, not one store per cache line: on the 2-vCPU VM an MPI_Allreduce after a one-store-per-line sweep
 * of 4-8 MiB per rank took 1.2-2 us where after reading every double of the same bytes it took 2.6-5.2 us. The
 * library's loop, not one of the probe's own: whether a loop is compiled scalar or SIMD depends on the
 * optimization level and the loop's form, and the library's loop takes per byte what the solvers' take.
 *
 * In pieces of ROOF_SWEEP_PIECE with a barrier after every ROOF_SWEEP_CHUNK but the last (and ROOF_COLD_BARRIERS
 * at the end where the ranks outnumber the cores), so the ranks sweep in step: a rank that finished a long sweep
 * early would wait in a barrier that, with more processes than cores, gives its CPU away (Open MPI yields while it
 * waits), and the cold epoch would then time the scheduler. A chunk takes about as long as a solver computes
 * between two calls (a millisecond or two). Collective. */
static void sweep(sweeper *sw, size_t bytes) {
  const size_t per_chunk = ROOF_SWEEP_CHUNK / ROOF_SWEEP_PIECE;
  size_t n = (bytes + ROOF_SWEEP_PIECE - 1) / ROOF_SWEEP_PIECE;
  n = n < (size_t)sw->npiece ? n : (size_t)sw->npiece;
  if (sw->same)
    sw->next = 0;
  for (size_t k = 0; k < n; ++k) {
    (void)rmaop_vec_scale(sw->piece[sw->next], -1.0); /* a host vector of this context: cannot fail; stays +-1 */
    sw->next = (sw->next + 1) % sw->npiece;
    if ((k + 1) % per_chunk == 0 && k + 1 < n)
      MPI_Barrier(MPI_COMM_WORLD);
  }
  for (int b = 0; b < sw->end_barriers; ++b)
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The last-level cache of CPU 0's domain as the kernel reports it (sysfs, "32768K"); 0 when absent. Where the
 * two disagree this is the one to believe (the 2-vCPU VM: sysconf 512 MiB, from the hypervisor's CPUID; sysfs
 * 32 MiB, shared by both vCPUs); the sweep keeps llc_size's, which its curves have been measured with. */
static double sysfs_llc(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  double x = 0;
  char unit = 0;
  int k = f ? fscanf(f, "%lf%c", &x, &unit) : 0;
  if (f)
    fclose(f);
  if (k < 1 || !(x > 0))
    return 0;
  return x * (unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : unit == 'G' ? 1073741824.0 : 1.0);
}

/* Last-level cache the system reports: sysconf (glibc), else sysfs; 0 when unknown. */
static double llc_size(char *source, size_t len) {
#ifdef _SC_LEVEL3_CACHE_SIZE
  long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (v > 0)
    return snprintf(source, len, "sysconf"), (double)v;
#endif
  const double x = sysfs_llc();
  snprintf(source, len, x > 0 ? "sysfs" : "unknown");
  return x;
}

static void sweeper_free(sweeper *sw) {
  for (int i = 0; i < sw->npiece; ++i)
    rmaop_vec_destroy(&sw->piece[i]);
  if (sw->ctx)
    rmaop_ctx_destroy(&sw->ctx);
  sw->npiece = 0;
}

/* 1 when a node runs more ranks than it has cores online (the ranks agree). A CPU quota of a container is not
 * seen. Collective. */
static int oversubscribed(void) {
  MPI_Comm node;
  int local = 1, mine, any = 0;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  mine = cores > 0 && local > cores;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

/* Whether the ranks share a cache (roof_cache.share_ratio): rank 0 reads 0.85 x its last-level cache (sysfs_llc,
 * else llc_size) of a buffer of its own, one double per cache line, ROOF_SHARE_PASSES times with the other ranks
 * asleep, then while every rank reads its own; medians of ROOF_SHARE_REPS alternations. Ranks with a core and a
 * last-level cache each take as long together as alone; ranks on one core, or on one cache that their data
 * together overflows, slow each other. On the 2-vCPU VM, whose host moves its two vCPUs between a placement with
 * caches of their own (8 B ping-pong 0.37 us) and one on a shared L3 (0.11 us), where the solvers' calls pay
 * their full cold penalty, the ratio reads 0.84-1.12 in the first and 1.22-1.55 in the second over 66 probes.
 * 0.85 x LLC separates the two better than 0.6 x LLC (1.22-1.32 shared, up to 1.15 apart), and loads better than
 * the library's vector update (1.02-1.22 shared), whose arithmetic keeps it under the cache's bandwidth. Waiting
 * ranks poll a message and sleep between polls: a rank spinning in MPI would take the core it may share.
 * Collective. */
#define ROOF_SHARE_PASSES 8
#define ROOF_SHARE_REPS 5
static volatile double share_sink;
static double read_passes(const double *buf, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i += 8) /* warm: in the cache (or not) as it will be */
    s += buf[i];
  const double t0 = MPI_Wtime();
  for (int p = 0; p < ROOF_SHARE_PASSES; ++p)
    for (size_t i = 0; i < n; i += 8)
      s += buf[i];
  const double t = MPI_Wtime() - t0;
  share_sink = s;
  return t;
}

static void measure_sharing(roof_cache *c) {
  int size = 1;
  const int rank = world_rank();
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  c->share_bytes = c->share_ratio = c->share_cache_bytes = 0;
  double cache = sysfs_llc();
  if (!(cache > 0))
    cache = c->llc_bytes;
  const size_t n = (size_t)(fmin(ROOF_SHARE_OF_LLC * cache, ROOF_SWEEP_CAP) / sizeof(double)) & ~(size_t)7;
  double *buf = size > 1 && n > 0 ? malloc(n * sizeof(double)) : NULL;
  int bad = !buf, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) { /* one rank, the cache unknown, or no memory somewhere: not measured */
    free(buf);
    return;
  }
  for (size_t i = 0; i < n; ++i)
    buf[i] = 1.0;
  double alone[ROOF_SHARE_REPS], together[ROOF_SHARE_REPS], ratio = 0;
  for (int rep = 0; rep < ROOF_SHARE_REPS; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      alone[rep] = read_passes(buf, n);
      for (int r = 1; r < size; ++r)
        MPI_Send(NULL, 0, MPI_BYTE, r, 0, MPI_COMM_WORLD);
    } else {
      MPI_Request req;
      int done = 0;
      MPI_Irecv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req);
      for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&req, &done, MPI_STATUS_IGNORE))
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    together[rep] = read_passes(buf, n);
  }
  free(buf);
  if (rank == 0)
    ratio = roof_median(together, ROOF_SHARE_REPS) / roof_median(alone, ROOF_SHARE_REPS);
  MPI_Bcast(&ratio, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  c->share_cache_bytes = cache;
  c->share_bytes = (double)n * sizeof(double);
  c->share_ratio = ratio;
}

/* 4x the LLC, at most 256 MiB (64 MiB when the LLC is unknown), and at most a quarter of physical memory
 * shared by the ranks, in a host context of its own (twosided: it only holds vectors). Every rank allocates
 * and touches it once (page faults are not part of the timing); the ranks agree, so a rank that could not
 * allocate turns the cold points off everywhere. Collective. */
static int sweeper_create(sweeper *sw, roof_cache *c) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  memset(sw, 0, sizeof *sw);
  c->llc_bytes = llc_size(c->llc_source, sizeof c->llc_source);
  double want = c->llc_bytes > 0 ? fmin(4 * c->llc_bytes, ROOF_SWEEP_CAP) : ROOF_SWEEP_DEFAULT;
#ifdef _SC_PHYS_PAGES
  double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (phys > 0)
    want = fmin(want, phys / (4.0 * size));
#endif
  sw->bytes = (size_t)want & ~(sizeof(double) - 1);                      /* whole doubles */
  rmaop_status st = roof_path_ctx("twosided", "", "", "host", &sw->ctx); /* collective */
  for (size_t b = 0; st == RMAOP_OK && b < sw->bytes; b += ROOF_SWEEP_PIECE) {
    const size_t n = sw->bytes - b < ROOF_SWEEP_PIECE ? sw->bytes - b : ROOF_SWEEP_PIECE;
    st = ones_vec(sw->ctx, (int64_t)(n / sizeof(double)), &sw->piece[sw->npiece]);
    sw->npiece += st == RMAOP_OK;
  }
  int bad = st != RMAOP_OK, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    sweeper_free(sw);
    return -1;
  }
  sw->end_barriers = c->sweep_barriers = oversubscribed() ? ROOF_COLD_BARRIERS : 0;
  sweep(sw, sw->bytes);
  c->sweep_bytes = (double)sw->bytes;
  return 0;
}

/* Cold and warm points of one operation, paired. Each repetition: sweep @p bytes (untimed; fresh bytes, and
 * barriers only where the ranks outnumber the cores), time the operation cold, then ROOF_WARM_PER_COLD times
 * barrier + operation warm; each set is read by rank_points. Collective; returns 0, or -1 when the operation
 * failed somewhere. */
static int time_cold(roof_op op, void *arg, sweeper *sw, size_t bytes, int reps, roof_cold_point *out) {
  double t[ROOF_COLD_MAX_REPS * (1 + ROOF_WARM_PER_COLD)] = {0}, point[2];
  rmaop_status st = RMAOP_OK;
  int own = 1;
  reps = reps < ROOF_COLD_MAX_REPS ? reps : ROOF_COLD_MAX_REPS;
  const int nt = reps * (1 + ROOF_WARM_PER_COLD), len[2] = {reps, nt - reps};
  for (int w = 0; w < 2 && st == RMAOP_OK; ++w) {
    MPI_Barrier(MPI_COMM_WORLD);
    (void)run_timed(op, arg, &st, &own);
  }
  for (int i = 0; i < reps && st == RMAOP_OK; ++i) {
    sweep(sw, bytes);
    t[i] = run_timed(op, arg, &st, &own);
    for (int w = 0; w < ROOF_WARM_PER_COLD && st == RMAOP_OK; ++w) {
      MPI_Barrier(MPI_COMM_WORLD);
      t[reps + i * ROOF_WARM_PER_COLD + w] = run_timed(op, arg, &st, &own);
    }
  }
  if (rank_points(t, len, 2, own, st != RMAOP_OK, point))
    return -1;
  out->cold = point[0];
  out->warm = point[1];
  out->penalty = fmax(0, out->cold - out->warm);
  out->reps = reps;
  return 0;
}

/* The cold medians of @p op after sweeps of @p first, twice that, ... up to @p last, below the full sweep, into
 * bytes[] / t[] (*n points, at most ROOF_MAX_CURVE - 1: the full sweep's point may follow). Collective. */
static int time_curve(roof_op op, void *arg, sweeper *sw, double first, double last, int reps, double *bytes, double *t,
                      int *n) {
  *n = 0;
  for (double b = first; b <= last && b < (double)sw->bytes && *n < ROOF_MAX_CURVE - 1; b *= 2) {
    roof_cold_point q;
    if (time_cold(op, arg, sw, (size_t)b, reps, &q))
      return -1;
    bytes[*n] = b;
    t[(*n)++] = q.cold;
  }
  return 0;
}

/* The 8-byte epoch after sweeps of 1 MiB, 2 MiB, ... below the full sweep, whose point @p full ends the
 * curve (roof_cold_fraction reads it). Collective. */
static int measure_curve(epoch_state *e, sweeper *sw, int reps, const char *path, const roof_cold_point *full,
                         roof_cache *c) {
  if (time_curve(epoch_synced_run, e, sw, 1048576, (double)sw->bytes, reps, c->curve_bytes, c->curve_t, &c->ncurve))
    return -1;
  c->curve_bytes[c->ncurve] = (double)sw->bytes;
  c->curve_t[c->ncurve++] = full->cold;
  c->curve_warm = full->warm;
  snprintf(c->curve_path, sizeof c->curve_path, "%s", path);
  c->has = 1;
  return 0;
}

/* The path's own reduction curve: the one-element dot after sweeps of ROOF_RCURVE_FIRST, twice that, ... up to
 * ROOF_RCURVE_LAST, below the full sweep (whose point, c->reduce, ends it). Collective. */
#define ROOF_RCURVE_FIRST (2.0 * 1048576)
#define ROOF_RCURVE_LAST (64.0 * 1048576)
static int measure_reduce_curve(dot_state *d, sweeper *sw, int reps, roof_cold *c) {
  return time_curve(dot_run, d, sw, ROOF_RCURVE_FIRST, ROOF_RCURVE_LAST, reps, c->rcurve_bytes, c->rcurve_t,
                    &c->nrcurve);
}

/* The same dot after re-writing the same bytes (the first pieces of the ring) before every repetition, over
 * the reduction curve's sizes: a solver re-reads its footprint every iteration, and where both ranks' footprint
 * fits the LLC and nothing else evicts it, its reductions pay less than after fresh bytes; `run` prices
 * reduction sites with it (roof_path_same_fraction). The fresh sweeps go on where they stopped. Collective. */
static int measure_same_curve(dot_state *d, sweeper *sw, int reps, roof_cold *c) {
  const int next = sw->next;
  sw->same = 1;
  const int st =
      time_curve(dot_run, d, sw, ROOF_RCURVE_FIRST, ROOF_RCURVE_LAST, reps, c->scurve_bytes, c->scurve_t, &c->nscurve);
  sw->same = 0;
  sw->next = next;
  return st;
}

/* ---- two operations in turns -------------------------------------------------------------------------- */

#define ROOF_PAIR_REPS 41

/* Medians of two operations timed in turns (barrier, a, barrier, b; two warm-up turns), so both come from
 * the same minutes of a shared machine; each set is read by rank_points. Collective; returns 0, or -1 when an
 * operation failed somewhere. */
static int time_pair(roof_op a, void *aa, roof_op b, void *ba, double *ma, double *mb) {
  double t[2 * ROOF_PAIR_REPS] = {0}, point[2];
  rmaop_status st = RMAOP_OK;
  int own = 1;
  const int len[2] = {ROOF_PAIR_REPS, ROOF_PAIR_REPS};
  for (int i = -2; i < ROOF_PAIR_REPS && st == RMAOP_OK; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double x = run_timed(a, aa, &st, &own);
    if (st != RMAOP_OK)
      break;
    MPI_Barrier(MPI_COMM_WORLD);
    const double y = run_timed(b, ba, &st, &own);
    if (i >= 0)
      t[i] = x, t[ROOF_PAIR_REPS + i] = y;
  }
  if (rank_points(t, len, 2, own, st != RMAOP_OK, point))
    return -1;
  *ma = point[0];
  *mb = point[1];
  return 0;
}

static rmaop_status epoch_insert_run(void *arg, double *own) {
  ((epoch_state *)arg)->mode = RMAOP_INSERT;
  return epoch_synced_run(arg, own);
}

static rmaop_status epoch_add_run(void *arg, double *own) {
  ((epoch_state *)arg)->mode = RMAOP_ADD;
  return epoch_synced_run(arg, own);
}

/* The accumulate point (roof_add_point): the 8-byte epoch in RMAOP_INSERT and RMAOP_ADD mode in turns, timed
 * as solver sites are. An adjoint's reversed plan adds at the receiver; on twosided over CUDA-aware MPI that
 * is a receive into scratch and an add kernel, and CGLS deriv1d's adjoint halo (2 x H100) took
 * 20-23 us per call where its forward halo and the fit's INSERT epoch took 11-14. Collective; a failure loses
 * the point, not the path. */
static void probe_add(rmaop_ctx ctx, roof_path *p) {
  epoch_state e;
  memset(&p->add, 0, sizeof p->add);
  if (epoch_setup(ctx, 1, 8, &e) != RMAOP_OK)
    return;
  roof_add_point *a = &p->add;
  if (time_pair(epoch_insert_run, &e, epoch_add_run, &e, &a->insert, &a->add)) {
    roof_msg("probe %s: no accumulate point: %s\n", p->name, rmaop_ctx_last_error(ctx));
  } else {
    a->extra = fmax(0, a->add - a->insert);
    a->reps = ROOF_PAIR_REPS;
    a->has = 1;
    roof_msg("probe %s: 8 B epoch insert %.2f us, add %.2f us\n", p->name, a->insert * 1e6, a->add * 1e6);
  }
  epoch_free(&e);
}

/* Device memory: a solver's reduction follows the device dot that made its partials (a kernel, the copy to
 * the host, a stream synchronization) and starts right after it, while the fit's reductions run back to
 * back. The one-element dot of a device vector (its reduction timed, as dot_run does) in turns with
 * rmaop_allreduce of as many doubles (2 + the flag) gives the path's reduction after a device dot, stored as
 * the "cold" reduction point; `run` predicts every reduction site from it (roof_cold_penalty). On 2 x H100
 * CGLS bdiag's mdot over the CUDA-aware Open MPI's twosided path took 14-25 us per call where the
 * reduction fit (poor there: UCX's small allreduces do not follow alpha + bytes/beta) said 9-14, while this
 * point read 11-22. Collective; a failure loses the point, not the path. */
static void probe_after_dot(rmaop_ctx ctx, roof_path *p) {
  reduce_state *const r = &reduce_buf;
  roof_cold *c = &p->cold;
  dot_state d;
  memset(c, 0, sizeof *c);
  const int any = dot_setup(ctx, &d);
  r->ctx = ctx;
  r->count = 2;
  r->in[0] = r->in[1] = 1.0;
  if (any || time_pair(reduce_run, r, dot_run, &d, &c->reduce.warm, &c->reduce.cold)) {
    memset(c, 0, sizeof *c);
    roof_msg("probe %s: no reduction after a device dot: %s\n", p->name, rmaop_ctx_last_error(ctx));
  } else {
    c->reduce.penalty = fmax(0, c->reduce.cold - c->reduce.warm);
    c->reduce.reps = ROOF_PAIR_REPS;
    c->has_reduce = 1;
    roof_msg("probe %s: reduction of 3 doubles %.2f us back to back, %.2f us after a device dot\n", p->name,
             c->reduce.warm * 1e6, c->reduce.cold * 1e6);
  }
  rmaop_vec_destroy(&d.x);
}

/* ---- the grid ----------------------------------------------------------------------------------------- */

typedef struct {
  double m[32];
  int nm;
  int n[8];
  int nn;
  double cap; /* n*m per rank */
} grid;

/* Physical memory bounds the largest epoch: each rank holds about 5 n*m bytes (source, destination, a
 * double-buffered window or staging) and all ranks of the node share the machine. */
static double memory_cap(double want) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifdef _SC_PHYS_PAGES
  double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (phys > 0)
    want = fmin(want, phys / 2 / (5.0 * size));
#endif
  return want;
}

static void make_grid(const roof_probe_options *o, grid *g) {
  static const int quick_n[] = {1, 8, 64}, full_n[] = {1, 2, 4, 8, 16, 32, 64};
  const double top = 64.0 * 1024 * 1024;
  memset(g, 0, sizeof *g);
  g->cap = memory_cap(o->max_bytes);
  for (double m = 8; m <= fmin(top, g->cap) && g->nm < 31; m *= o->quick ? 4 : 2)
    g->m[g->nm++] = m;
  if (g->nm > 0 && g->m[g->nm - 1] < fmin(top, g->cap)) { /* end on the cap (64 MiB) itself */
    double last = pow(2, floor(log2(fmin(top, g->cap))));
    if (last > g->m[g->nm - 1])
      g->m[g->nm++] = last;
  }
  g->nn = o->quick ? 3 : 7;
  memcpy(g->n, o->quick ? quick_n : full_n, (size_t)g->nn * sizeof *g->n);
}

static int grid_points(const grid *g) {
  int k = 0;
  for (int i = 0; i < g->nm; ++i)
    for (int j = 0; j < g->nn; ++j)
      k += g->n[j] * g->m[i] <= g->cap;
  return k;
}

/* ---- progress ----------------------------------------------------------------------------------------- */

typedef struct {
  const char *path;
  int done, total, tty, shown;
  double last;
} progress;

/* On a terminal the line is rewritten in place; in a log, one line every 2 s and one at the end. */
static void progress_show(progress *p, int final) {
  double now = MPI_Wtime();
  if (!final && !p->tty && now - p->last < 2.0)
    return;
  if (final && !p->tty && p->shown == p->done)
    return;
  p->last = now;
  p->shown = p->done;
  roof_msg("%sprobe %s: %d/%d points%s", p->tty ? "\r" : "", p->path, p->done, p->total, final || !p->tty ? "\n" : "");
}

/* ---- one path ----------------------------------------------------------------------------------------- */

rmaop_status roof_path_ctx(const char *backend, const char *sync, const char *transport, const char *memory,
                           rmaop_ctx *ctx) {
  rmaop_ctx_options opts;
  rmaop_ctx_options_init(&opts);
  opts.backend = backend;
  opts.memory = memory;
  if (strcmp(backend, "rma") == 0) {
    opts.rma.sync = sync;
    opts.rma.transport = transport;
  }
  opts.trace = 0;
  opts.timeout = 60; /* a lost peer ends the tool with an error instead of hanging a CI job */
  /* Derivatives exchange ghost rows through plans, which the trace times and the roofline places; kernel puts
   * (RMAOP_HALO=kernel) have no host-side times. */
  setenv("RMAOP_HALO", "plan", 1);
  return rmaop_ctx_create(MPI_COMM_WORLD, &opts, ctx);
}

static rmaop_status open_ctx(const char *name, const roof_probe_options *o, rmaop_ctx *ctx) {
  char backend[16], sync[16], transport[16], memory[16], err[ROOF_ERR_MAX];
  if (roof_path_parse(name, backend, sync, transport, memory, err, sizeof err))
    return RMAOP_ERR_ARG;
  return roof_path_ctx(backend, sync, transport, o->memory, ctx);
}

static int probe_epochs(rmaop_ctx ctx, const grid *g, const roof_probe_options *o, roof_path *p, progress *pr) {
  p->points = calloc((size_t)grid_points(g) + 1, sizeof *p->points);
  if (!p->points)
    return -1;
  for (int i = 0; i < g->nm; ++i)
    for (int j = 0; j < g->nn; ++j) {
      if (g->n[j] * g->m[i] > g->cap)
        continue;
      epoch_state e;
      roof_point *q = &p->points[p->npoints];
      if (epoch_setup(ctx, g->n[j], g->m[i], &e) != RMAOP_OK)
        return -1;
      int bad = time_op(epoch_run, &e, o, &q->t, &q->reps);
      epoch_free(&e);
      if (bad)
        return -1;
      q->n = g->n[j];
      q->m = g->m[i];
      ++p->npoints;
      ++pr->done;
      progress_show(pr, 0);
    }
  return 0;
}

static int probe_reduce(rmaop_ctx ctx, const roof_probe_options *o, roof_path *p) {
  reduce_state *const r = &reduce_buf;
  int64_t counts[16];
  int nc = 0;
  for (int64_t c = 1; c <= 4096; c *= o->quick ? 8 : 2)
    counts[nc++] = c;
  p->rpoints = calloc((size_t)nc, sizeof *p->rpoints);
  if (!p->rpoints)
    return -1;
  r->ctx = ctx;
  for (int i = 0; i < 8192; ++i)
    r->in[i] = 1.0;
  for (int i = 0; i < nc; ++i) {
    roof_rpoint *q = &p->rpoints[i];
    r->count = counts[i];
    if (time_op(reduce_run, r, o, &q->t, &q->reps))
      return -1;
    q->count = counts[i];
    p->nrpoints = i + 1;
  }
  return 0;
}

/* " 2 MiB: 1.23, 4 MiB: 1.30 us" and the end of the line. */
static void show_points(const double *bytes, const double *t, int n) {
  for (int i = 0; i < n; ++i)
    roof_msg(" %.0f MiB: %.2f%s", bytes[i] / 1048576, t[i] * 1e6, i + 1 < n ? "," : " us\n");
}

static void show_cold(const roof_path *p) {
  roof_msg("probe %s: cold (after writing %.0f MiB per rank): 8 B epoch %.2f -> %.2f us, 1-element dot "
           "%.2f -> %.2f us; the dot after",
           p->name, p->cold.sweep_bytes / 1048576, p->cold.epoch.warm * 1e6, p->cold.epoch.cold * 1e6,
           p->cold.reduce.warm * 1e6, p->cold.reduce.cold * 1e6);
  show_points(p->cold.rcurve_bytes, p->cold.rcurve_t, p->cold.nrcurve);
  if (p->cold.nrcurve == 0)
    roof_msg(" smaller sweeps: not measured\n");
  const roof_cold_point *a = &p->cold.after_epoch;
  const double rho = roof_after_epoch_share(p); /* the share the model uses: within 0..1, -1 without a penalty */
  if (p->cold.has_after_epoch)
    roof_msg("probe %s: the dot after the full sweep and an 8 B epoch: %.2f -> %.2f us (%.2f of its penalty)\n",
             p->name, a->warm * 1e6, a->cold * 1e6, rho < 0 ? 0 : rho);
  if (p->cold.nscurve > 0) {
    roof_msg("probe %s: the dot after the same bytes again (reduction sites' curve):", p->name);
    show_points(p->cold.scurve_bytes, p->cold.scurve_t, p->cold.nscurve);
  }
  if (p->cold.has_overlap)
    roof_msg("probe %s: 8 B epoch with %.0f MiB written between begin and end (%.0f us): %.2f -> %.2f us\n", p->name,
             p->cold.overlap_bytes / 1048576, p->cold.overlap_seconds * 1e6, p->cold.overlap.warm * 1e6,
             p->cold.overlap.cold * 1e6);
}

static void show_curve(const roof_cache *c) {
  roof_msg("probe %s: 8 B epoch warm %.2f us; cold after writing", c->curve_path, c->curve_warm * 1e6);
  show_points(c->curve_bytes, c->curve_t, c->ncurve);
}

/* The overlapped epoch (roof_cold.overlap): the 8 B epoch with a pass over ROOF_OVERLAP_BYTES of fresh memory
 * between its begin and its end, as a solver computes its interior between a halo's begin and end (CGLS deriv1d
 * streams ~8 MiB per rank there), in turns with the same epoch back to back (time_pair), both timed as solver
 * sites. On the 2-vCPU VM (30 blocks per path in turns) an 8 MiB pass made the 8 B epoch 0.07-0.26 us slower on
 * the seven host paths, warm otherwise, and a 16 MiB one 0.05-0.2 (256 KiB and 1 MiB: none); without this term
 * the halos of CGLS deriv1d, measured by rmaop-bench, took 0.2-0.4 us per call more than the model that charges
 * only the cold share at their reuse distance. */
#define ROOF_OVERLAP_BYTES ((size_t)8 << 20)
typedef struct {
  epoch_state *e;
  sweeper *sw;
  double pass[ROOF_PAIR_REPS + 2]; /* this rank's pass durations (the two warm-up turns first) */
  int npass;
} overlap_state;

static rmaop_status overlap_call(void *arg) {
  overlap_state *o = arg;
  epoch_state *e = o->e;
  e->mode = RMAOP_INSERT;
  const rmaop_status st = epoch_begin(e);
  if (st != RMAOP_OK)
    return st;
  const double t0 = MPI_Wtime();
  sweep(o->sw, ROOF_OVERLAP_BYTES); /* barriers only where the ranks outnumber the cores: every rank, in order */
  if (o->npass < ROOF_PAIR_REPS + 2)
    o->pass[o->npass++] = MPI_Wtime() - t0;
  return rmaop_plan_end(e->plan);
}

static rmaop_status overlap_run(void *arg, double *own) {
  return synced_inside(((overlap_state *)arg)->e->ctx, "plan", overlap_call, arg, own);
}

/* Measures c->overlap (host memory; after the path's other cold points). A failure loses this point alone.
 * Collective. */
static void measure_overlap(epoch_state *e, sweeper *sw, roof_cold *c) {
  overlap_state o = {.e = e, .sw = sw};
  c->has_overlap = 0;
  if (time_pair(epoch_insert_run, e, overlap_run, &o, &c->overlap.warm, &c->overlap.cold))
    return;
  double pass = o.npass > 2 ? roof_median(o.pass + 2, o.npass - 2) : 0;
  MPI_Allreduce(MPI_IN_PLACE, &pass, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  c->overlap.penalty = fmax(0, c->overlap.cold - c->overlap.warm);
  c->overlap.reps = ROOF_PAIR_REPS;
  c->overlap_bytes = (double)ROOF_OVERLAP_BYTES;
  c->overlap_seconds = pass;
  c->has_overlap = pass > 0;
}

/* The cold points of one path; on the first path also the curve (roof_cold_fraction). A failure loses the
 * cold points, not the path. Collective. */
static void probe_cold(rmaop_ctx ctx, const roof_probe_options *o, sweeper *sw, roof_path *p, roof_cache *cache) {
  epoch_state e;
  roof_cold *c = &p->cold;
  memset(c, 0, sizeof *c);
  if (epoch_setup(ctx, 1, 8, &e) != RMAOP_OK)
    return;
  int bad = time_cold(epoch_synced_run, &e, sw, sw->bytes, o->cold_reps, &c->epoch);
  if (!bad && !cache->has) {
    bad = measure_curve(&e, sw, o->cold_reps, p->name, &c->epoch, cache);
    if (!bad)
      show_curve(cache);
  }
  dot_state d;
  const int any = dot_setup(ctx, &d);
  if (!bad)
    bad = any || time_cold(dot_run, &d, sw, sw->bytes, o->cold_reps, &c->reduce);
  if (!bad)
    bad = measure_reduce_curve(&d, sw, o->cold_reps, c);
  after_epoch_state a = {&e, &d}; /* a failure loses this point alone (the model then uses the reuse distance) */
  if (!bad)
    c->has_after_epoch = !time_cold(after_epoch_run, &a, sw, sw->bytes, o->cold_reps, &c->after_epoch);
  if (!bad && measure_same_curve(&d, sw, o->cold_reps, c)) /* a failure loses this curve alone */
    c->nscurve = 0;
  if (!bad)
    measure_overlap(&e, sw, c);
  epoch_free(&e);
  rmaop_vec_destroy(&d.x);
  if (bad) {
    memset(c, 0, sizeof *c);
    roof_msg("probe %s: no cold points: %s\n", p->name, rmaop_ctx_last_error(ctx));
    return;
  }
  c->has_epoch = c->has_reduce = 1;
  c->sweep_bytes = (double)sw->bytes;
  show_cold(p);
}

/* Probes one path into @p p. Returns 0, or 1 when the path does not exist here (skipped, said why). */
static int probe_path(const char *name, const grid *g, const roof_probe_options *o, sweeper *sw, roof_cache *cache,
                      roof_path *p) {
  rmaop_ctx ctx = NULL;
  char err[ROOF_ERR_MAX];
  memset(p, 0, sizeof *p);
  roof_path_parse(name, p->backend, p->sync, p->transport, p->memory, err, sizeof err);
  /* device memory's paths are named with ".device" (as `run` and the traces name them) even where the default
   * list or --paths leaves it out: "rma.lock.ipc" on device memory is "rma.lock.ipc.device" in the profile */
  const int dev = strcmp(o->memory, "device") == 0 && !strstr(name, ".device");
  snprintf(p->name, sizeof p->name, "%s%s", name, dev ? ".device" : "");
  snprintf(p->memory, sizeof p->memory, "%s", o->memory);
  if (open_ctx(name, o, &ctx) != RMAOP_OK) {
    roof_msg("probe %s: skipped: %s\n", name, rmaop_ctx_last_error(NULL));
    return 1;
  }
  progress pr = {.path = name, .total = grid_points(g), .tty = isatty(2), .last = MPI_Wtime()};
  int bad = probe_epochs(ctx, g, o, p, &pr);
  if (!bad)
    bad = probe_reduce(ctx, o, p);
  if (bad)
    roof_msg("%sprobe %s: skipped: %s\n", pr.tty ? "\n" : "", name, rmaop_ctx_last_error(ctx));
  else
    progress_show(&pr, 1);
  if (!bad && sw->npiece > 0)
    probe_cold(ctx, o, sw, p, cache);
  if (!bad && strcmp(o->memory, "device") == 0)
    probe_after_dot(ctx, p);
  if (!bad)
    probe_add(ctx, p);
  rmaop_ctx_destroy(&ctx);
  return bad ? 1 : 0;
}

/* ---- fitting and output (rank 0) ------------------------------------------------------------------------ */

static int fit_path(roof_path *p) {
  char err[ROOF_ERR_MAX];
  if (roof_fit_plan(p->points, p->npoints, &p->fit, err, sizeof err)) {
    roof_msg("probe %s: no fit: %s\n", p->name, err);
    return -1;
  }
  p->has_rfit = roof_fit_reduce(p->rpoints, p->nrpoints, &p->rfit, err, sizeof err) == 0;
  if (!p->has_rfit)
    roof_msg("probe %s: no reduction fit: %s\n", p->name, err);
  return 0;
}

static void svg_name(const char *out, char *buf, size_t len) {
  size_t n = strlen(out);
  if (n > 5 && strcmp(out + n - 5, ".json") == 0)
    snprintf(buf, len, "%.*s.svg", (int)(n - 5), out);
  else
    snprintf(buf, len, "%s.svg", out);
}

static int write_outputs(roof_profile *prof, const char *out) {
  char err[ROOF_ERR_MAX], svg[4096];
  time_t now = time(NULL);
  if (!*prof->created)
    strftime(prof->created, sizeof prof->created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  if (roof_profile_write(prof, out, err, sizeof err)) {
    fprintf(stderr, "rmaop-roofline: %s\n", err);
    return 1;
  }
  svg_name(out, svg, sizeof svg);
  if (roof_svg_probe(svg, prof, err, sizeof err))
    fprintf(stderr, "rmaop-roofline: %s\n", err);
  roof_report_profile_table(stdout, prof);
  printf("wrote %s and %s\n", out, svg);
  return 0;
}

static int path_list(const roof_probe_options *o, char *buf, size_t len, char **items) {
  const char *const *all = strcmp(o->memory, "device") == 0 ? roof_device_paths : roof_host_paths;
  if (o->paths)
    return roof_split(o->paths, buf, len, items, ROOF_MAX_PATHS);
  int n = 0;
  for (; all[n] && n < ROOF_MAX_PATHS; ++n)
    items[n] = (char *)all[n];
  return n;
}

int roof_probe(const roof_probe_options *o) {
  int size = 1, rank = world_rank();
  char buf[1024], *names[ROOF_MAX_PATHS];
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2)
    return roof_msg("rmaop-roofline probe: needs at least 2 ranks (mpiexec -n 2 ...)\n"), 2;
  int np = path_list(o, buf, sizeof buf, names);
  grid g;
  make_grid(o, &g);
  roof_profile prof = {.ranks = size, .quick = o->quick, .paths = calloc(ROOF_MAX_PATHS, sizeof(roof_path))};
  snprintf(prof.memory, sizeof prof.memory, "%s", o->memory);
  snprintf(prof.pattern, sizeof prof.pattern,
           "each rank: one plan epoch of n messages of m bytes, ceil(n/2) to rank+1 and floor(n/2) to rank-1 "
           "(one peer at 2 ranks), distinct slots; epochs: median over reps of the max over ranks; points timed as "
           "solver sites: the slowest rank's median");
  if (!prof.paths)
    return roof_msg("rmaop-roofline: out of memory\n"), 1;
  roof_msg("probe: %d ranks, %s memory, %d paths, %d points each (n*m <= %.0f MiB)%s\n", size, o->memory, np,
           grid_points(&g), g.cap / 1048576, o->quick ? ", quick" : "");
  sweeper sw = {0};
  if (strcmp(o->memory, "host") != 0)
    roof_msg("probe: no cold-cache points on device memory (the solver's vectors do not pass the host caches); "
             "reductions are also timed after a device dot\n");
  else if (o->cold_reps > 0 && sweeper_create(&sw, &prof.cache))
    roof_msg("probe: no cold-cache points: cannot allocate the %.0f MiB scratch buffer\n", (double)sw.bytes / 1048576);
  else if (o->cold_reps > 0) {
    roof_msg("probe: cold points after writing %.0f MiB per rank (LLC %.0f MiB, %s), fresh bytes each sweep, %s\n",
             (double)sw.bytes / 1048576, prof.cache.llc_bytes / 1048576, prof.cache.llc_source,
             sw.end_barriers ? "barriers before the call (more ranks than cores)" : "the call right after");
    measure_sharing(&prof.cache); /* a buffer of its own: recorded beside the cold term it qualifies */
  }
  for (int i = 0; i < np; ++i) {
    roof_path *p = &prof.paths[prof.npaths];
    if (probe_path(names[i], &g, o, &sw, &prof.cache, p) == 0 && (rank != 0 || fit_path(p) == 0))
      ++prof.npaths;
    else
      free(p->points), free(p->rpoints);
  }
  sweeper_free(&sw);
  int rc = 0;
  if (rank == 0 && prof.npaths == 0)
    rc = (fprintf(stderr, "rmaop-roofline probe: no path could be probed\n"), 1);
  else if (rank == 0)
    rc = write_outputs(&prof, o->out);
  roof_profile_free(&prof);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

/* Fits a profile's raw medians again (after a change of the fitting rules, or to inspect one) and writes
 * the profile and its plot. Rank 0 works; the exit status is shared. */
int roof_refit(const char *in, const char *out) {
  char err[ROOF_ERR_MAX];
  int rc = 0;
  roof_profile prof = {0};
  if (world_rank() == 0) {
    if (roof_profile_read(in, &prof, err, sizeof err)) {
      fprintf(stderr, "rmaop-roofline refit: %s\n", err);
      rc = 1;
    }
    for (int i = 0; !rc && i < prof.npaths; ++i)
      if (fit_path(&prof.paths[i]))
        rc = 1;
    if (!rc)
      rc = write_outputs(&prof, out);
    roof_profile_free(&prof);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}
