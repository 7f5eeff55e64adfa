#pragma once
// ResNet-18 in LibTorch, CIFAR variant and torchvision layout, as a sequence of profiling
// stages: "stem", "layer1.0", "layer1.1", ..., "layer4.1", "head". Stage names and parameter
// names match models/describe.h exactly.

#include <torch/torch.h>

#include <string>
#include <vector>

namespace trainsim::models {

struct ResNet18Impl : torch::nn::Cloneable<ResNet18Impl> {
  explicit ResNet18Impl(std::string variant = "resnet18-cifar", int64_t num_classes = 10);
  void reset() override;  // (re)builds the stages; required by Cloneable / data_parallel
  torch::Tensor forward(torch::Tensor x);

  // Stages in forward order; stage(i)(x) chains to the full forward.
  size_t num_stages() const;
  const std::string& stage_name(size_t i) const;
  torch::Tensor forward_stage(size_t i, torch::Tensor x);
  torch::nn::Module& stage_module(size_t i);

  std::string variant;
  int64_t num_classes;
  std::vector<std::string> names;
  std::vector<torch::nn::AnyModule> stages;
};
TORCH_MODULE(ResNet18);

}  // namespace trainsim::models
