#include "stats/pace_probe.h"

#include <cmath>
#include <stdexcept>

namespace trainsim {

std::optional<double> gain_from_readings(const std::vector<double>& counts, const std::vector<double>& values,
                                         double target, double steps) {
  if (counts.size() != values.size() || counts.size() < 2) {
    throw std::invalid_argument("gain_from_readings: needs two or more readings, one value per count");
  }
  if (!(steps > 0)) throw std::invalid_argument("gain_from_readings: steps must be > 0");
  for (size_t k = 0; k < counts.size(); ++k) {
    if (!(counts[k] > 0) || (k > 0 && !(counts[k] > counts[k - 1]))) {
      throw std::invalid_argument("gain_from_readings: counts must be > 0 and strictly ascending");
    }
  }
  if (!(target < values[0])) return std::nullopt;
  for (size_t k = 1; k < counts.size(); ++k) {
    if (values[k] <= target) {
      const double f = (values[k - 1] - target) / (values[k - 1] - values[k]);
      return std::exp(std::log(counts[k - 1]) + f * (std::log(counts[k]) - std::log(counts[k - 1]))) / steps;
    }
  }
  return std::nullopt;
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (const double v : values) {
    if (!(v > 0)) throw std::invalid_argument("geometric_mean: values must be > 0");
    sum += std::log(v);
  }
  return std::exp(sum / static_cast<double>(values.size()));
}

double step_equation_gain(double alpha, double nu, double ratio, double lr_ratio) {
  if (!(alpha >= 0 && nu >= 0 && alpha + nu < 2) || !(ratio > 0) || !(lr_ratio > 0)) {
    throw std::invalid_argument("step_equation_gain: needs alpha, nu >= 0, alpha + nu < 2, ratio and lr_ratio > 0");
  }
  return lr_ratio * (1 - lr_ratio * (alpha + nu / ratio) / 2) / (1 - (alpha + nu) / 2);
}

std::optional<StepEquationCoefficients> solve_step_equation(double ratio1, double lr_ratio1, double gain1,
                                                            double ratio2, double lr_ratio2, double gain2) {
  // With D = 1 - (alpha + nu) / 2, each gain g at (r, p) reads p^2/2 alpha + p^2/(2r) nu + g D = p,
  // and alpha + nu + 2 D = 2: three linear equations in (alpha, nu, D), solved by Cramer's rule.
  const double a[3][3] = {{lr_ratio1 * lr_ratio1 / 2, lr_ratio1 * lr_ratio1 / (2 * ratio1), gain1},
                          {lr_ratio2 * lr_ratio2 / 2, lr_ratio2 * lr_ratio2 / (2 * ratio2), gain2},
                          {1, 1, 2}};
  const double b[3] = {lr_ratio1, lr_ratio2, 2};
  const auto det = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double d = det(a);
  if (!std::isfinite(d) || std::abs(d) < 1e-12) return std::nullopt;
  double x[3];
  for (int c = 0; c < 3; ++c) {
    double m[3][3];
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) m[i][j] = j == c ? b[i] : a[i][j];
    }
    x[c] = det(m) / d;
  }
  const StepEquationCoefficients out{x[0], x[1]};
  if (!(out.alpha > 0 && out.nu >= 0 && out.x0() < 2)) return std::nullopt;
  return out;
}

}  // namespace trainsim
