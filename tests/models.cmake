# models/, LibTorch: the ResNet-18 and Fashion-MNIST CNN modules against their torch-free description. The description's
# own tests are in models_cost.cmake, registered without LibTorch too.
trainsim_add_test(models_resnet_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_resnet_test.cpp
  LIBS trainsim_models
  TORCH_PCH)
trainsim_add_test(models_fashion_cnn_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models_fashion_cnn_test.cpp
  LIBS trainsim_models
  TORCH_PCH)
