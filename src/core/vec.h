/* Layouts and vectors (src/core/layout.c, src/core/vec.c) and buffers in a context's memory kind (src/core/mem.c). */
#ifndef RMAOP_CORE_VEC_H
#define RMAOP_CORE_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rmaop_layout_s {
  rmaop_ctx ctx;
  int refs;
  rmaop_layout_kind kind;
  int64_t global_n;
  int64_t *sizes;   /* [size] local sizes (all equal to global_n for BROADCAST) */
  int64_t *offsets; /* [size] */
  /* RMAOP_LAYOUT_STACKED (src/core/layout.c): the part layouts (references held; never stacked themselves) and
   * where part i starts in this rank's local array (the parts' local arrays, concatenated in order).
   * sizes[] are the per-rank sums; offsets[] the rank-major prefix sums of sizes[]. */
  int nparts;
  rmaop_layout *parts;
  int64_t *part_off; /* [nparts] */
};

struct rmaop_vec_s {
  rmaop_ctx ctx;
  rmaop_layout layout;
  rmaop_dtype dtype;
  rmaop_memory memory;
  int64_t local_n;
  void *data;
  int refs;          /* views (rmaop_vec_stack_part) keep their parent's memory alive */
  rmaop_vec parent;  /* a view: the stacked vector whose memory it aliases (NULL otherwise) */
  int borrowed;      /* data is the caller's (rmaop_vec_create_with_array): never freed here */
  int work;          /* data is a work buffer of the context (rmaop__vec_work): goes back to its cache */
};



/* Same distribution on this rank: kind, global size, this rank's size, and for STACKED the same parts
 * (compared likewise). Not collective; what the vector operations require. */
int rmaop__layout_compatible(rmaop_layout a, rmaop_layout b);
/* Same distribution on every rank (all ranks' sizes compared): what composing operators requires. */
int rmaop__layout_same(rmaop_layout a, rmaop_layout b);
/* Every rank holds the whole vector: BROADCAST, or STACKED of BROADCAST parts only. */
int rmaop__layout_replicated(rmaop_layout l);
/* "scatter", "broadcast", "stacked". */
const char *rmaop__layout_kind_name(rmaop_layout_kind kind);
/* Fills *view as part i of the stacked vector v (0 <= i < nparts, not checked): the part's layout
 * (borrowed), v's memory at the part's offset. Takes no reference: for views that live while v is
 * being used (an operator's application). rmaop_vec_stack_part() makes the owning kind. */
void rmaop__vec_part_view(rmaop_vec v, int i, struct rmaop_vec_s *view);


/* The local parts of n dots conj(x_k) . y_k into partials[2k] (real) and [2k+1] (imaginary), the ones
 * rmaop_vec_mdot reduces, so that their sum over the ranks is each dot: a replicated vector (or stacked
 * part) counts on rank 0 only. No reduction, no argument checks (the pairs must match). Host or device. */
rmaop_status rmaop__vec_local_dots(int n, const rmaop_vec x[], const rmaop_vec y[], double *partials);
/* The host dots' summation (rmaop_vec_dot and mdot on host memory): element i of a vector goes to lane
 * i mod RMAOP__DOT_LANES, in double, lanes added in order at the end. _lanes adds a block's terms (a block that
 * starts at an element index that is a multiple of RMAOP__DOT_LANES: lane i mod RMAOP__DOT_LANES of the block
 * is the vector's), _sum adds the lanes: block after block, the dots of rmaop_vec_mdot, bit for bit. */
#define RMAOP__DOT_LANES 8
void rmaop__host_dot_lanes(rmaop_dtype dt, const void *a, const void *b, int64_t n, double re[RMAOP__DOT_LANES],
                           double im[RMAOP__DOT_LANES]);
void rmaop__host_dot_sum(const double re[RMAOP__DOT_LANES], const double im[RMAOP__DOT_LANES], double out[2]);
/* rmaop_vec_mdot_begin's reduction (and rmaop_vec_mdot's, blocking; rmaop_vec_norm2's of one partial, with its
 * square root), given this rank's partials (2 per dot) of scattered vectors. */
rmaop_status rmaop__vec_mdot_parts_begin(rmaop_ctx ctx, int n, const double *partials, double _Complex r[],
                                         rmaop_request *req);
rmaop_status rmaop__vec_mdot_parts(rmaop_ctx ctx, int n, const double *partials, double _Complex r[]);
rmaop_status rmaop__vec_norm2_part(rmaop_ctx ctx, double partial, double *r);
/* Lanes of the host partial sums of the solvers' fused passes (src/ops/op_impl.h, RMAOP__SUM_*). */
#define RMAOP__SUM_LANES 8
/* Adds, for j in [0, n) of host arrays a (an operator's input) and b (its output), element j's terms to lane
 * j mod RMAOP__SUM_LANES, in double: `what` bit 1: |b_j|^2 into lanes[0]; bit 2: |a_j|^2 into lanes[1]; bit 4:
 * conj(a_j) b_j into lanes[2] (real part) and lanes[3] (imaginary part). Callers keep n small (a block in L1)
 * and call it block after block: one loop per sum vectorizes, and the order is fixed by the layout. */
void rmaop__host_sums(rmaop_dtype dtype, const void *a, const void *b, int64_t n, unsigned what,
                      double lanes[4][RMAOP__SUM_LANES]);
/* Deterministic pseudo-random values by global index (dot tests, benchmarks). */
rmaop_status rmaop__vec_fill_random(rmaop_vec v, unsigned seed);
/* 1 when rmaop_vec_mdot_enqueue can keep v's dots on the device (device memory, distributed layout). */
int rmaop__vec_device_dots_ok(rmaop_vec v);
/* rmaop_vec_mdot_enqueue on a device context without its checks and agreement (n <= 8, vectors that pass
 * rmaop__vec_device_dots_ok; the solvers' internal dots). */
rmaop_status rmaop__vec_mdot_device(int n, const rmaop_vec x[], const rmaop_vec y[], double *r);

/* Buffers in the context's memory kind (src/core/mem.c): host memory (rmaop__calloc, free, memcpy, memset) or,
 * for RMAOP_MEMORY_DEVICE, device memory (src/device/device.h: cudaMalloc, copies and kernels enqueued on the
 * context's stream, not waited for). mem_calloc zero fills (0 bytes: a host pointer, or NULL on the device);
 * mem_free takes NULL and sets *p to NULL; mem_copy takes host or device pointers on the device path. */
rmaop_status rmaop__mem_calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out);
/* mem_calloc for buffers that may be the destination of an exchange (vectors, the operators' transpose buffers):
 * on a host context that makes node-shared buffers (src/core/shmem.h), one of those when large enough, so that
 * node peers can put straight into it. mem_free frees either kind. */
rmaop_status rmaop__mem_calloc_node(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out);
void rmaop__mem_free(rmaop_ctx ctx, void **p);
rmaop_status rmaop__mem_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes);
/* dst[0 .. n) = 0 in dtype dt. */
rmaop_status rmaop__mem_zero(rmaop_ctx ctx, rmaop_dtype dt, void *dst, int64_t n);

/* Work buffers (src/core/mem.c): internal buffers that the context keeps when they are released, for the next
 * request of the same size (at most RMAOP__WORK_CACHE; the oldest goes first), so that a solver called again
 * allocates nothing. In the context's memory kind, or page-locked host memory (`pinned`, device contexts).
 * Zero filled when handed out; on the device the zeroing and the previous user's work are ordered by the
 * context's stream, which is why only buffers that nothing but that stream touches may be work buffers (the
 * solvers' own vectors and scalars, never a user's). An allocation that fails frees the cache and tries again;
 * rmaop_ctx_destroy frees it (rmaop__work_flush). */
rmaop_status rmaop__work_alloc(rmaop_ctx ctx, int pinned, size_t bytes, const char *what, void **out);
void rmaop__work_free(rmaop_ctx ctx, int pinned, void *p, size_t bytes);
void rmaop__work_flush(rmaop_ctx ctx);
/* rmaop_vec_duplicate(like) for a solver's own use, its memory a work buffer; rmaop_vec_destroy returns it. */
rmaop_status rmaop__vec_work(rmaop_vec like, rmaop_vec *out);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_VEC_H */
