#include "stats/noise_scale.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace trainsim {

namespace {

// A quantity whose mean over B examples is E x_B = m + v / B, measured at two batch sizes: the
// unbiased m ~ (B_big x_big - B_small x_small) / (B_big - B_small) and v ~ (x_small - x_big) /
// (1/B_small - 1/B_big) (|G|^2 and tr(Sigma) for squared norms, G^T H G and tr(H Sigma) for
// curvatures). `who` names the caller in the error for batch sizes not 1 <= small < big.
NoiseEstimate split_two_batches(double small, double big, int64_t small_batch, int64_t big_batch, const char* who) {
  if (small_batch < 1 || big_batch <= small_batch) {
    throw std::invalid_argument(std::string(who) + ": need 1 <= small_batch < big_batch, got " +
                                std::to_string(small_batch) + " and " + std::to_string(big_batch));
  }
  const double b_small = static_cast<double>(small_batch);
  const double b_big = static_cast<double>(big_batch);
  NoiseEstimate estimate;
  estimate.grad_sq_norm = (b_big * big - b_small * small) / (b_big - b_small);
  estimate.trace_sigma = (small - big) / (1.0 / b_small - 1.0 / b_big);
  return estimate;
}

}  // namespace

NoiseEstimate two_batch_estimate(double small_sq_norm, double big_sq_norm, int64_t small_batch,
                                 int64_t big_batch) {
  if (!std::isfinite(small_sq_norm) || !std::isfinite(big_sq_norm) || small_sq_norm < 0 ||
      big_sq_norm < 0) {
    throw std::invalid_argument("two_batch_estimate: squared norms must be finite and >= 0");
  }
  return split_two_batches(small_sq_norm, big_sq_norm, small_batch, big_batch, "two_batch_estimate");
}

double InverseScale::next(double sq_norm) {
  if (!started_ && sq_norm > 0) weight_ = 1 / sq_norm;  // the first step: its own
  started_ = true;
  const double weight = weight_;
  if (sq_norm > 0) weight_ = 1 / sq_norm;
  return weight;
}

GradientNoiseEstimator::GradientNoiseEstimator(double ema_decay) : decay_(ema_decay) {
  if (!(ema_decay >= 0 && ema_decay < 1)) {
    throw std::invalid_argument("GradientNoiseEstimator: ema_decay must be in [0, 1), got " +
                                std::to_string(ema_decay));
  }
}

void GradientNoiseEstimator::add(double small_sq_norm, double big_sq_norm, int64_t small_batch,
                                 int64_t big_batch) {
  const NoiseEstimate step = two_batch_estimate(small_sq_norm, big_sq_norm, small_batch, big_batch);
  // avg <- decay * avg + (1 - decay) * w * x; weight <- decay * weight + (1 - decay) * w
  const double w = scale_.next(big_sq_norm);
  grad_sq_norm_sum_ = decay_ * grad_sq_norm_sum_ + (1 - decay_) * w * step.grad_sq_norm;
  trace_sigma_sum_ = decay_ * trace_sigma_sum_ + (1 - decay_) * w * step.trace_sigma;
  weight_ = decay_ * weight_ + (1 - decay_) * w;
  ++steps_;
}

double GradientNoiseEstimator::grad_sq_norm() const { return steps_ == 0 ? 0 : grad_sq_norm_sum_ / weight_; }

double GradientNoiseEstimator::trace_sigma() const { return steps_ == 0 ? 0 : trace_sigma_sum_ / weight_; }

std::optional<double> GradientNoiseEstimator::noise_scale() const {
  if (steps_ == 0 || grad_sq_norm_sum_ <= 0 || trace_sigma_sum_ <= 0) return std::nullopt;
  // The normalisations cancel in the ratio.
  return trace_sigma_sum_ / grad_sq_norm_sum_;
}

CurvatureEstimator::CurvatureEstimator(double ema_decay) : decay_(ema_decay) {
  if (!(ema_decay >= 0 && ema_decay < 1)) {
    throw std::invalid_argument("CurvatureEstimator: ema_decay must be in [0, 1), got " + std::to_string(ema_decay));
  }
}

void CurvatureEstimator::add(double grad_sq_norm, double grad_hessian_grad) { absorb(grad_sq_norm, grad_hessian_grad); }

double CurvatureEstimator::absorb(double grad_sq_norm, double grad_hessian_grad) {
  if (!std::isfinite(grad_sq_norm) || grad_sq_norm < 0 || !std::isfinite(grad_hessian_grad)) {
    throw std::invalid_argument("CurvatureEstimator: |g|^2 must be finite and >= 0 and g^T H g finite");
  }
  const double w = scale_.next(grad_sq_norm);
  grad_sq_norm_sum_ = decay_ * grad_sq_norm_sum_ + (1 - decay_) * w * grad_sq_norm;
  curvature_sum_ = decay_ * curvature_sum_ + (1 - decay_) * w * grad_hessian_grad;
  ++measurements_;
  return w;
}

void CurvatureEstimator::add(double grad_sq_norm, double grad_hessian_grad, double small_grad_hessian_grad,
                             int64_t small_batch, int64_t big_batch) {
  if (!std::isfinite(small_grad_hessian_grad)) {
    throw std::invalid_argument("CurvatureEstimator: g_small^T H g_small must be finite");
  }
  // G^T H G and tr(H Sigma), split as |G|^2 and tr(Sigma) are (checked before absorb changes anything).
  const NoiseEstimate split =
      split_two_batches(small_grad_hessian_grad, grad_hessian_grad, small_batch, big_batch, "CurvatureEstimator");
  const double w = absorb(grad_sq_norm, grad_hessian_grad);
  mean_curvature_sum_ = decay_ * mean_curvature_sum_ + (1 - decay_) * w * split.grad_sq_norm;
  trace_h_sigma_sum_ = decay_ * trace_h_sigma_sum_ + (1 - decay_) * w * split.trace_sigma;
  const double k = (1 - decay_) * w, sq_decay = decay_ * decay_;
  const double a = split.trace_sigma, d = split.grad_sq_norm;
  noise_weight_sum_ = decay_ * noise_weight_sum_ + k;
  noise_weight_sq_sum_ = sq_decay * noise_weight_sq_sum_ + k * k;
  aa_sum_ = sq_decay * aa_sum_ + k * k * a * a;
  ad_sum_ = sq_decay * ad_sum_ + k * k * a * d;
  dd_sum_ = sq_decay * dd_sum_ + k * k * d * d;
  ++noise_measurements_;
}

std::optional<double> CurvatureEstimator::noise_scale_standard_error() const {
  const std::optional<double> r = noise_scale();
  if (!r) return std::nullopt;
  // Two measurements (n <= 2, equal only for equal weights) leave at most one degree of freedom, and
  // where one outweighs the other the residuals all but vanish: no standard error to trust.
  const double n = noise_weight_sum_ * noise_weight_sum_ / noise_weight_sq_sum_;
  if (!(n > 2)) return std::nullopt;
  // sum k^2 (a - R d)^2, which rounding may put a hair below 0 where every a = R d.
  const double residual = std::max(0.0, aa_sum_ - 2 * *r * ad_sum_ + *r * *r * dd_sum_);
  return std::sqrt(n / (n - 1) * residual) / mean_curvature_sum_;
}

std::optional<double> CurvatureEstimator::noise_scale() const {
  if (noise_measurements_ == 0 || mean_curvature_sum_ <= 0 || trace_h_sigma_sum_ <= 0) return std::nullopt;
  return trace_h_sigma_sum_ / mean_curvature_sum_;  // the normalisations cancel
}

std::optional<double> CurvatureEstimator::max_lr() const {
  if (measurements_ == 0 || curvature_sum_ <= 0 || grad_sq_norm_sum_ <= 0) return std::nullopt;
  return grad_sq_norm_sum_ / curvature_sum_;  // the normalisations cancel
}

}  // namespace trainsim
