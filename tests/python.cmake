# The Python package's tests: pytest under mpiexec at 1, 2 and 3 ranks (labels python, mpi), on the librmaop.so
# and librmaop_roofline.so of this build and the package sources in python/. RMAOP_TEST_PYTHON is an interpreter
# with numpy, mpi4py, pylops, pylops-mpi and pytest (scripts/test.sh makes the venv build-venv/ from
# python/requirements-test.txt and passes it). The device entry (label gpu) runs the same tests on CuPy arrays.
# Not under the sanitizers: a Python process cannot load an AddressSanitizer library without preloading it.
set(RMAOP_TEST_PYTHON "" CACHE FILEPATH "Python interpreter for the Python package's tests (empty: not run)")
if(NOT RMAOP_TEST_PYTHON)
  message(STATUS "rmaop: the Python package's tests are not registered (RMAOP_TEST_PYTHON is not set; scripts/test.sh sets it)")
  return()
endif()
if(CMAKE_C_FLAGS MATCHES "-fsanitize")
  message(STATUS "rmaop: the Python package's tests are not registered in a sanitizer build")
  return()
endif()
set(_py_env RMAOP_LIBRARY=$<TARGET_FILE:rmaop_shared> RMAOP_ROOFLINE_LIBRARY=$<TARGET_FILE:rmaop_roofline>
    PYTHONPATH=${PROJECT_SOURCE_DIR}/python PYTHONDONTWRITEBYTECODE=1)
foreach(np 1 2 3)
  rmaop_mpiexec(_launch ${np})
  add_test(NAME python.np${np}
           COMMAND ${_launch} ${RMAOP_TEST_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(python.np${np} PROPERTIES LABELS "python;mpi" TIMEOUT 600 ENVIRONMENT "${_py_env}")
endforeach()
if(RMAOP_HAVE_CUDA)
  rmaop_mpiexec(_launch 2)
  add_test(NAME python.gpu.np2
           COMMAND ${_launch} ${RMAOP_TEST_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(python.gpu.np2 PROPERTIES LABELS "python;gpu" TIMEOUT 900
                       ENVIRONMENT "${_py_env};RMAOP_TEST_MEMORY=device")
endif()
