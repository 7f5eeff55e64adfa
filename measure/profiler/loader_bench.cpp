#include "profiler/loader_bench.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "data/loader.h"
#include "stats.h"

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

LoaderPoint loader_point(int workers, const std::vector<EpochTiming>& epochs) {
  if (epochs.empty()) throw std::invalid_argument("loader_point: no timed epochs");
  std::vector<double> rates;
  std::vector<double> firsts;
  for (const EpochTiming& e : epochs) {
    if (e.rest_samples < 1 || !(e.rest_s > 0)) {
      throw std::invalid_argument("loader_point: an epoch of one batch has no steady rate (use at least two batches)");
    }
    rates.push_back(static_cast<double>(e.rest_samples) / e.rest_s);
    firsts.push_back(e.first_batch_s);
  }
  LoaderPoint p;
  p.workers = workers;
  p.samples_per_s = median(rates);
  // One worker builds a whole batch at samples_per_s / workers.
  const double one_batch_s =
      static_cast<double>(epochs.front().first_batch_samples) * std::max(workers, 1) / p.samples_per_s;
  p.startup_s = workers == 0 ? 0.0 : std::max(0.0, median(firsts) - one_batch_s);
  return p;
}

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
