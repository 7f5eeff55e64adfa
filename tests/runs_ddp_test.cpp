// DDP through LibTorch's c10d::Reducer (measure/runs/ddp.h) and the loop body both trainers and
// the profile run (measure/runs/train_step.h), over real Gloo groups: the ranks are threads of
// this process, each with its own ProcessGroupGloo, meeting through one HashStore.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autocast.h"
#include "gloo_required.h"
#include "memory_layout.h"
#include "comm/communicator.h"
#include "models/describe.h"
#include "models/resnet.h"
#include "runs/ddp.h"
#include "runs/train_step.h"
#include "runs_test_util.h"

namespace trainsim::measure {
namespace {

using runs_test::course_sgd;
using runs_test::max_abs_diff;
using torch::Tensor;

// Runs body(rank, communicator) on `world` threads and rethrows the first failure. A short
// timeout makes a rank that never arrives fail the test instead of hanging it. One intra-op
// thread: the ranks' computations are then deterministic, whatever the other rank does.
void run_ranks(int world, const std::function<void(int, Communicator&)>& body) {
  torch::set_num_threads(1);
  const auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        CommunicatorOptions options;
        options.rank = rank;
        options.world_size = world;
        options.timeout = std::chrono::seconds(60);
        Communicator communicator(store, options);
        body(rank, communicator);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

struct SmallNetImpl : torch::nn::Module {
  SmallNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 5));
    fc2 = register_module("fc2", torch::nn::Linear(5, 3));
  }
  Tensor forward(const Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(SmallNet);

std::vector<Tensor> gradients(torch::nn::Module& module) {
  std::vector<Tensor> out;
  for (const auto& p : module.parameters()) out.push_back(p.grad().clone());
  return out;
}

// The local gradients of `loss_of(module)` (a fresh backward on `module`).
std::vector<Tensor> local_gradients(torch::nn::Module& module, const std::function<Tensor()>& loss) {
  module.zero_grad();
  loss().backward();
  return gradients(module);
}

std::vector<Tensor> mean(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back((a[i] + b[i]) / 2);
  return out;
}

// Two ranks with different initial weights (DDP's broadcast must give both rank 0's) each run
// `iterations` DDP forward/backward passes on their own batches, without optimizer steps; the
// averaged gradients of every iteration must be the mean of the two ranks' local gradients of
// rank 0's initial model. Iteration 0 reduces one bucket of every parameter, the later ones the
// rebuilt buckets.
template <typename Model>
void expect_mean_of_local_gradients(const std::function<Model()>& make, const std::function<Tensor(Model&, int)>& loss,
                                    int iterations) {
  torch::manual_seed(1);
  Model rank0 = make();
  torch::manual_seed(2);
  Model rank1 = make();
  torch::manual_seed(1);
  Model reference = make();  // rank 0's initial weights
  ASSERT_GT(max_abs_diff(reference->parameters(), rank1->parameters()), 1e-3);
  std::vector<Model> models = {rank0, rank1};

  // want[i] = (g_0 + g_1) / 2 of iteration i, g_r from rank r's batch of that iteration.
  std::vector<std::vector<Tensor>> want;
  for (int i = 0; i < iterations; ++i) {
    const auto g0 = local_gradients(*reference, [&] { return loss(reference, 2 * i); });
    const auto g1 = local_gradients(*reference, [&] { return loss(reference, 2 * i + 1); });
    want.push_back(mean(g0, g1));
  }

  std::vector<std::vector<std::vector<Tensor>>> got(2);
  std::vector<std::vector<size_t>> bucket_counts(2);
  run_ranks(2, [&](int rank, Communicator& communicator) {
    Model& model = models[static_cast<size_t>(rank)];
    DistributedDataParallel ddp(*model, communicator);
    for (int i = 0; i < iterations; ++i) {
      model->zero_grad();
      ddp.pre_forward();
      const Tensor l = loss(model, 2 * i + rank);
      ddp.post_forward();
      l.backward();
      got[static_cast<size_t>(rank)].push_back(gradients(*model));
      bucket_counts[static_cast<size_t>(rank)].push_back(ddp.buckets().size());
    }
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(bucket_counts[static_cast<size_t>(rank)].at(0), 1u) << "iteration 0: one bucket";
    for (int i = 0; i < iterations; ++i) {
      EXPECT_LE(max_abs_diff(got[static_cast<size_t>(rank)][static_cast<size_t>(i)], want[static_cast<size_t>(i)]),
                1e-6)
          << "rank " << rank << ", iteration " << i;
    }
  }
}

TEST(Ddp, SmallModelAveragesTheRanksLocalGradients) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  std::vector<Tensor> x, y;
  torch::manual_seed(0);
  for (int b = 0; b < 6; ++b) {
    x.push_back(torch::randn({4, 6}));
    y.push_back(torch::randint(0, 3, {4}, torch::kLong));
  }
  expect_mean_of_local_gradients<SmallNet>(
      [] { return SmallNet(); },
      [&](SmallNet& m, int b) { return torch::nn::functional::cross_entropy(m->forward(x[b]), y[b]); },
      /*iterations=*/3);
}

TEST(Ddp, ResNet18AveragesTheRanksLocalGradients) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  std::vector<Tensor> x, y;
  torch::manual_seed(0);
  for (int b = 0; b < 4; ++b) {
    x.push_back(torch::randn({2, 3, 32, 32}));
    y.push_back(torch::randint(0, 10, {2}, torch::kLong));
  }
  // Iteration 0: one bucket of all 62 tensors; iteration 1: the rebuilt buckets (3 for ResNet-18).
  expect_mean_of_local_gradients<models::ResNet18>(
      [] {
        models::ResNet18 m(models::kResnet18Cifar);
        m->train();
        return m;
      },
      [&](models::ResNet18& m, int b) { return torch::nn::functional::cross_entropy(m->forward(x[b]), y[b]); },
      /*iterations=*/2);
}

// bf16-amp as torch.autocast: inside the region a linear layer computes in bfloat16 (nested
// regions too), outside it in fp32 again; the step keeps fp32 weights and gradients and trains.
TEST(TrainStep, Bf16AmpComputesTheForwardInBfloat16AndKeepsFp32Weights) {
  torch::manual_seed(3);
  SmallNet net;
  const Tensor x = torch::randn({8, 6});
  const Tensor y = torch::randint(0, 3, {8}, torch::kLong);
  const torch::Device cpu(torch::kCPU);
  {
    AutocastRegion outer(Precision::kBf16Amp, cpu);
    { AutocastRegion inner(Precision::kBf16Amp, cpu); }
    EXPECT_EQ(net->forward(x).scalar_type(), torch::kBFloat16);
    AutocastRegion fp32(Precision::kFp32, cpu);  // does nothing
    EXPECT_EQ(net->forward(x).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(net->forward(x).scalar_type(), torch::kFloat32);

  torch::manual_seed(4);
  SmallNet fp32_net;
  torch::manual_seed(4);
  SmallNet bf16_net;
  auto fp32_sgd = course_sgd(fp32_net->parameters());
  auto bf16_sgd = course_sgd(bf16_net->parameters());
  TrainStep fp32([&](const Tensor& images) { return fp32_net->forward(images); }, fp32_sgd, nullptr, cpu);
  TrainStep bf16([&](const Tensor& images) { return bf16_net->forward(images); }, bf16_sgd, nullptr, cpu, nullptr,
                 Precision::kBf16Amp);
  const double first_fp32 = fp32.run(x, y).item<double>();
  const double first_bf16 = bf16.run(x, y).item<double>();
  EXPECT_NE(first_fp32, first_bf16);                    // computed in another dtype
  EXPECT_NEAR(first_bf16, first_fp32, 0.05 * first_fp32);  // bfloat16's 8 bits of mantissa
  for (const auto& p : bf16_net->parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat32);
    EXPECT_EQ(p.grad().scalar_type(), torch::kFloat32);
  }
  for (int s = 0; s < 20; ++s) bf16.run(x, y);
  EXPECT_LT(bf16.run(x, y).item<double>(), first_bf16);  // it trains
  EXPECT_EQ(bf16_net->forward(x).scalar_type(), torch::kFloat32);  // no state left behind
}

// channels_last as model.to(memory_format=torch.channels_last): ResNet-18's 4-D weights are
// restrided (values unchanged), a channels-last batch gives channels-last activations and
// gradients, the loss is the nchw model's to rounding, and it trains; nchw changes nothing.
TEST(TrainStep, ChannelsLastRestridesTheWeightsAndInputsAndComputesTheSameLoss) {
  torch::manual_seed(5);
  models::ResNet18 nchw(models::kResnet18Cifar);
  torch::manual_seed(5);
  models::ResNet18 last(models::kResnet18Cifar);
  to_memory_format(*nchw, MemoryFormat::kNchw);
  to_memory_format(*last, MemoryFormat::kChannelsLast);
  const auto conv_weights = [](models::ResNet18& m) {
    std::vector<Tensor> w;
    for (const Tensor& p : m->parameters()) {
      if (p.dim() == 4) w.push_back(p);
    }
    return w;
  };
  const std::vector<Tensor> a = conv_weights(nchw), b = conv_weights(last);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(b.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].is_contiguous());
    EXPECT_TRUE(b[i].is_contiguous(at::MemoryFormat::ChannelsLast));
    if (b[i].size(2) > 1) EXPECT_FALSE(b[i].is_contiguous());  // a 1x1 kernel is both layouts at once
    EXPECT_TRUE(torch::equal(a[i], b[i]));
  }
  const Tensor x = torch::randn({4, 3, 32, 32});
  const Tensor y = torch::randint(0, 10, {4}, torch::kLong);
  EXPECT_TRUE(in_memory_format(x, MemoryFormat::kNchw).is_same(x));
  const Tensor x_last = in_memory_format(x, MemoryFormat::kChannelsLast);
  EXPECT_TRUE(x_last.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(x_last, x));
  const Tensor y_kept = in_memory_format(y, MemoryFormat::kChannelsLast);  // not 4-D: as it was
  EXPECT_TRUE(y_kept.is_same(y));

  const torch::Device cpu(torch::kCPU);
  auto nchw_sgd = course_sgd(nchw->parameters());
  auto last_sgd = course_sgd(last->parameters());
  TrainStep nchw_step([&](const Tensor& images) { return nchw->forward(images); }, nchw_sgd, nullptr, cpu);
  TrainStep last_step([&](const Tensor& images) { return last->forward(images); }, last_sgd, nullptr, cpu);
  const double first_nchw = nchw_step.run(x, y).item<double>();
  const double first_last = last_step.run(x_last, y).item<double>();
  EXPECT_NEAR(first_last, first_nchw, 1e-4 * first_nchw);
  for (const Tensor& w : conv_weights(last)) {
    EXPECT_TRUE(w.is_contiguous(at::MemoryFormat::ChannelsLast));  // the step kept the layout
    EXPECT_TRUE(w.grad().is_contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (int s = 0; s < 5; ++s) last_step.run(x_last, y);
  EXPECT_LT(last_step.run(x_last, y).item<double>(), first_last);  // it trains
}

TEST(TrainStep, TwoRanksMatchOneProcessOnTheWholeBatch) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  constexpr int kWorld = 2;
  constexpr int64_t kBatchPerRank = 4;
  constexpr int kSteps = 3;
  torch::manual_seed(0);
  std::vector<Tensor> inputs, labels;
  for (int s = 0; s < kSteps; ++s) {
    inputs.push_back(torch::randn({kWorld * kBatchPerRank, 6}));
    labels.push_back(torch::randint(0, 3, {kWorld * kBatchPerRank}, torch::kLong));
  }
  torch::manual_seed(1);
  SmallNet reference;
  torch::manual_seed(1);
  SmallNet rank0;
  torch::manual_seed(2);
  SmallNet rank1;
  std::vector<SmallNet> models = {rank0, rank1};
  std::vector<Tensor> initial;
  for (const auto& p : reference->parameters()) initial.push_back(p.detach().clone());

  // One process, global batch of 8, through the same loop body without DDP.
  auto optimizer = course_sgd(reference->parameters());
  TrainStep one([&](const Tensor& images) { return reference->forward(images); }, optimizer, nullptr,
                torch::Device(torch::kCPU));
  double one_loss_sum = 0;
  for (int s = 0; s < kSteps; ++s) one.run(inputs[s], labels[s]);
  one_loss_sum = one.loss_sum().item<double>();

  // Two ranks, 4 samples each.
  std::vector<double> loss_sums(kWorld);
  std::vector<int64_t> corrects(kWorld);
  run_ranks(kWorld, [&](int rank, Communicator& communicator) {
    SmallNet& model = models[static_cast<size_t>(rank)];
    DistributedDataParallel ddp(*model, communicator);
    auto rank_optimizer = course_sgd(model->parameters());
    TrainStep step([&](const Tensor& images) { return model->forward(images); }, rank_optimizer, &ddp,
                   torch::Device(torch::kCPU));
    for (int s = 0; s < kSteps; ++s) {
      step.run(inputs[s].narrow(0, rank * kBatchPerRank, kBatchPerRank),
               labels[s].narrow(0, rank * kBatchPerRank, kBatchPerRank));
    }
    loss_sums[static_cast<size_t>(rank)] = step.loss_sum().item<double>();
    corrects[static_cast<size_t>(rank)] = step.correct().item<int64_t>();
  });

  // After 3 SGD steps both ranks hold the one-process parameters (and training moved them).
  EXPECT_LT(max_abs_diff(rank0->parameters(), reference->parameters()), 1e-5);
  EXPECT_LT(max_abs_diff(rank1->parameters(), reference->parameters()), 1e-5);
  EXPECT_EQ(max_abs_diff(rank0->parameters(), rank1->parameters()), 0.0);
  EXPECT_GT(max_abs_diff(reference->parameters(), initial), 1e-3);
  // Loss x samples, summed: the ranks' halves add up to the whole batch's.
  EXPECT_NEAR(loss_sums[0] + loss_sums[1], one_loss_sum, 1e-4);
  EXPECT_GE(corrects[0] + corrects[1], 0);
  EXPECT_LE(corrects[0] + corrects[1], kWorld * kBatchPerRank * kSteps);
}

TEST(Ddp, BuffersFollowRankZeroBeforeEachForward) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  struct NormNetImpl : torch::nn::Module {
    NormNetImpl() {
      bn = register_module("bn", torch::nn::BatchNorm1d(3));
      fc = register_module("fc", torch::nn::Linear(3, 2));
    }
    Tensor forward(const Tensor& x) { return fc(bn(x)); }
    torch::nn::BatchNorm1d bn{nullptr};
    torch::nn::Linear fc{nullptr};
  };
  std::vector<Tensor> before(2), after(2);
  run_ranks(2, [&](int rank, Communicator& communicator) {
    auto model = std::make_shared<NormNetImpl>();
    DistributedDataParallel ddp(*model, communicator);
    model->train();
    // Different data per rank: the running means drift apart (mean of column c: 4.5 + c for
    // rank 0, twice that for rank 1; running_mean = 0.1 * that after one batch).
    const Tensor x = torch::arange(12, torch::kFloat).view({4, 3}) * (rank + 1);
    {
      torch::NoGradGuard no_grad;
      model->forward(x);
    }
    before[static_cast<size_t>(rank)] = model->bn->running_mean.clone();
    ddp.pre_forward();
    after[static_cast<size_t>(rank)] = model->bn->running_mean.clone();
  });
  EXPECT_TRUE(torch::allclose(before[0], torch::tensor({0.45f, 0.55f, 0.65f})));
  EXPECT_TRUE(torch::allclose(before[1], torch::tensor({0.9f, 1.1f, 1.3f})));
  EXPECT_TRUE(torch::equal(after[0], before[0]));
  EXPECT_TRUE(torch::equal(after[1], before[0]));
}

TEST(Ddp, LocalGradientNormIsTheRanksOwnBeforeTheAverage) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  torch::manual_seed(0);
  const std::vector<Tensor> x = {torch::randn({4, 6}), torch::randn({4, 6})};
  const std::vector<Tensor> y = {torch::randint(0, 3, {4}, torch::kLong), torch::randint(0, 3, {4}, torch::kLong)};
  torch::manual_seed(1);
  SmallNet reference;
  std::vector<double> want(2);
  std::vector<std::vector<Tensor>> local(2);
  for (int r = 0; r < 2; ++r) {
    local[static_cast<size_t>(r)] = local_gradients(
        *reference, [&] { return torch::nn::functional::cross_entropy(reference->forward(x[r]), y[r]); });
    for (const auto& g : local[static_cast<size_t>(r)]) want[static_cast<size_t>(r)] += g.square().sum().item<double>();
  }
  const auto average = mean(local[0], local[1]);
  torch::manual_seed(1);
  SmallNet rank0;  // the reference's weights
  torch::manual_seed(2);
  SmallNet rank1;  // replaced by rank 0's in DDP's constructor
  std::vector<SmallNet> models = {rank0, rank1};
  std::vector<double> got(2);
  std::vector<std::vector<Tensor>> averaged(2);
  run_ranks(2, [&](int rank, Communicator& communicator) {
    SmallNet& model = models[static_cast<size_t>(rank)];
    DistributedDataParallel ddp(*model, communicator);
    ddp.record_local_gradient_norm();
    ddp.pre_forward();
    const Tensor loss = torch::nn::functional::cross_entropy(model->forward(x[rank]), y[rank]);
    ddp.post_forward();
    loss.backward();
    got[static_cast<size_t>(rank)] = ddp.take_local_gradient_sq_norm().item<double>();
    averaged[static_cast<size_t>(rank)] = gradients(*model);
    EXPECT_EQ(ddp.take_local_gradient_sq_norm().item<double>(), 0.0);  // taken: reset
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(got[static_cast<size_t>(r)], want[static_cast<size_t>(r)], 1e-6 * want[static_cast<size_t>(r)]);
    EXPECT_LE(max_abs_diff(averaged[static_cast<size_t>(r)], average), 1e-6);
  }
  EXPECT_GT(std::abs(want[0] - want[1]), 1e-3);  // the two ranks' norms differ: each got its own
}

TEST(Ddp, AParameterWithoutGradientFailsTheNextIteration) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  struct PartlyUsedImpl : torch::nn::Module {
    PartlyUsedImpl() {
      used = register_module("used", torch::nn::Linear(2, 2));
      unused = register_module("unused", torch::nn::Linear(2, 2));
    }
    torch::nn::Linear used{nullptr};
    torch::nn::Linear unused{nullptr};
  };
  run_ranks(1, [](int, Communicator& communicator) {
    auto model = std::make_shared<PartlyUsedImpl>();
    DistributedDataParallel ddp(*model, communicator);
    ddp.pre_forward();
    const Tensor loss = model->used->forward(torch::ones({1, 2})).sum();
    ddp.post_forward();
    loss.backward();
    // As under PyTorch's DDP (find_unused_parameters=False): the reduction never finished, and
    // the next forward says so, naming the parameter indices (registration order).
    try {
      ddp.pre_forward();
      ADD_FAILURE() << "the next iteration started without the unused parameters' gradients";
    } catch (const c10::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Expected to have finished reduction in the prior iteration"), std::string::npos) << what;
      EXPECT_NE(what.find("2 3"), std::string::npos) << what;
    }
  });
}

}  // namespace
}  // namespace trainsim::measure
