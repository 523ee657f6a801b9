/* Backend registry: a static table of names -> function tables, one #ifdef row per optional backend
 * (PETSc's SFRegisterAll, NCCL's ncclTransports[]). */
#include "backend.h"

#include <stdio.h>
#include <string.h>

extern const rmaop_backend rmaop__rma_backend;
extern const rmaop_backend rmaop__twosided_backend;
#ifdef RMAOP_HAVE_NCCL
extern const rmaop_backend rmaop__nccl_backend;
#endif

static const rmaop_backend *const registry[] = {
    &rmaop__rma_backend,
    &rmaop__twosided_backend,
#ifdef RMAOP_HAVE_NCCL
    &rmaop__nccl_backend,
#endif
};
static const int nregistry = (int)(sizeof registry / sizeof registry[0]);
_Static_assert(sizeof registry / sizeof registry[0] <= RMAOP__MAX_BACKENDS, "raise RMAOP__MAX_BACKENDS");

const char *rmaop_backends_available(void) {
  static char names[128];
  if (names[0] == '\0') {
    size_t used = 0;
    for (int i = 0; i < nregistry; ++i)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? "," : "", registry[i]->name);
  }
  return names;
}

rmaop_status rmaop__backend_lookup(rmaop_ctx ctx, const char *name, const rmaop_backend **backend) {
  RMAOP_REQUIRE(ctx, name != NULL, RMAOP_ERR_ARG, "backend name is NULL");
  for (int i = 0; i < nregistry; ++i) {
    if (strcmp(registry[i]->name, name) == 0) {
      *backend = registry[i];
      return RMAOP_OK;
    }
  }
  if (strcmp(name, "nccl") == 0)
    return RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED,
                       "backend \"nccl\" is not built into this library (built: %s); rebuild with CUDA and NCCL",
                       rmaop_backends_available());
  return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "unknown backend \"%s\" (RMAOP_BACKEND / options.backend); valid: %s",
                     name, rmaop_backends_available());
}

int rmaop__backend_count(void) {
  return nregistry;
}

const rmaop_backend *rmaop__backend_at(int i) {
  return i >= 0 && i < nregistry ? registry[i] : NULL;
}

void *rmaop__backend_settings(rmaop_ctx ctx, const rmaop_backend *b) {
  for (int i = 0; i < nregistry; ++i)
    if (registry[i] == b) return ctx->settings[i];
  return NULL;
}
