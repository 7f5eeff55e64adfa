#pragma once
// Large-batch predictions from a measured baseline training curve (issue 5, docs/LARGE_BATCH.md):
// loss and accuracy after k epochs at batch B, epochs to a target loss, Pollux efficiency, and
// whether the learning-rate rule lets the model answer at all.
//
// The model (McCandlish et al. 2018, step by step): an example at batch B with learning rate
// eps is worth dE_0/dE_B = (B_n + B_0) / (B_n + B) (2x - x^2) of the baseline's examples, x =
// eps / eps_opt(B) the rule's lr over the tuned one and B_n the noise scale the baseline measured
// where the path is (B_simple, or B_noise = tr(H Sigma) / G^T H G where the settings ask for it
// and the curve carries it); past x = 2 the loss rises and no progress is predicted. With momentum
// m the run is read on the baseline's curve lower by momentum's part of SGD's noise floor,
// m / (1 - m) tr(Sigma) / 4 (lr_0 / B_0 - lr_B / B) (LargeBatchSettings::momentum_floor).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/profile.h"
#include "format/lr_rule.h"
#include "stats/past_bound.h"

namespace trainsim {

// The baseline curve as functions of the examples processed (E in [0, last epoch's examples]):
// the instantaneous loss and training accuracy, each window's mean placed at the window's middle
// (the curve's samples in its first epoch, its epochs after), the test accuracy where it was
// evaluated in the first epoch and each later epoch's mean of its evaluations at their mean
// position (none past the last evaluation), the noise scale where it was measured; linear in
// between, from the untrained model (0 examples: loss ln(C), accuracies 1/C for C classes), flat
// after the last point.
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
    // The same with BatchNorm's statistics recomputed (measure baseline --recompute-bn); nullopt
    // where the baseline did not measure it.
    std::optional<double> test_accuracy_recomputed;
    double noise_scale = 0;               // before the first measurement: the first
    bool before_first_point = false;      // between the untrained model and the first measured loss
  };
  // The state at `examples`, clamped to [0, last_examples()].
  Point at(double examples) const;
  // at(examples).noise_scale alone (the path's inner loop needs nothing else).
  double noise_scale_at(double examples) const;
  // eps_max = |G|^2 / G^T H G measured along the curve (`max_lr`: the samples in the first epoch
  // from the first reading on, the epochs after);
  // nullopt when the curve carries none (a profile from before it was measured).
  bool has_max_lr() const { return !max_lr_.empty(); }
  std::optional<double> max_lr_at(double examples) const;
  // McCandlish's B_noise = tr(H Sigma) / G^T H G measured along the curve (`curvature_noise_scale`,
  // placed as max_lr's), where it is measured well: a reading counts where its standard error
  // (`curvature_noise_scale_se`) is at most kMaxNoiseScaleRelativeError of it. nullopt wherever
  // the readings around `examples` (both ends of its segment; the nearest one before the first and
  // after the last) do not all count: not measurable, from too few measurements, too uncertain, or
  // recorded without a standard error.
  bool has_curvature_noise_scale() const;
  std::optional<double> curvature_noise_scale_at(double examples) const;
  // The first E at which the loss reaches `loss` (<=); nullopt if it never does. With `bn_batch`,
  // the loss a run at that BatchNorm batch records, the curve's less batchnorm_gap_at (evaluated at
  // the curve's knots).
  std::optional<double> examples_to_loss(double loss, std::optional<double> bn_batch = std::nullopt) const;
  // The first E at which the test accuracy (as at() gives it) reaches `accuracy` (>=), interpolated
  // within its segment; nullopt if it never does or the curve has no test accuracy.
  std::optional<double> examples_to_test_accuracy(double accuracy) const;
  // The highest test accuracy of the curve (each of its points as at() gives them); nullopt without one.
  std::optional<double> best_test_accuracy() const;
  // Where along the curve, seen from `from`, the loss is `loss`: for a loss at or below the one at
  // `from`, the first E >= from where the curve reaches it (nullopt if it never does); for a higher
  // one, the last E <= from where the curve was at or above it (0 if it never was).
  std::optional<double> examples_at_loss_from(double from, double loss) const;
  // tr(Sigma), the per-example gradient covariance's trace, as measured at the epochs' ends (the
  // samples carry none); flat before the first and after the last; nullopt where the curve has none.
  std::optional<double> trace_sigma_at(double examples) const;
  // The BatchNorm probe (measure baseline --bn-probe-images): how much higher the baseline's own
  // BatchNorm batch (the curve's small_batch) records the training loss than a BatchNorm batch of
  // `bn_batch` does, on the same weights, at `examples`: L(b_own) - L(bn_batch), the probe's
  // training-mode losses taken as linear in 1/b between its batches (the excess of a BatchNorm
  // batch's noise falls as the variance of its statistics, 1/b) and flat outside them; in the first
  // epoch at each reading, after it each epoch's mean of its readings at their mean position;
  // linear in between, flat before the first and after the last. nullopt where the curve has no
  // probe readings.
  bool has_batchnorm_probe() const { return !probe_.empty(); }
  std::optional<double> batchnorm_gap_at(double examples, double bn_batch) const;
  // The scale-invariant parameters (measure baseline's si_* readings) at `examples`: their |w|^2,
  // their momentum buffer's |v|^2 per step and tr(Sigma) of their gradients; every sample's
  // readings where the samples carry them (the update at its window's middle), the epochs' else;
  // linear in between, flat outside. nullopt where the curve has none.
  struct ScaleInvariant {
    double weight_sq = 0;
    double update_sq = 0;
    double trace_sigma = 0;
  };
  bool has_scale_invariant() const { return !si_weight_sq_.empty(); }
  std::optional<ScaleInvariant> scale_invariant_at(double examples) const;
  // A recorded window: its middle (examples) and its mean loss.
  struct Window {
    double examples;
    double loss;
    bool operator==(const Window& o) const { return examples == o.examples && loss == o.loss; }
  };
  // The stretches where the recorded loss stays at or above the untrained ln(C): each two or more
  // consecutive windows, in order (every sample, in every epoch; the epochs' means where the curve
  // has no samples).
  std::vector<std::vector<Window>> untrained_stretches() const;

  const TrainingCurve& curve() const { return curve_; }
  double last_examples() const { return curve_.epochs.back().examples; }
  double untrained_loss() const { return untrained_loss_; }  // ln(C)
  // The first epoch's mean loss is at or above the untrained model's ln(C): the baseline did not
  // train in it (e.g. an lr at the edge of stability that kept it at chance), so the curve is a
  // poor stand-in for how training goes, and every prediction from it says so.
  bool first_epoch_untrained() const { return curve_.epochs.front().train_loss >= untrained_loss_; }
  // Every epoch's mean loss is at or above ln(C): the baseline never trained, and there is no curve
  // to predict from (nothing is predicted).
  bool never_trained() const;
  int num_classes() const { return num_classes_; }

 private:
  struct Knot {
    double examples;
    double value;
  };
  static double interpolate(const std::vector<Knot>& knots, double examples);
  // The probe's loss at BatchNorm batch `bn_batch` from one reading (one loss per probe batch).
  double probe_loss_at_batch(const std::vector<double>& losses, double bn_batch) const;
  struct ProbeKnot {
    double examples;
    std::vector<double> loss;  // per probe batch
  };

  TrainingCurve curve_;
  int num_classes_;
  double untrained_loss_;
  std::vector<Knot> loss_, train_accuracy_, test_accuracy_, test_accuracy_recomputed_, noise_scale_, max_lr_,
      trace_sigma_;
  double last_evaluated_ = 0;  // the last evaluation's examples: no test accuracy is given beyond it
  // Every point that carries a B_noise reading, NaN where it does not count (see above).
  std::vector<Knot> curvature_noise_scale_;
  std::vector<ProbeKnot> probe_;
  std::vector<Knot> si_weight_sq_, si_update_sq_, si_trace_sigma_;
  std::vector<double> probe_inverse_batches_;  // -1/b for each of the curve's probe_batches
};

// A B_noise reading counts for the model where its standard error is at most this fraction of it
// (the reading 4 standard errors from 0). Chosen before the readings were compared with any run.
inline constexpr double kMaxNoiseScaleRelativeError = 0.25;

// A loss past this multiple of the untrained ln(C) has risen, not merely stalled: a step past the
// no-progress bound raised it (the model's sign of a stall; a run's "blew up" in
// `measure largebatch-compare`).
inline constexpr double kRisenLossRatio = 2;

// x = lr (1 + B_noise/B) / eps_max: an lr against the tuned lr eps_opt(B) = eps_max / (1 +
// B_noise/B) at batch B (McCandlish et al. 2018). eps_max > 0.
double lr_over_tuned_lr(double lr, double batch, double noise_scale, double eps_max);

// Numbers inside notes: 3 significant digits below 100 (0.123, 1.23, 12.3), whole numbers above
// (123, 12345), never an exponent in between.
std::string short_number(double value);

// PastBound resolved for a baseline with this start curvature: whether runs past the plain bound
// are read at the edge of stability, and why, in words.
struct PastBoundReading {
  bool at_the_edge = false;
  std::string reason;
  // PastBound::kFromStart at the edge: the baseline's parameters that are not scale-invariant, their
  // lr / eps_max before its first step (StartCurvature::rest_lr_over_eps_max), which a run's own start
  // scales by its lr (LargeBatchPrediction::start_x).
  std::optional<double> start_x;
};
PastBoundReading read_past_bound(PastBound past_bound, const std::optional<StartCurvature>& start);

struct LargeBatchSettings {
  int epochs = 5;                     // k: report the loss after k epochs
  std::optional<double> target_loss;  // default: the baseline's loss in its epoch k (its last if shorter)
  // A test accuracy (a fraction in (0, 1]) to reach: the epochs to it, where the path reads the
  // baseline's test accuracy first reaching it (none by default).
  std::optional<double> target_accuracy;
  LrRule lr_rule = LrRule::kLinearWarmup;
  double warmup_epochs = 5;           // linear-warmup: the ramp from the baseline's lr (measure's default)
  // B_n from the curve's measured B_noise = tr(H Sigma) / G^T H G wherever a reading counts
  // (BaselineCurve::curvature_noise_scale_at: its standard error at most a quarter of it), B_simple
  // elsewhere; false: B_simple everywhere (docs/LARGE_BATCH.md, "B_noise with the curvature";
  // `measure largebatch-compare` shows both).
  bool curvature_noise_scale = true;
  // Momentum's noise floor: heavy-ball SGD's stationary excess loss lr tr(Sigma) / (4 B (1 - m)) is
  // 1/(1 - m) times plain SGD's, which the step equation holds; the rest, lr tr(Sigma) m / (4 B
  // (1 - m)), differs between the baseline and a run at another lr / B, and the run's loss is read
  // that much lower (or higher) on the baseline's curve (docs/LARGE_BATCH.md, "Momentum's noise
  // floor"). false: the plain-SGD path alone.
  bool momentum_floor = true;
  // BatchNorm's batch: a run whose BatchNorm batch is larger than the baseline's records a lower
  // training loss on the same weights, by what the baseline's BatchNorm probe measured
  // (BaselineCurve::batchnorm_gap_at): the predicted loss is the curve's less that gap (the test
  // accuracy, in eval mode on running statistics, is unchanged). false, or a curve without the
  // probe: the curve's loss as it is.
  bool batchnorm_gap = true;
  // The scale-invariant weights' norm (docs/LARGE_BATCH.md, "The scale-invariant weights' norm"):
  // BatchNorm makes the weights before it train at lr / |w|^2, and a run's |w|^2 grows by its own
  // steps (lr^2 (1 + m) / (1 - m) |v|^2 a step, less weight decay's 2 lr wd |w|^2 / (1 - m)), |v|^2
  // the baseline's with its gradient noise at the run's batch. x is read with the run's lr / |w|^2
  // over the baseline's where the path is, in place of the lr ratio. false, or a curve without the
  // si_* readings: the lr ratio.
  bool scale_invariant_norm = true;
  // What a run whose lr is past the no-progress bound does (PastBound).
  PastBound past_bound = PastBound::kFromStart;
  // The pace probe (measure baseline --pace-probe-at; docs/LARGE_BATCH.md, "The pace probe in the
  // model"): where the curve carries two pairs' gains at one state, the plain step equation's
  // coefficients solved from them (x_0 = alpha + nu, B_n = B_0 nu / alpha) replace the model's own
  // there, and the same factors scale its x_0 and B_n along the whole path (PaceScale). false, or a
  // curve without a usable reading: the single-step statistics as measured.
  bool pace_probe = false;
};

// What the pace probe does to the model (LargeBatchSettings::pace_probe): at the first state the
// curve probed with two usable pairs, the step equation's (alpha, nu) solved from their gains'
// geometric means, and the factors that put the model's x_0 and B_n there on the probe's.
struct PaceScale {
  double examples = 0;  // the probed state
  double alpha = 0;
  double nu = 0;
  double model_x0 = 0;           // the model's own x_0 there as measured (baseline_lr_over_tuned, past the bound too)
  double model_noise_scale = 0;  // and its B_n (batch_noise_scale_at)
  double k_x = 1;                // (alpha + nu) / model_x0: every x_0 of the path times this
  double k_n = 1;                // B_0 nu / alpha / model_noise_scale: every B_n (and B_simple) times this
};

// Whether a rule's lr ratio over the baseline's raises the lr (past rounding).
inline bool lr_raised(double lr_ratio) { return lr_ratio > 1 + 1e-9; }

struct LargeBatchPrediction {
  int64_t batch = 0;
  LrRule lr_rule = LrRule::kLinearWarmup;
  // In epoch k at `batch`: the mean loss and training accuracy over the epoch and the test
  // accuracy at its end, the baseline's at the equivalent examples E_0.
  std::optional<double> loss_at_k;
  std::optional<double> train_accuracy_at_k;
  std::optional<double> test_accuracy_at_k;
  // The test accuracy with BatchNorm's statistics recomputed, the baseline's at E_0 likewise; nullopt
  // where the baseline did not measure it.
  std::optional<double> test_accuracy_recomputed_at_k;
  std::optional<double> baseline_examples_at_k;  // E_0 at the end of epoch k
  // The mean loss of each epoch from 1 that ends within the baseline curve, as loss_at_k is epoch
  // k's: all k where loss_at_k is given, fewer where the path leaves the curve before epoch k.
  std::vector<double> loss_by_epoch;
  std::string loss_missing;                      // why loss_at_k is empty
  // To the target loss.
  std::optional<double> examples_to_target;      // E_B
  std::optional<double> epochs_to_target;        // E_B / train_samples (the baseline's epoch size)
  std::optional<double> noise_scale_at_target;   // B_n where the baseline reached the target
  std::optional<double> efficiency;              // Pollux (B_n + B_0) / (B_n + B) at the target
  std::string target_missing;                    // why epochs_to_target is empty
  // To the target accuracy (LargeBatchSettings::target_accuracy), as to the target loss.
  std::optional<double> examples_to_target_accuracy;
  std::optional<double> epochs_to_target_accuracy;
  std::string target_accuracy_missing;           // why, where a target accuracy is set
  // Where the path passed a stall of the baseline at once (E_B / train_samples, the first one).
  std::optional<double> stall_passed_epochs;
  // Momentum's noise floor at the end of epoch k: how much lower the run's stationary excess loss is
  // than the baseline's (negative: higher); nullopt where not modelled (momentum 0, the setting off,
  // or a curve without tr(Sigma)).
  std::optional<double> momentum_floor_gap_at_k;
  // The run's BatchNorm batch, and how much lower than the baseline's it records the loss at the end
  // of epoch k (BaselineCurve::batchnorm_gap_at); nullopt where not modelled.
  double bn_batch = 0;
  std::optional<double> batchnorm_gap_at_k;
  // The scale-invariant weights at the end of epoch k: the run's lr / |w|^2 over the baseline's where
  // the path is, and the run's |w|^2; nullopt where not modelled.
  std::optional<double> effective_lr_ratio_at_k;
  std::optional<double> weight_sq_at_k;
  // The rule's lr over the baseline's at the end of epoch k; 0 where the path was not followed.
  double lr_ratio_at_k = 0;
  // Caveats that do not stop the prediction (learning-rate mismatch, extrapolation).
  std::vector<std::string> notes;
  // The rule's lr passes kNoProgressLrRatio x the tuned lr somewhere on the path: the model
  // predicts no progress (the loss and accuracies at k are the untrained model's, the target is
  // never reached).
  bool no_progress = false;
  // At the edge of stability (PastBound): the rule's lr passes kNoProgressLrRatio x the tuned lr
  // before epoch k, and is read as at the tuned lr there (a note says so).
  bool past_the_bound = false;
  // PastBound::kFromStart: the run's own lr / eps_max at its first step along the parameters that are
  // not scale-invariant (the baseline's start reading times the run's lr over the baseline's), where
  // the baseline read one. Past kNoProgressLrRatio the run starts with a catapult (the loss thrown up,
  // then the curvature lowered), whose cost the model does not carry: a note says so.
  std::optional<double> start_x;
};

class LargeBatchModel {
 public:
  // Throws std::invalid_argument as BaselineCurve does, or for epochs < 1 or a target_loss <= 0.
  LargeBatchModel(const TrainingCurve& curve, int num_classes, const LargeBatchSettings& settings);

  // At global batch `batch`, BatchNorm normalising over `bn_batch` examples (the per-device batch;
  // default: the baseline's split, batch x small_batch / its batch).
  LargeBatchPrediction predict(int64_t batch, std::optional<double> bn_batch = std::nullopt) const;

  const BaselineCurve& baseline() const { return baseline_; }
  const LargeBatchSettings& settings() const { return settings_; }
  // The reading of the bound in force (PastBound resolved for this baseline), and why, in words.
  bool at_the_edge() const { return past_bound_.at_the_edge; }
  const std::string& past_bound_reason() const { return past_bound_.reason; }
  // The baseline's start reading each run's own start scales (PastBoundReading::start_x).
  std::optional<double> start_x() const { return past_bound_.start_x; }
  // The pace probe's scaling in force (LargeBatchSettings::pace_probe), nullopt where it is off or
  // the curve carries no usable reading; pace_probe_reason() says which, in words.
  const std::optional<PaceScale>& pace_scale() const { return pace_scale_; }
  const std::string& pace_probe_reason() const { return pace_reason_; }
  double target_loss() const { return target_loss_; }
  bool target_is_default() const { return !settings_.target_loss.has_value(); }
  // Where the target came from, e.g. "the baseline's loss after 5 epochs" or "large_batch.target_loss".
  const std::string& target_source() const { return target_source_; }
  int64_t base_batch() const { return baseline_.curve().batch; }

  // Above this multiple of the tuned learning rate an SGD step raises the expected loss
  // (McCandlish et al. 2018: a step changes it by |G|^2 eps_opt (x^2/2 - x) for x = eps / eps_opt):
  // no progress is predicted. The theory's 2, not a fitted value.
  static constexpr double kNoProgressLrRatio = 2;
  // The batches, as multiples of the baseline's, that the model was checked at against real runs
  // (docs/LARGE_BATCH.md, "How it was validated": Fashion-MNIST runs at 2x-64x their baseline's
  // batch; the baseline's own batch reproduces the baseline). A prediction outside is an
  // extrapolation, and the reports mark it.
  static constexpr double kValidatedBatchRatioMin = 1;
  static constexpr double kValidatedBatchRatioMax = 64;
  static bool validated_batch_ratio(double ratio) {
    return ratio >= kValidatedBatchRatioMin && ratio <= kValidatedBatchRatioMax;
  }
  // Outside [1/2, 2] x the tuned learning rate at the target, a row draws a note.
  static constexpr double kLrMismatch = 2;
  // Integration steps per epoch of the baseline's examples (the path E_B(E_0), docs/LARGE_BATCH.md).
  static constexpr int kStepsPerEpoch = 400;
  // The path is followed for at most this many epochs when looking for the target.
  static constexpr int kMaxEpochs = 1000;

 private:
  // lr(B) / lr(B_0) after `examples` at batch B under the settings' rule (warm-up included).
  double lr_ratio_at(double examples, double batch) const;
  // x: the rule's lr after `examples` at `batch` over the tuned lr eps_max / (1 + B_n/B), i.e.
  // (lr_B/lr_0) (1 + B_n/B) / (1 + B_n/B_0) x_0, given the baseline's x_0 where the path is.
  // lr_ratio: the run's lr over the baseline's as x reads it (default: lr_ratio_at; with the
  // scale-invariant weights' norm, their effective lr over the baseline's).
  double lr_over_tuned(double examples, double batch, double noise_scale, double x0,
                       std::optional<double> lr_ratio = std::nullopt) const;
  // The scale-invariant weights' |w|^2 of a run at `batch` grows per example of its own by this, at
  // E_B = `examples` with the path at `baseline_examples` and its |w|^2 `weight_sq`
  // (LargeBatchSettings::scale_invariant_norm); nullopt where not modelled.
  std::optional<double> weight_sq_rate(double examples, double baseline_examples, double batch,
                                       double weight_sq) const;
  // Momentum's noise-floor gap (LargeBatchSettings::momentum_floor) for a run at `batch` after
  // `examples`, where the path is at `baseline_examples`: m / (1 - m) tr(Sigma) / 4 (lr_0 / B_0 -
  // lr_B / B); nullopt where it is not modelled.
  std::optional<double> momentum_floor_gap(double examples, double baseline_examples, double batch) const;
  // B_n where the path is: B_simple, or the curve's B_noise where the settings ask for it and the
  // curve carries one; times the pace probe's k_n where it is in force.
  double batch_noise_scale_at(double baseline_examples) const;
  // x_0: the baseline's own lr over its tuned lr at E_0 as measured (1 without a measured eps_max),
  // from B_simple (noise_scale) and eps_max (max_lr) as measured together at B_0: their eps_max is
  // |g|^2 / g^T H g of the batch gradient, eps_max (1 + B_simple/B_0) / (1 + B_noise/B_0), so
  // lr (1 + B_simple/B_0) / max_lr is lr (1 + B_noise/B_0) / eps_max whichever B_noise is true.
  // Times the pace probe's k_x where it is in force.
  double baseline_lr_over_tuned(double baseline_examples, double noise_scale) const;
  // x_0 as the path uses it: the measured one, or 1 where that is at or past the no-progress bound
  // (the step equation gives the baseline's own steps no progress there to compare with, yet its
  // curve is what they did: its lr is taken as tuned there, for the run's x and the rate alike; a
  // run whose own x stays within the bound over a stall skips it instead, baseline_stalls()).
  double path_lr_over_tuned(double baseline_examples, double noise_scale) const;
  // A point of a stall: where it is (E_0), the baseline's noise scale B_n (batch_noise_scale_at)
  // and its measured x_0 there.
  struct StallPoint {
    double examples;
    double noise_scale;
    double x0;
  };
  // The baseline's stalls: the untrained stretches where its own lr was past the no-progress
  // bound at some point, i.e. where its lr kept it at chance (docs/LARGE_BATCH.md, "Stalls"): its
  // loss rose past twice the untrained ln(C) in it (a step past the bound raises the expected
  // loss: the rise is that bound crossed, whatever the readings at chance say), or its measured
  // x_0 passed the bound.
  // A run's x is checked at every point of the stretch, the windows that rose too (x_0 taken at
  // least at the bound there); the path skips only the windows at chance after the last rise
  // (below twice ln(C); two or more), the whole stretch where it did not rise. The rise itself is
  // not skipped: a run near the baseline's lr rises as it did.
  struct Stall {
    std::vector<StallPoint> points;
    double from = 0;       // the first and last windows skipped, E_0
    double to = 0;
    std::string evidence;  // which of the two, for the prediction's note
  };
  std::vector<Stall> baseline_stalls() const;
  // One predict() call: the run's setting and its path (large_batch.cpp).
  class Run;
  // Sets pace_scale_ and pace_reason_ (LargeBatchSettings::pace_probe).
  void read_pace_probe();

  BaselineCurve baseline_;
  LargeBatchSettings settings_;
  double target_loss_;
  std::string target_source_;
  PastBoundReading past_bound_;
  // LargeBatchSettings::pace_probe: set once by the constructor (k_x and k_n 1 until then).
  std::optional<PaceScale> pace_scale_;
  std::string pace_reason_;
};

}  // namespace trainsim
