/* Node-shared host buffers (shmem.h).
 *
 * Each buffer is a memfd (anonymous shared memory, no name in /dev/shm: nothing is left behind when a process
 * dies, and a container's small /dev/shm does not limit it) mapped MAP_SHARED. A node peer maps it by opening
 * /proc/<owner pid>/fd/<fd>, which the kernel allows a process of the same user (PTRACE_MODE_READ, the check
 * Open MPI's single-copy transfers pass too); rmaop__shm_init tries exactly that once per context, so a system
 * that refuses it gets ordinary buffers and the staged path, never an error in the middle of an exchange.
 *
 * A peer keeps its mappings (at most SHM_MAPS, least recently used goes), so a buffer is mapped once, with its
 * pages populated, and not per exchange. When the owner frees a buffer it truncates it to zero bytes first: the
 * memory returns to the system at once even where a peer still maps it (that peer never touches it again:
 * buffer numbers are not reused, so no exchange names it any more). After a failed exchange it does not: a peer
 * that read the offer before the owner gave up may still be writing. */
#include "shmem.h" /* built with _GNU_SOURCE (CMakeLists.txt): memfd_create, MAP_POPULATE */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "error.h"

#define SHM_MAPS 16

typedef struct {
  char *base;
  size_t bytes;
  int fd;
  int64_t seq;
} shm_own;

typedef struct {
  int64_t owner, seq; /* owner 0: a free entry */
  char *base;
  size_t bytes;
  uint64_t used; /* the use count when last used: the smallest goes first */
} shm_map;

struct rmaop__shm {
  size_t min_bytes;
  int64_t pid, next_seq;
  shm_own *own;
  int nown, cap;
  shm_map map[SHM_MAPS];
  uint64_t uses;
};

/* A memfd of `bytes`, mapped; NULL on any failure (nothing left open). */
static char *make(size_t bytes, int *fd_out) {
  const int fd = memfd_create("rmaop", MFD_CLOEXEC);
  if (fd < 0)
    return NULL;
  if (ftruncate(fd, (off_t)bytes) != 0) {
    close(fd);
    return NULL;
  }
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* huge pages where shmem_enabled is "advise", as malloc's may have */
#endif
  *fd_out = fd;
  return p;
}

/* Maps another process's buffer; NULL on failure. */
static char *open_peer(int64_t owner, size_t *bytes) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%lld/fd/%d", (long long)(owner >> 32), (int)(owner & 0xffffffff));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat s;
  void *p = MAP_FAILED;
  if (fstat(fd, &s) == 0 && s.st_size > 0)
    p = mmap(NULL, (size_t)s.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd); /* the mapping keeps the memory */
  if (p == MAP_FAILED)
    return NULL;
  *bytes = (size_t)s.st_size;
  return p;
}

static int64_t owner_of(const struct rmaop__shm *s, int fd) {
  return s->pid << 32 | (int64_t)fd;
}

char *rmaop__shm_segment_make(size_t bytes, int64_t *owner, int *fd) {
  char *p = make(bytes, fd);
  if (p)
    *owner = (int64_t)getpid() << 32 | (int64_t)*fd;
  return p;
}

char *rmaop__shm_segment_open(int64_t owner, size_t *bytes) {
  return open_peer(owner, bytes);
}

void rmaop__shm_init(rmaop_ctx ctx, size_t min_bytes) {
  ctx->shm = NULL;
  struct rmaop__shm *s = calloc(1, sizeof *s);
  int ok = s != NULL;
  /* The probe: one page of each rank, mapped by every node peer, which reads the owner's rank there. */
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int fd = -1;
  char *mine = ok ? make(page, &fd) : NULL;
  ok = mine != NULL;
  int64_t me[2] = {ok ? (int64_t)getpid() << 32 | (int64_t)fd : 0, ctx->rank}, *all = NULL;
  if (ok)
    memcpy(mine, &me[1], sizeof me[1]);
  all = malloc(2 * (size_t)ctx->node_size * sizeof *all);
  /* Every rank joins every collective below whatever happened here: first whether all can gather at all. */
  int can = all != NULL, all_can = 0;
  if (MPI_Allreduce(&can, &all_can, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
    all_can = 0;
  const int gathered = all_can && MPI_Allgather(me, 2, MPI_INT64_T, all, 2, MPI_INT64_T, ctx->node_comm) == MPI_SUCCESS;
  ok = ok && gathered;
  for (int i = 0; ok && i < ctx->node_size; ++i) {
    if (i == ctx->node_rank)
      continue;
    size_t bytes = 0;
    char *p = all[2 * i] ? open_peer(all[2 * i], &bytes) : NULL;
    int64_t rank = -1;
    if (p) {
      memcpy(&rank, p, sizeof rank);
      munmap(p, bytes);
    }
    ok = rank == all[2 * i + 1];
  }
  int every = 0;
  if (MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS)
    every = 0; /* after it every rank is done with the probes */
  free(all);
  if (mine) {
    munmap(mine, page);
    close(fd);
  }
  if (!every) {
    free(s);
    return;
  }
  s->min_bytes = min_bytes;
  s->pid = (int64_t)getpid();
  s->next_seq = 1;
  ctx->shm = s;
}

void rmaop__shm_fini(rmaop_ctx ctx) {
  struct rmaop__shm *s = ctx->shm;
  if (!s)
    return;
  for (int i = 0; i < SHM_MAPS; ++i)
    if (s->map[i].owner)
      munmap(s->map[i].base, s->map[i].bytes);
  /* Buffers still owned belong to objects not yet destroyed (the user's error): they stay mapped, and their
   * descriptors open, so that those objects' memory stays valid. */
  free(s->own);
  free(s);
  ctx->shm = NULL;
}

void *rmaop__shm_alloc(rmaop_ctx ctx, size_t bytes) {
  struct rmaop__shm *s = ctx->shm;
  if (!s || bytes < s->min_bytes || bytes == 0)
    return NULL;
  if (s->nown == s->cap) {
    const int cap = s->cap ? 2 * s->cap : 16;
    shm_own *o = realloc(s->own, (size_t)cap * sizeof *o);
    if (!o)
      return NULL;
    s->own = o;
    s->cap = cap;
  }
  int fd = -1;
  char *p = make(bytes, &fd);
  if (!p)
    return NULL;
  s->own[s->nown++] = (shm_own){.base = p, .bytes = bytes, .fd = fd, .seq = s->next_seq++};
  return p;
}

int rmaop__shm_free(rmaop_ctx ctx, void *p) {
  struct rmaop__shm *s = ctx->shm;
  if (!s || !p)
    return 0;
  for (int i = 0; i < s->nown; ++i) {
    if (s->own[i].base != p)
      continue;
    /* The pages go now, even where a peer still maps the buffer; not after a failed exchange, whose peer may
     * still be writing the destination it was offered (its mapping then keeps the pages until it unmaps). */
    if (ctx->failed == RMAOP_OK)
      (void)ftruncate(s->own[i].fd, 0);
    munmap(p, s->own[i].bytes);
    close(s->own[i].fd);
    s->own[i] = s->own[--s->nown];
    return 1;
  }
  return 0;
}

int rmaop__shm_find(rmaop_ctx ctx, const void *p, size_t bytes, rmaop__shm_ref *ref) {
  const struct rmaop__shm *s = ctx->shm;
  if (!s || !p)
    return 0;
  const char *c = p;
  for (int i = 0; i < s->nown; ++i) {
    const shm_own *o = &s->own[i];
    if (c >= o->base && (size_t)(c - o->base) <= o->bytes && bytes <= o->bytes - (size_t)(c - o->base)) {
      *ref = (rmaop__shm_ref){.owner = owner_of(s, o->fd), .seq = o->seq, .offset = (int64_t)(c - o->base)};
      return 1;
    }
  }
  return 0;
}

rmaop_status rmaop__shm_map(rmaop_ctx ctx, int peer, const rmaop__shm_ref *ref, size_t bytes, char **addr) {
  struct rmaop__shm *s = ctx->shm;
  RMAOP_REQUIRE(ctx, s != NULL, RMAOP_ERR_INTERNAL, "rank %d offered a node-shared buffer to a context without them",
                peer);
  shm_map *m = NULL, *oldest = &s->map[0];
  for (int i = 0; i < SHM_MAPS && !m; ++i) {
    if (s->map[i].owner == ref->owner && s->map[i].seq == ref->seq)
      m = &s->map[i];
    else if (s->map[i].used < oldest->used)
      oldest = &s->map[i];
  }
  if (!m) {
    size_t got = 0;
    char *p = open_peer(ref->owner, &got);
    RMAOP_REQUIRE(ctx, p != NULL, RMAOP_ERR_NOMEM,
                  "mapping rank %d's destination buffer (process %lld, descriptor %d) failed; RMAOP_RMA_DIRECT_MIN=0 "
                  "stages all-to-alls instead",
                  peer, (long long)(ref->owner >> 32), (int)(ref->owner & 0xffffffff));
    if (oldest->owner)
      munmap(oldest->base, oldest->bytes);
    m = oldest;
    *m = (shm_map){.owner = ref->owner, .seq = ref->seq, .base = p, .bytes = got};
  }
  m->used = ++s->uses;
  RMAOP_REQUIRE(ctx, ref->offset >= 0 && (size_t)ref->offset <= m->bytes && bytes <= m->bytes - (size_t)ref->offset,
                RMAOP_ERR_INTERNAL, "rank %d's destination [%lld, +%zu) lies outside its %zu-byte buffer", peer,
                (long long)ref->offset, bytes, m->bytes);
  *addr = m->base + ref->offset;
  return RMAOP_OK;
}
