// `simulate --compare`: the runs.csv reader, the join with its one-side listings and repeat
// averaging, the MAPE arithmetic, the plot script, and the program end to end on the fixture in
// tests/fixtures/compare/ (hand-written "measured" runs against the hand-written report profile).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/errors.h"
#include "report/compare.h"
#include "report/compare_format.h"
#include "report/gnuplot.h"
#include "report/plots.h"
#include "temp_dir.h"

namespace trainsim::report {
namespace {

namespace fs = std::filesystem;

const std::string kHeader = "strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s,train_s";

// ---------------------------------------------------------------------------------------------
// runs.csv reader

TEST(RunsCsv, ReadsRequiredColumnsInAnyOrderAndKeepsDataAndDevice) {
  // Columns shuffled, with extra ones (measure's full header has 17); a quoted field with a comma.
  const RunsTable t = parse_runs_csv(
      "date,train_s,epoch_s,data,strategy,batch_per_gpu,gpus,device,train_samples,loader_workers\n"
      "\"2000-01-01, noon\",1.5,2.5,synthetic,ddp,128,2,cpu,2048,1\n"
      "x,0.25,0.5,cifar10,dp,32,1,cuda,2048,0\r\n",  // a CRLF line end is accepted
      "runs.csv");
  EXPECT_EQ(t.file, "runs.csv");
  EXPECT_EQ(t.rows, 2);
  ASSERT_EQ(t.configs.size(), 2u);
  const MeasuredConfig& a = t.configs[0];
  EXPECT_EQ(a.key.strategy, Strategy::kDdp);
  EXPECT_EQ(a.key.gpus, 2);
  EXPECT_EQ(a.key.batch_per_gpu, 128);
  EXPECT_EQ(a.key.loader_workers, 1);
  EXPECT_EQ(a.key.train_samples, 2048);
  EXPECT_EQ(a.runs, 1);
  EXPECT_DOUBLE_EQ(a.epoch_s.median, 2.5);
  EXPECT_DOUBLE_EQ(a.train_s.median, 1.5);
  EXPECT_EQ(a.key.trainer, Trainer::kTrainsim);  // no trainer column: measure train's rows
  EXPECT_FALSE(t.has_trainer_column);
  EXPECT_EQ(a.lines, std::vector<int>{2});
  EXPECT_EQ(t.configs[1].key.strategy, Strategy::kDp);
  EXPECT_EQ(t.configs[1].key.loader_workers, 0);
  EXPECT_EQ(t.data, (std::vector<std::string>{"synthetic", "cifar10"}));
  EXPECT_EQ(t.devices, (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(RunsCsv, RepeatsAreSummarisedByTheirMedianAndSpread) {
  const RunsTable t = parse_runs_csv(kHeader +
                                         "\n"
                                         "ddp,1,64,2,1000,1.0,0.5\n"   // line 2
                                         "ddp,1,64,2,1000,1.2,0.7\n"   // line 3
                                         "ddp,2,64,2,1000,0.6,0.3\n"   // line 4: another key
                                         "ddp,1,64,2,1000,1.1,0.6\n"   // line 5
                                         "ddp,1,64,2,2000,9.0,8.0\n"   // line 6: other samples, other key
                                         "ddp,2,64,2,1000,0.8,0.4\n",  // line 7: second repeat of line 4
                                     "runs.csv");
  EXPECT_EQ(t.rows, 6);
  ASSERT_EQ(t.configs.size(), 3u);  // in order of first appearance
  const MeasuredConfig& m = t.configs[0];
  EXPECT_EQ(m.runs, 3);
  EXPECT_EQ(m.lines, (std::vector<int>{2, 3, 5}));
  EXPECT_DOUBLE_EQ(m.epoch_s.median, 1.1);  // the middle of 1.0, 1.1, 1.2
  EXPECT_DOUBLE_EQ(m.epoch_s.min, 1.0);
  EXPECT_DOUBLE_EQ(m.epoch_s.max, 1.2);
  EXPECT_NEAR(m.epoch_s.noise_pct(), 0.2 / 1.1 * 100, 1e-9);  // (max - min) / median
  EXPECT_DOUBLE_EQ(m.train_s.median, 0.6);
  EXPECT_DOUBLE_EQ(m.train_s.min, 0.5);
  EXPECT_DOUBLE_EQ(m.train_s.max, 0.7);
  EXPECT_EQ(t.configs[1].key.gpus, 2);
  EXPECT_NEAR(t.configs[1].epoch_s.median, 0.7, 1e-12);  // an even count: (0.6 + 0.8) / 2
  EXPECT_EQ(t.configs[2].key.train_samples, 2000);
  EXPECT_TRUE(t.data.empty());  // no data column
  EXPECT_FALSE(m.probe_s.has_value());
  EXPECT_FALSE(m.load_before.has_value());
}

TEST(RunsCsv, ReadsTheTrainersColumnsProbeLoadAndTestPass) {
  // The header both trainers write (docs/RUNS.md), abridged to what the reader uses.
  const std::string header =
      "strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s,train_s,threads,trainer,test_samples,test_s,"
      "probe_s,load_before,load_after\n";
  const RunsTable t = parse_runs_csv(header +
                                         "ddp,2,32,1,512,10,9.5,1,pytorch,0,,0.9,0.1,1.9\n"
                                         "ddp,2,32,1,512,11,10.5,1,pytorch,0,,0.95,0.4,2.1\n"
                                         "ddp,2,32,1,512,10.5,10,1,trainsim,0,,,0.2,2.0\n"
                                         "ddp,1,32,0,512,20,20,1,pytorch,100,1.5,0.92,,\n",
                                     "runs.csv");
  EXPECT_TRUE(t.has_trainer_column);
  ASSERT_EQ(t.configs.size(), 3u);  // the trainer and the test pass are part of the key
  const MeasuredConfig& py = t.configs[0];
  EXPECT_EQ(py.key.trainer, Trainer::kPytorch);
  EXPECT_EQ(py.key.threads, 1);
  EXPECT_EQ(py.runs, 2);
  ASSERT_TRUE(py.probe_s.has_value());
  EXPECT_DOUBLE_EQ(py.probe_s->median, 0.925);  // (0.9 + 0.95) / 2
  EXPECT_DOUBLE_EQ(*py.load_before, 0.4);       // the highest
  EXPECT_DOUBLE_EQ(*py.load_after, 2.1);
  EXPECT_FALSE(py.test_s.has_value());
  EXPECT_EQ(t.configs[1].key.trainer, Trainer::kTrainsim);
  EXPECT_FALSE(t.configs[1].probe_s.has_value());  // --no-probe: empty
  EXPECT_EQ(t.configs[2].key.test_samples, 100);
  ASSERT_TRUE(t.configs[2].test_s.has_value());
  EXPECT_DOUBLE_EQ(t.configs[2].test_s->median, 1.5);
  EXPECT_FALSE(t.configs[2].load_before.has_value());
}

TEST(RunsCsv, AHeaderWithoutRowsIsAnEmptyTable) {
  const RunsTable t = parse_runs_csv(kHeader + "\n\n", "runs.csv");  // a trailing blank line is fine
  EXPECT_EQ(t.rows, 0);
  EXPECT_TRUE(t.configs.empty());
}

struct BadCase {
  std::string text;
  int line;
  std::string key;
  std::string message_part;
};

TEST(RunsCsv, BadInputNamesFileLineAndColumn) {
  const std::string h = kHeader + "\n";
  const std::string good = "ddp,1,32,2,1000,1.0,0.5\n";
  const std::vector<BadCase> cases{
      {"", 1, "header", "empty file"},
      {"strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s\n", 1, "train_s", "missing column"},
      {kHeader + ",gpus\n", 1, "gpus", "named twice"},
      {"strategy,,gpus\n", 1, "header", "no name"},
      {h + "ddp,1,32,2,1000,1.0\n", 2, "row", "has 6 fields, the header has 7"},
      {h + good + "horovod,1,32,2,1000,1.0,0.5\n", 3, "strategy", "'horovod' is not a strategy"},
      {h + "ddp,0,32,2,1000,1.0,0.5\n", 2, "gpus", "must be >= 1"},
      {h + "ddp,two,32,2,1000,1.0,0.5\n", 2, "gpus", "not a whole number"},
      // 4294967298 was once read as 2 (a cast to int) and scored as a 2-GPU run; the same for workers.
      {h + "ddp,4294967298,32,2,1000,1.0,0.5\n", 2, "gpus", "4294967298 must be <= 1048576"},
      {h + "ddp,1,32,4294967298,1000,1.0,0.5\n", 2, "loader_workers", "4294967298 must be <= 1024"},
      {kHeader + ",threads\n" + "ddp,1,32,2,1000,1.0,0.5,4294967297\n", 2, "threads", "must be <= 2147483647"},
      {h + "ddp,1.5,32,2,1000,1.0,0.5\n", 2, "gpus", "not a whole number"},
      {h + "ddp,1,-4,2,1000,1.0,0.5\n", 2, "batch_per_gpu", "must be >= 1"},
      {h + "ddp,1,32,-1,1000,1.0,0.5\n", 2, "loader_workers", "must be >= 0"},
      {h + "ddp,1,32,2,0,1.0,0.5\n", 2, "train_samples", "must be >= 1"},
      {h + "ddp,1,32,2,4611686018427387904,1.0,0.5\n", 2, "train_samples", "at most 10000000 are simulated"},
      {h + "ddp,1,32,2,1000,abc,0.5\n", 2, "epoch_s", "not a number"},
      {h + "ddp,1,32,2,1000,0,0.5\n", 2, "epoch_s", "> 0"},
      {h + "ddp,1,32,2,1000,-1,0.5\n", 2, "epoch_s", "> 0"},
      {h + "ddp,1,32,2,1000,nan,0.5\n", 2, "epoch_s", "finite"},
      {h + "ddp,1,32,2,1000,inf,0.5\n", 2, "epoch_s", "finite"},
      {h + "ddp,1,32,2,1000,1.0,\n", 2, "train_s", "not a number"},
      {h + good + good + "ddp,1,32,2,1000,1.0,1.5\n", 4, "train_s", "exceeds epoch_s"},
      {h + good + "\n" + good, 3, "row", "empty line"},
      {h + "ddp,1,32,2,1000,1.0,\"0.5\n", 2, "row", "quoted field is not closed"},
      {kHeader + ",trainer\n" + "ddp,1,32,2,1000,1.0,0.5,keras\n", 2, "trainer", "'keras' is not a trainer"},
      {kHeader + ",probe_s\n" + "ddp,1,32,2,1000,1.0,0.5,0\n", 2, "probe_s", "must be a finite number > 0"},
      {kHeader + ",load_before\n" + "ddp,1,32,2,1000,1.0,0.5,-1\n", 2, "load_before", ">= 0"},
      {kHeader + ",threads\n" + "ddp,1,32,2,1000,1.0,0.5,0\n", 2, "threads", "must be >= 1"},
      {kHeader + ",test_samples,test_s\n" + "ddp,1,32,2,1000,1.0,0.5,100,\n", 2, "test_s",
       "is empty but test_samples is 100"},
  };
  for (const auto& c : cases) {
    try {
      parse_runs_csv(c.text, "dir/runs.csv");
      ADD_FAILURE() << "accepted:\n" << c.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "dir/runs.csv") << c.text;
      EXPECT_EQ(e.line(), c.line) << c.text << "\n" << e.what();
      EXPECT_EQ(e.key(), c.key) << c.text << "\n" << e.what();
      EXPECT_NE(e.message().find(c.message_part), std::string::npos) << e.what() << "\nexpected: " << c.message_part;
      // The one line users see: FILE:LINE: key: message.
      EXPECT_EQ(std::string(e.what()).rfind("dir/runs.csv:" + std::to_string(c.line) + ": " + c.key + ": ", 0), 0u)
          << e.what();
    }
  }
}

TEST(RunsCsv, MissingFileIsAnInputErrorWithoutALine) {
  try {
    load_runs_csv("/nonexistent/trainsim/runs.csv");
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/trainsim/runs.csv");
    EXPECT_EQ(e.line(), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// The join

SimResult prediction(const RunSpec& spec, double epoch_s, double train_s) {
  SimResult r;
  r.spec = spec;
  r.epoch_s = epoch_s;
  r.train_s = train_s;
  return r;
}

SweepConfig small_config() {
  SweepConfig c;
  c.file = "sweep.yaml";
  c.train_samples = 1000;
  c.loader_workers = 2;
  c.trainer = Trainer::kTrainsim;
  c.strategies = {Strategy::kDdp};
  c.gpus = {1, 2};
  c.batch_per_gpu = {32, 128};
  return c;
}

SimResult sweep_cell(int gpus, int64_t batch, double epoch_s, double train_s) {
  RunKey key;
  key.strategy = Strategy::kDdp;
  key.gpus = gpus;
  key.batch_per_gpu = batch;
  key.loader_workers = 2;
  key.train_samples = 1000;
  return prediction(spec_for_measured(small_config(), key), epoch_s, train_s);
}

std::vector<SimResult> small_sweep() {
  return {sweep_cell(1, 32, 2.2, 1.0), sweep_cell(1, 128, 1.6, 0.9), sweep_cell(2, 32, 1.2, 0.5),
          sweep_cell(2, 128, 0.9, 0.45)};
}

class Join : public ::testing::Test {
 protected:
  // Predicts cells outside the sweep: 8 GPUs "cannot be predicted", others get fixed times.
  Comparison join(const std::string& rows, const std::string& header = kHeader, ProbeReference probe = {},
                  const SweepConfig& config = small_config()) {
    const RunsTable runs = parse_runs_csv(header + "\n" + rows, "runs.csv");
    return compare_runs(config, small_sweep(), runs, {32, 128}, probe, [this](const RunSpec& spec) {
      predicted_specs.push_back(spec);
      if (spec.gpus == 8) throw InputError("sweep.yaml", 1, "profile", "no all_reduce curve for 8 ranks");
      return prediction(spec, 3.0, 1.5);
    });
  }
  std::vector<RunSpec> predicted_specs;
};

TEST_F(Join, MatchesTheSweepSimulatesOtherCellsAndListsBothSides) {
  const Comparison c = join(
      "ddp,2,128,2,1000,1.0,0.5\n"   // line 2: in the sweep
      "ddp,1,32,2,1000,2.0,1.0\n"    // line 3: in the sweep
      "ddp,1,32,2,1000,2.4,1.0\n"    // line 4: repeat of line 3
      "ddp,1,64,2,1000,2.5,1.2\n"    // line 5: batch outside the sweep: simulated
      "dp,1,32,2,1000,2.0,1.0\n"     // line 6: strategy outside the sweep: simulated
      "ddp,2,128,0,1000,1.0,0.5\n"   // line 7: other loader workers: simulated with its own
      "ddp,8,32,2,1000,0.4,0.2\n");  // line 8: outside the sweep, the profile cannot predict it

  // Compared, in order: strategy (the config's first), gpus, loader workers, batch.
  ASSERT_EQ(c.compared.size(), 5u);
  const auto label = [](const ComparedRun& r) { return config_label(r.predicted.spec); };
  EXPECT_EQ(label(c.compared[0]), "ddp:1:32");
  EXPECT_EQ(label(c.compared[1]), "ddp:1:64");
  EXPECT_EQ(label(c.compared[2]), "ddp:2:128");  // 0 workers first
  EXPECT_EQ(c.compared[2].measured.key.loader_workers, 0);
  EXPECT_EQ(label(c.compared[3]), "ddp:2:128");
  EXPECT_EQ(label(c.compared[4]), "dp:1:32");
  EXPECT_TRUE(c.compared[0].in_sweep);
  EXPECT_FALSE(c.compared[1].in_sweep);
  EXPECT_FALSE(c.compared[2].in_sweep);
  EXPECT_FALSE(c.compared[2].in_setting);  // other workers than the config's
  EXPECT_TRUE(c.compared[3].in_sweep);
  EXPECT_TRUE(c.compared[3].in_setting);
  EXPECT_FALSE(c.compared[4].in_sweep);
  EXPECT_TRUE(c.compared[0].profiled_batch);   // 32 is among the profiled batches {32, 128}
  EXPECT_FALSE(c.compared[1].profiled_batch);  // 64 is not

  // The repeat: median (2.0 + 2.4) / 2 = 2.2, range 2.0..2.4; predicted 2.2 -> error 0%.
  EXPECT_EQ(c.compared[0].measured.runs, 2);
  EXPECT_EQ(c.compared[0].measured.lines, (std::vector<int>{3, 4}));
  EXPECT_NEAR(c.compared[0].measured.epoch_s.median, 2.2, 1e-12);
  EXPECT_NEAR(c.compared[0].epoch_error_pct, 0.0, 1e-9);
  // ddp:2:128: predicted 0.9 vs measured 1.0 -> (0.9 - 1.0) / 1.0 * 100 = -10%;
  // train 0.45 vs 0.5 -> -10%.
  EXPECT_NEAR(c.compared[3].epoch_error_pct, -10.0, 1e-9);
  EXPECT_NEAR(c.compared[3].train_error_pct, -10.0, 1e-9);
  // ddp:1:64 from the predictor: 3.0 vs 2.5 -> +20%; train 1.5 vs 1.2 -> +25%.
  EXPECT_NEAR(c.compared[1].epoch_error_pct, 20.0, 1e-9);
  EXPECT_NEAR(c.compared[1].train_error_pct, 25.0, 1e-9);

  // The predictor ran for every cell outside the grid, each with its own workers and samples.
  ASSERT_EQ(predicted_specs.size(), 4u);  // ddp:1:64, dp:1:32, ddp:2:128 (0 workers), ddp:8:32
  EXPECT_EQ(predicted_specs[2].loader_workers, 0);
  for (const auto& spec : predicted_specs) {
    EXPECT_EQ(spec.train_samples, 1000);
    EXPECT_EQ(spec.trainer, Trainer::kTrainsim);
    EXPECT_FALSE(spec.test_pass.has_value());
  }
  ASSERT_EQ(c.extra_predictions.size(), 3u);

  // Measured but not predicted: each with why.
  ASSERT_EQ(c.unpredicted.size(), 1u);
  EXPECT_EQ(c.unpredicted[0].measured.lines, std::vector<int>{8});
  EXPECT_NE(c.unpredicted[0].reason.find("no all_reduce curve for 8 ranks"), std::string::npos)
      << c.unpredicted[0].reason;

  // Predicted but not measured: the sweep's ddp:1:128 and ddp:2:32.
  ASSERT_EQ(c.unmeasured.size(), 2u);
  EXPECT_EQ(config_label(c.unmeasured[0]), "ddp:1:128");
  EXPECT_EQ(config_label(c.unmeasured[1]), "ddp:2:32");

  const std::string printed = format_comparison(c, parse_runs_csv(kHeader + "\n", "runs.csv"));
  EXPECT_NE(printed.find("Measured but not predicted: 1 configuration(s)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("ddp:8:32 (trainsim, W=2, 1000 samples, 1 run(s), runs.csv line 8): "
                         "the profile cannot predict it"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("Predicted but not measured: 2 configuration(s) of the sweep: ddp:1:128, ddp:2:32"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find(" 18.2 |"), std::string::npos) << printed;  // the repeat's noise: 0.4 / 2.2
}

TEST_F(Join, OtherThreadsThanTheProfilesAreNotPredicted) {
  ProbeReference probe;
  probe.threads = 1;
  const Comparison c = join("ddp,1,32,2,1000,2.0,1.0,2\nddp,1,32,2,1000,2.2,1.0,1\n", kHeader + ",threads", probe);
  ASSERT_EQ(c.compared.size(), 1u);
  ASSERT_EQ(c.unpredicted.size(), 1u);
  EXPECT_EQ(c.unpredicted[0].reason,
            "threads 2 != the profile's 1 (its compute timings are for that many intra-op threads)");
}

TEST_F(Join, RowsOfAnotherPrecisionThanTheConfigsAreNotPredicted) {
  // The config (and its profile) is fp32; an empty precision is fp32 too.
  const Comparison c = join("ddp,1,32,2,1000,2.0,1.0,bf16-amp\nddp,1,32,2,1000,2.2,1.0,\n", kHeader + ",precision");
  ASSERT_EQ(c.compared.size(), 1u);
  EXPECT_EQ(c.compared[0].measured.key.precision, Precision::kFp32);
  ASSERT_EQ(c.unpredicted.size(), 1u);
  EXPECT_EQ(c.unpredicted[0].measured.lines, std::vector<int>{2});
  EXPECT_EQ(c.unpredicted[0].reason, "precision bf16-amp, not the config's fp32 (the profile's)");
  // With other precisions listed (precision: a list), their rows are their own joins' (merge_variants).
  SweepConfig several = small_config();
  several.other_variants.push_back({Precision::kBf16Amp, MemoryFormat::kNchw, "bf16.yaml", 3});
  const Comparison other = join("ddp,1,32,2,1000,2.0,1.0,bf16-amp\n", kHeader + ",precision", {}, several);
  ASSERT_EQ(other.unpredicted.size(), 1u);
  EXPECT_EQ(other.unpredicted[0].reason, "precision bf16-amp, not the config's fp32 (the profile's) or another it lists");
  try {
    join("ddp,1,32,2,1000,2.0,1.0,fp8\n", kHeader + ",precision");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.key(), "precision");
  }
}

TEST_F(Join, RowsOfAnotherMemoryFormatThanTheConfigsAreNotPredicted) {
  // The config (and its profile) is nchw; an empty memory format is nchw too.
  const std::string header = kHeader + ",precision,memory_format";
  const Comparison c = join("ddp,1,32,2,1000,2.0,1.0,fp32,channels_last\nddp,1,32,2,1000,2.2,1.0,fp32,\n", header);
  ASSERT_EQ(c.compared.size(), 1u);
  EXPECT_EQ(c.compared[0].measured.key.memory_format, MemoryFormat::kNchw);
  ASSERT_EQ(c.unpredicted.size(), 1u);
  EXPECT_EQ(c.unpredicted[0].measured.lines, std::vector<int>{2});
  EXPECT_EQ(c.unpredicted[0].reason, "memory format channels_last, not the config's nchw (the profile's)");
  // A channels_last config predicts the channels_last rows and leaves the nchw ones out.
  SweepConfig last = small_config();
  last.memory_format = MemoryFormat::kChannelsLast;
  const Comparison l = join("ddp,1,32,2,1000,2.0,1.0,fp32,channels_last\nddp,1,32,2,1000,2.2,1.0,fp32,nchw\n", header,
                            {}, last);
  ASSERT_EQ(l.compared.size(), 1u);
  EXPECT_EQ(l.compared[0].measured.lines, std::vector<int>{2});
  ASSERT_EQ(l.unpredicted.size(), 1u);
  EXPECT_EQ(l.unpredicted[0].reason, "memory format nchw, not the config's channels_last (the profile's)");
  // With other formats listed (memory_format: a list), their rows are their own joins'.
  SweepConfig several = small_config();
  several.variant_axis = SweepConfig::VariantAxis::kMemoryFormat;
  several.other_variants.push_back({Precision::kFp32, MemoryFormat::kChannelsLast, "cl.yaml", 3});
  const Comparison other = join("ddp,1,32,2,1000,2.0,1.0,fp32,channels_last\n", header, {}, several);
  ASSERT_EQ(other.unpredicted.size(), 1u);
  EXPECT_EQ(other.unpredicted[0].reason,
            "memory format channels_last, not the config's nchw (the profile's) or another it lists");
  try {
    join("ddp,1,32,2,1000,2.0,1.0,fp32,nhwc\n", header);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.key(), "memory_format");
  }
}

TEST_F(Join, EachPrecisionIsComparedByItsOwnJoin) {
  // precision: [fp32, bf16-amp]: the tables' join (fp32) and bf16-amp's own, merged.
  SweepConfig fp32 = small_config();
  fp32.other_variants.push_back({Precision::kBf16Amp, MemoryFormat::kNchw, "bf16.yaml", 3});
  SweepConfig bf16 = small_config();
  bf16.precision = Precision::kBf16Amp;
  const std::string rows =
      "ddp,1,32,2,1000,2.0,1.0,\n"           // line 2: fp32 (an empty precision), in the sweep
      "ddp,1,32,2,1000,1.5,0.8,bf16-amp\n"   // line 3: bf16-amp, simulated by its own join
      "ddp,8,32,2,1000,0.4,0.2,bf16-amp\n";  // line 4: bf16-amp, which its profile cannot predict
  const Comparison tables = join(rows, kHeader + ",precision", {}, fp32);
  EXPECT_EQ(tables.unpredicted.size(), 2u);  // the tables' join leaves both bf16-amp rows
  predicted_specs.clear();
  const Comparison bf16_join = join(rows, kHeader + ",precision", {}, bf16);
  ASSERT_EQ(predicted_specs.size(), 2u);  // a sweep result of another precision is not its
  EXPECT_EQ(predicted_specs[0].precision, Precision::kBf16Amp);

  const Comparison c = merge_variants(tables, {{VariantKey{Precision::kBf16Amp, MemoryFormat::kNchw}, bf16_join}});
  ASSERT_EQ(c.compared.size(), 2u);
  EXPECT_EQ(c.compared[0].measured.key.precision, Precision::kFp32);
  EXPECT_TRUE(c.compared[0].in_setting);
  EXPECT_EQ(c.compared[1].measured.key.precision, Precision::kBf16Amp);
  EXPECT_FALSE(c.compared[1].in_setting);  // the side-by-side tables are the tables' precision's
  EXPECT_NEAR(c.compared[1].epoch_error_pct, (3.0 - 1.5) / 1.5 * 100, 1e-9);
  ASSERT_EQ(c.unpredicted.size(), 1u);  // only the reason of line 4's own precision's join
  EXPECT_EQ(c.unpredicted[0].measured.lines, std::vector<int>{4});
  EXPECT_EQ(c.unpredicted[0].reason.rfind("the profile cannot predict it: ", 0), 0u) << c.unpredicted[0].reason;
  EXPECT_EQ(c.unmeasured.size(), tables.unmeasured.size() + bf16_join.unmeasured.size());

  // Each precision's rows and lines, then each precision over all its configurations.
  const std::string table = format_comparison(c, RunsTable{});
  EXPECT_NE(table.find("| trainsim, 1 rank, fp32 "), std::string::npos) << table;
  EXPECT_NE(table.find("| trainsim, 1 rank, bf16-amp "), std::string::npos) << table;
  EXPECT_NE(table.find("| bf16-amp "), std::string::npos) << table;
  const std::vector<std::string> lines = format_group_mape_lines(c);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].rfind("MAPE epoch_s (trainsim, 1 rank, bf16-amp): 100.0% over 1 configuration; bias +100.0%", 0),
            0u)
      << lines[1];
  EXPECT_EQ(lines[3].rfind("MAPE epoch_s (bf16-amp): 100.0%", 0), 0u) << lines[3];
  const auto csv = format_comparison_csv(c);
  EXPECT_NE(csv.find(",test_error_pct,precision,memory_format\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",bf16-amp,nchw\n"), std::string::npos) << csv;
}

TEST_F(Join, EachMemoryFormatIsComparedByItsOwnJoin) {
  // memory_format: [nchw, channels_last]: the tables' join (nchw) and channels_last's own, merged.
  SweepConfig nchw = small_config();
  nchw.variant_axis = SweepConfig::VariantAxis::kMemoryFormat;
  nchw.other_variants.push_back({Precision::kFp32, MemoryFormat::kChannelsLast, "cl.yaml", 3});
  SweepConfig last = small_config();
  last.memory_format = MemoryFormat::kChannelsLast;
  const std::string header = kHeader + ",precision,memory_format";
  const std::string rows =
      "ddp,1,32,2,1000,2.0,1.0,fp32,nchw\n"             // line 2: nchw, in the sweep
      "ddp,1,32,2,1000,1.5,0.8,fp32,channels_last\n"    // line 3: channels_last, its own join's
      "ddp,1,32,2,1000,1.5,0.8,bf16-amp,channels_last\n";  // line 4: a precision no entry has
  const Comparison tables = join(rows, header, {}, nchw);
  EXPECT_EQ(tables.unpredicted.size(), 2u);
  const Comparison last_join = join(rows, header, {}, last);
  const Comparison c =
      merge_variants(tables, {{VariantKey{Precision::kFp32, MemoryFormat::kChannelsLast}, last_join}});
  ASSERT_EQ(c.compared.size(), 2u);
  EXPECT_EQ(c.compared[0].measured.key.memory_format, MemoryFormat::kNchw);
  EXPECT_TRUE(c.compared[0].in_setting);
  EXPECT_EQ(c.compared[1].measured.key.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_FALSE(c.compared[1].in_setting);
  ASSERT_EQ(c.unpredicted.size(), 1u);  // line 4: bf16-amp, the tables' join's reason
  EXPECT_EQ(c.unpredicted[0].measured.lines, std::vector<int>{4});
  EXPECT_EQ(c.unpredicted[0].reason.rfind("precision bf16-amp, not the config's fp32", 0), 0u) << c.unpredicted[0].reason;
  // Each format's rows, then each format over all its configurations.
  const std::string table = format_comparison(c, RunsTable{});
  EXPECT_NE(table.find("| trainsim, 1 rank, fp32 "), std::string::npos) << table;
  EXPECT_NE(table.find("| trainsim, 1 rank, fp32, channels_last "), std::string::npos) << table;
  const std::vector<std::string> lines = format_group_mape_lines(c);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3].rfind("MAPE epoch_s (fp32, channels_last): ", 0), 0u) << lines[3];
}

TEST_F(Join, RowsOfAnotherModelAreNotPredictedWhereTheFileNamesSeveral) {
  // The config's model is resnet18-cifar. Rows of two models with the same key stay apart.
  const Comparison mixed = join(
      "ddp,1,32,2,1000,2.0,1.0,resnet18-cifar\n"
      "ddp,1,32,2,1000,9.0,4.0,resnet50\n"
      "ddp,1,32,2,1000,2.4,1.0,\n",  // no model named: the config's
      kHeader + ",model");
  ASSERT_EQ(mixed.compared.size(), 2u);
  EXPECT_EQ(mixed.compared[0].measured.key.model, "resnet18-cifar");
  EXPECT_EQ(mixed.compared[1].measured.key.model, "");
  ASSERT_EQ(mixed.unpredicted.size(), 1u);
  EXPECT_EQ(mixed.unpredicted[0].measured.lines, std::vector<int>{3});
  EXPECT_EQ(mixed.unpredicted[0].reason,
            "model 'resnet50', not the config's 'resnet18-cifar' (runs.csv names resnet18-cifar, resnet50)");

  // A file of one other model is that network's runs under another name: compared (the report
  // warns, CompareProgram below).
  const Comparison single = join("ddp,1,32,2,1000,9.0,4.0,resnet50\n", kHeader + ",model");
  ASSERT_EQ(single.compared.size(), 1u);
  EXPECT_TRUE(single.unpredicted.empty());
}

// The profile's probe is the machine's speed when `measure` timed its own models; a model added
// later by `measure torchscript` or `measure import-trace` gets none (no drift), the others get it.
TEST(ProbeReference, NoneForAModelAddedLater) {
  Profile p;
  p.machine.threads = 2;
  p.calibration = Calibration{"resnet18-cifar", 32, 2, 0.9, 1.1};
  p.pytorch = PytorchProfile{};
  p.pytorch->probe_s = 1.5;
  p.models["resnet18-cifar"].source = "measure";
  p.models["resnet50"].source = "torchscript:models/resnet50.pt";
  p.models["vit-trace"].source = "trace:trace.json";
  const ProbeReference own = probe_reference(p, "resnet18-cifar");
  ASSERT_TRUE(own.trainsim_s && own.pytorch_s);
  EXPECT_DOUBLE_EQ(*own.trainsim_s, 1.0);
  EXPECT_DOUBLE_EQ(*own.pytorch_s, 1.5);
  for (const std::string later : {"resnet50", "vit-trace"}) {
    const ProbeReference r = probe_reference(p, later);
    EXPECT_FALSE(r.trainsim_s.has_value()) << later;
    EXPECT_FALSE(r.pytorch_s.has_value()) << later;
    EXPECT_EQ(r.threads, 2) << later;
  }
}

TEST_F(Join, DriftExplainsWhatTheModelDoesNot) {
  ProbeReference probe;
  probe.trainsim_s = 1.0;
  // ddp:1:32 predicted 2.2. Measured 2.0 and 2.1 (median 2.05, noise 0.1 / 2.05 = 4.9%): error
  // +7.3%; the machine ran the probe 5% faster during the runs (0.95 s): drift -5%, so the
  // drift-adjusted prediction 2.2 x 0.95 = 2.09 is +2.0% off. |7.3| <= 4.9 + 5: explained.
  const Comparison c = join("ddp,1,32,2,1000,2.0,1.0,0.95\nddp,1,32,2,1000,2.1,1.0,0.95\n"
                            // ddp:2:32 predicted 1.2, measured 1.0: +20%, drift 0: a model error.
                            "ddp,2,32,2,1000,1.0,0.5,1.0\n",
                            kHeader + ",probe_s", probe);
  ASSERT_EQ(c.compared.size(), 2u);
  const ComparedRun& one = c.compared[0];
  EXPECT_NEAR(one.epoch_error_pct, (2.2 - 2.05) / 2.05 * 100, 1e-9);
  ASSERT_TRUE(one.drift_pct.has_value());
  EXPECT_NEAR(*one.drift_pct, -5.0, 1e-9);
  EXPECT_NEAR(*one.drift_adjusted_error_pct, (2.2 * 0.95 - 2.05) / 2.05 * 100, 1e-9);
  EXPECT_TRUE(one.explained);
  EXPECT_FALSE(c.compared[1].explained);
  const ErrorSummary s = summarize_errors(c.compared);
  EXPECT_EQ(s.explained, 1);
  EXPECT_EQ(s.with_drift, 2);
  // ddp:2:32 ran once: its noise is unknown, not 0, and stays out of the noise floor.
  EXPECT_EQ(s.noise_configs, 1);
  EXPECT_EQ(s.configs, 2);
  EXPECT_EQ(s.runs, 3);  // the repeats: 2 + 1
  EXPECT_NEAR(s.mean_noise_pct, 0.1 / 2.05 * 100, 1e-9);
  const std::vector<std::string> lines = format_group_mape_lines(c);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "MAPE epoch_s (trainsim, 1 rank): 7.3% over 1 configuration; bias +7.3%; noise floor 4.9% "
                      "over 1 configuration with >= 2 runs; after drift 2.0%; 1 within noise + drift");
  EXPECT_EQ(lines[1], "MAPE epoch_s (trainsim, 2 ranks): 20.0% over 1 configuration; bias +20.0%; noise floor "
                      "unknown (no configuration with >= 2 runs); after drift 20.0%; 0 within noise + drift");
  const std::string table = format_comparison(c, RunsTable{});
  EXPECT_NE(table.find(" 4.9 (1 of 1) |"), std::string::npos) << table;
  EXPECT_NE(table.find(" unknown (0 of 1) |"), std::string::npos) << table;
  EXPECT_NE(table.find(" 4.9 (1 of 2) |"), std::string::npos) << table;  // all
}

TEST_F(Join, NothingPredictableGivesAnEmptyComparison) {
  const Comparison c = join("ddp,8,32,2,2048,1.0,0.5\n");
  EXPECT_TRUE(c.compared.empty());
  EXPECT_EQ(c.unpredicted.size(), 1u);
  EXPECT_EQ(c.unmeasured.size(), 4u);  // every sweep configuration
  EXPECT_EQ(format_mape_line(c), "MAPE epoch_s: n/a over 0 configurations");
}

// ---------------------------------------------------------------------------------------------
// Errors and MAPE

ComparedRun compared(Strategy strategy, double epoch_error, double train_error, bool profiled = true, int runs = 1) {
  ComparedRun r;
  r.measured.key.strategy = strategy;
  r.measured.runs = runs;
  r.predicted.spec.strategy = strategy;
  r.epoch_error_pct = epoch_error;
  r.train_error_pct = train_error;
  r.profiled_batch = profiled;
  return r;
}

TEST(Mape, ErrorPercentIsRelativeToTheMeasurement) {
  EXPECT_NEAR(error_percent(11.0, 10.0), 10.0, 1e-12);  // (11 - 10) / 10 * 100
  EXPECT_NEAR(error_percent(8.0, 10.0), -20.0, 1e-12);  // (8 - 10) / 10 * 100
  EXPECT_NEAR(error_percent(0.3, 0.2), 50.0, 1e-9);     // (0.3 - 0.2) / 0.2 * 100
  EXPECT_EQ(format_error_percent(10.0), "+10.0");
  EXPECT_EQ(format_error_percent(-20.04), "-20.0");
}

TEST(Mape, MeanOfAbsoluteErrorsAndTheSignedBias) {
  const std::vector<ComparedRun> runs{compared(Strategy::kDdp, 10, -5), compared(Strategy::kDdp, -20, 5),
                                      compared(Strategy::kDp, 50, 0, false, 3)};
  const ErrorSummary all = summarize_errors(runs);
  EXPECT_EQ(all.configs, 3);
  EXPECT_EQ(all.runs, 5);  // 1 + 1 + 3 repeats
  EXPECT_NEAR(all.mape_epoch_pct, 80.0 / 3, 1e-12);        // (|10| + |-20| + |50|) / 3 = 26.667
  EXPECT_NEAR(all.mape_train_pct, 10.0 / 3, 1e-12);        // (5 + 5 + 0) / 3 = 3.333
  EXPECT_NEAR(all.mean_epoch_error_pct, 40.0 / 3, 1e-12);  // (10 - 20 + 50) / 3 = 13.333
  EXPECT_DOUBLE_EQ(all.max_abs_epoch_error_pct, 50.0);
  const ErrorSummary ddp =
      summarize_errors(runs, [](const ComparedRun& r) { return r.measured.key.strategy == Strategy::kDdp; });
  EXPECT_EQ(ddp.configs, 2);
  EXPECT_NEAR(ddp.mape_epoch_pct, 15.0, 1e-12);        // (10 + 20) / 2
  EXPECT_NEAR(ddp.mean_epoch_error_pct, -5.0, 1e-12);  // (10 - 20) / 2
  const ErrorSummary unprofiled = summarize_errors(runs, [](const ComparedRun& r) { return !r.profiled_batch; });
  EXPECT_EQ(unprofiled.configs, 1);
  EXPECT_NEAR(unprofiled.mape_epoch_pct, 50.0, 1e-12);

  Comparison c;
  c.compared = runs;
  EXPECT_EQ(format_mape_line(c), "MAPE epoch_s: 26.7% over 3 configurations (5 runs); bias +13.3%");  // 26.667, 13.333
  const std::string table = format_comparison(c, RunsTable{});
  EXPECT_NE(table.find("| ddp "), std::string::npos) << table;
  EXPECT_NE(table.find("batches the profile did not time"), std::string::npos) << table;
  EXPECT_EQ(summarize_errors({}).configs, 0);
}

TEST(Mape, EachTrainerOverItsRanksWhenThereAreSeveralTrainers) {
  // pytorch on 1 rank (+10, -20) and 2 ranks (+30); trainsim on 1 rank (-4) and 2 ranks (+6).
  const auto run = [](Trainer trainer, int gpus, double error) {
    ComparedRun r = compared(Strategy::kDdp, error, error);
    r.measured.key.trainer = trainer;
    r.measured.key.gpus = gpus;
    return r;
  };
  Comparison c;
  c.compared = {run(Trainer::kPytorch, 1, 10), run(Trainer::kPytorch, 1, -20), run(Trainer::kPytorch, 2, 30),
                run(Trainer::kTrainsim, 1, -4), run(Trainer::kTrainsim, 2, 6)};
  const std::vector<std::string> lines = format_group_mape_lines(c);
  ASSERT_EQ(lines.size(), 6u);  // 4 (trainer, ranks) groups, then each trainer over its ranks
  EXPECT_EQ(lines[4].rfind("MAPE epoch_s (pytorch, all ranks): 20.0% over 3 configurations; bias +6.7%", 0), 0u)
      << lines[4];  // (10 + 20 + 30) / 3, (10 - 20 + 30) / 3
  EXPECT_EQ(lines[5].rfind("MAPE epoch_s (trainsim, all ranks): 5.0% over 2 configurations; bias +1.0%", 0), 0u)
      << lines[5];
  const std::string table = format_comparison(c, RunsTable{});
  EXPECT_NE(table.find("| pytorch, all ranks "), std::string::npos) << table;
  EXPECT_NE(table.find("| trainsim, all ranks "), std::string::npos) << table;

  // One trainer: its ranks together are the "all" row, not a row of their own.
  c.compared.resize(3);
  EXPECT_EQ(format_group_mape_lines(c).size(), 2u);
  EXPECT_EQ(format_comparison(c, RunsTable{}).find("all ranks"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The plot script

const TextFile* find_file(const PlotScript& s, const std::string& name) {
  for (const auto& f : s.files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST_F(Join, PlotScriptHasAllThreePlotsAndTheirData) {
  const Comparison c = join(
      "ddp,1,32,2,1000,2.0,1.0\n"
      "ddp,1,32,2,1000,2.4,1.0\n"
      "ddp,2,32,2,1000,1.5,0.6\n");
  std::vector<SimResult> predictions = small_sweep();
  const PlotScript s = build_plot_script(c, predictions, Unit{});
  ASSERT_EQ(s.plots.size(), 3u);
  EXPECT_EQ(s.plots[0].first, "epoch_vs_batch.svg");
  EXPECT_EQ(s.plots[1].first, "speedup_vs_gpus.svg");
  EXPECT_EQ(s.plots[2].first, "predicted_vs_measured.svg");
  EXPECT_TRUE(s.skipped.empty());
  ASSERT_FALSE(s.files.empty());
  EXPECT_EQ(s.files[0].name, "plots.gp");
  for (const char* svg : {"epoch_vs_batch.svg", "speedup_vs_gpus.svg", "predicted_vs_measured.svg"}) {
    EXPECT_NE(s.files[0].content.find(std::string("outdir.'/") + svg + "'"), std::string::npos) << svg;
  }
  EXPECT_NE(s.files[0].content.find("set terminal svg"), std::string::npos);
  EXPECT_NE(s.files[0].content.find("x with lines"), std::string::npos);  // y = x and the ideal speedup

  const TextFile* epoch = find_file(s, "epoch_vs_batch.dat");
  ASSERT_NE(epoch, nullptr);
  EXPECT_NE(epoch->content.find("\n32 2.2 2 2.4\n"), std::string::npos)  // batch, mean, min, max of the repeats
      << epoch->content;
  EXPECT_NE(epoch->content.find("\n32 2.2\n128 1.6\n"), std::string::npos)  // ddp 1 GPU predicted line
      << epoch->content;
  const TextFile* speedup = find_file(s, "speedup_vs_gpus.dat");
  ASSERT_NE(speedup, nullptr);
  // Predicted: T(1,32)/T(2,32) = 2.2 / 1.2 = 1.83333333; measured: 2.2 / 1.5 = 1.46666667.
  EXPECT_NE(speedup->content.find("2 1.83333333"), std::string::npos) << speedup->content;
  EXPECT_NE(speedup->content.find("2 1.46666667"), std::string::npos) << speedup->content;
  const TextFile* scatter = find_file(s, "predicted_vs_measured.dat");
  ASSERT_NE(scatter, nullptr);
  EXPECT_NE(scatter->content.find("\n1.5 1.2\n"), std::string::npos) << scatter->content;  // measured, predicted
}

TEST_F(Join, PlotsWithoutMeasurementsSayWhyTheyAreMissing) {
  const Comparison one_gpu = join("ddp,1,32,2,1000,2.0,1.0\n");
  const PlotScript s = build_plot_script(one_gpu, small_sweep(), Unit{});
  ASSERT_EQ(s.plots.size(), 2u);  // no measured speedup
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].find("speedup vs GPU count"), std::string::npos) << s.skipped[0];
  // Runs of CPU ranks are called ranks (issue 13: not "GPU" for a CPU profile).
  const PlotScript ranks = build_plot_script(one_gpu, small_sweep(), Unit{"rank"});
  ASSERT_EQ(ranks.skipped.size(), 1u);
  EXPECT_NE(ranks.skipped[0].find("speedup vs rank count: not drawn, no strategy and batch was measured on 1 rank "),
            std::string::npos)
      << ranks.skipped[0];
  EXPECT_EQ(ranks.plots[0].second.find("GPU"), std::string::npos) << ranks.plots[0].second;

  // Nothing measured (a plain `simulate --out`): the predicted curves, speedup included.
  const Comparison none = join("");
  const PlotScript empty = build_plot_script(none, small_sweep(), Unit{});
  ASSERT_EQ(empty.plots.size(), 2u);
  EXPECT_EQ(empty.plots[1].first, "speedup_vs_gpus.svg");
  ASSERT_EQ(empty.skipped.size(), 1u);  // predicted vs measured
  EXPECT_NE(empty.skipped[0].find("predicted vs measured"), std::string::npos) << empty.skipped[0];
}

// ---------------------------------------------------------------------------------------------
// The program end to end

const std::string kConfig = std::string(TRAINSIM_FIXTURES_DIR) + "/compare/sweep.yaml";
const std::string kRuns = std::string(TRAINSIM_FIXTURES_DIR) + "/compare/fixture_runs.csv";

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

class CompareProgram : public ::testing::Test {
 protected:
  // Runs `ENV simulate ARGS`, capturing stdout and stderr.
  ProgramRun simulate(const std::string& args, const std::string& env = "") const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command =
        env + " " + std::string(TRAINSIM_BIN_DIR) + "/simulate " + args + " > " + out.string() + " 2> " + err.string();
    const int status = std::system(command.c_str());
    ProgramRun run;
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    run.out = read_file(out);
    run.err = read_file(err);
    return run;
  }

  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  static void expect_one_line_error(const ProgramRun& run, const std::string& prefix) {
    EXPECT_EQ(run.exit_code, 2) << run.err;
    const auto lines = lines_of(run.err);
    ASSERT_EQ(lines.size(), 1u) << run.err;
    EXPECT_EQ(lines[0].rfind(prefix, 0), 0u) << "stderr: " << lines[0] << "\nexpected prefix: " << prefix;
    EXPECT_TRUE(run.out.empty()) << run.out;
  }

  ::trainsim::testing::TempDir temp_{"trainsim-compare"};
  fs::path dir_ = temp_.path();
};

TEST_F(CompareProgram, FixtureReportHasTablesListsAndTheMapeLineLast) {
  const fs::path out = dir_ / "report";
  const ProgramRun run = simulate(kConfig + " --compare " + kRuns + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;

  // stdout: the normal tables, then the comparison, then the MAPE line last.
  const size_t normal = run.out.find("## Table 1 (ddp)"), comparison = run.out.find("## Predicted vs measured");
  ASSERT_NE(normal, std::string::npos) << run.out;
  ASSERT_NE(comparison, std::string::npos) << run.out;
  EXPECT_LT(normal, comparison);
  const auto lines = lines_of(run.out);
  ASSERT_FALSE(lines.empty());
  const std::string& last = lines.back();

  // The fixture (tests/fixtures/compare/README.md): 10 measured configurations, 1 of them with
  // other threads than the profile's, so 9 are compared (4 in the sweep; ddp:1:256, ddp:4:128,
  // dp:1:128 and the two in other settings simulated for the comparison).
  const auto rows = lines_of(read_file(out / "comparison.csv"));
  ASSERT_EQ(rows.size(), 1u + 9);
  // The MAPE recomputed from comparison.csv (column 12: epoch_error_pct) must be the printed one.
  double sum = 0, signed_sum = 0;
  int runs = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto cells = csv_cells(rows[i]);
    ASSERT_GE(cells.size(), 26u) << rows[i];
    EXPECT_EQ(cells[19], "trainsim") << rows[i];
    const double predicted = std::stod(cells[8]), measured = std::stod(cells[9]), error = std::stod(cells[12]);
    EXPECT_NEAR(error, (predicted - measured) / measured * 100, 1e-6) << rows[i];
    sum += std::fabs(error);
    signed_sum += error;
    runs += std::stoi(cells[7]);
  }
  EXPECT_EQ(runs, 11);  // the fixture's 12 rows less the one in other threads
  char expected[128];
  std::snprintf(expected, sizeof expected, "MAPE epoch_s: %.1f%% over 9 configurations (%d runs); bias %+.1f%%",
                sum / 9, runs, signed_sum / 9);
  EXPECT_EQ(last, expected);
  // The repeats of ddp:1:128 (lines 3 and 6: 0.70 and 0.74 s) are one row with their median.
  const auto repeat =
      std::find_if(rows.begin(), rows.end(), [](const std::string& r) { return r.rfind("ddp,1,128,2,", 0) == 0; });
  ASSERT_NE(repeat, rows.end());
  const auto cells = csv_cells(*repeat);
  EXPECT_EQ(cells[7], "2");                       // runs
  EXPECT_NEAR(std::stod(cells[9]), 0.72, 1e-12);  // (0.70 + 0.74) / 2
  EXPECT_EQ(cells[10], "0.7");
  EXPECT_EQ(cells[11], "0.74");

  // predictions.csv: the 6 sweep configurations, then the 5 simulated for the comparison (order:
  // strategy, gpus, loader workers, batch, samples).
  const auto predictions = lines_of(read_file(out / "predictions.csv"));
  ASSERT_EQ(predictions.size(), 1u + 6 + 5);
  EXPECT_EQ(predictions[7].rfind("ddp,1,128,", 0), 0u) << predictions[7];  // 0 workers
  EXPECT_EQ(predictions[8].rfind("ddp,1,256,", 0), 0u) << predictions[8];
  EXPECT_EQ(predictions[9].rfind("ddp,2,128,", 0), 0u) << predictions[9];  // 2048 samples
  EXPECT_EQ(predictions[10].rfind("ddp,4,128,", 0), 0u) << predictions[10];
  EXPECT_EQ(predictions[11].rfind("dp,1,128,", 0), 0u) << predictions[11];

  const std::string report = read_file(out / "report.md");
  for (const char* expected_text :
       {"# trainsim: predicted vs measured, resnet18-cifar",
        "--compare ",
        "machine report-fixture",
        "the config's setting (the side-by-side tables and plots): trainer trainsim, 4096 samples, loader workers 2",
        "synthetic images",
        "device cuda",
        "## Per measured configuration",
        "| ddp:1:256     | trainsim, W=2, 4096 samples |       no |         no |",
        "MAPE epoch_s (trainsim, 1 rank): ",
        "MAPE epoch_s (trainsim, 2 ranks): ",
        "MAPE epoch_s (trainsim, 4 ranks): ",
        "## MAPE",
        "| all ",
        "batches the profile did not time",
        "## Q1: 1-GPU epoch time per batch size, predicted and measured (ddp, 1 GPU)",
        "## Table 1 (ddp): epoch time T(N,b) and speedup T(1,b)/T(N,b), predicted and measured",
        "speedup 2 pred",
        "speedup 2 meas",
        "## Plots",
        "## Configurations on one side only",
        "Measured but not predicted: 1 configuration(s)",
        "runs.csv line 13): threads 8 != the profile's 16",
        "Predicted but not measured: 2 configuration(s) of the sweep: ddp:2:32, ddp:2:512",
        "## Simulator notes for the measured configurations",
        "## Definitions"}) {
    EXPECT_NE(report.find(expected_text), std::string::npos) << expected_text << " missing in:\n" << report;
  }
  EXPECT_NE(report.find(last), std::string::npos);  // the headline is in the report too
  // Every Markdown table keeps its column count (a stray '|' in a cell would split it).
  size_t columns = 0;
  for (const auto& line : lines_of(report)) {
    if (line.empty() || line[0] != '|') {
      columns = 0;
      continue;
    }
    const size_t bars = std::count(line.begin(), line.end(), '|');
    if (columns == 0) columns = bars;
    EXPECT_EQ(bars, columns) << line;
  }
  for (const char* file :
       {"plots.gp", "epoch_vs_batch.dat", "speedup_vs_gpus.dat", "predicted_vs_measured.dat", "predictions.md"}) {
    EXPECT_TRUE(fs::exists(out / file)) << file;
  }
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "leftover " << entry.path();
  }

  if (!find_on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not on PATH: the SVG part is not checked";
  EXPECT_TRUE(run.err.empty()) << run.err;
  for (const char* svg : {"epoch_vs_batch.svg", "speedup_vs_gpus.svg", "predicted_vs_measured.svg"}) {
    const std::string content = read_file(out / svg);
    EXPECT_EQ(content.rfind("<?xml", 0), 0u) << svg;
    EXPECT_NE(content.find("<svg"), std::string::npos) << svg;
    EXPECT_NE(content.find("</svg>"), std::string::npos) << svg << " is not complete";
    EXPECT_NE(report.find(std::string("](") + svg + ")"), std::string::npos) << svg << " not embedded";
  }
  // Same inputs, same bytes (report and plots).
  const fs::path again = dir_ / "again";
  ASSERT_EQ(simulate(kConfig + " --quiet --compare " + kRuns + " --out " + again.string()).exit_code, 0);
  EXPECT_EQ(read_file(again / "comparison.csv"), read_file(out / "comparison.csv"));
  EXPECT_EQ(read_file(again / "predicted_vs_measured.svg"), read_file(out / "predicted_vs_measured.svg"));
}

TEST_F(CompareProgram, WithoutGnuplotThePlotsAreSkippedWithAWarning) {
  const fs::path out = dir_ / "report";
  // PATH without gnuplot (simulate itself is started by its absolute path).
  const ProgramRun run = simulate(kConfig + " --compare " + kRuns + " --out " + out.string(), "PATH=/nonexistent");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: plots skipped: gnuplot not found on PATH"), std::string::npos) << run.err;
  const std::string report = read_file(out / "report.md");
  EXPECT_NE(report.find("Plots were not drawn: gnuplot not found on PATH"), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(out / "plots.gp"));  // the script and data are there to draw them later
  EXPECT_FALSE(fs::exists(out / "epoch_vs_batch.svg"));
  EXPECT_EQ(lines_of(run.out).back().rfind("MAPE epoch_s: ", 0), 0u);
}

TEST_F(CompareProgram, WithoutOutItPrintsTheComparisonOnly) {
  const ProgramRun run = simulate(kConfig + " --compare " + kRuns);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("## Predicted vs measured"), std::string::npos);
  EXPECT_EQ(run.out.find("wrote "), std::string::npos);
  EXPECT_EQ(lines_of(run.out).back().rfind("MAPE epoch_s: ", 0), 0u) << run.out;
  EXPECT_TRUE(run.err.empty()) << run.err;
}

// A plain run into the folder of a --compare run once left the old comparison.csv, report.md and
// measured-vs-predicted plot beside its new predictions.
TEST_F(CompareProgram, APlainRunRemovesAnEarlierComparisonFromItsFolder) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(simulate(kConfig + " --quiet --compare " + kRuns + " --out " + out.string()).exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "comparison.csv"));
  ASSERT_TRUE(fs::exists(out / "predicted_vs_measured.dat"));
  const ProgramRun plain = simulate(kConfig + " --out " + out.string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const char* stale : {"comparison.csv", "report.md", "predicted_vs_measured.dat", "predicted_vs_measured.svg"}) {
    EXPECT_FALSE(fs::exists(out / stale)) << stale;
  }
  EXPECT_TRUE(fs::exists(out / "predictions.csv"));
  EXPECT_NE(plain.out.find("removed comparison.csv, report.md from "), std::string::npos) << plain.out;
}

// A runs file that is a folder once said "header: empty file".
TEST_F(CompareProgram, RunsFileThatIsAFolderSaysSo) {
  const ProgramRun run = simulate(kConfig + " --compare " + dir_.string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "error: " + dir_.string() + ": is a directory, not a runs file (reports/<machine>/runs.csv)\n");
}

TEST_F(CompareProgram, NoPredictableRunIsAWarningAndNotApplicableMape) {
  const fs::path runs = write("runs.csv", kHeader + ",threads\nddp,1,32,2,50000,10.0,9.0,4\n");
  const ProgramRun run = simulate(kConfig + " --compare " + runs.string() + " --out " + (dir_ / "r").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: no measured configuration"), std::string::npos) << run.err;
  EXPECT_EQ(lines_of(run.out).back(), "MAPE epoch_s: n/a over 0 configurations");
  const std::string report = read_file(dir_ / "r" / "report.md");
  EXPECT_NE(report.find("threads 4 != the profile's 16"), std::string::npos) << report;
  EXPECT_NE(report.find("Predicted but not measured: 6 configuration(s)"), std::string::npos) << report;
}

TEST_F(CompareProgram, RunsOnOtherDataOrDeviceThanTheProfileAreWarnedAbout) {
  // The fixture profile: cuda, loader on synthetic data.
  const fs::path runs = write("runs.csv", kHeader + ",device,data\nddp,1,32,2,4096,0.8,0.5,cpu,cifar10\n");
  const ProgramRun run = simulate(kConfig + " --compare " + runs.string() + " --out " + (dir_ / "r").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: runs measured on data 'cifar10' but the profile's loader on 'synthetic'"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("warning: runs measured on device 'cpu' but the profile on 'cuda'"), std::string::npos)
      << run.err;
  const std::string report = read_file(dir_ / "r" / "report.md");
  EXPECT_NE(report.find("**Warning:** runs measured on data 'cifar10'"), std::string::npos) << report;
  EXPECT_NE(report.find("the runs trained on cifar10 (the real CIFAR-10 files)"), std::string::npos) << report;
  EXPECT_EQ(lines_of(run.out).back().rfind("MAPE epoch_s: ", 0), 0u);  // still compared
  EXPECT_NE(lines_of(run.out).back().find(" over 1 configuration (1 run)"), std::string::npos) << lines_of(run.out).back();
}

TEST_F(CompareProgram, RunsOfOneOtherModelAreComparedWithAWarning) {
  const fs::path runs = write("runs.csv", kHeader + ",model\nddp,1,32,2,4096,0.8,0.5,resnet50\n");
  const ProgramRun run = simulate(kConfig + " --compare " + runs.string() + " --out " + (dir_ / "r").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: runs of model 'resnet50' compared with the config's model 'resnet18-cifar' "
                         "(runs.csv names no other)"),
            std::string::npos)
      << run.err;
  const std::string report = read_file(dir_ / "r" / "report.md");
  EXPECT_NE(report.find(", model resnet50\n"), std::string::npos) << report;
  EXPECT_NE(lines_of(run.out).back().find(" over 1 configuration (1 run)"), std::string::npos) << lines_of(run.out).back();
}

TEST_F(CompareProgram, BadRunsFilesExitTwoWithOneLine) {
  const fs::path no_column = write("a.csv", "strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s\n");
  expect_one_line_error(simulate(kConfig + " --compare " + no_column.string()),
                        "error: " + no_column.string() + ":1: train_s: missing column");
  const fs::path bad_number = write("b.csv", kHeader + "\nddp,1,32,2,4096,0.5,0.25\nddp,1,32,2,4096,fast,0.25\n");
  expect_one_line_error(simulate(kConfig + " --compare " + bad_number.string() + " --out " + (dir_ / "x").string()),
                        "error: " + bad_number.string() + ":3: epoch_s: 'fast' is not a number");
  EXPECT_FALSE(fs::exists(dir_ / "x"));  // nothing written before the input is known good
  expect_one_line_error(simulate(kConfig + " --compare " + (dir_ / "missing.csv").string()),
                        "error: " + (dir_ / "missing.csv").string() + ": cannot open: No such file or directory");
  expect_one_line_error(simulate(kConfig + " --compare /dev/zero"),
                        "error: /dev/zero: larger than 64 MiB: not a runs file (reports/<machine>/runs.csv)");
}

TEST_F(CompareProgram, HelpNamesCompare) {
  const ProgramRun run = simulate("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("--compare"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::report
