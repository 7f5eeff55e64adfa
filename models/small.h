#pragma once
// A small multi-layer perceptron for fast CPU experiments (issue 5's large-batch validation on a
// synthetic Gaussian-mixture task, measure/largebatch): inputs -> hidden layers with ReLU ->
// logits. No hidden layer is softmax regression. No BatchNorm, so a batch's gradient is exactly
// the size-weighted mean of its micro-batches' gradients.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace trainsim::models {

struct SmallMlpImpl : torch::nn::Module {
  // Throws std::invalid_argument unless inputs >= 1, classes >= 2 and every hidden width >= 1.
  // Layers are registered as "fc0", "fc1", ... (the last one produces the logits); PyTorch's
  // default Linear initialisation (from the current torch::manual_seed).
  SmallMlpImpl(int64_t inputs, std::vector<int64_t> hidden, int64_t classes);
  torch::Tensor forward(torch::Tensor x);  // x: [batch, inputs] float32 -> [batch, classes]

  int64_t inputs;
  std::vector<int64_t> hidden;
  int64_t classes;
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(SmallMlp);

}  // namespace trainsim::models
