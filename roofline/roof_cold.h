/* rmaop-roofline: the cold-cache term: the share of a path's cold penalty a site pays, CGLS's bytes and
 * footprint, and the warm and cold reduction times (classify.c, fit.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_COLD_H
#define RMAOP_ROOFLINE_ROOF_COLD_H

#include "roof_profile.h"

/* ---- the cold-cache term ---- */

/* Fraction (0..1) of a path's full cold penalty that a site with reuse distance @p reuse_bytes pays: the
 * curve's penalty at that distance over its penalty at the full sweep, interpolated linearly in log(bytes)
 * between measured sweeps, made nondecreasing (each point is the smallest at or above its size, so a noisy
 * spike at a small sweep does not count), 1 beyond the full sweep, the first point's below the first sweep.
 * Without a usable curve (none, or a full penalty below ROOF_COLD_MIN_REL x warm) a step: 1 beyond the
 * LLC (sweep_bytes / 4 when unknown), else 0. 0 when the profile has no cold term or reuse is unknown (<= 0). */
double roof_cold_fraction(const roof_cache *c, double reuse_bytes);
/* The fraction a site of @p kind pays on path @p p: a reduction ("reduce") on a path with its own reduction
 * curve reads that curve (same rules: nondecreasing, log-linear, 1 at and beyond the full sweep; the first
 * point's fraction below the first sweep); when that curve shows no penalty above the noise (a full penalty
 * below ROOF_COLD_MIN_REL x warm), and for every other site, roof_cold_fraction of the profile's epoch curve.
 * 0 when the profile has no cold term or reuse is unknown. Host memory only (roof_analyze decides device). */
double roof_path_cold_fraction(const roof_cache *c, const roof_path *p, const char *kind, double reuse_bytes);
/* A reduction's fraction on path @p p from its same-bytes curve (cold.scurve: the dot after re-writing the same
 * bytes before every repetition), same rules; roof_path_cold_fraction(c, p, "reduce", ...) where the profile has
 * none or it is not usable. What `run` prices reduction sites with: in steady state a solver touches between two
 * reductions the data it touched in its previous iteration, not bytes last touched a whole scratch ago; over seven
 * stored VM checks that recorded the curve it puts bdiag within 25 % on 44 of 49 (path, check) pairs against 39
 * with the fresh-bytes curve, deriv1d on 47 against 45. */
double roof_path_same_fraction(const roof_cache *c, const roof_path *p, double reuse_bytes);
/* Bytes one rank streams per CGLS iteration (src/solvers/solver.c, rmaop_solve_cgls): every vector an operation
 * reads or writes counts once: 8 passes over model-space vectors (local length @p model_local), 6 over
 * data-space vectors (@p data_local), of @p elem bytes each, plus @p op_bytes (the operator's own storage,
 * e.g. a dense block) read by one apply and one adjoint. */
double roof_cgls_bytes(double model_local, double data_local, double elem, double op_bytes);
/* Distinct bytes CGLS touches per rank and iteration: its 3 model-space (x, r, c) and 2 data-space (s, q)
 * vectors and the operator's storage. A reuse distance never exceeds it (what is touched twice is cached once). */
double roof_cgls_footprint(double model_local, double data_local, double elem, double op_bytes);
/* Warm time of one reduction of @p bytes on path @p p: between two of the probe's reduction points
 * (counts 1, 8, 64, ... doubles) their medians interpolated linearly in bytes, at a point its median, outside
 * them (or with fewer than two) the fit (roof_reduce_time). The fit is a line over 8 B .. 32 KiB weighted by
 * relative error; at the 8-40 B a solver's dots reduce it missed the measured medians by ~5-10 % (2-vCPU VM,
 * 36 rounds: rma.lock.mpi's fit 0.457 us at 40 B against points of 0.420 and 0.421 us at 8 and 64 B). */
double roof_path_reduce_time(const roof_path *p, double bytes);
/* Cold penalty per call of a site of @p kind ("reduce": the reduction's, else the epoch's; a path without
 * a reduction point uses the epoch's) on path @p p; 0 when not measured. On device memory the reduction's is
 * a shift, not a penalty: the measured reduction after a device dot (ROOF_DOT_BYTES) minus the warm reduction
 * at that size (roof_path_reduce_time), so a reduction site is predicted as that measured point carried to its
 * own size by the reduction points' slope; negative where the warm curve lies above it. */
#define ROOF_DOT_BYTES 24.0 /* the probe's one-element dot reduces 3 doubles: real, imaginary part, flag */
double roof_cold_penalty(const roof_path *p, const char *kind);

#endif
