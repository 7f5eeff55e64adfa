#include "largebatch/compare.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "cli_util.h"
#include "io/csv.h"
#include "io/profile_io.h"
#include "largebatch/compare_flags.h"
#include "largebatch/compare_plot.h"
#include "largebatch/plan.h"
#include "largebatch/text_file.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace fs = std::filesystem;
namespace {

// The arithmetic mean of a non-empty vector.
double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// A run's own running-statistics lag after epoch k: its recomputed test accuracy less eval mode's, in
// points (both measured).
double recomputed_lag_points(const RunComparison& c) {
  return (*c.test_accuracy_recomputed_at_k - *c.test_accuracy_at_k) * 100.0;
}

// How steady a run's own running-statistics lag is (RunComparison::lag_scatter_points): from the
// first epoch past both the first and the warm-up to epoch k, each epoch's end's lag in points
// against their mean, mean absolute; nullopt where fewer than two such epochs carry both readings.
std::optional<double> lag_scatter_points(const TrainingCurve& curve, int k) {
  const size_t first = std::max<size_t>(1, static_cast<size_t>(std::ceil(curve.warmup_epochs)));
  const size_t end = std::min(curve.epochs.size(), static_cast<size_t>(std::max(k, 0)));
  std::vector<double> lags;
  for (size_t e = first; e < end; ++e) {
    const EpochPoint& p = curve.epochs[e];
    if (p.test_accuracy < 0 || p.test_accuracy_recomputed < 0) return std::nullopt;
    lags.push_back((p.test_accuracy_recomputed - p.test_accuracy) * 100.0);
  }
  if (lags.size() < 2) return std::nullopt;
  const double mean = mean_of(lags);
  double sum = 0;
  for (const double lag : lags) sum += std::fabs(lag - mean);
  return sum / static_cast<double>(lags.size());
}

// Whether any baseline the comparison used carries the pace probe.
bool any_pace_probe(const ComparisonSummary& s) {
  return std::any_of(s.baselines.begin(), s.baselines.end(),
                     [](const TrainingCurve& c) { return !c.pace_probe.empty(); });
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string cell(const std::optional<double>& value, int digits) { return value ? fixed(*value, digits) : "-"; }

std::string signed_cell(const std::optional<double>& value, int digits) {
  if (!value) return "-";
  return (*value >= 0 ? "+" : "") + fixed(*value, digits);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// The run's curve: the profile's only training curve.
TrainingCurve only_curve(const Profile& profile, const fs::path& path) {
  if (profile.training.size() != 1) {
    throw std::runtime_error(path.string() + ": holds " + std::to_string(profile.training.size()) +
                             " training curves, a run's file holds one");
  }
  return profile.training.front();
}

TrainingCurve load_curve(const fs::path& path) { return only_curve(load_profile(path.string()), path); }

// The line of `key:` in a run file's training curve (the first after "training:"), 0 where absent:
// errors about a curve's setting name it.
int training_key_line(const fs::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  bool in_training = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.rfind("training:", 0) == 0) in_training = true;
    const size_t start = line.find_first_not_of(' ');
    if (in_training && start != std::string::npos && line.compare(start, key.size() + 1, key + ":") == 0) return number;
  }
  return 0;
}

// A seed's baseline file, as scripts/largebatch-fashion.sh names it.
std::string baseline_file_name(int64_t base_batch, uint64_t seed) {
  return "b" + std::to_string(base_batch) + "-constant-s" + std::to_string(seed) + ".yaml";
}

std::string plain_number(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// A run is predicted from a curve trained as it was but for its batch and lr rule: the same model,
// data, epoch size, base lr, momentum and weight decay (the step equation knows none of them, so a
// run that differs in one is a different experiment, not a test of the model), and its file name's
// rule (lars: LARS under linear-warmup). `reference` is the baseline it is compared with (or the
// folder's first baseline, for another seed's baseline). Throws std::runtime_error naming the
// run's file, line and key.
void check_same_setting(const fs::path& path, const TrainingCurve& run, const std::optional<RunName>& name,
                        const std::string& reference_file, const TrainingCurve& reference) {
  const auto at = [&](const std::string& key) {  // "FILE:LINE: KEY"
    const int line = training_key_line(path, key);
    return path.string() + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + key;
  };
  const auto fail = [&](const std::string& key, const std::string& value, const std::string& theirs) {
    throw std::runtime_error(at(key) + " " + value + " differs from " + reference_file + "'s " + theirs +
                             ": a run is predicted from a baseline trained the same way but for its batch and lr "
                             "rule");
  };
  if (run.model != reference.model) fail("model", run.model, reference.model);
  if (run.data != reference.data) fail("data", run.data, reference.data);
  if (run.train_samples != reference.train_samples) {
    fail("train_samples", std::to_string(run.train_samples), std::to_string(reference.train_samples));
  }
  if (run.lr != reference.lr) fail("lr", plain_number(run.lr), plain_number(reference.lr));
  if (run.momentum != reference.momentum) fail("momentum", plain_number(run.momentum), plain_number(reference.momentum));
  if (run.weight_decay != reference.weight_decay) {
    fail("weight_decay", plain_number(run.weight_decay), plain_number(reference.weight_decay));
  }
  if (name && run.lr_rule != to_string(name->rule)) {
    throw std::runtime_error(at("lr_rule") + " " + run.lr_rule + ", but the file's name says " + rule_label(*name) +
                             (name->lars ? " (LARS runs under linear-warmup)" : ""));
  }
}

double mean_abs(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += std::fabs(v);
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// Whether a predicted regime agrees with the measured one: trained as trained, no progress as no
// progress or blown up.
bool regimes_agree(Regime predicted, Regime measured) {
  return (predicted == Regime::kTrained) == (measured == Regime::kTrained);
}

// A mean absolute error with its bias: "7.6%, bias +7.4%", "4.7 points, bias -1.2"; "n/a" over no
// runs. `unit`: "%" or " points".
std::string error_text(const ErrorSummary& e, const std::string& unit) {
  if (e.count == 0) return "n/a";
  const std::string bias = (e.bias >= 0 ? "+" : "") + fixed(e.bias, 1);
  return fixed(e.mean_abs, 1) + unit + ", bias " + bias + (unit == "%" ? "%" : "");
}

// error_text with the number of runs after it: "7.6%, bias +7.4% (35)".
std::string counted_error_text(const ErrorSummary& e, const std::string& unit) {
  return error_text(e, unit) + " (" + std::to_string(e.count) + ")";
}

}  // namespace

// The predicted epochs to `target` read the way the run's are, where the run records its loss as
// one mean per epoch: the run's curve with each epoch's (and each epoch-end sample's) loss replaced
// by the predicted mean of that epoch, crossed as BaselineCurve crosses the run's. An epoch mean
// sits at the epoch's middle, so a first epoch that starts high (fashion-cnn's first steps
// overshoot) places the crossing later than it happened; the model's own crossing has no such
// delay, and comparing it with the run's would count the recording's resolution as a model error.
// The model's crossing where the run is sampled more densely, where no epoch is predicted, or
// past the last predicted epoch's mean (its epoch's middle: a crossing late in epoch k, or a path
// that leaves the baseline curve before epoch k and predicts the epochs before it only), where the
// means do not cross.
std::optional<double> epochs_to_target_as_recorded(const TrainingCurve& run, int epochs, int num_classes,
                                                   double target, const LargeBatchPrediction& predicted) {
  const size_t predicted_epochs = predicted.loss_by_epoch.size();
  if (run.samples.size() > run.epochs.size() || static_cast<int>(run.epochs.size()) < epochs ||
      predicted_epochs == 0 || predicted_epochs > static_cast<size_t>(epochs)) {
    return predicted.epochs_to_target;
  }
  TrainingCurve means = run;
  means.epochs.resize(predicted_epochs);
  const double n = static_cast<double>(run.train_samples);
  for (EpochPoint& e : means.epochs) {
    e.train_loss = predicted.loss_by_epoch[static_cast<size_t>(e.epoch - 1)];
    for (CurveSample& sample : means.samples) {
      if (sample.examples == static_cast<double>(e.epoch) * n) sample.train_loss = e.train_loss;
    }
  }
  means.samples.erase(std::remove_if(means.samples.begin(), means.samples.end(),
                                     [&](const CurveSample& sample) { return sample.examples > means.epochs.back().examples; }),
                      means.samples.end());
  if (const auto examples = BaselineCurve(means, num_classes).examples_to_loss(target)) return *examples / n;
  return predicted.epochs_to_target && *predicted.epochs_to_target > static_cast<double>(predicted_epochs) - 0.5
             ? predicted.epochs_to_target
             : std::nullopt;
}

std::optional<Regime> predicted_regime(bool no_progress, const std::optional<double>& loss_at_k,
                                       const std::vector<double>& loss_by_epoch,
                                       const std::optional<double>& epochs_to_target_model, int num_classes) {
  const double untrained = std::log(static_cast<double>(num_classes));
  if (loss_at_k) return no_progress || *loss_at_k >= untrained ? Regime::kNoProgress : Regime::kTrained;
  if (no_progress) return Regime::kNoProgress;
  if (epochs_to_target_model || (!loss_by_epoch.empty() && loss_by_epoch.back() < untrained)) return Regime::kTrained;
  return std::nullopt;
}

ErrorSummary summarise_errors(const std::vector<double>& errors) {
  ErrorSummary s;
  s.count = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  s.mean_abs = mean_abs(errors);
  double sum = 0;
  for (double e : errors) sum += e;
  s.bias = sum / static_cast<double>(errors.size());
  return s;
}

std::optional<RunName> parse_run_name(const std::string& file_name) {
  static const std::regex pattern(R"(b([0-9]+)-(constant|linear|linear-warmup|sqrt|lars)-s([0-9]+)\.yaml)");
  std::smatch m;
  if (!std::regex_match(file_name, m, pattern)) return std::nullopt;
  RunName name;
  name.batch = std::stoll(m[1].str());
  name.lars = m[2].str() == "lars";
  name.rule = name.lars ? LrRule::kLinearWarmup : *parse_lr_rule(m[2].str());
  name.seed = std::stoull(m[3].str());
  if (name.batch < 1) return std::nullopt;
  return name;
}

std::string rule_label(const RunName& name) { return name.lars ? "lars" : to_string(name.rule); }

std::string to_string(Regime regime) {
  switch (regime) {
    case Regime::kTrained: return "trained";
    case Regime::kNoProgress: return "no progress";
    case Regime::kBlewUp: return "blew up";
  }
  return "";
}

namespace {

// The run files in o.runs_dir by their names, sorted by seed, rule (LARS last) and batch.
std::vector<std::pair<RunName, fs::path>> find_runs(const CompareOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.runs_dir, ec)) throw std::runtime_error(o.runs_dir + ": not a folder of run curves");
  std::vector<std::pair<RunName, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(o.runs_dir)) {
    if (const auto name = parse_run_name(entry.path().filename().string())) found.emplace_back(*name, entry.path());
  }
  const auto order = [](const RunName& a, const RunName& b) {
    if (a.seed != b.seed) return a.seed < b.seed;
    if (a.lars != b.lars) return b.lars;
    if (a.rule != b.rule) return static_cast<int>(a.rule) < static_cast<int>(b.rule);
    return a.batch < b.batch;
  };
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) { return order(a.first, b.first); });
  return found;
}

}  // namespace

bool is_baseline(const RunName& name, const CompareOptions& o) {
  return name.batch == o.base_batch && name.rule == LrRule::kConstant && !name.lars;
}

std::map<uint64_t, TrainingCurve> load_baselines(const CompareOptions& o) {
  std::map<uint64_t, TrainingCurve> baselines;
  for (const auto& [name, path] : find_runs(o)) {
    if (!is_baseline(name, o)) continue;
    TrainingCurve curve = load_curve(path);
    // One folder, one experiment: every seed's baseline trained the same way as the first.
    const auto first = baselines.begin();
    check_same_setting(path, curve, name, baseline_file_name(o.base_batch, first == baselines.end() ? name.seed : first->first),
                       first == baselines.end() ? curve : first->second);
    if (o.assume_tuned_baseline) {
      for (EpochPoint& e : curve.epochs) e.max_lr = 0;
      for (CurveSample& sample : curve.samples) sample.max_lr = 0;
    }
    if (static_cast<int>(curve.epochs.size()) < o.epochs) {
      throw std::runtime_error(path.string() + ": the baseline has " + std::to_string(curve.epochs.size()) +
                               " epochs, the comparison needs " + std::to_string(o.epochs));
    }
    baselines.emplace(name.seed, std::move(curve));
  }
  if (o.from_seed && baselines.find(*o.from_seed) == baselines.end()) {
    throw std::runtime_error(o.runs_dir + ": no baseline for seed " + std::to_string(*o.from_seed) + " (" +
                             baseline_file_name(o.base_batch, *o.from_seed) + "), which --from-seed names");
  }
  return baselines;
}

LargeBatchSettings run_settings(const CompareOptions& o, LrRule rule, double warmup_epochs,
                                const TrainingCurve& baseline) {
  LargeBatchSettings settings;
  settings.epochs = o.epochs;
  settings.lr_rule = rule;
  settings.curvature_noise_scale = !o.simple_noise_scale;
  settings.momentum_floor = !o.without_momentum_floor;
  settings.batchnorm_gap = !o.without_batchnorm_gap;
  settings.scale_invariant_norm = !o.without_scale_invariant_norm;
  settings.pace_probe = o.pace_probe;
  // The ramp of the run's own warm-up (recorded by measure baseline); measure's default if absent.
  if (warmup_epochs > 0) settings.warmup_epochs = warmup_epochs;
  // Default target: where the baseline was after its first epoch, a loss the large batches
  // reach within a few epochs or not at all (the question Q4 asks).
  settings.target_loss = o.target_loss.value_or(baseline.epochs.front().train_loss);
  settings.target_accuracy = o.target_accuracy;
  settings.past_bound = o.past_bound;
  return settings;
}

ComparisonSummary compare_large_batch_runs(const CompareOptions& o) {
  std::error_code ec;
  const std::vector<std::pair<RunName, fs::path>> found = find_runs(o);
  ComparisonSummary summary;
  const std::map<uint64_t, TrainingCurve> baselines = load_baselines(o);
  for (const auto& [seed, curve] : baselines) {
    summary.seeds.push_back(seed);
    summary.baselines.push_back(curve);
  }

  std::vector<double> loss_errors, accuracy_errors, epochs_errors, trained_loss_errors, trained_accuracy_errors;
  std::vector<double> trained_train_accuracy_errors;
  std::vector<double> recomputed_errors, recomputed_eval_errors, recomputed_lags;
  std::vector<double> lag_scatter_raised, lag_scatter_level;
  std::vector<double> loss_errors_with_blown_up;
  const double untrained = std::log(static_cast<double>(o.num_classes));
  const double blown_up = kRisenLossRatio * untrained;
  // The plan: each planned run by its file's stem; the ones met below are taken off.
  std::map<std::string, PlannedRun> plan;
  if (!o.plan_file.empty()) {
    for (PlannedRun& r : read_plan(o.plan_file)) plan.emplace(r.run, std::move(r));
  }
  summary.planned_rows = static_cast<int>(plan.size());
  for (const auto& [run, r] : plan) ++summary.planned_rows_by_registration[r.planned_at];
  // The errors of each registration's compared runs, by planned_at.
  struct RegistrationErrors {
    int compared = 0;
    int regime_agree = 0;
    int regime_count = 0;
    std::vector<double> loss, accuracy, epochs;
  };
  std::map<std::string, RegistrationErrors> registrations;
  std::set<std::string> planned_elsewhere;
  for (const std::string& file : o.other_plan_files) {
    for (const PlannedRun& r : read_plan(file)) planned_elsewhere.insert(r.run);
  }
  std::vector<double> planned_loss, planned_accuracy, planned_epochs, planned_trained_loss, planned_trained_accuracy;
  std::vector<double> planned_trained_train_accuracy;
  std::vector<double> accuracy_target_errors;
  for (const auto& [name, path] : found) {
    if (is_baseline(name, o)) continue;
    const auto baseline = baselines.find(o.from_seed.value_or(name.seed));
    if (baseline == baselines.end()) {
      throw std::runtime_error(path.string() + ": no baseline for seed " + std::to_string(name.seed) + " (" +
                               baseline_file_name(o.base_batch, name.seed) + " in " + o.runs_dir + ")");
    }
    const std::string stem = path.stem().string();
    const auto planned = plan.find(stem);
    const Profile profile = load_profile(path.string());
    if (profile.training.empty() && (planned != plan.end() || planned_elsewhere.count(stem) > 0)) {
      // Planned and just started: measure baseline writes the curve after its first epoch.
      if (planned != plan.end()) {
        ++summary.planned_waiting;
        plan.erase(planned);
      }
      continue;
    }
    const TrainingCurve curve = only_curve(profile, path);
    check_same_setting(path, curve, name, baseline_file_name(o.base_batch, baseline->first), baseline->second);
    const LargeBatchSettings settings = run_settings(o, name.rule, curve.warmup_epochs, baseline->second);
    const LargeBatchModel model(baseline->second, o.num_classes, settings);

    RunComparison c;
    c.run = name;
    c.file = path.filename().string();
    c.target_loss = model.target_loss();
    c.warmup_epochs = curve.warmup_epochs;
    if (name.lars) {
      if (curve.optimizer != "lars") {
        throw std::runtime_error(path.string() + ": named a lars run, but its curve was trained with " + curve.optimizer);
      }
      c.measured_only = true;
      ++summary.measured_only;
    } else {
      // BatchNorm over the run's own micro-batch (or rank's batch), as it recorded.
      c.predicted = model.predict(name.batch, static_cast<double>(curve.small_batch));
    }

    const fs::path failed = path.string() + ".failed";
    if (fs::exists(failed, ec)) {
      c.measured_missing = read_text(failed);
      c.measured_regime = Regime::kBlewUp;
    } else if (static_cast<int>(curve.epochs.size()) < o.epochs) {
      if (planned != plan.end()) {  // planned and still running: its time comes
        ++summary.planned_waiting;
        plan.erase(planned);
        continue;
      }
      if (planned_elsewhere.count(stem) > 0) continue;  // another plan's, still running
      throw std::runtime_error(path.string() + ": " + std::to_string(curve.epochs.size()) + " of " +
                               std::to_string(o.epochs) + " epochs and no " + failed.filename().string() +
                               " (an interrupted run: run scripts/largebatch-fashion.sh again)");
    } else {
      const EpochPoint& at_k = curve.epochs[static_cast<size_t>(o.epochs - 1)];
      c.loss_at_k = at_k.train_loss;
      c.measured_regime = at_k.train_loss > blown_up    ? Regime::kBlewUp
                          : at_k.train_loss >= untrained ? Regime::kNoProgress
                                                         : Regime::kTrained;
      if (at_k.test_accuracy >= 0) c.test_accuracy_at_k = at_k.test_accuracy;
      if (at_k.test_accuracy_recomputed >= 0) c.test_accuracy_recomputed_at_k = at_k.test_accuracy_recomputed;
      c.lag_scatter_points = lag_scatter_points(curve, o.epochs);
      c.train_accuracy_at_k = at_k.train_accuracy;
      if (at_k.si_weight_sq > 0) c.weight_sq_at_k = at_k.si_weight_sq;
      // The run's own curve, interpolated as the baseline's is (from the untrained model's ln C).
      TrainingCurve first_k = curve;
      first_k.epochs.resize(static_cast<size_t>(o.epochs));
      const BaselineCurve measured(first_k, o.num_classes);
      if (const auto examples = measured.examples_to_loss(c.target_loss)) {
        c.epochs_to_target = *examples / static_cast<double>(curve.train_samples);
      }
      if (o.target_accuracy) {
        if (const auto examples = measured.examples_to_test_accuracy(*o.target_accuracy)) {
          c.epochs_to_target_accuracy = *examples / static_cast<double>(curve.train_samples);
        }
      }
    }
    if (c.measured_only) {
      summary.runs.push_back(std::move(c));
      continue;
    }
    // A prediction against the run: its regime (predicted_regime; a path that stays in a stall of
    // the baseline predicts no progress too, its loss at chance) and errors, written to the Errors
    // given.
    struct Errors {
      std::optional<Regime>* regime;
      std::optional<double>* loss;
      std::optional<double>* loss_blown_up;  // nullptr: not kept
      std::optional<double>* accuracy;
      std::optional<double>* train_accuracy;
      std::optional<double>* epochs;
    };
    const auto against_run = [&](bool no_progress, const std::optional<double>& loss,
                                 const std::vector<double>& loss_by_epoch,
                                 const std::optional<double>& epochs_to_target_model,
                                 const std::optional<double>& accuracy,
                                 const std::optional<double>& train_accuracy, const std::optional<double>& epochs,
                                 const Errors& out) {
      *out.regime = predicted_regime(no_progress, loss, loss_by_epoch, epochs_to_target_model, o.num_classes);
      if (c.loss_at_k && loss) {
        const double error = (*loss - *c.loss_at_k) / *c.loss_at_k * 100.0;
        if (c.measured_regime != Regime::kBlewUp) {
          *out.loss = error;
        } else if (out.loss_blown_up) {
          *out.loss_blown_up = error;
        }
      }
      if (c.test_accuracy_at_k && accuracy) *out.accuracy = (*accuracy - *c.test_accuracy_at_k) * 100.0;
      if (c.train_accuracy_at_k && train_accuracy && c.measured_regime != Regime::kBlewUp) {
        *out.train_accuracy = (*train_accuracy - *c.train_accuracy_at_k) * 100.0;
      }
      // A target at or above the untrained loss ln C (a baseline whose first epoch did not train):
      // every run starts at it, and no relative error exists.
      if (c.epochs_to_target && *c.epochs_to_target > 0 && epochs) {
        *out.epochs = (*epochs - *c.epochs_to_target) / *c.epochs_to_target * 100.0;
      }
    };
    c.predicted_epochs_to_target =
        epochs_to_target_as_recorded(curve, o.epochs, o.num_classes, c.target_loss, c.predicted);
    if (c.loss_at_k && c.predicted.loss_at_k && !c.predicted.no_progress && c.measured_regime == Regime::kTrained) {
      const double level = c.predicted.momentum_floor_gap_at_k.value_or(0) + c.predicted.batchnorm_gap_at_k.value_or(0);
      const auto predicted_at = model.baseline().examples_to_loss(*c.predicted.loss_at_k + level);
      const auto measured_at = model.baseline().examples_to_loss(*c.loss_at_k + level);
      if (predicted_at && measured_at && *predicted_at > 0) c.pace_ratio = *measured_at / *predicted_at;
    }
    if (c.predicted.no_progress) ++summary.no_progress_predicted;
    against_run(c.predicted.no_progress, c.predicted.loss_at_k, c.predicted.loss_by_epoch, c.predicted.epochs_to_target,
                c.predicted.test_accuracy_at_k, c.predicted.train_accuracy_at_k, c.predicted_epochs_to_target,
                {&c.predicted_regime, &c.loss_error_pct, &c.loss_error_pct_blown_up, &c.accuracy_error_points,
                 &c.train_accuracy_error_points, &c.epochs_error_pct});
    if (c.test_accuracy_recomputed_at_k && c.predicted.test_accuracy_recomputed_at_k) {
      c.recomputed_accuracy_error_points =
          (*c.predicted.test_accuracy_recomputed_at_k - *c.test_accuracy_recomputed_at_k) * 100.0;
    }
    if (c.predicted_regime && c.measured_regime) {
      const int predicted = c.predicted_regime == Regime::kTrained ? 0 : 1;
      const int measured = static_cast<int>(*c.measured_regime);  // the enum's order is the table's
      ++summary.regimes[predicted][measured];
      ++summary.regime_count;
      if ((predicted == 0) == (measured == 0)) ++summary.regime_agree;
      if (*c.measured_regime == Regime::kBlewUp) ++summary.blown_up;
    }
    if (c.loss_error_pct_blown_up) loss_errors_with_blown_up.push_back(*c.loss_error_pct_blown_up);
    if (c.loss_error_pct) {
      loss_errors_with_blown_up.push_back(*c.loss_error_pct);
      loss_errors.push_back(*c.loss_error_pct);
      if (!c.predicted.no_progress) trained_loss_errors.push_back(*c.loss_error_pct);
    }
    if (c.accuracy_error_points) {
      accuracy_errors.push_back(*c.accuracy_error_points);
      if (!c.predicted.no_progress) trained_accuracy_errors.push_back(*c.accuracy_error_points);
      if (c.recomputed_accuracy_error_points) {
        recomputed_errors.push_back(*c.recomputed_accuracy_error_points);
        recomputed_eval_errors.push_back(*c.accuracy_error_points);
        recomputed_lags.push_back(recomputed_lag_points(c));
        if (c.lag_scatter_points) {
          (lr_raised(c.predicted.lr_ratio_at_k) ? lag_scatter_raised : lag_scatter_level).push_back(*c.lag_scatter_points);
        }
      }
    }
    if (c.train_accuracy_error_points && !c.predicted.no_progress) {
      trained_train_accuracy_errors.push_back(*c.train_accuracy_error_points);
    }
    if (c.epochs_to_target && *c.epochs_to_target <= 0) {
      ++summary.target_at_start;
    } else if (c.epochs_error_pct) {
      epochs_errors.push_back(*c.epochs_error_pct);
    } else if (c.loss_at_k) {  // a complete run: the target within k epochs or not at all
      // A prediction beyond k epochs that the run did not reach either agrees as far as k shows.
      const bool predicted_within = c.predicted_epochs_to_target && *c.predicted_epochs_to_target <= o.epochs;
      if (c.epochs_to_target || predicted_within) {
        ++summary.target_one_side;
      } else {
        ++summary.target_neither;
      }
    }
    if (o.target_accuracy && c.loss_at_k) {
      const std::optional<double>& predicted = c.predicted.epochs_to_target_accuracy;
      if (c.epochs_to_target_accuracy && *c.epochs_to_target_accuracy > 0 && predicted) {
        c.accuracy_target_error_pct = (*predicted - *c.epochs_to_target_accuracy) / *c.epochs_to_target_accuracy * 100.0;
        accuracy_target_errors.push_back(*c.accuracy_target_error_pct);
      } else if (c.epochs_to_target_accuracy || (predicted && *predicted <= o.epochs)) {
        ++summary.accuracy_target_one_side;
      }
    }
    // The stored prediction, where the run was planned and under the same question.
    if (planned != plan.end()) {
      RunComparison::Planned p;
      p.run = planned->second;
      const PlannedRun& r = p.run;
      const auto differs = [](double a, double b) { return std::fabs(a - b) > 1e-6 * std::max(1.0, std::fabs(b)); };
      if (r.epochs != o.epochs) {
        p.not_compared = "planned for epoch " + std::to_string(r.epochs) + ", compared at " + std::to_string(o.epochs);
      } else if (differs(r.target_loss, c.target_loss)) {
        p.not_compared = "planned for the target loss " + plain_number(r.target_loss) + ", compared at " +
                         plain_number(c.target_loss);
      } else if (differs(r.bn_batch, c.predicted.bn_batch)) {
        p.not_compared = "planned with BatchNorm over " + plain_number(r.bn_batch) + " examples, the run normalised over " +
                         plain_number(c.predicted.bn_batch);
      } else if (name.rule == LrRule::kLinearWarmup && differs(r.warmup_epochs, settings.warmup_epochs)) {
        p.not_compared = "planned with a warm-up of " + plain_number(r.warmup_epochs) + " epochs, the run's was " +
                         plain_number(settings.warmup_epochs);
      } else if (o.from_seed && *o.from_seed != name.seed) {
        p.not_compared = "planned from its own seed's baseline, compared from seed " + std::to_string(*o.from_seed) + "'s";
      }
      if (p.not_compared.empty()) {
        LargeBatchPrediction stored;
        stored.loss_by_epoch = r.loss_by_epoch;
        stored.epochs_to_target = r.epochs_to_target;
        p.predicted_epochs_to_target = epochs_to_target_as_recorded(curve, o.epochs, o.num_classes, r.target_loss, stored);
        against_run(r.no_progress, r.loss_at_k, r.loss_by_epoch, r.epochs_to_target, r.test_accuracy_at_k,
                    r.train_accuracy_at_k, p.predicted_epochs_to_target,
                    {&p.predicted_regime, &p.loss_error_pct, nullptr, &p.accuracy_error_points,
                     &p.train_accuracy_error_points, &p.epochs_error_pct});
        p.same_as_now = r.no_progress == c.predicted.no_progress && r.loss_at_k.has_value() == c.predicted.loss_at_k.has_value() &&
                        (!r.loss_at_k || !differs(*r.loss_at_k, *c.predicted.loss_at_k));
        if (!p.same_as_now) ++summary.planned_changed;
        RegistrationErrors& registration = registrations[r.planned_at];
        ++registration.compared;
        if (p.predicted_regime && c.measured_regime) {
          const bool agree = regimes_agree(*p.predicted_regime, *c.measured_regime);
          ++summary.planned_regime_count;
          ++registration.regime_count;
          summary.planned_regime_agree += agree;
          registration.regime_agree += agree;
        }
        const bool trains = p.predicted_regime == Regime::kTrained;
        if (p.loss_error_pct) {
          planned_loss.push_back(*p.loss_error_pct);
          registration.loss.push_back(*p.loss_error_pct);
          if (trains) planned_trained_loss.push_back(*p.loss_error_pct);
        }
        if (p.accuracy_error_points) {
          planned_accuracy.push_back(*p.accuracy_error_points);
          registration.accuracy.push_back(*p.accuracy_error_points);
          if (trains) planned_trained_accuracy.push_back(*p.accuracy_error_points);
        }
        if (p.train_accuracy_error_points && trains) planned_trained_train_accuracy.push_back(*p.train_accuracy_error_points);
        if (p.epochs_error_pct) {
          planned_epochs.push_back(*p.epochs_error_pct);
          registration.epochs.push_back(*p.epochs_error_pct);
        }
      } else {
        ++summary.planned_not_comparable;
      }
      c.planned = std::move(p);
      plan.erase(planned);
    }
    summary.runs.push_back(std::move(c));
  }
  summary.planned_waiting += static_cast<int>(plan.size());  // planned, no file yet
  summary.accuracy_target_error_pct = mean_abs(accuracy_target_errors);
  summary.accuracy_target_count = static_cast<int>(accuracy_target_errors.size());
  summary.planned_loss = summarise_errors(planned_loss);
  summary.planned_accuracy = summarise_errors(planned_accuracy);
  summary.planned_epochs = summarise_errors(planned_epochs);
  summary.planned_trained_loss = summarise_errors(planned_trained_loss);
  summary.planned_trained_accuracy = summarise_errors(planned_trained_accuracy);
  summary.planned_trained_train_accuracy = summarise_errors(planned_trained_train_accuracy);
  for (const auto& [registered, e] : registrations) {
    summary.registration_figures[registered] = {e.compared, e.regime_agree, e.regime_count, summarise_errors(e.loss),
                                                summarise_errors(e.accuracy), summarise_errors(e.epochs)};
  }
  if (summary.runs.empty()) {
    throw std::runtime_error(o.runs_dir + ": no runs besides the baselines" +
                             (summary.planned_waiting > 0
                                  ? " have ended (" + std::to_string(summary.planned_waiting) + " planned, not ended)"
                                  : std::string()));
  }
  summary.loss = summarise_errors(loss_errors);
  summary.loss_with_blown_up = summarise_errors(loss_errors_with_blown_up);
  summary.accuracy = summarise_errors(accuracy_errors);
  summary.epochs = summarise_errors(epochs_errors);
  summary.trained_loss = summarise_errors(trained_loss_errors);
  summary.trained_accuracy = summarise_errors(trained_accuracy_errors);
  summary.trained_train_accuracy = summarise_errors(trained_train_accuracy_errors);
  summary.recomputed_accuracy_error_points = mean_abs(recomputed_errors);
  summary.recomputed_eval_accuracy_error_points = mean_abs(recomputed_eval_errors);
  summary.recomputed_count = static_cast<int>(recomputed_errors.size());
  if (!recomputed_lags.empty()) {
    summary.recomputed_lag_points = mean_of(recomputed_lags);
  }
  summary.lag_scatter_raised_points = mean_abs(lag_scatter_raised);
  summary.lag_scatter_raised_count = static_cast<int>(lag_scatter_raised.size());
  summary.lag_scatter_level_points = mean_abs(lag_scatter_level);
  summary.lag_scatter_level_count = static_cast<int>(lag_scatter_level.size());
  std::vector<double> lag_scatter = lag_scatter_raised;
  lag_scatter.insert(lag_scatter.end(), lag_scatter_level.begin(), lag_scatter_level.end());
  summary.lag_scatter_points = mean_abs(lag_scatter);
  summary.lag_scatter_count = static_cast<int>(lag_scatter.size());
  // The seed-to-seed spread: each configuration's measured mean against its runs.
  std::map<std::pair<std::string, int64_t>, std::vector<const RunComparison*>> configurations;
  for (const auto& c : summary.runs) {
    if (!c.measured_only) configurations[{rule_label(c.run), c.run.batch}].push_back(&c);
  }
  std::vector<double> spread_loss, spread_accuracy;
  for (const auto& [key, runs] : configurations) {
    std::vector<double> losses, accuracies;
    for (const RunComparison* c : runs) {
      if (c->loss_at_k) losses.push_back(*c->loss_at_k);
      if (c->test_accuracy_at_k) accuracies.push_back(*c->test_accuracy_at_k);
    }
    if (losses.size() >= 2 && std::all_of(losses.begin(), losses.end(), [&](double l) { return l <= blown_up; })) {
      const double mean = mean_of(losses);
      for (double l : losses) spread_loss.push_back((mean - l) / l * 100.0);
    }
    if (accuracies.size() >= 2) {
      const double mean = mean_of(accuracies);
      for (double a : accuracies) spread_accuracy.push_back((mean - a) * 100.0);
    }
  }
  summary.spread_loss_pct = mean_abs(spread_loss);
  summary.spread_loss_count = static_cast<int>(spread_loss.size());
  summary.spread_accuracy_points = mean_abs(spread_accuracy);
  summary.spread_accuracy_count = static_cast<int>(spread_accuracy.size());
  // A single evaluation's scatter: the baselines' test evaluations inside epoch k (the samples
  // after epoch k - 1's end, up to and with epoch k's) against their mean. The baselines that
  // predicted, each once.
  std::vector<double> scatter;
  for (size_t i = 0; i < summary.baselines.size(); ++i) {
    if (o.from_seed && summary.seeds[i] != *o.from_seed) continue;
    const TrainingCurve& b = summary.baselines[i];
    const double n = static_cast<double>(b.train_samples);
    std::vector<double> evaluations;
    for (const CurveSample& sample : b.samples) {
      if (sample.examples > (o.epochs - 1) * n && sample.examples <= o.epochs * n && sample.test_accuracy >= 0) {
        evaluations.push_back(sample.test_accuracy);
      }
    }
    if (evaluations.size() < 2) continue;
    const double mean = mean_of(evaluations);
    for (double a : evaluations) scatter.push_back((a - mean) * 100.0);
  }
  summary.evaluation_scatter_points = mean_abs(scatter);
  summary.evaluation_scatter_count = static_cast<int>(scatter.size());
  return summary;
}

std::string format_error_lines(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  const std::size_t predicted = s.runs.size() - static_cast<std::size_t>(s.measured_only);
  const auto over = [&](int n) { return " over " + std::to_string(n) + " of " + std::to_string(predicted) + " runs"; };
  std::string out;
  out += "loss error: " + error_text(s.loss, "%") +
         " (training loss at epoch " + k + "," + over(s.loss.count) +
         (s.blown_up > 0 ? "; " + std::to_string(s.blown_up) + " blown up (past twice the untrained loss): by regime only"
                         : std::string()) +
         ")\n";
  out += "accuracy error: " + error_text(s.accuracy, " points") +
         " (test accuracy at epoch " + k + "," + over(s.accuracy.count) + ")\n";
  out += "epochs-to-target error: " + error_text(s.epochs, "%") +
         " (epochs to the target loss," + over(s.epochs.count) + ": the runs that reached it in " + k +
         " epochs and were predicted)\n";
  return out;
}

std::string format_comparison_csv(const ComparisonSummary& s) {
  std::string out =
      "seed,rule,batch,target_loss,pred_loss_at_k,meas_loss_at_k,loss_error_pct,pred_test_acc_at_k,meas_test_acc_at_k,"
      "accuracy_error_points,pred_epochs_to_target,meas_epochs_to_target,epochs_error_pct,no_progress_predicted,measured_missing,"
      "pred_epochs_to_target_model,pred_regime,meas_regime,pred_batchnorm_gap_at_k,pred_train_acc_at_k,meas_train_acc_at_k,"
      "train_accuracy_error_points,pred_epochs_to_target_accuracy,meas_epochs_to_target_accuracy,"
      "epochs_to_accuracy_error_pct,pred_start_x,pred_weight_sq_at_k,meas_weight_sq_at_k,pace_ratio,"
      "pred_test_acc_recomputed_at_k,meas_test_acc_recomputed_at_k,recomputed_accuracy_error_points\n";
  const auto num = [](const std::optional<double>& v) { return v ? fixed(*v, 6) : std::string(); };
  for (const auto& c : s.runs) {
    out += std::to_string(c.run.seed) + "," + rule_label(c.run) + "," + std::to_string(c.run.batch) + "," +
           fixed(c.target_loss, 6) + "," + num(c.predicted.loss_at_k) + "," + num(c.loss_at_k) + "," +
           num(c.loss_error_pct ? c.loss_error_pct : c.loss_error_pct_blown_up) + "," +
           num(c.predicted.test_accuracy_at_k) + "," + num(c.test_accuracy_at_k) + "," +
           num(c.accuracy_error_points) + "," + num(c.predicted_epochs_to_target) + "," + num(c.epochs_to_target) +
           "," + num(c.epochs_error_pct) + "," + (c.predicted.no_progress ? "true" : "false") + "," +
           csv::field(c.measured_missing) + "," + num(c.predicted.epochs_to_target) + "," +
           (c.predicted_regime ? to_string(*c.predicted_regime) : std::string()) + "," +
           (c.measured_regime ? to_string(*c.measured_regime) : std::string()) + "," +
           num(c.predicted.batchnorm_gap_at_k) + "," + num(c.predicted.train_accuracy_at_k) + "," +
           num(c.train_accuracy_at_k) + "," + num(c.train_accuracy_error_points) + "," +
           num(c.predicted.epochs_to_target_accuracy) + "," + num(c.epochs_to_target_accuracy) + "," +
           num(c.accuracy_target_error_pct) + "," + num(c.predicted.start_x) + "," +
           num(c.predicted.weight_sq_at_k) + "," + num(c.weight_sq_at_k) + "," + num(c.pace_ratio) + "," +
           num(c.predicted.test_accuracy_recomputed_at_k) + "," + num(c.test_accuracy_recomputed_at_k) + "," +
           num(c.recomputed_accuracy_error_points) + "\n";
  }
  return out;
}

namespace {

// The epochs to CompareOptions::target_accuracy on one line (the report's and the command's).
std::string format_accuracy_target_line(const ComparisonSummary& s, const CompareOptions& o) {
  return "epochs-to-accuracy error: " +
         (s.accuracy_target_count ? fixed(s.accuracy_target_error_pct, 1) + "%" : std::string("n/a")) +
         " (epochs to test accuracy " + plain_number(*o.target_accuracy) + ", over " +
         std::to_string(s.accuracy_target_count) + " runs: the runs that reached it in " + std::to_string(o.epochs) +
         " epochs and were predicted; " + std::to_string(s.accuracy_target_one_side) +
         " reached it in " + std::to_string(o.epochs) + " epochs on one side only)\n";
}

// The accuracy with BatchNorm's statistics recomputed, where runs and their baseline carry it: the
// figures on one line, then each such run.
std::string format_recomputed_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out =
      "\n### BatchNorm's statistics recomputed\n\nThe runs whose test accuracy was also measured with BatchNorm's "
      "statistics estimated again on the weights (measure baseline --recompute-bn), predicted from the baseline's "
      "curve of the same (docs/LARGE_BATCH.md, \"The running statistics' lag in every run\"): accuracy error " +
      fixed(s.recomputed_accuracy_error_points, 1) + " points over " + std::to_string(s.recomputed_count) +
      " runs, against eval mode's " + fixed(s.recomputed_eval_accuracy_error_points, 1) +
      " points on the same runs; the runs' own running-statistics lag (recomputed less eval mode, after epoch " + k +
      ") " + fixed(s.recomputed_lag_points, 1) + " points on average.";
  if (s.lag_scatter_count > 0) {
    const auto part = [](int count, double points, const std::string& what) {
      return count > 0 ? "; " + std::to_string(count) + " " + what + ": " + fixed(points, 1) : std::string();
    };
    out += " The lag is not steady from one evaluation to the next: at each epoch's end from the first past epoch 1 "
           "and the warm-up to epoch " + k + ", a run's lag lies " + fixed(s.lag_scatter_points, 1) +
           " points from that run's own mean (mean absolute, over " + std::to_string(s.lag_scatter_count) + " runs" +
           part(s.lag_scatter_raised_count, s.lag_scatter_raised_points, "at an lr the rule raises over the baseline's") +
           part(s.lag_scatter_level_count, s.lag_scatter_level_points, "at the baseline's lr or below") +
           "; a drift of the lag over the epochs counts in it too): a prediction that carried each run's mean lag "
           "would still miss its one eval-mode reading by about that much, on top of the recomputed error.";
  }
  out += "\n\n| seed | rule | batch | eval mode | recomputed | lag (points) | the lag's scatter | predicted eval mode | "
         "predicted recomputed | error eval mode | error recomputed |\n"
         "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const auto cell = [](const std::optional<double>& v, int digits) { return v ? fixed(*v, digits) : std::string("-"); };
  for (const RunComparison& c : s.runs) {
    if (!c.recomputed_accuracy_error_points || !c.accuracy_error_points) continue;
    out += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) + " | " +
           fixed(*c.test_accuracy_at_k, 4) + " | " + fixed(*c.test_accuracy_recomputed_at_k, 4) + " | " +
           fixed(recomputed_lag_points(c), 1) + " | " + cell(c.lag_scatter_points, 1) + " | " +
           cell(c.predicted.test_accuracy_at_k, 4) + " | " + cell(c.predicted.test_accuracy_recomputed_at_k, 4) + " | " +
           fixed(*c.accuracy_error_points, 1) + " | " + fixed(*c.recomputed_accuracy_error_points, 1) + " |\n";
  }
  return out;
}

// The pre-registered runs' figures on one line (the report's and the command's).
std::string format_planned_line(const ComparisonSummary& s, const std::string& plan = "plan.csv") {
  return "pre-registered (" + plan + "): " + std::to_string(s.planned_rows) + " runs planned, " +
         std::to_string(s.planned_waiting) + " not ended; regime agreement " + std::to_string(s.planned_regime_agree) +
         " of " + std::to_string(s.planned_regime_count) + "; loss " + counted_error_text(s.planned_loss, "%") +
         ", accuracy " + counted_error_text(s.planned_accuracy, " points") + ", epochs to target " +
         counted_error_text(s.planned_epochs, "%") + "; the model as built now predicts " +
         (s.planned_changed > 0 ? std::to_string(s.planned_changed) + " of them otherwise" : std::string("the same")) +
         "\n";
}

// The runs' pace ratios (RunComparison::pace_ratio) by rule, their geometric mean and range; and the
// scale-invariant weights' norm predicted against measured, where the runs recorded it.
std::string format_pace_section(const ComparisonSummary& s, const CompareOptions& o) {
  std::map<std::string, std::vector<double>> by_rule;
  for (const auto& c : s.runs) {
    if (c.pace_ratio) by_rule[rule_label(c.run)].push_back(*c.pace_ratio);
  }
  if (by_rule.empty()) return "";
  const std::string k = std::to_string(o.epochs);
  std::string out = "\n## Level or pace\n\n"
                    "Where each run is on the baseline's curve after epoch " + k + ": the examples at which the "
                    "baseline's curve, less the run's modelled level gaps (momentum's noise floor and BatchNorm's "
                    "batch, as predicted at epoch " + k + "), reads the run's measured loss, over those at which it "
                    "reads the predicted loss (comparison.csv's pace_ratio). 1: the model's path is where the run "
                    "is, and a loss error is in the level; above 1: the run went further along the curve than the "
                    "path (the pace); runs that trained and were predicted to.\n\n"
                    "| rule | runs | pace ratio (geometric mean) | range |\n|:---|---:|---:|:---|\n";
  for (const auto& [rule, ratios] : by_rule) {
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    out += "| " + rule + " | " + std::to_string(ratios.size()) + " | " +
           fixed(std::exp(log_sum / static_cast<double>(ratios.size())), 2) + " | " + fixed(*lo, 2) + " to " +
           fixed(*hi, 2) + " |\n";
  }
  // The norm the pace reads, where the runs recorded it.
  std::string norms;
  for (const auto& c : s.runs) {
    if (!c.weight_sq_at_k || !c.predicted.weight_sq_at_k) continue;
    norms += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) +
             " | " + fixed(*c.predicted.weight_sq_at_k, 1) + " | " + fixed(*c.weight_sq_at_k, 1) + " | " +
             signed_cell((*c.predicted.weight_sq_at_k - *c.weight_sq_at_k) / *c.weight_sq_at_k * 100.0, 1) + " |\n";
  }
  if (!norms.empty()) {
    out += "\nThe scale-invariant weights' |w|^2 after epoch " + k + ", as the model grows it along the run's path "
           "and as the run measured it (the runs that carry the si_* readings):\n\n"
           "| seed | rule | batch | predicted | measured | error % |\n|---:|:---|---:|---:|---:|---:|\n" + norms;
  }
  return out;
}

// The pre-registered figures per registration, the runs planned together (one planned_at): each is a
// test of the model as it was built then, which the figures over every plan mix.
std::string format_registrations(const ComparisonSummary& s) {
  if (s.planned_rows_by_registration.size() < 2 || s.registration_figures.empty()) return "";
  std::string out = "\nBy registration (the runs planned together, with the model as built then):\n\n";
  for (const auto& [registered, rows] : s.planned_rows_by_registration) {
    out += "- " + registered + ": " + std::to_string(rows) + " runs planned, ";
    const auto f = s.registration_figures.find(registered);
    if (f == s.registration_figures.end()) {
      out += "none compared\n";
      continue;
    }
    const ComparisonSummary::RegistrationFigures& r = f->second;
    out += std::to_string(r.compared) + " compared; regime agreement " + std::to_string(r.regime_agree) + " of " +
           std::to_string(r.regime_count) + "; loss " + counted_error_text(r.loss, "%") + ", accuracy " +
           counted_error_text(r.accuracy, " points") + ", epochs to target " + counted_error_text(r.epochs, "%") + "\n";
  }
  return out;
}

std::string format_planned_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out = "\n## Pre-registered runs (plan.csv)\n\n"
                    "The runs `measure largebatch-plan` predicted before they ended, against the predictions stored "
                    "then (not the model's current ones), read as the table above reads them: runs the model had not "
                    "seen when it predicted them. \"planned\": when, and how many epochs the run's file held then; "
                    "\"now\": whether the model as built today predicts the same regime and loss.\n\n"
                    "| run | planned | regime pred | regime meas | loss pred | loss meas | err % | acc pred | acc meas | "
                    "err pts | epochs pred | epochs meas | err % | now |\n"
                    "|:---|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (const auto& c : s.runs) {
    if (!c.planned) continue;
    const RunComparison::Planned& p = *c.planned;
    const std::string when = p.run.planned_at + (p.run.run_epochs_at_plan > 0
                                                     ? " (" + std::to_string(p.run.run_epochs_at_plan) + " epochs run)"
                                                     : std::string());
    if (!p.not_compared.empty()) {
      out += "| " + p.run.run + " | " + when + " | - | - | - | - | - | - | - | - | - | - | - | not compared: " +
             p.not_compared + " |\n";
      continue;
    }
    out += "| " + p.run.run + " | " + when + " | " + (p.predicted_regime ? to_string(*p.predicted_regime) : "-") +
           " | " + (c.measured_regime ? to_string(*c.measured_regime) : "-") + " | " + cell(p.run.loss_at_k, 4) +
           " | " + cell(c.loss_at_k, 4) + " | " + signed_cell(p.loss_error_pct, 1) + " | " +
           cell(p.run.test_accuracy_at_k, 4) + " | " + cell(c.test_accuracy_at_k, 4) + " | " +
           signed_cell(p.accuracy_error_points, 1) + " | " + cell(p.predicted_epochs_to_target, 2) + " | " +
           cell(c.epochs_to_target, 2) + " | " + signed_cell(p.epochs_error_pct, 1) + " | " +
           (p.same_as_now ? "same" : "changed: " + cell(c.predicted.loss_at_k, 4)) + " |\n";
  }
  out += "\n" + format_planned_line(s) + "\nOver the planned runs predicted to train: loss " +
         error_text(s.planned_trained_loss, "%") + " over " +
         std::to_string(s.planned_trained_loss.count) + " runs, accuracy " +
         error_text(s.planned_trained_accuracy, " points") + " over " +
         std::to_string(s.planned_trained_accuracy.count) + ", training accuracy " +
         error_text(s.planned_trained_train_accuracy, " points") + " over " +
         std::to_string(s.planned_trained_train_accuracy.count) + " (epoch " + k + ")." +
         (s.planned_changed > 0 ? " The model now predicts " + std::to_string(s.planned_changed) +
                                      " of them otherwise: the figures above are the stored predictions'."
                                : std::string()) +
         (s.planned_not_comparable > 0 ? " " + std::to_string(s.planned_not_comparable) +
                                             " planned runs are not compared: their plan asked another question."
                                       : std::string()) +
         "\n";
  out += format_registrations(s);
  return out;
}

}  // namespace

std::string format_comparison_report(const ComparisonSummary& s, const CompareOptions& o, const std::string& command,
                                     const ComparisonSummary* assumed_tuned,
                                     const ComparisonSummary* simple_noise,
                                     const ComparisonSummary* without_floor,
                                     const ComparisonSummary* without_batchnorm,
                                     const ComparisonSummary* edge_of_stability,
                                     const ComparisonSummary* plain_bound,
                                     const ComparisonSummary* without_norm,
                                     const ComparisonSummary* other_pace, const std::string& figures) {
  const std::string k = std::to_string(o.epochs);
  std::string out = "# Large batches on real data: predicted vs measured\n\n";
  out += "Reproduce: `" + command + "` on the runs of `scripts/largebatch-fashion.sh` (docs/LARGE_BATCH.md).\n\n";
  if (o.from_seed) {
    out += "Seed " + std::to_string(*o.from_seed) + "'s baseline (batch " + std::to_string(o.base_batch) +
           ", constant lr) is the only input of every prediction, whatever the run's seed (--from-seed: as the main "
           "command's Q4 predicts from the one curve a profile carries; the other seeds' baselines are not used); "
           "every other run is compared with it after " + k + " epochs.\n\n";
  } else {
    out += "Each seed's baseline (batch " + std::to_string(o.base_batch) +
           ", constant lr) is the only input of the predictions (trainsim_stats, what `simulate` prints as Q4); "
           "every other run is compared with them after " + k + " epochs.\n\n";
  }
  if (!s.baselines.empty()) {
    const TrainingCurve& b = s.baselines.front();
    out += "Every run and baseline here trained " + b.model + " on " + b.data + " data (" +
           std::to_string(b.train_samples) + " samples per epoch) with base lr " + plain_number(b.lr) + ", momentum " +
           plain_number(b.momentum) + " and weight decay " + plain_number(b.weight_decay) + " (checked)" +
           (b.momentum > 0 ? ": the step equation is plain SGD's, and the momentum enters as the noise floor it "
                             "raises, 1/(1 - m) times plain SGD's (docs/LARGE_BATCH.md, \"Momentum's noise floor\"; "
                             "without it in a section below the errors)"
                           : ": plain SGD, the step equation's own setting") +
           ".\n\n";
  }
  out += figures;
  out += "## Baselines\n\nB_simple: tr(Sigma) / |G|^2; eps_max: the largest useful lr |g|^2 / g^T H g along the batch "
         "gradient (\"-\": not measured); x_0 = lr (1 + B_simple/B_0) / eps_max, the baseline's lr against the tuned "
         "one; B_noise: McCandlish's tr(H Sigma) / G^T H G and its standard error (the predictions use B_noise "
         "wherever its standard error is at most a quarter of it, B_simple elsewhere; with B_simple alone in a "
         "section below the errors); all measured along the baseline, the moving averages at each epoch's end; "
         "BN gap: the BatchNorm probe's training-mode loss at the baseline's BatchNorm batch less at its largest "
         "(\"-\": no probe), what a run with BatchNorm batches that large records lower on the same weights.\n\n"
         "| seed | data | epoch | train loss | test acc | B_simple | eps_max | x_0 | B_noise | s.e. | BN gap |\n"
         "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (size_t i = 0; i < s.baselines.size(); ++i) {
    if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
    const TrainingCurve& b = s.baselines[i];
    for (const auto& p : b.epochs) {
      const bool measured = p.max_lr > 0;
      const double x0 = measured ? lr_over_tuned_lr(b.lr, static_cast<double>(b.batch), p.noise_scale, p.max_lr) : 0;
      out += "| " + std::to_string(s.seeds[i]) + " | " + b.data + " | " + std::to_string(p.epoch) + " | " +
             fixed(p.train_loss, 4) + " | " + fixed(p.test_accuracy, 4) + " | " + fixed(p.noise_scale, 1) + " | " +
             (measured ? fixed(p.max_lr, 4) : std::string("-")) + " | " + (measured ? fixed(x0, 2) : std::string("-")) +
             " | " + (p.curvature_noise_scale > 0 ? fixed(p.curvature_noise_scale, 1) : std::string("-")) + " | " +
             (p.curvature_noise_scale_se > 0 ? fixed(p.curvature_noise_scale_se, 1) : std::string("-")) + " | " +
             (p.probe_loss.empty() ? std::string("-")
                                   : fixed(p.probe_loss.front() - p.probe_loss.back(), 4) + " (" +
                                         std::to_string(b.probe_batches.front()) + " vs " +
                                         std::to_string(b.probe_batches.back()) + ")") +
             " |\n";
    }
  }
  out += "\nPast the bound (a run whose lr is past 2x the tuned lr somewhere on its path; docs/LARGE_BATCH.md, "
         "\"Which parameters set the bound\"), each seed's baseline read with:\n\n";
  for (size_t i = 0; i < s.baselines.size(); ++i) {
    if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
    out += "- seed " + std::to_string(s.seeds[i]) + ": " +
           read_past_bound(o.past_bound, s.baselines[i].start_curvature).reason + "\n";
  }
  out += "\n## Runs\n\nloss: mean training loss of epoch " + k + "; acc: test accuracy after epoch " + k +
         "; epochs: to the target loss (the predicting baseline's loss after epoch 1 unless --target-loss), "
         "interpolated "
         "(a run that records one mean loss per epoch is crossed between its epoch means, and its prediction the same "
         "way between the predicted epoch means; the model's own crossing is comparison.csv's "
         "pred_epochs_to_target_model); "
         "error = predicted - measured (loss and epochs in % of the measured value, accuracy in points).\n\n";
  out += "| seed | rule | batch | B/B0 | loss pred | loss meas | err % | acc pred | acc meas | err pts | epochs pred | "
         "epochs meas | err % | notes |\n";
  out += "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (const auto& c : s.runs) {
    std::string notes;
    if (c.predicted.no_progress) notes = "predicted: no progress (lr above 2x the tuned lr)";
    if (c.predicted.past_the_bound && !c.predicted.no_progress) notes = "predicted at the edge of stability (lr above 2x the tuned lr)";
    if (c.predicted.stall_passed_epochs) {
      notes = "predicted: passes the baseline's stall at chance after " + fixed(*c.predicted.stall_passed_epochs, 2) +
              " epochs";
    }
    if (!c.measured_only && !c.predicted.loss_at_k && !c.predicted.loss_missing.empty()) {
      notes = "not predicted: " + c.predicted.loss_missing;
    }
    if (c.predicted.start_x && *c.predicted.start_x > LargeBatchModel::kNoProgressLrRatio) {
      notes += (notes.empty() ? "" : "; ") + std::string("starts at ") + fixed(*c.predicted.start_x, 1) +
               "x eps_max: a catapult, not in the prediction";
    }
    if (c.measured_only) notes = "LARS under linear-warmup: measured only (the model has no layer-wise rule)";
    if (!c.measured_missing.empty()) notes += (notes.empty() ? "" : "; ") + std::string("run: ") + c.measured_missing;
    if (c.loss_at_k && !c.epochs_to_target) notes += (notes.empty() ? "" : "; ") + std::string("target not reached in ") + k + " epochs";
    if (c.loss_error_pct_blown_up) {
      notes += (notes.empty() ? "" : "; ") + std::string("blew up (loss past twice the untrained): compared by regime, ") +
               "loss error " + signed_cell(c.loss_error_pct_blown_up, 1) + "% not averaged";
    }
    out += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) +
           " | " + short_number(static_cast<double>(c.run.batch) / static_cast<double>(o.base_batch)) + "x | " +
           cell(c.predicted.loss_at_k, 4) + " | " + cell(c.loss_at_k, 4) + " | " + signed_cell(c.loss_error_pct, 1) +
           " | " + cell(c.predicted.test_accuracy_at_k, 4) + " | " + cell(c.test_accuracy_at_k, 4) + " | " +
           signed_cell(c.accuracy_error_points, 1) + " | " + cell(c.predicted_epochs_to_target, 2) + " | " +
           cell(c.epochs_to_target, 2) + " | " + signed_cell(c.epochs_error_pct, 1) + " | " + notes + " |\n";
  }
  out += "\nThe target within " + k + " epochs on one side only (no percentage exists): " +
         std::to_string(s.target_one_side) + " runs; on neither side (agreement as far as " + k +
         " epochs show): " + std::to_string(s.target_neither) + " runs" +
         (s.target_at_start > 0 ? "; at the start (a target at or above the untrained loss, from a baseline whose "
                                  "first epoch did not train; not compared): " + std::to_string(s.target_at_start) +
                                      " runs"
                                : std::string()) +
         ".\n";
  out += "\n## Errors (mean absolute, with the bias: their signed mean, + where the predictions are high)\n\n";
  if (s.measured_only > 0) {
    out += std::to_string(s.measured_only) + " LARS run(s) are measured only and in no error below. ";
  }
  out += std::to_string(s.no_progress_predicted) + " of the " + std::to_string(s.runs.size() - static_cast<std::size_t>(s.measured_only)) +
         " runs are predicted to make no progress (lr past 2x the tuned lr); over the runs predicted to train, "
         "the test of the McCandlish relation itself: loss " +
         error_text(s.trained_loss, "%") + " over " +
         std::to_string(s.trained_loss.count) + " runs, accuracy " +
         error_text(s.trained_accuracy, " points") +
         " over " + std::to_string(s.trained_accuracy.count) + " runs; their training accuracy (the epoch's mean in "
         "training mode, where the model places each run on the baseline's curve without the test set's evaluation "
         "in eval mode) " +
         error_text(s.trained_train_accuracy, " points") +
         " over " + std::to_string(s.trained_train_accuracy.count) + " runs.\n\n";
  out += "Regimes: where each run is after epoch " + k + " (trained: its loss below the untrained ln C; no progress: "
         "at or above it, up to twice it; blew up: past twice it, or stopped with a loss not finite), against the "
         "prediction. The model predicts train or no progress; a run that blew up agrees with no progress, and its "
         "loss, which says only how far it ran away, is left out of the loss error.\n\n"
         "| predicted \\ measured | trained | no progress | blew up |\n|:---|---:|---:|---:|\n";
  const char* predicted_names[2] = {"trains", "no progress"};
  for (int p = 0; p < 2; ++p) {
    out += std::string("| ") + predicted_names[p] + " | " + std::to_string(s.regimes[p][0]) + " | " +
           std::to_string(s.regimes[p][1]) + " | " + std::to_string(s.regimes[p][2]) + " |\n";
  }
  out += "\nregime agreement: " + std::to_string(s.regime_agree) + " of " + std::to_string(s.regime_count) +
         " runs\n\nWith the losses of the runs that blew up averaged as well: " +
         error_text(s.loss_with_blown_up, "%") +
         " over " + std::to_string(s.loss_with_blown_up.count) + " runs. Over all runs:\n\n";
  out += format_error_lines(s, o);
  if (o.target_accuracy) {
    out += "\nThe run's epochs to a test accuracy of " + plain_number(*o.target_accuracy) +
           " (--target-accuracy): its test evaluations (one at each epoch's end) crossed, linear between them from "
           "chance at the start; predicted: the model's (docs/LARGE_BATCH.md, \"Target accuracy\"); "
           "comparison.csv's pred_epochs_to_target_accuracy and meas_epochs_to_target_accuracy.\n\n" +
           format_accuracy_target_line(s, o);
  }
  out += "\nThe runs' own seed-to-seed spread, the noise floor of any prediction that gives one value per "
         "rule and batch (each configuration run with two or more seeds: its runs' mean against each run, as the "
         "errors are taken): loss " +
         (s.spread_loss_count ? fixed(s.spread_loss_pct, 1) + "%" : std::string("n/a")) + " over " +
         std::to_string(s.spread_loss_count) + " runs (configurations with no run past twice the untrained loss), " +
         "accuracy " + (s.spread_accuracy_count ? fixed(s.spread_accuracy_points, 1) + " points" : std::string("n/a")) +
         " over " + std::to_string(s.spread_accuracy_count) + " runs.";
  if (s.evaluation_scatter_count > 0) {
    out += " A single evaluation's scatter, the noise floor of comparing a run's one test evaluation after epoch " +
           k + " with a predicted mean: the baselines' " + std::to_string(s.evaluation_scatter_count) +
           " evaluations in epoch " + k + " lie " + fixed(s.evaluation_scatter_points, 1) +
           " points from their epoch's mean (mean absolute; at the baselines' batch and lr).";
  }
  out += "\n";
  if (s.recomputed_count > 0) out += format_recomputed_section(s, o);
  // Per seed: a seed whose baseline went wrong shows as such rather than inside the mean.
  out += "\nPer seed (mean absolute with the bias, runs in brackets):\n\n";
  for (size_t i = 0; i < s.seeds.size(); ++i) {
    std::vector<double> loss, accuracy, epochs;
    for (const auto& c : s.runs) {
      if (c.run.seed != s.seeds[i]) continue;
      if (c.loss_error_pct) loss.push_back(*c.loss_error_pct);
      if (c.accuracy_error_points) accuracy.push_back(*c.accuracy_error_points);
      if (c.epochs_error_pct) epochs.push_back(*c.epochs_error_pct);
    }
    const TrainingCurve& b = s.baselines[i];
    const BaselineCurve curve(b, o.num_classes);
    std::string state;
    if (o.from_seed && s.seeds[i] != *o.from_seed) {
      state = " (predicted from seed " + std::to_string(*o.from_seed) + "'s baseline)";
    } else if (curve.never_trained()) {
      state = " (its baseline never trained: loss " + fixed(b.epochs.back().train_loss, 3) + " in its last epoch; " +
              "nothing predicted)";
    } else if (curve.first_epoch_untrained()) {
      state = " (its baseline did not train in epoch 1: loss " + fixed(b.epochs.front().train_loss, 3) + ")";
    }
    out += "- seed " + std::to_string(s.seeds[i]) + state +
           ": loss " + counted_error_text(summarise_errors(loss), "%") + ", accuracy " +
           counted_error_text(summarise_errors(accuracy), " points") + ", epochs to target " +
           counted_error_text(summarise_errors(epochs), "%") + "\n";
  }
  out += format_pace_section(s, o);
  if (s.planned_rows > 0) out += format_planned_section(s, o);
  // The same runs under another form of the model.
  // `plan`: the plan whose stored predictions are this form's (empty: none; the others' are the model's).
  const auto alternative = [&](const std::string& title, const std::string& what, const ComparisonSummary& a,
                               const std::string& plan = "") {
    out += "\n## " + title + "\n\n" + what + ", on the same runs: " + std::to_string(a.no_progress_predicted) +
           " runs predicted to make no progress.\n\n";
    out += "- loss: " + error_text(a.loss, "%") + " over " + std::to_string(a.loss.count) +
           " runs (over the runs predicted to train: " + error_text(a.trained_loss, "%") +
           " over " + std::to_string(a.trained_loss.count) + ")\n";
    out += "- accuracy: " + error_text(a.accuracy, " points") + " over " +
           std::to_string(a.accuracy.count) + " runs (predicted to train: " +
           error_text(a.trained_accuracy, " points") + " over " +
           std::to_string(a.trained_accuracy.count) + ")\n";
    out += "- epochs to target: " + error_text(a.epochs, "%") + " over " +
           std::to_string(a.epochs.count) + " runs\n";
    if (a.recomputed_count > 0) {
      out += "- accuracy with BatchNorm's statistics recomputed: " + fixed(a.recomputed_accuracy_error_points, 1) +
             " points over " + std::to_string(a.recomputed_count) + " runs (eval mode's on the same runs: " +
             fixed(a.recomputed_eval_accuracy_error_points, 1) + " points)\n";
    }
    out += "- regime agreement: " + std::to_string(a.regime_agree) + " of " + std::to_string(a.regime_count) + " runs\n";
    if (!plan.empty() && a.planned_rows > 0) out += "- " + format_planned_line(a, plan);
  };
  if (simple_noise) {
    alternative("The same with B_simple = tr(Sigma) / |G|^2 alone",
                "The model with the baselines' B_simple for B_n everywhere, their measured B_noise not used (as "
                "before its standard error was measured; LargeBatchSettings::curvature_noise_scale off, "
                "docs/LARGE_BATCH.md)",
                *simple_noise);
  }
  if (without_floor && !s.baselines.empty() && s.baselines.front().momentum > 0) {
    alternative("The same without momentum's noise floor",
                "The plain-SGD path alone, the run's loss read where the path is on the baseline's curve "
                "(LargeBatchSettings::momentum_floor off, docs/LARGE_BATCH.md)",
                *without_floor);
  }
  const bool probed = std::any_of(s.baselines.begin(), s.baselines.end(),
                                  [](const TrainingCurve& c) { return !c.probe_batches.empty(); });
  if (without_batchnorm && probed) {
    alternative("The same without the BatchNorm gap",
                "The run's loss read off the baseline's curve as it is, not lowered by what the baseline's "
                "BatchNorm probe measured between its BatchNorm batch and the run's (LargeBatchSettings::batchnorm_gap "
                "off, docs/LARGE_BATCH.md)",
                *without_batchnorm);
  }
  const bool normed = std::any_of(s.baselines.begin(), s.baselines.end(), [](const TrainingCurve& c) {
    return std::any_of(c.epochs.begin(), c.epochs.end(), [](const EpochPoint& e) { return e.si_weight_sq > 0; });
  });
  if (without_norm && normed) {
    alternative("The same without the scale-invariant weights' norm",
                "x read with the rule's plain lr ratio, not the run's lr / |w|^2 over the baseline's on the weights "
                "BatchNorm normalises (LargeBatchSettings::scale_invariant_norm off, docs/LARGE_BATCH.md, \"The "
                "scale-invariant weights' norm\")",
                *without_norm);
  }
  if (other_pace && any_pace_probe(s)) {
    alternative(o.pace_probe ? "The same without the pace probe" : "The same with the pace probe",
                o.pace_probe ? "x_0 and B_n as the single-step statistics read them along the baseline, the pace "
                               "probe's coefficients not used (LargeBatchSettings::pace_probe off, docs/LARGE_BATCH.md, "
                               "\"The pace probe in the model\")"
                             : "x_0 and B_n along the whole path scaled so that, at the state the baseline's pace "
                               "probe measured, they are the step equation's solved from its gains "
                               "(LargeBatchSettings::pace_probe on, docs/LARGE_BATCH.md, \"The pace probe in the "
                               "model\")",
                *other_pace);
    out += "\nThe pace probe's readings, as the model takes them with it on:\n\n";
    for (size_t i = 0; i < s.baselines.size(); ++i) {
      if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
      CompareOptions on = o;
      on.pace_probe = true;
      const LargeBatchModel model(s.baselines[i], o.num_classes,
                                  run_settings(on, LrRule::kConstant, 0, s.baselines[i]));
      out += "- seed " + std::to_string(s.seeds[i]) + ": " + model.pace_probe_reason() + "\n";
    }
  }
  if (edge_of_stability) {
    alternative("The same at the edge of stability",
                "Every baseline read at the edge: the run's curvature following its lr, an lr above the tuned one "
                "(x > 1) progresses as at it, and no run is past the no-progress bound (PastBound::kEdge, "
                "docs/LARGE_BATCH.md, \"The edge of stability\"); its pre-registered predictions, where given, "
                "are plan-edge-of-stability.csv's",
                *edge_of_stability, "plan-edge-of-stability.csv");
  }
  if (plain_bound) {
    alternative("The same with the plain bound",
                "Every baseline read with plain SGD's bound: past 2x the tuned lr anywhere on its path a run makes "
                "no progress (PastBound::kNoProgress; the model's only reading before 2026-11-29's start curvature)",
                *plain_bound);
  }
  if (assumed_tuned) {
    alternative("The same with the baselines' lr taken as tuned",
                "The model before eps_max was measured (x_0 = 1 everywhere)", *assumed_tuned);
  }
  return out;
}

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
  if (std::find(args.begin() + 1, args.end(), "--help") != args.end() ||
      std::find(args.begin() + 1, args.end(), "-h") != args.end()) {
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
