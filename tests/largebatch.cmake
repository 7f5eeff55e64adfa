# measure/largebatch/ (issue 5): learning-rate schedules, the noise-scale gradient norms
# (micro-batches and DDP) against exact per-example values, the mixture task, the validation
# arithmetic, and `measure baseline` / `measure largebatch-validate` through the binary.
trainsim_add_test(largebatch_lr_schedule_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_lr_schedule_test.cpp
  LIBS trainsim_lr_schedule)
trainsim_add_test(largebatch_noise_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_noise_test.cpp
  LIBS trainsim_largebatch
  TORCH_PCH)
trainsim_add_test(largebatch_validation_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_validation_test.cpp
  LIBS trainsim_largebatch
  TORCH_PCH)
# Runs the real `measure` (and `simulate` when it is built).
trainsim_add_test(largebatch_cli_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_cli_test.cpp
  LIBS trainsim_io
  COST 75)
if(TARGET measure)
  add_dependencies(largebatch_cli_test measure)
endif()
if(TARGET simulate)
  add_dependencies(largebatch_cli_test simulate)
endif()
trainsim_add_test(largebatch_train_lr_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_train_lr_test.cpp
  LIBS trainsim_runs)
trainsim_add_test(largebatch_lars_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_lars_test.cpp
  LIBS trainsim_largebatch
  TORCH_PCH)
trainsim_add_test(largebatch_compare_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_compare_test.cpp
  LIBS trainsim_largebatch_compare trainsim_gnuplot)
trainsim_add_test(largebatch_state_probes_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/largebatch_state_probes_test.cpp
  LIBS trainsim_largebatch
  TORCH_PCH)
