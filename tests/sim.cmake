# Tests of the simulator: event engine, hardware models, training iteration graphs, epochs.
trainsim_add_test(sim_des_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_des_test.cpp LIBS trainsim_des)
trainsim_add_test(sim_hw_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_hw_test.cpp LIBS trainsim_hw)
trainsim_add_test(sim_train_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_train_test.cpp LIBS trainsim_train)
trainsim_add_test(sim_epoch_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_epoch_test.cpp LIBS trainsim_train)
trainsim_add_test(sim_sync_batchnorm_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_sync_batchnorm_test.cpp
                  LIBS trainsim_train)
trainsim_add_test(sim_contention_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_contention_test.cpp
                  LIBS trainsim_train)
trainsim_add_test(sim_pipeline_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_pipeline_test.cpp
                  LIBS trainsim_train)
# sim/fit: devices nobody profiled (roofline, transfer, the fit to a few timings).
trainsim_add_test(fit_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/fit_test.cpp LIBS trainsim_fit)
# The host as a resource: the launch queue and DataParallel's host side.
trainsim_add_test(sim_launch_queue_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_launch_queue_test.cpp
                  LIBS trainsim_train)
# The GIL as a resource: Python threads, the hand-over and the cores.
trainsim_add_test(sim_gil_model_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sim_gil_model_test.cpp
                  LIBS trainsim_train)
