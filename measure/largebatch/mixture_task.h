#pragma once
// A synthetic, labelled classification task for the large-batch validation (issue 5): a mixture
// of C isotropic Gaussians in D dimensions. Class means mu_c = separation * z_c / sqrt(D) with
// z_c ~ N(0, I); a sample is a class y uniform in 0..C-1 and x = mu_y + N(0, I). Samples come
// from numbered streams (training, held-out), and sample i of stream s depends only on
// (seed, s, i): a run at any batch size reads the same sequence, and every platform generates the
// same numbers (SplitMix64 and Box-Muller, no implementation-defined <random> distributions).
// Torch-free.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainsim::measure {

struct MixtureSpec {
  int64_t dims = 32;        // D
  int64_t classes = 10;     // C
  double separation = 3.0;  // the expected norm of a class mean (noise has unit variance per axis)
  uint64_t seed = 0;        // draws the class means and every stream
};

class MixtureTask {
 public:
  // Throws std::invalid_argument unless dims >= 1, classes >= 2 and separation is finite and >= 0.
  explicit MixtureTask(const MixtureSpec& spec);

  const MixtureSpec& spec() const { return spec_; }
  const std::vector<double>& class_mean(int64_t c) const { return means_.at(static_cast<size_t>(c)); }

  // Samples first .. first + n - 1 of `stream` (any number but ~0, which draws the means): inputs row-major [n, D] into `x` (n * D floats),
  // labels into `y` (n values in 0..C-1). Throws std::invalid_argument for first < 0 or n < 0.
  void sample(uint64_t stream, int64_t first, int64_t n, float* x, int64_t* y) const;

  // The mean cross-entropy of the Bayes-optimal classifier on n samples (x row-major [n, D], y):
  // with equal priors and unit covariance, p(c | x) = softmax_c(-|x - mu_c|^2 / 2), so
  //   loss = mean_i [ |x_i - mu_{y_i}|^2 / 2 + log sum_c exp(-|x_i - mu_c|^2 / 2) ].
  // No model can do better in expectation: the floor of the task's loss.
  double bayes_loss(const float* x, const int64_t* y, int64_t n) const;

 private:
  MixtureSpec spec_;
  std::vector<std::vector<double>> means_;
};

}  // namespace trainsim::measure
