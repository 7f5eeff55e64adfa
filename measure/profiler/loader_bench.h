#pragma once
// Data-loader throughput (augmentation + collation) per worker count on this machine's CPUs,
// with the project's DataLoader (measure/data/loader.h).

#include <cstdint>
#include <functional>
#include <vector>

#include "data/cifar.h"
#include "io/profile.h"

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

// For each worker count: shuffled, augmented epochs over the first options.samples images of
// `set`; samples_per_s = samples per epoch / median epoch time (start_epoch to the last batch,
// so worker start-up and the pipeline fill are included as in real training).
// `on_point` (may be empty) is called after each worker count. data = "synthetic" or "cifar10".
LoaderProfile measure_loader(const data::ImageSet& set, const std::vector<int>& worker_counts,
                             const LoaderBenchOptions& options,
                             const std::function<void(const LoaderPoint&)>& on_point);

}  // namespace trainsim::measure::profiler
