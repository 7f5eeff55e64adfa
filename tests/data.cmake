# measure/data/: the CIFAR-10 reader (torch-free test) and augmentation + loader (LibTorch).
trainsim_add_test(data_cifar_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_cifar_test.cpp
  LIBS trainsim_data)
trainsim_add_test(data_loader_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_loader_test.cpp
  LIBS trainsim_data)
