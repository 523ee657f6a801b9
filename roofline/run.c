/* rmaop-roofline run: solve a bench problem (bench/problems.c) with CGLS on each path with tracing on, then
 * place every trace site on the message roofline of the profile (classify.c) and report (report.c, svg.c).
 * With --trace the sites come from files written by rmaop_trace_write_json() instead.
 *
 * Timing of a path: one untraced warm-up solve (windows are created and cached on first use), --repeat
 * untraced solves (default 3) for the solver's own times, then --repeat solves traced with synchronized
 * starts (RMAOP_TRACE_SYNCED) whose calls and times add up, so per-call and per-iteration numbers are means
 * over all of them. A site's numbers are the slowest rank's: calls, messages, bytes per message
 * and total time are each reduced with MPI_MAX over the ranks. */
#include "problems.h"
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENTRY_MAX (ROOF_LABEL_MAX + 16)

int roof_split(const char *list, char *buf, size_t len, char **items, int max) {
  int n = 0;
  snprintf(buf, len, "%s", list);
  for (char *p = buf; p && *p && n < max;) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = 0;
    if (*p)
      items[n++] = p;
    p = comma ? comma + 1 : NULL;
  }
  return n;
}

/* ---- which paths ---------------------------------------------------------------------------------------- */

typedef struct {
  char name[ROOF_NAME_MAX];
} path_name;

/* "rma" expands to every sync x transport asked for; a full path name ("rma.pscw.shm", "twosided") is
 * taken as it is. Unknown names are an error that lists the known ones. */
static int expand_paths(const roof_run_options *o, path_name *out, int max) {
  char bb[512], sb[256], tb[256], *bl[ROOF_MAX_PATHS], *sl[8], *tl[8], err[ROOF_ERR_MAX], b[16], s[16], t[16], m[16];
  int nb = roof_split(o->backends, bb, sizeof bb, bl, ROOF_MAX_PATHS), ns = roof_split(o->syncs, sb, sizeof sb, sl, 8);
  int nt = roof_split(o->transports, tb, sizeof tb, tl, 8), n = 0;
  const char *dev = strcmp(o->memory, "device") == 0 ? ".device" : "";
  for (int i = 0; i < nb; ++i) {
    if (strcmp(bl[i], "rma") == 0) {
      for (int x = 0; x < ns; ++x)
        for (int y = 0; y < nt && n < max; ++y)
          snprintf(out[n++].name, ROOF_NAME_MAX, "rma.%s.%s%s", sl[x], tl[y], dev);
      continue;
    }
    if (n < max)
      snprintf(out[n++].name, ROOF_NAME_MAX, "%s%s", bl[i], strstr(bl[i], ".device") ? "" : dev);
  }
  for (int i = 0; i < n; ++i) {
    if (strstr(out[i].name, ".auto"))
      continue; /* resolved from the trace after the run */
    if (roof_path_parse(out[i].name, b, s, t, m, err, sizeof err))
      return roof_msg("rmaop-roofline run: --backends: %s\n", err), -1;
  }
  if (n == 0)
    roof_msg("rmaop-roofline run: --backends names no path\n");
  return n > 0 ? n : -1;
}

/* ---- problem size guard ---------------------------------------------------------------------------------- */

/* bench/problems.c allocates what it is asked for (bdiag and vstack: a dense n x n block per rank); say so
 * before the machine starts swapping or the allocation overflows. */
static int problem_ok(const roof_run_options *o, int size) {
  int known = 0;
  for (int i = 0; bench_problem_names[i]; ++i)
    known |= strcmp(o->problem, bench_problem_names[i]) == 0;
  if (!known) {
    roof_msg("rmaop-roofline run: unknown problem \"%s\" (known: deriv1d, lap2d, bdiag, vstack)\n", o->problem);
    return 0;
  }
  double n = (double)o->n, bytes = strcmp(o->problem, "deriv1d") == 0 ? 80 * n / size
                                   : strcmp(o->problem, "lap2d") == 0 ? 80 * n * n / size
                                                                      : 8 * n * n + 80 * n;
  if (o->n < 8 || o->niter < 1) {
    roof_msg("rmaop-roofline run: --n must be >= 8 and --niter >= 1 (got %lld, %d)\n", (long long)o->n, o->niter);
    return 0;
  }
  if (bytes > 8.0 * 1024 * 1024 * 1024) {
    roof_msg("rmaop-roofline run: problem %s with n %lld needs ~%.1f GiB per rank: too large (limit 8 GiB)\n",
             o->problem, (long long)o->n, bytes / 1073741824.0);
    return 0;
  }
  return 1;
}

/* ---- sites of one traced solve, the slowest rank's view ------------------------------------------------- */

static int find_local(rmaop_ctx ctx, int nlocal, const char *label, const char *kind, rmaop_trace_site *out) {
  for (int i = 0; i < nlocal; ++i)
    if (rmaop_trace_get(ctx, i, out) == RMAOP_OK && strcmp(out->label, label) == 0 && strcmp(out->kind, kind) == 0)
      return 1;
  return 0;
}

/* Rank 0's site list (entry i: kind in the first 16 bytes, then the label), broadcast to every rank. */
static char *site_names(rmaop_ctx ctx, MPI_Comm comm, int rank, int *n) {
  rmaop_trace_site ts;
  if (rmaop_trace_count(ctx, n) != RMAOP_OK)
    *n = 0;
  MPI_Bcast(n, 1, MPI_INT, 0, comm);
  char *names = calloc((size_t)*n + 1, ENTRY_MAX);
  if (!names) { /* a tool may end the job: the other ranks wait in the Bcast below */
    fprintf(stderr, "rmaop-roofline: out of memory gathering %d trace sites\n", *n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 0; rank == 0 && i < *n; ++i)
    if (rmaop_trace_get(ctx, i, &ts) == RMAOP_OK) {
      snprintf(names + (size_t)i * ENTRY_MAX, 16, "%s", ts.kind);
      snprintf(names + (size_t)i * ENTRY_MAX + 16, ENTRY_MAX - 16, "%s", ts.label);
    }
  MPI_Bcast(names, *n * ENTRY_MAX, MPI_CHAR, 0, comm);
  return names;
}

/* Every rank contributes its numbers for rank 0's sites (MPI_MAX): the slowest rank's view. */
enum { NV = 7 }; /* numbers per site: calls, messages, bytes/message, total, inside, median inside, ADD calls */
static int gather_sites(rmaop_ctx ctx, MPI_Comm comm, const char *memory, roof_site **out, int *nout) {
  int rank, n = 0, nlocal = 0;
  MPI_Comm_rank(comm, &rank);
  if (rmaop_trace_count(ctx, &nlocal) != RMAOP_OK)
    nlocal = 0;
  char *names = site_names(ctx, comm, rank, &n);
  double *v = calloc((size_t)n * NV + 1, sizeof *v), *vmax = calloc((size_t)n * NV + 1, sizeof *v);
  roof_site *sites = calloc((size_t)n + 1, sizeof *sites);
  rmaop_trace_site ts;
  if (!v || !vmax || !sites) {
    fprintf(stderr, "rmaop-roofline: out of memory gathering %d trace sites\n", n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 0; i < n; ++i) {
    const char *kind = names + (size_t)i * ENTRY_MAX, *label = kind + 16;
    if (!find_local(ctx, nlocal, label, kind, &ts))
      continue;
    double x[NV] = {(double)ts.calls, (double)ts.messages, ts.bytes_per_message, ts.time_total,
                    ts.time_inside,   ts.time_inside_median, (double)ts.calls_add};
    memcpy(&v[NV * i], x, sizeof x);
    if (rank != 0)
      continue;
    snprintf(sites[i].label, sizeof sites[i].label, "%s", label);
    snprintf(sites[i].kind, sizeof sites[i].kind, "%s", kind);
    roof_trace_path_name(ts.backend, ts.sync, ts.transport, memory, sites[i].path, sizeof sites[i].path);
  }
  MPI_Reduce(v, vmax, n * NV, MPI_DOUBLE, MPI_MAX, 0, comm);
  for (int i = 0; rank == 0 && i < n; ++i) {
    sites[i].calls = vmax[NV * i];
    sites[i].messages = vmax[NV * i + 1];
    sites[i].bytes_per_message = vmax[NV * i + 2];
    sites[i].time_total = vmax[NV * i + 3];
    sites[i].time_inside = vmax[NV * i + 4];
    sites[i].inside_median = vmax[NV * i + 5];
    sites[i].calls_add = vmax[NV * i + 6];
  }
  free(names);
  free(v);
  free(vmax);
  *out = sites;
  *nout = n;
  return 0;
}

/* ---- one path ------------------------------------------------------------------------------------------ */

typedef struct {
  rmaop_ctx ctx;
  bench_problem prob;
  rmaop_vec x;
} solve_state;

static rmaop_status open_path(const char *name, const roof_run_options *o, solve_state *s) {
  char backend[16] = "rma", sync[16] = "lock", transport[16] = "auto", memory[16], err[ROOF_ERR_MAX];
  if (strstr(name, ".auto"))
    sscanf(name, "rma.%15[^.]", sync);
  else
    roof_path_parse(name, backend, sync, transport, memory, err, sizeof err);
  rmaop_status st = roof_path_ctx(backend, sync, transport, o->memory, &s->ctx);
  if (st != RMAOP_OK)
    return st;
  st = bench_problem_create(s->ctx, o->problem, o->n, &s->prob);
  if (st == RMAOP_OK)
    st = rmaop_vec_duplicate(s->prob.x_true, &s->x);
  return st;
}

static void close_path(solve_state *s) {
  if (!s->ctx)
    return;
  rmaop_vec_destroy(&s->x);
  bench_problem_free(&s->prob);
  rmaop_ctx_destroy(&s->ctx);
}

static rmaop_status solve(solve_state *s, int niter, rmaop_solver_info *info) {
  rmaop_solver_options so;
  rmaop_solver_options_init(&so);
  so.niter = niter;
  MPI_Barrier(MPI_COMM_WORLD);
  return rmaop_solve_cgls(s->prob.A, s->prob.b, s->x, &so, info);
}

/* What one rank streams per CGLS iteration on this problem (roof_cgls_bytes) and the distinct bytes it
 * touches (roof_cgls_footprint), from its vectors' local lengths and the operator's own storage
 * (bench_problem.storage_bytes: bdiag's and vstack's dense block; the stencils are matrix-free). The largest
 * rank's. Collective. */
static void problem_bytes(const solve_state *s, roof_run *r) {
  rmaop_vec_info mi, di;
  double b[2] = {0, 0};
  if (rmaop_vec_get_info(s->prob.x_true, &mi) == RMAOP_OK && rmaop_vec_get_info(s->prob.b, &di) == RMAOP_OK) {
    const double elem = (double)rmaop_dtype_size(mi.dtype), op = s->prob.storage_bytes;
    b[0] = roof_cgls_bytes((double)mi.local_n, (double)di.local_n, elem, op);
    b[1] = roof_cgls_footprint((double)mi.local_n, (double)di.local_n, elem, op);
  }
  MPI_Allreduce(MPI_IN_PLACE, b, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  r->bytes_per_iter = b[0];
  r->footprint = b[1];
}

/* A path given with transport "auto" is named after the transport the trace saw. */
static void resolve_auto(roof_run *r) {
  if (!strstr(r->path, ".auto"))
    return;
  for (int i = 0; i < r->nsites; ++i)
    if (strncmp(r->sites[i].path, "rma.", 4) == 0 && !strstr(r->sites[i].path, "self")) {
      snprintf(r->path, sizeof r->path, "%s", r->sites[i].path);
      return;
    }
}

static void save_trace(solve_state *s, const roof_run_options *o, const char *path) {
  char file[4096];
  snprintf(file, sizeof file, "%s-%s.trace.json", o->out, path);
  if (rmaop_trace_write_json(s->ctx, file) != RMAOP_OK)
    roof_msg("rmaop-roofline run: %s\n", rmaop_ctx_last_error(s->ctx));
}

/* --repeat solves, adding up iterations and the slowest rank's total and in-call communication times. */
static rmaop_status timed_solves(solve_state *s, const roof_run_options *o, int *iterations, double t[2]) {
  rmaop_solver_info info;
  rmaop_status st = RMAOP_OK;
  double local[2] = {0, 0};
  *iterations = 0;
  for (int rep = 0; rep < o->repeat && st == RMAOP_OK; ++rep)
    if ((st = solve(s, o->niter, &info)) == RMAOP_OK) {
      *iterations += info.iterations;
      local[0] += info.time_total;
      local[1] += info.time_comm;
      rmaop_solver_info_destroy(&info);
    }
  MPI_Allreduce(local, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return st;
}

/* Collective. Fills @p r on rank 0. Returns 0, or -1 with the reason printed.
 * Two passes after the warm-up: untraced solves give the solver's own times (communication inside rmaop's
 * calls, waits for late peers included), then solves traced with RMAOP_TRACE_SYNCED give each site's
 * messaging time from a synchronized start, which is what the profile's model predicts. */
static int run_path(const char *name, const roof_run_options *o, roof_run *r) {
  solve_state s;
  rmaop_solver_info warm;
  memset(&s, 0, sizeof s);
  rmaop_status st = open_path(name, o, &s);
  if (st == RMAOP_OK && (st = solve(&s, o->niter, &warm)) == RMAOP_OK)
    rmaop_solver_info_destroy(&warm);
  double t[2] = {0, 0}, tsync[2];
  int iterations = 0, synced_iterations = 0;
  if (st == RMAOP_OK)
    st = timed_solves(&s, o, &iterations, t);
  if (st == RMAOP_OK)
    st = rmaop_trace_reset(s.ctx);
  if (st == RMAOP_OK)
    st = rmaop_trace_enable(s.ctx, RMAOP_TRACE_SYNCED);
  if (st == RMAOP_OK)
    st = timed_solves(&s, o, &synced_iterations, tsync);
  if (st != RMAOP_OK) {
    roof_msg("rmaop-roofline run: %s: %s\n", name, rmaop_ctx_last_error(s.ctx));
    close_path(&s);
    return -1;
  }
  rmaop_trace_enable(s.ctx, RMAOP_TRACE_OFF);
  memset(r, 0, sizeof *r);
  snprintf(r->solver, sizeof r->solver, "%s n=%lld CGLS", o->problem, (long long)o->n);
  snprintf(r->path, sizeof r->path, "%.63s", name);
  r->iterations = synced_iterations; /* the sites' calls per iteration come from the traced pass */
  r->time_total = t[0] * synced_iterations / (iterations > 0 ? iterations : 1);
  r->time_comm = t[1] * synced_iterations / (iterations > 0 ? iterations : 1);
  /* device memory: the vectors do not pass the host caches, so the solver evicts nothing there */
  if (strcmp(o->memory, "host") == 0)
    problem_bytes(&s, r);
  gather_sites(s.ctx, MPI_COMM_WORLD, o->memory, &r->sites, &r->nsites);
  resolve_auto(r);
  /* A reduction belongs to the path that ran it, whatever its trace transport says: a device context's
   * reductions run in host windows ("rma.lock.shm.device", a path no probe has), and the probe's reduction
   * points of this path were measured the same way. */
  for (int i = 0; i < r->nsites; ++i)
    if (strcmp(r->sites[i].kind, "reduce") == 0)
      snprintf(r->sites[i].path, sizeof r->sites[i].path, "%s", r->path);
  if (o->save_traces)
    save_trace(&s, o, r->path);
  close_path(&s);
  return 0;
}

/* ---- traces from files -------------------------------------------------------------------------------- */

static int runs_from_traces(const roof_run_options *o, roof_run *runs, int *nruns) {
  for (int k = 0; k < o->ntraces; ++k) {
    char buf[4096], *files[64] = {NULL}, err[ROOF_ERR_MAX];
    int nf = roof_split(o->traces[k], buf, sizeof buf, files, 64);
    if (nf == 0)
      return fprintf(stderr, "rmaop-roofline run: --trace \"%s\" names no file\n", o->traces[k]), -1;
    roof_run *r = &runs[(*nruns)++];
    memset(r, 0, sizeof *r);
    const char *base = strrchr(files[0], '/');
    snprintf(r->solver, sizeof r->solver, "trace %.48s%s", base ? base + 1 : files[0], nf > 1 ? " (+ranks)" : "");
    r->iterations = o->niter;
    for (int i = 0; i < nf; ++i)
      if (roof_trace_read(files[i], &r->sites, &r->nsites, err, sizeof err)) {
        fprintf(stderr, "rmaop-roofline run: %s\n", err);
        return -1;
      }
    if (r->nsites == 0)
      fprintf(stderr, "rmaop-roofline run: %s: no trace sites (was tracing on?)\n", files[0]);
    for (int i = 0; i < r->nsites; ++i) /* the run's path: the one all its sites name, if they agree */
      snprintf(r->path, sizeof r->path, "%s", i == 0 || !strcmp(r->path, r->sites[i].path) ? r->sites[i].path : "");
  }
  return 0;
}

/* ---- analysis and output (rank 0) ----------------------------------------------------------------------- */

static int report(roof_run *runs, int nruns, const roof_profile *prof, const roof_run_options *o) {
  char err[ROOF_ERR_MAX], file[4096];
  int rc = 0;
  for (int k = 0; k < nruns; ++k) {
    roof_run *r = &runs[k];
    r->an = calloc((size_t)r->nsites + 1, sizeof *r->an);
    const double gap = roof_run_gap_bytes(r);
    for (int i = 0; r->an && i < r->nsites; ++i)
      if (roof_analyze_gap(&r->sites[i], prof, r->iterations, r->bytes_per_iter, r->footprint, gap, &r->an[i]))
        rc = 1;
    if (!r->an)
      rc = 1;
  }
  if (rc)
    return fprintf(stderr, "rmaop-roofline run: out of memory\n"), 1;
  roof_report_profile_table(stdout, prof);
  roof_report_table(stdout, runs, nruns, prof);
  snprintf(file, sizeof file, "%s.json", o->out);
  if (roof_report_json(file, runs, nruns, prof, err, sizeof err))
    rc = (fprintf(stderr, "rmaop-roofline: %s\n", err), 1);
  snprintf(file, sizeof file, "%s.csv", o->out);
  if (roof_report_csv(file, runs, nruns, prof, err, sizeof err))
    rc = (fprintf(stderr, "rmaop-roofline: %s\n", err), 1);
  snprintf(file, sizeof file, "%s.svg", o->out);
  if (roof_svg_roofline(file, runs, nruns, prof, err, sizeof err))
    rc = (fprintf(stderr, "rmaop-roofline: %s\n", err), 1);
  if (!rc)
    printf("wrote %s.json, %s.csv, %s.svg\n", o->out, o->out, o->out);
  return rc;
}

static void free_runs(roof_run *runs, int nruns) {
  for (int k = 0; k < nruns; ++k) {
    for (int i = 0; runs[k].an && i < runs[k].nsites; ++i)
      roof_analysis_free(&runs[k].an[i]);
    free(runs[k].an);
    free(runs[k].sites);
  }
}

/* Rank 0 reads the profile; every rank learns whether that worked, so all leave together on failure. */
static int load_profile(const roof_run_options *o, roof_profile *prof, int size) {
  char err[ROOF_ERR_MAX];
  int rank, ok = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  memset(prof, 0, sizeof *prof);
  if (rank == 0 && roof_profile_read(o->profile, prof, err, sizeof err)) {
    fprintf(stderr,
            "rmaop-roofline run: cannot use profile: %s\n(make one with: mpiexec -n %d rmaop-roofline probe "
            "--out %s)\n",
            err, size < 2 ? 2 : size, o->profile); /* the probe needs 2 ranks; a trace file's run may have 1 */
    ok = 0;
  }
  if (rank == 0 && ok && !prof->cache.has && strcmp(prof->memory, "host") == 0)
    printf("note: profile %s has no cold-cache points (made by an older probe, or --cold-reps 0): every site is "
           "predicted warm (cold penalty 0); probe again with this version for the cold term\n",
           o->profile);
  if (rank == 0 && ok && o->problem && prof->ranks != size)
    fprintf(stderr,
            "rmaop-roofline run: warning: the profile was measured at %d ranks, this run uses %d; "
            "reductions and contention scale with the rank count\n",
            prof->ranks, size);
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok ? 0 : -1;
}

int roof_run_command(const roof_run_options *o) {
  int rank, size, rc = 0, nruns = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  path_name paths[ROOF_MAX_PATHS];
  int np = o->problem ? expand_paths(o, paths, ROOF_MAX_PATHS) : 0;
  if (np < 0 || (o->problem && !problem_ok(o, size)))
    return 2; /* same arguments, same verdict on every rank */
  roof_profile prof;
  if (load_profile(o, &prof, size))
    return 1;
  roof_run *runs = calloc((size_t)(np + o->ntraces) + 1, sizeof *runs);
  if (!runs)
    return 1;
  for (int i = 0; i < np; ++i) {
    roof_msg("run %s on %s ...\n", o->problem, paths[i].name);
    if (run_path(paths[i].name, o, &runs[nruns]) == 0)
      ++nruns;
    else
      rc = 1;
  }
  if (rank == 0 && o->ntraces && runs_from_traces(o, runs, &nruns))
    rc = 1;
  if (rank == 0 && nruns > 0 && report(runs, nruns, &prof, o))
    rc = 1;
  if (rank == 0 && nruns == 0)
    rc = (fprintf(stderr, "rmaop-roofline run: nothing to report\n"), 1);
  free_runs(runs, nruns);
  free(runs);
  roof_profile_free(&prof);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}
