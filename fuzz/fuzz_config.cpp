// libFuzzer target: the sweep config reader (load_sweep_config) and the sweeps derived from a
// config (large batch, scale-out, the GPU-count check). A clean rejection is an InputError; any
// other exception, a crash, a hang or a sanitizer report is a finding.

#include <cstddef>
#include <cstdint>

#include "format/errors.h"
#include "io/config.h"
#include "memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace trainsim;
  try {
    const SweepConfig config = load_sweep_config(fuzz::as_file(data, size));
    for (const int gpus : config.gpus) (void)gpu_count_problem(config.topology, gpus);
    (void)large_batch_sweep(config);
    (void)scale_out_sweep(config);
  } catch (const InputError&) {
  }
  return 0;
}
