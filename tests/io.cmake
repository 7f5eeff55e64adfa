# Tests of trainsim_io: sweep config and profile reading, validation and writing.
trainsim_add_test(io_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/io_config_test.cpp LIBS trainsim_io)
trainsim_add_test(io_profile_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/io_profile_test.cpp LIBS trainsim_io)
trainsim_add_test(io_gpu_catalog_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/io_gpu_catalog_test.cpp LIBS trainsim_io)
trainsim_add_test(io_nccl_tests_log_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/io_nccl_tests_log_test.cpp LIBS trainsim_io)
trainsim_add_test(io_atomic_write_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/io_atomic_write_test.cpp LIBS trainsim_atomic_write)
# measure import-trace's reader (measure/trace/), torch-free like these, so built with them.
trainsim_add_test(trace_import_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_import_test.cpp LIBS trainsim_trace_import)
