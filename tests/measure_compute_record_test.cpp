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
  t.steady_peak_memory_bytes = batch * 100.0;
  t.minor_faults = batch * 10.0;
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
    EXPECT_DOUBLE_EQ(model.steady_peak_memory_bytes.at(k), b * 100.0);
    EXPECT_DOUBLE_EQ(model.minor_faults.at(k), b * 10.0);
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

// A GPU's host issue times (from the same runs as the device times) stay aligned with the
// batches; a batch measured without them (a CPU run resumed on a GPU, or the reverse) clears them.
TEST(RecordBatch, HostIssueTimesStayAlignedOrAreCleared) {
  auto model = trainsim::models::describe_model("resnet18-cifar");
  const size_t stages = model.layers.size();
  const auto with_host = [&](int64_t b) {
    BatchTimings t = timings(b, stages);
    for (size_t i = 0; i < stages; ++i) {
      t.host_forward_s.push_back(b + 0.01 * static_cast<double>(i) + 0.001);
      t.host_backward_s.push_back(b + 0.01 * static_cast<double>(i) + 0.002);
    }
    t.host_loss_s = b + 0.003;
    t.host_zero_grad_s = b + 0.004;
    t.host_optimizer_s = b + 0.005;
    return t;
  };
  record_batch(model, with_host(128));
  record_batch(model, with_host(32));
  ASSERT_TRUE(model.has_host_issue());
  EXPECT_EQ(model.host_optimizer_s, (std::vector<double>{32.005, 128.005}));
  EXPECT_EQ(model.host_loss_s, (std::vector<double>{32.003, 128.003}));
  EXPECT_DOUBLE_EQ(model.layers[3].host_backward_s[1], 128.032);
  // A batch without a steady-state peak clears them all, like the issue times.
  BatchTimings no_steady = timings(512, stages);
  no_steady.steady_peak_memory_bytes.reset();
  auto other = model;
  record_batch(other, no_steady);
  EXPECT_TRUE(other.steady_peak_memory_bytes.empty());
  EXPECT_EQ(model.steady_peak_memory_bytes, (std::vector<double>{3200, 12800}));
  // A batch whose faults were not counted clears them likewise.
  BatchTimings uncounted = timings(512, stages);
  uncounted.minor_faults.reset();
  auto another = model;
  record_batch(another, uncounted);
  EXPECT_TRUE(another.minor_faults.empty());
  EXPECT_EQ(model.minor_faults, (std::vector<double>{320, 1280}));
  record_batch(model, timings(64, stages));  // measured on a CPU: no issue times
  EXPECT_FALSE(model.has_host_issue());
  EXPECT_TRUE(model.layers[0].host_forward_s.empty());
  record_batch(model, with_host(256));  // the earlier batches have none to align with
  EXPECT_FALSE(model.has_host_issue());
  EXPECT_TRUE(model.host_loss_s.empty());
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
