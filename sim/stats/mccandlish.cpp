#include "stats/mccandlish.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace trainsim {
namespace {

void require(bool ok, const char* function, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(function) + ": " + what);
}

void require_batch(double batch, const char* function) {
  require(std::isfinite(batch) && batch >= 1, function, "batch must be >= 1, got " + std::to_string(batch));
}

void require_noise(double noise_scale, bool positive, const char* function) {
  const bool ok = std::isfinite(noise_scale) && (positive ? noise_scale > 0 : noise_scale >= 0);
  require(ok, function, std::string("noise scale must be ") + (positive ? "> 0" : ">= 0") + ", got " +
                            std::to_string(noise_scale));
}

void require_count(double count, const char* function, const char* name) {
  require(std::isfinite(count) && count > 0, function, std::string(name) + " must be > 0");
}

}  // namespace

double steps_at_batch(double min_steps, double noise_scale, double batch) {
  require_count(min_steps, "steps_at_batch", "min_steps");
  require_noise(noise_scale, false, "steps_at_batch");
  require_batch(batch, "steps_at_batch");
  return min_steps * (1 + noise_scale / batch);  // S = S_min (1 + B_noise/B)
}

double examples_at_batch(double min_examples, double noise_scale, double batch) {
  require_count(min_examples, "examples_at_batch", "min_examples");
  require_noise(noise_scale, true, "examples_at_batch");
  require_batch(batch, "examples_at_batch");
  return min_examples * (1 + batch / noise_scale);  // E = E_min (1 + B/B_noise)
}

double min_steps_from(double batch, double steps, double noise_scale) {
  require_batch(batch, "min_steps_from");
  require_count(steps, "min_steps_from", "steps");
  require_noise(noise_scale, false, "min_steps_from");
  return steps / (1 + noise_scale / batch);  // S_min = S / (1 + B_noise/B)
}

double min_examples_from(double batch, double steps, double noise_scale) {
  require_batch(batch, "min_examples_from");
  require_count(steps, "min_examples_from", "steps");
  require_noise(noise_scale, true, "min_examples_from");
  return batch * steps / (1 + batch / noise_scale);  // E_min = E / (1 + B/B_noise), E = B S
}

double critical_batch(double min_examples, double min_steps) {
  require_count(min_examples, "critical_batch", "min_examples");
  require_count(min_steps, "critical_batch", "min_steps");
  return min_examples / min_steps;  // B_crit = E_min / S_min
}

McCandlishFit fit_two_runs(double batch1, double steps1, double batch2, double steps2) {
  require_batch(batch1, "fit_two_runs");
  require_batch(batch2, "fit_two_runs");
  require_count(steps1, "fit_two_runs", "steps1");
  require_count(steps2, "fit_two_runs", "steps2");
  require(batch1 != batch2, "fit_two_runs", "the two batches must differ");
  // S_i = S_min + (S_min B_noise) / B_i: a line in 1/B_i.
  const double slope = (steps1 - steps2) / (1 / batch1 - 1 / batch2);  // S_min B_noise
  const double min_steps = steps1 - slope / batch1;
  require(min_steps > 0 && slope >= 0, "fit_two_runs",
          "the runs contradict S = S_min (1 + B_noise/B) (fewer steps at the smaller batch, or S_min <= 0)");
  McCandlishFit fit;
  fit.min_steps = min_steps;
  fit.noise_scale = slope / min_steps;
  fit.min_examples = slope;  // E_min = S_min B_noise
  return fit;
}

double pollux_efficiency(double noise_scale, double base_batch, double batch) {
  require_batch(batch, "pollux_efficiency");
  require_batch(base_batch, "pollux_efficiency");
  require_noise(noise_scale, false, "pollux_efficiency");
  return (noise_scale + base_batch) / (noise_scale + batch);  // (phi + M0) / (phi + M)
}

}  // namespace trainsim
