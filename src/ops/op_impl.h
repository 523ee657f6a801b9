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

/* ---- fused application (the host solvers' passes over memory; ARCHITECTURE.md, Solvers) ----
 * out = A in (adjoint: A^H in) with, first, in <- alpha u + beta in when u != NULL (in written back, in the same
 * pass), and this rank's partial sums: sums[RMAOP__SUM_OUT2] = sum |out_i|^2, [RMAOP__SUM_IN2] = sum |in_i|^2
 * (in after the update), [RMAOP__SUM_INOUT_RE], [.._IM] = sum conj(in_i) out_i (in and out alike laid out).
 * Every rank's partials add up to the global sums (a replicated vector is counted by rank 0); the caller
 * reduces them. Each partial is summed in a fixed order that depends on the layout alone, never on the backend. */
enum { RMAOP__SUM_OUT2, RMAOP__SUM_IN2, RMAOP__SUM_INOUT_RE, RMAOP__SUM_INOUT_IM, RMAOP__NSUMS };
/* Which sums the caller needs (bits 1 << RMAOP__SUM_*: INOUT is both parts); an implementation may fill more. */
enum { RMAOP__WANT_OUT2 = 1, RMAOP__WANT_IN2 = 2, RMAOP__WANT_INOUT = 12 };

typedef struct rmaop__fuse {
  rmaop_vec u;                  /* NULL: no update of in */
  double _Complex alpha, beta;  /* in <- alpha u + beta in */
  rmaop_vec w;                  /* with u: w += gamma in first (in before its update; CGLS's x += a c) */
  double _Complex gamma;
  int want;                     /* RMAOP__WANT_* bits */
} rmaop__fuse;

/* An operator's fused application on host memory (blocking: begins, computes what it can while its plans
 * are in flight, ends). Optional (rmaop_op_s.apply_fused NULL): rmaop__op_apply_fused then runs the update,
 * the application and the local dots one after the other. */
typedef rmaop_status (*rmaop__apply_fused_fn)(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out,
                                              const rmaop__fuse *f, double sums[RMAOP__NSUMS]);

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
  /* Optional fused application on host memory, set by the constructor (a field of the operator rather than a
   * slot of rmaop__op_ops, so the tables of the operators without one stay as they are). */
  rmaop__apply_fused_fn apply_fused;
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

/* out = A in (adjoint: A^H in) on a host context, with f's update of in and this rank's partial sums (above):
 * through A->apply_fused when A has one, else the update (rmaop_vec_axpby), the application and the local
 * dots of f->want (the partials rmaop_vec_mdot would reduce). Not collective in the reduction sense: the caller
 * reduces sums; collective as the application is. Checks the operands like rmaop_op_apply. */
rmaop_status rmaop__op_apply_fused(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                   double sums[RMAOP__NSUMS]);

/* The vector d of a diagonal operator (rmaop_op_create_diagonal: y = d .* x; the operator's own copy, valid while A
 * lives), or NULL when A is not one. */
rmaop_vec rmaop__op_diagonal_vec(rmaop_op A);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_OPS_OP_IMPL_H */
