/* rmaop-roofline: the message roofline of Ding, Haseeb, Groves, Williams, "Evaluating the Performance of
 * One-Sided Communication on CPUs and GPUs" (SC'23 workshops), applied to rmaop's communication paths.
 *
 * This header is the tool's core (library rmaop_roofline_core): fitting, classification, profile and trace
 * files, reports and plots. It needs neither MPI nor rmaop, so the unit tests link it alone. The parts that
 * talk to MPI (probe.c, run.c, main.c) live in the executable.
 *
 * Units everywhere: seconds, bytes, bytes per second. Reports convert to us and GB/s (1e9 B/s) at the edge.
 *
 * Parts (each compiles alone): roof_common.h (sizes, helpers), roof_json.h (JSON reader), roof_fit.h (points,
 * fitted models), roof_profile.h (paths, cache, profile files), roof_cold.h (the cold-cache term),
 * roof_site.h (trace sites and files), roof_analysis.h (sites on the roofline, runs), roof_report.h
 * (reports and plots), roof_check.h (predictions against measurements). */
#ifndef RMAOP_ROOFLINE_H
#define RMAOP_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "roof_common.h"
#include "roof_json.h"
#include "roof_fit.h"
#include "roof_profile.h"
#include "roof_cold.h"
#include "roof_site.h"
#include "roof_analysis.h"
#include "roof_report.h"
#include "roof_check.h"

#endif
