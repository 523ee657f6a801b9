/* Reductions inside the library (src/core/reduce.c): requests and the flagged reduction the dots use. */
#ifndef RMAOP_CORE_REDUCE_H
#define RMAOP_CORE_REDUCE_H

#include <stdint.h>

#include "device/device.h"
#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rmaop_request_s {
  rmaop_ctx ctx;
  void *backend_req;       /* from backend->reduce_begin */
  int started;             /* backend->reduce_begin succeeded: reduce_end is owed */
  int deferred;            /* blocking caller: the backend's blocking reduce runs at the wait */
  const double *in;        /* deferred: the input and operation */
  rmaop_redop op;
  double *buf;             /* reduction buffer owned by the request (may be NULL) */
  double *out;             /* where the reduced doubles go */
  int64_t count;
  /* post-processing for mdot: converts the reduced doubles into complex results */
  void *result;            /* caller's output for finish() */
  int nresult;
  int has_flag;            /* the last double carries the count of failed ranks */
  rmaop_status local;      /* this rank's own argument error, returned after the reduction */
  char label[64];
  double t_begin;
  double t_inside;         /* seconds inside the begin call */
  rmaop_status (*finish)(rmaop_request req);
  double inline_buf[16];   /* small reductions (dots of a solver iteration) need no allocation */
};

/* ---- reductions (src/core/reduce.c) ----------------------------------------------------------------- */

/* Starts a reduction (`op`) of `np` partial doubles plus one flag that marks the ranks whose arguments
 * were bad (`local` != RMAOP_OK: partials are ignored, the rank still takes part so nobody hangs).
 * `local_only`: every rank holds the whole data (BROADCAST), no communication. At the wait, `finish`
 * turns the reduced doubles into the caller's results, unless a rank failed. */
rmaop_status rmaop__reduce_flagged_begin(rmaop_ctx ctx, rmaop_status local, const double *partials, int64_t np,
                                         rmaop_redop op, const char *label, int local_only,
                                         rmaop_status (*finish)(rmaop_request), void *out, int nout,
                                         rmaop_request *req);

void rmaop__request_pool_free(rmaop_ctx ctx);
/* Frees the device reductions' gather plans (collective: at context destruction). */
void rmaop__dev_reduce_free(rmaop_ctx ctx);
/* 1 when rmaop_vec_mdot_enqueue can keep v's dots on the device (device memory, distributed layout). */
int rmaop__vec_device_dots_ok(rmaop_vec v);
/* rmaop_vec_mdot_enqueue on a device context without its checks and agreement (n <= 8, vectors that pass
 * rmaop__vec_device_dots_ok; the solvers' internal dots). */
rmaop_status rmaop__vec_mdot_device(int n, const rmaop_vec x[], const rmaop_vec y[], double *r);
/* count doubles in device memory reduced into out (device memory) across the context, in rank order,
 * enqueued on the stream (src/core/reduce.c). Collective; no argument agreement (callers check). */
rmaop_status rmaop__allreduce_device(rmaop_ctx ctx, const double *in, double *out, int64_t count, rmaop_redop op);
/* The backend's one-block device reduction of count doubles, where it has one (*done = 1; src/core/backend.h,
 * reduce_device): `launch` sets the arguments' in and out and enqueues the kernel that runs it. *done = 0: the
 * caller reduces some other way (launch not called). Collective. */
rmaop_status rmaop__reduce_device_fused(rmaop_ctx ctx, int64_t count, rmaop_redop op,
                                        rmaop_status (*launch)(rmaop_ctx ctx, rmaop__dred_args *a, void *user),
                                        void *user, int *done);

/* Starts a reduction (`op`) of `np` partial doubles plus one flag that marks the ranks whose arguments
 * were bad (`local` != RMAOP_OK: partials are ignored, the rank still takes part so nobody hangs).
 * `local_only`: every rank holds the whole data (BROADCAST), no communication. At the wait, `finish`
 * turns the reduced doubles into the caller's results, unless a rank failed. */
rmaop_status rmaop__reduce_flagged_begin(rmaop_ctx ctx, rmaop_status local, const double *partials, int64_t np,
                                         rmaop_redop op, const char *label, int local_only,
                                         rmaop_status (*finish)(rmaop_request), void *out, int nout,
                                         rmaop_request *req);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_REDUCE_H */
