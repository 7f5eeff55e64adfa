#pragma once
// What `measure baseline`'s probes of the training state share (the BatchNorm probe, the pace
// probe): a fixed set of training images, its training-mode loss, the optimiser's lr.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "data/image_set.h"
#include "data/loader.h"
#include "models/staged.h"

namespace trainsim::measure {

void set_learning_rate(torch::optim::SGD& optimizer, double lr);

// A set read in order as it is, batch_size images at a time: no shuffling, no augmentation, no workers.
data::LoaderOptions in_order(int64_t batch_size);

// A probe's fixed images as the training steps see them (normalised, unaugmented).
struct ProbeSet {
  torch::Tensor images;
  torch::Tensor labels;
};

// The first n images of `train_set` on `device`.
ProbeSet probe_set(const data::ImageSet& train_set, int64_t n, const torch::Device& device);

// The training-mode mean loss of the probe set at each BatchNorm batch of `batches` (consecutive
// slices of that many images, each normalised by its own statistics; every one divides the probe
// set's size), forward passes only; `buffers` (BatchNorm's running statistics and counters)
// restored after, so the training run goes on as without the probe.
std::vector<double> batchnorm_probe(models::StagedModel& model, const std::vector<torch::Tensor>& buffers,
                                    const ProbeSet& probe, const std::vector<int64_t>& batches);

// The model's BatchNorm2d layers.
int64_t batchnorm_layers(models::StagedModel& model);

// `evaluate()` with BatchNorm's running statistics estimated again on the weights as they are
// ("precise BatchNorm"): every BatchNorm's statistics reset, then the plain average (momentum none)
// of the statistics of `fixed`'s consecutive whole slices of `micro` images in training mode,
// forward passes only. `buffers` and every BatchNorm's momentum are put back after, so the run
// goes on as without it. Throws std::invalid_argument where the model has no BatchNorm or `fixed`
// holds fewer than `micro` images.
double with_recomputed_statistics(models::StagedModel& model, const std::vector<torch::Tensor>& buffers,
                                  const ProbeSet& fixed, int64_t micro, const std::function<double()>& evaluate);

}  // namespace trainsim::measure
