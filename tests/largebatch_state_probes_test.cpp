// with_recomputed_statistics (measure/largebatch/state_probes.h): during the evaluation BatchNorm
// normalises with the plain average of the probe set's whole micro-batches' statistics; after it the
// running statistics, the counters and the momentum are the run's again.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "largebatch/state_probes.h"
#include "models/staged.h"

namespace trainsim::measure {
namespace {

template <typename Module>
Module* first_of(models::StagedModel& model) {
  for (const auto& m : model.module().modules()) {
    if (auto* found = dynamic_cast<Module*>(m.get())) return found;
  }
  throw std::logic_error("no such module");
}

TEST(RecomputedStatistics, ThePlainAverageOfWholeMicroBatchesThenTheRunsStatisticsAgain) {
  torch::manual_seed(0);
  const auto staged = models::make_model("fashion-cnn-gap");
  models::StagedModel& model = *staged;
  model.module().train();
  EXPECT_EQ(batchnorm_layers(model), 2);
  const std::vector<torch::Tensor> buffers = model.module().buffers();
  auto* conv = first_of<torch::nn::Conv2dImpl>(model);
  auto* bn = first_of<torch::nn::BatchNorm2dImpl>(model);
  {
    torch::NoGradGuard no_grad;
    bn->running_mean.fill_(5.0);  // the run's statistics, far from any batch's
    bn->num_batches_tracked.fill_(7);
  }
  const std::vector<torch::Tensor> before = [&] {
    std::vector<torch::Tensor> copies;
    for (const auto& b : buffers) copies.push_back(b.clone());
    return copies;
  }();
  // 20 images in micro-batches of 8: two whole ones, the last 4 images unused.
  const ProbeSet fixed{torch::randn({20, 1, 28, 28}), torch::zeros({20}, torch::kInt64)};
  torch::Tensor seen_mean, seen_count;
  const double result = with_recomputed_statistics(model, buffers, fixed, 8, [&] {
    seen_mean = bn->running_mean.clone();
    seen_count = bn->num_batches_tracked.clone();
    return 0.25;
  });
  EXPECT_EQ(result, 0.25);
  torch::NoGradGuard no_grad;
  const auto slice_mean = [&](int64_t start) {
    return conv->forward(fixed.images.narrow(0, start, 8)).mean({0, 2, 3});
  };
  const auto expected = (slice_mean(0) + slice_mean(8)) / 2;
  EXPECT_TRUE(torch::allclose(seen_mean, expected, 1e-5, 1e-6)) << seen_mean - expected;
  EXPECT_EQ(seen_count.item<int64_t>(), 2);
  // Put back: every buffer to the bit, the momentum, training mode.
  for (size_t i = 0; i < buffers.size(); ++i) EXPECT_TRUE(torch::equal(buffers[i], before[i])) << i;
  ASSERT_TRUE(bn->options.momentum().has_value());
  EXPECT_DOUBLE_EQ(*bn->options.momentum(), 0.1);
  EXPECT_TRUE(model.module().is_training());
  // Fewer images than one micro-batch: no statistics to take.
  EXPECT_THROW(with_recomputed_statistics(model, buffers, fixed, 32, [] { return 0.0; }), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::measure
