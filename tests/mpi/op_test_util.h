/* Shared helpers of the operator tests (test_op_stencil.c, test_op_block.c, test_op_compose.c, test_op_shell.c,
 * test_op_apply.c): dense global matrices in double complex, the generic check of an operator against its
 * matrix, the serial derivative formulas, the splits of axis 0 and the rank-formula block operators.
 *
 * Reference: every rank builds the whole operator as a dense global matrix M (data x model, double complex)
 * from serial formulas written here from the PyLops definitions (FirstDerivative, SecondDerivative,
 * Laplacian, MPIBlockDiag / MPIVStack / MPIHStack), never from library internals: a derivative's M comes
 * from applying the serial stencil formulas to unit vectors; a block operator's M from the formula of every
 * rank's block. check_op compares the library's y = A x with M x and its x = A^H y with M^H y (conjugate
 * transpose), element by element on every rank, within rt_tol(dtype) relative to the row's magnitude; rows
 * that must be zero must be exactly zero. Every operator also passes rmaop_op_dottest, and its
 * apply_begin / apply_end (with other vector work in between) must give bitwise the result of apply.
 *
 * Every function that creates rmaop objects is collective and asserts with RT_* (rmaop_test.h), so all ranks
 * must call it in the same order. */
#ifndef RMAOP_OP_TEST_UTIL_H
#define RMAOP_OP_TEST_UTIL_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmaop_test.h"

/* The context of the running test (op_setup / op_teardown: the checked fixture of every test case). */
extern rmaop_ctx ctx;
void op_setup(void);
void op_teardown(void);

/* ---- dense global matrices (double complex, row-major) ---- */

typedef struct {
  int64_t m, n; /* rows (data), columns (model) */
  double _Complex *a;
} mat;
#define AT(A, i, j) ((A).a[(size_t)(i) * (size_t)(A).n + (size_t)(j)])

mat mat_new(int64_t m, int64_t n);
void mat_free(mat *A);
/* A + alpha B */
mat mat_add(const mat *A, double _Complex alpha, const mat *B);
mat mat_scale(const mat *A, double _Complex alpha);
mat mat_mul(const mat *A, const mat *B);
mat mat_adjoint(const mat *A);

/* The matrix of a serial linear map of n inputs to m outputs, column by column. */
typedef void (*serial_fn)(const void *cfg, const double _Complex *x, double _Complex *y);
mat mat_from_fn(int64_t m, int64_t n, serial_fn f, const void *cfg);

/* ---- the generic check: an operator against its dense matrix ---- */

/* Expected local sizes and offsets of the model and data layouts on this rank (NULL: not checked). */
typedef struct {
  int64_t model_n, model_off, data_n, data_off;
} local_shape;

/* Non-collective calls inside a check go through LOK: the first failure on this rank is remembered and
 * asserted collectively at the next RT_CHECK of lok (one reduction instead of one per call). Collective
 * calls keep RT_OK, so that a failure stops every rank at the same point. */
extern int lok;
extern char lerr[512];
#define LOK(expr)                                                                                                      \
  do {                                                                                                                 \
    rmaop_status lok__s = (expr);                                                                                      \
    if (lok__s != RMAOP_OK && lok)                                                                                     \
      lok = 0, snprintf(lerr, sizeof lerr, "%s:%d: %s -> %s: %s", __FILE__, __LINE__, #expr,                           \
                        rmaop_status_string(lok__s), rmaop_ctx_last_error(NULL));                                      \
  } while (0)
#define RT_LOK() RT_CHECK(lok, "%s", lerr)

rmaop_vec vec_on(rmaop_layout l, rmaop_dtype d);
/* Writes series s (global index = offset + local index) rounded to the dtype; returns the global values
 * (n of them) as the dtype holds them. */
double _Complex *fill(rmaop_vec v, int64_t n_global, int s);
/* Local elements of v against want[offset + i] = sum_j W[i][j] in[j] (W = M or M^H), within tol relative to
 * sum_j |W_ij in_j|. Records the first mismatch in msg; returns 1 when all match. */
int compare(rmaop_vec v, const mat *W, const double _Complex *in, const char *what, char *msg, size_t msz);
/* Equality of the local parts of two vectors of one layout: bitwise, or by value (== on the real and
 * imaginary parts: 0 equals -0). On a difference, describes the first differing element in msg (when given). */
int same_local_msg(rmaop_vec a, rmaop_vec b, int bitwise, char *msg, size_t msz);
int same_local(rmaop_vec a, rmaop_vec b);
/* The whole battery: layouts, forward vs M x, x unchanged, adjoint vs M^H y, begin/end with other work in
 * between, dot test. */
void check_op(rmaop_op A, const mat *M, rmaop_dtype d, const local_shape *shape, const char *name);

/* ---- serial derivatives (PyLops), on a C-order N-D array ---- */

typedef struct {
  int ndim;
  int64_t dims[RMAOP_MAX_DIMS];
} shape_t;
int64_t shape_size(const shape_t *s);

typedef struct {
  int order;
  rmaop_deriv_kind kind;
  int edge;
  double h; /* 0: 1 */
  shape_t shape;
  int axis;
} deriv_cfg;

/* y (+)= w * D x for the whole array. */
void deriv_add(const deriv_cfg *c, double w, const double _Complex *x, double _Complex *y);
/* y = D x (a serial_fn; cfg is a deriv_cfg). */
void deriv_serial(const void *cfg, const double _Complex *x, double _Complex *y);

extern const shape_t line11, cube, plane;
extern const char *kind_names[4];

/* ---- how axis 0 is split ---- */

enum { SPLIT_BALANCED, SPLIT_FIRST_ONE, SPLIT_UNEVEN, SPLIT_ONES, NSPLITS };
extern const char *split_names[NSPLITS];

/* Rows of axis 0 on rank r of P. */
int64_t split_rows(int split, int64_t n0, int r, int P);
int64_t split_offset(int split, int64_t n0, int r, int P);
rmaop_grid make_grid(const shape_t *s, int split);
local_shape grid_shape(const shape_t *s, int split);

/* The library's first or second derivative of c on the split (collective). */
rmaop_op make_deriv(const deriv_cfg *c, int split, rmaop_dtype d);

/* An operator with its matrix and this rank's expected layouts. */
typedef struct {
  rmaop_op op;
  mat M;
  local_shape ls;
} pair;
pair deriv_pair(const deriv_cfg *c, int split, rmaop_dtype d);
void pair_free(pair *p);

/* ---- block operators: rank r's block is a formula of (r, i, j) ---- */

enum { VSTACK_COLS = 4, HSTACK_ROWS = 3 };
enum { BLOCKDIAG, VSTACK, HSTACK };
extern const char *block_names[3];

/* The global matrix of a block operator, from every rank's block formula. */
mat block_matrix(int kind, rmaop_dtype d);
/* This rank's expected layouts of a block operator. */
local_shape block_shape(int kind);

/* The callbacks' state: the block's formula, a status to fail with (when not OK) and a count of calls. */
typedef struct {
  rmaop_dtype d;
  int rank;
  int64_t nr, nc;
  rmaop_status fail; /* returned by the callbacks when not OK */
  int calls;
} blk_user;

/* A block operator of rank-formula blocks, dense or through callbacks (user must outlive it). */
rmaop_op make_block(int kind, rmaop_dtype d, int callbacks, blk_user *user);

#endif /* RMAOP_OP_TEST_UTIL_H */
