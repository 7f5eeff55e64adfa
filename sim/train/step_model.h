#pragma once
// The compute of one training step on one device at any batch size, from a ModelProfile and the
// measured training loop it is part of.

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile.h"

namespace trainsim::train {

// Seconds at one batch size.
struct StepTimes {
  std::vector<double> forward_s;   // per layer, forward order
  std::vector<double> backward_s;  // per layer, forward order (run in reverse)
  double loss_s = 0;               // loss forward + backward
  double zero_grad_s = 0;
  double optimizer_s = 0;
  double overhead_s = 0;           // what the loop costs beyond its parts (see StepModel), >= 0
  double parts_scale = 1;          // factor applied to the parts (< 1 when they overstate the loop)
  // The host's time to issue each part (ModelProfile::has_host_issue); empty / 0 when the
  // profile did not measure it: the device ops then run without issue ops before them.
  std::vector<double> host_forward_s;   // per layer, forward order
  std::vector<double> host_backward_s;  // per layer, forward order
  double host_loss_s = 0;
  double host_zero_grad_s = 0;
  double host_optimizer_s = 0;

  double layers_s() const;  // sum of forward and backward of every layer
  bool has_host_issue() const { return !host_forward_s.empty(); }
  // The single-process step through the launch queue: the host issues the parts in order
  // (forward, loss, backward in reverse, optimizer, zero_grad), each part's device op starts once
  // it is issued and the previous device op is done, so the step ends at
  //   max over k of (host issue of parts 1..k + device time of parts k..n).
  // Without host issue times: the sum of the parts.
  double critical_path_s() const;
};

// The loop one training iteration runs in, as measured (no loader, no host-to-device copy):
// ModelProfile::ddp_iteration_s (the C++ DDP loop on one rank), PytorchLoop::ddp_iteration_s
// (PyTorch's), or a plain fused iteration. Arrays aligned, batches strictly ascending.
struct LoopTimes {
  std::vector<int64_t> batches;
  std::vector<double> iteration_s;
  std::string what;  // for notes, e.g. "PyTorch DDP loop on 1 rank"
};

// Layer, loss: interpolate_in_batch(kProportionalFloor). Optimizer, zero_grad: kHoldNearest (they
// touch parameters, not samples).
// The loop: at each batch b_i the loop was measured,
//   excess_i = loop_i - parts(b_i),  parts(b) = sum of layer fwd+bwd + loss + zero_grad + optimizer
// the signed cost of the loop beyond its separately timed parts (autograd engine over the whole
// graph, DDP's hooks and bucket copies, Python, the loop's own reads). excess(b) is linear in b
// between measured batches; below the smallest it is held (what dominates there is per-iteration
// cost); above the largest the loop keeps its ratio to its parts, excess(b) = excess(b_max) *
// parts(b) / parts(b_max) (what dominates there grows with the batch). At a batch:
//   excess >= 0: an overhead op of `excess` (a host op serial with compute);
//   excess <  0: the parts overstate the loop (timed alone, each part pays cold caches and
//                synchronisation the fused loop does not): every part is scaled by
//                (parts + excess) / parts, so the step sums to the loop.
// With the host's issue times measured (ModelProfile::has_host_issue) the parts are not added up
// but run through the launch queue (StepTimes::critical_path_s): parts(b) above is then that
// critical path, so a host-bound loop's excess is what the loop costs beyond the host's issue
// of its parts, not beyond host + device. Negative excess scales host and device times alike.
// The simulated single-rank step therefore equals the measured loop at every measured batch.
// Every duration is then multiplied by `slowdown` (host contention of CPU ranks, host_contention.h).
class StepModel {
 public:
  // Throws std::invalid_argument when the model has no measured batch, the per-batch arrays
  // disagree in length with `batches`, the loop's arrays are empty or disagree, slowdown is not
  // > 0, or the loop is less than half its parts (a measurement that cannot be right).
  StepModel(const ModelProfile& model, const LoopTimes& loop, double slowdown = 1.0);

  StepTimes at(int64_t batch) const;
  const ModelProfile& model() const { return model_; }
  const LoopTimes& loop() const { return loop_; }
  double excess_at(int64_t batch) const;  // the signed excess above, before slowdown

 private:
  double parts_at(double batch, StepTimes& t) const;  // fills t's parts, returns their sum
  const ModelProfile& model_;
  LoopTimes loop_;
  double slowdown_;
  std::vector<double> excess_points_;  // aligned with loop_.batches
};

// The parts of one step at batch b as measured (no loop, no slowdown): layers and loss linear in
// the batch with a proportional floor outside the measured range, optimizer and zero_grad and the
// host's issue times held outside it (docs/SIMULATOR.md "Compute at any batch size").
StepTimes step_parts(const ModelProfile& model, double batch);

// The fused iteration the profile measured beside the parts (ModelProfile::iteration_s), as a loop.
LoopTimes fused_loop(const ModelProfile& model);

}  // namespace trainsim::train
