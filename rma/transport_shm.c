/* The shm transport (node-local peers of an MPI_Win_allocate_shared window: plain stores into the
 * peer's segment) and the self transport (this rank's own window memory). */
#include "rma_win.h"

static rmaop_status shm_put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  if (bytes > 0) memcpy(w->peer_base[target] + disp, origin, bytes); /* origin may be NULL for 0 bytes */
  return RMAOP_OK;
}

static rmaop_status shm_get(rmaop_win w, void *origin, size_t bytes, int target, size_t disp) {
  if (bytes > 0) memcpy(origin, w->peer_base[target] + disp, bytes);
  return RMAOP_OK;
}

/* Stores are complete when memcpy returns; what is left is ordering them before whatever the peer
 * is told next. MPI_Win_sync is the memory barrier MPI defines for load/store access to a shared
 * window (MPI-3.1 §11.5.4; unified model, §11.4), a full fence in Open MPI's osc/sm. */
static rmaop_status shm_flush(rmaop_win w, int peer) {
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_sync(w->win));
  return RMAOP_OK;
}

static int64_t *slot_at(rmaop_win w, int owner, int slot) {
  return (int64_t *)(w->peer_base[owner] + w->ctrl_disp[owner]) + slot;
}

/* Release store: every store this process made before (the payload) is visible to a peer whose
 * acquire load sees the value. */
static rmaop_status shm_notify(rmaop_win w, int peer, int slot, int64_t value) {
  __atomic_store_n(slot_at(w, peer, slot), value, __ATOMIC_RELEASE);
  return RMAOP_OK;
}

static rmaop_status shm_read_flag(rmaop_win w, int slot, int64_t *value) {
  *value = __atomic_load_n(&w->ctrl[slot], __ATOMIC_ACQUIRE);
  return RMAOP_OK;
}

const rma_transport rma__transport_shm = {
    .name = "shm",
    .kind = RMAOP_TRANSPORT_SHM,
    .put = shm_put,
    .get = shm_get,
    .flush = shm_flush,
    .notify = shm_notify,
    .read_flag = shm_read_flag,
};

/* ---- self: this rank's own memory. Epoch logic never synchronizes with itself (self is removed
 * from every peer list), so flush and the flags are trivial. memmove: the origin buffer may be a
 * part of the window itself. */

static rmaop_status self_put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  memmove(w->base + disp, origin, bytes);
  return RMAOP_OK;
}

static rmaop_status self_get(rmaop_win w, void *origin, size_t bytes, int target, size_t disp) {
  memmove(origin, w->base + disp, bytes);
  return RMAOP_OK;
}

static rmaop_status self_flush(rmaop_win w, int peer) {
  return RMAOP_OK;
}

static rmaop_status self_notify(rmaop_win w, int peer, int slot, int64_t value) {
  if (w->ctrl)
    __atomic_store_n(&w->ctrl[slot], value, __ATOMIC_RELEASE);
  return RMAOP_OK;
}

static rmaop_status self_read_flag(rmaop_win w, int slot, int64_t *value) {
  *value = w->ctrl ? __atomic_load_n(&w->ctrl[slot], __ATOMIC_ACQUIRE) : 0;
  return RMAOP_OK;
}

const rma_transport rma__transport_self = {
    .name = "self",
    .kind = RMAOP_TRANSPORT_SELF,
    .put = self_put,
    .get = self_get,
    .flush = self_flush,
    .notify = self_notify,
    .read_flag = self_read_flag,
};

#ifdef RMAOP_HAVE_CUDA
#include "device/device.h"

/* ---- self on a GPU window over MPI: this rank's own device memory. MPI to oneself is not part of a PSCW
 * access epoch (self is never in the start group), so the copy stays local: cudaMemcpyAsync on the
 * context's stream, finished before returning (the epoch's end does not wait for the stream). The
 * origin must not overlap the target range (unlike the host self transport's memmove). */

static rmaop_status dev_self_put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  RMAOP_CHECK(rmaop__dev_copy(w->ctx, w->base + disp, origin, bytes));
  return rmaop__dev_sync(w->ctx);
}

static rmaop_status dev_self_get(rmaop_win w, void *origin, size_t bytes, int target, size_t disp) {
  RMAOP_CHECK(rmaop__dev_copy(w->ctx, origin, w->base + disp, bytes));
  return rmaop__dev_sync(w->ctx);
}

const rma_transport rma__transport_dev_self = {
    .name = "self",
    .kind = RMAOP_TRANSPORT_SELF,
    .put = dev_self_put,
    .get = dev_self_get,
    .flush = self_flush,
    .notify = self_notify,
    .read_flag = self_read_flag,
};
#endif
