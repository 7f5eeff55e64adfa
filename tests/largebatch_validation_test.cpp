// The validation's parts (measure/largebatch): the Gaussian-mixture task, the evaluation
// schedule, the integrated McCandlish prediction, single training runs and a tiny whole
// validation (deterministic, the same with 1 and 2 threads).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <stdexcept>
#include <vector>

#include "largebatch/mixture_task.h"
#include "largebatch/validation.h"
#include "largebatch/validation_run.h"

namespace trainsim::measure {
namespace {

TEST(MixtureTask, SamplesDependOnlyOnStreamAndIndex) {
  const MixtureTask task(MixtureSpec{5, 3, 2.0, 9});
  std::vector<float> whole(10 * 5);
  std::vector<int64_t> whole_labels(10);
  task.sample(kTrainStream, 0, 10, whole.data(), whole_labels.data());
  std::vector<float> parts(10 * 5);
  std::vector<int64_t> part_labels(10);
  task.sample(kTrainStream, 0, 4, parts.data(), part_labels.data());
  task.sample(kTrainStream, 4, 6, parts.data() + 4 * 5, part_labels.data() + 4);
  EXPECT_EQ(whole, parts);
  EXPECT_EQ(whole_labels, part_labels);
  std::vector<float> other(10 * 5);
  std::vector<int64_t> other_labels(10);
  task.sample(kHeldOutStream, 0, 10, other.data(), other_labels.data());
  EXPECT_NE(whole, other);
  for (int64_t y : whole_labels) {
    EXPECT_GE(y, 0);
    EXPECT_LT(y, 3);
  }
}

TEST(MixtureTask, ClassMeansAndUnitNoise) {
  // 30000 samples of 3 classes in 4 dimensions: per class ~10000, so a per-dimension sample mean
  // has standard error 0.01 (tolerance 0.05 = 5 sigma) and the pooled noise variance
  // sqrt(2 / 30000) = 0.008 (tolerance 0.04).
  const MixtureTask task(MixtureSpec{4, 3, 3.0, 1});
  constexpr int64_t n = 30000;
  std::vector<float> x(n * 4);
  std::vector<int64_t> y(n);
  task.sample(kTrainStream, 0, n, x.data(), y.data());
  std::vector<std::vector<double>> sum(3, std::vector<double>(4, 0));
  std::vector<int64_t> count(3, 0);
  for (int64_t i = 0; i < n; ++i) {
    ++count[static_cast<size_t>(y[i])];
    for (int d = 0; d < 4; ++d) sum[static_cast<size_t>(y[i])][static_cast<size_t>(d)] += x[static_cast<size_t>(i * 4 + d)];
  }
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto& mean = task.class_mean(y[i]);
    for (int d = 0; d < 4; ++d) {
      const double e = x[static_cast<size_t>(i * 4 + d)] - mean[static_cast<size_t>(d)];
      squares += e * e;
    }
  }
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(static_cast<double>(count[static_cast<size_t>(c)]) / n, 1.0 / 3, 0.02);  // sd 0.003
    for (int d = 0; d < 4; ++d) {
      EXPECT_NEAR(sum[static_cast<size_t>(c)][static_cast<size_t>(d)] / static_cast<double>(count[static_cast<size_t>(c)]),
                  task.class_mean(c)[static_cast<size_t>(d)], 0.05);
    }
  }
  EXPECT_NEAR(squares / (n * 4), 1.0, 0.04);
}

TEST(MixtureTask, BayesLoss) {
  // Separation 0: every class mean is 0, the posterior is uniform and the loss ln(C) exactly.
  const MixtureTask flat(MixtureSpec{3, 5, 0.0, 2});
  std::vector<float> x(100 * 3);
  std::vector<int64_t> y(100);
  flat.sample(kHeldOutStream, 0, 100, x.data(), y.data());
  EXPECT_NEAR(flat.bayes_loss(x.data(), y.data(), 100), std::log(5.0), 1e-12);
  // Two classes in one dimension with means +-m: p(y | x) = sigmoid(+-2 m x), so the loss of a
  // sample (x, y) is log(1 + exp(-2 m x s)), s = +1 for the class whose mean is +m.
  const MixtureTask two(MixtureSpec{1, 2, 1.0, 4});
  const double m0 = two.class_mean(0)[0];
  const double m1 = two.class_mean(1)[0];
  std::vector<float> x2(50);
  std::vector<int64_t> y2(50);
  two.sample(kTrainStream, 0, 50, x2.data(), y2.data());
  double expected = 0;
  for (int i = 0; i < 50; ++i) {
    // log p(y|x) = -(x - m_y)^2/2 - log(exp(-(x - m0)^2/2) + exp(-(x - m1)^2/2))
    const double x_i = x2[static_cast<size_t>(i)];
    const double own = y2[static_cast<size_t>(i)] == 0 ? m0 : m1;
    const double other = y2[static_cast<size_t>(i)] == 0 ? m1 : m0;
    // = log(1 + exp(((x - own)^2 - (x - other)^2) / 2))
    expected += std::log1p(std::exp(((x_i - own) * (x_i - own) - (x_i - other) * (x_i - other)) / 2));
  }
  EXPECT_NEAR(two.bayes_loss(x2.data(), y2.data(), 50), expected / 50, 1e-9);
  EXPECT_THROW(two.bayes_loss(x2.data(), y2.data(), 0), std::invalid_argument);
}

TEST(MixtureTask, BadSpecsAndStreams) {
  EXPECT_THROW(MixtureTask(MixtureSpec{0, 3, 1.0, 0}), std::invalid_argument);
  EXPECT_THROW(MixtureTask(MixtureSpec{2, 1, 1.0, 0}), std::invalid_argument);
  EXPECT_THROW(MixtureTask(MixtureSpec{2, 3, -1.0, 0}), std::invalid_argument);
  const MixtureTask task(MixtureSpec{2, 3, 1.0, 0});
  float x[2];
  int64_t y[1];
  EXPECT_THROW(task.sample(~uint64_t{0}, 0, 1, x, y), std::invalid_argument);
  EXPECT_THROW(task.sample(kTrainStream, -1, 1, x, y), std::invalid_argument);
}

TEST(Validation, EvaluationSchedule) {
  for (int64_t s = 1; s <= 127; ++s) EXPECT_TRUE(evaluation_due(s)) << s;
  // From 128 on every 2^floor(log2(s / 64)) steps: 2 in [128, 256), 16 in [1024, 2048).
  EXPECT_TRUE(evaluation_due(128));
  EXPECT_FALSE(evaluation_due(129));
  EXPECT_TRUE(evaluation_due(130));
  EXPECT_TRUE(evaluation_due(1024));
  EXPECT_FALSE(evaluation_due(1032));
  EXPECT_TRUE(evaluation_due(1040));
  int due = 0;  // 64 evaluations per doubling
  for (int64_t s = 1024; s < 2048; ++s) due += evaluation_due(s) ? 1 : 0;
  EXPECT_EQ(due, 64);
}

TEST(Validation, IntegratedStepsByHand) {
  std::vector<CurvePoint> curve(3);
  curve[0].step = 0;
  curve[1].step = 10;
  curve[1].noise_scale = 4;
  curve[2].step = 30;
  curve[2].noise_scale = 12;
  // B_0 = 4, B = 8, S_0 = 25.
  // [0, 10] at B_n 4:  dS_min = 10 / (1 + 4/4) = 5,      dS_B = 5 (1 + 4/8) = 7.5
  // [10, 25] at B_n 12: dS_min = 15 / (1 + 12/4) = 3.75, dS_B = 3.75 (1 + 12/8) = 9.375
  EXPECT_NEAR(integrated_steps(curve, 25, 4, 8), 16.875, 1e-12);
  // At the baseline batch the prediction is S_0 itself.
  EXPECT_NEAR(integrated_steps(curve, 25, 4, 4), 25, 1e-12);
  // A stretch without a measurement takes the first measured noise scale: [0, 10] at 12 when
  // curve[1] has none: dS_min = 10 / 4 = 2.5, dS_B = 2.5 * 2.5 = 6.25; then 9.375 as above.
  curve[1].noise_scale.reset();
  EXPECT_NEAR(integrated_steps(curve, 25, 4, 8), 6.25 + 9.375, 1e-12);
  EXPECT_THROW(integrated_steps(curve, 31, 4, 8), std::invalid_argument);  // beyond the curve
  curve[2].noise_scale.reset();
  EXPECT_THROW(integrated_steps(curve, 25, 4, 8), std::invalid_argument);  // no noise scale
}

// A small problem that trains in well under a second.
ValidationProblem small_problem() { return ValidationProblem(MixtureSpec{8, 4, 3.0, 3}, {16}, 512, 3); }

TEST(Validation, TrainToTargetIsDeterministicAndMeasuresTheNoiseScale) {
  const ValidationProblem problem = small_problem();
  RunSettings s;
  s.batch = 16;
  s.lr = 0.5;
  s.target_loss = 0.6;
  s.max_steps = 3000;
  const RunResult plain = train_to_target(problem, s);
  ASSERT_TRUE(plain.steps_to_target.has_value());
  EXPECT_FALSE(plain.diverged);
  EXPECT_LE(plain.curve.back().loss, 0.6);
  EXPECT_GT(plain.curve[plain.curve.size() - 2].loss, 0.6);
  EXPECT_GT(*plain.steps_to_target, plain.curve[plain.curve.size() - 2].step);
  EXPECT_LE(*plain.steps_to_target, plain.curve.back().step);
  EXPECT_EQ(train_to_target(problem, s).steps_to_target, plain.steps_to_target);  // deterministic

  // Micro-batches give the same gradient (up to rounding), so nearly the same run, and measure
  // the noise scale along it.
  s.micro_batches = 4;
  const RunResult micro = train_to_target(problem, s);
  ASSERT_TRUE(micro.steps_to_target.has_value());
  EXPECT_NEAR(*micro.steps_to_target, *plain.steps_to_target, 0.02 * *plain.steps_to_target);
  ASSERT_TRUE(micro.curve.back().noise_scale.has_value());
  EXPECT_GT(*micro.curve.back().noise_scale, 0);
  EXPECT_FALSE(plain.curve.back().noise_scale.has_value());
}

TEST(Validation, DivergenceAndStepLimit) {
  const ValidationProblem problem = small_problem();
  RunSettings s;
  s.batch = 16;
  s.lr = 1e4;
  s.target_loss = 0.6;
  s.max_steps = 200;
  const RunResult diverged = train_to_target(problem, s);
  EXPECT_TRUE(diverged.diverged);
  EXPECT_FALSE(diverged.steps_to_target.has_value());
  s.lr = 1e-4;
  s.max_steps = 50;
  const RunResult slow = train_to_target(problem, s);
  EXPECT_FALSE(slow.diverged);
  EXPECT_FALSE(slow.steps_to_target.has_value());
  EXPECT_EQ(slow.steps_run, 50);
  EXPECT_EQ(slow.curve.back().step, 50);
  s.target_loss = 100;  // above the initial loss
  EXPECT_THROW(train_to_target(problem, s), std::invalid_argument);
}

ValidationOptions tiny_options() {
  ValidationOptions o;
  o.mixture = MixtureSpec{8, 4, 3.0, 3};
  o.hidden = {16};
  o.held_out = 512;
  o.batches = {4, 8, 16, 32};
  o.base_batch = 8;
  o.micro_batches = 4;
  o.lrs = {2, 1, 0.5, 0.25, 0.125};
  o.target_gaps = {0.4};  // the Bayes loss on these 512 held-out samples is 0.22
  o.seeds = {3};
  o.max_steps = 4000;
  return o;
}

TEST(Validation, TinyValidationIsDeterministicAcrossThreadCounts) {
  ValidationOptions o = tiny_options();
  o.threads = 1;
  const ValidationResult one = run_validation(o, nullptr);
  o.threads = 2;
  const ValidationResult two = run_validation(o, nullptr);
  ASSERT_EQ(one.cases.size(), 1u);
  const ValidationCase& c = one.cases.front();
  ASSERT_TRUE(c.failure.empty()) << c.failure;
  EXPECT_NEAR(c.target_loss, c.bayes_loss + 0.4, 1e-12);
  ASSERT_EQ(c.predictions.size(), 4u);
  EXPECT_EQ(one.comparisons + static_cast<int>(c.not_reached.size()), 3);  // the baseline is not compared
  for (size_t i = 0; i < c.predictions.size(); ++i) {
    EXPECT_EQ(c.predictions[i].measured, two.cases.front().predictions[i].measured);
    EXPECT_EQ(c.predictions[i].predicted, two.cases.front().predictions[i].predicted);
  }
  EXPECT_EQ(one.error_percent, two.error_percent);
  const BatchPrediction& base = c.predictions[1];
  EXPECT_TRUE(base.is_base);
  ASSERT_TRUE(base.measured.has_value());
  EXPECT_NEAR(base.predicted, *base.measured, 1e-9 * *base.measured);  // fitted on itself
  EXPECT_NEAR(base.predicted_integrated, *base.measured, 1e-9 * *base.measured);
  // The McCandlish prediction falls with the batch and stays above S_min.
  for (size_t i = 1; i < c.predictions.size(); ++i) {
    EXPECT_LT(c.predictions[i].predicted, c.predictions[i - 1].predicted);
  }
  EXPECT_GT(c.predictions.back().predicted, c.min_steps);
  // The Bayes-optimal loss is the floor: the baseline's trained model stays above it.
  EXPECT_GT(c.base_curve.back().loss, c.bayes_loss);
  EXPECT_TRUE(std::regex_match(error_line(one), std::regex(R"(steps-to-target error: [0-9]+\.[0-9]% over [0-9]+ batch sizes)")));
}

TEST(Validation, OptionsAreChecked) {
  ValidationOptions o = tiny_options();
  o.base_batch = 12;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.batches = {8, 4};
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.micro_batches = 3;  // does not divide 8
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.lrs = {0.1, -1};
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.lrs.clear();
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.target_gaps = {0.1, 0};
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = tiny_options();
  o.seeds.clear();
  EXPECT_THROW(validate(o), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::measure
