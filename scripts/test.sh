#!/usr/bin/env bash
# Builds rmaop and runs every test: the Check unit and MPI tests, the examples and the bench smoke run, and
# the installed-copy check (scripts/check-install.sh, the ctest test "install_check").
#
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         extra arguments go to ctest (-L LABEL, -R REGEX, -E REGEX, ...)
#   BUILD_DIR=build-dbg CMAKE_BUILD_TYPE=Debug scripts/test.sh
#   SANITIZE=1 scripts/test.sh      AddressSanitizer + UBSan, CPU only, in build-sanitize/ (setup.sh)
#
# Installs missing Debian packages first when run as root (else prints the apt-get command and fails).
# Ends with the line "test.sh: N passed, N failed"; exits non-zero when anything failed.
set -euo pipefail

RMAOP_SCRIPT=test.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rmaop_setup_env
rmaop_setup_packages
rmaop_setup_python

if ! rmaop_build; then
  rmaop_log "the build failed"
  echo "test.sh: 0 passed, 1 failed"
  exit 1
fi

# Without a visible GPU the gpu-labelled entries (labels gpu, gpu4) are not run at all: each would start MPI only
# to skip. A -L or -LE of the caller's own decides instead.
ctest_filter=()
case " $* " in
*" -L "* | *" -LE "* | *" --label-regex "* | *" --label-exclude "*) ;;
*)
  if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
    ngpu="$(ctest --test-dir "$BUILD_DIR" -N -L '^gpu4?$' 2>/dev/null | sed -nE 's/^Total Tests: ([0-9]+).*/\1/p')"
    if [ "${ngpu:-0}" -gt 0 ]; then
      rmaop_log "no GPU visible: the $ngpu gpu-labelled tests are not run (on a GPU machine: scripts/gpu-check.sh)"
      ctest_filter=(-LE '^gpu4?$')
    fi
  fi
  ;;
esac

log="$BUILD_DIR/test.sh.log"
rmaop_log "running ctest (log: $log)"
set +e
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j "$JOBS" "${ctest_filter[@]}" "$@" 2>&1 | tee "$log"
ctest_rc="${PIPESTATUS[0]}"
set -e

# ctest's summary: "NN% tests passed, F tests failed out of T". Skipped tests ("Not Run") count as neither.
summary="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)"
if [ -n "$summary" ]; then
  failed="$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$summary")"
  total="$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$summary")"
  skipped="$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$log" || true)"
  passed=$((total - failed - skipped))
  if [ "$skipped" -gt 0 ]; then
    rmaop_log "$skipped test(s) skipped (see the list above)"
  fi
else
  # No summary: ctest found no tests or could not run; count the whole run as one failure.
  passed=0
  failed=1
fi
if [ "$ctest_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1
fi

echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
