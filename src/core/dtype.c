/* Element types, names, and the host element kernels shared by plans and vectors. */
#include "error.h"
#include "config.h"
#include "dtype.h"

const char *const rmaop__dtype_names[] = {"f32", "f64", "c64", "c128", NULL};
const char *const rmaop__sync_names[] = {"fence", "pscw", "lock", NULL};
const char *const rmaop__transport_names[] = {"auto", "mpi", "shm", "ipc", NULL};
const char *const rmaop__memory_names[] = {"host", "device", NULL};

size_t rmaop_dtype_size(rmaop_dtype dtype) {
  switch (dtype) {
  case RMAOP_F32: return sizeof(float);
  case RMAOP_F64: return sizeof(double);
  case RMAOP_C64: return sizeof(float _Complex);
  case RMAOP_C128: return sizeof(double _Complex);
  }
  return 0;
}

const char *rmaop_dtype_name(rmaop_dtype dtype) {
  return rmaop_dtype_size(dtype) ? rmaop__dtype_names[dtype] : "invalid";
}

rmaop_status rmaop_dtype_parse(const char *name, rmaop_dtype *dtype) {
  int i = 0;
  RMAOP_REQUIRE(NULL, dtype != NULL, RMAOP_ERR_ARG, "rmaop_dtype_parse: dtype (output) is NULL");
  RMAOP_CHECK(rmaop__parse_name(NULL, "dtype", name, rmaop__dtype_names, &i));
  *dtype = (rmaop_dtype)i;
  return RMAOP_OK;
}

const char *rmaop_sync_name(rmaop_sync sync) {
  return (unsigned)sync < 3 ? rmaop__sync_names[sync] : "invalid";
}
const char *rmaop_transport_name(rmaop_transport transport) {
  if (transport == RMAOP_TRANSPORT_SELF) return "self";
  return (unsigned)transport < 4 ? rmaop__transport_names[transport] : "invalid";
}
const char *rmaop_memory_name(rmaop_memory memory) {
  return (unsigned)memory < 2 ? rmaop__memory_names[memory] : "invalid";
}

#define RMAOP__ADD_LOOP(T)                                   \
  do {                                                       \
    T *d = (T *)dst;                                         \
    const T *s = (const T *)src;                             \
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];            \
  } while (0)

void rmaop__host_apply(rmaop_dtype dtype, void *dst, const void *src, int64_t n, rmaop_mode mode) {
  if (n <= 0) return;
  if (mode == RMAOP_INSERT) {
    memmove(dst, src, (size_t)n * rmaop_dtype_size(dtype));
    return;
  }
  /* Complex addition is element-wise on the real pairs: one loop over reals serves both widths. */
  switch (dtype) {
  case RMAOP_F32: RMAOP__ADD_LOOP(float); break;
  case RMAOP_C64: n *= 2; RMAOP__ADD_LOOP(float); break;
  case RMAOP_F64: RMAOP__ADD_LOOP(double); break;
  case RMAOP_C128: n *= 2; RMAOP__ADD_LOOP(double); break;
  }
}
