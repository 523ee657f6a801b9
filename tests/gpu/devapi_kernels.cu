/* Kernels of test_gpu_devapi.c: users of <rmaop/rmaop_device.cuh> as a user's .cu would be (no -rdc), compiled
 * with RMAOP_DEVICE_CHECKS so that a put outside a window traps. devapi_kernels.h says what each one does. */
#define RMAOP_DEVICE_CHECKS 1
#include <rmaop/rmaop_device.cuh>

#include <cuda_runtime.h>

#include "devapi_kernels.h"

namespace {

/* GPU-scope acq_rel arrival and acquire read: the blocks of one kernel meeting (litmus). */
__device__ unsigned arrive_acq_rel_gpu(unsigned *p) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
__device__ unsigned load_acquire_gpu(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__global__ void __launch_bounds__(DK_RING_THREADS)
    ring_kernel(const __grid_constant__ rmaop_win_device w, int iters, unsigned char *src, unsigned long long *out) {
  const int me = w.rank, P = w.size;
  const int right = (me + 1) % P, left = (me + P - 1) % P;
  const unsigned tid = threadIdx.x, warp = tid / 32, nwarps = blockDim.x / 32;
  __shared__ unsigned long long bad;
  if (tid == 0)
    bad = 0;
  __syncthreads();
  for (int it = 0; it < iters; ++it) {
    const size_t half = (size_t)(it & 1) * DK_HALF;
    for (int dir = 0; dir < 2; ++dir) /* this iteration's source bytes */
      for (int c = 0; c < DK_NCHUNK; ++c) {
        const dk_chunk k = dk_chunk_of(c);
        for (size_t i = tid; i < k.len; i += blockDim.x)
          src[dir * DK_REGION + k.src + i] = dk_pattern(me, dir, (uint64_t)it, c, i);
      }
    __syncthreads();
    /* dir 0 to the right neighbour (its "from the left" region), dir 1 to the left one (its region 1); the
     * last chunk towards the left goes with the signal below */
    for (int dir = 0; dir < 2; ++dir) {
      const int peer = dir == 0 ? right : left;
      for (int c = 0; c < (dir == 0 ? DK_NCHUNK : DK_NCHUNK - 1); ++c) {
        const dk_chunk k = dk_chunk_of(c);
        const size_t dst = half + dir * DK_REGION + k.dst;
        const unsigned char *s = src + dir * DK_REGION + k.src;
        if (k.form == DK_THREAD) {
          if (tid == (unsigned)(33 * c + 7 * dir) % blockDim.x)
            rmaop_dev_put(&w, peer, dst, s, k.len);
        } else if (k.form == DK_WARP) {
          if (warp == (unsigned)(c + dir) % nwarps)
            rmaop_dev_put_warp(&w, peer, dst, s, k.len);
        } else {
          rmaop_dev_put_block(&w, peer, dst, s, k.len);
        }
      }
    }
    __syncthreads(); /* every put above before the signals (their releases are cumulative over it) */
    const uint64_t v = (uint64_t)it + 1;
    if (warp == 0) {
      const dk_chunk k = dk_chunk_of(DK_NCHUNK - 1);
      rmaop_dev_put_signal_warp(&w, left, half + DK_REGION + k.dst, src + DK_REGION + k.src, k.len, v);
    }
    if (right != left)
      rmaop_dev_signal_block(&w, right, v);
    if (rmaop_dev_wait_block(&w, left, v) || (right != left && rmaop_dev_wait_block(&w, right, v))) {
      if (tid == 0)
        out[1] = 1;
      break;
    }
    /* what arrived in this half: region 0 from the left neighbour (its dir 0), region 1 from the right one */
    const unsigned char *mine = reinterpret_cast<const unsigned char *>(w.base[me]) + half;
    unsigned long long b = 0;
    for (int r = 0; r < 2; ++r) {
      const int origin = r == 0 ? left : right;
      for (int c = 0; c < DK_NCHUNK; ++c) {
        const dk_chunk k = dk_chunk_of(c);
        const unsigned char *d = mine + r * DK_REGION + k.dst;
        for (size_t i = tid; i < k.len; i += blockDim.x)
          b += d[i] != dk_pattern(origin, r, (uint64_t)it, c, i);
        if (tid == (unsigned)c)
          b += (d[-1] != 0) + (d[k.len] != 0); /* nothing beyond the chunk */
      }
    }
    if (b)
      atomicAdd(&bad, b);
    /* the next iteration's source fill and puts follow the signal_block/wait_block barriers above */
  }
  __syncthreads();
  if (tid == 0)
    atomicAdd(&out[0], bad);
}

__global__ void __launch_bounds__(DK_LIT_THREADS)
    litmus_kernel(const __grid_constant__ rmaop_win_device w, int mode, int rounds, unsigned *counter,
                  unsigned long long *out) {
  const int me = w.rank, P = w.size;
  const int right = (me + 1) % P, left = (me + P - 1) % P;
  const int b = (int)blockIdx.x, nb = (int)gridDim.x;
  const unsigned tid = threadIdx.x;
  unsigned long long bad = 0;
  for (int k = 0; k < rounds; ++k) {
    const int half = k & 1;
    for (int dir = 0; dir < 2; ++dir) {
      const int peer = dir == 0 ? right : left;
      uint32_t *dst = reinterpret_cast<uint32_t *>(w.base[peer]) + ((size_t)(half * 2 + dir) * nb + b) * DK_LIT_WORDS;
      for (int i = (int)tid; i < DK_LIT_WORDS; i += (int)blockDim.x)
        dst[i] = dk_lit_value(me, dir, k, b, i);
    }
    __syncthreads(); /* the block's payload before its thread 0's release */
    uint64_t want;
    if (mode == DK_LIT_ADD) {
      if (tid == 0) {
        rmaop_dev_signal_add(&w, right, 1);
        if (left != right)
          rmaop_dev_signal_add(&w, left, 1);
        /* No block adds for round k + 1 before every block added for round k, or a target could count a fast
         * block's next add for a slow block's missing one: the blocks meet (acq_rel, GPU scope), which also
         * orders the adds of one word as the rounds. */
        arrive_acq_rel_gpu(&counter[k]);
        while (load_acquire_gpu(&counter[k]) < (unsigned)nb) {
        }
      }
      want = (uint64_t)nb * (uint64_t)(k + 1);
    } else {
      if (tid == 0 && arrive_acq_rel_gpu(&counter[k]) == (unsigned)nb - 1) {
        /* the last block: every other block's payload is ordered before this through the counter */
        rmaop_dev_signal(&w, right, (uint64_t)k + 1);
        if (left != right)
          rmaop_dev_signal(&w, left, (uint64_t)k + 1);
      }
      want = (uint64_t)k + 1;
    }
    if (rmaop_dev_wait_block(&w, left, want) || (left != right && rmaop_dev_wait_block(&w, right, want))) {
      if (tid == 0)
        out[1] = 1;
      break;
    }
    const int ob = (b + k) % nb; /* another block's words: written by another SM of the origin */
    for (int dir = 0; dir < 2; ++dir) {
      const int origin = dir == 0 ? left : right;
      const uint32_t *src =
          reinterpret_cast<const uint32_t *>(w.base[me]) + ((size_t)(half * 2 + dir) * nb + ob) * DK_LIT_WORDS;
      for (int i = (int)tid; i < DK_LIT_WORDS; i += (int)blockDim.x)
        bad += src[i] != dk_lit_value(origin, dir, k, ob, i);
    }
    __syncthreads(); /* the checks of round k before the stores of round k + 1 (and their signal) */
  }
  if (bad)
    atomicAdd(&out[0], bad);
}

/* scratch: [2 directions][DK_INLINE_SLOT] sources, then [2 directions][DK_INLINE_SLOT] receive buffers */
__global__ void __launch_bounds__(DK_INLINE_THREADS)
    inline_kernel(const __grid_constant__ rmaop_win_device w, int iters, unsigned char *scratch,
                  unsigned long long *out) {
  const int me = w.rank, P = w.size;
  const int right = (me + 1) % P, left = (me + P - 1) % P;
  const unsigned tid = threadIdx.x, warp = tid / 32;
  unsigned char *src = scratch, *recv = scratch + 2 * DK_INLINE_SLOT;
  unsigned long long bad = 0;
  int failed = 0;
  for (int it = 0; it < iters && !failed; ++it) {
    const uint32_t seq = (uint32_t)it + 1;
    for (int dir = 0; dir < 2; ++dir)
      for (int m = 0; m < DK_INLINE_MSGS; ++m)
        for (size_t i = tid; i < dk_inline_len(m); i += blockDim.x)
          src[dir * DK_INLINE_SLOT + dk_inline_src(m) + i] = dk_pattern(me, dir, (uint64_t)it, DK_NCHUNK + m, i);
    __syncthreads();
    /* dir 0 to the right neighbour's "from the left" slot, dir 1 to the left one's; warp 0 sends, warp 1 receives */
    for (int dir = 0; dir < 2; ++dir) {
      const int peer = dir == 0 ? right : left;
      const size_t slot = ((size_t)(it & 1) * 2 + dir) * DK_INLINE_SLOT;
      const unsigned char *s = src + dir * DK_INLINE_SLOT;
      if (warp == 0) {
        if (tid == 5 || tid == 6) {
          const int m = tid == 5 ? 0 : 2;
          rmaop_dev_put_inline(&w, peer, slot + dk_inline_off(m), s + dk_inline_src(m), dk_inline_len(m), seq);
        }
        rmaop_dev_put_inline_warp(&w, peer, slot + dk_inline_off(1), s + dk_inline_src(1), dk_inline_len(1), seq);
      }
    }
    if (warp == 1)
      for (int r = 0; r < 2 && !failed; ++r) {
        const int origin = r == 0 ? left : right;
        const size_t slot = ((size_t)(it & 1) * 2 + r) * DK_INLINE_SLOT;
        unsigned char *d = recv + r * DK_INLINE_SLOT;
        if (tid == 32 + 9 || tid == 32 + 10) {
          const int m = tid == 32 + 9 ? 0 : 2;
          failed |=
              rmaop_dev_wait_inline(&w, origin, slot + dk_inline_off(m), d + dk_inline_dst(m), dk_inline_len(m), seq);
        }
        failed |= __any_sync(0xffffffffu, failed);
        failed |= rmaop_dev_wait_inline_warp(&w, origin, slot + dk_inline_off(1), d + dk_inline_dst(1),
                                             dk_inline_len(1), seq);
      }
    failed = __syncthreads_or(failed);
    if (failed)
      break;
    for (int r = 0; r < 2; ++r) {
      const int origin = r == 0 ? left : right;
      for (int m = 0; m < DK_INLINE_MSGS; ++m) {
        const unsigned char *d = recv + r * DK_INLINE_SLOT + dk_inline_dst(m);
        const size_t len = dk_inline_len(m);
        for (size_t i = tid; i < len; i += blockDim.x)
          bad += d[i] != dk_pattern(origin, r, (uint64_t)it, DK_NCHUNK + m, i);
        if (tid == (unsigned)m) /* the copy wrote only the payload: the bytes around it are still 0 */
          bad += (d[-1] != 0) + (d[len] != 0);
      }
    }
    __syncthreads(); /* the checks before the next iteration's copies into recv */
  }
  if (failed && tid == 0)
    out[1] = 1;
  if (bad)
    atomicAdd(&out[0], bad);
}

__global__ void wait_kernel(const __grid_constant__ rmaop_win_device w, int inline_msg, int origin, uint64_t value,
                            unsigned long long *out) {
  uint64_t got = 0;
  out[1] = (unsigned long long)(inline_msg ? rmaop_dev_wait_inline(&w, origin, 0, &got, sizeof got, (uint32_t)value)
                                           : rmaop_dev_wait(&w, origin, value));
}

} // namespace

extern "C" int dk_ring(const rmaop_win_device *w, void *stream, int iters, unsigned char *src_scratch,
                       unsigned long long *out) {
  ring_kernel<<<1, DK_RING_THREADS, 0, static_cast<cudaStream_t>(stream)>>>(*w, iters, src_scratch, out);
  return (int)cudaGetLastError();
}

extern "C" int dk_litmus(const rmaop_win_device *w, void *stream, int mode, int rounds, int nblocks, unsigned *counter,
                         unsigned long long *out) {
  litmus_kernel<<<nblocks, DK_LIT_THREADS, 0, static_cast<cudaStream_t>(stream)>>>(*w, mode, rounds, counter, out);
  return (int)cudaGetLastError();
}

extern "C" int dk_inline(const rmaop_win_device *w, void *stream, int iters, unsigned char *scratch,
                         unsigned long long *out) {
  inline_kernel<<<1, DK_INLINE_THREADS, 0, static_cast<cudaStream_t>(stream)>>>(*w, iters, scratch, out);
  return (int)cudaGetLastError();
}

extern "C" int dk_wait(const rmaop_win_device *w, void *stream, int inline_msg, int origin, uint64_t value,
                       unsigned long long *out) {
  wait_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(*w, inline_msg, origin, value, out);
  return (int)cudaGetLastError();
}
