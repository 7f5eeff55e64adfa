#include "train/loader_model.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>

namespace trainsim::train {

LoaderModel::LoaderModel(const LoaderProfile& profile) : profile_(profile) {
  const auto& pts = profile.points;
  if (pts.empty()) throw std::invalid_argument("loader profile has no points");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].workers < 0 || !(pts[i].samples_per_s > 0) ||
        (i > 0 && pts[i].workers <= pts[i - 1].workers)) {
      throw std::invalid_argument(
          "loader profile: worker counts must be ascending and rates positive");
    }
    best_samples_per_s_ = std::max(best_samples_per_s_, pts[i].samples_per_s);
  }
}

double LoaderModel::measured_or_scaled(int workers) const {
  const auto& pts = profile_.points;
  const double w = workers;
  if (workers > pts.back().workers) {
    const LoaderPoint& last = pts.back();
    const double per_worker = last.samples_per_s / std::max(1, last.workers);
    return std::min(w * per_worker, best_samples_per_s_);
  }
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].workers == workers) return pts[i].samples_per_s;
    if (pts[i].workers > workers) {
      if (i == 0) return w * pts[0].samples_per_s / pts[0].workers;  // pts[0].workers > w >= 1
      const LoaderPoint& lo = pts[i - 1];
      const LoaderPoint& hi = pts[i];
      return lo.samples_per_s +
             (hi.samples_per_s - lo.samples_per_s) * (w - lo.workers) / (hi.workers - lo.workers);
    }
  }
  return pts.back().samples_per_s;  // unreachable: workers <= last count is found above
}

double LoaderModel::samples_per_s(int workers) const {
  if (workers < 0) throw std::invalid_argument("negative loader worker count");
  if (workers == 0 && profile_.points.front().workers != 0) return measured_or_scaled(1);
  return measured_or_scaled(workers);
}

std::optional<double> LoaderModel::startup_s(int workers) const {
  const LoaderPoint* nearest = nullptr;
  for (const LoaderPoint& p : profile_.points) {
    if (p.workers < 1) continue;
    if (nearest == nullptr || std::abs(p.workers - workers) < std::abs(nearest->workers - workers)) {
      nearest = &p;
    }
  }
  if (nearest == nullptr) return std::nullopt;
  return nearest->startup_s;
}

std::string LoaderModel::note(int workers) const {
  const auto& pts = profile_.points;
  char text[200];
  if (workers == 0 && pts.front().workers != 0) {
    std::snprintf(text, sizeof text,
                  "loader: inline loading (0 workers) not measured; one worker's rate used "
                  "(%.0f samples/s)",
                  samples_per_s(0));
    return text;
  }
  if (workers > pts.back().workers) {
    std::snprintf(text, sizeof text,
                  "loader: %d workers beyond the measured %d: %d x the per-worker rate, capped at "
                  "the best measured %.0f samples/s -> %.0f samples/s",
                  workers, pts.back().workers, workers, best_samples_per_s_,
                  samples_per_s(workers));
    return text;
  }
  if (workers < pts.front().workers) {
    std::snprintf(text, sizeof text,
                  "loader: %d workers below the measured %d: per-worker rate scaled -> %.0f "
                  "samples/s",
                  workers, pts.front().workers, samples_per_s(workers));
    return text;
  }
  return "";
}

}  // namespace trainsim::train
