#pragma once
// The large-batch validation on this machine (issue 5, docs/LARGE_BATCH.md "Validation"): real
// training of a small model at several batch sizes with the learning rate tuned per batch, the
// steps each needs to reach a target held-out loss, and the McCandlish prediction of those steps
// from the baseline batch alone (its steps and the noise scale it measured along the way).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "largebatch/mixture_task.h"
#include "largebatch/validation_run.h"

namespace trainsim::measure {

struct ValidationOptions {
  MixtureSpec mixture;
  std::vector<int64_t> hidden = {64};            // widths of the MLP's hidden layers (empty: softmax regression)
  int64_t held_out = 1024;                       // held-out samples the target loss is measured on
  std::vector<int64_t> batches = {8, 16, 32, 64, 128, 256};  // strictly ascending, all run
  int64_t base_batch = 16;                       // the baseline (one of `batches`)
  int64_t micro_batches = 4;                     // of the baseline's noise-scale measurement
  std::vector<double> lrs;                       // the grid, tried in descending order
  int repeats = 3;                               // copies per run; the target is on their mean loss
  double momentum = 0;
  double ema_decay = 0.99;
  double target_loss = 0.5;
  int64_t max_steps = 20000;                     // per run
  uint64_t seed = 0;                             // task, initial weights, every stream
  int threads = 1;                               // batch sizes trained in parallel (1 intra-op thread each)
};

// Throws std::invalid_argument naming the option that is wrong: fewer than 2 batches, not
// ascending, the base batch not among them or not divisible by micro_batches (>= 2), an empty
// or non-positive lr grid, and the rest of RunSettings' conditions.
void validate(const ValidationOptions& options);

// One learning rate tried at one batch size.
struct LrTrial {
  double lr = 0;
  RunResult run;
  int64_t step_limit = 0;  // max_steps of the run: the best steps so far (rounded up) prune it
};

// All trials at one batch size; `best` indexes the fewest steps to the target.
struct BatchTrials {
  int64_t batch = 0;
  std::vector<LrTrial> trials;
  std::optional<size_t> best;
  bool best_at_grid_edge = false;  // the best lr is the grid's largest or smallest
  const LrTrial* best_trial() const { return best ? &trials[*best] : nullptr; }
};

// The McCandlish prediction for one batch size and the measurement it is checked against.
struct BatchPrediction {
  int64_t batch = 0;
  bool is_base = false;                 // the baseline: used to fit, excluded from the error
  std::optional<double> measured;       // steps to the target at the best lr
  std::optional<double> best_lr;
  double predicted = 0;                 // integrated over the baseline's noise-scale curve (headline)
  double predicted_at_target = 0;       // with the noise scale at the target only (as `simulate` does)
  double perfect_scaling = 0;           // S_0 B_0 / B: what a batch far below B_noise would need
};

struct ValidationResult {
  std::vector<BatchTrials> batches;      // in options.batches order
  size_t base = 0;                       // index of the baseline in `batches`
  std::vector<CurvePoint> base_curve;    // the baseline's best run: loss and noise scale vs steps
  double base_steps = 0;                 // S_0
  double noise_at_target = 0;            // B_noise at the baseline's target crossing
  double min_steps = 0;                  // S_min = S_0 / (1 + B_noise / B_0) (at-target fit)
  std::vector<BatchPrediction> predictions;
  // Mean absolute percentage error over the non-baseline batch sizes that reached the target.
  double error_percent = 0;
  double error_at_target_percent = 0;
  double error_perfect_scaling_percent = 0;
  int compared = 0;                      // batch sizes in the error
  std::vector<int64_t> not_reached;      // batch sizes whose best lr never reached the target
};

// Progress lines (one per trial), from the worker threads; may be empty.
using ValidationLog = std::function<void(const std::string& line)>;

// Runs every batch size's lr grid (descending; each trial stops once it needs more steps than the
// best so far; the search stops after two trials in a row that do not improve on the best), then
// predicts. Throws std::invalid_argument as validate() does, and std::runtime_error when the
// baseline never reached the target or its noise scale could not be measured there.
ValidationResult run_validation(const ValidationOptions& options, const ValidationLog& log);

// The headline prediction, integrated along the baseline: each stretch of dS_0 baseline steps at
// noise scale B_n is worth dS_min = dS_0 / (1 + B_n/B_0) (min_steps_from) and costs
// dS_min (1 + B_n/B) steps at batch B (steps_at_batch), summed up to S_0. `curve` holds the
// baseline's evaluations (steps ascending, from 0); each stretch takes the noise scale measured
// at its end (the first measured one before any was). Throws std::invalid_argument when the curve
// has no noise scale at all or does not reach base_steps.
double integrated_steps(const std::vector<CurvePoint>& curve, double base_steps, int64_t base_batch, int64_t batch);

// "steps-to-target error: X.X% over N batch sizes"
std::string error_line(const ValidationResult& result);

}  // namespace trainsim::measure
