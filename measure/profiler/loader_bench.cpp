#include "profiler/loader_bench.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "data/loader.h"
#include "stats.h"

namespace trainsim::measure::profiler {
namespace {

// Runs one epoch to its end; returns the seconds from start_epoch to the last batch.
double timed_epoch(data::DataLoader& loader, int64_t epoch) {
  const auto t0 = std::chrono::steady_clock::now();
  loader.start_epoch(epoch);
  while (loader.next()) {
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<int> loader_worker_counts(int cores) {
  std::vector<int> counts{0, 1, 2};
  for (int w = 4; w < cores; w *= 2) counts.push_back(w);
  if (cores > 2) counts.push_back(cores);
  return counts;
}

LoaderProfile measure_loader(const data::ImageSet& set, const std::vector<int>& worker_counts,
                             const LoaderBenchOptions& options,
                             const std::function<void(const LoaderPoint&)>& on_point) {
  if (options.samples < 1 || options.samples > set.size()) {
    throw std::invalid_argument("measure_loader: " + std::to_string(options.samples) +
                                " samples asked of a set of " + std::to_string(set.size()));
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
    std::vector<double> times;
    for (int i = 0; i < std::max(options.epochs, 1); ++i) times.push_back(timed_epoch(loader, epoch++));
    const LoaderPoint point{workers, static_cast<double>(loader.samples_per_epoch()) / median(times), std::nullopt};
    profile.points.push_back(point);
    if (on_point) on_point(point);
  }
  return profile;
}

}  // namespace trainsim::measure::profiler
