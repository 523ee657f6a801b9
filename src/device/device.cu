/* The core's CUDA layer (src/device/device.h): device selection, the context's stream, memory, and the vector
 * kernels. One templated kernel per operation serves the four dtypes; the dtype switch is at the edge
 * (DISPATCH, src/device/cuda_impl.h). Dots accumulate in double in a fixed grid and a fixed order, so they are deterministic. */
#include "cuda_impl.h"
#include "device.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

enum { DOT_BLOCKS = 1056, DOT_THREADS = 256, MAX_DOTS = 8 }; /* 8 blocks per SM of an H100/H200: enough loads in flight to stream at HBM speed */

extern "C" int rmaop__dev_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/* 1 once the stream is idle, 0 on a CUDA error (*err) or after `timeout` seconds (*err = NotReady). */
static int drained(rmaop_ctx ctx, double timeout, cudaError_t *err) {
  double deadline = 0.0;
  for (unsigned spin = 0;; ++spin) {
    const cudaError_t e = cudaStreamQuery(STREAM(ctx));
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) {
      *err = e;
      return 0;
    }
    if (spin < 4096) continue; /* a dot's kernel: microseconds */
    const double now = rmaop__wtime();
    if (deadline == 0.0) deadline = now + timeout;
    if (now > deadline) {
      *err = cudaErrorNotReady;
      return 0;
    }
    sched_yield();
  }
}

extern "C" rmaop_status rmaop__dev_init(rmaop_ctx ctx) {
  int n = rmaop__dev_count();
  RMAOP_REQUIRE(ctx, n > 0, RMAOP_ERR_UNSUPPORTED,
                "memory kind \"device\": no CUDA device is visible to this process (cudaGetDeviceCount found none)");
  ctx->device = ctx->host_rank % n;
  /* The GPU that was current stays the caller's: rmaop__dev_fini makes it current again, so a context made
   * and destroyed in between (a one-rank context over MPI_COMM_SELF picks GPU 0) leaves another context's
   * GPU current (rmaop.h: a context's calls need its GPU current). */
  if (cudaGetDevice(&ctx->prev_device) != cudaSuccess) {
    (void)cudaGetLastError();
    ctx->prev_device = -1;
  }
  RMAOP_CHECK_CUDA(ctx, cudaSetDevice(ctx->device));
  cudaStream_t s;
  RMAOP_CHECK_CUDA(ctx, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ctx->stream = s;
  const size_t scratch = ((size_t)(DOT_BLOCKS + 1) * 2 * MAX_DOTS + 1) * sizeof(double); /* partials, result, ticket */
  RMAOP_CHECK_CUDA(ctx, cudaMalloc((void **)&ctx->dev_scratch, scratch));
  RMAOP_CHECK_CUDA(ctx, cudaMemset(ctx->dev_scratch, 0, scratch));
  RMAOP_CHECK_CUDA(ctx, cudaMallocHost((void **)&ctx->host_scratch, 2 * MAX_DOTS * sizeof(double)));
  RMAOP_CHECK_CUDA(ctx, cudaHostAlloc(&ctx->dev_wait_record, sizeof(rmaop__dev_wait_record), cudaHostAllocMapped));
  memset(ctx->dev_wait_record, 0, sizeof(rmaop__dev_wait_record));
  RMAOP_CHECK_CUDA(ctx, cudaHostGetDevicePointer(&ctx->dev_wait_record_dev, ctx->dev_wait_record, 0));
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_check_waits(rmaop_ctx ctx) {
  const volatile rmaop__dev_wait_record *r = (const volatile rmaop__dev_wait_record *)ctx->dev_wait_record;
  if (!r || !r->failed) return RMAOP_OK;
  const unsigned size = (unsigned)ctx->size, slot = r->slot, want = r->want, seen = r->seen;
  const int ready = slot < size;
  const int peer = (int)(slot % size);
  if (slot >= 2 * size) /* a device-side API wait (include/rmaop/rmaop_device.cuh): slot 2 size + origin */
    return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                       "a device-side wait (rmaop_dev_wait) of rank %d gave up after %g s (RMAOP_TIMEOUT) for rank %d's "
                       "signal (wanted >= %u, the word holds %u; low 32 bits): did rank %d's kernel signal this rank? "
                       "The context is unusable",
                       ctx->rank, ctx->timeout, peer, want, seen, peer);
  return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                     "a GPU-side wait of rank %d gave up after %g s (RMAOP_TIMEOUT) for rank %d's \"%s\" of epoch %u "
                     "(the flag holds %u); did rank %d enter the matching epoch with rank %d as %s? What the stream "
                     "ran after that wait used data that never arrived: the context is unusable",
                     ctx->rank, ctx->timeout, peer, ready ? "ready" : "done", want, seen, peer, ctx->rank,
                     ready ? "an origin" : "a target");
}

extern "C" void rmaop__dev_fini(rmaop_ctx ctx) {
  const int restore = ctx->stream && ctx->prev_device >= 0 && ctx->prev_device != ctx->device ? ctx->prev_device : -1;
  if (ctx->stream) {
    cudaError_t e = cudaSuccess;
    char who[256] = "";
    if (!drained(ctx, ctx->timeout, &e) && (rmaop__dev_release_run(ctx, who, sizeof who), !drained(ctx, 1.0, &e))) {
      /* stuck on a peer: leaked, not freed under it */
      free(ctx->dev_release);
      ctx->dev_release = NULL;
      if (restore >= 0) (void)cudaSetDevice(restore);
      return;
    }
    cudaStreamDestroy(STREAM(ctx));
  }
  free(ctx->dev_release);
  ctx->dev_release = NULL;
  ctx->ndev_release = ctx->cap_dev_release = 0;
  if (ctx->dev_scratch) cudaFree(ctx->dev_scratch);
  if (ctx->host_scratch) cudaFreeHost(ctx->host_scratch);
  if (ctx->fetch_event) cudaEventDestroy((cudaEvent_t)ctx->fetch_event);
  ctx->fetch_event = NULL;
  if (ctx->dev_wait_record) cudaFreeHost(ctx->dev_wait_record);
  ctx->dev_wait_record = ctx->dev_wait_record_dev = NULL;
  ctx->stream = NULL;
  ctx->dev_scratch = NULL;
  ctx->host_scratch = NULL;
  if (restore >= 0) (void)cudaSetDevice(restore);
}

extern "C" rmaop_status rmaop__dev_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out) {
  void *p = NULL;
  if (bytes && rmaop__dev_capturing(ctx))
    return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED,
                       "allocating %s (%zu bytes of GPU memory, zeroed and waited for) while the context's stream is "
                       "being captured into a CUDA graph: run the same work once before capturing, so that it is "
                       "allocated then",
                       what, bytes);
  if (bytes) {
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess)
      return RMAOP_ERROR(ctx, e == cudaErrorMemoryAllocation ? RMAOP_ERR_NOMEM : RMAOP_ERR_CUDA,
                         "cudaMalloc of %zu bytes (%s) failed: %s", bytes, what, cudaGetErrorString(e));
    /* On the context's stream (a non-blocking stream does not wait for the legacy default stream's
     * cudaMemset), then waited for: peers may map the memory at once. */
    e = cudaMemsetAsync(p, 0, bytes, STREAM(ctx));
    if (e == cudaSuccess) e = cudaStreamSynchronize(STREAM(ctx));
    if (e != cudaSuccess) {
      cudaFree(p);
      return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "cudaMemset of %s failed: %s", what, cudaGetErrorString(e));
    }
  }
  *out = p;
  return RMAOP_OK;
}

extern "C" void rmaop__dev_free(void *p) {
  if (p) cudaFree(p);
}

extern "C" rmaop_status rmaop__dev_host_malloc(rmaop_ctx ctx, size_t bytes, const char *what, void **out) {
  void *p = NULL;
  if (bytes) {
    cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess)
      return RMAOP_ERROR(ctx, RMAOP_ERR_NOMEM, "cudaMallocHost of %zu bytes (%s) failed: %s", bytes, what,
                         cudaGetErrorString(e));
    memset(p, 0, bytes);
  }
  *out = p;
  return RMAOP_OK;
}

extern "C" void rmaop__dev_host_free(void *p) {
  if (p) cudaFreeHost(p);
}

extern "C" rmaop_status rmaop__dev_copy(rmaop_ctx ctx, void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return RMAOP_OK;
  RMAOP_CHECK_CUDA(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, STREAM(ctx)));
  return RMAOP_OK;
}

extern "C" int rmaop__dev_capturing(rmaop_ctx ctx) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(STREAM(ctx), &c) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return c != cudaStreamCaptureStatusNone; /* active, or invalidated: either way no host wait now */
}

extern "C" rmaop_status rmaop__dev_release_add(rmaop_ctx ctx, rmaop__dev_release_fn fn, void *arg) {
  if (ctx->ndev_release == ctx->cap_dev_release) {
    const int cap = ctx->cap_dev_release ? 2 * ctx->cap_dev_release : 8;
    void *p = realloc(ctx->dev_release, (size_t)cap * sizeof *ctx->dev_release);
    RMAOP_REQUIRE(ctx, p != NULL, RMAOP_ERR_NOMEM, "growing the context's stream releases to %d entries", cap);
    ctx->dev_release = (struct rmaop__dev_release *)p;
    ctx->cap_dev_release = cap;
  }
  ctx->dev_release[ctx->ndev_release].fn = fn;
  ctx->dev_release[ctx->ndev_release].arg = arg;
  ++ctx->ndev_release;
  return RMAOP_OK;
}

extern "C" void rmaop__dev_release_remove(rmaop_ctx ctx, void *arg) {
  for (int i = 0; i < ctx->ndev_release; ++i)
    if (ctx->dev_release[i].arg == arg) {
      ctx->dev_release[i] = ctx->dev_release[--ctx->ndev_release];
      return;
    }
}

extern "C" void rmaop__dev_release_run(rmaop_ctx ctx, char *who, size_t n) {
  for (int i = 0; i < ctx->ndev_release; ++i) ctx->dev_release[i].fn(ctx->dev_release[i].arg, who, n);
}

extern "C" void rmaop__dev_release_name(char *who, size_t n, int rank) {
  char name[32];
  snprintf(name, sizeof name, "rank %d", rank);
  const size_t len = strlen(who), k = strlen(name);
  for (const char *p = strstr(who, name); p; p = strstr(p + 1, name))
    if (p[k] == '\0' || p[k] == ',') return; /* "rank 1" is not "rank 12" */
  snprintf(who + len, n > len ? n - len : 0, "%s%s", len ? ", " : "", name);
}

extern "C" rmaop_status rmaop__dev_drain(rmaop_ctx ctx, const char *what) {
  cudaError_t e = cudaSuccess;
  if (rmaop__dev_capturing(ctx))
    return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED,
                       "%s: this waits on the host for the context's GPU stream, which is being captured into a CUDA "
                       "graph (a capture cannot hold a host wait); end the capture first, or capture only "
                       "stream-ordered work (README, \"CUDA graphs\")",
                       what);
  /* A quarter more than the timeout: a kernel wait that gives up (same timeout, started earlier) then
   * gets to say which peer it waited for. */
  if (drained(ctx, 1.25 * ctx->timeout, &e)) return rmaop__dev_check_waits(ctx);
  if (e != cudaErrorNotReady)
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "%s: the context's stream failed: %s (%s)", what, cudaGetErrorString(e),
                       cudaGetErrorName(e));
  RMAOP_CHECK(rmaop__dev_check_waits(ctx)); /* a kernel wait that gave up says more */
  char who[256] = "";
  rmaop__dev_release_run(ctx, who, sizeof who);
  const int released = drained(ctx, 1.0 + 0.25 * ctx->timeout, &e);
  return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT,
                     "%s: rank %d waited %g s (RMAOP_TIMEOUT + 25 %%) for its stream, which waits for a peer (a "
                     "stream-side wait of the ipc copy path, or an NCCL transfer)%s%s; did every peer enter the "
                     "matching exchange? %s",
                     what, ctx->rank, 1.25 * ctx->timeout, who[0] ? "; it waited for " : "", who,
                     released ? "The stream was released; the context is failed"
                              : "The stream stays blocked: the context is unusable");
}

extern "C" rmaop_status rmaop__dev_sync(rmaop_ctx ctx) {
  return rmaop__dev_drain(ctx, "synchronizing the GPU stream");
}

extern "C" int rmaop__dev_is_device_ptr(const void *p) {
  cudaPointerAttributes a;
  if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* ---- element types: real and complex share one arithmetic interface ---- */

template <typename T> struct num;
template <> struct num<float> {
  typedef float real;
  static __device__ float make(double re, double) { return (float)re; }
  static __device__ float mul(float a, float b) { return a * b; }
  static __device__ float add(float a, float b) { return a + b; }
  static __device__ void dot(float a, float b, double &re, double &) { re += (double)a * (double)b; }
};
template <> struct num<double> {
  typedef double real;
  static __device__ double make(double re, double) { return re; }
  static __device__ double mul(double a, double b) { return a * b; }
  static __device__ double add(double a, double b) { return a + b; }
  static __device__ void dot(double a, double b, double &re, double &) { re += a * b; }
};
template <> struct num<cuFloatComplex> {
  typedef float real;
  static __device__ cuFloatComplex make(double re, double im) { return make_cuFloatComplex((float)re, (float)im); }
  static __device__ cuFloatComplex mul(cuFloatComplex a, cuFloatComplex b) { return cuCmulf(a, b); }
  static __device__ cuFloatComplex add(cuFloatComplex a, cuFloatComplex b) { return cuCaddf(a, b); }
  static __device__ void dot(cuFloatComplex a, cuFloatComplex b, double &re, double &im) {
    const double ar = a.x, ai = a.y, br = b.x, bi = b.y;
    re += ar * br + ai * bi; /* conj(a) * b */
    im += ar * bi - ai * br;
  }
};
template <> struct num<cuDoubleComplex> {
  typedef double real;
  static __device__ cuDoubleComplex make(double re, double im) { return make_cuDoubleComplex(re, im); }
  static __device__ cuDoubleComplex mul(cuDoubleComplex a, cuDoubleComplex b) { return cuCmul(a, b); }
  static __device__ cuDoubleComplex add(cuDoubleComplex a, cuDoubleComplex b) { return cuCadd(a, b); }
  static __device__ void dot(cuDoubleComplex a, cuDoubleComplex b, double &re, double &im) {
    re += a.x * b.x + a.y * b.y;
    im += a.x * b.y - a.y * b.x;
  }
};


template <typename T> __global__ void k_set(T *x, int64_t n, double are, double aim) {
  const T a = num<T>::make(are, aim);
  GRID_STRIDE(i, n) x[i] = a;
}

/* k_axpby's element, a x + b y (b0: b is 0, b1: b is 1): the one expression of every kernel whose updates must
 * give k_axpby's bits (the solvers' device-scalar loops). */
template <typename T> __device__ __forceinline__ T axpby_el(T a, T x, T b, T y, bool b0, bool b1) {
  const T ax = num<T>::mul(a, x);
  return b0 ? ax : b1 ? num<T>::add(ax, y) : num<T>::add(ax, num<T>::mul(b, y));
}

template <typename T> __global__ void k_axpby(T *y, const T *x, int64_t n, double are, double aim, double bre, double bim) {
  const T a = num<T>::make(are, aim), b = num<T>::make(bre, bim);
  const bool b0 = bre == 0.0 && bim == 0.0, b1 = bre == 1.0 && bim == 0.0;
  GRID_STRIDE(i, n) y[i] = axpby_el(a, x[i], b, y[i], b0, b1);
}

template <typename T> __global__ void k_pmult(T *w, const T *x, const T *y, int64_t n) {
  GRID_STRIDE(i, n) w[i] = num<T>::mul(x[i], y[i]);
}

template <typename T> __global__ void k_apply(T *dst, const T *src, int64_t n, int add) {
  if (add) {
    GRID_STRIDE(i, n) dst[i] = num<T>::add(dst[i], src[i]);
  } else {
    GRID_STRIDE(i, n) dst[i] = src[i];
  }
}

struct dot_args {
  const void *x[MAX_DOTS], *y[MAX_DOTS];
};

/* Stage 2: the partials of every dot summed in block order by one block (the last of stage 1 to finish). */
__device__ void dots_final(const double *part, int k, int nblocks, double *out) {
  __shared__ double s[DOT_THREADS];
  for (int c = 0; c < 2 * k; ++c) {
    double v = 0.0;
    for (int b = threadIdx.x; b < nblocks; b += blockDim.x) v += __ldcg(part + (int64_t)b * 2 * k + c);
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = DOT_THREADS / 2; h > 0; h >>= 1) {
      if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[c] = s[0];
    __syncthreads();
  }
}

/* ---- the one-block reduction across the ranks of a node (device.h, rmaop__dred_args) ---- */

__device__ __forceinline__ uint64_t dred_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void dred_store_release_sys(uint32_t *addr, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t dred_load_acquire_sys(const uint32_t *addr) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
  return v;
}

/* Every thread of one block of at least max(a.count, a.P) threads; `in`: this rank's values, visible to the block
 * (stored by an earlier kernel, or by this block before a __syncthreads). */
__device__ void dred_block(const rmaop__dred_args &a, const double *in) {
  const int t = threadIdx.x;
  const uint32_t epoch = *(volatile uint32_t *)a.counter + 1u; /* this reduction's number */
  const int half = (int)(epoch & 1u);
  const size_t mine = ((size_t)half * a.P + a.me) * RMAOP__DRED_MAXC;
  if (t < a.count) {
    const double v = in[t];
    for (int r = 0; r < a.P; ++r) a.slots[r][mine + t] = v;
  }
  __threadfence_system();
  __syncthreads();
  if (t == 0)
    for (int r = 0; r < a.P; ++r) dred_store_release_sys(a.flags[r] + a.me, epoch);
  __shared__ int failed;
  if (t == 0) {
    failed = 0;
    *a.counter = epoch; /* every thread read the counter before the __syncthreads above */
  }
  __syncthreads();
  if (t < a.P) { /* thread r waits for rank r's values */
    const uint32_t *f = a.flags[a.me] + t;
    const uint64_t start = dred_ns();
    for (;;) {
      const uint32_t v = dred_load_acquire_sys(f);
      if ((int32_t)(v - epoch) >= 0) break;
      if (dred_ns() - start > a.timeout_ns) {
        a.error->slot = (unsigned)(a.P + t); /* rank t's "done" */
        a.error->want = epoch;
        a.error->seen = v;
        __threadfence_system();
        a.error->failed = 1;
        failed = 1;
        break;
      }
    }
  }
  __syncthreads();
  if (failed || t >= a.count) return;
  const double *own = a.slots[a.me] + (size_t)half * a.P * RMAOP__DRED_MAXC + t;
  double v = __ldcv(own);
  for (int r = 1; r < a.P; ++r) {
    const double w = __ldcv(own + (size_t)r * RMAOP__DRED_MAXC);
    v = a.op == RMAOP_SUM ? v + w : a.op == RMAOP_MAX ? (w > v ? w : v) : (w < v ? w : v);
  }
  a.out[t] = v;
}

__global__ void k_dred(const rmaop__dred_args a) { dred_block(a, a.in); }

/* Stage 1: block b writes its partial sums of every dot to part[(b * k + j) * 2 + {0,1}]. A block-level
 * tree in shared memory: the order is fixed by the launch shape, so the result is deterministic. The last
 * block to finish (a ticket on `arrived`, reset for the next launch) runs stage 2 into out: one launch. With
 * red.P > 0 that block then reduces out across the ranks (dred_block) into red.out. */
template <typename T>
__global__ void k_dots(dot_args a, int k, int64_t n, double *part, unsigned *arrived, double *out,
                       const rmaop__dred_args red) {
  __shared__ double sre[DOT_THREADS], sim[DOT_THREADS];
  for (int j = 0; j < k; ++j) {
    const T *x = (const T *)a.x[j], *y = (const T *)a.y[j];
    double re = 0.0, im = 0.0;
    GRID_STRIDE(i, n) num<T>::dot(x[i], y[i], re, im);
    sre[threadIdx.x] = re;
    sim[threadIdx.x] = im;
    __syncthreads();
    for (int s = DOT_THREADS / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) {
        sre[threadIdx.x] += sre[threadIdx.x + s];
        sim[threadIdx.x] += sim[threadIdx.x + s];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      part[((int64_t)blockIdx.x * k + j) * 2] = sre[0];
      part[((int64_t)blockIdx.x * k + j) * 2 + 1] = sim[0];
    }
    __syncthreads();
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence(); /* this block's partials before its ticket */
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  dots_final(part, k, (int)gridDim.x, out);
  if (threadIdx.x == 0) *arrived = 0u;
  if (red.P > 0) dred_block(red, out);
}


extern "C" rmaop_status rmaop__dev_set(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n, double are, double aim) {
  if (n <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_set<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>((T *)x, n, are, aim)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_axpby(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n, double are,
                                         double aim, double bre, double bim) {
  if (n <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_axpby<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>((T *)y, (const T *)x, n, are, aim, bre, bim)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_pmult(rmaop_ctx ctx, rmaop_dtype dt, void *w, const void *x, const void *y, int64_t n) {
  if (n <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_pmult<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>((T *)w, (const T *)x, (const T *)y, n)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_apply(rmaop_ctx ctx, rmaop_dtype dt, void *dst, const void *src, int64_t n,
                                         rmaop_mode mode) {
  if (n <= 0) return RMAOP_OK;
  if (mode == RMAOP_INSERT) return rmaop__dev_copy(ctx, dst, src, (size_t)n * rmaop_dtype_size(dt));
  DISPATCH(dt, (k_apply<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>((T *)dst, (const T *)src, n, 1)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* The scratch: DOT_BLOCKS x 2 x MAX_DOTS partials, 2 x MAX_DOTS results (rmaop__dev_dots_result), then the
 * dot kernel's block ticket (zero between launches). */
static unsigned *dots_ticket(rmaop_ctx ctx) {
  return (unsigned *)(ctx->dev_scratch + (size_t)(DOT_BLOCKS + 1) * 2 * MAX_DOTS);
}

/* The dot kernel into dev_out, reducing across the ranks when red->P > 0 (then also for n = 0: one block). */
static rmaop_status dots_launch(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[], const void *const y[],
                                int64_t n, double *dev_out, const rmaop__dred_args *red) {
  RMAOP_REQUIRE(ctx, k >= 1 && k <= MAX_DOTS, RMAOP_ERR_INTERNAL, "rmaop__dev_dots: %d dots (1..%d)", k, MAX_DOTS);
  if (n <= 0 && red->P == 0) {
    RMAOP_CHECK_CUDA(ctx, cudaMemsetAsync(dev_out, 0, 2 * (size_t)k * sizeof(double), STREAM(ctx)));
    return RMAOP_OK;
  }
  if (n < 0) n = 0;
  dot_args a;
  for (int j = 0; j < k; ++j) {
    a.x[j] = x[j];
    a.y[j] = y[j];
  }
  /* Few elements: fewer blocks, so the partials are short; the shape depends on n only. */
  int64_t want = (n + DOT_THREADS * 4 - 1) / (DOT_THREADS * 4);
  const int nb = (int)(want < 1 ? 1 : want > DOT_BLOCKS ? DOT_BLOCKS : want);
  DISPATCH(dt, (k_dots<T><<<nb, DOT_THREADS, 0, STREAM(ctx)>>>(a, k, n, ctx->dev_scratch, dots_ticket(ctx), dev_out,
                                                                *red)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_dots_enqueue(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[],
                                                const void *const y[], int64_t n, double *dev_out) {
  rmaop__dred_args none;
  memset(&none, 0, sizeof none);
  return dots_launch(ctx, dt, k, x, y, n, dev_out, &none);
}

extern "C" rmaop_status rmaop__dev_dots_reduce(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[],
                                               const void *const y[], int64_t n, const rmaop__dred_args *a) {
  RMAOP_REQUIRE(ctx, a->P > 0 && a->count == 2 * k, RMAOP_ERR_INTERNAL,
                "rmaop__dev_dots_reduce: %d ranks, %d values for %d dots", a->P, a->count, k);
  return dots_launch(ctx, dt, k, x, y, n, rmaop__dev_dots_result(ctx), a);
}

extern "C" rmaop_status rmaop__dev_dred(rmaop_ctx ctx, const rmaop__dred_args *a) {
  k_dred<<<1, 32, 0, STREAM(ctx)>>>(*a);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" double *rmaop__dev_dots_result(rmaop_ctx ctx) {
  return ctx->dev_scratch + (size_t)DOT_BLOCKS * 2 * MAX_DOTS;
}

extern "C" rmaop_status rmaop__dev_dots(rmaop_ctx ctx, rmaop_dtype dt, int k, const void *const x[],
                                        const void *const y[], int64_t n, double *out) {
  if (n <= 0) {
    for (int c = 0; c < 2 * k; ++c) out[c] = 0.0;
    return RMAOP_OK;
  }
  double *fin = rmaop__dev_dots_result(ctx);
  RMAOP_CHECK(rmaop__dev_dots_enqueue(ctx, dt, k, x, y, n, fin));
  RMAOP_CHECK_CUDA(ctx, cudaMemcpyAsync(ctx->host_scratch, fin, 2 * (size_t)k * sizeof(double), cudaMemcpyDeviceToHost,
                                 STREAM(ctx)));
  RMAOP_CHECK(rmaop__dev_drain(ctx, "a dot product"));
  memcpy(out, ctx->host_scratch, 2 * (size_t)k * sizeof(double));
  return RMAOP_OK;
}

/* ---- solver scalars that stay on the device (src/solvers/solver.c, CGLS) ---- */

/* y = (sa * s[ia]) x + b y, b = s[ib] (ib >= 0) or bconst; the arithmetic of k_axpby with the scalars read
 * here, so the results are those of rmaop__dev_axpby with the same values. Nothing is written when
 * iskip >= 0 and s[iskip] != 0 (a breakdown: the host path would not have made the update). */
template <typename T>
__global__ void k_axpby_s(T *y, const T *x, int64_t n, const double *s, int ia, double sa, int ib, double bconst,
                          int iskip) {
  if (iskip >= 0 && s[iskip] != 0.0) return;
  const double are = ia >= 0 ? sa * s[ia] : sa, bre = ib >= 0 ? s[ib] : bconst;
  const T a = num<T>::make(are, 0.0), b = num<T>::make(bre, 0.0);
  const bool b0 = bre == 0.0, b1 = bre == 1.0;
  GRID_STRIDE(i, n) y[i] = axpby_el(a, x[i], b, y[i], b0, b1);
}

extern "C" rmaop_status rmaop__dev_axpby_s(rmaop_ctx ctx, rmaop_dtype dt, void *y, const void *x, int64_t n,
                                           const double *s, int ia, double sa, int ib, double bconst, int iskip) {
  if (n <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_axpby_s<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>((T *)y, (const T *)x, n, s, ia, sa, ib, bconst,
                                                                        iskip)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* CGLS's and CG's scalar recurrences (src/solvers/solver.c) on one thread; st: RMAOP__CG_* slots (device.h). d: the
 * complex dots of the step (CGLS alpha: q.q, c.c; CG alpha: c.Ac; beta and init: r.r, and s.s for CGLS). */
__global__ void k_cgls_scalars(const double *d, double damp2, double *st, int step) {
  if (step == 0 || step == 3) { /* alpha: a = kold / (q.q + damp^2 c.c) or kold / |c.Ac|; breakdown when 0 */
    const double den = step == 0 ? d[0] + damp2 * d[2] : hypot(d[0], d[1]);
    st[RMAOP__CG_BREAKDOWN] = den == 0.0 ? 1.0 : 0.0;
    st[RMAOP__CG_A] = den == 0.0 ? 0.0 : st[RMAOP__CG_KOLD] / den;
  } else { /* beta (step 1) or the start (step 2): k = |r.r|, b = k / kold, kold = k; ||s|| for the history */
    const double k = hypot(d[0], d[1]);
    if (step == 1) st[RMAOP__CG_B] = k / st[RMAOP__CG_KOLD];
    st[RMAOP__CG_KOLD] = k;
    st[RMAOP__CG_SS] = d[2];
  }
}

extern "C" rmaop_status rmaop__dev_cgls_scalars(rmaop_ctx ctx, const double *d, double damp2, double *st, int step) {
  k_cgls_scalars<<<1, 1, 0, STREAM(ctx)>>>(d, damp2, st, step);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* Pipelined CG's scalars (src/solvers/solver_krylov.c, pipecg_loop) on one thread, from d = (r.r, w.r) as complex
 * pairs; st: RMAOP__PCG_* slots (device.h). Once a stop is recorded nothing changes (the host may have enqueued
 * the next iteration before it read the stop). The expressions and their order are the host loop's, rounded
 * the same way (no contraction: the products and quotients are separately rounded intrinsics). */
__global__ void k_pipecg_scalars(const double *d, double *st, double tol, int niter, int first) {
  if (first)
    for (int i = 0; i < RMAOP__PCG_NSLOTS; ++i) st[i] = 0.0;
  if (st[RMAOP__PCG_STOP] != 0.0) return;
  const int k = (int)st[RMAOP__PCG_K];
  const double gamma = d[0], delta = d[2];
  st[RMAOP__PCG_GAMMA] = gamma;
  if (gamma <= tol || k == niter) {
    st[RMAOP__PCG_STOP] = gamma <= tol ? RMAOP__PCG_STOP_TOL : RMAOP__PCG_STOP_NITER;
    return;
  }
  const double beta = k == 0 ? 0.0 : __ddiv_rn(gamma, st[RMAOP__PCG_GOLD]);
  const double den =
      k == 0 ? delta : __dsub_rn(delta, __ddiv_rn(__dmul_rn(beta, gamma), st[RMAOP__PCG_AOLD]));
  if (den == 0.0) {
    st[RMAOP__PCG_STOP] = RMAOP__PCG_STOP_BREAKDOWN;
    return;
  }
  const double alpha = __ddiv_rn(gamma, den);
  st[RMAOP__PCG_ALPHA] = st[RMAOP__PCG_AOLD] = alpha;
  st[RMAOP__PCG_BETA] = beta;
  st[RMAOP__PCG_GOLD] = gamma;
  st[RMAOP__PCG_K] = k + 1;
}

extern "C" rmaop_status rmaop__dev_pipecg_scalars(rmaop_ctx ctx, const double *d, double *st, double tol, int niter,
                                                  int first) {
  k_pipecg_scalars<<<1, 1, 0, STREAM(ctx)>>>(d, st, tol, niter, first);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

struct pipecg_ptrs {
  void *v[RMAOP__PCG_NVECS];
};

/* Pipelined CG's six vector updates in one pass, each element through k_axpby's expression with the host
 * loop's scalars (z = q + b z, s = w + b s, p = r + b p, x += a p, r -= a s, w -= a z, in that order): the
 * bits of the six rmaop_vec_axpby / rmaop_vec_axpy calls, 13 vector streams instead of 18. Nothing is written
 * once a stop is recorded. `unit` is 1.0, a run-time value as in k_axpby: a constant 1 would let the compiler
 * fold 1 q away and contract q + b z into fma(b, z, q), where k_axpby rounds b z first (fma(1, q, b z)). */
template <typename T> __global__ void k_pipecg_update(pipecg_ptrs p, int64_t n, const double *st, double unit) {
  if (st[RMAOP__PCG_STOP] != 0.0) return;
  T *X = (T *)p.v[RMAOP__PCG_X], *R = (T *)p.v[RMAOP__PCG_R], *W = (T *)p.v[RMAOP__PCG_W];
  T *Z = (T *)p.v[RMAOP__PCG_Z], *S = (T *)p.v[RMAOP__PCG_S], *P = (T *)p.v[RMAOP__PCG_P];
  const T *Q = (const T *)p.v[RMAOP__PCG_Q];
  const double al = st[RMAOP__PCG_ALPHA], be = st[RMAOP__PCG_BETA];
  const T one = num<T>::make(unit, 0.0), b = num<T>::make(be, 0.0), a = num<T>::make(al, 0.0),
          ma = num<T>::make(-al, 0.0);
  const bool b0 = be == 0.0, b1 = be == 1.0;
  GRID_STRIDE(i, n) {
    const T r = R[i], w = W[i];
    const T z = axpby_el(one, Q[i], b, Z[i], b0, b1), s = axpby_el(one, w, b, S[i], b0, b1),
            pp = axpby_el(one, r, b, P[i], b0, b1);
    Z[i] = z, S[i] = s, P[i] = pp;
    X[i] = axpby_el(a, pp, one, X[i], false, true);
    R[i] = axpby_el(ma, s, one, r, false, true);
    W[i] = axpby_el(ma, z, one, w, false, true);
  }
}

extern "C" rmaop_status rmaop__dev_pipecg_update(rmaop_ctx ctx, rmaop_dtype dt, void *const vecs[], int64_t n,
                                                 const double *st) {
  if (n <= 0) return RMAOP_OK;
  pipecg_ptrs p;
  for (int i = 0; i < RMAOP__PCG_NVECS; ++i) p.v[i] = vecs[i];
  DISPATCH(dt, (k_pipecg_update<T><<<grid_for(n, 256), 256, 0, STREAM(ctx)>>>(p, n, st, 1.0)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* Host copies of device values, read a little later (the solvers' convergence checks): an async copy into
 * page-locked memory and an event after it; the wait polls the event, bounded like a drain. */
extern "C" rmaop_status rmaop__dev_fetch_begin(rmaop_ctx ctx, double *host, const double *dev, int n) {
  RMAOP_CHECK_CUDA(ctx, cudaMemcpyAsync(host, dev, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, STREAM(ctx)));
  return rmaop__dev_fetch_mark(ctx);
}

extern "C" rmaop_status rmaop__dev_fetch_mark(rmaop_ctx ctx) {
  if (!ctx->fetch_event) {
    cudaEvent_t e;
    RMAOP_CHECK_CUDA(ctx, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ctx->fetch_event = e;
  }
  RMAOP_CHECK_CUDA(ctx, cudaEventRecord((cudaEvent_t)ctx->fetch_event, STREAM(ctx)));
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_capture_begin(rmaop_ctx ctx) {
  RMAOP_CHECK_CUDA(ctx, cudaStreamBeginCapture(STREAM(ctx), cudaStreamCaptureModeThreadLocal));
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_capture_end(rmaop_ctx ctx, int keep, void **exec) {
  cudaGraph_t g = NULL;
  size_t nodes = 0;
  *exec = NULL;
  cudaError_t e = cudaStreamEndCapture(STREAM(ctx), &g);
  if (e == cudaSuccess && g) e = cudaGraphGetNodes(g, NULL, &nodes);
  if (e == cudaSuccess && g && keep && nodes > 0) {
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    if (e == cudaSuccess) *exec = x;
  }
  if (g) cudaGraphDestroy(g);
  if (e != cudaSuccess)
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "capturing a CUDA graph on the context's stream: %s (%s)",
                       cudaGetErrorString(e), cudaGetErrorName(e));
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_while_begin(rmaop_ctx ctx, void **graph, uint64_t *cond) {
  cudaGraph_t g = NULL;
  *graph = NULL;
  RMAOP_CHECK_CUDA(ctx, cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle h = 0;
  cudaGraphNodeParams p = {};
  cudaGraphNode_t node = NULL;
  cudaError_t e = cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault);
  if (e == cudaSuccess) {
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeWhile;
    p.conditional.size = 1;
    e = cudaGraphAddNode(&node, g, NULL, NULL, 0, &p);
  }
  if (e == cudaSuccess)
    e = cudaStreamBeginCaptureToGraph(STREAM(ctx), p.conditional.phGraph_out[0], NULL, NULL, 0,
                                      cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    cudaGraphDestroy(g);
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "a CUDA graph with a conditional WHILE node (CUDA 12.4+): %s (%s)",
                       cudaGetErrorString(e), cudaGetErrorName(e));
  }
  *graph = g, *cond = (uint64_t)h;
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_while_end(rmaop_ctx ctx, void *graph, int keep, void **exec) {
  cudaGraph_t body = NULL, g = (cudaGraph_t)graph;
  size_t nodes = 0;
  *exec = NULL;
  cudaError_t e = cudaStreamEndCapture(STREAM(ctx), &body); /* the node's own body: not destroyed here */
  if (e == cudaSuccess && body)
    e = cudaGraphGetNodes(body, NULL, &nodes);
  if (e == cudaSuccess && keep && nodes > 0) {
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    if (e == cudaSuccess)
      *exec = x;
  }
  cudaGraphDestroy(g);
  if (e != cudaSuccess)
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "capturing a CUDA graph's WHILE body on the context's stream: %s (%s)",
                       cudaGetErrorString(e), cudaGetErrorName(e));
  return RMAOP_OK;
}

__global__ void k_while_stop(cudaGraphConditionalHandle cond, const double *st, rmaop__while_test t, int n, double *w) {
  if (t.brk >= 0 && st[t.brk] != 0.0) {
    w[1] = 1.0;
    cudaGraphSetConditional(cond, 0);
    return;
  }
  const int k = (int)w[0];
  w[2 + 2 * k] = st[t.rec0];
  w[3 + 2 * k] = st[t.rec1];
  w[0] = k + 1;
  const bool go = k + 1 < n && (t.zero < 0 || st[t.zero] == 0.0) && (t.above < 0 || st[t.above] > t.tol);
  cudaGraphSetConditional(cond, go ? 1u : 0u);
}

extern "C" rmaop_status rmaop__dev_while_stop(rmaop_ctx ctx, uint64_t cond, const double *st, rmaop__while_test t,
                                              int n, double *w) {
  k_while_stop<<<1, 1, 0, STREAM(ctx)>>>((cudaGraphConditionalHandle)cond, st, t, n, w);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_graph_launch(rmaop_ctx ctx, void *exec, const char *what, int part) {
  if (!exec) return RMAOP_OK; /* an empty capture: nothing to replay */
  const cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)exec, STREAM(ctx));
  if (e != cudaSuccess)
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "%s: launching part %d's CUDA graph failed: %s (%s)", what, part,
                       cudaGetErrorString(e), cudaGetErrorName(e));
  return RMAOP_OK;
}

extern "C" void rmaop__dev_graph_free(void *exec) {
  if (exec) cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

extern "C" rmaop_status rmaop__dev_fetch_wait(rmaop_ctx ctx, const char *what) {
  double deadline = 0.0;
  for (unsigned spin = 0;; ++spin) {
    const cudaError_t e = cudaEventQuery((cudaEvent_t)ctx->fetch_event);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    if (spin < 4096) continue;
    const double now = rmaop__wtime();
    if (deadline == 0.0) deadline = now + 1.25 * ctx->timeout;
    if (now > deadline) {
      RMAOP_CHECK(rmaop__dev_check_waits(ctx));
      return RMAOP_ERROR(ctx, RMAOP_ERR_TIMEOUT, "%s: the GPU did not get there within %g s (RMAOP_TIMEOUT x 1.25)",
                         what, 1.25 * ctx->timeout);
    }
    sched_yield();
  }
  return rmaop__dev_check_waits(ctx);
}

/* out[i] = slots[0][i] op slots[1][i] op ... op slots[P-1][i], in rank order (the rma backend's host combine). */
__global__ void k_reduce_slots(const double *slots, int P, int64_t count, int op, double *out) {
  GRID_STRIDE(i, count) {
    double v = slots[i];
    for (int r = 1; r < P; ++r) {
      const double w = slots[(int64_t)r * count + i];
      v = op == RMAOP_SUM ? v + w : op == RMAOP_MAX ? (w > v ? w : v) : (w < v ? w : v);
    }
    out[i] = v;
  }
}

extern "C" rmaop_status rmaop__dev_reduce_slots(rmaop_ctx ctx, const double *slots, int P, int64_t count,
                                                rmaop_redop op, double *out) {
  if (count <= 0) return RMAOP_OK;
  k_reduce_slots<<<grid_for(count, 256), 256, 0, STREAM(ctx)>>>(slots, P, count, (int)op, out);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}
