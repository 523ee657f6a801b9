/* rmaop-p2p-bench's NVSHMEM baseline (built when CMake finds NVSHMEM: bench/CMakeLists.txt): the same persistent
 * ping-pong kernel as p2p_device.cu, with nvshmem_putmem_signal / nvshmemx_putmem_signal_block and
 * nvshmem_signal_wait_until (GE) on symmetric memory, so the two device-initiated figures come from one run.
 * Bootstrap: a unique id from rank 0, broadcast by the caller over MPI (nvshmemx_get_uniqueid,
 * nvshmemx_set_attr_uniqueid_args, init with NVSHMEMX_INIT_WITH_UNIQUEID: no MPI bootstrap plugin). This file
 * is the only one compiled with -rdc (NVSHMEM's device library is linked at its device link). Every function
 * returns 0, or 1 with a message in err; nothing here exits (nvshmemx_init_attr would, so its body is inlined). */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define P2PN_BLOCK 256

namespace {

enum { FORM_SIGNAL = 0, FORM_THREAD = 1, FORM_BLOCK = 2 };

struct {
  int up, rank;
  char *buf, *src;   /* symmetric: the destination and the source of the puts */
  uint64_t *sig;     /* symmetric: the one signal word */
  unsigned long long *out;
  uint64_t next;     /* signal values used so far (the same on both ranks) */
  cudaStream_t stream;
} bench_nv;

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int FORM> __device__ __forceinline__ void send(char *buf, const char *src, size_t bytes, uint64_t *sig,
                                                          uint64_t v, int peer) {
  if (FORM == FORM_SIGNAL) {
    if (threadIdx.x == 0)
      nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_SET, peer);
  } else if (FORM == FORM_THREAD) {
    nvshmem_putmem_signal(buf, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
  } else {
    nvshmemx_putmem_signal_block(buf, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
  }
}

template <int FORM> __device__ __forceinline__ void receive(uint64_t *sig, uint64_t v) {
  if (FORM == FORM_BLOCK) {
    if (threadIdx.x == 0)
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    __syncthreads();
  } else {
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
  }
}

template <int FORM>
__global__ void pingpong(char *buf, const char *src, size_t bytes, uint64_t *sig, int rank, int warm, int iters,
                         uint64_t base, unsigned long long *out) {
  const int peer = 1 - rank;
  uint64_t t0 = 0;
  for (int i = 0; i < warm + iters; ++i) {
    const uint64_t v = base + (uint64_t)i + 1;
    if (rank == 0) {
      if (i == warm)
        t0 = globaltimer();
      send<FORM>(buf, src, bytes, sig, v, peer);
      receive<FORM>(sig, v);
    } else {
      receive<FORM>(sig, v);
      send<FORM>(buf, src, bytes, sig, v, peer);
    }
  }
  if (rank == 0 && threadIdx.x == 0)
    out[0] = globaltimer() - t0;
}

} // namespace

#define CU_OR_FAIL(call)                                                                                             \
  do {                                                                                                               \
    cudaError_t e_ = (call);                                                                                         \
    if (e_ != cudaSuccess) {                                                                                         \
      snprintf(err, errlen, "%s: %s", #call, cudaGetErrorString(e_));                                                \
      return 1;                                                                                                      \
    }                                                                                                                \
  } while (0)

extern "C" size_t p2pn_uid_size(void) {
  return sizeof(nvshmemx_uniqueid_t);
}

/* Rank 0: the unique id the caller broadcasts (p2pn_uid_size() bytes). */
extern "C" int p2pn_get_uid(void *uid, char *err, size_t errlen) {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  const int s = nvshmemx_get_uniqueid(&id);
  if (s != 0) {
    snprintf(err, errlen, "nvshmemx_get_uniqueid failed (%d)", s);
    return 1;
  }
  *static_cast<nvshmemx_uniqueid_t *>(uid) = id;
  return 0;
}

/* Every rank, on its GPU (current already): NVSHMEM from the broadcast id, then symmetric buffers of max_bytes. */
extern "C" int p2pn_init(int rank, int nranks, const void *uid, size_t max_bytes, char *err, size_t errlen) {
  nvshmemx_uniqueid_t id = *static_cast<const nvshmemx_uniqueid_t *>(uid);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  int s = nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
  if (s != 0) {
    snprintf(err, errlen, "nvshmemx_set_attr_uniqueid_args failed (%d)", s);
    return 1;
  }
  /* A symmetric heap of what the bench needs (NVSHMEM reserves 1 GiB by default); a value from the caller wins. */
  char heap[32];
  snprintf(heap, sizeof heap, "%zu", 2 * max_bytes + ((size_t)64 << 20));
  setenv("NVSHMEM_SYMMETRIC_SIZE", heap, 0);
  /* nvshmemx_init_attr() without its exit on failure */
  int provided = 0;
  nvshmemi_version_t version = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                                NVSHMEM_VENDOR_PATCH_VERSION};
  s = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided, NVSHMEMX_INIT_WITH_UNIQUEID, &attr, version);
  if (s != 0) {
    snprintf(err, errlen, "NVSHMEM initialization with a unique id failed (nvshmemi_init_thread: %d)", s);
    return 1;
  }
  bench_nv.up = 1;
  bench_nv.rank = nvshmem_my_pe();
  if (nvshmem_n_pes() != nranks || bench_nv.rank != rank) {
    snprintf(err, errlen, "NVSHMEM made PE %d of %d for rank %d of %d", bench_nv.rank, nvshmem_n_pes(), rank, nranks);
    return 1;
  }
  bench_nv.buf = static_cast<char *>(nvshmem_malloc(max_bytes));
  bench_nv.src = static_cast<char *>(nvshmem_malloc(max_bytes));
  bench_nv.sig = static_cast<uint64_t *>(nvshmem_calloc(1, sizeof(uint64_t)));
  if (!bench_nv.buf || !bench_nv.src || !bench_nv.sig) {
    snprintf(err, errlen, "nvshmem_malloc of 2 x %zu bytes failed (NVSHMEM_SYMMETRIC_SIZE=%s)", max_bytes,
             getenv("NVSHMEM_SYMMETRIC_SIZE"));
    return 1;
  }
  CU_OR_FAIL(cudaMemset(bench_nv.src, 0x40 + rank, max_bytes));
  CU_OR_FAIL(cudaMalloc(reinterpret_cast<void **>(&bench_nv.out), 2 * sizeof *bench_nv.out));
  CU_OR_FAIL(cudaStreamCreateWithFlags(&bench_nv.stream, cudaStreamNonBlocking));
  CU_OR_FAIL(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  return 0;
}

/* One run of `warm` + `iters` round trips of `bytes` (form 0 bare signal, 1 one thread, 2 a block); both ranks
 * call it together. Rank 0: *seconds = the timed round trips' time on the GPU timer; *bad = 1 when the last
 * message here did not hold the peer's bytes. */
extern "C" int p2pn_pingpong(int form, size_t bytes, int warm, int iters, double *seconds, int *bad, char *err,
                             size_t errlen) {
  const uint64_t base = bench_nv.next;
  bench_nv.next += (uint64_t)(warm + iters);
  CU_OR_FAIL(cudaMemsetAsync(bench_nv.out, 0, 2 * sizeof *bench_nv.out, bench_nv.stream));
  if (form == FORM_SIGNAL)
    pingpong<FORM_SIGNAL><<<1, 1, 0, bench_nv.stream>>>(bench_nv.buf, bench_nv.src, bytes, bench_nv.sig, bench_nv.rank, warm, iters, base, bench_nv.out);
  else if (form == FORM_THREAD)
    pingpong<FORM_THREAD><<<1, 1, 0, bench_nv.stream>>>(bench_nv.buf, bench_nv.src, bytes, bench_nv.sig, bench_nv.rank, warm, iters, base, bench_nv.out);
  else
    pingpong<FORM_BLOCK><<<1, P2PN_BLOCK, 0, bench_nv.stream>>>(bench_nv.buf, bench_nv.src, bytes, bench_nv.sig, bench_nv.rank, warm, iters, base,
                                                          bench_nv.out);
  CU_OR_FAIL(cudaGetLastError());
  CU_OR_FAIL(cudaStreamSynchronize(bench_nv.stream));
  unsigned long long ns = 0;
  CU_OR_FAIL(cudaMemcpy(&ns, bench_nv.out, sizeof ns, cudaMemcpyDeviceToHost));
  *seconds = 1e-9 * (double)ns;
  *bad = 0;
  if (form != FORM_SIGNAL && bytes > 0) {
    unsigned char first = 0, last = 0;
    CU_OR_FAIL(cudaMemcpy(&first, bench_nv.buf, 1, cudaMemcpyDeviceToHost));
    CU_OR_FAIL(cudaMemcpy(&last, bench_nv.buf + bytes - 1, 1, cudaMemcpyDeviceToHost));
    const unsigned char want = (unsigned char)(0x40 + (1 - bench_nv.rank));
    *bad = first != want || last != want;
  }
  return 0;
}

extern "C" void p2pn_fini(void) {
  if (!bench_nv.up)
    return;
  if (bench_nv.stream)
    cudaStreamSynchronize(bench_nv.stream);
  nvshmem_barrier_all();
  if (bench_nv.buf)
    nvshmem_free(bench_nv.buf);
  if (bench_nv.src)
    nvshmem_free(bench_nv.src);
  if (bench_nv.sig)
    nvshmem_free(bench_nv.sig);
  if (bench_nv.out)
    cudaFree(bench_nv.out);
  if (bench_nv.stream)
    cudaStreamDestroy(bench_nv.stream);
  nvshmem_finalize();
  bench_nv.up = 0;
}
