/* GPU-resident CG and CGLS (RMAOP_SOLVER_SCALARS=resident; host side: src/solvers/solver_resident.c): one
 * cooperative kernel runs every iteration of a solve, with no host step between them.
 *
 * Phases are separated by grid barriers (grid_barrier: an arrival counter, not cooperative groups' grid.sync; the
 * launch is cooperative so that every block is resident). Element loops use the launch shape of the library's dot
 * kernel (rmaop__dev_dots: nb blocks of 256 threads, element e handled by thread e % 256 of virtual block (e / 256) % nb,
 * partials combined by a shared-memory tree, then summed in block order), emulated over the co-resident blocks,
 * and the element arithmetic of the library's vector kernels (k_axpby: a x + y is one fused multiply-add; the
 * stencils: separately rounded products and sums), so the scalars, the history and x are those of the host-scalar
 * loop on the same GPUs, bit for bit where the stencil sums have at most two terms (every first derivative).
 *
 * Communication goes through the public device window API (include/rmaop/rmaop_device.cuh) on a window of the
 * solve: a reduction puts each rank's local sums into slot [me] of every rank and signals; every rank sums the
 * slots 0..P-1 in rank order (identical bits everywhere, so every rank takes the same stop decision). Halos: the
 * rows a neighbour's stencil reaches are stored into its ghost area; the vector about to be exchanged (s - a q,
 * r + b c) is recomputed for those rows by block 0 at the start of the phase that makes it, so the exchange
 * overlaps the phase. Every signal carries the solve's step number (the same sequence on every rank, increasing
 * per pair, so a wait for >= the step is exact). A phase that ends in a reduction ends without a grid sync: each
 * block counts itself in (acq_rel), the last to arrive reduces, signals and releases the scalars through a
 * release/acquire word that the others wait on. Block 0 does the halo signals. One pair's signals are still
 * ordered: each signal's block acquired the release that followed the signal before it (the scalars' word or a
 * grid sync). A wait that gives up after the context's timeout records it (rmaop_dev_wait), raises the abort
 * word, and every block leaves at its next check (after each grid sync, and inside every other wait). */
#include <cuda_runtime.h>
#include <sched.h>

#include "rmaop/rmaop_device.cuh"

#include "cuda_impl.h"
#include "device.h"
#include "resident.h"

namespace {

enum { RT = 256 }; /* threads per block: the dot kernel's DOT_THREADS */

typedef rmaop__res_args args_t;


__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_relaxed_gpu(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
/* Back-off between two polls of the word that releases the reduced scalars (fetch). Every block but the reducing
 * one polls it; polling back to back, with an acquire load and the abort word each time, took 9-11 % of an
 * iteration at 2^19-2^20 (one H200: CGLS 2^20 100.3 -> 90.2 us with relaxed polls and 100 ns, CG 101.8 -> 90.0;
 * 2^25 1364 -> 1319; no back-off or 400 ns: between). */
enum { POLL_NS = 100 };
__device__ __forceinline__ void st_release_gpu(uint64_t *p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned aborted(const args_t &a) { return *(volatile unsigned *)&a.ctl->abort; }
__device__ __forceinline__ void raise_abort(const args_t &a) { atomicExch(&a.ctl->abort, 1u); }

/* Vector loads: plain, cached in L1. Another block may have written the element in an earlier phase; the grid
 * sync between (a release/acquire barrier) makes that store visible to weak loads after it, and no phase reads
 * an element that another block writes in the same phase (neighbour values are recomputed, see cgls). */
__device__ __forceinline__ double ld(const double *p) { return *p; }

/* L2 prefetch of element e of vector p (none when p is NULL). */
__device__ __forceinline__ void prefetch_l2(const double *p, int64_t e) {
  if (p) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + e));
}

/* Local row of element e for rows of w elements (no 64-bit division for the 1-D operators, w = 1). */
__device__ __forceinline__ int64_t row_of(int64_t e, int64_t w) { return w == 1 ? e : e / w; }

/* k_axpby's y = a x + b y for real a, b on doubles: b = 0: a x; b = 1: fma(a, x, y); else fma(a, x, b y). */
__device__ __forceinline__ double axpby(double a, double x, double b, double y) {
  return b == 0.0 ? __dmul_rn(a, x) : b == 1.0 ? __fma_rn(a, x, y) : __fma_rn(a, x, __dmul_rn(b, y));
}

/* Waits until origin o's signal word reaches E: polls (acquire), leaves early when another wait raised the abort
 * word, and after the context's timeout records the failure as rmaop_dev_wait does. 0, or 1 when the solve must
 * stop. One thread. */
__device__ int wait_sig(const args_t &a, int o, uint64_t E) {
  if (rmaop_dev_signal_read(&a.w, o) >= E) return 0;
  const uint64_t t0 = gtimer();
  const uint64_t *word = a.w.signal + o;
  for (unsigned spin = 1;; ++spin) {
    /* relaxed polls, the acquire once the value is there; the abort word and the clock every 32 polls */
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    if (v >= E) return rmaop_dev_signal_read(&a.w, o) >= E ? 0 : 1;
    if ((spin & 31u) != 0u) continue;
    if (aborted(a)) return 1;
    if (gtimer() - t0 > a.w.timeout_ns) {
      rmaop__dev_wait_gave_up(&a.w, o, E, v); /* what rmaop_dev_wait records, without a copy of the handle */
      return 1;
    }
  }
}

/* Every rank that sends this one ghost rows has signalled step E (one thread). */
__device__ void halo_wait(const args_t &a, uint64_t E) {
  for (int k = 0; k < a.nrecv; ++k)
    if (wait_sig(a, a.recv[k], E)) {
      raise_abort(a);
      return;
    }
}

/* Byte offset of ghost element (row gr of the 2 gw ghost rows, inner i) of halo h, parity p, in any rank's window. */
__device__ __forceinline__ size_t ghost_byte(const args_t &a, int h, int p, int64_t gr, int64_t i) {
  return a.ghost_off + (((size_t)(h * 2 + p) * 2 * a.gw + gr) * a.sd.ninner + i) * sizeof(double);
}
/* Global row g (not local) of halo h, parity p, from the own ghost area. */
__device__ __forceinline__ double ghost_at(const args_t &a, int h, int p, int64_t g, int64_t i) {
  const int64_t gr = g < a.sd.off ? g - (a.sd.off - a.gw) : a.gw + (g - (a.sd.off + a.sd.n));
  return __ldcv((const double *)(a.w.base[a.w.rank] + ghost_byte(a, h, p, gr, i)));
}

__device__ __forceinline__ bool is_local(const rmaop__stencil_desc &d, int64_t g) { return g >= d.off && g < d.off + d.n; }

/* sum_k c[k] v(g + S k, i) over the nonzero c[k], k = -2..2 ascending, the first term alone (the stencil kernels'
 * order): the forward stencil (S = 1) with any row's coefficients, the adjoint's flat rows (S = -1). */
template <int S, typename V> __device__ __forceinline__ double taps(const double c[RMAOP__NK], int64_t g, int64_t i, V v) {
  double s = 0.0;
  bool first = true;
#pragma unroll
  for (int k = -2; k <= 2; ++k)
    if (c[k + 2] != 0.0) {
      const double t = __dmul_rn(c[k + 2], v(g + S * k, i));
      s = first ? t : __dadd_rn(s, t);
      first = false;
    }
  return s;
}

/* The rows near the operator's ends, apart (not inlined): their registers stay out of the streaming loops. */
template <typename V> __device__ __noinline__ double forward_edge(const args_t &a, int64_t g, int64_t i, V v) {
  double c[RMAOP__NK];
  rmaop__stencil_coef(&a.sd.cs, g, c);
  return taps<1>(c, g, i, v);
}

/* Forward row g, inner i: sum_k c_k(g) v(g + k), terms in ascending k, the first alone (the stencil kernels' order).
 * v(row, i) gives a local or ghost element. */
template <typename V> __device__ __forceinline__ double forward(const args_t &a, int64_t g, int64_t i, V v) {
  return g >= a.sd.int_lo && g < a.sd.int_hi ? taps<1>(a.sd.cint, g, i, v) : forward_edge(a, g, i, v);
}

/* The adjoint's other rows, apart (not inlined): the local rows' terms (edge rows first, then interior rows, each
 * by ascending row), then the sum of the ghost rows' terms added (the host adds the neighbour's contributions
 * last, as its plan's ADD). */
template <typename V> __device__ __noinline__ double adjoint_edge(const args_t &a, int64_t j, int64_t i, V v) {
  const rmaop__stencil_desc &d = a.sd;
  double s = 0.0, rem = 0.0;
  bool any_rem = false;
  for (int pass = 0; pass < 3; ++pass)
    for (int64_t g = j - 2; g <= j + 2; ++g) {
      if (g < 0 || g >= d.cs.N) continue;
      const bool local = is_local(d, g);
      if (pass < 2 ? (!local || (g >= d.flo && g < d.fhi) != (pass == 1)) : local) continue;
      double c[RMAOP__NK];
      rmaop__stencil_coef(&d.cs, g, c);
      const double ck = c[j - g + 2];
      if (ck == 0.0) continue;
      const double t = __dmul_rn(ck, v(g, i));
      if (pass < 2) s = __dadd_rn(s, t);
      else rem = any_rem ? __dadd_rn(rem, t) : t, any_rem = true;
    }
  return any_rem ? __dadd_rn(s, rem) : s;
}

/* Adjoint row j, inner i, in gather form (the adjoint stencil kernel's order): flat rows from the interior
 * coefficients, sum_k cint_k v(j - k); the others by adjoint_edge. */
template <typename V> __device__ __forceinline__ double adjoint(const args_t &a, int64_t j, int64_t i, V v) {
  return j >= a.sd.jlo && j < a.sd.jhi ? taps<-1>(a.sd.cint, j, i, v) : adjoint_edge(a, j, i, v);
}

/* The dot kernel's block tree over nd values per thread (256 threads): thread 0 returns the block's sums in v. */
__device__ void block_tree(double (*sm)[RT], int nd, double v[4]) {
  const int t = threadIdx.x;
  for (int j = 0; j < nd; ++j) sm[j][t] = v[j];
  __syncthreads();
  for (int h = RT / 2; h >= 32; h >>= 1) {
    if (t < h)
      for (int j = 0; j < nd; ++j) sm[j][t] = __dadd_rn(sm[j][t], sm[j][t + h]);
    __syncthreads();
  }
  if (t < 32)
    for (int j = 0; j < nd; ++j) {
      double x = sm[j][t];
      for (int h = 16; h > 0; h >>= 1) x = __dadd_rn(x, __shfl_down_sync(0xffffffffu, x, h));
      v[j] = x;
    }
  __syncthreads();
}

/* Every block, every thread, after its share of a phase that ends in a reduction, arrival event m (the reductions and
 * the grid barriers count on one counter): counts the block in (after all
 * its threads' stores, acq_rel at GPU scope) and returns true in the last block to arrive, which then has every
 * other block's stores of the phase in view. It reduces and releases the scalars (publish); the others wait in
 * fetch. This replaces a grid sync before each reduction. */
__device__ bool last_arrival(const args_t &a, unsigned m) {
  __shared__ int last;
  __syncthreads(); /* the block's stores before thread 0's release */
  if (threadIdx.x == 0) {
    unsigned long long old;
    asm volatile("atom.add.acq_rel.gpu.u64 %0, [%1], 1;" : "=l"(old) : "l"(&a.ctl->arrived) : "memory");
    last = old + 1 == (unsigned long long)(m + 1) * gridDim.x;
  }
  __syncthreads(); /* thread 0's acquire before the block's reads */
  return last != 0;
}

/* Reduction step E (the last block to arrive, every thread): the local sums of the nd partials (block order, the
 * dot kernel's final stage), put into slot [me] of every rank (half m & 1) and signalled; the slots summed in rank
 * order into out (thread 0). Returns nonzero (every thread) when a wait gave up or the solve is aborted. */
__device__ __noinline__ int reduce_one(const args_t &a, double (*sm)[RT], int nd, uint64_t E, unsigned m, double out[4]) {
  const int t = threadIdx.x, P = a.w.size;
  double v[4] = {0.0, 0.0, 0.0, 0.0};
  for (int j = 0; j < nd; ++j)
    for (int b = t; b < a.nb; b += RT) v[j] = __dadd_rn(v[j], ld(a.part + (size_t)b * 4 + j));
  block_tree(sm, nd, v);
  const size_t half = (size_t)(m & 1u) * P * 4 * sizeof(double);
  if (t == 0) {
    for (int p = 0; p < P; ++p) rmaop_dev_put(&a.w, p, half + (size_t)a.w.rank * 4 * sizeof(double), v, nd * sizeof(double));
    for (int p = 0; p < P; ++p) rmaop_dev_signal(&a.w, p, E);
  }
  int failed = 0;
  if (t < P) failed = wait_sig(a, t, E);
  failed = __syncthreads_or(failed);
  if (t == 0 && !failed) {
    const double *slots = (const double *)(a.w.base[a.w.rank] + half);
    for (int j = 0; j < nd; ++j) {
      double s = __ldcv(slots + j);
      for (int p = 1; p < P; ++p) s = __dadd_rn(s, __ldcv(slots + (size_t)p * 4 + j));
      out[j] = s;
    }
  }
  return failed;
}

/* The reducing block's thread 0, after it wrote the scalars: raises abort when `failed`, then releases step E. */
__device__ void publish(const args_t &a, uint64_t E, int failed) {
  if (failed) raise_abort(a);
  st_release_gpu(&a.ctl->go, E);
}

/* A block's thread 0 until *word reaches want: relaxed polls POLL_NS apart, the abort word and the clock every 32,
 * then one acquire, so what was stored before the release of that value is visible after it. true: the solve is
 * aborted. (Inlined in both callers: as a call it cost 4 % at 2^20.) */
__device__ __forceinline__ bool wait_until(const args_t &a, const uint64_t *word, uint64_t want) {
  const uint64_t t0 = gtimer();
  for (unsigned spin = 1; ld_relaxed_gpu(word) < want; ++spin) {
    __nanosleep(POLL_NS);
    if ((spin & 31u) != 0u) continue;
    if (aborted(a)) break;
    if (gtimer() - t0 > 2 * a.w.timeout_ns + 1000000000ull) { /* block 0 bounds its waits: defensive only */
      raise_abort(a);
      break;
    }
  }
  (void)ld_acquire_gpu(word);
  return aborted(a) != 0;
}

/* Every block: waits for the reducing block's release of step E and reads the scalars. false: stop (aborted). */
__device__ bool fetch(const args_t &a, uint64_t E, double sc[8]) {
  __shared__ int stop;
  if (threadIdx.x == 0) stop = wait_until(a, &a.ctl->go, E);
  __syncthreads();
  for (int k = 0; k < 8; ++k) sc[k] = ((volatile double *)a.ctl->sc)[k];
  const bool go = !stop;
  __syncthreads();
  return go;
}

/* Every block, every thread, at the end of a phase that ends in a reduction of nd partials: step ++E, reduction m
 * (last_arrival; in the last block reduce_one into red, then thread 0 runs write(red) unless a wait gave up, and
 * publish), ++m, then fetch's scalars into sc. write computes and stores the scalars from the nd sums red[0..nd).
 * red is the caller's, one array for the whole solve (an array scoped here changes the element loops' stack slots).
 * false: stop (every thread). */
template <typename W>
__device__ __forceinline__ bool reduce_step(const args_t &a, double (*sm)[RT], int nd, uint64_t &E, unsigned &m,
                                            unsigned bars, double sc[8], double red[4], W write) {
  ++E;
  if (last_arrival(a, m + bars)) {
    const int f = reduce_one(a, sm, nd, E, m, red);
    if (threadIdx.x == 0) {
      if (!f) write((const double *)red);
      publish(a, E, f);
    }
  }
  ++m;
  return fetch(a, E, sc);
}

/* Element loop in the dot kernel's shape: f(e, acc) for every element of virtual block vb's threads, then the
 * block's partials of nd dots into part[vb][0..nd). pre: the vectors f reads (NULL: none), prefetched into L2 one
 * element of the thread ahead, so that the loads f waits on, one element at a time, come from L2 (at 2^25
 * elements on one H200: CGLS 1475 -> 1375 us per iteration, CG 1713 -> 1564; two elements ahead: 1437, 1609). */
template <typename F, typename... P> __device__ void elements(const args_t &a, double (*sm)[RT], int nd, F f, P... pre) {
  const int64_t step = (int64_t)a.nb * RT;
  for (int vb = blockIdx.x; vb < a.nb; vb += gridDim.x) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t e = (int64_t)vb * RT + threadIdx.x; e < a.n; e += step) {
      if (e + step < a.n) (prefetch_l2(pre, e + step), ...);
      f(e, acc);
    }
    if (nd > 0) {
      block_tree(sm, nd, acc);
      if (threadIdx.x == 0)
        for (int j = 0; j < nd; ++j) a.part[(size_t)vb * 4 + j] = acc[j];
    }
  }
}

/* Block 0: value(e) for the rows of every halo transfer, stored into the peers' ghost areas (halo h, parity p),
 * then one signal of step E to each of those peers. Every thread of block 0. */
template <typename F> __device__ __noinline__ void send_early(const args_t &a, int h, int p, uint64_t E, F value) {
  const int64_t w = a.sd.ninner;
  for (int k = 0; k < a.nsend; ++k) {
    const rmaop__res_send &s = a.send[k];
    for (int64_t idx = threadIdx.x; idx < s.nrows * w; idx += RT) {
      const int64_t lr = s.row + idx / w, i = idx % w;
      const double v = value(lr * w + i);
      rmaop_dev_put(&a.w, s.peer, ghost_byte(a, h, p, s.dst_row + idx / w, i), &v, sizeof v);
    }
  }
  __syncthreads(); /* the block's stores before thread 0's release */
  if (threadIdx.x == 0)
    for (int k = 0; k < a.nsend_peers; ++k) rmaop_dev_signal(&a.w, a.send_peers[k], E);
}

/* Element e (row lr) was just computed as v: stored into every peer whose ghost rows hold it (halo h, parity p). */
__device__ __noinline__ void send_elem(const args_t &a, int h, int p, int64_t lr, int64_t i, double v) {
  for (int k = 0; k < a.nsend; ++k) {
    const rmaop__res_send &s = a.send[k];
    if (lr >= s.row && lr < s.row + s.nrows)
      rmaop_dev_put(&a.w, s.peer, ghost_byte(a, h, p, s.dst_row + (lr - s.row), i), &v, sizeof v);
  }
}

__device__ __forceinline__ bool near_edge(const args_t &a, int64_t lr) { return lr < a.gw || lr >= a.sd.n - a.gw; }

/* Profile stamp k of iteration it (RMAOP_RESIDENT_PROFILE; block 0, thread 0). */
__device__ __forceinline__ void stamp(const args_t &a, int it, int k) {
  if (a.stamps && blockIdx.x == 0 && threadIdx.x == 0) a.stamps[(size_t)it * RMAOP__RES_NSTAMP + k] = gtimer();
}

__device__ void finish(const args_t &a, int it, int reason, double kold) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    a.ctl->iterations = it;
    a.ctl->reason = reason;
    a.ctl->kold = kold;
  }
}

/* Every block, every thread: a grid-wide barrier, arrival event n of the counter last_arrival uses (the reductions'
 * and the barriers' events in one sequence). Thread 0 counts its block in (release, after the block's stores),
 * polls relaxed POLL_NS apart until every block has, then acquires. false (every thread): the solve is aborted.
 * In place of cooperative groups' grid.sync (one H200, 1 rank, one call: CG derivspd 2^25 1555.9 -> 1528.5 us/it,
 * CGLS and the smaller sizes a tie); the launch stays cooperative, which guarantees that every block is resident. */
__device__ bool grid_barrier(const args_t &a, unsigned n) {
  __shared__ int stop;
  __syncthreads(); /* the block's stores before thread 0's release */
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(&a.ctl->arrived) : "memory");
    stop = wait_until(a, &a.ctl->arrived, (uint64_t)(n + 1) * gridDim.x);
  }
  __syncthreads(); /* thread 0's acquire before the block's loads */
  return !stop;
}

#define SYNC_OR_LEAVE()                                                                                                \
  do {                                                                                                                 \
    if (!grid_barrier(a, m + bars++)) return;                                                                          \
  } while (0)

/* CGLS (PyLops recurrences; src/solvers/solver.c's loop) on D. */
__device__ void cgls(const args_t &a, double (*sm)[RT]) {
  const int64_t w = a.sd.ninner;
  const bool b0 = blockIdx.x == 0;
  uint64_t E = 0;
  unsigned m = 0, bars = 0; /* reductions and grid barriers so far: together, the arrival counter's events */
  double sc[8], red[4];
  int cs = 0, cc_ = 0; /* current s and c buffers */
  /* start: r.r, s.s and the first alpha's q.q, c.c */
  elements(a, sm, 4, [&](int64_t e, double *acc) {
    const double r = ld(a.r + e), s = ld(a.s[0] + e), q = ld(a.q + e), c = ld(a.c[0] + e);
    acc[0] = __fma_rn(r, r, acc[0]), acc[1] = __fma_rn(s, s, acc[1]);
    acc[2] = __fma_rn(q, q, acc[2]), acc[3] = __fma_rn(c, c, acc[3]);
  });
  if (!reduce_step(a, sm, 4, E, m, bars, sc, red, [&](const double *sum) {
        a.ctl->sc[RMAOP__RES_KOLD] = fabs(sum[0]), a.hist[0] = sqrt(sum[1]);
        a.ctl->sc[RMAOP__RES_QQ] = sum[2], a.ctl->sc[RMAOP__RES_CC] = sum[3];
      }))
    return;
  double kold = sc[RMAOP__RES_KOLD], qq = sc[RMAOP__RES_QQ], cc = sc[RMAOP__RES_CC];
  int it = 0;
  for (;;) {
    if (!(it < a.niter && kold > a.tol)) return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    const int si = it; /* the iteration's profile stamps */
    stamp(a, si, 0);
    const double den = __dadd_rn(qq, __dmul_rn(a.damp2, cc));
    if (den == 0.0) return finish(a, it, RMAOP_REASON_BREAKDOWN, kold);
    const double al = kold / den;
    const double *q = a.q, *sold = a.s[cs], *c = a.c[cc_];
    double *snew = a.s[1 - cs];
    /* x += a c, s -= a q; s's rows for the neighbours first (halo 0) */
    const uint64_t Es = ++E;
    const int ps = it & 1;
    if (b0) send_early(a, 0, ps, Es, [&](int64_t e) { return axpby(-al, ld(q + e), 1.0, ld(sold + e)); });
    elements(a, sm, 0, [&](int64_t e, double *) {
      const double cv = ld(c + e), xv = ld(a.x + e), qv = ld(q + e), sv = ld(sold + e); /* loads before stores */
      a.x[e] = axpby(al, cv, 1.0, xv);
      snew[e] = axpby(-al, qv, 1.0, sv);
    }, c, (const double *)a.x, q, sold);
    SYNC_OR_LEAVE();
    stamp(a, si, 1);
    /* r = A^H s (- damp2 x); r.r, s.s */
    elements(a, sm, 2, [&](int64_t e, double *acc) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      if (near_edge(a, lr)) halo_wait(a, Es);
      double r = adjoint(a, a.sd.off + lr, i, [&](int64_t g, int64_t ii) {
        return is_local(a.sd, g) ? ld(snew + (g - a.sd.off) * w + ii) : ghost_at(a, 0, ps, g, ii);
      });
      const double s = ld(snew + e);
      if (a.damp2 != 0.0) r = axpby(-a.damp2, ld(a.x + e), 1.0, r);
      a.r[e] = r;
      acc[0] = __fma_rn(r, r, acc[0]), acc[1] = __fma_rn(s, s, acc[1]);
    }, (const double *)snew, a.damp2 != 0.0 ? (const double *)a.x : nullptr);
    stamp(a, si, 2);
    cs = 1 - cs;
    if (!reduce_step(a, sm, 2, E, m, bars, sc, red, [&](const double *sum) {
          const double k = fabs(sum[0]);
          a.hist[it + 1] = sqrt(sum[1]);
          a.ctl->sc[RMAOP__RES_B] = k / kold, a.ctl->sc[RMAOP__RES_KOLD] = k;
          *a.progress = it + 1;
        }))
      return;
    stamp(a, si, 3);
    const double b = sc[RMAOP__RES_B];
    kold = sc[RMAOP__RES_KOLD];
    ++it;
    if (!(it < a.niter && kold > a.tol)) return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    /* c = r + b c and q = A c; q.q, c.c. c's rows for the neighbours first (halo 1); a neighbour row of c inside
     * this rank is recomputed from r and the old c, which nobody writes in this phase. */
    const double *cold = a.c[cc_];
    double *cnew = a.c[1 - cc_];
    const uint64_t Ec = ++E;
    const int pc = it & 1;
    auto cval = [&](int64_t e) { return axpby(1.0, ld(a.r + e), b, ld(cold + e)); };
    if (b0) send_early(a, 1, pc, Ec, cval);
    elements(a, sm, 2, [&](int64_t e, double *acc) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      const double cn = cval(e);
      if (near_edge(a, lr)) halo_wait(a, Ec);
      const double qv = forward(a, a.sd.off + lr, i, [&](int64_t g, int64_t ii) {
        return is_local(a.sd, g) ? cval((g - a.sd.off) * w + ii) : ghost_at(a, 1, pc, g, ii);
      });
      cnew[e] = cn; /* the stores after every load of the element */
      a.q[e] = qv;
      acc[0] = __fma_rn(qv, qv, acc[0]), acc[1] = __fma_rn(cn, cn, acc[1]);
    }, (const double *)a.r, cold);
    stamp(a, si, 4);
    cc_ = 1 - cc_;
    if (!reduce_step(a, sm, 2, E, m, bars, sc, red, [&](const double *sum) {
          a.ctl->sc[RMAOP__RES_QQ] = sum[0], a.ctl->sc[RMAOP__RES_CC] = sum[1];
        }))
      return;
    stamp(a, si, 5);
    qq = sc[RMAOP__RES_QQ], cc = sc[RMAOP__RES_CC];
  }
}

/* CG (PyLops recurrences) on D^H D (+ diag(dg)): t = D c, then Ac = D^H t (+ dg c). */
__device__ void cgd(const args_t &a, double (*sm)[RT]) {
  const int64_t w = a.sd.ninner;
  const bool b0 = blockIdx.x == 0;
  uint64_t E = 0;
  unsigned m = 0, bars = 0; /* reductions and grid barriers so far: together, the arrival counter's events */
  double sc[8], red[4];
  int cc_ = 0;
  elements(a, sm, 1, [&](int64_t e, double *acc) {
    const double r = ld(a.r + e);
    acc[0] = __fma_rn(r, r, acc[0]);
  });
  if (!reduce_step(a, sm, 1, E, m, bars, sc, red, [&](const double *sum) {
        a.ctl->sc[RMAOP__RES_KOLD] = fabs(sum[0]), a.hist[0] = sqrt(fabs(sum[0]));
      }))
    return;
  double kold = sc[RMAOP__RES_KOLD], b = 0.0;
  int it = 0;
  for (;;) {
    if (!(it < a.niter && kold > a.tol)) return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    const int si = it; /* the iteration's profile stamps */
    stamp(a, si, 0);
    const double *cold = a.c[cc_];
    double *cnew = a.c[1 - cc_];
    const int first = it == 0, p = it & 1;
    /* c = r + b c (the start's c = r as given), t = D c; c's rows for the neighbours first (halo 1), t's rows
     * stored into the neighbours as they are made (halo 0) */
    auto cval = [&](int64_t e) { return first ? ld(cold + e) : axpby(1.0, ld(a.r + e), b, ld(cold + e)); };
    const uint64_t Ec = ++E;
    if (b0) send_early(a, 1, p, Ec, cval);
    elements(a, sm, 0, [&](int64_t e, double *) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      const double cn = cval(e);
      if (near_edge(a, lr)) halo_wait(a, Ec);
      const double tv = forward(a, a.sd.off + lr, i, [&](int64_t g, int64_t ii) {
        return is_local(a.sd, g) ? cval((g - a.sd.off) * w + ii) : ghost_at(a, 1, p, g, ii);
      });
      cnew[e] = cn; /* the stores after every load of the element */
      a.t[e] = tv;
      if (near_edge(a, lr)) send_elem(a, 0, p, lr, i, tv);
    }, first ? nullptr : (const double *)a.r, cold);
    SYNC_OR_LEAVE();
    stamp(a, si, 1);
    const uint64_t Et = ++E;
    if (b0 && threadIdx.x == 0) /* the grid sync ordered every block's t stores before this release */
      for (int k = 0; k < a.nsend_peers; ++k) rmaop_dev_signal(&a.w, a.send_peers[k], Et);
    /* Ac = D^H t (+ dg c, the sum's second term added last); c.Ac */
    elements(a, sm, 1, [&](int64_t e, double *acc) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      if (near_edge(a, lr)) halo_wait(a, Et);
      double qv = adjoint(a, a.sd.off + lr, i, [&](int64_t g, int64_t ii) {
        return is_local(a.sd, g) ? ld(a.t + (g - a.sd.off) * w + ii) : ghost_at(a, 0, p, g, ii);
      });
      const double cn = ld(cnew + e);
      if (a.dg) qv = __dadd_rn(qv, __dmul_rn(ld(a.dg + e), cn));
      a.q[e] = qv;
      acc[0] = __fma_rn(qv, cn, acc[0]);
    }, (const double *)a.t, (const double *)cnew, a.dg);
    stamp(a, si, 2);
    cc_ = 1 - cc_;
    if (!reduce_step(a, sm, 1, E, m, bars, sc, red, [&](const double *sum) {
          const double cAc = fabs(sum[0]);
          a.ctl->sc[RMAOP__RES_STOP] = cAc == 0.0;
          a.ctl->sc[RMAOP__RES_A] = cAc == 0.0 ? 0.0 : kold / cAc;
        }))
      return;
    stamp(a, si, 3);
    if (sc[RMAOP__RES_STOP] != 0.0) return finish(a, it, RMAOP_REASON_BREAKDOWN, kold);
    const double al = sc[RMAOP__RES_A];
    /* x += a c, r -= a Ac; r.r */
    const double *c = a.c[cc_];
    elements(a, sm, 1, [&](int64_t e, double *acc) {
      const double cv = ld(c + e), xv = ld(a.x + e), qv = ld(a.q + e), rv = ld(a.r + e); /* loads before stores */
      a.x[e] = axpby(al, cv, 1.0, xv);
      const double r = axpby(-al, qv, 1.0, rv);
      a.r[e] = r;
      acc[0] = __fma_rn(r, r, acc[0]);
    }, c, (const double *)a.x, (const double *)a.q, (const double *)a.r);
    stamp(a, si, 4);
    if (!reduce_step(a, sm, 1, E, m, bars, sc, red, [&](const double *sum) {
          const double k = fabs(sum[0]);
          a.ctl->sc[RMAOP__RES_B] = k / kold, a.ctl->sc[RMAOP__RES_KOLD] = k;
          a.hist[it + 1] = sqrt(k);
          *a.progress = it + 1;
        }))
      return;
    stamp(a, si, 5);
    b = sc[RMAOP__RES_B], kold = sc[RMAOP__RES_KOLD];
    ++it;
  }
}

/* 4 blocks per SM (64 registers): the streaming phases are bound by loads in flight, and 2 blocks per SM (the
 * 127 registers the inlined kernel takes) measured 1.81x the streaming bound for CGLS at 2^25 elements on one H200,
 * 3 per SM 1.55x, 4 per SM 1.36x (the host-driven loop 1.29x; with the prefetch in elements 1.27x). 64 registers
 * fit with about 100 bytes of spill because the paths that only one block or the ghost rows take (reduce_one,
 * send_early, send_elem, forward_edge, adjoint_edge) are calls, not inlined into the loops. */
__global__ void __launch_bounds__(RT, 4) k_resident(const __grid_constant__ args_t a) {
  __shared__ double sm[4][RT];
  if (a.cg) cgd(a, sm);
  else cgls(a, sm);
}

} // namespace

extern "C" int rmaop__dev_resident_grid(rmaop_ctx ctx, int nb, int share) {
  int coop = 0, sms = 0, occ = 0;
  if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, ctx->device) != cudaSuccess || !coop ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_resident, RT, 0) != cudaSuccess || occ < 1) {
    (void)cudaGetLastError();
    return 0;
  }
  int g = sms * occ / (share > 1 ? share : 1);
  if (g < 1) g = 1;
  if (nb < 1) nb = 1;
  if (g > nb) g = nb;
  const int per = (nb + g - 1) / g; /* virtual blocks per block; then the fewest blocks with that load */
  return (nb + per - 1) / per;
}

extern "C" rmaop_status rmaop__dev_resident_run(rmaop_ctx ctx, const rmaop__res_args *a, int grid, const char *fn,
                                                int *stuck) {
  *stuck = 0;
  void *params[] = {(void *)a};
  RMAOP_CHECK_CUDA(ctx, cudaLaunchCooperativeKernel((const void *)k_resident, dim3((unsigned)grid), dim3(RT), params, 0,
                                                    STREAM(ctx)));
  /* Bounded by progress, not by the solve's length: every iteration moves *progress on; the kernel's own waits
   * give up after the timeout, so only a kernel that never gets the GPU stays here that long. */
  int seen = -1;
  double last = rmaop__wtime();
  for (unsigned spin = 0;; ++spin) {
    const cudaError_t e = cudaStreamQuery(STREAM(ctx));
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady)
      return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "%s: the GPU-resident solve failed: %s (%s)", fn, cudaGetErrorString(e),
                         cudaGetErrorName(e));
    if (spin < 4096) continue;
    const double now = rmaop__wtime();
    if (*a->progress != seen) seen = *a->progress, last = now;
    if (now - last > 1.25 * ctx->timeout + 1.0) {
      *stuck = 1;
      RMAOP_CHECK(rmaop__dev_check_waits(ctx));
      return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                         "%s: rank %d's GPU-resident solve made no progress for %g s (RMAOP_TIMEOUT + 25 %%): a peer "
                         "never reached its solve? The kernel still runs: its memory is leaked",
                         fn, ctx->rank, now - last);
    }
    if (spin > 65536) sched_yield();
  }
  RMAOP_CHECK(rmaop__dev_check_waits(ctx));
  return RMAOP_OK;
}
