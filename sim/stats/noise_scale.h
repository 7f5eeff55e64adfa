#pragma once
// The gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018), estimated from
// squared gradient norms at two batch sizes (McCandlish et al. 2018, Appendix A.1;
// docs/LARGE_BATCH.md "The gradient noise scale"). Torch-free and dependency-free: `measure` feeds
// it real gradient norms, the tests synthetic ones.

#include <cstdint>
#include <optional>

namespace trainsim {

// One step's unbiased estimates of |G|^2 and tr(Sigma). Since E|G_B|^2 = |G|^2 + tr(Sigma)/B for
// the mean gradient of B independent examples:
//   |G|^2     ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
//   tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)
// Either may come out negative on one step (they are differences of noisy norms); only their
// averages are meaningful.
struct NoiseEstimate {
  double grad_sq_norm = 0;  // |G|^2
  double trace_sigma = 0;   // tr(Sigma)
};

// small_sq_norm: |G_small|^2, the squared norm of a mean gradient over small_batch examples
// (under data parallelism: a rank's local gradient before the all-reduce; averaging |g_r|^2 over
// the ranks first gives a better estimate). big_sq_norm: |G_big|^2 over big_batch examples (the
// all-reduced global gradient). Throws std::invalid_argument unless 1 <= small_batch < big_batch
// and both norms are finite and >= 0.
NoiseEstimate two_batch_estimate(double small_sq_norm, double big_sq_norm, int64_t small_batch,
                                 int64_t big_batch);

// The weight of a step in a scale-weighted average: 1 / the previous step's squared gradient norm
// (the first step: its own). A norm of 0 keeps the last positive one's weight (1 before any).
class InverseScale {
 public:
  // The weight for a step whose own squared norm is `sq_norm`; then remembers sq_norm for the next.
  double next(double sq_norm);

 private:
  bool started_ = false;
  double weight_ = 1;  // 1 / the last positive squared norm
};

// Exponential moving averages of the two per-step estimates, kept separately and divided only
// when asked (the ratio of averages is far less noisy than an average of ratios).
//
// Scale-weighted: each step enters both averages with the weight 1 / |G_big|^2 of the step before
// it (the first step: its own). A plain average is dominated by its largest terms, and the
// gradients' size can fall by orders of magnitude within its memory: at an lr at the edge of
// stability the first few steps of training overshoot (fashion-cnn's steps 2 to 5 average a loss
// of 25), and their squared norms then outweigh the next several hundred steps, so the ratio
// reports the overshoot's noise scale long after it. Dividing by the size the gradients had
// just before makes every step count alike (the ratio tr(Sigma) / |G|^2 itself is scale-free). The
// weight is the previous step's, independent of this step's batch, so a step's estimates stay
// unbiased; with gradients of a steady size the weights are about equal and the averages are the
// plain ones.
class GradientNoiseEstimator {
 public:
  // ema_decay in [0, 1): avg <- decay * avg + (1 - decay) * w * x, with the weights' own average
  // kept alike; the averages are divided by it (a bias correction as in Adam, and the weights'
  // normalisation), so they are the weighted mean of the steps seen so far from the first step on.
  // About 2 / (1 - decay) steps carry the average: 0.99 ~ 200 steps.
  // Throws std::invalid_argument outside [0, 1).
  explicit GradientNoiseEstimator(double ema_decay = 0.99);

  // Adds one step (arguments as in two_batch_estimate, which validates them).
  void add(double small_sq_norm, double big_sq_norm, int64_t small_batch, int64_t big_batch);

  int64_t steps() const { return steps_; }
  double ema_decay() const { return decay_; }
  // The bias-corrected moving averages; 0 before the first step.
  double grad_sq_norm() const;
  double trace_sigma() const;
  // B_simple = avg tr(Sigma) / avg |G|^2, in examples. nullopt before the first step or while the
  // averages are not both positive (noise still dominates the |G|^2 estimate: feed more steps).
  std::optional<double> noise_scale() const;

 private:
  double decay_;
  int64_t steps_ = 0;
  double weight_ = 0;            // EMA of the weights: the bias correction and normalisation
  double grad_sq_norm_sum_ = 0;  // uncorrected EMA of w |G|^2
  double trace_sigma_sum_ = 0;   // uncorrected EMA of w tr(Sigma)
  InverseScale scale_;           // w: 1 / the previous step's |G_big|^2
};

// The largest useful learning rate eps_max = |G|^2 / (G^T H G) (McCandlish et al. 2018, eq. 2.6:
// the best lr at an infinite batch), from moving averages of the batch gradient g the optimiser
// used and its curvature g^T H g (H measured on another batch, `measure baseline`). Since
// E|g|^2 = |G|^2 + tr(Sigma)/B and E[g^T H g] = G^T H G + tr(H Sigma)/B, the ratio of the averages
// is eps_max (1 + B_simple/B) / (1 + B_noise/B): eps_max itself where B_noise = B_simple, which is
// the large-batch model's assumption already (docs/LARGE_BATCH.md). Kept like
// GradientNoiseEstimator: two bias-corrected averages, each measurement weighted by 1 / the
// previous measurement's |g|^2, divided only when asked.
class CurvatureEstimator {
 public:
  // ema_decay in [0, 1) per added measurement. Throws std::invalid_argument outside it.
  explicit CurvatureEstimator(double ema_decay = 0.99);

  // One measurement: |g|^2 and g^T H g (which may be negative where the loss is locally concave).
  // Throws std::invalid_argument unless both are finite and |g|^2 >= 0.
  void add(double grad_sq_norm, double grad_hessian_grad);
  // The same, with the curvature along a micro-batch's gradient g_s too (small_batch examples of
  // the big_batch whose mean gradient is g, H the same): since E g_B^T H g_B = G^T H G +
  // tr(H Sigma)/B at both sizes, the two-batch estimates of G^T H G and tr(H Sigma) (as
  // two_batch_estimate's) go into averages of their own, for noise_scale(). Throws as add() does,
  // for a small curvature that is not finite, or unless 1 <= small_batch < big_batch.
  void add(double grad_sq_norm, double grad_hessian_grad, double small_grad_hessian_grad, int64_t small_batch,
           int64_t big_batch);

  int64_t measurements() const { return measurements_; }
  // eps_max = avg |g|^2 / avg g^T H g; nullopt before the first measurement or while the curvature
  // average is not positive (no finite best lr along the gradient).
  std::optional<double> max_lr() const;
  // McCandlish's B_noise = tr(H Sigma) / G^T H G (the noise scale B_simple approximates, exact
  // where H is a multiple of the identity), from the measurements with a micro-batch's curvature;
  // nullopt before the first of them or while either average is not positive.
  std::optional<double> noise_scale() const;
  // The standard error of noise_scale(), in examples: the ratio of two weighted averages
  // R = sum k_i a_i / sum k_i d_i (a_i, d_i the measurements' tr(H Sigma) and G^T H G, k_i their
  // weights in the averages) linearised about R, Var R ~ sum k_i^2 (a_i - R d_i)^2 / (sum k_i d_i)^2,
  // with the small-sample factor n / (n - 1) for the averages' effective number of measurements
  // n = (sum k_i)^2 / sum k_i^2. nullopt where noise_scale() is, and while n <= 2 (fewer than three
  // measurements, or one outweighing the rest: its residual is ~0 and the rest say too little).
  std::optional<double> noise_scale_standard_error() const;

 private:
  // add()'s |g|^2 and g^T H g into their averages; returns the weight w they took.
  double absorb(double grad_sq_norm, double grad_hessian_grad);

  double decay_;
  int64_t measurements_ = 0;
  double grad_sq_norm_sum_ = 0;  // uncorrected EMA of w |g|^2
  double curvature_sum_ = 0;     // uncorrected EMA of w g^T H g
  int64_t noise_measurements_ = 0;
  double mean_curvature_sum_ = 0;   // uncorrected EMA of w G^T H G (two-batch estimate)
  double trace_h_sigma_sum_ = 0;    // uncorrected EMA of w tr(H Sigma) (two-batch estimate)
  // For the standard error: the sum of the noise measurements' weights k = (1 - decay) decay^age w
  // and the sums of k^2, k^2 a^2, k^2 a d and k^2 d^2 (a: tr(H Sigma), d: G^T H G).
  double noise_weight_sum_ = 0;
  double noise_weight_sq_sum_ = 0;
  double aa_sum_ = 0, ad_sum_ = 0, dd_sum_ = 0;
  InverseScale scale_;           // w: 1 / the previous measurement's |g|^2
};

}  // namespace trainsim
