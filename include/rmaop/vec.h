/**
 * @file vec.h
 * @brief Distributed vectors: creation, local access, local arithmetic, dot products and norms (reductions
 *        over the layout), gather and scatter.
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_VEC_H
#define RMAOP_RMAOP_VEC_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Vectors                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/** A zero vector over @p layout in the context's memory. Not collective. */
rmaop_status rmaop_vec_create(rmaop_layout layout, rmaop_dtype dtype, rmaop_vec *vec);
/**
 * A vector over @p layout whose local elements are the caller's memory @p data (local_n elements of @p dtype,
 * aligned to the element; device memory on a device context, host memory on a host context): no copy is made
 * and nothing is zeroed. rmaop reads and writes @p data in place; the caller keeps it alive and does not free
 * it until the vector is destroyed (rmaop_vec_destroy does not free it; on a device context it first waits for
 * the stream, so no kernel still uses it), and does not touch it while an rmaop call that uses the vector is
 * in progress (between an apply's begin and end, or before rmaop_ctx_synchronize on the device). How NumPy
 * and CuPy arrays become rmaop vectors without copies. Not collective.
 * @return RMAOP_ERR_ARG for a NULL layout or output, a NULL @p data with local elements, a misaligned @p data,
 *         or memory of the other kind than the context's (the message says which).
 */
rmaop_status rmaop_vec_create_with_array(rmaop_layout layout, rmaop_dtype dtype, void *data, rmaop_vec *vec);
/** A zero vector with the layout and dtype of @p x. Not collective. */
rmaop_status rmaop_vec_duplicate(rmaop_vec x, rmaop_vec *vec);
void rmaop_vec_destroy(rmaop_vec *vec);

typedef struct {
  rmaop_layout layout; /**< borrowed */
  rmaop_dtype dtype;
  rmaop_memory memory;
  int64_t local_n, global_n, offset;
} rmaop_vec_info;
rmaop_status rmaop_vec_get_info(rmaop_vec vec, rmaop_vec_info *info);
/** The local elements (in the vector's memory kind; local_n of them). Not collective. */
rmaop_status rmaop_vec_get_array(rmaop_vec vec, void **data);
/** Copies the local elements to / from host memory @p host (local_n elements of the dtype). */
rmaop_status rmaop_vec_read_local(rmaop_vec vec, void *host);
rmaop_status rmaop_vec_write_local(rmaop_vec vec, const void *host);

/* Local operations (not collective). Vectors must share layout sizes and dtype (else RMAOP_ERR_ARG). */
rmaop_status rmaop_vec_set(rmaop_vec x, double _Complex alpha);                          /**< x[:] = alpha */
rmaop_status rmaop_vec_copy(rmaop_vec x, rmaop_vec y);                                   /**< y = x */
rmaop_status rmaop_vec_axpy(rmaop_vec y, double _Complex alpha, rmaop_vec x);            /**< y += alpha x */
rmaop_status rmaop_vec_axpby(rmaop_vec y, double _Complex alpha, double _Complex beta, rmaop_vec x); /**< y = alpha x + beta y */
rmaop_status rmaop_vec_scale(rmaop_vec x, double _Complex alpha);                        /**< x *= alpha */
rmaop_status rmaop_vec_pointwise_mult(rmaop_vec w, rmaop_vec x, rmaop_vec y);            /**< w = x .* y */

/* Collective reductions over the layout (BROADCAST vectors reduce locally: every rank holds them whole).
 * Partial sums are accumulated in double precision; every rank gets the identical result. */
/** *r = sum_i conj(x_i) y_i (numpy.vdot order). Collective. */
rmaop_status rmaop_vec_dot(rmaop_vec x, rmaop_vec y, double _Complex *r);
/** *r = ||x||_2. Collective. */
rmaop_status rmaop_vec_norm2(rmaop_vec x, double *r);
/** r[k] = dot(x[k], y[k]) for k < n, all in ONE reduction. Collective. */
rmaop_status rmaop_vec_mdot(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[]);
/** Non-blocking rmaop_vec_mdot: @p r is written by rmaop_vec_mdot_end(). Collective. */
rmaop_status rmaop_vec_mdot_begin(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[],
                                  rmaop_request *req);
/** Completes rmaop_vec_mdot_begin() (rmaop_request_wait() under its own name); *req becomes NULL. */
rmaop_status rmaop_vec_mdot_end(rmaop_request *req);
/**
 * The n dots left where the vectors live: r[2k] and r[2k + 1] are the real and imaginary parts of
 * dot(x[k], y[k]). On a device context @p r is device memory (2n doubles), n <= 8, the vectors are
 * distributed (not BROADCAST, not stacked with BROADCAST parts: RMAOP_ERR_UNSUPPORTED), and the call is
 * stream-ordered as rmaop_allreduce_enqueue(): the local dots and their reduction are enqueued, the host
 * is not synchronized, and kernels the caller enqueues next can read the results (no host round trip per
 * dot). On a host context: rmaop_vec_mdot() with the results as pairs in @p r. Collective.
 */
rmaop_status rmaop_vec_mdot_enqueue(int n, const rmaop_vec x[], const rmaop_vec y[], double *r);

/** Gathers the whole vector into host buffer @p global (global_n elements) on @p root. Collective;
 *  @p global is ignored on other ranks. */
rmaop_status rmaop_vec_gather(rmaop_vec vec, int root, void *global);
/** Scatters host buffer @p global (global_n elements, read on @p root) into the vector. Collective. */
rmaop_status rmaop_vec_scatter(rmaop_vec vec, int root, const void *global);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_VEC_H */
