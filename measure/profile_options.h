#pragma once
// Flags of `measure [profile]` and the measurement plan they resolve to on a given device.
// Torch-free (the device is described by plain values).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "format/memory_format.h"
#include "format/precision.h"

namespace trainsim::measure {

// What the user asked for; unset optionals take device-dependent defaults (resolve_plan).
struct ProfileOptions {
  std::string device;                    // "", "cpu", "cuda"
  std::string machine;                   // "" = default_machine_name
  std::string out;                       // "" = reports/<machine>/profile.yaml
  std::vector<std::string> models;       // empty = default
  std::vector<int64_t> batches;          // empty = the x4 grid up to max_batch
  std::optional<int64_t> max_batch;
  std::optional<int> warmup;
  std::optional<int> repeats;
  std::optional<int> threads;
  std::optional<int> ranks;              // the largest rank count for collectives and host contention
  std::vector<int64_t> contention_batches;  // batches of the host contention case (empty: the grid's)
  std::optional<int64_t> collectives_max_bytes;
  std::optional<int> collective_repeats;
  std::optional<int64_t> loader_samples;
  std::string data_dir;                  // "" = synthetic images
  std::string nccl_tests_log;            // "" = measure all_reduce too
  std::string pytorch = "auto";          // --pytorch: auto, off or the Python interpreter
  std::string pytorch_script;            // "" = TRAINSIM_SOURCE_DIR/measure/pytorch/profile_torch.py
  std::set<std::string> skip;            // subset of compute, contention, h2d, loader, collectives, fork, gil
  std::optional<bool> cudnn_benchmark;   // --cudnn-benchmark (cuda only; unset = on, as the course sets it)
  Precision precision = Precision::kFp32;  // --precision: the numeric mode of every training-step timing
  MemoryFormat memory_format = MemoryFormat::kNchw;  // --memory-format: the layout of their 4-D tensors
  bool quick = false;
  bool resume = false;
  uint64_t seed = 0;
  std::string command;                   // the command line, for the profile
};

// Parses the flags of `measure [profile]`. args[0] is the program or subcommand name.
// Returns nullopt when --help was given (the help is printed to stdout). Throws UsageError.
std::optional<ProfileOptions> parse_profile_options(const std::vector<std::string>& args);
std::string profile_help();

// The hardware the plan is for.
struct PlanTarget {
  bool cuda = false;     // measuring on a CUDA device
  int cuda_devices = 0;  // visible GPUs
  int cpu_cores = 1;
};

// Everything measure will do, with the defaults filled in.
struct ProfilePlan {
  std::vector<std::string> models;
  std::vector<int64_t> batches;        // ascending
  int64_t max_batch = 0;
  int warmup = 0;
  int repeats = 0;
  int threads = 1;
  bool compute = true, h2d = true, loader = true, collectives = true;
  bool contention = true;              // host contention (cpu only)
  std::vector<int64_t> contention_batches;  // ascending; default: every batch of the grid
  int contention_ranks = 0;            // processes 1..contention_ranks (cpu: --ranks)
  std::vector<int> rank_counts;        // ascending; cuda: 1..N (N <= 4), cpu: 2..ranks
  std::vector<int64_t> collective_sizes;
  int collective_warmup = 0;
  int collective_repeats = 0;
  std::vector<int64_t> h2d_sizes;
  std::vector<int> loader_workers;
  int64_t loader_batch = 128;
  // PyTorch's DataLoader is measured at these batches too (its rate per sample depends on the
  // batch): the grid's batches other than loader_batch, up to kMaxLoaderAtBatch; none when quick.
  std::vector<int64_t> loader_at_batches;
  int64_t loader_samples = 0;
  int loader_epochs = 0;
  // The PyTorch section times what starting the DataLoader's workers costs a training process
  // (profile_torch.py's fork measurement, a fresh training process per batch and rank count) and
  // the GIL's serialisation of DataParallel's replica threads; neither with --quick, each not with
  // --skip fork or gil.
  bool pytorch_fork = true;
  bool pytorch_gil = true;
};

// The largest batch PyTorch's DataLoader is measured at by default (ProfilePlan::loader_at_batches):
// past it the simulator holds the rate of the largest measured batch.
constexpr int64_t kMaxLoaderAtBatch = 2048;

// Defaults: models resnet18-cifar and resnet18-imagenet (quick: resnet18-cifar); batches 32,
// 128, 512, ... (x4) up to max_batch (cuda 8192, cpu 512; quick: cpu 4,8, cuda 32,128,512);
// warmup/repeats cuda 5/20, cpu 2/5 (quick 1/3); threads = cores; collectives 1 KiB to 256 MiB
// (quick 16 MiB), 20 repeats (quick 5), ranks cuda min(GPUs, 8) from 1, cpu 2 (at most 8);
// host contention (cpu only) for 1..ranks processes at every grid batch (quick: the smallest);
// H2D 4 KiB to 256 MiB; loader batch 128 over 12,800 samples per epoch (quick 2,560), workers
// 0, 1, 2, 4, ..., cores; the pytorch section's fork and GIL timings (not quick). Throws
// UsageError for flags that do not fit the target (e.g. --ranks 8 on 2 GPUs).
ProfilePlan resolve_plan(const ProfileOptions& options, const PlanTarget& target);

}  // namespace trainsim::measure
