/**
 * @file types.h
 * @brief rmaop's vocabulary: status codes, enums (dtype, memory, mode, reduction, sync, transport, layout
 *        kind), their names, and the opaque handle types.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_TYPES_H
#define RMAOP_RMAOP_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status of every call. */
typedef enum {
  RMAOP_OK = 0,
  RMAOP_ERR_ARG,         /**< a bad argument; the message names it */
  RMAOP_ERR_MPI,         /**< an MPI call failed; the message names it and MPI's error string */
  RMAOP_ERR_CUDA,        /**< a CUDA call failed */
  RMAOP_ERR_NCCL,        /**< an NCCL call failed */
  RMAOP_ERR_UNSUPPORTED, /**< the backend, memory kind or transport cannot do this */
  RMAOP_ERR_NOMEM,       /**< an allocation failed */
  RMAOP_ERR_TIMEOUT,     /**< a wait for a peer exceeded the context's timeout */
  RMAOP_ERR_REMOTE,      /**< another rank failed in this collective call; its message says why */
  RMAOP_ERR_INTERNAL,    /**< a bug in rmaop; please report it with the message */
  RMAOP_ERR_STATE        /**< the context failed earlier (RMAOP_ERR_TIMEOUT, or RMAOP_ERR_REMOTE from a peer
                              that gave up an exchange); the message names that failure. Destroy the context */
} rmaop_status;

/** Static name of a status ("RMAOP_ERR_ARG", ...). Not collective. */
const char *rmaop_status_string(rmaop_status status);

typedef enum { RMAOP_F32 = 0, RMAOP_F64, RMAOP_C64, RMAOP_C128 } rmaop_dtype;
typedef enum { RMAOP_MEMORY_HOST = 0, RMAOP_MEMORY_DEVICE } rmaop_memory;
/** How a plan writes the destination: overwrite, or add (adjoints use ADD). */
typedef enum { RMAOP_INSERT = 0, RMAOP_ADD } rmaop_mode;
typedef enum { RMAOP_SUM = 0, RMAOP_MAX, RMAOP_MIN } rmaop_redop;
/** Epoch synchronization of the rma backend (RMAOP_RMA_SYNC). */
typedef enum { RMAOP_SYNC_FENCE = 0, RMAOP_SYNC_PSCW, RMAOP_SYNC_LOCK } rmaop_sync;
/** How the rma backend moves bytes to a peer (RMAOP_RMA_TRANSPORT). */
typedef enum {
  RMAOP_TRANSPORT_AUTO = 0,
  RMAOP_TRANSPORT_MPI,
  RMAOP_TRANSPORT_SHM,
  RMAOP_TRANSPORT_IPC,
  RMAOP_TRANSPORT_SELF /**< reported for a rank's own entry (local copies); not accepted as a choice */
} rmaop_transport;
typedef enum {
  RMAOP_LAYOUT_SCATTER = 0,
  RMAOP_LAYOUT_BROADCAST,
  RMAOP_LAYOUT_STACKED /**< a list of layouts (rmaop_layout_create_stacked); not accepted by rmaop_layout_create */
} rmaop_layout_kind;

/** Bytes of one element of @p dtype (0 for an invalid dtype). */
size_t rmaop_dtype_size(rmaop_dtype dtype);
/** "f32", "f64", "c64", "c128" (or "invalid"). */
const char *rmaop_dtype_name(rmaop_dtype dtype);
/** Parses "f32" ... "c128". Returns RMAOP_ERR_ARG naming the string when unknown. */
rmaop_status rmaop_dtype_parse(const char *name, rmaop_dtype *dtype);
/** sizeof the public struct or enum named @p name ("rmaop_deriv_spec", ...; every typedef of <rmaop/rmaop.h>
 *  that is not an opaque handle), 0 for an unknown name: bindings that mirror the structs (Python's ctypes)
 *  compare their layout with the library's at load time. Not collective. */
size_t rmaop_type_size(const char *name);
const char *rmaop_sync_name(rmaop_sync sync);
const char *rmaop_transport_name(rmaop_transport transport);
const char *rmaop_memory_name(rmaop_memory memory);

typedef struct rmaop_ctx_s *rmaop_ctx;
typedef struct rmaop_layout_s *rmaop_layout;
typedef struct rmaop_vec_s *rmaop_vec;
typedef struct rmaop_plan_s *rmaop_plan;
typedef struct rmaop_win_s *rmaop_win;
typedef struct rmaop_request_s *rmaop_request;
typedef struct rmaop_op_s *rmaop_op;

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_TYPES_H */
