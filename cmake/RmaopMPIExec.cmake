# How rmaop's tests, examples and benches start MPI jobs, decided once for the whole build.
# Open MPI refuses more ranks than cores without --oversubscribe and refuses root without
# --allow-run-as-root; other launchers (MPICH's hydra) need neither. -DRMAOP_MPIEXEC_FLAGS="..." overrides.
set(RMAOP_MPIEXEC_FLAGS "" CACHE STRING "Extra flags for mpiexec in tests, examples and benches (default: detected)")
if(RMAOP_MPIEXEC_FLAGS STREQUAL "")
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _rmaop_version ERROR_VARIABLE _rmaop_version
                  RESULT_VARIABLE _rmaop_rc)
  set(RMAOP_MPIEXEC_EXTRA "")
  if(_rmaop_version MATCHES "Open MPI|OpenRTE|open-mpi")
    list(APPEND RMAOP_MPIEXEC_EXTRA --oversubscribe)
    # Open MPI 4's launcher (OpenRTE) waits odls_base_sigkill_timeout (1 s) twice before it reaps a job one of
    # whose ranks exited non-zero: 2.4 s for every bad-input test instead of 0.4. Nothing here needs the grace.
    if(_rmaop_version MATCHES "OpenRTE")
      list(APPEND RMAOP_MPIEXEC_EXTRA --mca odls_base_sigkill_timeout 0)
    endif()
    execute_process(COMMAND id -u OUTPUT_VARIABLE _rmaop_uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rmaop_uid STREQUAL "0")
      list(APPEND RMAOP_MPIEXEC_EXTRA --allow-run-as-root)
    endif()
  endif()
else()
  separate_arguments(RMAOP_MPIEXEC_EXTRA UNIX_COMMAND "${RMAOP_MPIEXEC_FLAGS}")
endif()
message(STATUS "rmaop: MPI jobs start as ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} N ${RMAOP_MPIEXEC_EXTRA}")

# rmaop_mpiexec(<var> <np>): the command prefix that starts <np> ranks (the program and its arguments follow).
function(rmaop_mpiexec var np)
  set(${var} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${RMAOP_MPIEXEC_EXTRA} ${MPIEXEC_PREFLAGS} PARENT_SCOPE)
endfunction()
