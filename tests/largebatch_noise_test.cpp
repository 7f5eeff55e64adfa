// The gradient norms of the two-batch noise-scale estimator as the trainers compute them
// (measure/largebatch/gradient_noise.h): micro-batches on one device, and the per-rank vs
// all-reduced gradient under DDP (two Gloo ranks in two threads), fed to
// trainsim::GradientNoiseEstimator and checked against the exact |G|^2 and tr(Sigma) of a linear
// regression, whose per-example gradients are known in closed form.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gloo_required.h"
#include "largebatch/gradient_noise.h"
#include "comm/communicator.h"
#include "runs/ddp.h"
#include "remove_tree.h"
#include "stats/noise_scale.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;
using torch::Tensor;

// A finite data set of linear-regression examples; a batch draws examples uniformly WITH
// replacement, so the per-example gradients of a batch are i.i.d. draws from the data set and
// the exact G and Sigma are the data set's mean and (population) covariance of g_j.
struct Regression {
  static constexpr int64_t kExamples = 2048;
  static constexpr int64_t kDims = 6;

  Regression() {
    torch::manual_seed(7);
    x = torch::randn({kExamples, kDims}, torch::kFloat64);
    const Tensor w_true = torch::randn({kDims, 1}, torch::kFloat64);
    y = x.matmul(w_true) + 0.5 * torch::randn({kExamples, 1}, torch::kFloat64);
    // The model sits away from the optimum, so |G|^2 is not negligible against tr(Sigma)/B.
    w = w_true + 0.3 * torch::randn({kDims, 1}, torch::kFloat64);
    // Loss per example (x_j . w - y_j)^2, so g_j = 2 r_j x_j with r_j = x_j . w - y_j.
    const Tensor g = 2 * (x.matmul(w) - y) * x;  // [N, D]
    const Tensor mean = g.mean(0);
    grad_sq_norm = mean.square().sum().item<double>();                      // |G|^2
    trace_sigma = g.square().sum(1).mean().item<double>() - grad_sq_norm;  // E|g|^2 - |G|^2
  }

  torch::nn::Linear make_model(torch::Dtype dtype = torch::kFloat64) const {
    torch::nn::Linear model(torch::nn::LinearOptions(kDims, 1).bias(false));
    model->to(dtype);
    torch::NoGradGuard no_grad;
    model->weight.copy_(w.t());
    return model;
  }

  Tensor x, y, w;
  double grad_sq_norm = 0;
  double trace_sigma = 0;
};

MeanLoss mse(torch::nn::Linear& model) {
  return [&model](const Tensor& inputs, const Tensor& targets) {
    return torch::mse_loss(model->forward(inputs), targets);  // mean over the slice
  };
}

// Uniform indices with replacement from a seeded std::mt19937_64 (independent of torch's RNG).
Tensor draw_indices(std::mt19937_64& rng, int64_t n) {
  std::uniform_int_distribution<int64_t> pick(0, Regression::kExamples - 1);
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (auto& i : indices) i = pick(rng);
  return torch::tensor(indices, torch::kInt64);
}

TEST(MicroBatchBackward, LeavesTheFullBatchGradientAndTheSliceNorms) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  const Tensor inputs = data.x.slice(0, 0, 12);
  const Tensor targets = data.y.slice(0, 0, 12);

  model->zero_grad();
  mse(model)(inputs, targets).backward();
  const Tensor full = model->weight.grad().clone();
  std::vector<double> slice_sq;
  for (int i = 0; i < 4; ++i) {  // 12 = 4 slices of 3
    model->zero_grad();
    mse(model)(inputs.slice(0, 3 * i, 3 * i + 3), targets.slice(0, 3 * i, 3 * i + 3)).backward();
    slice_sq.push_back(model->weight.grad().square().sum().item<double>());
  }

  model->weight.mutable_grad().fill_(123);  // overwritten, not accumulated
  const auto norms = micro_batch_backward(params, mse(model), inputs, targets, 4);
  ASSERT_TRUE(norms.has_value());
  EXPECT_TRUE(torch::allclose(model->weight.grad(), full, 1e-12, 1e-12));
  EXPECT_EQ(norms->small_batch, 3);
  EXPECT_EQ(norms->big_batch, 12);
  EXPECT_NEAR(norms->big_sq_norm.item<double>(), full.square().sum().item<double>(), 1e-9);
  const double mean_slice_sq = (slice_sq[0] + slice_sq[1] + slice_sq[2] + slice_sq[3]) / 4;
  EXPECT_NEAR(norms->small_sq_norm.item<double>(), mean_slice_sq, 1e-9 * mean_slice_sq);
  EXPECT_FALSE(norms->block_small_sq_norm.defined());  // no block asked for

  // A block: the flagged parameters' norms alone; the one weight flagged, the same norms; none, 0.
  ASSERT_EQ(params.size(), 1u);
  const std::vector<bool> all{true};
  const auto block = micro_batch_backward(params, mse(model), inputs, targets, 4, nullptr, &all);
  ASSERT_TRUE(block.has_value());
  EXPECT_NEAR(block->block_big_sq_norm.item<double>(), full.square().sum().item<double>(), 1e-9);
  EXPECT_NEAR(block->block_small_sq_norm.item<double>(), mean_slice_sq, 1e-9 * mean_slice_sq);
  const std::vector<bool> none{false};
  const auto empty = micro_batch_backward(params, mse(model), inputs, targets, 4, nullptr, &none);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->block_big_sq_norm.item<double>(), 0);
  EXPECT_EQ(empty->block_small_sq_norm.item<double>(), 0);
  const std::vector<bool> wrong_size{true, false};
  EXPECT_THROW(micro_batch_backward(params, mse(model), inputs, targets, 4, nullptr, &wrong_size),
               std::invalid_argument);
}

TEST(MicroBatchBackward, UnequalSlicesStillGiveTheBatchGradientButNoNorms) {
  const Regression data;
  auto model = data.make_model();
  const Tensor inputs = data.x.slice(0, 0, 10);  // 10 in 4 slices: 3, 3, 2, 2
  const Tensor targets = data.y.slice(0, 0, 10);
  model->zero_grad();
  mse(model)(inputs, targets).backward();
  const Tensor full = model->weight.grad().clone();
  // sum_i (n_i / n) g_i = the gradient of the mean over all 10
  EXPECT_FALSE(micro_batch_backward(model->parameters(), mse(model), inputs, targets, 4).has_value());
  EXPECT_TRUE(torch::allclose(model->weight.grad(), full, 1e-12, 1e-12));
}

TEST(MicroBatchBackward, BadArguments) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  EXPECT_THROW(micro_batch_backward(params, mse(model), data.x.slice(0, 0, 4), data.y.slice(0, 0, 4), 0),
               std::invalid_argument);
  EXPECT_THROW(micro_batch_backward(params, mse(model), data.x.slice(0, 0, 4), data.y.slice(0, 0, 3), 2),
               std::invalid_argument);
}

// Linear regression's loss is exactly quadratic, H_C = (2 / n) X_C^T X_C on the batch C, so the
// finite difference is exact (to rounding): g^T H_C g = (2 / n) |X_C g|^2 for any g the step left.
TEST(GradientCurvature, ExactOnAQuadraticAndLeavesTheModelAsItWas) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  // The step's gradient, on examples 0..15; the curvature's batch, examples 16..31.
  model->zero_grad();
  mse(model)(data.x.slice(0, 0, 16), data.y.slice(0, 0, 16)).backward();
  const Tensor g = model->weight.grad().clone();
  const Tensor w = model->weight.detach().clone();
  const Tensor xc = data.x.slice(0, 16, 32);
  // A stand-in for BatchNorm's running statistics, which every forward pass moves.
  Tensor running = torch::zeros({3}, torch::kFloat64);
  const MeanLoss counting = [&](const Tensor& inputs, const Tensor& targets) {
    running.add_(1);
    return mse(model)(inputs, targets);
  };

  const auto c = gradient_curvature(params, {running}, counting, xc, data.y.slice(0, 16, 32), 4);
  ASSERT_TRUE(c.has_value());
  const double expected = 2.0 / 16 * xc.matmul(g.t()).square().sum().item<double>();
  EXPECT_NEAR(c->grad_hessian_grad, expected, 1e-6 * expected);
  EXPECT_NEAR(c->grad_sq_norm, g.square().sum().item<double>(), 1e-12);
  EXPECT_TRUE(torch::equal(model->weight.detach(), w));
  EXPECT_TRUE(torch::equal(model->weight.grad(), g));
  EXPECT_TRUE(torch::equal(running, torch::zeros({3}, torch::kFloat64)));
}

// The curvature along a micro-batch's gradient too (for B_noise = tr(H Sigma) / G^T H G): the
// first slice's own gradient g_s from micro_batch_backward, then g_s^T H_C g_s = (2 / n) |X_C g_s|^2
// exactly, the batch's g^T H_C g unchanged beside it, and the model as it was.
TEST(GradientCurvature, AlongTheFirstMicroBatchToo) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  std::vector<Tensor> first;
  const auto norms = micro_batch_backward(params, mse(model), data.x.slice(0, 0, 16), data.y.slice(0, 0, 16), 4, &first);
  ASSERT_TRUE(norms.has_value());
  ASSERT_EQ(first.size(), 1u);
  const Tensor g = model->weight.grad().clone();
  const Tensor w = model->weight.detach().clone();
  {
    auto alone = data.make_model();
    alone->zero_grad();
    mse(alone)(data.x.slice(0, 0, 4), data.y.slice(0, 0, 4)).backward();
    EXPECT_TRUE(torch::allclose(first[0], alone->weight.grad(), 1e-12, 1e-12));
  }
  const Tensor xc = data.x.slice(0, 16, 32);
  const auto c = gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4, &first);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->small_grad_hessian_grad.has_value());
  const double expected_small = 2.0 / 16 * xc.matmul(first[0].t()).square().sum().item<double>();
  EXPECT_NEAR(*c->small_grad_hessian_grad, expected_small, 1e-6 * expected_small);
  const double expected = 2.0 / 16 * xc.matmul(g.t()).square().sum().item<double>();
  EXPECT_NEAR(c->grad_hessian_grad, expected, 1e-6 * expected);
  EXPECT_TRUE(torch::equal(model->weight.detach(), w));
  EXPECT_TRUE(torch::equal(model->weight.grad(), g));
  // Without a micro-batch's gradient, none.
  EXPECT_FALSE(gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4)->small_grad_hessian_grad);
  const std::vector<Tensor> none;
  EXPECT_THROW(gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4, &none), std::invalid_argument);
}

// Along a block of the parameters: g_b, g's part on the flagged ones. Linear regression with a
// bias, block = the weight: g_b^T H_C g_b = (2 / n) |X_C g_w|^2 exactly; the whole g's curvature
// beside it adds the bias, (2 / n) |X_C g_w + g_bias|^2. A block with no gradient: none.
TEST(GradientCurvature, AlongABlockOfTheParameters) {
  const Regression data;
  torch::nn::Linear model(torch::nn::LinearOptions(Regression::kDims, 1));
  model->to(torch::kFloat64);
  const auto params = model->parameters();  // weight, bias
  ASSERT_EQ(params.size(), 2u);
  model->zero_grad();
  mse(model)(data.x.slice(0, 0, 16), data.y.slice(0, 0, 16)).backward();
  const Tensor gw = model->weight.grad().clone();
  const Tensor gb = model->bias.grad().clone();
  const Tensor xc = data.x.slice(0, 16, 32);
  const std::vector<bool> weight_only = {true, false};
  const auto c = gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4, nullptr, &weight_only);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->block_grad_hessian_grad.has_value());
  const double expected_block = 2.0 / 16 * xc.matmul(gw.t()).square().sum().item<double>();
  EXPECT_NEAR(*c->block_grad_hessian_grad, expected_block, 1e-6 * expected_block);
  EXPECT_NEAR(c->block_grad_sq_norm, gw.square().sum().item<double>(), 1e-12);
  const double expected = 2.0 / 16 * (xc.matmul(gw.t()) + gb).square().sum().item<double>();
  EXPECT_NEAR(c->grad_hessian_grad, expected, 1e-6 * expected);
  EXPECT_TRUE(torch::equal(model->weight.grad(), gw));
  EXPECT_TRUE(torch::equal(model->bias.grad(), gb));
  // Without a block, none; a block without a gradient, none; a block of the wrong length, an error.
  EXPECT_FALSE(gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4)->block_grad_hessian_grad);
  model->bias.mutable_grad().zero_();
  const std::vector<bool> bias_only = {false, true};
  EXPECT_FALSE(gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4, nullptr, &bias_only)
                   ->block_grad_hessian_grad);
  const std::vector<bool> one = {true};
  EXPECT_THROW(gradient_curvature(params, {}, mse(model), xc, data.y.slice(0, 16, 32), 4, nullptr, &one),
               std::invalid_argument);
}

// A convolution without bias followed by BatchNorm (training mode) is scale-invariant, w . g = 0;
// BatchNorm's own scale and shift and the linear head after it are not. A parameter without a
// gradient counts as not.
TEST(ScaleInvariantParameters, ConvolutionBeforeBatchNormOnly) {
  torch::manual_seed(3);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 4, 3).padding(1).bias(false));
  torch::nn::BatchNorm2d bn(4);
  torch::nn::Linear head(4 * 6 * 6, 3);
  torch::nn::Linear unused(2, 2);
  const Tensor x = torch::randn({8, 1, 6, 6});
  const Tensor y = torch::randint(0, 3, {8}, torch::kInt64);
  // BatchNorm's scale away from 1 and shift away from 0, so their gradients are generic.
  {
    torch::NoGradGuard no_grad;
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.uniform_(-0.5, 0.5);
  }
  torch::nn::functional::cross_entropy(head(torch::relu(bn(conv(x))).flatten(1)), y).backward();
  const std::vector<Tensor> params = {conv->weight, bn->weight, bn->bias, head->weight, head->bias, unused->weight};
  EXPECT_EQ(scale_invariant_parameters(params), (std::vector<bool>{true, false, false, false, false, false}));
}

TEST(GradientCurvature, NoGradientNoMeasurement) {
  const Regression data;
  auto model = data.make_model();
  model->zero_grad();
  mse(model)(data.x.slice(0, 0, 4), data.y.slice(0, 0, 4)).backward();
  model->weight.mutable_grad().zero_();
  EXPECT_FALSE(gradient_curvature(model->parameters(), {}, mse(model), data.x.slice(0, 4, 8),
                                  data.y.slice(0, 4, 8), 2)
                   .has_value());
}

// The estimator's averages over many steps against the exact values. Tolerance: 5%. Measured
// spread (relative standard deviation over other sampling seeds of these set-ups): micro-batches,
// 4000 steps, 8 seeds: 0.8% for |G|^2 and 0.6% for tr(Sigma); DDP, 3000 steps, 6 seeds: 1.2% and
// 1.1%. So 5% is at least 4 standard deviations, while a wrong B_small or B_big (a factor 2 in
// the estimator's weights) moves the estimates by far more.
constexpr double kTolerance = 0.05;

TEST(MicroBatchNoiseScale, MatchesThePerExampleGroundTruth) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  constexpr int64_t kBatch = 32;
  constexpr int64_t kMicro = 4;  // B_small = 8
  constexpr int kSteps = 4000;
  GradientNoiseEstimator estimator(1 - 1e-7);  // ~ equal weights over the steps
  std::mt19937_64 rng(11);
  for (int step = 0; step < kSteps; ++step) {
    const Tensor idx = draw_indices(rng, kBatch);
    const auto norms = micro_batch_backward(params, mse(model), data.x.index_select(0, idx),
                                            data.y.index_select(0, idx), kMicro);
    ASSERT_TRUE(norms.has_value());
    estimator.add(norms->small_sq_norm.item<double>(), norms->big_sq_norm.item<double>(), norms->small_batch,
                  norms->big_batch);
  }
  EXPECT_NEAR(estimator.grad_sq_norm(), data.grad_sq_norm, kTolerance * data.grad_sq_norm);
  EXPECT_NEAR(estimator.trace_sigma(), data.trace_sigma, kTolerance * data.trace_sigma);
  const double truth = data.trace_sigma / data.grad_sq_norm;
  ASSERT_TRUE(estimator.noise_scale().has_value());
  EXPECT_NEAR(*estimator.noise_scale(), truth, 2 * kTolerance * truth);
  // The set-up is in the interesting regime: B_noise between B_small and several B_big.
  EXPECT_GT(truth, 8);
  EXPECT_LT(truth, 8 * kBatch);
}

// B_noise = tr(H Sigma) / G^T H G from the curvature along the batch's and a micro-batch's
// gradient, H measured on another batch, against its exact value for linear regression (H = (2 /
// N) X^T X everywhere). Tolerance 10%, twice the noise scale's above: the estimate is a difference
// of two noisy curvatures.
TEST(CurvatureNoiseScale, MatchesTheGroundTruth) {
  const Regression data;
  auto model = data.make_model();
  const auto params = model->parameters();
  const Tensor hessian = 2.0 / Regression::kExamples * data.x.t().matmul(data.x);  // [D, D]
  const Tensor g = 2 * (data.x.matmul(data.w) - data.y) * data.x;                 // per example [N, D]
  const Tensor mean = g.mean(0, /*keepdim=*/true);
  const double mean_curvature = mean.matmul(hessian).matmul(mean.t()).item<double>();
  const Tensor centred = g - mean;
  const double trace_h_sigma = (centred.matmul(hessian) * centred).sum(1).mean().item<double>();
  const double truth = trace_h_sigma / mean_curvature;
  constexpr int64_t kBatch = 32;
  constexpr int64_t kMicro = 4;  // B_small = 8
  CurvatureEstimator estimator(1 - 1e-7);
  std::mt19937_64 rng(13);
  for (int step = 0; step < 4000; ++step) {
    const Tensor idx = draw_indices(rng, kBatch);
    std::vector<Tensor> first;
    const auto norms = micro_batch_backward(params, mse(model), data.x.index_select(0, idx),
                                            data.y.index_select(0, idx), kMicro, &first);
    ASSERT_TRUE(norms.has_value());
    const Tensor other = draw_indices(rng, kBatch);
    const auto c = gradient_curvature(params, {}, mse(model), data.x.index_select(0, other),
                                      data.y.index_select(0, other), kMicro, &first);
    ASSERT_TRUE(c && c->small_grad_hessian_grad);
    estimator.add(c->grad_sq_norm, c->grad_hessian_grad, *c->small_grad_hessian_grad, norms->small_batch,
                  norms->big_batch);
  }
  ASSERT_TRUE(estimator.noise_scale().has_value());
  EXPECT_NEAR(*estimator.noise_scale(), truth, 2 * kTolerance * truth);
  EXPECT_GT(truth, 8);
  EXPECT_LT(truth, 8 * kBatch);
  // Its standard error: small against the value after 4000 measurements, and the estimate within
  // four of them of the exact value.
  const auto se = estimator.noise_scale_standard_error();
  ASSERT_TRUE(se.has_value());
  EXPECT_GT(*se, 0);
  EXPECT_LT(*se, 0.1 * truth);
  EXPECT_LT(std::fabs(*estimator.noise_scale() - truth), 4 * *se)
      << "estimate " << *estimator.noise_scale() << " +- " << *se << ", exact " << truth;
}

TEST(DdpNoiseScale, PerRankAndAllReducedGradientsMatchTheGroundTruth) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const Regression data;
  constexpr int kWorld = 2;
  constexpr int64_t kRankBatch = 16;  // B_small = 16, B_big = 32
  constexpr int kSteps = 3000;
  std::string pattern = (fs::temp_directory_path() / "trainsim-lb-ddp-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string store_path = pattern + "/filestore";
  GradientNoiseEstimator estimator(1 - 1e-7);
  std::vector<std::exception_ptr> errors(kWorld);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        CommunicatorOptions options;
        options.rank = rank;
        options.world_size = kWorld;
        options.timeout = std::chrono::seconds(60);
        Communicator communicator(make_file_store(store_path, kWorld), options);
        auto model = data.make_model(torch::kFloat32);
        DistributedDataParallel ddp(*model, communicator);
        ddp.record_local_gradient_norm();
        const Tensor x = data.x.to(torch::kFloat32);
        const Tensor y = data.y.to(torch::kFloat32);
        const auto params = model->parameters();
        std::mt19937_64 rng(100 + static_cast<uint64_t>(rank));  // each rank its own samples
        std::vector<Tensor> small;
        std::vector<Tensor> big;
        for (int step = 0; step < kSteps; ++step) {
          const Tensor idx = draw_indices(rng, kRankBatch);
          model->zero_grad();
          ddp.pre_forward();
          const Tensor loss = mse(model)(x.index_select(0, idx), y.index_select(0, idx));
          ddp.post_forward();
          const auto norms = ddp_backward(params, ddp, loss, kRankBatch, kWorld);
          EXPECT_EQ(norms.small_batch, kRankBatch);
          EXPECT_EQ(norms.big_batch, kRankBatch * kWorld);
          small.push_back(norms.small_sq_norm);
          big.push_back(norms.big_sq_norm);
        }
        // As the baseline does once per epoch: the ranks' |G_small|^2 averaged over the ranks.
        Tensor small_all = torch::stack(small);
        communicator.wait(communicator.all_reduce(small_all));
        small_all = small_all / kWorld;
        if (rank == 0) {
          const Tensor big_all = torch::stack(big);
          for (int i = 0; i < kSteps; ++i) {
            estimator.add(small_all[i].item<double>(), big_all[i].item<double>(), kRankBatch, kRankBatch * kWorld);
          }
        }
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  trainsim::measure::remove_tree(pattern);
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  EXPECT_NEAR(estimator.grad_sq_norm(), data.grad_sq_norm, kTolerance * data.grad_sq_norm);
  EXPECT_NEAR(estimator.trace_sigma(), data.trace_sigma, kTolerance * data.trace_sigma);
}

}  // namespace
}  // namespace trainsim::measure
