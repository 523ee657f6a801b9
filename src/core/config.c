/* Configuration: the core's RMAOP_* variables (each backend lists its own in its rmaop_backend row), the
 * lookup of an option's value (given, else the environment, else the row's default) and name parsing. The
 * README's table is checked against every row by tests/unit/test_config.c. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"

static const rmaop__config_entry core_rows[] = {
    {"RMAOP_BACKEND", "rma", "rma|twosided|nccl", "communication backend"},
    {"RMAOP_MEMORY", "host", "host|device", "where vectors and windows live"},
    {"RMAOP_TRACE", "0", "0|1|sync", "record every plan execution, reduction and epoch (sync: synchronized starts)"},
    {"RMAOP_TRACE_FILE", "", "path", "JSON trace written at rmaop_ctx_destroy when tracing is on (%r = rank)"},
    {"RMAOP_TIMEOUT", RMAOP__TIMEOUT_DEFAULT, "seconds",
     "how long a wait for a peer may last before RMAOP_ERR_TIMEOUT"},
    {"RMAOP_NODE_SIZE", "0", "ranks",
     "for testing and tuning: every k consecutive ranks of a node count as one node (0: the real nodes)"},
    {"RMAOP_SOLVER_SCALARS", "auto", "auto|host|device|graph|resident",
     "where CG and CGLS keep their dots and step sizes on a device context (auto: resident where supported with a GPU "
     "per rank on one node, else host; graph: device, each iteration replayed from two CUDA graphs; resident: the "
     "whole solve in one GPU kernel where supported, else graph)"},
    {"RMAOP_HALO", "auto", "auto|plan|kernel",
     "how derivatives and Laplacians on a device context exchange ghost rows (kernel: their kernels store them into "
     "the "
     "neighbours' windows and signal, no host step, where the context is rma over ipc with at most 16 ranks and not "
     "traced, else plan; plan: a halo plan per application; auto: kernel where every rank has its own GPU on one "
     "node)"},
    {"RMAOP_RESIDENT_PROFILE", "0", "0|1",
     "for tuning: the GPU-resident solve stamps each phase of every iteration (block 0) and rank 0 prints the mean "
     "time per phase to stderr"},
};

const rmaop__config_entry *rmaop__config_row(int i) {
  const int ncore = (int)(sizeof core_rows / sizeof core_rows[0]);
  if (i < 0) return NULL;
  if (i < ncore) return &core_rows[i];
  i -= ncore;
  for (int b = 0; b < rmaop__backend_count(); ++b) {
    const rmaop_backend *be = rmaop__backend_at(b);
    if (i < be->nconfig) return &be->config[i];
    i -= be->nconfig;
  }
  return NULL;
}

const char *rmaop__option_value(const char *given, const char *env) {
  if (given) return given;
  const char *v = getenv(env);
  if (v && *v) return v;
  const rmaop__config_entry *e;
  for (int i = 0; (e = rmaop__config_row(i)) != NULL; ++i)
    if (strcmp(e->env, env) == 0) return e->deflt;
  return "";
}

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

rmaop_status rmaop__option_number(rmaop_ctx ctx, const char *env, int integer, double lo, double hi, const char *what,
                                  double *out) {
  const char *v = rmaop__option_value(NULL, env);
  char *end = NULL;
  errno = 0;
  const double x = integer ? (double)strtoll(v, &end, 10) : strtod(v, &end);
  RMAOP_REQUIRE(ctx, end != v && *end == '\0' && (!integer || errno == 0) && x >= lo && x <= hi, RMAOP_ERR_ARG,
                "%s=\"%s\" is not %s", env, v, what);
  *out = x;
  return RMAOP_OK;
}
