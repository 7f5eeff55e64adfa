#include "profiler/h2d.h"

#include <torch/torch.h>

namespace trainsim::measure::profiler {

CopyProfile measure_h2d(const Device& device, const std::vector<int64_t>& sizes,
                        const Repetition& rep) {
  CopyProfile profile;
  profile.applicable = device.is_cuda();
  if (!profile.applicable) return profile;
  const auto device_bytes =
      torch::TensorOptions().dtype(torch::kUInt8).device(device.torch_device());
  for (const bool pinned : {true, false}) {
    const auto host_bytes = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(pinned);
    for (int64_t bytes : sizes) {
      torch::Tensor src = torch::empty({bytes}, host_bytes);
      src.random_(0, 256);  // random bytes rather than untouched (possibly unmapped) pages
      torch::Tensor dst = torch::empty({bytes}, device_bytes);
      // non_blocking only makes a difference (an async DMA) from pinned memory; from pageable
      // memory the driver stages through its own pinned buffer either way.
      const double seconds =
          median_seconds(device, rep, nullptr, [&] { dst.copy_(src, /*non_blocking=*/pinned); });
      (pinned ? profile.pinned : profile.pageable).push_back({static_cast<double>(bytes), seconds});
    }
  }
  return profile;
}

}  // namespace trainsim::measure::profiler
