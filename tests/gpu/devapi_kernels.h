/* The kernels of test_gpu_devapi.c (devapi_kernels.cu, CUDA C++), callable from the C test, and the byte pattern
 * both sides compute (the reference the kernels and the host compare against).
 *
 * Ring (dk_ring): every rank puts into both neighbours every iteration (a bidirectional ring, so every pair of
 * ranks exchanges both ways and double buffering by parity is safe: rmaop_device.cuh, contract), the chunks of
 * dk_chunks, each with its put form, at odd sizes and misaligned offsets that take each copy unit (1, 16, 8, 4
 * and 16 bytes aligned). Window of a rank: [half 0 | half 1], a half = [from the left neighbour | from the right
 * neighbour], DK_REGION bytes each. Everything else in the window stays 0 (guard bytes are checked). */
#ifndef RMAOP_TEST_DEVAPI_KERNELS_H
#define RMAOP_TEST_DEVAPI_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "rmaop/plan.h" /* rmaop_win_device (no MPI header needed by the kernels) */

#ifdef __CUDACC__
#define DK_HD __host__ __device__
#else
#define DK_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { DK_THREAD = 0, DK_WARP = 1, DK_BLOCK = 2 };
typedef struct {
  size_t dst, src, len; /* offsets in a region and in a source region */
  int form;             /* DK_THREAD, DK_WARP, DK_BLOCK */
} dk_chunk;

#define DK_NCHUNK 5
#define DK_REGION ((size_t)98304)
#define DK_HALF (2 * DK_REGION)
#define DK_RING_BYTES (2 * DK_HALF)
#define DK_RING_THREADS 256

/* The chunk table (the last one goes with the signal to the left neighbour: rmaop_dev_put_signal_warp). */
static DK_HD inline dk_chunk dk_chunk_of(int c) {
  switch (c) {
  case 0: { dk_chunk k = {3, 5, 1001, DK_THREAD}; return k; }          /* bytes: addresses differ mod 4 */
  case 1: { dk_chunk k = {1031, 2055, 4099, DK_WARP}; return k; }      /* same mod 16: 9 head bytes, 16 B units */
  case 2: { dk_chunk k = {8196, 8204, 33333, DK_BLOCK}; return k; }    /* differ by 8: 8 B units */
  case 3: { dk_chunk k = {49152, 49152, 20000, DK_BLOCK}; return k; }  /* both aligned: 16 B units */
  default: { dk_chunk k = {73730, 73734, 777, DK_WARP}; return k; }    /* differ by 4: 4 B units */
  }
}

/* The byte that `origin` sends towards direction `dir` (0: to its right neighbour, which stores it in its
 * "from the left" region; 1: to its left neighbour) at iteration `it`, chunk c, index i. Never 0. */
static DK_HD inline unsigned char dk_pattern(int origin, int dir, uint64_t it, int c, size_t i) {
  uint64_t x = (uint64_t)origin * 0x9e3779b97f4a7c15ull ^ (it + 1) * 0xbf58476d1ce4e5b9ull ^
               ((uint64_t)dir << 40 | (uint64_t)c << 32 | (uint64_t)i) * 0x94d049bb133111ebull;
  x ^= x >> 29;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 32;
  return (unsigned char)(1 + x % 255);
}

/* Litmus (dk_litmus): `nblocks` blocks write DK_LIT_WORDS uint32 each into both neighbours, then signal, per
 * round: mode DK_LIT_ADD, every block adds 1 (rmaop_dev_signal_add after a barrier; the target waits for
 * nblocks (round + 1)); DK_LIT_LAST, the blocks meet in a GPU-scope acq_rel counter and the last one stores
 * round + 1 (rmaop_dev_signal). Target block b checks the words of origin block (b + round) mod nblocks. */
enum { DK_LIT_ADD = 0, DK_LIT_LAST = 1 };
#define DK_LIT_WORDS 2048
#define DK_LIT_THREADS 256
static DK_HD inline size_t dk_lit_bytes(int nblocks) {
  return (size_t)2 * 2 * (size_t)nblocks * DK_LIT_WORDS * sizeof(uint32_t); /* [half][dir][block][word] */
}
static DK_HD inline uint32_t dk_lit_value(int origin, int dir, int round, int block, int word) {
  return (uint32_t)origin * 0x01000193u ^ (uint32_t)(round + 1) * 0x9e3779b9u ^ (uint32_t)dir << 31 ^
         (uint32_t)block * 0x85ebca6bu ^ (uint32_t)word * 0xc2b2ae35u;
}

/* Inline messages (dk_inline): every iteration every rank sends DK_INLINE_MSGS inline messages to each neighbour
 * (the bidirectional ring again, slots by parity): by one thread (13 bytes: 4 words, polled in a batch; 7 bytes:
 * 2 words, polled one by one) and by a warp (1001 bytes), sizes that leave a partial last word, the threads'
 * from and into odd addresses (byte loads and stores), the warp's aligned (4-byte words, then a partial one); the
 * receiver checks the bytes it got against dk_pattern (chunk index DK_NCHUNK + m) and that nothing around them
 * was written. Window: [2 parities][2 directions][DK_INLINE_SLOT]; message m at dk_inline_off(m) of a slot, its
 * source and received copy at dk_inline_src(m) and dk_inline_dst(m) of theirs. */
#define DK_INLINE_MSGS 3
#define DK_INLINE_SLOT ((size_t)4096)
#define DK_INLINE_WINDOW (4 * DK_INLINE_SLOT)
#define DK_INLINE_THREADS 64
static DK_HD inline size_t dk_inline_len(int m) {
  return m == 0 ? 13 : m == 1 ? 1001 : 7;
}
static DK_HD inline size_t dk_inline_off(int m) {
  return m == 0 ? 0 : m == 1 ? 64 : 32;
}
static DK_HD inline size_t dk_inline_src(int m) {
  return m == 0 ? 1 : m == 1 ? 128 : 2001;
}
static DK_HD inline size_t dk_inline_dst(int m) {
  return m == 0 ? 3 : m == 1 ? 128 : 2005;
}

/* Each returns a cudaError_t (0: launched) and enqueues on `stream` (a cudaStream_t). Results in device memory:
 * out[0] mismatches seen by the kernel, out[1] 1 when a wait gave up (the kernel stopped there). */
int dk_ring(const rmaop_win_device *w, void *stream, int iters, unsigned char *src_scratch, unsigned long long *out);
int dk_litmus(const rmaop_win_device *w, void *stream, int mode, int rounds, int nblocks, unsigned *counter,
              unsigned long long *out);
int dk_inline(const rmaop_win_device *w, void *stream, int iters, unsigned char *scratch, unsigned long long *out);
/* One thread waits for the own signal word from `origin` to reach `value` (inline: for an 8-byte inline message
 * with sequence number `value` at offset 0); out[1] = its result. */
int dk_wait(const rmaop_win_device *w, void *stream, int inline_msg, int origin, uint64_t value,
            unsigned long long *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_TEST_DEVAPI_KERNELS_H */
