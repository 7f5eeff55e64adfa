#include "models/small.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::models {

SmallMlpImpl::SmallMlpImpl(int64_t inputs_, std::vector<int64_t> hidden_, int64_t classes_)
    : inputs(inputs_), hidden(std::move(hidden_)), classes(classes_) {
  if (inputs < 1 || classes < 2) {
    throw std::invalid_argument("SmallMlp: need inputs >= 1 and classes >= 2, got " + std::to_string(inputs) +
                                " and " + std::to_string(classes));
  }
  int64_t width = inputs;
  for (int64_t h : hidden) {
    if (h < 1) throw std::invalid_argument("SmallMlp: hidden width " + std::to_string(h) + " is below 1");
    layers.push_back(register_module("fc" + std::to_string(layers.size()), torch::nn::Linear(width, h)));
    width = h;
  }
  layers.push_back(register_module("fc" + std::to_string(layers.size()), torch::nn::Linear(width, classes)));
}

torch::Tensor SmallMlpImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i + 1 < layers.size(); ++i) x = torch::relu(layers[i]->forward(x));
  return layers.back()->forward(x);
}

}  // namespace trainsim::models
