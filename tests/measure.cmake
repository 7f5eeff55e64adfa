# measure/: the rank launcher, machine names, the measurement plan,
# recording timings, loader points, the page-fault probe, the pytorch section's JSON; then through the measure binary: Gloo collectives with several rank
# processes and an end-to-end CPU profile with --resume.
trainsim_add_test(measure_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/measure_launch_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/measure_machine_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/measure_plan_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/measure_loader_point_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/measure_page_faults_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/measure_pytorch_profile_test.cpp
  LIBS trainsim_measure_base)
trainsim_add_test(measure_compute_record_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/measure_compute_record_test.cpp
  LIBS trainsim_measure_profile
  TORCH_PCH)

trainsim_add_test(measure_collectives_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/measure_collectives_test.cpp
  LIBS trainsim_measure_profile
  TORCH_PCH)
add_dependencies(measure_collectives_test measure)

trainsim_add_test(measure_end_to_end_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/measure_end_to_end_test.cpp
  LIBS trainsim_io
  COST 37)
add_dependencies(measure_end_to_end_test measure)
if(TARGET simulate)  # the test also runs simulate on the profile when it is built
  add_dependencies(measure_end_to_end_test simulate)
endif()

# measure torchscript: a TorchScript module written by Debian's PyTorch during the test (skipped
# without it), profiled, added to a profile and simulated.
trainsim_add_test(measure_torchscript_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/measure_torchscript_test.cpp
  LIBS trainsim_torchscript trainsim_io
  COST 30
  TORCH_PCH)
target_compile_definitions(measure_torchscript_test PRIVATE
  TRAINSIM_TORCH_PYTHON="$<IF:$<BOOL:${_trainsim_torch_ok}>,${TRAINSIM_TORCH_PYTHON},>")
add_dependencies(measure_torchscript_test measure)
if(TARGET simulate)
  add_dependencies(measure_torchscript_test simulate)
endif()
