#include "largebatch/validation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "format/metrics.h"
#include "stats/mccandlish.h"

namespace trainsim::measure {
namespace {

std::string format_double(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string case_label(const ValidationCase& c) {
  return "seed " + std::to_string(c.seed) + " gap " + format_double(c.target_gap);
}

// One trial of `lr` at `batch`, limited to the best steps so far (rounded up) when there is one.
LrTrial run_trial(const ValidationProblem& problem, const ValidationOptions& o, double target_loss, int64_t batch,
                  double lr, double best_steps) {
  RunSettings settings;
  settings.batch = batch;
  settings.lr = lr;
  settings.momentum = o.momentum;
  settings.repeats = o.repeats;
  settings.micro_batches = batch == o.base_batch ? o.micro_batches : 1;
  settings.ema_decay = o.ema_decay;
  settings.target_loss = target_loss;
  settings.max_steps = std::isfinite(best_steps)
                           ? std::min<int64_t>(o.max_steps, static_cast<int64_t>(std::ceil(best_steps)))
                           : o.max_steps;
  return LrTrial{lr, train_to_target(problem, settings), settings.max_steps};
}

// The lr search at one batch size over the grid (sorted descending). Starts at grid[start]; when
// that reaches the target, walks up to larger rates while they keep improving, then (always)
// down to smaller ones; a walk stops after kTrialsWithoutImprovement trials in a row without a
// new best once there is one. Every trial is pruned at the best steps so far.
BatchTrials search_learning_rate(const ValidationProblem& problem, const ValidationOptions& o, double target_loss,
                                 int64_t batch, const std::vector<double>& grid, size_t start,
                                 const std::string& label, const ValidationLog& log) {
  BatchTrials result;
  result.batch = batch;
  double best_steps = std::numeric_limits<double>::infinity();
  // Runs grid[i]; returns whether it set a new best.
  auto trial = [&](size_t i) {
    LrTrial t = run_trial(problem, o, target_loss, batch, grid[i], best_steps);
    const auto& steps = t.run.steps_to_target;
    const bool improved = steps && *steps < best_steps;
    if (log) {
      log(label + " batch " + std::to_string(batch) + " lr " + format_double(grid[i]) + ": " +
          (steps ? format_double(*steps) + " steps to the target" + (improved ? " (best so far)" : "")
           : t.run.diverged ? "diverged at step " + std::to_string(t.run.steps_run)
           : t.run.stalled  ? "stalled above the target at step " + std::to_string(t.run.steps_run)
                            : "not reached in " + std::to_string(t.run.steps_run) + " steps"));
    }
    result.trials.push_back(std::move(t));
    if (improved) {
      best_steps = *steps;
      result.best = result.trials.size() - 1;
    }
    return improved;
  };
  // Walks from `from` in direction `step` (-1: larger rates, +1: smaller ones).
  auto walk = [&](size_t from, int step) {
    int without_improvement = 0;
    for (auto i = static_cast<std::ptrdiff_t>(from);
         i >= 0 && i < static_cast<std::ptrdiff_t>(grid.size()); i += step) {
      if (trial(static_cast<size_t>(i))) {
        without_improvement = 0;
      } else if (result.best && ++without_improvement >= kTrialsWithoutImprovement) {
        break;
      }
    }
  };
  trial(start);
  if (result.best && start > 0) walk(start - 1, -1);
  walk(start + 1, +1);
  if (result.best) {
    const double lr = result.trials[*result.best].lr;
    result.best_at_grid_edge = lr == grid.front() || lr == grid.back();
  }
  return result;
}

// The grid index nearest to `lr` (in log scale).
size_t nearest_index(const std::vector<double>& grid, double lr) {
  size_t nearest = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    if (std::abs(std::log(grid[i] / lr)) < std::abs(std::log(grid[nearest] / lr))) nearest = i;
  }
  return nearest;
}

// Every batch size of one case, ascending. The smallest starts at the grid's largest rate; each
// next one at the previous batch's best rate times sqrt(B / B_prev) (between no scaling and
// linear scaling: the walk up finds larger rates when they help).
void search_case(ValidationCase& c, const ValidationProblem& problem, const ValidationOptions& o,
                 const ValidationLog& log) {
  std::vector<double> grid = o.lrs;
  std::sort(grid.begin(), grid.end(), std::greater<double>());
  const std::string label = case_label(c);
  std::optional<double> previous_best;
  int64_t previous_batch = 0;
  for (size_t bi = 0; bi < o.batches.size(); ++bi) {
    const int64_t batch = o.batches[bi];
    const size_t start =
        previous_best ? nearest_index(grid, *previous_best * std::sqrt(static_cast<double>(batch) / previous_batch))
                      : 0;
    c.batches[bi] = search_learning_rate(problem, o, c.target_loss, batch, grid, start, label, log);
    const LrTrial* best = c.batches[bi].best_trial();
    previous_best = best ? std::optional<double>(best->lr) : std::nullopt;
    previous_batch = batch;
  }
}

double absolute_percent_error(double predicted, double measured) { return std::abs(percent_error(predicted, measured)); }

// The baseline's fit and every batch size's predictions of one case whose trials are done.
void predict(ValidationCase& c, const ValidationOptions& o) {
  const LrTrial* base_best = c.batches[c.base].best_trial();
  if (!base_best) {
    c.failure = "the baseline (batch " + std::to_string(o.base_batch) + ") reached the target loss " +
                format_double(c.target_loss) + " at no learning rate of the grid within " +
                std::to_string(o.max_steps) + " steps";
    return;
  }
  c.base_curve = base_best->run.curve;
  c.base_steps = *base_best->run.steps_to_target;
  const auto& at_target = c.base_curve.back();  // the evaluation where the loss reached the target
  if (!at_target.noise_scale) {
    c.failure = "the baseline's noise scale is not measurable at the target (|G|^2 average <= 0)";
    return;
  }
  c.noise_at_target = *at_target.noise_scale;
  // S_min = S_0 / (1 + B_noise / B_0), fitted from the baseline alone
  c.min_steps = min_steps_from(static_cast<double>(o.base_batch), c.base_steps, c.noise_at_target);
  for (const auto& b : c.batches) {
    BatchPrediction p;
    p.batch = b.batch;
    p.is_base = b.batch == o.base_batch;
    if (const LrTrial* best = b.best_trial()) {
      p.measured = best->run.steps_to_target;
      p.best_lr = best->lr;
    } else if (!p.is_base) {
      c.not_reached.push_back(b.batch);
    }
    // S = S_min (1 + B_noise / B)
    p.predicted = steps_at_batch(c.min_steps, c.noise_at_target, static_cast<double>(b.batch));
    p.predicted_integrated = integrated_steps(c.base_curve, c.base_steps, o.base_batch, b.batch);
    p.perfect_scaling = c.base_steps * static_cast<double>(o.base_batch) / static_cast<double>(b.batch);
    c.predictions.push_back(p);
  }
}

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
  if (o.target_gaps.empty()) fail("target-gaps: none given");
  for (double gap : o.target_gaps) {
    if (!(gap > 0) || !std::isfinite(gap)) fail("target-gaps: every gap must be finite and > 0");
  }
  if (o.seeds.empty()) fail("seeds: none given");
  if (!(o.momentum >= 0 && o.momentum < 1)) fail("momentum: must be in [0, 1)");
  if (!(o.ema_decay >= 0 && o.ema_decay < 1)) fail("ema-decay: must be in [0, 1)");
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
  // One problem per seed (task, held-out set, initial weights), shared by its gaps.
  std::map<uint64_t, std::unique_ptr<ValidationProblem>> problems;
  for (uint64_t seed : o.seeds) {
    if (problems.count(seed)) continue;
    MixtureSpec spec = o.mixture;
    spec.seed = seed;
    problems[seed] = std::make_unique<ValidationProblem>(spec, o.hidden, o.held_out, seed);
  }
  ValidationResult result;
  for (uint64_t seed : o.seeds) {
    for (double gap : o.target_gaps) {
      ValidationCase c;
      c.seed = seed;
      c.target_gap = gap;
      c.bayes_loss = problems[seed]->bayes_loss;
      c.target_loss = c.bayes_loss + gap;
      c.batches.resize(o.batches.size());
      c.base = static_cast<size_t>(std::find(o.batches.begin(), o.batches.end(), o.base_batch) - o.batches.begin());
      result.cases.push_back(std::move(c));
    }
  }

  // Cases in parallel; inside a case the batch sizes run in order (each starts its lr search from
  // the previous one's best), so the results do not depend on the thread count. Small gaps
  // (the slowest cases) first.
  std::vector<size_t> order(result.cases.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return result.cases[a].target_gap < result.cases[b].target_gap;
  });
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (size_t i = next++; i < order.size(); i = next++) {
        ValidationCase& c = result.cases[order[i]];
        search_case(c, *problems[c.seed], o, log);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = order.size();  // the others stop after their current case
    }
  };
  std::vector<std::thread> workers;
  const size_t thread_count = std::min<size_t>(static_cast<size_t>(o.threads), order.size());
  for (size_t t = 0; t < thread_count; ++t) workers.emplace_back(worker);
  for (auto& w : workers) w.join();
  if (error) std::rethrow_exception(error);

  double error_sum = 0;
  double integrated_sum = 0;
  double perfect_sum = 0;
  std::set<int64_t> compared;
  for (auto& c : result.cases) {
    predict(c, o);
    for (const auto& p : c.predictions) {
      if (p.is_base || !p.measured) continue;
      error_sum += absolute_percent_error(p.predicted, *p.measured);
      integrated_sum += absolute_percent_error(p.predicted_integrated, *p.measured);
      perfect_sum += absolute_percent_error(p.perfect_scaling, *p.measured);
      ++result.comparisons;
      compared.insert(p.batch);
    }
  }
  if (result.comparisons == 0) {
    std::string reasons;
    for (const auto& c : result.cases) {
      reasons += "; " + case_label(c) + ": " + (c.failure.empty() ? "no other batch size reached the target" : c.failure);
    }
    throw std::runtime_error("no batch size could be compared" + reasons);
  }
  result.batch_sizes = static_cast<int>(compared.size());
  result.error_percent = error_sum / result.comparisons;
  result.error_integrated_percent = integrated_sum / result.comparisons;
  result.error_perfect_scaling_percent = perfect_sum / result.comparisons;
  return result;
}

std::string error_line(const ValidationResult& result) {
  char text[128];
  std::snprintf(text, sizeof text, "steps-to-target error: %.1f%% over %d batch sizes", result.error_percent,
                result.batch_sizes);
  return text;
}

}  // namespace trainsim::measure
