// The fit to a few timings and the transfer between catalog GPUs (sim/fit, docs/FIT.md).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "fit/device_model.h"
#include "fit/fit.h"
#include "fit/fit_format.h"
#include "format/errors.h"
#include "io/gpu_catalog.h"
#include "sim_test_profiles.h"
#include "train/batch_curve.h"

namespace trainsim::fit {
namespace {

const GpuCatalog& catalog() {
  static const GpuCatalog c = load_gpu_catalog(default_gpu_catalog_path());
  return c;
}

GpuSpec gpu(const std::string& key) {
  const GpuSpec* g = catalog().find(key);
  EXPECT_NE(g, nullptr) << key;
  return *g;
}

Observation observation(Strategy strategy, int gpus, int64_t batch, int workers, bool epoch) {
  Observation o;
  o.strategy = strategy;
  o.gpus = gpus;
  o.batch_per_gpu = batch;
  o.loader_workers = workers;
  (epoch ? o.epoch_s : o.iteration_s) = 1.0;  // replaced by the generated time
  return o;
}

SweepConfig config_for(std::vector<Observation> observations) {
  SweepConfig c;
  c.file = "test.yaml";
  c.train_samples = 50000;
  c.loader_workers = 2;
  c.strategies = {Strategy::kDdp};
  c.gpus = {1};
  c.batch_per_gpu = {128};
  c.observations = std::move(observations);
  return c;
}

// Every observation's time as the simulator gives it with `truth`.
SweepConfig generated(SweepConfig c, const std::optional<GpuSpec>& target, const ParamValues& truth) {
  FitSetup setup;
  setup.config = c;
  setup.target = target;
  const DeviceFit device(setup);
  for (Observation& o : c.observations) {
    const double t = device.predict(o, truth, /*link_fitted=*/true);
    (o.epoch_s ? o.epoch_s : o.iteration_s) = t;
  }
  return c;
}

ParamValues known_values() {
  ParamValues v{};
  at(v, Param::kEfficiency) = 0.4;
  at(v, Param::kOverhead) = 2e-3;
  at(v, Param::kLoaderSample) = 0.3e-3;
  at(v, Param::kLoaderStartup) = 0.5;
  at(v, Param::kLinkBusbw) = 80;
  at(v, Param::kLinkLatency) = 20e-6;
  at(v, Param::kDpReplica) = 3e-3;
  return v;
}

// Observations that exercise every parameter: compute-bound and loader-bound 1-GPU epochs,
// iteration times (no start-up), DDP on 2, 4 and 8 GPUs at a batch small enough that the
// all-reduce is not hidden behind backward (bus bandwidth and latency), DataParallel
// on 2 and 4 (its host work per replica).
std::vector<Observation> rich_observations() {
  return {observation(Strategy::kDdp, 1, 32, 8, false),   observation(Strategy::kDdp, 1, 512, 8, false),
          observation(Strategy::kDdp, 1, 2048, 8, false), observation(Strategy::kDdp, 1, 512, 1, true),
          observation(Strategy::kDdp, 1, 256, 2, true),   observation(Strategy::kDdp, 1, 128, 0, false),
          observation(Strategy::kDdp, 2, 4, 8, false),    observation(Strategy::kDdp, 4, 4, 8, false),
          observation(Strategy::kDdp, 8, 4, 8, false),    observation(Strategy::kDdp, 8, 512, 8, false),
          observation(Strategy::kDp, 2, 64, 8, false),    observation(Strategy::kDp, 4, 32, 8, false)};
}

TEST(Fit, RecoversKnownParametersFromSimulatedObservations) {
  const ParamValues truth = known_values();
  const SweepConfig c = generated(config_for(rich_observations()), gpu("a100-sxm4-40gb"), truth);
  FitSetup setup;
  setup.config = c;
  setup.target = gpu("a100-sxm4-40gb");
  const FitResult fit = DeviceFit(setup).fit_all();
  for (int k = 0; k < kParamCount; ++k) {
    const auto p = static_cast<Param>(k);
    EXPECT_EQ(fit.estimate(p).status, ParamStatus::kFitted) << param_info(p, true).name;
    EXPECT_NEAR(at(fit.values, p) / at(truth, p), 1.0, 0.01) << param_info(p, true).name;
  }
  EXPECT_LT(fit.rms_relative_error, 1e-3);
  EXPECT_EQ(fit.degrees_of_freedom, 12 - kParamCount);
}

TEST(Fit, RecoversAnUnknownDevicesFlopRate) {
  ParamValues truth = known_values();
  at(truth, Param::kEfficiency) = 7.5e12;  // FLOP/s: an unknown device's compute is its rate
  std::vector<Observation> obs = {observation(Strategy::kDdp, 1, 32, 8, false),
                                  observation(Strategy::kDdp, 1, 1024, 8, false),
                                  observation(Strategy::kDdp, 1, 256, 8, false)};
  const SweepConfig c = generated(config_for(obs), std::nullopt, truth);
  FitSetup setup;
  setup.config = c;
  const FitResult fit = DeviceFit(setup).fit_all();
  EXPECT_FALSE(fit.named_gpu);
  EXPECT_NEAR(at(fit.values, Param::kEfficiency) / 7.5e12, 1.0, 0.01);
  EXPECT_NEAR(at(fit.values, Param::kOverhead) / 2e-3, 1.0, 0.01);
}

TEST(Fit, NamesWhatOneObservationCannotDetermine) {
  // One iteration time: compute and per-iteration overhead trade off; the inline loader too.
  const SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 128, 0, false)}),
                                  gpu("t4"), known_values());
  FitSetup setup;
  setup.config = c;
  setup.target = gpu("t4");
  const FitResult fit = DeviceFit(setup).fit_all();
  EXPECT_EQ(fit.estimate(Param::kEfficiency).status, ParamStatus::kFitted);
  EXPECT_FALSE(fit.estimate(Param::kEfficiency).relative_se);  // no degree of freedom: no error bar
  const std::vector<std::string> undetermined = fit.undetermined();
  EXPECT_NE(std::find(undetermined.begin(), undetermined.end(), "iteration_overhead"), undetermined.end());
  EXPECT_NE(std::find(undetermined.begin(), undetermined.end(), "loader_cost_per_sample"), undetermined.end());
  EXPECT_EQ(fit.estimate(Param::kLinkBusbw).status, ParamStatus::kNotInPlay);
}

// An unknown device with no link named and none fitted: multi-GPU cells are predicted on the
// stated default (PCIe 3.0 x16 without peer-to-peer: half of 15.75 GB/s), not refused, and the
// fit's notes say so; a link the config names wins.
TEST(Fit, AnUnknownDevicesMultiGpuCellsTakeTheStatedPcieDefault) {
  const SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 32, 2, false),
                                              observation(Strategy::kDdp, 1, 512, 2, false)}),
                                  std::nullopt, [] {
                                    ParamValues v = known_values();
                                    at(v, Param::kEfficiency) = 5e12;
                                    return v;
                                  }());
  FitSetup setup;
  setup.config = c;  // an unknown device: no catalog link
  const DeviceFit device(setup);
  const FitResult fit = device.fit_all();
  RunSpec four;
  four.gpus = 4;
  EXPECT_FALSE(device.unpredictable(four, fit));
  EXPECT_TRUE(device.default_link());
  ASSERT_TRUE(device.fallback_link());
  EXPECT_NEAR(device.fallback_link()->bus_bandwidth_gbs, 16 * 8 * 128.0 / 130 / 8 / 2, 1e-9);
  const std::vector<std::string> notes = fit_notes(fit, "an unknown device", device.default_link());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](const std::string& n) { return n.find("PCIe 3.0 x16 without peer-to-peer assumed") != std::string::npos; }));
  SweepConfig named = c;
  InterconnectAssumption link;
  link.bus_bandwidth_gbs = 50;
  named.interconnect = link;
  FitSetup with_link;
  with_link.config = named;
  const DeviceFit given(with_link);
  EXPECT_FALSE(given.default_link());
  EXPECT_EQ(given.fallback_link()->bus_bandwidth_gbs, 50);
}

TEST(Fit, HoldoutPredictsEachObservationFromTheOthers) {
  const SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 32, 8, false),
                                              observation(Strategy::kDdp, 1, 256, 8, false),
                                              observation(Strategy::kDdp, 1, 1024, 8, false),
                                              observation(Strategy::kDdp, 1, 2048, 8, false)}),
                                  gpu("v100-sxm2-16gb"), known_values());
  FitSetup setup;
  setup.config = c;
  setup.target = gpu("v100-sxm2-16gb");
  const DeviceFit device(setup);
  const std::vector<HoldoutRow> rows = holdout(device, device.fit_all());
  ASSERT_EQ(rows.size(), 4u);
  for (const HoldoutRow& row : rows) {
    ASSERT_TRUE(row.predicted) << row.why_not;
    // Noise-free observations of the model itself: every one predicted from the other three.
    EXPECT_NEAR(*row.predicted / c.observations[row.observation].measured(), 1.0, 0.01);
  }
}

// Threads change when the starts and the folds run, never what they find.
TEST(Fit, StartsAndFoldsOnSeveralThreadsGiveTheSameFitAsOne) {
  const SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 32, 8, false),
                                              observation(Strategy::kDdp, 1, 256, 8, false),
                                              observation(Strategy::kDdp, 1, 1024, 8, false),
                                              observation(Strategy::kDdp, 1, 512, 1, true)}),
                                  gpu("v100-sxm2-16gb"), known_values());
  FitSetup setup;
  setup.config = c;
  setup.target = gpu("v100-sxm2-16gb");
  const DeviceFit device(setup);
  std::size_t calls = 0;
  const FitResult one = device.fit_all(1);
  const FitResult three = device.fit_all(3, [&](std::size_t done, std::size_t total) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 3u);
  });
  EXPECT_EQ(calls, 3u);
  for (int k = 0; k < kParamCount; ++k) {
    const auto p = static_cast<Param>(k);
    EXPECT_EQ(at(one.values, p), at(three.values, p)) << param_info(p, true).name;
    EXPECT_EQ(one.estimate(p).status, three.estimate(p).status) << param_info(p, true).name;
  }
  const std::vector<HoldoutRow> serial = holdout(device, one, 1);
  const std::vector<HoldoutRow> parallel = holdout(device, one, 2);
  ASSERT_EQ(serial.size(), parallel.size());
  for (std::size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(serial[i].observation, i);
    EXPECT_EQ(parallel[i].observation, i);
    EXPECT_EQ(serial[i].predicted, parallel[i].predicted) << i;
  }
}

// A refit from a fit of the same observations stays where it is; what that fit left undetermined
// stays undetermined (fewer observations determine no more).
TEST(Fit, ARefitFromTheFullFitKeepsItsOptimumAndWhatItLeftUndetermined) {
  const SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 32, 0, false),
                                              observation(Strategy::kDdp, 1, 256, 0, false),
                                              observation(Strategy::kDdp, 1, 1024, 0, false),
                                              observation(Strategy::kDdp, 1, 2048, 0, false)}),
                                  gpu("t4"), known_values());
  FitSetup setup;
  setup.config = c;
  setup.target = gpu("t4");
  const DeviceFit device(setup);
  const FitResult full = device.fit_all();
  ASSERT_EQ(full.estimate(Param::kEfficiency).status, ParamStatus::kFitted);
  const FitResult again = device.refit({0, 1, 2, 3}, full);
  for (int k = 0; k < kParamCount; ++k) {
    const auto p = static_cast<Param>(k);
    EXPECT_EQ(again.estimate(p).status, full.estimate(p).status) << param_info(p, true).name;
    if (at(full.values, p) > 0) EXPECT_NEAR(at(again.values, p) / at(full.values, p), 1.0, 1e-3) << param_info(p, true).name;
  }
  const FitResult fold = device.refit({0, 1, 3}, full);
  for (int k = 0; k < kParamCount; ++k) {
    const auto p = static_cast<Param>(k);
    if (full.estimate(p).status == ParamStatus::kUndetermined) {
      EXPECT_EQ(fold.estimate(p).status, ParamStatus::kUndetermined) << param_info(p, true).name;
    }
  }
}

// A multi-GPU timing far slower than any link explains drives the link's bandwidth to the bottom
// of its range: kept there and flagged (it is a rate, not a cost that the floor means none of;
// it once became 0 and stopped the program with an internal error).
TEST(Fit, AnImpossiblySlowMultiGpuTimingPutsTheLinkAtTheEdgeOfItsRange) {
  SweepConfig c = generated(config_for({observation(Strategy::kDdp, 1, 32, 0, false),
                                        observation(Strategy::kDdp, 1, 256, 0, false),
                                        observation(Strategy::kDdp, 2, 64, 0, false)}),
                            std::nullopt, [] {
                              ParamValues v = known_values();
                              at(v, Param::kEfficiency) = 5e12;
                              return v;
                            }());
  c.observations[2].iteration_s = *c.observations[2].iteration_s * 1e6;
  FitSetup setup;
  setup.config = c;
  const DeviceFit device(setup);
  const FitResult fit = device.fit_all();
  const ParamEstimate& link = fit.estimate(Param::kLinkBusbw);
  ASSERT_EQ(link.status, ParamStatus::kFitted);
  EXPECT_GT(link.value, 0);
  EXPECT_TRUE(link.at_limit);
  const double predicted = device.predict(c.observations[2], fit.values, link_fitted(fit));
  EXPECT_TRUE(std::isfinite(predicted) && predicted > 0);
}

// Folds start from the full fit only where each is a small part of many observations per parameter.
TEST(Fit, HoldoutStartsFromTheFullFitOnlyWithManyObservationsPerParameter) {
  FitResult full;
  for (int k = 0; k < kParamCount; ++k) {
    ParamEstimate e;
    e.param = static_cast<Param>(k);
    e.status = k < 3 ? ParamStatus::kFitted : ParamStatus::kNotInPlay;
    full.params.push_back(e);
  }
  EXPECT_FALSE(holdout_starts_warm(full, 12));  // 11 per fold < 4 x 3
  EXPECT_TRUE(holdout_starts_warm(full, 13));
  full.params[3].status = ParamStatus::kUndetermined;  // in play, though not determined
  EXPECT_FALSE(holdout_starts_warm(full, 13));
}

// The 68% prediction interval covers the truth about 68% of the time when the model is right and
// the timings carry the noise the interval assumes (5%, log-normal): simulator-made observations
// of known parameters, noise from a fixed seed, 4 fitted and 3 held out per draw.
TEST(Fit, IntervalsCoverSimulatedHeldOutTimingsAtAboutTheirRate) {
  ParamValues truth = known_values();
  const std::vector<int64_t> fitted = {32, 128, 512, 2048};
  const std::vector<int64_t> held = {64, 256, 1024};
  std::vector<Observation> obs;
  for (int64_t b : fitted) obs.push_back(observation(Strategy::kDdp, 1, b, 8, false));
  SweepConfig clean = generated(config_for(obs), gpu("t4"), truth);
  std::vector<Observation> held_obs;
  for (int64_t b : held) held_obs.push_back(observation(Strategy::kDdp, 1, b, 8, false));
  const SweepConfig held_clean = generated(config_for(held_obs), gpu("t4"), truth);
  std::mt19937_64 rng(20261205);
  std::normal_distribution<double> noise(0.0, kTimingNoise);
  int inside = 0, total = 0;
  for (int draw = 0; draw < 12; ++draw) {
    SweepConfig c = clean;
    for (Observation& o : c.observations) *o.iteration_s *= std::exp(noise(rng));
    FitSetup setup;
    setup.config = c;
    setup.target = gpu("t4");
    const DeviceFit device(setup);
    const FitResult fit = device.fit_all();
    for (const Observation& h : held_clean.observations) {
      const double measured = *h.iteration_s * std::exp(noise(rng));
      inside += device.interval(h, fit).contains(measured) ? 1 : 0;
      ++total;
    }
  }
  const double coverage = static_cast<double>(inside) / total;
  // 36 intervals: the binomial spread of the count at 68% is +-8 points; +-20 is a real miss.
  EXPECT_GT(coverage, 0.48) << inside << " of " << total;
  EXPECT_LT(coverage, 0.88) << inside << " of " << total;
  std::cout << "interval coverage " << inside << " of " << total << "\n";
}

TEST(Fit, AnIntervalOverTenfoldEitherWayIsUndetermined) {
  EXPECT_FALSE((Interval{1.0, 0.5, 2.0}).undetermined());
  EXPECT_FALSE((Interval{1.0, 0.1, 10.0}).undetermined());
  EXPECT_TRUE((Interval{1.0, 0.05, 20.0}).undetermined());
  EXPECT_TRUE((Interval{1.0, 0.05, 20.0}).contains(3.0));
}

TEST(Fit, AnObservationOnAnotherGpuNeedsANamedTarget) {
  SweepConfig c = config_for({observation(Strategy::kDdp, 1, 32, 2, true)});
  c.observations[0].gpu = gpu("t4");
  c.observations[0].line = 7;
  FitSetup setup;
  setup.config = c;
  try {
    DeviceFit device(setup);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_NE(std::string(e.what()).find("gpu"), std::string::npos);
  }
}

// A measured GPU profile: the synthetic fixture, said to come from an A100.
Profile a100_profile() {
  testing::SyntheticKnobs k;
  k.overhead_s = 1e-3;
  Profile p = testing::synthetic_profile(k);
  p.machine.device_name = "NVIDIA A100-SXM4-40GB";
  return p;
}

double parts(const ModelProfile& m, std::size_t i) {
  double sum = m.loss_s[i] + m.zero_grad_s[i] + m.optimizer_s[i];
  for (const LayerProfile& l : m.layers) sum += l.forward_s[i] + l.backward_s[i];
  return sum;
}

TEST(Transfer, ToTheSameGpuIsTheIdentity) {
  const Profile p = a100_profile();
  const Profile same = transfer_profile(p, "resnet18-cifar", gpu("a100-sxm4-40gb"), gpu("a100-sxm4-40gb"));
  const ModelProfile& a = p.models.at("resnet18-cifar");
  const ModelProfile& b = same.models.at("resnet18-cifar");
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_EQ(a.layers[l].forward_s, b.layers[l].forward_s);
    EXPECT_EQ(a.layers[l].backward_s, b.layers[l].backward_s);
  }
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(same.machine.device_memory_bytes, p.machine.device_memory_bytes);
}

TEST(Transfer, ScalesEachLayerBetweenTheBandwidthAndTheFlopRatios) {
  const Profile p = a100_profile();
  const GpuSpec from = gpu("a100-sxm4-40gb"), to = gpu("h100-sxm");
  const Profile moved = transfer_profile(p, "resnet18-cifar", from, to);
  const ModelProfile& a = p.models.at("resnet18-cifar");
  const ModelProfile& b = moved.models.at("resnet18-cifar");
  const double flops = to.fp32_training_flops() / from.fp32_training_flops();   // 494.5 / 156
  const double bandwidth = to.memory_bandwidth_gbs / from.memory_bandwidth_gbs;  // 3350 / 1555
  // At the largest batch every op fills both GPUs: each layer speeds up by a mix of the two
  // ratios, weighted by how much of it is compute-bound (wave fill aside).
  const std::size_t last = a.batches.size() - 1;
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const double speedup = a.layers[l].forward_s[last] / b.layers[l].forward_s[last];
    EXPECT_GE(speedup, std::min(flops, bandwidth) * 0.999) << a.layers[l].name;
    EXPECT_LE(speedup, std::max(flops, bandwidth) * 1.001) << a.layers[l].name;
  }
  // The loop keeps what it measured beyond its parts (host overhead carries over).
  for (std::size_t i = 0; i < a.batches.size(); ++i) {
    EXPECT_NEAR(b.iteration_s[i] - parts(b, i), a.iteration_s[i] - parts(a, i), 1e-12);
  }
  EXPECT_DOUBLE_EQ(moved.machine.device_memory_bytes, to.memory_bytes);
  for (const CollectiveCurve& c : moved.collectives.curves) EXPECT_EQ(c.ranks, 1);
}

TEST(Transfer, CatalogInterconnectIsTheLinksPerDirectionPeak) {
  EXPECT_DOUBLE_EQ(catalog_interconnect(gpu("a100-sxm4-40gb")).bus_bandwidth_gbs, 300);  // 600 GB/s NVLink / 2
  EXPECT_NEAR(catalog_interconnect(gpu("t4")).bus_bandwidth_gbs, 15.75, 0.01);           // PCIe 3.0 x16
}

}  // namespace
}  // namespace trainsim::fit
