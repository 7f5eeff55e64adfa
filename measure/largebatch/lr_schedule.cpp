#include "largebatch/lr_schedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace trainsim::measure {

void validate(const LrSchedule& s) {
  if (!std::isfinite(s.base_lr) || s.base_lr < 0) {
    throw std::invalid_argument("lr schedule: base lr must be finite and >= 0, got " + std::to_string(s.base_lr));
  }
  if (s.batch < 1 || s.base_batch < 1) {
    throw std::invalid_argument("lr schedule: batch and base batch must be >= 1, got " + std::to_string(s.batch) +
                                " and " + std::to_string(s.base_batch));
  }
  if (s.steps_per_epoch < 1) {
    throw std::invalid_argument("lr schedule: steps per epoch must be >= 1, got " +
                                std::to_string(s.steps_per_epoch));
  }
  if (s.rule == LrRule::kLinearWarmup && !(std::isfinite(s.warmup_epochs) && s.warmup_epochs >= 0)) {
    throw std::invalid_argument("lr schedule: warm-up epochs must be finite and >= 0, got " +
                                std::to_string(s.warmup_epochs));
  }
}

double target_learning_rate(const LrSchedule& s) {
  validate(s);
  return s.base_lr * lr_ratio(s.rule, static_cast<double>(s.batch), static_cast<double>(s.base_batch));
}

double learning_rate_at(const LrSchedule& s, int64_t step) {
  if (step < 0) throw std::invalid_argument("lr schedule: step must be >= 0, got " + std::to_string(step));
  const double target = target_learning_rate(s);
  if (s.rule != LrRule::kLinearWarmup) return target;
  const double warmup_steps = s.warmup_epochs * static_cast<double>(s.steps_per_epoch);
  const double t = static_cast<double>(step);
  if (t >= warmup_steps) return target;
  return s.base_lr + (target - s.base_lr) * t / warmup_steps;  // lr_0 + (lr_target - lr_0) t / W
}

}  // namespace trainsim::measure
