#include "profiler/loader_bench.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "data/loader.h"

namespace trainsim::measure::profiler {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Runs one epoch to its end.
EpochTiming timed_epoch(data::DataLoader& loader, int64_t epoch) {
  EpochTiming t;
  const auto t0 = Clock::now();
  loader.start_epoch(epoch);
  auto batch = loader.next();
  const auto t1 = Clock::now();
  if (batch) t.first_batch_samples = batch->labels.size(0);
  while ((batch = loader.next())) t.rest_samples += batch->labels.size(0);
  t.first_batch_s = seconds(t0, t1);
  t.rest_s = seconds(t1, Clock::now());
  return t;
}

}  // namespace

LoaderProfile measure_loader(const data::ImageSet& set, const std::vector<int>& worker_counts,
                             const LoaderBenchOptions& options,
                             const std::function<void(const LoaderPoint&)>& on_point) {
  if (options.samples < 1 || options.samples > set.size()) {
    throw std::invalid_argument("measure_loader: " + std::to_string(options.samples) +
                                " samples asked of a set of " + std::to_string(set.size()));
  }
  if (options.samples <= options.batch) {
    throw std::invalid_argument("measure_loader: " + std::to_string(options.samples) + " samples are one batch of " +
                                std::to_string(options.batch) + ": the steady rate needs at least two batches");
  }
  LoaderProfile profile;
  profile.data = set.synthetic ? "synthetic" : "cifar10";
  profile.batch = options.batch;
  for (int workers : worker_counts) {
    data::LoaderOptions lo;
    lo.batch_size = options.batch;
    lo.workers = workers;
    lo.shuffle = true;
    lo.augment = true;
    lo.seed = options.seed;
    lo.limit = options.samples;
    data::DataLoader loader(set, lo);
    int64_t epoch = 0;
    for (int i = 0; i < options.warmup_epochs; ++i) timed_epoch(loader, epoch++);
    std::vector<EpochTiming> epochs;
    for (int i = 0; i < std::max(options.epochs, 1); ++i) epochs.push_back(timed_epoch(loader, epoch++));
    const LoaderPoint point = loader_point(workers, epochs);
    profile.points.push_back(point);
    if (on_point) on_point(point);
  }
  return profile;
}

}  // namespace trainsim::measure::profiler
