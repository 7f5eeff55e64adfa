// Learning-rate schedules of the real trainers (measure/largebatch/lr_schedule.h).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "largebatch/lr_schedule.h"

namespace trainsim::measure {
namespace {

LrSchedule schedule(LrRule rule, int64_t batch) {
  LrSchedule s;
  s.rule = rule;
  s.base_lr = 0.1;
  s.base_batch = 128;
  s.batch = batch;
  s.warmup_epochs = 5;
  s.steps_per_epoch = 10;  // warm-up W = 5 * 10 = 50 steps
  return s;
}

TEST(LrSchedule, RulesAfterWarmup) {
  // B = 512 = 4 B_0: constant 0.1; linear 0.1 * 4 = 0.4; sqrt 0.1 * sqrt(4) = 0.2.
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kConstant, 512)), 0.1);
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kLinear, 512)), 0.4);
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kLinearWarmup, 512)), 0.4);
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kSqrt, 512)), 0.2);
  // B = 32 = B_0 / 4: linear 0.025, sqrt 0.05.
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kLinear, 32)), 0.025);
  EXPECT_DOUBLE_EQ(target_learning_rate(schedule(LrRule::kSqrt, 32)), 0.05);
}

TEST(LrSchedule, RulesWithoutWarmupAreConstantOverSteps) {
  for (LrRule rule : {LrRule::kConstant, LrRule::kLinear, LrRule::kSqrt}) {
    const auto s = schedule(rule, 512);
    EXPECT_DOUBLE_EQ(learning_rate_at(s, 0), target_learning_rate(s)) << to_string(rule);
    EXPECT_DOUBLE_EQ(learning_rate_at(s, 1000), target_learning_rate(s)) << to_string(rule);
  }
}

TEST(LrSchedule, GoyalWarmupRampsPerIteration) {
  const auto s = schedule(LrRule::kLinearWarmup, 512);
  // lr(t) = 0.1 + (0.4 - 0.1) t / 50 for t < 50, then 0.4.
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 1), 0.1 + 0.3 / 50);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 25), 0.25);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 49), 0.1 + 0.3 * 49 / 50);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 50), 0.4);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 10000), 0.4);
}

TEST(LrSchedule, WarmupTowardsASmallerBatchRampsDown) {
  // B = 32: target 0.025; halfway (t = 25): 0.1 + (0.025 - 0.1) / 2 = 0.0625.
  const auto s = schedule(LrRule::kLinearWarmup, 32);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 25), 0.0625);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 50), 0.025);
}

TEST(LrSchedule, ZeroWarmupStartsAtTheTarget) {
  auto s = schedule(LrRule::kLinearWarmup, 512);
  s.warmup_epochs = 0;
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0), 0.4);
}

TEST(LrSchedule, FractionalWarmupEpochs) {
  auto s = schedule(LrRule::kLinearWarmup, 256);
  s.warmup_epochs = 0.5;  // W = 5 steps; target 0.2
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0), 0.1);
  EXPECT_NEAR(learning_rate_at(s, 4), 0.1 + 0.1 * 4 / 5, 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 5), 0.2);
}

TEST(LrSchedule, BadInputsThrow) {
  auto s = schedule(LrRule::kLinear, 512);
  EXPECT_THROW(learning_rate_at(s, -1), std::invalid_argument);
  s.batch = 0;
  EXPECT_THROW(learning_rate_at(s, 0), std::invalid_argument);
  s = schedule(LrRule::kLinear, 512);
  s.base_batch = 0;
  EXPECT_THROW(target_learning_rate(s), std::invalid_argument);
  s = schedule(LrRule::kLinear, 512);
  s.base_lr = -0.1;
  EXPECT_THROW(target_learning_rate(s), std::invalid_argument);
  s = schedule(LrRule::kLinear, 512);
  s.steps_per_epoch = 0;
  EXPECT_THROW(validate(s), std::invalid_argument);
  s = schedule(LrRule::kLinearWarmup, 512);
  s.warmup_epochs = std::nan("");
  EXPECT_THROW(validate(s), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::measure
