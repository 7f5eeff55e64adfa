// The McCandlish relations, their inversions, Pollux efficiency, and the large-batch predictions
// from a hand-written baseline curve (expected values derived beside each assertion).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "stats/large_batch.h"
#include "stats/mccandlish.h"
#include "pace_probe_fixture.h"
#include "stats/pace_probe.h"

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
}

// TEST FIXTURE (hand-written, not a measurement): baseline batch 128, 1000 examples per epoch,
// 10 classes (untrained loss ln 10 = 2.302585). Plain SGD (momentum 0), the step equation's own
// setting: the path alone, no momentum noise floor (tested on its own below).
TrainingCurve fixture_curve() {
  TrainingCurve c;
  c.model = "resnet18-cifar";
  c.data = "synthetic";
  c.batch = 128;
  c.small_batch = 32;
  c.train_samples = 1000;
  c.lr = 0.1;
  c.momentum = 0;
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

LargeBatchModel model(int epochs, std::optional<double> target, LrRule rule, TrainingCurve curve = fixture_curve(),
                      double warmup_epochs = 5) {
  LargeBatchSettings settings;
  settings.epochs = epochs;
  settings.target_loss = target;
  settings.lr_rule = rule;
  settings.warmup_epochs = warmup_epochs;
  return LargeBatchModel(curve, 10, settings);
}

// The fixture with one noise scale everywhere: the path's rate is then constant, in closed form.
TrainingCurve flat_noise_curve(double noise_scale) {
  TrainingCurve c = fixture_curve();
  for (EpochPoint& e : c.epochs) e.noise_scale = noise_scale;
  return c;
}

// x = the rule's lr over the tuned lr, and the rate dE_0/dE_B = (B_n + B_0)/(B_n + B) (2x - x^2).
double tuned_x(double lr_ratio, double batch, double noise) { return lr_ratio * (1 + noise / batch) / (1 + noise / 128); }
double rate(double lr_ratio, double batch, double noise) {
  const double x = tuned_x(lr_ratio, batch, noise);
  return (noise + 128) / (noise + batch) * (2 * x - x * x);
}

TEST(BaselineCurve, WindowMeansSitAtTheWindowsMiddleFromTheUntrainedModel) {
  const BaselineCurve curve(fixture_curve(), 10);
  // Loss knots: (0, ln 10), (500, 1.5), (1500, 1.0), (2500, 0.8), (3500, 0.7): each epoch's mean
  // at its middle.
  const BaselineCurve::Point mid = curve.at(2000);  // halfway between epoch 2's and 3's middles
  EXPECT_DOUBLE_EQ(mid.loss, 0.9);
  EXPECT_DOUBLE_EQ(mid.train_accuracy, 0.75);
  // Test accuracy where it was evaluated, at the epochs' ends: (1000, 0.45), (2000, 0.6), (3000, 0.65).
  ASSERT_TRUE(mid.test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*mid.test_accuracy, 0.6);
  EXPECT_DOUBLE_EQ(*curve.at(2500).test_accuracy, 0.625);
  EXPECT_DOUBLE_EQ(mid.noise_scale, 200);
  EXPECT_FALSE(mid.before_first_point);
  // Epoch 4 has no test accuracy: none after epoch 3's end.
  EXPECT_FALSE(curve.at(3500).test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(curve.at(3500).noise_scale, 250);
  // Before epoch 1's middle: from the untrained model (0, ln 10, 1/10); the noise scale is the first measured.
  const BaselineCurve::Point early = curve.at(250);
  EXPECT_TRUE(early.before_first_point);
  EXPECT_NEAR(early.loss, std::log(10.0) + 0.5 * (1.5 - std::log(10.0)), 1e-12);
  EXPECT_DOUBLE_EQ(early.train_accuracy, 0.1 + 0.5 * 0.4);
  EXPECT_DOUBLE_EQ(*early.test_accuracy, 0.1 + 0.25 * 0.35);
  EXPECT_DOUBLE_EQ(early.noise_scale, 100);
  // After the last middle: flat.
  EXPECT_DOUBLE_EQ(curve.at(4000).loss, 0.7);
  // Loss 0.9 is reached halfway between epoch 2's and 3's middles; 0.5 never.
  ASSERT_TRUE(curve.examples_to_loss(0.9).has_value());
  EXPECT_DOUBLE_EQ(*curve.examples_to_loss(0.9), 2000);
  EXPECT_FALSE(curve.examples_to_loss(0.5).has_value());
  EXPECT_EQ(curve.examples_to_loss(3.0), 0.0);  // above the untrained loss
}

TEST(BaselineCurve, SamplesResolveTheFirstEpoch) {
  TrainingCurve c = fixture_curve();
  c.batch = 2;
  c.small_batch = 1;
  //           examples window loss train test B_noise
  c.samples = {{100, 100, 2.0, 0.15, 0.2, 99},  // the noise scale and eps_max count from the first reading
               {250, 150, 3.0, 0.2, 0.3, 10},   // the early spike the epoch mean hides
               {500, 250, 1.8, 0.4, 0.4, 20},
               {1000, 500, 1.2, 0.6, 0.5, 0},   // the epoch's end: its test accuracy and noise scale are epoch 1's
               {1500, 500, 0.1, 0.9, 0.9, 0}};  // after the first epoch the epochs' means are used
  const BaselineCurve curve(c, 10);
  EXPECT_DOUBLE_EQ(curve.at(50).loss, 2.0);  // each window's middle
  EXPECT_DOUBLE_EQ(curve.at(175).loss, 3.0);
  EXPECT_DOUBLE_EQ(curve.at(375).loss, 1.8);
  EXPECT_DOUBLE_EQ(curve.at(750).loss, 1.2);
  EXPECT_DOUBLE_EQ(curve.at(1500).loss, 1.0);  // epoch 2's mean at its middle, not the sample
  EXPECT_DOUBLE_EQ(curve.at(4000).loss, 0.7);
  EXPECT_DOUBLE_EQ(*curve.at(250).test_accuracy, 0.3);
  EXPECT_DOUBLE_EQ(*curve.at(1000).test_accuracy, 0.45);
  // Epoch 2's test accuracy is the mean of its evaluations, the sample's 0.9 and the end's 0.6, at
  // their mean position 1750: at 1500, 0.45 + (0.75 - 0.45) 500/750.
  EXPECT_DOUBLE_EQ(*curve.at(1500).test_accuracy, 0.65);
  EXPECT_DOUBLE_EQ(curve.at(50).noise_scale, 99);  // flat before the first reading
  EXPECT_DOUBLE_EQ(curve.at(175).noise_scale, 99 + (10 - 99) * 0.5);
  EXPECT_DOUBLE_EQ(curve.at(375).noise_scale, 15);
  EXPECT_DOUBLE_EQ(curve.at(750).noise_scale, 20 + (100 - 20) * 0.5);
  // eps_max the same way, where it was measured (not on every sample).
  EXPECT_FALSE(curve.has_max_lr());
  c.samples[0].max_lr = 0.05;
  c.samples[2].max_lr = 0.3;
  c.epochs[0].max_lr = 0.4;
  const BaselineCurve measured(c, 10);
  EXPECT_DOUBLE_EQ(*measured.max_lr_at(0), 0.05);
  EXPECT_DOUBLE_EQ(*measured.max_lr_at(300), 0.05 + (0.3 - 0.05) * 0.5);
  EXPECT_DOUBLE_EQ(*measured.max_lr_at(750), 0.35);
  // Loss 2.0 is first reached on the way down from the spike: 175 + 200 (3.0 - 2.0)/(3.0 - 1.8).
  EXPECT_NEAR(*curve.examples_to_loss(2.0), 50, 1e-9);  // the first window already sits at 2.0
  EXPECT_NEAR(*curve.examples_to_loss(1.9), 175 + 200 * 1.1 / 1.2, 1e-9);
}

TEST(BaselineCurve, TestAccuracyAfterTheFirstEpochIsEachEpochsMean) {
  TrainingCurve c = fixture_curve();  // epochs of 1000 examples, evaluated at the ends of 1 to 3
  c.batch = 2;
  c.small_batch = 1;
  // Epoch 1 resolved by its samples; epoch 2 evaluated three more times, noisily.
  c.samples = {{500, 500, 1.8, 0.4, 0.4, 20},
               {1000, 500, 1.2, 0.6, 0.5, 0},
               {1250, 250, 1.1, 0.6, 0.70, 0},
               {1500, 250, 1.0, 0.6, 0.50, 0},
               {1750, 250, 1.0, 0.6, 0.64, 0},
               {2000, 250, 0.9, 0.6, 0.6, 0}};  // the epoch's end, the epoch's own reading counts once
  const BaselineCurve curve(c, 10);
  // Epoch 1: each evaluation where it was made.
  EXPECT_DOUBLE_EQ(*curve.at(500).test_accuracy, 0.4);
  EXPECT_DOUBLE_EQ(*curve.at(1000).test_accuracy, 0.45);
  // Epoch 2: (0.70 + 0.50 + 0.64 + 0.6) / 4 = 0.61 at (1250 + 1500 + 1750 + 2000) / 4 = 1625; the
  // single readings 0.70 and 0.50 are not on the curve.
  EXPECT_NEAR(*curve.at(1625).test_accuracy, 0.61, 1e-12);
  EXPECT_NEAR(*curve.at(1250).test_accuracy, 0.45 + (0.61 - 0.45) * 250 / 625, 1e-12);
  // Epoch 3, evaluated only at its end: that reading, at 3000.
  EXPECT_NEAR(*curve.at(2500).test_accuracy, 0.61 + (0.65 - 0.61) * 875 / 1375, 1e-12);
  EXPECT_DOUBLE_EQ(*curve.at(3000).test_accuracy, 0.65);
  // None after the last evaluation (epoch 4 has none).
  EXPECT_FALSE(curve.at(3001).test_accuracy.has_value());
  // The last evaluated epoch's mean sits before its end; up to the end it is flat.
  c.epochs.resize(2);
  c.epochs[1].test_accuracy = 0.6;
  const BaselineCurve two(c, 10);
  EXPECT_NEAR(*two.at(1900).test_accuracy, 0.61, 1e-12);
  EXPECT_NEAR(*two.at(2000).test_accuracy, 0.61, 1e-12);
}

// The test accuracy with BatchNorm's statistics recomputed is a curve of its own, built as eval mode's:
// each evaluation in the first epoch, each epoch's mean after; none where not measured.
TEST(BaselineCurve, TheRecomputedTestAccuracyIsACurveOfItsOwn) {
  TrainingCurve c = fixture_curve();  // epochs of 1000 examples, evaluated at the ends of 1 to 3
  c.batch = 2;
  c.small_batch = 1;
  EXPECT_FALSE(BaselineCurve(c, 10).at(1000).test_accuracy_recomputed.has_value());
  c.recompute_bn_images = 64;
  c.samples = {{500, 500, 1.8, 0.4, 0.4, 20},
               {1000, 500, 1.2, 0.6, 0.5, 0},
               {1500, 500, 1.0, 0.6, 0.50, 0},
               {2000, 500, 0.9, 0.6, 0.6, 0}};
  c.samples[0].test_accuracy_recomputed = 0.5;
  c.samples[2].test_accuracy_recomputed = 0.7;  // epoch 2: (0.7 + 0.8) / 2 at 1750
  c.samples[3].test_accuracy_recomputed = 0.8;
  c.epochs[0].test_accuracy_recomputed = 0.6;
  c.epochs[1].test_accuracy_recomputed = 0.8;
  const BaselineCurve curve(c, 10);
  EXPECT_DOUBLE_EQ(*curve.at(0).test_accuracy_recomputed, 0.1);  // chance, as eval mode's
  EXPECT_DOUBLE_EQ(*curve.at(500).test_accuracy_recomputed, 0.5);
  EXPECT_DOUBLE_EQ(*curve.at(1000).test_accuracy_recomputed, 0.6);
  EXPECT_NEAR(*curve.at(1750).test_accuracy_recomputed, 0.75, 1e-12);
  // Eval mode's own curve is unchanged by it: epoch 2's mean (0.5 + 0.6) / 2 at 1750.
  EXPECT_NEAR(*curve.at(1750).test_accuracy, 0.55, 1e-12);
  // Epoch 3 has eval mode's reading only: the recomputed curve is flat after its last knot.
  EXPECT_NEAR(*curve.at(3000).test_accuracy_recomputed, 0.75, 1e-12);
  EXPECT_FALSE(curve.at(3001).test_accuracy_recomputed.has_value());  // none after the last evaluation
}

TEST(LargeBatchModel, BaselineBatchReproducesTheBaseline) {
  const LargeBatchModel m = model(2, std::nullopt, LrRule::kLinearWarmup);
  EXPECT_DOUBLE_EQ(m.target_loss(), 1.0);  // default: the baseline's mean loss in epoch 2
  EXPECT_TRUE(m.target_is_default());
  const LargeBatchPrediction p = m.predict(128);
  // E_0 = E_B; epoch 2's mean loss over the knots (1000, 1.25) - (1500, 1.0) - (2000, 0.9).
  ASSERT_TRUE(p.loss_at_k.has_value());
  EXPECT_NEAR(*p.loss_at_k, 0.5 * (1.25 + 1.0) / 2 + 0.5 * (1.0 + 0.9) / 2, 1e-9);
  EXPECT_NEAR(*p.baseline_examples_at_k, 2000, 1e-6);
  EXPECT_NEAR(*p.test_accuracy_at_k, 0.6, 1e-9);
  // The target, epoch 2's mean, is the loss at epoch 2's middle.
  ASSERT_TRUE(p.epochs_to_target.has_value());
  EXPECT_NEAR(*p.epochs_to_target, 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(*p.efficiency, 1.0);
  EXPECT_TRUE(p.notes.empty());
}

TEST(LargeBatchModel, ConstantRateWithOneNoiseScale) {
  // B_noise 200 everywhere, B = 328, constant lr: x = (1 + 200/328)/(1 + 200/128) = 0.628, each
  // example worth rate = 328/528 (2x - x^2) = 0.535 of the baseline's.
  const double r = rate(1, 328, 200);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, flat_noise_curve(200)).predict(328);
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  EXPECT_NEAR(*p.baseline_examples_at_k, 4000 * r, 1e-6);
  EXPECT_NEAR(*p.test_accuracy_at_k, 0.6 + 0.05 * (4000 * r - 2000) / 1000, 1e-6);
  // Target 0.9 at E_0 = 2000: E_B = 2000 / rate.
  EXPECT_DOUBLE_EQ(*p.noise_scale_at_target, 200);
  EXPECT_NEAR(*p.examples_to_target, 2000 / r, 1e-6);
  EXPECT_NEAR(*p.epochs_to_target, 2 / r, 1e-9);
  EXPECT_NEAR(*p.efficiency, 328.0 / 528, 1e-12);
  EXPECT_TRUE(p.notes.empty());  // x = 0.63 is within [1/2, 2] of the tuned lr
  // With the lr tuned (x = 1) the same batch goes McCandlish's (B_n + B_0)/(B_n + B) exactly: the
  // sqrt rule at 4x with B_noise 128 is sqrt(4) (1 + 1/4)/(1 + 1) = 1.25x, the linear rule at 4x
  // with B_noise 0 is 4x: neither is tuned; a rule of x = 1 needs lr ratio (1 + B_n/128)/(1 + B_n/B).
  EXPECT_NEAR(rate(tuned_x(1, 128, 200) / tuned_x(1, 328, 200), 328, 200), 328.0 / 528, 1e-12);
}

TEST(LargeBatchModel, ThePathFollowsTheGrowingNoiseScale) {
  // B = 512, constant lr, k = 4: B_noise 100 up to E_0 = 1000, then rising to 200 at 2000. The
  // path's E_0 must lie between the fixed-B_noise paths of 100 and 200 (rate rises with B_noise here).
  const LargeBatchPrediction p = model(4, std::nullopt, LrRule::kConstant).predict(512);
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  const double e0 = *p.baseline_examples_at_k;
  EXPECT_GT(e0, 4000 * rate(1, 512, 100));
  EXPECT_LT(e0, 4000 * rate(1, 512, 200));
  // The first 1000 / rate(100) examples at B_noise 100 exactly, the rest at least that fast.
  const double first = 1000 / rate(1, 512, 100);
  EXPECT_GT(e0, 1000 + (4000 - first) * rate(1, 512, 100) - 1e-6);
}

TEST(LargeBatchModel, BeyondTheCurve) {
  // k = 5 at the baseline's batch needs E_0 = 5000 > the 4000 measured.
  const LargeBatchPrediction p = model(5, 0.9, LrRule::kConstant).predict(128);
  EXPECT_FALSE(p.loss_at_k.has_value());
  EXPECT_EQ(p.loss_missing, "beyond the baseline curve (4 epochs measured)");
  // The 4 epochs that end within the curve still have their means: the 4-epoch prediction's.
  EXPECT_EQ(p.loss_by_epoch, model(4, 0.9, LrRule::kConstant).predict(128).loss_by_epoch);
  EXPECT_EQ(p.loss_by_epoch.size(), 4u);
  ASSERT_TRUE(p.epochs_to_target.has_value());  // the target is still predicted: E_0 = 2000
  EXPECT_NEAR(*p.epochs_to_target, 2.0, 1e-9);
}

TEST(LargeBatchModel, TargetNeverReached) {
  const LargeBatchPrediction p = model(4, 0.5, LrRule::kConstant).predict(256);
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

TEST(LargeBatchModel, LargeBatchFallsBeforeTheFirstPointAndIsCoarse) {
  // B = 8192, constant lr, k = 1, B_noise 100 (the first measured): E_0 = 1000 rate = 22 < 500.
  const LargeBatchPrediction p = model(1, std::nullopt, LrRule::kConstant).predict(8192);
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  EXPECT_FALSE(p.no_progress);
  EXPECT_NEAR(*p.baseline_examples_at_k, 1000 * rate(1, 8192, 100), 1e-6);
  EXPECT_TRUE(has_note(p, "falls before the baseline's first measured point"));
}

// McCandlish et al.: past twice the tuned lr an SGD step raises the expected loss. Warm-up to
// 64x over 5 epochs at B_noise 100: x = (1 + 63 t/5000) (1 + 100/8192)/(1 + 100/128) passes 2 at
// t = 5000 (2/0.5683 - 1)/63 = 200 examples, 0.2 epochs: no progress, the untrained model's loss
// ln 10 and accuracy 1/10, no target.
TEST(LargeBatchModel, PastTwiceTheTunedLearningRateNoProgressIsPredicted) {
  const LargeBatchPrediction p = model(1, std::nullopt, LrRule::kLinearWarmup).predict(8192);
  EXPECT_TRUE(p.no_progress);
  ASSERT_TRUE(p.loss_at_k.has_value());
  EXPECT_DOUBLE_EQ(*p.loss_at_k, std::log(10.0));
  EXPECT_DOUBLE_EQ(*p.train_accuracy_at_k, 0.1);
  EXPECT_DOUBLE_EQ(*p.test_accuracy_at_k, 0.1);
  EXPECT_FALSE(p.epochs_to_target.has_value());
  EXPECT_FALSE(p.efficiency.has_value());
  EXPECT_EQ(p.target_missing, "never: no progress at this lr");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0].rfind("no progress: linear-warmup lr at 64x the baseline batch (128) passes 2x the tuned lr", 0),
            0u)
      << p.notes[0];
  EXPECT_NEAR(5000 * (2 / tuned_x(1, 8192, 100) - 1) / 63 / 1000, 0.2, 1e-3);  // the epochs named below
  EXPECT_TRUE(has_note(p, "after 0.2 epochs")) << p.notes[0];
  // Without the warm-up the lr is past it from the first step.
  const LargeBatchPrediction linear = model(1, std::nullopt, LrRule::kLinear).predict(8192);
  EXPECT_TRUE(linear.no_progress);
  EXPECT_TRUE(has_note(linear, "from the start"));
}

TEST(LargeBatchModel, WarmUpRampsTheRateAlongThePath) {
  // linear-warmup to 2x over 1 epoch (1000 examples) at B_noise 200: x rises linearly from x0 to
  // x1 = 2 x0, x0 = (1 + 200/256)/(1 + 200/128). During the ramp the rate integrates 2x - x^2:
  // E_0(1000) = 1000 (328/456) [x^2 - x^3/3]_{x0}^{x1} / (x1 - x0); after it, rate(2) per example.
  const double x0 = tuned_x(1, 256, 200);
  const double x1 = 2 * x0;
  const auto primitive = [](double x) { return x * x - x * x * x / 3; };
  const double ramp = 1000 * (328.0 / 456) * (primitive(x1) - primitive(x0)) / (x1 - x0);
  const double e0 = ramp + 1000 * rate(2, 256, 200);
  const LargeBatchPrediction p =
      model(2, std::nullopt, LrRule::kLinearWarmup, flat_noise_curve(200), /*warmup_epochs=*/1).predict(256);
  EXPECT_FALSE(p.no_progress);
  ASSERT_TRUE(p.baseline_examples_at_k.has_value());
  EXPECT_NEAR(*p.baseline_examples_at_k, e0, 1e-6 * e0);
  // No warm-up: the rule's lr from the start.
  const LargeBatchPrediction linear = model(2, std::nullopt, LrRule::kLinear, flat_noise_curve(200)).predict(256);
  EXPECT_NEAR(*linear.baseline_examples_at_k, 2000 * rate(2, 256, 200), 1e-6);
}

TEST(LargeBatchModel, ConstantLearningRateAtLargeBatchesIsPredictedWithItsMismatch) {
  // 64x with the baseline's lr: x = (1 + 200/8192)/(1 + 200/128) = 0.40 at the target: a step makes
  // 2x - x^2 = 64% of a tuned step's progress, noted.
  const LargeBatchPrediction big = model(4, 0.9, LrRule::kConstant).predict(8192);
  EXPECT_FALSE(big.no_progress);
  EXPECT_TRUE(big.loss_at_k.has_value());
  EXPECT_TRUE(big.epochs_to_target.has_value());
  EXPECT_NEAR(*big.efficiency, 328.0 / 8392, 1e-12);
  EXPECT_TRUE(has_note(big, "constant lr at 64x the baseline batch (128) is 0.4x the tuned lr at the target "
                            "(B_noise 200): a step makes 64% of a tuned step's progress"));
}

TEST(LargeBatchModel, SqrtRuleNearTheTunedLearningRate) {
  // sqrt at 16x, B_noise 200: x = 4 (1 + 200/2048)/(1 + 200/128) = 1.71: within 2, progress.
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kSqrt, flat_noise_curve(200)).predict(2048);
  EXPECT_FALSE(p.no_progress);
  EXPECT_FALSE(has_note(p, "tuned lr"));
  // B_noise 100: x = 4 (1 + 100/2048)/(1 + 100/128) = 2.36: no progress.
  EXPECT_TRUE(model(4, 0.9, LrRule::kSqrt, flat_noise_curve(100)).predict(2048).no_progress);
}

// The fixture at B_noise 200 with eps_max measured: max_lr on every epoch.
TrainingCurve measured_curvature_curve(double eps_max) {
  TrainingCurve c = flat_noise_curve(200);
  for (EpochPoint& e : c.epochs) e.max_lr = eps_max;
  return c;
}

// With eps_max measured, x = lr (1 + B_n/B) / eps_max and the baseline's own x_0 = lr_0 (1 +
// B_n/B_0) / eps_max replaces the assumption x_0 = 1; the rate is (B_n + B_0)/(B_n + B)
// (2x - x^2)/(2x_0 - x_0^2).
TEST(LargeBatchModel, MeasuredMaxLrReplacesTheTunedAssumption) {
  // eps_max = lr_0 (1 + 200/128) = 0.25625 makes x_0 = 1: the same predictions as without it.
  const double tuned = 0.1 * (1 + 200.0 / 128);
  const LargeBatchPrediction assumed = model(4, 0.9, LrRule::kConstant, flat_noise_curve(200)).predict(328);
  const LargeBatchPrediction measured =
      model(4, 0.9, LrRule::kConstant, measured_curvature_curve(tuned)).predict(328);
  EXPECT_NEAR(*measured.baseline_examples_at_k, *assumed.baseline_examples_at_k, 1e-9);
  // eps_max 0.2: x_0 = 0.1 (1 + 200/128) / 0.2 = 1.28125; at 328, x = 0.1 (1 + 200/328) / 0.2 = 0.80488.
  const double x0 = 0.1 * (1 + 200.0 / 128) / 0.2;
  const double x = 0.1 * (1 + 200.0 / 328) / 0.2;
  const double r = 328.0 / 528 * (2 * x - x * x) / (2 * x0 - x0 * x0);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, measured_curvature_curve(0.2)).predict(328);
  EXPECT_NEAR(*p.baseline_examples_at_k, 4000 * r, 1e-6);
  // Every epoch's mean as epoch k's: the last is loss_at_k, and the loss falls epoch by epoch.
  ASSERT_EQ(p.loss_by_epoch.size(), 4u);
  EXPECT_DOUBLE_EQ(p.loss_by_epoch.back(), *p.loss_at_k);
  EXPECT_TRUE(std::is_sorted(p.loss_by_epoch.rbegin(), p.loss_by_epoch.rend()));
  EXPECT_NEAR(*p.examples_to_target, 2000 / r, 1e-6);
  // The baseline batch still reproduces the baseline (x = x_0).
  const LargeBatchPrediction base = model(4, 0.9, LrRule::kConstant, measured_curvature_curve(0.2)).predict(128);
  EXPECT_NEAR(*base.baseline_examples_at_k, 4000, 1e-6);
  // linear at 2x: x = 0.2 (1 + 200/256) / 0.2 = 1.78 < 2 trains; eps_max 0.15 puts it at 2.38: no progress.
  EXPECT_FALSE(model(4, 0.9, LrRule::kLinear, measured_curvature_curve(0.2)).predict(256).no_progress);
  const LargeBatchPrediction none = model(4, 0.9, LrRule::kLinear, measured_curvature_curve(0.15)).predict(256);
  EXPECT_TRUE(none.no_progress);
  EXPECT_EQ(none.loss_by_epoch, std::vector<double>(4, std::log(10.0)));
}

// Where the baseline's measured x_0 falls through the bound (eps_max growing along the curve, as
// after fashion-cnn's early rise), dE_0/dE_B = ... / (2x_0 - x_0^2) has no bound as x_0 nears 2
// from below; the path is integrated over E_0 (its slope dE_B/dE_0 goes to 0 there instead), so
// a larger batch at the same lr never gets further along the curve. x_0 = 0.25625 / eps_max: 2.5,
// 1.28 and 0.5 at the ends of epochs 1, 2 and 3-4, so it passes 2 at E_0 = 1262, which every
// batch from 200 to 800 reaches in 4 epochs.
TEST(LargeBatchModel, PathsThroughAnX0FallingPastTheBoundKeepTheirOrderInBatch) {
  TrainingCurve c = flat_noise_curve(200);
  const double eps_max[] = {0.1025, 0.2, 0.5125, 0.5125};
  for (size_t i = 0; i < c.epochs.size(); ++i) c.epochs[i].max_lr = eps_max[i];
  const LargeBatchModel m = model(4, 0.9, LrRule::kConstant, c);
  double previous_examples = std::numeric_limits<double>::infinity();
  double previous_loss = 0;
  for (int64_t batch = 200; batch <= 800; batch += 5) {
    const LargeBatchPrediction p = m.predict(batch);
    ASSERT_FALSE(p.no_progress) << batch;
    ASSERT_TRUE(p.baseline_examples_at_k.has_value()) << batch;
    EXPECT_LE(*p.baseline_examples_at_k, previous_examples) << batch;
    EXPECT_GE(*p.loss_at_k, previous_loss) << batch;
    previous_examples = *p.baseline_examples_at_k;
    previous_loss = *p.loss_at_k;
  }
}

// A B_noise reading counts only where its standard error is at most a quarter of it; elsewhere
// (too uncertain, no standard error, not measurable) B_simple stands in, point by point.
TEST(BaselineCurve, CurvatureNoiseScaleOnlyWhereItsStandardErrorIsSmall) {
  TrainingCurve c = measured_curvature_curve(0.2);
  ASSERT_GE(c.epochs.size(), 3u);
  const auto set = [&](size_t i, double value, double se) {
    c.epochs[i].curvature_noise_scale = value;
    c.epochs[i].curvature_noise_scale_se = se;
  };
  set(0, 400, 100);  // exactly a quarter: counts
  set(1, 300, 76);   // past a quarter: does not
  for (size_t i = 2; i < c.epochs.size(); ++i) set(i, 200, 20);
  const BaselineCurve curve(c, 10);
  ASSERT_TRUE(curve.has_curvature_noise_scale());
  const double e0 = c.epochs[0].examples, e1 = c.epochs[1].examples, e2 = c.epochs[2].examples;
  EXPECT_DOUBLE_EQ(*curve.curvature_noise_scale_at(0), 400);  // before the first reading: the first
  EXPECT_DOUBLE_EQ(*curve.curvature_noise_scale_at(e0), 400);
  EXPECT_FALSE(curve.curvature_noise_scale_at(0.5 * (e0 + e1)).has_value());
  EXPECT_FALSE(curve.curvature_noise_scale_at(0.5 * (e1 + e2)).has_value());
  EXPECT_DOUBLE_EQ(*curve.curvature_noise_scale_at(curve.last_examples()), 200);
  // Without standard errors (a curve recorded before them) no reading counts.
  for (EpochPoint& e : c.epochs) e.curvature_noise_scale_se = 0;
  EXPECT_FALSE(BaselineCurve(c, 10).has_curvature_noise_scale());
  EXPECT_FALSE(BaselineCurve(c, 10).curvature_noise_scale_at(e0).has_value());
}

// With B_noise = tr(H Sigma) / G^T H G measured beside B_simple (200) and eps_max (0.2), B_noise
// (the default, where its readings count) scales the lr and the rate from the baseline batch to B while
// x_0 stays lr (1 + B_simple/B_0) / eps_max (the two were measured together at B_0): at 328 with
// B_noise 400, x = x_0 (1 + 400/328) / (1 + 400/128) and the rate (400 + 128)/(400 + 328)
// (2x - x^2)/(2x_0 - x_0^2).
TEST(LargeBatchModel, MeasuredCurvatureNoiseScaleReplacesBSimple) {
  TrainingCurve c = measured_curvature_curve(0.2);
  for (EpochPoint& e : c.epochs) {
    e.curvature_noise_scale = 400;
    e.curvature_noise_scale_se = 40;
  }
  ASSERT_TRUE(BaselineCurve(c, 10).has_curvature_noise_scale());
  EXPECT_DOUBLE_EQ(*BaselineCurve(c, 10).curvature_noise_scale_at(2500), 400);
  EXPECT_FALSE(BaselineCurve(measured_curvature_curve(0.2), 10).curvature_noise_scale_at(2500).has_value());
  const double x0 = 0.1 * (1 + 200.0 / 128) / 0.2;
  const double x = x0 * (1 + 400.0 / 328) / (1 + 400.0 / 128);
  const double r = 528.0 / 728 * (2 * x - x * x) / (2 * x0 - x0 * x0);
  LargeBatchSettings settings;
  settings.epochs = 4;
  settings.target_loss = 0.9;
  settings.lr_rule = LrRule::kConstant;
  ASSERT_TRUE(settings.curvature_noise_scale);  // the default
  const LargeBatchModel with_curvature(c, 10, settings);
  const LargeBatchPrediction p = with_curvature.predict(328);
  EXPECT_NEAR(*p.baseline_examples_at_k, 4000 * r, 1e-6);
  EXPECT_DOUBLE_EQ(*p.noise_scale_at_target, 400);
  // More progress per example at the larger batch than with B_simple alone (the setting off), and
  // the baseline batch still reproduces the baseline.
  settings.curvature_noise_scale = false;
  const LargeBatchPrediction simple = LargeBatchModel(c, 10, settings).predict(328);
  EXPECT_DOUBLE_EQ(*simple.noise_scale_at_target, 200);
  EXPECT_GT(*p.baseline_examples_at_k, *simple.baseline_examples_at_k);
  EXPECT_NEAR(*with_curvature.predict(128).baseline_examples_at_k, 4000, 1e-6);
}

TEST(LargeBatchModel, MeasuredMaxLrThatContradictsTheBaselineFallsBackToTheAssumption) {
  // eps_max 0.1: x_0 = 0.1 (1 + 200/128) / 0.1 = 2.56, past the bound where the baseline made
  // progress: the measurement contradicts the step equation there, so the baseline's lr is taken
  // as tuned (the predictions without eps_max), and the baseline batch reproduces the baseline.
  const LargeBatchPrediction assumed = model(4, 0.9, LrRule::kConstant, flat_noise_curve(200)).predict(328);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, measured_curvature_curve(0.1)).predict(328);
  EXPECT_FALSE(p.no_progress);
  EXPECT_NEAR(*p.baseline_examples_at_k, *assumed.baseline_examples_at_k, 1e-9);
  const LargeBatchPrediction base = model(4, 0.9, LrRule::kConstant, measured_curvature_curve(0.1)).predict(128);
  EXPECT_NEAR(*base.baseline_examples_at_k, 4000, 1e-6);
}

// The recorded windows whose loss stays at or above the untrained ln 10, every epoch's samples.
TEST(BaselineCurve, UntrainedStretchesFromEverySample) {
  TrainingCurve c = fixture_curve();
  //           examples window loss train test B_noise
  c.samples = {{100, 100, 2.5, 0.1, 0.1, 10},     // the untrained start and an overshoot: one stretch
               {200, 100, 2.4, 0.1, 0.1, 10},
               {300, 100, 1.8, 0.3, 0.3, 10},
               {400, 100, 2.31, 0.1, 0.1, 10},    // at chance again
               {500, 100, 2.31, 0.1, 0.1, 10},
               {1000, 500, 1.2, 0.6, 0.5, 0},
               {1100, 100, 2.31, 0.1, 0.1, 10},   // in epoch 2, which its mean (1.0) hides
               {1200, 100, 2.303, 0.1, 0.1, 10},
               {1300, 100, 2.302, 0.1, 0.1, 10}};  // just below ln 10: ends it
  const BaselineCurve curve(c, 10);
  const auto stretches = curve.untrained_stretches();
  ASSERT_EQ(stretches.size(), 3u);
  using W = BaselineCurve::Window;
  EXPECT_EQ(stretches[0], (std::vector<W>{{50, 2.5}, {150, 2.4}}));
  EXPECT_EQ(stretches[1], (std::vector<W>{{350, 2.31}, {450, 2.31}}));
  EXPECT_EQ(stretches[2], (std::vector<W>{{1050, 2.31}, {1150, 2.303}}));
  // Without samples the epochs' means: none of the fixture's is at chance.
  EXPECT_TRUE(BaselineCurve(fixture_curve(), 10).untrained_stretches().empty());
}

// measured_curvature_curve(0.2) (B_noise 200, x_0 = 1.28 on the epochs) with samples at or above
// ln 10 from 150 to 350 examples (window middles; the first of them at `first_loss`), B_simple 1000
// and eps_max `max_lr` there, training on either side.
TrainingCurve curve_at_chance_from_150_to_350(double first_loss, double max_lr) {
  TrainingCurve c = measured_curvature_curve(0.2);
  c.samples = {{100, 100, 2.0, 0.15, 0.2, 200}, {200, 100, first_loss, 0.1, 0.1, 1000}, {300, 100, 2.31, 0.1, 0.1, 1000},
               {400, 100, 2.305, 0.1, 0.1, 1000}, {500, 100, 1.8, 0.4, 0.4, 200}};
  c.samples[0].max_lr = 0.2;
  for (size_t i = 1; i <= 3; ++i) c.samples[i].max_lr = max_lr;
  c.samples[4].max_lr = 0.2;
  return c;
}

// A stall: a stretch at chance where the baseline's own x_0 passes 2. A run whose own x stays
// within the bound at every point of it passes it at once; the baseline batch does not (it is the
// baseline), and a run whose x passes the bound there makes no progress.
TEST(LargeBatchModel, ARunWithinTheBoundPassesTheBaselinesStall) {
  // At chance from 150 to 350 examples with B_noise 1000 and eps_max 0.3: x_0 = 0.1 (1 + 1000/128)
  // / 0.3 = 2.94, past the bound; at 1024 the constant lr is x = 2.94 (1 + 1000/1024) / (1 + 1000/128)
  // = 0.66, within it.
  TrainingCurve c = curve_at_chance_from_150_to_350(2.31, 0.3);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, c).predict(1024);
  EXPECT_FALSE(p.no_progress);
  EXPECT_TRUE(has_note(p, "the baseline stalled at chance for 0.2 epochs (its own measured lr was past the bound there)"));
  EXPECT_TRUE(has_note(p, "the path passes that stall at once"));
  ASSERT_TRUE(p.stall_passed_epochs.has_value());
  EXPECT_GT(*p.stall_passed_epochs, 0);
  EXPECT_LT(*p.stall_passed_epochs, 4);
  // The same run where the baseline's lr was within the bound there (eps_max 0.6: x_0 = 1.47) goes
  // through the stretch at its rate: less far in 4 epochs.
  TrainingCurve within = c;
  for (size_t i = 1; i <= 3; ++i) within.samples[i].max_lr = 0.6;
  const LargeBatchPrediction slow = model(4, 0.9, LrRule::kConstant, within).predict(1024);
  EXPECT_FALSE(has_note(slow, "stall"));
  EXPECT_FALSE(slow.stall_passed_epochs.has_value());
  EXPECT_GT(*p.baseline_examples_at_k, *slow.baseline_examples_at_k);
  // The baseline batch is the baseline: no skip.
  const LargeBatchPrediction base = model(4, 0.9, LrRule::kConstant, c).predict(128);
  EXPECT_FALSE(has_note(base, "stall"));
  EXPECT_NEAR(*base.baseline_examples_at_k, 4000, 1e-6);
  // Linear at 8x: x = 8 x 0.66 = 5.3 in the stall: no progress.
  EXPECT_TRUE(model(4, 0.9, LrRule::kLinear, c).predict(1024).no_progress);
}

// A stall entered through a rise of the loss past twice the untrained ln 10 (the baseline's lr past
// the bound there: a step past it raises the expected loss) is a stall however low the x_0 read at
// chance is: the readings divide vanishing quantities there. x_0 is taken at the bound (at least)
// where the loss rose, so a run whose x is below the baseline's there, and below the bound over the
// rest, passes the windows at chance after the rise (not the rise itself); the baseline batch,
// x = x_0 = 2 at the rise, does not.
TEST(LargeBatchModel, AStallEnteredThroughARiseOfTheLossIsTheBaselinesOwn) {
  // At chance from 150 to 350 examples with B_noise 1000 and eps_max 3: x_0 = 0.1 (1 + 1000/128) /
  // 3 = 0.29, within the bound; the loss rose to 25 at its start.
  TrainingCurve c = curve_at_chance_from_150_to_350(25, 3);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, c).predict(1024);
  EXPECT_FALSE(p.no_progress);
  EXPECT_TRUE(has_note(p, "the baseline stalled at chance for 0.1 epochs (its loss rose past twice the untrained 2.3"))
      << ::testing::PrintToString(p.notes);
  ASSERT_TRUE(p.stall_passed_epochs.has_value());
  // Without the rise (at chance throughout) the readings decide, and x_0 = 0.29 is no stall: the
  // path goes through the stretch at its rate, less far in 4 epochs.
  TrainingCurve level = c;
  level.samples[1].train_loss = 2.31;
  const LargeBatchPrediction slow = model(4, 0.9, LrRule::kConstant, level).predict(1024);
  EXPECT_FALSE(has_note(slow, "stall"));
  EXPECT_GT(*p.baseline_examples_at_k, *slow.baseline_examples_at_k);
  // A rise below twice ln 10 (4.0) is not the bound crossed.
  level.samples[1].train_loss = 4.0;
  EXPECT_FALSE(has_note(model(4, 0.9, LrRule::kConstant, level).predict(1024), "stall"));
  // A rise followed by one window at chance is no stall (a stall is two windows or more).
  TrainingCurve brief = c;
  brief.samples[2].train_loss = 5.0;
  EXPECT_FALSE(has_note(model(4, 0.9, LrRule::kConstant, brief).predict(1024), "stall"));
  // The baseline batch is the baseline: no skip.
  const LargeBatchPrediction base = model(4, 0.9, LrRule::kConstant, c).predict(128);
  EXPECT_FALSE(has_note(base, "stall"));
  EXPECT_NEAR(*base.baseline_examples_at_k, 4000, 1e-6);
}

// A baseline whose every epoch stayed at or above ln 10 never trained: nothing is predicted.
TEST(LargeBatchModel, ABaselineThatNeverTrainedPredictsNothing) {
  TrainingCurve c = fixture_curve();
  for (EpochPoint& e : c.epochs) e.train_loss = 2.31;
  EXPECT_TRUE(BaselineCurve(c, 10).never_trained());
  EXPECT_FALSE(BaselineCurve(fixture_curve(), 10).never_trained());
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, c).predict(1024);
  EXPECT_FALSE(p.loss_at_k.has_value());
  EXPECT_FALSE(p.epochs_to_target.has_value());
  EXPECT_FALSE(p.no_progress);
  EXPECT_NE(p.loss_missing.find("the baseline never trained (4 epochs measured"), std::string::npos) << p.loss_missing;
  EXPECT_EQ(p.target_missing, p.loss_missing);
}

// A baseline whose first epoch stayed at or above the untrained loss ln 10 did not train then:
// every prediction from it says so.
TEST(LargeBatchModel, ABaselineThatStalledInItsFirstEpochIsNoted) {
  TrainingCurve stalled = fixture_curve();
  stalled.epochs[0].train_loss = 2.5;
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, stalled).predict(256);
  EXPECT_TRUE(has_note(p, "the baseline did not train in its first epoch (mean loss 2.5 >= the untrained 2.3)"));
  EXPECT_FALSE(has_note(model(4, 0.9, LrRule::kConstant).predict(256), "did not train"));
}

// Where along the curve a loss is, seen from a point: going on for a lower loss, back for a higher
// one. The fixture's loss knots: (0, ln 10), (500, 1.5), (1500, 1.0), (2500, 0.8), (3500, 0.7).
TEST(BaselineCurve, ExamplesAtLossFromGoesOnOrBackAlongTheCurve) {
  const BaselineCurve curve(fixture_curve(), 10);
  EXPECT_NEAR(*curve.examples_at_loss_from(1000, 0.9), 2000, 1e-9);   // 1.0 -> 0.8 over [1500, 2500]
  EXPECT_NEAR(*curve.examples_at_loss_from(1000, 1.25), 1000, 1e-9);  // the loss at 1000 itself
  EXPECT_FALSE(curve.examples_at_loss_from(1000, 0.6));               // below what the curve reaches
  EXPECT_NEAR(*curve.examples_at_loss_from(2000, 1.25), 1000, 1e-9);  // back: 1.5 -> 1.0 over [500, 1500]
  EXPECT_NEAR(*curve.examples_at_loss_from(2000, 3.0), 0, 1e-9);      // above the untrained ln 10
  // A loss that rises on the way: the first crossing after the point, the last one before it.
  TrainingCurve rising = fixture_curve();
  rising.epochs[2].train_loss = 1.1;  // knots (1500, 1.0), (2500, 1.1), (3500, 0.7)
  const BaselineCurve bumpy(rising, 10);
  EXPECT_NEAR(*bumpy.examples_at_loss_from(1500, 0.9), 3000, 1e-9);  // not back before 1500
  EXPECT_NEAR(*bumpy.examples_at_loss_from(3000, 1.05), 2625, 1e-9);  // 0.9 at 3000 up to 1.1 at 2500
}

TEST(BaselineCurve, TraceSigmaFromTheEpochs) {
  const BaselineCurve curve(fixture_curve(), 10);  // tr(Sigma) 100, 200, 200, 300 at 1000 ... 4000
  EXPECT_NEAR(*curve.trace_sigma_at(0), 100, 1e-12);  // flat before the first reading
  EXPECT_NEAR(*curve.trace_sigma_at(1500), 150, 1e-12);
  EXPECT_NEAR(*curve.trace_sigma_at(9000), 300, 1e-12);
  TrainingCurve none = fixture_curve();
  for (EpochPoint& e : none.epochs) e.trace_sigma = 0;
  EXPECT_FALSE(BaselineCurve(none, 10).trace_sigma_at(1500));
}

// Momentum's noise floor: heavy-ball SGD's stationary excess loss lr tr(Sigma) / (4 B (1 - m)) is
// 1/(1 - m) times plain SGD's; the extra, m/(1 - m) tr(Sigma)/4 (lr_0/B_0 - lr_B/B), is how much
// lower the run's loss is read on the baseline's curve than where the plain path puts it.
TEST(LargeBatchModel, MomentumsNoiseFloorReadsTheRunLowerOnTheBaselinesCurve) {
  TrainingCurve heavy_ball = flat_noise_curve(200);
  heavy_ball.momentum = 0.9;
  const auto predict = [&](const TrainingCurve& curve, LrRule rule, int64_t batch, bool floor) {
    LargeBatchSettings settings;
    settings.epochs = 2;
    settings.target_loss = 0.9;
    settings.lr_rule = rule;
    settings.momentum_floor = floor;
    return LargeBatchModel(curve, 10, settings).predict(batch);
  };
  const BaselineCurve baseline(heavy_ball, 10);
  const LargeBatchPrediction plain = predict(heavy_ball, LrRule::kConstant, 512, false);
  const LargeBatchPrediction p = predict(heavy_ball, LrRule::kConstant, 512, true);
  EXPECT_FALSE(plain.momentum_floor_gap_at_k);
  // The path's E_0 after 2 epochs is 2000 x rate(1, 512, 200) = 729, where tr(Sigma) is 100:
  // 0.9/0.1 x 100/4 x 0.1 (1/128 - 1/512) = 0.132.
  const double e0 = *plain.baseline_examples_at_k;
  EXPECT_NEAR(e0, 2000 * rate(1, 512, 200), 1e-6);
  const double gap = 9 * 100 / 4.0 * 0.1 * (1 / 128.0 - 1 / 512.0);
  ASSERT_TRUE(p.momentum_floor_gap_at_k);
  EXPECT_NEAR(*p.momentum_floor_gap_at_k, gap, 1e-12);
  EXPECT_NEAR(*p.baseline_examples_at_k, *baseline.examples_at_loss_from(e0, baseline.at(e0).loss - gap), 1e-6);
  EXPECT_LT(*p.loss_at_k, *plain.loss_at_k - 0.1);
  EXPECT_GT(*p.test_accuracy_at_k, *plain.test_accuracy_at_k);
  EXPECT_LT(*p.epochs_to_target, *plain.epochs_to_target);
  EXPECT_TRUE(has_note(p, "momentum 0.9: its noise floor lr tr(Sigma) / (4 B (1 - m)) is 10x plain SGD's; in epoch 2 "
                          "the run's sits 0.132 below the baseline's (tr(Sigma) 100)"));

  // The linear rule keeps lr / B, and the floor with it: the plain path. (At 2x: x = 2 (1 + 200/256) /
  // (1 + 200/128) = 1.39; at 4x it would be 2.17, past the bound, with no floor to read.)
  const LargeBatchPrediction linear = predict(heavy_ball, LrRule::kLinear, 256, true);
  EXPECT_FALSE(linear.no_progress);
  ASSERT_TRUE(linear.momentum_floor_gap_at_k);
  EXPECT_NEAR(*linear.momentum_floor_gap_at_k, 0, 1e-15);
  EXPECT_NEAR(*linear.loss_at_k, *predict(heavy_ball, LrRule::kLinear, 256, false).loss_at_k, 1e-12);
  // A smaller batch at the same lr sits higher, and is read earlier on the curve.
  const LargeBatchPrediction small = predict(heavy_ball, LrRule::kConstant, 64, true);
  EXPECT_LT(*small.momentum_floor_gap_at_k, 0);
  EXPECT_GT(*small.loss_at_k, *predict(heavy_ball, LrRule::kConstant, 64, false).loss_at_k);
  EXPECT_TRUE(has_note(small, "above the baseline's"));
  // Its floor 0.9/0.1 x tr(Sigma) 300/4 x 0.1 (1/64 - 1/128) = 0.527 above the baseline's at the curve's
  // end: the target 0.9 would need the baseline at 0.373, lower than its curve goes (0.7).
  EXPECT_FALSE(small.epochs_to_target);
  EXPECT_EQ(small.target_missing, "never: the run's noise floor (momentum 0.9) sits 0.527 above the baseline's, and "
                                  "the baseline's curve gets no lower than 0.7 (4 epochs measured)");
  // The baseline batch is the baseline.
  EXPECT_NEAR(*predict(heavy_ball, LrRule::kConstant, 128, true).loss_at_k,
              *predict(heavy_ball, LrRule::kConstant, 128, false).loss_at_k, 1e-12);
  // Plain SGD has no extra floor.
  EXPECT_FALSE(predict(flat_noise_curve(200), LrRule::kConstant, 512, true).momentum_floor_gap_at_k);
  // A curve without tr(Sigma) cannot say where the floor is, and the prediction says so.
  for (EpochPoint& e : heavy_ball.epochs) e.trace_sigma = 0;
  const LargeBatchPrediction unknown = predict(heavy_ball, LrRule::kConstant, 512, true);
  EXPECT_FALSE(unknown.momentum_floor_gap_at_k);
  EXPECT_NEAR(*unknown.loss_at_k, *plain.loss_at_k, 1e-12);
  EXPECT_TRUE(has_note(unknown, "momentum 0.9's noise floor not modelled: the baseline curve carries no tr(Sigma)"));
}

TEST(LargeBatchModel, RejectsBadSettings) {
  EXPECT_THROW(model(0, std::nullopt, LrRule::kLinear), std::invalid_argument);
  EXPECT_THROW(model(1, 0.0, LrRule::kLinear), std::invalid_argument);
  EXPECT_THROW(model(1, std::nullopt, LrRule::kLinearWarmup, fixture_curve(), -1), std::invalid_argument);
  TrainingCurve empty = fixture_curve();
  empty.epochs.clear();
  EXPECT_THROW(BaselineCurve(empty, 10), std::invalid_argument);
}

// The fixture with the BatchNorm probe at B_small 32, 128 and 1024 on epochs 1 and 3 (none on 2
// and 4): the probe's loss falls by 0.1 from 32 to 128 and 0.1 more to 1024 at epoch 1, by half
// that at epoch 3.
TrainingCurve probed_curve() {
  TrainingCurve c = fixture_curve();
  c.probe_batches = {32, 128, 1024};
  c.epochs[0].probe_loss = {1.2, 1.1, 1.0};
  c.epochs[2].probe_loss = {0.9, 0.85, 0.8};
  return c;
}

TEST(BaselineCurve, BatchNormGapIsLinearInOneOverTheBatch) {
  const BaselineCurve curve(probed_curve(), 10);
  ASSERT_TRUE(curve.has_batchnorm_probe());
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 1024), 0.2, 1e-12);  // L(32) - L(1024)
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 128), 0.1, 1e-12);
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 32), 0.0, 1e-12);    // the baseline's own
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 4096), 0.2, 1e-12);  // flat past the largest probe batch
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 16), 0.0, 1e-12);    // and below the smallest
  // 1/256 is 4/7 of the way from 1/128 to 1/1024: L(256) = 1.1 - 0.1 (4/7).
  EXPECT_NEAR(*curve.batchnorm_gap_at(1000, 256), 0.1 + 0.1 * 4 / 7, 1e-12);
  // Along the curve: linear between the readings at 1000 and 3000, flat outside.
  EXPECT_NEAR(*curve.batchnorm_gap_at(2000, 1024), 0.15, 1e-12);
  EXPECT_NEAR(*curve.batchnorm_gap_at(0, 1024), 0.2, 1e-12);
  EXPECT_NEAR(*curve.batchnorm_gap_at(4000, 1024), 0.1, 1e-12);
  // A curve without the probe has no gap.
  const BaselineCurve plain(fixture_curve(), 10);
  EXPECT_FALSE(plain.has_batchnorm_probe());
  EXPECT_FALSE(plain.batchnorm_gap_at(1000, 1024).has_value());
}

// A run at 4x the batch, BatchNorm over 128 (the baseline's split) instead of 32: with one probe
// gap everywhere (0.05 at 128) its loss is the curve's less 0.05 in every epoch; its accuracies are
// the same; it reaches a target loss no later.
TEST(LargeBatchModel, BatchNormGapLowersTheLossNotTheAccuracy) {
  TrainingCurve curve = flat_noise_curve(200);
  curve.probe_batches = {32, 128, 1024};
  for (EpochPoint& e : curve.epochs) e.probe_loss = {1.0, 0.95, 0.9};
  LargeBatchSettings settings;
  settings.epochs = 3;
  settings.target_loss = 0.9;
  settings.lr_rule = LrRule::kConstant;
  const LargeBatchModel on(curve, 10, settings);
  settings.batchnorm_gap = false;
  const LargeBatchModel off(curve, 10, settings);
  const LargeBatchPrediction a = on.predict(512);
  const LargeBatchPrediction b = off.predict(512);
  EXPECT_DOUBLE_EQ(a.bn_batch, 128);  // 512 x 32 / 128
  ASSERT_TRUE(a.loss_at_k && b.loss_at_k && a.batchnorm_gap_at_k);
  EXPECT_NEAR(*a.loss_at_k, *b.loss_at_k - 0.05, 1e-12);
  EXPECT_NEAR(*a.batchnorm_gap_at_k, 0.05, 1e-12);
  EXPECT_FALSE(b.batchnorm_gap_at_k.has_value());
  ASSERT_EQ(a.loss_by_epoch.size(), b.loss_by_epoch.size());
  for (size_t i = 0; i < a.loss_by_epoch.size(); ++i) EXPECT_NEAR(a.loss_by_epoch[i], b.loss_by_epoch[i] - 0.05, 1e-12);
  EXPECT_EQ(a.test_accuracy_at_k, b.test_accuracy_at_k);
  EXPECT_EQ(a.train_accuracy_at_k, b.train_accuracy_at_k);
  EXPECT_TRUE(has_note(a, "BatchNorm over 128 examples"));
  ASSERT_TRUE(a.epochs_to_target && b.epochs_to_target);
  EXPECT_LT(*a.epochs_to_target, *b.epochs_to_target);
  // The run's own BatchNorm batch, given: over 1024 examples the gap is 0.1.
  EXPECT_NEAR(*on.predict(512, 1024.0).loss_at_k, *b.loss_at_k - 0.1, 1e-12);
  // The baseline's own batch and split: no gap.
  EXPECT_EQ(on.predict(128).loss_at_k, off.predict(128).loss_at_k);
  EXPECT_THROW(on.predict(512, 0.0), std::invalid_argument);
}

// A baseline with BatchNorm (its probe on the curve) read at a raised lr: the eval-mode accuracy is
// the baseline's at its own lr, and the row says the running statistics' lag is not carried; at
// the baseline's lr, and for a baseline without BatchNorm, it says nothing.
TEST(LargeBatchModel, ARaisedLrSaysTheRunningStatisticsLagIsNotModelled) {
  TrainingCurve curve = flat_noise_curve(200);
  curve.probe_batches = {32, 128, 1024};
  for (EpochPoint& e : curve.epochs) e.probe_loss = {1.0, 0.95, 0.9};
  const LargeBatchPrediction sqrt4 = model(3, 0.9, LrRule::kSqrt, curve).predict(512);
  ASSERT_TRUE(sqrt4.test_accuracy_at_k);
  EXPECT_TRUE(has_note(sqrt4, "test acc@3: eval mode's as the baseline reads it at its own lr; at 2x that lr, "
                              "BatchNorm's running statistics lag the weights further"));
  EXPECT_FALSE(has_note(model(3, 0.9, LrRule::kConstant, curve).predict(512), "running statistics"));
  EXPECT_FALSE(has_note(model(3, 0.9, LrRule::kSqrt, flat_noise_curve(200)).predict(512), "running statistics"));
}

// TEST FIXTURE: the scale-invariant parameters' readings on every epoch of fixture_curve(), no weight
// decay, momentum 0: |w|^2 20 throughout (the baseline measured it flat), tr(Sigma) 6400 on them and
// the momentum buffer's |v|^2 all noise (tr(Sigma) / B_0, no coherent part). A run's |w|^2 u then
// grows as du/dE = lr^2 tr(Sigma) 20 / (B^2 u) per example of its own: u^2 = 400 + 2 lr^2 6400 20 E / B^2.
TrainingCurve scale_invariant_curve() {
  TrainingCurve c = fixture_curve();
  c.weight_decay = 0;
  for (EpochPoint& e : c.epochs) {
    e.si_weight_sq = 20;
    e.si_trace_sigma = 6400;
    e.si_update_sq = 6400.0 / 128;
  }
  return c;
}

double grown_weight_sq(double examples, double batch) {
  return std::sqrt(400 + 2 * 0.1 * 0.1 * 6400 * 20 * examples / (batch * batch));
}

TEST(LargeBatchModel, TheBaselineBatchKeepsTheBaselinesNorm) {
  const LargeBatchPrediction with = model(4, 0.9, LrRule::kConstant, scale_invariant_curve()).predict(128);
  TrainingCurve without_readings = scale_invariant_curve();
  for (EpochPoint& e : without_readings.epochs) e.si_weight_sq = e.si_update_sq = e.si_trace_sigma = 0;
  const LargeBatchPrediction without = model(4, 0.9, LrRule::kConstant, without_readings).predict(128);
  ASSERT_TRUE(with.effective_lr_ratio_at_k && with.loss_at_k && without.loss_at_k);
  EXPECT_NEAR(*with.effective_lr_ratio_at_k, 1.0, 1e-12);
  EXPECT_NEAR(*with.weight_sq_at_k, grown_weight_sq(4000, 128), 1e-3 * grown_weight_sq(4000, 128));
  EXPECT_DOUBLE_EQ(*with.loss_at_k, *without.loss_at_k);
  EXPECT_FALSE(without.effective_lr_ratio_at_k);
}

// Four times the batch at the same lr takes a quarter of the steps an epoch, each with a quarter of
// the noise: its |w|^2 grows 16x slower per example, its lr / |w|^2 stays higher, and it trains
// faster than the lr ratio alone says.
TEST(LargeBatchModel, ALargerBatchKeepsASmallerNormAndALargerEffectiveLr) {
  LargeBatchSettings off;
  off.epochs = 4;
  off.target_loss = 0.9;
  off.lr_rule = LrRule::kConstant;
  off.scale_invariant_norm = false;
  const LargeBatchPrediction plain = LargeBatchModel(scale_invariant_curve(), 10, off).predict(512);
  const LargeBatchPrediction p = model(4, 0.9, LrRule::kConstant, scale_invariant_curve()).predict(512);
  ASSERT_TRUE(p.weight_sq_at_k && p.effective_lr_ratio_at_k && p.baseline_examples_at_k);
  EXPECT_FALSE(plain.effective_lr_ratio_at_k);
  EXPECT_NEAR(*p.weight_sq_at_k, grown_weight_sq(4000, 512), 1e-3 * grown_weight_sq(4000, 512));
  // The baseline's |w|^2 where the path is, grown by the baseline's own steps.
  const double baseline_norm = grown_weight_sq(*p.baseline_examples_at_k, 128);
  EXPECT_NEAR(*p.effective_lr_ratio_at_k, baseline_norm / *p.weight_sq_at_k, 1e-3);
  EXPECT_GT(*p.effective_lr_ratio_at_k, 1.1);
  EXPECT_GT(*p.baseline_examples_at_k, *plain.baseline_examples_at_k);
  EXPECT_LT(*p.loss_at_k, *plain.loss_at_k);
  EXPECT_LT(*p.epochs_to_target, *plain.epochs_to_target);
  EXPECT_TRUE(has_note(p, "BatchNorm's weights train at lr / |w|^2: at the end of epoch 4 the run's |w|^2 is"));
}

// The pace probe (LargeBatchSettings::pace_probe): the fixture at B_simple 200 and eps_max 0.2
// (x_0 = 0.1 (1 + 200/128) / 0.2 = 1.28125 as measured), probed after 1500 examples with gains
// the step equation gives at alpha 0.2, nu 0.6 (x_0 0.8, B_n = 128 x 0.6 / 0.2 = 384), two draws a
// pair whose geometric mean is that gain.
using ::trainsim::testing::pace_reading;

TrainingCurve paced_curve(double eps_max = 0.2) {
  TrainingCurve c = measured_curvature_curve(eps_max);
  for (const double lr_ratio : {1.0, 4.0}) {
    const double gain = step_equation_gain(0.2, 0.6, 16, lr_ratio);
    c.pace_probe.push_back(pace_reading(1500, 16, lr_ratio, {gain * 1.1, gain / 1.1}));
  }
  return c;
}

LargeBatchModel paced_model(const TrainingCurve& c, bool pace_probe = true) {
  LargeBatchSettings settings;
  settings.epochs = 4;
  settings.target_loss = 0.9;
  settings.lr_rule = LrRule::kConstant;
  settings.pace_probe = pace_probe;
  return LargeBatchModel(c, 10, settings);
}

// With it on, x_0 and B_n are the probe's at its state and scaled alike everywhere: here (flat
// readings) x_0 0.8 and B_n 384 along the whole path, which is the model on a curve that measured
// B_simple 384 and eps_max 0.1 (1 + 384/128) / 0.8 = 0.5.
TEST(LargeBatchModel, PaceProbeScalesX0AndTheNoiseScaleAlongThePath) {
  const LargeBatchModel m = paced_model(paced_curve());
  ASSERT_TRUE(m.pace_scale().has_value()) << m.pace_probe_reason();
  EXPECT_DOUBLE_EQ(m.pace_scale()->examples, 1500);
  EXPECT_NEAR(m.pace_scale()->alpha, 0.2, 1e-9);
  EXPECT_NEAR(m.pace_scale()->nu, 0.6, 1e-9);
  EXPECT_NEAR(m.pace_scale()->model_x0, 1.28125, 1e-12);
  EXPECT_NEAR(m.pace_scale()->model_noise_scale, 200, 1e-12);
  EXPECT_NEAR(m.pace_scale()->k_x, 0.8 / 1.28125, 1e-9);
  EXPECT_NEAR(m.pace_scale()->k_n, 384.0 / 200, 1e-9);
  EXPECT_NE(m.pace_probe_reason().find("alpha 0.2, nu 0.6, so x_0 0.8"), std::string::npos) << m.pace_probe_reason();

  TrainingCurve by_hand = measured_curvature_curve(0.5);
  for (EpochPoint& e : by_hand.epochs) e.noise_scale = 384;
  const LargeBatchModel expected = paced_model(by_hand, /*pace_probe=*/false);
  for (const int64_t batch : {64, 128, 328, 1024, 4096}) {
    const LargeBatchPrediction p = m.predict(batch);
    const LargeBatchPrediction q = expected.predict(batch);
    ASSERT_EQ(p.no_progress, q.no_progress) << batch;
    ASSERT_TRUE(p.baseline_examples_at_k && q.baseline_examples_at_k) << batch;
    EXPECT_NEAR(*p.baseline_examples_at_k, *q.baseline_examples_at_k, 1e-6) << batch;
    EXPECT_NEAR(*p.loss_at_k, *q.loss_at_k, 1e-9) << batch;
    ASSERT_EQ(p.examples_to_target.has_value(), q.examples_to_target.has_value()) << batch;
    if (p.examples_to_target) EXPECT_NEAR(*p.examples_to_target, *q.examples_to_target, 1e-6) << batch;
    EXPECT_NEAR(*p.noise_scale_at_target, 384, 1e-9) << batch;
  }
  // In closed form at 328: x = 0.8 (1 + 384/328) / (1 + 384/128), rate (384 + 128)/(384 + 328)
  // (2x - x^2)/(2 x_0 - x_0^2).
  const double x0 = 0.8;
  const double x = x0 * (1 + 384.0 / 328) / (1 + 384.0 / 128);
  const double r = 512.0 / 712 * (2 * x - x * x) / (2 * x0 - x0 * x0);
  EXPECT_NEAR(*m.predict(328).baseline_examples_at_k, 4000 * r, 1e-6);
  // The baseline batch still reproduces the baseline.
  EXPECT_NEAR(*m.predict(128).baseline_examples_at_k, 4000, 1e-6);
  // A measured x_0 past the bound (eps_max 0.1: 2.5625, which the path alone takes as 1) is scaled
  // as measured: the probe's 0.8 at its state, the same path as above.
  const LargeBatchModel past = paced_model(paced_curve(0.1));
  ASSERT_TRUE(past.pace_scale().has_value());
  EXPECT_NEAR(past.pace_scale()->model_x0, 2.5625, 1e-12);
  EXPECT_NEAR(past.pace_scale()->k_x, 0.8 / 2.5625, 1e-9);
  EXPECT_NEAR(*past.predict(1024).baseline_examples_at_k, *expected.predict(1024).baseline_examples_at_k, 1e-6);
}

// Off, without readings, or with readings that give no coefficients: the model as measured, and
// the reason in words. The first state with two pairs that each kept a gain is the one read.
TEST(LargeBatchModel, PaceProbeOffOrUnusableLeavesTheModelAsMeasured) {
  const LargeBatchPrediction measured = paced_model(measured_curvature_curve(0.2), false).predict(1024);
  const auto same = [&](const LargeBatchModel& m) {
    EXPECT_FALSE(m.pace_scale().has_value()) << m.pace_probe_reason();
    EXPECT_DOUBLE_EQ(*m.predict(1024).baseline_examples_at_k, *measured.baseline_examples_at_k);
  };
  const LargeBatchModel off = paced_model(paced_curve(), /*pace_probe=*/false);
  same(off);
  EXPECT_NE(off.pace_probe_reason().find("the pace probe not used (off"), std::string::npos);
  const LargeBatchModel none = paced_model(measured_curvature_curve(0.2));
  same(none);
  EXPECT_NE(none.pace_probe_reason().find("no pace probe in the baseline"), std::string::npos);

  // A gain below 1 at 1x the lr needs nu < 0: no coefficients.
  ASSERT_FALSE(solve_step_equation(16, 1, 0.9, 16, 4, 3.0).has_value());
  TrainingCurve unsolvable = measured_curvature_curve(0.2);
  unsolvable.pace_probe = {pace_reading(1500, 16, 1, {0.9}), pace_reading(1500, 16, 4, {3.0})};
  const LargeBatchModel bad = paced_model(unsolvable);
  same(bad);
  EXPECT_NE(bad.pace_probe_reason().find("solves to no step-equation coefficients"), std::string::npos)
      << bad.pace_probe_reason();

  // At 1000 examples only one pair kept a gain (the other's draws all fell outside the readings),
  // and a state with one pair alone is skipped too: the model reads the state at 1500.
  TrainingCurve later = paced_curve();
  later.pace_probe.insert(later.pace_probe.begin(),
                          {pace_reading(500, 16, 1, {1.5}), pace_reading(1000, 16, 1, {0.9}),
                           pace_reading(1000, 16, 4, {})});
  const LargeBatchModel read_later = paced_model(later);
  ASSERT_TRUE(read_later.pace_scale().has_value()) << read_later.pace_probe_reason();
  EXPECT_DOUBLE_EQ(read_later.pace_scale()->examples, 1500);
  EXPECT_NEAR(read_later.pace_scale()->alpha, 0.2, 1e-9);
  // A curve without a noise scale at the probed state (none measured): nothing to scale.
  TrainingCurve noiseless = paced_curve();
  for (EpochPoint& e : noiseless.epochs) e.noise_scale = 0;
  const LargeBatchModel unscaled = paced_model(noiseless);
  EXPECT_FALSE(unscaled.pace_scale().has_value());
  EXPECT_NE(unscaled.pace_probe_reason().find("the curve has no noise scale there to scale"), std::string::npos)
      << unscaled.pace_probe_reason();
  TrainingCurve empty = measured_curvature_curve(0.2);
  empty.pace_probe = {pace_reading(1000, 16, 1, {1.5}), pace_reading(1000, 16, 4, {})};
  const LargeBatchModel no_pair = paced_model(empty);
  same(no_pair);
  EXPECT_NE(no_pair.pace_probe_reason().find("no state with two pairs"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
