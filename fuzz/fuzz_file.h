/* Helpers of the roofline fuzz targets: the input as a file the readers open by name, and a sink for the
 * reports they print.
 *
 * The readers (roof_profile_read, roof_trace_read, roof_check_files) take a file name, and their file code
 * (json.c's slurp: size cap, NUL bytes) is part of what is fuzzed, so each input goes into one memory-backed
 * file (memfd_create) per process, rewritten per run and opened by name through /proc/self/fd: no disk, no
 * temporary file left behind by a crash. Header-only: each target is one translation unit. */
#ifndef RMAOP_FUZZ_FILE_H
#define RMAOP_FUZZ_FILE_H

/* memfd_create needs _GNU_SOURCE, defined for these targets in CMakeLists.txt (before any header). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memory-backed file's name (/proc/self/fd/N) in @p path, its descriptor in *fd (made on the first call).
 * Aborts (a harness failure, not a finding) when it cannot be made. */
static inline void fuzz_memfd(int *fd, char *path, size_t len) {
  if (*fd >= 0)
    return;
  *fd = memfd_create("rmaop-fuzz", 0);
  if (*fd < 0) {
    perror("fuzz: memfd_create");
    abort();
  }
  snprintf(path, len, "/proc/self/fd/%d", *fd);
}

/* The memory file behind fd (made at first use) emptied; its name in path. */
static inline void fuzz_empty_memfd(int *fd, char *path, size_t len) {
  fuzz_memfd(fd, path, len);
  if (ftruncate(*fd, 0) != 0) {
    perror("fuzz: ftruncate");
    abort();
  }
}

/* The name of a file holding exactly data[0..size). Aborts when it cannot be written. */
static inline const char *fuzz_input_file(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  fuzz_empty_memfd(&fd, path, sizeof path);
  for (size_t done = 0; done < size;) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) {
      perror("fuzz: pwrite");
      abort();
    }
    done += (size_t)n;
  }
  return path;
}

/* The name of a second, empty file for a writer whose output is read back (opening it for writing truncates). */
static inline const char *fuzz_scratch_file(void) {
  static int fd = -1;
  static char path[64];
  fuzz_empty_memfd(&fd, path, sizeof path);
  return path;
}

/* Where the reports go: /dev/null, opened once (the printing code runs, nothing is kept). */
static inline FILE *fuzz_sink(void) {
  static FILE *f;
  if (!f && !(f = fopen("/dev/null", "w"))) {
    perror("fuzz: /dev/null");
    abort();
  }
  return f;
}

/* Report writers that take a file name write here. */
#define FUZZ_SINK_PATH "/dev/null"

#endif
