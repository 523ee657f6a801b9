/**
 * @file op_fft.h
 * @brief Distributed N-D FFTs (PyLops-MPI MPIFFTND and MPIFFT2D, with PyLops FFTND's nffts).
 *
 * Part of <rmaop/rmaop.h>, the header a user includes (its comment states the conventions of every call).
 */
#ifndef RMAOP_RMAOP_OP_FFT_H
#define RMAOP_RMAOP_OP_FFT_H

#include <stdint.h>

#include "types.h"
#include "op_grid.h" /* RMAOP_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

/** Scaling of the FFT operators (PyLops' norm): "none" scales neither the forward nor the adjoint; "1/n"
 *  scales both by 1 / (the product of the nffts). */
typedef enum { RMAOP_FFT_NORM_NONE = 0, RMAOP_FFT_NORM_1_OVER_N } rmaop_fft_norm;

/** Options of an N-D FFT. Zero-initialize and set what you need: the zeros are PyLops' defaults (no padding,
 *  sampling 1, norm "none", complex transforms, no shifts), but ndim, dims, naxes, axes and dtype must be set. */
typedef struct {
  int ndim;                             /**< 2 .. RMAOP_MAX_DIMS */
  int64_t dims[RMAOP_MAX_DIMS];         /**< the model's global shape (C order), every entry >= 1 */
  int naxes;                            /**< 1 .. ndim transformed axes */
  int axes[RMAOP_MAX_DIMS];             /**< the axes, distinct; -1 is the last (numpy's rule) */
  int64_t nffts[RMAOP_MAX_DIMS];        /**< per listed axis, the transform length; 0: dims of the axis.
                                             Longer than the axis pads the model with zeros at its end, shorter
                                             truncates it (numpy.fft.fftn's s) */
  double sampling[RMAOP_MAX_DIMS];      /**< per listed axis, the model's sampling step; 0: 1 */
  rmaop_fft_norm norm;
  int real;                             /**< real transform along the last listed axis (numpy.fft.rfftn) */
  int ifftshift_before[RMAOP_MAX_DIMS]; /**< per listed axis: numpy.fft.ifftshift of the model before the FFT */
  int fftshift_after[RMAOP_MAX_DIMS];   /**< per listed axis: numpy.fft.fftshift of the data after the FFT */
  rmaop_dtype dtype;                    /**< the model's dtype: RMAOP_F32, F64, C64 or C128 */
  const char *label;                    /**< trace name of its redistributions; NULL: "fftnd" */
} rmaop_fft_spec;

/** What an FFT operator is, and this rank's part of it. */
typedef struct {
  int ndim;
  int64_t dims[RMAOP_MAX_DIMS];         /**< the model's global shape */
  int64_t dimsd[RMAOP_MAX_DIMS];        /**< the data's: nffts on the axes, nfft/2 + 1 on the real one */
  int naxes;
  int axes[RMAOP_MAX_DIMS];             /**< non-negative */
  int64_t nffts[RMAOP_MAX_DIMS];
  int64_t nfreqs[RMAOP_MAX_DIMS];       /**< frequencies along listed axis i: dimsd[axes[i]] */
  double df[RMAOP_MAX_DIMS];            /**< their step, 1 / (nffts[i] sampling[i]) */
  int real;                             /**< spec's real */
  int real_model;                       /**< the forward reads the model's real parts and the adjoint returns
                                             real values (real, or a real model dtype) */
  rmaop_dtype model_dtype;              /**< the spec's; the operator's dtype is its complex kind */
  int model_axis, data_axis;            /**< the distributed axis of the model and data vectors (0 and 0) */
  int64_t model_local[RMAOP_MAX_DIMS];  /**< this rank's block of the model: dims with its rows of axis 0 */
  int64_t data_local[RMAOP_MAX_DIMS];   /**< this rank's block of the data: dimsd with its rows of axis 0 */
  int64_t model_offset, data_offset;    /**< the first row (of axis 0) of this rank's blocks */
} rmaop_fft_info;

/**
 * The N-D FFT along the listed axes (PyLops-MPI MPIFFTND; MPIFFT2D is the same with two axes, no separate
 * constructor). Model: the dims array; data: the dimsd array; both C-ordered and split by rows of axis 0 as
 * PyLops-MPI splits them (balanced: the first n mod P ranks one row more), so the vectors equal PyLops-MPI's
 * element for element. Ranks may hold no rows.
 *
 * Forward, in PyLops' order: ifftshift (ifftshift_before axes); the real part when the model is real; the
 * unnormalized FFT, padded or truncated to nffts (real: numpy.fft.rfftn, the last listed axis real-to-complex,
 * and its bins 1 .. (nfft-1)/2 multiplied by sqrt(2)); 1/n (norm); fftshift (fftshift_after axes). The adjoint
 * is the exact adjoint: the same steps reversed (real: the bins divided by sqrt(2), numpy.fft.irfftn), the
 * result cropped or zero-padded back to dims.
 *
 * The operator's dtype is the complex one of the model's (RMAOP_C64 for F32 and C64 models, RMAOP_C128 for F64
 * and C128), and both vectors have it. With a real model (spec->real, or a real model dtype) the operator is
 * linear over the reals only, as in PyLops: the forward uses the real parts of x (imaginary parts ignored) and
 * the adjoint writes real values (zero imaginary parts); Re<A x, y> = <x, A^H y> for real x.
 *
 * Distribution: the axes other than 0 are transformed on the row blocks; when axis 0 is transformed too, the
 * array is redistributed (all-to-all) so that another axis is split and axis 0 is whole, transformed, and
 * redistributed back (with real and axes[naxes-1] == 0: redistributed first, the real transform along axis 0,
 * then back). Host memory uses FFTW, device memory cuFFT on the context's stream.
 *
 * Collective; the spec must be the same on every rank (checked).
 * @return RMAOP_ERR_ARG, on every rank, naming the field: ndim outside [2, RMAOP_MAX_DIMS] (PyLops-MPI's
 *         distributed FFT needs two dimensions), a dimension < 1, naxes outside [1, ndim], an axis out of range
 *         or repeated, an nfft < 0, a sampling that is not finite, an unknown norm or dtype, specs that differ
 *         between ranks; RMAOP_ERR_UNSUPPORTED on a host context of a build without FFTW (named).
 */
rmaop_status rmaop_op_create_fftnd(rmaop_ctx ctx, const rmaop_fft_spec *spec, rmaop_op *A);

/** The shapes, frequencies' steps and this rank's blocks of an FFT operator. Not collective.
 *  @return RMAOP_ERR_ARG when @p A is not an FFT operator or @p info is NULL. */
rmaop_status rmaop_op_fft_get_info(rmaop_op A, rmaop_fft_info *info);

/** The frequencies along listed axis @p i (PyLops' fs[i]: numpy.fft.fftfreq(nfft, sampling), rfftfreq on the real
 *  axis, fftshifted where fftshift_after is set): info.nfreqs[i] values into @p f (host memory). Not collective.
 *  @return RMAOP_ERR_ARG when @p A is not an FFT operator, @p i is outside [0, naxes) or @p f is NULL. */
rmaop_status rmaop_op_fft_get_freqs(rmaop_op A, int i, double *f);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_RMAOP_OP_FFT_H */
