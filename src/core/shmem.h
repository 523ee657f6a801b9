/* Node-shared host buffers (src/core/shmem.c): host memory that the other ranks of the node can map and write
 * into, so that a put lands in its final place (an all-to-all straight into the peer's destination, rma/) instead
 * of a staging window that the receiver copies out of. */
#ifndef RMAOP_CORE_SHMEM_H
#define RMAOP_CORE_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a range of a node-shared buffer is, as another rank of the node can find it: the owner's process and
 * file descriptor (pid << 32 | fd), the buffer's number (never reused within a process), the byte offset. */
typedef struct {
  int64_t owner, seq, offset;
} rmaop__shm_ref;

/* Collective over ctx->comm, at context creation (a host-memory context whose backend wants it). Each rank makes
 * a small buffer and every rank maps every node peer's: node-shared buffers are made from then on only if that
 * worked on every rank (ctx->shm set). Buffers below `min_bytes` stay ordinary memory. Never fails the context:
 * anything that does not work leaves ctx->shm NULL. */
void rmaop__shm_init(rmaop_ctx ctx, size_t min_bytes);
/* Unmaps the peers' buffers mapped here; the context's own buffers belong to the objects that hold them. */
void rmaop__shm_fini(rmaop_ctx ctx);
/* Zeroed host memory of `bytes` that node peers can map, or NULL when the context makes none (then the caller
 * allocates ordinary memory): no ctx->shm, fewer than min_bytes, or the system refused (no error recorded). */
void *rmaop__shm_alloc(rmaop_ctx ctx, size_t bytes);
/* Frees p when it came from rmaop__shm_alloc (1), else 0 (p untouched). */
int rmaop__shm_free(rmaop_ctx ctx, void *p);
/* Whether [p, p + bytes) lies inside one node-shared buffer of this rank; *ref says where. */
int rmaop__shm_find(rmaop_ctx ctx, const void *p, size_t bytes, rmaop__shm_ref *ref);
/* The address, in this process, of `bytes` at *ref of node peer `peer`'s buffer (mapped at its first use and
 * kept while few others are). RMAOP_ERR_NOMEM when the mapping fails, RMAOP_ERR_INTERNAL when the range lies outside
 * the buffer (a descriptor that went wrong); both name the peer. */
rmaop_status rmaop__shm_map(rmaop_ctx ctx, int peer, const rmaop__shm_ref *ref, size_t bytes, char **addr);

/* A node-shared segment outside the context's buffers (a GPU window's host flags, rma/transport_ipc.c), for contexts
 * without ctx->shm too: made by one rank (NULL on any failure; *owner = pid << 32 | fd, the descriptor stays open until
 * the caller closes it), opened by its node peers while the descriptor is open (NULL on failure: a system that refuses
 * /proc/<pid>/fd). Unmapped with munmap. */
char *rmaop__shm_segment_make(size_t bytes, int64_t *owner, int *fd);
char *rmaop__shm_segment_open(int64_t owner, size_t *bytes);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_SHMEM_H */
