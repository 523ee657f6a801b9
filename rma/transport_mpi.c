/* The mpi transport: MPI_Put / MPI_Get on the window, notifications as atomic accumulates.
 * Works on any window flavor (allocated, shared, created over user memory) and any network. */
#include "rma_win.h"

/* MPI-3.1 RMA counts are int: larger transfers go in pieces of RMA_MPI_CHUNK bytes. */
static rmaop_status mpi_put(rmaop_win w, const void *origin, size_t bytes, int target, size_t disp) {
  const char *p = origin;
  while (bytes > 0) {
    int n = (int)(bytes < RMA_MPI_CHUNK ? bytes : RMA_MPI_CHUNK);
    RMAOP_CHECK_MPI(w->ctx, MPI_Put(p, n, MPI_BYTE, target, (MPI_Aint)disp, n, MPI_BYTE, w->win));
    p += n;
    disp += (size_t)n;
    bytes -= (size_t)n;
  }
  return RMAOP_OK;
}

static rmaop_status mpi_get(rmaop_win w, void *origin, size_t bytes, int target, size_t disp) {
  char *p = origin;
  while (bytes > 0) {
    int n = (int)(bytes < RMA_MPI_CHUNK ? bytes : RMA_MPI_CHUNK);
    RMAOP_CHECK_MPI(w->ctx, MPI_Get(p, n, MPI_BYTE, target, (MPI_Aint)disp, n, MPI_BYTE, w->win));
    p += n;
    disp += (size_t)n;
    bytes -= (size_t)n;
  }
  return RMAOP_OK;
}

/* Remote completion of every put/get to `peer` (MPI-3.1 §11.5.4): only valid in a passive-target
 * epoch, which is why only the lock sync mode calls it. */
static rmaop_status mpi_flush(rmaop_win w, int peer) {
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_flush(peer, w->win));
  return RMAOP_OK;
}

/* MPI_REPLACE accumulate: element-wise atomic with the MPI_NO_OP reads below (MPI-3.1 §11.7.1),
 * which a plain MPI_Put would not be. The flush makes it visible before we return; puts to the
 * same peer were flushed by the caller before, so the flag never overtakes the data. */
static rmaop_status mpi_notify(rmaop_win w, int peer, int slot, int64_t value) {
  MPI_Aint disp = w->ctrl_disp[peer] + (MPI_Aint)slot * (MPI_Aint)sizeof(int64_t);
  RMAOP_CHECK_MPI(w->ctx, MPI_Accumulate(&value, 1, MPI_INT64_T, peer, disp, 1, MPI_INT64_T, MPI_REPLACE, w->cwin));
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_flush(peer, w->cwin));
  return RMAOP_OK;
}

/* An atomic read of one's own slot through MPI, so it is ordered with the peers' accumulates; each
 * poll also drives MPI progress, which software-emulated RMA needs. */
static rmaop_status mpi_read_flag(rmaop_win w, int slot, int64_t *value) {
  int64_t unused = 0;
  MPI_Aint disp = w->ctrl_disp[w->rank] + (MPI_Aint)slot * (MPI_Aint)sizeof(int64_t);
  RMAOP_CHECK_MPI(w->ctx, MPI_Fetch_and_op(&unused, value, MPI_INT64_T, w->rank, disp, MPI_NO_OP, w->cwin));
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_flush(w->rank, w->cwin));
  return RMAOP_OK;
}

const rma_transport rma__transport_mpi = {
    .name = "mpi",
    .kind = RMAOP_TRANSPORT_MPI,
    .put = mpi_put,
    .get = mpi_get,
    .flush = mpi_flush,
    .notify = mpi_notify,
    .read_flag = mpi_read_flag,
};
