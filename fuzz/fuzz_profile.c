/* Fuzz target: the profile reader, roof_profile_read (roofline/profile.c over json.c): what
 * `rmaop-roofline run --profile FILE` and `refit` load. Any input is read or refused with a message; what it
 * accepts then goes through everything `run` does with a profile (fuzz_roofline.h: fixed sites analyzed on
 * its paths, the tables, the verdicts, the JSON, CSV and SVG reports), and is written back (valid JSON) and read
 * again. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_file.h"
#include "fuzz_roofline.h"

static roof_site site(const char *label, const char *kind, const char *path, double messages, double bytes,
                      double calls, double per_call, double calls_add) {
  roof_site s;
  memset(&s, 0, sizeof s);
  snprintf(s.label, sizeof s.label, "%s", label);
  snprintf(s.kind, sizeof s.kind, "%s", kind);
  snprintf(s.path, sizeof s.path, "%s", path);
  s.messages = messages;
  s.bytes_per_message = bytes;
  s.calls = calls;
  s.calls_add = calls_add;
  s.time_total = per_call * calls;
  s.time_inside = 0.8 * s.time_total;
  s.inside_median = 0.7 * per_call;
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[ROOF_ERR_MAX];
  roof_profile prof;
  const char *file = fuzz_input_file(data, size);
  err[0] = 0;
  if (roof_profile_read(file, &prof, err, sizeof err) != 0) {
    if (!err[0]) /* a refusal always says why */
      __builtin_trap();
    return 0;
  }
  /* A solver's sites, as `run --problem` traces them: halos on two paths (one in ADD mode), a big message, a
   * reduction, a device path and a path no profile has. */
  roof_site sites[] = {
      site("halo", "plan", "rma.lock.shm", 2, 8, 20, 1e-6, 0),
      site("halo^H", "plan", "twosided", 2, 8, 20, 2e-6, 20),
      site("big", "plan", "rma.fence.mpi", 1, 64 << 20, 4, 5e-3, 0),
      site("mdot", "reduce", "rma.lock.shm", 1, 40, 30, 0.5e-6, 0),
      site("dev", "plan", "rma.lock.ipc.device", 8, 4096, 10, 20e-6, 5),
      site("none", "epoch", "nowhere", 0, 0, 0, 0, 0),
  };
  roof_run runs[2];
  memset(runs, 0, sizeof runs);
  snprintf(runs[0].solver, sizeof runs[0].solver, "deriv1d n=65536 CGLS");
  snprintf(runs[0].path, sizeof runs[0].path, "rma.lock.shm");
  runs[0].iterations = 10;
  runs[0].time_total = 1e-3;
  runs[0].time_comm = 1e-4;
  runs[0].bytes_per_iter = roof_cgls_bytes(65536, 65536, 8, 0);
  runs[0].footprint = roof_cgls_footprint(65536, 65536, 8, 0);
  runs[0].sites = sites;
  runs[0].nsites = (int)(sizeof sites / sizeof sites[0]);
  snprintf(runs[1].solver, sizeof runs[1].solver, "trace file");
  runs[1].sites = sites + 3; /* a trace file's run: iterations, bytes and path unknown */
  runs[1].nsites = 3;
  fuzz_report(runs, 2, &prof);
  fuzz_free_runs(runs, 2);
  (void)roof_svg_probe(FUZZ_SINK_PATH, &prof, err, sizeof err);
  /* What the reader accepted, the writer (refit) writes as valid JSON, and the reader reads that again. Not
   * required to succeed: numbers are written to 9 digits and byte counts whole, so a hostile file's 0.4-byte
   * message or two uptos 1e-12 apart need not survive. */
  const char *again = fuzz_scratch_file();
  if (roof_profile_write(&prof, again, err, sizeof err) == 0) {
    fuzz_require_json(again, "the profile roof_profile_write wrote");
    roof_profile back;
    if (roof_profile_read(again, &back, err, sizeof err) == 0)
      roof_profile_free(&back);
  }
  roof_profile_free(&prof);
  return 0;
}
