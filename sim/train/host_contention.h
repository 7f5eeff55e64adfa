#pragma once
// Compute contention between rank processes that share one CPU host (docs/SIMULATOR.md, "Host
// cores"). A GPU rank owns its device; CPU ranks share the host in two ways, modelled apart:
//  - time: more runnable threads than cores are time-sliced. The simulator's host-core pool
//    (processor sharing, GraphInputs::host_pool) does that, op by op;
//  - interference while each rank has cores of its own: shared caches and memory bandwidth.
//    That is this factor, measured by running k rank processes of the fused iteration at once, at
//    each profiled batch (it grows with the batch as the working sets outgrow the caches).

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile.h"

namespace trainsim::train {

// The factor every compute-stream op of a rank is multiplied by, and the notes explaining it.
struct HostContention {
  double slowdown = 1.0;           // r(N, b); 1 = no interference modelled
  std::vector<std::string> notes;  // empty when nothing applies (GPU profile, one rank)
};

// r(N, b) for N rank processes at per-rank batch b on `profile`'s host, from
// model.host_contention. At each measured batch, using only the points whose ranks fit the host
// without sharing cores (ranks * machine.threads <= machine.cpu_cores; a point above it already
// contains time-slicing, which the core pool adds by itself):
//   r(k) = iteration_s(k) / iteration_s(1) at the measured rank counts k;
//   N between two of them: linear interpolation of r in N;
//   N above the largest usable count: r at that count, with a note.
// Across batches r is linear in b between measured batches and held outside them; a result
// below 1 (faster beside others: the measurement's noise) is 1, with a note. No usable points on
// a cpu profile: 1, with a note. Only a cpu profile (machine.device_kind "cpu") with
// ranks >= 2 is slowed; otherwise 1, no note.
HostContention host_contention(const Profile& profile, const ModelProfile& model, int ranks, int64_t batch);

}  // namespace trainsim::train
