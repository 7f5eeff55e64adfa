// Sweep order, the traced configuration and --trace-config parsing.

#include <gtest/gtest.h>

#include "report/sweep.h"

namespace trainsim::report {
namespace {

SweepConfig config(std::vector<Strategy> strategies, std::vector<int> gpus, std::vector<int64_t> batches) {
  SweepConfig c;
  c.train_samples = 1234;
  c.loader_workers = 3;
  c.interconnect = InterconnectAssumption{50.0, 10.0, true};
  c.strategies = std::move(strategies);
  c.gpus = std::move(gpus);
  c.batch_per_gpu = std::move(batches);
  return c;
}

TEST(SweepSpecs, StrategyThenGpusThenBatchInConfigOrder) {
  const auto specs = sweep_specs(config({Strategy::kDdp, Strategy::kDp}, {2, 1}, {64, 32}));
  ASSERT_EQ(specs.size(), 8u);  // 2 strategies x 2 gpu counts x 2 batches
  const std::vector<std::tuple<Strategy, int, int64_t>> expected{
      {Strategy::kDdp, 2, 64}, {Strategy::kDdp, 2, 32}, {Strategy::kDdp, 1, 64}, {Strategy::kDdp, 1, 32},
      {Strategy::kDp, 2, 64},  {Strategy::kDp, 2, 32},  {Strategy::kDp, 1, 64},  {Strategy::kDp, 1, 32}};
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(std::make_tuple(specs[i].strategy, specs[i].gpus, specs[i].batch_per_gpu), expected[i]) << i;
    EXPECT_EQ(specs[i].train_samples, 1234);
    EXPECT_EQ(specs[i].loader_workers, 3);
    ASSERT_TRUE(specs[i].interconnect.has_value());
    EXPECT_EQ(specs[i].interconnect->bus_bandwidth_gbs, 50.0);
  }
}

TEST(SweepSpecs, CarrySyncBatchNorm) {
  SweepConfig c = config({Strategy::kDdp}, {2}, {32});
  EXPECT_FALSE(sweep_specs(c).at(0).sync_batchnorm);
  c.sync_batchnorm = true;
  EXPECT_TRUE(sweep_specs(c).at(0).sync_batchnorm);
  EXPECT_TRUE(parse_trace_config("ddp:4:64", c).sync_batchnorm);  // a traced run uses it too
}

TEST(DefaultTraceSpec, DdpAtTheLargestGpuCountAndBatch128) {
  const RunSpec spec = default_trace_spec(config({Strategy::kDp, Strategy::kDdp}, {1, 4, 2}, {32, 128, 512}));
  EXPECT_EQ(spec.strategy, Strategy::kDdp);
  EXPECT_EQ(spec.gpus, 4);
  EXPECT_EQ(spec.batch_per_gpu, 128);
  EXPECT_EQ(spec.loader_workers, 3);
}

TEST(DefaultTraceSpec, OtherwiseTheFirstStrategyAndFirstBatch) {
  const RunSpec spec = default_trace_spec(config({Strategy::kDp}, {2, 1}, {64, 32}));
  EXPECT_EQ(spec.strategy, Strategy::kDp);
  EXPECT_EQ(spec.gpus, 2);
  EXPECT_EQ(spec.batch_per_gpu, 64);
}

TEST(ParseTraceConfig, ReadsStrategyGpusAndBatch) {
  const RunSpec spec = parse_trace_config("dp:8:256", config({Strategy::kDdp}, {1}, {32}));
  EXPECT_EQ(spec.strategy, Strategy::kDp);
  EXPECT_EQ(spec.gpus, 8);
  EXPECT_EQ(spec.batch_per_gpu, 256);
  EXPECT_EQ(spec.train_samples, 1234);
}

// --trace-config ddp:1000000:128 once hung; a batch of 1 over a long epoch made the trace
// simulate more iterations than any sweep may.
TEST(ParseTraceConfig, RejectsMoreGpusOrIterationsThanTheSimulatorTakes) {
  auto c = config({Strategy::kDdp}, {1}, {32});
  EXPECT_NO_THROW(parse_trace_config("ddp:4096:128", c));
  EXPECT_THROW(parse_trace_config("ddp:1000000:128", c), UsageError);
  EXPECT_THROW(parse_trace_config("dp:4097:128", c), UsageError);
  c.train_samples = 10'000'001;
  EXPECT_NO_THROW(parse_trace_config("ddp:2:1", c));
  EXPECT_THROW(parse_trace_config("ddp:1:1", c), UsageError);
  EXPECT_THROW(parse_trace_config("dp:1:1", c), UsageError);
}

TEST(ParseTraceConfig, RejectsMalformedText) {
  const auto c = config({Strategy::kDdp}, {1}, {32});
  for (const char* bad : {"", "ddp", "ddp:4", "ddp:4:128:1", "sgd:4:128", "ddp:0:128", "ddp:4:0", "ddp:-1:128",
                          "ddp:4:12x", "ddp:four:128", "ddp:99999999999:128", "ddp::128"}) {
    EXPECT_THROW(parse_trace_config(bad, c), UsageError) << bad;
  }
}

}  // namespace
}  // namespace trainsim::report
