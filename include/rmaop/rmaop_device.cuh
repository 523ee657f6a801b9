/**
 * @file rmaop_device.cuh
 * @brief Device-side window access: a CUDA kernel puts into the ranks' GPU windows and signals them, with no
 *        host step. Header-only (static __device__ __forceinline__ functions): a user's .cu needs no -rdc and
 *        no device linking, only this header and the include path of <rmaop/rmaop.h>.
 *
 * Set-up (host, C or C++): a window over GPU memory on the ipc transport (rmaop_win_allocate() or
 * rmaop_win_create() on a device context whose ranks share a node), then rmaop_win_device_handle() fills a
 * ::rmaop_win_device. Pass it to the kernel by value (a `const __grid_constant__` parameter, CUDA 11.7 and sm_70
 * on, spares each thread a local copy when its address is taken) and hand its address to the functions below:
 *
 *     __global__ void step(const __grid_constant__ rmaop_win_device w, const double *x, int n, uint64_t it) {
 *       const int right = (w.rank + 1) % w.size, left = (w.rank + w.size - 1) % w.size;
 *       const size_t half = (size_t)(it & 1) * n * sizeof(double);          // double buffering by parity
 *       rmaop_dev_put_block(&w, right, half, x, n * sizeof(double));         // the block stores
 *       rmaop_dev_signal_block(&w, right, it + 1);                           // one release for all of it
 *       if (rmaop_dev_wait_block(&w, left, it + 1)) return;                  // timed out: reported by the host
 *       ... read (const double *)(w.base[w.rank] + half): the left neighbour's x of iteration it ...
 *     }
 *
 * Signals. Each rank has one uint64 signal word per origin rank (word o of rank t is written only by rank o).
 * A signal stores a value into the word of the calling rank at the peer (rmaop_dev_signal) or adds to it
 * (rmaop_dev_signal_add); a wait spins until the own word from an origin holds at least a value. Values are the
 * caller's: counters that never decrease (an iteration number, a number of blocks done), since a wait compares
 * with >= over 64 bits (no wrap). The words start at 0 when the window is created and are separate from the
 * host epochs' flags: device-side signals and rmaop_win_epoch_* / plans never read each other's values.
 *
 * Memory-ordering contract (PTX ISA, "Memory Consistency Model": release and acquire patterns at system scope,
 * causality order, which is transitive and cumulative).
 * - A signal is one release at system scope (st.release.sys, or red.release.sys.add for _add). Every store
 *   that precedes it in causality order becomes visible, before the signal itself, to whoever acquires the
 *   signal: the calling thread's own earlier stores and puts (program order), and the stores of any thread
 *   ordered before the signal by a barrier the signalling thread took part in (__syncthreads(), __syncwarp(),
 *   a cooperative grid sync: a barrier orders the participants' earlier memory operations before what any of
 *   them does after it, and a release is cumulative over what is ordered before it), or by a release/acquire
 *   chain (a block that bumps a GPU-scope acq_rel counter before the last block to arrive signals). Hence one
 *   release per signal suffices for a whole warp, block or grid: the _warp and _block forms are a barrier and
 *   one thread's release, nothing more.
 * - A wait is one acquire at system scope: it spins with relaxed loads and, once the value is there, loads the
 *   word once more with ld.acquire.sys. Once rmaop_dev_wait(w, o, v) returns 0, the calling thread sees every
 *   store that origin o ordered before the signal that made the word reach v (and before any earlier signal of
 *   o to this rank, since o's signals to one word are ordered). Other threads see them after a barrier with the
 *   waiting thread (rmaop_dev_wait_block); another block of the same kernel must not rely on a different
 *   block's wait: it waits itself (a satisfied wait costs one load) or acquires through its own chain.
 * - Data read after the wait is the data put before the matching signal, provided nobody overwrote it since:
 *   the origin must not put into a region again while the target may still read it. That is the caller's
 *   protocol, e.g. double buffering by iteration parity where every pair of ranks exchanges both ways (an
 *   origin writes half h again two iterations later, after it waited for the target's signal of the
 *   iteration in between, which the target sends only after it read half h), or an explicit reply signal.
 *   Likewise the target must not write into a region the origin may still be putting into.
 * - The origin's source buffer may be changed as soon as a put returns: a put loads it and stores into the
 *   peer's mapping in the calling threads (no copy engine, no queue), and it is complete at the target when a
 *   later signal (as above) is seen there.
 * - What the host sees: the kernel's stores are visible to the host after the stream synchronized as usual.
 *   Host-side epochs (rmaop_win_epoch_*) on the same bytes must be ordered with the kernel by the stream.
 * Why no more fences: the host-driven kernel path of the library (rma/ipc_kernels.cu) fences at system scope
 * in every thread, because there up to 32 blocks meet in a relaxed atomic counter (no release/acquire chain
 * ties their payload stores to the flag writer) and its flags also stand for copy-engine copies enqueued on
 * the stream before the kernel, which are in no thread's causality order. Here the caller's barrier or
 * acq_rel chain orders the payload before the one thread that signals, so the release of the signal (and
 * the acquire of the wait) is all the ordering needed.
 *
 * Inline messages (NCCL's "LL" protocol): for a few bytes, the latency of a signal's release (it waits until the
 * payload's stores are acknowledged by the peer's memory, a round trip over NVLink, before the flag goes out) is
 * most of a put + signal. An inline message carries its own signal instead: rmaop_dev_put_inline stores the
 * payload as 8-byte words {4 payload bytes, 32-bit sequence number}, each with one st.relaxed.sys (a 64-bit aligned
 * store is single-copy atomic: no word is seen half-written), and rmaop_dev_wait_inline polls the words until
 * every one carries the expected sequence number, then copies the payload out. No fence on either side: a word
 * with the right number holds the right 4 bytes. The rules:
 * - The message (at least 1 byte: an empty one has no word to carry its signal; rmaop_dev_signal is that) takes
 *   RMAOP_DEV_INLINE_BYTES(bytes) = 8 ceil(bytes / 4) bytes of the target's window at an 8-byte aligned offset
 *   (a slot). The window starts zeroed (rmaop_win_allocate on ipc), so sequence numbers
 *   start at 1; a slot's next message needs a number that none of its words holds, e.g. a counter that grows by
 *   one per message (it wraps after 2^32 messages to one slot: 0 is then skipped by the caller).
 * - It orders nothing else: it is not a release, and its wait is not an acquire. Data that must be visible with
 *   it goes inside it, or with a put + signal.
 * - Reuse of a slot is the caller's protocol, as for puts: the origin must not store the next message into a slot
 *   before the target has read the previous one (a reply, or two slots by parity where each pair exchanges both
 *   ways); a new message over an unread one makes the target wait for a number it never sees (the timeout).
 * - Twice the bytes cross the link: worth it below about 1 KiB (on 2 x H200, 8 B: 1.0 us against a put +
 *   signal's 1.9-2.0; 1 KiB by a warp 2.2 against a block's put + signal 1.9; docs/PERFORMANCE.md).
 *
 * Bounds: offsets and sizes are not checked in device code (a put past a window's end writes into whatever
 * follows it in the peer's GPU memory); the peers' window sizes are in rmaop_win_device.bytes. Compile with
 * RMAOP_DEVICE_CHECKS defined to check every peer rank and put range, printing the offending call and
 * trapping (the kernel fails with cudaErrorLaunchFailure; the context then reports RMAOP_ERR_CUDA).
 *
 * Timeouts: a wait gives up after rmaop_win_device.timeout_ns (the context's RMAOP_TIMEOUT) on the GPU's global
 * timer, returns nonzero and leaves a record in the context's host-mapped wait record (the first such wait of
 * the window claims it); the next synchronization of the context (rmaop_ctx_synchronize(), a plan's or an
 * epoch's step, a dot) returns RMAOP_ERR_TIMEOUT naming the origin rank, and the context is failed. The kernel
 * should stop communicating once a wait failed (later waits may block for the timeout again).
 *
 * Warp and block forms: every thread of the warp (of the block) calls them, with the same arguments, from
 * converged code; they index threads by the linear thread index of the block (x fastest). A partial last warp
 * of a block whose size is not a multiple of 32 works.
 */
#ifndef RMAOP_RMAOP_DEVICE_CUH
#define RMAOP_RMAOP_DEVICE_CUH

#if !defined(__cplusplus) || !defined(__CUDACC__)
#error "rmaop_device.cuh is CUDA C++ (nvcc, or clang -x cuda); host C code calls rmaop_win_device_handle from rmaop.h"
#endif

#include <stddef.h>
#include <stdint.h>

#include "plan.h" /* rmaop_win_device, rmaop_win_device_handle */

#if defined(RMAOP_DEVICE_CHECKS)
#include <stdio.h>
#endif

/* ---- internals: PTX accessors and the copy loop ---- */

static __device__ __forceinline__ uint64_t rmaop__dev_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

static __device__ __forceinline__ void rmaop__dev_st_release_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ void rmaop__dev_red_add_release_sys(uint64_t *p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ uint64_t rmaop__dev_ld_relaxed_sys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

static __device__ __forceinline__ uint64_t rmaop__dev_ld_acquire_sys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* The linear index of the calling thread in its block, and the block's thread count. */
static __device__ __forceinline__ unsigned rmaop__dev_tid(void) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned rmaop__dev_nthreads(void) {
  return blockDim.x * blockDim.y * blockDim.z;
}
/* Threads in the calling thread's warp (32, fewer in a partial last warp) and its mask. */
static __device__ __forceinline__ unsigned rmaop__dev_warp_lanes(void) {
  const unsigned left = rmaop__dev_nthreads() - (rmaop__dev_tid() & ~31u);
  return left < 32u ? left : 32u;
}
static __device__ __forceinline__ unsigned rmaop__dev_warp_mask(void) {
  const unsigned n = rmaop__dev_warp_lanes();
  return n == 32u ? 0xffffffffu : (1u << n) - 1u;
}

#if defined(RMAOP_DEVICE_CHECKS)
static __device__ __forceinline__ void rmaop__dev_check_peer(const rmaop_win_device *w, int peer, const char *fn) {
  if (peer < 0 || peer >= w->size) {
    printf("%s: rank %d: peer %d is outside [0, %d) (block %u, thread %u)\n", fn, w->rank, peer, w->size,
           blockIdx.x, rmaop__dev_tid());
    __trap();
  }
}
static __device__ __forceinline__ void rmaop__dev_check_put(const rmaop_win_device *w, int peer, size_t off,
                                                            size_t bytes, const char *fn) {
  rmaop__dev_check_peer(w, peer, fn);
  if (off > w->bytes[peer] || bytes > w->bytes[peer] - off) {
    printf("%s: rank %d: %llu bytes at offset %llu fall outside rank %d's window (%llu bytes; block %u, thread "
           "%u)\n",
           fn, w->rank, (unsigned long long)bytes, (unsigned long long)off, peer, (unsigned long long)w->bytes[peer],
           blockIdx.x, rmaop__dev_tid());
    __trap();
  }
}
#define RMAOP__DEV_CHECK_PEER(w, peer, fn) rmaop__dev_check_peer((w), (peer), (fn))
#define RMAOP__DEV_CHECK_PUT(w, peer, off, bytes, fn) rmaop__dev_check_put((w), (peer), (off), (bytes), (fn))
#else
#define RMAOP__DEV_CHECK_PEER(w, peer, fn) ((void)0)
#define RMAOP__DEV_CHECK_PUT(w, peer, off, bytes, fn) ((void)0)
#endif

template <typename U>
static __device__ __forceinline__ void rmaop__dev_copy_units(char *d, const char *s, size_t n, unsigned lane,
                                                             unsigned lanes) {
  U *du = reinterpret_cast<U *>(d);
  const U *su = reinterpret_cast<const U *>(s);
  for (size_t i = lane; i < n / sizeof(U); i += lanes)
    du[i] = su[i];
}

/* `lanes` threads, this one being `lane`, copy n bytes: the widest unit (16, 8, 4 or 1 bytes) that the two
 * addresses share an alignment for, after a head that aligns the destination, then a byte tail. */
static __device__ __forceinline__ void rmaop__dev_copy(char *d, const char *s, size_t n, unsigned lane,
                                                       unsigned lanes) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  const size_t unit = (mis & 15) == 0 ? 16 : (mis & 7) == 0 ? 8 : (mis & 3) == 0 ? 4 : 1;
  size_t head = (size_t)(0 - reinterpret_cast<uintptr_t>(d)) & (unit - 1);
  if (head > n)
    head = n;
  for (size_t i = lane; i < head; i += lanes)
    d[i] = s[i];
  d += head;
  s += head;
  n -= head;
  switch (unit) {
  case 16: rmaop__dev_copy_units<uint4>(d, s, n, lane, lanes); break;
  case 8: rmaop__dev_copy_units<unsigned long long>(d, s, n, lane, lanes); break;
  case 4: rmaop__dev_copy_units<unsigned>(d, s, n, lane, lanes); break;
  default: rmaop__dev_copy_units<char>(d, s, n, lane, lanes); return;
  }
  for (size_t i = (n & ~(unit - 1)) + lane; i < n; i += lanes)
    d[i] = s[i];
}

/* A wait that gave up: the first of the window claims the context's record (host-mapped, read by the host at its
 * next synchronization; rmaop__dev_wait_record in the library: failed, slot, want, seen). The slot 2 size + o
 * lies past the epoch flags' slots (< 2 size), and slot mod size names the origin. */
static __device__ __noinline__ void rmaop__dev_wait_gave_up(const rmaop_win_device *w, int origin, uint64_t want,
                                                            uint64_t seen) {
  if (atomicCAS(w->wait_claim, 0u, 1u) != 0u)
    return;
  volatile unsigned *r = w->wait_record;
  if (r[0] != 0u)
    return; /* a wait of the library's own kernels came first */
  r[1] = 2u * (unsigned)w->size + (unsigned)origin;
  r[2] = (unsigned)want;
  r[3] = (unsigned)seen;
  __threadfence_system(); /* the fields before the flag the host tests (a failure path: cost is no concern) */
  r[0] = 1u;
}

/* ---- puts: stores into rank `peer`'s window at byte offset dst_offset (own rank included) ---- */

/** One thread puts @p bytes from @p src (memory this thread can read: device, managed or mapped host memory)
 *  into rank @p peer's window at @p dst_offset. Complete at the peer once a later signal of this thread (or one
 *  ordered after it) is seen there. */
static __device__ __forceinline__ void rmaop_dev_put(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                     const void *src, size_t bytes) {
  RMAOP__DEV_CHECK_PUT(w, peer, dst_offset, bytes, "rmaop_dev_put");
  rmaop__dev_copy(w->base[peer] + dst_offset, static_cast<const char *>(src), bytes, 0, 1);
}

/** The calling warp puts together (every thread of the warp calls, same arguments). */
static __device__ __forceinline__ void rmaop_dev_put_warp(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                          const void *src, size_t bytes) {
  RMAOP__DEV_CHECK_PUT(w, peer, dst_offset, bytes, "rmaop_dev_put_warp");
  rmaop__dev_copy(w->base[peer] + dst_offset, static_cast<const char *>(src), bytes, rmaop__dev_tid() & 31u,
                  rmaop__dev_warp_lanes());
}

/** The calling block puts together (every thread of the block calls, same arguments). */
static __device__ __forceinline__ void rmaop_dev_put_block(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                           const void *src, size_t bytes) {
  RMAOP__DEV_CHECK_PUT(w, peer, dst_offset, bytes, "rmaop_dev_put_block");
  rmaop__dev_copy(w->base[peer] + dst_offset, static_cast<const char *>(src), bytes, rmaop__dev_tid(),
                  rmaop__dev_nthreads());
}

/* ---- signals ---- */

/** Stores @p value into this rank's signal word at rank @p peer: one release at system scope, so every store
 *  ordered before it (this thread's, and other threads' through a barrier or an acq_rel chain: the contract at
 *  the top) is visible to a peer that sees the value. One thread. */
static __device__ __forceinline__ void rmaop_dev_signal(const rmaop_win_device *w, int peer, uint64_t value) {
  RMAOP__DEV_CHECK_PEER(w, peer, "rmaop_dev_signal");
  rmaop__dev_st_release_sys(w->peer_signal[peer] + w->rank, value);
}

/** Adds @p inc to this rank's signal word at rank @p peer (one red.release.sys.add): for several blocks that
 *  each signal their own part, the target waiting for the sum. Same ordering as rmaop_dev_signal. One thread. */
static __device__ __forceinline__ void rmaop_dev_signal_add(const rmaop_win_device *w, int peer, uint64_t inc) {
  RMAOP__DEV_CHECK_PEER(w, peer, "rmaop_dev_signal_add");
  rmaop__dev_red_add_release_sys(w->peer_signal[peer] + w->rank, inc);
}

/** __syncwarp(), then lane 0 signals: the whole warp's earlier stores go with it. Every thread of the warp calls. */
static __device__ __forceinline__ void rmaop_dev_signal_warp(const rmaop_win_device *w, int peer, uint64_t value) {
  __syncwarp(rmaop__dev_warp_mask());
  if ((rmaop__dev_tid() & 31u) == 0u)
    rmaop_dev_signal(w, peer, value);
}

/** __syncthreads(), then thread 0 signals: the whole block's earlier stores go with it. Every thread of the block
 *  calls. */
static __device__ __forceinline__ void rmaop_dev_signal_block(const rmaop_win_device *w, int peer, uint64_t value) {
  __syncthreads();
  if (rmaop__dev_tid() == 0u)
    rmaop_dev_signal(w, peer, value);
}

/** rmaop_dev_put() then rmaop_dev_signal() by the same thread. */
static __device__ __forceinline__ void rmaop_dev_put_signal(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                            const void *src, size_t bytes, uint64_t value) {
  rmaop_dev_put(w, peer, dst_offset, src, bytes);
  rmaop_dev_signal(w, peer, value);
}

/** rmaop_dev_put_warp() then rmaop_dev_signal_warp(). */
static __device__ __forceinline__ void rmaop_dev_put_signal_warp(const rmaop_win_device *w, int peer,
                                                                 size_t dst_offset, const void *src, size_t bytes,
                                                                 uint64_t value) {
  rmaop_dev_put_warp(w, peer, dst_offset, src, bytes);
  rmaop_dev_signal_warp(w, peer, value);
}

/** rmaop_dev_put_block() then rmaop_dev_signal_block(). */
static __device__ __forceinline__ void rmaop_dev_put_signal_block(const rmaop_win_device *w, int peer,
                                                                  size_t dst_offset, const void *src, size_t bytes,
                                                                  uint64_t value) {
  rmaop_dev_put_block(w, peer, dst_offset, src, bytes);
  rmaop_dev_signal_block(w, peer, value);
}

/* ---- waits ---- */

/** The own signal word from rank @p origin, read with acquire semantics (what a satisfied wait would give). */
static __device__ __forceinline__ uint64_t rmaop_dev_signal_read(const rmaop_win_device *w, int origin) {
  RMAOP__DEV_CHECK_PEER(w, origin, "rmaop_dev_signal_read");
  return rmaop__dev_ld_acquire_sys(w->signal + origin);
}

/** Spins until the own signal word from rank @p origin holds at least @p value, then acquires it (the contract at
 *  the top). One thread. Returns 0, or nonzero after the timeout (rmaop_win_device.timeout_ns, GPU global timer),
 *  having recorded the failure for the host (RMAOP_ERR_TIMEOUT naming @p origin at the context's next
 *  synchronization). */
static __device__ __forceinline__ int rmaop_dev_wait(const rmaop_win_device *w, int origin, uint64_t value) {
  RMAOP__DEV_CHECK_PEER(w, origin, "rmaop_dev_wait");
  const uint64_t *word = w->signal + origin;
  uint64_t v = rmaop__dev_ld_relaxed_sys(word);
  if (v < value) {
    const uint64_t start = rmaop__dev_globaltimer();
    /* The clock is read on every poll: reading it every 64 polls only measured slower (docs/PERFORMANCE.md). */
    while ((v = rmaop__dev_ld_relaxed_sys(word)) < value) {
      if (rmaop__dev_globaltimer() - start > w->timeout_ns) {
        rmaop__dev_wait_gave_up(w, origin, value, v);
        return 1;
      }
    }
  }
  (void)rmaop__dev_ld_acquire_sys(word); /* the acquire: reads >= value (the word never decreases) */
  return 0;
}

/** Thread 0 of the block waits (rmaop_dev_wait), then a barrier: every thread of the block sees what the origin
 *  ordered before its signal. Every thread of the block calls; all get the same result (0, or nonzero after the
 *  timeout). */
static __device__ __forceinline__ int rmaop_dev_wait_block(const rmaop_win_device *w, int origin, uint64_t value) {
  int failed = 0;
  if (rmaop__dev_tid() == 0u)
    failed = rmaop_dev_wait(w, origin, value);
  return __syncthreads_or(failed);
}

/* ---- inline messages: the payload carries its own signal (the contract at the top) ---- */

/** Window bytes an inline message of @p bytes occupies at the target: one 8-byte word per 4 payload bytes. */
#define RMAOP_DEV_INLINE_BYTES(bytes) ((((size_t)(bytes) + 3u) / 4u) * 8u)

static __device__ __forceinline__ void rmaop__dev_st_relaxed_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Payload word i (4 bytes, the tail zero-padded) of the n bytes at s. */
static __device__ __forceinline__ uint32_t rmaop__dev_inline_word(const unsigned char *s, size_t n, size_t i) {
  const size_t at = 4 * i;
  if (at + 4 <= n && (reinterpret_cast<uintptr_t>(s) & 3u) == 0u)
    return *reinterpret_cast<const uint32_t *>(s + at);
  uint32_t v = 0;
  for (size_t b = 0; b < 4 && at + b < n; ++b)
    v |= (uint32_t)s[at + b] << (8 * b);
  return v;
}

static __device__ __forceinline__ void rmaop__dev_inline_unword(unsigned char *d, size_t n, size_t i, uint32_t v) {
  const size_t at = 4 * i;
  if (at + 4 <= n && (reinterpret_cast<uintptr_t>(d) & 3u) == 0u) {
    *reinterpret_cast<uint32_t *>(d + at) = v;
    return;
  }
  for (size_t b = 0; b < 4 && at + b < n; ++b)
    d[at + b] = (unsigned char)(v >> (8 * b));
}

/* `lanes` threads, this one `lane`, store the words of an inline message. */
static __device__ __forceinline__ void rmaop__dev_put_inline(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                             const void *src, size_t bytes, uint32_t seq, unsigned lane,
                                                             unsigned lanes) {
  uint64_t *d = reinterpret_cast<uint64_t *>(w->base[peer] + dst_offset);
  const unsigned char *s = static_cast<const unsigned char *>(src);
  const uint64_t tag = (uint64_t)seq << 32;
  for (size_t i = lane; i < (bytes + 3) / 4; i += lanes)
    rmaop__dev_st_relaxed_sys(d + i, tag | rmaop__dev_inline_word(s, bytes, i));
}

/* `lanes` threads, this one `lane`, wait for their words of an inline message and copy the payload out, polling
 * BATCH of a thread's words at a time (their loads in flight together). Returns 0, or nonzero after the timeout
 * (recorded for the host). */
template <int BATCH>
static __device__ __forceinline__ int rmaop__dev_wait_inline_n(const rmaop_win_device *w, int origin, size_t offset,
                                                               void *dst, size_t bytes, uint32_t seq, unsigned lane,
                                                               unsigned lanes) {
  const uint64_t *p = reinterpret_cast<const uint64_t *>(w->base[w->rank] + offset);
  unsigned char *d = static_cast<unsigned char *>(dst);
  const size_t nw = (bytes + 3) / 4;
  uint64_t start = 0;
  for (size_t i0 = lane; i0 < nw; i0 += (size_t)lanes * BATCH) {
    uint64_t v[BATCH];
    for (;;) {
#pragma unroll
      for (int k = 0; k < BATCH; ++k)
        if (i0 + (size_t)k * lanes < nw)
          v[k] = rmaop__dev_ld_relaxed_sys(p + i0 + (size_t)k * lanes);
      int all = 1; /* static indices only: a runtime index would put v in local memory */
      uint32_t seen = seq;
#pragma unroll
      for (int k = 0; k < BATCH; ++k)
        if (i0 + (size_t)k * lanes < nw && (uint32_t)(v[k] >> 32) != seq)
          all = 0, seen = (uint32_t)(v[k] >> 32);
      if (all)
        break;
      const uint64_t now = rmaop__dev_globaltimer();
      if (start == 0)
        start = now;
      else if (now - start > w->timeout_ns) {
        rmaop__dev_wait_gave_up(w, origin, seq, seen);
        return 1;
      }
    }
#pragma unroll
    for (int k = 0; k < BATCH; ++k)
      if (i0 + (size_t)k * lanes < nw)
        rmaop__dev_inline_unword(d, bytes, i0 + (size_t)k * lanes, (uint32_t)v[k]);
  }
  return 0;
}

/* A thread with at most two words polls them one by one; with more, eight at a time. On 2 x H200: 8 B took 1.01
 * us one by one (a thread) against 1.14 in batches; 1 KiB by a warp 3.27 one by one against 2.21, 64 KiB 146 against
 * 74 (docs/PERFORMANCE.md). */
static __device__ __forceinline__ int rmaop__dev_wait_inline(const rmaop_win_device *w, int origin, size_t offset,
                                                             void *dst, size_t bytes, uint32_t seq, unsigned lane,
                                                             unsigned lanes) {
  if ((bytes + 3) / 4 <= 2 * (size_t)lanes)
    return rmaop__dev_wait_inline_n<1>(w, origin, offset, dst, bytes, seq, lane, lanes);
  return rmaop__dev_wait_inline_n<8>(w, origin, offset, dst, bytes, seq, lane, lanes);
}

#if defined(RMAOP_DEVICE_CHECKS)
static __device__ __forceinline__ void rmaop__dev_check_inline(const rmaop_win_device *w, int peer, size_t off,
                                                               size_t bytes, uint32_t seq, const char *fn) {
  RMAOP__DEV_CHECK_PUT(w, peer, off, RMAOP_DEV_INLINE_BYTES(bytes), fn);
  if ((off & 7u) != 0u || seq == 0u || bytes == 0u) {
    printf("%s: rank %d: offset %llu is not a multiple of 8, sequence number %u is 0, or the message is empty (%llu "
           "bytes; block %u, thread %u)\n",
           fn, w->rank, (unsigned long long)off, seq, (unsigned long long)bytes, blockIdx.x, rmaop__dev_tid());
    __trap();
  }
}
#define RMAOP__DEV_CHECK_INLINE(w, peer, off, bytes, seq, fn)                                                          \
  rmaop__dev_check_inline((w), (peer), (off), (bytes), (seq), (fn))
#else
#define RMAOP__DEV_CHECK_INLINE(w, peer, off, bytes, seq, fn) ((void)0)
#endif

/** One thread sends @p bytes from @p src as an inline message with sequence number @p seq (nonzero) into rank
 *  @p peer's window at @p dst_offset (8-byte aligned; RMAOP_DEV_INLINE_BYTES(bytes) bytes there): relaxed stores
 *  that carry their own signal, no fence (the contract at the top). */
static __device__ __forceinline__ void rmaop_dev_put_inline(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                            const void *src, size_t bytes, uint32_t seq) {
  RMAOP__DEV_CHECK_INLINE(w, peer, dst_offset, bytes, seq, "rmaop_dev_put_inline");
  rmaop__dev_put_inline(w, peer, dst_offset, src, bytes, seq, 0, 1);
}

/** The calling warp sends an inline message together (every thread of the warp calls, same arguments): lane l
 *  stores words l, l + 32, ... (coalesced). */
static __device__ __forceinline__ void rmaop_dev_put_inline_warp(const rmaop_win_device *w, int peer, size_t dst_offset,
                                                                 const void *src, size_t bytes, uint32_t seq) {
  RMAOP__DEV_CHECK_INLINE(w, peer, dst_offset, bytes, seq, "rmaop_dev_put_inline_warp");
  rmaop__dev_put_inline(w, peer, dst_offset, src, bytes, seq, rmaop__dev_tid() & 31u, rmaop__dev_warp_lanes());
}

/** One thread waits until the inline message from rank @p origin at @p offset of its own window carries sequence
 *  number @p seq in every word, and copies its @p bytes to @p dst. Returns 0, or nonzero after the timeout (then
 *  RMAOP_ERR_TIMEOUT naming @p origin at the context's next synchronization, as rmaop_dev_wait). */
static __device__ __forceinline__ int rmaop_dev_wait_inline(const rmaop_win_device *w, int origin, size_t offset,
                                                            void *dst, size_t bytes, uint32_t seq) {
  RMAOP__DEV_CHECK_PEER(w, origin, "rmaop_dev_wait_inline");
  RMAOP__DEV_CHECK_INLINE(w, w->rank, offset, bytes, seq, "rmaop_dev_wait_inline");
  return rmaop__dev_wait_inline(w, origin, offset, dst, bytes, seq, 0, 1);
}

/** The calling warp waits for an inline message together and copies it out (every thread of the warp calls, same
 *  arguments); after it, @p dst is complete for every thread of the warp. All get the same result. */
static __device__ __forceinline__ int rmaop_dev_wait_inline_warp(const rmaop_win_device *w, int origin, size_t offset,
                                                                 void *dst, size_t bytes, uint32_t seq) {
  RMAOP__DEV_CHECK_PEER(w, origin, "rmaop_dev_wait_inline_warp");
  RMAOP__DEV_CHECK_INLINE(w, w->rank, offset, bytes, seq, "rmaop_dev_wait_inline_warp");
  const int failed =
      rmaop__dev_wait_inline(w, origin, offset, dst, bytes, seq, rmaop__dev_tid() & 31u, rmaop__dev_warp_lanes());
  __syncwarp(rmaop__dev_warp_mask()); /* every lane's copy into dst before any lane reads it */
  return __any_sync(rmaop__dev_warp_mask(), failed);
}

#endif /* RMAOP_RMAOP_DEVICE_CUH */
