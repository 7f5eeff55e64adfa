// Sweep order, the sweep on several threads, the traced configuration and --trace-config parsing.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "format/errors.h"
#include "format/profile_io.h"
#include "report/csv.h"
#include "report/report.h"
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

// The fixture profile (a made-up GPU) swept over 2 strategies x 3 GPU counts x 5 batches.
class RunSweep : public ::testing::Test {
 protected:
  RunSweep() : profile_(load_profile(std::string(TRAINSIM_FIXTURES_DIR) + "/report/profile.yaml")) {
    config_ = config({Strategy::kDp, Strategy::kDdp}, {1, 2, 4}, {16, 32, 64, 128, 256});
    config_.file = "sweep.yaml";
    config_.model = "resnet18-cifar";
    config_.train_samples = 5000;
    config_.loader_workers = 2;
    config_.interconnect.reset();
  }
  Profile profile_;
  SweepConfig config_;
};

// Each configuration lands at its own index: any thread count gives the same results, in order.
TEST_F(RunSweep, ResultsDoNotDependOnTheThreadCount) {
  const std::vector<SimResult> one = run_sweep(profile_, config_, {});
  ASSERT_EQ(one.size(), 30u);
  const std::string expected = format_predictions_csv(one, config_.model);
  for (int threads : {2, 3, 8, 64}) {
    EXPECT_EQ(format_predictions_csv(run_sweep(profile_, config_, {}, {}, {}, threads), config_.model), expected)
        << threads << " threads";
  }
}

// Refusals are decided before the sweep (on the calling thread), and progress is reported there.
TEST_F(RunSweep, RefusalsAndProgressStayOnTheCallingThread) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  size_t last_done = 0;
  const SweepRefusal refuse = [&](const RunSpec& spec) -> std::optional<std::string> {
    if (std::this_thread::get_id() != caller) ++elsewhere;
    if (spec.gpus == 4) return std::string("four is too many");
    return std::nullopt;
  };
  const SweepProgress progress = [&](size_t done, size_t total) {
    if (std::this_thread::get_id() != caller) ++elsewhere;
    EXPECT_EQ(total, 30u);
    last_done = std::max(last_done, done);
  };
  const std::vector<SimResult> results = run_sweep(profile_, config_, {}, progress, refuse, 4);
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_GT(last_done, 0u);
  for (const SimResult& r : results) {
    EXPECT_EQ(r.runnable, r.spec.gpus != 4) << config_label(r.spec);
    if (!r.runnable) {
      EXPECT_EQ(r.not_runnable, "four is too many");
    }
  }
}

// A time beyond the simulator's range fails the configurations with 2 or more GPUs (the
// interconnect's latency); the error names the first of them in sweep order on any thread count.
TEST_F(RunSweep, TheEarliestFailingConfigurationIsTheErrorOnAnyThreadCount) {
  config_.interconnect = InterconnectAssumption{50.0, 1e300, true};
  for (int threads : {1, 2, 5}) {
    try {
      run_sweep(profile_, config_, {}, {}, {}, threads);
      ADD_FAILURE() << threads << " threads: expected InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "dp:2:16") << threads << " threads: " << e.what();
    }
  }
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
