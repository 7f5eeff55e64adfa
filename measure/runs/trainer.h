#pragma once
// The training loop of one process of `measure train`: a DDP rank (with a communicator) or the
// single DataParallel process (without). ResNet-18 CIFAR, SGD lr 0.1 momentum 0.9 wd 5e-4,
// cross-entropy, the course's augmentation; every epoch is timed, the last one is reported.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "data/cifar.h"
#include "comm/communicator.h"
#include "runs/train_options.h"

namespace trainsim::measure {

struct EpochMeasurement {
  double epoch_s = 0;        // steady clock, loader start to the last step (CUDA synchronised)
  double loader_wait_s = 0;  // time spent inside loader.next()
  int64_t iterations = 0;    // optimizer steps
  int64_t samples = 0;       // samples this process trained on
  double loss_sum = 0;       // sum over those samples of the cross-entropy loss
  int64_t correct = 0;       // of those samples, classified right (argmax of the output)
};

// The first `n` images of `set` (a --train-samples subset). Throws std::invalid_argument when
// the set has fewer than n images.
data::ImageSet first_samples(const data::ImageSet& set, int64_t n);
// The images of `set` at `indices`, in that order (one DDP rank's share of an epoch).
data::ImageSet select_samples(const data::ImageSet& set, const std::vector<int64_t>& indices);

// Runs options.epochs epochs on `train_set` and returns the measurement of each epoch.
// ddp (communicator given): this process is rank communicator->rank(); its samples per epoch are
// distributed_sampler_indices(...), it trains on device cuda:rank (or cpu) and averages
// gradients with c10d::Reducer (DistributedDataParallel, runs/ddp.h); every iteration is one
// TrainStep (runs/train_step.h). dp (communicator null): one process, the loader shuffles the set,
// batches of gpus * batch_per_gpu, DataParallel (runs/data_parallel.h, as PyTorch's
// nn.DataParallel) over cuda:0..gpus-1 when gpus >= 2. Progress on stderr when `show_progress`.
std::vector<EpochMeasurement> train_epochs(const TrainOptions& options,
                                           const data::ImageSet& train_set,
                                           Communicator* communicator, bool show_progress);

}  // namespace trainsim::measure
