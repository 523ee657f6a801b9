#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (the whole library instrumented: libFuzzer coverage,
# AddressSanitizer, UndefinedBehaviorSanitizer) in build-fuzz/, replays every regression input of
# fuzz/regressions/<target>/, then fuzzes each target for FUZZ_SECONDS on a copy of its seed corpus
# (fuzz/corpus/<target>/ plus the regressions). fuzz/README.md says what each target covers.
#
#   scripts/fuzz.sh                      every target: profile trace check spec
#   scripts/fuzz.sh spec                 the named targets only
#   FUZZ_SECONDS=600 scripts/fuzz.sh profile
#
# Variables: FUZZ_SECONDS (60 per target), FUZZ_BUILD_DIR (build-fuzz), FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (10 s
# per input), JOBS (nproc). Needs clang with its sanitizer and libFuzzer runtimes (Debian: clang
# libclang-rt-dev), besides the CPU build's packages (scripts/setup.sh). The working corpora and anything
# found go to FUZZ_BUILD_DIR/work/<target>/ (inputs found: found/); the seed corpus in the tree is not changed.
# Exits non-zero when a regression input or the fuzzing finds a crash, a leak, undefined behaviour, an
# out-of-memory or a timeout, printing the input's path and the command that reproduces it. A timeout that does
# not reproduce when the input is run again (a stall of the machine) is reported, and the fuzzing goes on.
set -euo pipefail

RMAOP_SCRIPT=fuzz.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rmaop_setup_env
rmaop_setup_packages

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_RSS_MB="${FUZZ_RSS_MB:-2048}"
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-10}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
case "$FUZZ_BUILD_DIR" in
/*) ;;
*) FUZZ_BUILD_DIR="$RMAOP_ROOT/$FUZZ_BUILD_DIR" ;;
esac
all_targets=(profile trace check spec)
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=("${all_targets[@]}")
fi
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
  *" $t "*) ;;
  *) rmaop_die "unknown target '$t' (targets: ${all_targets[*]})" ;;
  esac
done
start=$SECONDS

# ---- clang with the sanitizer and libFuzzer runtimes ----------------------------------------------------------
command -v clang >/dev/null 2>&1 ||
  rmaop_die "clang not found (Debian: apt-get install clang libclang-rt-dev)"
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }' >"$probe_dir/probe.c"
clang -fsanitize=fuzzer,address,undefined "$probe_dir/probe.c" -o "$probe_dir/probe" >"$probe_dir/log" 2>&1 ||
  rmaop_die "clang cannot link a libFuzzer program (its runtimes are missing; Debian: apt-get install" \
    "libclang-rt-dev): $(tail -n 3 "$probe_dir/log")"

# ---- build --------------------------------------------------------------------------------------------------
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
rmaop_log "configuring in $FUZZ_BUILD_DIR (clang, $flags)"
cmake -S "$RMAOP_ROOT" -B "$FUZZ_BUILD_DIR" -DCMAKE_C_COMPILER="$(command -v clang)" -DCMAKE_BUILD_TYPE=Debug \
  -DRMAOP_WITH_CUDA=OFF -DRMAOP_WITH_NCCL=OFF -DRMAOP_BUILD_TESTS=OFF -DRMAOP_BUILD_FUZZERS=ON \
  -DCMAKE_C_FLAGS="$flags" >"$probe_dir/configure.log" 2>&1 ||
  {
    cat "$probe_dir/configure.log" >&2
    rmaop_die "configuring $FUZZ_BUILD_DIR failed"
  }
rmaop_log "building ${targets[*]/#/fuzz_} with $JOBS jobs"
cmake --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target "${targets[@]/#/fuzz_}" || rmaop_die "the build failed"
rmaop_log "built in $((SECONDS - start)) s"

# ---- running ------------------------------------------------------------------------------------------------
# Leaks are found per input (libFuzzer runs an input again under LeakSanitizer when its mallocs and frees do not
# match); not at exit, where the MPI library of fuzz_spec leaves its own allocations behind.
# The caller's own ASAN_OPTIONS / UBSAN_OPTIONS come after these, so they win.
export ASAN_OPTIONS="detect_leaks=1:leak_check_at_exit=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
common=(-rss_limit_mb="$FUZZ_RSS_MB" -timeout="$FUZZ_TIMEOUT")
failed=0
summary=()

# The command that reproduces input $2 of target $1 (printed on a failure).
reproducer() {
  printf 'ASAN_OPTIONS=%s UBSAN_OPTIONS=%s %s %s %s' "$ASAN_OPTIONS" "$UBSAN_OPTIONS" \
    "$FUZZ_BUILD_DIR/fuzz/fuzz_$1" "${common[*]}" "$2"
}

# Runs target $1 on the single input $2 (log to $3); its exit status.
run_one() {
  "$FUZZ_BUILD_DIR/fuzz/fuzz_$1" "${common[@]}" "$2" >"$3" 2>&1
}

report_finding() { # target, input, log, what
  failed=$((failed + 1))
  rmaop_log "FAILED: $1: $4: $2"
  grep -E 'ERROR: |runtime error|SUMMARY: |^fuzz_[a-z]+: ' "$3" | head -n 5 >&2 || true
  rmaop_log "  full log: $3"
  rmaop_log "  reproduce: $(reproducer "$1" "$2")"
}

for t in "${targets[@]}"; do
  work="$FUZZ_BUILD_DIR/work/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/replay"
  cp "$RMAOP_ROOT/fuzz/corpus/$t/"* "$work/corpus/" 2>/dev/null || true

  # 1. Every regression input, one at a time: a finding names the file in the tree.
  nreg=0
  for input in "$RMAOP_ROOT/fuzz/regressions/$t/"*; do
    [ -f "$input" ] || continue
    nreg=$((nreg + 1))
    log="$work/replay/$(basename "$input").log"
    if run_one "$t" "$input" "$log"; then
      cp "$input" "$work/corpus/regression-$(basename "$input")"
    else
      report_finding "$t" "$input" "$log" "regression input fails again"
    fi
  done
  rmaop_log "$t: $nreg regression input(s) replayed"

  # 2. Fuzzing for FUZZ_SECONDS. libFuzzer ends at the first finding; after a timeout that does not come back when
  # run again (this machine's clock jumps when its VM is paused, and libFuzzer measures wall time) it goes on for
  # the time left.
  dict=()
  [ -f "$RMAOP_ROOT/fuzz/dict/$t.dict" ] && dict=(-dict="$RMAOP_ROOT/fuzz/dict/$t.dict")
  fuzz_start=$SECONDS
  left=$FUZZ_SECONDS
  execs=0
  found=0
  part=0
  cov=""
  while :; do
    part=$((part + 1))
    log="$work/fuzz.$part.log"
    rmaop_log "$t: fuzzing for $left s (log: $log)"
    rm -rf "$work/artifacts"
    mkdir -p "$work/artifacts"
    set +e
    (cd "$work" && "$FUZZ_BUILD_DIR/fuzz/fuzz_$t" "${common[@]}" "${dict[@]}" -max_total_time="$left" \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus") >"$log" 2>&1
    rc=$?
    set -e
    n="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)"
    execs=$((execs + ${n:-0}))
    c="$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1 || true)"
    cov="${c:-$cov}"
    stalled=0
    for artifact in "$work/artifacts/"*; do
      [ -f "$artifact" ] || continue
      kind="$(basename "$artifact" | cut -d- -f1)"
      keep="$work/found/$(basename "$artifact")"
      mkdir -p "$work/found"
      cp "$artifact" "$keep"
      if [ "$kind" = timeout ] && run_one "$t" "$keep" "$keep.replay.log"; then
        rmaop_log "$t: a timeout did not come back when run again (the machine stalled): $keep"
        stalled=1
        continue
      fi
      found=$((found + 1))
      report_finding "$t" "$keep" "$log" "$kind"
      rmaop_log "  once fixed, keep it: cp $keep fuzz/regressions/$t/<what-it-tests>"
    done
    # A non-zero exit with no input written is a failure of its own.
    if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ] && [ "$stalled" -eq 0 ]; then
      failed=$((failed + 1))
      rmaop_log "FAILED: $t: libFuzzer exited with $rc and wrote no input (log: $log)"
      tail -n 5 "$log" >&2
    fi
    left=$((FUZZ_SECONDS - (SECONDS - fuzz_start)))
    if [ "$stalled" -eq 0 ] || [ "$found" -gt 0 ] || [ "$left" -lt 5 ] || [ "$part" -ge 5 ]; then
      break
    fi
  done
  elapsed=$((SECONDS - fuzz_start))
  rate=$((execs / (elapsed > 0 ? elapsed : 1)))
  summary+=("$(printf '%-8s %8d runs  %6d exec/s  %s  findings %d' "$t" "$execs" "$rate" "${cov:-cov: ?}" "$found")")
done

rmaop_log "summary (${FUZZ_SECONDS} s per target, $((SECONDS - start)) s in all):"
for line in "${summary[@]}"; do
  printf 'fuzz.sh:   %s\n' "$line"
done
if [ "$failed" -gt 0 ]; then
  echo "fuzz.sh: $failed finding(s)"
  exit 1
fi
echo "fuzz.sh: no findings"
