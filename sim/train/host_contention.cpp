#include "train/host_contention.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace trainsim::train {
namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

}  // namespace

HostContention host_contention(const Profile& profile, const ModelProfile& model, int ranks) {
  HostContention out;
  if (profile.machine.device_kind != "cpu" || ranks < 2) return out;
  // Points of ranks that each had cores of their own (all of them when the core count is unknown).
  const int threads = std::max(1, profile.machine.threads);
  const int fit = profile.machine.cpu_cores > 0 ? std::max(1, profile.machine.cpu_cores / threads)
                                                : std::numeric_limits<int>::max();
  std::vector<ContentionPoint> points;
  for (const ContentionPoint& p : model.host_contention) {
    if (p.ranks <= fit) points.push_back(p);
  }
  if (points.empty() || (points.size() == 1 && points.front().ranks == 1)) {
    out.notes.push_back("cpu profile without host_contention: ranks assumed not to slow each other");
    return out;
  }
  // load_profile guarantees points[0] is the ranks-1 reference; a hand-built profile may not.
  if (points.front().ranks != 1) {
    out.notes.push_back("cpu profile's host_contention lacks the 1-rank reference: ranks assumed "
                        "not to slow each other");
    return out;
  }
  const double solo_s = points.front().iteration_s;
  const auto ratio = [&](const ContentionPoint& p) { return p.iteration_s / solo_s; };
  const ContentionPoint& last = points.back();
  const double n = ranks;
  const char* how = "measured";
  if (ranks >= last.ranks) {
    out.slowdown = ratio(last);
    if (ranks > last.ranks) {
      how = "extrapolated";
      out.notes.push_back(format("host contention measured up to %.0f ranks; %.0f-rank runs use "
                                 "%.0f-rank slowdown",
                                 last.ranks, n, last.ranks));
    }
  } else {
    for (std::size_t i = 1; i < points.size(); ++i) {
      const ContentionPoint& hi = points[i];
      if (ranks > hi.ranks) continue;
      const ContentionPoint& lo = points[i - 1];
      // r(N) = r(lo) + (r(hi) - r(lo)) (N - lo) / (hi - lo)
      const double w = (n - lo.ranks) / static_cast<double>(hi.ranks - lo.ranks);
      out.slowdown = ratio(lo) + (ratio(hi) - ratio(lo)) * w;
      if (ranks != hi.ranks) how = "interpolated";
      break;
    }
  }
  out.notes.push_back(format("cpu host contention: %.0f ranks run compute %.2fx slower than 1 (", n,
                             out.slowdown) +
                      how + format(" at batch %.0f)", static_cast<double>(last.batch)));
  return out;
}

}  // namespace trainsim::train
