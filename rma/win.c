/* Windows: creation (flavor and transport per peer), the public put/get/epoch calls, free.
 *
 * Flavors. When every rank of the context shares one node and the memory comes from
 * rmaop_win_allocate, the window is ONE MPI_Win_allocate_shared segment over the context's
 * communicator (MPI-3.1 §11.2.3): peers' segments are addressable (MPI_Win_shared_query), so the shm
 * transport stores into them directly, and the mpi transport, if chosen, uses MPI_Put on the same
 * window. Otherwise MPI_Win_allocate (mpi transport for every peer), or MPI_Win_create over user
 * memory (mpi only: MPI cannot map user memory into other processes).
 *
 * The flag handshakes (epoch.c: lock's epochs, and the bounded waits around fence and pscw) need a
 * control area (RMA_CTRL_SLOTS int64 slots, rma_win.h): the tail of an allocated segment, or a small
 * window of its own in a passive-target epoch. In lock mode the whole window lives in one
 * MPI_Win_lock_all(MPI_MODE_NOCHECK) epoch from creation to free (MPI-3.1 §11.5.3): passive-target
 * synchronization is then only flushes and flags.
 *
 * Free. MPI_Win_free is collective and waits inside MPI for every rank, so a free first meets every rank
 * in a bounded handshake (rma__epoch_free_agreed); on a failed context, or when a rank does not come, the
 * MPI window is not freed but leaked: its memory stays mapped, since a peer that gave up late may still
 * write into it, and nothing waits for a rank that may never call the free.
 *
 * Device contexts. A window whose memory is GPU memory (the public calls, and plans whose peers all
 * share the node) reaches every rank through the ipc transport (transport_ipc.c): no MPI window, every
 * sync mode is the stream-side flag handshake. The choice is per window, not per peer: GPU memory over
 * MPI needs a CUDA-aware MPI (ctx->mpi_cuda_aware, agreed by every rank at context creation):
 *   auto   GPU window over ipc when every rank is on one node; across nodes a GPU window over MPI when
 *          the MPI is CUDA-aware, else a plan's window is host memory over mpi and the plan stages
 *          through host (rmaop__plan_send_src, host staging unpacked by the core), and a public GPU
 *          window is RMAOP_ERR_UNSUPPORTED naming an off-node rank;
 *   ipc    GPU window; an off-node rank is RMAOP_ERR_UNSUPPORTED naming it;
 *   mpi    CUDA-aware MPI, fence or pscw (lock hung in a test and stages): GPU windows over MPI
 *          (MPI_Win_create over device memory, MPI_Put/Get on device pointers, epochs as on host windows:
 *          the context's stream is drained when an epoch opens, since MPI does not follow the stream,
 *          which also ends a plan's previous unpack before origins may reuse its staging);
 *          otherwise plans stage through host memory over mpi and public GPU windows are
 *          RMAOP_ERR_UNSUPPORTED;
 *   shm    plans stage through host memory over shm (honest: host shared memory holds the host copy,
 *          never GPU memory); public GPU windows: RMAOP_ERR_UNSUPPORTED.
 * Reductions take host doubles: their windows are host memory on every context (ipc read as auto). */
#include "rma_win.h"

#include <stdio.h>

#include "device/device.h"

#define RMA_ALIGN ((size_t)64) /* control area on its own cache lines */

/* Window sizes travel as MPI_UINT64_T (MPI has no size_t type). */
_Static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t must be 64 bits");

static size_t align_up(size_t n) {
  return (n + RMA_ALIGN - 1) & ~(RMA_ALIGN - 1);
}

const rma_transport *rma__choose_transport(rmaop_ctx ctx, int device, int shared, int peer) {
  /* GPU memory over ipc: the own rank included, its copies are cudaMemcpyAsync on the stream too. */
  if (device && !rma__gpu_over_mpi(ctx))
    return &rma__transport_ipc;
#ifdef RMAOP_HAVE_CUDA
  /* GPU memory over MPI: MPI towards the others; the own rank a stream copy (a host memcpy cannot reach
   * device memory, and MPI to oneself is outside a PSCW access epoch). */
  if (device)
    return peer == ctx->rank ? &rma__transport_dev_self : &rma__transport_mpi;
#endif
  if (peer == ctx->rank)
    return &rma__transport_self;
  if (shared && rma__settings(ctx)->transport != RMAOP_TRANSPORT_MPI)
    return &rma__transport_shm;
  return &rma__transport_mpi;
}

int rma__gpu_over_mpi(rmaop_ctx ctx) {
  /* Lock mode is left out: with Open MPI 5.0.7 + UCX 1.13 its passive-target epoch over GPU memory hung
   * in the halo test (2 ranks on one H100) while fence and pscw passed; lock mode stages through host memory
   * on this transport. Without CUDA no context has device memory. */
  if (!RMAOP__ON_DEVICE(ctx) || !ctx->mpi_cuda_aware || ctx->size == 1 || rma__settings(ctx)->sync == RMAOP_SYNC_LOCK)
    return 0;
  return rma__settings(ctx)->transport == RMAOP_TRANSPORT_MPI ||
         (rma__settings(ctx)->transport == RMAOP_TRANSPORT_AUTO && ctx->node_size != ctx->size);
}

int rma__plan_on_device(rmaop_ctx ctx) {
  if (ctx->memory != RMAOP_MEMORY_DEVICE)
    return 0;
  return rma__settings(ctx)->transport == RMAOP_TRANSPORT_IPC || rma__gpu_over_mpi(ctx) ||
         (rma__settings(ctx)->transport == RMAOP_TRANSPORT_AUTO && ctx->node_size == ctx->size);
}

/* ---- creation ---- */

/* The lowest rank on another node than this one (-1: all on one node). */
static int off_node_rank(rmaop_ctx ctx) {
  for (int r = 0; r < ctx->size; ++r)
    if (ctx->node_of[r] != ctx->node_of[ctx->rank])
      return r;
  return -1;
}

/* A GPU window: ipc towards every rank. */
static rmaop_status check_device(rmaop_ctx ctx, const char *fn) {
  RMAOP_REQUIRE(ctx, ctx->memory == RMAOP_MEMORY_DEVICE, RMAOP_ERR_INTERNAL, "%s: GPU window on a host context", fn);
  if (rma__gpu_over_mpi(ctx))
    return RMAOP_OK;
  const rmaop_transport t = rma__settings(ctx)->transport;
  RMAOP_REQUIRE(ctx, t == RMAOP_TRANSPORT_AUTO || t == RMAOP_TRANSPORT_IPC, RMAOP_ERR_UNSUPPORTED,
                "%s: windows over GPU memory use the ipc transport, or mpi with a CUDA-aware MPI; "
                "RMAOP_RMA_TRANSPORT=%s cannot hold them here (shm: host shared memory cannot hold GPU memory; "
                "mpi: this MPI does not accept device pointers (MPIX_Query_cuda_support), or the sync mode is "
                "lock, not enabled over a CUDA-aware MPI yet). Use auto or ipc",
                fn, rmaop_transport_name(t));
  const int off = off_node_rank(ctx);
  RMAOP_REQUIRE(ctx, off < 0, RMAOP_ERR_UNSUPPORTED,
                "%s: the ipc transport reaches GPUs of this node only, and rank %d is on another node than rank %d; "
                "GPU windows across nodes are not built (plans with RMAOP_RMA_TRANSPORT=auto or mpi stage through "
                "host memory instead)",
                fn, off, ctx->rank);
  return RMAOP_OK;
}

/* Local checks of a creator's arguments; `*shared` says which flavor the window gets. */
static rmaop_status check_create(rmaop_ctx ctx, const char *fn, int allocate, int device, const void *user_base,
                                 size_t bytes, const void *win_out, const void *base_out, int *shared) {
  RMAOP_REQUIRE(ctx, win_out != NULL, RMAOP_ERR_ARG, "%s: win (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, !allocate || base_out != NULL, RMAOP_ERR_ARG, "%s: base (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, allocate || user_base != NULL || bytes == 0, RMAOP_ERR_ARG, "%s: base is NULL with %zu bytes", fn,
                bytes);
  RMAOP_REQUIRE(ctx, bytes <= (size_t)INT64_MAX / 2, RMAOP_ERR_ARG, "%s: %zu bytes is too large a window", fn, bytes);
  *shared = 0;
  if (device)
    return check_device(ctx, fn);
  /* A host window on a device context (staged plans, reductions) reads ipc as auto. */
  RMAOP_REQUIRE(ctx, rma__settings(ctx)->transport != RMAOP_TRANSPORT_IPC || ctx->memory == RMAOP_MEMORY_DEVICE,
                RMAOP_ERR_UNSUPPORTED, "%s: the ipc transport needs device memory (RMAOP_MEMORY=device)", fn);
  RMAOP_REQUIRE(ctx, allocate || rma__settings(ctx)->transport != RMAOP_TRANSPORT_SHM, RMAOP_ERR_UNSUPPORTED,
                "%s: the shm transport (RMAOP_RMA_TRANSPORT=shm) can only reach memory allocated by MPI; use "
                "rmaop_win_allocate, or RMAOP_RMA_TRANSPORT=mpi|auto for user memory",
                fn);
  const int one_node = ctx->node_size == ctx->size;
  if (!one_node && rma__settings(ctx)->transport == RMAOP_TRANSPORT_SHM) {
    const int off = off_node_rank(ctx);
    return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED,
                       "%s: RMAOP_RMA_TRANSPORT=shm but rank %d is on another node than rank %d (shared memory "
                       "cannot reach it); use auto or mpi",
                       fn, off, ctx->rank);
  }
  *shared = allocate && one_node;
  return RMAOP_OK;
}

static rmaop_status win_struct_new(rmaop_ctx ctx, rmaop_win *out) {
  rmaop_win w = NULL;
  const size_t P = (size_t)ctx->size;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *w, "window", (void **)&w));
  w->ctx = ctx;
  w->rank = ctx->rank;
  w->size = ctx->size;
  w->sync = rma__settings(ctx)->sync;
  w->win = w->cwin = MPI_WIN_NULL;
  w->comm_group = w->post_group = w->start_group = MPI_GROUP_NULL;
  snprintf(w->what, sizeof w->what, "a public window");
  rmaop_status st = rmaop__calloc(ctx, P, sizeof *w->sizes, "window sizes", (void **)&w->sizes);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, sizeof *w->peer_base, "window bases", (void **)&w->peer_base);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, sizeof *w->tp, "window transports", (void **)&w->tp);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, sizeof *w->ftp, "window flag transports", (void **)&w->ftp);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, sizeof *w->ctrl_disp, "window control", (void **)&w->ctrl_disp);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 3 * P, sizeof(int64_t), "window counters", (void **)&w->out_epochs);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 4 * P, sizeof(int), "window peer lists", (void **)&w->targets);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, 1, "window roles", (void **)&w->role);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, P, sizeof(int), "window ranks", (void **)&w->others);
  if (st == RMAOP_OK)
    st = rmaop__calloc(ctx, 3 * P, sizeof(int), "window wait lists", (void **)&w->scratch);
  if (st != RMAOP_OK) {
    rmaop_win_destroy(&w);
    return st;
  }
  w->in_epochs = w->out_epochs + P;
  w->ready_sent = w->out_epochs + 2 * P;
  w->origins = w->targets + P;
  w->post_ranks = w->targets + 2 * P;
  w->start_ranks = w->targets + 3 * P;
  for (int r = 0, n = 0; r < w->size; ++r)
    if (r != w->rank)
      w->others[n++] = r;
  *out = w;
  return RMAOP_OK;
}

static rmaop_status set_errhandler(rmaop_win w, MPI_Win win) {
  /* Windows do not inherit the communicator's handler (MPI-3.1 §8.3.3): errors must return here too. */
  RMAOP_CHECK_MPI(w->ctx, MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  return RMAOP_OK;
}

/* Whether MPI allocates the window's memory (MPI_Win_allocate[_shared]), so the control area can be its tail:
 * rmaop_win_allocate's host memory. GPU memory over MPI comes from cudaMalloc (build), and MPI can only
 * expose it, as it does user memory. */
static int mpi_allocates(const rmaop_win w) {
  return w->owns_memory && !w->dev_mpi;
}

/* The data window (and, when allocated with a flag handshake, its control tail). */
static rmaop_status make_data_window(rmaop_win w, void *user_base, size_t bytes, size_t ctrl_bytes) {
  rmaop_ctx ctx = w->ctx;
  const size_t total = ctrl_bytes ? align_up(bytes) + ctrl_bytes : bytes;
  void *base = user_base;
  if (w->shared) {
    /* Per-rank page-aligned segments: each rank's memory stays on its own NUMA node. */
    MPI_Info info;
    RMAOP_CHECK_MPI(ctx, MPI_Info_create(&info));
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int rc = MPI_Win_allocate_shared((MPI_Aint)total, 1, info, ctx->comm, &base, &w->win);
    MPI_Info_free(&info);
    RMAOP_CHECK_MPI(ctx, rc);
  } else if (mpi_allocates(w)) {
    RMAOP_CHECK_MPI(ctx, MPI_Win_allocate((MPI_Aint)total, 1, MPI_INFO_NULL, ctx->comm, &base, &w->win));
  } else {
    int rc = MPI_Win_create(user_base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, ctx->comm, &w->win);
    if (rc != MPI_SUCCESS) {
      /* Seen with Open MPI 4.1 where no single-copy mechanism (CMA, xpmem) is usable between processes:
       * its one-sided components then cannot expose memory they did not allocate. */
      char mpi_msg[MPI_MAX_ERROR_STRING] = "";
      int len = 0;
      MPI_Error_string(rc, mpi_msg, &len);
      return RMAOP_ERROR(ctx, RMAOP_ERR_MPI,
                         "MPI_Win_create over user memory failed: %s. This MPI cannot expose memory it did not "
                         "allocate (Open MPI needs a cross-process single-copy mechanism such as CMA); "
                         "rmaop_win_allocate works everywhere",
                         mpi_msg);
    }
  }
  RMAOP_CHECK(set_errhandler(w, w->win));
  w->base = base;
  w->bytes = bytes;
  return RMAOP_OK;
}

/* Every rank's usable size (bounds checks) and, on a shared window, every rank's segment address. */
static rmaop_status exchange_sizes(rmaop_win w) {
  rmaop_ctx ctx = w->ctx;
  uint64_t mine = (uint64_t)w->bytes;
  RMAOP_CHECK_MPI(ctx, MPI_Allgather(&mine, 1, MPI_UINT64_T, w->sizes, 1, MPI_UINT64_T, ctx->comm));
  if (!w->shared)
    return RMAOP_OK;
  for (int r = 0; r < w->size; ++r) {
    MPI_Aint sz = 0;
    int unit = 0;
    void *p = NULL;
    RMAOP_CHECK_MPI(ctx, MPI_Win_shared_query(w->win, r, &sz, &unit, &p));
    w->peer_base[r] = p;
  }
  return RMAOP_OK;
}

/* Control area of the flag handshakes, zeroed and visible everywhere before any peer can notify into
 * it. Lock mode also opens the window's one passive-target epoch, which MPI_Win_flush and the mpi
 * transport's flag operations need; a separate control window gets one of its own for the latter. */
static rmaop_status setup_control(rmaop_win w, size_t ctrl_bytes, int in_tail) {
  rmaop_ctx ctx = w->ctx;
  if (in_tail) {
    w->cwin = w->win;
    w->ctrl = (int64_t *)(w->base + align_up(w->bytes));
    for (int r = 0; r < w->size; ++r)
      w->ctrl_disp[r] = (MPI_Aint)align_up(w->sizes[r]);
  } else {
    void *c = NULL;
    RMAOP_CHECK_MPI(ctx, MPI_Win_allocate((MPI_Aint)ctrl_bytes, 1, MPI_INFO_NULL, ctx->comm, &c, &w->cwin));
    w->cwin_separate = 1;
    RMAOP_CHECK(set_errhandler(w, w->cwin));
    w->ctrl = c; /* ctrl_disp stays 0 for every rank */
  }
  memset(w->ctrl, 0, ctrl_bytes);
  if (w->sync == RMAOP_SYNC_LOCK) {
    RMAOP_CHECK_MPI(ctx, MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win));
    w->locked = 1;
  }
  if (w->cwin_separate) { /* the mpi transport's flag operations need a passive-target epoch */
    RMAOP_CHECK_MPI(ctx, MPI_Win_lock_all(MPI_MODE_NOCHECK, w->cwin));
    w->clocked = 1;
  }
  RMAOP_CHECK_MPI(ctx, MPI_Win_sync(w->cwin));
  RMAOP_CHECK_MPI(ctx, MPI_Barrier(ctx->comm));
  return RMAOP_OK;
}

static void set_transports(rmaop_win w) {
  const char *name = NULL;
  for (int r = 0; r < w->size; ++r) {
    w->tp[r] = w->node_shm && w->shared && r != w->rank
                   ? &rma__transport_shm
                   : rma__choose_transport(w->ctx, w->device || w->dev_mpi, w->shared, r);
    /* Flags go with the data, except around MPI's fence and PSCW on a shared window: there they only guard
     * MPI's own synchronization, and atomics in the segment need no window of their own (lock's flags are
     * part of what its transport measures). */
    w->ftp[r] = w->shared && w->sync != RMAOP_SYNC_LOCK && r != w->rank ? &rma__transport_shm : w->tp[r];
    if (r == w->rank)
      continue;
    if (!name)
      name = w->tp[r]->name;
    else if (strcmp(name, w->tp[r]->name) != 0)
      name = "mixed";
  }
  w->transport_name = name ? name : "self";
  w->self_kind = RMAOP_TRANSPORT_SELF;
}

/* A context of one rank needs no MPI window: every access is a local copy and every epoch is empty.
 * (It also keeps single-process runs independent of the osc component: Open MPI 4.1's osc/ucx
 * rejects MPI_Win_create on a one-process communicator on machines without a usable UCX device.) */
static rmaop_status build_local(rmaop_win w, void *user_base, size_t bytes) {
  w->local_only = 1;
  w->base = user_base;
  if (w->owns_memory)
    RMAOP_CHECK(rmaop__calloc(w->ctx, 1, bytes, "window memory", (void **)&w->base));
  w->bytes = w->sizes[0] = bytes;
  w->peer_base[0] = w->base;
  set_transports(w);
  return RMAOP_OK;
}

/* Whether epochs run as the flag handshake of epoch.c (else MPI's fence or PSCW, guarded by flags).
 * Only lock mode signals with flags. pscw always uses MPI_Win_post/start/complete/wait, on shm too:
 * users A/B the sync modes against each other, and a pscw built from lock's flags would make the two
 * the same path. (Open MPI 4.1's osc/sm PSCW is slow at 8 bytes; docs/PERFORMANCE.md shows by how much.) */
static int uses_flag_sync(const rmaop_win w) {
  return w->sync == RMAOP_SYNC_LOCK;
}

/* The collective part of creation, entered by every rank once the arguments were agreed valid. */
static rmaop_status build(rmaop_win w, void *user_base, size_t bytes) {
  if (w->device) { /* any size: the own rank's copies go through the stream too */
    set_transports(w);
    w->flag_sync = 1;
    RMAOP_CHECK(rma__ipc_build(w, user_base, bytes));
    return exchange_sizes(w);
  }
  if (w->size == 1)
    return build_local(w, user_base, bytes);
  set_transports(w);
  w->flag_sync = uses_flag_sync(w);
  const size_t ctrl_bytes = RMA_CTRL_SLOTS(w->size) * sizeof(int64_t);
  /* The control area rides in the data window's tail when MPI allocates it and no passive epoch on it would
   * conflict with the sync mode's active-target epochs: lock mode holds one anyway, and on a shared window
   * fence and pscw flag with atomics (set_transports). Otherwise mpi flags in a window of their own. */
  const int in_tail = mpi_allocates(w) && (w->sync == RMAOP_SYNC_LOCK || w->shared);
  if (w->dev_mpi && w->owns_memory) { /* MPI allocates host memory only: the GPU memory comes from cudaMalloc */
    RMAOP_CHECK(rmaop__dev_malloc(w->ctx, bytes, "GPU window memory", &user_base));
    w->dev_base = user_base;
  }
  RMAOP_CHECK(make_data_window(w, user_base, bytes, in_tail ? ctrl_bytes : 0));
  RMAOP_CHECK(exchange_sizes(w));
  if (w->sync == RMAOP_SYNC_PSCW && !w->flag_sync)
    RMAOP_CHECK_MPI(w->ctx, MPI_Comm_group(w->ctx->comm, &w->comm_group));
  return setup_control(w, ctrl_bytes, in_tail);
}

rmaop_status rma__win_make(rmaop_ctx ctx, int allocate, void *user_base, size_t bytes, int flags, rmaop_win *out,
                           void **base_out) {
  const char *fn = allocate ? "rmaop_win_allocate" : "rmaop_win_create";
  const int device = (flags & RMA_WIN_DEVICE) != 0;
  int shared = 0;
  rmaop_win w = NULL;
  rmaop_status local = check_create(ctx, fn, allocate, device, user_base, bytes, out, base_out, &shared);
  if (local == RMAOP_OK)
    local = win_struct_new(ctx, &w);
  /* A rank's bad arguments must not leave the others inside MPI_Win_allocate. */
  rmaop_status st = rmaop__agree(ctx, local, fn);
  if (st == RMAOP_OK) {
    w->shared = shared;
    w->node_shm = !device && (flags & RMA_WIN_NODE_SHM) != 0;
    w->owns_memory = allocate;
    w->dev_mpi = device && rma__gpu_over_mpi(ctx);
    w->device = device && !w->dev_mpi;
    st = rmaop__agree(ctx, build(w, user_base, bytes), fn);
  }
  if (st != RMAOP_OK) {
    rmaop_win_destroy(&w);
    return st;
  }
  w->built = 1;
  *out = w;
  if (base_out)
    *base_out = w->base;
  return RMAOP_OK;
}

rmaop_status rmaop_win_allocate(rmaop_ctx ctx, size_t bytes, rmaop_win *win, void **base) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_win_allocate: ctx is NULL");
  return rma__win_make(ctx, 1, NULL, bytes, ctx->memory == RMAOP_MEMORY_DEVICE ? RMA_WIN_DEVICE : 0, win, base);
}

rmaop_status rmaop_win_create(rmaop_ctx ctx, void *base, size_t bytes, rmaop_win *win) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_win_create: ctx is NULL");
  return rma__win_make(ctx, 0, base, bytes, ctx->memory == RMAOP_MEMORY_DEVICE ? RMA_WIN_DEVICE : 0, win, NULL);
}

/* ---- free ---- */

void rmaop_win_destroy(rmaop_win *pw) {
  if (!pw || !*pw)
    return;
  rmaop_win w = *pw;
  int finalized = 0;
  MPI_Finalized(&finalized);
  /* Collective frees only where every rank is known to make them (rma__epoch_free_agreed): else the MPI
   * window, GPU memory and mappings are leaked, never freed under a peer that may still write or wait. */
  const int agreed = finalized || rma__epoch_free_agreed(w);
  if (w->device && agreed)
    rma__ipc_free(w); /* collective once built: drains and synchronizes before unmapping */
  if (!finalized && agreed) {
    /* Destructors do not fail loudly: a failing unlock/free leaves nothing we could repair. */
    if (w->clocked)
      MPI_Win_unlock_all(w->cwin);
    if (w->locked)
      MPI_Win_unlock_all(w->win);
    if (w->cwin_separate && w->cwin != MPI_WIN_NULL)
      MPI_Win_free(&w->cwin);
    if (w->win != MPI_WIN_NULL)
      MPI_Win_free(&w->win);
  }
  if (!finalized)
    rma__epoch_free(w); /* the PSCW groups: local */
  if (w->local_only && w->owns_memory)
    free(w->base);
  /* A plan's end leaves its unpack kernels reading this staging (rma_backend.c); an error stays recorded
   * in the context. */
  if (w->dev_base && agreed) {
    (void)rmaop__dev_drain(w->ctx, "rma GPU window over MPI free");
    rmaop__dev_free(w->dev_base); /* after MPI_Win_free: MPI no longer reaches it */
  }
  free(w->sizes);
  free(w->peer_base);
  free(w->tp);
  free(w->ftp);
  free(w->ctrl_disp);
  free(w->out_epochs);
  free(w->targets);
  free(w->role);
  free(w->others);
  free(w->scratch);
  free(w);
  *pw = NULL;
}

/* ---- public access calls ---- */

static rmaop_status check_access(rmaop_win w, const char *fn, const void *buf, size_t bytes, int target, size_t disp) {
  RMAOP_REQUIRE(NULL, w != NULL, RMAOP_ERR_ARG, "%s: win is NULL", fn);
  rmaop_ctx ctx = w->ctx;
  RMAOP_REQUIRE_USABLE(ctx, fn);
  RMAOP_REQUIRE(ctx, w->in_epoch, RMAOP_ERR_ARG, "%s: no epoch is open on this window (call rmaop_win_epoch_begin)",
                fn);
  RMAOP_REQUIRE(ctx, target >= 0 && target < w->size, RMAOP_ERR_ARG, "%s: target %d is outside [0, %d)", fn, target,
                w->size);
  RMAOP_REQUIRE(ctx, target == w->rank || (w->role[target] & RMA_ROLE_TARGET), RMAOP_ERR_ARG,
                "%s: rank %d is not among the targets of the open epoch", fn, target);
  RMAOP_REQUIRE(ctx, buf != NULL || bytes == 0, RMAOP_ERR_ARG, "%s: origin buffer is NULL with %zu bytes", fn, bytes);
  RMAOP_REQUIRE(ctx, disp <= w->sizes[target] && bytes <= w->sizes[target] - disp, RMAOP_ERR_ARG,
                "%s: %zu bytes at displacement %zu fall outside the window of target rank %d (%zu bytes)", fn, bytes,
                disp, target, w->sizes[target]);
  return RMAOP_OK;
}

rmaop_status rmaop_win_put(rmaop_win win, const void *origin, size_t bytes, int target, size_t disp) {
  RMAOP_CHECK(check_access(win, "rmaop_win_put", origin, bytes, target, disp));
  win->ops++;
  win->op_bytes += bytes;
  return rma__put(win, origin, bytes, target, disp);
}

rmaop_status rmaop_win_get(rmaop_win win, void *origin, size_t bytes, int target, size_t disp) {
  RMAOP_CHECK(check_access(win, "rmaop_win_get", origin, bytes, target, disp));
  win->ops++;
  win->op_bytes += bytes;
  if (bytes == 0)
    return RMAOP_OK;
  return win->tp[target]->get(win, origin, bytes, target, disp);
}

rmaop_status rmaop_win_epoch_begin(rmaop_win win, int ntargets, const int *targets, int norigins, const int *origins) {
  RMAOP_REQUIRE(NULL, win != NULL, RMAOP_ERR_ARG, "rmaop_win_epoch_begin: win is NULL");
  rmaop_ctx ctx = win->ctx;
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_win_epoch_begin");
  RMAOP_REQUIRE(ctx, !win->in_epoch, RMAOP_ERR_ARG, "rmaop_win_epoch_begin: an epoch is already open on this window");
  RMAOP_REQUIRE(ctx, ntargets >= 0 && (ntargets == 0 || targets != NULL), RMAOP_ERR_ARG,
                "rmaop_win_epoch_begin: ntargets = %d with targets %s", ntargets, targets ? "given" : "NULL");
  RMAOP_REQUIRE(ctx, norigins >= 0 && (norigins == 0 || origins != NULL), RMAOP_ERR_ARG,
                "rmaop_win_epoch_begin: norigins = %d with origins %s", norigins, origins ? "given" : "NULL");
  RMAOP_REQUIRE(ctx, !((win->device || win->dev_mpi) && rmaop__dev_capturing(ctx)), RMAOP_ERR_UNSUPPORTED,
                "rmaop_win_epoch_begin: the context's GPU stream is being captured into a CUDA graph, and a public "
                "epoch ends in a host wait (it promises host visibility); capture plans instead");
  win->ops = win->op_bytes = 0;
  win->t_begin = ctx->trace_on ? rmaop__wtime() : 0.0;
  return rma__epoch_begin(win, ntargets, targets, norigins, origins, RMA_EPOCH_HOST_FLAGS);
}

rmaop_status rmaop_win_epoch_end(rmaop_win win) {
  RMAOP_REQUIRE(NULL, win != NULL, RMAOP_ERR_ARG, "rmaop_win_epoch_end: win is NULL");
  rmaop_ctx ctx = win->ctx;
  /* After a failure the window's memory may hold a peer's puts of any epoch: the epoch stays unclosed. */
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_win_epoch_end");
  RMAOP_REQUIRE(ctx, win->in_epoch, RMAOP_ERR_ARG, "rmaop_win_epoch_end: no epoch is open on this window");
  RMAOP_CHECK(rma__epoch_end(win));
  if (win->device) /* the waits and copies are on the stream: the promise is host visibility */
    RMAOP_CHECK(rma__ipc_host_sync(win));
  if (ctx->trace_on) {
    /* Between a public epoch's begin and end come the user's puts and gets: all of it is rmaop's. */
    const double span = rmaop__wtime() - win->t_begin;
    rmaop__trace_record(ctx, "win", "epoch", win->transport_name, win->ops,
                        win->ops ? (double)win->op_bytes / (double)win->ops : 0.0, span, span, 0);
  }
  return RMAOP_OK;
}

rmaop_status rmaop_win_peer_transport(rmaop_win win, int peer, rmaop_transport *transport) {
  RMAOP_REQUIRE(NULL, win != NULL, RMAOP_ERR_ARG, "rmaop_win_peer_transport: win is NULL");
  RMAOP_REQUIRE(win->ctx, peer >= 0 && peer < win->size, RMAOP_ERR_ARG,
                "rmaop_win_peer_transport: peer %d is outside [0, %d)", peer, win->size);
  RMAOP_REQUIRE(win->ctx, transport != NULL, RMAOP_ERR_ARG, "rmaop_win_peer_transport: transport (output) is NULL");
  /* The enum has no "self": a rank reaches its own memory with a local copy, reported as the kind the
   * window gives its node-local peers (see the report on RMAOP_TRANSPORT_SELF). */
  *transport = peer == win->rank ? win->self_kind : win->tp[peer]->kind;
  return RMAOP_OK;
}

/* ---- the device-side API (rmaop_device.cuh) ---- */

rmaop_status rmaop_win_device_handle(rmaop_win win, rmaop_win_device *out) {
  static const char fn[] = "rmaop_win_device_handle";
  RMAOP_REQUIRE(NULL, win != NULL, RMAOP_ERR_ARG, "%s: win is NULL", fn);
  rmaop_ctx ctx = win->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: out (output) is NULL", fn);
#ifndef RMAOP_HAVE_CUDA
  return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED, "%s: this build of rmaop has no CUDA, so no GPU window exists", fn);
#else
  /* A kernel of a failed context would only wait for peers that gave up. */
  RMAOP_REQUIRE_USABLE(ctx, fn);
  RMAOP_REQUIRE(ctx, win->device || win->dev_mpi, RMAOP_ERR_UNSUPPORTED,
                "%s: a host window (the context's memory is host): kernels put into GPU windows over the ipc "
                "transport only (RMAOP_MEMORY=device, RMAOP_RMA_TRANSPORT=auto or ipc, every rank on one node)",
                fn);
  RMAOP_REQUIRE(ctx, !win->dev_mpi, RMAOP_ERR_UNSUPPORTED,
                "%s: this GPU window goes through MPI (RMAOP_RMA_TRANSPORT=%s with a CUDA-aware MPI), whose memory a "
                "kernel cannot store into; device-side access needs the ipc transport (auto or ipc, every rank on "
                "one node)",
                fn, rmaop_transport_name(rma__settings(ctx)->transport));
  RMAOP_REQUIRE(ctx, win->size <= RMAOP_DEVICE_MAX_PEERS, RMAOP_ERR_UNSUPPORTED,
                "%s: the window has %d ranks; a device handle maps at most RMAOP_DEVICE_MAX_PEERS = %d", fn, win->size,
                RMAOP_DEVICE_MAX_PEERS);
  return rma__ipc_device_handle(win, out);
#endif
}
