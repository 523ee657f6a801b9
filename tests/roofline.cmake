# rmaop-roofline tests; included from tests/CMakeLists.txt after its MPI launcher set-up (_rmaop_flags)
# and after the top-level CMakeLists.txt has added roofline/ (targets rmaop_roofline_core, rmaop-roofline).
#   unit.roofline           fits, classification, profile/trace JSON, reports, SVG well-formedness (no MPI)
#   roofline.probe.np2      a real quick probe at 2 ranks (a few seconds; n*m capped at 4 MiB)
#   roofline.run.np2        CGLS on deriv1d on every host path, placed on that profile's roofline
#   roofline.trace          the same analysis from a trace file written by rmaop_trace_write_json
#   roofline.bad.*          bad input: a clear message and a non-zero exit, never a crash
#   roofline.bench_repeats  rmaop-bench's JSON: the warm-up it was asked for, every --trace-sync repeat and its start
#   roofline.check_script   scripts/roofline-check.sh end to end, one short round (device twin: label gpu)
#   roofline.pool_script    scripts/roofline-pool.sh: one folder pooled is that folder's check, byte for byte;
#                           a folder named twice, a round without its report, a round on a profile older than
#                           the folder's first round's (left by an earlier check), no folder: refused with the reason
if(NOT TARGET rmaop_roofline_core OR NOT TARGET rmaop-roofline)
  message(WARNING "tests/roofline.cmake: add_subdirectory(roofline) must come before add_subdirectory(tests); "
                  "the roofline tests are not registered")
  return()
endif()

set(_roof_dir ${CMAKE_CURRENT_BINARY_DIR}/roofline)
file(MAKE_DIRECTORY ${_roof_dir})

add_executable(unit_roofline ${CMAKE_CURRENT_LIST_DIR}/unit/test_roofline.c)
target_link_libraries(unit_roofline PRIVATE rmaop_roofline_core PkgConfig::CHECK m)
target_compile_options(unit_roofline PRIVATE ${RMAOP_WARN_FLAGS})
target_compile_definitions(unit_roofline PRIVATE _POSIX_C_SOURCE=200809L)
add_test(NAME unit.roofline COMMAND unit_roofline ${_roof_dir})
set_tests_properties(unit.roofline PROPERTIES LABELS "unit;roofline" TIMEOUT 60)

set(_roof_mpiexec ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_rmaop_flags} ${MPIEXEC_PREFLAGS}
    $<TARGET_FILE:rmaop-roofline> ${MPIEXEC_POSTFLAGS})
set(_roof_mpiexec1 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${_rmaop_flags} ${MPIEXEC_PREFLAGS}
    $<TARGET_FILE:rmaop-roofline> ${MPIEXEC_POSTFLAGS})
set(_roof_env "RMAOP_TIMEOUT=60;RMAOP_TRACE=0;RMAOP_TRACE_FILE=")

add_test(NAME roofline.probe.np2
         COMMAND ${_roof_mpiexec} probe --quick --max-bytes 4MiB --out ${_roof_dir}/profile.json)
set_tests_properties(roofline.probe.np2 PROPERTIES PROCESSORS 2 LABELS "mpi;roofline" TIMEOUT 120
                     ENVIRONMENT "${_roof_env}" FIXTURES_SETUP roofline_profile)

add_test(NAME roofline.run.np2
         COMMAND ${_roof_mpiexec} run --problem deriv1d --n 65536 --niter 20 --profile ${_roof_dir}/profile.json
                 --out ${_roof_dir}/report)
set_tests_properties(roofline.run.np2 PROPERTIES PROCESSORS 2 LABELS "mpi;roofline" TIMEOUT 120
                     ENVIRONMENT "${_roof_env}" FIXTURES_REQUIRED roofline_profile FIXTURES_SETUP roofline_report
                     PASS_REGULAR_EXPRESSION "verdict: deriv1d n=65536 CGLS on twosided")

add_test(NAME roofline.trace
         COMMAND ${_roof_mpiexec1} run --trace ${_roof_dir}/report-rma.lock.shm.trace.json --niter 60
                 --profile ${_roof_dir}/profile.json --out ${_roof_dir}/from-trace)
set_tests_properties(roofline.trace PROPERTIES PROCESSORS 1 LABELS "mpi;roofline" TIMEOUT 60
                     ENVIRONMENT "${_roof_env}" FIXTURES_REQUIRED "roofline_profile;roofline_report")

# Bad input: the command must fail (non-zero exit) AND say why. PASS_REGULAR_EXPRESSION alone would ignore
# the exit status, so a POSIX shell checks both.
file(WRITE ${_roof_dir}/malformed.json "{\"format\": \"rmaop-roofline-profile\", \"version\": 1,,}\n")
function(_roof_bad_input name np expect)
  if(np EQUAL 1)
    set(cmd ${_roof_mpiexec1})
  else()
    set(cmd ${_roof_mpiexec})
  endif()
  string(REPLACE ";" " " cmdline "${cmd};${ARGN}")
  add_test(NAME roofline.bad.${name}
           COMMAND sh -c "out=$(${cmdline} 2>&1); rc=$?; echo \"$out\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q '${expect}'")
  set_tests_properties(roofline.bad.${name} PROPERTIES PROCESSORS ${np} LABELS "mpi;roofline" TIMEOUT 60
                       ENVIRONMENT "${_roof_env}")
endfunction()
_roof_bad_input(problem 2 "unknown problem \"nosuch\"" run --problem nosuch --profile ${_roof_dir}/malformed.json)
_roof_bad_input(path 2 "unknown path \"rma.fence.tcp\"" probe --paths rma.fence.tcp --out ${_roof_dir}/x.json)
_roof_bad_input(backend 2 "unknown path \"rma.warp\"" run --problem deriv1d --backends rma.warp)
_roof_bad_input(profile_missing 2 "cannot open" run --problem deriv1d --profile ${_roof_dir}/no-such-profile.json)
_roof_bad_input(profile_malformed 2 "not valid JSON: line 1, column 51" run --problem deriv1d
                --profile ${_roof_dir}/malformed.json)
_roof_bad_input(trace_malformed 1 "malformed.json\" is not valid JSON" run --trace ${_roof_dir}/malformed.json
                --profile ${_roof_dir}/profile.json)
set_tests_properties(roofline.bad.trace_malformed PROPERTIES FIXTURES_REQUIRED roofline_profile)
_roof_bad_input(option 1 "unknown option --frobnicate" probe --frobnicate)
_roof_bad_input(number 1 "expected an integer" run --problem deriv1d --n lots)
_roof_bad_input(one_rank 1 "needs at least 2 ranks" probe --quick)

# check: the model's predictions (the run's report) against a bench run with --trace-sync on two paths.
# Whether they agree within 25 % is the machine's business (a shared CI VM's phases differ by 2x); the test
# asks that every path the bench measured was compared and counted. --again with the same file: the
# measurement against itself, gap 0 on both paths.
if(TARGET rmaop-bench)
  add_test(NAME roofline.check.bench
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_rmaop_flags} ${MPIEXEC_PREFLAGS}
                   $<TARGET_FILE:rmaop-bench> ${MPIEXEC_POSTFLAGS} --problem deriv1d --n 65536 --niter 10 --repeat 3
                   --warmup-ms 300 --backends rma,twosided --sync lock --transport shm --trace-sync
                   --json ${_roof_dir}/bench.json)
  set_tests_properties(roofline.check.bench PROPERTIES PROCESSORS 2 LABELS "mpi;roofline" TIMEOUT 120
                       ENVIRONMENT "${_roof_env}" FIXTURES_SETUP roofline_bench)
  add_test(NAME roofline.bench_repeats
           COMMAND ${CMAKE_COMMAND} -DFILE=${_roof_dir}/bench.json -DREPEAT=3 -DWARMUP_MS=300
                   -P ${CMAKE_CURRENT_LIST_DIR}/bench_json_repeats.cmake)
  set_tests_properties(roofline.bench_repeats PROPERTIES LABELS "roofline" TIMEOUT 30
                       FIXTURES_REQUIRED roofline_bench)
  add_test(NAME roofline.check
           COMMAND ${_roof_mpiexec1} check --report ${_roof_dir}/report.json --bench ${_roof_dir}/bench.json
                   --again ${_roof_dir}/bench.json)
  set_tests_properties(roofline.check PROPERTIES PROCESSORS 1 LABELS "mpi;roofline" TIMEOUT 60
                       ENVIRONMENT "${_roof_env}" FIXTURES_REQUIRED "roofline_report;roofline_bench"
                       PASS_REGULAR_EXPRESSION "twosided +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9]+% +[a-zA-Z]+ +[0-9.]+ +[+]0%.*measurement against itself: 2 of 2 paths within 25 %.*check: [0-2] of 2 paths within 25 %")
  _roof_bad_input(check_untraced 1 "run rmaop-bench with --trace-sync" check --report ${_roof_dir}/report.json
                  --bench ${_roof_dir}/bench-untraced.json)
  file(WRITE ${_roof_dir}/bench-untraced.json
       "{\"problem\": \"deriv1d\", \"memory\": \"host\", \"paths\": [{\"path\": \"twosided\", \"iterations\": 10}]}\n")
  set_tests_properties(roofline.bad.check_untraced PROPERTIES FIXTURES_REQUIRED roofline_report)
  _roof_bad_input(check_args 1 "give --report FILE" check --bench ${_roof_dir}/bench-untraced.json)
  _roof_bad_input(check_center 1 "center middle: expected median or mean" check --report ${_roof_dir}/report.json
                  --bench ${_roof_dir}/bench.json --center middle)
  _roof_bad_input(check_again_untraced 1 "bench-untraced.json: no path has" check --report ${_roof_dir}/report.json
                  --bench ${_roof_dir}/bench.json --again ${_roof_dir}/bench-untraced.json)
  set_tests_properties(roofline.bad.check_again_untraced PROPERTIES FIXTURES_REQUIRED "roofline_report;roofline_bench")
endif()

# scripts/roofline-check.sh, the script behind the 25 % prediction check, end to end in one short round: it
# must get through probe, run, bench (twice) and check and write both tables; whether the paths land within 25 %
# is the machine's business, so its exit status is not asked. The device twin (label gpu) guards the script on
# device memory, where the probe prints no sharing line: a grep for it under set -e must not end the script.
set(_roof_script_env ROUNDS=1 NITER=10 REPEAT=1 WARMUP_MS=200 DERIV_N=65536 BDIAG_N=128 SYNCS=lock BUILD_DIR=${CMAKE_BINARY_DIR})
set(_roof_script_ok "for p in deriv1d bdiag; do grep -Eq '^check: [0-9]+ of [0-9]+ paths within 25 %' ${_roof_dir}/check-script/check-$p.txt || exit 1; done")
string(REPLACE ";" " " _roof_script_env_sh "${_roof_script_env}")
add_test(NAME roofline.check_script
         COMMAND sh -c "rm -rf ${_roof_dir}/check-script; env ${_roof_script_env_sh} TRANSPORTS=shm bash ${PROJECT_SOURCE_DIR}/scripts/roofline-check.sh ${_roof_dir}/check-script; ${_roof_script_ok}")
set_tests_properties(roofline.check_script PROPERTIES PROCESSORS 2 LABELS "mpi;roofline" TIMEOUT 300
                     ENVIRONMENT "${_roof_env}" FIXTURES_SETUP roofline_check_dir)
set(_roof_pool "env BUILD_DIR=${CMAKE_BINARY_DIR} bash ${PROJECT_SOURCE_DIR}/scripts/roofline-pool.sh")
set(_roof_pool_bad "${_roof_dir}/pool-bad")
add_test(NAME roofline.pool_script
         COMMAND sh -c "d=${_roof_dir}/check-script; rm -rf ${_roof_pool_bad} ${_roof_dir}/pool-*.txt; \
POOL_OUT=${_roof_dir}/pool ${_roof_pool} $d || exit 1; \
for p in deriv1d bdiag; do cmp ${_roof_dir}/pool-$p.txt $d/check-$p.txt || exit 1; done; \
err=$(${_roof_pool} $d $d/ 2>&1) && exit 1; echo \"$err\" | grep -q 'named twice' || exit 1; \
cp -r $d ${_roof_pool_bad} && rm ${_roof_pool_bad}/deriv1d-1.json; \
err=$(${_roof_pool} ${_roof_pool_bad} 2>&1) && exit 1; echo \"$err\" | grep -q 'has no report .*deriv1d-1.json' || exit 1; \
rm -rf ${_roof_pool_bad} && cp -r $d ${_roof_pool_bad} && cp $d/bench-bdiag-1.json ${_roof_pool_bad}/bench-bdiag-2.json && \
sed 's/\"created\": *\"[^\"]*\"/\"created\": \"2000-01-01T00:00:00Z\"/' $d/bdiag-1.json >${_roof_pool_bad}/bdiag-2.json; \
err=$(${_roof_pool} ${_roof_pool_bad} 2>&1) && exit 1; echo \"$err\" | grep -q 'bdiag-2.json rests on a profile created 2000-01-01' || exit 1; \
err=$(${_roof_pool} ${_roof_dir}/no-such-folder 2>&1) && exit 1; echo \"$err\" | grep -q 'is not a folder' || exit 1; \
err=$(CENTER=middle ${_roof_pool} $d 2>&1) && exit 1; echo \"$err\" | grep -q 'CENTER=middle: expected median or mean' || exit 1; \
echo pool_script: ok")
set_tests_properties(roofline.pool_script PROPERTIES LABELS "roofline" TIMEOUT 60
                     FIXTURES_REQUIRED roofline_check_dir RESOURCE_LOCK roofline_check_script)

# Device memory (label gpu): a probe of the default path names, which name no ".device", then `run` on the same
# paths must find each in the profile (a profile that names them without the suffix leaves `run` printing
# "no prediction" on every path). Skips (77) where no GPU is visible, as the other gpu entries do.
if(RMAOP_HAVE_CUDA)
  string(REPLACE ";" " " _roof_sh "${_roof_mpiexec}")
  add_test(NAME roofline.device.np2
           COMMAND sh -c "nvidia-smi -L >/dev/null 2>&1 || exit 77; ${_roof_sh} probe --quick --memory device --paths rma.lock.ipc,twosided --max-bytes 1MiB --out ${_roof_dir}/profile-device.json || exit 1; out=$(${_roof_sh} run --memory device --problem deriv1d --n 65536 --niter 10 --backends rma,twosided --sync lock --transport ipc --profile ${_roof_dir}/profile-device.json --out ${_roof_dir}/report-device 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && echo \"$out\" | grep -q 'verdict' && ! echo \"$out\" | grep -q 'no prediction'")
  set_tests_properties(roofline.device.np2 PROPERTIES PROCESSORS 2 LABELS "gpu;roofline" TIMEOUT 300
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${_roof_env};NCCL_NVLS_ENABLE=0")
  add_test(NAME roofline.check_script.device
           COMMAND sh -c "nvidia-smi -L >/dev/null 2>&1 || exit 77; rm -rf ${_roof_dir}/check-script; env ${_roof_script_env_sh} MEMORY=device BACKENDS=rma,twosided TRANSPORTS=ipc bash ${PROJECT_SOURCE_DIR}/scripts/roofline-check.sh ${_roof_dir}/check-script; ${_roof_script_ok}")
  set_tests_properties(roofline.check_script.device PROPERTIES PROCESSORS 2 LABELS "gpu;roofline" TIMEOUT 300
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${_roof_env};NCCL_NVLS_ENABLE=0"
                       RESOURCE_LOCK roofline_check_script)
  set_tests_properties(roofline.check_script PROPERTIES RESOURCE_LOCK roofline_check_script)
endif()
