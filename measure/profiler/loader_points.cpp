// The torch-free part of the loader benchmark (profiler/loader_bench.h): which worker counts to
// time, and one worker count's throughput and start-up from its timed epochs.
#include <algorithm>
#include <stdexcept>

#include "profiler/loader_bench.h"
#include "stats.h"

namespace trainsim::measure::profiler {

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

}  // namespace trainsim::measure::profiler
