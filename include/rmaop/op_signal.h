/**
 * @file op_signal.h
 * @brief Signal-processing operators: the multi-dimensional convolution (PyLops-MPI MPIMDC) and the 1-D
 *        non-stationary convolution (PyLops-MPI MPINonStationaryConvolve1D).
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_OP_SIGNAL_H
#define RMAOP_RMAOP_OP_SIGNAL_H

#include <stdint.h>

#include "types.h"
#include "op_grid.h" /* RMAOP_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- multi-dimensional convolution (PyLops-MPI MPIMDC; src/ops/op_mdc.c) ---------------------------- */

/** Options of a multi-dimensional convolution. Names and defaults follow PyLops-MPI's MPIMDC(G, nt, nv, nfreq,
 *  dt, dr, twosided, conj, prescaled), except that a zero-initialized spec is one-sided (PyLops: twosided=True). */
typedef struct {
  rmaop_dtype dtype;   /**< G's dtype: RMAOP_C64 or RMAOP_C128 (RMAOP_F32 / RMAOP_F64: a real kernel, used as
                            complex); the operator is real, RMAOP_F32 or RMAOP_F64 of the same precision */
  int64_t nf_local;    /**< frequencies of G on this rank: consecutive, in rank order (0 allowed) */
  int64_t ns, nr;      /**< sources and receivers: this rank's G is nf_local x ns x nr, row-major */
  const void *G;       /**< this rank's G, host memory (copied); may be NULL when nf_local is 0 */
  int64_t nt;          /**< time samples of model and data (odd when twosided) */
  int64_t nv;          /**< virtual sources: the last axis of model and data (1 for 2-D arrays) */
  int64_t nfmax;       /**< frequencies kept (PyLops-MPI nfreq); above nt/2 + 1 it means nt/2 + 1, as in PyLops.
                            The nf_local of all ranks must add up to it */
  double dt, dr;       /**< time and receiver sampling; 0 means 1 */
  int twosided;        /**< model and data hold negative and positive times (ifftshift before the FFT) */
  int conj;            /**< convolve with conj(G) (PyLops' Fredholm1.conj()) */
  int prescaled;       /**< G already holds the factor dr dt sqrt(nt) (not applied again) */
} rmaop_mdc_spec;

/**
 * Multi-dimensional convolution (PyLops-MPI MPIMDC): y = F1^H I1^H Fr I F x with, along the time axis, F the
 * real FFT of PyLops (norm "ortho", bins 1 .. (nt-1)/2 weighted by sqrt(2), ifftshift first when twosided), I
 * the first nfmax frequencies, Fr the Fredholm1 of G scaled by dr dt sqrt(nt) (unless prescaled; conj(G) with
 * conj) and F1 the real FFT without the shift; the adjoint is the exact transpose (x = F^H I^H Fr^H I1 F1 y). Model
 * (nt, nr, nv) and data (nt, ns, nv), row-major, are BROADCAST (every rank holds them whole, as in PyLops-MPI)
 * and real. Each application transforms the whole model (or data) on every rank, applies this rank's
 * frequencies of G and allgathers the frequencies (one plan, the Fredholm1's, per application), then transforms
 * back. FFTW on host memory, cuFFT and cuBLAS on device memory. Collective.
 * @return RMAOP_ERR_ARG (on every rank) for a bad dtype, sizes below 1 (nf_local below 0), an even nt with
 *         twosided, a NULL G with frequencies, nf_local that do not add up to nfmax (the message names both),
 *         sizes that overflow, or options that differ between ranks (named); RMAOP_ERR_UNSUPPORTED on host memory
 *         in a build without FFTW.
 */
rmaop_status rmaop_op_create_mdc(rmaop_ctx ctx, const rmaop_mdc_spec *spec, rmaop_op *A);

/* ---- non-stationary convolution (PyLops-MPI MPINonStationaryConvolve1D; src/ops/op_nsconv.c) -------- */

/** Options of a 1-D non-stationary convolution along one axis of an N-D array distributed along that axis. */
typedef struct {
  int ndim;                              /**< 1 .. RMAOP_MAX_DIMS */
  int64_t dims[RMAOP_MAX_DIMS];          /**< global shape (row-major) */
  int axis;                              /**< the convolved and distributed axis; negative counts from the end
                                              (PyLops' default is -1) */
  int64_t local_n;                       /**< extent of `axis` on this rank (0 allowed); -1: balanced split (the
                                              first dims[axis] mod P ranks one more) */
  int64_t nfilts, nh;                    /**< the filter bank: nfilts filters of nh (odd) samples, centred */
  const void *hs;                        /**< nfilts x nh of the dtype, row-major, host memory (copied) */
  const int64_t *ih;                     /**< nfilts increasing, regularly spaced indices in [0, dims[axis]) */
  rmaop_dtype dtype;
  const char *label;                     /**< trace name of its exchange; NULL: "nsconv" */
} rmaop_nsconv_spec;

/**
 * The 1-D non-stationary convolution of PyLops (NonStationaryConvolve1D) distributed as PyLops-MPI's
 * MPINonStationaryConvolve1D: rank r holds the block of the array with its local_n entries of `axis` (the others
 * whole), row-major; model and data are the SCATTER layout of these blocks, in rank order (for axis 0 the global
 * array itself). y[.., k, ..] = sum_i x[.., i, ..] h_i[k - i + nh/2] over |k - i| <= nh/2, where h_i is the filter
 * at i interpolated linearly between its two neighbours in ih (the first or last filter outside them); the adjoint
 * is the exact transpose (x[.., i, ..] = sum_k conj(h_i[k - i + nh/2]) y[.., k, ..]; PyLops does not conjugate,
 * which makes no difference for real filters). Every rank holds the whole (small) filter bank and interpolates on
 * the fly; one plan per application brings the nh/2 neighbouring entries of `axis` on each side (from as many
 * ranks as hold them) and the local loop (host) or kernel (device) computes this rank's outputs. The result is
 * serial PyLops' whatever the split: any local sizes (zero included) and filters anywhere, where PyLops-MPI needs
 * dims[axis] divisible by P and a filter on every rank. Real and complex dtypes. Collective.
 * @return RMAOP_ERR_ARG (on every rank) for a bad ndim, dims, axis or dtype, local sizes that do not add up to
 *         dims[axis], an even nh, nfilts < 1, a NULL hs or ih, ih out of [0, dims[axis]), not increasing or not
 *         regularly spaced, or a shape, filter bank or ih that differs between ranks (named).
 */
rmaop_status rmaop_op_create_nonstationary_convolve1d(rmaop_ctx ctx, const rmaop_nsconv_spec *spec, rmaop_op *A);

#ifdef __cplusplus
}
#endif
#endif /* RMAOP_RMAOP_OP_SIGNAL_H */
