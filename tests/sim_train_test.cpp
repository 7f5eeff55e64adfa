// The training layer's building blocks: batch interpolation, step and memory models, the loader
// model, DDP buckets and DataParallel's coalesced chunks.

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "format/errors.h"
#include "sim_test_profiles.h"
#include "train/batch_curve.h"
#include "train/buckets.h"
#include "train/loader_model.h"
#include "train/memory_model.h"
#include "train/simulator.h"
#include "train/step_model.h"

namespace trainsim::train {
namespace {

TEST(BatchCurve, InterpolatesInsideAndExtendsOutsideWithAProportionalFloor) {
  const std::vector<int64_t> b = {32, 128, 512};
  const std::vector<double> v = {1, 2, 5};
  const auto at = [&](double x, BatchExtrapolation m) { return interpolate_in_batch(b, v, x, m); };
  const auto prop = BatchExtrapolation::kProportionalFloor;
  EXPECT_EQ(at(128, prop), 2.0);  // measured points exactly
  // 80 lies halfway between 32 and 128: 1 + (2 - 1) * 48/96 = 1.5.
  EXPECT_DOUBLE_EQ(at(80, prop), 1.5);
  // 1024: the last segment extended gives 5 + (3/384) * 512 = 9; the floor 5 * 1024/512 = 10 wins.
  EXPECT_DOUBLE_EQ(at(1024, prop), 10.0);
  // 16: the first segment extended gives 1 - (1/96) * 16 = 0.8333; the floor 1 * 16/32 = 0.5.
  EXPECT_DOUBLE_EQ(at(16, prop), 1.0 - 16.0 / 96.0);
  // Batch-independent work holds the nearest measured value.
  EXPECT_EQ(at(1024, BatchExtrapolation::kHoldNearest), 5.0);
  EXPECT_EQ(at(8, BatchExtrapolation::kHoldNearest), 1.0);
}

TEST(BatchCurve, OnePointScalesProportionally) {
  // 3 at 100 -> 6 at 200 (floor = v * b / b_1).
  EXPECT_DOUBLE_EQ(interpolate_in_batch({100}, {3.0}, 200, BatchExtrapolation::kProportionalFloor),
                   6.0);
}

TEST(BatchCurve, RejectsMismatchedArrays) {
  EXPECT_THROW(interpolate_in_batch({32, 64}, {1.0}, 40, BatchExtrapolation::kHoldNearest),
               std::invalid_argument);
  EXPECT_THROW(interpolate_in_batch({64, 32}, {1.0, 2.0}, 40, BatchExtrapolation::kHoldNearest),
               std::invalid_argument);
}

// Sum of a step's parts (what the loop excess is measured against).
double step_sum(const StepTimes& t) { return t.layers_s() + t.loss_s + t.zero_grad_s + t.optimizer_s; }

TEST(StepModel, LoopOverheadIsTheLoopMinusItsParts) {
  testing::SyntheticKnobs knobs;
  knobs.overhead_s = 1e-3;  // iteration_s = sum of parts + 1 ms at every measured batch
  const Profile p = testing::synthetic_profile(knobs);
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const StepModel steps(m, fused_loop(m));
  EXPECT_NEAR(steps.at(128).overhead_s, 1e-3, 1e-12);
  // Beyond the measured 2048 the excess keeps its ratio to the parts.
  const double parts_ratio = step_sum(steps.at(8192)) / step_sum(steps.at(2048));
  EXPECT_GT(parts_ratio, 3.0);
  EXPECT_NEAR(steps.at(8192).overhead_s, 1e-3 * parts_ratio, 1e-12);
  EXPECT_EQ(steps.at(128).parts_scale, 1.0);
  // Layer forward at 128 for a block: 20 us + 4 us * 128 = 532 us; backward twice that.
  EXPECT_NEAR(steps.at(128).forward_s[1], 532e-6, 1e-12);
  EXPECT_NEAR(steps.at(128).backward_s[1], 1064e-6, 1e-12);
  // Optimizer is batch-independent: held at 400 us beyond the range, not scaled.
  EXPECT_EQ(steps.at(8192).optimizer_s, 400e-6);
}

TEST(StepModel, ALoopCheaperThanItsPartsScalesThePartsDown) {
  const Profile p = testing::synthetic_profile();
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const StepModel plain(m, fused_loop(m));  // the synthetic loop is exactly its parts
  // A loop 5% cheaper than its parts at 128 and exactly its parts at 512.
  const double parts128 = step_sum(plain.at(128));
  const double parts512 = step_sum(plain.at(512));
  const LoopTimes loop{{128, 512}, {0.95 * parts128, parts512}, "a test loop"};
  const StepModel steps(m, loop);
  const StepTimes t = steps.at(128);
  EXPECT_EQ(t.overhead_s, 0.0);  // never a negative op
  EXPECT_NEAR(t.parts_scale, 0.95, 1e-12);
  EXPECT_NEAR(step_sum(t), 0.95 * parts128, 1e-12);  // the step sums to the measured loop
  EXPECT_NEAR(t.forward_s[1], 0.95 * plain.at(128).forward_s[1], 1e-15);
  // Half way (320): excess = -0.05 parts128 / 2, linear in the batch.
  EXPECT_NEAR(steps.excess_at(320), -0.025 * parts128, 1e-12);
  EXPECT_NEAR(step_sum(steps.at(512)), parts512, 1e-12);
}

TEST(StepModel, AboveTheLargestBatchTheLoopKeepsItsRatioToItsParts) {
  const Profile p = testing::synthetic_profile();  // measured up to batch 2048
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const StepModel plain(m, fused_loop(m));
  // A loop 10% above its parts at every measured batch.
  LoopTimes loop{m.batches, {}, "a test loop"};
  for (int64_t b : m.batches) loop.iteration_s.push_back(1.1 * step_sum(plain.at(b)));
  const StepModel steps(m, loop);
  // At 8192 the excess is 10% of the parts there, not the 2048 excess held:
  // excess(8192) = excess(2048) * parts(8192) / parts(2048) = 0.1 * parts(8192).
  const StepTimes t = steps.at(8192);
  EXPECT_NEAR(t.overhead_s, 0.1 * step_sum(plain.at(8192)), 1e-9);
  // Below the smallest measured batch (32) the excess is held.
  EXPECT_NEAR(steps.at(8).overhead_s, 0.1 * step_sum(plain.at(32)), 1e-12);
}

TEST(StepModel, RejectsArraysNotAlignedWithBatchesAndImpossibleLoops) {
  Profile p = testing::synthetic_profile();
  ModelProfile m = p.models.at("resnet18-cifar");
  const LoopTimes loop = fused_loop(m);
  m.loss_s.pop_back();
  EXPECT_THROW(StepModel(m, loop), std::invalid_argument);
  const ModelProfile& good = p.models.at("resnet18-cifar");
  EXPECT_THROW(StepModel(good, LoopTimes{{32, 128}, {1.0}, "short"}), std::invalid_argument);
  // A loop at less than half its parts cannot be a measurement of the same work, and parts that
  // are all 0 say nothing about the steps: the profile's values do not fit together.
  EXPECT_THROW(StepModel(good, LoopTimes{{128}, {1e-6}, "too fast"}), ProfileInconsistency);
  ModelProfile zero = good;
  for (LayerProfile& l : zero.layers) {
    std::fill(l.forward_s.begin(), l.forward_s.end(), 0.0);
    std::fill(l.backward_s.begin(), l.backward_s.end(), 0.0);
  }
  for (std::vector<double>* v : {&zero.loss_s, &zero.zero_grad_s, &zero.optimizer_s}) std::fill(v->begin(), v->end(), 0.0);
  EXPECT_THROW(StepModel(zero, fused_loop(zero)), ProfileInconsistency);
}

TEST(LoaderModel, FollowsMeasuredPointsAndCapsBeyondThem) {
  LoaderProfile lp;
  lp.points = {{1, 1000, std::nullopt}, {3, 2400, std::nullopt}};
  const LoaderModel loader(lp);
  EXPECT_EQ(loader.samples_per_s(3), 2400);
  EXPECT_DOUBLE_EQ(loader.samples_per_s(2), 1700);  // linear between 1 and 3 workers
  // Beyond 3: 6 x (2400 / 3) = 4800, capped at the best measured 2400.
  EXPECT_DOUBLE_EQ(loader.samples_per_s(6), 2400);
  EXPECT_NE(loader.note(6), "");
  // Inline (0 workers) not measured: one worker's rate.
  EXPECT_DOUBLE_EQ(loader.samples_per_s(0), 1000);
  EXPECT_NE(loader.note(0), "");
  EXPECT_EQ(loader.note(2), "");
}

// PyTorch's DataLoader measured at more than one batch: its rate at the training batch. The time
// per sample is linear in 1/batch between measured batches (per-sample work + per-batch work / b),
// held outside them; worker counts are kept, start-up stays the main batch's.
TEST(LoaderModel, TakesTheRateAtTheTrainingBatch) {
  LoaderProfile lp;
  lp.batch = 128;
  lp.points = {{0, 3000, 0.0}, {2, 6000, 0.08}};
  std::string note;
  // Without other batches: the profile as it is, no note.
  EXPECT_EQ(loader_at_batch(lp, 512, &note).points[1].samples_per_s, 6000);
  EXPECT_EQ(note, "");
  lp.at_batches = {{512, {{0, 2500, std::nullopt}, {2, 8000, std::nullopt}}}, {2048, {{2, 9000, std::nullopt}}}};
  const LoaderProfile at512 = loader_at_batch(lp, 512, &note);
  EXPECT_EQ(note, "loader: rates measured at batch 512");
  EXPECT_DOUBLE_EQ(at512.points[0].samples_per_s, 2500);
  EXPECT_DOUBLE_EQ(at512.points[1].samples_per_s, 8000);
  EXPECT_EQ(at512.points[1].startup_s, std::optional<double>(0.08));
  EXPECT_TRUE(at512.at_batches.empty());
  // Batch 256: u = (1/256 - 1/128) / (1/512 - 1/128) = 2/3 of the way in 1/batch.
  const LoaderProfile at256 = loader_at_batch(lp, 256, &note);
  EXPECT_DOUBLE_EQ(at256.points[1].samples_per_s, 1 / (1.0 / 6000 + 2.0 / 3 * (1.0 / 8000 - 1.0 / 6000)));
  EXPECT_EQ(note, "loader: rates at batch 256 interpolated between the measured batches 128 and 512 "
                  "(time per sample linear in 1/batch)");
  // Outside the measured batches: the nearest one's rates; 0 workers only up to batch 512.
  const LoaderProfile at32 = loader_at_batch(lp, 32, &note);
  EXPECT_DOUBLE_EQ(at32.points[1].samples_per_s, 6000);
  EXPECT_EQ(note, "loader: rates at batch 32 held at the nearest measured batch, 128");
  const LoaderProfile at8192 = loader_at_batch(lp, 8192, &note);
  EXPECT_DOUBLE_EQ(at8192.points[1].samples_per_s, 9000);
  EXPECT_DOUBLE_EQ(at8192.points[0].samples_per_s, 2500);
  // Monotone between the measured rates.
  double last = 0;
  for (int64_t b : {128, 192, 256, 384, 512}) {
    const double rate = loader_at_batch(lp, b).points[1].samples_per_s;
    EXPECT_GE(rate, last) << b;
    last = rate;
  }
}

TEST(MemoryModel, FitsAStraightLineOverMeasuredPeaks) {
  const Profile p = testing::synthetic_profile();
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const MemoryModel memory(m);
  double buffers = 0;
  for (const LayerProfile& l : m.layers) buffers += static_cast<double>(l.buffer_bytes);
  // static = 3 x 44,695,848 + buffers; the synthetic peaks are static + 100 MB + 2 MB * b exactly.
  EXPECT_DOUBLE_EQ(memory.static_bytes(), 3.0 * 44695848 + buffers);
  EXPECT_NEAR(memory.replica_peak_bytes(10000), memory.static_bytes() + 100e6 + 2e6 * 10000, 1.0);
}

TEST(MemoryModel, OneMeasuredPeakScalesActivationsProportionally) {
  ModelProfile m = testing::synthetic_profile().models.at("resnet18-cifar");
  m.batches = {100};
  m.peak_memory_bytes.clear();
  const MemoryModel unfitted(m);  // static part only
  EXPECT_FALSE(unfitted.measured());
  m.peak_memory_bytes = {unfitted.static_bytes() + 5e8};  // 500 MB of activations at batch 100
  for (LayerProfile& l : m.layers) {
    l.forward_s.resize(1);
    l.backward_s.resize(1);
  }
  const MemoryModel memory(m);
  // 500 MB at 100 -> 1 GB at 200, on top of the static part.
  EXPECT_NEAR(memory.replica_peak_bytes(200), memory.static_bytes() + 1e9, 1.0);
}

// With the steady-state peak measured apart, the OOM verdict is the steady one's and the first
// iteration's (autotuning workspaces) is predicted beside it.
TEST(MemoryModel, TheVerdictUsesTheSteadyStatePeakWhereMeasured) {
  testing::SyntheticKnobs k;
  k.device_memory_bytes = 1.8e9;
  Profile p = testing::synthetic_profile(k);
  ModelProfile& m = p.models.at("resnet18-cifar");
  const MemoryModel first(m);
  // Steady: 1 MB per sample instead of 2 (the first iteration's workspaces gone).
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    m.steady_peak_memory_bytes.push_back(first.static_bytes() + 100e6 + 1e6 * static_cast<double>(m.batches[i]));
  }
  const MemoryModel steady(m);
  EXPECT_TRUE(steady.steady());
  EXPECT_NEAR(steady.replica_peak_bytes(1024), first.static_bytes() + 100e6 + 1024e6, 1.0);
  EXPECT_NEAR(MemoryModel(m, MemoryModel::Peak::kFirst).replica_peak_bytes(1024),
              first.static_bytes() + 100e6 + 2048e6, 1.0);
  RunSpec spec;
  spec.strategy = Strategy::kDdp;
  spec.gpus = 1;
  spec.batch_per_gpu = 1024;
  spec.train_samples = 1024 * 8;
  spec.loader_workers = 2;
  const SimResult r = simulate_run(p, "resnet18-cifar", spec, SimOptions{});
  EXPECT_TRUE(r.fits);  // 1.3 GB steady; the first iteration's 2.3 GB would not fit in 1.8 GB
  EXPECT_NEAR(r.peak_mem_bytes, steady.replica_peak_bytes(1024), 1.0);
  EXPECT_NEAR(r.first_iteration_peak_mem_bytes, first.replica_peak_bytes(1024), 1.0);
  // Without the steady peaks: the first iteration's, and nothing beside it.
  m.steady_peak_memory_bytes.clear();
  const SimResult old = simulate_run(p, "resnet18-cifar", spec, SimOptions{});
  EXPECT_FALSE(old.fits);
  EXPECT_EQ(old.first_iteration_peak_mem_bytes, 0.0);
}

TEST(MemoryModel, FitsNeedsRoomAndABatchBelowTheMeasuredOom) {
  ModelProfile m = testing::synthetic_profile().models.at("resnet18-cifar");
  EXPECT_TRUE(fits_in_memory(1e9, 2e9, 512, m));
  EXPECT_FALSE(fits_in_memory(3e9, 2e9, 512, m));
  m.oom_batch = 512;
  EXPECT_FALSE(fits_in_memory(1e9, 2e9, 512, m));
  EXPECT_TRUE(fits_in_memory(1e9, 2e9, 511, m));
}

TEST(DdpBuckets, ResNet18CifarHasThreeBuckets) {
  ModelProfile m;
  m.layers = testing::resnet18_cifar_layers();
  ASSERT_EQ(m.param_bytes(), 44695848);
  const std::vector<GradientBucket> buckets = ddp_buckets(m);
  // Reverse registration order, caps 1 MiB (1,048,576) then 25 MiB (26,214,400), a bucket
  // closes once it reaches its cap:
  //  bucket 0: linear.bias 40 + linear.weight 20,480 + layer4.1.bn2.bias 2,048 + bn2.weight
  //            2,048 = 24,616 < 1 MiB; + layer4.1.conv2.weight 9,437,184 = 9,461,800 >= 1 MiB:
  //            5 tensors, ready after layer4.1's backward.
  //  bucket 1: layer4.1 bn1.bias, bn1.weight, conv1.weight (2,048 + 2,048 + 9,437,184) +
  //            layer4.0 (shortcut.1 4,096 + shortcut.0 524,288 + bn2 4,096 + conv2 9,437,184 +
  //            bn1 4,096 + conv1 4,718,592) = 24,133,632 < 25 MiB; + layer3.1 bn2 (1,024 +
  //            1,024) + conv2.weight 2,359,296 = 26,494,976 >= 25 MiB: 3 + 9 + 3 = 15 tensors,
  //            ready after layer3.1's backward.
  //  bucket 2: the rest, 44,695,848 - 9,461,800 - 26,494,976 = 8,739,072 bytes, 62 - 20 = 42
  //            tensors, ready after the stem's backward (layer 0).
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].bytes, 9461800);
  EXPECT_EQ(buckets[0].tensors, 5);
  EXPECT_EQ(buckets[0].ready_after_layer, 8);  // layer4.1 (stem 0, layer1.0 1, ..., head 9)
  EXPECT_EQ(buckets[1].bytes, 26494976);
  EXPECT_EQ(buckets[1].tensors, 15);
  EXPECT_EQ(buckets[1].ready_after_layer, 6);  // layer3.1
  EXPECT_EQ(buckets[2].bytes, 8739072);
  EXPECT_EQ(buckets[2].tensors, 42);
  EXPECT_EQ(buckets[2].ready_after_layer, 0);  // stem
}

TEST(Coalescing, TwoTakeTensorsRulesDiffer) {
  // [6, 6, 6] with a limit of 10: closing at the limit gives 6+6 = 12 >= 10, then 6 -> [12, 6];
  // never exceeding it gives [6, 6, 6] (6 + 6 > 10 each time).
  EXPECT_EQ(coalesce_close_at_limit({6, 6, 6}, 10), (std::vector<int64_t>{12, 6}));
  EXPECT_EQ(coalesce_before_exceeding({6, 6, 6}, 10), (std::vector<int64_t>{6, 6, 6}));
  // Exactly at the limit: [5, 5, 3] -> close at 10 -> [10, 3] by both rules.
  EXPECT_EQ(coalesce_close_at_limit({5, 5, 3}, 10), (std::vector<int64_t>{10, 3}));
  EXPECT_EQ(coalesce_before_exceeding({5, 5, 3}, 10), (std::vector<int64_t>{10, 3}));
}

}  // namespace
}  // namespace trainsim::train
