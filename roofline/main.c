/* rmaop-roofline: characterize the machine's communication paths and place a solver on the message
 * roofline (Ding, Haseeb, Groves, Williams, "Evaluating the Performance of One-Sided Communication on CPUs
 * and GPUs", SC'23 workshops).
 *
 *   mpiexec -n 2 rmaop-roofline probe [--quick] [--memory host|device] [--paths LIST] [--out profile.json]
 *   mpiexec -n 2 rmaop-roofline run --problem deriv1d --n 65536 --niter 20 [--backends rma,twosided]
 *                                  [--profile profile.json] [--out report]
 *   rmaop-roofline run --trace my-trace.json [--niter K] [--profile profile.json] [--out report]
 *   rmaop-roofline check --report report.json[,...] --bench bench.json[,...] [--again bench.json[,...]]
 *                        [--tolerance 0.25] [--center median|mean]
 *
 * Uses only the public rmaop API; bad input is a message and a non-zero exit (2: usage, 1: failure).
 * rmaop_roofline_main() is the whole tool inside an MPI program that has called MPI_Init (cli.c is the program;
 * librmaop_roofline.so exports it to the Python package, which reads the JSON files the commands write). */
#include "tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  roof_msg("usage:\n"
           "  rmaop-roofline probe [--quick] [--memory host|device] [--paths LIST] [--out FILE]\n"
           "                       [--max-bytes SIZE] [--point-ms MS] [--min-reps N] [--max-reps N] [--cold-reps N]\n"
           "      time one epoch of n messages of m bytes per path; fit T(n,m) = alpha + n*o + n*m/beta;\n"
           "      time the 8 B epoch and a 1-element dot cold (after writing 4x the LLC; --cold-reps 0: not);\n"
           "      write the profile (default profile.json) and a plot of data vs fit (profile.svg)\n"
           "  rmaop-roofline run --problem deriv1d|lap2d|bdiag|vstack --n N --niter K [--backends LIST]\n"
           "                     [--sync fence,pscw,lock] [--transport shm,mpi] [--memory host|device]\n"
           "                     [--profile FILE] [--out PREFIX] [--repeat R] [--no-save-traces]\n"
           "  rmaop-roofline run --trace FILE[,FILE...] [--trace ...] [--niter K] [--profile FILE] [--out PREFIX]\n"
           "      place every trace site on the message roofline; write PREFIX.json, PREFIX.csv, PREFIX.svg\n"
           "  rmaop-roofline check --report FILE[,FILE...] --bench FILE[,FILE...] [--again FILE[,FILE...]]\n"
           "                       [--tolerance 0.25] [--center median|mean]\n"
           "      each path's predicted messaging per iteration (run reports) against rmaop-bench --trace-sync --json\n"
           "      (several files: per path the median, or --center mean, over them, up to 64); --again: bench files\n"
           "      measured a second time in the same rounds, compared with the first: how well the measurement\n"
           "      reproduces here; with 5 or more of each: the error's 90 %% interval from resampling the rounds;\n"
           "      --center mean: pool by the mean (a machine whose speed has two states; default: median)\n"
           "  rmaop-roofline refit [--profile FILE] [--out FILE]\n"
           "      fit a profile's raw medians again (same rules as probe) and rewrite it and its plot\n"
           "paths: rma.{fence,pscw,lock}.{shm,mpi} and twosided (host); rma.*.{ipc,mpi}, twosided, nccl (device)\n"
           "--backends: full path names and/or \"rma\" (= every --sync x --transport), \"twosided\"\n");
}

/* ---- option parsing: --name VALUE or --name=VALUE ------------------------------------------------------ */

typedef struct {
  int argc, i;
  char **argv;
  const char *name, *value;
} args;

/* Next option; returns 0 at the end, -1 on a malformed word. The value (if any) is taken lazily. */
static int next_opt(args *a) {
  if (a->i >= a->argc)
    return 0;
  const char *w = a->argv[a->i++];
  if (strncmp(w, "--", 2) != 0)
    return roof_msg("rmaop-roofline: unexpected argument \"%s\"\n", w), -1;
  static char name[64];
  const char *eq = strchr(w, '=');
  size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
  if (len >= sizeof name)
    return roof_msg("rmaop-roofline: option \"%s\" is too long\n", w), -1;
  memcpy(name, w + 2, len);
  name[len] = 0;
  a->name = name;
  a->value = eq ? eq + 1 : NULL;
  return 1;
}

static const char *value(args *a) {
  if (a->value)
    return a->value;
  if (a->i >= a->argc)
    return roof_msg("rmaop-roofline: --%s needs a value\n", a->name), NULL;
  return a->value = a->argv[a->i++];
}

static int parse_long(args *a, long long lo, long long hi, long long *out) {
  const char *v = value(a);
  char *end;
  if (!v)
    return -1;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    return roof_msg("rmaop-roofline: --%s %s: expected an integer in [%lld, %lld]\n", a->name, v, lo, hi), -1;
  *out = x;
  return 0;
}

/* "64MiB", "1M", "4096", "2GiB" (binary units). */
static int parse_size(args *a, double *out) {
  const char *v = value(a);
  char *end;
  if (!v)
    return -1;
  double x = strtod(v, &end);
  double unit = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' ? 1048576.0 : *end == 'G' ? 1073741824.0 : 1.0;
  if (unit > 1)
    ++end;
  if (unit > 1 && strcmp(end, "iB") == 0)
    end += 2;
  else if (*end == 'B' && end[1] == 0)
    ++end;
  if (end == v || *end || !(x * unit >= 8) || x * unit > 1e12)
    return roof_msg("rmaop-roofline: --%s %s: expected a size of at least 8 bytes (e.g. 64MiB)\n", a->name, v), -1;
  *out = x * unit;
  return 0;
}

static int parse_memory(args *a, const char **out) {
  const char *v = value(a);
  if (!v)
    return -1;
  if (strcmp(v, "host") && strcmp(v, "device"))
    return roof_msg("rmaop-roofline: --memory %s: expected host or device\n", v), -1;
  *out = v;
  return 0;
}

static int unknown(args *a) {
  return roof_msg("rmaop-roofline: unknown option --%s\n", a->name), -1;
}

/* ---- probe -------------------------------------------------------------------------------------------- */

static int probe_option(args *a, roof_probe_options *o) {
  long long x;
  if (!strcmp(a->name, "quick"))
    return o->quick = 1, 0;
  if (!strcmp(a->name, "memory"))
    return parse_memory(a, &o->memory);
  if (!strcmp(a->name, "paths"))
    return (o->paths = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "out"))
    return (o->out = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "max-bytes"))
    return parse_size(a, &o->max_bytes);
  if (!strcmp(a->name, "point-ms"))
    return parse_long(a, 1, 100000, &x) ? -1 : (o->point_ms = (double)x, 0);
  if (!strcmp(a->name, "min-reps"))
    return parse_long(a, 1, 1000000, &x) ? -1 : (o->min_reps = (int)x, 0);
  if (!strcmp(a->name, "max-reps"))
    return parse_long(a, 1, 1000000, &x) ? -1 : (o->max_reps = (int)x, 0);
  if (!strcmp(a->name, "cold-reps"))
    return parse_long(a, 0, 64, &x) ? -1 : (o->cold_reps = (int)x, 0);
  return unknown(a);
}

/* Every requested path must be a known name: a typo is an error, not a silently skipped path. */
static int check_paths(const roof_probe_options *o) {
  char buf[1024], *items[ROOF_MAX_PATHS], err[ROOF_ERR_MAX], b[16], s[16], t[16], m[16];
  if (!o->paths)
    return 0;
  int n = roof_split(o->paths, buf, sizeof buf, items, ROOF_MAX_PATHS);
  if (n == 0)
    return roof_msg("rmaop-roofline probe: --paths is empty\n"), -1;
  for (int i = 0; i < n; ++i)
    if (roof_path_parse(items[i], b, s, t, m, err, sizeof err))
      return roof_msg("rmaop-roofline probe: %s\n", err), -1;
  return 0;
}

static int cmd_probe(args *a) {
  roof_probe_options o = {.out = "profile.json", .memory = "host", .max_bytes = 64.0 * 1024 * 1024, .cold_reps = -1};
  int st;
  while ((st = next_opt(a)) > 0)
    if (probe_option(a, &o))
      return 2;
  if (st < 0 || check_paths(&o))
    return 2;
  if (o.point_ms <= 0)
    o.point_ms = o.quick ? 10 : 30;
  if (o.min_reps <= 0)
    o.min_reps = o.quick ? 5 : 10;
  if (o.max_reps <= 0)
    o.max_reps = o.quick ? 200 : 2000;
  if (o.cold_reps < 0)
    o.cold_reps = o.quick ? 9 : 21;
  if (o.max_reps < o.min_reps)
    return roof_msg("rmaop-roofline probe: --max-reps < --min-reps\n"), 2;
  return roof_probe(&o);
}

/* ---- refit ------------------------------------------------------------------------------------------- */

static int cmd_refit(args *a) {
  const char *in = "profile.json", *out = NULL;
  int st;
  while ((st = next_opt(a)) > 0) {
    if (!strcmp(a->name, "profile")) {
      if (!(in = value(a)))
        return 2;
    } else if (!strcmp(a->name, "out")) {
      if (!(out = value(a)))
        return 2;
    } else {
      return unknown(a), 2;
    }
  }
  return st < 0 ? 2 : roof_refit(in, out ? out : in);
}

/* ---- run ---------------------------------------------------------------------------------------------- */

static int run_option(args *a, roof_run_options *o, int *niter_given) {
  long long x;
  if (!strcmp(a->name, "problem"))
    return (o->problem = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "n"))
    return parse_long(a, 1, (long long)1 << 40, &x) ? -1 : (o->n = x, 0);
  if (!strcmp(a->name, "niter"))
    return parse_long(a, 1, 1000000, &x) ? -1 : (o->niter = (int)x, *niter_given = 1, 0);
  if (!strcmp(a->name, "backends"))
    return (o->backends = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "sync"))
    return (o->syncs = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "transport"))
    return (o->transports = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "memory"))
    return parse_memory(a, &o->memory);
  if (!strcmp(a->name, "profile"))
    return (o->profile = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "out"))
    return (o->out = value(a)) ? 0 : -1;
  if (!strcmp(a->name, "no-save-traces"))
    return o->save_traces = 0, 0;
  if (!strcmp(a->name, "repeat"))
    return parse_long(a, 1, 1000, &x) ? -1 : (o->repeat = (int)x, 0);
  if (!strcmp(a->name, "trace")) {
    if (o->ntraces == ROOF_MAX_TRACES)
      return roof_msg("rmaop-roofline run: at most %d --trace\n", ROOF_MAX_TRACES), -1;
    return (o->traces[o->ntraces++] = value(a)) ? 0 : -1;
  }
  return unknown(a);
}

static int cmd_run(args *a) {
  roof_run_options o = {.n = 65536,
                        .niter = 20,
                        .backends = "rma,twosided",
                        .syncs = "fence,pscw,lock",
                        .transports = "shm,mpi",
                        .memory = "host",
                        .profile = "profile.json",
                        .out = "report",
                        .save_traces = 1,
                        .repeat = 3};
  int st, niter_given = 0;
  while ((st = next_opt(a)) > 0)
    if (run_option(a, &o, &niter_given))
      return 2;
  if (st < 0)
    return 2;
  if (!o.problem == !o.ntraces)
    return roof_msg("rmaop-roofline run: give either --problem NAME or --trace FILE (not both, not neither)\n"), 2;
  if (o.ntraces && !niter_given)
    o.niter = 0; /* unknown: report per solve */
  return roof_run_command(&o);
}

/* ---- check -------------------------------------------------------------------------------------------- */

static int cmd_check(args *a) {
  const char *reports = NULL, *benches = NULL, *again = NULL;
  double tol = 0.25;
  roof_center center = ROOF_CENTER_MEDIAN;
  int st;
  while ((st = next_opt(a)) > 0) {
    if (!strcmp(a->name, "report")) {
      if (!(reports = value(a)))
        return 2;
    } else if (!strcmp(a->name, "bench")) {
      if (!(benches = value(a)))
        return 2;
    } else if (!strcmp(a->name, "again")) {
      if (!(again = value(a)))
        return 2;
    } else if (!strcmp(a->name, "tolerance")) {
      const char *v = value(a);
      char *end;
      if (!v)
        return 2;
      tol = strtod(v, &end);
      if (end == v || *end || !(tol > 0) || tol >= 10)
        return roof_msg("rmaop-roofline check: --tolerance %s: expected a fraction in (0, 10), e.g. 0.25\n", v), 2;
    } else if (!strcmp(a->name, "center")) {
      const char *v = value(a);
      if (!v)
        return 2;
      if (roof_center_parse(v, &center))
        return roof_msg("rmaop-roofline check: --center %s: expected median or mean (how the rounds pool)\n", v), 2;
    } else {
      return unknown(a), 2;
    }
  }
  if (st < 0)
    return 2;
  if (!reports || !benches)
    return roof_msg("rmaop-roofline check: give --report FILE[,FILE...] and --bench FILE[,FILE...]\n"), 2;
  /* file lists of up to ROOF_CHECK_MAX_FILES + 1 names (one more tells a list that is too long) */
  char *rl[ROOF_CHECK_MAX_FILES + 1], *bl[ROOF_CHECK_MAX_FILES + 1], *al[ROOF_CHECK_MAX_FILES + 1], err[ROOF_ERR_MAX];
  const size_t lr = strlen(reports) + 1, lb = strlen(benches) + 1, la = again ? strlen(again) + 1 : 1;
  char *rb = malloc(lr), *bb = malloc(lb), *ab = malloc(la);
  roof_check *c = malloc(sizeof *c);
  int rc = 0;
  if (!rb || !bb || !ab || !c) {
    roof_msg("rmaop-roofline check: out of memory\n");
    rc = 1;
    goto out;
  }
  const int nr = roof_split(reports, rb, lr, rl, ROOF_CHECK_MAX_FILES + 1);
  const int nb = roof_split(benches, bb, lb, bl, ROOF_CHECK_MAX_FILES + 1);
  const int na = again ? roof_split(again, ab, la, al, ROOF_CHECK_MAX_FILES + 1) : 0;
  if (roof_check_files((const char *const *)rl, nr, (const char *const *)bl, nb, tol, center, c, err, sizeof err) ||
      (again && roof_check_again(c, (const char *const *)al, na, err, sizeof err))) {
    roof_msg("rmaop-roofline check: %s\n", err);
    rc = 1;
  } else {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      roof_check_print(stdout, c);
  }
out:
  free(rb);
  free(bb);
  free(ab);
  free(c);
  return rc;
}

int rmaop_roofline_main(int argc, char **argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    fprintf(stderr, "rmaop-roofline: MPI is not initialized (call MPI_Init first)\n");
    return 1;
  }
  args a = {.argc = argc, .argv = argv, .i = 2};
  int rc = 2;
  const char *cmd = argc > 1 ? argv[1] : "";
  if (!strcmp(cmd, "probe"))
    rc = cmd_probe(&a);
  else if (!strcmp(cmd, "check"))
    rc = cmd_check(&a);
  else if (!strcmp(cmd, "run"))
    rc = cmd_run(&a);
  else if (!strcmp(cmd, "refit"))
    rc = cmd_refit(&a);
  else if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
    rc = (usage(), 0);
  else
    roof_msg("rmaop-roofline: %s%s%s\n", *cmd ? "unknown command \"" : "a command is needed", cmd, *cmd ? "\"" : "");
  if (rc == 2)
    usage();
  return rc;
}
