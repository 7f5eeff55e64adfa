#pragma once
// What a run is in both programs' files (runs.csv, predictions.csv, a sweep config): its strategy
// and whose trainer ran it, and the sizes beyond which a run is refused rather than simulated
// (every reader of a run holds it to them). Dependency-free.

#include <cstdint>
#include <optional>
#include <string>

namespace trainsim {

enum class Strategy { kDdp, kDp };
inline const char* to_string(Strategy s) { return s == Strategy::kDp ? "dp" : "ddp"; }

// Whose training loop a prediction is for: PyTorch's (the reference trainer, what users run:
// its DataLoader and its loop, measured in the profile's pytorch: section) or `measure train`'s
// C++ loop (its threaded loader, its loop).
enum class Trainer { kPytorch, kTrainsim };
inline const char* to_string(Trainer t) { return t == Trainer::kTrainsim ? "trainsim" : "pytorch"; }
// "pytorch" or "trainsim"; nullopt for anything else.
inline std::optional<Trainer> parse_trainer(const std::string& name) {
  if (name == "pytorch") return Trainer::kPytorch;
  if (name == "trainsim") return Trainer::kTrainsim;
  return std::nullopt;
}

// Sizes the simulator takes (the rest of the list is in sim/io/config.h):
// - GPUs in all (a topology's nodes x gpus_per_node): beyond any cluster built, and far from
//   overflowing the int arithmetic over ranks;
inline constexpr int kMaxGpus = 1 << 20;
// - DataLoader worker processes per rank;
inline constexpr int kMaxLoaderWorkers = 1024;
// - iterations per rank in one epoch: every iteration's times are kept (the timeline, the trace,
//   the steady-state check); 10^7 take about 0.8 GB and 3 s (ImageNet-1k at batch 1: 1.3 x 10^6).
inline constexpr int64_t kMaxIterationsPerEpoch = 10'000'000;

// ceil(a / d) for a >= 0, d >= 1.
inline int64_t ceil_div(int64_t a, int64_t d) { return a / d + (a % d != 0); }

// The global batch gpus x batch_per_gpu, capped at the data set (a larger one is one batch of the
// whole set); never overflows, whatever the sizes (>= 1 each).
inline int64_t capped_global_batch(int64_t gpus, int64_t batch_per_gpu, int64_t samples) {
  // gpus * batch_per_gpu >= samples  <=>  batch_per_gpu >= ceil(samples / gpus)
  return batch_per_gpu >= ceil_div(samples, gpus) ? samples : gpus * batch_per_gpu;
}

// Iterations per rank in one epoch of `samples` (all >= 1): dp runs ceil(S / G) iterations of the
// capped global batch G, ddp ceil(ceil(S / N) / b) per rank. Never overflows.
inline int64_t epoch_iterations(Strategy strategy, int64_t gpus, int64_t batch_per_gpu, int64_t samples) {
  if (strategy == Strategy::kDdp) return ceil_div(ceil_div(samples, gpus), batch_per_gpu);
  return ceil_div(samples, capped_global_batch(gpus, batch_per_gpu, samples));
}

}  // namespace trainsim
