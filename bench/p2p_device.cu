/* rmaop-p2p-bench's device-initiated part (p2p_bench.c says how it is run): kernels that use only the public
 * <rmaop/rmaop_device.cuh>, as a user's .cu would (no -rdc).
 *
 *   ping-pong  one persistent kernel per rank: rank 0 puts `bytes` into rank 1's window and signals, rank 1 waits
 *              and answers the same way; `warm` untimed round trips, then `iters` timed ones on the GPU's
 *              global timer (rank 0). Forms: bare signal (no payload, one thread), put + signal by one thread,
 *              and by a block of P2PD_BLOCK threads (rmaop_dev_put_signal_block, rmaop_dev_wait_block); inline
 *              messages (the payload its own signal: rmaop_dev_put_inline, rmaop_dev_wait_inline, which copies
 *              the payload out to `recv`) by one thread and by a warp.
 *   litmus     message passing under stress: `nblocks` blocks store words into the peer, then signal; the peer's
 *              blocks check another block's words after their wait and count mismatches. Modes: every block
 *              adds 1 (rmaop_dev_signal_add, a release per block); the last block of a GPU-scope acq_rel counter
 *              stores the round (one release for the grid); and the same with the release dropped (a relaxed
 *              counter and a relaxed store of the signal: no fence at all), which shows whether the release is
 *              observable on this machine (mismatches there are expected, not a failure). */
#include <rmaop/rmaop_device.cuh>

#include <cuda_runtime.h>

#define P2PD_BLOCK 256
#define P2PD_LIT_WORDS 2048

namespace {

enum { FORM_SIGNAL = 0, FORM_THREAD = 1, FORM_BLOCK = 2, FORM_INLINE = 3, FORM_INLINE_WARP = 4 };
enum { LIT_ADD = 0, LIT_LAST = 1, LIT_RELAXED = 2 };

template <int FORM>
__device__ __forceinline__ void send(const rmaop_win_device *w, int peer, const void *src, size_t bytes, uint64_t v) {
  if (FORM == FORM_INLINE)
    rmaop_dev_put_inline(w, peer, 0, src, bytes, (uint32_t)v);
  else if (FORM == FORM_INLINE_WARP)
    rmaop_dev_put_inline_warp(w, peer, 0, src, bytes, (uint32_t)v);
  else if (FORM == FORM_SIGNAL)
    rmaop_dev_signal(w, peer, v);
  else if (FORM == FORM_THREAD)
    rmaop_dev_put_signal(w, peer, 0, src, bytes, v);
  else
    rmaop_dev_put_signal_block(w, peer, 0, src, bytes, v);
}

template <int FORM>
__device__ __forceinline__ int receive(const rmaop_win_device *w, int peer, void *recv, size_t bytes, uint64_t v) {
  if (FORM == FORM_INLINE)
    return rmaop_dev_wait_inline(w, peer, 0, recv, bytes, (uint32_t)v);
  if (FORM == FORM_INLINE_WARP)
    return rmaop_dev_wait_inline_warp(w, peer, 0, recv, bytes, (uint32_t)v);
  return FORM == FORM_BLOCK ? rmaop_dev_wait_block(w, peer, v) : rmaop_dev_wait(w, peer, v);
}

template <int FORM>
__global__ void pingpong(const __grid_constant__ rmaop_win_device w, const void *src, void *recv, size_t bytes,
                         int warm, int iters, uint64_t base, unsigned long long *out) {
  const int peer = 1 - w.rank;
  uint64_t t0 = 0;
  for (int i = 0; i < warm + iters; ++i) {
    const uint64_t v = base + (uint64_t)i + 1;
    if (w.rank == 0) {
      if (i == warm)
        t0 = rmaop__dev_globaltimer();
      send<FORM>(&w, peer, src, bytes, v);
      if (receive<FORM>(&w, peer, recv, bytes, v)) {
        out[1] = 1;
        return;
      }
    } else {
      if (receive<FORM>(&w, peer, recv, bytes, v)) {
        out[1] = 1;
        return;
      }
      send<FORM>(&w, peer, src, bytes, v);
    }
  }
  if (w.rank == 0 && rmaop__dev_tid() == 0)
    out[0] = rmaop__dev_globaltimer() - t0;
}

__device__ unsigned arrive(unsigned *p, bool acq_rel) {
  unsigned old;
  if (acq_rel)
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  else
    asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}

__device__ unsigned load_acquire_gpu(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ uint32_t lit_value(int origin, int round, int block, int word) {
  return (uint32_t)origin * 0x01000193u ^ (uint32_t)(round + 1) * 0x9e3779b9u ^ (uint32_t)block * 0x85ebca6bu ^
         (uint32_t)word * 0xc2b2ae35u;
}

/* Two ranks; window [2 halves][nblocks][P2PD_LIT_WORDS] uint32 (double buffering by round parity: both ranks
 * send every round, so a half is written again only after the peer's signal of the round in between). */
__global__ void __launch_bounds__(P2PD_BLOCK) litmus(const __grid_constant__ rmaop_win_device w, int mode, int rounds,
                                                     unsigned *counter, unsigned long long *out) {
  const int peer = 1 - w.rank, b = (int)blockIdx.x, nb = (int)gridDim.x;
  const unsigned tid = threadIdx.x;
  unsigned long long bad = 0;
  for (int k = 0; k < rounds; ++k) {
    const size_t slot = ((size_t)(k & 1) * nb + b) * P2PD_LIT_WORDS;
    uint32_t *dst = reinterpret_cast<uint32_t *>(w.base[peer]) + slot;
    for (int i = (int)tid; i < P2PD_LIT_WORDS; i += (int)blockDim.x)
      dst[i] = lit_value(w.rank, k, b, i);
    __syncthreads();
    uint64_t want = (uint64_t)k + 1;
    if (mode == LIT_ADD) {
      if (tid == 0) {
        rmaop_dev_signal_add(&w, peer, 1);
        arrive(&counter[k], true); /* no block adds for round k + 1 before all added for round k */
        while (load_acquire_gpu(&counter[k]) < (unsigned)nb) {
        }
      }
      want = (uint64_t)nb * want;
    } else if (tid == 0 && arrive(&counter[k], mode == LIT_LAST) == (unsigned)nb - 1) {
      if (mode == LIT_LAST)
        rmaop_dev_signal(&w, peer, want);
      else /* no release: the payload stores may arrive after the signal */
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(w.peer_signal[peer] + w.rank), "l"(want) : "memory");
    }
    if (rmaop_dev_wait_block(&w, peer, want)) {
      if (tid == 0)
        out[1] = 1;
      break;
    }
    const int ob = (b + k) % nb;
    const uint32_t *src = reinterpret_cast<const uint32_t *>(w.base[w.rank]) + ((size_t)(k & 1) * nb + ob) * P2PD_LIT_WORDS;
    for (int i = (int)tid; i < P2PD_LIT_WORDS; i += (int)blockDim.x)
      bad += src[i] != lit_value(peer, k, ob, i);
    __syncthreads();
  }
  if (bad)
    atomicAdd(&out[0], bad);
}

} // namespace

/* Window bytes the litmus needs with `nblocks` blocks. */
extern "C" size_t p2pd_litmus_bytes(int nblocks) {
  return (size_t)2 * (size_t)nblocks * P2PD_LIT_WORDS * sizeof(uint32_t);
}

/* One ping-pong run (form 0 bare signal, 1 thread, 2 block, 3 inline by a thread, 4 inline by a warp), signal
 * values (inline: sequence numbers) base + 1 ... base + warm + iters; the inline forms copy what arrives to recv.
 * out (device, zeroed by the caller): [0] rank 0's ns for the timed round trips, [1] 1 when a wait gave up.
 * Returns a cudaError_t. */
extern "C" int p2pd_pingpong(const rmaop_win_device *w, void *stream, int form, const void *src, void *recv,
                             size_t bytes, int warm, int iters, unsigned long long base, unsigned long long *out) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (form == FORM_SIGNAL)
    pingpong<FORM_SIGNAL><<<1, 1, 0, s>>>(*w, src, recv, bytes, warm, iters, base, out);
  else if (form == FORM_THREAD)
    pingpong<FORM_THREAD><<<1, 1, 0, s>>>(*w, src, recv, bytes, warm, iters, base, out);
  else if (form == FORM_BLOCK)
    pingpong<FORM_BLOCK><<<1, P2PD_BLOCK, 0, s>>>(*w, src, recv, bytes, warm, iters, base, out);
  else if (form == FORM_INLINE)
    pingpong<FORM_INLINE><<<1, 1, 0, s>>>(*w, src, recv, bytes, warm, iters, base, out);
  else
    pingpong<FORM_INLINE_WARP><<<1, 32, 0, s>>>(*w, src, recv, bytes, warm, iters, base, out);
  return (int)cudaGetLastError();
}

/* One litmus run (mode 0 add, 1 last block, 2 no release) on a fresh window; counter: `rounds` zeroed words.
 * out (zeroed): [0] mismatches, [1] a wait gave up. Returns a cudaError_t. */
extern "C" int p2pd_litmus(const rmaop_win_device *w, void *stream, int mode, int rounds, int nblocks, unsigned *counter,
                           unsigned long long *out) {
  litmus<<<nblocks, P2PD_BLOCK, 0, static_cast<cudaStream_t>(stream)>>>(*w, mode, rounds, counter, out);
  return (int)cudaGetLastError();
}
