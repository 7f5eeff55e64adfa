// Profile YAML: exact write -> load round trip, deterministic bytes, atomic writes, rejection of
// malformed profiles at the right line and key, and require_for_model's per-sweep checks.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "format/errors.h"
#include "format/profile_io.h"
#include "io/profile_needs.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(TRAINSIM_FIXTURES_DIR) + "/io/test-fixture-profile.yaml";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// 1-based line of the first occurrence of `needle` in `text` (0 if absent).
int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

class ProfileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& relative, const std::string& text) {
    const fs::path path = dir_ / relative;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  ::trainsim::testing::TempDir temp_{"trainsim-io-profile"};
  fs::path dir_ = temp_.path();
};

// A small profile exercising every field: 2 layers, 3 batches, curves, awkward doubles and
// strings that need quoting or escapes.
Profile make_profile() {
  Profile p;
  p.machine.name = "test-machine";
  p.machine.host = "host \"quoted\" # not a comment";
  p.machine.cpu = "CPU: back\\slash, tab\there";
  p.machine.cpu_cores = 2;
  p.machine.host_memory_bytes = 25769803776.0;
  p.machine.device_kind = "cuda";
  p.machine.device_name = "line one\nline two \x01";
  p.machine.device_count = 4;
  p.machine.device_memory_bytes = 150.0e9;
  p.machine.driver = "550.54";
  p.machine.cuda = "12.4";
  p.machine.nccl = "2.21.5";
  p.machine.libtorch = "2.3.0";
  p.machine.date = "2024-05-01T12:00:00Z";
  p.machine.threads = 16;

  p.measurement.command = "measure --device cuda --out 'reports/x'";
  p.measurement.resumed = {{"measure --resume --models \"b\"", "2024-05-02T08:00:00Z", 0.1 + 0.2},
                           {"measure --resume", "2024-05-03T08:00:00Z", 1.0 / 3.0}};
  p.measurement.data = "synthetic";
  p.measurement.warmup = 3;
  p.measurement.repeats = 7;
  p.measurement.quick = true;
  p.measurement.cudnn_benchmark = false;
  p.measurement.tf32_convolutions = true;
  p.measurement.tf32_matmul = false;
  p.measurement.precision = Precision::kBf16Amp;
  p.measurement.memory_format = MemoryFormat::kChannelsLast;

  ModelProfile m;
  m.name = "resnet18-cifar";
  m.parameters = 11173962;
  m.input_bytes_per_sample = 12288;
  m.num_classes = 10;
  m.batches = {32, 64, 128};
  m.loss_s = {0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0};  // neither has a short decimal form
  // Times at the edges of what a measured time can be (1 ns and 10^6 s, the reader's bounds).
  m.zero_grad_s = {1e-7, 1.0000000000000002e-9, 0.0};
  m.optimizer_s = {999999.99999999988, 123456.789123456789, 1e-9};
  m.iteration_s = {0.25, 0.5, 1.0};
  m.peak_memory_bytes = {1.0e9, 2.0e9, 4.0e9 + 1.0};
  m.memory_method = "cuda-allocator-peak";
  m.oom_batch = 256;
  m.max_batch_tried = std::nullopt;
  m.host_contention = {{1, 32, 0.25}, {2, 32, 0.1 + 0.2}, {4, 32, 2.0 / 3.0}};
  m.ddp_iteration_s = {0.26, 0.1 + 0.41, 1.0 / 7.0};

  LayerProfile stem;
  stem.name = "stem";
  stem.kind = "stem";
  stem.params = {{"conv1.weight", 6912}, {"bn1.weight", 256}, {"bn1.bias", 256}};
  stem.buffer_bytes = 520;
  stem.output_shape = {64, 32, 32};
  stem.forward_flops = 7.0779e6;
  stem.forward_s = {0.001, 0.002, 0.004};
  stem.backward_s = {0.0021, 0.0042, 0.0084};
  LayerProfile head;
  head.name = "fc";
  head.kind = "head";
  head.params = {{"fc.weight", 20480}, {"fc.bias", 40}};
  head.buffer_bytes = 0;
  head.output_shape = {10};
  head.forward_flops = 10240;
  head.forward_s = {1e-5, 2e-5, 4e-5};
  head.backward_s = {3e-5, 6e-5, 1.2e-4};
  m.layers = {stem, head};
  m.ddp_buckets = {{20520, {3, 4}}, {7424, {0, 1, 2}}};  // tensor bytes: 6912, 256, 256, 20480, 40
  p.models[m.name] = m;

  // A model entry whose measurement has not started yet (a partial profile under --resume).
  ModelProfile empty;
  empty.name = "resnet18-imagenet";
  empty.parameters = 11689512;
  empty.input_bytes_per_sample = 602112;
  empty.num_classes = 1000;
  empty.memory_method = "cuda-allocator-peak";
  empty.max_batch_tried = 1024;
  p.models[empty.name] = empty;

  p.h2d.applicable = true;
  p.h2d.pinned = {{4096, 1e-5}, {1048576, 4.5e-5}};
  p.h2d.pageable = {{4096, 2e-5}, {1048576, 9.1e-5}};

  p.collectives.backend = "nccl";
  p.collectives.source = "nccl-tests:logs/all_reduce.txt";
  p.collectives.curves = {
      {"all_reduce", 2, {{8, 1.1e-5}, {1024, 1.2e-5}, {1 << 20, 3.3e-5}}},
      {"all_reduce", 4, {{8, 1.4e-5}, {1024, 1.5e-5}, {1 << 20, 4.1e-5}}},
      {"broadcast", 2, {{8, 0.9e-5}}},
      {"reduce", 4, {}},
  };

  p.loader.data = "synthetic";
  p.loader.batch = 128;
  p.loader.points = {{0, 4100.5, 0.0}, {1, 3900.25, 0.125}, {4, 15000, std::nullopt}};

  TrainingCurve curve;
  curve.model = "resnet18-cifar";
  curve.data = "cifar10";
  curve.batch = 128;
  curve.small_batch = 32;
  curve.train_samples = 50000;
  curve.lr = 0.1;
  curve.momentum = 0.9;
  curve.weight_decay = 5e-4;
  curve.lr_rule = "linear-warmup";
  curve.warmup_epochs = 0.1 + 0.2;
  // Awkward doubles again; epoch 2 has no test accuracy (-1).
  curve.epochs = {{1, 50000, 1.0 / 3.0, 0.4, 0.45, 2.5e-3, 1.7976931348623157e308, 0.1 + 0.2, 0.1 / 3, 1.0 / 7.0, 0.1 / 9},
                  {2, 100000, 0.0, 1.0, -1, 0.0, 0.0, 0.0},
                  {5, 250000, 0.5, 0.875, 1.0, 5e-324, 12.5, 2500}};
  // Samples inside the run (--evals-per-epoch): one not evaluated, one without a noise scale; an
  // eps_max (max_lr) and B_noise (curvature_noise_scale, with its standard error) on the first of
  // each, none (0, not written) on the others.
  curve.samples = {{1.0 / 3.0 * 1000, 1.0 / 3.0 * 1000, 4.5, 0.2, 0.3, 7.25, 0.07, 0.1 + 0.7, 0.3 / 7},
                   {50000, 49000, 1.0 / 7.0, 0.5, -1, 0}};
  // The BatchNorm probe: a reading on the first epoch and on the first sample, none on the others.
  curve.probe_batches = {32, 128, 1024};
  curve.epochs[0].probe_loss = {1.0 / 3.0, 0.1 + 0.2, 0.0};
  curve.samples[0].probe_loss = {2.5, 2.25, 1.0 / 7.0};
  // The test accuracy with BatchNorm's statistics recomputed, on the first epoch and sample.
  curve.recompute_bn_images = 8192;
  curve.epochs[0].test_accuracy_recomputed = 0.1 + 0.2;
  curve.samples[0].test_accuracy_recomputed = 1.0;
  // The scale-invariant parameters' readings on the last epoch and the first sample.
  curve.epochs[2].si_weight_sq = 21.5 + 1.0 / 3.0;
  curve.epochs[2].si_update_sq = 0.1 + 0.2;
  curve.epochs[2].si_trace_sigma = 0.0;
  curve.samples[0].si_weight_sq = 1.0 / 7.0;
  curve.samples[0].si_update_sq = 2.5e-3;
  curve.samples[0].si_trace_sigma = 12.0 / 7.0;
  // The curvature at the start; negative: no positive curvature along that direction.
  curve.start_curvature = StartCurvature{0.1 + 0.2, -1.0 / 3.0, 2, 8};
  // The pace probe: two pairs at one state, one draw outside its readings, and a later state.
  curve.pace_probe = {PaceProbeReading{30080, 16, 1, 60, 200, 0.1, 2, {1.0 / 3.0 + 1, 1.08}},
                      PaceProbeReading{30080, 16, 0.1 + 3.9, 60, 200, 0.1, 2, {4.25}},
                      PaceProbeReading{60160.5, 4, 2, 30, 50, 1.0 / 7.0, 1, {}}};
  p.training.push_back(curve);
  // A curve whose run has not finished an epoch yet.
  TrainingCurve empty_curve = curve;
  empty_curve.model = "tiny-mlp";
  empty_curve.lr_rule = "sqrt";
  empty_curve.warmup_epochs = 0;
  empty_curve.optimizer = "lars";  // measure baseline --optimizer lars
  empty_curve.lars_eta = 0.001 + 0.002;
  empty_curve.samples.clear();
  empty_curve.epochs.clear();
  empty_curve.probe_batches.clear();  // a run without the probe
  empty_curve.recompute_bn_images = 0;
  empty_curve.start_curvature = StartCurvature{15.5, std::nullopt, 3, 3};  // every tensor scale-invariant
  empty_curve.pace_probe.clear();
  p.training.push_back(empty_curve);

  p.calibration = Calibration{"resnet18-cifar", 32, 1, 0.1 + 0.2, 1.0 / 3.0};
  PytorchProfile py;
  py.torch = "1.13.0a0+git\"quoted\"";
  py.torchvision = "0.14.1a0";
  py.python = "3.11.2";
  py.threads = 1;
  py.probe_s = 0.91;
  py.loader.data = "synthetic";
  py.loader.batch = 128;
  py.loader.points = {{0, 9800.5, 0.0}, {2, 17000.25, 0.077}};
  py.loader.at_batches = {{32, {{2, 12000.5, std::nullopt}}}, {512, {{0, 9000.25, std::nullopt}, {2, 21000, std::nullopt}}}};
  PytorchLoop loop{{32, 128}, {0.9, 2.0 / 3.0}, {0.95, 3.5}, 512, std::nullopt, 88, 6.8e-4, {1200, 555000}};
  loop.fork = ForkCost{1, {{1, {0.015, 0.02}, {0.05, 0.06}, {0.1 + 0.2, 0.4}}, {2, {0.016, 0.021}, {0.07, 0.08}, {0.45, 0.5}}}};
  py.models["resnet18-cifar"] = loop;
  py.models["no-fork"] = PytorchLoop{{32}, {0.9}, {0.95}, std::nullopt, std::nullopt, std::nullopt, std::nullopt, {}};
  py.gil = GilProfile{{1, 2, 4}, 64, {{"linear16", 16, 8, 128, {6.4e-4, 4.1e-3, 9.1e-3}},
                                      {"linear64", 64, 32, 128, {5e-3, 5.9e-3, 1.0 / 77}}}};
  p.pytorch = py;
  return p;
}

void expect_points_equal(const std::vector<CurvePoint>& a, const std::vector<CurvePoint>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].bytes, b[i].bytes) << "point " << i;
    EXPECT_EQ(a[i].time_s, b[i].time_s) << "point " << i;
  }
}

void expect_loaders_equal(const LoaderProfile& a, const LoaderProfile& b) {
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.batch, b.batch);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].workers, b.points[i].workers);
    EXPECT_EQ(a.points[i].samples_per_s, b.points[i].samples_per_s);
    EXPECT_EQ(a.points[i].startup_s, b.points[i].startup_s);
  }
  ASSERT_EQ(a.at_batches.size(), b.at_batches.size());
  for (size_t i = 0; i < a.at_batches.size(); ++i) {
    EXPECT_EQ(a.at_batches[i].batch, b.at_batches[i].batch);
    ASSERT_EQ(a.at_batches[i].points.size(), b.at_batches[i].points.size());
    for (size_t j = 0; j < a.at_batches[i].points.size(); ++j) {
      EXPECT_EQ(a.at_batches[i].points[j].workers, b.at_batches[i].points[j].workers);
      EXPECT_EQ(a.at_batches[i].points[j].samples_per_s, b.at_batches[i].points[j].samples_per_s);
    }
  }
}

// Every field, doubles compared exactly (==): the format must round-trip bit for bit.
void expect_profiles_equal(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  const MachineInfo& ma = a.machine;
  const MachineInfo& mb = b.machine;
  EXPECT_EQ(ma.name, mb.name);
  EXPECT_EQ(ma.host, mb.host);
  EXPECT_EQ(ma.cpu, mb.cpu);
  EXPECT_EQ(ma.cpu_cores, mb.cpu_cores);
  EXPECT_EQ(ma.host_memory_bytes, mb.host_memory_bytes);
  EXPECT_EQ(ma.device_kind, mb.device_kind);
  EXPECT_EQ(ma.device_name, mb.device_name);
  EXPECT_EQ(ma.device_count, mb.device_count);
  EXPECT_EQ(ma.device_memory_bytes, mb.device_memory_bytes);
  EXPECT_EQ(ma.driver, mb.driver);
  EXPECT_EQ(ma.cuda, mb.cuda);
  EXPECT_EQ(ma.nccl, mb.nccl);
  EXPECT_EQ(ma.libtorch, mb.libtorch);
  EXPECT_EQ(ma.date, mb.date);
  EXPECT_EQ(ma.threads, mb.threads);
  EXPECT_EQ(ma.page_fault_s, mb.page_fault_s);

  EXPECT_EQ(a.measurement.command, b.measurement.command);
  EXPECT_EQ(a.measurement.data, b.measurement.data);
  EXPECT_EQ(a.measurement.warmup, b.measurement.warmup);
  EXPECT_EQ(a.measurement.repeats, b.measurement.repeats);
  EXPECT_EQ(a.measurement.quick, b.measurement.quick);
  EXPECT_EQ(a.measurement.cudnn_benchmark, b.measurement.cudnn_benchmark);
  EXPECT_EQ(a.measurement.tf32_convolutions, b.measurement.tf32_convolutions);
  EXPECT_EQ(a.measurement.tf32_matmul, b.measurement.tf32_matmul);
  EXPECT_EQ(a.measurement.precision, b.measurement.precision);
  EXPECT_EQ(a.measurement.memory_format, b.measurement.memory_format);
  ASSERT_EQ(a.measurement.resumed.size(), b.measurement.resumed.size());
  for (size_t i = 0; i < a.measurement.resumed.size(); ++i) {
    EXPECT_EQ(a.measurement.resumed[i].command, b.measurement.resumed[i].command);
    EXPECT_EQ(a.measurement.resumed[i].date, b.measurement.resumed[i].date);
    EXPECT_EQ(a.measurement.resumed[i].probe_s, b.measurement.resumed[i].probe_s);  // exact round trip
  }

  ASSERT_EQ(a.models.size(), b.models.size());
  for (const auto& [key, x] : a.models) {
    ASSERT_EQ(b.models.count(key), 1u) << key;
    const ModelProfile& y = b.models.at(key);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.source, y.source);
    EXPECT_EQ(x.missing, y.missing);
    EXPECT_EQ(x.parameters, y.parameters);
    EXPECT_EQ(x.input_bytes_per_sample, y.input_bytes_per_sample);
    EXPECT_EQ(x.num_classes, y.num_classes);
    EXPECT_EQ(x.batches, y.batches);
    EXPECT_EQ(x.loss_s, y.loss_s);
    EXPECT_EQ(x.zero_grad_s, y.zero_grad_s);
    EXPECT_EQ(x.optimizer_s, y.optimizer_s);
    EXPECT_EQ(x.iteration_s, y.iteration_s);
    EXPECT_EQ(x.ddp_iteration_s, y.ddp_iteration_s);
    EXPECT_EQ(x.host_loss_s, y.host_loss_s);
    EXPECT_EQ(x.host_zero_grad_s, y.host_zero_grad_s);
    EXPECT_EQ(x.host_optimizer_s, y.host_optimizer_s);
    ASSERT_EQ(x.ddp_buckets.size(), y.ddp_buckets.size());
    for (size_t i = 0; i < x.ddp_buckets.size(); ++i) {
      EXPECT_EQ(x.ddp_buckets[i].bytes, y.ddp_buckets[i].bytes);
      EXPECT_EQ(x.ddp_buckets[i].params, y.ddp_buckets[i].params);
    }
    EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes);
    EXPECT_EQ(x.steady_peak_memory_bytes, y.steady_peak_memory_bytes);
    EXPECT_EQ(x.minor_faults, y.minor_faults);
    EXPECT_EQ(x.memory_method, y.memory_method);
    EXPECT_EQ(x.oom_batch, y.oom_batch);
    EXPECT_EQ(x.max_batch_tried, y.max_batch_tried);
    ASSERT_EQ(x.host_contention.size(), y.host_contention.size()) << key;
    for (size_t i = 0; i < x.host_contention.size(); ++i) {
      EXPECT_EQ(x.host_contention[i].ranks, y.host_contention[i].ranks);
      EXPECT_EQ(x.host_contention[i].batch, y.host_contention[i].batch);
      EXPECT_EQ(x.host_contention[i].iteration_s, y.host_contention[i].iteration_s);
    }
    ASSERT_EQ(x.layers.size(), y.layers.size());
    for (size_t i = 0; i < x.layers.size(); ++i) {
      const LayerProfile& la = x.layers[i];
      const LayerProfile& lb = y.layers[i];
      EXPECT_EQ(la.name, lb.name);
      EXPECT_EQ(la.kind, lb.kind);
      ASSERT_EQ(la.params.size(), lb.params.size());
      for (size_t j = 0; j < la.params.size(); ++j) {
        EXPECT_EQ(la.params[j].name, lb.params[j].name);
        EXPECT_EQ(la.params[j].bytes, lb.params[j].bytes);
      }
      EXPECT_EQ(la.buffer_bytes, lb.buffer_bytes);
      EXPECT_EQ(la.output_shape, lb.output_shape);
      EXPECT_EQ(la.host_forward_s, lb.host_forward_s);
      EXPECT_EQ(la.host_backward_s, lb.host_backward_s);
      EXPECT_EQ(la.forward_flops, lb.forward_flops);
      EXPECT_EQ(la.forward_s, lb.forward_s);
      EXPECT_EQ(la.backward_s, lb.backward_s);
    }
  }

  EXPECT_EQ(a.h2d.applicable, b.h2d.applicable);
  expect_points_equal(a.h2d.pinned, b.h2d.pinned);
  expect_points_equal(a.h2d.pageable, b.h2d.pageable);

  EXPECT_EQ(a.collectives.backend, b.collectives.backend);
  EXPECT_EQ(a.collectives.source, b.collectives.source);
  ASSERT_EQ(a.collectives.curves.size(), b.collectives.curves.size());
  for (size_t i = 0; i < a.collectives.curves.size(); ++i) {
    EXPECT_EQ(a.collectives.curves[i].op, b.collectives.curves[i].op);
    EXPECT_EQ(a.collectives.curves[i].ranks, b.collectives.curves[i].ranks);
    expect_points_equal(a.collectives.curves[i].points, b.collectives.curves[i].points);
  }

  expect_loaders_equal(a.loader, b.loader);

  ASSERT_EQ(a.training.size(), b.training.size());
  for (size_t i = 0; i < a.training.size(); ++i) {
    const TrainingCurve& x = a.training[i];
    const TrainingCurve& y = b.training[i];
    EXPECT_EQ(x.model, y.model);
    EXPECT_EQ(x.data, y.data);
    EXPECT_EQ(x.batch, y.batch);
    EXPECT_EQ(x.small_batch, y.small_batch);
    EXPECT_EQ(x.train_samples, y.train_samples);
    EXPECT_EQ(x.lr, y.lr);
    EXPECT_EQ(x.momentum, y.momentum);
    EXPECT_EQ(x.weight_decay, y.weight_decay);
    EXPECT_EQ(x.lr_rule, y.lr_rule);
    EXPECT_EQ(x.warmup_epochs, y.warmup_epochs);
    EXPECT_EQ(x.optimizer, y.optimizer);
    EXPECT_EQ(x.lars_eta, y.lars_eta);
    ASSERT_EQ(x.samples.size(), y.samples.size());
    for (size_t j = 0; j < x.samples.size(); ++j) {
      EXPECT_EQ(x.samples[j].examples, y.samples[j].examples);
      EXPECT_EQ(x.samples[j].window_examples, y.samples[j].window_examples);
      EXPECT_EQ(x.samples[j].train_loss, y.samples[j].train_loss);
      EXPECT_EQ(x.samples[j].train_accuracy, y.samples[j].train_accuracy);
      EXPECT_EQ(x.samples[j].test_accuracy, y.samples[j].test_accuracy);
      EXPECT_EQ(x.samples[j].noise_scale, y.samples[j].noise_scale);
      EXPECT_EQ(x.samples[j].max_lr, y.samples[j].max_lr);
      EXPECT_EQ(x.samples[j].curvature_noise_scale, y.samples[j].curvature_noise_scale);
      EXPECT_EQ(x.samples[j].curvature_noise_scale_se, y.samples[j].curvature_noise_scale_se);
      EXPECT_EQ(x.samples[j].probe_loss, y.samples[j].probe_loss);
      EXPECT_EQ(x.samples[j].test_accuracy_recomputed, y.samples[j].test_accuracy_recomputed);
      EXPECT_EQ(x.samples[j].si_weight_sq, y.samples[j].si_weight_sq);
      EXPECT_EQ(x.samples[j].si_update_sq, y.samples[j].si_update_sq);
      EXPECT_EQ(x.samples[j].si_trace_sigma, y.samples[j].si_trace_sigma);
    }
    EXPECT_EQ(x.probe_batches, y.probe_batches);
    EXPECT_EQ(x.recompute_bn_images, y.recompute_bn_images);
    ASSERT_EQ(x.pace_probe.size(), y.pace_probe.size());
    for (size_t j = 0; j < x.pace_probe.size(); ++j) {
      const PaceProbeReading& a = x.pace_probe[j];
      const PaceProbeReading& b = y.pace_probe[j];
      EXPECT_EQ(a.examples, b.examples);
      EXPECT_EQ(a.ratio, b.ratio);
      EXPECT_EQ(a.lr_ratio, b.lr_ratio);
      EXPECT_EQ(a.steps, b.steps);
      EXPECT_EQ(a.cool_steps, b.cool_steps);
      EXPECT_EQ(a.cool, b.cool);
      EXPECT_EQ(a.draws, b.draws);
      EXPECT_EQ(a.gains, b.gains);
    }
    ASSERT_EQ(x.start_curvature.has_value(), y.start_curvature.has_value());
    if (x.start_curvature) {
      EXPECT_EQ(x.start_curvature->lr_over_eps_max, y.start_curvature->lr_over_eps_max);
      EXPECT_EQ(x.start_curvature->rest_lr_over_eps_max, y.start_curvature->rest_lr_over_eps_max);
      EXPECT_EQ(x.start_curvature->scale_invariant, y.start_curvature->scale_invariant);
      EXPECT_EQ(x.start_curvature->parameters, y.start_curvature->parameters);
    }
    ASSERT_EQ(x.epochs.size(), y.epochs.size());
    for (size_t j = 0; j < x.epochs.size(); ++j) {
      const EpochPoint& e = x.epochs[j];
      const EpochPoint& f = y.epochs[j];
      EXPECT_EQ(e.epoch, f.epoch);
      EXPECT_EQ(e.examples, f.examples);
      EXPECT_EQ(e.train_loss, f.train_loss);
      EXPECT_EQ(e.train_accuracy, f.train_accuracy);
      EXPECT_EQ(e.test_accuracy, f.test_accuracy);
      EXPECT_EQ(e.test_accuracy_recomputed, f.test_accuracy_recomputed);
      EXPECT_EQ(e.grad_sq_norm, f.grad_sq_norm);
      EXPECT_EQ(e.trace_sigma, f.trace_sigma);
      EXPECT_EQ(e.noise_scale, f.noise_scale);
      EXPECT_EQ(e.max_lr, f.max_lr);
      EXPECT_EQ(e.curvature_noise_scale, f.curvature_noise_scale);
      EXPECT_EQ(e.curvature_noise_scale_se, f.curvature_noise_scale_se);
      EXPECT_EQ(e.probe_loss, f.probe_loss);
      EXPECT_EQ(e.si_weight_sq, f.si_weight_sq);
      EXPECT_EQ(e.si_update_sq, f.si_update_sq);
      EXPECT_EQ(e.si_trace_sigma, f.si_trace_sigma);
    }
  }

  ASSERT_EQ(a.calibration.has_value(), b.calibration.has_value());
  if (a.calibration) {
    EXPECT_EQ(a.calibration->model, b.calibration->model);
    EXPECT_EQ(a.calibration->batch, b.calibration->batch);
    EXPECT_EQ(a.calibration->threads, b.calibration->threads);
    EXPECT_EQ(a.calibration->start_s, b.calibration->start_s);
    EXPECT_EQ(a.calibration->end_s, b.calibration->end_s);
  }
  ASSERT_EQ(a.pytorch.has_value(), b.pytorch.has_value());
  if (a.pytorch) {
    const PytorchProfile& x = *a.pytorch;
    const PytorchProfile& y = *b.pytorch;
    EXPECT_EQ(x.torch, y.torch);
    EXPECT_EQ(x.torchvision, y.torchvision);
    EXPECT_EQ(x.python, y.python);
    EXPECT_EQ(x.threads, y.threads);
    EXPECT_EQ(x.probe_s, y.probe_s);
    expect_loaders_equal(x.loader, y.loader);
    ASSERT_EQ(x.gil.has_value(), y.gil.has_value());
    if (x.gil) {
      EXPECT_EQ(x.gil->threads, y.gil->threads);
      EXPECT_EQ(x.gil->depth, y.gil->depth);
      ASSERT_EQ(x.gil->probes.size(), y.gil->probes.size());
      for (size_t i = 0; i < x.gil->probes.size(); ++i) {
        EXPECT_EQ(x.gil->probes[i].name, y.gil->probes[i].name);
        EXPECT_EQ(x.gil->probes[i].width, y.gil->probes[i].width);
        EXPECT_EQ(x.gil->probes[i].batch, y.gil->probes[i].batch);
        EXPECT_EQ(x.gil->probes[i].calls, y.gil->probes[i].calls);
        EXPECT_EQ(x.gil->probes[i].forward_s, y.gil->probes[i].forward_s);
      }
    }
    ASSERT_EQ(x.models.size(), y.models.size());
    for (const auto& [name, loop] : x.models) {
      ASSERT_EQ(y.models.count(name), 1u) << name;
      const PytorchLoop& other = y.models.at(name);
      EXPECT_EQ(loop.batches, other.batches);
      EXPECT_EQ(loop.iteration_s, other.iteration_s);
      EXPECT_EQ(loop.ddp_iteration_s, other.ddp_iteration_s);
      EXPECT_EQ(loop.oom_batch, other.oom_batch);
      EXPECT_EQ(loop.forward_calls, other.forward_calls);
      EXPECT_EQ(loop.replicate_s, other.replicate_s);
      EXPECT_EQ(loop.minor_faults, other.minor_faults);
      ASSERT_EQ(loop.fork.has_value(), other.fork.has_value()) << name;
      if (loop.fork) {
        EXPECT_EQ(loop.fork->workers, other.fork->workers);
        ASSERT_EQ(loop.fork->points.size(), other.fork->points.size());
        for (size_t i = 0; i < loop.fork->points.size(); ++i) {
          EXPECT_EQ(loop.fork->points[i].ranks, other.fork->points[i].ranks);
          EXPECT_EQ(loop.fork->points[i].iter_s, other.fork->points[i].iter_s);
          EXPECT_EQ(loop.fork->points[i].first_batch_s, other.fork->points[i].first_batch_s);
          EXPECT_EQ(loop.fork->points[i].cow_s, other.fork->points[i].cow_s);
        }
      }
    }
  }
}

TEST_F(ProfileTest, WriteThenLoadGivesBackEveryFieldExactly) {
  const Profile original = make_profile();
  const std::string path = (dir_ / "profile.yaml").string();
  write_profile_atomic(original, path);
  const Profile loaded = load_profile(path);
  expect_profiles_equal(original, loaded);
}

// A profile without its optional machine block reads, and writes back without one: the writer
// once wrote an empty machine block (device_kind '') that its own reader rejects.
TEST_F(ProfileTest, NoMachineBlockWritesBackWithoutOne) {
  const Profile read = load_profile(write("bare.yaml", "schema_version: 1\n"));
  EXPECT_TRUE(read.machine.device_kind.empty());
  const std::string written = profile_to_yaml(read);
  EXPECT_EQ(written.find("machine:"), std::string::npos) << written;
  EXPECT_EQ(profile_to_yaml(load_profile(write("again.yaml", written))), written);
}

TEST_F(ProfileTest, SameProfileGivesSameBytes) {
  const Profile profile = make_profile();
  const std::string first = profile_to_yaml(profile);
  EXPECT_EQ(first, profile_to_yaml(profile));
  const std::string a = (dir_ / "a.yaml").string();
  const std::string b = (dir_ / "b.yaml").string();
  write_profile_atomic(profile, a);
  write_profile_atomic(profile, b);
  EXPECT_EQ(read_text(a), first);
  EXPECT_EQ(read_text(b), first);
  // Reading back and writing again is a fixed point too.
  EXPECT_EQ(profile_to_yaml(load_profile(a)), first);
}

TEST_F(ProfileTest, LayoutIsCompactAndVersionedFirst) {
  const std::string text = profile_to_yaml(make_profile());
  // The first line that is not a comment is the version.
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line) && line.rfind("#", 0) == 0) {
  }
  EXPECT_EQ(line, "schema_version: 1");
  EXPECT_NE(text.find("    batches: [32, 64, 128]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    oom_batch: 256\n    max_batch_tried: null\n"), std::string::npos);
  EXPECT_NE(text.find("    - {op: \"all_reduce\", ranks: 2, bytes: [8, 1024, 1048576], "
                      "time_s: [1.1e-05, 1.2e-05, 3.3e-05]}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("training:\n  - model: \"resnet18-cifar\"\n    data: \"cifar10\"\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("      - {epoch: 2, examples: 1.0e+05, train_loss: 0, train_accuracy: 1, "
                      "test_accuracy: -1, grad_sq_norm: 0, trace_sigma: 0, noise_scale: 0}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    lr_rule: \"sqrt\"\n    optimizer: \"lars\"\n    lars_eta: 0.003\n"
                      "    start_curvature: {lr_over_eps_max: 15.5, scale_invariant: 3, parameters: 3}\n    epochs: []\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    pace_probe:\n      - {examples: 30080, ratio: 16, lr_ratio: 1, steps: 60, cool_steps: 200, "
                      "cool: 0.1, draws: 2, gains: [1.3333333333333333, 1.08]}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      - {examples: 60160.5, ratio: 4, lr_ratio: 2, steps: 30, cool_steps: 50, "
                      "cool: 0.14285714285714285, draws: 1, gains: []}\n    epochs:\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    start_curvature: {lr_over_eps_max: 0.30000000000000004, rest_lr_over_eps_max: "
                      "-0.3333333333333333, scale_invariant: 2, parameters: 8}\n"),
            std::string::npos)
      << text;
  // 0.1 + 0.2 needs 17 significant digits to come back as the same double.
  EXPECT_NE(text.find("0.30000000000000004"), std::string::npos);
}

TEST_F(ProfileTest, AtomicWriteCreatesFoldersReplacesAndLeavesNoTemporary) {
  const fs::path target = dir_ / "reports" / "machine" / "profile.yaml";
  Profile profile = make_profile();
  write_profile_atomic(profile, target.string());
  profile.loader.batch = 64;
  write_profile_atomic(profile, target.string());  // replaces the existing file
  EXPECT_EQ(load_profile(target.string()).loader.batch, 64);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(target.parent_path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"profile.yaml"});
}

TEST_F(ProfileTest, AtomicWriteFailureNamesThePath) {
  // A regular file where a folder should be: the folder cannot be created (even as root).
  write("blocker", "x");
  const std::string path = (dir_ / "blocker" / "profile.yaml").string();
  try {
    write_profile_atomic(make_profile(), path);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "blocker").string()), std::string::npos) << e.what();
  }
}

TEST_F(ProfileTest, HandWrittenFixtureLoadsAndRoundTrips) {
  const Profile p = load_profile(kFixture);
  EXPECT_EQ(p.machine.name, "test-fixture");
  ASSERT_EQ(p.models.count("resnet18-cifar"), 1u);
  const ModelProfile& m = p.models.at("resnet18-cifar");
  EXPECT_EQ(m.name, "resnet18-cifar");  // from the map key
  EXPECT_EQ(m.batches, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(m.peak_memory_bytes, (std::vector<double>{1.0e8, 2.0e8, 4.0e8}));
  EXPECT_FALSE(m.oom_batch.has_value());
  EXPECT_EQ(m.max_batch_tried, 128);
  EXPECT_TRUE(m.host_contention.empty());  // optional: absent from the fixture
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].param_bytes(), 3456 + 256);
  EXPECT_TRUE(m.layers[1].params.empty());
  ASSERT_EQ(p.collectives.curves.size(), 2u);
  EXPECT_EQ(p.collectives.curves[1].op, "broadcast");
  EXPECT_EQ(p.collectives.curves[1].points[1].bytes, 1048576);
  ASSERT_EQ(p.loader.points.size(), 2u);
  EXPECT_EQ(p.loader.points[1].samples_per_s, 9000);
  ASSERT_EQ(p.training.size(), 1u);
  const TrainingCurve& curve = p.training[0];
  EXPECT_EQ(curve.model, "resnet18-cifar");
  EXPECT_EQ(curve.batch, 128);
  EXPECT_EQ(curve.small_batch, 64);
  EXPECT_EQ(curve.lr_rule, "constant");
  ASSERT_EQ(curve.epochs.size(), 2u);
  EXPECT_EQ(curve.epochs[1].epoch, 2);
  EXPECT_EQ(curve.epochs[1].examples, 100000);
  EXPECT_EQ(curve.epochs[1].train_loss, 1.25);
  EXPECT_EQ(curve.epochs[0].test_accuracy, -1);
  EXPECT_EQ(curve.epochs[1].noise_scale, 400);
  const std::string path = (dir_ / "again.yaml").string();
  write_profile_atomic(p, path);
  expect_profiles_equal(p, load_profile(path));
}

// The host's issue times (a CUDA profile): written and read back exactly; all of them or none.
TEST_F(ProfileTest, HostIssueTimesAndSteadyPeaksRoundTripAndMustBeComplete) {
  Profile p = load_profile(kFixture);
  ModelProfile& m = p.models.at("resnet18-cifar");
  EXPECT_FALSE(m.has_host_issue());  // optional: absent from the fixture
  m.host_loss_s = {1e-4, 1e-4, 1.5e-4};
  m.host_zero_grad_s = {0, 0, 0};
  m.host_optimizer_s = {2e-3, 2e-3, 2.5e-3};
  m.steady_peak_memory_bytes = {0.5e8, 1.0e8, 2.5e8};  // and the steady-state peak
  m.minor_faults = {120, 4500, 610000};                  // and the page faults, with their cost
  p.machine.page_fault_s = 7.9e-6;
  for (LayerProfile& l : m.layers) {
    l.host_forward_s = {3e-4, 3e-4, 3e-4};
    l.host_backward_s = {1e-4, 2e-4, 3e-4};
  }
  const std::string path = (dir_ / "host.yaml").string();
  write_profile_atomic(p, path);
  const Profile back = load_profile(path);
  EXPECT_TRUE(back.models.at("resnet18-cifar").has_host_issue());
  expect_profiles_equal(p, back);

  // One layer without its host_backward_s: the model is rejected, naming what is missing.
  std::string text = read_text(path);
  const std::string last = "        host_backward_s: [1.0e-04, 2.0e-04, 3.0e-04]\n";
  const size_t at = text.rfind(last);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, last.size());
  try {
    load_profile(write("partial.yaml", text));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("has no host_backward_s"), std::string::npos) << e.message();
    EXPECT_GT(e.line(), 0);
  }
  // The model's keys without the layers' is as incomplete.
  text = read_text(path);
  for (const char* key : {"host_forward_s", "host_backward_s"}) {
    for (size_t pos; (pos = text.find(std::string("        ") + key)) != std::string::npos;) {
      text.erase(pos, text.find('\n', pos) + 1 - pos);
    }
  }
  try {
    load_profile(write("partial2.yaml", text));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("host issue times are given for part of the step"), std::string::npos)
        << e.message();
  }
}

// A model imported from a trace (measure import-trace): what it could not measure is named in
// `missing`, those arrays are empty and those counts 0, and `source` says where it came from.
TEST_F(ProfileTest, MissingAndSourceRoundTrip) {
  Profile p = load_profile(kFixture);
  ModelProfile m = p.models.at("resnet18-cifar");
  m.name = "from-trace";
  m.source = "trace:runs/step \"7\".json";
  m.missing = {"peak_memory_bytes", "layer forward split", "oom_batch", "num_classes"};
  m.batches = {16};
  m.loss_s = {0.25};
  m.zero_grad_s = {1e-5};
  m.optimizer_s = {0.1 + 0.2};
  m.iteration_s = {1.0};
  m.peak_memory_bytes.clear();
  m.memory_method = "";
  m.num_classes = 0;
  for (LayerProfile& layer : m.layers) {
    layer.forward_s = {0.125};
    layer.backward_s = {0.0};
  }
  p.models[m.name] = m;
  const std::string path = (dir_ / "missing.yaml").string();
  write_profile_atomic(p, path);
  const std::string text = read_text(path);
  EXPECT_NE(text.find("    source: \"trace:runs/step \\\"7\\\".json\"\n    missing: [\"peak_memory_bytes\", "
                      "\"layer forward split\", \"oom_batch\", \"num_classes\"]\n"),
            std::string::npos)
      << text;
  const Profile back = load_profile(path);
  expect_profiles_equal(p, back);
  EXPECT_TRUE(back.models.at("from-trace").is_missing("peak_memory_bytes"));
  EXPECT_FALSE(back.models.at("from-trace").is_missing("loss_s"));
  EXPECT_EQ(profile_to_yaml(back), text);
  // A model without them writes neither key (older profiles keep their bytes).
  const size_t other = text.find("  \"resnet18-cifar\":\n");
  ASSERT_NE(other, std::string::npos);
  EXPECT_EQ(text.compare(other, 41, "  \"resnet18-cifar\":\n    parameters: 1000\n"), 0) << text.substr(other, 80);
}

TEST_F(ProfileTest, PartialProfileLoadsWithEmptySections) {
  const Profile p = load_profile(write("partial.yaml", "schema_version: 1\nmodels: {}\n"));
  EXPECT_TRUE(p.models.empty());
  EXPECT_TRUE(p.collectives.curves.empty());
  EXPECT_TRUE(p.loader.points.empty());
  EXPECT_TRUE(p.training.empty());
  EXPECT_EQ(p.machine.device_kind, "");
}

TEST_F(ProfileTest, MissingFileIsLineZero) {
  const std::string path = (dir_ / "none.yaml").string();
  try {
    load_profile(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 0);
  }
}

TEST_F(ProfileTest, MissingSchemaVersion) {
  const std::string path = write("p.yaml", "# comment\nmodels: {}\n");
  try {
    load_profile(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);  // the top map starts at `models:`
    EXPECT_EQ(e.key(), "schema_version");
  }
}

// One edit of the hand-written fixture that must be rejected; the expected line is that of
// `marker` in the edited text.
struct BadProfile {
  const char* name;
  const char* find;     // text in the fixture
  const char* replace;  // its replacement
  const char* marker;   // text on the line the error must point at
  const char* key;
  const char* message;  // substring of InputError::message()
};

// gtest prints a parameter on failure; show its name, not its bytes.
void PrintTo(const BadProfile& bad, std::ostream* out) { *out << bad.name; }

class BadProfileTest : public ProfileTest, public ::testing::WithParamInterface<BadProfile> {};

TEST_P(BadProfileTest, PointsAtTheOffendingNode) {
  const BadProfile& bad = GetParam();
  std::string text = read_text(kFixture);
  const size_t at = text.find(bad.find);
  ASSERT_NE(at, std::string::npos) << "fixture lacks: " << bad.find;
  text.replace(at, std::string(bad.find).size(), bad.replace);
  const int expected_line = line_of(text, bad.marker);
  ASSERT_GT(expected_line, 0) << "edited text lacks marker: " << bad.marker;
  const std::string path = write("bad.yaml", text);
  try {
    load_profile(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), expected_line) << e.what();
    EXPECT_EQ(e.key(), bad.key) << e.what();
    EXPECT_NE(e.message().find(bad.message), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Profile, BadProfileTest,
    ::testing::Values(
        BadProfile{"ModelArrayLengthMismatch", "loss_s: [0.001, 0.002, 0.004]",
                   "loss_s: [0.001, 0.002]", "loss_s:", "models.resnet18-cifar.loss_s",
                   "has 2 values but batches has 3"},
        BadProfile{"LayerArrayLengthMismatch", "backward_s: [0.002, 0.004, 0.008]",
                   "backward_s: [0.002, 0.004, 0.008, 0.016]", "0.016",
                   "models.resnet18-cifar.layers[1].backward_s", "has 4 values but batches has 3"},
        BadProfile{"PageFaultsOfAnotherBatchCount", "memory_method: \"process-rss\"",
                   "minor_faults: [10, 20]\n    memory_method: \"process-rss\"", "minor_faults:",
                   "models.resnet18-cifar.minor_faults", "has 2 values but batches has 3"},
        BadProfile{"NegativePageFaultCost", "  threads: 2\n", "  threads: 2\n  page_fault_s: -1e-6\n", "page_fault_s:",
                   "machine.page_fault_s", "must be >= 0"},
        BadProfile{"UnknownKey", "num_classes: 10", "num_class: 10", "num_class:",
                   "models.resnet18-cifar.num_class", "unknown key 'num_class' (did you mean 'num_classes'?)"},
        BadProfile{"UnsupportedSchemaVersion", "schema_version: 1", "schema_version: 2",
                   "schema_version:", "schema_version", "unsupported schema_version 2"},
        // A parameter of 2^63 - 1 bytes once overflowed the model's sum into a negative size.
        BadProfile{"Parameter2To63Minus1Bytes", "{name: \"conv1.weight\", bytes: 3456}",
                   "{name: \"conv1.weight\", bytes: 9223372036854775807}", "conv1.weight",
                   "models.resnet18-cifar.layers[0].params[0].bytes", "more than 2^50 bytes"},
        // Values deep in an accepted profile that once reached the simulator as internal errors
        // (found by scripts/mutate-inputs.py): a layer's buffers of 2^62 bytes (a time overflow), a
        // loader rate of 5e-324 samples/s (a rate of 0 in the pipeline); and the rest of the bounds.
        BadProfile{"BufferBytes2To62", "buffer_bytes: 520", "buffer_bytes: 4611686018427387904", "buffer_bytes:",
                   "models.resnet18-cifar.layers[0].buffer_bytes", "more than 2^50 bytes (1 PiB)"},
        BadProfile{"DenormalLoaderRate", "samples_per_s: 9000}", "samples_per_s: 5e-324}", "5e-324",
                   "loader.points[1].samples_per_s", "between 10^-3 samples/s"},
        BadProfile{"DenormalTime", "forward_s: [0.01, 0.02, 0.04]", "forward_s: [0.01, 1e-320, 0.04]",
                   "1e-320", "models.resnet18-cifar.layers[0].forward_s[1]", "below 1 ns is not one"},
        BadProfile{"TimeOfCenturies", "forward_s: [0.01, 0.02, 0.04]", "forward_s: [0.01, 1e300, 0.04]",
                   "1e300", "models.resnet18-cifar.layers[0].forward_s[1]", "beyond 10^6 s (11.6 days)"},
        BadProfile{"PeakMemoryBeyondAPebibyte", "peak_memory_bytes: [1.0e8, 2.0e8, 4.0e8]",
                   "peak_memory_bytes: [1.0e8, 2.0e8, 4.0e300]", "peak_memory_bytes:",
                   "models.resnet18-cifar.peak_memory_bytes[2]", "more than 2^50 bytes"},
        BadProfile{"HostMemoryBeyondAPebibyte", "host_memory_bytes: 25769803776", "host_memory_bytes: 1e300",
                   "host_memory_bytes:", "machine.host_memory_bytes", "more than 2^50 bytes"},
        BadProfile{"OutputOfAPebibytePerSample", "output_shape: [64, 32, 32]",
                   "output_shape: [64, 32, 4611686018427387904]", "output_shape:",
                   "models.resnet18-cifar.layers[0].output_shape[2]", "more than 2^50 bytes (1 PiB) per sample"},
        BadProfile{"NegativeTime", "forward_s: [0.01, 0.02, 0.04]", "forward_s: [0.01, -0.02, 0.04]",
                   "-0.02", "models.resnet18-cifar.layers[0].forward_s[1]", "must be >= 0, got -0.02"},
        BadProfile{"NotANumberTime", "iteration_s: [0.05, 0.1, 0.2]", "iteration_s: [0.05, nan, 0.2]",
                   "iteration_s:", "models.resnet18-cifar.iteration_s[1]", "expected a finite number"},
        BadProfile{"BatchesNotAscending", "batches: [32, 64, 128]", "batches: [32, 128, 64]",
                   "batches:", "models.resnet18-cifar.batches[2]", "must be strictly ascending"},
        BadProfile{"ZeroBatch", "batches: [32, 64, 128]", "batches: [0, 64, 128]", "batches:",
                   "models.resnet18-cifar.batches[0]", "must be >= 1, got 0"},
        BadProfile{"NegativeOomBatch", "oom_batch: null", "oom_batch: -5", "oom_batch:",
                   "models.resnet18-cifar.oom_batch", "must be >= 1"},
        BadProfile{"NegativeParamBytes", "bytes: 3456}", "bytes: -1}", "bytes: -1",
                   "models.resnet18-cifar.layers[0].params[0].bytes", "must be >= 0"},
        BadProfile{"MissingModelKey", "    memory_method: \"process-rss\"\n", "",
                   "\"resnet18-cifar\":", "models.resnet18-cifar.memory_method",
                   "missing required key 'memory_method'"},
        BadProfile{"ContentionNotStartingAtOneRank", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 2, batch: 32, iteration_s: 1.5}\n",
                   "ranks: 2, batch: 32", "models.resnet18-cifar.host_contention[0].ranks",
                   "the first point of a batch must be the ranks: 1 reference, got '2'"},
        BadProfile{"ContentionRanksNotAscending", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 1, batch: 32, iteration_s: 1.0}\n"
                   "      - {ranks: 3, batch: 32, iteration_s: 1.8}\n      - {ranks: 3, batch: 32, iteration_s: 1.9}\n",
                   "iteration_s: 1.9", "models.resnet18-cifar.host_contention[2].ranks",
                   "strictly ascending in ranks: 3 follows 3"},
        BadProfile{"ContentionZeroTime", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 1, batch: 32, iteration_s: 0}\n",
                   "iteration_s: 0}", "models.resnet18-cifar.host_contention[0].iteration_s", "must be > 0, got '0'"},
        BadProfile{"ContentionZeroBatch", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 1, batch: 0, iteration_s: 1.0}\n",
                   "batch: 0,", "models.resnet18-cifar.host_contention[0].batch", "must be >= 1, got 0"},
        BadProfile{"ContentionBatchesNotAscending", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 1, batch: 64, iteration_s: 1.0}\n"
                   "      - {ranks: 2, batch: 64, iteration_s: 1.1}\n      - {ranks: 1, batch: 32, iteration_s: 0.5}\n",
                   "batch: 32, iteration_s: 0.5", "models.resnet18-cifar.host_contention[2].batch",
                   "grouped by batch in ascending order: 32 follows 64"},
        BadProfile{"ContentionBatchWithoutReference", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    host_contention:\n      - {ranks: 1, batch: 32, iteration_s: 1.0}\n"
                   "      - {ranks: 2, batch: 64, iteration_s: 3.0}\n",
                   "batch: 64", "models.resnet18-cifar.host_contention[1].ranks",
                   "the first point of a batch must be the ranks: 1 reference, got '2'"},
        // `missing` (an imported trace): known entries only, each once; only a named key may be empty.
        BadProfile{"UnknownMissingEntry", "    parameters: 1000\n",
                   "    missing: [\"oom_batch\", \"flops\"]\n    parameters: 1000\n", "missing:",
                   "models.resnet18-cifar.missing[1]", "unknown missing entry 'flops' (expected one of: loss_s,"},
        BadProfile{"MissingEntryTwice", "    parameters: 1000\n",
                   "    missing: [\"oom_batch\", \"oom_batch\"]\n    parameters: 1000\n", "missing:",
                   "models.resnet18-cifar.missing[1]", "'oom_batch' is named twice"},
        BadProfile{"EmptyPeakNotNamedMissing", "peak_memory_bytes: [1.0e8, 2.0e8, 4.0e8]",
                   "peak_memory_bytes: []", "peak_memory_bytes:", "models.resnet18-cifar.peak_memory_bytes",
                   "has 0 values but batches has 3"},
        BadProfile{"MissingPeakWithValues", "    parameters: 1000\n",
                   "    missing: [\"peak_memory_bytes\"]\n    parameters: 1000\n", "peak_memory_bytes:",
                   "models.resnet18-cifar.peak_memory_bytes", "is named in missing but has 3 values (expected [])"},
        BadProfile{"MissingClassesNotZero", "    parameters: 1000\n",
                   "    missing: [\"num_classes\"]\n    parameters: 1000\n", "num_classes:",
                   "models.resnet18-cifar.num_classes", "is named in missing but is 10 (expected 0)"},
        BadProfile{"ZeroClassesNotNamedMissing", "num_classes: 10", "num_classes: 0", "num_classes:",
                   "models.resnet18-cifar.num_classes", "must be >= 1, got 0"},
        BadProfile{"DdpIterationLengthMismatch", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    ddp_iteration_s: [0.06, 0.11]\n", "ddp_iteration_s:",
                   "models.resnet18-cifar.ddp_iteration_s", "has 2 values but batches has 3"},
        // Tensor bytes in the fixture: conv1.weight 3456, bn1.weight 256.
        BadProfile{"DdpBucketIndexOutOfRange", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    ddp_buckets:\n      - {bytes: 3456, params: [2]}\n",
                   "params: [2]", "models.resnet18-cifar.ddp_buckets[0].params[0]",
                   "parameter index 2 out of range: the model has 2 parameter tensors"},
        BadProfile{"DdpBucketBytesDisagree", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    ddp_buckets:\n      - {bytes: 3712, params: [1]}\n"
                   "      - {bytes: 3456, params: [0]}\n",
                   "bytes: 3712", "models.resnet18-cifar.ddp_buckets[0].bytes",
                   "is 3712 but its parameters hold 256 bytes"},
        BadProfile{"DdpBucketParamTwice", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    ddp_buckets:\n      - {bytes: 3712, params: [1, 0]}\n"
                   "      - {bytes: 256, params: [1]}\n",
                   "bytes: 256, params", "models.resnet18-cifar.ddp_buckets[1].params[0]",
                   "parameter 1 in two buckets"},
        BadProfile{"DdpBucketParamMissing", "    max_batch_tried: 128\n",
                   "    max_batch_tried: 128\n    ddp_buckets:\n      - {bytes: 256, params: [1]}\n",
                   "bytes: 256, params: [1]", "models.resnet18-cifar.ddp_buckets", "parameter 0 is in no bucket"},
        BadProfile{"LoaderNegativeStartup", "{workers: 2, samples_per_s: 9000}",
                   "{workers: 2, samples_per_s: 9000, startup_s: -0.1}", "startup_s: -0.1",
                   "loader.points[1].startup_s", "must be >= 0"},
        // A curve's optional warm-up and samples (measure baseline --evals-per-epoch).
        BadProfile{"WarmupOnAConstantCurve", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    warmup_epochs: 1\n", "warmup_epochs: 1",
                   "training[0].warmup_epochs", "only a linear-warmup curve has a warm-up"},
        BadProfile{"UnknownOptimizer", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    optimizer: \"adam\"\n", "optimizer:",
                   "training[0].optimizer", "unknown optimizer 'adam' (expected sgd or lars)"},
        BadProfile{"LarsWithoutItsTrustCoefficient", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    optimizer: \"lars\"\n", "- model:",
                   "training[0].lars_eta", "missing required key"},
        BadProfile{"SampleWindowLongerThanTheRun", "noise_scale: 400}\n",
                   "noise_scale: 400}\n    samples:\n      - {examples: 100, window_examples: 200, train_loss: 2, "
                   "train_accuracy: 0.1, test_accuracy: -1, noise_scale: 0}\n",
                   "window_examples: 200", "training[0].samples[0].window_examples", "must be in (0, examples]"},
        BadProfile{"SamplesOverlap", "noise_scale: 400}\n",
                   "noise_scale: 400}\n    samples:\n      - {examples: 1000, window_examples: 1000, train_loss: 2, "
                   "train_accuracy: 0.1, test_accuracy: -1, noise_scale: 0}\n      - {examples: 1500, window_examples: "
                   "1000, train_loss: 2, train_accuracy: 0.1, test_accuracy: -1, noise_scale: 0}\n",
                   "examples: 1500", "training[0].samples[1]", "windows that do not overlap"},
        BadProfile{"SampleBeyondTheLastEpoch", "noise_scale: 400}\n",
                   "noise_scale: 400}\n    samples:\n      - {examples: 100001, window_examples: 1, train_loss: 2, "
                   "train_accuracy: 0.1, test_accuracy: -1, noise_scale: 0}\n",
                   "examples: 100001", "training[0].samples[0]", "beyond the last epoch (100000 examples)"},
        BadProfile{"SampleWithoutNoiseScale", "noise_scale: 400}\n",
                   "noise_scale: 400}\n    samples:\n      - {examples: 100, window_examples: 100, train_loss: 2, "
                   "train_accuracy: 0.1, test_accuracy: -1}\n",
                   "examples: 100,", "training[0].samples[0].noise_scale", ""},
        // The BatchNorm probe (measure baseline --bn-probe-images).
        BadProfile{"ProbeLossWithoutProbeBatches", "noise_scale: 400}\n", "noise_scale: 400, probe_loss: [1, 0.9]}\n",
                   "probe_loss: [1, 0.9]", "training[0].epochs[1].probe_loss",
                   "the curve has no probe_batches for a probe_loss to go with"},
        BadProfile{"ProbeLossOfTheWrongLength", "noise_scale: 400}\n",
                   "noise_scale: 400, probe_loss: [1]}\n    probe_batches: [32, 1024]\n", "probe_loss: [1]",
                   "training[0].epochs[1].probe_loss", "must hold one loss per probe_batches entry (2), got 1"},
        // The test accuracy with BatchNorm's statistics recomputed (measure baseline --recompute-bn).
        BadProfile{"RecomputedAccuracyWithoutItsImages", "noise_scale: 400}\n",
                   "noise_scale: 400, test_accuracy_recomputed: 0.8}\n", "test_accuracy_recomputed: 0.8",
                   "training[0].epochs[1].test_accuracy_recomputed",
                   "the curve has no recompute_bn_images for a recomputed test accuracy to go with"},
        BadProfile{"RecomputedAccuracyPastOne", "noise_scale: 400}\n",
                   "noise_scale: 400, test_accuracy_recomputed: 1.5}\n    recompute_bn_images: 8192\n",
                   "test_accuracy_recomputed: 1.5", "training[0].epochs[1].test_accuracy_recomputed", ""},
        BadProfile{"RecomputeImagesNotPositive", "noise_scale: 400}\n",
                   "noise_scale: 400}\n    recompute_bn_images: 0\n", "recompute_bn_images: 0",
                   "training[0].recompute_bn_images", ""},
        // The scale-invariant parameters' readings (measure baseline).
        BadProfile{"ScaleInvariantReadingsComeTogether", "noise_scale: 400}\n",
                   "noise_scale: 400, si_weight_sq: 20, si_update_sq: 0.5}\n", "si_weight_sq: 20",
                   "training[0].epochs[1].si_weight_sq", "si_weight_sq, si_update_sq and si_trace_sigma come together"},
        BadProfile{"ScaleInvariantWeightsWithoutANorm", "noise_scale: 400}\n",
                   "noise_scale: 400, si_weight_sq: 0, si_update_sq: 0.5, si_trace_sigma: 1}\n", "si_weight_sq: 0",
                   "training[0].epochs[1].si_weight_sq", "must be > 0, got"},
        BadProfile{"ProbeBatchesNotAscending", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    probe_batches: [32, 32]\n", "probe_batches: [32, 32]",
                   "training[0].probe_batches[1]", "strictly ascending: 32 follows 32"},
        // The curvature at the start (measure baseline).
        BadProfile{"StartCurvatureMoreInvariantThanParameters", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    start_curvature: {lr_over_eps_max: 0.5, scale_invariant: 9, "
                   "parameters: 8}\n",
                   "scale_invariant: 9", "training[0].start_curvature.scale_invariant", "must be at most parameters (8)"},
        BadProfile{"StartCurvatureWithoutParameters", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    start_curvature: {lr_over_eps_max: 0.5, scale_invariant: 0}\n",
                   "start_curvature: {", "training[0].start_curvature.parameters", ""},
        // The pace probe (measure baseline --pace-probe-at).
        BadProfile{"PaceProbeOfTheUntrainedModel", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 0, ratio: 16, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 0.1, draws: 2, gains: [1.5]}\n",
                   "examples: 0, ratio", "training[0].pace_probe[0].examples", "must be > 0"},
        BadProfile{"PaceProbeRatioBelowTwo", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 100, ratio: 1, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 0.1, draws: 2, gains: [1.5]}\n",
                   "ratio: 1,", "training[0].pace_probe[0].ratio", ""},
        BadProfile{"PaceProbeCoolingAtTheFullLr", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 100, ratio: 16, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 1, draws: 2, gains: [1.5]}\n",
                   "cool: 1,", "training[0].pace_probe[0].cool", "must be in (0, 1)"},
        BadProfile{"PaceProbeMoreGainsThanDraws", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 100, ratio: 16, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 0.1, draws: 1, gains: [1.5, 1.2]}\n",
                   "gains: [1.5, 1.2]", "training[0].pace_probe[0].gains", "more than its 1 draws"},
        BadProfile{"PaceProbeGainNotPositive", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 100, ratio: 16, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 0.1, draws: 2, gains: [0]}\n",
                   "gains: [0]", "training[0].pace_probe[0].gains[0]", "a gain must be > 0"},
        BadProfile{"PaceProbeNotAscending", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    pace_probe:\n      - {examples: 200, ratio: 16, lr_ratio: 1, steps: 60, "
                   "cool_steps: 200, cool: 0.1, draws: 2, gains: []}\n      - {examples: 100, ratio: 16, lr_ratio: 1, "
                   "steps: 60, cool_steps: 200, cool: 0.1, draws: 2, gains: []}\n",
                   "examples: 100, ratio", "training[0].pace_probe[1]", "ascending in examples: 100 follows 200"},
        BadProfile{"ProbeOfOneBatch", "    lr_rule: \"constant\"\n",
                   "    lr_rule: \"constant\"\n    probe_batches: [32]\n", "probe_batches: [32]",
                   "training[0].probe_batches", "at least two BatchNorm batches"},
        BadProfile{"ResumedRunWithoutAProbe", "  quick: true\n",
                   "  quick: true\n  resumed:\n    - {command: \"measure --resume\", date: \"2024\", probe_s: 0}\n",
                   "probe_s: 0}", "measurement.resumed[0].probe_s", "must be > 0, got '0'"},
        BadProfile{"ResumedRunWithoutItsCommand", "  quick: true\n",
                   "  quick: true\n  resumed:\n    - {date: \"2024\", probe_s: 0.5}\n",
                   "probe_s: 0.5}", "measurement.resumed[0].command", "missing required key 'command'"},
        BadProfile{"CalibrationZeroProbe", "training:\n",
                   "calibration: {model: \"resnet18-cifar\", batch: 32, threads: 1, start_s: 0, end_s: 0.9}\ntraining:\n",
                   "calibration:", "calibration.start_s", "must be > 0, got '0'"},
        BadProfile{"GilThreadsNotFromOne", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  gil:\n    threads: [2, 4]\n    depth: 64\n    probes:\n"
                   "      - {name: \"p\", width: 16, batch: 8, calls: 128, forward_s: [0.001, 0.002]}\n"
                   "  models: {}\ntraining:\n",
                   "threads: [2, 4]", "pytorch.gil.threads", "must start 1, 2"},
        BadProfile{"GilProbeTimesNotAligned", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  gil:\n    threads: [1, 2, 4]\n    depth: 64\n    probes:\n"
                   "      - {name: \"p\", width: 16, batch: 8, calls: 128, forward_s: [0.001, 0.002]}\n"
                   "  models: {}\ntraining:\n",
                   "forward_s: [0.001, 0.002]", "pytorch.gil.probes[0].forward_s", "has 2 values but threads has 3"},
        BadProfile{"GilProbeWithoutCalls", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  gil:\n    threads: [1, 2]\n    depth: 64\n    probes:\n"
                   "      - {name: \"p\", width: 16, batch: 8, calls: 0, forward_s: [0.001, 0.002]}\n"
                   "  models: {}\ntraining:\n",
                   "calls: 0", "pytorch.gil.probes[0].calls", ">= 1"},
        BadProfile{"ForwardCallsBeyondAnyModel", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\": {batches: [32], iteration_s: [0.9], ddp_iteration_s: [0.95], oom_batch: null, forward_calls: 100000000}\ntraining:\n",
                   "forward_calls: 100000000", "pytorch.models.resnet18-cifar.forward_calls", "more than 10^7 calls"},
        BadProfile{"ReplicateTimeNegative", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\": {batches: [32], iteration_s: [0.9], ddp_iteration_s: [0.95], oom_batch: null, replicate_s: -1}\ntraining:\n",
                   "replicate_s: -1", "pytorch.models.resnet18-cifar.replicate_s", ">= 0"},
        BadProfile{"PytorchLoopFaultsOfAnotherBatchCount", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\": {batches: [32], iteration_s: [0.9], ddp_iteration_s: [0.95], minor_faults: [1, 2], oom_batch: null}\ntraining:\n",
                   "minor_faults: [1, 2]", "pytorch.models.resnet18-cifar.minor_faults", "has 2 values but batches has 1"},
        BadProfile{"PytorchLoopLengthMismatch", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\": {batches: [32, 128], iteration_s: [0.9, 3.5], "
                   "ddp_iteration_s: [0.95], oom_batch: null}\ntraining:\n",
                   "ddp_iteration_s: [0.95]", "pytorch.models.resnet18-cifar.ddp_iteration_s",
                   "has 1 values but batches has 2"},
        BadProfile{"ForkPointsNotFromOneRank", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\":\n      batches: [32]\n      iteration_s: [0.9]\n"
                   "      ddp_iteration_s: [0.95]\n      oom_batch: null\n      fork:\n        workers: 1\n"
                   "        points:\n          - {ranks: 2, iter_s: [0.02], first_batch_s: [0.05], cow_s: [0.4]}\n"
                   "training:\n",
                   "{ranks: 2, iter_s", "pytorch.models.resnet18-cifar.fork.points[0].ranks",
                   "the first point must be the ranks: 1 reference"},
        BadProfile{"ForkArrayLengthMismatch", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvision: \"0.14\"\n  python: \"3.11\"\n  threads: 1\n"
                   "  probe_s: 0.9\n  loader: {data: \"synthetic\", batch: 128, points: []}\n"
                   "  models:\n    \"resnet18-cifar\":\n      batches: [32]\n      iteration_s: [0.9]\n"
                   "      ddp_iteration_s: [0.95]\n      oom_batch: null\n      fork:\n        workers: 1\n"
                   "        points:\n          - {ranks: 1, iter_s: [0.02], first_batch_s: [0.05], cow_s: [0.4, 0.5]}\n"
                   "training:\n",
                   "{ranks: 1, iter_s", "pytorch.models.resnet18-cifar.fork.points[0].cow_s",
                   "has 2 values but batches has 1"},
        BadProfile{"PytorchUnknownKey", "training:\n",
                   "pytorch:\n  torch: \"1.13\"\n  torchvison: \"0.14\"\ntraining:\n", "torchvison",
                   "pytorch.torchvison", "unknown key 'torchvison'"},
        // All-zero times once ended in "error: internal" when another rank count was fitted.
        BadProfile{"CurveOfZeroTimes", "time_s: [0.0001, 0.01]}", "time_s: [0, 0]}",
                   "\"all_reduce\"", "collectives.curves[0].time_s", "no point has bytes > 0 and a time > 0"},
        BadProfile{"CurveLengthMismatch", "time_s: [0.0001, 0.01]}", "time_s: [0.0001]}",
                   "\"all_reduce\"", "collectives.curves[0].time_s", "has 1 values but bytes has 2"},
        BadProfile{"CurveBytesNotAscending", "bytes: [1024, 1048576], time_s: [0.00005",
                   "bytes: [1048576, 1024], time_s: [0.00005", "\"broadcast\"",
                   "collectives.curves[1].bytes[1]", "must be strictly ascending"},
        BadProfile{"UnknownCollectiveOp", "op: \"broadcast\"", "op: \"all_gather\"", "all_gather",
                   "collectives.curves[1].op", "unknown collective op 'all_gather'"},
        BadProfile{"ZeroRanks", "ranks: 2, bytes: [1024, 1048576], time_s: [0.0001,",
                   "ranks: 0, bytes: [1024, 1048576], time_s: [0.0001,", "ranks: 0",
                   "collectives.curves[0].ranks", "must be >= 1, got 0"},
        BadProfile{"DuplicateCurve", "op: \"broadcast\"", "op: \"all_reduce\"",
                   "ranks: 2, bytes: [1024, 1048576], time_s: [0.00005", "collectives.curves[1]",
                   "second all_reduce curve for 2 ranks"},
        // The loader at other batches (PyTorch's DataLoader, profile_torch.py --loader-batch B,B2,...).
        BadProfile{"LoaderAtItsOwnBatch", "    - {workers: 2, samples_per_s: 9000}\n",
                   "    - {workers: 2, samples_per_s: 9000}\n  at_batches:\n    - batch: 128\n"
                   "      points: [{workers: 2, samples_per_s: 9500}]\n",
                   "- batch: 128", "loader.at_batches[0].batch", "is the loader's own batch"},
        BadProfile{"LoaderAtBatchesNotAscending", "    - {workers: 2, samples_per_s: 9000}\n",
                   "    - {workers: 2, samples_per_s: 9000}\n  at_batches:\n    - batch: 512\n"
                   "      points: [{workers: 2, samples_per_s: 9500}]\n    - batch: 256\n"
                   "      points: [{workers: 2, samples_per_s: 9400}]\n",
                   "- batch: 256", "loader.at_batches[1].batch", "strictly ascending in batch: 256 follows 512"},
        BadProfile{"LoaderAtBatchWithoutPoints", "    - {workers: 2, samples_per_s: 9000}\n",
                   "    - {workers: 2, samples_per_s: 9000}\n  at_batches:\n    - batch: 512\n"
                   "      points: []\n",
                   "points: []", "loader.at_batches[0].points", "at least one point"},
        BadProfile{"LoaderWorkersNotAscending", "{workers: 2, samples_per_s: 9000}",
                   "{workers: 0, samples_per_s: 9000}", "samples_per_s: 9000", "loader.points[1]",
                   "strictly ascending in workers"},
        BadProfile{"LoaderZeroThroughput", "samples_per_s: 5000", "samples_per_s: 0",
                   "samples_per_s: 0", "loader.points[0].samples_per_s", "must be > 0"},
        BadProfile{"UnknownDeviceKind", "device_kind: \"cpu\"", "device_kind: \"tpu\"",
                   "device_kind:", "machine.device_kind", "unknown device_kind 'tpu'"},
        BadProfile{"WrongType", "cpu_cores: 2", "cpu_cores: two", "cpu_cores:",
                   "machine.cpu_cores", "expected an integer, got 'two'"},
        BadProfile{"UnknownPrecision", "  quick: true\n", "  quick: true\n  precision: fp16\n", "precision:",
                   "measurement.precision", "unknown precision 'fp16' (expected fp32, bf16-amp)"},
        BadProfile{"UnknownMemoryFormat", "  quick: true\n", "  quick: true\n  memory_format: nhwc\n",
                   "memory_format:", "measurement.memory_format",
                   "unknown memory format 'nhwc' (expected nchw, channels_last)"},
        BadProfile{"BoolGivenNumber", "quick: true", "quick: 1", "quick:", "measurement.quick",
                   "expected true or false, got '1'"},
        BadProfile{"TrainingUnknownLrRule", "lr_rule: \"constant\"", "lr_rule: \"cosine\"", "cosine",
                   "training[0].lr_rule", "unknown lr_rule 'cosine'"},
        BadProfile{"TrainingSmallBatchNotSmaller", "small_batch: 64", "small_batch: 128",
                   "small_batch:", "training[0].small_batch", "must be smaller than batch (128)"},
        BadProfile{"TrainingZeroBatch", "    batch: 128\n    small_batch", "    batch: 0\n    small_batch",
                   "batch: 0", "training[0].batch", "must be >= 1, got 0"},
        BadProfile{"TrainingEpochsNotAscending", "{epoch: 2, examples: 100000", "{epoch: 1, examples: 100000",
                   "examples: 100000", "training[0].epochs[1]", "strictly ascending in epoch: 1 follows 1"},
        BadProfile{"TrainingExamplesNotAscending", "examples: 100000", "examples: 50000",
                   "epoch: 2,", "training[0].epochs[1]", "examples must be strictly ascending"},
        BadProfile{"TrainingNegativeLoss", "train_loss: 1.25", "train_loss: -1.25", "epoch: 2,",
                   "training[0].epochs[1].train_loss", "must be >= 0"},
        BadProfile{"TrainingInfiniteLoss", "train_loss: 1.25", "train_loss: inf", "epoch: 2,",
                   "training[0].epochs[1].train_loss", "expected a finite number"},
        BadProfile{"TrainingAccuracyAboveOne", "train_accuracy: 0.6", "train_accuracy: 60", "epoch: 2,",
                   "training[0].epochs[1].train_accuracy", "must be a fraction in [0, 1], got '60'"},
        BadProfile{"TrainingTestAccuracyNegative", "test_accuracy: 0.55", "test_accuracy: -0.5",
                   "epoch: 2,", "training[0].epochs[1].test_accuracy", "or -1 (not evaluated)"},
        BadProfile{"TrainingNegativeNoiseScale", "noise_scale: 400", "noise_scale: -400", "epoch: 2,",
                   "training[0].epochs[1].noise_scale", "must be >= 0"},
        BadProfile{"TrainingMissingKey", "    momentum: 0.9\n", "", "- model:",
                   "training[0].momentum", "missing required key 'momentum'"},
        BadProfile{"TrainingSecondCurveSameModel", "training:\n", "training:\n  - {model: \"resnet18-cifar\", data: \"cifar10\", batch: 256, small_batch: 128, "
                   "train_samples: 50000, lr: 0.2, momentum: 0.9, weight_decay: 0.0005, lr_rule: \"linear\", "
                   "epochs: []}\n",
                   "- model: \"resnet18-cifar\"\n    data: \"synthetic\"\n    batch: 128\n    small_batch: 64",
                   "training[1]", "second training curve for model 'resnet18-cifar'"}),
    [](const ::testing::TestParamInfo<BadProfile>& info) { return std::string(info.param.name); });

// require_for_model: what a sweep needs from a (possibly partial) profile.
class RequireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = load_profile(kFixture);
    config_.file = "configs/sweep.yaml";
    config_.profile_path = "reports/x/profile.yaml";
    config_.profile_line = 2;
    config_.model = "resnet18-cifar";
    config_.strategies = {Strategy::kDdp, Strategy::kDp};
    config_.gpus = {1, 2, 4};
    config_.batch_per_gpu = {32};
  }

  // The message of the InputError require_for_model throws, after checking where it points.
  std::string error_message() {
    try {
      require_for_model(profile_, config_);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "configs/sweep.yaml");
      EXPECT_EQ(e.line(), 2);
      EXPECT_EQ(e.key(), "profile");
      return e.message();
    }
    ADD_FAILURE() << "expected InputError";
    return "";
  }

  Profile profile_;
  SweepConfig config_;
};

TEST_F(RequireTest, FixtureHasWhatASweepNeeds) {
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

TEST_F(RequireTest, MissingModelListsTheModelsThere) {
  config_.model = "resnet18-imagenet";
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml has no model 'resnet18-imagenet' (it has: resnet18-cifar)");
  profile_.models.clear();
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml has no model 'resnet18-imagenet' (it has: none)");
}

// A profile predicts the precision it was measured in, and says which it was where they differ.
TEST_F(RequireTest, PrecisionMustBeTheProfiles) {
  config_.precision = Precision::kBf16Amp;
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml was measured in fp32 (measurement.precision), the config predicts "
            "bf16-amp: give precision: fp32 or a profile measured with measure --precision bf16-amp");
  config_.precision_line = 7;
  try {
    require_for_model(profile_, config_);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.key(), "precision");
  }
  profile_.measurement.precision = Precision::kBf16Amp;
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

// Likewise the memory format.
TEST_F(RequireTest, MemoryFormatMustBeTheProfiles) {
  config_.memory_format = MemoryFormat::kChannelsLast;
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml was measured in nchw (measurement.memory_format), the config "
            "predicts channels_last: give memory_format: nchw or a profile measured with measure "
            "--memory-format channels_last");
  config_.memory_format_line = 9;
  try {
    require_for_model(profile_, config_);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 9);
    EXPECT_EQ(e.key(), "memory_format");
  }
  profile_.measurement.memory_format = MemoryFormat::kChannelsLast;
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

TEST_F(RequireTest, ModelWithoutBatchesOrLayers) {
  ModelProfile& m = profile_.models.at("resnet18-cifar");
  m.layers.clear();
  EXPECT_EQ(error_message(), "profile reports/x/profile.yaml has no layers for 'resnet18-cifar'");
  m.batches.clear();
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml has no measured batch sizes for 'resnet18-cifar'");
}

TEST_F(RequireTest, NoLoaderCurve) {
  profile_.loader.points.clear();
  EXPECT_EQ(error_message(), "profile reports/x/profile.yaml has no loader throughput (loader.points)");
}

TEST_F(RequireTest, NoDeviceMemory) {
  profile_.machine.device_memory_bytes = 0;
  EXPECT_NE(error_message().find("has no device memory capacity"), std::string::npos);
}

TEST_F(RequireTest, CudaDeviceNeedsCopyCurve) {
  profile_.machine.device_kind = "cuda";
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml has no host-to-device copy curve (h2d) for its cuda device");
  profile_.h2d.applicable = true;
  profile_.h2d.pinned = {{1024, 1e-5}};
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

TEST_F(RequireTest, MultiGpuSweepNeedsAllReduceCurveOrInterconnectOrTopology) {
  // Keep only the broadcast curve: broadcast/reduce can be derived, all-reduce cannot.
  profile_.collectives.curves.erase(profile_.collectives.curves.begin());
  ASSERT_EQ(profile_.collectives.curves.at(0).op, "broadcast");
  EXPECT_EQ(error_message(),
            "profile reports/x/profile.yaml has no all_reduce curve and the config gives no "
            "interconnect or topology: cannot cost 4-rank all-reduce");
  config_.interconnect = InterconnectAssumption{100, 10, false};
  EXPECT_NO_THROW(require_for_model(profile_, config_));
  config_.interconnect.reset();
  // A topology prices the collectives with NCCL's model (a one-GPU machine's profile, e.g.).
  config_.topology = Topology{};
  EXPECT_NO_THROW(require_for_model(profile_, config_));
  config_.topology.reset();
  config_.gpus = {1};  // a single-GPU sweep has no collective to cost
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

// A config asking for large-batch predictions needs the model's baseline curve; the error points
// at the key that asked (large_batch: or lr_rule:), not at profile:.
TEST_F(RequireTest, LargeBatchPredictionsNeedABaselineCurve) {
  config_.large_batch = LargeBatchRequest{};
  config_.large_batch->key = "large_batch";
  config_.large_batch->line = 9;
  EXPECT_NO_THROW(require_for_model(profile_, config_));  // the fixture has a resnet18-cifar curve
  const auto message = [&]() -> std::string {
    try {
      require_for_model(profile_, config_);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "configs/sweep.yaml");
      EXPECT_EQ(e.line(), 9);
      EXPECT_EQ(e.key(), config_.large_batch->key);
      return e.what();
    }
    ADD_FAILURE() << "expected InputError";
    return "";
  };
  profile_.training.at(0).epochs.clear();
  EXPECT_EQ(message(),
            "configs/sweep.yaml:9: large_batch: profile reports/x/profile.yaml has a baseline training curve "
            "for resnet18-cifar without a finished epoch (run measure baseline to the end)");
  profile_.training.at(0).model = "resnet18-imagenet";
  EXPECT_EQ(message(),
            "configs/sweep.yaml:9: large_batch: profile reports/x/profile.yaml has no baseline training curve "
            "for resnet18-cifar (run measure baseline)");
  config_.large_batch->key = "lr_rule";
  EXPECT_NE(message().find(":9: lr_rule: profile"), std::string::npos);
  // Without the request a profile without a curve is fine.
  config_.large_batch.reset();
  EXPECT_NO_THROW(require_for_model(profile_, config_));
}

TEST_F(RequireTest, SingleRankAllReduceCurveIsNotEnough) {
  profile_.collectives.curves = {{"all_reduce", 1, {{1024, 1e-6}}}};
  EXPECT_NE(error_message().find("cannot cost 4-rank all-reduce"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
