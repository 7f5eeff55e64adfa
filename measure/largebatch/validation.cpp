#include "largebatch/validation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "stats/mccandlish.h"

namespace trainsim::measure {
namespace {

// A trial stops searching lower rates after this many trials in a row without a new best.
constexpr int kTrialsWithoutImprovement = 2;

std::string format_double(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

BatchTrials search_learning_rate(const ValidationProblem& problem, const ValidationOptions& o, int64_t batch,
                                 const ValidationLog& log) {
  BatchTrials result;
  result.batch = batch;
  std::vector<double> grid = o.lrs;
  std::sort(grid.begin(), grid.end(), std::greater<double>());
  double best_steps = std::numeric_limits<double>::infinity();
  int without_improvement = 0;
  for (double lr : grid) {
    RunSettings settings;
    settings.batch = batch;
    settings.lr = lr;
    settings.momentum = o.momentum;
    settings.repeats = o.repeats;
    settings.micro_batches = batch == o.base_batch ? o.micro_batches : 1;
    settings.ema_decay = o.ema_decay;
    settings.target_loss = o.target_loss;
    settings.max_steps = std::isfinite(best_steps)
                             ? std::min<int64_t>(o.max_steps, static_cast<int64_t>(std::ceil(best_steps)))
                             : o.max_steps;
    LrTrial trial{lr, train_to_target(problem, settings), settings.max_steps};
    const auto& steps = trial.run.steps_to_target;
    const bool improved = steps && *steps < best_steps;
    if (log) {
      log("batch " + std::to_string(batch) + " lr " + format_double(lr) + ": " +
          (steps ? format_double(*steps) + " steps to the target" + (improved ? " (best so far)" : "")
                 : trial.run.diverged ? "diverged at step " + std::to_string(trial.run.steps_run)
                 : trial.run.stalled  ? "stalled above the target at step " + std::to_string(trial.run.steps_run)
                                      : "not reached in " + std::to_string(trial.run.steps_run) + " steps"));
    }
    result.trials.push_back(std::move(trial));
    if (improved) {
      best_steps = *steps;
      result.best = result.trials.size() - 1;
      without_improvement = 0;
    } else if (result.best && ++without_improvement >= kTrialsWithoutImprovement) {
      break;
    }
  }
  if (result.best) {
    const double lr = result.trials[*result.best].lr;
    result.best_at_grid_edge = lr == grid.front() || lr == grid.back();
  }
  return result;
}

double percent_error(double predicted, double measured) { return 100.0 * std::abs(predicted - measured) / measured; }

}  // namespace

void validate(const ValidationOptions& o) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (o.batches.size() < 2) fail("batches: need at least 2 batch sizes");
  for (size_t i = 0; i < o.batches.size(); ++i) {
    if (o.batches[i] < 1 || (i > 0 && o.batches[i] <= o.batches[i - 1])) {
      fail("batches: must be >= 1 and strictly ascending");
    }
  }
  if (std::find(o.batches.begin(), o.batches.end(), o.base_batch) == o.batches.end()) {
    fail("base batch " + std::to_string(o.base_batch) + " is not among the batches");
  }
  if (o.micro_batches < 2 || o.base_batch % o.micro_batches != 0) {
    fail("micro-batches: need >= 2, dividing the base batch " + std::to_string(o.base_batch));
  }
  if (o.lrs.empty()) fail("lrs: the learning-rate grid is empty");
  for (double lr : o.lrs) {
    if (!(lr > 0) || !std::isfinite(lr)) fail("lrs: every learning rate must be finite and > 0");
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) fail("momentum: must be in [0, 1)");
  if (!(o.ema_decay >= 0 && o.ema_decay < 1)) fail("ema-decay: must be in [0, 1)");
  if (!(o.target_loss > 0) || !std::isfinite(o.target_loss)) fail("target-loss: must be finite and > 0");
  if (o.max_steps < 1) fail("max-steps: must be >= 1");
  if (o.held_out < 1) fail("held-out: must be >= 1");
  if (o.threads < 1) fail("threads: must be >= 1");
  if (o.repeats < 1) fail("repeats: must be >= 1");
}

double integrated_steps(const std::vector<CurvePoint>& curve, double base_steps, int64_t base_batch,
                        int64_t batch) {
  std::optional<double> first_noise;
  for (const auto& p : curve) {
    if (p.noise_scale) {
      first_noise = p.noise_scale;
      break;
    }
  }
  if (!first_noise) throw std::invalid_argument("integrated_steps: the curve has no noise scale");
  if (curve.empty() || curve.back().step < base_steps) {
    throw std::invalid_argument("integrated_steps: the curve ends before the baseline's steps to the target");
  }
  double steps = 0;
  for (size_t i = 1; i < curve.size(); ++i) {
    const double begin = static_cast<double>(curve[i - 1].step);
    const double end = std::min(static_cast<double>(curve[i].step), base_steps);
    if (end <= begin) break;
    const double noise = curve[i].noise_scale.value_or(*first_noise);
    // dS_min = dS_0 / (1 + B_n/B_0), then dS_B = dS_min (1 + B_n/B)
    const double min_steps = min_steps_from(static_cast<double>(base_batch), end - begin, noise);
    steps += steps_at_batch(min_steps, noise, static_cast<double>(batch));
  }
  return steps;
}

ValidationResult run_validation(const ValidationOptions& o, const ValidationLog& log) {
  validate(o);
  const ValidationProblem problem(o.mixture, o.hidden, o.held_out, o.seed);
  ValidationResult result;
  result.batches.resize(o.batches.size());

  // Batch sizes in parallel, smallest (slowest) first; each one's grid search is sequential and
  // depends on nothing else, so the results do not depend on the thread count.
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (size_t i = next++; i < o.batches.size(); i = next++) {
        result.batches[i] = search_learning_rate(problem, o, o.batches[i], log);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  const size_t thread_count = std::min<size_t>(static_cast<size_t>(o.threads), o.batches.size());
  for (size_t t = 0; t < thread_count; ++t) workers.emplace_back(worker);
  for (auto& w : workers) w.join();
  if (error) std::rethrow_exception(error);

  result.base = static_cast<size_t>(std::find(o.batches.begin(), o.batches.end(), o.base_batch) - o.batches.begin());
  const LrTrial* base_best = result.batches[result.base].best_trial();
  if (!base_best) {
    throw std::runtime_error("the baseline (batch " + std::to_string(o.base_batch) + ") reached the target loss " +
                             format_double(o.target_loss) + " at no learning rate of the grid within " +
                             std::to_string(o.max_steps) + " steps");
  }
  result.base_curve = base_best->run.curve;
  result.base_steps = *base_best->run.steps_to_target;
  const auto& at_target = result.base_curve.back();  // the evaluation where the loss reached the target
  if (!at_target.noise_scale) {
    throw std::runtime_error("the baseline's noise scale is not measurable at the target (|G|^2 average <= 0)");
  }
  result.noise_at_target = *at_target.noise_scale;
  // S_min = S_0 / (1 + B_noise / B_0), fitted from the baseline alone
  result.min_steps = min_steps_from(static_cast<double>(o.base_batch), result.base_steps, result.noise_at_target);

  double error_sum = 0;
  double error_at_target_sum = 0;
  double error_perfect_sum = 0;
  for (const auto& b : result.batches) {
    BatchPrediction p;
    p.batch = b.batch;
    p.is_base = b.batch == o.base_batch;
    if (const LrTrial* best = b.best_trial()) {
      p.measured = best->run.steps_to_target;
      p.best_lr = best->lr;
    }
    p.predicted = integrated_steps(result.base_curve, result.base_steps, o.base_batch, b.batch);
    p.predicted_at_target = steps_at_batch(result.min_steps, result.noise_at_target, static_cast<double>(b.batch));
    p.perfect_scaling = result.base_steps * static_cast<double>(o.base_batch) / static_cast<double>(b.batch);
    if (!p.is_base) {
      if (p.measured) {
        error_sum += percent_error(p.predicted, *p.measured);
        error_at_target_sum += percent_error(p.predicted_at_target, *p.measured);
        error_perfect_sum += percent_error(p.perfect_scaling, *p.measured);
        ++result.compared;
      } else {
        result.not_reached.push_back(b.batch);
      }
    }
    result.predictions.push_back(p);
  }
  if (result.compared > 0) {
    result.error_percent = error_sum / result.compared;
    result.error_at_target_percent = error_at_target_sum / result.compared;
    result.error_perfect_scaling_percent = error_perfect_sum / result.compared;
  }
  return result;
}

std::string error_line(const ValidationResult& result) {
  char text[128];
  std::snprintf(text, sizeof text, "steps-to-target error: %.1f%% over %d batch sizes", result.error_percent,
                result.compared);
  return text;
}

}  // namespace trainsim::measure
