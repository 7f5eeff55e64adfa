#pragma once
// The calibration probe (docs/PROFILE.md "calibration", docs/MEASURE.md): one fixed training
// iteration that says how fast this machine is right now. A fresh ResNet-18 CIFAR
// (torch::manual_seed(0)) in train mode, SGD (lr 0.1, momentum 0.9, weight decay 5e-4), a fixed
// random batch of 32 (randn images 32x3x32x32, randint labels 0..9) already on the device; the
// fused iteration zero_grad, forward, cross_entropy, backward, step; 1 warm-up, then the median
// of 3 timed iterations on a steady clock, the device synchronised before and after each. It
// runs with the caller's intra-op threads on the caller's device: `measure` times it before and
// after its profile, `measure train` before it starts the ranks, and the PyTorch side
// (measure/pytorch/probe.py) the same iteration from Python.

#include <cstdint>

#include "device.h"

namespace trainsim::measure::profiler {

inline constexpr const char* kProbeModel = "resnet18-cifar";
inline constexpr int64_t kProbeBatch = 32;
inline constexpr int kProbeWarmup = 1;
inline constexpr int kProbeRepeats = 3;

// Median seconds of the probe iteration on `device`. Reseeds the global generator (seed 0).
double run_probe(const Device& device);

}  // namespace trainsim::measure::profiler
