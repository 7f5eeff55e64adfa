#pragma once
// The fused training iteration (zero_grad, forward, cross-entropy, backward, SGD step) of one
// model at one batch on one device: what the compute profile times as iteration_s, what the host
// contention workers run side by side, and the calibration probe (probe.h).

#include <cstdint>
#include <memory>

#include "device.h"
#include "format/profile.h"
#include "models/staged.h"

namespace trainsim::measure::profiler {

// SGD as the course trains: lr 0.1, momentum 0.9, weight decay 5e-4.
inline constexpr double kLearningRate = 0.1;
inline constexpr double kMomentum = 0.9;
inline constexpr double kWeightDecay = 5e-4;

// One model at one batch on one device, in train() mode, with its SGD optimizer and random
// inputs from `seed`: the fused training iteration (zero_grad, forward, cross-entropy, backward,
// step) that measure_batch times and the host contention workers run side by side, forward and
// loss in the device's precision.
class FusedIteration {
 public:
  // `description`'s layers must match the LibTorch stages one to one (std::logic_error if not).
  FusedIteration(const ModelProfile& description, int64_t batch, const Device& device, uint64_t seed);
  void run();

  models::StagedModel& model() { return *model_; }
  torch::optim::SGD& optimizer() { return optimizer_; }
  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }

 private:
  std::shared_ptr<models::StagedModel> model_;
  torch::optim::SGD optimizer_;
  torch::Tensor images_;
  torch::Tensor labels_;
  Precision precision_;
};

}  // namespace trainsim::measure::profiler
