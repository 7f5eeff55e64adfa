#include "largebatch/mixture_task.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "data/splitmix64.h"

namespace trainsim::measure {
namespace {

constexpr double kTwoPi = 6.283185307179586;

// Uniform in (0, 1]: the top 53 bits, shifted off zero so that log() is finite.
double uniform_open(uint64_t& state) {
  return (static_cast<double>(data::splitmix64_next(state) >> 11) + 1.0) * 0x1.0p-53;
}

// Box-Muller: two independent N(0, 1) values from two uniforms,
//   r = sqrt(-2 ln u1), (r cos(2 pi u2), r sin(2 pi u2)).
void normal_pair(uint64_t& state, double& a, double& b) {
  const double r = std::sqrt(-2.0 * std::log(uniform_open(state)));
  const double angle = kTwoPi * uniform_open(state);
  a = r * std::cos(angle);
  b = r * std::sin(angle);
}

// Fills `out` with independent N(0, 1) values.
void fill_normal(uint64_t& state, double* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 2) {
    double a = 0;
    double b = 0;
    normal_pair(state, a, b);
    out[i] = a;
    if (i + 1 < n) out[i + 1] = b;
  }
}

// The class means come from a stream number no caller uses for samples.
constexpr uint64_t kMeansStream = ~uint64_t{0};

}  // namespace

MixtureTask::MixtureTask(const MixtureSpec& spec) : spec_(spec) {
  if (spec.dims < 1 || spec.classes < 2 || !std::isfinite(spec.separation) || spec.separation < 0) {
    throw std::invalid_argument("MixtureTask: need dims >= 1, classes >= 2 and a finite separation >= 0");
  }
  uint64_t state = data::mix_seed(spec.seed, kMeansStream);
  const double scale = spec.separation / std::sqrt(static_cast<double>(spec.dims));  // E|mu_c| ~ separation
  for (int64_t c = 0; c < spec.classes; ++c) {
    std::vector<double> mean(static_cast<size_t>(spec.dims));
    fill_normal(state, mean.data(), spec.dims);
    for (double& v : mean) v *= scale;
    means_.push_back(std::move(mean));
  }
}

void MixtureTask::sample(uint64_t stream, int64_t first, int64_t n, float* x, int64_t* y) const {
  if (first < 0 || n < 0) {
    throw std::invalid_argument("MixtureTask::sample: first " + std::to_string(first) + " and n " +
                                std::to_string(n) + " must be >= 0");
  }
  if (stream == kMeansStream) throw std::invalid_argument("MixtureTask::sample: stream ~0 draws the class means");
  const uint64_t stream_seed = data::mix_seed(spec_.seed, stream);
  std::vector<double> noise(static_cast<size_t>(spec_.dims));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t state = data::mix_seed(stream_seed, static_cast<uint64_t>(first + i));
    const int64_t label = static_cast<int64_t>(data::uniform_below(state, static_cast<uint64_t>(spec_.classes)));
    fill_normal(state, noise.data(), spec_.dims);
    const auto& mean = means_[static_cast<size_t>(label)];
    float* row = x + i * spec_.dims;
    for (int64_t d = 0; d < spec_.dims; ++d) {
      row[d] = static_cast<float>(mean[static_cast<size_t>(d)] + noise[static_cast<size_t>(d)]);
    }
    y[i] = label;
  }
}

double MixtureTask::bayes_loss(const float* x, const int64_t* y, int64_t n) const {
  if (n < 1) throw std::invalid_argument("MixtureTask::bayes_loss: need >= 1 sample");
  double total = 0;
  std::vector<double> half_sq(static_cast<size_t>(spec_.classes));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x + i * spec_.dims;
    for (int64_t c = 0; c < spec_.classes; ++c) {
      double sq = 0;
      for (int64_t d = 0; d < spec_.dims; ++d) {
        const double e = row[d] - means_[static_cast<size_t>(c)][static_cast<size_t>(d)];
        sq += e * e;
      }
      half_sq[static_cast<size_t>(c)] = 0.5 * sq;
    }
    // log sum_c exp(-h_c), stabilised by the smallest h
    const double smallest = *std::min_element(half_sq.begin(), half_sq.end());
    double sum = 0;
    for (double h : half_sq) sum += std::exp(smallest - h);
    total += half_sq[static_cast<size_t>(y[i])] - smallest + std::log(sum);
  }
  return total / static_cast<double>(n);
}

}  // namespace trainsim::measure
