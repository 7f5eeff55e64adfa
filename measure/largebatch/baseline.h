#pragma once
// `measure baseline` (issue 5): a baseline training run with the course's settings that records,
// per epoch, the mean training loss and accuracy, the test accuracy and the gradient noise scale
// (two-batch estimator: micro-batches on one device, per-rank vs all-reduced gradients under
// DDP), and writes them as the model's TrainingCurve into the profile. docs/LARGE_BATCH.md.

#include <functional>
#include <string>

#include "comm/communicator.h"
#include "data/cifar.h"
#include "format/profile.h"
#include "largebatch/baseline_options.h"

namespace trainsim::measure {

// Called after every finished epoch with the curve so far (on rank 0 only under DDP).
using EpochDone = std::function<void(const TrainingCurve& curve)>;

// Trains options.epochs epochs of options.model on `train_set` and returns the curve. One device
// when `communicator` is null: every step's gradient is the size-weighted mean of
// options.micro_batches micro-batch gradients (micro_batch_backward). DDP otherwise: this process
// is rank communicator->rank() of options.gpus, trains its DistributedSampler share under
// DistributedDataParallel (c10d::Reducer, runs/ddp.h), whose comm hook adds up |grad|^2 of this
// rank's own gradient before the all-reduce (B_small = the per-rank batch), and reads |grad|^2
// of the averaged gradient after backward (B_big = the global batch); the per-rank values are averaged over
// the ranks once per epoch. `test_set` (may be null on ranks other than 0) gives the test
// accuracy after each epoch (-1 without one). Throws std::runtime_error when an epoch ends with
// the |G|^2 or tr(Sigma) average not positive (noise dominates: the noise scale is not
// measurable yet).
TrainingCurve train_baseline(const BaselineOptions& options, const data::ImageSet& train_set,
                             const data::ImageSet* test_set, Communicator* communicator,
                             const EpochDone& epoch_done);

// Puts `curve` into `profile`, replacing the curve of the same model (a profile holds at most one
// per model) or appending it.
void put_training_curve(Profile& profile, const TrainingCurve& curve);

// `measure baseline` and its rank process `measure worker baseline`.
int baseline_main(int argc, char** argv);
int baseline_worker_main(int argc, char** argv);

}  // namespace trainsim::measure
