/* Private to rma/: small epochs of the ipc transport as one kernel (transport_ipc.c builds a batch,
 * ipc_kernels.cu runs it).
 *
 * A batch is what one step of an epoch (begin, origin done, end) enqueues, in this order:
 *   pre     spins on this rank's own flags that must hold before any store (a target's "ready"): a
 *           begin whose step is only such waits is not launched at its end but joins the puts and the
 *           "done" flags that follow (one kernel per origin epoch instead of two);
 *   copies  payload stores from the kernel's threads straight into the peers' IPC-mapped memory
 *           (puts of at most RMAOP_IPC_STORE_MAX bytes whose origin is device memory);
 *   writes  flag stores into the peers' mapped flag slots, after every copy of the batch is visible
 *           system-wide (each thread fences its stores, then the last block to finish writes);
 *   waits   spins on this rank's own flag slots until each holds at least its value (cyclic 32-bit
 *           compare, as cuStreamWaitValue32 GEQ), bounded by `timeout_ns` of the GPU's global timer:
 *           a wait that times out records itself in the context's record (device.h) and the kernel
 *           returns, so the stream never hangs; the next synchronization reports RMAOP_ERR_TIMEOUT.
 * Why a kernel: on 2 x H200 a flag stored by a kernel reaches the peer in 0.63 us, a
 * cuStreamWriteValue32/WaitValue32 ping-pong takes 6.4 us and a copy-engine 8-byte copy adds 3 more
 * (ARCHITECTURE.md, "Small versus large messages on GPUs"). */
#ifndef RMAOP_RMA_IPC_BATCH_H
#define RMAOP_RMA_IPC_BATCH_H

#include <stdint.h>

#include "device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Entries per batch (kernel parameter space: the struct is passed by value, ~1 KiB). */
enum { RMA_IPC_BATCH_MAX = 16 };
/* Payload bytes per batch at most (32 blocks of 16 KiB: the kernel's largest grid). */
#define RMA_IPC_BATCH_BYTES ((uint64_t)512 * 1024)

typedef struct {
  void *dst;
  const void *src;
  uint64_t bytes;
} rma_ipc_copy;

/* A flag write or wait. Its value is not a constant of the launch but taken from the window's device
 * counter ctr[idx] (transport_ipc.c, "Flag values"): the entry first advances the counter by `adv` (the
 * epochs begun with that peer since the counter's previous entry), then uses ctr[idx] + off. So a kernel
 * replayed from a CUDA graph writes and waits for the values of its replay, not of its capture. */
typedef struct {
  uint32_t *addr;
  uint32_t adv; /* ctr[idx] += adv (cyclic) */
  uint16_t idx; /* which counter: [0, P) "out" epochs with target idx, [P, 2P) "in" epochs with origin idx - P;
                   a wait's idx is also the slot it waits on (error reports) */
  uint16_t off; /* value = ctr[idx] + off: 1 for a "ready" announcing the next epoch, else 0 */
} rma_ipc_flag;

typedef struct {
  rma_ipc_copy copy[RMA_IPC_BATCH_MAX];
  rma_ipc_flag write[RMA_IPC_BATCH_MAX];
  rma_ipc_flag wait[RMA_IPC_BATCH_MAX];
  rma_ipc_flag pre[RMA_IPC_BATCH_MAX];
  int ncopy, nwrite, nwait, npre;
  uint64_t copy_bytes;           /* sum of copy[].bytes (sets the grid) */
  uint64_t timeout_ns;           /* per wait */
  unsigned *blocks_done;         /* device counter, zero between batches (the last block resets it) */
  uint32_t *ctr;                 /* the window's flag-value counters, device memory, [2P] */
  rmaop__dev_wait_record *error; /* device address of the context's host-mapped record */
} rma_ipc_batch;

/* Enqueues the batch on `stream` (a cudaStream_t). Returns a cudaError_t (0: enqueued). */
int rma__ipc_batch_launch(void *stream, const rma_ipc_batch *batch);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_RMA_IPC_BATCH_H */
