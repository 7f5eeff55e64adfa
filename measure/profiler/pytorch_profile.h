#pragma once
// The profile's `pytorch:` section: `measure` runs the reference trainer's own profiler,
// measure/pytorch/profile_torch.py (docs/PYTORCH.md), with the profile's settings, and reads the JSON
// object it writes:
//   {"framework": "pytorch", "torch": .., "torchvision": .., "python": .., "device": ..,
//    "device_name": .., "threads": 1, "data": "synthetic", "probe_s": 0.91,
//    "loader": {"batch": 128, "points": [{"workers": 0, "samples_per_s": .., "first_batch_s": ..,
//               "startup_s": ..}, ...]},
//    "models": {"resnet18-cifar": {"batches": [..], "iteration_s": [..], "ddp_iteration_s": [..],
//               "oom_batch": null}}}
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/profile.h"

namespace trainsim::measure::profiler {

// What profile_torch.py is asked to measure.
struct PytorchRequest {
  std::string python;                // the interpreter
  std::string script;                // measure/pytorch/profile_torch.py
  std::string data_dir;              // CIFAR-10 binary files (real, or written by make-data)
  std::string device;                // "cpu" or "cuda"
  int threads = 1;
  std::vector<int64_t> batches;
  std::vector<std::string> models;
  // TorchScript modules as models (profile_torch.py --script NAME=FILE): {name, file}; name them in
  // `models` too.
  std::vector<std::pair<std::string, std::string>> scripts;
  int warmup = 1;
  int repeats = 3;
  int64_t loader_batch = 128;
  std::vector<int64_t> loader_at_batches;  // the loader measured at these batches too (at_batches)
  bool loader_only = false;          // --loader-only: the loader alone (no models, no fork)
  std::vector<int> loader_workers;
  // Training processes starting their workers at once, one fork measurement per count; empty:
  // --no-fork, none.
  std::vector<int> fork_ranks = {1};
  bool gil = true;                   // false: --no-gil, no GIL measurement
  bool cudnn_benchmark = true;       // cuda: torch.backends.cudnn.benchmark
  std::string precision = "fp32";    // --precision (format/precision.h's name)
  std::string memory_format = "nchw";  // --memory-format (format/memory_format.h's name)
  std::string out;                   // the JSON file profile_torch.py writes
};

// PYTHON SCRIPT --data DIR --device D --threads T --batches B1,B2 --models M --warmup W
// --repeats R --loader-batch B[,B2,...] --loader-workers W1,W2 --fork-ranks K1,K2 (or --no-fork)
// [--no-gil] --out FILE, on cuda
// --cudnn-benchmark on|off, and --script NAME=FILE per TorchScript module.
std::vector<std::string> pytorch_profile_command(const PytorchRequest& request);

// Parses profile_torch.py's JSON. Bad content throws trainsim::InputError naming `name` (the file) and
// the key, e.g. "out.json: loader.points[1].samples_per_s: expected a number > 0, found "fast"".
PytorchProfile parse_pytorch_profile(const std::string& text, const std::string& name);
PytorchProfile read_pytorch_profile(const std::string& path);

// The source tree's measure/pytorch/profile_torch.py: the default script for `measure --pytorch` and
// `measure torchscript --pytorch`.
std::string default_pytorch_script();

// True when `python` runs and imports torch and torchvision (its output is discarded).
bool python_has_torch(const std::string& python);

// --pytorch: "off" -> nullopt. "auto" -> the first of /usr/bin/python3 and python3 (on PATH) for
// which python_has_torch holds, else nullopt with `note` saying why nothing is measured. Any
// other value is the interpreter to use: it is returned when python_has_torch holds for it, else
// UsageError. `has_torch` is python_has_torch (replaceable in tests).
std::optional<std::string> choose_pytorch_python(const std::string& choice, std::string& note,
                                                 bool (*has_torch)(const std::string&) = python_has_torch);

}  // namespace trainsim::measure::profiler
