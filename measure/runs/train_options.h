#pragma once
// Flags of `measure train` and of its rank processes (`measure worker train ...`), parsed with
// Boost.Program_options into one plain struct. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/lr_rule.h"
#include "format/memory_format.h"
#include "format/precision.h"
#include "usage_error.h"  // UsageError: main prints `error: <what>` and exits 2

namespace trainsim::measure {

struct TrainOptions {
  std::string strategy = "ddp";  // "ddp" | "dp"
  int gpus = 1;                  // ranks (ddp) or devices (dp)
  int64_t batch_per_gpu = 128;
  int workers = 2;                       // loader worker threads per process
  std::optional<int64_t> train_samples;  // first N samples of the training set; nullopt = all
  int epochs = 2;                        // the last one is timed, the earlier ones warm up
  std::string device;                    // "cpu" | "cuda"; empty = cuda when available, else cpu
  std::string data_dir;                  // real CIFAR-10 binaries; empty = synthetic images
  int threads = 0;  // intra-op threads per process; 0 = cores / processes (>= 1)
  uint64_t seed = 0;
  // Learning rate of the global batch B = gpus * batch_per_gpu from the base rate 0.1 at
  // lr_base_batch (measure/largebatch/lr_schedule.h); constant keeps the course's 0.1.
  LrRule lr_rule = LrRule::kConstant;
  int64_t lr_base_batch = 128;
  double warmup_epochs = 5;  // linear-warmup only
  Precision precision = Precision::kFp32;  // forward and loss under autocast for bf16-amp
  MemoryFormat memory_format = MemoryFormat::kNchw;  // the model and each batch channels-last, or not
  std::string runs_path;  // empty = reports/<machine>/runs.csv
  std::string machine;    // empty = default_machine_name(device)
  bool quiet = false;
  bool probe = true;      // time the calibration probe before the run (--no-probe: not)
  // Set only in rank processes (appended by launch_ranks).
  int rank = -1;
  int world_size = 0;
  std::string store_dir;
};

// Processes the run uses: gpus for ddp (one per rank), 1 for dp.
int processes_of(const TrainOptions& options);
// Intra-op threads per process when --threads is not given: max(1, cores / processes).
int default_threads(int cores, int processes);

// Parses `train ...` (args[0] is the subcommand name and is skipped) and validates the flags
// that need no device: throws UsageError. Returns nullopt after printing help for --help.
std::optional<TrainOptions> parse_train_options(const std::vector<std::string>& args);
// Parses the rank process's flags: the same set plus --rank, --world-size and --store (required).
TrainOptions parse_worker_options(const std::vector<std::string>& args);

// The flags that make a rank process run exactly `options` (without --rank/--world-size/--store,
// which launch_ranks appends). parse_worker_options(to_worker_args(o) + rank flags) == o.
std::vector<std::string> to_worker_args(const TrainOptions& options);

// The help text of `measure train`.
std::string train_help();

}  // namespace trainsim::measure
