#pragma once
// The pace probe's arithmetic (docs/LARGE_BATCH.md, "The pace probe"), torch-free: a branch's gain
// read off the continued baseline's readings, and the plain step equation's two coefficients solved
// from two branches' gains.

#include <optional>
#include <vector>

namespace trainsim {

// The baseline steps at which `values` (each read after the matching `counts` steps, counts strictly
// ascending and > 0) first fall to `target`, log-linear in the steps between readings, per branch
// step (`steps` > 0); nullopt where target is at or above the first reading or below every one.
// Throws std::invalid_argument for sizes that differ, fewer than two readings or bad counts.
std::optional<double> gain_from_readings(const std::vector<double>& counts, const std::vector<double>& values,
                                         double target, double steps);

// exp(mean(log v)); nullopt for an empty list. Throws std::invalid_argument for a value <= 0.
std::optional<double> geometric_mean(const std::vector<double>& values);

// The plain step equation's gain per step of `ratio` x the batch at `lr_ratio` x the lr over the
// baseline's: rho (1 - rho (alpha + nu / r) / 2) / (1 - (alpha + nu) / 2), alpha = lr G^T H G / |G|^2
// (the curvature's part of the baseline's x_0) and nu = lr tr(H Sigma) / (B_0 |G|^2) (the noise's),
// x_0 = alpha + nu. Throws std::invalid_argument outside alpha, nu >= 0, alpha + nu < 2, ratio and
// lr_ratio > 0.
double step_equation_gain(double alpha, double nu, double ratio, double lr_ratio);

struct StepEquationCoefficients {
  double alpha = 0;
  double nu = 0;
  double x0() const { return alpha + nu; }
  // B_n = B_0 nu / alpha: the noise scale these coefficients imply at the baseline's batch B_0.
  double noise_scale(double base_batch) const { return base_batch * nu / alpha; }
};
// The coefficients at which step_equation_gain gives `gain1` at (ratio1, lr_ratio1) and `gain2` at
// (ratio2, lr_ratio2); nullopt where the two pairs do not separate them (a singular system) or the
// solution is outside alpha > 0, nu >= 0, alpha + nu < 2.
std::optional<StepEquationCoefficients> solve_step_equation(double ratio1, double lr_ratio1, double gain1,
                                                            double ratio2, double lr_ratio2, double gain2);

}  // namespace trainsim
