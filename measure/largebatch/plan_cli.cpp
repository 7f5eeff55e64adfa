// `measure largebatch-plan`: its flags, and the plan.csv it appends to (largebatch/plan.h).
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli_util.h"
#include "largebatch/compare_flags.h"
#include "largebatch/plan.h"
#include "largebatch/text_file.h"
#include "machine.h"
#include "stats/large_batch.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace fs = std::filesystem;

namespace {

namespace po = boost::program_options;

std::string cell(const std::optional<double>& value, int digits) {
  if (!value) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, *value);
  return text;
}

}  // namespace

int largebatch_plan_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  CompareOptions o;
  std::string dir, runs;
  QuestionFlags question;
  double warmup_epochs = 0;
  po::options_description flags("measure largebatch-plan: predictions for runs not made yet", /*line_length=*/100,
                                /*min_description_length=*/50);
  // clang-format off
  flags.add_options()
    ("help,h", "print this help")
    ("dir", po::value(&dir)->required(),
       "the folder scripts/largebatch-fashion.sh writes: its runs/ hold the baselines; the predictions are "
       "appended to DIR/plan.csv")
    ("runs", po::value(&runs)->required(),
       "the runs to plan, as the script names their files: b<batch>-<rule>-s<seed>[,...] (e.g. b768-sqrt-s1)");
  add_question_flags(flags, question, o);
  flags.add_options()
    ("warmup-epochs", po::value(&warmup_epochs)->default_value(LargeBatchSettings{}.warmup_epochs),
       "the linear-warmup runs' ramp, as they will pass it to measure baseline (its default; "
       "scripts/largebatch-fashion.sh passes 1)")
    ("edge-of-stability",
       "predict them at the edge of stability (an lr above the tuned one progresses as at it) and append to "
       "DIR/plan-edge-of-stability.csv, which largebatch-compare compares with that reading");
  // clang-format on
  if (asks_for_help(args)) {
    std::cout << "Usage: measure largebatch-plan --dir DIR --runs NAMES [flags]\n\n"
                 "Predicts runs that have not ended yet from the folder's baselines (each from its own seed's, as\n"
                 "largebatch-compare does) and appends the predictions to DIR/plan.csv, to be compared with the\n"
                 "runs once they end: `measure largebatch-compare --dir DIR` reports the planned runs against\n"
                 "these stored predictions (docs/LARGE_BATCH.md, \"Pre-registered runs\").\n\n"
              << flags;
    return 0;
  }
  const auto vm = parse_flags(args, flags, "largebatch-plan: ");
  apply_question_flags(vm, question, o);
  const std::vector<std::string> names = split_list(runs);
  if (names.empty()) throw UsageError("--runs: no run named");
  o.runs_dir = (fs::path(dir) / "runs").string();
  const bool edge = vm.count("edge-of-stability") > 0;
  if (edge) o.past_bound = PastBound::kEdge;
  const std::string plan_path = (fs::path(dir) / (edge ? "plan-edge-of-stability.csv" : "plan.csv")).string();
  const std::vector<PlannedRun> planned = read_plan(plan_path);
  const std::vector<PlannedRun> added =
      plan_large_batch_runs(o, names, finite_non_negative("warmup-epochs", warmup_epochs), planned, utc_now_iso8601());
  // The plan so far as it is, byte for byte; the new rows after it.
  std::string text = std::string(kPlanHeader) + "\n";
  std::error_code ec;
  if (fs::exists(plan_path, ec)) {
    std::ifstream in(plan_path);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
    if (!text.empty() && text.back() != '\n') text += "\n";
  }
  text += format_plan_rows(added);
  write_text_atomically(plan_path, text);
  std::cout << "| run | regime | loss@" << o.epochs << " | train acc@" << o.epochs << " | test acc@" << o.epochs
            << " | epochs to target (" << "model's crossing) | target |\n|:---|:---|---:|---:|---:|---:|---:|\n";
  for (const PlannedRun& r : added) {
    std::cout << "| " << r.run << " | " << planned_regime(r, o.num_classes) << " | " << cell(r.loss_at_k, 4)
              << " | " << cell(r.train_accuracy_at_k, 4) << " | " << cell(r.test_accuracy_at_k, 4) << " | "
              << cell(r.epochs_to_target, 2) << " | " << cell(r.target_loss, 4) << " |\n";
  }
  std::cout << "appended " << added.size() << " run(s) to " << plan_path << ", planned at " << added.front().planned_at
            << (added.size() == 1 ? "" : " (each from its own seed's baseline)") << "\n";
  return 0;
}


}  // namespace trainsim::measure
