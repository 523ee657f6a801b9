/* Fuzz target: the trace reader, roof_trace_read (roofline/tracefile.c over json.c): the files
 * rmaop_trace_write_json writes and `rmaop-roofline run --trace FILE[,FILE...]` loads. Any input is read or
 * refused with a message. The input is read twice, as two ranks' files of one run are (the second merges into
 * the first: the slowest rank's view), and the sites it gives are analyzed on a fixed two-path profile with
 * every report written (fuzz_roofline.h), as `run --trace` does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "fuzz_roofline.h"

static roof_profile profile;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_make_profile(&profile);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[ROOF_ERR_MAX];
  const char *file = fuzz_input_file(data, size);
  roof_run runs[2];
  memset(runs, 0, sizeof runs);
  err[0] = 0;
  int st = roof_trace_read(file, &runs[0].sites, &runs[0].nsites, err, sizeof err);
  const int first = runs[0].nsites;
  if (!st)
    st = roof_trace_read(file, &runs[0].sites, &runs[0].nsites, err, sizeof err);
  if (st) {
    if (!err[0]) /* a refusal always says why */
      __builtin_trap();
    free(runs[0].sites);
    return 0;
  }
  if (runs[0].nsites != first) { /* the same file again adds no site: every one merges with itself */
    fprintf(stderr, "fuzz_trace: %d sites, %d after reading the same file again\n", first, runs[0].nsites);
    __builtin_trap();
  }
  roof_run *r = &runs[0];
  snprintf(r->solver, sizeof r->solver, "trace fuzz");
  for (int i = 0; i < r->nsites; ++i) /* the run's path: the one all its sites name, if they agree (run.c) */
    snprintf(r->path, sizeof r->path, "%s", i == 0 || !strcmp(r->path, r->sites[i].path) ? r->sites[i].path : "");
  r->iterations = 10; /* --niter given */
  runs[1] = *r;       /* and not given: totals per solve */
  runs[1].iterations = 0;
  runs[1].bytes_per_iter = 0;
  r->bytes_per_iter = roof_cgls_bytes(4096, 4096, 8, 0);
  r->footprint = roof_cgls_footprint(4096, 4096, 8, 0);
  fuzz_report(runs, 2, &profile);
  fuzz_free_runs(runs, 2);
  free(runs[0].sites);
  return 0;
}
