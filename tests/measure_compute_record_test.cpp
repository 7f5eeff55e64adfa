// Recording compute timings into a ModelProfile: batches stay ascending and every per-batch
// array stays aligned, whatever order the batches were measured in (--resume, OOM retries).
#include <gtest/gtest.h>

#include "models/describe.h"
#include "profiler/compute.h"
#include "stats.h"

namespace {

using trainsim::measure::profiler::BatchTimings;
using trainsim::measure::profiler::has_batch;
using trainsim::measure::profiler::record_batch;

// Timings whose every value encodes the batch, so misalignment shows: stage i forward =
// batch + i/100, backward = batch + i/100 + 0.5, the rest batch + a fixed fraction.
BatchTimings timings(int64_t batch, size_t stages) {
  BatchTimings t;
  t.batch = batch;
  for (size_t i = 0; i < stages; ++i) {
    t.forward_s.push_back(static_cast<double>(batch) + static_cast<double>(i) / 100.0);
    t.backward_s.push_back(static_cast<double>(batch) + static_cast<double>(i) / 100.0 + 0.5);
  }
  t.loss_s = batch + 0.1;
  t.zero_grad_s = batch + 0.2;
  t.optimizer_s = batch + 0.3;
  t.iteration_s = batch + 0.4;
  t.ddp_iteration_s = batch + 0.45;
  t.peak_memory_bytes = batch * 1000.0;
  return t;
}

TEST(RecordBatch, KeepsBatchesAscendingAndArraysAligned) {
  auto model = trainsim::models::describe_model("resnet18-cifar");
  const size_t stages = model.layers.size();
  for (int64_t b : {128, 32, 512, 64}) record_batch(model, timings(b, stages));
  EXPECT_EQ(model.batches, (std::vector<int64_t>{32, 64, 128, 512}));
  for (size_t k = 0; k < model.batches.size(); ++k) {
    const double b = static_cast<double>(model.batches[k]);
    EXPECT_DOUBLE_EQ(model.loss_s[k], b + 0.1);
    EXPECT_DOUBLE_EQ(model.zero_grad_s[k], b + 0.2);
    EXPECT_DOUBLE_EQ(model.optimizer_s[k], b + 0.3);
    EXPECT_DOUBLE_EQ(model.iteration_s[k], b + 0.4);
    EXPECT_DOUBLE_EQ(model.ddp_iteration_s.at(k), b + 0.45);
    EXPECT_DOUBLE_EQ(model.peak_memory_bytes[k], b * 1000.0);
    for (size_t i = 0; i < stages; ++i) {
      EXPECT_DOUBLE_EQ(model.layers[i].forward_s[k], b + static_cast<double>(i) / 100.0);
      EXPECT_DOUBLE_EQ(model.layers[i].backward_s[k], b + static_cast<double>(i) / 100.0 + 0.5);
    }
  }
  EXPECT_TRUE(has_batch(model, 64));
  EXPECT_FALSE(has_batch(model, 256));
}

TEST(RecordBatch, DdpIterationStaysAlignedOrIsCleared) {
  auto model = trainsim::models::describe_model("resnet18-cifar");
  const size_t stages = model.layers.size();
  record_batch(model, timings(64, stages));
  record_batch(model, timings(32, stages));
  EXPECT_EQ(model.ddp_iteration_s, (std::vector<double>{32.45, 64.45}));
  // A batch measured without the DDP loop: no value for it, so none for any batch.
  BatchTimings without = timings(128, stages);
  without.ddp_iteration_s.reset();
  record_batch(model, without);
  EXPECT_TRUE(model.ddp_iteration_s.empty());
  // ... and it stays empty (the earlier batches have no value to align with).
  record_batch(model, timings(256, stages));
  EXPECT_TRUE(model.ddp_iteration_s.empty());
  EXPECT_EQ(model.batches.size(), 4u);
}

TEST(RecordBatch, RejectsADuplicateOrAStageMismatch) {
  auto model = trainsim::models::describe_model("resnet18-cifar");
  record_batch(model, timings(32, model.layers.size()));
  EXPECT_THROW(record_batch(model, timings(32, model.layers.size())), std::invalid_argument);
  EXPECT_THROW(record_batch(model, timings(64, model.layers.size() - 1)), std::invalid_argument);
}

TEST(BatchTimings, SumOfPartsAddsStagesLossZeroGradAndStep) {
  BatchTimings t;
  t.forward_s = {1, 2};
  t.backward_s = {3, 4};
  t.loss_s = 5;
  t.zero_grad_s = 6;
  t.optimizer_s = 7;
  t.iteration_s = 100;  // not part of the sum
  EXPECT_DOUBLE_EQ(t.sum_of_parts_s(), 28.0);  // 1+2+3+4+5+6+7
}

TEST(Median, OddAndEvenCounts) {
  using trainsim::measure::median;
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);  // (2 + 3) / 2
  EXPECT_THROW(median({}), std::invalid_argument);
}

}  // namespace
