#include "train/host_contention.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "train/batch_curve.h"

namespace trainsim::train {
namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

// r(N) at one batch from its points (ranks ascending, the first ranks 1), and how it was found.
double ratio_at(const std::vector<ContentionPoint>& points, int ranks, const char*& how, int& held_at) {
  const double solo_s = points.front().iteration_s;
  const auto ratio = [&](const ContentionPoint& p) { return p.iteration_s / solo_s; };
  const ContentionPoint& last = points.back();
  if (ranks >= last.ranks) {
    if (ranks > last.ranks) {
      how = "extrapolated";
      held_at = last.ranks;
    }
    return ratio(last);
  }
  for (std::size_t i = 1; i < points.size(); ++i) {
    const ContentionPoint& hi = points[i];
    if (ranks > hi.ranks) continue;
    const ContentionPoint& lo = points[i - 1];
    if (ranks != hi.ranks) how = "interpolated";
    // r(N) = r(lo) + (r(hi) - r(lo)) (N - lo) / (hi - lo)
    const double w = (ranks - lo.ranks) / static_cast<double>(hi.ranks - lo.ranks);
    return ratio(lo) + (ratio(hi) - ratio(lo)) * w;
  }
  return 1.0;
}

}  // namespace

HostContention host_contention(const Profile& profile, const ModelProfile& model, int ranks, int64_t batch) {
  HostContention out;
  if (profile.machine.device_kind != "cpu" || ranks < 2) return out;
  // Points of ranks that each had cores of their own (all of them when the core count is unknown).
  const int threads = std::max(1, profile.machine.threads);
  const int fit = profile.machine.cpu_cores > 0 ? std::max(1, profile.machine.cpu_cores / threads)
                                                : std::numeric_limits<int>::max();
  std::map<int64_t, std::vector<ContentionPoint>> by_batch;
  for (const ContentionPoint& p : model.host_contention) {
    if (p.ranks <= fit) by_batch[p.batch].push_back(p);
  }
  std::vector<int64_t> batches;
  std::vector<double> ratios;
  const char* how = "measured";
  int held_at = 0;
  for (const auto& [b, points] : by_batch) {
    // load_profile guarantees each batch starts with the ranks-1 reference; a hand-built profile may not.
    if (points.size() < 2 || points.front().ranks != 1) continue;
    batches.push_back(b);
    ratios.push_back(ratio_at(points, ranks, how, held_at));
  }
  if (batches.empty()) {
    out.notes.push_back("cpu profile without host_contention: ranks assumed not to slow each other");
    return out;
  }
  out.slowdown = interpolate_in_batch(batches, ratios, static_cast<double>(batch), BatchExtrapolation::kHoldNearest);
  if (out.slowdown < 1) {
    // A rank cannot run faster because others run beside it: a ratio below 1 is the noise of the
    // measurement.
    out.notes.push_back(format("host contention measured %.3fx at batch %.0f (below 1: measurement noise); "
                               "1 used",
                               out.slowdown, static_cast<double>(batch)));
    out.slowdown = 1;
    return out;
  }
  if (held_at > 0) {
    out.notes.push_back(format("host contention measured up to %.0f ranks; %.0f-rank runs use %.0f-rank slowdown",
                               held_at, ranks, held_at));
  }
  // Where the batch lies: a measured one, between two, or outside them (the nearest one's ratio).
  std::string where;
  if (batch < batches.front() || batch > batches.back()) {
    where = ", held from batch " + std::to_string(batch < batches.front() ? batches.front() : batches.back());
  } else if (std::find(batches.begin(), batches.end(), batch) == batches.end()) {
    where = ", between measured batches";
  }
  out.notes.push_back(format("cpu host contention: %.0f ranks run compute %.2fx slower than 1 at batch %.0f (",
                             ranks, out.slowdown, static_cast<double>(batch)) +
                      how + where + ")");
  return out;
}

}  // namespace trainsim::train
