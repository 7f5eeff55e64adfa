#pragma once
// Small statistics helpers for timings. Torch-free.

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace trainsim::measure {

// Median: the middle value, or the mean of the two middle values for an even count.
inline double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

}  // namespace trainsim::measure
