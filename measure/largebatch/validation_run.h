#pragma once
// One real training run of the large-batch validation (issue 5, docs/LARGE_BATCH.md
// "Validation"): the small MLP of models/small.h on the Gaussian-mixture task of mixture_task.h,
// plain SGD at a constant learning rate, fresh training samples every step, the loss measured on
// a fixed held-out set until it reaches a target. Optionally it measures the gradient noise scale
// along the way (micro-batches, trainsim::GradientNoiseEstimator).

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "largebatch/mixture_task.h"
#include "models/small.h"

namespace trainsim::measure {

// Stream numbers of MixtureTask::sample: repeat r of a run trains on stream kTrainStream + r.
inline constexpr uint64_t kHeldOutStream = 1;
inline constexpr uint64_t kTrainStream = 2;

// The task, the model's shape and its initial weights: every run starts from the same model.
struct ValidationProblem {
  ValidationProblem(const MixtureSpec& mixture, std::vector<int64_t> hidden, int64_t held_out_samples,
                    uint64_t init_seed);

  MixtureTask task;
  std::vector<int64_t> hidden;
  torch::Tensor held_out_inputs;  // [H, D] float32: samples 0..H-1 of kHeldOutStream
  torch::Tensor held_out_labels;  // [H] int64
  double bayes_loss = 0;          // the Bayes-optimal classifier's loss on the held-out set
  models::SmallMlp initial{nullptr};

  // A fresh model with the initial weights.
  models::SmallMlp make_model() const;
  // Mean cross-entropy of `model` on the held-out set.
  double held_out_loss(models::SmallMlp& model) const;
};

struct RunSettings {
  int64_t batch = 32;
  double lr = 0.1;
  // Independent copies of the run (same initial weights, training streams kTrainStream + r)
  // trained in lockstep; the held-out loss is their mean, an estimate of the expected loss that
  // is far less noisy than one run's. The target is reached when the mean is <= target_loss.
  int repeats = 1;
  double momentum = 0;
  // >= 2: every step's gradient is computed in this many micro-batches and the noise scale is
  // measured (batch must be divisible by it); 1: a plain step.
  int64_t micro_batches = 1;
  double ema_decay = 0.99;    // of the noise-scale averages
  double target_loss = 0;     // stop once the held-out loss is <= this
  int64_t max_steps = 1000;   // stop (not reached) after this many steps
  // Stop as diverged when the held-out loss is non-finite or above this factor x the initial one.
  double divergence_factor = 2;
};

// A held-out evaluation after `step` optimiser steps (the mean over the repeats), with the
// noise-scale averages then (when measured and both averages are positive).
struct CurvePoint {
  int64_t step = 0;
  double loss = 0;
  std::optional<double> grad_sq_norm;  // EMA of |G|^2
  std::optional<double> trace_sigma;   // EMA of tr(Sigma)
  std::optional<double> noise_scale;   // B_simple = trace_sigma / grad_sq_norm
};

struct RunResult {
  // Steps to reach the target, linearly interpolated between the two evaluations around the
  // first crossing; nullopt when not reached.
  std::optional<double> steps_to_target;
  bool diverged = false;
  // Stopped on a plateau above the target: no progress in the second half of the run (from step
  // kPlateauMinSteps on), progress being a new lowest loss that closes at least
  // kProgressFraction of the remaining gap to the target. At a rate this large for the batch,
  // the noise floor of constant-rate SGD lies above the target.
  bool stalled = false;
  int64_t steps_run = 0;
  std::vector<CurvePoint> curve;  // from step 0 (the initial model) to the last evaluation
};

inline constexpr int64_t kPlateauMinSteps = 256;
inline constexpr double kProgressFraction = 0.01;

// Held-out evaluations are due at every step below 128, then every 2^floor(log2(step / 64))
// steps (64 evaluations per doubling of the steps: a resolution of 1/64 of the steps taken or
// better). A run also evaluates at max_steps.
bool evaluation_due(int64_t step);

// Trains `repeats` copies from problem.initial with SGD (lr, momentum, no weight decay), copy r on
// samples step * batch .. (step + 1) * batch - 1 of stream kTrainStream + r at step `step` (runs
// at every batch size read the same sequences). With micro-batches, each step's squared norms are
// averaged over the repeats before they enter the estimator. Throws std::invalid_argument for a
// batch < 1, micro_batches < 1 or not dividing the batch, repeats < 1, max_steps < 1, a
// non-positive target, lr < 0, or an initial loss already at the target.
RunResult train_to_target(const ValidationProblem& problem, const RunSettings& settings);

}  // namespace trainsim::measure
