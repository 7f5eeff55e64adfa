// DataParallel as PyTorch's nn.DataParallel (measure/runs/data_parallel.h), on CPU "devices": the
// mechanism (replicate, scatter, one thread per replica, gather, gradients summed onto the module)
// is device-agnostic, so its arithmetic is checked here against the same model run chunk by chunk.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <vector>

#include "autocast.h"
#include "models/describe.h"
#include "models/resnet.h"
#include "runs/data_parallel.h"
#include "runs/train_step.h"
#include "runs_test_util.h"

namespace trainsim::measure {
namespace {

using runs_test::course_sgd;
using runs_test::max_abs_diff;
using torch::Tensor;

models::ResNet18 resnet(uint64_t seed) {
  torch::manual_seed(seed);
  models::ResNet18 m(models::kResnet18Cifar);
  m->train();
  return m;
}

std::vector<torch::Device> cpu_devices(int n) { return std::vector<torch::Device>(n, torch::Device(torch::kCPU)); }

// What nn.DataParallel computes, written out: the same module on each chunk (BatchNorm normalises
// each chunk by its own statistics), the outputs concatenated.
Tensor chunk_by_chunk(models::ResNet18& m, const Tensor& images, int devices) {
  std::vector<Tensor> outs;
  for (const Tensor& chunk : images.chunk(devices, 0)) outs.push_back(m->forward(chunk));
  return torch::cat(outs, 0);
}

TEST(DataParallel, TwoIterationsOnTwoDevicesMatchTheModelRunChunkByChunk) {
  torch::set_num_threads(1);
  torch::manual_seed(7);
  std::vector<Tensor> images, labels;
  for (int s = 0; s < 2; ++s) {
    images.push_back(torch::randn({6, 3, 32, 32}));
    labels.push_back(torch::randint(0, 10, {6}, torch::kLong));
  }
  models::ResNet18 reference = resnet(1);
  models::ResNet18 module = resnet(1);
  std::vector<Tensor> initial;
  for (const Tensor& p : reference->parameters()) initial.push_back(p.detach().clone());

  auto reference_sgd = course_sgd(reference->parameters());
  TrainStep plain([&](const Tensor& x) { return chunk_by_chunk(reference, x, 2); }, reference_sgd, nullptr,
                  torch::Device(torch::kCPU));
  DataParallel dp(module, cpu_devices(2));
  auto dp_sgd = course_sgd(module->parameters());
  TrainStep parallel([&](const Tensor& x) { return dp.forward(x); }, dp_sgd, nullptr, torch::Device(torch::kCPU),
                     &dp);
  for (int s = 0; s < 2; ++s) {
    plain.run(images[s], labels[s]);
    parallel.run(images[s], labels[s]);
  }
  // The second iteration replicated the updated weights: both runs moved the same way.
  EXPECT_GT(max_abs_diff(reference->parameters(), initial), 1e-3);
  EXPECT_LT(max_abs_diff(module->parameters(), reference->parameters()), 1e-5);
  EXPECT_NEAR(parallel.loss_sum().item<double>(), plain.loss_sum().item<double>(), 1e-4);
}

// Autocast's state is a thread's: replicas run in threads of their own, so DataParallel applies
// its precision in each (as PyTorch's parallel_apply passes the caller's autocast on by hand).
TEST(DataParallel, ReplicasRunInItsPrecisionOnTheirOwnThreads) {
  torch::set_num_threads(1);
  torch::manual_seed(8);
  const Tensor images = torch::randn({4, 3, 32, 32});
  const Tensor labels = torch::randint(0, 10, {4}, torch::kLong);
  const torch::Device cpu(torch::kCPU);
  models::ResNet18 fp32_module = resnet(1);
  DataParallel fp32_dp(fp32_module, cpu_devices(2));
  {
    AutocastRegion caller(Precision::kBf16Amp, cpu);  // the caller's region stays on its thread
    EXPECT_EQ(fp32_dp.forward(images).scalar_type(), torch::kFloat32);
  }
  models::ResNet18 reference = resnet(1);
  models::ResNet18 module = resnet(1);
  DataParallel dp(module, cpu_devices(2), Precision::kBf16Amp);
  EXPECT_EQ(dp.forward(images).scalar_type(), torch::kBFloat16);

  // One bf16-amp step of DataParallel against the model run chunk by chunk in bf16-amp.
  auto reference_sgd = course_sgd(reference->parameters());
  TrainStep plain([&](const Tensor& x) { return chunk_by_chunk(reference, x, 2); }, reference_sgd, nullptr, cpu,
                  nullptr, Precision::kBf16Amp);
  auto dp_sgd = course_sgd(module->parameters());
  TrainStep parallel([&](const Tensor& x) { return dp.forward(x); }, dp_sgd, nullptr, cpu, &dp,
                     Precision::kBf16Amp);
  const double plain_loss = plain.run(images, labels).item<double>();
  const double parallel_loss = parallel.run(images, labels).item<double>();
  EXPECT_NEAR(parallel_loss, plain_loss, 1e-6 * std::abs(plain_loss) + 1e-6);
  EXPECT_LT(max_abs_diff(module->parameters(), reference->parameters()), 1e-4);
  for (const auto& p : module->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat32);
}

TEST(DataParallel, OnlyTheFirstDevicesChunkUpdatesTheRunningStatistics) {
  torch::set_num_threads(1);
  torch::manual_seed(3);
  const Tensor images = torch::randn({4, 3, 32, 32});
  models::ResNet18 first_chunk_only = resnet(2);
  models::ResNet18 module = resnet(2);
  {
    torch::NoGradGuard no_grad;
    first_chunk_only->forward(images.chunk(2, 0)[0]);
    DataParallel dp(module, cpu_devices(2));
    dp.forward(images);
  }
  EXPECT_EQ(max_abs_diff(module->buffers(), first_chunk_only->buffers()), 0.0);
  // ... and they moved from their initial values.
  EXPECT_GT(max_abs_diff(module->buffers(), resnet(2)->buffers()), 1e-4);
}

TEST(DataParallel, ASmallBatchUsesAsManyReplicasAsChunks) {
  torch::set_num_threads(1);
  torch::manual_seed(5);
  const Tensor images = torch::randn({3, 3, 32, 32});  // 4 devices, 3 chunks of 1
  const Tensor labels = torch::randint(0, 10, {3}, torch::kLong);
  models::ResNet18 reference = resnet(4);
  models::ResNet18 module = resnet(4);
  torch::nn::functional::cross_entropy(chunk_by_chunk(reference, images, 4), labels).backward();
  DataParallel dp(module, cpu_devices(4));
  const Tensor out = dp.forward(images);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 10}));
  torch::nn::functional::cross_entropy(out, labels).backward();
  dp.reduce_gradients();
  std::vector<Tensor> want, got;
  for (const Tensor& p : reference->parameters()) want.push_back(p.grad());
  for (const Tensor& p : module->parameters()) got.push_back(p.grad());
  EXPECT_LT(max_abs_diff(got, want), 1e-5);
}

TEST(DataParallel, RejectsOneDeviceAndAModuleElsewhere) {
  EXPECT_THROW(DataParallel(resnet(0), cpu_devices(1)), std::invalid_argument);
  models::ResNet18 module = resnet(0);
  EXPECT_THROW(DataParallel(module, {torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 1)}),
               std::invalid_argument);
  // Reducing before any backward is a programming error, said so.
  DataParallel dp(module, cpu_devices(2));
  dp.forward(torch::randn({2, 3, 32, 32}));
  EXPECT_THROW(dp.reduce_gradients(), std::logic_error);
}

}  // namespace
}  // namespace trainsim::measure
