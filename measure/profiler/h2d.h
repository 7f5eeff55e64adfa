#pragma once
// Host-to-device copy time vs bytes, from pinned and from pageable host memory (GPU only).

#include <cstdint>
#include <vector>

#include "device.h"
#include "format/profile.h"

namespace trainsim::measure::profiler {

// On a GPU: one point per size in `sizes` for each of pinned (non_blocking copy) and pageable
// host buffers of random bytes, each the median of CUDA-event timings after warm-up;
// applicable = true. On CPU there is no copy: applicable = false, no points.
CopyProfile measure_h2d(const Device& device, const std::vector<int64_t>& sizes,
                        const Repetition& rep);

}  // namespace trainsim::measure::profiler
