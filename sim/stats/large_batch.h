#pragma once
// Large-batch predictions from a measured baseline training curve (issue 5, docs/LARGE_BATCH.md):
// loss and accuracy after k epochs at batch B, epochs to a target loss, Pollux efficiency, and
// whether the learning-rate rule lets the model answer at all.
//
// The model: to reach a loss L, batch B needs E_B(L) = E_0(L) (1 + B/B_n(L)) / (1 + B_0/B_n(L))
// examples, where E_0(L) is what the baseline (batch B_0) needed and B_n(L) the noise scale the
// baseline measured there (McCandlish et al. 2018; B_n grows as the loss falls). The curve is
// interpolated linearly in examples between its epochs, and between the untrained model
// (0 examples: loss ln(C), accuracy 1/C for C classes) and the first epoch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/profile.h"
#include "stats/lr_rule.h"

namespace trainsim {

// The baseline curve as functions of the examples processed (E in [0, last epoch's examples]).
class BaselineCurve {
 public:
  // Throws std::invalid_argument for a curve without epochs, num_classes < 2, or a non-positive
  // batch or train_samples.
  BaselineCurve(const TrainingCurve& curve, int num_classes);

  struct Point {
    double examples = 0;
    double loss = 0;
    double train_accuracy = 0;
    std::optional<double> test_accuracy;  // nullopt where the baseline has no test accuracy
    double noise_scale = 0;
    bool before_first_epoch = false;      // interpolated from the untrained-model anchor
  };
  // Linear interpolation at `examples`, clamped to [0, last_examples()]. Before the first epoch
  // the noise scale is the first epoch's (nothing was measured earlier).
  Point at(double examples) const;
  // The first E at which the interpolated loss reaches `loss` (<=); nullopt if it never does.
  std::optional<double> examples_to_loss(double loss) const;

  const TrainingCurve& curve() const { return curve_; }
  double last_examples() const { return curve_.epochs.back().examples; }
  double untrained_loss() const { return untrained_loss_; }  // ln(C)
  int num_classes() const { return num_classes_; }

 private:
  TrainingCurve curve_;
  int num_classes_;
  double untrained_loss_;
};

struct LargeBatchSettings {
  int epochs = 5;                     // k: report the loss after k epochs
  std::optional<double> target_loss;  // default: the baseline's loss after k epochs (its last if shorter)
  LrRule lr_rule = LrRule::kLinearWarmup;
};

struct LargeBatchPrediction {
  int64_t batch = 0;
  LrRule lr_rule = LrRule::kLinearWarmup;
  // Set when the learning-rate rule puts this batch outside the model: nothing below is predicted.
  std::string refused;
  // After k epochs at `batch`: the baseline's state at the equivalent examples E_0.
  std::optional<double> loss_at_k;
  std::optional<double> train_accuracy_at_k;
  std::optional<double> test_accuracy_at_k;
  std::optional<double> baseline_examples_at_k;  // E_0
  std::string loss_missing;                      // why loss_at_k is empty (refusal aside)
  // To the target loss.
  std::optional<double> examples_to_target;      // E_B
  std::optional<double> epochs_to_target;        // E_B / train_samples (the baseline's epoch size)
  std::optional<double> noise_scale_at_target;   // B_n where the baseline reached the target
  std::optional<double> efficiency;              // Pollux (B_n + B_0) / (B_n + B) at the target
  std::string target_missing;                    // why epochs_to_target is empty (refusal aside)
  // Caveats that do not stop the prediction (learning-rate mismatch, extrapolation).
  std::vector<std::string> notes;
  // The rule's lr is above kNoProgressLrRatio x eps_max: the model predicts no progress (the loss
  // and accuracies at k are the untrained model's, the target is never reached).
  bool no_progress = false;
};

class LargeBatchModel {
 public:
  // Throws std::invalid_argument as BaselineCurve does, or for epochs < 1 or a target_loss <= 0.
  LargeBatchModel(const TrainingCurve& curve, int num_classes, const LargeBatchSettings& settings);

  LargeBatchPrediction predict(int64_t batch) const;

  const BaselineCurve& baseline() const { return baseline_; }
  const LargeBatchSettings& settings() const { return settings_; }
  double target_loss() const { return target_loss_; }
  bool target_is_default() const { return !settings_.target_loss.has_value(); }
  // Where the target came from, e.g. "the baseline's loss after 5 epochs" or "large_batch.target_loss".
  const std::string& target_source() const { return target_source_; }
  int64_t base_batch() const { return baseline_.curve().batch; }

  // Beyond this ratio between the batch and the baseline's (either way), a constant learning
  // rate is refused, and linear scaling without warm-up draws a warning.
  static constexpr double kRuleBatchRatio = 8;
  // Outside [1/2, 2] x the model's tuned learning rate, a rule draws a note.
  static constexpr double kLrMismatch = 2;
  // Above this multiple of eps_max (the tuned learning rate of an unlimited batch) an SGD step
  // raises even the noiseless loss (McCandlish et al. 2018: -eps |G|^2 + eps^2/2 G^T H G > 0 for
  // eps > 2 |G|^2 / G^T H G): no progress is predicted. The theory's 2, not a fitted value.
  static constexpr double kNoProgressLrRatio = 2;

 private:
  // The smallest E_0 with E_0 (B_n(E_0) + B) / (B_n(E_0) + B_0) >= examples; nullopt beyond the curve.
  std::optional<double> equivalent_baseline_examples(double examples, double batch) const;

  BaselineCurve baseline_;
  LargeBatchSettings settings_;
  double target_loss_;
  std::string target_source_;
};

}  // namespace trainsim
