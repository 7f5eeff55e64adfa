# measure/data/: the CIFAR-10 and IDX (Fashion-MNIST) readers (torch-free tests) and augmentation +
# loader (LibTorch).
trainsim_add_test(data_cifar_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_cifar_test.cpp
  LIBS trainsim_image_files)
trainsim_add_test(data_loader_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_loader_test.cpp
  LIBS trainsim_data
  TORCH_PCH)
trainsim_add_test(data_idx_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_idx_test.cpp
  LIBS trainsim_image_files)
