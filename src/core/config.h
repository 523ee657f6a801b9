/* Configuration: rows of RMAOP_* variables, option values and name parsing (src/core/config.c). */
#ifndef RMAOP_CORE_CONFIG_H
#define RMAOP_CORE_CONFIG_H

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One RMAOP_* variable: the core's rows are in config.c, each backend's in its rmaop_backend. */
typedef struct {
  const char *env;    /* "RMAOP_BACKEND" */
  const char *deflt;  /* "rma" */
  const char *values; /* "rma|twosided|nccl" (documentation) */
  const char *help;
} rmaop__config_entry;

/* Row i of every row: the core's, then each built-in backend's in registry order; NULL past the last. */
const rmaop__config_entry *rmaop__config_row(int i);
/* RMAOP_TIMEOUT's default (its row, config.c): also the context's timeout until its options are read, so the bounded
 * collective steps of a creation whose options fail still wait that long. */
#define RMAOP__TIMEOUT_DEFAULT "300"

/* The option given, else the environment variable @p env (when set and not empty), else its row's default. */
const char *rmaop__option_value(const char *given, const char *env);
/* The number in variable @p env (else its default), in [lo, hi]; the whole string must parse, as a base-10
 * integer when @p integer. RMAOP_ERR_ARG "ENV="value" is not <what>" otherwise. */
rmaop_status rmaop__option_number(rmaop_ctx ctx, const char *env, int integer, double lo, double hi, const char *what,
                                  double *out);
/* Parses a name among @p names (NULL-terminated): its index, or RMAOP_ERR_ARG naming @p what and listing them. */
rmaop_status rmaop__parse_name(rmaop_ctx ctx, const char *what, const char *value, const char *const names[], int *index);

/* NULL-terminated name lists indexed by the public enums (src/core/dtype.c). */
extern const char *const rmaop__dtype_names[];
extern const char *const rmaop__sync_names[];
extern const char *const rmaop__transport_names[];
extern const char *const rmaop__memory_names[];

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_CONFIG_H */
