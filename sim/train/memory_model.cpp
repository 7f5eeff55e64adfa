#include "train/memory_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::train {

MemoryModel::MemoryModel(const ModelProfile& model, Peak peak) {
  double buffers = 0;
  for (const LayerProfile& l : model.layers) buffers += static_cast<double>(l.buffer_bytes);
  static_bytes_ = 3.0 * static_cast<double>(model.param_bytes()) + buffers;

  steady_ = peak == Peak::kSteady && !model.steady_peak_memory_bytes.empty();
  const auto& peaks = steady_ ? model.steady_peak_memory_bytes : model.peak_memory_bytes;
  if (peaks.empty()) return;
  if (peaks.size() != model.batches.size()) {
    throw std::invalid_argument("model " + model.name + ": " +
                                (steady_ ? "steady_peak_memory_bytes" : "peak_memory_bytes") +
                                " not aligned with batches");
  }
  measured_ = true;
  const std::size_t n = peaks.size();
  if (n == 1) {
    slope_ = (peaks[0] - static_bytes_) / static_cast<double>(model.batches[0]);
    return;
  }
  // Ordinary least squares: c1 = sum((b - mean_b)(y - mean_y)) / sum((b - mean_b)^2),
  // c0 = mean_y - c1 * mean_b.
  double mean_b = 0;
  double mean_y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mean_b += static_cast<double>(model.batches[i]);
    mean_y += peaks[i] - static_bytes_;
  }
  mean_b /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double sxy = 0;
  double sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double db = static_cast<double>(model.batches[i]) - mean_b;
    sxy += db * (peaks[i] - static_bytes_ - mean_y);
    sxx += db * db;
  }
  if (!(sxx > 0)) throw std::invalid_argument("model " + model.name + ": repeated batch sizes");
  slope_ = sxy / sxx;
  intercept_ = mean_y - slope_ * mean_b;
}

double MemoryModel::replica_peak_bytes(int64_t batch) const {
  return static_bytes_ + std::max(0.0, intercept_ + slope_ * static_cast<double>(batch));
}

bool fits_in_memory(double peak_bytes, double device_memory_bytes, int64_t batch,
                    const ModelProfile& model) {
  if (device_memory_bytes > 0 && peak_bytes > device_memory_bytes) return false;
  return !model.oom_batch || batch < *model.oom_batch;
}

}  // namespace trainsim::train
