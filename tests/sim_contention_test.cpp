// Host contention on CPU profiles: DDP ranks share the host, so every compute op of a rank is
// slowed by iteration_s(N) / iteration_s(1) from models.<m>.host_contention (docs/SIMULATOR.md).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim_test_profiles.h"
#include "train/host_contention.h"
#include "train/simulator.h"
#include "train/step_model.h"

namespace trainsim {
namespace {

const char* const kModel = "resnet18-cifar";

// A CPU profile with a fast loader (compute decides) and some loop overhead; `points` as
// {ranks, iteration_s} at batch 32.
Profile cpu_profile(const std::vector<std::pair<int, double>>& points, const std::string& kind = "cpu") {
  testing::SyntheticKnobs k;
  k.device_kind = kind;
  k.loader_samples_per_s_per_worker = 1e6;
  k.overhead_s = 300e-6;
  Profile p = testing::synthetic_profile(k);
  for (const auto& [ranks, seconds] : points) {
    p.models.at(kModel).host_contention.push_back(ContentionPoint{ranks, 32, seconds});
  }
  return p;
}

SimResult ddp(const Profile& p, int ranks, int64_t batch = 128) {
  RunSpec s;
  s.strategy = Strategy::kDdp;
  s.gpus = ranks;
  s.batch_per_gpu = batch;
  s.train_samples = 8192;
  s.loader_workers = 2;
  return simulate_run(p, kModel, s);
}

bool has_note(const SimResult& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(HostContention, StepModelScalesEveryComputeDuration) {
  const Profile p = cpu_profile({});
  const ModelProfile& m = p.models.at(kModel);
  const train::StepTimes plain = train::StepModel(m, train::fused_loop(m)).at(100);
  const train::StepTimes slow = train::StepModel(m, train::fused_loop(m), 1.5).at(100);
  ASSERT_EQ(plain.forward_s.size(), slow.forward_s.size());
  for (std::size_t i = 0; i < plain.forward_s.size(); ++i) {
    EXPECT_DOUBLE_EQ(slow.forward_s[i], 1.5 * plain.forward_s[i]);
    EXPECT_DOUBLE_EQ(slow.backward_s[i], 1.5 * plain.backward_s[i]);
  }
  EXPECT_DOUBLE_EQ(slow.loss_s, 1.5 * plain.loss_s);
  EXPECT_DOUBLE_EQ(slow.zero_grad_s, 1.5 * plain.zero_grad_s);
  EXPECT_DOUBLE_EQ(slow.optimizer_s, 1.5 * plain.optimizer_s);
  EXPECT_GT(plain.overhead_s, 0.0);
  EXPECT_DOUBLE_EQ(slow.overhead_s, 1.5 * plain.overhead_s);
  EXPECT_THROW(train::StepModel(m, train::fused_loop(m), 0.0), std::invalid_argument);
}

TEST(HostContention, TwoCpuRanksRunComputeAtTheMeasuredSlowdown) {
  // slowdown(2) = iteration_s(2) / iteration_s(1) = 1.8 / 1.2 = 1.5
  const SimResult plain = ddp(cpu_profile({}), 2);
  const SimResult slow = ddp(cpu_profile({{1, 1.2}, {2, 1.8}}), 2);
  ASSERT_GT(plain.compute_s, 0.0);
  // Every compute op is 1.5x longer (each rounded to a whole ns: relative error far below 1e-6).
  EXPECT_NEAR(slow.compute_s / plain.compute_s, 1.5, 1e-6);
  EXPECT_GT(slow.epoch_s, plain.epoch_s);
  EXPECT_TRUE(has_note(slow, "cpu host contention: 2 ranks run compute 1.50x slower than 1 at batch 128 (measured, "
                            "held from batch 32)"))
      << ::testing::PrintToString(slow.notes);
  EXPECT_TRUE(has_note(plain, "cpu profile without host_contention: ranks assumed not to slow each other"))
      << ::testing::PrintToString(plain.notes);
}

TEST(HostContention, OneRankAndGpuProfilesAreUnchanged) {
  const std::vector<std::pair<int, double>> points = {{1, 1.2}, {2, 1.8}};
  // One rank: slowdown(1) = 1 by definition; nothing to say.
  const SimResult solo_plain = ddp(cpu_profile({}), 1);
  const SimResult solo = ddp(cpu_profile(points), 1);
  EXPECT_EQ(solo.compute_s, solo_plain.compute_s);
  EXPECT_EQ(solo.epoch_s, solo_plain.epoch_s);
  EXPECT_FALSE(has_note(solo, "host contention")) << ::testing::PrintToString(solo.notes);
  EXPECT_FALSE(has_note(solo_plain, "host_contention")) << ::testing::PrintToString(solo_plain.notes);
  // A GPU profile: each rank owns its device, the data (were it there) is ignored.
  const SimResult gpu_plain = ddp(cpu_profile({}, "cuda"), 2);
  const SimResult gpu = ddp(cpu_profile(points, "cuda"), 2);
  EXPECT_EQ(gpu.compute_s, gpu_plain.compute_s);
  EXPECT_EQ(gpu.epoch_s, gpu_plain.epoch_s);
  EXPECT_FALSE(has_note(gpu, "contention")) << ::testing::PrintToString(gpu.notes);
}

TEST(HostContention, InterpolatesBetweenMeasuredRankCounts) {
  const Profile p = cpu_profile({{1, 1.0}, {2, 1.5}, {4, 2.5}});
  const ModelProfile& m = p.models.at(kModel);
  // r(2) = 1.5, r(4) = 2.5; r(3) = 1.5 + (2.5 - 1.5) (3 - 2) / (4 - 2) = 2.0
  const train::HostContention three = train::host_contention(p, m, 3, 32);
  EXPECT_DOUBLE_EQ(three.slowdown, 2.0);
  ASSERT_EQ(three.notes.size(), 1u);
  EXPECT_EQ(three.notes[0], "cpu host contention: 3 ranks run compute 2.00x slower than 1 at batch 32 (interpolated)");
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 4, 32).slowdown, 2.5);  // measured point: 2.5 / 1.0
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 1, 32).slowdown, 1.0);
}

TEST(HostContention, ARatioBelowOneIsNoiseAndNotASpeedUp) {
  const Profile p = cpu_profile({{1, 1.0}, {2, 0.97}});  // two processes "faster" than one
  const train::HostContention r = train::host_contention(p, p.models.at(kModel), 2, 32);
  EXPECT_EQ(r.slowdown, 1.0);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes.back(), "host contention measured 0.970x at batch 32 (below 1: measurement noise); 1 used");
}

TEST(HostContention, GrowsWithTheBatchBetweenMeasuredBatches) {
  Profile p = cpu_profile({{1, 1.0}, {2, 1.0}});  // batch 32: no slowdown
  ModelProfile& m = p.models.at(kModel);
  for (const auto& [ranks, seconds] : std::vector<std::pair<int, double>>{{1, 4.0}, {2, 5.0}}) {
    m.host_contention.push_back(ContentionPoint{ranks, 128, seconds});  // batch 128: 5 / 4 = 1.25
  }
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 2, 32).slowdown, 1.0);
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 2, 128).slowdown, 1.25);
  // Batch 64: a third of the way from 32 to 128: 1 + 0.25 / 3.
  EXPECT_NEAR(train::host_contention(p, m, 2, 64).slowdown, 1.0 + 0.25 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 2, 512).slowdown, 1.25);  // held above the largest
  EXPECT_DOUBLE_EQ(train::host_contention(p, m, 2, 16).slowdown, 1.0);    // and below the smallest
  // The note says where the batch lay.
  EXPECT_EQ(train::host_contention(p, m, 2, 64).notes.back(),
            "cpu host contention: 2 ranks run compute 1.08x slower than 1 at batch 64 (measured, between measured "
            "batches)");
  EXPECT_EQ(train::host_contention(p, m, 2, 512).notes.back(),
            "cpu host contention: 2 ranks run compute 1.25x slower than 1 at batch 512 (measured, held from batch 128)");
  EXPECT_EQ(train::host_contention(p, m, 2, 128).notes.back(),
            "cpu host contention: 2 ranks run compute 1.25x slower than 1 at batch 128 (measured)");
}

TEST(HostContention, BeyondTheMeasuredRanksUsesTheLargestWithANote) {
  const Profile p = cpu_profile({{1, 1.2}, {2, 1.8}});
  // 4 ranks > the largest measured 2: r(2) = 1.8 / 1.2 = 1.5 is used.
  const SimResult r = ddp(p, 4);
  EXPECT_TRUE(has_note(r, "host contention measured up to 2 ranks; 4-rank runs use 2-rank slowdown"))
      << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(has_note(r, "4 ranks run compute 1.50x slower than 1 at batch 128 (extrapolated, held from batch 32)"))
      << ::testing::PrintToString(r.notes);
  const SimResult plain = ddp(cpu_profile({}), 4);
  EXPECT_NEAR(r.compute_s / plain.compute_s, 1.5, 1e-6);
}

}  // namespace
}  // namespace trainsim
