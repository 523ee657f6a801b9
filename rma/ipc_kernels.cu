/* The kernel of an ipc batch (ipc_batch.h says what a batch is and why). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "ipc_batch.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 32;
constexpr uint64_t kBytesPerBlock = 16384;

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void store_release_sys(uint32_t *addr, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(addr), "r"(v) : "memory");
}

__device__ uint32_t load_acquire_sys(const uint32_t *addr) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
  return v;
}

/* All threads of the grid copy `bytes` in the widest unit the three addresses allow. */
template <typename U> __device__ void copy_units(char *dst, const char *src, uint64_t bytes) {
  const uint64_t n = bytes / sizeof(U);
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    reinterpret_cast<U *>(dst)[i] = reinterpret_cast<const U *>(src)[i];
  const uint64_t done = n * sizeof(U); /* the tail, byte by byte */
  for (uint64_t i = done + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += stride)
    dst[i] = src[i];
}

__device__ void copy_one(const rma_ipc_copy &c) {
  char *d = static_cast<char *>(c.dst);
  const char *s = static_cast<const char *>(c.src);
  const uintptr_t a = reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s);
  if ((a & 15) == 0)
    copy_units<uint4>(d, s, c.bytes);
  else if ((a & 7) == 0)
    copy_units<uint64_t>(d, s, c.bytes);
  else if ((a & 3) == 0)
    copy_units<uint32_t>(d, s, c.bytes);
  else
    copy_units<char>(d, s, c.bytes);
}

/* The value of a flag entry: its counter, advanced by `adv`, plus `off`. Only one thread of a batch kernel
 * resolves entries (the pre-waits run in a one-block grid, by the thread that later writes). */
__device__ uint32_t resolve(const rma_ipc_flag &f, const rma_ipc_batch &b) {
  const uint32_t c = b.ctr[f.idx] + f.adv;
  b.ctr[f.idx] = c;
  return c + f.off;
}

/* Spins until each flag holds at least its value (cyclic compare, as CU_STREAM_WAIT_VALUE_GEQ); false
 * after recording the first wait that outlasted the timeout. One thread. */
__device__ bool wait_all(const rma_ipc_flag *flags, int n, const rma_ipc_batch &b) {
  for (int i = 0; i < n; ++i) {
    const rma_ipc_flag &f = flags[i];
    const uint32_t want = resolve(f, b);
    const uint64_t start = global_ns();
    for (;;) {
      const uint32_t v = load_acquire_sys(f.addr);
      if ((int32_t)(v - want) >= 0)
        break;
      if (global_ns() - start > b.timeout_ns) {
        for (int j = i + 1; j < n; ++j) /* the counters stay in step with the host's */
          resolve(flags[j], b);
        b.error->slot = f.idx; /* a wait's counter is its slot */
        b.error->want = want;
        b.error->seen = v;
        __threadfence_system();
        b.error->failed = 1;
        return false;
      }
    }
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) batch_kernel(const rma_ipc_batch b) {
  /* Waits that must come before the copies (a target's "ready"): one block only (the launch makes sure),
   * so no other block can store before they are over. A wait that gives up stores nothing. */
  __shared__ int ready;
  if (b.npre > 0) {
    if (threadIdx.x == 0)
      ready = wait_all(b.pre, b.npre, b);
    __syncthreads();
    if (!ready) {
      if (threadIdx.x == 0) { /* nothing is stored, but the counters keep in step */
        for (int i = 0; i < b.nwrite; ++i)
          resolve(b.write[i], b);
        for (int i = 0; i < b.nwait; ++i)
          resolve(b.wait[i], b);
      }
      return;
    }
  }
  for (int i = 0; i < b.ncopy; ++i)
    copy_one(b.copy[i]);
  /* Every thread's stores are ordered before the block's arrival; the last block to arrive has seen
   * every other block arrive, so its flag stores (release, system scope) come after all payloads. */
  __shared__ int last;
  if (b.ncopy > 0)
    __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = 1;
    if (gridDim.x > 1) {
      const unsigned arrived = atomicAdd(b.blocks_done, 1u);
      last = arrived == gridDim.x - 1;
      if (last)
        atomicExch(b.blocks_done, 0u); /* every block has added: ready for the next batch */
    }
  }
  __syncthreads();
  if (!last || threadIdx.x != 0)
    return;
  __threadfence_system(); /* also after copy-engine copies that preceded the kernel on the stream */
  for (int i = 0; i < b.nwrite; ++i)
    store_release_sys(b.write[i].addr, resolve(b.write[i], b));
  wait_all(b.wait, b.nwait, b);
}

} // namespace

extern "C" int rma__ipc_batch_launch(void *stream, const rma_ipc_batch *b) {
  uint64_t blocks = (b->copy_bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  if (blocks < 1)
    blocks = 1;
  if (blocks > kMaxBlocks)
    blocks = kMaxBlocks;
  if (b->npre > 0)
    blocks = 1; /* the pre-waits hold back every store: one block */
  batch_kernel<<<(unsigned)blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(*b);
  return (int)cudaGetLastError();
}
