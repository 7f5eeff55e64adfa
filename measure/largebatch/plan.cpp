#include "largebatch/plan.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "format/csv.h"
#include "format/errors.h"
#include "format/profile_io.h"
#include "largebatch/text_file.h"
#include "stats/large_batch.h"

namespace trainsim::measure {
namespace fs = std::filesystem;

const char* const kPlanHeader =
    "run,seed,rule,batch,bn_batch,warmup_epochs,epochs,target_loss,pred_no_progress,pred_loss_at_k,"
    "pred_train_acc_at_k,pred_test_acc_at_k,pred_epochs_to_target_model,pred_loss_by_epoch,planned_at,"
    "run_epochs_at_plan";

namespace {

constexpr size_t kPlanColumns = 16;

using csv::number;

std::string optional_number(const std::optional<double>& value) { return value ? number(*value) : std::string(); }

// "b512-sqrt-s0" or "b512-sqrt-s0.yaml" -> the stem; nullopt where it names no run.
std::optional<std::pair<std::string, RunName>> run_stem(const std::string& text) {
  const std::string stem = text.size() > 5 && text.compare(text.size() - 5, 5, ".yaml") == 0
                               ? text.substr(0, text.size() - 5)
                               : text;
  const std::optional<RunName> name = parse_run_name(stem + ".yaml");
  if (!name) return std::nullopt;
  return std::make_pair(stem, *name);
}

}  // namespace

std::vector<PlannedRun> plan_large_batch_runs(const CompareOptions& o, const std::vector<std::string>& names,
                                              double warmup_epochs, const std::vector<PlannedRun>& planned,
                                              const std::string& planned_at) {
  const std::map<uint64_t, TrainingCurve> baselines = load_baselines(o);
  std::map<std::string, const PlannedRun*> already;
  for (const PlannedRun& p : planned) already.emplace(p.run, &p);
  std::vector<PlannedRun> out;
  for (const std::string& text : names) {
    const auto stem = run_stem(text);
    if (!stem) {
      throw std::runtime_error("'" + text + "' names no run: b<batch>-<rule>-s<seed> (rule: constant, linear, "
                               "linear-warmup or sqrt), as scripts/largebatch-fashion.sh names its files");
    }
    const auto& [run, name] = *stem;
    if (is_baseline(name, o)) throw std::runtime_error(run + " is a baseline, the input of the predictions");
    if (name.lars) throw std::runtime_error(run + ": LARS runs are measured only (the model has no layer-wise rule)");
    const auto baseline = baselines.find(name.seed);
    if (baseline == baselines.end()) {
      throw std::runtime_error(run + ": no baseline for seed " + std::to_string(name.seed) + " in " + o.runs_dir +
                               " (b" + std::to_string(o.base_batch) + "-constant-s" + std::to_string(name.seed) +
                               ".yaml)");
    }
    if (const auto it = already.find(run); it != already.end()) {
      throw std::runtime_error(run + " is already planned (line " + std::to_string(it->second->line) +
                               " of the plan, at " + it->second->planned_at + "): a run is planned once");
    }
    for (const PlannedRun& p : out) {
      if (p.run == run) throw std::runtime_error(run + " is given twice");
    }
    const fs::path file = fs::path(o.runs_dir) / (run + ".yaml");
    std::error_code ec;
    if (fs::exists(file.string() + ".failed", ec)) {
      throw std::runtime_error(file.string() + ".failed: the run has ended (it stopped): a prediction made now would "
                               "not be a pre-registration");
    }
    int held = 0;
    if (fs::exists(file, ec)) {
      const Profile profile = load_profile(file.string());
      if (profile.training.size() == 1) held = static_cast<int>(profile.training.front().epochs.size());
      if (held >= o.epochs) {
        throw std::runtime_error(file.string() + ": the run already holds " + std::to_string(held) +
                                 " epochs: a prediction made now would not be a pre-registration");
      }
    }
    const TrainingCurve& curve = baseline->second;
    const bool warmup = name.rule == LrRule::kLinearWarmup;
    const LargeBatchSettings settings = run_settings(o, name.rule, warmup ? warmup_epochs : 0, curve);
    const LargeBatchModel model(curve, o.num_classes, settings);
    const LargeBatchPrediction p = model.predict(name.batch);
    PlannedRun r;
    r.run = run;
    r.name = name;
    r.epochs = o.epochs;
    r.target_loss = model.target_loss();
    r.bn_batch = p.bn_batch;
    r.warmup_epochs = warmup ? settings.warmup_epochs : 0;
    r.no_progress = p.no_progress;
    r.loss_at_k = p.loss_at_k;
    r.train_accuracy_at_k = p.train_accuracy_at_k;
    r.test_accuracy_at_k = p.test_accuracy_at_k;
    r.epochs_to_target = p.epochs_to_target;
    r.loss_by_epoch = p.loss_by_epoch;
    r.planned_at = planned_at;
    r.run_epochs_at_plan = held;
    out.push_back(std::move(r));
  }
  return out;
}

std::string planned_regime(const PlannedRun& r, int num_classes) {
  const std::optional<Regime> regime =
      predicted_regime(r.no_progress, r.loss_at_k, r.loss_by_epoch, r.epochs_to_target, num_classes);
  if (!regime) return "not predicted";
  if (*regime != Regime::kTrained) return "no progress";
  return r.loss_at_k ? "trains" : "trains (loss past the curve)";
}

std::string format_plan_rows(const std::vector<PlannedRun>& runs) {
  std::string out;
  for (const PlannedRun& r : runs) {
    std::string epochs;
    for (double loss : r.loss_by_epoch) epochs += (epochs.empty() ? "" : ";") + number(loss);
    out += r.run + "," + std::to_string(r.name.seed) + "," + to_string(r.name.rule) + "," +
           std::to_string(r.name.batch) + "," + number(r.bn_batch) + "," + number(r.warmup_epochs) + "," +
           std::to_string(r.epochs) + "," + number(r.target_loss) + "," + (r.no_progress ? "true" : "false") + "," +
           optional_number(r.loss_at_k) + "," + optional_number(r.train_accuracy_at_k) + "," +
           optional_number(r.test_accuracy_at_k) + "," + optional_number(r.epochs_to_target) + "," + epochs + "," +
           csv::field(r.planned_at) + "," + std::to_string(r.run_epochs_at_plan) + "\n";
  }
  return out;
}

std::vector<PlannedRun> read_plan(const std::string& path) {
  std::vector<PlannedRun> plan;
  std::error_code ec;
  if (!fs::exists(path, ec)) return plan;
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "", "cannot be read");
  std::string line;
  const std::vector<std::string> header = csv::split_line(kPlanHeader, path, 1);
  int number_of_line = 0;
  std::map<std::string, int> seen;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number_of_line == 1) {
      if (line != kPlanHeader) throw InputError(path, 1, "header", "expected \"" + std::string(kPlanHeader) + "\"");
      continue;
    }
    if (csv::trim(line).empty()) continue;
    const std::vector<std::string> f = csv::split_line(line, path, number_of_line);
    if (f.size() != kPlanColumns) {
      throw InputError(path, number_of_line, "row",
                       std::to_string(f.size()) + " fields, the header has " + std::to_string(kPlanColumns));
    }
    const auto fail = [&](size_t column, const std::string& why) {
      throw InputError(path, number_of_line, header[column], why);
    };
    const auto parse = [&](size_t column) {
      const std::string& text = f[column];
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
        fail(column, "'" + text + "' is not a number");
      }
      return value;
    };
    const auto optional = [&](size_t column) -> std::optional<double> {
      if (f[column].empty()) return std::nullopt;
      return parse(column);
    };
    const auto whole = [&](size_t column, double minimum) {
      const double value = parse(column);
      if (value != std::floor(value) || value < minimum || value > 1e9) {
        fail(column, "'" + f[column] + "' is not a whole number >= " + number(minimum));
      }
      return static_cast<int64_t>(value);
    };
    PlannedRun r;
    r.line = number_of_line;
    const auto stem = run_stem(f[0]);
    if (!stem) fail(0, "'" + f[0] + "' names no run (b<batch>-<rule>-s<seed>)");
    r.run = stem->first;
    r.name = stem->second;
    if (whole(1, 0) != static_cast<int64_t>(r.name.seed)) fail(1, f[1] + " differs from the run's name, " + r.run);
    if (f[2] != to_string(r.name.rule)) fail(2, f[2] + " differs from the run's name, " + r.run);
    if (whole(3, 1) != r.name.batch) fail(3, f[3] + " differs from the run's name, " + r.run);
    r.bn_batch = parse(4);
    r.warmup_epochs = parse(5);
    r.epochs = static_cast<int>(whole(6, 1));
    r.target_loss = parse(7);
    if (f[8] != "true" && f[8] != "false") fail(8, "'" + f[8] + "' is neither true nor false");
    r.no_progress = f[8] == "true";
    r.loss_at_k = optional(9);
    r.train_accuracy_at_k = optional(10);
    r.test_accuracy_at_k = optional(11);
    r.epochs_to_target = optional(12);
    std::stringstream epochs(f[13]);
    for (std::string item; std::getline(epochs, item, ';');) {
      char* end = nullptr;
      const double value = std::strtod(item.c_str(), &end);
      if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value)) {
        fail(13, "'" + item + "' is not a number");
      }
      r.loss_by_epoch.push_back(value);
    }
    r.planned_at = f[14];
    r.run_epochs_at_plan = static_cast<int>(whole(15, 0));
    if (const auto [it, inserted] = seen.emplace(r.run, number_of_line); !inserted) {
      fail(0, r.run + " is planned twice (line " + std::to_string(it->second) + " too)");
    }
    plan.push_back(std::move(r));
  }
  if (number_of_line == 0) throw InputError(path, 1, "header", "the file is empty");
  return plan;
}

}  // namespace trainsim::measure
