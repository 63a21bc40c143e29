# The Python package (python/superkernel, pyproject.toml), tested with the
# project virtual environment that make test makes (scripts/install-python-deps.sh):
# $SK_VENV, default .venv at the repository root, read when the tests run. A
# test whose venv is missing or incomplete exits 77: skipped, never passed.
# (Left out of sanitizer builds, see tests/CMakeLists.txt.)

# One test per tests/python/test_*.py: pytest from the repository root, the
# package from python/, the library from this build.
file(GLOB sk_python_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/python/test_*.py)
foreach(file ${sk_python_tests})
  get_filename_component(stem ${file} NAME_WE)
  add_test(NAME python_${stem}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/run_pytest.sh ${file}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(python_${stem} PROPERTIES
    LABELS python TIMEOUT 600 SKIP_RETURN_CODE 77
    ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;SUPERKERNEL_LIBRARY=$<TARGET_LINKER_FILE:superkernel>;SK_CLI=$<TARGET_FILE:sk>")
endforeach()

# pip install . for real: builds the wheel (CMake's build dir kept in
# build/pip-install-test, so reruns are incremental), installs it outside the
# venv and imports it from outside the repository
# (tests/python/check_pip_install.sh). It compiles with 2 jobs.
add_test(NAME python_pip_install
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/check_pip_install.sh
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/pip-install-test ${PROJECT_VERSION})
set_tests_properties(python_pip_install PROPERTIES
  LABELS "python;install" TIMEOUT 600 SKIP_RETURN_CODE 77 PROCESSORS 2)
