#pragma once
// Synthetic profiles built in code for the simulator's tests and benchmark. The model's layer
// and parameter layout is ResNet-18 (CIFAR variant, pytorch-cifar); every time, rate and memory
// figure is SYNTHETIC (round numbers chosen for the tests), not a measurement.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/profile.h"

namespace trainsim::testing {

// ResNet-18 CIFAR layers (stem, layer1.0 .. layer4.1, head) with their parameter tensors in
// registration order and BatchNorm buffer bytes (running_mean + running_var fp32 + an int64
// num_batches_tracked per BatchNorm). 62 tensors, 11,173,962 parameters = 44,695,848 bytes.
inline std::vector<LayerProfile> resnet18_cifar_layers() {
  std::vector<LayerProfile> layers;
  const auto conv = [](LayerProfile& l, const std::string& name, int64_t out, int64_t in, int64_t k) {
    l.params.push_back(ParamTensor{name + ".weight", out * in * k * k * 4});
  };
  const auto bn = [](LayerProfile& l, const std::string& name, int64_t c) {
    l.params.push_back(ParamTensor{name + ".weight", c * 4});
    l.params.push_back(ParamTensor{name + ".bias", c * 4});
    l.buffer_bytes += 2 * c * 4 + 8;
  };
  LayerProfile stem;
  stem.name = "stem";
  stem.kind = "stem";
  conv(stem, "conv1", 64, 3, 3);
  bn(stem, "bn1", 64);
  layers.push_back(stem);
  int64_t in = 64;
  const int64_t planes[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    for (int b = 0; b < 2; ++b) {
      LayerProfile l;
      l.name = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
      l.kind = "basic-block";
      const int64_t out = planes[s];
      conv(l, l.name + ".conv1", out, in, 3);
      bn(l, l.name + ".bn1", out);
      conv(l, l.name + ".conv2", out, out, 3);
      bn(l, l.name + ".bn2", out);
      if (in != out) {  // projection shortcut in the first block of stages 2-4
        conv(l, l.name + ".shortcut.0", out, in, 1);
        bn(l, l.name + ".shortcut.1", out);
      }
      in = out;
      layers.push_back(l);
    }
  }
  LayerProfile head;
  head.name = "head";
  head.kind = "head";
  head.params.push_back(ParamTensor{"linear.weight", 10 * 512 * 4});
  head.params.push_back(ParamTensor{"linear.bias", 10 * 4});
  layers.push_back(head);
  return layers;
}

// Knobs of the synthetic profile (all synthetic).
struct SyntheticKnobs {
  std::vector<int64_t> batches = {32, 128, 512, 2048};
  // Layer l (of 10) at batch b: forward = fwd_fixed_s + fwd_per_sample_s * b * weight_l, where
  // weight_l = 0.5 for the stem and head and 1 for every block; backward = 2 x forward.
  double fwd_fixed_s = 20e-6;
  double fwd_per_sample_s = 4e-6;
  double loss_fixed_s = 10e-6;
  double loss_per_sample_s = 0.02e-6;
  double zero_grad_s = 50e-6;
  double optimizer_s = 400e-6;
  double overhead_s = 0;  // iteration_s = sum of parts + overhead_s
  // The host's time to issue each part (every layer's forward and backward, loss, zero_grad,
  // optimizer), at every batch; unset: no issue times (as on a CPU). With it, iteration_s is the
  // critical path of the launch queue (StepTimes::critical_path_s) + overhead_s.
  std::optional<double> host_issue_s;
  // Memory: peak = 3 * params + buffers + activation_fixed + activation_per_sample * b.
  double activation_fixed_bytes = 100e6;
  double activation_per_sample_bytes = 2e6;
  double device_memory_bytes = 16e9;
  std::optional<int64_t> oom_batch;
  std::string device_kind = "cuda";
  int cpu_cores = 0;  // machine.cpu_cores: 0 = not given (no host-core sharing simulated)
  int threads = 1;    // machine.threads: intra-op threads of the compute timings
  // Pinned H2D: t = h2d_latency_s + S / h2d_bytes_per_s (applicable on cuda only).
  double h2d_latency_s = 10e-6;
  double h2d_bytes_per_s = 12e9;
  // Collectives, as exact alpha-beta curves at these rank counts.
  std::vector<int> collective_ranks = {2, 4};
  double alpha_s = 10e-6;
  double busbw_bytes_per_s = 100e9;
  // Loader: samples/s per worker (0 workers: inline at the 1-worker rate), workers 0..4 measured.
  double loader_samples_per_s_per_worker = 20000;
  int loader_max_measured_workers = 4;
};

inline Profile synthetic_profile(const SyntheticKnobs& k = {}) {
  Profile p;
  p.machine.name = "synthetic";
  p.machine.device_kind = k.device_kind;
  p.machine.device_name = "synthetic device";
  p.machine.device_count = 4;
  p.machine.cpu_cores = k.cpu_cores;
  p.machine.threads = k.threads;
  p.machine.device_memory_bytes = k.device_memory_bytes;
  p.measurement.data = "synthetic";

  ModelProfile m;
  m.name = "resnet18-cifar";
  m.num_classes = 10;
  m.input_bytes_per_sample = 3 * 32 * 32 * 4;
  m.layers = resnet18_cifar_layers();
  m.batches = k.batches;
  double static_bytes = 0;
  for (const LayerProfile& l : m.layers) {
    static_bytes += 3.0 * static_cast<double>(l.param_bytes()) + static_cast<double>(l.buffer_bytes);
  }
  for (std::size_t li = 0; li < m.layers.size(); ++li) {
    const double weight = (li == 0 || li + 1 == m.layers.size()) ? 0.5 : 1.0;
    for (int64_t b : k.batches) {
      const double fwd = k.fwd_fixed_s + k.fwd_per_sample_s * static_cast<double>(b) * weight;
      m.layers[li].forward_s.push_back(fwd);
      m.layers[li].backward_s.push_back(2 * fwd);
    }
  }
  for (std::size_t i = 0; i < k.batches.size(); ++i) {
    const double b = static_cast<double>(k.batches[i]);
    m.loss_s.push_back(k.loss_fixed_s + k.loss_per_sample_s * b);
    m.zero_grad_s.push_back(k.zero_grad_s);
    m.optimizer_s.push_back(k.optimizer_s);
    double parts = m.loss_s.back() + k.zero_grad_s + k.optimizer_s;
    for (const LayerProfile& l : m.layers) parts += l.forward_s[i] + l.backward_s[i];
    if (k.host_issue_s) {
      const double h = *k.host_issue_s;
      for (LayerProfile& l : m.layers) {
        l.host_forward_s.push_back(h);
        l.host_backward_s.push_back(h);
      }
      m.host_loss_s.push_back(h);
      m.host_zero_grad_s.push_back(h);
      m.host_optimizer_s.push_back(h);
      // The launch queue's critical path, parts in issue order (forward, loss, backward in
      // reverse, optimizer, zero_grad): device op j starts at max(issue end j, device end j-1).
      std::vector<double> device;
      for (const LayerProfile& l : m.layers) device.push_back(l.forward_s[i]);
      device.push_back(m.loss_s.back());
      for (std::size_t l = m.layers.size(); l-- > 0;) device.push_back(m.layers[l].backward_s[i]);
      device.push_back(k.optimizer_s);
      device.push_back(k.zero_grad_s);
      double end = 0;
      double issued = 0;
      for (double d : device) {
        issued += h;
        end = std::max(end, issued) + d;
      }
      parts = end;
    }
    m.iteration_s.push_back(parts + k.overhead_s);
    m.peak_memory_bytes.push_back(static_bytes + k.activation_fixed_bytes +
                                  k.activation_per_sample_bytes * b);
  }
  m.memory_method = "synthetic";
  m.oom_batch = k.oom_batch;
  int64_t params = 0;
  for (const LayerProfile& l : m.layers) params += l.param_bytes() / 4;
  m.parameters = params;
  p.models[m.name] = m;

  p.h2d.applicable = k.device_kind != "cpu";
  if (p.h2d.applicable) {
    for (double s = 4096; s <= 64.0 * 1024 * 1024; s *= 4) {
      p.h2d.pinned.push_back(CurvePoint{s, k.h2d_latency_s + s / k.h2d_bytes_per_s});
    }
    p.h2d.pageable = p.h2d.pinned;
  }

  p.collectives.backend = "synthetic";
  p.collectives.source = "synthetic";
  for (int n : k.collective_ranks) {
    CollectiveCurve ar{"all_reduce", n, {}};
    CollectiveCurve bc{"broadcast", n, {}};
    CollectiveCurve rd{"reduce", n, {}};
    for (double s = 1024; s <= 256.0 * 1024 * 1024; s *= 4) {
      // Ring all-reduce 2(n-1) alpha + 2(n-1)/n S / busbw; broadcast, reduce (n-1) alpha + S / busbw.
      ar.points.push_back(CurvePoint{s, 2.0 * (n - 1) * k.alpha_s +
                                            2.0 * (n - 1) / n * s / k.busbw_bytes_per_s});
      bc.points.push_back(CurvePoint{s, (n - 1) * k.alpha_s + s / k.busbw_bytes_per_s});
      rd.points.push_back(bc.points.back());
    }
    p.collectives.curves.push_back(ar);
    p.collectives.curves.push_back(bc);
    p.collectives.curves.push_back(rd);
  }

  p.loader.data = "synthetic";
  p.loader.batch = 128;
  for (int w = 0; w <= k.loader_max_measured_workers; ++w) {
    p.loader.points.push_back(
        LoaderPoint{w, k.loader_samples_per_s_per_worker * std::max(1, w), std::nullopt});
  }
  return p;
}

}  // namespace trainsim::testing
