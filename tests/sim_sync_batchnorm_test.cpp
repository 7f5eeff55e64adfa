// SyncBatchNorm under DDP: which BatchNorms a layer has, the bytes and time of their collectives,
// and what they add to a simulated epoch.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "des/time.h"
#include "hw/collective_model.h"
#include "sim_test_profiles.h"
#include "train/simulator.h"
#include "train/sync_batchnorm.h"

namespace trainsim {
namespace {

TEST(SyncBatchNorm, BatchNormChannelsFromParameterNames) {
  const std::vector<LayerProfile> layers = testing::resnet18_cifar_layers();
  // stem: bn1; layer1.0: bn1, bn2; layer2.0: bn1, bn2, shortcut.1; head: none.
  EXPECT_EQ(train::batchnorm_channels(layers[0]), (std::vector<int64_t>{64}));
  EXPECT_EQ(train::batchnorm_channels(layers[1]), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(train::batchnorm_channels(layers[3]), (std::vector<int64_t>{128, 128, 128}));
  EXPECT_TRUE(train::batchnorm_channels(layers.back()).empty());
  // ResNet-18: 1 + 8 blocks x 2 + 3 projection shortcuts = 20 BatchNorms, channels
  // 5 x (64 + 128 + 256 + 512) = 4800.
  int count = 0;
  int64_t channels = 0;
  for (const LayerProfile& l : layers) {
    for (int64_t c : train::batchnorm_channels(l)) {
      ++count;
      channels += c;
    }
  }
  EXPECT_EQ(count, 20);
  EXPECT_EQ(channels, 4800);
  // torchvision's names: downsample.1 is the shortcut's BatchNorm; a conv named like one is not.
  LayerProfile tv;
  tv.params = {{"layer2.0.conv1.weight", 294912}, {"layer2.0.bn1.weight", 512}, {"layer2.0.bn1.bias", 512},
               {"layer2.0.downsample.0.weight", 32768}, {"layer2.0.downsample.1.weight", 512},
               {"layer2.0.downsample.1.bias", 512}};
  EXPECT_EQ(train::batchnorm_channels(tv), (std::vector<int64_t>{128, 128}));
}

TEST(SyncBatchNorm, MessageSizes) {
  // forward: N (2C + 1) fp32 gathered; backward: 2C fp32 reduced.
  EXPECT_EQ(train::sync_bn_forward_gathered_bytes(64, 2), 2.0 * 129 * 4);  // 1032
  EXPECT_EQ(train::sync_bn_backward_bytes(64), 512);
}

// TEST FIXTURE: a 2-rank all-reduce curve measured (hand-written) exactly at the sizes SyncBN
// uses on 2 ranks for C = 64, 128, 256, 512, so every lookup hits a point:
//   backward 8C bytes: 512, 1024, 2048, 4096;  forward gathered 2 (2C + 1) 4 = 16C + 8: 1032, 2056, 4104, 8200.
// Times: 20 us + S / 1e9 s (latency-dominated, as small collectives are).
Profile sync_profile() {
  testing::SyntheticKnobs k;
  k.collective_ranks = {};
  k.loader_samples_per_s_per_worker = 1e6;
  Profile p = testing::synthetic_profile(k);
  CollectiveCurve ar{"all_reduce", 2, {}};
  for (double s : {512.0, 1024.0, 1032.0, 2048.0, 2056.0, 4096.0, 4104.0, 8200.0}) {
    ar.points.push_back({s, 20e-6 + s / 1e9});
  }
  // Larger sizes for the gradient buckets: 25 MiB-ish.
  for (double s : {1048576.0, 33554432.0}) ar.points.push_back({s, 20e-6 + s / 1e9});
  p.collectives.curves = {ar};
  return p;
}

double curve_time(double bytes) { return 20e-6 + bytes / 1e9; }

TEST(SyncBatchNorm, LayerCostFromTheMeasuredCurve) {
  const Profile p = sync_profile();
  const hw::CollectiveModel collectives(p.collectives, std::nullopt);
  const std::vector<LayerProfile> layers = testing::resnet18_cifar_layers();
  // layer2.0: three BatchNorms of 128 channels.
  const train::SyncBatchNormCost cost = train::sync_batchnorm_cost(layers[3], 2, collectives);
  EXPECT_EQ(cost.batchnorms, 3);
  // forward: 3 all-gathers, each half the all-reduce of 2056 bytes: 3 x 0.5 x (20 us + 2.056 us)
  EXPECT_NEAR(cost.forward_s, 3 * 0.5 * curve_time(2056), 1e-12);
  // backward: 3 all-reduces of 1024 bytes: 3 x (20 us + 1.024 us)
  EXPECT_NEAR(cost.backward_s, 3 * curve_time(1024), 1e-12);
  // Bus bytes per rank (n = 2): all-gather (n-1)/n x 2056, all-reduce 2(n-1)/n x 1024.
  EXPECT_DOUBLE_EQ(cost.forward_bus_bytes, 3 * 0.5 * 2056);
  EXPECT_DOUBLE_EQ(cost.backward_bus_bytes, 3 * 1024.0);
  // One rank: plain BatchNorm, nothing exchanged.
  EXPECT_EQ(train::sync_batchnorm_cost(layers[3], 1, collectives).batchnorms, 0);
}

RunSpec ddp_spec(int gpus, bool sync) {
  RunSpec s;
  s.strategy = Strategy::kDdp;
  s.gpus = gpus;
  s.batch_per_gpu = 128;
  s.train_samples = 128 * 2 * 20;  // 20 iterations on 2 ranks
  s.loader_workers = 2;
  s.sync_batchnorm = sync;
  return s;
}

TEST(SyncBatchNorm, EpochTimeGrowsByTheBlockingCollectives) {
  const Profile p = sync_profile();
  SimOptions exact;
  exact.exact = true;
  const SimResult plain = simulate_run(p, "resnet18-cifar", ddp_spec(2, false), exact);
  const SimResult sync = simulate_run(p, "resnet18-cifar", ddp_spec(2, true), exact);
  ASSERT_EQ(sync.iterations, 20);
  EXPECT_EQ(plain.sync_bn_s, 0);
  // Per iteration, summed over the 20 BatchNorms (5 per channel count C):
  //   forward  5 x sum_C 0.5 (20 us + (16C + 8) / 1e9) and backward 5 x sum_C (20 us + 8C / 1e9),
  // each layer's sum rounded to whole ns once per op (des::to_ns), as the simulator does.
  const hw::CollectiveModel collectives(p.collectives, std::nullopt);
  des::SimTime per_iteration = 0, forward_per_iteration = 0;
  for (const LayerProfile& l : p.models.at("resnet18-cifar").layers) {
    const train::SyncBatchNormCost c = train::sync_batchnorm_cost(l, 2, collectives);
    per_iteration += des::to_ns(c.forward_s) + des::to_ns(c.backward_s);
    forward_per_iteration += des::to_ns(c.forward_s);
  }
  double by_hand = 0;
  for (double c : {64.0, 128.0, 256.0, 512.0}) {
    by_hand += 5 * (0.5 * curve_time(16 * c + 8) + curve_time(8 * c));
  }
  // = 5 x (4 x 10 us + (16 x 960 + 4 x 8) / 2e9 s + 4 x 20 us + 8 x 960 / 1e9 s)
  // = 5 x (40 + 7.696 + 80 + 7.68) us = 676.88 us
  EXPECT_NEAR(by_hand, 676.88e-6, 1e-12);
  EXPECT_NEAR(des::to_seconds(per_iteration), by_hand, 20 * 1e-9);
  EXPECT_NEAR(sync.sync_bn_s, 20 * des::to_seconds(per_iteration), 1e-9);
  // The exchanges block compute: the forward ones add in full (nothing else runs then); the
  // backward ones at most in full plus waiting behind gradient buckets on the shared comm stream.
  const double added = sync.epoch_s - plain.epoch_s;
  EXPECT_GE(added, 20 * des::to_seconds(forward_per_iteration));
  EXPECT_LE(added, sync.sync_bn_s + plain.comm_s);
  EXPECT_GT(sync.exposed_comm_s, plain.exposed_comm_s + 20 * des::to_seconds(forward_per_iteration) - 1e-9);
  // It is communication, not compute.
  EXPECT_NEAR(sync.compute_s, plain.compute_s, 1e-9);
  EXPECT_NEAR(sync.comm_s, plain.comm_s + sync.sync_bn_s, 1e-9);
}

TEST(SyncBatchNorm, NothingOnOneRankAndNotAppliedToDataParallel) {
  const Profile p = sync_profile();
  const SimResult one = simulate_run(p, "resnet18-cifar", ddp_spec(1, true));
  EXPECT_EQ(one.sync_bn_s, 0);
  RunSpec dp = ddp_spec(2, true);
  dp.strategy = Strategy::kDp;
  testing::SyntheticKnobs k;  // dp needs broadcast/reduce curves: the synthetic 2- and 4-rank ones
  k.loader_samples_per_s_per_worker = 1e6;
  const SimResult r = simulate_run(testing::synthetic_profile(k), "resnet18-cifar", dp);
  EXPECT_EQ(r.sync_bn_s, 0);
  bool noted = false;
  for (const auto& note : r.notes) noted = noted || note.find("sync_batchnorm: not applied to dp") == 0;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace trainsim
