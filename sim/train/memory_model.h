#pragma once
// Peak memory of one model replica at any batch size, and what it takes to fit.

#include <cstdint>

#include "format/profile.h"

namespace trainsim::train {

// static(bytes) = parameters + gradients + SGD momentum + buffers = 3 * param_bytes + buffers.
// Activations (everything else that grows with the batch, plus any constant the measurement
// includes, e.g. a process's baseline RSS) are fitted to the measured peaks:
//   y_i = peak_memory_bytes_i - static, a least-squares line y = c0 + c1 * b over the measured
//   batches; with one measured batch, proportional: y = y_1 * b / b_1.
// replica_peak(b) = static + max(0, c0 + c1 * b).
class MemoryModel {
 public:
  enum class Peak {
    kSteady,  // steady_peak_memory_bytes where measured, else peak_memory_bytes
    kFirst,   // peak_memory_bytes: the first iteration's, autotuning workspaces included
  };
  // Throws std::invalid_argument when the peaks used are not aligned with batches.
  explicit MemoryModel(const ModelProfile& model, Peak peak = Peak::kSteady);

  double static_bytes() const { return static_bytes_; }
  double replica_peak_bytes(int64_t batch) const;
  bool measured() const { return measured_; }  // false: no peaks measured, static only
  bool steady() const { return steady_; }      // the steady-state peaks were used

 private:
  double static_bytes_ = 0;
  double intercept_ = 0;  // c0
  double slope_ = 0;      // c1, bytes per sample
  bool measured_ = false;
  bool steady_ = false;
};

// fits = peak <= device memory (when known, > 0) and, when the profile saw an out-of-memory at
// batch oom_batch, batch < oom_batch.
bool fits_in_memory(double peak_bytes, double device_memory_bytes, int64_t batch,
                    const ModelProfile& model);

}  // namespace trainsim::train
