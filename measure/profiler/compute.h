#pragma once
// Compute profile of one model at one batch size: per stage (stem, layerX.Y blocks, head)
// forward and backward time, loss forward+backward, zero_grad, the SGD step, the whole fused
// iteration and the peak memory of one iteration. model.train() mode, random non-zero inputs.

#include <cstdint>
#include <optional>
#include <vector>

#include "device.h"
#include "format/profile.h"
#include "models/resnet.h"
#include "profiler/fused_iteration.h"

namespace trainsim::measure::profiler {

struct BatchTimings {
  int64_t batch = 0;
  std::vector<double> forward_s;   // per stage, forward order
  std::vector<double> backward_s;  // per stage
  double loss_s = 0;               // cross-entropy forward + backward
  double zero_grad_s = 0;
  double optimizer_s = 0;          // SGD step
  double iteration_s = 0;          // zero_grad + forward + loss + backward + step, fused
  std::optional<double> ddp_iteration_s;  // the DDP loop body on 1 rank (ddp_loop.h); unset: not measured
  double peak_memory_bytes = 0;    // see device.h: allocator peak (GPU) or process RSS (CPU)
  // The peak of one more iteration after the timed ones (autotuning done, allocator warm); unset:
  // not measured (a BatchTimings built elsewhere).
  std::optional<double> steady_peak_memory_bytes;
  // Minor page faults per run of iteration_s's runs (warm-up and timed; page_faults.h); unset: not
  // counted (a BatchTimings built elsewhere).
  std::optional<double> minor_faults;
  // GPU only: the host's time to issue each part (the call returns, nothing synchronised), from
  // the same runs as the device times above; empty on CPU, where the host runs the parts itself.
  std::vector<double> host_forward_s;   // per stage
  std::vector<double> host_backward_s;  // per stage
  double host_loss_s = 0;
  double host_zero_grad_s = 0;
  double host_optimizer_s = 0;
  bool has_host_issue() const { return !host_forward_s.empty(); }

  // Sum of the parts the simulator adds up; compare with iteration_s.
  double sum_of_parts_s() const;
};

// Measures `description.name` (its layers must match the LibTorch stages one to one) at
// `batch` on `device`: warm-up then median of repeats for every timing. The inputs of each stage
// are the real activations of a full forward. Random inputs and labels come from `seed`.
// LibTorch errors propagate, out-of-memory included (see is_out_of_memory).
BatchTimings measure_batch(const ModelProfile& description, int64_t batch, const Device& device,
                           const Repetition& rep, uint64_t seed);

// True when `model` already holds timings for `batch`.
bool has_batch(const ModelProfile& model, int64_t batch);
// Inserts `t` keeping model.batches ascending and every per-batch array aligned with it.
// The host issue times (GPU) stay aligned the same way: inserted when the model held them for
// every earlier batch (or had no batch yet), cleared otherwise.
// ddp_iteration_s (optional in the profile) stays aligned too: it gets t's value when it held one
// for every earlier batch, and is cleared otherwise (a batch without one, or a resumed profile
// written before it was measured). Throws std::invalid_argument if the batch is already there or
// the stage count differs.
void record_batch(ModelProfile& model, const BatchTimings& t);

}  // namespace trainsim::measure::profiler
