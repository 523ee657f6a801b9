/* rmaop-roofline: reports (tables, verdicts, JSON, CSV) and SVG plots of runs and profiles
 * (report.c, svg.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_REPORT_H
#define RMAOP_ROOFLINE_ROOF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "roof_analysis.h"
#include "roof_profile.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Reports and plots                                                                                     */
/* ---------------------------------------------------------------------------------------------------- */

void roof_report_profile_table(FILE *f, const roof_profile *p);
/* The cold-cache term of the profile (sweep, LLC, the curve), or that it has none. */
void roof_report_cache(FILE *f, const roof_profile *p);
void roof_report_table(FILE *f, const roof_run *runs, int nruns, const roof_profile *prof);
/* One line: which path would serve the solver best and by how much (into @p buf, or printed). */
void roof_verdict(const roof_run *r, const roof_profile *prof, char *buf, size_t len);
void roof_report_verdict(FILE *f, const roof_run *r, const roof_profile *prof);
int roof_report_json(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                     size_t errlen);
int roof_report_csv(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                    size_t errlen);
/* The message roofline: ceilings, fitted roofs, latency diagonals (n = 1, 8, 64) and the sites. */
int roof_svg_roofline(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                      size_t errlen);
/* Probe data against the fit: one panel per path, time per epoch against bytes per message. */
int roof_svg_probe(const char *file, const roof_profile *prof, char *err, size_t errlen);

#endif
