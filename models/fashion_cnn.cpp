#include "models/fashion_cnn.h"

#include <stdexcept>
#include <utility>

namespace trainsim::models {
namespace {

namespace nn = torch::nn;

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> names = {"block1", "block2", "head"};
  return names;
}

}  // namespace

FashionCnnImpl::FashionCnnImpl(int64_t num_classes, bool pooled_head) : pooled_head(pooled_head) {
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false)));
  bn1 = register_module("bn1", nn::BatchNorm2d(32));
  conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)));
  bn2 = register_module("bn2", nn::BatchNorm2d(64));
  fc = register_module("fc", nn::Linear(pooled_head ? 64 : 64 * 7 * 7, num_classes));
}

size_t FashionCnnImpl::num_stages() const { return stage_names().size(); }

const std::string& FashionCnnImpl::stage_name(size_t i) const { return stage_names().at(i); }

torch::Tensor FashionCnnImpl::forward_stage(size_t i, torch::Tensor x) {
  switch (i) {
    case 0: return torch::max_pool2d(torch::relu(bn1(conv1(x))), 2);
    case 1: return torch::max_pool2d(torch::relu(bn2(conv2(x))), 2);
    case 2: return fc(pooled_head ? x.mean({2, 3}) : x.flatten(1));
    default: throw std::out_of_range("FashionCnn: stage " + std::to_string(i) + " of 3");
  }
}

torch::Tensor FashionCnnImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < num_stages(); ++i) x = forward_stage(i, std::move(x));
  return x;
}

}  // namespace trainsim::models
