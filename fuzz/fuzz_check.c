/* Fuzz target: the readers of `rmaop-roofline check` (roofline/check.c over json.c): the run reports it takes
 * with --report (PREFIX.json of `run`: "runs") and the rmaop-bench --json files it takes with --bench and
 * --again ("memory", "paths"). One input is given as both at once (a file may hold both members), as one round
 * and as six (the bootstrap interval needs five), each pooled by the median and by the mean, then printed. Any
 * input is compared or refused with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_file.h"
#include "roofline.h"

#define ROUNDS 6

static roof_check check; /* large (every row holds ROOF_CHECK_MAX_FILES rounds): not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[ROOF_ERR_MAX];
  const char *file = fuzz_input_file(data, size);
  const char *files[ROUNDS];
  for (int k = 0; k < ROUNDS; ++k)
    files[k] = file;
  for (int rounds = 1; rounds <= ROUNDS; rounds += ROUNDS - 1)
    for (int center = ROOF_CENTER_MEDIAN; center <= ROOF_CENTER_MEAN; ++center) {
      err[0] = 0;
      if (roof_check_files(files, rounds, files, rounds, 0.25, (roof_center)center, &check, err, sizeof err) ||
          roof_check_again(&check, files, rounds, err, sizeof err)) {
        if (!err[0]) /* a refusal always says why */
          __builtin_trap();
        return 0; /* the same file gives the same refusal every time */
      }
      roof_check_print(fuzz_sink(), &check);
    }
  return 0;
}
