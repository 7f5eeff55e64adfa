#include "largebatch/compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "format/profile_io.h"
#include "largebatch/plan.h"

namespace trainsim::measure {
namespace fs = std::filesystem;
namespace {

// The arithmetic mean of a non-empty vector.
double mean_of(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
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

}  // namespace

// A run's own running-statistics lag after epoch k: its recomputed test accuracy less eval mode's, in
// points (both measured).
double recomputed_lag_points(const RunComparison& c) {
  return (*c.test_accuracy_recomputed_at_k - *c.test_accuracy_at_k) * 100.0;
}

// Whether any baseline the comparison used carries the pace probe.
bool any_pace_probe(const ComparisonSummary& s) {
  return std::any_of(s.baselines.begin(), s.baselines.end(),
                     [](const TrainingCurve& c) { return !c.pace_probe.empty(); });
}

std::string plain_number(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}


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

namespace {

// The measured side of a complete run (k epochs or more): its epoch-k figures, its regime and its
// epochs to the targets, its own curve interpolated as the baseline's is (from ln C).
void read_measured(const TrainingCurve& curve, const CompareOptions& o, RunComparison& c) {
  const double untrained = std::log(static_cast<double>(o.num_classes));
  const EpochPoint& at_k = curve.epochs[static_cast<size_t>(o.epochs - 1)];
  c.loss_at_k = at_k.train_loss;
  c.measured_regime = at_k.train_loss > kRisenLossRatio * untrained ? Regime::kBlewUp
                      : at_k.train_loss >= untrained                 ? Regime::kNoProgress
                                                                     : Regime::kTrained;
  if (at_k.test_accuracy >= 0) c.test_accuracy_at_k = at_k.test_accuracy;
  if (at_k.test_accuracy_recomputed >= 0) c.test_accuracy_recomputed_at_k = at_k.test_accuracy_recomputed;
  c.lag_scatter_points = lag_scatter_points(curve, o.epochs);
  c.train_accuracy_at_k = at_k.train_accuracy;
  if (at_k.si_weight_sq > 0) c.weight_sq_at_k = at_k.si_weight_sq;
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

// One prediction (the model's now, or one stored in a plan) as the run is read.
struct PredictionToScore {
  bool no_progress = false;
  std::optional<double> loss;
  std::vector<double> loss_by_epoch;
  std::optional<double> epochs_to_target_model;  // the model's own crossing
  std::optional<double> accuracy;
  std::optional<double> train_accuracy;
  std::optional<double> epochs;  // read as the run records its own
};

// Its regime (predicted_regime: a path that stays in a stall of the baseline predicts no progress
// too, its loss at chance) and its errors against the run's measured side.
struct Scored {
  std::optional<Regime> regime;
  std::optional<double> loss;
  std::optional<double> loss_blown_up;  // the loss error of a run that blew up
  std::optional<double> accuracy;
  std::optional<double> train_accuracy;
  std::optional<double> epochs;
};

Scored score(const PredictionToScore& p, const RunComparison& c, int num_classes) {
  Scored out;
  out.regime = predicted_regime(p.no_progress, p.loss, p.loss_by_epoch, p.epochs_to_target_model, num_classes);
  if (c.loss_at_k && p.loss) {
    const double error = (*p.loss - *c.loss_at_k) / *c.loss_at_k * 100.0;
    (c.measured_regime != Regime::kBlewUp ? out.loss : out.loss_blown_up) = error;
  }
  if (c.test_accuracy_at_k && p.accuracy) out.accuracy = (*p.accuracy - *c.test_accuracy_at_k) * 100.0;
  if (c.train_accuracy_at_k && p.train_accuracy && c.measured_regime != Regime::kBlewUp) {
    out.train_accuracy = (*p.train_accuracy - *c.train_accuracy_at_k) * 100.0;
  }
  // A target at or above the untrained loss ln C (a baseline whose first epoch did not train):
  // every run starts at it, and no relative error exists.
  if (c.epochs_to_target && *c.epochs_to_target > 0 && p.epochs) {
    out.epochs = (*p.epochs - *c.epochs_to_target) / *c.epochs_to_target * 100.0;
  }
  return out;
}

// The model's prediction against the run: the run's errors, pace ratio and accuracy-target error.
void score_current(const LargeBatchModel& model, const TrainingCurve& curve, const CompareOptions& o,
                   RunComparison& c) {
  c.predicted_epochs_to_target = epochs_to_target_as_recorded(curve, o.epochs, o.num_classes, c.target_loss, c.predicted);
  if (c.loss_at_k && c.predicted.loss_at_k && !c.predicted.no_progress && c.measured_regime == Regime::kTrained) {
    const double level = c.predicted.momentum_floor_gap_at_k.value_or(0) + c.predicted.batchnorm_gap_at_k.value_or(0);
    const auto predicted_at = model.baseline().examples_to_loss(*c.predicted.loss_at_k + level);
    const auto measured_at = model.baseline().examples_to_loss(*c.loss_at_k + level);
    if (predicted_at && measured_at && *predicted_at > 0) c.pace_ratio = *measured_at / *predicted_at;
  }
  const LargeBatchPrediction& p = c.predicted;
  const Scored scored = score({p.no_progress, p.loss_at_k, p.loss_by_epoch, p.epochs_to_target, p.test_accuracy_at_k,
                               p.train_accuracy_at_k, c.predicted_epochs_to_target},
                              c, o.num_classes);
  c.predicted_regime = scored.regime;
  c.loss_error_pct = scored.loss;
  c.loss_error_pct_blown_up = scored.loss_blown_up;
  c.accuracy_error_points = scored.accuracy;
  c.train_accuracy_error_points = scored.train_accuracy;
  c.epochs_error_pct = scored.epochs;
  if (c.test_accuracy_recomputed_at_k && p.test_accuracy_recomputed_at_k) {
    c.recomputed_accuracy_error_points = (*p.test_accuracy_recomputed_at_k - *c.test_accuracy_recomputed_at_k) * 100.0;
  }
  if (o.target_accuracy && c.loss_at_k && c.epochs_to_target_accuracy && *c.epochs_to_target_accuracy > 0 &&
      p.epochs_to_target_accuracy) {
    c.accuracy_target_error_pct =
        (*p.epochs_to_target_accuracy - *c.epochs_to_target_accuracy) / *c.epochs_to_target_accuracy * 100.0;
  }
}

// The prediction stored for a planned run, against the run, where it was planned under the same
// question (else not_compared says how it differs).
RunComparison::Planned score_planned(const PlannedRun& r, const TrainingCurve& curve, const LargeBatchSettings& settings,
                                     const CompareOptions& o, const RunComparison& c) {
  RunComparison::Planned p;
  p.run = r;
  const auto differs = [](double a, double b) { return std::fabs(a - b) > 1e-6 * std::max(1.0, std::fabs(b)); };
  if (r.epochs != o.epochs) {
    p.not_compared = "planned for epoch " + std::to_string(r.epochs) + ", compared at " + std::to_string(o.epochs);
  } else if (differs(r.target_loss, c.target_loss)) {
    p.not_compared =
        "planned for the target loss " + plain_number(r.target_loss) + ", compared at " + plain_number(c.target_loss);
  } else if (differs(r.bn_batch, c.predicted.bn_batch)) {
    p.not_compared = "planned with BatchNorm over " + plain_number(r.bn_batch) + " examples, the run normalised over " +
                     plain_number(c.predicted.bn_batch);
  } else if (c.run.rule == LrRule::kLinearWarmup && differs(r.warmup_epochs, settings.warmup_epochs)) {
    p.not_compared = "planned with a warm-up of " + plain_number(r.warmup_epochs) + " epochs, the run's was " +
                     plain_number(settings.warmup_epochs);
  } else if (o.from_seed && *o.from_seed != c.run.seed) {
    p.not_compared = "planned from its own seed's baseline, compared from seed " + std::to_string(*o.from_seed) + "'s";
  }
  if (!p.not_compared.empty()) return p;
  LargeBatchPrediction stored;
  stored.loss_by_epoch = r.loss_by_epoch;
  stored.epochs_to_target = r.epochs_to_target;
  p.predicted_epochs_to_target = epochs_to_target_as_recorded(curve, o.epochs, o.num_classes, r.target_loss, stored);
  const Scored scored = score({r.no_progress, r.loss_at_k, r.loss_by_epoch, r.epochs_to_target, r.test_accuracy_at_k,
                               r.train_accuracy_at_k, p.predicted_epochs_to_target},
                              c, o.num_classes);
  p.predicted_regime = scored.regime;
  p.loss_error_pct = scored.loss;
  p.accuracy_error_points = scored.accuracy;
  p.train_accuracy_error_points = scored.train_accuracy;
  p.epochs_error_pct = scored.epochs;
  p.same_as_now = r.no_progress == c.predicted.no_progress &&
                  r.loss_at_k.has_value() == c.predicted.loss_at_k.has_value() &&
                  (!r.loss_at_k || !differs(*r.loss_at_k, *c.predicted.loss_at_k));
  return p;
}

// The errors of the runs compared, gathered run by run, then summed up into the summary.
class ErrorTally {
 public:
  void add(const RunComparison& c, const CompareOptions& o, ComparisonSummary& s) {
    if (c.predicted.no_progress) ++s.no_progress_predicted;
    if (c.predicted_regime && c.measured_regime) {
      const int predicted = c.predicted_regime == Regime::kTrained ? 0 : 1;
      const int measured = static_cast<int>(*c.measured_regime);  // the enum's order is the table's
      ++s.regimes[predicted][measured];
      ++s.regime_count;
      if ((predicted == 0) == (measured == 0)) ++s.regime_agree;
      if (*c.measured_regime == Regime::kBlewUp) ++s.blown_up;
    }
    if (c.loss_error_pct_blown_up) loss_with_blown_up_.push_back(*c.loss_error_pct_blown_up);
    if (c.loss_error_pct) {
      loss_with_blown_up_.push_back(*c.loss_error_pct);
      loss_.push_back(*c.loss_error_pct);
      if (!c.predicted.no_progress) trained_loss_.push_back(*c.loss_error_pct);
    }
    if (c.accuracy_error_points) {
      accuracy_.push_back(*c.accuracy_error_points);
      if (!c.predicted.no_progress) trained_accuracy_.push_back(*c.accuracy_error_points);
      if (c.recomputed_accuracy_error_points) {
        recomputed_.push_back(*c.recomputed_accuracy_error_points);
        recomputed_eval_.push_back(*c.accuracy_error_points);
        recomputed_lags_.push_back(recomputed_lag_points(c));
        if (c.lag_scatter_points) {
          (lr_raised(c.predicted.lr_ratio_at_k) ? lag_scatter_raised_ : lag_scatter_level_).push_back(*c.lag_scatter_points);
        }
      }
    }
    if (c.train_accuracy_error_points && !c.predicted.no_progress) {
      trained_train_accuracy_.push_back(*c.train_accuracy_error_points);
    }
    if (c.epochs_to_target && *c.epochs_to_target <= 0) {
      ++s.target_at_start;
    } else if (c.epochs_error_pct) {
      epochs_.push_back(*c.epochs_error_pct);
    } else if (c.loss_at_k) {  // a complete run: the target within k epochs or not at all
      // A prediction beyond k epochs that the run did not reach either agrees as far as k shows.
      const bool predicted_within = c.predicted_epochs_to_target && *c.predicted_epochs_to_target <= o.epochs;
      ++(c.epochs_to_target || predicted_within ? s.target_one_side : s.target_neither);
    }
    if (c.accuracy_target_error_pct) {
      accuracy_target_.push_back(*c.accuracy_target_error_pct);
    } else if (o.target_accuracy && c.loss_at_k &&
               (c.epochs_to_target_accuracy ||
                (c.predicted.epochs_to_target_accuracy && *c.predicted.epochs_to_target_accuracy <= o.epochs))) {
      ++s.accuracy_target_one_side;
    }
  }

  void add_planned(const RunComparison::Planned& p, const RunComparison& c, ComparisonSummary& s) {
    if (!p.not_compared.empty()) {
      ++s.planned_not_comparable;
      return;
    }
    if (!p.same_as_now) ++s.planned_changed;
    Registration& registration = registrations_[p.run.planned_at];
    ++registration.compared;
    if (p.predicted_regime && c.measured_regime) {
      const bool agree = regimes_agree(*p.predicted_regime, *c.measured_regime);
      ++s.planned_regime_count;
      ++registration.regime_count;
      s.planned_regime_agree += agree;
      registration.regime_agree += agree;
    }
    const bool trains = p.predicted_regime == Regime::kTrained;
    if (p.loss_error_pct) {
      planned_loss_.push_back(*p.loss_error_pct);
      registration.loss.push_back(*p.loss_error_pct);
      if (trains) planned_trained_loss_.push_back(*p.loss_error_pct);
    }
    if (p.accuracy_error_points) {
      planned_accuracy_.push_back(*p.accuracy_error_points);
      registration.accuracy.push_back(*p.accuracy_error_points);
      if (trains) planned_trained_accuracy_.push_back(*p.accuracy_error_points);
    }
    if (p.train_accuracy_error_points && trains) planned_trained_train_accuracy_.push_back(*p.train_accuracy_error_points);
    if (p.epochs_error_pct) {
      planned_epochs_.push_back(*p.epochs_error_pct);
      registration.epochs.push_back(*p.epochs_error_pct);
    }
  }

  void sum_up(ComparisonSummary& s) const {
    s.accuracy_target_error_pct = mean_abs(accuracy_target_);
    s.accuracy_target_count = static_cast<int>(accuracy_target_.size());
    s.planned_loss = summarise_errors(planned_loss_);
    s.planned_accuracy = summarise_errors(planned_accuracy_);
    s.planned_epochs = summarise_errors(planned_epochs_);
    s.planned_trained_loss = summarise_errors(planned_trained_loss_);
    s.planned_trained_accuracy = summarise_errors(planned_trained_accuracy_);
    s.planned_trained_train_accuracy = summarise_errors(planned_trained_train_accuracy_);
    for (const auto& [registered, e] : registrations_) {
      s.registration_figures[registered] = {e.compared, e.regime_agree, e.regime_count, summarise_errors(e.loss),
                                            summarise_errors(e.accuracy), summarise_errors(e.epochs)};
    }
    s.loss = summarise_errors(loss_);
    s.loss_with_blown_up = summarise_errors(loss_with_blown_up_);
    s.accuracy = summarise_errors(accuracy_);
    s.epochs = summarise_errors(epochs_);
    s.trained_loss = summarise_errors(trained_loss_);
    s.trained_accuracy = summarise_errors(trained_accuracy_);
    s.trained_train_accuracy = summarise_errors(trained_train_accuracy_);
    s.recomputed_accuracy_error_points = mean_abs(recomputed_);
    s.recomputed_eval_accuracy_error_points = mean_abs(recomputed_eval_);
    s.recomputed_count = static_cast<int>(recomputed_.size());
    if (!recomputed_lags_.empty()) s.recomputed_lag_points = mean_of(recomputed_lags_);
    s.lag_scatter_raised_points = mean_abs(lag_scatter_raised_);
    s.lag_scatter_raised_count = static_cast<int>(lag_scatter_raised_.size());
    s.lag_scatter_level_points = mean_abs(lag_scatter_level_);
    s.lag_scatter_level_count = static_cast<int>(lag_scatter_level_.size());
    std::vector<double> lag_scatter = lag_scatter_raised_;
    lag_scatter.insert(lag_scatter.end(), lag_scatter_level_.begin(), lag_scatter_level_.end());
    s.lag_scatter_points = mean_abs(lag_scatter);
    s.lag_scatter_count = static_cast<int>(lag_scatter.size());
  }

 private:
  // The errors of each registration's compared runs, by planned_at.
  struct Registration {
    int compared = 0;
    int regime_agree = 0;
    int regime_count = 0;
    std::vector<double> loss, accuracy, epochs;
  };
  std::vector<double> loss_, loss_with_blown_up_, accuracy_, epochs_, trained_loss_, trained_accuracy_;
  std::vector<double> trained_train_accuracy_, recomputed_, recomputed_eval_, recomputed_lags_;
  std::vector<double> lag_scatter_raised_, lag_scatter_level_, accuracy_target_;
  std::vector<double> planned_loss_, planned_accuracy_, planned_epochs_, planned_trained_loss_;
  std::vector<double> planned_trained_accuracy_, planned_trained_train_accuracy_;
  std::map<std::string, Registration> registrations_;
};

// The runs' own seed-to-seed spread: each configuration's (rule, batch) measured mean against its
// runs, where two or more ran it.
void seed_spread(const CompareOptions& o, ComparisonSummary& s) {
  const double blown_up = kRisenLossRatio * std::log(static_cast<double>(o.num_classes));
  std::map<std::pair<std::string, int64_t>, std::vector<const RunComparison*>> configurations;
  for (const auto& c : s.runs) {
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
  s.spread_loss_pct = mean_abs(spread_loss);
  s.spread_loss_count = static_cast<int>(spread_loss.size());
  s.spread_accuracy_points = mean_abs(spread_accuracy);
  s.spread_accuracy_count = static_cast<int>(spread_accuracy.size());
}

// A single evaluation's scatter: the baselines' test evaluations inside epoch k (the samples after
// epoch k - 1's end, up to and with epoch k's) against their mean. The baselines that predicted,
// each once.
void evaluation_scatter(const CompareOptions& o, ComparisonSummary& s) {
  std::vector<double> scatter;
  for (size_t i = 0; i < s.baselines.size(); ++i) {
    if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
    const TrainingCurve& b = s.baselines[i];
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
  s.evaluation_scatter_points = mean_abs(scatter);
  s.evaluation_scatter_count = static_cast<int>(scatter.size());
}

}  // namespace

ComparisonSummary compare_large_batch_runs(const CompareOptions& o) {
  ComparisonSummary summary;
  const std::map<uint64_t, TrainingCurve> baselines = load_baselines(o);
  for (const auto& [seed, curve] : baselines) {
    summary.seeds.push_back(seed);
    summary.baselines.push_back(curve);
  }
  // The plan: each planned run by its file's stem; the ones met below are taken off.
  std::map<std::string, PlannedRun> plan;
  if (!o.plan_file.empty()) {
    for (PlannedRun& r : read_plan(o.plan_file)) plan.emplace(r.run, std::move(r));
  }
  summary.planned_rows = static_cast<int>(plan.size());
  for (const auto& [run, r] : plan) ++summary.planned_rows_by_registration[r.planned_at];
  std::set<std::string> planned_elsewhere;
  for (const std::string& file : o.other_plan_files) {
    for (const PlannedRun& r : read_plan(file)) planned_elsewhere.insert(r.run);
  }
  ErrorTally tally;
  for (const auto& [name, path] : find_runs(o)) {
    if (is_baseline(name, o)) continue;
    const auto baseline = baselines.find(o.from_seed.value_or(name.seed));
    if (baseline == baselines.end()) {
      throw std::runtime_error(path.string() + ": no baseline for seed " + std::to_string(name.seed) + " (" +
                               baseline_file_name(o.base_batch, name.seed) + " in " + o.runs_dir + ")");
    }
    const std::string stem = path.stem().string();
    const auto planned = plan.find(stem);
    const auto waiting = [&] {  // planned and not ended: its time comes
      ++summary.planned_waiting;
      plan.erase(planned);
    };
    const Profile profile = load_profile(path.string());
    if (profile.training.empty() && (planned != plan.end() || planned_elsewhere.count(stem) > 0)) {
      // Planned and just started: measure baseline writes the curve after its first epoch.
      if (planned != plan.end()) waiting();
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
    std::error_code ec;
    const fs::path failed = path.string() + ".failed";
    if (fs::exists(failed, ec)) {
      c.measured_missing = read_text(failed);
      c.measured_regime = Regime::kBlewUp;
    } else if (static_cast<int>(curve.epochs.size()) < o.epochs) {
      if (planned != plan.end()) {
        waiting();
        continue;
      }
      if (planned_elsewhere.count(stem) > 0) continue;  // another plan's, still running
      throw std::runtime_error(path.string() + ": " + std::to_string(curve.epochs.size()) + " of " +
                               std::to_string(o.epochs) + " epochs and no " + failed.filename().string() +
                               " (an interrupted run: run scripts/largebatch-fashion.sh again)");
    } else {
      read_measured(curve, o, c);
    }
    if (!c.measured_only) {
      score_current(model, curve, o, c);
      tally.add(c, o, summary);
      if (planned != plan.end()) {
        c.planned = score_planned(planned->second, curve, settings, o, c);
        tally.add_planned(*c.planned, c, summary);
        plan.erase(planned);
      }
    }
    summary.runs.push_back(std::move(c));
  }
  summary.planned_waiting += static_cast<int>(plan.size());  // planned, no file yet
  if (summary.runs.empty()) {
    throw std::runtime_error(o.runs_dir + ": no runs besides the baselines" +
                             (summary.planned_waiting > 0
                                  ? " have ended (" + std::to_string(summary.planned_waiting) + " planned, not ended)"
                                  : std::string()));
  }
  tally.sum_up(summary);
  seed_spread(o, summary);
  evaluation_scatter(o, summary);
  return summary;
}
}  // namespace trainsim::measure
