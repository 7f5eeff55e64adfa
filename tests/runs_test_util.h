#pragma once
// Helpers shared by the measure/runs tests (DDP, DataParallel).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

namespace trainsim::measure::runs_test {

// The course's optimizer: SGD, lr 0.1, momentum 0.9, weight decay 5e-4.
inline torch::optim::SGD course_sgd(const std::vector<torch::Tensor>& params) {
  return torch::optim::SGD(params, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4));
}

// The largest |a_i - b_i| over two lists of tensors of the same shapes (any dtypes).
inline double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, (a[i].to(torch::kFloat64) - b[i].to(torch::kFloat64)).abs().max().item<double>());
  }
  return worst;
}

}  // namespace trainsim::measure::runs_test
