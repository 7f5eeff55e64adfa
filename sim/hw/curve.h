#pragma once
// A measured time-vs-bytes curve (a collective on n ranks, or a host-to-device copy) and the
// straight-line fit t = a + b*S that the alpha-beta model is built from.

#include <vector>

#include "format/profile.h"

namespace trainsim::hw {

// t(S) = intercept + slope * S  (seconds, bytes).
struct LinearFit {
  double intercept_s = 0;
  double slope_s_per_byte = 0;
  double at(double bytes) const { return intercept_s + slope_s_per_byte * bytes; }
};

// Least-squares fit of t = a + b*S over the points with bytes > 0 and time > 0, minimising the
// RELATIVE residuals sum(((a + b*S_i) - t_i) / t_i)^2: a plain fit would be decided by the largest
// messages alone and leave the latency a (which the small messages measure) to chance. Solved
// with Eigen (QR). Guards, so that the result is always a usable cost model: a < 0 is refitted
// with a = 0 (b = sum(w S t) / sum(w S^2), w = 1/t^2); fewer than two distinct sizes, or b <= 0,
// gives the proportional model a = 0, b = t/S of the largest point. Throws std::invalid_argument
// when no point has bytes > 0 and time > 0.
LinearFit fit_time_vs_bytes(const std::vector<CurvePoint>& points);

// Interpolation of a measured curve:
//  - between measured points: piecewise linear in log-log space,
//      log t = log t_i + (log S - log S_i) / (log S_i+1 - log S_i) * (log t_i+1 - log t_i),
//    so a curve that is a power law between two points is followed exactly (a segment touching
//    a zero byte count or a zero time, where logarithms do not exist, is linear instead); every
//    measured point is hit exactly;
//  - beyond the ends: continued from the end point with the fit's slope b (t = t_n + b (S - S_n)
//    above, t = max(0, t_1 - b (S_1 - S)) below), so the curve stays continuous and grows with
//    the fitted bandwidth (b = 0 when no point can be fitted: held flat);
//  - S <= 0: 0 (no bytes, nothing to move).
class MeasuredCurve {
 public:
  // Throws std::invalid_argument for no points, bytes not strictly ascending, or a negative or
  // non-finite value.
  explicit MeasuredCurve(std::vector<CurvePoint> points);

  double time_at(double bytes) const;
  const LinearFit& fit() const { return fit_; }
  const std::vector<CurvePoint>& points() const { return points_; }

 private:
  std::vector<CurvePoint> points_;
  LinearFit fit_;
};

}  // namespace trainsim::hw
