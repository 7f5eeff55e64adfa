#include "profiler/probe.h"

#include <chrono>
#include <vector>

#include "models/describe.h"
#include "profiler/fused_iteration.h"
#include "stats.h"

namespace trainsim::measure::profiler {

double run_probe(const Device& device) {
  // Always fp32 and nchw: the probe is the machine's speed, compared across profiles and runs of
  // any precision and memory format.
  Device fp32 = device;
  fp32.precision = Precision::kFp32;
  fp32.memory_format = MemoryFormat::kNchw;
  FusedIteration step(models::describe_model(kProbeModel), kProbeBatch, fp32, /*seed=*/0);
  for (int i = 0; i < kProbeWarmup; ++i) step.run();
  std::vector<double> times;
  for (int i = 0; i < kProbeRepeats; ++i) {
    synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    step.run();
    synchronize(device);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(times);
}

}  // namespace trainsim::measure::profiler
