#pragma once
// The large-batch validation on this machine (issue 5, docs/LARGE_BATCH.md "Validation"): real
// training of a small model at several batch sizes with the learning rate tuned per batch, the
// steps each needs to reach a target held-out loss, and the McCandlish prediction of those steps
// from the baseline batch alone (its steps and the noise scale it measured along the way). Run
// for several cases: target losses (a gap above the task's Bayes-optimal loss) and seeds (task,
// initial weights and data).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "largebatch/mixture_task.h"
#include "largebatch/validation_run.h"

namespace trainsim::measure {

struct ValidationOptions {
  MixtureSpec mixture;                           // its seed is set per case
  std::vector<int64_t> hidden = {64};            // widths of the MLP's hidden layers (empty: softmax regression)
  int64_t held_out = 1024;                       // held-out samples the target loss is measured on
  std::vector<int64_t> batches = {8, 16, 32, 64, 128, 256};  // strictly ascending, all run
  int64_t base_batch = 16;                       // the baseline (one of `batches`)
  int64_t micro_batches = 4;                     // of the baseline's noise-scale measurement
  std::vector<double> lrs;                       // the grid, tried in descending order
  int repeats = 3;                               // copies per run; the target is on their mean loss
  double momentum = 0;
  double ema_decay = 0.99;
  // Cases: every gap with every seed. Target loss = the Bayes-optimal loss on the held-out set +
  // the gap.
  std::vector<double> target_gaps = {0.2, 0.15, 0.1};
  std::vector<uint64_t> seeds = {0, 1};
  int64_t max_steps = 20000;                     // per run
  int threads = 1;                               // cases in parallel, 1 intra-op thread each
};

// Throws std::invalid_argument naming the option that is wrong: fewer than 2 batches, not
// ascending, the base batch not among them or not divisible by micro_batches (>= 2), an empty
// or non-positive lr grid, no gap or seed, a gap <= 0, and the rest of RunSettings' conditions.
void validate(const ValidationOptions& options);

// An lr walk at a batch size stops after this many trials in a row without a new best.
inline constexpr int kTrialsWithoutImprovement = 2;

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
  double predicted = 0;                 // S_min (1 + B_noise/B), B_noise at the target (headline; as `simulate`)
  double predicted_integrated = 0;      // the same integrated along the baseline's noise-scale curve
  double perfect_scaling = 0;           // S_0 B_0 / B: what a batch far below B_noise would need
};

// One case: a seed and a target.
struct ValidationCase {
  uint64_t seed = 0;
  double target_gap = 0;
  double bayes_loss = 0;                 // on the held-out set
  double target_loss = 0;                // bayes_loss + target_gap
  std::vector<BatchTrials> batches;      // in options.batches order
  size_t base = 0;                       // index of the baseline in `batches`
  std::vector<CurvePoint> base_curve;    // the baseline's best run: loss and noise scale vs steps
  double base_steps = 0;                 // S_0
  double noise_at_target = 0;            // B_noise at the baseline's target crossing
  double min_steps = 0;                  // S_min = S_0 / (1 + B_noise / B_0)
  std::vector<BatchPrediction> predictions;
  std::vector<int64_t> not_reached;      // batch sizes whose best lr never reached the target
  // Why the case could not be predicted (its baseline never reached the target, or its noise
  // scale was not measurable there); empty when it was. Such a case is left out of the error.
  std::string failure;
};

struct ValidationResult {
  std::vector<ValidationCase> cases;     // seeds outer, gaps inner, in options order
  // Mean absolute percentage errors over every (case, non-baseline batch) that reached the target.
  double error_percent = 0;              // the headline prediction
  double error_integrated_percent = 0;
  double error_perfect_scaling_percent = 0;
  int comparisons = 0;
  int batch_sizes = 0;                   // distinct batch sizes among the comparisons
};

// Progress lines (one per trial), from the worker threads; may be empty.
using ValidationLog = std::function<void(const std::string& line)>;

// Runs every case's and batch size's lr search (search_case in validation.cpp: each trial stops
// once it needs more steps than the best so far; a walk over the grid stops after
// kTrialsWithoutImprovement trials in a row without a new best), then predicts each case from
// its baseline. Throws
// std::invalid_argument as validate() does, and std::runtime_error when no case could be
// compared at all (every case's `failure` in the message).
ValidationResult run_validation(const ValidationOptions& options, const ValidationLog& log);

// The integrated prediction along the baseline: each stretch of dS_0 baseline steps at noise
// scale B_n is worth dS_min = dS_0 / (1 + B_n/B_0) (min_steps_from) and costs dS_min (1 + B_n/B)
// steps at batch B (steps_at_batch), summed up to S_0. `curve` holds the baseline's evaluations
// (steps ascending, from 0); each stretch takes the noise scale measured at its end (the first
// measured one before any was). Throws std::invalid_argument when the curve has no noise scale at
// all or does not reach base_steps.
double integrated_steps(const std::vector<CurvePoint>& curve, double base_steps, int64_t base_batch, int64_t batch);

// "steps-to-target error: X.X% over N batch sizes" (N distinct batch sizes; the mean is over
// every case).
std::string error_line(const ValidationResult& result);

}  // namespace trainsim::measure
