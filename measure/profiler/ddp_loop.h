#pragma once
// ddp_iteration_s: the C++ trainer's DDP loop body (runs/train_step.h, the code `measure train`
// runs) on ONE rank: c10d::Reducer over a 1-rank process group (Gloo on CPU, NCCL on CUDA), the
// model, SGD and a random batch already on the device; no loader, no host-to-device copy. What
// the loop costs beyond the fused iteration (the reducer's hooks, the copies into and out of the
// buckets, the buffer broadcast, the 1-rank all-reduce, the on-device statistics) is read from it.

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "device.h"
#include "format/profile.h"

namespace trainsim::measure::profiler {

struct DdpLoopTimings {
  double iteration_s = 0;          // median of rep.repeats loop bodies
  // The loop body over the bare fused iteration, each pair timed back to back: the median of the
  // pairs' ratios. A slow spell of the machine falls on both timings of a pair, so the ratio is
  // not its difference; the profile's ddp_iteration_s is this ratio times the fused iteration.
  double ratio_to_fused = 0;
  std::vector<DdpBucket> buckets;  // the reducer's buckets after its rebuild, launch order
};

// `description.name` at `batch` on `device` (the model, SGD and inputs of FusedIteration, from
// `seed`), wrapped in DistributedDataParallel over `communicator` (1 rank, on `device`), beside a
// bare FusedIteration of the same model and inputs. max(rep.warmup, 2) untimed iterations of
// each first, so that the timed ones run on the rebuilt buckets (iteration 0 reduces one bucket
// of every parameter; the next forward rebuilds), then rep.repeats rounds of a bare iteration and
// a loop body, each timed. LibTorch errors propagate, out-of-memory included.
DdpLoopTimings measure_ddp_iteration(const ModelProfile& description, int64_t batch, const Device& device,
                                     const Repetition& rep, uint64_t seed, Communicator& communicator);

}  // namespace trainsim::measure::profiler
