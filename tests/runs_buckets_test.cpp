// The gradient buckets c10d::Reducer launches for ResNet-18 CIFAR under measure's DDP
// (measure/runs/ddp.h), iteration by iteration, against the ones PyTorch's own
// DistributedDataParallel launched (tests/fixtures/runs/pytorch_ddp_buckets.json, recorded from
// Python by measure/pytorch/record_buckets.py: 2 Gloo ranks, DDP defaults, 3 iterations).
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gloo_required.h"
#include "comm/communicator.h"
#include "models/describe.h"
#include "models/resnet.h"
#include "runs/ddp.h"

namespace trainsim::measure {
namespace {

const std::string kFixture = std::string(TRAINSIM_FIXTURES_DIR) + "/runs/pytorch_ddp_buckets.json";

// Per iteration, the buckets in launch order.
using Iterations = std::vector<std::vector<DdpBucket>>;

Iterations read_fixture() {
  std::ifstream in(kFixture);
  if (!in) throw std::runtime_error("cannot read " + kFixture);
  const nlohmann::json doc = nlohmann::json::parse(in);
  if (doc.at("model") != "resnet18-cifar") throw std::runtime_error(kFixture + ": not resnet18-cifar");
  Iterations out;
  for (const auto& iteration : doc.at("iterations")) {
    std::vector<DdpBucket> buckets;
    for (const auto& b : iteration) {
      if (b.at("index").get<size_t>() != buckets.size()) throw std::runtime_error(kFixture + ": index out of order");
      buckets.push_back(DdpBucket{b.at("bytes").get<int64_t>(), b.at("params").get<std::vector<int>>()});
    }
    out.push_back(std::move(buckets));
  }
  return out;
}

// `world` ranks (threads, Gloo through one HashStore) train ResNet-18 CIFAR for `iterations`
// DDP iterations of 2 images each; returns rank 0's buckets as its reducer held them during each
// iteration's backward (every rank's must be the same).
Iterations record(int world, size_t iterations) {
  torch::set_num_threads(1);
  const auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<Iterations> seen(static_cast<size_t>(world));
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
        torch::manual_seed(0);
        models::ResNet18 model(models::kResnet18Cifar);
        model->train();
        DistributedDataParallel ddp(*model, communicator);
        for (size_t i = 0; i < iterations; ++i) {
          model->zero_grad();
          ddp.pre_forward();
          const auto output = model->forward(torch::randn({2, 3, 32, 32}));
          ddp.post_forward();
          torch::nn::functional::cross_entropy(output, torch::randint(0, 10, {2}, torch::kLong)).backward();
          EXPECT_EQ(ddp.rebuilt(), i >= 1) << "rank " << rank << " iteration " << i;
          seen[static_cast<size_t>(rank)].push_back(ddp.buckets());
        }
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (int rank = 1; rank < world; ++rank) {
    for (size_t i = 0; i < iterations; ++i) {
      const auto& a = seen[0][i];
      const auto& b = seen[static_cast<size_t>(rank)][i];
      EXPECT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
        EXPECT_EQ(a[k].params, b[k].params) << "rank " << rank << " iteration " << i << " bucket " << k;
      }
    }
  }
  return seen[0];
}

void expect_same(const Iterations& got, const Iterations& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << "iteration " << i;
    for (size_t k = 0; k < want[i].size(); ++k) {
      EXPECT_EQ(got[i][k].bytes, want[i][k].bytes) << "iteration " << i << " bucket " << k;
      EXPECT_EQ(got[i][k].params, want[i][k].params) << "iteration " << i << " bucket " << k;
    }
  }
}

TEST(DdpBuckets, FixtureIsPyTorchsOneBucketThenThreeRebuilt) {
  const Iterations want = read_fixture();
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(want[0].size(), 1u);
  EXPECT_EQ(want[0][0].bytes, 44695848);  // every one of the 62 tensors, 11,173,962 floats
  EXPECT_EQ(want[0][0].params.size(), 62u);
  ASSERT_EQ(want[1].size(), 3u);
  EXPECT_EQ(want[1][0].bytes, 9461800);   // linear.*, layer4.1.bn2.*, layer4.1.conv2.weight
  EXPECT_EQ(want[1][1].bytes, 26494976);
  EXPECT_EQ(want[1][2].bytes, 8739072);
  EXPECT_EQ(want[1][0].params.size(), 5u);
  EXPECT_EQ(want[1][1].params.size(), 15u);
  EXPECT_EQ(want[1][2].params.size(), 42u);
}

TEST(DdpBuckets, TwoRanksLaunchPyTorchsBucketsEveryIteration) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const Iterations want = read_fixture();
  expect_same(record(2, want.size()), want);
}

TEST(DdpBuckets, OneRankRebuildsTheSameBuckets) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  // measure's profile records ddp_buckets from a 1-rank reducer: it rebuilds too.
  const Iterations want = read_fixture();
  expect_same(record(1, want.size()), want);
}

}  // namespace
}  // namespace trainsim::measure
