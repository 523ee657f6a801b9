/* rmaop-roofline: the sizes of names, labels and messages, and small helpers shared by the files
 * (medians, the rank point, error messages, byte formatting).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_COMMON_H
#define RMAOP_ROOFLINE_ROOF_COMMON_H

#include <stddef.h>

#define ROOF_NAME_MAX 64
#define ROOF_LABEL_MAX 128
#define ROOF_ERR_MAX 512

/* Small helpers shared by the files. */
double roof_median(const double *v, int n);
/* The point of @p reps repetitions timed on each of @p nranks ranks (rank r's repetition i at t[r * stride + i]):
 * with @p per_rank each rank's median repetition, then the slowest rank's: how rmaop-bench and `run` read a
 * solver's trace site (trace.c's per-call median, MPI_MAX over ranks); else each repetition's slowest rank, then
 * the median repetition (a wall-time span: OSU's way). 0 without repetitions, -1 when out of memory. */
double roof_rank_point(const double *t, int nranks, size_t stride, int reps, int per_rank);
int roof_cmp_double(const void *a, const void *b); /* qsort: ascending doubles */
void roof_set_err(char *err, size_t errlen, const char *fmt, ...);
/* "8 B", "64 KiB", "1 MiB" */
void roof_format_bytes(double b, char *buf, size_t len);

#endif
