# measure/runs/: DDP buckets and reducer, DistributedSampler split, runs.csv, `measure train`.
trainsim_add_test(runs_buckets_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_buckets_test.cpp
  LIBS trainsim_runs)
trainsim_add_test(runs_ddp_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_ddp_test.cpp
  LIBS trainsim_runs)
trainsim_add_test(runs_sampler_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_sampler_test.cpp
  LIBS trainsim_runs)
trainsim_add_test(runs_csv_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_csv_test.cpp
  LIBS trainsim_runs)
trainsim_add_test(runs_options_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_options_test.cpp
  LIBS trainsim_runs)
# Runs the real `measure` binary (skips while it lacks the `train` subcommand).
trainsim_add_test(runs_cli_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_cli_test.cpp
  LIBS trainsim_runs)
if(TARGET measure)
  add_dependencies(runs_cli_test measure)
endif()
