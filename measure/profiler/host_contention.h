#pragma once
// Host contention (CPU): how much slower one rank's fused training iteration runs while k rank
// processes run the same iteration at once on this host, for k = 1..N. `measure` launches k
// processes of `measure worker contention ...`; they meet through a FileStore (Gloo barrier),
// run warm-up and timed fused iterations in lockstep (a barrier before each, as DDP's per-step
// all-reduce keeps ranks together), and rank 0 writes its median to result.txt in the store folder.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/memory_format.h"
#include "format/precision.h"

namespace trainsim::measure::profiler {

struct ContentionJob {
  std::string model;      // e.g. "resnet18-cifar"
  int64_t batch = 32;     // per rank
  int warmup = 1;         // untimed fused iterations
  int repeats = 3;        // timed fused iterations; rank 0's median is the result
  int threads = 1;        // LibTorch intra-op threads per rank process
  uint64_t seed = 0;      // random inputs (rank r uses seed + r)
  double timeout_s = 600; // the rendezvous or one barrier blocked longer fails the rank
  // A TorchScript module instead of a built-in model (measure torchscript): its file, one
  // sample's input shape ("3x32x32") and its classes. Empty: `model` is a built-in model.
  std::string script;
  std::string input_shape;
  int64_t classes = 0;
  Precision precision = Precision::kFp32;  // the built-in model's forward and loss
  MemoryFormat memory_format = MemoryFormat::kNchw;  // the built-in model's and its inputs' layout
};

// `measure worker contention FLAGS --rank R --world-size N --store DIR`; argv[0] is
// "contention". Returns 0 on success (rank 0 wrote DIR/result.txt). Throws UsageError for bad
// flags; a later failure is printed ("error: rank R of N: ...") and returns 1.
int contention_worker_main(int argc, char** argv);

// The worker flags for `job` (launch_ranks appends --rank, --world-size, --store).
std::vector<std::string> contention_worker_args(const ContentionJob& job);

// Parent side: launches `ranks` processes of `exe` (the measure binary) in a fresh temporary
// store folder and returns rank 0's median fused-iteration seconds. Throws std::runtime_error
// naming a failed rank.
double run_contention(const std::string& exe, const ContentionJob& job, int ranks, double launch_timeout_s);

// Rank 0's median fused iteration with k = 1..ranks processes at once ([k - 1]), measured in
// `rounds` interleaved rounds (k = 1, 2, .., ranks, then again) and each k's the median over the
// rounds: a slow spell of a shared machine then spreads over every k instead of biasing the ratio
// of one k to the others. `progress` (may be empty) is called after each launch with k and its time.
std::vector<double> run_contention_rounds(const std::string& exe, const ContentionJob& job, int ranks, int rounds,
                                          double launch_timeout_s,
                                          const std::function<void(int k, double seconds)>& progress);

}  // namespace trainsim::measure::profiler
