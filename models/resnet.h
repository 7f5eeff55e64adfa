#pragma once
// ResNet-18 in LibTorch, CIFAR variant and torchvision layout, as a sequence of profiling
// stages: "stem", "layer1.0", "layer1.1", ..., "layer4.1", "head". Stage names and parameter
// names match models/describe.h exactly.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "models/staged.h"

namespace trainsim::models {

// The device argument of torch::nn::Module::clone (c10::optional<Device> in LibTorch 1.x,
// std::optional<Device> in 2.x), taken from the signature so the override compiles with both.
template <typename MemberFunction>
struct CloneArgument;
template <typename R, typename C, typename A>
struct CloneArgument<R (C::*)(A) const> {
  using type = std::decay_t<A>;
};
using CloneDevice = CloneArgument<decltype(&torch::nn::Module::clone)>::type;

struct ResNet18Impl : torch::nn::Cloneable<ResNet18Impl>, StagedModel {
  explicit ResNet18Impl(std::string variant = "resnet18-cifar", int64_t num_classes = 10);
  void reset() override;  // (re)builds the stages; required by Cloneable (DataParallel's replicas)
  torch::Tensor forward(torch::Tensor x) override;
  // Cloneable::clone, then `stages` relinked to the copy's blocks (clone replaces the modules
  // inside layer1..layer4, so the stage list built by reset() would point at stale blocks).
  std::shared_ptr<torch::nn::Module> clone(const CloneDevice& device = CloneDevice()) const override;

  // Stages in forward order; forward_stage chains to the full forward. stage_module(i) of a
  // block is the block itself (parameter names relative to "layerX.Y."); of the stem and head it
  // is a wrapper whose parameter names are the full model's ("conv1.weight", "linear.bias").
  size_t num_stages() const override;
  const std::string& stage_name(size_t i) const override;
  torch::Tensor forward_stage(size_t i, torch::Tensor x) override;
  torch::nn::Module& module() override { return *this; }
  torch::nn::Module& stage_module(size_t i);

  std::string variant;
  int64_t num_classes;
  std::vector<std::string> names;
  std::vector<torch::nn::AnyModule> stages;
};
TORCH_MODULE(ResNet18);

}  // namespace trainsim::models
