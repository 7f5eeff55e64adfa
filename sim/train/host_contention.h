#pragma once
// Compute contention between rank processes that share one CPU host (docs/SIMULATOR.md, "Host
// contention"). A GPU rank owns its device; a CPU rank shares cores, caches and memory bandwidth
// with the other ranks, so its compute runs slower than the single-process profile says.

#include <string>
#include <vector>

#include "io/profile.h"

namespace trainsim::train {

// The factor every compute-stream op of a rank is multiplied by, and the notes explaining it.
struct HostContention {
  double slowdown = 1.0;           // iteration_s(N) / iteration_s(1); 1 = no contention modelled
  std::vector<std::string> notes;  // empty when nothing applies (GPU profile, one rank)
};

// slowdown(N) for N rank processes on `profile`'s host, from model.host_contention:
//   r(k) = iteration_s(k) / iteration_s(1) at the measured rank counts k;
//   N between two measured counts: linear interpolation of r in N;
//   N above the largest measured K: r(K), with a note;
//   no host_contention on a cpu profile: 1, with a note.
// Only a cpu profile (machine.device_kind "cpu") with ranks >= 2 is slowed; otherwise 1, no note.
HostContention host_contention(const Profile& profile, const ModelProfile& model, int ranks);

}  // namespace trainsim::train
