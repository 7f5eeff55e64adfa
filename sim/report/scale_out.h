#pragma once
// The main job's scale-out section (`scale_out:`, docs/SCALE.md "Scale-out in the main job"):
// DDP epoch time, speedup and scaling efficiency vs the GPU count on a topology of nodes.

#include <string>

#include "io/config.h"
#include "format/profile.h"
#include "report/report.h"

namespace trainsim::report {

// `scale` is scale_out_sweep(config), `profile` its profile, `grid` its results. Per batch per
// GPU, a row per GPU count: nodes, global batch, epoch and iteration time, speedup over the
// smallest count (T(N0,b) / T(N,b), N0 = 1 when it is swept), efficiency = speedup x N0 / N, the
// share of the epoch that communication is exposed, and the all-reduce's bus bandwidth.
std::string format_scale_out(const SweepConfig& scale, const Profile& profile, const ResultGrid& grid);

}  // namespace trainsim::report
