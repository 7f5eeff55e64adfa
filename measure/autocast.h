#pragma once
// A region of code run in a Precision, as Python's `with torch.autocast(device, dtype):` runs it:
// the device's autocast on with the precision's dtype, the cast cache cleared when the outermost
// region ends, the previous state restored. fp32 does nothing. Used around the forward and the
// loss only (PyTorch's recipe: backward runs outside, in the dtypes the forward saved). The state
// is the calling thread's: a thread the region starts does not inherit it.
// Header-only so that both the trainers (measure/runs) and the profiler use it.

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "format/precision.h"

namespace trainsim::measure {

class AutocastRegion {
 public:
  AutocastRegion(Precision precision, const torch::Device& device)
      : active_(precision != Precision::kFp32), type_(device.type()) {
    if (!active_) return;
    was_enabled_ = enabled();
    was_dtype_ = dtype();
    set(true, torch::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastRegion() {
    if (!active_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set(was_enabled_, was_dtype_);
  }
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  // LibTorch 2.4 made autocast's state per device type; 1.13 has a function per backend.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  bool enabled() const { return at::autocast::is_autocast_enabled(type_); }
  at::ScalarType dtype() const { return at::autocast::get_autocast_dtype(type_); }
  void set(bool on, at::ScalarType dtype) const {
    at::autocast::set_autocast_dtype(type_, dtype);
    at::autocast::set_autocast_enabled(type_, on);
  }
#else
  bool cuda() const { return type_ == torch::kCUDA; }
  bool enabled() const { return cuda() ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
  at::ScalarType dtype() const {
    return cuda() ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
  }
  void set(bool on, at::ScalarType dtype) const {
    if (cuda()) {
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(on);
    } else {
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(on);
    }
  }
#endif

  bool active_;
  torch::DeviceType type_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = torch::kBFloat16;
};

}  // namespace trainsim::measure
