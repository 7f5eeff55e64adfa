// LARS's layer-wise step (measure/largebatch/lars.h) against values computed by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "largebatch/lars.h"

namespace trainsim::measure {
namespace {

TEST(Lars, WeightTensorsTakeTheTrustRatioBiasesKeepTheirGradient) {
  // w = [[3, 4]] (norm 5), g = [[0, 2]] (norm 2); eta 0.1, wd 0.5:
  // trust = 0.1 * 5 / (2 + 0.5 * 5) = 0.5 / 4.5; g' = trust * (g + 0.5 w) = trust * [[1.5, 4]].
  torch::Tensor w = torch::tensor({{3.0, 4.0}}).requires_grad_();
  torch::Tensor b = torch::tensor({1.0, -1.0}).requires_grad_();
  (w * torch::tensor({{0.0, 2.0}})).sum().add((b * torch::tensor({7.0, 8.0})).sum()).backward();
  const std::vector<torch::Tensor> params = {w, b};
  lars_step(params, 0.1, 0.5);
  const double trust = 0.5 / 4.5;
  EXPECT_NEAR(w.grad()[0][0].item<double>(), trust * 1.5, 1e-6);
  EXPECT_NEAR(w.grad()[0][1].item<double>(), trust * 4.0, 1e-6);
  EXPECT_NEAR(b.grad()[0].item<double>(), 7.0, 1e-6);  // 1-d: plain SGD's gradient, untouched
  EXPECT_NEAR(b.grad()[1].item<double>(), 8.0, 1e-6);
}

TEST(Lars, ATensorAtZeroKeepsSgdsStep) {
  torch::Tensor w = torch::zeros({2, 2}).requires_grad_();
  (w * 3.0).sum().backward();
  lars_step({w}, 0.001, 5e-4);
  EXPECT_NEAR(w.grad().sum().item<double>(), 12.0, 1e-6);  // trust 1 and wd * 0 = 0
}

TEST(Lars, TheOptimizerLeavesWeightDecayToTheLarsStepForAdaptedTensors) {
  torch::Tensor w = torch::ones({2, 2}).requires_grad_();
  torch::Tensor b = torch::ones({2}).requires_grad_();
  torch::optim::SGD lars = make_sgd({w, b}, 0.1, 0.9, 5e-4, /*lars=*/true);
  ASSERT_EQ(lars.param_groups().size(), 2u);
  EXPECT_EQ(static_cast<torch::optim::SGDOptions&>(lars.param_groups()[0].options()).weight_decay(), 0.0);
  EXPECT_EQ(static_cast<torch::optim::SGDOptions&>(lars.param_groups()[1].options()).weight_decay(), 5e-4);
  torch::optim::SGD sgd = make_sgd({w, b}, 0.1, 0.9, 5e-4, /*lars=*/false);
  ASSERT_EQ(sgd.param_groups().size(), 1u);
  EXPECT_EQ(static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).weight_decay(), 5e-4);
}

}  // namespace
}  // namespace trainsim::measure
