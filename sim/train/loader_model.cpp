#include "train/loader_model.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

namespace trainsim::train {

LoaderProfile loader_at_batch(const LoaderProfile& loader, int64_t batch, std::string* note) {
  if (loader.at_batches.empty() || batch <= 0) return loader;
  LoaderProfile out = loader;
  out.batch = batch;
  out.at_batches.clear();
  int64_t lo_used = 0, hi_used = 0;  // the measured batches the rates came from (equal: one)
  for (LoaderPoint& point : out.points) {
    // (batch, seconds per sample) wherever this worker count was measured, ascending in batch.
    std::vector<std::pair<int64_t, double>> at = {{loader.batch, 1 / point.samples_per_s}};
    for (const LoaderAtBatch& other : loader.at_batches) {
      for (const LoaderPoint& p : other.points) {
        if (p.workers == point.workers) at.push_back({other.batch, 1 / p.samples_per_s});
      }
    }
    std::sort(at.begin(), at.end());
    double per_sample = 0;
    int64_t lo = 0, hi = 0;
    if (batch <= at.front().first) {
      per_sample = at.front().second;
      lo = hi = at.front().first;
    } else if (batch >= at.back().first) {
      per_sample = at.back().second;
      lo = hi = at.back().first;
    } else {
      std::size_t i = 1;
      while (at[i].first < batch) ++i;
      const auto& [b0, t0] = at[i - 1];
      const auto& [b1, t1] = at[i];
      const double u = (1.0 / batch - 1.0 / b0) / (1.0 / b1 - 1.0 / b0);
      per_sample = t0 + u * (t1 - t0);
      lo = b0;
      hi = b1;
      if (b1 == batch) lo = b1;
    }
    point.samples_per_s = 1 / per_sample;
    lo_used = lo;
    hi_used = hi;
  }
  if (note != nullptr) {
    char text[240];
    if (lo_used == hi_used && lo_used == batch) {
      std::snprintf(text, sizeof text, "loader: rates measured at batch %lld", static_cast<long long>(batch));
    } else if (lo_used == hi_used) {
      std::snprintf(text, sizeof text, "loader: rates at batch %lld held at the nearest measured batch, %lld",
                    static_cast<long long>(batch), static_cast<long long>(lo_used));
    } else {
      std::snprintf(text, sizeof text,
                    "loader: rates at batch %lld interpolated between the measured batches %lld and %lld "
                    "(time per sample linear in 1/batch)",
                    static_cast<long long>(batch), static_cast<long long>(lo_used), static_cast<long long>(hi_used));
    }
    *note = text;
  }
  return out;
}

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
