#pragma once
// The roofline of one GPU and what a model's ops cost on it (docs/FIT.md "Roofline").
//
// An op (models/cost.h: FLOPs, DRAM bytes, output tiles) takes, at full efficiency,
//   t = max(flops / (peak * fill), bytes / bandwidth)
// where peak is the FLOP rate PyTorch's default fp32 training uses (TF32 tensor cores where the
// GPU has them, else FP32) and fill = CTAs / (waves * SMs), waves = ceil(CTAs / SMs): an op
// whose CTAs do not fill the last wave of SMs runs that wave at the SM rate, not the device's
// (one 128x128 tile per SM at a time, the assumption models/cost.h states). A GEMM with fewer
// output tiles than SMs splits its reduction to fill them (split-K), at most into
// reduction_splits parts: CTAs = tiles * min(reduction_splits, ceil(SMs / tiles)). A real GPU
// reaches a fraction of this; the fit determines that fraction (the compute efficiency).
//
// A device nobody named (a published table of an unknown GPU) has no roofline: its ops take
// flops / 1 FLOP/s, so the fitted "efficiency" is the device's effective FLOP rate, and memory
// traffic is not modelled separately.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/gpu_catalog.h"

namespace trainsim::fit {

struct Roof {
  double flops_per_s = 1;  // 1: unknown device (times in FLOPs)
  double bytes_per_s = 0;  // 0: memory traffic not modelled
  int sms = 0;             // 0: no wave quantization
};

Roof roof_of(const std::optional<GpuSpec>& gpu);

// One model's step at one batch size on a roof, at full efficiency (seconds).
struct StepRoofline {
  std::vector<double> forward_s;   // per layer, forward order
  std::vector<double> backward_s;  // per layer
  double loss_s = 0;               // loss forward + backward
  double optimizer_s = 0;
  double zero_grad_s = 0;
  double bucket_copy_s = 0;        // DDP: gradients copied into the buckets and the result back
  double saved_bytes = 0;          // activations autograd keeps for backward (all layers)
  double param_bytes = 0;
  // Ops the host issues (models/cost.h's kernel-level ops): per layer, the loss's forward and
  // backward, the optimizer's pass over each parameter tensor; zero_grad issues none of its own.
  std::vector<int> forward_ops;
  std::vector<int> backward_ops;
  int loss_ops = 2;
  int optimizer_ops = 0;
  int total_ops() const;
};

// Throws std::invalid_argument for an unknown model or batch < 1.
StepRoofline step_roofline(const std::string& model, int64_t batch, const Roof& roof);

}  // namespace trainsim::fit
