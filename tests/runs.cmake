# measure/runs/: DDP through c10d::Reducer (gradients, buckets against PyTorch's), DataParallel as
# nn.DataParallel, the loop body, DistributedSampler split, runs.csv, `measure train`.
find_package(nlohmann_json 3 REQUIRED)  # reads the PyTorch bucket fixture
trainsim_add_test(runs_buckets_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_buckets_test.cpp
  LIBS trainsim_runs nlohmann_json::nlohmann_json
  TORCH_PCH)
trainsim_add_test(runs_ddp_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_ddp_test.cpp
  LIBS trainsim_runs
  TORCH_PCH)
trainsim_add_test(runs_dp_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_dp_test.cpp
  LIBS trainsim_runs
  TORCH_PCH)
trainsim_add_test(runs_sampler_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_sampler_test.cpp
  LIBS trainsim_runs_base)
trainsim_add_test(runs_csv_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_csv_test.cpp
  LIBS trainsim_runs_base trainsim_io)
trainsim_add_test(runs_options_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_options_test.cpp
  LIBS trainsim_runs_base)
# Runs the real `measure` binary (skips while it lacks the `train` subcommand).
trainsim_add_test(runs_cli_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_cli_test.cpp
  LIBS trainsim_runs
  COST 24)
if(TARGET measure)
  add_dependencies(runs_cli_test measure)
endif()
