#pragma once
// A small convolutional network for 1x28x28 images (Fashion-MNIST), fast enough to train for
// several epochs on a 2-core CPU (issue 12's large-batch runs on real data). Stages as
// models/describe.h's "fashion-cnn":
//   block1: conv1 3x3 1->32 (pad 1, no bias), bn1, relu, 2x2 max-pool  -> 32x14x14
//   block2: conv2 3x3 32->64 (pad 1, no bias), bn2, relu, 2x2 max-pool -> 64x7x7
//   head:   flatten, fc 3136 -> classes
// Parameters are registered as conv1, bn1, conv2, bn2, fc (names as the description's).

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/staged.h"

namespace trainsim::models {

struct FashionCnnImpl : torch::nn::Module, StagedModel {
  explicit FashionCnnImpl(int64_t num_classes = 10);

  size_t num_stages() const override;
  const std::string& stage_name(size_t i) const override;
  torch::Tensor forward_stage(size_t i, torch::Tensor x) override;
  torch::Tensor forward(torch::Tensor x) override;
  torch::nn::Module& module() override { return *this; }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Linear fc{nullptr};
};

}  // namespace trainsim::models
