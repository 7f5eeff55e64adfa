// The McCandlish relations, their inversions, Pollux efficiency, and the large-batch predictions
// from a hand-written baseline curve (expected values derived beside each assertion).

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "stats/large_batch.h"
#include "stats/mccandlish.h"

namespace trainsim {
namespace {

// Model with S_min = 100 steps, B_noise = 200: E_min = S_min B_noise = 20000 examples.
TEST(McCandlish, StepsAndExamplesAtBatch) {
  EXPECT_DOUBLE_EQ(steps_at_batch(100, 200, 50), 500);          // 100 (1 + 200/50)
  EXPECT_DOUBLE_EQ(examples_at_batch(20000, 200, 50), 25000);   // 20000 (1 + 50/200) = 50 * 500
  EXPECT_DOUBLE_EQ(steps_at_batch(100, 200, 200), 200);         // B = B_noise: twice S_min
  EXPECT_DOUBLE_EQ(examples_at_batch(20000, 200, 200), 40000);  // and twice E_min
}

TEST(McCandlish, InversionsRoundTrip) {
  // Observed: 500 steps at batch 50 with B_noise 200.
  const double s_min = min_steps_from(50, 500, 200);     // 500 / (1 + 4) = 100
  const double e_min = min_examples_from(50, 500, 200);  // 25000 / (1 + 0.25) = 20000
  EXPECT_DOUBLE_EQ(s_min, 100);
  EXPECT_DOUBLE_EQ(e_min, 20000);
  EXPECT_DOUBLE_EQ(critical_batch(e_min, s_min), 200);  // B_crit = E_min / S_min = B_noise
  // Predicting another batch from the inverted model and inverting again gives the same model.
  const double steps_400 = steps_at_batch(s_min, 200, 400);  // 100 (1 + 0.5) = 150
  EXPECT_DOUBLE_EQ(steps_400, 150);
  EXPECT_DOUBLE_EQ(min_steps_from(400, steps_400, 200), 100);
  EXPECT_DOUBLE_EQ(examples_at_batch(e_min, 200, 400), 400 * steps_400);  // E = B S = 60000
}

TEST(McCandlish, FitFromTwoRuns) {
  // 500 steps at 50 and 150 at 400 (the model above): S_min B_noise = 350 / (1/50 - 1/400) = 20000,
  // S_min = 500 - 20000/50 = 100, B_noise = 200.
  const McCandlishFit fit = fit_two_runs(50, 500, 400, 150);
  EXPECT_NEAR(fit.min_steps, 100, 1e-9);
  EXPECT_NEAR(fit.noise_scale, 200, 1e-9);
  EXPECT_NEAR(fit.min_examples, 20000, 1e-6);
  // More steps at the larger batch contradicts the model.
  EXPECT_THROW(fit_two_runs(50, 100, 400, 200), std::invalid_argument);
  EXPECT_THROW(fit_two_runs(50, 100, 50, 200), std::invalid_argument);
}

TEST(McCandlish, RejectsBadArguments) {
  EXPECT_THROW(steps_at_batch(100, 200, 0), std::invalid_argument);
  EXPECT_THROW(steps_at_batch(100, -1, 10), std::invalid_argument);
  EXPECT_THROW(examples_at_batch(100, 0, 10), std::invalid_argument);  // E_min (1 + B/0)
  EXPECT_THROW(min_steps_from(10, 0, 10), std::invalid_argument);
  EXPECT_THROW(pollux_efficiency(std::nan(""), 128, 256), std::invalid_argument);
}

TEST(Pollux, EfficiencyFormula) {
  // (phi + M0) / (phi + M) with phi = 200, M0 = 128, M = 328: 328 / 528.
  EXPECT_DOUBLE_EQ(pollux_efficiency(200, 128, 328), 328.0 / 528.0);
  EXPECT_DOUBLE_EQ(pollux_efficiency(200, 128, 128), 1.0);
  // Smaller than the reference batch: more progress per example, efficiency > 1.
  EXPECT_DOUBLE_EQ(pollux_efficiency(200, 128, 64), 328.0 / 264.0);
  // No gradient noise: M0 / M (the same number of steps at any batch).
  EXPECT_DOUBLE_EQ(pollux_efficiency(0, 128, 512), 0.25);
  // It is the inverse of the McCandlish examples ratio E(M)/E(M0).
  EXPECT_DOUBLE_EQ(examples_ratio(328, 128, 200), 528.0 / 328.0);
  EXPECT_DOUBLE_EQ(examples_ratio(512, 128, 0), 4.0);
}

TEST(McCandlish, TunedLearningRateRatio) {
  // (1 + Bn/B0) / (1 + Bn/B): Bn = 200, B0 = 128, B = 328 -> (1 + 1.5625) / (1 + 0.609756) = 1.59184
  EXPECT_NEAR(tuned_lr_ratio(328, 128, 200), 2.5625 / (1 + 200.0 / 328), 1e-12);
  // B << B_noise: linear in B; B >> B_noise: saturates at (Bn + B0) / B0.
  EXPECT_NEAR(tuned_lr_ratio(2, 1, 1e9), 2, 1e-6);
  EXPECT_NEAR(tuned_lr_ratio(1e9, 1, 1), 2, 1e-6);
}

// TEST FIXTURE (hand-written, not a measurement): baseline batch 128, 1000 examples per epoch,
// 10 classes (untrained loss ln 10 = 2.302585).
TrainingCurve fixture_curve() {
  TrainingCurve c;
  c.model = "resnet18-cifar";
  c.data = "synthetic";
  c.batch = 128;
  c.small_batch = 32;
  c.train_samples = 1000;
  c.lr = 0.1;
  c.momentum = 0.9;
  c.weight_decay = 5e-4;
  c.lr_rule = "constant";
  //         epoch examples loss  train  test  |G|^2 tr(Sigma) B_noise
  c.epochs = {{1, 1000, 1.5, 0.5, 0.45, 1.0, 100, 100},
              {2, 2000, 1.0, 0.7, 0.6, 1.0, 200, 200},
              {3, 3000, 0.8, 0.8, 0.65, 1.0, 200, 200},
              {4, 4000, 0.7, 0.85, -1, 1.0, 300, 300}};
  return c;
}

bool has_note(const LargeBatchPrediction& p, const std::string& text) {
  for (const auto& note : p.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

LargeBatchModel model(int epochs, std::optional<double> target, LrRule rule) {
  LargeBatchSettings settings;
  settings.epochs = epochs;
  settings.target_loss = target;
  settings.lr_rule = rule;
  return LargeBatchModel(fixture_curve(), 10, settings);
}

TEST(BaselineCurve, InterpolatesAndAnchorsAtTheUntrainedModel) {
  const BaselineCurve curve(fixture_curve(), 10);
  const BaselineCurve::Point mid = curve.at(2500);  // halfway between epochs 2 and 3
  EXPECT_DOUBLE_EQ(mid.loss, 0.9);
  EXPECT_DOUBLE_EQ(mid.train_accuracy, 0.75);
  ASSERT_TRUE(mid.test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*mid.test_accuracy, 0.625);
  EXPECT_DOUBLE_EQ(mid.noise_scale, 200);
  EXPECT_FALSE(mid.before_first_epoch);
  // Between epochs 3 and 4 epoch 4 has no test accuracy.
  EXPECT_FALSE(curve.at(3500).test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(curve.at(3500).noise_scale, 250);
  // Before epoch 1: from (0, ln 10, 1/10) to (1000, 1.5, 0.5); the noise scale is epoch 1's.
  const BaselineCurve::Point early = curve.at(250);
  EXPECT_TRUE(early.before_first_epoch);
  EXPECT_NEAR(early.loss, std::log(10.0) + 0.25 * (1.5 - std::log(10.0)), 1e-12);
  EXPECT_DOUBLE_EQ(early.train_accuracy, 0.1 + 0.25 * 0.4);
  EXPECT_DOUBLE_EQ(early.noise_scale, 100);
  // Loss 0.9 is reached halfway between epochs 2 and 3; 0.5 never.
  ASSERT_TRUE(curve.examples_to_loss(0.9).has_value());
  EXPECT_DOUBLE_EQ(*curve.examples_to_loss(0.9), 2500);
  EXPECT_FALSE(curve.examples_to_loss(0.5).has_value());
  EXPECT_EQ(curve.examples_to_loss(3.0), 0.0);  // above the untrained loss
}

TEST(LargeBatchModel, BaselineBatchReproducesTheBaseline) {
  const LargeBatchModel m = model(2, std::nullopt, LrRule::kLinearWarmup);
  EXPECT_DOUBLE_EQ(m.target_loss(), 1.0);  // default: the baseline's loss after 2 epochs
  EXPECT_TRUE(m.target_is_default());
  const LargeBatchPrediction p = m.predict(128);
  EXPECT_TRUE(p.refused.empty());
  ASSERT_TRUE(p.loss_at_k.has_value());
  EXPECT_NEAR(*p.loss_at_k, 1.0, 1e-9);
  ASSERT_TRUE(p.epochs_to_target.has_value());
  EXPECT_NEAR(*p.epochs_to_target, 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(*p.efficiency, 1.0);
  EXPECT_TRUE(p.notes.empty());
}

TEST(LargeBatchModel, LargerBatchNeedsMoreExamples) {
  // B = 328 = B0 + 200 where B_noise = 200 (epochs 2-3): E_B / E_0 = (200 + 328) / (200 + 128) = 528/328.
  const LargeBatchModel m = model(4, 0.9, LrRule::kLinearWarmup);
  const LargeBatchPrediction p = m.predict(328);
  // Loss after 4 epochs: E_0 = 4000 * 328/528 = 2484.85 (B_noise 200 there, so the fixed point is
  // direct), t = 484.85/1000 between epochs 2 and 3: loss = 1.0 - 0.2 t = 0.903030.
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  EXPECT_NEAR(*p.baseline_examples_at_k, 4000.0 * 328 / 528, 1e-3);
  const double t = (4000.0 * 328 / 528 - 2000) / 1000;
  EXPECT_NEAR(*p.loss_at_k, 1.0 - 0.2 * t, 1e-6);
  EXPECT_NEAR(*p.train_accuracy_at_k, 0.7 + 0.1 * t, 1e-6);
  ASSERT_TRUE(p.test_accuracy_at_k.has_value());
  EXPECT_NEAR(*p.test_accuracy_at_k, 0.6 + 0.05 * t, 1e-6);
  // Target 0.9: the baseline got there at E_0 = 2500 with B_noise 200, so
  // E_B = 2500 * 528/328 = 4024.39 examples = 4.02439 epochs of 1000; efficiency 328/528.
  EXPECT_DOUBLE_EQ(*p.noise_scale_at_target, 200);
  EXPECT_NEAR(*p.examples_to_target, 2500.0 * 528 / 328, 1e-9);
  EXPECT_NEAR(*p.epochs_to_target, 2.5 * 528 / 328, 1e-12);
  EXPECT_NEAR(*p.efficiency, 328.0 / 528, 1e-12);
  // Linear lr ratio 328/128 = 2.5625 vs tuned (1 + 200/128)/(1 + 200/328) = 1.5918: 1.61x, within 2x.
  EXPECT_TRUE(p.notes.empty());
}

TEST(LargeBatchModel, FixedPointFollowsTheGrowingNoiseScale) {
  // B = 512, k = 4: E_0 solves E_0 (B_n(E_0) + 512) / (B_n(E_0) + 128) = 4000. At E_0 = 1000
  // (B_n 100) the left side is 1000 * 612/228 = 2684 < 4000; at 2000 (B_n 200) it is
  // 2000 * 712/328 = 4341 > 4000: the root lies in [1000, 2000], where B_n(E) = 100 + 100 (E - 1000)/1000.
  const LargeBatchModel m = model(4, std::nullopt, LrRule::kLinearWarmup);
  const LargeBatchPrediction p = m.predict(512);
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  const double e0 = *p.baseline_examples_at_k;
  const double bn = 100 + 100 * (e0 - 1000) / 1000;
  EXPECT_NEAR(e0 * (bn + 512) / (bn + 128), 4000, 1e-3);
  // A fixed B_noise of 100 would give 4000 * 228/612 = 1490, of 200 4000 * 328/712 = 1843: the
  // root must lie strictly between.
  EXPECT_GT(e0, 1490.2);
  EXPECT_LT(e0, 1842.6);
  // Loss there: 1.5 - 0.5 (E_0 - 1000)/1000.
  EXPECT_NEAR(*p.loss_at_k, 1.5 - 0.5 * (e0 - 1000) / 1000, 1e-9);
}

TEST(LargeBatchModel, SmallerBatchBeyondTheCurve) {
  // B = 64 < B0: k = 4 epochs needs E_0 > 4000 baseline examples (at E_0 = 4000, B_n = 300:
  // 4000 * 364/428 = 3402 < 4000), more than the baseline ran.
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kLinearWarmup).predict(64);
  EXPECT_FALSE(p.loss_at_k.has_value());
  EXPECT_EQ(p.loss_missing, "beyond the baseline curve (4 epochs measured)");
  // The target is still predicted: 2500 * (200 + 64)/(200 + 128) = 2012.2 examples.
  ASSERT_TRUE(p.examples_to_target.has_value());
  EXPECT_NEAR(*p.examples_to_target, 2500.0 * 264 / 328, 1e-9);
  EXPECT_NEAR(*p.efficiency, 328.0 / 264, 1e-12);
}

TEST(LargeBatchModel, TargetNeverReached) {
  const LargeBatchPrediction p = model(4, 0.5, LrRule::kLinearWarmup).predict(256);
  EXPECT_FALSE(p.epochs_to_target.has_value());
  EXPECT_FALSE(p.efficiency.has_value());
  EXPECT_EQ(p.target_missing, "the baseline never reached loss 0.5 (4 epochs measured, last loss 0.7)");
  EXPECT_TRUE(p.loss_at_k.has_value());
}

TEST(LargeBatchModel, DefaultTargetWhenTheBaselineIsShorterThanK) {
  const LargeBatchModel m = model(5, std::nullopt, LrRule::kLinearWarmup);
  EXPECT_DOUBLE_EQ(m.target_loss(), 0.7);  // the last epoch's loss
  EXPECT_NE(m.target_source().find("last epoch (4"), std::string::npos) << m.target_source();
}

TEST(LargeBatchModel, LargeBatchFallsBeforeTheFirstEpochAndIsCoarse) {
  // B = 1024 = 8 x 128 under sqrt, k = 1: E_0 (100 + 1024)/(100 + 128) = 1000 -> E_0 = 1000 * 228/1124
  // = 202.8 (B_noise is epoch 1's before epoch 1): loss = ln 10 + (1.5 - ln 10) * 0.2028. The lr,
  // sqrt 8 = 2.83 vs tuned (1 + 100/128)/(1 + 100/1024) = 1.623, is 1.74x the tuned one: predicted.
  const LargeBatchPrediction p = model(1, std::nullopt, LrRule::kSqrt).predict(1024);
  ASSERT_TRUE(p.loss_at_k.has_value());
  EXPECT_FALSE(p.no_progress);
  const double t = 228.0 / 1124;
  EXPECT_NEAR(*p.loss_at_k, std::log(10.0) + (1.5 - std::log(10.0)) * t, 1e-6);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("before the baseline's first epoch"), std::string::npos) << p.notes[0];
}

// McCandlish et al.: past twice eps_max (the tuned lr of an unlimited batch) even the noiseless
// loss rises. Linear scaling to 64x gives 64 x the baseline lr, eps_max is 1 + 100/128 = 1.78125 x
// it at the target's B_noise 100: 35.9x, so no progress: the untrained model's loss ln 10 and
// accuracy 1/10, no target.
TEST(LargeBatchModel, AboveTwiceTheTunedLearningRateNoProgressIsPredicted) {
  const LargeBatchPrediction p = model(1, std::nullopt, LrRule::kLinearWarmup).predict(8192);
  EXPECT_TRUE(p.no_progress);
  EXPECT_TRUE(p.refused.empty());
  ASSERT_TRUE(p.loss_at_k.has_value());
  EXPECT_DOUBLE_EQ(*p.loss_at_k, std::log(10.0));
  EXPECT_DOUBLE_EQ(*p.train_accuracy_at_k, 0.1);
  EXPECT_DOUBLE_EQ(*p.test_accuracy_at_k, 0.1);
  EXPECT_FALSE(p.epochs_to_target.has_value());
  EXPECT_FALSE(p.efficiency.has_value());
  EXPECT_EQ(p.target_missing, "never: no progress at this lr");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0].rfind("no progress: linear-warmup lr at 64x the baseline batch (128) is 35.9x eps_max", 0), 0u)
      << p.notes[0];
  EXPECT_NE(p.notes[0].find("the untrained model's"), std::string::npos) << p.notes[0];
}

TEST(LargeBatchModel, ConstantLearningRateFarFromTheBaselineIsRefused) {
  const LargeBatchModel m = model(4, 0.9, LrRule::kConstant);
  const LargeBatchPrediction big = m.predict(8192);
  EXPECT_EQ(big.refused,
            "not predicted: constant lr at 64x the baseline batch (128) is outside the model (it assumes "
            "the lr tuned per batch)");
  EXPECT_FALSE(big.loss_at_k.has_value());
  EXPECT_FALSE(big.epochs_to_target.has_value());
  EXPECT_FALSE(big.efficiency.has_value());
  EXPECT_FALSE(m.predict(1024).refused.empty());  // exactly 8x
  EXPECT_FALSE(m.predict(16).refused.empty());    // 1/8
  // 4x: predicted. Tuned ratio at B_noise 200: (1 + 200/128)/(1 + 200/512) = 1.8427; constant is
  // 1/1.8427 = 0.543 of it, inside [1/2, 2]: no note.
  const LargeBatchPrediction four = m.predict(512);
  EXPECT_TRUE(four.refused.empty());
  EXPECT_TRUE(four.epochs_to_target.has_value());
  EXPECT_TRUE(four.notes.empty());
}

TEST(LargeBatchModel, LinearScalingFarPastTheNoiseScaleMakesNoProgress) {
  // linear 16 x the baseline lr vs eps_max = (1 + 200/128) = 2.5625 x it at the target -> 6.24x,
  // with or without warm-up (warm-up only delays the rule's lr).
  for (LrRule rule : {LrRule::kLinear, LrRule::kLinearWarmup}) {
    const LargeBatchPrediction p = model(4, 0.9, rule).predict(2048);
    EXPECT_TRUE(p.no_progress);
    EXPECT_TRUE(has_note(p, std::string("no progress: ") + to_string(rule) +
                                " lr at 16x the baseline batch (128) is 6.24x eps_max"));
    EXPECT_FALSE(p.epochs_to_target.has_value());
  }
  // 2x: linear 2 vs eps_max 2.5625: progress; vs the tuned (1 + 200/128)/(1 + 200/256) = 1.4386:
  // 1.39x, no note.
  const LargeBatchPrediction two = model(4, 0.9, LrRule::kLinear).predict(256);
  EXPECT_FALSE(two.no_progress);
  EXPECT_TRUE(two.epochs_to_target.has_value());
  EXPECT_FALSE(has_note(two, "tuned lr"));
}

TEST(LargeBatchModel, SqrtRuleNearTheTunedLearningRate) {
  // sqrt(2048/128) = 4 vs tuned 2.3345: 1.71x, within 2x: predicted, no lr note.
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kSqrt).predict(2048);
  EXPECT_TRUE(p.refused.empty());
  EXPECT_FALSE(p.no_progress);
  EXPECT_FALSE(has_note(p, "tuned lr"));
  // At 64x: sqrt 8 vs eps_max 2.5625: 3.12x -> no progress.
  const LargeBatchPrediction far = model(4, 0.9, LrRule::kSqrt).predict(8192);
  EXPECT_TRUE(far.no_progress);
  EXPECT_TRUE(has_note(far, "3.12x eps_max"));
  // Between twice the tuned lr and twice eps_max: predicted, with the optimistic note. sqrt at 16x
  // with B_noise 200 is 1.71x tuned; linear at 4x: 4 vs eps_max 2.5625 (1.56x) and vs the tuned
  // (1 + 200/128)/(1 + 200/512) = 1.8427: 2.17x -> noted, predicted.
  const LargeBatchPrediction four = model(4, 0.9, LrRule::kLinear).predict(512);
  EXPECT_FALSE(four.no_progress);
  EXPECT_TRUE(four.epochs_to_target.has_value());
  EXPECT_TRUE(has_note(four, "2.17x the model's tuned lr"));
}

TEST(LargeBatchModel, RejectsBadSettings) {
  EXPECT_THROW(model(0, std::nullopt, LrRule::kLinear), std::invalid_argument);
  EXPECT_THROW(model(1, 0.0, LrRule::kLinear), std::invalid_argument);
  TrainingCurve empty = fixture_curve();
  empty.epochs.clear();
  EXPECT_THROW(BaselineCurve(empty, 10), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim
