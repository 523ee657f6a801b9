/* The operator object and what composite operators share (src/ops/op.c). */
#ifndef RMAOP_OPS_OP_IMPL_H
#define RMAOP_OPS_OP_IMPL_H

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rmaop__op_ops {
  rmaop_status (*apply_begin)(rmaop_op A, rmaop_vec x, rmaop_vec y);
  rmaop_status (*apply_end)(rmaop_op A);
  rmaop_status (*adjoint_begin)(rmaop_op A, rmaop_vec y, rmaop_vec x);
  rmaop_status (*adjoint_end)(rmaop_op A);
  void (*destroy)(rmaop_op A); /* frees A->impl and what it holds */
} rmaop__op_ops;

struct rmaop_op_s {
  rmaop_ctx ctx;
  int refs;
  char name[64];
  rmaop_dtype dtype;
  rmaop_layout model, data; /* references held */
  const rmaop__op_ops *ops;
  void *impl;
  int active;               /* 0 idle, 1 forward, 2 adjoint */
  /* Composites: the operators they apply (borrowed; the impl holds the references). A sum begins its
   * parts together only when no leaf operator occurs twice below it. */
  int nparts;
  rmaop_op *parts;
  rmaop_op own_parts[2];
};

/* A new operator with its layouts retained; impl and ops set by the caller. */
rmaop_status rmaop__op_new(rmaop_ctx ctx, const char *name, rmaop_dtype dtype, rmaop_layout model, rmaop_layout data,
                           const rmaop__op_ops *ops, void *impl, rmaop_op *out);


/* rmaop__op_new for collective constructors, called by every rank with its status so far (`prior`; the
 * operator is made only where it is RMAOP_OK): the ranks agree on the outcome, so when anything failed on
 * one rank every rank frees its impl (whose plans and windows are freed collectively). On failure impl is
 * the caller's. */
rmaop_status rmaop__op_new_agreed(rmaop_status prior, rmaop_ctx ctx, const char *name, rmaop_dtype dtype,
                                  rmaop_layout model, rmaop_layout data, const rmaop__op_ops *ops, void *impl,
                                  rmaop_op *out);
/* 1 when no leaf operator occurs twice among ops (their applications may be begun together; an operator
 * has one execution state, so 2 D + D must run its parts one after the other). */
int rmaop__op_parts_independent(int n, const rmaop_op ops[]);
/* Applies part i of a composite's parts (op.c): begun when `overlap` (ended by rmaop__op_parts_end), else
 * applied whole. On failure the parts 0..i-1 already begun are ended, and the error is returned. */
rmaop_status rmaop__op_part_begin(const rmaop_op ops[], int i, rmaop_vec in, rmaop_vec out, int adjoint, int overlap);
/* Ends the n parts begun by rmaop__op_part_begin (nothing to do unless `overlap`): every one, even after
 * one failed; returns the first error. */
rmaop_status rmaop__op_parts_end(int n, const rmaop_op ops[], int adjoint, int overlap);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_OPS_OP_IMPL_H */
