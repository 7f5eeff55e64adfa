# models/: the torch-free description and the LibTorch ResNet-18 it describes.
trainsim_add_test(models_describe_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_describe_test.cpp
  LIBS trainsim_model_desc)
trainsim_add_test(models_resnet_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_resnet_test.cpp
  LIBS trainsim_models)
