#pragma once
// Public face of the training simulator: one configuration in, one epoch's prediction out.
// Everything below this header (event engine, resources, op graphs) is an implementation detail.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/config.h"
#include "format/profile.h"

namespace trainsim {

// One configuration of the sweep: its cell (strategy, GPU count, batch per GPU) in a run setting.
struct RunSpec : RunSetting {
  Strategy strategy = Strategy::kDdp;
  int gpus = 1;
  int64_t batch_per_gpu = 128;
};

// The configuration (strategy, gpus, batch_per_gpu) in the config's run setting.
RunSpec config_spec(const SweepConfig& config, Strategy strategy, int gpus, int64_t batch_per_gpu);

struct SimOptions {
  bool exact = false;         // simulate every iteration instead of extrapolating the steady state
  int trace_iterations = 0;   // record ops of the first N iterations into SimResult::trace
};

// One op as it ran on a resource, for the timeline (Chrome trace / Perfetto).
struct OpRecord {
  std::string resource;  // track, e.g. "gpu0.compute", "gpu1.comm", "loader.worker0", "host"
  std::string name;      // e.g. "fwd layer2.0", "bwd layer4.1", "allreduce bucket 0", "h2d"
  std::string category;  // "compute", "comm", "copy", "loader", "host"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int iteration = 0;
};

// An interval whose upper bound is more than this many times its value (a linearised interval
// that wide says nothing more): the observations do not determine the prediction (docs/FIT.md).
inline constexpr double kUndeterminedSpread = 10;

// Metric definitions (README "Metrics"): all times are seconds of one epoch.
struct SimResult {
  RunSpec spec;
  // false: the configuration cannot run on the profiled kind of machine at all (e.g. DataParallel
  // over several devices on a CPU); `not_runnable` says why and no time is predicted.
  bool runnable = true;
  std::string not_runnable;
  int64_t global_batch = 0;     // gpus * batch_per_gpu (capped at train_samples when larger)
  int64_t iterations = 0;       // ceil(train_samples / global_batch)
  bool fits = true;             // false: predicted peak memory exceeds device memory (OOM)
  double peak_mem_bytes = 0;    // predicted peak on the most loaded device (GPU 0 for dp)
  // The same at the first iteration (autotuning workspaces included) where the profile measured
  // the steady-state peak separately (then peak_mem_bytes is the steady one); 0: not told apart.
  double first_iteration_peak_mem_bytes = 0;
  // A fitted device's 68% interval of epoch_s (docs/FIT.md "Intervals"); 0: none (a measured
  // profile's prediction, or a configuration too large to be given one).
  double epoch_s_lo = 0;
  double epoch_s_hi = 0;
  double device_memory_bytes = 0;

  double epoch_s = 0;           // wall time of the epoch
  double train_s = 0;           // epoch_s minus time the training loop waited for the loader
  double compute_s = 0;         // busy time of device 0's compute stream + H2D copies
  double comm_s = 0;            // busy time of device 0's communication stream
  double exposed_comm_s = 0;    // communication time not overlapped by device 0's compute
  double loader_stall_s = 0;    // time the training loop waited for a batch
  double iteration_s = 0;       // steady-state iteration period
  double comm_bytes_per_rank = 0;  // bytes each rank sends per epoch (ring: 2(n-1)/n * S per all-reduce)
  double busbw_gbs = 0;         // nccl-tests bus bandwidth of the epoch's collectives, GB/s (1e9)
  double sync_bn_s = 0;         // part of comm_s in SyncBatchNorm collectives (all of it blocks compute)
  double test_s = 0;            // the test pass after the epoch (RunSpec::test_pass); not in epoch_s

  bool extrapolated = false;    // steady state detected and extrapolated
  int64_t simulated_iterations = 0;
  std::vector<std::string> notes;  // modelling caveats, e.g. "all_reduce on 8 ranks: ring fit"
  std::vector<OpRecord> trace;     // filled when SimOptions::trace_iterations > 0
};

// Simulates one epoch of `spec` for model `model` described and timed in `profile`.
// A configuration that does not fit in memory returns fits = false with times still predicted;
// one that cannot run on the profiled machine returns runnable = false and no times.
// Throws std::invalid_argument if the profile lacks what the spec needs (callers validate first).
SimResult simulate_run(const Profile& profile, const std::string& model, const RunSpec& spec,
                       const SimOptions& options = {});

}  // namespace trainsim
