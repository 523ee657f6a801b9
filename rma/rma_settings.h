/* Private to rma/: the rma backend's options (RMAOP_RMA_SYNC, RMAOP_RMA_TRANSPORT, RMAOP_IPC_PATH,
 * RMAOP_IPC_STORE_MAX, RMAOP_IPC_HOST_FLAGS, RMAOP_RMA_DIRECT_MIN), parsed at every context's creation whatever its
 * backend, since the public windows (rmaop_win_*) are rma's on every context. */
#ifndef RMAOP_RMA_SETTINGS_H
#define RMAOP_RMA_SETTINGS_H

#include <stddef.h>

#include "core/backend.h"

/* How the ipc transport moves small epochs (RMAOP_IPC_PATH). */
enum { RMA_IPC_PATH_AUTO, RMA_IPC_PATH_KERNEL, RMA_IPC_PATH_COPY };

typedef struct {
  rmaop_sync sync;
  rmaop_transport transport;
  int ipc_path;         /* RMA_IPC_PATH_* */
  size_t ipc_store_max; /* kernel-path ipc puts up to this size are stores from the kernel */
  int ipc_host_flags;   /* public epochs of GPU windows flag through host memory (transport_ipc.c) */
  size_t direct_min;    /* host all-to-all blocks of at least this size go straight into the destination; 0: never */
} rma_settings;

extern const rmaop_backend rmaop__rma_backend;

static inline const rma_settings *rma__settings(rmaop_ctx ctx) {
  return (const rma_settings *)rmaop__backend_settings(ctx, &rmaop__rma_backend);
}

#endif /* RMAOP_RMA_SETTINGS_H */
