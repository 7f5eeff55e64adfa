// The Q4 table and the large-batch CSV columns from the hand-written baseline curve in
// tests/fixtures/stats/profile.yaml, the SyncBatchNorm table, and `simulate`'s behaviour with and
// without a baseline curve (expected values derived beside each assertion).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "flat_text.h"
#include "hw/collective_model.h"
#include "io/config.h"
#include "format/profile_io.h"
#include "pace_probe_fixture.h"
#include "report/csv.h"
#include "report/large_batch.h"
#include "report/plots.h"
#include "report/report.h"
#include "train/sync_batchnorm.h"
#include "temp_dir.h"

namespace trainsim::report {
namespace {

namespace fs = std::filesystem;

const std::string kStatsDir = std::string(TRAINSIM_FIXTURES_DIR) + "/stats";
const std::string kReportDir = std::string(TRAINSIM_FIXTURES_DIR) + "/report";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> cells;
  std::string cell;
  std::stringstream in(line);
  while (std::getline(in, cell, separator)) cells.push_back(cell);
  if (!line.empty() && line.back() == separator) cells.push_back("");
  return cells;
}

using trainsim::testing::flat;

// The Markdown row of `table_text` whose first cell is `label`, split into trimmed cells.
std::vector<std::string> table_row(const std::string& text, const std::string& label) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| " + label + " ", 0) != 0) continue;
    std::vector<std::string> cells;
    for (std::string cell : split(line.substr(1, line.size() - 2), '|')) {
      const size_t first = cell.find_first_not_of(' ');
      const size_t last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    return cells;
  }
  return {};
}

// Q4 prints a configuration's figures in three tables of the same rows (issue 64: each fits a
// terminal): after k epochs (config, global batch, B/B0, loss, accuracies), the epochs and time to
// the targets, then efficiency, goodput and notes. The cells of `label`'s rows in that order, the
// label once: the columns of the single wide table they were split from.
std::vector<std::string> q4_row(const std::string& text, const std::string& label) {
  std::vector<std::string> cells;
  int tables = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| " + label + " ", 0) != 0) continue;
    const std::vector<std::string> part = table_row(line, label);
    cells.insert(cells.end(), part.begin() + (tables++ == 0 ? 0 : 1), part.end());
  }
  EXPECT_EQ(tables, 3) << label << " in:\n" << text;
  return cells;
}

// The header rows of Q4's tables, split into trimmed cells.
std::vector<std::vector<std::string>> q4_headers(const std::string& text) {
  std::vector<std::vector<std::string>> headers;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| config ", 0) == 0) headers.push_back(table_row(line, "config"));
  }
  return headers;
}

SimResult result(Strategy strategy, int gpus, int64_t batch, double epoch_s) {
  SimResult r;
  r.spec.strategy = strategy;
  r.spec.gpus = gpus;
  r.spec.batch_per_gpu = batch;
  r.spec.train_samples = 50000;
  r.global_batch = gpus * batch;
  r.epoch_s = epoch_s;
  return r;
}

class Q4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = load_sweep_config(kStatsDir + "/sweep.yaml");
    profile_ = load_profile(config_.profile_path);
  }
  SweepConfig config_;
  Profile profile_;
};

TEST_F(Q4Test, NoReportWithoutACurve) {
  profile_.training.clear();
  EXPECT_FALSE(LargeBatchReport::make(config_, profile_).has_value());
}

// The fixture's curve: loss knots at the epochs' middles (25000, 1.6), (75000, 1.2), (125000, 1.0),
// (175000, 0.85), (225000, 0.75), flat after; the noise scale 200, 400, ..., 1000 at the epochs'
// ends. Target: the baseline's mean loss in epoch 5, 0.75, reached at E_0 = 225000 (4.5 epochs),
// where B_noise = 900.
// The baseline's own batch: epoch 5's mean loss over [200000, 250000] = (0.8 + 0.75)/2 / 2 + 0.75 / 2
// = 0.7625, its train accuracy (0.72 + 0.74)/2 / 2 + 0.74 / 2 = 0.735.
TEST_F(Q4Test, RowFromTheBaselineCurveAndTheSimulatedEpoch) {
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  EXPECT_DOUBLE_EQ(report->model().target_loss(), 0.75);
  // ddp:4:128 (global batch 512) with a 10 s epoch: 5000 samples/s; the row is the model's
  // prediction priced at that throughput.
  const LargeBatchRow row = report->row(result(Strategy::kDdp, 4, 128, 10.0));
  const LargeBatchPrediction& p = row.prediction;
  const LargeBatchPrediction direct = report->model().predict(512);
  ASSERT_TRUE(p.epochs_to_target && p.efficiency && row.time_to_target_s && row.goodput);
  EXPECT_DOUBLE_EQ(*p.examples_to_target, *direct.examples_to_target);
  EXPECT_DOUBLE_EQ(*p.noise_scale_at_target, 900);
  EXPECT_NEAR(*p.efficiency, 1028.0 / 1412, 1e-12);
  EXPECT_DOUBLE_EQ(row.throughput, 5000);
  EXPECT_NEAR(*row.time_to_target_s, *p.examples_to_target / 5000, 1e-9);
  EXPECT_NEAR(*row.goodput, 5000 * 1028.0 / 1412, 1e-9);
  // 4x the batch under linear warm-up: more examples to the target, a higher loss in epoch 5.
  EXPECT_FALSE(p.no_progress);
  EXPECT_GT(*p.epochs_to_target, 4.5);
  EXPECT_GT(*p.loss_at_k, 0.7625);
  const LargeBatchRow base = report->row(result(Strategy::kDdp, 1, 128, 9.0));
  EXPECT_NEAR(*base.prediction.loss_at_k, 0.7625, 1e-9);
  EXPECT_NEAR(*base.prediction.train_accuracy_at_k, 0.735, 1e-9);
  EXPECT_NEAR(*base.prediction.test_accuracy_at_k, 0.72, 1e-9);
  EXPECT_NEAR(*base.prediction.epochs_to_target, 4.5, 1e-9);
  EXPECT_NEAR(*base.time_to_target_s, 40.5, 1e-9);  // 4.5 epochs x 9 s
}

TEST_F(Q4Test, TableRowsNoProgressAndNotes) {
  config_.lr_rule = LrRule::kConstant;
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  SimResult oom = result(Strategy::kDdp, 4, 2048, 30.0);  // global 8192 = 64x the baseline
  oom.fits = false;
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 4, 128, 10.0),
                         result(Strategy::kDdp, 1, 32, 20.0), oom});
  const std::string text = format_large_batch(*report, grid);
  EXPECT_NE(text.find("## Q4: large batches: loss after 5 epochs and time to a target loss"), std::string::npos);
  EXPECT_NE(text.find("- target loss: 0.75 (the baseline's mean loss in epoch 5)"), std::string::npos) << text;
  // Below the epoch-1 loss (1.6) the largebatch-compare validation measured its epochs to: said so.
  EXPECT_NE(flat(text).find("; the epochs to target were validated at a higher one, the baseline's epoch-1 loss "
                            "(1.6; docs/LARGE_BATCH.md, \"How it was validated\"): to this one they are predicted, "
                            "not checked"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- lr rule for other batches: constant (config lr_rule)"), std::string::npos) << text;
  // Columns: config, global batch, B/B0, loss@5, train acc@5, test acc@5 | epochs to target,
  // time to target s | efficiency, goodput samples/s, notes.
  EXPECT_EQ(q4_headers(text),
            (std::vector<std::vector<std::string>>{
                {"config", "global batch", "B/B0", "loss@5", "train acc@5", "test acc@5"},
                {"config", "epochs to target", "time to target s"},
                {"config", "efficiency", "goodput samples/s", "notes"}}))
      << text;
  EXPECT_NE(text.find("\nEach row's notes: the last column of the efficiency table below.\n"), std::string::npos) << text;
  const auto base = q4_row(text, "ddp:1:128");
  ASSERT_EQ(base.size(), 11u) << text;
  EXPECT_EQ(base[2], "1x");
  EXPECT_EQ(base[3], "0.7625");
  EXPECT_EQ(base[4], "0.735");
  EXPECT_EQ(base[6], "4.500");
  EXPECT_EQ(base[7], "40.50");
  // 4x with the baseline's lr: predicted, efficiency 1028/1412 = 0.728, goodput 3640 samples/s.
  const auto four = q4_row(text, "ddp:4:128");
  ASSERT_EQ(four.size(), 11u);
  EXPECT_EQ(four[1], "512");
  EXPECT_EQ(four[2], "4x");
  EXPECT_EQ(four[8], "0.728");
  EXPECT_EQ(four[9], "3640");
  // 1/4 the batch at the same lr: x = (1 + 200/32)/(1 + 200/128) = 2.83 > 2 from the first step.
  const auto quarter = q4_row(text, "ddp:1:32");
  EXPECT_EQ(quarter[2], "0.25x*");  // below the baseline's batch: outside the validated range
  EXPECT_EQ(quarter[3], "2.303");  // ln 10: the untrained model
  EXPECT_EQ(quarter[6], "not predicted");
  EXPECT_NE(text.find("no progress: constant lr at 0.25x the baseline batch (128) passes 2x the tuned lr"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("epochs to target: never: no progress at this lr"), std::string::npos);
  // The other regime beside it: the same row at the edge of stability, which trains.
  const LargeBatchRow quarter_row = report->row(result(Strategy::kDdp, 1, 32, 20.0));
  ASSERT_TRUE(quarter_row.at_the_edge);
  EXPECT_FALSE(quarter_row.at_the_edge->no_progress);
  EXPECT_NE(text.find("at the edge of stability instead (the run's curvature following its lr"), std::string::npos)
      << text;
  EXPECT_FALSE(report->row(result(Strategy::kDdp, 4, 128, 10.0)).at_the_edge);  // only where no progress
  // 64x: predicted; its time is OOM where it does not fit.
  const auto big = q4_row(text, "ddp:4:2048");
  ASSERT_EQ(big.size(), 11u);
  EXPECT_NE(big[3], "not predicted");
  EXPECT_EQ(big[7], "OOM");
  EXPECT_EQ(big[8], "0.113");  // (900 + 128)/(900 + 8192) at the target
}

// The critical batch and the lr rules side by side: one row per global batch, ascending, its
// regime by B / B_crit, the epochs to target under each rule and the rule with the fewest.
TEST_F(Q4Test, TheCriticalBatchAndTheRulesSideBySide) {
  config_.lr_rule = LrRule::kConstant;
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  SimResult oom = result(Strategy::kDdp, 4, 2048, 30.0);
  oom.fits = false;  // still a row: the epochs to target do not need the time
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 4, 128, 10.0),
                         result(Strategy::kDp, 1, 512, 11.0), result(Strategy::kDdp, 1, 32, 20.0), oom});
  const std::string text = format_large_batch(*report, grid);
  // B_crit: the fixture's noise scale where the baseline reaches the target, 900.
  EXPECT_NE(flat(text).find("The critical batch and the lr rules side by side. B_crit = 900,"), std::string::npos)
      << text;
  const auto header = table_row(text, "global batch");
  EXPECT_EQ(header, (std::vector<std::string>{"global batch", "B/B_crit", "regime", "constant", "linear",
                                              "linear-warmup", "sqrt", "best rule"}));
  // Rows in ascending global batch, 512 once (ddp:4:128 and dp:1:512 share it).
  std::vector<std::string> order;
  std::istringstream lines(text);
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| global batch ", 0) == 0) inside = true;
    else if (inside && line.rfind("| :", 0) == 0) continue;
    else if (inside && line.rfind("| ", 0) == 0) order.push_back(table_row(line, line.substr(2, line.find(' ', 2) - 2))[0]);
    else if (inside) break;
  }
  // 32 is a quarter of the baseline's batch, outside the validated 1x-64x: marked, with the
  // footnote; 8192 is 64x, inside.
  EXPECT_EQ(order, (std::vector<std::string>{"32*", "128", "512", "8192"})) << text;
  EXPECT_NE(flat(text).find("* extrapolated: outside 1x-64x the baseline's batch of 128, the range the model was "
                            "checked at against real runs"),
            std::string::npos)
      << text;
  // Regimes: 32/900 and 128/900 <= 1/3, 512/900 = 0.569 between, 8192/900 = 9.10 >= 3.
  EXPECT_EQ(table_row(text, "32*")[2], "near-linear");
  EXPECT_EQ(table_row(text, "128")[1], "0.142");
  EXPECT_EQ(table_row(text, "128")[2], "near-linear");
  EXPECT_EQ(table_row(text, "512")[2], "diminishing");
  EXPECT_EQ(table_row(text, "8192")[1], "9.10");
  EXPECT_EQ(table_row(text, "8192")[2], "step-bound");
  // At the baseline's batch every rule is the baseline's lr: 4.5 epochs each (the main table's
  // 4.500), the first of equals named best. At 32 the constant lr predicts no progress (above).
  EXPECT_EQ(table_row(text, "128"),
            (std::vector<std::string>{"128", "0.142", "near-linear", "4.50", "4.50", "4.50", "4.50", "constant"}));
  EXPECT_EQ(table_row(text, "32*")[3], "stalls");
  // The best rule has the fewest epochs of the row's predicted ones.
  for (const std::string batch : {"512", "8192"}) {
    const auto row = table_row(text, batch);
    ASSERT_EQ(row.size(), 8u);
    double fewest = 1e300;
    std::string best = "-";
    const char* rules[] = {"constant", "linear", "linear-warmup", "sqrt"};
    for (int i = 0; i < 4; ++i) {
      if (row[3 + i] == "stalls" || row[3 + i] == "-") continue;
      const double epochs = std::stod(row[3 + i]);
      if (epochs < fewest) {
        fewest = epochs;
        best = rules[i];
      }
    }
    EXPECT_EQ(row[7], best) << batch;
  }
}

// A baseline whose parameters that are not scale-invariant start within their bound reads a run
// past plain SGD's bound at the edge of stability (PastBound::kFromStart): the quarter-batch row
// above trains, as its edge note said, and says which reading it took; one that starts past it
// keeps the plain bound.
TEST_F(Q4Test, TheBaselinesStartCurvatureDecidesTheReading) {
  config_.lr_rule = LrRule::kConstant;
  profile_.training.at(0).start_curvature = StartCurvature{0.7, 0.5, 2, 8};
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->model().at_the_edge());
  const LargeBatchRow quarter = report->row(result(Strategy::kDdp, 1, 32, 20.0));
  EXPECT_FALSE(quarter.prediction.no_progress);
  EXPECT_TRUE(quarter.prediction.past_the_bound);
  EXPECT_FALSE(quarter.at_the_edge);
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 1, 32, 20.0)});
  const std::string text = format_large_batch(*report, grid);
  // It trains, but its momentum noise floor (lr / B 4x the baseline's) sits above the curve's end.
  EXPECT_NE(text.find("epochs to target: never: the run's noise floor (momentum 0.9) sits"), std::string::npos) << text;
  EXPECT_NE(text.find("past the bound: constant lr at 0.25x the baseline batch (128) reaches"), std::string::npos)
      << text;
  EXPECT_NE(flat(text).find("This baseline is read with the edge of stability: at the baseline's start its parameters "
                            "that are not scale-invariant are within their bound (lr / eps_max 0.5)"),
            std::string::npos)
      << text;
  EXPECT_NE(flat(text).find("a run whose parameters that are not scale-invariant start past 2x their eps_max (this "
                            "baseline's 0.5 times the run's lr over the baseline's) starts with a catapult"),
            std::string::npos)
      << text;
  profile_.training.at(0).start_curvature = StartCurvature{12, 15, 2, 8};
  const auto plain = LargeBatchReport::make(config_, profile_);
  EXPECT_FALSE(plain->model().at_the_edge());
  EXPECT_TRUE(plain->row(result(Strategy::kDdp, 1, 32, 20.0)).prediction.no_progress);
}

// A curve with the pace probe: Q4 reads it where large_batch.pace_probe says so, and its header
// says what the probe did (or that it was not used).
TEST_F(Q4Test, ThePaceProbeWhereTheConfigAsksForIt) {
  ASSERT_TRUE(config_.large_batch.has_value());
  profile_.training.at(0).pace_probe = ::trainsim::testing::step_equation_probe(25000, 0.25, 0.5);
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 4, 128, 3.0)});
  const auto off = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->model().pace_scale().has_value());
  EXPECT_NE(flat(format_large_batch(*off, grid)).find("; the pace probe not used (off: large_batch.pace_probe"),
            std::string::npos);
  config_.large_batch->pace_probe = true;
  const auto on = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(on.has_value());
  ASSERT_TRUE(on->model().pace_scale().has_value()) << on->model().pace_probe_reason();
  EXPECT_NEAR(on->model().pace_scale()->alpha, 0.25, 1e-9);
  EXPECT_NEAR(on->model().pace_scale()->nu, 0.5, 1e-9);
  // B_n = 128 x 0.5 / 0.25 = 256 at the probed state, where the curve's is 200 (its first reading).
  EXPECT_NEAR(on->model().pace_scale()->k_n, 256.0 / 200, 1e-9);
  const std::string text = format_large_batch(*on, grid);
  EXPECT_NE(flat(text).find("; the pace probe after 25000 examples (gains 16x the batch at 1x the lr"),
            std::string::npos)
      << text;
  EXPECT_NE(on->row(result(Strategy::kDdp, 4, 128, 3.0)).prediction.baseline_examples_at_k,
            off->row(result(Strategy::kDdp, 4, 128, 3.0)).prediction.baseline_examples_at_k);
}

// Where the baseline measured the test accuracy with BatchNorm's statistics recomputed, Q4 gives it
// in a column of its own beside eval mode's: at the baseline's own batch, its epoch-5 reading.
TEST_F(Q4Test, TheRecomputedStatisticsAccuracyInAColumnOfItsOwn) {
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 4, 128, 3.0)});
  const auto plain = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(format_large_batch(*plain, grid).find("test acc@5 BN"), std::string::npos);
  TrainingCurve& curve = profile_.training.at(0);
  curve.recompute_bn_images = 8192;
  for (EpochPoint& e : curve.epochs) e.test_accuracy_recomputed = e.test_accuracy + 0.05;
  for (CurveSample& s : curve.samples) {
    if (s.test_accuracy >= 0) s.test_accuracy_recomputed = s.test_accuracy + 0.05;
  }
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  const LargeBatchRow base = report->row(result(Strategy::kDdp, 1, 128, 9.0));
  EXPECT_NEAR(*base.prediction.test_accuracy_recomputed_at_k, *base.prediction.test_accuracy_at_k + 0.05, 1e-9);
  const std::string text = format_large_batch(*report, grid);
  EXPECT_EQ(q4_headers(text).at(0), (std::vector<std::string>{"config", "global batch", "B/B0", "loss@5", "train acc@5",
                                                               "test acc@5", "test acc@5 BN"}))
      << text;
  EXPECT_NE(text.find("\ntest acc@5 BN: test acc@5 with BatchNorm's statistics recomputed. Each row's notes:"),
            std::string::npos)
      << text;
  EXPECT_NE(flat(text).find("estimated again on the weights before the evaluation"), std::string::npos) << text;
  const std::vector<std::string> cells = q4_row(text, "ddp:1:128");
  ASSERT_GE(cells.size(), 8u) << text;
  EXPECT_EQ(cells[5], "0.720");
  EXPECT_EQ(cells[6], "0.770");
}

// A target test accuracy: the fixture's test accuracy knots (0, 0.1), (50000, 0.5), (100000, 0.6),
// (150000, 0.66), (200000, 0.7), (250000, 0.72). 0.65 is reached at E_0 = 100000 + 50000 (0.05 /
// 0.06) = 141667: 2.833 epochs at the baseline's own batch (E_B = E_0), 25.5 s at 9 s an epoch.
TEST_F(Q4Test, TheEpochsAndTimeToATargetAccuracy) {
  config_.lr_rule = LrRule::kConstant;
  config_.large_batch->target_accuracy = 0.65;
  auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  const LargeBatchRow base = report->row(result(Strategy::kDdp, 1, 128, 9.0));
  ASSERT_TRUE(base.prediction.epochs_to_target_accuracy);
  EXPECT_NEAR(*base.prediction.epochs_to_target_accuracy, 2 + 5.0 / 6, 1e-9);
  EXPECT_NEAR(*base.time_to_target_accuracy_s, (2 + 5.0 / 6) * 9, 1e-9);
  // 4x the batch at the baseline's lr needs more epochs.
  const LargeBatchRow four = report->row(result(Strategy::kDdp, 4, 128, 10.0));
  ASSERT_TRUE(four.prediction.epochs_to_target_accuracy);
  EXPECT_GT(*four.prediction.epochs_to_target_accuracy, 2 + 5.0 / 6);
  // The accuracy the baseline had where it reached the target loss (0.71 at E_0 = 225000): the
  // run reaches both at the same point of its path.
  config_.large_batch->target_accuracy = 0.71;
  report = LargeBatchReport::make(config_, profile_);
  const LargeBatchPrediction p = report->model().predict(512);
  ASSERT_TRUE(p.examples_to_target && p.examples_to_target_accuracy);
  EXPECT_NEAR(*p.examples_to_target_accuracy, *p.examples_to_target, 1e-6 * *p.examples_to_target);
  // Past what the baseline reached: not predicted, and why.
  config_.large_batch->target_accuracy = 0.8;
  report = LargeBatchReport::make(config_, profile_);
  SimResult oom = result(Strategy::kDdp, 4, 2048, 30.0);
  oom.fits = false;
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 1, 32, 20.0), oom});
  const std::string text = format_large_batch(*report, grid);
  EXPECT_NE(flat(text).find("- target test accuracy: 0.8 (large_batch.target_accuracy): reached where the path "
                            "reads the baseline's test accuracy first at or above it, which the baseline never did "),
            std::string::npos)
      << text;
  const auto row = q4_row(text, "ddp:1:128");
  ASSERT_EQ(row.size(), 13u) << text;  // two more columns: epochs and time to the accuracy
  EXPECT_EQ(row[8], "not predicted");
  EXPECT_EQ(row[9], "-");
  EXPECT_NE(flat(text).find("epochs to acc 0.8: the baseline's test accuracy never reached 0.8 (5 epochs measured, at "
                            "most 0.72)"),
            std::string::npos)
      << text;
  // A run predicted to make no progress never reaches it either.
  EXPECT_NE(text.find("epochs to acc 0.8: never: no progress at this lr"), std::string::npos) << text;
  config_.large_batch->target_accuracy = 0.65;
  report = LargeBatchReport::make(config_, profile_);
  const std::string reached = format_large_batch(*report, grid);
  EXPECT_NE(reached.find("| epochs to acc 0.65 | time to acc 0.65 s |"), std::string::npos) << reached;
  EXPECT_EQ(q4_row(reached, "ddp:1:128")[8], "2.833");
  EXPECT_EQ(q4_row(reached, "ddp:1:128")[9], "25.50");
  EXPECT_EQ(q4_row(reached, "ddp:4:2048")[9], "OOM");
  const std::string csv = format_predictions_csv({result(Strategy::kDdp, 1, 128, 9.0)}, "resnet18-cifar", &*report);
  EXPECT_NE(csv.find(",epochs_to_target_accuracy,time_to_target_accuracy_s,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",2.83333333,25.5,"), std::string::npos) << csv;
}

// The step equation is plain SGD's: a baseline trained with momentum says above the table how the
// momentum enters (its noise floor, from the curve's tr(Sigma)), or that it is left out where the
// curve carries no tr(Sigma); one without momentum says neither.
TEST_F(Q4Test, TheHeaderSaysHowTheBaselinesMomentumEnters) {
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 9.0), result(Strategy::kDdp, 4, 128, 10.0)});
  const auto with_momentum = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(with_momentum.has_value());
  std::string text = format_large_batch(*with_momentum, grid);
  EXPECT_NE(text.find("(its rule: constant), momentum 0.9, "), std::string::npos) << text;
  EXPECT_NE(flat(text).find("- the step equation is plain SGD's; the baseline's momentum (0.9) enters as the noise "
                            "floor it raises, lr tr(Sigma) / (4 B (1 - m)), 10x plain SGD's"),
            std::string::npos)
      << text;
  for (TrainingCurve& curve : profile_.training) {
    for (EpochPoint& e : curve.epochs) e.trace_sigma = 0;
  }
  const auto no_trace = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(no_trace.has_value());
  text = format_large_batch(*no_trace, grid);
  EXPECT_NE(flat(text).find("- the step equation is plain SGD's and leaves the baseline's momentum (0.9) out: the "
                            "curve carries no tr(Sigma)"),
            std::string::npos)
      << text;
  for (TrainingCurve& curve : profile_.training) curve.momentum = 0;
  const auto plain_sgd = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(plain_sgd.has_value());
  text = format_large_batch(*plain_sgd, grid);
  EXPECT_NE(text.find("(its rule: constant), momentum 0, "), std::string::npos) << text;
  EXPECT_EQ(text.find("the baseline's momentum"), std::string::npos) << text;
}

// A baseline with the BatchNorm probe: each row's loss at its per-GPU batch (DDP on 1 GPU at 128
// normalises over 128, on 4 GPUs at 32 over the baseline's own B_small), and the header says so.
TEST_F(Q4Test, RowsAtTheirPerGpuBatchNormBatch) {
  const auto plain = LargeBatchReport::make(config_, profile_);
  int64_t own = 0;
  for (TrainingCurve& curve : profile_.training) {
    own = curve.small_batch;
    curve.probe_batches = {curve.small_batch, 4 * curve.small_batch};
    for (EpochPoint& e : curve.epochs) e.probe_loss = {1.0, 0.9};
  }
  const auto probed = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(plain.has_value() && probed.has_value());
  const SimResult wide = result(Strategy::kDdp, 1, 4 * own, 9.0);
  const SimResult narrow = result(Strategy::kDdp, 4, own, 10.0);  // the same global batch
  const auto loss = [](const LargeBatchReport& r, const SimResult& s) { return *r.row(s).prediction.loss_at_k; };
  EXPECT_NEAR(loss(*probed, wide), loss(*plain, wide) - 0.1, 1e-12);
  EXPECT_NEAR(loss(*probed, narrow), loss(*plain, narrow), 1e-12);
  EXPECT_EQ(probed->row(wide).prediction.test_accuracy_at_k, plain->row(wide).prediction.test_accuracy_at_k);
  const std::string text = format_large_batch(*probed, ResultGrid({wide, narrow}));
  EXPECT_NE(text.find("- BatchNorm: the baseline normalised over " + std::to_string(own) + " examples"), std::string::npos)
      << text;
  EXPECT_EQ(format_large_batch(*plain, ResultGrid({wide, narrow})).find("- BatchNorm:"), std::string::npos);
}

// A curve with the scale-invariant weights' readings: Q4's header says how they enter, and a row at
// 4x the batch (its |w|^2 grown slower per example) is read at a higher effective lr than the lr ratio.
TEST_F(Q4Test, TheHeaderSaysHowTheScaleInvariantWeightsEnter) {
  const auto plain = LargeBatchReport::make(config_, profile_);
  for (TrainingCurve& curve : profile_.training) {
    for (EpochPoint& e : curve.epochs) {
      e.si_weight_sq = 20;
      e.si_trace_sigma = 100;
      e.si_update_sq = 100.0 / static_cast<double>(curve.batch);
    }
  }
  const auto normed = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(plain.has_value() && normed.has_value());
  const SimResult wide = result(Strategy::kDdp, 1, 4 * profile_.training.front().batch, 9.0);
  const LargeBatchPrediction& p = normed->row(wide).prediction;
  ASSERT_TRUE(p.effective_lr_ratio_at_k.has_value());
  EXPECT_GT(*p.effective_lr_ratio_at_k, 1);
  EXPECT_FALSE(plain->row(wide).prediction.effective_lr_ratio_at_k.has_value());
  const std::string text = format_large_batch(*normed, ResultGrid({wide}));
  EXPECT_NE(flat(text).find("- BatchNorm's weights (the scale-invariant ones) train at lr / |w|^2: the baseline "
                            "measured their |w|^2 (20 -> 20)"),
            std::string::npos)
      << text;
  EXPECT_EQ(format_large_batch(*plain, ResultGrid({wide})).find("BatchNorm's weights"), std::string::npos);
}

TEST_F(Q4Test, CsvColumns) {
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  const std::string csv = format_predictions_csv({result(Strategy::kDdp, 4, 128, 10.0)}, "resnet18-cifar", &*report);
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  const auto names = split(header, ',');
  const auto cells = split(row, ',');
  ASSERT_EQ(names.size(), cells.size());
  const auto cell = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return cells[i];
    }
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  const LargeBatchPrediction p = report->model().predict(512);
  EXPECT_NEAR(std::stod(cell("epochs_to_target")), *p.epochs_to_target, 1e-6);  // %.9g
  EXPECT_NEAR(std::stod(cell("time_to_target_s")), *p.examples_to_target / 5000, 1e-6);
  EXPECT_EQ(cell("efficiency"), "0.728045326");  // 1028/1412, %.9g
  EXPECT_NEAR(std::stod(cell("loss_at_k")), *p.loss_at_k, 1e-6);
  EXPECT_EQ(cell("sync_bn_s"), "0");
}

// large_batch.svg: every rule at the given global batches, from the same model as the table.
TEST_F(Q4Test, PlotHasEveryRuleAtEveryBatch) {
  const auto report = LargeBatchReport::make(config_, profile_);
  ASSERT_TRUE(report.has_value());
  const PlotScript s = build_plot_script(Comparison{}, {}, Unit{}, &*report, {512, 32, 128, 128});
  ASSERT_FALSE(s.plots.empty());
  EXPECT_EQ(s.plots.back().first, "large_batch.svg");
  EXPECT_NE(s.files[0].content.find("outdir.'/large_batch.svg'"), std::string::npos);
  const TextFile* data = nullptr;
  for (const TextFile& f : s.files) {
    if (f.name == "large_batch.dat") data = &f;
  }
  ASSERT_NE(data, nullptr);
  // At the baseline's batch every rule is the baseline (0.7625, derived above); at 32 the
  // constant rule makes no progress (ln 10), batches sorted and once each.
  EXPECT_NE(data->content.find("# constant: global batch, loss in epoch 5\n32 2.30258509\n128 0.7625\n512 "),
            std::string::npos)
      << data->content;
  for (const char* rule : {"linear", "linear-warmup", "sqrt"}) {
    EXPECT_NE(data->content.find(std::string("# ") + rule + ": global batch, loss in epoch 5\n"), std::string::npos)
        << rule;
    EXPECT_NE(data->content.find(std::string("# ") + rule + ": global batch, test accuracy after epoch 5\n"),
              std::string::npos)
        << rule;
  }
  // Its block sets its own axes: after --compare's log-log predicted-vs-measured plot, a log y
  // axis left set made gnuplot refuse the y range [0:*].
  const std::string& commands = s.files[0].content;
  const size_t block = commands.find("outdir.'/large_batch.svg'");
  EXPECT_LT(commands.find("unset logscale\nset logscale x 2\n", block), commands.find("plot ", block));
  const PlotScript one = build_plot_script(Comparison{}, {}, Unit{}, &*report, {128});
  ASSERT_FALSE(one.skipped.empty());
  EXPECT_NE(one.skipped.back().find("large batches: not drawn, fewer than 2 global batch sizes"), std::string::npos);
}

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class Q4Program : public ::testing::Test {
 protected:
  ProgramRun simulate(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command =
        std::string(TRAINSIM_BIN_DIR) + "/simulate " + args + " > " + out.string() + " 2> " + err.string();
    const int status = std::system(command.c_str());
    ProgramRun run;
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    run.out = read_file(out);
    run.err = read_file(err);
    return run;
  }

  // A config naming `profile` (absolute), with `extra` appended.
  std::string config(const std::string& profile, const std::string& extra) const {
    const fs::path path = dir_ / "config.yaml";
    std::ofstream(path) << "profile: " << profile
                        << "\nsweep: {strategy: [dp, ddp], gpus: [1, 4], batch_per_gpu: [32, 512]}\n" << extra;
    return path.string();
  }

  ::trainsim::testing::TempDir temp_{"trainsim-q4"};
  fs::path dir_ = temp_.path();
};

TEST_F(Q4Program, FixtureSweepPrintsQ4AndSyncBatchNorm) {
  const ProgramRun run = simulate(kStatsDir + "/sweep.yaml --out " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("## SyncBatchNorm: added communication (ddp, N >= 2)"), std::string::npos);
  // The fixture's BatchNorms: stem bn1, layer1.0 bn1 and bn2, layer2.0 bn1 and bn2 (its shortcut
  // has no BatchNorm parameters): 5 layers, 64 x 3 + 128 x 2 = 448 channels, 10 collectives.
  EXPECT_NE(run.out.find("resnet18-cifar has 5 BatchNorm layers (448 channels in all)"), std::string::npos);
  const auto sync_row = table_row(run.out, "ddp:4:128");
  EXPECT_EQ(sync_row.at(2), "10");
  EXPECT_NE(run.out.find("## Q4: large batches"), std::string::npos);
  EXPECT_NE(run.out.find("- lr rule for other batches: linear-warmup"), std::string::npos);

  // sync_bn_s in predictions.csv: per iteration the 5 BatchNorms' collectives on 4 ranks, priced
  // by the same collective model (their arithmetic is checked by hand in sim_sync_batchnorm_test),
  // times the iterations; 0 on 1 GPU.
  const Profile profile = load_profile(kStatsDir + "/profile.yaml");
  const hw::CollectiveModel collectives(profile.collectives, std::nullopt);
  double per_iteration = 0;
  for (const LayerProfile& l : profile.models.at("resnet18-cifar").layers) {
    const train::SyncBatchNormCost c = train::sync_batchnorm_cost(l, 4, collectives);
    per_iteration += c.forward_s + c.backward_s;
  }
  const auto rows = split(read_file(dir_ / "predictions.csv"), '\n');
  const auto names = split(rows.at(0), ',');
  const size_t sync_column = static_cast<size_t>(std::find(names.begin(), names.end(), "sync_bn_s") - names.begin());
  ASSERT_LT(sync_column, names.size());
  int checked = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].empty()) continue;
    const auto cells = split(rows[i], ',');
    const double sync = std::stod(cells.at(sync_column));
    if (cells[1] == "1") {
      EXPECT_EQ(sync, 0) << rows[i];
    } else {
      const double iterations = std::stod(cells[4]);
      EXPECT_NEAR(sync, iterations * per_iteration, 1e-6 * iterations) << rows[i];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);  // ddp:4:32, ddp:4:128, ddp:4:512
}

TEST_F(Q4Program, LargeBatchBlockWithoutACurveIsAnError) {
  const std::string profile = kReportDir + "/profile.yaml";
  const std::string path = config(profile, "large_batch: {epochs: 5}\n");
  const ProgramRun run = simulate(path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "error: " + path + ":3: large_batch: profile " + profile +
                         " has no baseline training curve for resnet18-cifar (run measure baseline)\n");
  EXPECT_TRUE(run.out.empty());
  // lr_rule alone asks too; the error points at it.
  const ProgramRun rule = simulate(config(profile, "\nlr_rule: sqrt\n"));
  EXPECT_EQ(rule.exit_code, 2);
  EXPECT_NE(rule.err.find(":4: lr_rule: profile"), std::string::npos) << rule.err;
}

// large_batch.pace_probe: true asks for the probe by name: a curve without it stops simulate at
// that key; false, or the key left out, reads the curve as it is.
TEST_F(Q4Program, PaceProbeAskedOfACurveWithoutItIsAnError) {
  const std::string profile = kStatsDir + "/profile.yaml";
  const std::string path = config(profile, "large_batch:\n  epochs: 5\n  pace_probe: true\n");
  const ProgramRun run = simulate(path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "error: " + path + ":5: large_batch.pace_probe: profile " + profile +
                         " has a baseline curve for resnet18-cifar without the pace probe (run measure baseline "
                         "--pace-probe-at)\n");
  EXPECT_TRUE(run.out.empty());
  const ProgramRun off = simulate(config(profile, "large_batch: {pace_probe: false}\n"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("## Q4: large batches"), std::string::npos);
}

TEST_F(Q4Program, NeitherBlockNorCurveMeansNoQ4) {
  const ProgramRun run = simulate(config(kReportDir + "/profile.yaml", ""));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.find("## Q4"), std::string::npos);
  EXPECT_EQ(run.out.find("## SyncBatchNorm"), std::string::npos);
}

TEST_F(Q4Program, CurveWithoutBlockGivesQ4WithDefaults) {
  const ProgramRun run = simulate(config(kStatsDir + "/profile.yaml", ""));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("## Q4: large batches: loss after 5 epochs"), std::string::npos);
  EXPECT_NE(run.out.find("- lr rule for other batches: linear-warmup"), std::string::npos);
  // dp has no SyncBatchNorm: with it on, dp configurations carry the note.
  const ProgramRun sync = simulate(config(kStatsDir + "/profile.yaml", "sync_batchnorm: true\n"));
  ASSERT_EQ(sync.exit_code, 0) << sync.err;
  EXPECT_NE(sync.out.find("sync_batchnorm: not applied to dp"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::report
