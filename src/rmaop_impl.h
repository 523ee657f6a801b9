/* Internal definitions shared by the core (src/) and the backends (rma/, twosided/, nccl/).
 * Nothing here is part of the public API. */
#ifndef RMAOP_IMPL_H
#define RMAOP_IMPL_H

#include "rmaop/rmaop.h"

#ifndef __cplusplus
#include <complex.h>
#endif
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* The CUDA sources (nvcc, C++) include this header too. */
#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------------------------------ */

/* Records a message (printf-style, prefixed with file:line) in ctx (may be NULL: process-wide slot)
 * and returns status. The first function that detects an error calls it; callers only propagate. */
rmaop_status rmaop__error(rmaop_ctx ctx, rmaop_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Records an MPI failure: names the call and MPI's error string. */
rmaop_status rmaop__mpi_error(rmaop_ctx ctx, int mpi_code, const char *file, int line, const char *call);

#define RMAOP_ERROR(ctx, status, ...) rmaop__error((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)

/* Propagates a failing status without adding a message. */
#define RMAOP_CHECK(expr)                      \
  do {                                         \
    rmaop_status rmaop__s = (expr);            \
    if (rmaop__s != RMAOP_OK) return rmaop__s; \
  } while (0)

/* Validates an argument: on failure records the message and returns status. */
#define RMAOP_REQUIRE(ctx, cond, status, ...)                          \
  do {                                                                 \
    if (!(cond)) return RMAOP_ERROR((ctx), (status), __VA_ARGS__);     \
  } while (0)

/* Runs an MPI call; on failure records "MPI_Xxx(...) failed: <MPI error string>" and returns. */
#define RMAOP_CHECK_MPI(ctx, call)                                                   \
  do {                                                                               \
    int rmaop__m = (call);                                                           \
    if (rmaop__m != MPI_SUCCESS) return rmaop__mpi_error((ctx), rmaop__m, __FILE__, __LINE__, #call); \
  } while (0)

/* Same as RMAOP_CHECK_MPI but stores the status in `st` and jumps to `label` (for cleanup paths). */
#define RMAOP_CHECK_MPI_GOTO(ctx, call, st, label)                                  \
  do {                                                                              \
    int rmaop__m = (call);                                                          \
    if (rmaop__m != MPI_SUCCESS) {                                                  \
      (st) = rmaop__mpi_error((ctx), rmaop__m, __FILE__, __LINE__, #call);          \
      goto label;                                                                   \
    }                                                                               \
  } while (0)

#define RMAOP_CHECK_GOTO(expr, st, label) \
  do {                                    \
    (st) = (expr);                        \
    if ((st) != RMAOP_OK) goto label;     \
  } while (0)

/* Collective agreement on failure: every rank passes its local status; returns the local status on a
 * failing rank, RMAOP_ERR_REMOTE (with a message naming the failed ranks' count and `where`) on ranks
 * that were fine while another failed, RMAOP_OK when all succeeded. One MPI_Allreduce. */
rmaop_status rmaop__agree(rmaop_ctx ctx, rmaop_status local, const char *where);
/* 1 when a * b elements of 16 bytes (the largest dtype) fit in 64-bit byte counts (a, b >= 0). */
static inline int rmaop__fits(int64_t a, int64_t b) {
  int64_t p;
  return !__builtin_mul_overflow(a, b, &p) && !__builtin_mul_overflow(p, (int64_t)16, &p);
}
/* Part c of n elements split over p parts as rmaop_layout_create splits (the first n mod p parts one more). */
static inline void rmaop__split(int64_t n, int64_t p, int64_t c, int64_t *off, int64_t *len) {
  const int64_t base = n / p, extra = n % p;
  *len = base + (c < extra);
  *off = c * base + (c < extra ? c : extra);
}
/* Collective: the n values v[i] (named names[i]) are the same on every rank; else RMAOP_ERR_ARG on every
 * rank naming the first that differs and its range ("fn: dims[1] differs between ranks (from 8 to 9)").
 * Creators of operators whose ranks compute each other's parts from the arguments call it, since a
 * mismatch would move data to the wrong place without any error. n <= 32. */
rmaop_status rmaop__same_everywhere(rmaop_ctx ctx, const int64_t *v, int n, const char *const names[], const char *fn);

/* Narrowing for MPI counts. */
#define RMAOP_REQUIRE_INT(ctx, v, what) \
  RMAOP_REQUIRE(ctx, (v) >= 0 && (v) <= INT_MAX, RMAOP_ERR_ARG, "%s = %lld does not fit an MPI count (int)", (what), (long long)(v))

/* Allocation helpers: record RMAOP_ERR_NOMEM naming what was allocated. */
rmaop_status rmaop__malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out);
rmaop_status rmaop__calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out);

/* Buffers in the context's memory kind (src/mem.c): host memory (rmaop__calloc, free, memcpy, memset) or,
 * for RMAOP_MEMORY_DEVICE, device memory (src/device.h: cudaMalloc, copies and kernels enqueued on the
 * context's stream, not waited for). mem_calloc zero fills (0 bytes: a host pointer, or NULL on the device);
 * mem_free takes NULL and sets *p to NULL; mem_copy takes host or device pointers on the device path. */
rmaop_status rmaop__mem_calloc(rmaop_ctx ctx, size_t n, size_t size, const char *what, void **out);
void rmaop__mem_free(rmaop_ctx ctx, void **p);
rmaop_status rmaop__mem_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes);
/* dst[0 .. n) = 0 in dtype dt. */
rmaop_status rmaop__mem_zero(rmaop_ctx ctx, rmaop_dtype dt, void *dst, int64_t n);

double rmaop__wtime(void);

/* ---- configuration ----------------------------------------------------------------------------- */

/* One row of the configuration table (src/config.c): the README's table of RMAOP_* variables is
 * checked against it by a test. */
typedef struct {
  const char *env;     /* "RMAOP_BACKEND" */
  const char *deflt;   /* "rma" */
  const char *values;  /* "rma|twosided|nccl" (documentation) */
  const char *help;
} rmaop__config_entry;
extern const rmaop__config_entry rmaop__config_table[];
extern const int rmaop__config_count;

/* NULL-terminated name lists indexed by the enums (src/dtype.c). */
extern const char *const rmaop__dtype_names[];
extern const char *const rmaop__sync_names[];
extern const char *const rmaop__transport_names[];
extern const char *const rmaop__memory_names[];

/* Parses a name among `names` (NULL-terminated): index, or RMAOP_ERR_ARG naming `what` and listing them. */
rmaop_status rmaop__parse_name(rmaop_ctx ctx, const char *what, const char *value, const char *const names[], int *index);

/* ---- objects ----------------------------------------------------------------------------------- */

typedef struct rmaop__trace_rec rmaop__trace_rec;

/* How the ipc transport moves small epochs (RMAOP_IPC_PATH; order of ctx.c's ipc_path_names). */
enum { RMAOP__IPC_PATH_AUTO, RMAOP__IPC_PATH_KERNEL, RMAOP__IPC_PATH_COPY };
enum { RMAOP__SCALARS_AUTO, RMAOP__SCALARS_HOST, RMAOP__SCALARS_DEVICE, RMAOP__SCALARS_GRAPH };

/* Whether an object with a `memory` field (a context, a vector) lives on the GPU; 0 without CUDA, where no
 * device context can exist. */
#ifdef RMAOP_HAVE_CUDA
#define RMAOP__ON_DEVICE(obj) ((obj)->memory == RMAOP_MEMORY_DEVICE)
#else
#define RMAOP__ON_DEVICE(obj) 0
#endif

struct rmaop_ctx_s {
  MPI_Comm comm;          /* duplicate, MPI_ERRORS_RETURN */
  int rank, size;
  MPI_Comm node_comm;     /* ranks sharing memory with this one (MPI_COMM_TYPE_SHARED) */
  int node_rank, node_size;
  int *node_of;           /* node_of[r]: index of r's node, to decide node-locality per peer */
  const rmaop_backend *backend;
  void *backend_data;     /* backend's per-context state */
  rmaop_memory memory;
  rmaop_sync rma_sync;
  rmaop_transport rma_transport;
  double timeout;
  int trace_on;
  rmaop__trace_rec *trace;
  double comm_time;       /* seconds spent inside plan begin/end and reduction begin/wait calls */
  int defer_next;         /* set by blocking callers: the next reduction may run blocking at its wait */
  rmaop_request req_pool[8]; /* freed requests kept for reuse: no allocation per dot */
  int nreq_pool;
  /* Device reductions (rmaop_allreduce_enqueue, rmaop_vec_mdot_enqueue; src/reduce.c): a gather plan per
   * count (index = count for 1..16, index 0: the last larger count) and its slots, P x count device doubles. */
  struct {
    rmaop_plan plan;
    double *slots;
    int64_t count;
  } dred[17];
  /* Device memory (src/device.h; RMAOP_MEMORY=device only): the GPU this rank uses, the context's stream
   * (a cudaStream_t) on which every kernel, copy and device-side epoch runs, and scratch for reductions. */
  int device;
  int prev_device;      /* the GPU current before rmaop__dev_init (made current again at destroy; -1: none) */
  void *stream;
  double *dev_scratch;  /* device doubles: dot partials */
  double *host_scratch; /* page-locked doubles: where dot partials land on the host */
  void *fetch_event;    /* cudaEvent_t behind rmaop__dev_fetch_begin's copy (created at first use) */
  int solver_scalars;   /* RMAOP_SOLVER_SCALARS: RMAOP__SCALARS_* */
  uint64_t captured_plans;   /* plan executions captured into CUDA graphs so far (rmaop_plan_begin) */
  void *dev_wait_record;     /* host-mapped rmaop__dev_wait_record (device.h) */
  void *dev_wait_record_dev; /* its device address */
  int mpi_cuda_aware;   /* the MPI library accepts device pointers (MPIX_Query_cuda_support at creation) */
  size_t ipc_store_max; /* RMAOP_IPC_STORE_MAX: kernel-path ipc puts up to this size are stores */
  int ipc_path;         /* RMAOP_IPC_PATH: RMAOP__IPC_PATH_* */
  char last_error[1024];
};

struct rmaop_layout_s {
  rmaop_ctx ctx;
  int refs;
  rmaop_layout_kind kind;
  int64_t global_n;
  int64_t *sizes;   /* [size] local sizes (all equal to global_n for BROADCAST) */
  int64_t *offsets; /* [size] */
  /* RMAOP_LAYOUT_STACKED (src/layout.c): the part layouts (references held; never stacked themselves) and
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
};

/* A plan, after creation. All transfers are in elements.
 * Receive staging layout (shared by every backend): the incoming non-self transfers are stored
 * contiguously, ordered by origin rank, then by the origin's send order; recv[i].src_offset holds the
 * origin's offset, recv_disp[i] the transfer's displacement in the staging buffer, and send_disp[j]
 * where send j lands in the target's staging buffer. */
struct rmaop_plan_s {
  rmaop_ctx ctx;
  char *label;
  rmaop_dtype dtype;
  size_t esize;
  int64_t src_len, dst_len;

  int nsend;                 /* non-self sends, sorted by (peer, given order) */
  rmaop_transfer *send;
  int64_t *send_disp;        /* [nsend] element displacement in the target's staging */
  int nsend_peers;
  int *send_peers;           /* [nsend_peers] ascending */
  int *send_peer_first;      /* [nsend_peers + 1] index ranges into send[] */
  int64_t *send_peer_count;  /* [nsend_peers] elements to that peer */
  int64_t *send_peer_disp;   /* [nsend_peers] where that peer's block starts in its staging */

  int nrecv;                 /* non-self receives, in staging order */
  rmaop_transfer *recv;      /* peer = origin, src_offset = origin's offset, dst_offset = mine */
  int64_t *recv_disp;        /* [nrecv] */
  int nrecv_peers;
  int *recv_peers;           /* [nrecv_peers] ascending */
  int *recv_peer_first;      /* [nrecv_peers + 1] */
  int64_t *recv_peer_count;  /* [nrecv_peers] */
  int64_t *recv_peer_disp;   /* [nrecv_peers] block start in my staging */
  int64_t recv_total;        /* elements in my staging buffer */

  int nself;                 /* transfers to myself (copied src -> dst at unpack, in rank order) */
  rmaop_transfer *self;

  /* execution state */
  int active;                /* between begin and end */
  const void *cur_src;
  void *cur_dst;
  rmaop_mode cur_mode;
  double t_begin;
  double t_inside;           /* seconds spent inside rmaop_plan_begin of the current execution */
  /* A backend that can apply some of an unpack's transfers itself sets this around rmaop__plan_unpack:
   * dst (=|+=) src, `bytes` long; *taken = 0 leaves the transfer to the core (rma over ipc: copies into
   * its epoch kernel). NULL: the core applies every transfer. */
  rmaop_status (*unpack_hook)(rmaop_plan plan, void *dst, const void *src, size_t bytes, rmaop_mode mode,
                              int *taken);

  /* Device memory. dev_native: set by the backend's plan_setup when it reads device src and writes a
   * device staging itself (nccl, rma over ipc, CUDA-aware MPI); otherwise the core stages through host
   * memory: rmaop__plan_send_src() copies the send ranges to host_src, and rmaop__plan_unpack() copies
   * a host staging to dev_staging before the device kernels apply it. */
  int dev_native;
  int capturing;           /* this execution is being captured into a CUDA graph (rmaop_plan_begin) */
  void *host_src;          /* [src_len] host shadow of src: only the send ranges are written */
  void *dev_staging;       /* [recv_total] device copy of a host staging */

  /* trace: what one execution moves, set by the backend at setup */
  uint64_t trace_messages;
  double trace_bytes_per_message;
  const char *trace_transport;

  void *backend_data;
};

struct rmaop_request_s {
  rmaop_ctx ctx;
  void *backend_req;       /* from backend->reduce_begin */
  int started;             /* backend->reduce_begin succeeded: reduce_end is owed */
  int deferred;            /* blocking caller: the backend's blocking reduce runs at the wait */
  const double *in;        /* deferred: the input and operation */
  rmaop_redop op;
  double *buf;             /* reduction buffer owned by the request (may be NULL) */
  double *out;             /* where the reduced doubles go */
  int64_t count;
  /* post-processing for mdot: converts the reduced doubles into complex results */
  void *result;            /* caller's output for finish() */
  int nresult;
  int has_flag;            /* the last double carries the count of failed ranks */
  rmaop_status local;      /* this rank's own argument error, returned after the reduction */
  char label[64];
  double t_begin;
  double t_inside;         /* seconds inside the begin call */
  rmaop_status (*finish)(rmaop_request req);
  double inline_buf[16];   /* small reductions (dots of a solver iteration) need no allocation */
};

/* ---- reductions (src/reduce.c) ----------------------------------------------------------------- */

/* Starts a reduction (`op`) of `np` partial doubles plus one flag that marks the ranks whose arguments
 * were bad (`local` != RMAOP_OK: partials are ignored, the rank still takes part so nobody hangs).
 * `local_only`: every rank holds the whole data (BROADCAST), no communication. At the wait, `finish`
 * turns the reduced doubles into the caller's results, unless a rank failed. */
rmaop_status rmaop__reduce_flagged_begin(rmaop_ctx ctx, rmaop_status local, const double *partials, int64_t np,
                                         rmaop_redop op, const char *label, int local_only,
                                         rmaop_status (*finish)(rmaop_request), void *out, int nout,
                                         rmaop_request *req);

void rmaop__request_pool_free(rmaop_ctx ctx);
/* Frees the device reductions' gather plans (collective: at context destruction). */
void rmaop__dev_reduce_free(rmaop_ctx ctx);
/* 1 when rmaop_vec_mdot_enqueue can keep v's dots on the device (device memory, distributed layout). */
int rmaop__vec_device_dots_ok(rmaop_vec v);
/* rmaop_vec_mdot_enqueue on a device context without its checks and agreement (n <= 8, vectors that pass
 * rmaop__vec_device_dots_ok; the solvers' internal dots). */
rmaop_status rmaop__vec_mdot_device(int n, const rmaop_vec x[], const rmaop_vec y[], double *r);
/* count doubles in device memory reduced into out (device memory) across the context, in rank order,
 * enqueued on the stream (src/reduce.c). Collective; no argument agreement (callers check). */
rmaop_status rmaop__allreduce_device(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op);

/* ---- plan helpers used by backends ------------------------------------------------------------- */

/* The source a backend that moves host memory reads its sends from: plan->cur_src itself for host
 * memory or a dev_native plan; else the host shadow with every send range copied from the device
 * (synchronizes). NULL only on a CUDA failure (recorded in the context). */
const void *rmaop__plan_send_src(rmaop_plan plan);

/* Applies the received data: for every receive in canonical order (self transfers included at their
 * rank's position), dst[dst_offset..] = or += staging[disp..] (self: src[src_offset..]). Host memory, or
 * device memory (kernels on the context's stream; a host staging is copied to the device first). */
rmaop_status rmaop__plan_unpack(rmaop_plan plan, const void *staging, const void *src, void *dst, rmaop_mode mode);
/* The same, leaving out the origins g with skip[g] != 0 (indexed like recv_peers; NULL: none): a backend
 * that received them straight into dst. */
rmaop_status rmaop__plan_unpack_skip(rmaop_plan plan, const void *staging, const void *src, void *dst, rmaop_mode mode,
                                     const unsigned char *skip);

/* ---- operators (src/op.c) ---------------------------------------------------------------------- */

typedef struct rmaop__op_ops {
  rmaop_status (*apply_begin)(rmaop_op A, rmaop_vec x, rmaop_vec y);
  rmaop_status (*apply_end)(rmaop_op A);
  rmaop_status (*adjoint_begin)(rmaop_op A, rmaop_vec y, rmaop_vec x);
  rmaop_status (*adjoint_end)(rmaop_op A);
  void (*destroy)(rmaop_op A); /* frees A->impl and what it holds */
} rmaop__op_ops;

struct rmaop_op_s {
  rmaop_ctx ctx;
  int refs;
  char name[64];
  rmaop_dtype dtype;
  rmaop_layout model, data; /* references held */
  const rmaop__op_ops *ops;
  void *impl;
  int active;               /* 0 idle, 1 forward, 2 adjoint */
  /* Composites: the operators they apply (borrowed; the impl holds the references). A sum begins its
   * parts together only when no leaf operator occurs twice below it. */
  int nparts;
  rmaop_op *parts;
  rmaop_op own_parts[2];
};

/* A new operator with its layouts retained; impl and ops set by the caller. */
rmaop_status rmaop__op_new(rmaop_ctx ctx, const char *name, rmaop_dtype dtype, rmaop_layout model, rmaop_layout data,
                           const rmaop__op_ops *ops, void *impl, rmaop_op *out);

/* ---- stacked layouts and vectors (src/layout.c, src/vec.c) ------------------------------------- */

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

/* Deterministic pseudo-random values by global index (dot tests, benchmarks). */
/* rmaop__op_new for collective constructors, called by every rank with its status so far (`prior`; the
 * operator is made only where it is RMAOP_OK): the ranks agree on the outcome, so when anything failed on
 * one rank every rank frees its impl (whose plans and windows are freed collectively). On failure impl is
 * the caller's. */
rmaop_status rmaop__op_new_agreed(rmaop_status prior, rmaop_ctx ctx, const char *name, rmaop_dtype dtype,
                                  rmaop_layout model, rmaop_layout data, const rmaop__op_ops *ops, void *impl,
                                  rmaop_op *out);
rmaop_status rmaop__vec_fill_random(rmaop_vec v, unsigned seed);
/* 1 when no leaf operator occurs twice among ops (their applications may be begun together; an operator
 * has one execution state, so 2 D + D must run its parts one after the other). */
int rmaop__op_parts_independent(int n, const rmaop_op ops[]);
/* Applies part i of a composite's parts (op.c): begun when `overlap` (ended by rmaop__op_parts_end), else
 * applied whole. On failure the parts 0..i-1 already begun are ended, and the error is returned. */
rmaop_status rmaop__op_part_begin(const rmaop_op ops[], int i, rmaop_vec in, rmaop_vec out, int adjoint, int overlap);
/* Ends the n parts begun by rmaop__op_part_begin (nothing to do unless `overlap`): every one, even after
 * one failed; returns the first error. */
rmaop_status rmaop__op_parts_end(int n, const rmaop_op ops[], int adjoint, int overlap);

/* ---- trace ------------------------------------------------------------------------------------- */

/* `seconds`: begin to end; `inside`: the part spent inside rmaop's own calls; `add`: the call was a plan in
 * RMAOP_ADD mode (the receiver accumulates). */
void rmaop__trace_record(rmaop_ctx ctx, const char *label, const char *kind, const char *transport,
                         uint64_t messages, double bytes_per_message, double seconds, double inside, int add);
void rmaop__trace_free(rmaop_ctx ctx);
/* RMAOP_TRACE_SYNCED: drain + barrier before a traced call (untimed), drain before its end is timed. */
void rmaop__trace_sync_start(rmaop_ctx ctx);
void rmaop__trace_sync_end(rmaop_ctx ctx);

/* ---- dtype dispatch -------------------------------------------------------------------------- */

/* Runs the statements with T bound to the element type of `dtype` and R to its real type, so one kernel
 * serves the four dtypes (no copy per dtype). The casts keep -Wunused-local-typedefs quiet in kernels
 * that need only one of the two names. */
#define RMAOP__FOR_DTYPE(dtype, ...)                                                                         \
  switch (dtype) {                                                                                           \
  case RMAOP_F32: { typedef float T; typedef float R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_F64: { typedef double T; typedef double R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_C64: { typedef float _Complex T; typedef float R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_C128: { typedef double _Complex T; typedef double R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  }

/* ---- element kernels (host) -------------------------------------------------------------------- */

/* dst[i] (=|+=) src[i] for n elements of dtype. */
void rmaop__host_apply(rmaop_dtype dtype, void *dst, const void *src, int64_t n, rmaop_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_IMPL_H */
