// The pace probe's arithmetic (sim/stats/pace_probe.h): gains read off the continued baseline's
// readings, and the step equation's two coefficients solved back from two gains.
#include "stats/pace_probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace trainsim {
namespace {

TEST(PaceProbeGain, ReadsTheBaselineStepsLogLinearlyPerBranchStep) {
  const std::vector<double> counts = {60, 120, 240, 480, 960};
  const std::vector<double> losses = {0.70, 0.66, 0.60, 0.55, 0.50};
  // On a reading: that reading's steps over the branch's 60.
  EXPECT_DOUBLE_EQ(*gain_from_readings(counts, losses, 0.60, 60), 4.0);
  // Halfway in loss between 120 and 240 steps: their geometric mean.
  EXPECT_NEAR(*gain_from_readings(counts, losses, 0.63, 60), std::sqrt(120.0 * 240.0) / 60, 1e-12);
  // At or above the first reading, or below the last: outside the readings.
  EXPECT_FALSE(gain_from_readings(counts, losses, 0.70, 60));
  EXPECT_FALSE(gain_from_readings(counts, losses, 0.75, 60));
  EXPECT_FALSE(gain_from_readings(counts, losses, 0.49, 60));
  // A loss not finite (a branch that blew up) is outside too.
  EXPECT_FALSE(gain_from_readings(counts, losses, std::nan(""), 60));
  EXPECT_THROW(gain_from_readings({60}, {0.7}, 0.6, 60), std::invalid_argument);
  EXPECT_THROW(gain_from_readings({60, 60}, {0.7, 0.6}, 0.65, 60), std::invalid_argument);
  EXPECT_THROW(gain_from_readings({60, 120}, {0.7}, 0.65, 60), std::invalid_argument);
  EXPECT_THROW(gain_from_readings(counts, losses, 0.6, 0), std::invalid_argument);
}

TEST(PaceProbeGain, GeometricMean) {
  EXPECT_FALSE(geometric_mean({}));
  EXPECT_NEAR(*geometric_mean({1.5, 6}), 3.0, 1e-12);
  EXPECT_THROW(geometric_mean({1, 0}), std::invalid_argument);
}

// The step equation's gain by hand: x_0 = 0.624, B_n = B_0 (the model's reading at half an epoch on
// fashion-cnn-gap, alpha = nu = 0.312): 16x the batch at the same lr, x = 0.312 + 0.312/16 = 0.3315,
// (1 - x/2) / (1 - x_0/2) = 0.83425 / 0.688.
TEST(PaceProbeStepEquation, GainByHand) {
  EXPECT_NEAR(step_equation_gain(0.312, 0.312, 16, 1), 0.83425 / 0.688, 1e-12);
  // 4x the lr at 4x the batch: 4 (1 - 4 (0.312 + 0.078) / 2) / 0.688.
  EXPECT_NEAR(step_equation_gain(0.312, 0.312, 4, 4), 4 * (1 - 2 * 0.39) / 0.688, 1e-12);
  // The baseline itself gains 1.
  EXPECT_DOUBLE_EQ(step_equation_gain(0.2, 0.5, 1, 1), 1.0);
  EXPECT_THROW(step_equation_gain(1.5, 0.5, 16, 1), std::invalid_argument);
  EXPECT_THROW(step_equation_gain(-0.1, 0.5, 16, 1), std::invalid_argument);
}

TEST(PaceProbeStepEquation, SolvesBackTheCoefficientsOfTwoGains) {
  for (const auto& [alpha, nu] : {std::pair{0.076, 0.457}, std::pair{0.184, 0.735}, std::pair{0.3, 0.0}}) {
    const double g1 = step_equation_gain(alpha, nu, 16, 1);
    const double g2 = step_equation_gain(alpha, nu, 16, 4);
    const auto solved = solve_step_equation(16, 1, g1, 16, 4, g2);
    ASSERT_TRUE(solved) << alpha << ", " << nu;
    EXPECT_NEAR(solved->alpha, alpha, 1e-9);
    EXPECT_NEAR(solved->nu, nu, 1e-9);
    EXPECT_NEAR(solved->x0(), alpha + nu, 1e-9);
  }
  // The noise scale they imply at the baseline's batch: B_0 nu / alpha.
  EXPECT_NEAR((StepEquationCoefficients{0.13, 0.6}.noise_scale(128)), 128 * 0.6 / 0.13, 1e-9);
  // The pace probe's seed-1 readings (experiments/largebatch-fashion/pace-probe.py, cooled 200 steps): 1.64 and 3.99.
  const auto seed1 = solve_step_equation(16, 1, 1.64, 16, 4, 3.99);
  ASSERT_TRUE(seed1);
  EXPECT_NEAR(seed1->alpha, 0.184, 0.002);
  EXPECT_NEAR(seed1->nu, 0.735, 0.002);
}

TEST(PaceProbeStepEquation, NoSolutionWhereThePairsDoNotSeparateOrTheRangeIsLeft) {
  // The same pair twice: singular.
  EXPECT_FALSE(solve_step_equation(16, 1, 1.5, 16, 1, 1.5));
  // 4x the lr gaining more than 4x the steps asks for a negative curvature (alpha -0.3, nu 0.8).
  EXPECT_FALSE(solve_step_equation(16, 1, 1.5, 16, 4, 8));
  // A larger batch at the same lr that loses ground asks for a negative noise (alpha 0.27, nu -0.21).
  EXPECT_FALSE(solve_step_equation(16, 1, 0.9, 16, 4, 2));
}

}  // namespace
}  // namespace trainsim
