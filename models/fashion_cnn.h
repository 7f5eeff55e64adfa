#pragma once
// A small convolutional network for 1x28x28 images (Fashion-MNIST), fast enough to train for
// several epochs on a 2-core CPU (issue 12's large-batch runs on real data). Stages as
// models/describe.h's "fashion-cnn" and "fashion-cnn-gap":
//   block1: conv1 3x3 1->32 (pad 1, no bias), bn1, relu, 2x2 max-pool  -> 32x14x14
//   block2: conv2 3x3 32->64 (pad 1, no bias), bn2, relu, 2x2 max-pool -> 64x7x7
//   head:   fashion-cnn:     flatten, fc 3136 -> classes
//           fashion-cnn-gap: global average pool, fc 64 -> classes (as ResNet-18's head)
// Parameters are registered as conv1, bn1, conv2, bn2, fc (names as the description's).
//
// Why two heads: fc on the flattened map sees |h|^2 of about 3,500 per image at initialisation,
// so the lr the head stands (|g|^2 / g^T H g along its gradient) is 0.006-0.009 there and one
// step at the course's lr 0.1 moves the logits by 17-29: the loss rises to 25-32 in the first
// steps and where training goes from there depends on the seed (docs/LARGE_BATCH.md, "The early
// rise"). Pooled first, |h|^2 is about 40 and that lr 0.15-0.46.

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/staged.h"

namespace trainsim::models {

struct FashionCnnImpl : torch::nn::Module, StagedModel {
  // pooled_head: fashion-cnn-gap's head (global average pool before fc), else fashion-cnn's.
  explicit FashionCnnImpl(int64_t num_classes = 10, bool pooled_head = false);

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
  bool pooled_head = false;
};

}  // namespace trainsim::models
