# measure/pytorch/: the PyTorch reference trainer, its profiler and the DDP bucket recorder.
# Python unittest modules in tests/pytorch/, one ctest test each, run by the Python that has
# Debian's PyTorch (/usr/bin/python3; override with -DTRAINSIM_TORCH_PYTHON=...). Registered only
# when that Python imports torch and torchvision.
find_program(TRAINSIM_TORCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH
             DOC "Python 3 with torch and torchvision, for the measure/pytorch tests")
set(_trainsim_torch_ok FALSE)
if(TRAINSIM_TORCH_PYTHON)
  execute_process(
    COMMAND ${TRAINSIM_TORCH_PYTHON} -c "import torch, torchvision; print(torch.__version__)"
    RESULT_VARIABLE _trainsim_torch_rc
    OUTPUT_VARIABLE _trainsim_torch_version
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET
    TIMEOUT 120)
  if(_trainsim_torch_rc EQUAL 0)
    set(_trainsim_torch_ok TRUE)
  endif()
endif()

if(NOT _trainsim_torch_ok)
  message(STATUS "trainsim pytorch tests: no Python with torch and torchvision "
                 "(${TRAINSIM_TORCH_PYTHON}); not registered")
else()
  message(STATUS "trainsim pytorch tests: ${TRAINSIM_TORCH_PYTHON}, torch ${_trainsim_torch_version}")
  # The timeout leaves room for a loaded machine.
  get_filename_component(_trainsim_repo "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  # MODULE:COST, COST about its seconds on a 2-core machine (ctest -j starts the costliest first:
  # tests/CMakeLists.txt).
  foreach(_entry IN ITEMS test_model:3 test_dataset:3 test_runs_csv:1 test_train:75 test_train_errors:22
                          test_train_flags:3 test_profile:125 test_buckets:14 test_export_models:16
                          test_train_model:48 test_plain_ddp:18)
    string(REPLACE ":" ";" _entry "${_entry}")
    list(GET _entry 0 _module)
    list(GET _entry 1 _cost)
    add_test(NAME PyTorch.${_module}
             COMMAND ${TRAINSIM_TORCH_PYTHON} -m unittest -v ${_module}
             WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/pytorch)
    set_tests_properties(PyTorch.${_module} PROPERTIES
      TIMEOUT 300
      COST ${_cost}
      LABELS "pytorch;python"
      ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;TRAINSIM_SOURCE_DIR=${_trainsim_repo}")
  endforeach()
  # torchrun --standalone rendezvous on the fixed port 29400 (PyTorch 1.13): two at once fail to
  # bind it, so the tests that start it take turns (EndToEnd.CpuMeasureRunsCompare too).
  set_tests_properties(PyTorch.test_train PyTorch.test_train_model PyTorch.test_plain_ddp PROPERTIES
    RESOURCE_LOCK torchrun_standalone_port)
endif()
