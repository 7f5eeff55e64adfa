// The DDP reducer (measure/runs/ddp_reducer.h) over real Gloo groups: two ranks in two threads
// of this process, each with its own ProcessGroupGloo over one FileStore.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "models/resnet.h"
#include "runs/communicator.h"
#include "runs/ddp_reducer.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;
using torch::Tensor;

// Runs body(rank, communicator) on `world` threads and rethrows the first failure. A short
// timeout makes a rank that never arrives fail the test instead of hanging it.
void run_ranks(int world, const std::function<void(int, AsyncCommunicator&)>& body) {
  std::string pattern = (fs::temp_directory_path() / "trainsim-ddp-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string store_path = pattern + "/filestore";
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto communicator = make_async_gloo(make_file_store(store_path, world), rank, world,
                                            std::chrono::seconds(60));
        body(rank, *communicator);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  fs::remove_all(pattern);
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// No BatchNorm: per-rank batch statistics would make the ranks' model differ from one model on
// the whole batch, which is exactly DDP's behaviour but not what this check is about.
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

torch::optim::SGD course_sgd(const std::vector<Tensor>& params) {
  return torch::optim::SGD(params, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4));
}

double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

std::vector<Tensor> copies(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const auto& t : tensors) out.push_back(t.detach().clone());
  return out;
}

TEST(DdpReducer, TwoRanksMatchOneProcessOnTheWholeBatch) {
  constexpr int kWorld = 2;
  constexpr int64_t kBatchPerRank = 4;
  constexpr int kSteps = 3;
  torch::manual_seed(0);
  std::vector<Tensor> inputs, labels;
  for (int s = 0; s < kSteps; ++s) {
    inputs.push_back(torch::randn({kWorld * kBatchPerRank, 6}));
    labels.push_back(torch::randint(0, 3, {kWorld * kBatchPerRank}, torch::kLong));
  }
  // Rank 0 starts from the reference's weights; rank 1 from other ones, which DDP's initial
  // broadcast must replace.
  torch::manual_seed(1);
  SmallNet reference;
  torch::manual_seed(1);
  SmallNet rank0;
  torch::manual_seed(2);
  SmallNet rank1;
  std::vector<SmallNet> models = {rank0, rank1};
  const auto initial = copies(reference->parameters());
  ASSERT_GT(max_abs_diff(initial, rank1->parameters()), 1e-3);

  // One process, global batch of 8: mean loss over 8 samples.
  std::vector<Tensor> reference_first_grads;
  auto optimizer = course_sgd(reference->parameters());
  for (int s = 0; s < kSteps; ++s) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(reference->forward(inputs[s]), labels[s]).backward();
    if (s == 0) {
      for (const auto& p : reference->parameters()) {
        reference_first_grads.push_back(p.grad().clone());
      }
    }
    optimizer.step();
  }

  // Two ranks, 4 samples each: mean loss over 4, gradients averaged over the 2 ranks.
  std::vector<std::vector<Tensor>> first_grads(kWorld);
  std::vector<std::vector<std::vector<size_t>>> buckets(kWorld);
  run_ranks(kWorld, [&](int rank, AsyncCommunicator& communicator) {
    SmallNet& model = models[static_cast<size_t>(rank)];
    // Caps of 16 and 64 bytes give two buckets (see the assertion below).
    DdpReducer reducer(*model, communicator, /*first_bucket_bytes=*/16, /*bucket_bytes=*/64);
    buckets[static_cast<size_t>(rank)] = reducer.buckets();
    auto rank_optimizer = course_sgd(model->parameters());
    for (int s = 0; s < kSteps; ++s) {
      const Tensor x = inputs[s].narrow(0, rank * kBatchPerRank, kBatchPerRank);
      const Tensor y = labels[s].narrow(0, rank * kBatchPerRank, kBatchPerRank);
      rank_optimizer.zero_grad();
      reducer.sync_buffers();
      const Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      reducer.prepare_for_backward();
      loss.backward();
      reducer.finalize_backward();
      if (s == 0) {
        for (const auto& p : model->parameters()) {
          first_grads[static_cast<size_t>(rank)].push_back(p.grad().clone());
        }
      }
      rank_optimizer.step();
    }
  });

  // Parameters fc1.weight 30 floats (120 B), fc1.bias 20 B, fc2.weight 60 B, fc2.bias 12 B; in
  // reverse: 12 < 16, 12 + 60 = 72 >= 16 closes {3, 2}; 20 < 64, 20 + 120 >= 64 closes {1, 0}.
  const std::vector<std::vector<size_t>> expected_buckets = {{3, 2}, {1, 0}};
  EXPECT_EQ(buckets[0], expected_buckets);
  EXPECT_EQ(buckets[1], expected_buckets);
  // Averaged gradients = gradients of the mean loss over the whole batch.
  EXPECT_LT(max_abs_diff(first_grads[0], reference_first_grads), 1e-6);
  EXPECT_LT(max_abs_diff(first_grads[1], reference_first_grads), 1e-6);
  // After 3 SGD steps both ranks hold the one-process parameters (and training moved them).
  EXPECT_LT(max_abs_diff(rank0->parameters(), reference->parameters()), 1e-5);
  EXPECT_LT(max_abs_diff(rank1->parameters(), reference->parameters()), 1e-5);
  EXPECT_EQ(max_abs_diff(rank0->parameters(), rank1->parameters()), 0.0);
  EXPECT_GT(max_abs_diff(reference->parameters(), initial), 1e-3);
}

TEST(DdpReducer, BuffersFollowRankZeroBeforeEachForward) {
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
  run_ranks(2, [&](int rank, AsyncCommunicator& communicator) {
    auto model = std::make_shared<NormNetImpl>();
    DdpReducer reducer(*model, communicator);
    model->train();
    // Different data per rank: the running means drift apart (mean of column c: 4.5 + c for
    // rank 0, twice that for rank 1; running_mean = 0.1 * that after one batch).
    const Tensor x = torch::arange(12, torch::kFloat).view({4, 3}) * (rank + 1);
    {
      torch::NoGradGuard no_grad;
      model->forward(x);
    }
    before[static_cast<size_t>(rank)] = model->bn->running_mean.clone();
    reducer.sync_buffers();
    after[static_cast<size_t>(rank)] = model->bn->running_mean.clone();
  });
  EXPECT_TRUE(torch::allclose(before[0], torch::tensor({0.45f, 0.55f, 0.65f})));
  EXPECT_TRUE(torch::allclose(before[1], torch::tensor({0.9f, 1.1f, 1.3f})));
  EXPECT_TRUE(torch::equal(after[0], before[0]));
  EXPECT_TRUE(torch::equal(after[1], before[0]));
}

TEST(DdpReducer, ParameterWithoutGradientIsReported) {
  struct PartlyUsedImpl : torch::nn::Module {
    PartlyUsedImpl() {
      used = register_module("used", torch::nn::Linear(2, 2));
      unused = register_module("unused", torch::nn::Linear(2, 2));
    }
    torch::nn::Linear used{nullptr};
    torch::nn::Linear unused{nullptr};
  };
  run_ranks(1, [](int, AsyncCommunicator& communicator) {
    auto model = std::make_shared<PartlyUsedImpl>();
    DdpReducer reducer(*model, communicator);
    reducer.prepare_for_backward();
    model->used->forward(torch::ones({1, 2})).sum().backward();
    try {
      reducer.finalize_backward();
      ADD_FAILURE() << "finalize_backward accepted a parameter without gradient";
    } catch (const std::runtime_error& e) {
      // Exactly the two parameters of `unused`, none of `used`.
      EXPECT_NE(std::string(e.what()).find("parameter(s) unused.weight, unused.bias in"),
                std::string::npos)
          << e.what();
    }
  });
}

TEST(DdpReducer, ResNet18GradientsComeBackToTheirParameters) {
  // One rank: the all-reduced average is the gradient itself, so after the round trip through
  // 3 buckets every one of the 62 parameters must hold exactly its plain backward gradient.
  torch::manual_seed(3);
  models::ResNet18 net("resnet18-cifar");
  auto twin = std::dynamic_pointer_cast<models::ResNet18Impl>(net->clone());
  ASSERT_TRUE(twin);
  const Tensor x = torch::randn({2, 3, 32, 32});
  const Tensor y = torch::tensor({1, 7}, torch::kLong);
  twin->train();
  torch::nn::functional::cross_entropy(twin->forward(x), y).backward();

  run_ranks(1, [&](int, AsyncCommunicator& communicator) {
    DdpReducer reducer(*net, communicator);
    EXPECT_EQ(reducer.buckets().size(), 3u);  // see runs_buckets_test
    net->train();
    reducer.sync_buffers();
    const Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    reducer.prepare_for_backward();
    loss.backward();
    reducer.finalize_backward();
  });
  const auto got = net->named_parameters();
  const auto want = twin->named_parameters();
  ASSERT_EQ(got.size(), 62u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i].value().grad(), want[i].value().grad(), 1e-5, 1e-7))
        << got[i].key();
  }
}

}  // namespace
}  // namespace trainsim::measure
