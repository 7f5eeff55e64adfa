#pragma once
// The pace probe (measure baseline --pace-probe-at; docs/LARGE_BATCH.md, "The pace probe"): how many
// of the baseline's steps a step at a larger batch and lr is worth, read from the baseline's own
// state. From the state, `steps` steps at ratio x the batch and lr_ratio x the lr (each pair in
// turn) against the baseline's batch and lr continued for K, 2K, 4K, ... n K steps (n = the largest
// of each pair's max(ratio, min(16, ratio x lr_ratio))); every arm cooled `cool_steps` steps at
// `cool` x the lr at the baseline's batch (the same cooling batches for every arm of a draw) and
// read in training mode on a fixed set of training images, BatchNorm over each slice of the
// baseline's BatchNorm batch. A branch's gain is where the continued baseline's cooled losses
// fall to its own (stats/pace_probe.h). Each draw has its own batches; the continued baseline is
// shared by a draw's pairs. The run goes on exactly as without the probe: its weights, BatchNorm
// buffers and momentum are restored, and the probe reads its batches from its own loaders.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "data/image_set.h"
#include "format/profile.h"
#include "largebatch/pace_probe_options.h"
#include "largebatch/state_probes.h"
#include "models/staged.h"

namespace trainsim::measure {

// The run at the probed state, as the probe uses it.
struct PaceProbeRun {
  models::StagedModel* model = nullptr;
  const std::vector<torch::Tensor>* params = nullptr;
  const std::vector<torch::Tensor>* buffers = nullptr;  // BatchNorm's running statistics
  torch::optim::SGD* optimizer = nullptr;
  const data::ImageSet* train_set = nullptr;
  torch::Device device = torch::Device(torch::kCPU);
  int64_t batch = 0;          // B_0
  int64_t micro_batches = 1;  // each step's BatchNorm slices, as the run's; the fixed set is read over
                              // slices of its B_small, batch / micro_batches
  int workers = 0;
  uint64_t seed = 0;
};

// One reading per pair at the state after `step` steps and `examples` examples, the baseline's lr
// there `lr`; progress on stderr unless `quiet`. Throws std::invalid_argument where a branch's
// batch exceeds the training set (measure baseline refuses such pairs before it trains).
std::vector<PaceProbeReading> pace_probe(const PaceProbeRun& run, const PaceProbeOptions& options,
                                         const ProbeSet& fixed, int64_t step, double examples, double lr,
                                         bool quiet);

}  // namespace trainsim::measure
