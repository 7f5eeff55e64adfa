# models/, torch-free: the description and the op costs (built with or without LibTorch).
trainsim_add_test(models_describe_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_describe_test.cpp
  LIBS trainsim_model_desc)
trainsim_add_test(models_cost_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_cost_test.cpp
  LIBS trainsim_model_desc)
