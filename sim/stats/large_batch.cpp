#include "stats/large_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "stats/mccandlish.h"
#include "stats/pace_probe.h"

namespace trainsim {

std::string short_number(double value) {
  char buffer[32];
  if (std::fabs(value) >= 100 && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3g", value);
  }
  return buffer;
}

namespace {

// "64x" or "0.125x": the batch relative to the baseline's.
std::string times(double ratio) { return short_number(ratio) + "x"; }

double lerp(double a, double b, double t) { return a + (b - a) * t; }

// ys at `at` along the table (xs, ys), xs non-decreasing: linear between its points (where points
// share an x, the last of them), the end values outside [xs.front(), xs.back()].
double along(const std::vector<double>& xs, const std::vector<double>& ys, double at) {
  const size_t hi = static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), at) - xs.begin());
  if (hi == 0) return ys.front();
  if (hi == xs.size()) return ys.back();
  return lerp(ys[hi - 1], ys[hi], (at - xs[hi - 1]) / (xs[hi] - xs[hi - 1]));
}

}  // namespace

BaselineCurve::BaselineCurve(const TrainingCurve& curve, int num_classes)
    : curve_(curve), num_classes_(num_classes), untrained_loss_(std::log(static_cast<double>(num_classes))) {
  if (curve_.epochs.empty()) {
    throw std::invalid_argument("BaselineCurve: the training curve for " + curve_.model + " has no epochs");
  }
  if (num_classes < 2) throw std::invalid_argument("BaselineCurve: num_classes must be >= 2");
  if (curve_.batch < 1 || curve_.train_samples < 1) {
    throw std::invalid_argument("BaselineCurve: batch and train_samples must be >= 1");
  }
  const double chance = 1.0 / num_classes_;
  loss_ = {{0, untrained_loss_}};
  train_accuracy_ = {{0, chance}};
  // A window's mean is the loss at its middle (exact for a loss linear over the window).
  const auto add_window = [&](double end, double window, double loss, double accuracy) {
    const double middle = end - 0.5 * window;
    if (middle <= loss_.back().examples) return;
    loss_.push_back({middle, loss});
    train_accuracy_.push_back({middle, accuracy});
  };
  // The samples inside the first epoch, where the curve moves fastest; after it the epochs' own
  // means, whose windows are long enough that their noise (a 1/20-epoch window's mean loss varies
  // by a few hundredths) stays below the curve's change. The noise scale and eps_max count from
  // their first readings: each is a ratio of two moving averages that the same steps feed, so the
  // averages' start-up bias cancels and an early reading is unbiased, only noisier (least so at
  // the start, where B_noise << B); and the first steps are where the curve moves fastest and the
  // no-progress bound is lowest.
  // A B_noise reading enters as a knot, NaN unless it counts (measured, with a standard error of at
  // most kMaxNoiseScaleRelativeError of it): points measured before the first reading carry none.
  const auto add_curvature_noise_scale = [&](double examples, double value, double se) {
    const bool counts = value > 0 && se > 0 && se <= kMaxNoiseScaleRelativeError * value;
    if (value > 0 || !curvature_noise_scale_.empty()) {
      curvature_noise_scale_.push_back({examples, counts ? value : std::nan("")});
    }
  };
  const double first_epoch = curve_.epochs.front().examples;
  double previous = 0;
  for (const CurveSample& s : curve_.samples) {
    if (s.examples > first_epoch) break;
    add_window(s.examples, s.window_examples, s.train_loss, s.train_accuracy);
    if (s.examples < first_epoch) {  // the epoch's end is epoch 1's point
      if (s.noise_scale > 0) noise_scale_.push_back({s.examples, s.noise_scale});
      if (s.max_lr > 0) max_lr_.push_back({s.examples, s.max_lr});
      add_curvature_noise_scale(s.examples, s.curvature_noise_scale, s.curvature_noise_scale_se);
    }
    previous = s.examples;
  }
  // An epoch's readings after the first epoch: the samples inside it (after `from`, the previous
  // epoch's end) and the one at its end, each passed to `visit` with its position; a reading is a
  // CurveSample or the EpochPoint, which name the test accuracy and the probe alike.
  const auto epoch_readings = [&](double from, const EpochPoint& e, const auto& visit) {
    for (const CurveSample& s : curve_.samples) {
      if (s.examples > from && s.examples < e.examples) visit(s.examples, s);
    }
    visit(e.examples, e);
  };
  // The test accuracy (`field` of a reading: eval mode's, or with BatchNorm's statistics recomputed;
  // < 0: not evaluated) from the untrained model's chance on: each evaluation in the first epoch,
  // after it, as the loss, each epoch's mean. A single evaluation varies by a few points from one to
  // the next (fashion-cnn-gap at momentum 0.9: 70% to 81% within epoch 3) while the curve moves by
  // less than that in an epoch, and the run it predicts is one more such draw, whose expectation is
  // what can be predicted. The mean of the epoch's evaluations (the samples inside it and the one at
  // its end) sits at their mean position; an epoch evaluated only at its end keeps that one reading.
  // Empty where never evaluated.
  const auto accuracy_knots = [&](const auto& field) {
    std::vector<Knot> knots = {{0, chance}};
    for (const CurveSample& s : curve_.samples) {
      if (s.examples >= first_epoch) break;
      if (field(s) >= 0) knots.push_back({s.examples, field(s)});
    }
    double from = 0;
    for (const EpochPoint& e : curve_.epochs) {
      if (e.examples <= first_epoch) {
        if (field(e) >= 0) knots.push_back({e.examples, field(e)});
      } else {
        double sum = 0, where = 0;
        int n = 0;
        epoch_readings(from, e, [&](double examples, const auto& reading) {
          if (field(reading) < 0) return;
          sum += field(reading);
          where += examples;
          ++n;
        });
        if (n > 0 && where / n > knots.back().examples) knots.push_back({where / n, sum / n});
      }
      from = e.examples;
    }
    if (knots.size() == 1) knots.clear();
    return knots;
  };
  test_accuracy_ = accuracy_knots([](const auto& reading) { return reading.test_accuracy; });
  test_accuracy_recomputed_ = accuracy_knots([](const auto& reading) { return reading.test_accuracy_recomputed; });
  for (const EpochPoint& e : curve_.epochs) {
    if (e.examples > previous) add_window(e.examples, e.examples - previous, e.train_loss, e.train_accuracy);
    if (e.noise_scale > 0) noise_scale_.push_back({e.examples, e.noise_scale});
    if (e.max_lr > 0) max_lr_.push_back({e.examples, e.max_lr});
    if (e.trace_sigma > 0) trace_sigma_.push_back({e.examples, e.trace_sigma});
    add_curvature_noise_scale(e.examples, e.curvature_noise_scale, e.curvature_noise_scale_se);
    previous = e.examples;
  }
  // The BatchNorm probe as the test accuracy: each reading in the first epoch, then each epoch's
  // mean of its readings at their mean position. Its batches as -1/b, ascending with b.
  const size_t probe_size = curve_.probe_batches.size();
  for (const int64_t b : curve_.probe_batches) probe_inverse_batches_.push_back(-1.0 / static_cast<double>(b));
  const auto probed = [&](const std::vector<double>& loss) { return probe_size >= 2 && loss.size() == probe_size; };
  for (const CurveSample& s : curve_.samples) {
    if (s.examples < first_epoch && probed(s.probe_loss)) probe_.push_back({s.examples, s.probe_loss});
  }
  double epoch_start = 0;
  for (const EpochPoint& e : curve_.epochs) {
    ProbeKnot mean{0, std::vector<double>(probe_size, 0.0)};
    int n = 0;
    const auto add = [&](double examples, const auto& reading) {
      if (!probed(reading.probe_loss)) return;
      mean.examples += examples;
      for (size_t i = 0; i < probe_size; ++i) mean.loss[i] += reading.probe_loss[i];
      ++n;
    };
    if (e.examples > first_epoch) {
      epoch_readings(epoch_start, e, add);
    } else {
      add(e.examples, e);
    }
    epoch_start = e.examples;
    if (n == 0) continue;
    mean.examples /= n;
    for (double& l : mean.loss) l /= n;
    if (probe_.empty() || mean.examples > probe_.back().examples) probe_.push_back(std::move(mean));
  }
  // The scale-invariant parameters: every sample's readings where the samples carry them, else the
  // epochs'; the update (a mean over the window, or the epoch) at the window's middle.
  const auto add_scale_invariant = [&](double end, double window, double weight_sq, double update_sq, double trace) {
    if (!(weight_sq > 0)) return;
    if (si_weight_sq_.empty() || end > si_weight_sq_.back().examples) {
      si_weight_sq_.push_back({end, weight_sq});
      si_trace_sigma_.push_back({end, trace});
    }
    const double middle = end - 0.5 * window;
    if (si_update_sq_.empty() || middle > si_update_sq_.back().examples) si_update_sq_.push_back({middle, update_sq});
  };
  double window_start = 0;
  for (const CurveSample& s : curve_.samples) {
    add_scale_invariant(s.examples, s.window_examples, s.si_weight_sq, s.si_update_sq, s.si_trace_sigma);
  }
  if (si_weight_sq_.empty()) {
    for (const EpochPoint& e : curve_.epochs) {
      add_scale_invariant(e.examples, e.examples - window_start, e.si_weight_sq, e.si_update_sq, e.si_trace_sigma);
      window_start = e.examples;
    }
  }
  for (const CurveSample& s : curve_.samples) {
    if (s.test_accuracy >= 0) last_evaluated_ = std::max(last_evaluated_, s.examples);
  }
  for (const EpochPoint& e : curve_.epochs) {
    if (e.test_accuracy >= 0) last_evaluated_ = std::max(last_evaluated_, e.examples);
  }
}

std::optional<BaselineCurve::ScaleInvariant> BaselineCurve::scale_invariant_at(double examples) const {
  if (si_weight_sq_.empty()) return std::nullopt;
  return ScaleInvariant{interpolate(si_weight_sq_, examples), interpolate(si_update_sq_, examples),
                        interpolate(si_trace_sigma_, examples)};
}

double BaselineCurve::interpolate(const std::vector<Knot>& knots, double examples) {
  if (knots.empty()) return 0;
  if (examples <= knots.front().examples) return knots.front().value;
  if (examples >= knots.back().examples) return knots.back().value;
  const auto next = std::upper_bound(knots.begin(), knots.end(), examples,
                                     [](double e, const Knot& k) { return e < k.examples; });
  const Knot& a = *(next - 1);
  const Knot& b = *next;
  return lerp(a.value, b.value, (examples - a.examples) / (b.examples - a.examples));
}

BaselineCurve::Point BaselineCurve::at(double examples) const {
  Point p;
  p.examples = std::clamp(examples, 0.0, last_examples());
  p.loss = interpolate(loss_, p.examples);
  p.train_accuracy = interpolate(train_accuracy_, p.examples);
  // Not beyond the last evaluation (a later epoch without a test set).
  if (!test_accuracy_.empty() && p.examples <= last_evaluated_) {
    p.test_accuracy = interpolate(test_accuracy_, p.examples);
    if (!test_accuracy_recomputed_.empty()) p.test_accuracy_recomputed = interpolate(test_accuracy_recomputed_, p.examples);
  }
  p.noise_scale = noise_scale_at(p.examples);
  p.before_first_point = loss_.size() < 2 || p.examples < loss_[1].examples;
  return p;
}

double BaselineCurve::noise_scale_at(double examples) const {
  return interpolate(noise_scale_, std::clamp(examples, 0.0, last_examples()));
}

std::optional<double> BaselineCurve::max_lr_at(double examples) const {
  if (max_lr_.empty()) return std::nullopt;
  return interpolate(max_lr_, std::clamp(examples, 0.0, last_examples()));
}

bool BaselineCurve::has_curvature_noise_scale() const {
  return std::any_of(curvature_noise_scale_.begin(), curvature_noise_scale_.end(),
                     [](const Knot& k) { return !std::isnan(k.value); });
}

std::optional<double> BaselineCurve::curvature_noise_scale_at(double examples) const {
  if (curvature_noise_scale_.empty()) return std::nullopt;
  // interpolate() mixes in a NaN knot wherever one is at either end of the segment.
  const double value = interpolate(curvature_noise_scale_, std::clamp(examples, 0.0, last_examples()));
  if (std::isnan(value)) return std::nullopt;
  return value;
}

double BaselineCurve::probe_loss_at_batch(const std::vector<double>& losses, double bn_batch) const {
  return along(probe_inverse_batches_, losses, -1.0 / bn_batch);  // linear in 1/b
}

std::optional<double> BaselineCurve::batchnorm_gap_at(double examples, double bn_batch) const {
  if (probe_.empty() || !(bn_batch > 0)) return std::nullopt;
  const double own = static_cast<double>(curve_.small_batch);
  const auto gap = [&](const ProbeKnot& k) {
    return probe_loss_at_batch(k.loss, own) - probe_loss_at_batch(k.loss, bn_batch);
  };
  examples = std::clamp(examples, 0.0, last_examples());
  if (examples <= probe_.front().examples) return gap(probe_.front());
  if (examples >= probe_.back().examples) return gap(probe_.back());
  const auto next = std::upper_bound(probe_.begin(), probe_.end(), examples,
                                     [](double e, const ProbeKnot& k) { return e < k.examples; });
  const ProbeKnot& a = *(next - 1);
  const ProbeKnot& b = *next;
  return lerp(gap(a), gap(b), (examples - a.examples) / (b.examples - a.examples));
}

std::optional<double> BaselineCurve::examples_to_loss(double loss, std::optional<double> bn_batch) const {
  // The loss at a knot as the run records it.
  const auto value = [&](const Knot& k) {
    return k.value - (bn_batch ? batchnorm_gap_at(k.examples, *bn_batch).value_or(0) : 0.0);
  };
  if (value(loss_.front()) <= loss) return 0.0;
  for (size_t i = 1; i < loss_.size(); ++i) {
    const double b = value(loss_[i]);
    if (b <= loss) {
      // The knot before is above `loss`, this one at or below it: the crossing lies in this segment.
      const double a = value(loss_[i - 1]);
      return lerp(loss_[i - 1].examples, loss_[i].examples, (a - loss) / (a - b));
    }
  }
  return std::nullopt;
}

std::optional<double> BaselineCurve::examples_to_test_accuracy(double accuracy) const {
  if (test_accuracy_.empty()) return std::nullopt;
  if (test_accuracy_.front().value >= accuracy) return 0.0;
  for (size_t i = 1; i < test_accuracy_.size() && test_accuracy_[i].examples <= last_evaluated_; ++i) {
    const Knot& b = test_accuracy_[i];
    if (b.value >= accuracy) {
      // The knot before is below `accuracy`, this one at or above it: the crossing is in this segment.
      const Knot& a = test_accuracy_[i - 1];
      return lerp(a.examples, b.examples, (accuracy - a.value) / (b.value - a.value));
    }
  }
  return std::nullopt;
}

std::optional<double> BaselineCurve::best_test_accuracy() const {
  if (test_accuracy_.empty()) return std::nullopt;
  double best = 0;
  for (const Knot& k : test_accuracy_) best = std::max(best, k.value);
  return best;
}

std::optional<double> BaselineCurve::examples_at_loss_from(double from, double loss) const {
  from = std::clamp(from, 0.0, last_examples());
  const size_t next = static_cast<size_t>(
      std::upper_bound(loss_.begin(), loss_.end(), from, [](double e, const Knot& k) { return e < k.examples; }) -
      loss_.begin());  // the first knot after `from`
  const Knot here{from, interpolate(loss_, from)};
  if (loss == here.value) return from;
  if (loss < here.value) {
    Knot a = here;  // going on: the first segment whose later end is at or below `loss` (a is above it)
    for (size_t i = next; i < loss_.size(); ++i) {
      if (loss_[i].value <= loss) {
        return lerp(a.examples, loss_[i].examples, (a.value - loss) / (a.value - loss_[i].value));
      }
      a = loss_[i];
    }
    return std::nullopt;
  }
  Knot b = here;  // going back: the last segment whose earlier end is at or above `loss` (b is below it)
  for (size_t i = next; i-- > 0;) {
    if (loss_[i].value >= loss) {
      return lerp(b.examples, loss_[i].examples, (loss - b.value) / (loss_[i].value - b.value));
    }
    b = loss_[i];
  }
  return 0.0;
}

std::optional<double> BaselineCurve::trace_sigma_at(double examples) const {
  if (trace_sigma_.empty()) return std::nullopt;
  return interpolate(trace_sigma_, std::clamp(examples, 0.0, last_examples()));
}

bool BaselineCurve::never_trained() const {
  return std::all_of(curve_.epochs.begin(), curve_.epochs.end(),
                     [&](const EpochPoint& e) { return e.train_loss >= untrained_loss_; });
}

std::vector<std::vector<BaselineCurve::Window>> BaselineCurve::untrained_stretches() const {
  // Every window the baseline recorded, past the first epoch too: an epoch's mean can hide where
  // a stall ends inside it.
  std::vector<Window> windows;
  if (curve_.samples.empty()) {
    for (auto k = loss_.begin() + 1; k != loss_.end(); ++k) windows.push_back({k->examples, k->value});
  } else {
    for (const CurveSample& s : curve_.samples) windows.push_back({s.examples - 0.5 * s.window_examples, s.train_loss});
  }
  std::vector<std::vector<Window>> stretches;
  std::vector<Window> current;
  for (const Window& w : windows) {
    if (w.loss >= untrained_loss_) {
      current.push_back(w);
      continue;
    }
    if (current.size() >= 2) stretches.push_back(current);
    current.clear();
  }
  if (current.size() >= 2) stretches.push_back(current);
  return stretches;
}

PastBoundReading read_past_bound(PastBound past_bound, const std::optional<StartCurvature>& start) {
  PastBoundReading r;
  switch (past_bound) {
    case PastBound::kNoProgress:
      r.reason = "the plain bound, as asked: past 2x the tuned lr a step raises the loss";
      break;
    case PastBound::kEdge:
      r.at_the_edge = true;
      r.reason = "the edge of stability, as asked: an lr above the tuned one progresses as at it";
      break;
    case PastBound::kFromStart:
      if (!start) {
        r.reason = "the plain bound: the baseline's curvature at its start was not measured";
      } else if (start->rest_lr_over_eps_max && *start->rest_lr_over_eps_max > LargeBatchModel::kNoProgressLrRatio) {
        r.reason = "the plain bound: at the baseline's start its parameters that are not scale-invariant are " +
                   short_number(*start->rest_lr_over_eps_max) +
                   "x past their eps_max (past 2, and nothing lets them grow out of a step too large)";
      } else {
        r.at_the_edge = true;
        r.start_x = start->rest_lr_over_eps_max;
        r.reason = "the edge of stability: at the baseline's start " +
                   (start->rest_lr_over_eps_max
                        ? "its parameters that are not scale-invariant are within their bound (lr / eps_max " +
                              short_number(*start->rest_lr_over_eps_max) + ")"
                        : std::string("every parameter is scale-invariant")) +
                   ", the steep part in the " + std::to_string(start->scale_invariant) + " of " +
                   std::to_string(start->parameters) + " parameter tensors BatchNorm normalises";
      }
      break;
  }
  return r;
}

LargeBatchModel::LargeBatchModel(const TrainingCurve& curve, int num_classes, const LargeBatchSettings& settings)
    : baseline_(curve, num_classes), settings_(settings) {
  if (settings.epochs < 1) throw std::invalid_argument("LargeBatchModel: epochs must be >= 1");
  past_bound_ = read_past_bound(settings.past_bound, baseline_.curve().start_curvature);
  read_pace_probe();
  if (!(settings.warmup_epochs >= 0) || !std::isfinite(settings.warmup_epochs)) {
    throw std::invalid_argument("LargeBatchModel: warmup_epochs must be finite and >= 0");
  }
  if (settings.target_accuracy && !(*settings.target_accuracy > 0 && *settings.target_accuracy <= 1)) {
    throw std::invalid_argument("LargeBatchModel: target_accuracy must be in (0, 1]");
  }
  if (settings.target_loss) {
    if (!(*settings.target_loss > 0)) throw std::invalid_argument("LargeBatchModel: target_loss must be > 0");
    target_loss_ = *settings.target_loss;
    target_source_ = "large_batch.target_loss";
    return;
  }
  const TrainingCurve& c = baseline_.curve();
  if (static_cast<size_t>(settings.epochs) <= c.epochs.size() &&
      c.epochs[static_cast<size_t>(settings.epochs) - 1].epoch == settings.epochs) {
    target_loss_ = c.epochs[static_cast<size_t>(settings.epochs) - 1].train_loss;
    target_source_ = "the baseline's mean loss in epoch " + std::to_string(settings.epochs);
  } else {
    target_loss_ = c.epochs.back().train_loss;
    target_source_ = "the baseline's mean loss in its last epoch (" + std::to_string(c.epochs.back().epoch) +
                     "; it ran fewer than " + std::to_string(settings.epochs) + " epochs)";
  }
}

void LargeBatchModel::read_pace_probe() {
  const TrainingCurve& c = baseline_.curve();
  if (!settings_.pace_probe) {
    pace_reason_ = "the pace probe not used (off: large_batch.pace_probe in a config, LargeBatchSettings::pace_probe)";
    return;
  }
  if (c.pace_probe.empty()) {
    pace_reason_ = "no pace probe in the baseline (measure baseline --pace-probe-at)";
    return;
  }
  // The first state with two pairs that each kept a gain: its first two such pairs.
  std::vector<const PaceProbeReading*> pairs;
  for (const PaceProbeReading& r : c.pace_probe) {
    if (!pairs.empty() && r.examples != pairs.front()->examples) {
      if (pairs.size() >= 2) break;
      pairs.clear();
    }
    if (!r.gains.empty() && pairs.size() < 2) pairs.push_back(&r);
  }
  if (pairs.size() < 2) {
    pace_reason_ = "the baseline's pace probe has no state with two pairs that each kept a gain";
    return;
  }
  const PaceProbeReading& a = *pairs[0];
  const PaceProbeReading& b = *pairs[1];
  const double gain_a = *geometric_mean(a.gains);
  const double gain_b = *geometric_mean(b.gains);
  const auto pair_text = [](const PaceProbeReading& r, double gain) {
    return short_number(static_cast<double>(r.ratio)) + "x the batch at " + short_number(r.lr_ratio) + "x the lr " +
           short_number(gain);
  };
  const std::string at = "the pace probe after " + short_number(a.examples) + " examples (gains " +
                         pair_text(a, gain_a) + ", " + pair_text(b, gain_b) + ")";
  const std::optional<StepEquationCoefficients> solved = solve_step_equation(
      static_cast<double>(a.ratio), a.lr_ratio, gain_a, static_cast<double>(b.ratio), b.lr_ratio, gain_b);
  if (!solved) {
    pace_reason_ = at + " solves to no step-equation coefficients (alpha > 0, nu >= 0, alpha + nu < 2): not used";
    return;
  }
  PaceScale scale;
  scale.examples = a.examples;
  scale.alpha = solved->alpha;
  scale.nu = solved->nu;
  // The measured x_0, past the bound too: scaled by k_x it is the probe's at the probed state.
  scale.model_x0 = baseline_lr_over_tuned(a.examples, baseline_.noise_scale_at(a.examples));
  scale.model_noise_scale = batch_noise_scale_at(a.examples);
  if (!(scale.model_noise_scale > 0)) {
    pace_reason_ = at + ": the curve has no noise scale there to scale (B_n " + short_number(scale.model_noise_scale) +
                   "): not used";
    return;
  }
  scale.k_x = solved->x0() / scale.model_x0;
  scale.k_n = solved->noise_scale(static_cast<double>(c.batch)) / scale.model_noise_scale;
  pace_reason_ = at + ": alpha " + short_number(scale.alpha) + ", nu " + short_number(scale.nu) + ", so x_0 " +
                 short_number(solved->x0()) + " (the single-step statistics' " + short_number(scale.model_x0) +
                 ") and B_n " + short_number(solved->noise_scale(static_cast<double>(c.batch))) + " (theirs " +
                 short_number(scale.model_noise_scale) + "): the path's x_0 times " + short_number(scale.k_x) +
                 " and its B_n times " + short_number(scale.k_n) + " throughout";
  pace_scale_ = scale;
}

double LargeBatchModel::lr_ratio_at(double examples, double batch) const {
  const double b0 = static_cast<double>(baseline_.curve().batch);
  const double full = lr_ratio(settings_.lr_rule, batch, b0);
  if (settings_.lr_rule != LrRule::kLinearWarmup || settings_.warmup_epochs <= 0) return full;
  // measure's ramp: lr_0 + (lr_target - lr_0) t / W over the first warmup_epochs.
  const double ramp = examples / (settings_.warmup_epochs * static_cast<double>(baseline_.curve().train_samples));
  return ramp >= 1 ? full : 1 + (full - 1) * ramp;
}

std::optional<double> LargeBatchModel::momentum_floor_gap(double examples, double baseline_examples,
                                                          double batch) const {
  const TrainingCurve& c = baseline_.curve();
  const std::optional<double> trace = baseline_.trace_sigma_at(baseline_examples);
  if (!settings_.momentum_floor || !(c.momentum > 0) || !(c.momentum < 1) || !trace) return std::nullopt;
  const double b0 = static_cast<double>(c.batch);
  return c.momentum / (1 - c.momentum) * *trace / 4 * c.lr * (1 / b0 - lr_ratio_at(examples, batch) / batch);
}

double lr_over_tuned_lr(double lr, double batch, double noise_scale, double eps_max) {
  return lr * (1 + noise_scale / batch) / eps_max;
}

double LargeBatchModel::lr_over_tuned(double examples, double batch, double noise_scale, double x0,
                                      std::optional<double> lr_ratio) const {
  const double b0 = static_cast<double>(baseline_.curve().batch);
  // x = (lr_B / lr_0) (1 + B_n/B) / (1 + B_n/B_0) x_0: the rule's lr against the baseline's.
  return lr_ratio.value_or(lr_ratio_at(examples, batch)) * (1 + noise_scale / batch) / (1 + noise_scale / b0) * x0;
}

std::optional<double> LargeBatchModel::weight_sq_rate(double examples, double baseline_examples, double batch,
                                                      double weight_sq) const {
  const TrainingCurve& c = baseline_.curve();
  const std::optional<BaselineCurve::ScaleInvariant> base = baseline_.scale_invariant_at(baseline_examples);
  if (!settings_.scale_invariant_norm || !base || !(c.momentum < 1) || !(weight_sq > 0)) return std::nullopt;
  const double m = c.momentum;
  const double b0 = static_cast<double>(c.batch);
  // The baseline's |v|^2 is its gradients' coherent part plus their noise, sum_j m^(2j) tr(Sigma) /
  // B_0; both scale as 1 / |w|^2 (a scale-invariant weight's gradient as 1 / |w|), the noise as 1 / B.
  const double noise = base->trace_sigma / (1 - m * m);
  const double coherent = std::max(0.0, base->update_sq - noise / b0);
  const double update_sq = (coherent + noise / batch) * base->weight_sq / weight_sq;
  const double lr = c.lr * lr_ratio_at(examples, batch);
  // Heavy-ball SGD with weight decay on a weight whose gradient is orthogonal to it, per step:
  // |w|^2 grows by lr^2 (1 + m) / (1 - m) |v|^2 - 2 lr wd |w|^2 / (1 - m) (w . v in its steady state).
  const double per_step = lr * lr * (1 + m) / (1 - m) * update_sq - 2 * lr * c.weight_decay * weight_sq / (1 - m);
  return per_step / batch;
}

double LargeBatchModel::batch_noise_scale_at(double baseline_examples) const {
  const std::optional<double> curvature =
      settings_.curvature_noise_scale ? baseline_.curvature_noise_scale_at(baseline_examples) : std::nullopt;
  return curvature.value_or(baseline_.noise_scale_at(baseline_examples)) * (pace_scale_ ? pace_scale_->k_n : 1.0);
}

double LargeBatchModel::baseline_lr_over_tuned(double baseline_examples, double noise_scale) const {
  const TrainingCurve& c = baseline_.curve();
  const auto eps_max = baseline_.max_lr_at(baseline_examples);
  const double k_x = pace_scale_ ? pace_scale_->k_x : 1.0;
  if (!eps_max || !(c.lr > 0)) return k_x;
  return lr_over_tuned_lr(c.lr, static_cast<double>(c.batch), noise_scale, *eps_max) * k_x;
}

double LargeBatchModel::path_lr_over_tuned(double baseline_examples, double noise_scale) const {
  const double x0 = baseline_lr_over_tuned(baseline_examples, noise_scale);
  return x0 < kNoProgressLrRatio ? x0 : 1;
}

std::vector<LargeBatchModel::Stall> LargeBatchModel::baseline_stalls() const {
  std::vector<Stall> stalls;
  for (const auto& stretch : baseline_.untrained_stretches()) {
    Stall stall;
    bool rose = false, past_bound = false;
    std::vector<double> at_chance;
    for (const BaselineCurve::Window& w : stretch) {
      double x0 = baseline_lr_over_tuned(w.examples, baseline_.noise_scale_at(w.examples));
      past_bound = past_bound || x0 >= kNoProgressLrRatio;
      if (w.loss >= kRisenLossRatio * baseline_.untrained_loss()) {
        // The loss rose: x_0 was at least the bound here, whatever eps_max and B_simple read.
        rose = true;
        x0 = std::max(x0, kNoProgressLrRatio);
        at_chance.clear();  // the stall is what follows the rise
      } else {
        at_chance.push_back(w.examples);
      }
      stall.points.push_back({w.examples, batch_noise_scale_at(w.examples), x0});
    }
    if ((!rose && !past_bound) || at_chance.size() < 2) continue;
    stall.from = at_chance.front();
    stall.to = at_chance.back();
    stall.evidence = rose ? "its loss rose past twice the untrained " + short_number(baseline_.untrained_loss()) +
                                " there: its own lr was past the bound"
                          : "its own measured lr was past the bound there";
    stalls.push_back(std::move(stall));
  }
  return stalls;
}

// One call of predict(): the run's setting, and the path it follows on the baseline's curve.
//
// The path E_0(E_B) (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training",
// section 2): one SGD step of lr eps changes the expected loss by -eps |G|^2 + eps^2/2 (G^T H G +
// tr(H Sigma)/B). At eps = x eps_opt(B), eps_opt(B) = eps_max / (1 + B_n/B), it is
// |G|^2 eps_opt(B) (2x - x^2) / 2. Per example, against the baseline's step at x_0: dE_0/dE_B =
// (B_n + B_0) / (B_n + B) (2x - x^2) / (2x_0 - x_0^2), with B_n the baseline's noise scale
// (batch_noise_scale_at) and eps_max its measured one where the path is (x_0 = 1 where eps_max
// was not measured or puts x_0 past the bound: the baseline's lr taken as tuned). Past x = 2 the
// expected loss rises: no progress.
//
// The equation is integrated over E_0, the baseline's examples, as dE_B/dE_0 = (B_n + B) / (B_n +
// B_0) (2x_0 - x_0^2) / (2x - x^2): where the measured x_0 nears the bound the baseline's steps
// were worth almost nothing and the run covers that stretch of its curve in almost no examples,
// a slope near 0. Integrated over E_B the same stretch was a rate near infinity, which one step
// jumped past by an amount that depended on where it landed, so the predictions jumped with B.
class LargeBatchModel::Run {
 public:
  Run(const LargeBatchModel& model, int64_t batch, std::optional<double> bn_batch);
  LargeBatchPrediction predict();

 private:
  // The scale-invariant weights' |w|^2 (both 0: not modelled).
  struct Norms {
    double run = 0;       // the run's |w|^2
    double baseline = 0;  // the baseline's, modelled
  };
  struct Skip {
    double e_b;     // where the path passed the stall
    double length;  // the stall's length in E_0
    const Stall* stall;
  };

  double batchnorm_gap(double e_0) const;
  std::optional<double> effective_lr_ratio(double e_b, const Norms& w) const;
  Norms weight_slope(double e_0, double e_b, const Norms& w, double slope_b) const;
  double slope(double e_0, double e_b, const Norms& w, double* x_out);
  bool within_bound_over(const Stall& stall, double e_b) const;
  std::optional<double> state(double e_b, double e_0) const;
  bool past(double goal, double e_b, double e_0) const;
  static Norms advance(const Norms& w, const Norms& rate, double by);
  void note_start();
  void follow_path();
  std::optional<double> reached_at(double goal) const;
  LargeBatchPrediction no_progress();
  void note_bound_and_stalls();
  double path_at(double at) const;
  std::optional<double> read_at(double at) const;
  Norms norms_at(double at) const;
  void read_epochs();
  void note_weights_and_momentum();
  void read_epoch_k();
  void read_target_accuracy();
  void read_target_loss();

  const LargeBatchModel& m_;
  const BaselineCurve& baseline_;
  const LargeBatchSettings& settings_;
  const TrainingCurve& c_;
  LargeBatchPrediction p_;
  double b_, b0_, n_, k_examples_;
  // How much lower the run records its loss than the baseline, on the same weights, for its
  // BatchNorm batch: modelled or not.
  bool batchnorm_ = false;
  std::string batch_text_, rule_, measured_;
  // The scale-invariant weights' norm: the run's |w|^2 starts at the baseline's first reading and
  // grows by the run's own steps (weight_sq_rate); the baseline's is modelled alike, from the same
  // start by its own steps, so that the baseline batch reproduces the baseline. x reads the run's
  // lr / |w|^2 over the baseline's where the path is. Not modelled: the lr ratio.
  std::optional<BaselineCurve::ScaleInvariant> si_start_;
  std::vector<Stall> stalls_;
  std::optional<double> e0_target_;    // the E_0 of the baseline's first crossing of the target loss
  std::optional<double> e0_accuracy_;  // the first E_0 where the baseline's test accuracy reaches the target
  double end_ = 0;                     // the baseline curve's last E_0
  double d0_ = 0;                      // the integration's step in E_0
  // The path: E_B at E_0, both increasing, and the norms along it (as path_eb_).
  std::vector<double> path_e0_{0.0}, path_eb_{0.0}, path_w_run_, path_w_baseline_;
  double e_0_ = 0, e_b_ = 0;  // where it ended
  Norms w_b_;
  double max_raw_x_ = 0;      // the largest x before epoch k, before the edge's reading of it
  double diverged_at_ = -1;   // E_B where x passed the bound
  std::vector<Skip> skipped_;
  double end_rate_ = 0;       // dE_0/dE_B past the path's end
  double train_accuracy_ = 0;  // the mean over the last epoch read
  double lr_ratio_k_ = 0;      // the rule's lr over the baseline's at epoch k
};

LargeBatchModel::Run::Run(const LargeBatchModel& model, int64_t batch, std::optional<double> bn_batch)
    : m_(model), baseline_(model.baseline_), settings_(model.settings_), c_(model.baseline_.curve()) {
  p_.batch = batch;
  p_.lr_rule = settings_.lr_rule;
  b_ = static_cast<double>(batch);
  b0_ = static_cast<double>(c_.batch);
  p_.bn_batch = bn_batch.value_or(b_ * static_cast<double>(c_.small_batch) / b0_);
  batchnorm_ = settings_.batchnorm_gap && baseline_.has_batchnorm_probe();
  n_ = static_cast<double>(c_.train_samples);
  k_examples_ = settings_.epochs * n_;
  batch_text_ = times(b_ / b0_) + " the baseline batch (" + std::to_string(c_.batch) + ")";
  rule_ = to_string(settings_.lr_rule);
  measured_ = std::to_string(c_.epochs.back().epoch) + " epochs measured";
}

double LargeBatchModel::Run::batchnorm_gap(double e_0) const {
  return batchnorm_ ? *baseline_.batchnorm_gap_at(e_0, p_.bn_batch) : 0.0;
}

std::optional<double> LargeBatchModel::Run::effective_lr_ratio(double e_b, const Norms& w) const {
  if (!si_start_) return std::nullopt;
  return m_.lr_ratio_at(e_b, b_) * w.baseline / w.run;
}

// d|w|^2/dE_0 of the run (d|w|^2/dE_B dE_B/dE_0) and of the baseline.
LargeBatchModel::Run::Norms LargeBatchModel::Run::weight_slope(double e_0, double e_b, const Norms& w,
                                                              double slope_b) const {
  if (!si_start_ || !std::isfinite(slope_b)) return {};
  return {m_.weight_sq_rate(e_b, e_0, b_, w.run).value_or(0) * slope_b,
          m_.weight_sq_rate(e_0, e_0, b0_, w.baseline).value_or(0)};
}

// dE_B/dE_0 where the path is; x there into *x_out.
double LargeBatchModel::Run::slope(double e_0, double e_b, const Norms& w, double* x_out) {
  const double noise = m_.batch_noise_scale_at(e_0);
  const double x0 = m_.path_lr_over_tuned(e_0, baseline_.noise_scale_at(e_0));
  // At the edge of stability an lr above the tuned one progresses as at it.
  const double raw = m_.lr_over_tuned(e_b, b_, noise, x0, effective_lr_ratio(e_b, w));
  const double x = m_.past_bound_.at_the_edge ? std::min(raw, 1.0) : raw;
  if (e_b <= k_examples_) max_raw_x_ = std::max(max_raw_x_, raw);
  *x_out = x;
  const double run = 2 * x - x * x;
  return run > 0 ? (noise + b_) / (noise + b0_) * (2 * x0 - x0 * x0) / run : std::numeric_limits<double>::infinity();
}

// A stall of the baseline (its own lr past the bound kept it at chance) is not progress another
// run has to repeat: a path that reaches it with the run's own x below the bound at every point
// of it goes past it at once; where the run's x reaches the bound there (the baseline's own lr
// does), the path goes in and follows the baseline through it.
bool LargeBatchModel::Run::within_bound_over(const Stall& stall, double e_b) const {
  return std::all_of(stall.points.begin(), stall.points.end(), [&](const StallPoint& point) {
    return m_.lr_over_tuned(e_b, b_, point.noise_scale, point.x0) < kNoProgressLrRatio;
  });
}

// Where on the baseline's curve the run's loss is read, the path at E_0: its loss moved by
// momentum's noise-floor gap (lower where the run's floor is lower); E_0 itself where the gap is
// not modelled. nullopt: lower than the curve reaches after E_0.
std::optional<double> LargeBatchModel::Run::state(double e_b, double e_0) const {
  const std::optional<double> gap = m_.momentum_floor_gap(e_b, e_0, b_);
  if (!gap) return e_0;
  return baseline_.examples_at_loss_from(e_0, baseline_.at(e_0).loss - *gap);
}

// The run is past a target (the E_0 of the baseline's first crossing of it) once where it is read
// is past it (a state lower than the curve reaches after E_0 is past it). A target loss is crossed
// as the run records the loss; a target accuracy where the run is read, as its accuracy is.
bool LargeBatchModel::Run::past(double goal, double e_b, double e_0) const {
  const std::optional<double> at = state(e_b, e_0);
  return !at || *at >= goal;
}

// Kept positive (at least half the step's start).
LargeBatchModel::Run::Norms LargeBatchModel::Run::advance(const Norms& w, const Norms& rate, double by) {
  return Norms{std::max(w.run + by * rate.run, 0.5 * w.run),
               std::max(w.baseline + by * rate.baseline, 0.5 * w.baseline)};
}

// The run's own first step along the parameters that are not scale-invariant.
void LargeBatchModel::Run::note_start() {
  const std::optional<double>& start_x = m_.past_bound_.start_x;
  if (!start_x) return;
  p_.start_x = *start_x * m_.lr_ratio_at(0, b_);
  if (*p_.start_x > kNoProgressLrRatio) {
    p_.notes.push_back("catapult: " + rule_ + " lr at " + batch_text_ + " starts the parameters that are not "
                       "scale-invariant at " + short_number(*p_.start_x) + "x their eps_max (the baseline's " +
                       short_number(*start_x) + " times the run's lr over the baseline's): its first "
                       "steps throw the loss up before the curvature falls, which the prediction does not carry "
                       "(docs/LARGE_BATCH.md, \"The start of the run itself\")");
  }
}

// Integrates the path with Heun's method until epoch k and the targets are passed, the curve
// ends or x passes the bound (diverged_at_); stalls within the bound are passed at once.
void LargeBatchModel::Run::follow_path() {
  const bool looking = e0_target_ || e0_accuracy_;
  const double horizon = looking ? std::max(k_examples_, kMaxEpochs * n_) : k_examples_;  // in E_B
  w_b_ = Norms{si_start_ ? si_start_->weight_sq : 0, si_start_ ? si_start_->weight_sq : 0};
  path_w_run_ = {w_b_.run};
  path_w_baseline_ = {w_b_.baseline};
  while (e_0_ < end_ && e_b_ < horizon &&
         (e_b_ < k_examples_ || (e0_target_ && !past(*e0_target_, e_b_, e_0_)) ||
          (e0_accuracy_ && !past(*e0_accuracy_, e_b_, e_0_)))) {
    const double step = std::min(d0_, end_ - e_0_);
    double x1 = 0, x2 = 0;
    const double s1 = slope(e_0_, e_b_, w_b_, &x1);
    if (x1 > kNoProgressLrRatio || !std::isfinite(s1)) {  // at x = 2 exactly a step makes no progress either
      diverged_at_ = e_b_;
      break;
    }
    const Norms w1 = weight_slope(e_0_, e_b_, w_b_, s1);
    const Norms w_mid = advance(w_b_, w1, step);
    const double s2 = slope(e_0_ + step, e_b_ + step * s1, w_mid, &x2);  // Heun's method
    if (x2 > kNoProgressLrRatio) {
      // Where x crossed the bound within the step, x taken as linear over it.
      diverged_at_ = e_b_ + step * s1 * (kNoProgressLrRatio - x1) / (x2 - x1);
      break;
    }
    double next_0 = e_0_ + step;
    double next_b = e_b_ + 0.5 * step * (s1 + s2);
    const Norms w2 = weight_slope(e_0_ + step, e_b_ + step * s1, w_mid, s2);
    Norms next_w = advance(w_b_, {0.5 * (w1.run + w2.run), 0.5 * (w1.baseline + w2.baseline)}, step);
    for (const Stall& stall : stalls_) {
      if (next_0 >= stall.from && e_0_ < stall.to) {
        const double at = e_b_ + std::max(0.0, stall.from - e_0_) * s1;  // E_B where the path reaches it
        if (!within_bound_over(stall, at)) continue;
        // The baseline's own steps through the stall grew its norm; the run takes none there.
        for (double e = next_0; si_start_ && e < stall.to; e += d0_) {
          const double by = std::min(d0_, stall.to - e);
          next_w = advance(next_w, {0, m_.weight_sq_rate(e, e, b0_, next_w.baseline).value_or(0)}, by);
        }
        next_0 = std::max(next_0, stall.to);
        next_b = at;
        skipped_.push_back({at, stall.to - stall.from, &stall});
      }
    }
    e_0_ = next_0;
    e_b_ = next_b;
    w_b_ = next_w;
    path_e0_.push_back(e_0_);
    path_eb_.push_back(e_b_);
    path_w_run_.push_back(w_b_.run);
    path_w_baseline_.push_back(w_b_.baseline);
  }
  // Past the curve's end its readings stay as they were last; the rule's lr may still rise (a
  // warm-up) before epoch k.
  if (diverged_at_ < 0 && e_0_ >= end_) {
    for (double at = e_b_; at < k_examples_ + d0_; at += d0_) {
      double x = 0;
      (void)slope(end_, at, w_b_, &x);
      if (x > kNoProgressLrRatio) {
        diverged_at_ = at;
        break;
      }
    }
  }
}

// E_B where the path reached `goal` (an E_0): between the last point of the path before it and the
// first past it, linear in where the run is read; nullopt if it did not within kMaxEpochs.
std::optional<double> LargeBatchModel::Run::reached_at(double goal) const {
  double before = 0;
  for (size_t i = 0; i < path_eb_.size(); ++i) {
    const std::optional<double> at = state(path_eb_[i], path_e0_[i]);
    if (at && *at < goal) {
      before = *at;
      continue;
    }
    const double reached =
        i == 0 || !at ? path_eb_[i] : lerp(path_eb_[i - 1], path_eb_[i], (goal - before) / (*at - before));
    if (reached <= kMaxEpochs * n_) return reached;
    return std::nullopt;
  }
  return std::nullopt;
}

// x passed the bound before epoch k's end: the untrained model's loss and accuracy.
LargeBatchPrediction LargeBatchModel::Run::no_progress() {
  const double noise = m_.batch_noise_scale_at(path_e0_.back());
  p_.no_progress = true;
  p_.loss_at_k = baseline_.untrained_loss();
  p_.loss_by_epoch.assign(static_cast<size_t>(settings_.epochs), *p_.loss_at_k);
  p_.train_accuracy_at_k = 1.0 / baseline_.num_classes();
  if (baseline_.at(0).test_accuracy) p_.test_accuracy_at_k = 1.0 / baseline_.num_classes();
  if (baseline_.at(0).test_accuracy_recomputed) p_.test_accuracy_recomputed_at_k = 1.0 / baseline_.num_classes();
  p_.examples_to_target.reset();
  p_.target_missing = "never: no progress at this lr";
  p_.examples_to_target_accuracy.reset();
  if (settings_.target_accuracy) p_.target_accuracy_missing = p_.target_missing;
  p_.notes.push_back("no progress: " + rule_ + " lr at " + batch_text_ + " passes " +
                     short_number(kNoProgressLrRatio) + "x the tuned lr (eps_max / (1 + B_noise/B), B_noise " +
                     short_number(noise) + ") " +
                     (diverged_at_ > 0 ? "after " + short_number(diverged_at_ / n_) + " epochs"
                                       : std::string("from the start")) +
                     "; past it an SGD step raises the expected loss: loss and accuracy are the "
                     "untrained model's");
  return p_;
}

void LargeBatchModel::Run::note_bound_and_stalls() {
  if (max_raw_x_ > kNoProgressLrRatio) {
    p_.past_the_bound = true;
    p_.notes.push_back("past the bound: " + rule_ + " lr at " + batch_text_ + " reaches " + short_number(max_raw_x_) +
                       "x the tuned lr, past plain SGD's " + short_number(kNoProgressLrRatio) +
                       "x, and is read as at the tuned lr there (" + m_.past_bound_.reason + ")");
  }
  if (!skipped_.empty()) p_.stall_passed_epochs = skipped_.front().e_b / n_;
  for (const Skip& skip : skipped_) {
    p_.notes.push_back("the baseline stalled at chance for " + short_number(skip.length / n_) + " epochs (" +
                       skip.stall->evidence + "); " + rule_ + " lr at " + batch_text_ +
                       " is within the bound there: the path passes that stall at once, after " +
                       short_number(skip.e_b / n_) + " epochs");
  }
}

// E_0 at E_B: the path interpolated (where two points share an E_B, a stall passed at once, the
// later); past its end, the curve's end followed at the rate there.
double LargeBatchModel::Run::path_at(double at) const {
  return at > path_eb_.back() ? path_e0_.back() + (at - path_eb_.back()) * end_rate_ : along(path_eb_, path_e0_, at);
}

// Where the run is read after `at` examples (state above); nullopt beyond the baseline curve.
std::optional<double> LargeBatchModel::Run::read_at(double at) const {
  const double e0 = path_at(at);
  if (e0 > baseline_.last_examples()) return std::nullopt;
  return state(at, e0);
}

// The scale-invariant weights at `at` (E_B): the path's norms interpolated, the last past its end.
LargeBatchModel::Run::Norms LargeBatchModel::Run::norms_at(double at) const {
  return Norms{along(path_eb_, path_w_run_, at), along(path_eb_, path_w_baseline_, at)};
}

// Every epoch that ends within the baseline curve: the mean loss and training accuracy over its
// examples; epoch k's is loss_at_k.
void LargeBatchModel::Run::read_epochs() {
  end_rate_ = [&] {
    double x = 0;
    const double sl = slope(e_0_, e_b_, w_b_, &x);
    return sl > 0 ? 1 / sl : 0.0;
  }();
  constexpr int kEpochSamples = 64;
  for (int epoch = 1; epoch <= settings_.epochs && read_at(epoch * n_); ++epoch) {
    double loss = 0;
    train_accuracy_ = 0;
    for (int s = 0; s < kEpochSamples; ++s) {
      // Where the epoch's end is on the curve a point inside it is too; one read lower than the
      // curve goes after it (a curve that rose) is read at the curve's end.
      const std::optional<double> at = read_at((epoch - 1 + (s + 0.5) / kEpochSamples) * n_);
      const BaselineCurve::Point point = baseline_.at(at.value_or(baseline_.last_examples()));
      loss += (point.loss - batchnorm_gap(point.examples)) / kEpochSamples;
      train_accuracy_ += point.train_accuracy / kEpochSamples;
    }
    p_.loss_by_epoch.push_back(loss);
  }
}

void LargeBatchModel::Run::note_weights_and_momentum() {
  const double e0_k = std::min(path_at(k_examples_), end_);
  lr_ratio_k_ = m_.lr_ratio_at(k_examples_, b_);
  p_.lr_ratio_at_k = lr_ratio_k_;
  if (si_start_) {
    const Norms at_k = norms_at(k_examples_);
    p_.weight_sq_at_k = at_k.run;
    p_.effective_lr_ratio_at_k = effective_lr_ratio(k_examples_, at_k);
    if (std::fabs(*p_.effective_lr_ratio_at_k / lr_ratio_k_ - 1) >= 0.05) {
      p_.notes.push_back("BatchNorm's weights train at lr / |w|^2: at the end of epoch " +
                         std::to_string(settings_.epochs) + " the run's |w|^2 is " + short_number(at_k.run) +
                         " against the baseline's " + short_number(at_k.baseline) +
                         " where the path is (both grown by their own steps from " +
                         short_number(si_start_->weight_sq) + "), so they train at " +
                         short_number(*p_.effective_lr_ratio_at_k) +
                         "x the baseline's effective lr (the rule's lr ratio " + short_number(lr_ratio_k_) +
                         "), which x reads");
    }
  }
  p_.momentum_floor_gap_at_k = m_.momentum_floor_gap(k_examples_, e0_k, b_);
  if (p_.momentum_floor_gap_at_k && std::fabs(*p_.momentum_floor_gap_at_k) >= 5e-4) {
    const double m = c_.momentum;
    p_.notes.push_back("momentum " + short_number(m) + ": its noise floor lr tr(Sigma) / (4 B (1 - m)) is " +
                       short_number(1 / (1 - m)) + "x plain SGD's; in epoch " + std::to_string(settings_.epochs) +
                       " the run's sits " + short_number(std::fabs(*p_.momentum_floor_gap_at_k)) +
                       (*p_.momentum_floor_gap_at_k > 0 ? " below" : " above") + " the baseline's (tr(Sigma) " +
                       short_number(*baseline_.trace_sigma_at(e0_k)) + "), and its loss is read that much " +
                       (*p_.momentum_floor_gap_at_k > 0 ? "lower" : "higher") + " on the baseline's curve");
  } else if (settings_.momentum_floor && c_.momentum > 0 && !baseline_.trace_sigma_at(e0_k)) {
    p_.notes.push_back("momentum " + short_number(c_.momentum) +
                       "'s noise floor not modelled: the baseline curve carries no tr(Sigma)");
  }
}

// Epoch k: the mean loss and training accuracy over its examples, the test accuracy at its end.
void LargeBatchModel::Run::read_epoch_k() {
  const std::optional<double> read_k = read_at(k_examples_);
  if (!read_k) {
    p_.loss_missing = "beyond the baseline curve (" + measured_ + ")";
    return;
  }
  p_.train_accuracy_at_k = train_accuracy_;
  const BaselineCurve::Point at_end = baseline_.at(*read_k);
  p_.baseline_examples_at_k = *read_k;
  p_.loss_at_k = p_.loss_by_epoch.back();
  p_.test_accuracy_at_k = at_end.test_accuracy;
  p_.test_accuracy_recomputed_at_k = at_end.test_accuracy_recomputed;
  if (batchnorm_) {
    p_.batchnorm_gap_at_k = batchnorm_gap(at_end.examples);
    if (std::fabs(*p_.batchnorm_gap_at_k) >= 5e-4) {
      p_.notes.push_back("BatchNorm over " + short_number(p_.bn_batch) + " examples, the baseline's over " +
                         std::to_string(c_.small_batch) + ": on the same weights its training loss reads " +
                         short_number(std::fabs(*p_.batchnorm_gap_at_k)) +
                         (*p_.batchnorm_gap_at_k > 0 ? " lower" : " higher") + " at the end of epoch " +
                         std::to_string(settings_.epochs) + " (the baseline's BatchNorm probe), and is predicted so");
    }
  }
  // BatchNorm's running statistics lag the weights further at a raised lr, which the baseline, at
  // its own lr, does not measure: eval mode's accuracy is read as the baseline's.
  const bool has_batchnorm =
      baseline_.has_batchnorm_probe() || baseline_.has_scale_invariant() || c_.recompute_bn_images > 0;
  if (has_batchnorm && lr_raised(lr_ratio_k_)) {
    p_.notes.push_back("test acc@" + std::to_string(settings_.epochs) + ": eval mode's as the baseline reads it at its "
                       "own lr; at " + short_number(lr_ratio_k_) + "x that lr, BatchNorm's running statistics lag the "
                       "weights further and the runs measured read lower, which is not modelled (recomputing the "
                       "statistics before evaluating recovers it: docs/LARGE_BATCH.md, \"The running statistics' "
                       "lag in every run\")");
  }
  if (at_end.before_first_point) {
    p_.notes.push_back("epoch " + std::to_string(settings_.epochs) + " falls before the baseline's first " +
                       "measured point: interpolated from the untrained model (loss ln(C) = " +
                       short_number(baseline_.untrained_loss()) + "), coarse");
  }
}

void LargeBatchModel::Run::read_target_accuracy() {
  if (!settings_.target_accuracy) return;
  const double goal = *settings_.target_accuracy;
  if (p_.examples_to_target_accuracy) {
    p_.epochs_to_target_accuracy = *p_.examples_to_target_accuracy / n_;
  } else if (!e0_accuracy_) {
    const std::optional<double> best = baseline_.best_test_accuracy();
    p_.target_accuracy_missing = "the baseline's test accuracy never reached " + short_number(goal) + " (" + measured_ +
                                 (best ? ", at most " + short_number(*best) : std::string(", no test accuracy")) + ")";
  } else if (diverged_at_ >= 0) {
    p_.target_accuracy_missing = "never: the lr passes 2x the tuned lr after " + short_number(diverged_at_ / n_) +
                                 " epochs, before the target";
  } else if (e_0_ >= end_) {
    p_.target_accuracy_missing = "never: to the end of the baseline's curve (" + measured_ +
                                 ") the run's loss stays above the baseline's where its test accuracy reached " +
                                 short_number(goal);
  } else {
    p_.target_accuracy_missing = "not within " + std::to_string(kMaxEpochs) + " epochs";
  }
}

void LargeBatchModel::Run::read_target_loss() {
  if (!e0_target_) {
    p_.target_missing = "the baseline never reached loss " + short_number(m_.target_loss_) + " (" + measured_ +
                        ", last loss " + short_number(c_.epochs.back().train_loss) + ")";
    return;
  }
  const double noise = m_.batch_noise_scale_at(*e0_target_);
  p_.noise_scale_at_target = noise;
  p_.efficiency = pollux_efficiency(noise, b0_, b_);
  if (p_.examples_to_target) {
    p_.epochs_to_target = *p_.examples_to_target / n_;
  } else if (diverged_at_ >= 0) {
    p_.target_missing = "never: the lr passes 2x the tuned lr after " + short_number(diverged_at_ / n_) +
                        " epochs, before the target";
  } else if (const std::optional<double> gap = m_.momentum_floor_gap(e_b_, e_0_, b_); e_0_ >= end_ && gap && *gap < 0) {
    p_.target_missing = "never: the run's noise floor (momentum " + short_number(c_.momentum) + ") sits " +
                        short_number(-*gap) + " above the baseline's, and the baseline's curve gets no lower than " +
                        short_number(baseline_.at(end_).loss) + " (" + measured_ + ")";
  } else {
    p_.target_missing = "not within " + std::to_string(kMaxEpochs) + " epochs";
  }
  // The rule's lr against the tuned one where the target is: a large mismatch slows the path.
  const double at_target = p_.examples_to_target.value_or(k_examples_);
  const double x = m_.lr_over_tuned(at_target, b_, noise,
                                    m_.path_lr_over_tuned(*e0_target_, baseline_.noise_scale_at(*e0_target_)),
                                    effective_lr_ratio(at_target, norms_at(at_target)));
  if (x > kLrMismatch || x < 1 / kLrMismatch) {
    p_.notes.push_back(rule_ + " lr at " + batch_text_ + " is " + short_number(x) +
                       "x the tuned lr at the target (B_noise " + short_number(noise) + "): " +
                       (m_.past_bound_.at_the_edge && x > 1
                            ? std::string("read as at the tuned lr (the edge of stability)")
                        : x > kNoProgressLrRatio ? std::string("past 2x a step raises the loss")
                                                 : "a step makes " + short_number(100 * (2 * x - x * x)) +
                                                       "% of a tuned step's progress"));
  }
}

LargeBatchPrediction LargeBatchModel::Run::predict() {
  if (baseline_.never_trained()) {
    p_.loss_missing = "the baseline never trained (" + measured_ + ", every mean loss at or above the untrained " +
                      short_number(baseline_.untrained_loss()) + "): no curve to predict from";
    p_.target_missing = p_.loss_missing;
    if (settings_.target_accuracy) p_.target_accuracy_missing = p_.loss_missing;
    return p_;
  }
  if (baseline_.first_epoch_untrained()) {
    p_.notes.push_back("the baseline did not train in its first epoch (mean loss " +
                       short_number(c_.epochs.front().train_loss) + " >= the untrained " +
                       short_number(baseline_.untrained_loss()) + "): a curve that stalls at its start is "
                       "a poor baseline; predictions from it are unreliable");
  }
  note_start();

  si_start_ = settings_.scale_invariant_norm && c_.momentum < 1 ? baseline_.scale_invariant_at(0) : std::nullopt;
  stalls_ = m_.baseline_stalls();
  e0_target_ =
      baseline_.examples_to_loss(m_.target_loss_, batchnorm_ ? std::optional<double>(p_.bn_batch) : std::nullopt);
  e0_accuracy_ =
      settings_.target_accuracy ? baseline_.examples_to_test_accuracy(*settings_.target_accuracy) : std::nullopt;
  end_ = baseline_.last_examples();
  d0_ = n_ / kStepsPerEpoch;
  follow_path();

  const bool diverged_after_path = diverged_at_ < 0 || diverged_at_ >= e_b_;
  if (e0_target_ && diverged_after_path) p_.examples_to_target = reached_at(*e0_target_);
  if (e0_accuracy_ && diverged_after_path) p_.examples_to_target_accuracy = reached_at(*e0_accuracy_);
  if (diverged_at_ >= 0 && diverged_at_ < k_examples_ + d0_) return no_progress();

  note_bound_and_stalls();
  read_epochs();
  note_weights_and_momentum();
  read_epoch_k();
  read_target_accuracy();
  read_target_loss();
  return p_;
}

LargeBatchPrediction LargeBatchModel::predict(int64_t batch, std::optional<double> bn_batch) const {
  if (batch < 1) throw std::invalid_argument("LargeBatchModel::predict: batch must be >= 1");
  if (bn_batch && !(*bn_batch > 0)) throw std::invalid_argument("LargeBatchModel::predict: bn_batch must be > 0");
  return Run(*this, batch, bn_batch).predict();
}

}  // namespace trainsim
