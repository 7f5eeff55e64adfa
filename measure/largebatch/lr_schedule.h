#pragma once
// Learning-rate schedules of the real trainers (issue 5): the rule's target rate for a global batch
// B relative to the base batch B_0, and Goyal et al.'s linear warm-up towards it. Torch-free, so
// `measure train` (measure/runs) and `measure baseline` share it; the rules themselves
// (trainsim::LrRule, lr_ratio) are format/lr_rule.h, the ones `simulate` reasons about.

#include <cstdint>

#include "format/lr_rule.h"

namespace trainsim::measure {

struct LrSchedule {
  LrRule rule = LrRule::kConstant;
  double base_lr = 0.1;        // lr_0: the rate at the base batch
  int64_t base_batch = 128;    // B_0 (--lr-base-batch)
  int64_t batch = 128;         // B: the global batch of this run
  double warmup_epochs = 5;    // k of linear-warmup (Goyal et al. use 5); ignored by other rules
  int64_t steps_per_epoch = 1; // optimiser steps per epoch (the warm-up ramps per iteration)
};

// Throws std::invalid_argument for a non-finite or negative base_lr, a batch or base_batch < 1,
// steps_per_epoch < 1, or (linear-warmup) a negative or non-finite warmup_epochs.
void validate(const LrSchedule& schedule);

// The rule's rate after any warm-up: lr_0 * lr_ratio(rule, B, B_0), i.e.
//   constant: lr_0;  linear and linear-warmup: lr_0 B / B_0;  sqrt: lr_0 sqrt(B / B_0).
double target_learning_rate(const LrSchedule& schedule);

// The rate of optimiser step `step` (0-based, counted over the whole run). linear-warmup ramps
// linearly per iteration from lr_0 to the target over W = warmup_epochs * steps_per_epoch steps
// (Goyal et al. 2017):  lr(t) = lr_0 + (lr_target - lr_0) * t / W  for t < W, lr_target after.
// Every other rule is constant at its target. Throws as validate() does, or for step < 0.
double learning_rate_at(const LrSchedule& schedule, int64_t step);

}  // namespace trainsim::measure
