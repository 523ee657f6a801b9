/* GPU-resident CG and CGLS (RMAOP_SOLVER_SCALARS=resident; host side: src/solvers/solver_resident.c): one
 * cooperative kernel runs every iteration of a solve, with no host step between them.
 *
 * CGLS's iteration is two phases (x, s and r = A^H s; then c and q = A c), each ending in a reduction that is also
 * the grid's barrier: each block counts itself in on an arrival counter (acq_rel), the last to arrive reduces and
 * releases the scalars through a release/acquire word that the others wait on (the launch is cooperative so that
 * every block is resident). No phase reads what another block writes in the same phase: a stencil tap on a row
 * that the phase makes is recomputed from the phase's inputs (the new s from the old s and q, c from r and the
 * old c). CG's is three (c and t = D c, then a grid barrier; A c = D^H t and its reduction; x and r and theirs):
 * recomputing t's rows for D^H's taps instead of the barrier measured slower (PERFORMANCE.md).
 *
 * Element loops use the launch shape of the library's dot kernel (rmaop__dev_dots: nb blocks of 256 threads,
 * element e handled by thread e % 256 of virtual block (e / 256) % nb, partials combined by a shared-memory tree,
 * then summed in block order), emulated over the co-resident blocks, and the element arithmetic of the library's
 * vector kernels (k_axpby: a x + y is one fused multiply-add; the stencils: separately rounded products and sums),
 * so the scalars, the history and x are those of the host-scalar loop on the same GPUs, bit for bit where the
 * stencil sums have at most two terms (every first derivative). A row whose taps are all local interior rows of a
 * stencil that reaches one row (every 3-point stencil) reads its three values before using any, with no ghost test
 * per tap (taps_lean; CGLS at 2^26 on 2 x H200 went from 1.28x to 0.95x the streaming bound with it, PERFORMANCE.md).
 * The other rows (near an edge, or every row of a wider stencil) go through the general path (stencil_any).
 *
 * Communication goes through the public device window API (include/rmaop/rmaop_device.cuh) on a window of the
 * solve: a reduction sends each rank's local sums into slot [me] of every rank as an inline message; every rank
 * sums the slots 0..P-1 in rank order (identical bits everywhere, so every rank takes the same stop decision).
 * Halos: the rows a neighbour's stencil reaches are stored into its ghost area by the reducing block of the
 * reduction before the phase, before it releases the scalars (recomputed there: s - a q, r + b c; reduce_step says
 * why), or as they are made (CG's t). A small halo (at most RMAOP__RES_INLINE_GHOST elements a side) goes as inline
 * messages, each element two words that carry the step, polled by the threads whose taps read it, which store the
 * doubles for their own reads: no fence, no signal. A larger one is put and signalled (CG's t after the grid
 * barrier), and the threads with rows near the edges wait for the signal. Every signal and message carries the
 * solve's step number (the same sequence on every rank, increasing per pair, so a wait for >= the step is exact);
 * the solve's end zeroes the words peers write, for the next solve on the window. One pair's signals are ordered:
 * each signal's block acquired the release of the reduction that followed the signal before it (or of the grid
 * barrier). A wait that gives up after the context's timeout records it (rmaop_dev_wait), raises the abort word,
 * and every block leaves at its next check (after each grid barrier, and inside every other wait). */
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

/* Vector loads: plain, cached in L1. Another block may have written the element in an earlier phase; the
 * reduction between (a release/acquire chain through every block) makes that store visible to weak loads after
 * it, and no phase reads an element that another block writes in the same phase (the top of the file). */
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

/* Index of ghost element (row gr of the 2 gw ghost rows, inner i) of halo h, parity p: the element's double is at
 * byte ghost_off + 8 index of any rank's window, its inline message (two words) at inline_off + 16 index. */
__device__ __forceinline__ size_t ghost_index(const args_t &a, int h, int p, int64_t gr, int64_t i) {
  return ((size_t)(h * 2 + p) * 2 * a.gw + gr) * a.sd.ninner + i;
}
__device__ __forceinline__ size_t ghost_byte(const args_t &a, int h, int p, int64_t gr, int64_t i) {
  return a.ghost_off + ghost_index(a, h, p, gr, i) * sizeof(double);
}

/* Stores v as ghost element (row gr, inner i) of halo h, parity p, of rank peer: a put of the double, or in the
 * inline layout the two words of its message carrying step E (no signal needed). */
__device__ __forceinline__ void ghost_put(const args_t &a, int peer, int h, int p, int64_t gr, int64_t i, double v,
                                          uint64_t E) {
  if (!a.inl) {
    rmaop_dev_put(&a.w, peer, ghost_byte(a, h, p, gr, i), &v, sizeof v);
    return;
  }
  uint64_t *d = (uint64_t *)(a.w.base[peer] + a.inline_off) + 2 * ghost_index(a, h, p, gr, i);
  const uint64_t tag = (uint64_t)(uint32_t)E << 32;
  rmaop__dev_st_relaxed_sys(d, tag | (uint32_t)__double2loint(v));
  rmaop__dev_st_relaxed_sys(d + 1, tag | (uint32_t)__double2hiint(v));
}

/* Global row g (not local) of halo h, parity p, from the own ghost area, after halo_wait (which in the inline
 * layout stored the thread's ghost doubles there itself). */
__device__ __forceinline__ double ghost_at(const args_t &a, int h, int p, int64_t g, int64_t i) {
  const int64_t gr = g < a.sd.off ? g - (a.sd.off - a.gw) : a.gw + (g - (a.sd.off + a.sd.n));
  return __ldcv((const double *)(a.w.base[a.w.rank] + ghost_byte(a, h, p, gr, i)));
}

/* Polls the NW consecutive inline words at `word` (relaxed: each word is its own signal) until each carries
 * sequence number seq, then their payloads into out[0..NW). Leaves early when another wait raised the abort word,
 * and after the context's timeout records the failure (origin o, the first word's stale sequence) as the inline
 * wait of rmaop_device.cuh does. 0, or 1 when the solve must stop. One thread. */
template <int NW>
__device__ __forceinline__ int wait_words(const args_t &a, const uint64_t *word, int o, uint32_t seq,
                                          uint32_t out[NW]) {
  const uint64_t t0 = gtimer();
  for (unsigned spin = 1;; ++spin) {
    uint64_t v[NW];
    bool all = true;
#pragma unroll
    for (int k = 0; k < NW; ++k) {
      v[k] = rmaop__dev_ld_relaxed_sys(word + k);
      all = all && (uint32_t)(v[k] >> 32) == seq;
    }
    if (all) {
#pragma unroll
      for (int k = 0; k < NW; ++k)
        out[k] = (uint32_t)v[k];
      return 0;
    }
    if ((spin & 31u) != 0u)
      continue;
    if (aborted(a))
      return 1;
    if (gtimer() - t0 > a.w.timeout_ns) {
      uint64_t stale = v[0] >> 32;
#pragma unroll
      for (int k = NW - 1; k >= 0; --k)
        if ((uint32_t)(v[k] >> 32) != seq)
          stale = v[k] >> 32;
      rmaop__dev_wait_gave_up(&a.w, o, seq, stale);
      return 1;
    }
  }
}

/* Inline layout: waits until the two words of ghost element k carry step E (wait_words; the failure names the
 * row's owner o), then stores its double where ghost_at reads it, for this thread's taps (a thread reads its own
 * store; another thread near the edge may store the same value). 0, or 1 when the solve must stop. One thread. */
__device__ __noinline__ int wait_ghost(const args_t &a, size_t k, int o, uint64_t E) {
  const uint64_t *word = (const uint64_t *)(a.w.base[a.w.rank] + a.inline_off) + 2 * k;
  uint32_t half[2];
  if (wait_words<2>(a, word, o, (uint32_t)E, half))
    return 1;
  ((double *)(a.w.base[a.w.rank] + a.ghost_off))[k] = __hiloint2double((int)half[1], (int)half[0]);
  return 0;
}

/* Before a thread's taps on local row lr (near an edge), inner i, read ghost rows of halo h, parity p, step E:
 * with puts, every rank that sends this one ghost rows has signalled E; in the inline layout, the ghost elements
 * (rows gw before the first row if lr < gw, gw after the last if lr >= n - gw, those inside the operator) carry
 * E. A wait that gives up raises the abort word. One thread. */
__device__ void halo_wait(const args_t &a, int h, int p, int64_t lr, int64_t i, uint64_t E) {
  if (!a.inl) {
    for (int k = 0; k < a.nrecv; ++k)
      if (wait_sig(a, a.recv[k], E)) {
        raise_abort(a);
        return;
      }
    return;
  }
  for (int gr = 0; gr < 2 * a.gw; ++gr) {
    const int o = a.ghost_owner[gr];
    if (o < 0 || (gr < a.gw ? lr >= a.gw : lr < a.sd.n - a.gw))
      continue;
    if (wait_ghost(a, ghost_index(a, h, p, gr, i), o, E)) {
      raise_abort(a);
      return;
    }
  }
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

/* taps<S> for a row whose taps are all local rows with the interior coefficients, when they reach one row
 * (a.lean): v(d) is the value of row g + d (d = -1, 0, 1), all three read before any is used, with no test per tap,
 * so that their loads go out together (the general path's ghost test per tap kept them one after another). The
 * terms, their order and rounding are taps<S>'s. */
template <int S, typename V> __device__ __forceinline__ double taps_lean(const double c[RMAOP__NK], V v) {
  const double u[3] = {v(-S), v(0), v(S)}; /* u[k + 1] = v(S k) */
  double s = 0.0;
  bool first = true;
#pragma unroll
  for (int k = -1; k <= 1; ++k)
    if (c[k + 2] != 0.0) {
      const double t = __dmul_rn(c[k + 2], u[k + 1]);
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

/* Local row lr is within gw rows of this rank's first or last row: its taps may reach ghost rows. */
__device__ __forceinline__ bool near_edge(const args_t &a, int64_t lr) {
  return lr < a.gw || lr >= a.sd.n - a.gw;
}

/* Local row lr (global lr + off) takes the lean taps: a.lean, no tap in a ghost row, and the row in [lo, hi), the
 * rows of the interior coefficients (forward: int_lo, int_hi; adjoint: jlo, jhi). */
__device__ __forceinline__ bool lean_row(const args_t &a, int64_t lr, int64_t lo, int64_t hi) {
  const int64_t g = a.sd.off + lr;
  return a.lean && !near_edge(a, lr) && g >= lo && g < hi;
}

/* Row lr, inner i, of the forward stencil (D) or of the adjoint (Adj) for the rows lean_row does not take: the wait
 * for the ghost rows (halo h, parity p, step E) where the row is near an edge, then forward or adjoint with v(g)
 * local(element of row g) for a local row, else the ghost row. Inlined: as a call (not inlined) the registers it
 * clobbers were saved around it in the streaming loops, and CGLS at 2^26 on 2 x H200 took 1280 us per iteration
 * against 1166 (PERFORMANCE.md). */
template <bool Adj, typename L>
__device__ __forceinline__ double stencil_any(const args_t &a, int h, int p, int64_t lr, int64_t i, uint64_t E,
                                              L local) {
  const int64_t w = a.sd.ninner;
  if (near_edge(a, lr))
    halo_wait(a, h, p, lr, i, E);
  auto v = [&](int64_t g, int64_t ii) {
    return is_local(a.sd, g) ? local((g - a.sd.off) * w + ii) : ghost_at(a, h, p, g, ii);
  };
  return Adj ? adjoint(a, a.sd.off + lr, i, v) : forward(a, a.sd.off + lr, i, v);
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

/* Every block, every thread, after its share of a phase, arrival event m (the solve's reductions and grid barriers,
 * counted on one counter): counts the block in (after all its threads' stores, acq_rel at GPU scope) and returns true
 * in the last block to arrive, which then has every other block's stores of the phase in view. It reduces and releases
 * the scalars (publish); the others wait in fetch. */
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

/* A rank's slot in a reduction half: its nd <= 4 local sums as an inline message of rmaop_device.cuh, 8-byte words
 * {4 payload bytes, the step as sequence number}. */
enum { SLOT_WORDS = RMAOP__RES_SLOT_WORDS };
static_assert(SLOT_WORDS * sizeof(uint64_t) == RMAOP_DEV_INLINE_BYTES(4 * sizeof(double)), "a slot holds 4 sums");

/* Reduction step E (the last block to arrive, every thread): the local sums of the nd partials (block order, the
 * dot kernel's final stage), sent as an inline message into slot [me] of every rank (half m & 1, one word per
 * thread); the slots summed in rank order into out (thread 0). An inline message needs no release fence, which
 * a put + signal waits on for a round trip over NVLink. Returns nonzero (every thread) when a wait gave up or the
 * solve is aborted. A half is written again two reductions later, when every rank has read it: a rank sends
 * reduction m + 2 after its reduction m + 1 had every rank's message, each sent after that rank read reduction m. */
__device__ __noinline__ int reduce_one(const args_t &a, double (*sm)[RT], int nd, uint64_t E, unsigned m, double out[4]) {
  __shared__ double mine[4];
  __shared__ uint32_t got[RMAOP_DEVICE_MAX_PEERS * SLOT_WORDS];
  const int t = threadIdx.x, P = a.w.size, nw = 2 * nd;
  double v[4] = {0.0, 0.0, 0.0, 0.0};
  for (int j = 0; j < nd; ++j)
    for (int b = t; b < a.nb; b += RT) v[j] = __dadd_rn(v[j], ld(a.part + (size_t)b * 4 + j));
  block_tree(sm, nd, v);
  if (t == 0)
    for (int j = 0; j < nd; ++j)
      mine[j] = v[j];
  __syncthreads();
  const size_t half = (size_t)(m & 1u) * P * SLOT_WORDS * sizeof(uint64_t);
  const uint32_t seq = (uint32_t)E;
  int failed = 0;
  if (t < P * nw) {
    const int p = t / nw, i = t % nw;
    const double d = mine[i / 2];
    const uint32_t word = (i & 1) ? (uint32_t)__double2hiint(d) : (uint32_t)__double2loint(d);
    uint64_t *dst = (uint64_t *)(a.w.base[p] + half + (size_t)a.w.rank * SLOT_WORDS * sizeof(uint64_t)) + i;
    rmaop__dev_st_relaxed_sys(dst, ((uint64_t)seq << 32) | word);
    const uint64_t *own = (const uint64_t *)(a.w.base[a.w.rank] + half + (size_t)p * SLOT_WORDS * sizeof(uint64_t)) + i;
    failed = wait_words<1>(a, own, p, seq, &got[p * SLOT_WORDS + i]);
  }
  failed = __syncthreads_or(failed);
  if (t == 0 && !failed)
    for (int j = 0; j < nd; ++j) {
      double s = __hiloint2double((int)got[2 * j + 1], (int)got[2 * j]);
      for (int p = 1; p < P; ++p)
        s = __dadd_rn(s, __hiloint2double((int)got[p * SLOT_WORDS + 2 * j + 1], (int)got[p * SLOT_WORDS + 2 * j]));
      out[j] = s;
    }
  return failed;
}

/* The reducing block's thread 0, after it wrote the scalars: raises abort when `failed`, then releases step E. (16
 * copies of the word on their own lines, each polled by 1/16 of the blocks, were slower: 2 x H200, one call, CGLS
 * deriv1d 2^20 50.8-51.1 us per iteration against 46.6-48.5, CG derivspd 52.1-52.3 against 43.5-44.0.) */
__device__ void publish(const args_t &a, uint64_t E, int failed) {
  if (failed)
    raise_abort(a);
  st_release_gpu(&a.ctl->go, E);
}

/* A block's thread 0 until *word reaches want: relaxed polls POLL_NS apart, the abort word and the clock every 32,
 * then one acquire, so what was stored before the release of that value is visible after it. true: the solve is
 * aborted. (Inlined: as a call it cost 4 % at 2^20.) */
__device__ __forceinline__ bool wait_until(const args_t &a, const uint64_t *word, uint64_t want) {
  const uint64_t t0 = gtimer();
  for (unsigned spin = 1; ld_relaxed_gpu(word) < want; ++spin) {
    __nanosleep(POLL_NS);
    if ((spin & 31u) != 0u) continue;
    if (aborted(a)) break;
    if (gtimer() - t0 > 2 * a.w.timeout_ns + 1000000000ull) { /* the reducing block bounds its waits: defensive only */
      raise_abort(a);
      break;
    }
  }
  (void)ld_acquire_gpu(word);
  return aborted(a) != 0;
}

/* Every block: waits for the reducing block's release of step E and reads the scalars: thread 0 from global memory
 * into shared, the block's threads from there. With every thread reading the one global line, each of the grid's
 * warps queued 8 requests on one L2 slice at once: on 2 x H200, two calls, CGLS deriv1d 2^20 65.1 -> 46.6-48.5 us
 * per iteration, CG derivspd 63.3 -> 43.5-44.0 (with the barrier below). false: stop (aborted). */
__device__ bool fetch(const args_t &a, uint64_t E, double sc[8]) {
  __shared__ int stop;
  __shared__ double got[8];
  if (threadIdx.x == 0) {
    stop = wait_until(a, &a.ctl->go, E);
    for (int k = 0; k < 8; ++k)
      got[k] = ((volatile double *)a.ctl->sc)[k];
  }
  __syncthreads();
  for (int k = 0; k < 8; ++k)
    sc[k] = got[k];
  const bool go = !stop;
  __syncthreads();
  return go;
}

/* A scalar the reducing block's thread 0 just wrote, read by any thread of that block after a __syncthreads. */
__device__ __forceinline__ double scal(const args_t &a, int k) {
  return ((volatile double *)a.ctl->sc)[k];
}

/* Every block, every thread, at the end of a phase that ends in a reduction of nd partials: step ++E, reduction m
 * (last_arrival; in the last block reduce_one into red, then thread 0 runs write(red) and every thread send()
 * unless a wait gave up, and thread 0 publishes), ++m, then fetch's scalars into sc. write computes and stores the
 * scalars from the nd sums red[0..nd); send stores the halo rows of the next phase into the neighbours (send_early;
 * it reads the scalars with scal): the reducing block has the scalars first, and the GPU is idle until it
 * publishes, so its loads and stores queue behind no streaming (made by block 0 at the start of the phase, with
 * every block streaming, they took about 10 us at 2^20 elements on 2 x H200, on the phase's critical path). red
 * is the caller's, one array for the whole solve (an array scoped here changes the element loops' stack slots).
 * false: stop (every thread). */
template <typename W, typename S>
__device__ __forceinline__ bool reduce_step(const args_t &a, double (*sm)[RT], int nd, uint64_t &E, unsigned &m,
                                            unsigned bars, double sc[8], double red[4], W write, S send) {
  ++E;
  if (last_arrival(a, m + bars)) {
    const int f = reduce_one(a, sm, nd, E, m, red);
    if (threadIdx.x == 0 && !f)
      write((const double *)red);
    __syncthreads(); /* thread 0's scalars before the block's sends */
    if (!f)
      send();
    if (threadIdx.x == 0)
      publish(a, E, f);
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

/* value(e) for the rows of every halo transfer, stored into the peers' ghost areas (halo h, parity p), then one
 * signal of step E to each of those peers (none in the inline layout). Every thread of one block. */
template <typename F> __device__ __noinline__ void send_early(const args_t &a, int h, int p, uint64_t E, F value) {
  const int64_t w = a.sd.ninner;
  for (int k = 0; k < a.nsend; ++k) {
    const rmaop__res_send &s = a.send[k];
    for (int64_t idx = threadIdx.x; idx < s.nrows * w; idx += RT) {
      const int64_t lr = s.row + idx / w, i = idx % w;
      ghost_put(a, s.peer, h, p, s.dst_row + idx / w, i, value(lr * w + i), E);
    }
  }
  if (a.inl)
    return;
  __syncthreads(); /* the block's stores before thread 0's release */
  if (threadIdx.x == 0)
    for (int k = 0; k < a.nsend_peers; ++k) rmaop_dev_signal(&a.w, a.send_peers[k], E);
}

/* Element e (row lr) was just computed as v: stored into every peer whose ghost rows hold it (halo h, parity p,
 * step E: the inline layout's tag; with puts, a signal after the grid barrier). */
__device__ __noinline__ void send_elem(const args_t &a, int h, int p, int64_t lr, int64_t i, double v, uint64_t E) {
  for (int k = 0; k < a.nsend; ++k) {
    const rmaop__res_send &s = a.send[k];
    if (lr >= s.row && lr < s.row + s.nrows)
      ghost_put(a, s.peer, h, p, s.dst_row + (lr - s.row), i, v, E);
  }
}

/* Iteration it runs, after the reduction that gave kold: the loops' stop test, and the reducing block's test before
 * it sends the rows of the phase that iteration would run (a neighbour that runs it waits for them). */
__device__ __forceinline__ bool runs(const args_t &a, int it, double kold) {
  return it < a.niter && kold > a.tol;
}

/* Profile stamp k of iteration it (RMAOP_RESIDENT_PROFILE; block 0, thread 0). */
__device__ __forceinline__ void stamp(const args_t &a, int it, int k) {
  if (a.stamps && blockIdx.x == 0 && threadIdx.x == 0) a.stamps[(size_t)it * RMAOP__RES_NSTAMP + k] = gtimer();
}

/* The solve's end, every block and thread, after the reduction that decided it: the result for the host, and the
 * words peers write into this rank zeroed for the next solve on the window (the host keeps it when every rank's
 * solve ended): the signal words and the reduction slots. Nothing of this solve is still on its way to them: every
 * signal and message a peer sent was waited for (the last reduction's from every rank, the halos' in their phase),
 * and block 0 acquired the reduction's release after its waits. The inline layout's ghost areas too. */
__device__ void finish(const args_t &a, int it, int reason, double kold) {
  if (blockIdx.x != 0)
    return;
  if (threadIdx.x == 0) {
    a.ctl->iterations = it;
    a.ctl->reason = reason;
    a.ctl->kold = kold;
  }
  const int P = a.w.size;
  for (int k = threadIdx.x; k < P; k += RT)
    a.w.signal[k] = 0;
  uint64_t *slots = (uint64_t *)a.w.base[a.w.rank];
  for (int k = threadIdx.x; k < 2 * P * SLOT_WORDS; k += RT)
    slots[k] = 0;
  if (!a.inl)
    return;
  uint64_t *ghost = (uint64_t *)(a.w.base[a.w.rank] + a.inline_off);
  const int64_t words = 2 * 2 * 2 * (int64_t)a.gw * a.sd.ninner * 2;
  for (int64_t k = threadIdx.x; k < words; k += RT)
    ghost[k] = 0;
}

/* Every block, every thread: a grid-wide barrier, arrival event n of the counter last_arrival uses (the reductions'
 * and the barriers' events in one sequence). Thread 0 counts its block in (acq_rel, after the block's stores); the
 * last to arrive releases event n + 1 in the barrier's word, which the others poll relaxed POLL_NS apart, then
 * acquire (as fetch: polling the counter itself queued the pollers on the line every block's count goes to).
 * false (every thread): the solve is aborted. In place of cooperative groups' grid.sync (one H200, 1 rank, one call: CG
 * derivspd 2^25 1555.9 -> 1528.5 us/it, CGLS and the smaller sizes a tie); the launch stays cooperative, which
 * guarantees that every block is resident. */
__device__ bool grid_barrier(const args_t &a, unsigned n) {
  __shared__ int stop;
  __syncthreads(); /* the block's stores before thread 0's release */
  if (threadIdx.x == 0) {
    unsigned long long old;
    asm volatile("atom.add.acq_rel.gpu.u64 %0, [%1], 1;" : "=l"(old) : "l"(&a.ctl->arrived) : "memory");
    if (old + 1 == (unsigned long long)(n + 1) * gridDim.x) {
      st_release_gpu(&a.ctl->bar, n + 1);
      stop = aborted(a) != 0;
    } else {
      stop = wait_until(a, &a.ctl->bar, n + 1);
    }
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
  uint64_t E = 0;
  unsigned m = 0, bars = 0; /* reductions and grid barriers so far: together, the arrival counter's events */
  double sc[8], red[4];
  int cs = 0, cc_ = 0; /* current s and c buffers */
  /* The reducing block, after the reduction that gives the q.q and c.c of iteration itn (E: its step): the rows of
   * s - a q the neighbours read in itn's first phase (halo 0, step E + 1), when itn runs (the loop's test below). */
  auto send_s = [&](int itn, const double *sold) {
    const double kold = scal(a, RMAOP__RES_KOLD);
    const double den = __dadd_rn(scal(a, RMAOP__RES_QQ), __dmul_rn(a.damp2, scal(a, RMAOP__RES_CC)));
    if (!runs(a, itn, kold) || den == 0.0)
      return;
    const double al = kold / den;
    send_early(a, 0, itn & 1, E + 1, [&](int64_t e) { return axpby(-al, ld(a.q + e), 1.0, ld(sold + e)); });
  };
  /* start: r.r, s.s and the first alpha's q.q, c.c */
  elements(a, sm, 4, [&](int64_t e, double *acc) {
    const double r = ld(a.r + e), s = ld(a.s[0] + e), q = ld(a.q + e), c = ld(a.c[0] + e);
    acc[0] = __fma_rn(r, r, acc[0]), acc[1] = __fma_rn(s, s, acc[1]);
    acc[2] = __fma_rn(q, q, acc[2]), acc[3] = __fma_rn(c, c, acc[3]);
  });
  if (!reduce_step(
          a, sm, 4, E, m, bars, sc, red,
          [&](const double *sum) {
            a.ctl->sc[RMAOP__RES_KOLD] = fabs(sum[0]), a.hist[0] = sqrt(sum[1]);
            a.ctl->sc[RMAOP__RES_QQ] = sum[2], a.ctl->sc[RMAOP__RES_CC] = sum[3];
          },
          [&] { send_s(0, a.s[0]); }))
    return;
  double kold = sc[RMAOP__RES_KOLD], qq = sc[RMAOP__RES_QQ], cc = sc[RMAOP__RES_CC];
  int it = 0;
  for (;;) {
    if (!runs(a, it, kold))
      return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    const int si = it; /* the iteration's profile stamps */
    stamp(a, si, 0);
    const double den = __dadd_rn(qq, __dmul_rn(a.damp2, cc));
    if (den == 0.0)
      return finish(a, it, RMAOP_REASON_BREAKDOWN, kold);
    const double al = kold / den;
    const double *q = a.q, *sold = a.s[cs], *c = a.c[cc_];
    double *snew = a.s[1 - cs];
    /* x += a c, s -= a q, r = A^H s (- damp2 x); r.r, s.s. One phase: a neighbour row of the new s inside this
     * rank is recomputed from the old s and q, which nobody writes in this phase; the neighbours' rows came from
     * the last reduction (send_s). */
    const uint64_t Es = ++E;
    const int ps = it & 1;
    auto sval = [al, q, sold](int64_t e) { return axpby(-al, ld(q + e), 1.0, ld(sold + e)); };
    stamp(a, si, 1);
    elements(
        a, sm, 2,
        [&](int64_t e, double *acc) {
          const int64_t lr = row_of(e, w), i = e - lr * w;
          const double xv = axpby(al, ld(c + e), 1.0, ld(a.x + e)), s = sval(e);
          double r = lean_row(a, lr, a.sd.jlo, a.sd.jhi)
                         ? taps_lean<-1>(a.sd.cint, [&](int d) { return d == 0 ? s : sval(e + d * w); })
                         : stencil_any<true>(a, 0, ps, lr, i, Es, sval);
          if (a.damp2 != 0.0)
            r = axpby(-a.damp2, xv, 1.0, r);
          a.x[e] = xv; /* the stores after every load of the element */
          snew[e] = s;
          a.r[e] = r;
          acc[0] = __fma_rn(r, r, acc[0]), acc[1] = __fma_rn(s, s, acc[1]);
        },
        c, (const double *)a.x, q, sold);
    stamp(a, si, 2);
    cs = 1 - cs;
    /* r.r, s.s reduced; then the reducing block sends the rows of c = r + b c the neighbours read in the next phase
     * (halo 1, step E + 1), when it runs */
    if (!reduce_step(
            a, sm, 2, E, m, bars, sc, red,
            [&](const double *sum) {
              const double k = fabs(sum[0]);
              a.hist[it + 1] = sqrt(sum[1]);
              a.ctl->sc[RMAOP__RES_B] = k / kold, a.ctl->sc[RMAOP__RES_KOLD] = k;
              *a.progress = it + 1;
            },
            [&] {
              const double k = scal(a, RMAOP__RES_KOLD), bn = scal(a, RMAOP__RES_B);
              if (!runs(a, it + 1, k))
                return;
              const double *co = a.c[cc_];
              send_early(a, 1, (it + 1) & 1, E + 1, [&](int64_t e) { return axpby(1.0, ld(a.r + e), bn, ld(co + e)); });
            }))
      return;
    stamp(a, si, 3);
    const double b = sc[RMAOP__RES_B];
    kold = sc[RMAOP__RES_KOLD];
    ++it;
    if (!runs(a, it, kold))
      return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    /* c = r + b c and q = A c; q.q, c.c. A neighbour row of c inside this rank is recomputed from r and the old c,
     * which nobody writes in this phase. */
    const double *cold = a.c[cc_];
    double *cnew = a.c[1 - cc_];
    const uint64_t Ec = ++E;
    const int pc = it & 1;
    auto cval = [r = (const double *)a.r, b, cold](int64_t e) { return axpby(1.0, ld(r + e), b, ld(cold + e)); };
    elements(
        a, sm, 2,
        [&](int64_t e, double *acc) {
          const int64_t lr = row_of(e, w), i = e - lr * w;
          const double cn = cval(e);
          const double qv = lean_row(a, lr, a.sd.int_lo, a.sd.int_hi)
                                ? taps_lean<1>(a.sd.cint, [&](int d) { return d == 0 ? cn : cval(e + d * w); })
                                : stencil_any<false>(a, 1, pc, lr, i, Ec, cval);
          cnew[e] = cn; /* the stores after every load of the element */
          a.q[e] = qv;
          acc[0] = __fma_rn(qv, qv, acc[0]), acc[1] = __fma_rn(cn, cn, acc[1]);
        },
        (const double *)a.r, cold);
    stamp(a, si, 4);
    cc_ = 1 - cc_;
    if (!reduce_step(
            a, sm, 2, E, m, bars, sc, red,
            [&](const double *sum) { a.ctl->sc[RMAOP__RES_QQ] = sum[0], a.ctl->sc[RMAOP__RES_CC] = sum[1]; },
            [&] { send_s(it, a.s[cs]); }))
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
  /* The reducing block, after the reduction that gives kold (and b, none at the start) for iteration itn (E: its
   * step): the rows of c = r + b c (itn 0: c as given) the neighbours read in itn's first phase (halo 1, step
   * E + 1), when itn runs (the loop's test below). */
  auto send_c = [&](int itn) {
    const double k = scal(a, RMAOP__RES_KOLD), bn = itn == 0 ? 0.0 : scal(a, RMAOP__RES_B);
    if (!runs(a, itn, k))
      return;
    const double *co = a.c[cc_];
    send_early(a, 1, itn & 1, E + 1,
               [&](int64_t e) { return itn == 0 ? ld(co + e) : axpby(1.0, ld(a.r + e), bn, ld(co + e)); });
  };
  if (!reduce_step(
          a, sm, 1, E, m, bars, sc, red,
          [&](const double *sum) { a.ctl->sc[RMAOP__RES_KOLD] = fabs(sum[0]), a.hist[0] = sqrt(fabs(sum[0])); },
          [&] { send_c(0); }))
    return;
  double kold = sc[RMAOP__RES_KOLD], b = 0.0;
  int it = 0;
  for (;;) {
    if (!runs(a, it, kold))
      return finish(a, it, kold <= a.tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER, kold);
    const int si = it; /* the iteration's profile stamps */
    stamp(a, si, 0);
    const double *cold = a.c[cc_];
    double *cnew = a.c[1 - cc_];
    const int first = it == 0, p = it & 1;
    /* c = r + b c (the start's c = r as given), t = D c; the neighbours' rows of c came from the last reduction
     * (send_c), t's rows are stored into the neighbours as they are made (halo 0, step Et) */
    auto cval = [first, r = (const double *)a.r, b, cold](int64_t e) {
      return first ? ld(cold + e) : axpby(1.0, ld(r + e), b, ld(cold + e));
    };
    const uint64_t Ec = ++E, Et = ++E;
    elements(a, sm, 0, [&](int64_t e, double *) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      const double cn = cval(e);
      const double tv = lean_row(a, lr, a.sd.int_lo, a.sd.int_hi)
                            ? taps_lean<1>(a.sd.cint, [&](int d) { return d == 0 ? cn : cval(e + d * w); })
                            : stencil_any<false>(a, 1, p, lr, i, Ec, cval);
      cnew[e] = cn; /* the stores after every load of the element */
      a.t[e] = tv;
      if (near_edge(a, lr))
        send_elem(a, 0, p, lr, i, tv, Et);
    }, first ? nullptr : (const double *)a.r, cold);
    SYNC_OR_LEAVE();
    stamp(a, si, 1);
    if (!a.inl && b0 && threadIdx.x == 0) /* the grid sync ordered every block's t stores before this release */
      for (int k = 0; k < a.nsend_peers; ++k) rmaop_dev_signal(&a.w, a.send_peers[k], Et);
    /* Ac = D^H t (+ dg c, the sum's second term added last); c.Ac */
    elements(a, sm, 1, [&](int64_t e, double *acc) {
      const int64_t lr = row_of(e, w), i = e - lr * w;
      const double *t = a.t;
      double qv = lean_row(a, lr, a.sd.jlo, a.sd.jhi)
                      ? taps_lean<-1>(a.sd.cint, [&](int d) { return ld(t + e + d * w); })
                      : stencil_any<true>(a, 0, p, lr, i, Et, [t](int64_t k) { return ld(t + k); });
      const double cn = ld(cnew + e);
      if (a.dg) qv = __dadd_rn(qv, __dmul_rn(ld(a.dg + e), cn));
      a.q[e] = qv;
      acc[0] = __fma_rn(qv, cn, acc[0]);
    }, (const double *)a.t, (const double *)cnew, a.dg);
    stamp(a, si, 2);
    cc_ = 1 - cc_;
    if (!reduce_step(
            a, sm, 1, E, m, bars, sc, red,
            [&](const double *sum) {
              const double cAc = fabs(sum[0]);
              a.ctl->sc[RMAOP__RES_STOP] = cAc == 0.0;
              a.ctl->sc[RMAOP__RES_A] = cAc == 0.0 ? 0.0 : kold / cAc;
            },
            [] {}))
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
    if (!reduce_step(
            a, sm, 1, E, m, bars, sc, red,
            [&](const double *sum) {
              const double k = fabs(sum[0]);
              a.ctl->sc[RMAOP__RES_B] = k / kold, a.ctl->sc[RMAOP__RES_KOLD] = k;
              a.hist[it + 1] = sqrt(k);
              *a.progress = it + 1;
            },
            [&] { send_c(it + 1); }))
      return;
    stamp(a, si, 5);
    b = sc[RMAOP__RES_B], kold = sc[RMAOP__RES_KOLD];
    ++it;
  }
}

/* 4 blocks per SM (64 registers): the streaming phases are bound by loads in flight, and 2 blocks per SM (the
 * 127 registers the inlined kernel takes) measured 1.81x the streaming bound for CGLS at 2^25 elements on one H200,
 * 3 per SM 1.55x, 4 per SM 1.36x (the host-driven loop 1.29x; with the prefetch in elements 1.27x). 64 registers
 * fit with little spill because the paths that only one block
 * or the ghost rows take (reduce_one, send_early, forward_edge, adjoint_edge) are calls, not inlined into the
 * loops. */
__global__ void __launch_bounds__(RT, 4) k_resident_cgls(const __grid_constant__ args_t a) {
  __shared__ double sm[4][RT];
  cgls(a, sm);
}
/* A kernel of its own: inlined into one kernel with cgls, the registers of the larger loop bound both. */
__global__ void __launch_bounds__(RT, 4) k_resident_cg(const __grid_constant__ args_t a) {
  __shared__ double sm[4][RT];
  cgd(a, sm);
}

} // namespace

extern "C" int rmaop__dev_resident_grid(rmaop_ctx ctx, int nb, int share) {
  int coop = 0, sms = 0, occ = 0, occ_cg = 0; /* the two kernels' residency, the lower (both take 64 registers) */
  if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, ctx->device) != cudaSuccess || !coop ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_resident_cgls, RT, 0) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_cg, k_resident_cg, RT, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (occ_cg < occ)
    occ = occ_cg;
  if (occ < 1)
    return 0;
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
  RMAOP_CHECK_CUDA(ctx, cudaLaunchCooperativeKernel(a->cg ? (const void *)k_resident_cg : (const void *)k_resident_cgls,
                                                    dim3((unsigned)grid), dim3(RT), params, 0, STREAM(ctx)));
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
