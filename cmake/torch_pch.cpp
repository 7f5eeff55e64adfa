// The target that builds the precompiled <torch/torch.h> the LibTorch sources reuse
// (trainsim_torch_pch in CMakeLists.txt); it needs one source of its own.
