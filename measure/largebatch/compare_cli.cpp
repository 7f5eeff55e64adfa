#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include "cli_util.h"
#include "largebatch/compare.h"
#include "largebatch/compare_flags.h"
#include "largebatch/compare_plot.h"
#include "largebatch/compare_report.h"
#include "largebatch/text_file.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace fs = std::filesystem;

namespace {

namespace po = boost::program_options;

po::options_description compare_flags(CompareOptions& o, QuestionFlags& question, double& target_accuracy,
                                     int64_t& from_seed) {
  po::options_description flags("measure largebatch-compare: large-batch predictions against real runs",
                                /*line_length=*/100, /*min_description_length=*/50);
  // clang-format off
  flags.add_options()
    ("help,h", "print this help")
    ("dir", po::value(&o.runs_dir)->required(),
       "the folder scripts/largebatch-fashion.sh wrote: its runs/ are read, report.md and comparison.csv "
       "are written beside them, with the steps-to-target plot");
  add_question_flags(flags, question, o);
  flags.add_options()
    ("target-accuracy", po::value(&target_accuracy),
       "also compare the epochs to this test accuracy (a fraction in (0, 1]), predicted and measured")
    ("from-seed", po::value(&from_seed),
       "predict every run from this seed's baseline alone (as Q4 predicts from one profile's curve); writes "
       "report-from-seed<N>.md and comparison-from-seed<N>.csv")
    ("pace-probe", "read the baselines' pace probe where they carry one (LargeBatchSettings::pace_probe; the "
                   "report shows the model without it beside)")
    ("quiet", "print only the three error lines");
  // clang-format on
  return flags;
}

}  // namespace

void add_question_flags(po::options_description& flags, QuestionFlags& raw, const CompareOptions& defaults) {
  // clang-format off
  flags.add_options()
    ("base-batch", po::value(&raw.base_batch)->default_value(defaults.base_batch),
       "the baselines' batch (b<B>-constant-s<seed>.yaml)")
    ("epochs", po::value(&raw.epochs)->default_value(defaults.epochs), "k: loss and accuracy after k epochs")
    ("target-loss", po::value(&raw.target_loss),
       "target training loss (default: each seed's baseline loss after epoch 1)");
  // clang-format on
}

void apply_question_flags(const po::variables_map& vm, const QuestionFlags& raw, CompareOptions& o) {
  o.base_batch = at_least("base-batch", raw.base_batch, 1);
  o.epochs = bounded_int("epochs", raw.epochs, 1);
  if (vm.count("target-loss")) {
    if (!(raw.target_loss > 0) || !std::isfinite(raw.target_loss)) {
      throw UsageError("--target-loss: " + std::to_string(raw.target_loss) + " must be finite and > 0");
    }
    o.target_loss = raw.target_loss;
  }
}

int largebatch_compare_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  CompareOptions o;
  QuestionFlags question;
  double target_accuracy = 0;
  int64_t from_seed = 0;
  const auto flags = compare_flags(o, question, target_accuracy, from_seed);
  if (asks_for_help(args)) {
    std::cout << "Usage: measure largebatch-compare --dir DIR [flags]\n\n"
                 "Compares the large-batch model's predictions (from each seed's baseline run alone, or from one\n"
                 "seed's for all with --from-seed) with the\n"
                 "runs at other batches and learning-rate rules: training loss and test accuracy after k epochs,\n"
                 "epochs to a target loss. Writes DIR/report.md, DIR/comparison.csv and the plot of steps and\n"
                 "epochs to the target vs batch (steps_to_target.svg, epochs_to_target.svg); the last three lines\n"
                 "printed are the mean absolute errors, each with its bias (docs/LARGE_BATCH.md).\n\n"
              << flags;
    return 0;
  }
  const auto vm = parse_flags(args, flags, "largebatch-compare: ");
  apply_question_flags(vm, question, o);
  if (vm.count("target-accuracy")) {
    if (!(target_accuracy > 0 && target_accuracy <= 1)) {
      throw UsageError("--target-accuracy: " + plain_number(target_accuracy) + " is not a fraction in (0, 1] (85% is 0.85)");
    }
    o.target_accuracy = target_accuracy;
  }
  if (vm.count("from-seed")) o.from_seed = static_cast<uint64_t>(at_least("from-seed", from_seed, 0));
  o.pace_probe = vm.count("pace-probe") > 0;
  const std::string dir = o.runs_dir;
  o.runs_dir = (fs::path(dir) / "runs").string();
  o.plan_file = (fs::path(dir) / "plan.csv").string();
  o.other_plan_files = {(fs::path(dir) / "plan-edge-of-stability.csv").string()};
  const ComparisonSummary summary = compare_large_batch_runs(o);
  const bool paced = any_pace_probe(summary);
  if (o.pace_probe && !paced) {
    throw std::runtime_error(o.runs_dir + ": no baseline used here carries the pace probe, which --pace-probe asks "
                             "for (measure baseline --pace-probe-at)");
  }
  // The same runs under another form of the model, shown beside the errors.
  const auto compare_with = [&](bool CompareOptions::*option) {
    CompareOptions other = o;
    other.*option = true;
    return compare_large_batch_runs(other);
  };
  const ComparisonSummary assumed_tuned = compare_with(&CompareOptions::assume_tuned_baseline);
  const ComparisonSummary simple_noise = compare_with(&CompareOptions::simple_noise_scale);
  const ComparisonSummary without_floor = compare_with(&CompareOptions::without_momentum_floor);
  const ComparisonSummary without_batchnorm = compare_with(&CompareOptions::without_batchnorm_gap);
  const ComparisonSummary without_norm = compare_with(&CompareOptions::without_scale_invariant_norm);
  // The other form of the pace probe, only where a baseline carries it (else the same runs again).
  std::optional<ComparisonSummary> other_pace;
  if (paced) {
    CompareOptions pace = o;
    pace.pace_probe = !o.pace_probe;
    other_pace = compare_large_batch_runs(pace);
  }
  CompareOptions edge = o;
  edge.past_bound = PastBound::kEdge;
  std::swap(edge.plan_file, edge.other_plan_files.front());
  const ComparisonSummary edge_of_stability = compare_large_batch_runs(edge);
  CompareOptions plain = o;
  plain.past_bound = PastBound::kNoProgress;
  plain.other_plan_files.push_back(plain.plan_file);  // its planned runs not ended are waiting, not errors
  plain.plan_file.clear();
  const ComparisonSummary plain_bound = compare_large_batch_runs(plain);
  const std::string command = "measure " + join_command_line(argc, argv);
  const std::string suffix = o.from_seed ? "-from-seed" + std::to_string(*o.from_seed) : "";
  const std::string report = (fs::path(dir) / ("report" + suffix + ".md")).string();
  const std::string csv = (fs::path(dir) / ("comparison" + suffix + ".csv")).string();
  std::string plot_warning;
  const std::string figures = write_to_target_plot(to_target_plot(summary, o), dir, suffix, plot_warning);
  if (!plot_warning.empty()) std::cerr << "warning: " << plot_warning << "\n";
  write_text_atomically(report, format_comparison_report(summary, o, command, &assumed_tuned, &simple_noise, &without_floor,
                                                          &without_batchnorm, &edge_of_stability, &plain_bound,
                                                          &without_norm, other_pace ? &*other_pace : nullptr, figures));
  write_text_atomically(csv, format_comparison_csv(summary));
  if (!vm.count("quiet")) {
    std::cout << summary.runs.size() << " runs compared with the predictions from "
              << (o.from_seed ? "seed " + std::to_string(*o.from_seed) + "'s baseline"
                              : std::to_string(summary.baselines.size()) + " baseline(s)")
              << "; wrote " << report << ", " << csv << " and the steps-to-target plot beside them\n"
              << "regime agreement: " << summary.regime_agree << " of " << summary.regime_count
              << " runs (trained / no progress after " << o.epochs << " epochs)\n";
    if (summary.planned_rows > 0) std::cout << format_planned_line(summary);
    if (o.target_accuracy) std::cout << format_accuracy_target_line(summary, o);
  }
  std::cout << format_error_lines(summary, o);
  return 0;
}

}  // namespace trainsim::measure
