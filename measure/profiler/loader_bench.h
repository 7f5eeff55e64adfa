#pragma once
// Data-loader throughput (augmentation + collation) per worker count on this machine's CPUs,
// with the project's DataLoader (measure/data/loader.h).

#include <cstdint>
#include <functional>
#include <vector>

#include "data/cifar.h"
#include "format/profile.h"

namespace trainsim::measure::profiler {

// 0, 1, 2, then doubling (4, 8, ...) up to `cores`, and `cores` itself: at least 0..2.
std::vector<int> loader_worker_counts(int cores);

struct LoaderBenchOptions {
  int64_t batch = 128;
  int64_t samples = 128 * 100;  // samples per timed epoch (the first `samples` of `set`)
  int warmup_epochs = 1;
  int epochs = 3;               // timed epochs; the median epoch time is used
  uint64_t seed = 0;
};

// One epoch of the loader, timed: from start_epoch (which starts the worker threads) to the
// first batch, and from there to the last batch.
struct EpochTiming {
  double first_batch_s = 0;
  int64_t first_batch_samples = 0;
  double rest_s = 0;
  int64_t rest_samples = 0;
};

// One point from the timed epochs of one worker count: samples_per_s = the median steady rate
// (rest_samples / rest_s, the first batch excluded); startup_s = what the first batch costs
// beyond building one batch with this many workers, max(0, median first_batch_s - first batch /
// (samples_per_s / workers)), and 0 for workers 0 (no workers to start). Throws
// std::invalid_argument for no epochs or an epoch without a second batch.
LoaderPoint loader_point(int workers, const std::vector<EpochTiming>& epochs);

// For each worker count: shuffled, augmented epochs over the first options.samples images of
// `set` (at least two batches), warm-up epochs then options.epochs timed ones, reduced by
// loader_point. Worker threads start in every epoch's start_epoch, as non-persistent workers do.
// `on_point` (may be empty) is called after each worker count. data = "synthetic" or "cifar10".
LoaderProfile measure_loader(const data::ImageSet& set, const std::vector<int>& worker_counts,
                             const LoaderBenchOptions& options,
                             const std::function<void(const LoaderPoint&)>& on_point);

}  // namespace trainsim::measure::profiler
