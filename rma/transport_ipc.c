/* The ipc transport: node-local GPU memory through CUDA IPC handles (CUDA Runtime API, "Interprocess
 * Communication"), everything on the context's stream, no host in the loop.
 *
 *   memory   window memory and a flag area (uint32 slots, same indices as the host control area of
 *            rma_win.h: ready = slot r, done = slot size + r) are cudaMalloc'd; their IPC handles are
 *            exchanged at creation and every peer's are opened (cudaIpcMemLazyEnablePeerAccess: same
 *            GPU or another one). The own rank uses its local pointers. The flag area also holds the
 *            device-side API's words (rmaop_device.cuh; "Flag area" below), apart from the epoch flags.
 *   put/get  cudaMemcpyAsync(cudaMemcpyDefault) on the context's stream into / out of the peer's
 *            mapping. Nothing to flush: later stream work is ordered after them.
 *   notify   cuStreamWriteValue32(CU_STREAM_WRITE_VALUE_DEFAULT) into the peer's mapped flag: the
 *            driver puts a memory fence (like __threadfence_system, scoped to the stream) before the
 *            write, so a peer that sees the flag sees every put issued before it.
 *   wait     cuStreamWaitValue32(GEQ) on the own flag: the stream, not the host, waits; GEQ compares
 *            cyclically ((int32_t)(*addr - value) >= 0), so 32-bit per-pair counters may wrap. With
 *            CU_STREAM_WAIT_VALUE_FLUSH where the device supports it (remote writes visible to later work).
 *
 * The kernel path (RMAOP_IPC_PATH=kernel; ipc_batch.h): a put of at most RMAOP_IPC_STORE_MAX bytes
 * (default 64 KiB) from device memory is not a copy-engine copy but an entry of a pending batch; the
 * step's flag writes and waits join it, and the step's end (rma__ipc_submit, called by epoch.c) launches
 * one kernel that stores the payloads into the peers' mappings, fences, stores the flags and spins on
 * the own flags (bounded: GPU-side timeouts). A put that goes by copy engine (larger, or from host memory)
 * launches the pending batch first; the flags after it go in the next kernel, after the copy in stream
 * order (the kernel fences before it writes them). The default (auto)
 * is the copy path above: the kernel path has not been faster in any measurement yet (one H100, two
 * ranks under MPS: 8 B epoch 16.4 us against 14.2 us, CGLS deriv1d 2^20 195.6 against 183.8 us/it;
 * without MPS kernels of two processes time-slice: ~300 us per epoch); docs/PERFORMANCE.md. A plan's end
 * is one kernel on this path (waits, the unpack's copies through rma__ipc_local_copy, the "ready" flags),
 * which brought it to parity with the copy path there, not below; the stores and flags inside the kernel
 * that produces the data are not built (ARCHITECTURE.md).
 *
 * Flag values on the kernel path come from device counters, so that an epoch captured into a CUDA graph
 * is right on every replay: a value fixed at enqueue time would be written and waited for again, stale.
 * The window keeps 2P uint32 counters in device memory, one per per-pair counter of rma_win.h (out_epochs[t]
 * at t, in_epochs[o] at P + o). Every flag value is such a counter, or one more (a "ready" for the next
 * epoch). An entry carries its counter, adv = how far the host's counter moved since the counter's previous
 * entry (`snap`), and off = value - counter; the kernel advances the device counter by adv and writes or
 * waits for counter + off. Eagerly the device counters then equal the host's; replayed, each replay
 * advances them by the epochs the captured work began, which is what the peers replaying the same graph
 * expect. Every counter a begin advances is used by an entry of the same epoch (the "done" flags), so no
 * advance is left pending outside a batch. The copy path's stream memops take constants and cannot be
 * captured (rma_backend.c refuses).
 *
 * epoch.c runs every sync mode of a GPU window as its flag handshake (the mapping is written there).
 * Timeouts: a kernel wait gives up after the context's timeout (GPU global timer) and records which
 * flag it waited for in the context's record (device.h); every later synchronization of the context
 * (a dot, rmaop_ctx_synchronize, the public epoch end) and the next epoch step report it as
 * RMAOP_ERR_TIMEOUT. A stream memop wait cannot time out: the host's drains behind it (every synchronization,
 * rmaop__dev_drain) are bounded, by 1.25x the same timeout, and then release the stream (ipc_release).
 *
 * Host flags (RMAOP_IPC_HOST_FLAGS=1, public epochs only: rma__transport_ipc_host). A public epoch ends in a host
 * wait anyway, so its "ready" and "done" need not be stream work: window rank 0 makes a node-shared page (a memfd,
 * src/core/shmem.c) of [P][2P] uint32 slots, rank r's own at r * 2P with the GPU flags' slot numbers; every rank maps
 * it and registers it for its GPU (cudaHostRegisterMapped), or every rank goes without (agreed at creation). A target
 * stores "ready" from the host (after draining its stream if that still holds work) and polls for "done" on the host;
 * an origin's stream waits for "ready" there (a memop, or the batch kernel's pre-wait), and its end stores "done"
 * from the host after its drain: a completed stream is what makes copy-engine stores into the peer's GPU visible to
 * whoever sees the flag. Values are the pairs' counts, as on the GPU; ipc_release also advances the host slots. */
#include "rma_win.h"

#ifdef RMAOP_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/shmem.h"
#include "device/device.h"
#include "device/gpu_check.h"
#include "ipc_batch.h"

/* Flag area: [2P] uint32 epoch flags (slot indices above), one uint32 claim word (the first device-side wait
 * of the window that gives up takes it: rmaop_device.cuh), then from a 128-byte boundary the device-side API's
 * [P] uint64 signal words (word o written by origin o), so that a signal never shares a flag's cache line and
 * the host epochs and the device API never read each other's values. Zeroed at creation; the same layout on
 * every rank, so a peer's words are at the same offset of its mapped area. */
static size_t signal_offset(size_t P) {
  return ((2 * P + 1) * sizeof(uint32_t) + 127) & ~(size_t)127;
}
static size_t flag_area_bytes(size_t P) {
  return signal_offset(P) + P * sizeof(uint64_t);
}

/* What one rank publishes at creation. */
typedef struct {
  cudaIpcMemHandle_t data;
  cudaIpcMemHandle_t ctrl;
  uint64_t data_offset; /* window start inside the allocation `data` names (user memory may be interior) */
  int32_t has_data;     /* 0: empty window, no handle */
  int32_t pad;
  int64_t hflags_owner; /* rank 0: the host flag segment (pid << 32 | fd), 0 when it has none */
} ipc_card;

typedef struct {
  void *alloc;          /* own window memory when allocated here */
  uint32_t *ctrl;       /* own flag slots [2 * size] */
  uint32_t **peer_ctrl; /* [size] every rank's flag slots as mapped here (own: ctrl) */
  void **data_map;      /* [size] cudaIpcOpenMemHandle results for the peers' memory (to close) */
  unsigned wait_flags;
  rma_ipc_batch batch;    /* the epoch step's pending kernel work (ipc_batch.h) */
  int kernel;             /* the kernel path (RMAOP_IPC_PATH=kernel) towards every peer, else copies and memops */
  size_t store_max;       /* on the kernel path, puts up to this size are stores (RMAOP_IPC_STORE_MAX) */
  unsigned *blocks_done;  /* device counter of the batch kernel */
  uint32_t *ctr;          /* kernel path: flag-value counters, device memory [2P] (top of this file) */
  int64_t *snap;          /* [2P] host value of each counter at its last entry */
  int64_t *waited;        /* copy path: [2P] the last value a stream memop waits for in each own slot (-1: none) */
  int released;           /* ipc_release ran: the own flags were advanced past every wait */
  /* Host flags of the public epochs (top of this file): [P][2P] uint32, rank r's slots at r * 2P, in one node-shared
   * segment that rank 0 makes; every rank maps and registers it (cudaHostRegisterMapped). NULL on every rank when
   * one rank could not, or RMAOP_IPC_HOST_FLAGS=0. */
  uint32_t *hflags;     /* host address of the area */
  uint32_t *hflags_dev; /* its device address */
  size_t hflags_bytes;
  int hflags_fd;         /* rank 0: the segment's descriptor until every rank opened it; else -1 */
  int hflags_registered; /* cudaHostRegister succeeded here */
  int64_t *hwaited;      /* copy path: [2P] the last value a stream memop waits for in each own host slot (-1: none) */
} ipc_state;

#define STREAM(w) ((cudaStream_t)(w)->ctx->stream)


/* Driver API entry points, from the runtime (cudaGetDriverEntryPointByVersion): the library does not
 * link libcuda, so that it loads on machines without a GPU driver. Resolved at the first GPU window. */
typedef CUresult(CUDAAPI *stream_value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult(CUDAAPI *address_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult(CUDAAPI *error_string_fn)(CUresult, const char **);
static struct {
  stream_value32_fn write_value32, wait_value32;
  address_range_fn address_range;
  error_string_fn error_string;
} drv;

static rmaop_status resolve_one(rmaop_ctx ctx, const char *symbol, unsigned version, void **fn) {
  if (*fn)
    return RMAOP_OK;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
  void *p = NULL;
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &q);
  RMAOP_REQUIRE(ctx, e == cudaSuccess && q == cudaDriverEntryPointSuccess && p != NULL, RMAOP_ERR_CUDA,
                "the ipc transport needs the driver function %s (CUDA %u.%u ABI), which the installed driver does "
                "not provide (cudaGetDriverEntryPointByVersion: %s, query result %d)",
                symbol, version / 1000, version % 1000 / 10, cudaGetErrorString(e), (int)q);
  *fn = p;
  return RMAOP_OK;
}

static rmaop_status resolve_driver(rmaop_ctx ctx) {
  /* 12000: cuStreamWrite/WaitValue32 of CUDA >= 11.7, usable without enabling stream memory operations. */
  RMAOP_CHECK(resolve_one(ctx, "cuStreamWriteValue32", 12000, (void **)&drv.write_value32));
  RMAOP_CHECK(resolve_one(ctx, "cuStreamWaitValue32", 12000, (void **)&drv.wait_value32));
  RMAOP_CHECK(resolve_one(ctx, "cuMemGetAddressRange", 12000, (void **)&drv.address_range));
  RMAOP_CHECK(resolve_one(ctx, "cuGetErrorString", 12000, (void **)&drv.error_string));
  return RMAOP_OK;
}

#define IPC_CHECK_CU(ctx, call)                                                                              \
  do {                                                                                                       \
    CUresult ipc__r = (call);                                                                                \
    if (ipc__r != CUDA_SUCCESS) {                                                                            \
      const char *ipc__s = NULL;                                                                             \
      if (drv.error_string)                                                                                  \
        drv.error_string(ipc__r, &ipc__s);                                                                   \
      return RMAOP_ERROR((ctx), RMAOP_ERR_CUDA, "%s failed: %s (CUresult %d)", #call,                        \
                         ipc__s ? ipc__s : "unknown driver error", (int)ipc__r);                             \
    }                                                                                                        \
  } while (0)

static CUdeviceptr dptr(const void *p) {
  return (CUdeviceptr)(uintptr_t)p;
}

/* ---- the batch of an epoch step ---- */

static rmaop_status launch_batch(rmaop_win w) {
  ipc_state *s = w->ipc;
  rma_ipc_batch *b = &s->batch;
  if (b->ncopy + b->nwrite + b->nwait + b->npre == 0)
    return RMAOP_OK;
  const double ns = w->ctx->timeout * 1e9;
  b->timeout_ns = ns < 1e18 ? (uint64_t)ns : (uint64_t)1e18; /* RMAOP_TIMEOUT may be any positive number */
  b->blocks_done = s->blocks_done;
  b->ctr = s->ctr;
  b->error = (rmaop__dev_wait_record *)w->ctx->dev_wait_record_dev;
  const cudaError_t e = (cudaError_t)rma__ipc_batch_launch(STREAM(w), b);
  b->ncopy = b->nwrite = b->nwait = b->npre = 0;
  b->copy_bytes = 0;
  if (e != cudaSuccess)
    return RMAOP_ERROR(w->ctx, RMAOP_ERR_CUDA, "rma ipc: the epoch kernel did not launch: %s (%s)",
                       cudaGetErrorString(e), cudaGetErrorName(e));
  return RMAOP_OK;
}

rmaop_status rma__ipc_submit(rmaop_win w, int may_defer) {
  ipc_state *s = w->ipc;
  if (!s)
    return RMAOP_OK;
  RMAOP_CHECK(rmaop__dev_check_waits(w->ctx));
  const rma_ipc_batch *b = &s->batch;
  if (may_defer && b->ncopy + b->nwrite + b->nwait == 0)
    return RMAOP_OK; /* only waits for "ready" (or nothing): they join the puts that follow */
  return launch_batch(w);
}

int rma__ipc_graph_ok(rmaop_win w) {
  const ipc_state *s = w->ipc;
  return s && s->kernel;
}

/* A copy inside this rank's GPU memory (a plan's unpack) as an entry of the pending batch: it then runs
 * after the batch's waits (the end's "done" spins, held as pre-waits) and before its flag writes (the
 * "ready" that follows), so a plan's end is one kernel instead of a wait kernel, one copy kernel per
 * transfer and a flag kernel. Only on the kernel path, at most RMAOP_IPC_STORE_MAX bytes and while the
 * batch has no writes or waits yet (copies come first in it). Both ends are device memory by contract (a
 * plan's buffers are in its context's memory kind; the staging is this window's), so unlike a put's origin
 * they are not looked up on this per-epoch path: the core's copy kernel would read them the same way.
 * Otherwise *taken = 0, and the pending batch is launched so that the caller's own copy follows it. */
rmaop_status rma__ipc_local_copy(rmaop_win w, void *dst, const void *src, size_t bytes, int *taken) {
  ipc_state *s = w->ipc;
  rma_ipc_batch *b = s ? &s->batch : NULL;
  *taken = 0;
  if (!b)
    return RMAOP_OK;
  if (s->kernel && bytes <= s->store_max && b->nwrite + b->nwait == 0 && b->ncopy < RMA_IPC_BATCH_MAX &&
      b->copy_bytes + bytes <= RMA_IPC_BATCH_BYTES) {
    b->copy[b->ncopy++] = (rma_ipc_copy){dst, src, (uint64_t)bytes};
    b->copy_bytes += bytes;
    *taken = 1;
    return RMAOP_OK;
  }
  return launch_batch(w);
}

/* ---- the transport ---- */

/* cudaMemcpy with overlapping ranges is undefined: a put to the own rank must not take its origin
 * from the same window bytes (plans never put to themselves). */
static rmaop_status ipc_put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  ipc_state *s = w->ipc;
  rma_ipc_batch *b = &s->batch;
  char *dst = w->peer_base[target] + disp;
  /* A kernel reads the origin: device (or managed) memory only; a host origin goes by the copy engine. */
  if (s->kernel && bytes <= s->store_max && rmaop__dev_is_device_ptr(origin)) {
    if (b->nwrite || b->nwait || b->ncopy == RMA_IPC_BATCH_MAX || b->copy_bytes + bytes > RMA_IPC_BATCH_BYTES)
      RMAOP_CHECK(launch_batch(w)); /* copies come first in a batch */
    b->copy[b->ncopy++] = (rma_ipc_copy){dst, origin, (uint64_t)bytes};
    b->copy_bytes += bytes;
    return RMAOP_OK;
  }
  RMAOP_CHECK(launch_batch(w)); /* the flags that follow go in a later kernel (or memop): after the copy */
  RMAOP_CHECK_CUDA(w->ctx, cudaMemcpyAsync(dst, origin, bytes, cudaMemcpyDefault, STREAM(w)));
  return RMAOP_OK;
}

static rmaop_status ipc_get(rmaop_win w, void *origin, size_t bytes, int target, size_t disp) {
  RMAOP_CHECK(launch_batch(w)); /* a "done" must not overtake the read: it follows in stream order */
  RMAOP_CHECK_CUDA(w->ctx, cudaMemcpyAsync(origin, w->peer_base[target] + disp, bytes, cudaMemcpyDefault, STREAM(w)));
  return RMAOP_OK;
}

static rmaop_status ipc_flush(rmaop_win w, int peer) {
  return RMAOP_OK; /* stream order: the notify that follows is fenced after the copies */
}

/* A flag entry of the kernel path on counter `idx` (top of this file, "Flag values"). */
static rma_ipc_flag flag_entry(rmaop_win w, uint32_t *addr, int idx, int64_t value) {
  ipc_state *s = w->ipc;
  const int64_t c = idx < w->size ? w->out_epochs[idx] : w->in_epochs[idx - w->size];
  const rma_ipc_flag f = {addr, (uint32_t)(c - s->snap[idx]), (uint16_t)idx, (uint16_t)(value - c)};
  s->snap[idx] = c;
  return f;
}

/* A stream-side wait until this rank's slot `slot`, at device address `flag` (GPU or host memory), holds `value`;
 * `waited` (copy path) records it for ipc_release. */
static rmaop_status enqueue_wait(rmaop_win w, uint32_t *flag, int slot, int64_t value, int64_t *waited,
                                 unsigned memop_flags) {
  ipc_state *s = w->ipc;
  rma_ipc_batch *b = &s->batch;
  if (s->kernel) {
    /* "ready" from target t = slot counts out_epochs[t] (counter t); "done" from origin o = slot - P counts
     * in_epochs[o] (counter P + o): the counter is the slot */
    const rma_ipc_flag f = flag_entry(w, flag, slot, value);
    if (b->ncopy + b->nwrite + b->nwait == 0 && b->npre < RMA_IPC_BATCH_MAX) {
      b->pre[b->npre++] = f; /* before anything else of the batch: may go ahead of later stores */
      return RMAOP_OK;
    }
    if (b->nwait == RMA_IPC_BATCH_MAX)
      RMAOP_CHECK(launch_batch(w));
    b->wait[b->nwait++] = f;
    return RMAOP_OK;
  }
  RMAOP_CHECK(launch_batch(w));
  IPC_CHECK_CU(w->ctx, drv.wait_value32((CUstream)STREAM(w), dptr(flag), (cuuint32_t)value, memop_flags));
  waited[slot] = (int64_t)(uint32_t)value;
  return RMAOP_OK;
}

static rmaop_status ipc_notify(rmaop_win w, int peer, int slot, int64_t value) {
  ipc_state *s = w->ipc;
  rma_ipc_batch *b = &s->batch;
  uint32_t *flag = s->peer_ctrl[peer] + slot;
  if (s->kernel) {
    if (b->nwait || b->nwrite == RMA_IPC_BATCH_MAX)
      RMAOP_CHECK(launch_batch(w)); /* writes come before waits in a batch */
    /* "ready" to origin peer counts in_epochs[peer]; "done" to target peer counts out_epochs[peer] */
    const int idx = slot < w->size ? w->size + peer : peer;
    b->write[b->nwrite++] = flag_entry(w, flag, idx, value);
    return RMAOP_OK;
  }
  RMAOP_CHECK(launch_batch(w));
  IPC_CHECK_CU(w->ctx, drv.write_value32((CUstream)STREAM(w), dptr(flag), (cuuint32_t)value,
                                            CU_STREAM_WRITE_VALUE_DEFAULT));
  return RMAOP_OK;
}

static rmaop_status ipc_wait_flag(rmaop_win w, int slot, int64_t value) {
  ipc_state *s = w->ipc;
  return enqueue_wait(w, s->ctrl + slot, slot, value, s->waited, s->wait_flags);
}

/* The copy path's release (rmaop__dev_release_add): a stream memop wait cannot time out, so when a host wait
 * behind it gave up, the own slots whose flag is behind what the stream waits for name the missing peers
 * (slot s < P: "ready" of target s; else "done" of origin s - P), and every own slot is advanced by 2^30, past
 * every wait enqueued (GEQ compares cyclically), so the stream drains. The context is failed by then: nothing
 * reads the data of those epochs. Host writes through the legacy default stream, which does not wait for the
 * context's non-blocking one. */
static void ipc_release(void *arg, char *who, size_t n) {
  rmaop_win w = arg;
  ipc_state *s = w->ipc;
  const int P2 = 2 * w->size;
  if (!s || s->released || !s->ctrl)
    return;
  if (s->hflags && s->hwaited) { /* the public epochs' waits on host slots: released the same way */
    uint32_t *mine = s->hflags + (size_t)w->rank * (size_t)P2;
    for (int i = 0; i < P2; ++i) {
      const uint32_t v = __atomic_load_n(&mine[i], __ATOMIC_ACQUIRE);
      if (s->hwaited[i] >= 0 && (int32_t)(v - (uint32_t)s->hwaited[i]) < 0)
        rmaop__dev_release_name(who, n, i < w->size ? i : i - w->size);
      __atomic_fetch_add(&mine[i], 1u << 30, __ATOMIC_RELEASE);
    }
  }
  uint32_t *v = malloc((size_t)P2 * sizeof *v);
  if (!v || cudaMemcpy(v, s->ctrl, (size_t)P2 * sizeof *v, cudaMemcpyDeviceToHost) != cudaSuccess) {
    free(v);
    return;
  }
  for (int i = 0; i < P2; ++i) {
    if (s->waited[i] >= 0 && (int32_t)(v[i] - (uint32_t)s->waited[i]) < 0)
      rmaop__dev_release_name(who, n, i < w->size ? i : i - w->size);
    v[i] += 1u << 30;
  }
  if (cudaMemcpy(s->ctrl, v, (size_t)P2 * sizeof *v, cudaMemcpyHostToDevice) == cudaSuccess)
    s->released = 1;
  free(v);
}

/* Host read of the own slot (diagnostics; epoch.c waits with ipc_wait_flag). The legacy default
 * stream does not wait for the context's non-blocking stream, so this does not block behind a wait. */
static rmaop_status ipc_read_flag(rmaop_win w, int slot, int64_t *value) {
  ipc_state *s = w->ipc;
  uint32_t v = 0;
  RMAOP_CHECK_CUDA(w->ctx, cudaMemcpy(&v, s->ctrl + slot, sizeof v, cudaMemcpyDeviceToHost));
  *value = (int64_t)v;
  return RMAOP_OK;
}

const rma_transport rma__transport_ipc = {
    .name = "ipc",
    .kind = RMAOP_TRANSPORT_IPC,
    .put = ipc_put,
    .get = ipc_get,
    .flush = ipc_flush,
    .notify = ipc_notify,
    .read_flag = ipc_read_flag,
    .wait_flag = ipc_wait_flag,
};

/* ---- host flags: the public epochs' "ready" and "done" ---- */

static uint32_t *host_slot(rmaop_win w, uint32_t *area, int rank, int slot) {
  return area + (size_t)rank * 2 * (size_t)w->size + (size_t)slot;
}

/* A host store, once the stream has finished everything enqueued before it: for "ready", what may still read the
 * window; for "done", this rank's puts. The drain is what makes a copy engine's stores into the peer's GPU visible
 * to whoever sees the flag (a stream memop into host memory right after the copy was seen to arrive first, 2 x H200),
 * and a public end synchronizes the host anyway. */
static rmaop_status host_notify(rmaop_win w, int peer, int slot, int64_t value) {
  ipc_state *s = w->ipc;
  RMAOP_CHECK(launch_batch(w));
  if (cudaStreamQuery(STREAM(w)) != cudaSuccess) /* busy, or an error that the drain reports */
    RMAOP_CHECK(rmaop__dev_drain(w->ctx, slot < w->size ? "rma ipc epoch begin" : "rma ipc epoch end"));
  __atomic_store_n(host_slot(w, s->hflags, peer, slot), (uint32_t)value, __ATOMIC_RELEASE);
  return RMAOP_OK;
}

/* The own host slot, widened to the pair's 64-bit count it is nearest to (a slot holds the count's low 32 bits). */
static rmaop_status host_read_flag(rmaop_win w, int slot, int64_t *value) {
  ipc_state *s = w->ipc;
  const uint32_t v = __atomic_load_n(host_slot(w, s->hflags, w->rank, slot), __ATOMIC_ACQUIRE);
  const int64_t near = slot < w->size ? w->out_epochs[slot] : w->in_epochs[slot - w->size];
  *value = near - (int32_t)((uint32_t)near - v);
  return RMAOP_OK;
}

static rmaop_status host_wait_flag(rmaop_win w, int slot, int64_t value) {
  ipc_state *s = w->ipc;
  return enqueue_wait(w, host_slot(w, s->hflags_dev, w->rank, slot), slot, value, s->hwaited, CU_STREAM_WAIT_VALUE_GEQ);
}

const rma_transport rma__transport_ipc_host = {
    .name = "ipc",
    .kind = RMAOP_TRANSPORT_IPC,
    .put = ipc_put,
    .get = ipc_get,
    .flush = ipc_flush,
    .notify = host_notify,
    .read_flag = host_read_flag,
    .wait_flag = host_wait_flag,
};

int rma__ipc_host_flags(rmaop_win w) {
  const ipc_state *s = w->ipc;
  return s && s->hflags;
}

/* ---- the device-side API's handle (rmaop_win_device_handle) ---- */

/* rmaop_device.cuh writes the context's wait record through unsigned[4] (the public handle cannot name the
 * internal type): the layout it assumes. */
_Static_assert(sizeof(rmaop__dev_wait_record) == 4 * sizeof(unsigned) && offsetof(rmaop__dev_wait_record, failed) == 0 &&
                   offsetof(rmaop__dev_wait_record, slot) == sizeof(unsigned) &&
                   offsetof(rmaop__dev_wait_record, want) == 2 * sizeof(unsigned) &&
                   offsetof(rmaop__dev_wait_record, seen) == 3 * sizeof(unsigned),
               "rmaop_device.cuh's view of rmaop__dev_wait_record");

rmaop_status rma__ipc_device_handle(rmaop_win w, rmaop_win_device *out) {
  const ipc_state *s = w->ipc;
  const size_t off = signal_offset((size_t)w->size);
  RMAOP_REQUIRE(w->ctx, s != NULL && w->size <= RMAOP_DEVICE_MAX_PEERS, RMAOP_ERR_INTERNAL,
                "rmaop_win_device_handle: a GPU window without its ipc state, or of %d ranks", w->size);
  rmaop_win_device d;
  memset(&d, 0, sizeof d);
  d.rank = w->rank;
  d.size = w->size;
  for (int r = 0; r < w->size; ++r) {
    d.base[r] = w->peer_base[r];
    d.bytes[r] = w->sizes[r];
    d.peer_signal[r] = (uint64_t *)((char *)s->peer_ctrl[r] + off);
  }
  d.signal = d.peer_signal[w->rank];
  const double ns = w->ctx->timeout * 1e9;
  d.timeout_ns = ns < 1e18 ? (uint64_t)ns : (uint64_t)1e18; /* as the epoch kernels' waits (launch_batch) */
  d.wait_record = (unsigned *)w->ctx->dev_wait_record_dev;
  d.wait_claim = s->ctrl + 2 * (size_t)w->size;
  *out = d;
  return RMAOP_OK;
}

/* ---- host-side completion ---- */

rmaop_status rma__ipc_host_sync(rmaop_win w) {
  RMAOP_CHECK(rma__ipc_submit(w, 0));
  return rmaop__dev_drain(w->ctx, "rma ipc epoch end");
}

/* ---- creation ---- */

/* This rank's half of the creation: memory, flags, handles. Local (no communication). */
static rmaop_status make_local(rmaop_win w, void *user_base, size_t bytes, ipc_card *card) {
  rmaop_ctx ctx = w->ctx;
  const size_t P = (size_t)w->size;
  ipc_state *s = NULL;
  RMAOP_CHECK(resolve_driver(ctx));
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "ipc window state", (void **)&s));
  w->ipc = s; /* from here on rma__ipc_free releases whatever exists */
  RMAOP_CHECK(rmaop__calloc(ctx, P, sizeof *s->peer_ctrl, "ipc flag mappings", (void **)&s->peer_ctrl));
  RMAOP_CHECK(rmaop__calloc(ctx, P, sizeof *s->data_map, "ipc memory mappings", (void **)&s->data_map));
  RMAOP_CHECK(rmaop__dev_malloc(ctx, sizeof *s->blocks_done, "ipc batch counter", (void **)&s->blocks_done));
  s->kernel = rma__settings(ctx)->ipc_path == RMA_IPC_PATH_KERNEL; /* auto: copy (see the top of this file) */
  s->store_max = rma__settings(ctx)->ipc_store_max;
  RMAOP_REQUIRE(ctx, !s->kernel || P <= 32768, RMAOP_ERR_UNSUPPORTED,
                "the ipc kernel path indexes flag counters with 16 bits: %zu ranks are too many", P);
  if (s->kernel) {
    RMAOP_CHECK(rmaop__dev_malloc(ctx, 2 * P * sizeof *s->ctr, "ipc flag counters", (void **)&s->ctr));
    RMAOP_CHECK(rmaop__calloc(ctx, 2 * P, sizeof *s->snap, "ipc flag counters", (void **)&s->snap));
  } else {
    RMAOP_CHECK(rmaop__malloc(ctx, 2 * P * sizeof *s->waited, "ipc waited values", (void **)&s->waited));
    for (size_t i = 0; i < 2 * P; ++i)
      s->waited[i] = -1;
    RMAOP_CHECK(rmaop__dev_release_add(ctx, ipc_release, w));
  }

  void *alloc_base = NULL; /* the allocation whose handle we publish */
  size_t offset = 0;
  if (w->owns_memory) {
    RMAOP_CHECK(rmaop__dev_malloc(ctx, bytes, "ipc window memory", &s->alloc));
    w->base = s->alloc;
    alloc_base = s->alloc;
  } else {
    w->base = user_base;
    if (bytes > 0) {
      CUdeviceptr b = 0;
      size_t size = 0;
      CUresult r = drv.address_range(&b, &size, dptr(user_base));
      RMAOP_REQUIRE(ctx, r == CUDA_SUCCESS, RMAOP_ERR_ARG,
                    "rmaop_win_create: base %p is not GPU memory of this process (cuMemGetAddressRange failed, "
                    "CUresult %d); a device context's windows expose memory from cudaMalloc",
                    user_base, (int)r);
      offset = (size_t)(dptr(user_base) - b);
      RMAOP_REQUIRE(ctx, bytes <= size - offset, RMAOP_ERR_ARG,
                    "rmaop_win_create: %zu bytes at %p run past the end of its cudaMalloc allocation (%zu bytes "
                    "from offset %zu)",
                    bytes, user_base, size, offset);
      alloc_base = (void *)(uintptr_t)b;
    }
  }
  w->bytes = bytes;
  s->hflags_fd = -1;
  if (w->rank == 0 && rma__settings(ctx)->ipc_host_flags) { /* no segment: the GPU flags (map_host_flags) */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int64_t owner = 0;
    s->hflags_bytes = (P * 2 * P * sizeof *s->hflags + page - 1) / page * page;
    s->hflags = (uint32_t *)rmaop__shm_segment_make(s->hflags_bytes, &owner, &s->hflags_fd);
    card->hflags_owner = s->hflags ? owner : 0;
  }
  RMAOP_CHECK(rmaop__dev_malloc(ctx, flag_area_bytes(P), "ipc window flags", (void **)&s->ctrl));
  /* The zero fill (cudaMemset, legacy default stream) must be complete before any peer can write a
   * flag. Not cudaDeviceSynchronize: the context's stream may be waiting for a flag that a peer only
   * writes after this collective call; the non-blocking stream is not waited for here. */
  RMAOP_CHECK_CUDA(ctx, cudaStreamSynchronize(0));
  if (alloc_base) {
    cudaError_t e = cudaIpcGetMemHandle(&card->data, alloc_base);
    RMAOP_REQUIRE(ctx, e == cudaSuccess, w->owns_memory ? RMAOP_ERR_CUDA : RMAOP_ERR_UNSUPPORTED,
                  "cudaIpcGetMemHandle of the window memory failed: %s (the ipc transport maps memory from "
                  "cudaMalloc; not managed memory, stream-ordered pools or cuMemCreate)",
                  cudaGetErrorString(e));
    card->has_data = 1;
    card->data_offset = offset;
  }
  RMAOP_CHECK_CUDA(ctx, cudaIpcGetMemHandle(&card->ctrl, s->ctrl));

  int flush = 0;
  if (cudaDeviceGetAttribute(&flush, cudaDevAttrCanFlushRemoteWrites, ctx->device) != cudaSuccess) {
    (void)cudaGetLastError();
    flush = 0;
  }
  s->wait_flags = CU_STREAM_WAIT_VALUE_GEQ | (flush ? CU_STREAM_WAIT_VALUE_FLUSH : 0);
  return RMAOP_OK;
}

/* Maps every peer's memory and flags. Local. */
static rmaop_status map_peers(rmaop_win w, const ipc_card *cards) {
  rmaop_ctx ctx = w->ctx;
  ipc_state *s = w->ipc;
  for (int r = 0; r < w->size; ++r) {
    if (r == w->rank) {
      w->peer_base[r] = w->base;
      s->peer_ctrl[r] = s->ctrl;
      continue;
    }
    void *p = NULL;
    if (cards[r].has_data) {
      cudaError_t e = cudaIpcOpenMemHandle(&p, cards[r].data, cudaIpcMemLazyEnablePeerAccess);
      RMAOP_REQUIRE(ctx, e == cudaSuccess, RMAOP_ERR_CUDA,
                    "cudaIpcOpenMemHandle of rank %d's window memory failed on rank %d: %s (the ipc transport needs "
                    "CUDA IPC between the two processes and peer access between their GPUs)",
                    r, w->rank, cudaGetErrorString(e));
      s->data_map[r] = p;
      w->peer_base[r] = (char *)p + cards[r].data_offset;
    }
    cudaError_t e = cudaIpcOpenMemHandle(&p, cards[r].ctrl, cudaIpcMemLazyEnablePeerAccess);
    RMAOP_REQUIRE(ctx, e == cudaSuccess, RMAOP_ERR_CUDA,
                  "cudaIpcOpenMemHandle of rank %d's window flags failed on rank %d: %s", r, w->rank,
                  cudaGetErrorString(e));
    s->peer_ctrl[r] = p;
  }
  return RMAOP_OK;
}

static void drop_host_flags(rmaop_win w) {
  ipc_state *s = w->ipc;
  if (s->hflags_registered)
    (void)cudaHostUnregister(s->hflags);
  if (s->hflags)
    munmap(s->hflags, s->hflags_bytes);
  if (s->hflags_fd >= 0)
    close(s->hflags_fd);
  s->hflags = s->hflags_dev = NULL;
  s->hflags_registered = 0;
  s->hflags_fd = -1;
  free(s->hwaited);
  s->hwaited = NULL;
}

/* This rank's mapping of rank 0's host flag segment, registered for its GPU; 0 when anything failed. Local. */
static int map_host_flags(rmaop_win w, const ipc_card *cards) {
  ipc_state *s = w->ipc;
  const size_t P2 = 2 * (size_t)w->size;
  if (!cards[0].hflags_owner)
    return 0;
  if (w->rank != 0) {
    s->hflags = (uint32_t *)rmaop__shm_segment_open(cards[0].hflags_owner, &s->hflags_bytes);
    if (!s->hflags || s->hflags_bytes < (size_t)w->size * P2 * sizeof *s->hflags)
      return 0;
  }
  void *d = NULL;
  if (cudaHostRegister(s->hflags, s->hflags_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  s->hflags_registered = 1;
  if (cudaHostGetDevicePointer(&d, s->hflags, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  s->hflags_dev = d;
  if (!s->kernel) {
    if (!(s->hwaited = malloc(P2 * sizeof *s->hwaited)))
      return 0;
    for (size_t i = 0; i < P2; ++i)
      s->hwaited[i] = -1;
  }
  return 1;
}

/* Collective: the host flags exist on every rank or on none (then the public epochs use the GPU flags). Never an
 * error: they are an optimization. Rank 0's descriptor closes here, after every rank has opened the segment. */
static void agree_host_flags(rmaop_win w, int mine) {
  ipc_state *s = w->ipc;
  int all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, w->ctx->comm) != MPI_SUCCESS)
    all = 0;
  if (!all)
    drop_host_flags(w);
  if (s->hflags_fd >= 0) {
    close(s->hflags_fd);
    s->hflags_fd = -1;
  }
}

rmaop_status rma__ipc_build(rmaop_win w, void *user_base, size_t bytes) {
  rmaop_ctx ctx = w->ctx;
  ipc_card mine;
  ipc_card *cards = NULL;
  memset(&mine, 0, sizeof mine);
  rmaop_status local = rmaop__calloc(ctx, (size_t)w->size, sizeof *cards, "ipc handles", (void **)&cards);
  if (local == RMAOP_OK)
    local = make_local(w, user_base, bytes, &mine);
  /* Every rank reaches this point, so a local failure cannot leave the others in the allgather. */
  rmaop_status st = rmaop__agree(ctx, local, "rma ipc window");
  if (st == RMAOP_OK) {
    int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, cards, (int)sizeof mine, MPI_BYTE, ctx->comm);
    st = rc == MPI_SUCCESS ? map_peers(w, cards) : rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Allgather");
    if (rc == MPI_SUCCESS) /* every rank: map_peers is local */
      agree_host_flags(w, st == RMAOP_OK && map_host_flags(w, cards));
  }
  free(cards);
  return st;
}

void rma__ipc_free(rmaop_win w) {
  ipc_state *s = w->ipc;
  if (!s)
    return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (w->built && !finalized) {
    /* My stream's last flag writes go into peers' memory: drain it, and let every peer drain its own,
     * before anyone unmaps or frees. A stream stuck on a flag that never came (after an error) keeps
     * its memory: leaked rather than freed under a pending write. */
    (void)launch_batch(w); /* what the last step left (an error stays recorded in the context) */
    (void)rmaop__dev_drain(w->ctx, "rma ipc window free"); /* a stuck stream is released there */
    rmaop__dev_release_remove(w->ctx, w);                  /* before any return: w goes */
    const int drained = cudaStreamQuery(STREAM(w)) == cudaSuccess;
    /* Bounded like every wait: a peer whose context failed leaks its windows and never comes here, so after
     * the context's timeout this rank leaks its mappings too (the barrier stays pending; nothing follows it
     * on this communicator but the context's own end). */
    MPI_Request rq;
    int met = 0;
    if (MPI_Ibarrier(w->ctx->comm, &rq) != MPI_SUCCESS)
      return;
    const double deadline = MPI_Wtime() + w->ctx->timeout;
    while (!met && MPI_Wtime() < deadline)
      MPI_Test(&rq, &met, MPI_STATUS_IGNORE);
    if (!drained || !met)
      return;
  }
  rmaop__dev_release_remove(w->ctx, w); /* also where it was never built */
  for (int r = 0; r < w->size; ++r) {
    if (r == w->rank)
      continue;
    if (s->data_map && s->data_map[r])
      cudaIpcCloseMemHandle(s->data_map[r]);
    if (s->peer_ctrl && s->peer_ctrl[r])
      cudaIpcCloseMemHandle(s->peer_ctrl[r]);
  }
  drop_host_flags(w);
  rmaop__dev_free(s->alloc);
  rmaop__dev_free(s->ctrl);
  free(s->waited);
  rmaop__dev_free(s->blocks_done);
  rmaop__dev_free(s->ctr);
  free(s->snap);
  free(s->peer_ctrl);
  free(s->data_map);
  free(s);
  w->ipc = NULL;
}

#else /* no CUDA: GPU windows cannot exist (the context refuses device memory) */

static rmaop_status no_cuda(rmaop_win w) {
  return RMAOP_ERROR(w->ctx, RMAOP_ERR_UNSUPPORTED, "the ipc transport needs CUDA, which this build of rmaop lacks");
}
static rmaop_status nc_put(rmaop_win w, const void *o, size_t b, int t, size_t d) { return no_cuda(w); }
static rmaop_status nc_get(rmaop_win w, void *o, size_t b, int t, size_t d) { return no_cuda(w); }
static rmaop_status nc_flush(rmaop_win w, int peer) { return no_cuda(w); }
static rmaop_status nc_notify(rmaop_win w, int peer, int slot, int64_t v) { return no_cuda(w); }
static rmaop_status nc_read_flag(rmaop_win w, int slot, int64_t *v) { return no_cuda(w); }
static rmaop_status nc_wait_flag(rmaop_win w, int slot, int64_t v) { return no_cuda(w); }

#define NC_TRANSPORT                                                                                                   \
  {                                                                                                                    \
    .name = "ipc", .kind = RMAOP_TRANSPORT_IPC, .put = nc_put, .get = nc_get, .flush = nc_flush, .notify = nc_notify,  \
    .read_flag = nc_read_flag, .wait_flag = nc_wait_flag                                                               \
  }
const rma_transport rma__transport_ipc = NC_TRANSPORT;
const rma_transport rma__transport_ipc_host = NC_TRANSPORT; /* never chosen: no window has host flags here */
int rma__ipc_host_flags(rmaop_win w) {
  return 0;
}

rmaop_status rma__ipc_build(rmaop_win w, void *user_base, size_t bytes) {
  return no_cuda(w);
}
rmaop_status rma__ipc_device_handle(rmaop_win w, rmaop_win_device *out) {
  return no_cuda(w);
}
void rma__ipc_free(rmaop_win w) {}
rmaop_status rma__ipc_host_sync(rmaop_win w) {
  return RMAOP_OK;
}
rmaop_status rma__ipc_submit(rmaop_win w, int may_defer) {
  return RMAOP_OK;
}
rmaop_status rma__ipc_local_copy(rmaop_win w, void *dst, const void *src, size_t bytes, int *taken) {
  *taken = 0;
  return RMAOP_OK;
}
int rma__ipc_graph_ok(rmaop_win w) {
  return 0;
}

#endif /* RMAOP_HAVE_CUDA */
