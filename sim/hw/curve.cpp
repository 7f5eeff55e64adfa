#include "hw/curve.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace trainsim::hw {
namespace {

bool fittable(const CurvePoint& p) { return p.bytes > 0 && p.time_s > 0; }

LinearFit proportional(const CurvePoint& largest) {
  return LinearFit{0.0, largest.time_s / largest.bytes};
}

}  // namespace

LinearFit fit_time_vs_bytes(const std::vector<CurvePoint>& all_points) {
  std::vector<CurvePoint> points;
  for (const CurvePoint& p : all_points) {
    if (fittable(p)) points.push_back(p);
  }
  if (points.empty()) {
    throw std::invalid_argument("no curve point with bytes > 0 and time > 0 to fit");
  }
  const auto [min_it, max_it] = std::minmax_element(
      points.begin(), points.end(),
      [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
  if (min_it->bytes == max_it->bytes) return proportional(*max_it);

  // Rows scaled by w_i^(1/2) = 1/t_i; bytes in MiB keep the two columns on similar scales.
  constexpr double kMiB = 1024.0 * 1024.0;
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd rhs(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CurvePoint& p = points[static_cast<std::size_t>(i)];
    a(i, 0) = 1.0 / p.time_s;
    a(i, 1) = (p.bytes / kMiB) / p.time_s;
    rhs(i) = 1.0;
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(rhs);
  LinearFit fit{x(0), x(1) / kMiB};
  if (fit.intercept_s < 0) {
    // Through the origin: minimise sum(w (b S - t)^2), w = 1/t^2  =>  b = sum(w S t) / sum(w S^2).
    double num = 0;
    double den = 0;
    for (const CurvePoint& p : points) {
      const double w = 1.0 / (p.time_s * p.time_s);
      num += w * p.bytes * p.time_s;
      den += w * p.bytes * p.bytes;
    }
    fit = LinearFit{0.0, num / den};
  }
  if (!(fit.slope_s_per_byte > 0)) return proportional(*max_it);
  return fit;
}

MeasuredCurve::MeasuredCurve(std::vector<CurvePoint> points) : points_(std::move(points)) {
  if (points_.empty()) throw std::invalid_argument("measured curve without points");
  bool any_fittable = false;
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const CurvePoint& p = points_[i];
    if (!std::isfinite(p.bytes) || !std::isfinite(p.time_s) || p.bytes < 0 || p.time_s < 0) {
      throw std::invalid_argument("measured curve: bytes and times must be finite and >= 0");
    }
    if (i > 0 && !(p.bytes > points_[i - 1].bytes)) {
      throw std::invalid_argument("measured curve: bytes must be strictly ascending");
    }
    any_fittable |= fittable(p);
  }
  if (any_fittable) fit_ = fit_time_vs_bytes(points_);
}

double MeasuredCurve::time_at(double bytes) const {
  if (!(bytes > 0)) return 0.0;
  const CurvePoint& first = points_.front();
  const CurvePoint& last = points_.back();
  const double b = fit_.slope_s_per_byte;
  if (bytes >= last.bytes) return last.time_s + b * (bytes - last.bytes);
  if (bytes <= first.bytes) return std::max(0.0, first.time_s - b * (first.bytes - bytes));
  // First point with bytes > S; S lies in [lo, hi).
  const auto hi = std::upper_bound(
      points_.begin(), points_.end(), bytes,
      [](double s, const CurvePoint& p) { return s < p.bytes; });
  const CurvePoint& upper = *hi;
  const CurvePoint& lower = *(hi - 1);
  if (bytes == lower.bytes) return lower.time_s;  // measured points are returned as measured
  if (!fittable(lower) || !fittable(upper)) {
    return lower.time_s + (upper.time_s - lower.time_s) * (bytes - lower.bytes) /
                              (upper.bytes - lower.bytes);
  }
  const double f = (std::log(bytes) - std::log(lower.bytes)) /
                   (std::log(upper.bytes) - std::log(lower.bytes));
  return std::exp(std::log(lower.time_s) + f * (std::log(upper.time_s) - std::log(lower.time_s)));
}

}  // namespace trainsim::hw
