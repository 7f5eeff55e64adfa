// `measure baseline` and `measure largebatch-validate` through the real binary, at tiny sizes:
// the baseline's curve goes into a profile that load_profile accepts and `simulate` uses (when it
// is built), the DDP path with two Gloo ranks, bad flags, and the validation's files and last line.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gloo_required.h"
#include "format/profile_io.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

const std::string kMeasure = std::string(TRAINSIM_BIN_DIR) + "/measure";
const std::string kSimulate = std::string(TRAINSIM_BIN_DIR) + "/simulate";
const fs::path kStatsFixtures = fs::path(TRAINSIM_FIXTURES_DIR) / "stats";
// ResNet-18 on 128 synthetic images, batch 32 in 4 micro-batches of 8: 4 steps per epoch.
const std::string kTinyBaseline =
    " --device cpu --train-samples 128 --test-samples 64 --batch 32 --threads 1 --workers 0 --quiet";
// A validation that runs in about a second: 4 batch sizes (8 the baseline), a 5-point lr grid,
// two targets of one seed.
const std::string kTinyValidation =
    " --dims 8 --classes 4 --separation 3 --hidden 16 --held-out 512 --batches 4,8,16,32 --base-batch 8"
    " --lrs 2,1,0.5,0.25,0.125 --target-gaps 0.4,0.3 --seeds 3 --max-steps 4000";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class LargeBatchCli : public ::testing::Test {
 protected:

  ProgramRun run(const std::string& program, const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    const std::string command = program + " " + args + " > " + out.string() + " 2> " + err.string();
    const int status = std::system(command.c_str());
    ProgramRun r;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }

  // The baseline curve of resnet18-cifar in `profile`, checked for the tiny run's shape.
  static const TrainingCurve& curve_of(const Profile& profile) {
    for (const auto& c : profile.training) {
      if (c.model == "resnet18-cifar") return c;
    }
    throw std::runtime_error("no resnet18-cifar curve");
  }

  static void expect_tiny_curve(const TrainingCurve& c, int64_t small_batch, int epochs) {
    EXPECT_EQ(c.data, "synthetic");
    EXPECT_EQ(c.batch, 32);
    EXPECT_EQ(c.small_batch, small_batch);
    EXPECT_EQ(c.train_samples, 128);
    EXPECT_DOUBLE_EQ(c.lr, 0.1);
    EXPECT_DOUBLE_EQ(c.momentum, 0.9);
    EXPECT_DOUBLE_EQ(c.weight_decay, 5e-4);
    EXPECT_EQ(c.lr_rule, "constant");
    ASSERT_EQ(c.epochs.size(), static_cast<size_t>(epochs));
    for (size_t i = 0; i < c.epochs.size(); ++i) {
      const auto& p = c.epochs[i];
      EXPECT_EQ(p.epoch, static_cast<int>(i) + 1);
      EXPECT_DOUBLE_EQ(p.examples, 128.0 * static_cast<double>(i + 1));
      EXPECT_TRUE(std::isfinite(p.train_loss) && p.train_loss > 0);
      EXPECT_GE(p.train_accuracy, 0);
      EXPECT_LE(p.train_accuracy, 1);
      EXPECT_GE(p.test_accuracy, 0);  // evaluated (a synthetic held-out set)
      EXPECT_LE(p.test_accuracy, 1);
      EXPECT_GT(p.grad_sq_norm, 0);
      EXPECT_GT(p.trace_sigma, 0);
      EXPECT_NEAR(p.noise_scale, p.trace_sigma / p.grad_sq_norm, 1e-9 * p.noise_scale);
    }
  }

  ::trainsim::testing::TempDir temp_{"trainsim-lb-cli"};
  fs::path dir_ = temp_.path();
};

TEST_F(LargeBatchCli, BaselineReplacesTheCurveInAProfileThatSimulateUses) {
  fs::copy_file(kStatsFixtures / "profile.yaml", dir_ / "profile.yaml");
  fs::copy_file(kStatsFixtures / "sweep.yaml", dir_ / "sweep.yaml");  // names profile.yaml beside it
  const Profile before = load_profile((dir_ / "profile.yaml").string());
  const ProgramRun r = run(kMeasure, "baseline" + kTinyBaseline + " --epochs 2 --profile " + (dir_ / "profile.yaml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile after = load_profile((dir_ / "profile.yaml").string());
  ASSERT_EQ(after.training.size(), 1u);  // the fixture's hand-written curve is replaced, not kept
  expect_tiny_curve(curve_of(after), 8, 2);  // B_small = 32 / 4 micro-batches
  // Everything else of the profile is kept.
  EXPECT_EQ(after.models.size(), before.models.size());
  EXPECT_EQ(after.machine.name, before.machine.name);
  EXPECT_NE(r.out.find("written to"), std::string::npos) << r.out;

  if (!fs::exists(kSimulate)) GTEST_SKIP() << kSimulate << " is not built";
  const ProgramRun sim = run(kSimulate, (dir_ / "sweep.yaml").string() + " --out " + (dir_ / "sim").string());
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("## Q4: large batches"), std::string::npos) << sim.out;
}

// --evals-per-epoch 4 on 4 steps per epoch (128 images, batch 32): in the first epoch after steps
// round(4 (j/4)^2) = 0, 1, 2 (one sample per step: after steps 1 and 2) and at its end; in the second
// after every step. The windows' means make up the epoch's; the epochs are the same as without them.
// fashion-cnn on the first 128 Fashion-MNIST images: a second per run.
TEST_F(LargeBatchCli, BaselineSamplesInsideTheEpochs) {
  const std::string tiny = " --model fashion-cnn" + kTinyBaseline + " --epochs 2";
  const ProgramRun plain = run(kMeasure, "baseline" + tiny + " --profile " + (dir_ / "a.yaml").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const ProgramRun sampled = run(kMeasure, "baseline" + tiny + " --evals-per-epoch 4 --profile " + (dir_ / "b.yaml").string());
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  const TrainingCurve a = load_profile((dir_ / "a.yaml").string()).training.at(0);
  const TrainingCurve b = load_profile((dir_ / "b.yaml").string()).training.at(0);
  EXPECT_TRUE(a.samples.empty());
  const std::vector<double> ends = {32, 64, 128, 160, 192, 224, 256};
  ASSERT_EQ(b.samples.size(), ends.size());
  ASSERT_EQ(b.epochs.size(), 2u);
  double previous = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    EXPECT_DOUBLE_EQ(b.samples[i].examples, ends[i]);
    EXPECT_DOUBLE_EQ(b.samples[i].window_examples, ends[i] - previous);
    EXPECT_GE(b.samples[i].test_accuracy, 0);
    previous = ends[i];
  }
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss);  // the evaluations do not change training
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy);
    double loss = 0;
    for (const CurveSample& s : b.samples) {
      if (s.examples > 128.0 * static_cast<double>(e) && s.examples <= 128.0 * static_cast<double>(e + 1)) {
        loss += s.train_loss * s.window_examples / 128;
      }
    }
    EXPECT_NEAR(loss, b.epochs[e].train_loss, 1e-9);
  }
  EXPECT_EQ(b.samples[2].test_accuracy, b.epochs[0].test_accuracy);  // the epoch's end
  EXPECT_EQ(b.samples[6].noise_scale, b.epochs[1].noise_scale);
}

// eps_max every step (--curvature-every 1) puts the parameters, gradients and BatchNorm statistics
// back after each measurement: the training is the same as with it off, to the bit.
TEST_F(LargeBatchCli, BaselineCurvatureLeavesTrainingUnchanged) {
  const std::string tiny = " --model fashion-cnn" + kTinyBaseline + " --epochs 2";
  const ProgramRun off = run(kMeasure, "baseline" + tiny + " --curvature-every 0 --profile " + (dir_ / "a.yaml").string());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const ProgramRun on = run(kMeasure, "baseline" + tiny + " --curvature-every 1 --profile " + (dir_ / "b.yaml").string());
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const TrainingCurve a = load_profile((dir_ / "a.yaml").string()).training.at(0);
  const TrainingCurve b = load_profile((dir_ / "b.yaml").string()).training.at(0);
  ASSERT_EQ(b.epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss);
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy);
    EXPECT_EQ(a.epochs[e].noise_scale, b.epochs[e].noise_scale);
    EXPECT_EQ(a.epochs[e].max_lr, 0);  // not measured
  }
}

// The BatchNorm probe (forward passes only, BatchNorm's running statistics put back) leaves the
// training as it is, to the bit, and records one training-mode loss per probe batch at every point:
// here the default probe shrunk to the 128 training images, at B_small 8, 32 and all 128.
TEST_F(LargeBatchCli, BaselineBatchNormProbeLeavesTrainingUnchanged) {
  const std::string tiny = " --model fashion-cnn-gap" + kTinyBaseline + " --epochs 2 --evals-per-epoch 2";
  const ProgramRun off = run(kMeasure, "baseline" + tiny + " --bn-probe-images 0 --profile " + (dir_ / "a.yaml").string());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const ProgramRun on = run(kMeasure, "baseline" + tiny + " --profile " + (dir_ / "b.yaml").string());
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const TrainingCurve a = load_profile((dir_ / "a.yaml").string()).training.at(0);
  const TrainingCurve b = load_profile((dir_ / "b.yaml").string()).training.at(0);
  EXPECT_TRUE(a.probe_batches.empty());
  EXPECT_EQ(b.probe_batches, (std::vector<int64_t>{8, 32, 128}));
  ASSERT_EQ(b.epochs.size(), 2u);
  ASSERT_EQ(b.samples.size(), a.samples.size());
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss);
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy);
    EXPECT_EQ(a.epochs[e].noise_scale, b.epochs[e].noise_scale);
    EXPECT_TRUE(a.epochs[e].probe_loss.empty());
    ASSERT_EQ(b.epochs[e].probe_loss.size(), 3u);
    for (double loss : b.epochs[e].probe_loss) {
      EXPECT_TRUE(std::isfinite(loss));
      EXPECT_GT(loss, 0);
    }
  }
  for (size_t i = 0; i < b.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].train_loss, b.samples[i].train_loss);
    EXPECT_EQ(b.samples[i].probe_loss.size(), 3u);
  }
  // The epoch's end sample is the epoch's own reading.
  EXPECT_EQ(b.samples.back().probe_loss, b.epochs.back().probe_loss);
}

// The test accuracy with BatchNorm's statistics recomputed (its buffers and momentum put back) leaves
// the training and eval mode's accuracy as they are, to the bit, and is recorded at every evaluation,
// on the whole BatchNorm batches (of 8) of the images asked for.
TEST_F(LargeBatchCli, BaselineRecomputedStatisticsLeaveTrainingUnchanged) {
  const std::string tiny = " --model fashion-cnn-gap" + kTinyBaseline + " --epochs 2 --evals-per-epoch 2";
  const ProgramRun off = run(kMeasure, "baseline" + tiny + " --profile " + (dir_ / "a.yaml").string());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const ProgramRun on = run(kMeasure, "baseline" + tiny + " --recompute-bn 60 --profile " + (dir_ / "b.yaml").string());
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const TrainingCurve a = load_profile((dir_ / "a.yaml").string()).training.at(0);
  const TrainingCurve b = load_profile((dir_ / "b.yaml").string()).training.at(0);
  EXPECT_EQ(a.recompute_bn_images, 0);
  EXPECT_EQ(b.recompute_bn_images, 56);
  ASSERT_EQ(b.epochs.size(), 2u);
  bool differs = false;
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss);
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy);
    EXPECT_EQ(a.epochs[e].noise_scale, b.epochs[e].noise_scale);
    EXPECT_EQ(a.epochs[e].probe_loss, b.epochs[e].probe_loss);
    EXPECT_EQ(a.epochs[e].test_accuracy_recomputed, -1);
    EXPECT_GE(b.epochs[e].test_accuracy_recomputed, 0);
    EXPECT_LE(b.epochs[e].test_accuracy_recomputed, 1);
  }
  ASSERT_EQ(b.samples.size(), a.samples.size());
  for (size_t i = 0; i < b.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].train_loss, b.samples[i].train_loss);
    EXPECT_EQ(a.samples[i].test_accuracy, b.samples[i].test_accuracy);
    EXPECT_GE(b.samples[i].test_accuracy_recomputed, 0);
    differs = differs || b.samples[i].test_accuracy_recomputed != b.samples[i].test_accuracy;
  }
  EXPECT_TRUE(differs) << "the recomputed statistics never changed an evaluation";
  EXPECT_EQ(b.samples.back().test_accuracy_recomputed, b.epochs.back().test_accuracy_recomputed);
}

// The pace probe (weights, BatchNorm buffers and momentum put back; batches from its own loaders)
// leaves the training as it is, to the bit, and records one reading per pair and probed step.
TEST_F(LargeBatchCli, BaselinePaceProbeLeavesTrainingUnchanged) {
  const std::string tiny = " --model fashion-cnn-gap" + kTinyBaseline + " --epochs 2 --evals-per-epoch 2";
  const ProgramRun off = run(kMeasure, "baseline" + tiny + " --profile " + (dir_ / "a.yaml").string());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const ProgramRun on = run(kMeasure, "baseline" + tiny + " --pace-probe-at 3,5 --pace-pairs 2x1,2x2 --pace-steps 2 "
                                      "--pace-draws 2 --pace-cool-steps 2 --pace-probe-images 64 --profile " +
                                          (dir_ / "b.yaml").string());
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const TrainingCurve a = load_profile((dir_ / "a.yaml").string()).training.at(0);
  const TrainingCurve b = load_profile((dir_ / "b.yaml").string()).training.at(0);
  EXPECT_TRUE(a.pace_probe.empty());
  ASSERT_EQ(b.epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].train_loss, b.epochs[e].train_loss);
    EXPECT_EQ(a.epochs[e].test_accuracy, b.epochs[e].test_accuracy);
    EXPECT_EQ(a.epochs[e].noise_scale, b.epochs[e].noise_scale);
    EXPECT_EQ(a.epochs[e].probe_loss, b.epochs[e].probe_loss);
    EXPECT_EQ(a.epochs[e].si_weight_sq, b.epochs[e].si_weight_sq);
  }
  ASSERT_EQ(b.samples.size(), a.samples.size());
  for (size_t i = 0; i < b.samples.size(); ++i) EXPECT_EQ(a.samples[i].train_loss, b.samples[i].train_loss);
  // Steps 3 and 5 of 4 per epoch (128 images at batch 32): 96 and 160 examples, each with both pairs.
  ASSERT_EQ(b.pace_probe.size(), 4u);
  const std::vector<std::pair<int64_t, double>> pairs = {{2, 1.0}, {2, 2.0}};
  for (size_t i = 0; i < 4; ++i) {
    const PaceProbeReading& r = b.pace_probe[i];
    EXPECT_EQ(r.examples, i < 2 ? 96.0 : 160.0);
    EXPECT_EQ(r.ratio, pairs[i % 2].first);
    EXPECT_EQ(r.lr_ratio, pairs[i % 2].second);
    EXPECT_EQ(r.steps, 2);
    EXPECT_EQ(r.cool_steps, 2);
    EXPECT_DOUBLE_EQ(r.cool, 0.1);
    EXPECT_EQ(r.draws, 2);
    EXPECT_LE(r.gains.size(), 2u);
    for (double g : r.gains) {
      EXPECT_GT(g, 0);
      EXPECT_LE(g, 4.0);  // within the continued baseline's 2-8 steps: at most 8 / 2
    }
  }
  // The probe is deterministic: the same run gives the same readings.
  const ProgramRun again = run(kMeasure, "baseline" + tiny + " --pace-probe-at 3,5 --pace-pairs 2x1,2x2 --pace-steps 2 "
                                         "--pace-draws 2 --pace-cool-steps 2 --pace-probe-images 64 --profile " +
                                             (dir_ / "c.yaml").string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const TrainingCurve c = load_profile((dir_ / "c.yaml").string()).training.at(0);
  ASSERT_EQ(c.pace_probe.size(), b.pace_probe.size());
  for (size_t i = 0; i < c.pace_probe.size(); ++i) EXPECT_EQ(c.pace_probe[i].gains, b.pace_probe[i].gains);
}

TEST_F(LargeBatchCli, BaselinePaceProbePastTheRunOrTheSetExits2) {
  const ProgramRun r = run(kMeasure, "baseline --model fashion-cnn-gap" + kTinyBaseline +
                                         " --epochs 1 --pace-probe-at 5 --pace-probe-images 64 --profile " +
                                         (dir_ / "p.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--pace-probe-at 5: the run has 4 steps"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  // A branch larger than the training set is refused before the run trains.
  const ProgramRun big = run(kMeasure, "baseline --model fashion-cnn-gap" + kTinyBaseline +
                                           " --epochs 1 --pace-probe-at 3 --pace-pairs 8x1 --pace-probe-images 64 "
                                           "--profile " + (dir_ / "q.yaml").string());
  EXPECT_EQ(big.exit_code, 2) << big.err;
  EXPECT_NE(big.err.find("--pace-pairs: 8x the batch (256) exceeds the training set (128 images)"), std::string::npos)
      << big.err;
  EXPECT_EQ(big.err.find('\n'), big.err.size() - 1) << big.err;
}

TEST_F(LargeBatchCli, BaselineCreatesAMissingProfile) {
  const fs::path profile = dir_ / "new" / "profile.yaml";
  const ProgramRun r = run(kMeasure, "baseline" + kTinyBaseline + " --epochs 1 --profile " + profile.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile p = load_profile(profile.string());
  EXPECT_EQ(p.machine.device_kind, "cpu");
  EXPECT_NE(p.measurement.command.find("measure baseline"), std::string::npos);
  expect_tiny_curve(curve_of(p), 8, 1);
}

// The short real run of issue 12: fashion-cnn on the first 12,800 real Fashion-MNIST training
// images at the course's batch 128 and lr 0.1 (100 steps), evaluated on the first 2,000 test
// images. Deterministic with the seed and one thread; the ranges bracket what such a run reaches
// (test accuracy 0.671, training accuracy 0.41 when this test was written; chance is 0.10). The
// mean training loss of this first stretch is above ln 10: lr 0.1 with momentum 0.9 makes the
// first steps overshoot before the loss falls.
TEST_F(LargeBatchCli, BaselineTrainsTheFashionCnnOnRealFashionMnist) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const fs::path profile = dir_ / "profile.yaml";
  const ProgramRun r = run(kMeasure,
                           "baseline --model fashion-cnn --device cpu --train-samples 12800 --test-samples 2000 "
                           "--batch 128 --epochs 1 --threads 1 --workers 0 --quiet --seed 0 --profile " +
                               profile.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile p = load_profile(profile.string());
  ASSERT_EQ(p.training.size(), 1u);
  const TrainingCurve& c = p.training[0];
  EXPECT_EQ(c.model, "fashion-cnn");
  EXPECT_EQ(c.data, "fashion-mnist");
  EXPECT_EQ(c.train_samples, 12800);
  EXPECT_EQ(c.small_batch, 32);
  ASSERT_EQ(c.epochs.size(), 1u);
  EXPECT_GT(c.epochs[0].test_accuracy, 0.55);
  EXPECT_LT(c.epochs[0].test_accuracy, 0.80);
  EXPECT_GT(c.epochs[0].train_accuracy, 0.30);
  EXPECT_LT(c.epochs[0].train_accuracy, 0.60);
  EXPECT_GT(c.epochs[0].noise_scale, 0);
  // eps_max every 4th step (the default): 0.347 with the scale-weighted averages; 0.078 with plain
  // ones, in which the first steps' overshoot outweighed the rest of this run.
  EXPECT_GT(c.epochs[0].max_lr, 0.1);
  EXPECT_LT(c.epochs[0].max_lr, 1.0);
  // The curvature at the start: 3 of its 8 tensors are scale-invariant there, the two convolutions
  // (no bias, each before BatchNorm) and the first BatchNorm's scale (its shift still 0, and ReLU,
  // max-pooling and the second convolution carry a scale through to the second BatchNorm); the
  // others (the second BatchNorm's scale and shift, the first's shift, the head on the flattened
  // map) start far past their bound, the head's 10-20 times (docs/LARGE_BATCH.md).
  ASSERT_TRUE(c.start_curvature.has_value());
  EXPECT_EQ(c.start_curvature->scale_invariant, 3);
  EXPECT_EQ(c.start_curvature->parameters, 8);
  ASSERT_TRUE(c.start_curvature->rest_lr_over_eps_max.has_value());
  EXPECT_GT(*c.start_curvature->rest_lr_over_eps_max, 4);
  EXPECT_GT(c.start_curvature->lr_over_eps_max, 4);
  // The scale-invariant parameters' readings (the two convolutions, found after the second step).
  EXPECT_GT(c.epochs[0].si_weight_sq, 0);
  EXPECT_GT(c.epochs[0].si_update_sq, 0);
  EXPECT_GT(c.epochs[0].si_trace_sigma, 0);
}

// fashion-cnn-gap's scale-invariant parameters (its two convolutions, found after the second step):
// their |w|^2 grows by each step's lr^2 (1 + m) / (1 - m) |v|^2 less weight decay's
// 2 lr wd |w|^2 / (1 - m), w . v in its steady state. That growth, integrated from the first sample
// with each window's measured |v|^2, lands on the |w|^2 measured at the end of these 100 steps
// (within 1.2% when this test was written; docs/LARGE_BATCH.md, "The scale-invariant weights' norm").
TEST_F(LargeBatchCli, BaselineRecordsTheScaleInvariantWeightsNormAsTheirStepsGrowIt) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const fs::path profile = dir_ / "profile.yaml";
  const ProgramRun r = run(kMeasure,
                           "baseline --model fashion-cnn-gap --device cpu --train-samples 12800 --test-samples 2000 "
                           "--batch 128 --epochs 1 --evals-per-epoch 4 --threads 1 --workers 0 --quiet --seed 0 "
                           "--profile " + profile.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile p = load_profile(profile.string());
  const TrainingCurve& c = p.training.at(0);
  ASSERT_EQ(c.samples.size(), 4u);
  const EpochPoint& e = c.epochs.at(0);
  ASSERT_GT(e.si_weight_sq, 0);
  EXPECT_GT(e.si_update_sq, 0);
  EXPECT_GT(e.si_trace_sigma, 0);
  double w = c.samples[0].si_weight_sq;
  ASSERT_GT(w, 0);
  EXPECT_GT(e.si_weight_sq, 1.2 * w);  // it grew
  const double m = c.momentum;
  for (size_t i = 1; i < c.samples.size(); ++i) {
    const CurveSample& s = c.samples[i];
    const double steps = (s.examples - c.samples[i - 1].examples) / static_cast<double>(c.batch);
    for (int k = 0; k < 100; ++k) {
      w += steps / 100 * (c.lr * c.lr * (1 + m) / (1 - m) * s.si_update_sq - 2 * c.lr * c.weight_decay * w / (1 - m));
    }
  }
  EXPECT_NEAR(w, e.si_weight_sq, 0.05 * e.si_weight_sq);
}

// A baseline whose one epoch stays above the untrained loss (lr 5 blows it up) is written as
// measured, with a warning that it never trained and nothing is predicted from it (the first-epoch
// warning is for a curve that trains later).
TEST_F(LargeBatchCli, BaselineThatNeverTrainedIsWarnedAbout) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const ProgramRun r = run(kMeasure,
                           "baseline --model fashion-cnn --device cpu --train-samples 640 --test-samples 100 "
                           "--batch 128 --epochs 1 --lr 5 --threads 1 --workers 0 --quiet --seed 0 "
                           "--noise-scale best-effort --profile " + (dir_ / "stalled.yaml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: this run never trained (every epoch's mean loss >= ln 10"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("did not train in its first epoch"), std::string::npos) << r.err;
  EXPECT_EQ(load_profile((dir_ / "stalled.yaml").string()).training.at(0).epochs.size(), 1u);
}

// A Fashion-MNIST folder of generated IDX files with the SYNTHETIC marker is labelled synthetic; a
// folder without the files is one error naming the missing file.
TEST_F(LargeBatchCli, BaselineFashionCnnReadsAnIdxFolder) {
  const fs::path data = dir_ / "fashion";
  fs::create_directories(data);
  // 40 training and 10 test images of 28x28 (header + bytes), labels 0..9 in turn.
  const auto write_idx = [&](const std::string& stem, int n) {
    std::string images = {0, 0, 8, 3, 0, 0, 0, static_cast<char>(n), 0, 0, 0, 28, 0, 0, 0, 28};
    std::string labels = {0, 0, 8, 1, 0, 0, 0, static_cast<char>(n)};
    for (int i = 0; i < n; ++i) {
      images.append(784, static_cast<char>(20 * (i % 10)));
      labels.push_back(static_cast<char>(i % 10));
    }
    std::ofstream(data / (stem + "-images-idx3-ubyte"), std::ios::binary) << images;
    std::ofstream(data / (stem + "-labels-idx1-ubyte"), std::ios::binary) << labels;
  };
  write_idx("train", 40);
  write_idx("t10k", 10);
  std::ofstream(data / "SYNTHETIC") << "generated by largebatch_cli_test\n";
  const fs::path profile = dir_ / "profile.yaml";
  const std::string flags = " --model fashion-cnn --device cpu --batch 8 --epochs 1 --threads 1 --workers 0 --quiet"
                            " --profile " + profile.string();
  const ProgramRun r = run(kMeasure, "baseline" + flags + " --data " + data.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile written = load_profile(profile.string());  // a reference into a temporary dangled (ASan)
  const TrainingCurve& c = written.training.at(0);
  EXPECT_EQ(c.data, "synthetic");
  EXPECT_EQ(c.train_samples, 40);

  fs::remove(data / "t10k-labels-idx1-ubyte");
  const ProgramRun missing = run(kMeasure, "baseline" + flags + " --data " + data.string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find((data / "t10k-labels-idx1-ubyte").string() + "[.gz]: missing"), std::string::npos)
      << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
}

TEST_F(LargeBatchCli, BaselineUnderDdpUsesThePerRankGradient) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const fs::path profile = dir_ / "profile.yaml";
  const ProgramRun r = run(kMeasure, "baseline" + kTinyBaseline + " --gpus 2 --epochs 1 --profile " + profile.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile written = load_profile(profile.string());
  const TrainingCurve& c = curve_of(written);
  expect_tiny_curve(c, 16, 1);  // B_small = 32 / 2 ranks
  EXPECT_EQ(c.epochs[0].max_lr, 0);  // eps_max is measured on one device only
  EXPECT_FALSE(c.start_curvature.has_value());  // so is the curvature at the start
  EXPECT_EQ(c.epochs[0].si_weight_sq, 0);       // and the scale-invariant parameters' norm
}

TEST_F(LargeBatchCli, BaselineBadFlagsExit2WithOneLine) {
  for (const std::string& flags :
       {std::string(" --lr-rule fast"), std::string(" --batch 30 --micro-batches 4"),
        std::string(" --gpus 2 --micro-batches 2"), std::string(" --train-samples 16"),
        std::string(" --ema-decay 1"), std::string(" --model vgg"), std::string(" --noise-scale maybe"),
        std::string(" --evals-per-epoch 0"), std::string(" --evals-per-epoch 101"), std::string(" --optimizer adam"),
        std::string(" --optimizer lars --lars-eta 0"), std::string(" --curvature-every -1"),
        std::string(" --gpus 2 --curvature-every 2"), std::string(" --bn-probe-images 8"),
        std::string(" --bn-probe-images 256"), std::string(" --bn-probe-images -1"),
        std::string(" --pace-steps 5"), std::string(" --pace-probe-at 0"), std::string(" --pace-probe-at 3,2"),
        std::string(" --pace-probe-at x"), std::string(" --pace-probe-at 3 --pace-pairs 1x1"),
        std::string(" --pace-probe-at 3 --pace-pairs 16"), std::string(" --pace-probe-at 3 --pace-pairs 2x0"),
        std::string(" --pace-probe-at 3 --pace-probe-images 60"), std::string(" --pace-probe-at 3 --pace-cool 1"),
        std::string(" --pace-probe-at 3 --pace-probe-images 256"),
        std::string(" --pace-probe-at 3 --optimizer lars"), std::string(" --pace-probe-at 3 --gpus 2"),
        std::string(" --recompute-bn 4"), std::string(" --recompute-bn 256"), std::string(" --recompute-bn -1")}) {
    const ProgramRun r = run(kMeasure, "baseline" + kTinyBaseline + flags + " --profile " + (dir_ / "p.yaml").string());
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << flags << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << flags << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "p.yaml")) << flags;
  }
}

TEST_F(LargeBatchCli, BaselineRejectsAMalformedProfileBeforeTraining) {
  std::ofstream(dir_ / "bad.yaml") << "schema_version: 2\n";
  const ProgramRun r = run(kMeasure, "baseline" + kTinyBaseline + " --profile " + (dir_ / "bad.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("schema_version"), std::string::npos) << r.err;
}

TEST_F(LargeBatchCli, ValidationWritesItsFilesAndEndsWithTheErrorLine) {
  const fs::path out = dir_ / "largebatch";
  const ProgramRun r = run(kMeasure, "largebatch-validate --quiet --threads 2 --out " + out.string() + kTinyValidation);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string last = r.out.substr(0, r.out.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  EXPECT_TRUE(std::regex_match(last, std::regex(R"(steps-to-target error: [0-9]+\.[0-9]% over 3 batch sizes)")))
      << last;
  for (const char* name : {"report.md", "predictions.csv", "trials.csv", "baseline_curves.csv", "steps.gp", "steps.dat"}) {
    EXPECT_TRUE(fs::exists(out / name)) << name;
  }
  const std::string report = read_file(out / "report.md");
  EXPECT_NE(report.find("measure largebatch-validate --quiet --threads 2"), std::string::npos);
  EXPECT_NE(report.find("(baseline)"), std::string::npos);
  // predictions.csv: a header and one row per case and batch size.
  const std::string csv = read_file(out / "predictions.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * 4);
}

TEST_F(LargeBatchCli, PlanBadFlagsAndBadFoldersExitWithOneLine) {
  ProgramRun r = run(kMeasure, "largebatch-plan --dir " + dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--runs"), std::string::npos) << r.err;
  r = run(kMeasure, "largebatch-plan --dir " + (dir_ / "absent").string() + " --runs b512-sqrt-s0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "error: " + (dir_ / "absent" / "runs").string() + ": not a folder of run curves\n");
  fs::create_directories(dir_ / "runs");
  std::ofstream(dir_ / "plan.csv") << "run,seed\n";
  r = run(kMeasure, "largebatch-plan --dir " + dir_.string() + " --runs b512-sqrt-s0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find("plan.csv:1: header: expected"), ("error: " + dir_.string() + "/").size()) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // --edge-of-stability writes its own plan: plan.csv's header does not stop it.
  r = run(kMeasure, "largebatch-plan --dir " + dir_.string() + " --runs b512-sqrt-s0 --edge-of-stability");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("b512-sqrt-s0: no baseline for seed 0"), std::string::npos) << r.err;
}

TEST_F(LargeBatchCli, ValidationBadFlagsExit2) {
  const ProgramRun r = run(kMeasure, "largebatch-validate --batches 8,16 --base-batch 32 --out " + dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("base batch 32"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim
