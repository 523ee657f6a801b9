/* Device side of a kernel-put exchange (rmaop__kx, kx.h): waits, arrival counting, signals. Included by the
 * kernels that put (ops.cu: a derivative's ghost rows; halo.cu: the N-D halo). */
#ifndef RMAOP_KX_CUH
#define RMAOP_KX_CUH

#include "rmaop/rmaop_device.cuh"

#include "kx.h"

/* The exchange number: set by the previous end kernel's last block (a kernel boundary orders it). */
static __device__ __forceinline__ uint64_t kx_seq(const rmaop__kx *x) { return *(const volatile uint64_t *)&x->seq; }

/* Thread 0 waits for `peer`'s signal >= v: 1 once it is there, 0 if the wait gave up now or a wait of this window
 * gave up before (the host reports RMAOP_ERR_TIMEOUT at its next synchronization; the data is not read then). */
static __device__ __forceinline__ int kx_wait(const rmaop__kx *x, int peer, uint64_t v) {
  if (*(const volatile unsigned *)x->w.wait_claim != 0u) return 0;
  return rmaop_dev_wait(&x->w, peer, v) == 0;
}

/* Every one of `blocks` blocks of a kernel calls it once, all threads, after its last store: the block counts itself in on
 * arrived[k] (acq_rel at GPU scope after a barrier, so the block's stores are ordered before whatever the last block
 * does next); 1 in the last block's thread 0, which has reset the counter. */
static __device__ __forceinline__ bool kx_last_block(rmaop__kx *x, int k, unsigned blocks) {
  __syncthreads();
  if (threadIdx.x != 0 || threadIdx.y != 0) return false;
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(&x->arrived[k]) : "memory");
  if (old != blocks - 1) return false;
  x->arrived[k] = 0;
  return true;
}

/* A put kernel's start, every thread of the block: whether it may store into `peer`'s half (has: the block has a
 * transfer; thread 0 waits for the peer's signal >= s, the block learns the answer). */
static __device__ __forceinline__ bool kx_put_go(const rmaop__kx *x, bool has, int peer, uint64_t s) {
  __shared__ int go;
  if (threadIdx.x == 0) go = has && kx_wait(x, peer, s);
  __syncthreads();
  return go != 0;
}

/* A put kernel's end, in each of the `blocks` blocks that put (those that do other work need not wait for it): the
 * last of them signals every neighbour s + 1, one release each (rmaop_device.cuh's contract:
 * cumulative over the stores the arrival chain ordered before it). */
static __device__ __forceinline__ void kx_put_done(rmaop__kx *x, uint64_t s, unsigned blocks) {
  if (!kx_last_block(x, 1, blocks)) return;
  for (int k = 0; k < x->nnb; ++k) rmaop_dev_signal(&x->w, x->nb[k], s + 1);
}

/* An end kernel's start (every block: thread 0 waits for the n ranks peer_of(0 .. n-1) to reach s + 1, then a
 * barrier) and its own half of the window. */
template <typename Peer>
static __device__ __forceinline__ const char *kx_enter(const rmaop__kx *x, uint64_t s, int n, Peer peer_of) {
  if (threadIdx.x == 0 && threadIdx.y == 0)
    for (int k = 0; k < n; ++k)
      if (!kx_wait(x, peer_of(k), s + 1)) break;
  __syncthreads();
  return x->w.base[x->w.rank] + (size_t)(s & 1) * x->half;
}

/* An end kernel's end: its last block ends the exchange. */
static __device__ __forceinline__ void kx_end_done(rmaop__kx *x, uint64_t s) {
  if (kx_last_block(x, 0, gridDim.x * gridDim.y)) x->seq = s + 1;
}

/* Where exchange s's data for `peer` goes: its half, `at` bytes in. */
static __device__ __forceinline__ char *kx_peer_half(const rmaop__kx *x, int peer, uint64_t s, size_t at) {
  return x->w.base[peer] + (size_t)(s & 1) * x->half + at;
}

#endif /* RMAOP_KX_CUH */
