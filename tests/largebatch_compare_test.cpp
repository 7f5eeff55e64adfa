// measure largebatch-compare's arithmetic (measure/largebatch/compare.h) on hand-made run curves
// whose predictions are known by hand: a baseline with an enormous noise scale scales perfectly
// (E_B = E_0), so the prediction at any batch is the baseline's own curve.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "format/profile_io.h"
#include "format/errors.h"
#include "largebatch/compare.h"
#include "largebatch/compare_plot.h"
#include "largebatch/compare_report.h"
#include "largebatch/plan.h"
#include "pace_probe_fixture.h"
#include "report/gnuplot.h"
#include "temp_dir.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "runs");
  }

  // A run's file as `measure baseline --profile` writes it: machine, measurement, one curve.
  void write_run(const std::string& name, int64_t batch, const std::vector<double>& losses,
                 const std::vector<double>& test_accuracies, const std::string& optimizer = "sgd",
                 double max_lr = 0, double noise_scale = 1e9, double curvature_noise_scale = 0,
                 double curvature_noise_scale_se = 0) {
    Profile p;
    p.machine.name = "test-machine";
    p.machine.device_kind = "cpu";
    p.measurement.command = "measure baseline";
    p.measurement.data = "synthetic";
    TrainingCurve c;
    c.model = "fashion-cnn";
    c.data = "synthetic";
    c.batch = batch;
    c.small_batch = batch / 4;
    c.train_samples = 1000;
    c.lr = 0.1;
    c.momentum = momentum_;
    c.weight_decay = 5e-4;
    // The rule the name says, as the script trains it (LARS under linear-warmup).
    const std::optional<RunName> parsed = parse_run_name(name);
    c.lr_rule = parsed ? to_string(parsed->rule) : "constant";
    c.optimizer = optimizer;
    if (optimizer == "lars") c.lars_eta = 0.001;
    for (size_t i = 0; i < losses.size(); ++i) {
      EpochPoint e;
      e.epoch = static_cast<int>(i) + 1;
      e.examples = 1000.0 * static_cast<double>(i + 1);
      e.train_loss = losses[i];
      e.train_accuracy = train_accuracies_.empty() ? 0.5 : train_accuracies_[i];
      e.test_accuracy = test_accuracies[i];
      e.grad_sq_norm = 1e-6;
      e.trace_sigma = 1e3;
      e.noise_scale = noise_scale;
      e.max_lr = max_lr;
      e.curvature_noise_scale = curvature_noise_scale;
      e.curvature_noise_scale_se = curvature_noise_scale_se;
      if (!recomputed_.empty()) e.test_accuracy_recomputed = recomputed_[i];
      if (!si_weight_sq_.empty()) {
        e.si_weight_sq = si_weight_sq_[i];
        e.si_update_sq = 1;
        e.si_trace_sigma = 1;
      }
      c.epochs.push_back(e);
    }
    if (!recomputed_.empty()) c.recompute_bn_images = 256;
    if (c.lr_rule == "linear-warmup") c.warmup_epochs = warmup_epochs_;
    c.samples = samples_;
    c.start_curvature = start_curvature_;
    p.training.push_back(c);
    write_profile_atomic(p, (dir_ / "runs" / name).string());
  }

  CompareOptions options() const {
    CompareOptions o;
    o.runs_dir = (dir_ / "runs").string();
    o.base_batch = 128;
    o.epochs = 2;
    return o;
  }

  // The same runs compared under another form of the model, e.g. `&CompareOptions::simple_noise_scale`.
  ComparisonSummary compare_with(bool CompareOptions::*option) const {
    CompareOptions o = options();
    o.*option = true;
    return compare_large_batch_runs(o);
  }

  // The same runs read with another PastBound.
  ComparisonSummary compare_past_bound(PastBound past_bound) const {
    CompareOptions o = options();
    o.past_bound = past_bound;
    return compare_large_batch_runs(o);
  }

  std::optional<StartCurvature> start_curvature_;  // the next write_run's (none: not measured)
  double momentum_ = 0;  // the next write_run's (plain SGD: the path alone, no momentum noise floor)
  std::vector<double> train_accuracies_;  // the next write_run's per epoch (empty: 0.5 in every epoch)
  std::vector<CurveSample> samples_;       // the next write_run's samples along its curve
  // The next write_run's scale-invariant |w|^2 per epoch (|v|^2 and tr(Sigma) 1); empty: not measured.
  std::vector<double> si_weight_sq_;
  // The next write_run's test accuracy per epoch with BatchNorm's statistics recomputed; empty: not measured.
  std::vector<double> recomputed_;
  double warmup_epochs_ = 1;  // the next linear-warmup run's ramp, in epochs
  ::trainsim::testing::TempDir temp_{"trainsim-lb-compare"};
  fs::path dir_ = temp_.path();
};

TEST_F(CompareTest, ErrorsAgainstHandComputedPredictions) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  // B_noise 1e9: perfect scaling under the linear rule (x = 1, one example worth one), so the
  // baseline's curve is the prediction: loss knots (0, ln 10), (500, 1.0), (1500, 0.5), flat after;
  // epoch 2's mean over [1000, 2000] = (0.75 + 0.5)/2 / 2 + 0.5 / 2 = 0.5625; test accuracy 0.8 at
  // 2000; the target (the baseline's epoch-1 mean, 1.0) at 500 examples: 0.5 epochs, the model's
  // own crossing. The runs record one mean per epoch, so the compared prediction crosses the
  // predicted epoch means: epoch 1's over [0, 1000] = (ln 10 + 1)/4 + 0.875/2 = 1.263146, epoch 2's
  // 0.5625; knots (500, 1.263146), (1500, 0.5625) cross 1.0 at 500 + 1000 (0.263146 / 0.700646).
  // Measured at 512: 0.8, 0.75, and the loss knots (500, 1.2), (1500, 0.8) cross 1.0 at 1000: 1 epoch.
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});  // never reaches the target
  write_run("b1024-linear-s0.yaml", 1024, {2.0}, {0.3});
  std::ofstream(dir_ / "runs" / "b1024-linear-s0.yaml.failed") << "epoch 2: the training loss is not finite\n";
  std::ofstream(dir_ / "runs" / "notes.txt") << "not a run\n";

  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 3u);
  ASSERT_EQ(s.baselines.size(), 1u);
  const RunComparison* linear512 = nullptr;
  for (const auto& c : s.runs) {
    if (c.run.batch == 512) linear512 = &c;
  }
  ASSERT_NE(linear512, nullptr);
  EXPECT_NEAR(*linear512->predicted.loss_at_k, 0.5625, 1e-5);
  EXPECT_NEAR(*linear512->loss_error_pct, (0.5625 - 0.8) / 0.8 * 100, 1e-3);
  EXPECT_NEAR(*linear512->accuracy_error_points, (0.8 - 0.75) * 100, 1e-3);
  EXPECT_NEAR(*linear512->epochs_to_target, 1.0, 1e-9);
  EXPECT_NEAR(*linear512->predicted.epochs_to_target, 0.5, 1e-5);
  const double as_recorded = (500 + 1000 * (std::log(10.0) / 4 + 0.25 + 0.4375 - 1.0) /
                                        (std::log(10.0) / 4 + 0.25 + 0.4375 - 0.5625)) / 1000;
  EXPECT_NEAR(as_recorded, 0.875576, 1e-6);
  EXPECT_NEAR(*linear512->predicted_epochs_to_target, as_recorded, 1e-5);
  EXPECT_NEAR(*linear512->epochs_error_pct, (as_recorded - 1) * 100, 1e-3);
  // 2048: loss (0.5625 - 1.1)/1.1, accuracy 0.8 - 0.6; the target reached on the predicted side only.
  EXPECT_EQ(s.loss.count, 2);
  EXPECT_EQ(s.accuracy.count, 2);
  EXPECT_EQ(s.epochs.count, 1);
  EXPECT_EQ(s.target_one_side, 1);
  EXPECT_NEAR(s.loss.mean_abs, (29.6875 + (1.1 - 0.5625) / 1.1 * 100) / 2, 1e-3);
  EXPECT_NEAR(s.accuracy.mean_abs, (5.0 + 20.0) / 2, 1e-3);
  EXPECT_NEAR(s.epochs.mean_abs, (1 - as_recorded) * 100, 1e-3);

  for (const auto& c : s.runs) {
    if (c.run.batch == 1024) {
      EXPECT_EQ(c.measured_missing, "epoch 2: the training loss is not finite");
    }
  }
  const std::string lines = format_error_lines(s, options());
  // Every mean absolute error with its bias, the signed mean: both losses predicted low, both
  // accuracies high.
  EXPECT_NEAR(s.loss.bias, -s.loss.mean_abs, 1e-9);
  EXPECT_NEAR(s.accuracy.bias, s.accuracy.mean_abs, 1e-9);
  EXPECT_NE(lines.find("loss error: 39.3%, bias -39.3% (training loss at epoch 2, over 2 of 3 runs; 1 blown up (past "
                       "twice the untrained loss): by regime only)\n"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("accuracy error: 12.5 points, bias +12.5 (test accuracy"), std::string::npos) << lines;
  EXPECT_NE(lines.find("epochs-to-target error: 12.4%, bias -12.4% (epochs"), std::string::npos) << lines;
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare --dir X");
  EXPECT_NE(report.find("| 0 | linear | 512 | 4x | 0.5625 | 0.8000 | -29.7 |"), std::string::npos) << report;
}

// The plot of steps and epochs to the target: with B_noise 1e9 the linear rule scales perfectly,
// so its line reads the same epochs (ErrorsAgainstHandComputedPredictions' 0.875576, the predicted
// epoch means crossed as the runs' are) at every batch of the grid, and its steps fall as 1/B; the
// points are the runs that reached their target.
TEST_F(CompareTest, StepsAndEpochsToTheTargetPlotted) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});  // never reaches the target
  write_run("b1024-sqrt-s0.yaml", 1024, {1.1, 0.9}, {0.6, 0.7});
  const ComparisonSummary s = compare_large_batch_runs(options());
  const ToTargetPlot plot = to_target_plot(s, options());
  EXPECT_EQ(plot.seed, 0u);
  EXPECT_DOUBLE_EQ(plot.target_loss, 1.0);
  EXPECT_EQ(plot.runs_not_reaching, 1);
  ASSERT_EQ(plot.predicted.size(), 2u);
  const ToTargetSeries& linear = plot.predicted[0].rule == "linear" ? plot.predicted[0] : plot.predicted[1];
  ASSERT_EQ(linear.rule, "linear");
  // 128 to 2048, four batches per doubling: 17.
  ASSERT_EQ(linear.points.size(), 17u);
  EXPECT_EQ(linear.points.front().batch, 128);
  EXPECT_EQ(linear.points[1].batch, 152);  // 128 x 2^(1/4) = 152.2
  EXPECT_EQ(linear.points[4].batch, 256);
  EXPECT_EQ(linear.points.back().batch, 2048);
  for (const ToTargetPoint& p : linear.points) {
    EXPECT_NEAR(p.epochs, 0.875576, 1e-5) << p.batch;
    EXPECT_NEAR(p.steps, p.epochs * 1000 / static_cast<double>(p.batch), 1e-9) << p.batch;
  }
  // The measured points: the 512 linear run (1 epoch), the 1024 sqrt run (epoch means 1.1 and 0.9
  // at 500 and 1500 examples cross 1.0 at 1000).
  ASSERT_EQ(plot.measured.size(), 2u);
  for (const ToTargetSeries& m : plot.measured) {
    ASSERT_EQ(m.points.size(), 1u) << m.rule;
    EXPECT_NEAR(m.points[0].epochs, 1.0, 1e-9) << m.rule;
    EXPECT_NEAR(m.points[0].steps, 1000.0 / static_cast<double>(m.points[0].batch), 1e-9) << m.rule;
  }
  // The data: one gnuplot block per series, the lines first; the script plots each block's steps
  // and epochs.
  const std::string data = to_target_data(plot);
  EXPECT_NE(data.find("# linear: predicted from seed 0's baseline\n128 6.84044 0.875576\n"), std::string::npos) << data;
  EXPECT_NE(data.find("\n\n\n# linear: measured runs\n512 1.95312 1\n"), std::string::npos) << data;
  const std::string script = to_target_script(plot, "d.dat", "s.svg", "e.svg");
  EXPECT_NE(script.find("set output outdir.'/s.svg'"), std::string::npos) << script;  // report::draw_svgs
  EXPECT_NE(script.find("'d.dat' index 3 using 1:3 with points"), std::string::npos) << script;
  EXPECT_EQ(script.find("index 4"), std::string::npos) << script;

  std::string warning;
  const std::string section = write_to_target_plot(plot, dir_.string(), "", warning);
  EXPECT_TRUE(fs::exists(dir_ / "to_target.dat"));
  EXPECT_TRUE(fs::exists(dir_ / "to_target.gp"));
  if (report::find_on_path("gnuplot")) {  // scripts/setup.sh installs it
    EXPECT_TRUE(warning.empty()) << warning;
    EXPECT_TRUE(fs::exists(dir_ / "steps_to_target.svg"));
    EXPECT_TRUE(fs::exists(dir_ / "epochs_to_target.svg"));
    EXPECT_NE(section.find("![steps to the target](steps_to_target.svg)"), std::string::npos) << section;
  } else {
    EXPECT_NE(section.find("Not drawn"), std::string::npos) << section;
  }
  EXPECT_NE(section.find("1 run(s) did not reach their target in 2 epochs"), std::string::npos) << section;
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare", nullptr, nullptr,
                                                      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, section);
  EXPECT_LT(report.find("## Steps and epochs to the target"), report.find("## Baselines")) << report;
}

// A line ends where the model predicts no progress: at x_0 = 0.5 the linear rule passes plain SGD's
// bound (x = 2) past 4x the baseline's batch, so its line stops there while the run at 8x, which
// trained, is drawn as a point.
TEST_F(CompareTest, APlottedLineEndsWhereNoProgressIsPredicted) {
  const double x0 = 0.5;
  const double noise = 1e-9;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + noise / 128) / x0, noise);
  write_run("b1024-linear-s0.yaml", 1024, {1.2, 0.8}, {0.6, 0.75});
  const ToTargetPlot plot = to_target_plot(compare_large_batch_runs(options()), options());
  ASSERT_EQ(plot.predicted.size(), 1u);
  EXPECT_GT(plot.predicted[0].points.back().batch, 256);
  EXPECT_LE(plot.predicted[0].points.back().batch, 512);
  ASSERT_EQ(plot.measured.size(), 1u);
  EXPECT_EQ(plot.measured[0].points.front().batch, 1024);
}

// The edge of stability: at x_0 = 0.5 with a negligible noise scale the linear rule at 8x is x = 4,
// past plain SGD's bound (no progress); read at the edge it is x = 1, and an example at 8x the
// batch is worth (1/8) / (2 x_0 - x_0^2) = 1/6 of the baseline's, so it reaches the target (the
// baseline's at 500 examples) after 3000; a constant lr at 4x (x = x_0) is the same either way.
TEST_F(CompareTest, TheEdgeOfStabilityReadingSideBySide) {
  const double x0 = 0.5;
  const double noise = 1e-9;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + noise / 128) / x0, noise);
  write_run("b1024-linear-s0.yaml", 1024, {1.2, 0.8}, {0.6, 0.75});
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary plain = compare_large_batch_runs(options());
  const ComparisonSummary edge = compare_past_bound(PastBound::kEdge);
  ASSERT_EQ(plain.runs.size(), 2u);
  const auto run = [](const ComparisonSummary& s, int64_t batch) {
    return std::find_if(s.runs.begin(), s.runs.end(), [&](const RunComparison& c) { return c.run.batch == batch; });
  };
  EXPECT_TRUE(run(plain, 1024)->predicted.no_progress);
  EXPECT_EQ(plain.regime_agree, 1);
  EXPECT_FALSE(run(edge, 1024)->predicted.no_progress);
  EXPECT_NEAR(*run(edge, 1024)->predicted.epochs_to_target, 3.0, 1e-6);
  EXPECT_EQ(edge.regime_agree, 2);
  EXPECT_DOUBLE_EQ(*run(edge, 512)->predicted.loss_at_k, *run(plain, 512)->predicted.loss_at_k);
  // Planned under each reading (measure largebatch-plan, and with --edge-of-stability).
  CompareOptions at_the_edge = options();
  at_the_edge.past_bound = PastBound::kEdge;
  EXPECT_TRUE(plan_large_batch_runs(options(), {"b2048-linear-s0"}, 1.0, {}, "T").front().no_progress);
  EXPECT_FALSE(plan_large_batch_runs(at_the_edge, {"b2048-linear-s0"}, 1.0, {}, "T").front().no_progress);
  const std::string report =
      format_comparison_report(plain, options(), "measure largebatch-compare", nullptr, nullptr, nullptr, nullptr, &edge);
  EXPECT_NE(report.find("## The same at the edge of stability"), std::string::npos) << report;
  EXPECT_NE(report.find("- regime agreement: 2 of 2 runs"), std::string::npos) << report;
}

// By default the baseline's curvature at its start decides the reading (PastBound::kFromStart):
// the parameters that are not scale-invariant within their bound (0.4) read the edge, as
// TheEdgeOfStabilityReadingSideBySide's edge; past it (15) or not measured, the plain bound.
TEST_F(CompareTest, TheBaselinesStartCurvatureDecidesTheReading) {
  const double x0 = 0.5;
  const double noise = 1e-9;
  const auto linear_1024 = [&](const std::optional<StartCurvature>& start) {
    start_curvature_ = start;
    write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + noise / 128) / x0, noise);
    start_curvature_.reset();
    const ComparisonSummary s = compare_large_batch_runs(options());
    EXPECT_EQ(s.runs.size(), 1u);
    return s.runs.empty() ? LargeBatchPrediction{} : s.runs.front().predicted;
  };
  write_run("b1024-linear-s0.yaml", 1024, {1.2, 0.8}, {0.6, 0.75});
  StartCurvature start;
  start.lr_over_eps_max = 0.6;
  start.rest_lr_over_eps_max = 0.4;
  start.scale_invariant = 2;
  start.parameters = 8;
  const LargeBatchPrediction within = linear_1024(start);
  EXPECT_FALSE(within.no_progress);
  EXPECT_TRUE(within.past_the_bound);
  EXPECT_NEAR(*within.epochs_to_target, 3.0, 1e-6);
  // The run's own first step: 8x the lr puts the 0.4 at 3.2, past 2: a catapult, noted, not predicted.
  ASSERT_TRUE(within.start_x.has_value());
  EXPECT_NEAR(*within.start_x, 3.2, 1e-12);
  EXPECT_TRUE(std::any_of(within.notes.begin(), within.notes.end(), [](const std::string& note) {
    return note.find("catapult: linear lr at 8x the baseline batch (128) starts the parameters that are not "
                     "scale-invariant at 3.2x their eps_max (the baseline's 0.4 times the run's lr over the "
                     "baseline's)") != std::string::npos;
  }));
  const ComparisonSummary read_again = compare_large_batch_runs(options());
  // comparison.csv carries the run's own start (then the norms, empty for a curve without them).
  const std::string csv = format_comparison_csv(read_again);
  EXPECT_NE(csv.find(",3.200000,,,"), std::string::npos) << csv;
  const std::string report = format_comparison_report(read_again, options(), "T");
  EXPECT_NE(report.find("- seed 0: the edge of stability: at the baseline's start its parameters that are not "
                        "scale-invariant are within their bound (lr / eps_max 0.4)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("predicted at the edge of stability (lr above 2x the tuned lr)"), std::string::npos) << report;
  EXPECT_NE(report.find("predicted at the edge of stability (lr above 2x the tuned lr); starts at 3.2x eps_max: "
                        "a catapult, not in the prediction"),
            std::string::npos)
      << report;
  start.rest_lr_over_eps_max.reset();  // every parameter scale-invariant: nothing lacks the escape
  start.scale_invariant = 8;
  const LargeBatchPrediction invariant = linear_1024(start);
  EXPECT_FALSE(invariant.no_progress);
  EXPECT_FALSE(invariant.start_x.has_value());
  start.rest_lr_over_eps_max = 15;
  start.scale_invariant = 2;
  const LargeBatchPrediction past = linear_1024(start);
  EXPECT_TRUE(past.no_progress);
  EXPECT_FALSE(past.past_the_bound);
  EXPECT_NE(format_comparison_report(compare_large_batch_runs(options()), options(), "T")
                .find("- seed 0: the plain bound: at the baseline's start its parameters that are not scale-invariant "
                      "are 15x past their eps_max"),
            std::string::npos);
  EXPECT_TRUE(linear_1024(std::nullopt).no_progress);
  EXPECT_NE(format_comparison_report(compare_large_batch_runs(options()), options(), "T")
                .find("- seed 0: the plain bound: the baseline's curvature at its start was not measured"),
            std::string::npos);
  // Forced either way whatever the start says.
  start.rest_lr_over_eps_max = 0.4;
  linear_1024(start);
  EXPECT_TRUE(compare_past_bound(PastBound::kNoProgress).runs.front().predicted.no_progress);
}

// A baseline with eps_max measured at x_0 = 0.5: a constant lr at 4x the batch is x = x_0 / 4
// (B_noise 1e9) and makes (2x - x^2) / (2x_0 - x_0^2) = 0.3125 of the baseline's progress per
// example, against 0.4375 with the lr taken as tuned (x_0 = 1), which assume_tuned_baseline restores.
TEST_F(CompareTest, MeasuredMaxLrAndTheTunedAssumptionSideBySide) {
  const double x0 = 0.5;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + 1e9 / 128) / x0);
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary measured = compare_large_batch_runs(options());
  const ComparisonSummary tuned = compare_with(&CompareOptions::assume_tuned_baseline);
  ASSERT_EQ(measured.runs.size(), 1u);
  ASSERT_EQ(tuned.runs.size(), 1u);
  const double e0_measured = *measured.runs[0].predicted.baseline_examples_at_k;
  const double e0_tuned = *tuned.runs[0].predicted.baseline_examples_at_k;
  EXPECT_NEAR(e0_measured / e0_tuned, 0.3125 / 0.4375, 1e-6);
  const std::string report = format_comparison_report(measured, options(), "measure largebatch-compare", &tuned);
  EXPECT_NE(report.find("## The same with the baselines' lr taken as tuned"), std::string::npos) << report;
  EXPECT_NE(report.find(" | 0.50 | - | - | - |\n"), std::string::npos) << report;  // x_0 in the baselines' table, no B_noise, no probe
}

// A baseline with B_simple 200, x_0 0.5 and B_noise = tr(H Sigma) / G^T H G 400: at 4x the batch
// under a constant lr, x = x_0 (1 + B_n/512) / (1 + B_n/128) and the rate (B_n + 128) / (B_n + 512)
// (2x - x^2) / (2x_0 - x_0^2) with B_n = B_noise = 400 (the default), and with simple_noise_scale
// B_n = B_simple = 200.
TEST_F(CompareTest, BSimpleAndTheMeasuredCurvatureNoiseScaleSideBySide) {
  const double x0 = 0.5;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + 200.0 / 128) / x0, 200, 400, 50);
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary measured = compare_large_batch_runs(options());
  const ComparisonSummary simple = compare_with(&CompareOptions::simple_noise_scale);
  ASSERT_EQ(measured.runs.size(), 1u);
  ASSERT_EQ(simple.runs.size(), 1u);
  const auto rate = [&](double noise) {
    const double x = x0 * (1 + noise / 512) / (1 + noise / 128);
    return (noise + 128) / (noise + 512) * (2 * x - x * x) / (2 * x0 - x0 * x0);
  };
  EXPECT_NEAR(*measured.runs[0].predicted.baseline_examples_at_k / *simple.runs[0].predicted.baseline_examples_at_k,
              rate(400) / rate(200), 1e-6);
  const std::string report =
      format_comparison_report(measured, options(), "measure largebatch-compare", nullptr, &simple);
  EXPECT_NE(report.find("## The same with B_simple = tr(Sigma) / |G|^2 alone"), std::string::npos) << report;
  EXPECT_NE(report.find(" | 0.50 | 400.0 | 50.0 | - |\n"), std::string::npos) << report;

  // A B_noise whose standard error is more than a quarter of it does not count: B_simple stands in.
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + 200.0 / 128) / x0, 200, 400, 101);
  const ComparisonSummary uncertain = compare_large_batch_runs(options());
  ASSERT_EQ(uncertain.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(*uncertain.runs[0].predicted.baseline_examples_at_k,
                   *simple.runs[0].predicted.baseline_examples_at_k);
}

// Regimes: the model's trains / no progress against where each run ended; a run that blew up
// agrees with no progress and is left out of the loss error (counted in the figure beside it).
TEST_F(CompareTest, RegimesAndTheRunsThatBlewUp) {
  // B_simple 1e9 and x_0 1.5: at a constant lr x = x_0 128/B, past 2 below batch 96.
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0.1 * (1 + 1e9 / 128) / 1.5);
  write_run("b32-constant-s0.yaml", 32, {2.4, 2.35}, {0.1, 0.1});     // no progress, as predicted
  write_run("b64-constant-s0.yaml", 64, {5.0, 7.0}, {0.1, 0.1});      // blew up; predicted no progress
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});     // trained, as predicted
  write_run("b1024-constant-s0.yaml", 1024, {2.5, 2.4}, {0.1, 0.1});  // no progress; predicted to train
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 4u);
  EXPECT_EQ(s.regime_count, 4);
  EXPECT_EQ(s.regime_agree, 3);
  EXPECT_EQ(s.regimes[0][0], 1);  // 512
  EXPECT_EQ(s.regimes[0][1], 1);  // 1024
  EXPECT_EQ(s.regimes[1][1], 1);  // 32
  EXPECT_EQ(s.regimes[1][2], 1);  // 64
  EXPECT_EQ(s.blown_up, 1);
  EXPECT_EQ(s.loss.count, 3);
  EXPECT_EQ(s.loss_with_blown_up.count, 4);
  for (const RunComparison& c : s.runs) {
    if (c.run.batch != 64) continue;
    EXPECT_FALSE(c.loss_error_pct.has_value());
    ASSERT_TRUE(c.loss_error_pct_blown_up.has_value());
    EXPECT_NEAR(*c.loss_error_pct_blown_up, (std::log(10.0) - 7.0) / 7.0 * 100, 1e-9);
    ASSERT_TRUE(c.accuracy_error_points.has_value());  // accuracy stays compared
  }
  EXPECT_GT(s.loss_with_blown_up.mean_abs, s.loss.mean_abs);
  const std::string report = format_comparison_report(s, options(), "x");
  EXPECT_NE(report.find("| no progress | 0 | 1 | 1 |\n"), std::string::npos) << report;
  EXPECT_NE(report.find("regime agreement: 3 of 4 runs\n"), std::string::npos) << report;
  const std::string csv = format_comparison_csv(s);
  EXPECT_NE(csv.find(",no progress,blew up,,"), std::string::npos) << csv;
}

// A baseline whose epoch-1 loss is above the untrained ln 10 makes a default target every run
// starts at: counted apart, never a division by a zero epoch count.
TEST_F(CompareTest, ATargetAtTheUntrainedLossIsNotCompared) {
  write_run("b128-constant-s0.yaml", 128, {2.5, 0.6}, {0.1, 0.8});
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.target_at_start, 1);
  EXPECT_EQ(s.epochs.count, 0);
  EXPECT_FALSE(s.runs[0].epochs_error_pct.has_value());
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare");
  EXPECT_NE(report.find("seed 0 (its baseline did not train in epoch 1: loss 2.500)"), std::string::npos) << report;
  EXPECT_EQ(report.find("nan"), std::string::npos) << report;
}

TEST_F(CompareTest, MissingBaselineAndInterruptedRunsAreErrorsNamingTheFile) {
  write_run("b512-linear-s3.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  try {
    compare_large_batch_runs(options());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no baseline for seed 3"), std::string::npos) << e.what();
  }
  write_run("b128-constant-s3.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b256-sqrt-s3.yaml", 256, {1.0}, {0.7});  // 1 of 2 epochs, no .failed
  try {
    compare_large_batch_runs(options());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b256-sqrt-s3.yaml: 1 of 2 epochs"), std::string::npos) << e.what();
  }
}

// A run is predicted from a baseline trained as it was but for its batch and rule: one that
// differs (here in momentum) is another experiment, an error
// naming the file, the line and the key; so is a second seed's baseline trained otherwise than the
// first's, and a curve whose rule is not its name's. The report states the setting.
TEST_F(CompareTest, ARunTrainedOtherwiseThanItsBaselineIsAnErrorNamingFileLineAndKey) {
  momentum_ = 0;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(options());
  EXPECT_NE(format_comparison_report(s, options(), "x")
                .find("with base lr 0.1, momentum 0 and weight decay 0.0005 (checked): plain SGD"),
            std::string::npos);

  momentum_ = 0.9;
  write_run("b2048-constant-s0.yaml", 2048, {1.3, 0.9}, {0.6, 0.7});
  const auto error_of = [&] {
    try {
      compare_large_batch_runs(options());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string line;
  int momentum_line = 0;
  std::ifstream file(dir_ / "runs" / "b2048-constant-s0.yaml");
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.find("    momentum:") == 0) momentum_line = number;
  }
  ASSERT_GT(momentum_line, 0);
  EXPECT_NE(error_of().find("b2048-constant-s0.yaml:" + std::to_string(momentum_line) +
                            ": momentum 0.9 differs from b128-constant-s0.yaml's 0"),
            std::string::npos)
      << error_of();
  fs::remove(dir_ / "runs" / "b2048-constant-s0.yaml");

  write_run("b128-constant-s1.yaml", 128, {1.0, 0.5}, {0.7, 0.8});  // momentum 0.9 against seed 0's 0
  EXPECT_NE(error_of().find("b128-constant-s1.yaml:"), std::string::npos) << error_of();
  EXPECT_NE(error_of().find("momentum 0.9 differs from b128-constant-s0.yaml's 0"), std::string::npos);
  fs::remove(dir_ / "runs" / "b128-constant-s1.yaml");

  momentum_ = 0;
  write_run("b512-sqrt-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  fs::rename(dir_ / "runs" / "b512-sqrt-s0.yaml", dir_ / "runs" / "b512-linear-s0.yaml");
  EXPECT_NE(error_of().find("b512-linear-s0.yaml:"), std::string::npos) << error_of();
  EXPECT_NE(error_of().find(": lr_rule sqrt, but the file's name says linear"), std::string::npos) << error_of();
}

// Baselines trained with momentum: the runs' losses are read lower by momentum's noise floor, and
// the report says so and shows the plain path's errors beside.
TEST_F(CompareTest, MomentumsNoiseFloorAndThePlainPathSideBySide) {
  momentum_ = 0.9;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(options());
  const ComparisonSummary plain = compare_with(&CompareOptions::without_momentum_floor);
  ASSERT_EQ(s.runs.size(), 1u);
  ASSERT_EQ(plain.runs.size(), 1u);
  // 0.9/0.1 x tr(Sigma) 1000/4 x 0.1 (1/128 - 1/512) = 0.1318 lower on the curve.
  EXPECT_NEAR(*s.runs[0].predicted.momentum_floor_gap_at_k, 9 * 1000 / 4.0 * 0.1 * (1 / 128.0 - 1 / 512.0), 1e-12);
  EXPECT_FALSE(plain.runs[0].predicted.momentum_floor_gap_at_k);
  EXPECT_LT(*s.runs[0].predicted.loss_at_k, *plain.runs[0].predicted.loss_at_k - 0.05);
  const std::string report = format_comparison_report(s, options(), "x", nullptr, nullptr, &plain);
  EXPECT_NE(report.find("momentum 0.9 and weight decay 0.0005 (checked): the step equation is plain SGD's, and the "
                        "momentum enters as the noise floor it raises"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("## The same without momentum's noise floor"), std::string::npos) << report;
}

// A baseline with the BatchNorm probe: a run is predicted at its own BatchNorm batch (its
// small_batch, 128 at batch 512), its loss lower by the probe's L(32) - L(128); the report shows the
// probe and the errors without it beside.
TEST_F(CompareTest, TheBatchNormGapAtTheRunsOwnBatchNormBatch) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  const std::string baseline = (dir_ / "runs" / "b128-constant-s0.yaml").string();
  Profile p = load_profile(baseline);
  p.training[0].probe_batches = {32, 128, 512};
  for (EpochPoint& e : p.training[0].epochs) e.probe_loss = {1.0, 0.96, 0.95};
  write_profile_atomic(p, baseline);
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(options());
  const ComparisonSummary plain = compare_with(&CompareOptions::without_batchnorm_gap);
  ASSERT_EQ(s.runs.size(), 1u);
  ASSERT_EQ(plain.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(s.runs[0].predicted.bn_batch, 128);
  EXPECT_NEAR(*s.runs[0].predicted.batchnorm_gap_at_k, 0.04, 1e-12);
  EXPECT_FALSE(plain.runs[0].predicted.batchnorm_gap_at_k);
  EXPECT_NEAR(*s.runs[0].predicted.loss_at_k, *plain.runs[0].predicted.loss_at_k - 0.04, 1e-12);
  EXPECT_EQ(s.runs[0].predicted.test_accuracy_at_k, plain.runs[0].predicted.test_accuracy_at_k);
  const std::string report = format_comparison_report(s, options(), "x", nullptr, nullptr, nullptr, &plain);
  EXPECT_NE(report.find("| 0.0500 (32 vs 512) |"), std::string::npos) << report;
  EXPECT_NE(report.find("## The same without the BatchNorm gap"), std::string::npos) << report;
  EXPECT_NE(format_comparison_csv(s).find(",0.040000,"), std::string::npos) << format_comparison_csv(s);
}

// A baseline with the pace probe: the model reads it only with CompareOptions::pace_probe, and
// the report shows the other form beside the errors and each baseline's reading in words.
TEST_F(CompareTest, ThePaceProbeBesideTheSingleStepStatistics) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", /*max_lr=*/0.2, /*noise_scale=*/200);
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  {
    // --pace-probe where no baseline carries it: an error naming the folder, nothing written.
    std::vector<std::string> args = {"largebatch-compare", "--dir", dir_.string(), "--epochs", "2", "--pace-probe"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    try {
      largebatch_compare_main(static_cast<int>(argv.size()), argv.data());
      ADD_FAILURE() << "--pace-probe without a probed baseline was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("runs: no baseline used here carries the pace probe, which --pace-probe"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(dir_ / "report.md"));
  }
  const ComparisonSummary unprobed = compare_large_batch_runs(options());
  EXPECT_EQ(format_comparison_report(unprobed, options(), "x", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                     nullptr, &unprobed)
                .find("pace probe"),
            std::string::npos);
  const std::string baseline = (dir_ / "runs" / "b128-constant-s0.yaml").string();
  Profile p = load_profile(baseline);
  // Gains of the step equation at alpha 0.2, nu 0.6.
  p.training[0].pace_probe = ::trainsim::testing::step_equation_probe(500, 0.2, 0.6);
  write_profile_atomic(p, baseline);
  const ComparisonSummary off = compare_large_batch_runs(options());
  const ComparisonSummary on = compare_with(&CompareOptions::pace_probe);
  ASSERT_EQ(off.runs.size(), 1u);
  ASSERT_EQ(on.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(*off.runs[0].predicted.baseline_examples_at_k, *unprobed.runs[0].predicted.baseline_examples_at_k);
  // At batch 512 and the baseline's lr, x = x_0 (1 + B_n/512) / (1 + B_n/128) and the path's rate
  // (B_n + 128)/(B_n + 512) (2x - x^2)/(2x_0 - x_0^2): B_n 200 and x_0 1.28125 as measured; B_n 384 and
  // x_0 0.8 with the probe, which puts the baseline's lr further below the tuned one.
  const auto examples_at_2 = [](double noise, double x0) {
    const double x = x0 * (1 + noise / 512) / (1 + noise / 128);
    return 2000 * (noise + 128) / (noise + 512) * (2 * x - x * x) / (2 * x0 - x0 * x0);
  };
  EXPECT_NEAR(*off.runs[0].predicted.baseline_examples_at_k, examples_at_2(200, 1.28125), 1e-6);
  EXPECT_NEAR(*on.runs[0].predicted.baseline_examples_at_k, examples_at_2(384, 0.8), 1e-6);
  EXPECT_NEAR(*on.runs[0].predicted.noise_scale_at_target, 384, 1e-6);
  const std::string report = format_comparison_report(off, options(), "x", nullptr, nullptr, nullptr, nullptr, nullptr,
                                                      nullptr, nullptr, &on);
  EXPECT_NE(report.find("## The same with the pace probe"), std::string::npos) << report;
  EXPECT_NE(report.find("- seed 0: the pace probe after 500 examples (gains 16x the batch at 1x the lr"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("alpha 0.2, nu 0.6, so x_0 0.8 (the single-step statistics' 1.28) and B_n 384 (theirs 200)"),
            std::string::npos)
      << report;
  CompareOptions with = options();
  with.pace_probe = true;
  EXPECT_NE(format_comparison_report(on, with, "x", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &off)
                .find("## The same without the pace probe"),
            std::string::npos);
  // `measure largebatch-compare --pace-probe`: the probe's form is the report's and the CSV's.
  const std::string dir = dir_.string();
  for (const bool flag : {false, true}) {
    std::vector<std::string> args = {"largebatch-compare", "--dir", dir, "--epochs", "2", "--quiet"};
    if (flag) args.push_back("--pace-probe");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStdout();
    ASSERT_EQ(largebatch_compare_main(static_cast<int>(argv.size()), argv.data()), 0);
    ::testing::internal::GetCapturedStdout();
    std::ifstream in(dir_ / "report.md");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(flag ? "## The same without the pace probe" : "## The same with the pace probe"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(flag ? "--pace-probe" : "--quiet`"), std::string::npos);
  }
}

// LARS runs are measured only: in the report and the CSV, in no error and no count of them.
TEST_F(CompareTest, LarsRunsAreMeasuredOnly) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b512-lars-s0.yaml", 512, {1.1, 0.7}, {0.65, 0.77}, "lars");
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.measured_only, 1);
  const RunComparison& lars = s.runs.back();  // LARS after the rules of its seed
  EXPECT_TRUE(lars.run.lars);
  EXPECT_TRUE(lars.measured_only);
  EXPECT_NEAR(*lars.loss_at_k, 0.7, 1e-12);
  EXPECT_FALSE(lars.predicted.loss_at_k);
  EXPECT_FALSE(lars.loss_error_pct);
  EXPECT_EQ(s.loss.count, 1);
  EXPECT_NEAR(s.loss.mean_abs, 29.6875, 1e-3);  // the linear run's alone
  EXPECT_NE(format_error_lines(s, options()).find("over 1 of 1 runs"), std::string::npos);
  EXPECT_NE(format_comparison_report(s, options(), "x").find("| 0 | lars | 512 | 4x | - | 0.7000 | - |"),
            std::string::npos);
  EXPECT_NE(format_comparison_csv(s).find("\n0,lars,512,"), std::string::npos);
  // A file named lars whose curve was trained with SGD is a mislabelled run.
  write_run("b1024-lars-s0.yaml", 1024, {1.1, 0.7}, {0.65, 0.77});
  EXPECT_THROW(compare_large_batch_runs(options()), std::runtime_error);
}

// Below the baseline batch the ratio keeps its digits (0.5x, not 0x).
TEST_F(CompareTest, ASmallerBatchPrintsItsRatio) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b64-constant-s0.yaml", 64, {0.9, 0.45}, {0.72, 0.82});
  const ComparisonSummary s = compare_large_batch_runs(options());
  EXPECT_NE(format_comparison_report(s, options(), "x").find("| 0 | constant | 64 | 0.5x |"), std::string::npos);
}

// A path that leaves the baseline curve before epoch k (a smaller batch, worth more baseline
// examples than were measured) still has its first epochs' means, and its epochs to the target
// are read between them as the run's are.
TEST_F(CompareTest, APathBeyondTheCurveIsReadOnItsPredictedEpochs) {
  // B_noise 10: at 64, x = (1 + 10/64)/(1 + 10/128) = 1.07 and an example is worth 1.86 of the
  // baseline's: epoch 1 ends at E_0 = 1855 of the 2000 measured, epoch 2 beyond.
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8}, "sgd", 0, 10);
  write_run("b64-constant-s0.yaml", 64, {0.8, 0.4}, {0.72, 0.82}, "sgd", 0, 10);
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 1u);
  const RunComparison& c = s.runs.front();
  EXPECT_FALSE(c.predicted.loss_at_k);
  ASSERT_EQ(c.predicted.loss_by_epoch.size(), 1u);
  // The target, the baseline's epoch-1 loss 1.0, between the untrained ln 10 at 0 and epoch 1's
  // predicted mean at its middle.
  const double m = c.predicted.loss_by_epoch[0];
  ASSERT_TRUE(c.predicted_epochs_to_target);
  EXPECT_NEAR(*c.predicted_epochs_to_target, 0.5 * (std::log(10.0) - 1.0) / (std::log(10.0) - m), 1e-9);
  EXPECT_NEAR(*c.epochs_to_target, 0.5 * (std::log(10.0) - 1.0) / (std::log(10.0) - 0.8), 1e-9);
}

// A seed whose baseline never left the untrained loss predicts nothing: its runs are listed with
// the reason and in no error.
TEST_F(CompareTest, ABaselineThatNeverTrainedPredictsNothing) {
  write_run("b128-constant-s0.yaml", 128, {2.40, 2.31}, {0.1, 0.1});
  write_run("b512-constant-s0.yaml", 512, {2.0, 1.2}, {0.3, 0.6});
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_FALSE(s.runs.front().loss_error_pct);
  EXPECT_EQ(s.loss.count, 0);
  const std::string report = format_comparison_report(s, options(), "x");
  EXPECT_NE(report.find("not predicted: the baseline never trained (2 epochs measured"), std::string::npos) << report;
  EXPECT_NE(report.find("- seed 0 (its baseline never trained: loss 2.310 in its last epoch; nothing predicted)"),
            std::string::npos)
      << report;
}

// --from-seed: every run predicted from one seed's baseline (its epoch-1 loss every run's target),
// as Q4 predicts from the one curve a profile carries; a seed whose own baseline never trained is
// then predicted all the same. A seed with no baseline is an error naming it.
TEST_F(CompareTest, EveryRunPredictedFromOneSeedsBaseline) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b128-constant-s1.yaml", 128, {2.40, 2.31}, {0.1, 0.1});  // never trained
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b512-linear-s1.yaml", 512, {1.1, 0.7}, {0.6, 0.8});
  const ComparisonSummary own = compare_large_batch_runs(options());
  CompareOptions o = options();
  o.from_seed = 0;
  const ComparisonSummary s = compare_large_batch_runs(o);
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(own.loss.count, 1);  // seed 1's own baseline predicts nothing
  EXPECT_EQ(s.loss.count, 2);
  for (const auto& c : s.runs) {
    // B_noise 1e9 and the linear rule: the prediction is seed 0's curve (ErrorsAgainstHand...).
    EXPECT_NEAR(*c.predicted.loss_at_k, 0.5625, 1e-5);
    EXPECT_DOUBLE_EQ(c.target_loss, 1.0);
  }
  const std::string report = format_comparison_report(s, o, "x");
  EXPECT_NE(report.find("Seed 0's baseline (batch 128, constant lr) is the only input of every prediction"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("- seed 1 (predicted from seed 0's baseline): loss "), std::string::npos) << report;
  EXPECT_EQ(report.find("| 1 | synthetic | 1 |"), std::string::npos) << report;  // seed 1's baseline not listed
  o.from_seed = 7;
  try {
    compare_large_batch_runs(o);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no baseline for seed 7 (b128-constant-s7.yaml), which --from-seed names"),
              std::string::npos)
        << e.what();
  }
}

// The seed-to-seed spread: each configuration's mean over its seeds against each run; a
// configuration with a run past twice ln 10 (blown up) is left out of the loss's.
TEST_F(CompareTest, TheSeedToSeedSpreadIsTheNoiseFloor) {
  for (const char* seed : {"0", "1"}) {
    write_run(std::string("b128-constant-s") + seed + ".yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  }
  write_run("b512-constant-s0.yaml", 512, {1.5, 1.0}, {0.5, 0.6});
  write_run("b512-constant-s1.yaml", 512, {1.4, 0.8}, {0.5, 0.7});
  write_run("b1024-constant-s0.yaml", 1024, {3.0, 9.0}, {0.1, 0.1});  // blown up
  write_run("b1024-constant-s1.yaml", 1024, {2.5, 2.4}, {0.1, 0.12});
  write_run("b2048-constant-s0.yaml", 2048, {2.0, 1.9}, {0.2, 0.3});  // one seed: no spread
  const ComparisonSummary s = compare_large_batch_runs(options());
  // Loss: mean 0.9 against 1.0 and 0.8: 10% and 12.5%.
  EXPECT_EQ(s.spread_loss_count, 2);
  EXPECT_NEAR(s.spread_loss_pct, 11.25, 1e-9);
  // Accuracy: 0.65 against 0.6 and 0.7 (5 points each), 0.11 against 0.1 and 0.12 (1 point each).
  EXPECT_EQ(s.spread_accuracy_count, 4);
  EXPECT_NEAR(s.spread_accuracy_points, 3.0, 1e-9);
  EXPECT_NE(format_comparison_report(s, options(), "x").find("loss 11.2% over 2 runs"), std::string::npos);
}

// The training accuracy: the run's epoch-k mean against the model's epoch-k mean along the path,
// over the runs predicted to train.
TEST_F(CompareTest, TheTrainingAccuracyWhereTheModelPlacesTheRun) {
  train_accuracies_ = {0.6, 0.7};
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  train_accuracies_ = {0.55, 0.6655};
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 1u);
  const RunComparison& c = s.runs.front();
  // Perfect scaling: the baseline's own curve. Its training accuracy knots (0, 1/10), (500, 0.6),
  // (1500, 0.7), flat after: epoch 2's mean over [1000, 2000] is (0.675 + 0.7) / 2 = 0.6875.
  ASSERT_TRUE(c.train_accuracy_at_k.has_value());
  EXPECT_DOUBLE_EQ(*c.train_accuracy_at_k, 0.6655);
  EXPECT_NEAR(*c.predicted.train_accuracy_at_k, 0.6875, 1e-4);
  EXPECT_NEAR(*c.train_accuracy_error_points, 2.2, 1e-3);
  EXPECT_EQ(s.trained_train_accuracy.count, 1);
  EXPECT_NEAR(s.trained_train_accuracy.mean_abs, 2.2, 1e-3);
  const std::string report = format_comparison_report(s, options(), "x");
  EXPECT_NE(report.find("eval mode) 2.2 points, bias +2.2 over 1 runs"), std::string::npos) << report;
  const std::string csv = format_comparison_csv(s);
  EXPECT_NE(csv.find(",0.687500,0.665500,2.19"), std::string::npos) << csv;  // predicted, measured, error
}

// The test accuracy with BatchNorm's statistics recomputed, predicted from the baseline's curve of the
// same as eval mode's is from its own: perfect scaling reads both at 2000 examples, where the
// baseline's are 0.8 and 0.85. The 512 run: eval mode 0.75 (error 5 points), recomputed 0.83 (error
// 2 points), its lag 8 points; the 2048 run did not measure it and is left out of those figures.
TEST_F(CompareTest, TheRecomputedStatisticsAccuracyBesideEvalModes) {
  recomputed_ = {0.72, 0.85};
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  recomputed_ = {0.65, 0.83};
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  recomputed_.clear();
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 2u);
  const RunComparison& c = s.runs.front();
  ASSERT_EQ(c.run.batch, 512);
  // (B_noise 1e9 is not infinite: E_0 falls short of 2000 by a millionth of an example's worth.)
  EXPECT_NEAR(*c.predicted.test_accuracy_at_k, 0.8, 1e-6);
  EXPECT_NEAR(*c.predicted.test_accuracy_recomputed_at_k, 0.85, 1e-6);
  EXPECT_DOUBLE_EQ(*c.test_accuracy_recomputed_at_k, 0.83);
  EXPECT_NEAR(*c.recomputed_accuracy_error_points, 2.0, 1e-4);
  EXPECT_FALSE(s.runs.back().recomputed_accuracy_error_points.has_value());
  EXPECT_TRUE(s.runs.back().predicted.test_accuracy_recomputed_at_k.has_value());  // the baseline has it
  EXPECT_EQ(s.recomputed_count, 1);
  EXPECT_NEAR(s.recomputed_accuracy_error_points, 2.0, 1e-4);
  EXPECT_NEAR(s.recomputed_eval_accuracy_error_points, 5.0, 1e-4);
  EXPECT_NEAR(s.recomputed_lag_points, 8.0, 1e-9);
  EXPECT_EQ(s.accuracy.count, 2);  // eval mode's figure over every run, as before
  const std::string report = format_comparison_report(s, options(), "x");
  EXPECT_NE(report.find("accuracy error 2.0 points over 1 runs, against eval mode's 5.0 points on the same runs"),
            std::string::npos)
      << report;
  // One epoch past the first: no scatter of the lag to read (the column's "-", no sentence).
  EXPECT_FALSE(c.lag_scatter_points.has_value());
  EXPECT_EQ(s.lag_scatter_count, 0);
  EXPECT_EQ(report.find("not steady"), std::string::npos);
  EXPECT_NE(report.find("| 0 | linear | 512 | 0.7500 | 0.8300 | 8.0 | - | 0.8000 | 0.8500 | 5.0 | 2.0 |"),
            std::string::npos)
      << report;
  EXPECT_NE(format_comparison_csv(s).find(",0.850000,0.830000,1.99999"), std::string::npos)
      << format_comparison_csv(s);
  // Runs without it: no section, and the columns empty.
  fs::remove_all(dir_ / "runs");
  fs::create_directories(dir_ / "runs");
  recomputed_.clear();
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary plain = compare_large_batch_runs(options());
  EXPECT_EQ(plain.recomputed_count, 0);
  EXPECT_FALSE(plain.runs.front().predicted.test_accuracy_recomputed_at_k.has_value());
  EXPECT_EQ(format_comparison_report(plain, options(), "x").find("statistics recomputed"), std::string::npos);
  EXPECT_NE(format_comparison_csv(plain).find(",,,\n"), std::string::npos) << format_comparison_csv(plain);
}

// How steady each run's own lag is, from epoch 2 (past the warm-up) to k = 4: the linear run at 4x
// the lr lags 2, 8 and 5 points at the ends of epochs 2-4 (mean 5, each 3, 3, 0 from it: 2.0); the
// linear-warmup run's two-epoch ramp leaves epochs 3 and 4, lags 3 and 5 (1.0); the constant run, at
// the baseline's lr, 1, 1 and 4 (mean 2: 4/3). Raised 1.5 over 2 runs, at the baseline's lr 4/3.
TEST_F(CompareTest, TheLagsScatterBetweenTheEpochsEndsSplitByTheLr) {
  recomputed_ = {0.72, 0.78, 0.83, 0.85};
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.7, 0.5, 0.4}, {0.7, 0.75, 0.8, 0.82});
  recomputed_ = {0.65, 0.72, 0.80, 0.80};
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.9, 0.7, 0.6}, {0.6, 0.70, 0.72, 0.75});
  recomputed_ = {0.65, 0.71, 0.73, 0.79};
  write_run("b512-constant-s0.yaml", 512, {1.2, 0.9, 0.7, 0.6}, {0.6, 0.70, 0.72, 0.75});
  warmup_epochs_ = 2;
  recomputed_ = {0.5, 0.7, 0.73, 0.77};
  write_run("b1024-linear-warmup-s0.yaml", 1024, {1.3, 1.0, 0.8, 0.7}, {0.5, 0.6, 0.7, 0.72});
  CompareOptions o = options();
  o.epochs = 4;
  const ComparisonSummary s = compare_large_batch_runs(o);
  std::map<std::string, const RunComparison*> by_rule;
  for (const RunComparison& c : s.runs) by_rule[rule_label(c.run)] = &c;
  ASSERT_EQ(by_rule.size(), 3u);
  for (const auto& [rule, c] : by_rule) {
    ASSERT_TRUE(c->recomputed_accuracy_error_points.has_value()) << rule;
    ASSERT_TRUE(c->lag_scatter_points.has_value()) << rule;
  }
  EXPECT_NEAR(*by_rule["linear"]->lag_scatter_points, 2.0, 1e-9);
  EXPECT_NEAR(*by_rule["linear-warmup"]->lag_scatter_points, 1.0, 1e-9);
  EXPECT_NEAR(*by_rule["constant"]->lag_scatter_points, 4.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(by_rule["constant"]->predicted.lr_ratio_at_k, 1.0);
  EXPECT_DOUBLE_EQ(by_rule["linear-warmup"]->predicted.lr_ratio_at_k, 8.0);
  EXPECT_EQ(s.lag_scatter_count, 3);
  EXPECT_NEAR(s.lag_scatter_points, (2.0 + 1.0 + 4.0 / 3) / 3, 1e-9);
  EXPECT_EQ(s.lag_scatter_raised_count, 2);
  EXPECT_NEAR(s.lag_scatter_raised_points, 1.5, 1e-9);
  EXPECT_EQ(s.lag_scatter_level_count, 1);
  EXPECT_NEAR(s.lag_scatter_level_points, 4.0 / 3, 1e-9);
  const std::string report = format_comparison_report(s, o, "x");
  EXPECT_NE(report.find("a run's lag lies 1.4 points from that run's own mean (mean absolute, over 3 runs; 2 at an "
                        "lr the rule raises over the baseline's: 1.5; 1 at the baseline's lr or below: 1.3;"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("| 0 | linear | 512 | 0.7500 | 0.8000 | 5.0 | 2.0 |"), std::string::npos) << report;
}

// A single evaluation's scatter: the predicting baselines' test evaluations inside epoch k against
// their epoch's mean; a baseline with one evaluation an epoch has none.
// Level or pace: each run's measured and predicted epoch-k losses read back on the baseline's curve.
// Perfect scaling: the prediction is the baseline's curve, knots (0, ln 10), (500, 1.0), (1500, 0.5);
// the prediction at 512 and at 2048, 0.5625, is read at 1375 examples; 512's measured 0.8 at 900,
// 2048's 1.1 at 500 (ln 10 - 1.1) / (ln 10 - 1).
TEST_F(CompareTest, ThePaceRatioReadsBothLossesOnTheBaselinesCurve) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 2u);
  const double at_2048 = 500 * (std::log(10.0) - 1.1) / (std::log(10.0) - 1);
  for (const auto& c : s.runs) {
    ASSERT_TRUE(c.pace_ratio.has_value()) << c.run.batch;
    EXPECT_NEAR(*c.pace_ratio, (c.run.batch == 512 ? 900.0 : at_2048) / 1375, 1e-4) << c.run.batch;
  }
  const std::string report = format_comparison_report(s, options(), "x");
  const double geometric = std::sqrt(900.0 / 1375 * at_2048 / 1375);
  char row[128];
  std::snprintf(row, sizeof row, "| linear | 2 | %.2f | %.2f to %.2f |", geometric, at_2048 / 1375, 900.0 / 1375);
  EXPECT_NE(report.find(row), std::string::npos) << report;
  EXPECT_EQ(report.find("The scale-invariant weights' |w|^2 after epoch"), std::string::npos) << report;
}

// The norm the model grows along a run's path beside the one the run measured, where both exist.
TEST_F(CompareTest, TheRunsMeasuredNormBesideThePredictedOne) {
  si_weight_sq_ = {10, 12};
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  si_weight_sq_ = {11, 14};
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  si_weight_sq_.clear();
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});  // recorded without the readings
  const ComparisonSummary s = compare_large_batch_runs(options());
  ASSERT_EQ(s.runs.size(), 2u);
  for (const auto& c : s.runs) {
    EXPECT_TRUE(c.predicted.weight_sq_at_k.has_value()) << c.run.batch;
    EXPECT_EQ(c.weight_sq_at_k.has_value(), c.run.batch == 512) << c.run.batch;
    if (c.run.batch != 512) continue;
    EXPECT_DOUBLE_EQ(*c.weight_sq_at_k, 14);
    char row[128];
    std::snprintf(row, sizeof row, "| 0 | linear | 512 | %.1f | 14.0 | %+.1f |", *c.predicted.weight_sq_at_k,
                  (*c.predicted.weight_sq_at_k - 14) / 14 * 100);
    const std::string report = format_comparison_report(s, options(), "x");
    EXPECT_NE(report.find(row), std::string::npos) << report;
    char cells[64];
    std::snprintf(cells, sizeof cells, ",%.6f,14.000000,", *c.predicted.weight_sq_at_k);
    EXPECT_NE(format_comparison_csv(s).find(cells), std::string::npos) << format_comparison_csv(s);
  }
}

TEST_F(CompareTest, ASingleEvaluationsScatterFromTheBaselinesEvaluations) {
  const auto sample = [](double examples, double test_accuracy) {
    CurveSample c;
    c.examples = examples;
    c.window_examples = 250;
    c.train_loss = 0.6;
    c.train_accuracy = 0.5;
    c.test_accuracy = test_accuracy;
    return c;
  };
  // Epoch 1's evaluation is not epoch 2's; epoch 2's mean 0.76, off by 6, 4, 1 and 3 points.
  samples_ = {sample(500, 0.5), sample(1250, 0.70), sample(1500, 0.80), sample(1750, 0.75), sample(2000, 0.79)};
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.79});
  samples_.clear();
  write_run("b128-constant-s1.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-constant-s0.yaml", 512, {1.5, 1.0}, {0.5, 0.6});
  write_run("b512-constant-s1.yaml", 512, {1.4, 0.8}, {0.5, 0.7});
  const ComparisonSummary s = compare_large_batch_runs(options());
  EXPECT_EQ(s.evaluation_scatter_count, 4);
  EXPECT_NEAR(s.evaluation_scatter_points, 3.5, 1e-9);
  EXPECT_NE(format_comparison_report(s, options(), "x").find("the baselines' 4 evaluations in epoch 2 lie 3.5 points"),
            std::string::npos);
  // From seed 1's baseline alone: one evaluation an epoch, no scatter, and no line.
  CompareOptions from_one = options();
  from_one.from_seed = 1;
  const ComparisonSummary one = compare_large_batch_runs(from_one);
  EXPECT_EQ(one.evaluation_scatter_count, 0);
  EXPECT_EQ(format_comparison_report(one, from_one, "x").find("single evaluation's scatter"), std::string::npos);
}

// --target-accuracy: the baseline's test accuracy knots (0, 0.1), (1000, 0.7), (2000, 0.8) reach
// 0.65 at 1000 (0.55 / 0.6) = 916.7 examples, and perfect scaling puts every run there (E_B = E_0);
// the run at 512 measured 0.6 and 0.75 at the epochs' ends, crossing 0.65 at 1000 + 1000 (0.05 /
// 0.15) = 1333.3; the run at 2048 never reaches it, which the model says it does within 2 epochs.
TEST_F(CompareTest, TheEpochsToATargetAccuracy) {
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});
  CompareOptions o = options();
  o.target_accuracy = 0.65;
  const ComparisonSummary s = compare_large_batch_runs(o);
  ASSERT_EQ(s.runs.size(), 2u);
  const RunComparison& b512 = s.runs[0].run.batch == 512 ? s.runs[0] : s.runs[1];
  EXPECT_NEAR(*b512.predicted.epochs_to_target_accuracy, 0.55 / 0.6, 1e-4);
  EXPECT_NEAR(*b512.epochs_to_target_accuracy, 1 + 1.0 / 3, 1e-9);
  EXPECT_NEAR(*b512.accuracy_target_error_pct, (0.55 / 0.6 - 4.0 / 3) / (4.0 / 3) * 100, 1e-2);
  EXPECT_EQ(s.accuracy_target_count, 1);
  EXPECT_EQ(s.accuracy_target_one_side, 1);
  const std::string report = format_comparison_report(s, o, "measure largebatch-compare --dir X --target-accuracy 0.65");
  EXPECT_NE(report.find("epochs-to-accuracy error: 31.2% (epochs to test accuracy 0.65, over 1 runs: the runs that "
                        "reached it in 2 epochs and were predicted; 1 reached it in 2 epochs on one side only)"),
            std::string::npos)
      << report;
  EXPECT_NE(format_comparison_csv(s).find(",epochs_to_accuracy_error_pct,pred_start_x,pred_weight_sq_at_k,meas_weight_sq_at_k,pace_ratio,"), std::string::npos);
  // Without the flag: no such figure.
  EXPECT_EQ(format_comparison_report(compare_large_batch_runs(options()), options(), "X").find("epochs-to-accuracy"),
            std::string::npos);
}

// Pre-registration (measure/largebatch/plan.h): the perfect-scaling baseline predicts batch 512
// under the linear rule at the baseline's own curve, loss 0.5625 in epoch 2 (the first test).
class PlanTest : public CompareTest {
 protected:
  void SetUp() override {
    CompareTest::SetUp();
    write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  }
  fs::path plan_file() const { return dir_ / "plan.csv"; }
  // `runs` planned now and appended to plan.csv (as measure largebatch-plan does).
  std::vector<PlannedRun> plan(const std::vector<std::string>& runs) {
    const std::vector<PlannedRun> so_far = read_plan(plan_file().string());
    std::vector<PlannedRun> added = plan_large_batch_runs(options(), runs, 1.0, so_far, "2026-11-29T06:00:00Z");
    std::ofstream out(plan_file());
    out << kPlanHeader << "\n" << format_plan_rows(so_far) << format_plan_rows(added);
    return added;
  }
  CompareOptions planned_options() const {
    CompareOptions o = options();
    o.plan_file = plan_file().string();
    return o;
  }
};

TEST_F(PlanTest, PlannedRunsAreComparedWithTheirStoredPredictions) {
  const std::vector<PlannedRun> planned = plan({"b512-linear-s0", "b2048-linear-s0.yaml"});
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0].run, "b512-linear-s0");
  EXPECT_NEAR(*planned[0].loss_at_k, 0.5625, 1e-6);
  EXPECT_NEAR(*planned[0].epochs_to_target, 0.5, 1e-5);
  EXPECT_DOUBLE_EQ(planned[0].bn_batch, 128);
  EXPECT_EQ(planned[0].loss_by_epoch.size(), 2u);
  EXPECT_DOUBLE_EQ(planned[0].warmup_epochs, 0);  // not a linear-warmup run
  // Read back as written.
  const std::vector<PlannedRun> read = read_plan(plan_file().string());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].run, "b2048-linear-s0");
  EXPECT_EQ(read[1].line, 3);
  EXPECT_NEAR(*read[0].loss_at_k, *planned[0].loss_at_k, 1e-8);
  EXPECT_EQ(read[0].planned_at, "2026-11-29T06:00:00Z");

  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  EXPECT_EQ(s.planned_rows, 2);
  EXPECT_EQ(s.planned_waiting, 1);  // b2048: no file yet
  ASSERT_EQ(s.runs.size(), 1u);
  const RunComparison& c = s.runs.front();
  ASSERT_TRUE(c.planned);
  EXPECT_TRUE(c.planned->same_as_now);
  EXPECT_NEAR(*c.planned->loss_error_pct, *c.loss_error_pct, 1e-5);
  EXPECT_NEAR(*c.planned->accuracy_error_points, *c.accuracy_error_points, 1e-5);
  EXPECT_NEAR(*c.planned->epochs_error_pct, *c.epochs_error_pct, 1e-3);  // read as recorded, as the current one
  EXPECT_EQ(s.planned_regime_agree, 1);
  EXPECT_EQ(s.planned_loss.count, 1);
  EXPECT_EQ(s.planned_trained_loss.count, 1);
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare --dir X");
  EXPECT_NE(report.find("## Pre-registered runs (plan.csv)"), std::string::npos) << report;
  EXPECT_NE(report.find("the model as built now predicts the same\n"), std::string::npos) << report;
  EXPECT_NE(report.find("pre-registered (plan.csv): 2 runs planned, 1 not ended; regime agreement 1 of 1; loss 29.7%, bias -29.7% (1)"),
            std::string::npos)
      << report;
}

// The stored prediction is what is compared, whatever the model predicts today.
TEST_F(PlanTest, TheStoredPredictionIsComparedNotTheCurrentOne) {
  std::vector<PlannedRun> planned = plan({"b512-linear-s0"});
  planned[0].loss_at_k = 0.6;
  std::ofstream(plan_file()) << kPlanHeader << "\n" << format_plan_rows(planned);
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  const RunComparison& c = s.runs.front();
  ASSERT_TRUE(c.planned);
  EXPECT_FALSE(c.planned->same_as_now);
  EXPECT_NEAR(*c.planned->loss_error_pct, (0.6 - 0.8) / 0.8 * 100, 1e-6);
  EXPECT_NEAR(*c.loss_error_pct, (0.5625 - 0.8) / 0.8 * 100, 1e-4);
  EXPECT_EQ(s.planned_changed, 1);
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare --dir X");
  EXPECT_NE(report.find("| changed: 0.5625 |"), std::string::npos) << report;
  EXPECT_NE(report.find("; the model as built now predicts 1 of them otherwise\n"), std::string::npos) << report;
}

// Runs planned at two times are two registrations, each a test of the model as it was then: the
// report gives each its own figures beside those over the whole plan.
TEST_F(PlanTest, EachRegistrationHasItsOwnFigures) {
  plan({"b512-linear-s0"});  // 2026-11-29T06:00:00Z
  const std::vector<PlannedRun> so_far = read_plan(plan_file().string());
  const std::vector<PlannedRun> later =
      plan_large_batch_runs(options(), {"b256-linear-s0", "b1024-linear-s0"}, 1.0, so_far, "2026-12-06T10:00:00Z");
  std::ofstream(plan_file()) << kPlanHeader << "\n" << format_plan_rows(so_far) << format_plan_rows(later);
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  write_run("b256-linear-s0.yaml", 256, {1.0, 0.5}, {0.7, 0.8});  // the baseline's own curve
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  EXPECT_EQ(s.planned_rows_by_registration.at("2026-11-29T06:00:00Z"), 1);
  EXPECT_EQ(s.planned_rows_by_registration.at("2026-12-06T10:00:00Z"), 2);
  const std::string report = format_comparison_report(s, options(), "measure largebatch-compare --dir X");
  EXPECT_NE(report.find("By registration (the runs planned together, with the model as built then):\n\n"
                        "- 2026-11-29T06:00:00Z: 1 runs planned, 1 compared; regime agreement 1 of 1; loss 29.7%, "
                        "bias -29.7% (1), "),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("- 2026-12-06T10:00:00Z: 2 runs planned, 1 compared; regime agreement 1 of 1; loss "),
            std::string::npos)
      << report;
}

// A run whose predicted loss falls below the end of the baseline's curve before epoch k (here
// momentum's noise floor, 10x plain SGD's at m = 0.9, reads a run at twice the batch and the same lr
// far lower) is predicted to train, with no loss at k: the plan says so, not "no progress", and
// its regime is compared.
TEST_F(PlanTest, ARunPredictedPastTheCurveIsPredictedToTrain) {
  momentum_ = 0.9;
  write_run("b128-constant-s0.yaml", 128, {1.0, 0.5}, {0.7, 0.8});
  const std::vector<PlannedRun> planned = plan({"b256-constant-s0"});
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_FALSE(planned[0].no_progress);
  EXPECT_FALSE(planned[0].loss_at_k);
  EXPECT_EQ(planned_regime(planned[0], 10), "trains (loss past the curve)");
  PlannedRun stalls = planned[0];
  stalls.no_progress = true;
  EXPECT_EQ(planned_regime(stalls, 10), "no progress");
  PlannedRun trains = planned[0];
  trains.loss_at_k = 0.5;
  EXPECT_EQ(planned_regime(trains, 10), "trains");
  trains.loss_at_k = std::log(10.0);
  EXPECT_EQ(planned_regime(trains, 10), "no progress");

  write_run("b256-constant-s0.yaml", 256, {0.9, 0.45}, {0.7, 0.8});
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  ASSERT_EQ(s.runs.size(), 1u);
  ASSERT_TRUE(s.runs.front().planned);
  EXPECT_EQ(s.runs.front().planned->predicted_regime, Regime::kTrained);
  EXPECT_EQ(s.runs.front().predicted_regime, Regime::kTrained);
  EXPECT_EQ(s.planned_regime_count, 1);
  EXPECT_EQ(s.planned_regime_agree, 1);
  EXPECT_EQ(s.planned_loss.count, 0);  // no loss predicted at k
}

TEST_F(PlanTest, APlannedRunNotEndedIsWaitingAnUnplannedOneAnError) {
  plan({"b512-linear-s0"});
  write_run("b512-linear-s0.yaml", 512, {1.2}, {0.6});  // one epoch of two
  write_run("b2048-linear-s0.yaml", 2048, {1.5, 1.1}, {0.5, 0.6});
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  EXPECT_EQ(s.planned_waiting, 1);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_FALSE(s.runs.front().planned);
  try {  // no plan: an interrupted run
    compare_large_batch_runs(options());
    ADD_FAILURE() << "compared an interrupted run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b512-linear-s0.yaml: 1 of 2 epochs"), std::string::npos) << e.what();
  }
  // Planned and just started: measure baseline has written the file without its curve yet.
  plan({"b1024-linear-s0"});
  Profile started;
  started.machine.name = "test-machine";
  started.machine.device_kind = "cpu";
  started.measurement.command = "measure baseline";
  write_profile_atomic(started, (dir_ / "runs" / "b1024-linear-s0.yaml").string());
  EXPECT_EQ(compare_large_batch_runs(planned_options()).planned_waiting, 2);
  fs::remove(dir_ / "runs" / "b512-linear-s0.yaml");
  try {  // not planned: a file without a run's curve
    compare_large_batch_runs(options());
    ADD_FAILURE() << "compared a file without a curve";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 0 training curves, a run's file holds one"), std::string::npos)
        << e.what();
  }
  fs::remove(dir_ / "runs" / "b1024-linear-s0.yaml");
  fs::remove(dir_ / "runs" / "b2048-linear-s0.yaml");
  try {  // nothing ended yet
    compare_large_batch_runs(planned_options());
    ADD_FAILURE() << "compared no run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no runs besides the baselines have ended (2 planned, not ended)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PlanTest, APlanForAnotherQuestionIsNotCompared) {
  CompareOptions three = options();
  three.epochs = 1;
  const std::vector<PlannedRun> planned = plan_large_batch_runs(three, {"b512-linear-s0"}, 1.0, {}, "T");
  std::ofstream(plan_file()) << kPlanHeader << "\n" << format_plan_rows(planned);
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  const ComparisonSummary s = compare_large_batch_runs(planned_options());
  ASSERT_TRUE(s.runs.front().planned);
  EXPECT_EQ(s.runs.front().planned->not_compared, "planned for epoch 1, compared at 2");
  EXPECT_EQ(s.planned_not_comparable, 1);
  EXPECT_EQ(s.planned_loss.count, 0);
}

TEST_F(PlanTest, PlanningRefusesRunsWhoseResultIsKnown) {
  const auto refused = [&](const std::vector<std::string>& runs, const std::string& why) {
    try {
      plan(runs);
      ADD_FAILURE() << "planned " << runs.front();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  write_run("b512-linear-s0.yaml", 512, {1.2, 0.8}, {0.6, 0.75});
  refused({"b512-linear-s0"}, "already holds 2 epochs: a prediction made now would not be a pre-registration");
  write_run("b1024-linear-s0.yaml", 1024, {2.0}, {0.3});
  std::ofstream(dir_ / "runs" / "b1024-linear-s0.yaml.failed") << "epoch 2: the training loss is not finite\n";
  refused({"b1024-linear-s0"}, "the run has ended (it stopped)");
  refused({"b128-constant-s0"}, "is a baseline");
  refused({"b2048-lars-s0"}, "LARS runs are measured only");
  refused({"b2048-linear-s7"}, "no baseline for seed 7");
  refused({"b2048-cosine-s0"}, "names no run");
  refused({"b2048-sqrt-s0", "b2048-sqrt-s0"}, "is given twice");
  // A run in progress is planned, with the epochs it held.
  write_run("b4096-sqrt-s0.yaml", 4096, {1.9}, {0.4});
  EXPECT_EQ(plan({"b4096-sqrt-s0"}).front().run_epochs_at_plan, 1);
  refused({"b4096-sqrt-s0"}, "b4096-sqrt-s0 is already planned (line 2 of the plan, at 2026-11-29T06:00:00Z)");
}

TEST_F(PlanTest, APlanFileWithBadValuesIsAnErrorNamingFileLineAndColumn) {
  const std::vector<PlannedRun> planned = plan({"b512-linear-s0"});
  const std::string row = format_plan_rows(planned);
  ASSERT_NE(row.find(",0.56250012,"), std::string::npos) << row;
  const auto rejected = [&](const std::string& text, const std::string& where) {
    std::ofstream(plan_file()) << text;
    try {
      read_plan(plan_file().string());
      ADD_FAILURE() << "read " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(plan_file().string() + where), std::string::npos) << e.what();
    }
  };
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string r = row;
    r.replace(r.find(from), from.size(), to);
    return std::string(kPlanHeader) + "\n" + r;
  };
  rejected("run,seed\n" + row, ":1: header: expected");
  rejected("", ":1: header: the file is empty");
  rejected(replaced(",0.56250012,", ",abc,"), ":2: pred_loss_at_k: 'abc' is not a number");
  rejected(replaced("b512-linear-s0,0,", "b512-linear-s0,3,"), ":2: seed: 3 differs from the run's name");
  rejected(replaced(",false,", ",maybe,"), ":2: pred_no_progress: 'maybe' is neither true nor false");
  rejected(replaced(",false,", ",false,1,"), ":2: row: 17 fields, the header has 16");
  rejected(std::string(kPlanHeader) + "\n" + row + row, ":3: run: b512-linear-s0 is planned twice (line 2 too)");
  EXPECT_TRUE(read_plan((dir_ / "absent.csv").string()).empty());
}

TEST(RunName, ParsesTheScriptsNamesOnly) {
  const auto n = parse_run_name("b4096-linear-warmup-s1.yaml");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->batch, 4096);
  EXPECT_EQ(n->rule, LrRule::kLinearWarmup);
  EXPECT_EQ(n->seed, 1u);
  EXPECT_FALSE(parse_run_name("b4096-linear-s1.yaml.failed"));
  EXPECT_FALSE(parse_run_name("b4096-cosine-s1.yaml"));
  const auto lars = parse_run_name("b8192-lars-s0.yaml");
  ASSERT_TRUE(lars.has_value());
  EXPECT_TRUE(lars->lars);
  EXPECT_EQ(lars->rule, LrRule::kLinearWarmup);
  EXPECT_EQ(rule_label(*lars), "lars");
  EXPECT_EQ(rule_label(*n), "linear-warmup");
  EXPECT_FALSE(parse_run_name("profile.yaml"));
}

}  // namespace
}  // namespace trainsim::measure
