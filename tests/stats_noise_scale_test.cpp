// The two-batch gradient-noise estimator: exact recovery from expected norms, the EMA arithmetic,
// bad inputs, and the estimate from synthetic Gaussian per-example gradients with known |G|^2 and
// tr(Sigma).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "stats/noise_scale.h"

namespace trainsim {
namespace {

// With the expected squared norms E|G_B|^2 = |G|^2 + tr(Sigma)/B the formulas are exact.
TEST(TwoBatchEstimate, RecoversGradientAndTraceFromExpectedNorms) {
  const double grad_sq = 4, trace = 128;  // B_simple = 32
  const double small = grad_sq + trace / 8;  // 4 + 16 = 20
  const double big = grad_sq + trace / 64;   // 4 + 2 = 6
  const NoiseEstimate e = two_batch_estimate(small, big, 8, 64);
  // |G|^2 = (64*6 - 8*20) / (64 - 8) = (384 - 160) / 56 = 4
  EXPECT_DOUBLE_EQ(e.grad_sq_norm, 4);
  // tr = (20 - 6) / (1/8 - 1/64) = 14 / (7/64) = 128
  EXPECT_DOUBLE_EQ(e.trace_sigma, 128);
}

TEST(TwoBatchEstimate, SingleStepMayBeNegative) {
  // A noisy step where the big batch's norm exceeds the small one's: tr(Sigma) < 0 on this step.
  const NoiseEstimate e = two_batch_estimate(1.0, 2.0, 1, 2);
  // |G|^2 = (2*2 - 1*1) / 1 = 3; tr = (1 - 2) / (1 - 1/2) = -2
  EXPECT_DOUBLE_EQ(e.grad_sq_norm, 3);
  EXPECT_DOUBLE_EQ(e.trace_sigma, -2);
}

TEST(TwoBatchEstimate, RejectsBadInput) {
  EXPECT_THROW(two_batch_estimate(1, 1, 8, 8), std::invalid_argument);   // B_small == B_big
  EXPECT_THROW(two_batch_estimate(1, 1, 16, 8), std::invalid_argument);  // B_small > B_big
  EXPECT_THROW(two_batch_estimate(1, 1, 0, 8), std::invalid_argument);
  EXPECT_THROW(two_batch_estimate(-1, 1, 4, 8), std::invalid_argument);
  EXPECT_THROW(two_batch_estimate(1, std::nan(""), 4, 8), std::invalid_argument);
  EXPECT_THROW(GradientNoiseEstimator(1.0), std::invalid_argument);
  EXPECT_THROW(GradientNoiseEstimator(-0.1), std::invalid_argument);
}

TEST(GradientNoiseEstimator, BiasCorrectedMovingAverages) {
  GradientNoiseEstimator est(0.5);
  EXPECT_EQ(est.steps(), 0);
  EXPECT_FALSE(est.noise_scale().has_value());
  // Step 1 from expected norms with |G|^2 = 4, tr = 128 (as above): estimates (4, 128).
  est.add(20, 6, 8, 64);
  EXPECT_DOUBLE_EQ(est.grad_sq_norm(), 4);  // 0.5*4 / (1 - 0.5)
  EXPECT_DOUBLE_EQ(est.trace_sigma(), 128);
  ASSERT_TRUE(est.noise_scale().has_value());
  EXPECT_DOUBLE_EQ(*est.noise_scale(), 32);
  // Step 2 with |G|^2 = 1, tr = 64: small = 1 + 64/8 = 9, big = 1 + 64/64 = 2.
  est.add(9, 2, 8, 64);
  // EMA = (0.25*x1 + 0.5*x2) / 0.75 = (x1 + 2 x2) / 3: |G|^2 = (4 + 2)/3 = 2, tr = (128 + 128)/3
  EXPECT_DOUBLE_EQ(est.grad_sq_norm(), 2);
  EXPECT_DOUBLE_EQ(est.trace_sigma(), 256.0 / 3);
  // The ratio of the averages, not the average of the ratios (32 and 64 -> 53.3 with weights 1:2).
  EXPECT_DOUBLE_EQ(*est.noise_scale(), 128.0 / 3);
  EXPECT_EQ(est.steps(), 2);
}

TEST(GradientNoiseEstimator, NoNoiseScaleWhileGradientEstimateIsNotPositive) {
  GradientNoiseEstimator est(0.9);
  est.add(1.0, 2.0, 1, 2);  // |G|^2 = 3, tr = -2 (see above)
  EXPECT_FALSE(est.noise_scale().has_value());
  est.add(5.0, 0.0, 1, 2);  // |G|^2 = (2*0 - 1*5)/1 = -5, tr = 5/0.5 = 10
  // Both steps weigh 1/2 (the first step's |G_big|^2 is 2). Unweighted EMAs: |G|^2 =
  // 0.9*0.3 + 0.1*(-5) = -0.23 < 0, tr = 0.9*(-0.2) + 0.1*10 = 0.82.
  EXPECT_LT(est.grad_sq_norm(), 0);
  EXPECT_GT(est.trace_sigma(), 0);
  EXPECT_FALSE(est.noise_scale().has_value());
}

// Expected norms (no sampling noise) for |G|^2 and tr(Sigma) at B_small 32 and B_big 128.
void add_expected(GradientNoiseEstimator& est, double grad_sq, double trace) {
  est.add(grad_sq + trace / 32, grad_sq + trace / 128, 32, 128);
}

// An overshoot at the start (5 steps with gradients 1000 times larger, B_simple 7) is forgotten
// as fast as any 5 steps: 200 steps of B_simple 50 later the estimate is theirs. Unweighted, the
// overshoot's squared norms would outweigh the 200 steps' (the ratio would read 11.9).
TEST(GradientNoiseEstimator, AnOvershootDoesNotOutweighTheStepsAfterIt) {
  GradientNoiseEstimator est(0.99);
  for (int i = 0; i < 5; ++i) add_expected(est, 1000, 7000);
  EXPECT_NEAR(*est.noise_scale(), 7, 1e-9);
  for (int i = 0; i < 200; ++i) add_expected(est, 1, 50);
  ASSERT_TRUE(est.noise_scale().has_value());
  // The 5 overshoot steps weigh 0.99^200 ~ 0.13 each against the 200's ~87 in all: 50 - 0.7.
  EXPECT_NEAR(*est.noise_scale(), 50, 1.0);
  EXPECT_GT(*est.noise_scale(), 49);
}

// Gradients of a steady size: the weights are equal and the estimator is the plain EMA.
TEST(GradientNoiseEstimator, SteadyGradientsWeighAlike) {
  GradientNoiseEstimator est(0.5);
  add_expected(est, 4, 128);
  add_expected(est, 4, 256);
  // (0.25 * 128 + 0.5 * 256) / 0.75 = 213.3 over |G|^2 4.
  EXPECT_NEAR(est.trace_sigma(), 640.0 / 3, 1e-9);
  EXPECT_NEAR(est.grad_sq_norm(), 4, 1e-9);
}

// Per-example gradients g_i = G + noise, noise ~ N(0, s^2 I) in d dimensions, so
// tr(Sigma) = d s^2. Each step draws B_big examples; the small batch is its first B_small (as a
// rank's share of the global batch under DDP). d = 16, G_j = 0.5 -> |G|^2 = 16 * 0.25 = 4;
// s^2 = 8 -> tr(Sigma) = 128; B_simple = 32, between B_small = 8 and B_big = 64.
TEST(GradientNoiseEstimator, SyntheticGaussianGradientsGiveKnownNoiseScale) {
  constexpr int kDims = 16, kSmall = 8, kBig = 64, kSteps = 8000;
  constexpr double kGradSq = 4, kTrace = 128;
  std::mt19937_64 rng(20181214);
  std::normal_distribution<double> noise(0.0, std::sqrt(8.0));
  GradientNoiseEstimator ema(0.999);
  double grad_sq_sum = 0, trace_sum = 0;
  double big_sq_sum = 0;
  std::vector<double> small(kDims), big(kDims);
  for (int step = 0; step < kSteps; ++step) {
    std::fill(small.begin(), small.end(), 0.0);
    std::fill(big.begin(), big.end(), 0.0);
    for (int i = 0; i < kBig; ++i) {
      for (int j = 0; j < kDims; ++j) {
        const double g = 0.5 + noise(rng);
        big[j] += g;
        if (i < kSmall) small[j] += g;
      }
    }
    double small_sq = 0, big_sq = 0;
    for (int j = 0; j < kDims; ++j) {
      small_sq += (small[j] / kSmall) * (small[j] / kSmall);
      big_sq += (big[j] / kBig) * (big[j] / kBig);
    }
    const NoiseEstimate e = two_batch_estimate(small_sq, big_sq, kSmall, kBig);
    grad_sq_sum += e.grad_sq_norm;
    trace_sum += e.trace_sigma;
    big_sq_sum += big_sq;
    ema.add(small_sq, big_sq, kSmall, kBig);
  }
  // Spread measured over 12 seeds (this generator): plain means over 8000 steps ~0.8% (1 sigma),
  // the 0.999 EMA (~2000 effective steps) ~1%; 5% is about 5 sigma.
  EXPECT_NEAR(grad_sq_sum / kSteps / kGradSq, 1.0, 0.05);
  EXPECT_NEAR(trace_sum / kSteps / kTrace, 1.0, 0.05);
  EXPECT_NEAR(ema.grad_sq_norm() / kGradSq, 1.0, 0.05);
  EXPECT_NEAR(ema.trace_sigma() / kTrace, 1.0, 0.05);
  ASSERT_TRUE(ema.noise_scale().has_value());
  EXPECT_NEAR(*ema.noise_scale() / 32.0, 1.0, 0.05);
  // The naive |G_big|^2 is biased by tr(Sigma)/B_big = 2, i.e. 50% above |G|^2: the estimator's
  // correction is what the test checks.
  EXPECT_NEAR(big_sq_sum / kSteps, kGradSq + kTrace / kBig, 0.05 * kGradSq);
}

// eps_max = avg |g|^2 / avg g^T H g: with g^T H g = |g|^2 / eps every step the ratio is eps
// whatever the norms; a non-positive curvature average has no finite best lr.
TEST(CurvatureEstimator, RatioOfTheAveragesAndNoneWhileCurvatureIsNotPositive) {
  CurvatureEstimator none;
  EXPECT_FALSE(none.max_lr().has_value());
  CurvatureEstimator c(0.9);
  for (double sq : {1.0, 4.0, 0.5, 9.0}) c.add(sq, sq / 0.25);
  ASSERT_TRUE(c.max_lr().has_value());
  EXPECT_NEAR(*c.max_lr(), 0.25, 1e-12);
  EXPECT_EQ(c.measurements(), 4);
  CurvatureEstimator concave(0.5);
  concave.add(1.0, -2.0);
  EXPECT_FALSE(concave.max_lr().has_value());
  concave.add(1.0, 4.0);  // uncorrected averages 0.5 (0.5 * 1) + 0.5 * 1 = 0.75 and 0.5 (0.5 * -2) + 0.5 * 4 = 1.5
  ASSERT_TRUE(concave.max_lr().has_value());
  EXPECT_NEAR(*concave.max_lr(), 0.5, 1e-12);
}

// As the noise scale's: two measurements of a sharp overshoot (|g|^2 1000, eps 0.1) are forgotten
// as fast as any two; unweighted they would hold eps_max near 0.1 for hundreds of measurements.
TEST(CurvatureEstimator, AnOvershootDoesNotOutweighTheMeasurementsAfterIt) {
  CurvatureEstimator c(0.99);
  for (int i = 0; i < 2; ++i) c.add(1000, 1000 / 0.1);
  for (int i = 0; i < 100; ++i) c.add(1, 1 / 0.3);
  ASSERT_TRUE(c.max_lr().has_value());
  EXPECT_NEAR(*c.max_lr(), 0.3, 0.01);
}

// B_noise = tr(H Sigma) / G^T H G from the curvature along the batch's gradient and along a
// micro-batch's: with E g_B^T H g_B = G^T H G + tr(H Sigma)/B exact at both sizes, the ratio is
// recovered whatever the weights; measurements without a micro-batch's curvature leave it alone.
TEST(CurvatureEstimator, NoiseScaleFromTheMicroBatchCurvature) {
  constexpr double kMeanCurvature = 2.0, kTraceHSigma = 600.0;  // B_noise 300
  CurvatureEstimator c(0.9);
  EXPECT_FALSE(c.noise_scale().has_value());
  c.add(1.0, 5.0);
  EXPECT_FALSE(c.noise_scale().has_value());
  for (double scale : {1.0, 3.0, 0.2}) {
    c.add(scale * 4.0, scale * (kMeanCurvature + kTraceHSigma / 128), scale * (kMeanCurvature + kTraceHSigma / 32),
          32, 128);
  }
  ASSERT_TRUE(c.noise_scale().has_value());
  EXPECT_NEAR(*c.noise_scale(), 300.0, 1e-9);
  EXPECT_EQ(c.measurements(), 4);
  // A micro-batch no more curved than the batch: tr(H Sigma) <= 0, no B_noise.
  CurvatureEstimator flat(0.5);
  flat.add(1.0, 3.0, 3.0, 32, 128);
  EXPECT_FALSE(flat.noise_scale().has_value());
}

// Noisy measurements around those expectations: the averages' ratio lands near B_noise, where the
// ratio of the raw curvatures (what eps_max alone sees) does not.
TEST(CurvatureEstimator, NoiseScaleUnbiasedUnderNoise) {
  constexpr double kMeanCurvature = 1.0, kTraceHSigma = 100.0;  // B_noise 100
  std::mt19937_64 rng(7);
  std::normal_distribution<double> unit(0.0, 1.0);
  CurvatureEstimator c(0.999);
  for (int i = 0; i < 20000; ++i) {
    const double big = kMeanCurvature + kTraceHSigma / 64;
    const double small = kMeanCurvature + kTraceHSigma / 16;
    c.add(1.0, big * (1 + 0.3 * unit(rng)), small * (1 + 0.3 * unit(rng)), 16, 64);
  }
  ASSERT_TRUE(c.noise_scale().has_value());
  EXPECT_NEAR(*c.noise_scale(), 100.0, 10.0);
}

// The standard error: none from one or two measurements, nor where one measurement outweighs the
// rest; 0 where every measurement has the same ratio; under noise the spread that the estimate
// itself has across independent runs.
TEST(CurvatureEstimator, NoiseScaleStandardError) {
  CurvatureEstimator one(0.9);
  one.add(1.0, 2.0 + 600.0 / 128, 2.0 + 600.0 / 32, 32, 128);
  ASSERT_TRUE(one.noise_scale().has_value());
  EXPECT_FALSE(one.noise_scale_standard_error().has_value());
  one.add(2.0, 2 * (2.0 + 600.0 / 128), 2 * (2.0 + 600.0 / 32), 32, 128);  // the same ratio, other scale
  EXPECT_FALSE(one.noise_scale_standard_error().has_value());
  one.add(2.0, 2 * (2.0 + 600.0 / 128), 2 * (2.0 + 600.0 / 32), 32, 128);
  ASSERT_TRUE(one.noise_scale_standard_error().has_value());
  EXPECT_NEAR(*one.noise_scale_standard_error(), 0.0, 1e-9);
  // Five measurements, the third with 1000 times the others' weight (the weight is 1 / the previous
  // measurement's |g|^2): its residual is ~0, and the other four do not make up two measurements'
  // worth. The same five with even weights have a standard error.
  const auto five = [](double second_sq_norm) {
    CurvatureEstimator c(0.9);
    const double sq_norms[] = {1.0, second_sq_norm, 1.0, 1.0, 1.0};
    const double noise[] = {1.0, 1.5, 0.5, 1.2, 0.8};
    for (int i = 0; i < 5; ++i) c.add(sq_norms[i], 2.0 + 600.0 / 128, noise[i] * (2.0 + 600.0 / 32), 32, 128);
    return c;
  };
  ASSERT_TRUE(five(1e-3).noise_scale().has_value());
  EXPECT_FALSE(five(1e-3).noise_scale_standard_error().has_value());
  ASSERT_TRUE(five(1.0).noise_scale_standard_error().has_value());
  EXPECT_GT(*five(1.0).noise_scale_standard_error(), 0);

  constexpr double kMeanCurvature = 1.0, kTraceHSigma = 100.0;  // B_noise 100
  constexpr int kRuns = 400, kMeasurements = 300;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> unit(0.0, 1.0);
  double sum = 0, sum_sq = 0, reported = 0;
  for (int run = 0; run < kRuns; ++run) {
    CurvatureEstimator c(0.97);  // about 65 measurements in the averages
    for (int i = 0; i < kMeasurements; ++i) {
      const double big = kMeanCurvature + kTraceHSigma / 64;
      const double small = kMeanCurvature + kTraceHSigma / 16;
      c.add(1.0, big * (1 + 0.2 * unit(rng)), small * (1 + 0.2 * unit(rng)), 16, 64);
    }
    ASSERT_TRUE(c.noise_scale_standard_error().has_value());
    sum += *c.noise_scale();
    sum_sq += *c.noise_scale() * *c.noise_scale();
    reported += *c.noise_scale_standard_error();
  }
  const double mean = sum / kRuns;
  const double spread = std::sqrt(sum_sq / kRuns - mean * mean);
  EXPECT_NEAR(reported / kRuns / spread, 1.0, 0.15) << "reported " << reported / kRuns << ", spread " << spread;
}

TEST(CurvatureEstimator, RejectsBadInput) {
  EXPECT_THROW(CurvatureEstimator(1.0), std::invalid_argument);
  EXPECT_THROW(CurvatureEstimator(-0.1), std::invalid_argument);
  CurvatureEstimator c;
  EXPECT_THROW(c.add(-1, 1), std::invalid_argument);
  EXPECT_THROW(c.add(1, NAN), std::invalid_argument);
  EXPECT_THROW(c.add(INFINITY, 1), std::invalid_argument);
  EXPECT_THROW(c.add(1, 1, NAN, 32, 128), std::invalid_argument);
  EXPECT_THROW(c.add(1, 1, 2, 128, 128), std::invalid_argument);
  EXPECT_THROW(c.add(1, 1, 2, 0, 128), std::invalid_argument);
  EXPECT_EQ(c.measurements(), 0);
}

}  // namespace
}  // namespace trainsim
