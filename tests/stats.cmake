# Tests of trainsim_stats (issue 5): the two-batch gradient-noise estimator, the McCandlish
# relations and the large-batch predictions from a baseline curve.
trainsim_add_test(stats_noise_scale_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/stats_noise_scale_test.cpp
                  LIBS trainsim_stats)
trainsim_add_test(stats_pace_probe_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/stats_pace_probe_test.cpp
                  LIBS trainsim_stats)
trainsim_add_test(stats_large_batch_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/stats_large_batch_test.cpp
                  LIBS trainsim_stats)
# The Q4 and SyncBatchNorm tables, and `simulate` on tests/fixtures/stats/ (build it with them).
trainsim_add_test(stats_q4_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/stats_q4_test.cpp LIBS trainsim_report)
add_dependencies(stats_q4_test simulate)
