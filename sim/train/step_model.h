#pragma once
// The compute of one training step on one device at any batch size, from a ModelProfile.

#include <cstdint>
#include <vector>

#include "io/profile.h"

namespace trainsim::train {

// Seconds at one batch size.
struct StepTimes {
  std::vector<double> forward_s;   // per layer, forward order
  std::vector<double> backward_s;  // per layer, forward order (run in reverse)
  double loss_s = 0;               // loss forward + backward
  double zero_grad_s = 0;
  double optimizer_s = 0;
  double overhead_s = 0;           // framework overhead (see StepModel)

  double layers_s() const;  // sum of forward and backward of every layer
};

// Layer, loss: interpolate_in_batch(kProportionalFloor). Optimizer, zero_grad: kHoldNearest (they
// touch parameters, not samples).
// Framework overhead: at each measured batch b_i,
//   overhead_i = max(0, iteration_s_i - (sum of layer fwd+bwd + loss + zero_grad + optimizer)(b_i))
// i.e. what the fused iteration costs beyond the sum of its separately timed parts (Python/
// autograd bookkeeping, kernel launches not inside any timed part, synchronisation). It is
// interpolated with kHoldNearest and simulated as a host op serial with compute, so that the
// simulated iteration matches the measured fused one at the measured batches.
// Every duration is then multiplied by `slowdown` (host contention of CPU ranks, host_contention.h).
class StepModel {
 public:
  // Throws std::invalid_argument when the model has no measured batch, the per-batch arrays
  // disagree in length with `batches`, or slowdown is not > 0.
  explicit StepModel(const ModelProfile& model, double slowdown = 1.0);

  StepTimes at(int64_t batch) const;
  const ModelProfile& model() const { return model_; }

 private:
  const ModelProfile& model_;
  double slowdown_;
  std::vector<double> overhead_points_;  // aligned with model_.batches
};

}  // namespace trainsim::train
