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
  std::vector<DdpBucket> buckets;  // the reducer's buckets after its rebuild, launch order
};

// `description.name` at `batch` on `device` (the model, SGD and inputs of FusedIteration, from
// `seed`), wrapped in DistributedDataParallel over `communicator` (1 rank, on `device`).
// max(rep.warmup, 2) untimed iterations first, so that the timed ones run on the rebuilt buckets
// (iteration 0 reduces one bucket of every parameter; the next forward rebuilds), then the
// median of rep.repeats. LibTorch errors propagate, out-of-memory included.
DdpLoopTimings measure_ddp_iteration(const ModelProfile& description, int64_t batch, const Device& device,
                                     const Repetition& rep, uint64_t seed, Communicator& communicator);

}  // namespace trainsim::measure::profiler
