#include "stats/large_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "stats/mccandlish.h"

namespace trainsim {
namespace {

// Numbers inside notes: 3 significant digits below 100 (0.123, 1.23, 12.3), whole numbers above
// (123, 12345), never an exponent in between.
std::string short_number(double value) {
  char buffer[32];
  if (std::fabs(value) >= 100 && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3g", value);
  }
  return buffer;
}

// "64x" or "0.125x": the batch relative to the baseline's.
std::string times(double ratio) { return short_number(ratio) + "x"; }

double lerp(double a, double b, double t) { return a + (b - a) * t; }

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
}

BaselineCurve::Point BaselineCurve::at(double examples) const {
  const std::vector<EpochPoint>& epochs = curve_.epochs;
  const double e = std::clamp(examples, 0.0, last_examples());
  Point p;
  p.examples = e;
  const EpochPoint& first = epochs.front();
  if (e < first.examples) {
    // Untrained model at 0 examples: uniform predictions, cross-entropy ln(C), accuracy 1/C.
    const double t = e / first.examples;
    const double chance = 1.0 / num_classes_;
    p.loss = lerp(untrained_loss_, first.train_loss, t);
    p.train_accuracy = lerp(chance, first.train_accuracy, t);
    if (first.test_accuracy >= 0) p.test_accuracy = lerp(chance, first.test_accuracy, t);
    p.noise_scale = first.noise_scale;
    p.before_first_epoch = true;
    return p;
  }
  // The segment [epochs[i], epochs[i + 1]] holding e (the last point when e is the end).
  size_t i = 0;
  while (i + 1 < epochs.size() && epochs[i + 1].examples < e) ++i;
  if (i + 1 == epochs.size()) {
    const EpochPoint& last = epochs.back();
    p.loss = last.train_loss;
    p.train_accuracy = last.train_accuracy;
    if (last.test_accuracy >= 0) p.test_accuracy = last.test_accuracy;
    p.noise_scale = last.noise_scale;
    return p;
  }
  const EpochPoint& a = epochs[i];
  const EpochPoint& b = epochs[i + 1];
  const double t = (e - a.examples) / (b.examples - a.examples);
  p.loss = lerp(a.train_loss, b.train_loss, t);
  p.train_accuracy = lerp(a.train_accuracy, b.train_accuracy, t);
  if (a.test_accuracy >= 0 && b.test_accuracy >= 0) p.test_accuracy = lerp(a.test_accuracy, b.test_accuracy, t);
  p.noise_scale = lerp(a.noise_scale, b.noise_scale, t);
  return p;
}

std::optional<double> BaselineCurve::examples_to_loss(double loss) const {
  double previous_examples = 0;
  double previous_loss = untrained_loss_;
  if (previous_loss <= loss) return 0.0;
  for (const EpochPoint& point : curve_.epochs) {
    if (point.train_loss <= loss) {
      // previous_loss > loss >= point.train_loss: the crossing lies in this segment.
      const double t = (previous_loss - loss) / (previous_loss - point.train_loss);
      return lerp(previous_examples, point.examples, t);
    }
    previous_examples = point.examples;
    previous_loss = point.train_loss;
  }
  return std::nullopt;
}

LargeBatchModel::LargeBatchModel(const TrainingCurve& curve, int num_classes, const LargeBatchSettings& settings)
    : baseline_(curve, num_classes), settings_(settings) {
  if (settings.epochs < 1) throw std::invalid_argument("LargeBatchModel: epochs must be >= 1");
  if (settings.target_loss) {
    if (!(*settings.target_loss > 0)) throw std::invalid_argument("LargeBatchModel: target_loss must be > 0");
    target_loss_ = *settings.target_loss;
    target_source_ = "large_batch.target_loss";
    return;
  }
  const TrainingCurve& c = baseline_.curve();
  const double k_examples = static_cast<double>(settings.epochs) * static_cast<double>(c.train_samples);
  if (k_examples <= baseline_.last_examples()) {
    target_loss_ = baseline_.at(k_examples).loss;
    target_source_ = "the baseline's loss after " + std::to_string(settings.epochs) + " epochs";
  } else {
    target_loss_ = c.epochs.back().train_loss;
    target_source_ = "the baseline's loss at its last epoch (" + std::to_string(c.epochs.back().epoch) +
                     "; it ran fewer than " + std::to_string(settings.epochs) + " epochs)";
  }
}

std::optional<double> LargeBatchModel::equivalent_baseline_examples(double examples, double batch) const {
  const double base = static_cast<double>(base_batch());
  // h(E_0) = E_0 (B_n(E_0) + B) / (B_n(E_0) + B_0) - E_B; B_n varies along the curve, so h is
  // scanned in small steps for its first sign change, then bisected.
  const auto h = [&](double e0) {
    return e0 * examples_ratio(batch, base, baseline_.at(e0).noise_scale) - examples;
  };
  std::vector<double> knots{0.0};
  for (const EpochPoint& p : baseline_.curve().epochs) knots.push_back(p.examples);
  constexpr int kStepsPerSegment = 32;
  double low = 0;
  for (size_t i = 0; i + 1 < knots.size(); ++i) {
    for (int s = 1; s <= kStepsPerSegment; ++s) {
      const double high = lerp(knots[i], knots[i + 1], static_cast<double>(s) / kStepsPerSegment);
      if (h(high) < 0) {
        low = high;
        continue;
      }
      double a = low, b = high;  // h(a) < 0 <= h(b)
      for (int iteration = 0; iteration < 100 && b - a > 1e-9 * b; ++iteration) {
        const double mid = 0.5 * (a + b);
        (h(mid) < 0 ? a : b) = mid;
      }
      return b;
    }
  }
  return std::nullopt;
}

LargeBatchPrediction LargeBatchModel::predict(int64_t batch) const {
  if (batch < 1) throw std::invalid_argument("LargeBatchModel::predict: batch must be >= 1");
  LargeBatchPrediction p;
  p.batch = batch;
  p.lr_rule = settings_.lr_rule;
  const TrainingCurve& c = baseline_.curve();
  const double b = static_cast<double>(batch);
  const double b0 = static_cast<double>(c.batch);
  const double ratio = b / b0;
  const std::string batch_text = times(ratio) + " the baseline batch (" + std::to_string(c.batch) + ")";

  if (settings_.lr_rule == LrRule::kConstant && std::max(ratio, 1 / ratio) >= kRuleBatchRatio) {
    p.refused = "not predicted: constant lr at " + batch_text +
                " is outside the model (it assumes the lr tuned per batch)";
    return p;
  }

  const double n = static_cast<double>(c.train_samples);
  const std::string measured = std::to_string(c.epochs.back().epoch) + " epochs measured";

  // The learning-rate rule against the model's tuned lr, at the target's noise scale (else the last).
  const std::optional<double> e0_target = baseline_.examples_to_loss(target_loss_);
  const double noise = e0_target ? baseline_.at(*e0_target).noise_scale : c.epochs.back().noise_scale;
  const double mismatch = lr_ratio(settings_.lr_rule, b, b0) / tuned_lr_ratio(b, b0, noise);
  const std::string lr_text = std::string(to_string(settings_.lr_rule)) + " lr at " + batch_text + " is " +
                              short_number(mismatch) + "x the model's tuned lr (eps_max / (1 + B_noise/B), B_noise " +
                              short_number(noise) + ")";
  // McCandlish et al. 2018 ("An Empirical Model of Large-Batch Training", section 2): one SGD step
  // changes the expected loss by -eps |G|^2 + eps^2 / 2 (G^T H G + tr(H Sigma) / B). Its noiseless
  // part rises once eps > 2 eps_max (eps_max = |G|^2 / G^T H G, the tuned lr of an unlimited batch,
  // eps_opt(B_0) (1 + B_noise/B_0) with the baseline's lr taken as tuned): the curvature bound, past
  // which training diverges however large the batch. Then the model predicts no progress: after k
  // epochs the loss and accuracies are the untrained model's and the target is never reached
  // (warm-up only delays the rule's lr). Between 2 eps_opt(B) and 2 eps_max the noise term keeps the
  // loss on a floor instead: predicted as tuned, with the note below.
  const double over_max = lr_ratio(settings_.lr_rule, b, b0) / (1 + noise / b0);
  if (over_max > kNoProgressLrRatio) {
    p.no_progress = true;
    p.loss_at_k = baseline_.untrained_loss();
    p.train_accuracy_at_k = 1.0 / baseline_.num_classes();
    if (baseline_.at(0).test_accuracy) p.test_accuracy_at_k = 1.0 / baseline_.num_classes();
    p.target_missing = "never: no progress at this lr";
    p.notes.push_back("no progress: " + std::string(to_string(settings_.lr_rule)) + " lr at " + batch_text + " is " +
                      short_number(over_max) + "x eps_max, the model's tuned lr for an unlimited batch (baseline lr x (1 + "
                      "B_noise/B_0), B_noise " + short_number(noise) + "); above 2x an SGD step raises even the "
                      "noiseless loss: loss and accuracy are the untrained model's");
    return p;
  }

  // Loss after k epochs: the baseline at E_0 with E_0 (B_n + B) / (B_n + B_0) = k N.
  if (const auto e0 = equivalent_baseline_examples(settings_.epochs * n, b)) {
    const BaselineCurve::Point point = baseline_.at(*e0);
    p.baseline_examples_at_k = *e0;
    p.loss_at_k = point.loss;
    p.train_accuracy_at_k = point.train_accuracy;
    p.test_accuracy_at_k = point.test_accuracy;
    if (point.before_first_epoch) {
      p.notes.push_back("loss at epoch " + std::to_string(settings_.epochs) + " falls before the baseline's first " +
                        "epoch: interpolated from the untrained model (loss ln(C) = " +
                        short_number(baseline_.untrained_loss()) + "), coarse");
    }
  } else {
    p.loss_missing = "beyond the baseline curve (" + measured + ")";
  }

  // Epochs to the target: E_B = E_0(target) (B_n + B) / (B_n + B_0), B_n where the baseline got there.
  if (e0_target) {
    p.noise_scale_at_target = noise;
    p.examples_to_target = *e0_target * examples_ratio(b, b0, noise);
    p.epochs_to_target = *p.examples_to_target / n;
    p.efficiency = pollux_efficiency(noise, b0, b);
  } else {
    p.target_missing = "the baseline never reached loss " + short_number(target_loss_) + " (" + measured +
                       ", last loss " + short_number(c.epochs.back().train_loss) + ")";
  }

  if (settings_.lr_rule == LrRule::kLinear && ratio > kRuleBatchRatio) {
    p.notes.push_back("linear lr scaling without warm-up at " + batch_text +
                      ": the large early lr often diverges (Goyal et al. warm up over 5 epochs); the "
                      "prediction assumes training stays stable");
  }
  if (mismatch > kLrMismatch || mismatch < 1 / kLrMismatch) {
    p.notes.push_back(lr_text + ": the prediction assumes the tuned lr and is optimistic");
  }
  return p;
}

}  // namespace trainsim
