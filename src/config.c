/* The configuration table: every RMAOP_* environment variable, its default and meaning. The README's
 * table is checked against this one by tests/unit/test_config.c. */
#include "rmaop_impl.h"

#include <stdio.h>

const rmaop__config_entry rmaop__config_table[] = {
    {"RMAOP_BACKEND", "rma", "rma|twosided|nccl", "communication backend"},
    {"RMAOP_MEMORY", "host", "host|device", "where vectors and windows live"},
    {"RMAOP_RMA_SYNC", "lock", "fence|pscw|lock", "epoch synchronization of the rma backend"},
    {"RMAOP_RMA_TRANSPORT", "auto", "auto|mpi|shm|ipc", "how the rma backend moves bytes to a peer"},
    {"RMAOP_TRACE", "0", "0|1|sync", "record every plan execution, reduction and epoch (sync: synchronized starts)"},
    {"RMAOP_TRACE_FILE", "", "path", "JSON trace written at rmaop_ctx_destroy when tracing is on (%r = rank)"},
    {"RMAOP_TIMEOUT", "300", "seconds", "how long a wait for a peer may last before RMAOP_ERR_TIMEOUT"},
    {"RMAOP_IPC_STORE_MAX", "65536", "bytes", "on the kernel path, ipc puts up to this size are stores from the kernel"},
    {"RMAOP_IPC_PATH", "auto", "auto|kernel|copy", "how the ipc transport moves small epochs to a peer"},
    {"RMAOP_SOLVER_SCALARS", "auto", "auto|host|device|graph",
     "where CG and CGLS keep their dots and step sizes on a device context (auto: host; graph: device, each "
     "iteration replayed from two CUDA graphs)"},
};
const int rmaop__config_count = (int)(sizeof rmaop__config_table / sizeof rmaop__config_table[0]);

rmaop_status rmaop__parse_name(rmaop_ctx ctx, const char *what, const char *value, const char *const names[],
                               int *index) {
  char valid[256] = "";
  size_t used = 0;
  for (int i = 0; names[i]; ++i) {
    if (value && strcmp(value, names[i]) == 0) {
      *index = i;
      return RMAOP_OK;
    }
    used += (size_t)snprintf(valid + used, used < sizeof valid ? sizeof valid - used : 0, "%s%s", i ? ", " : "",
                             names[i]);
  }
  return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "unknown %s \"%s\"; valid: %s", what, value ? value : "(null)", valid);
}
