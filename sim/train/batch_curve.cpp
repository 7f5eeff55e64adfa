#include "train/batch_curve.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::train {

double interpolate_in_batch(const std::vector<int64_t>& batches, const std::vector<double>& values,
                            double batch, BatchExtrapolation mode) {
  if (batches.empty() || batches.size() != values.size()) {
    throw std::invalid_argument("batch curve: " + std::to_string(values.size()) +
                                " values for " + std::to_string(batches.size()) + " batch sizes");
  }
  for (std::size_t i = 0; i < batches.size(); ++i) {
    if (batches[i] <= 0 || (i > 0 && batches[i] <= batches[i - 1])) {
      throw std::invalid_argument("batch curve: batch sizes must be positive and ascending");
    }
  }
  const std::size_t n = batches.size();
  const auto b_at = [&](std::size_t i) { return static_cast<double>(batches[i]); };
  const auto line = [&](std::size_t i, std::size_t j) {  // through points i and j, at `batch`
    return values[i] + (values[j] - values[i]) * (batch - b_at(i)) / (b_at(j) - b_at(i));
  };
  double v;
  if (batch >= b_at(0) && batch <= b_at(n - 1)) {
    const auto hi = std::lower_bound(batches.begin(), batches.end(), batch,
                                     [](int64_t b, double x) { return static_cast<double>(b) < x; });
    const std::size_t j = static_cast<std::size_t>(hi - batches.begin());
    v = (b_at(j) == batch) ? values[j] : line(j - 1, j);
  } else {
    const std::size_t end = batch < b_at(0) ? 0 : n - 1;
    if (mode == BatchExtrapolation::kHoldNearest) {
      v = values[end];
    } else {
      const double floor = values[end] * batch / b_at(end);
      if (n == 1) {
        v = floor;
      } else {
        v = std::max(floor, end == 0 ? line(0, 1) : line(n - 2, n - 1));
      }
    }
  }
  return std::max(0.0, v);
}

}  // namespace trainsim::train
