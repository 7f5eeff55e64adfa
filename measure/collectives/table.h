#pragma once
// The collectives in nccl-tests' layout (size, count, type, redop, root, time, algbw, busbw), for
// stderr and reports/<machine>/collectives.txt. Torch-free.
//   algbw = bytes / time; busbw = algbw * nccl_tests_bus_factor(op, ranks) (format/metrics.h); GB/s = 1e9 B/s.

#include <string>

#include "format/profile.h"

namespace trainsim::measure::collectives {

// One block per curve: a '#' header naming op, ranks and the busbw factor, the column header,
// then one line per point (float32 elements: count = bytes / 4).
std::string curve_table(const CollectiveCurve& curve);
// Every curve of the profile, after a header naming backend and source.
std::string collectives_table(const CollectivesProfile& collectives);

}  // namespace trainsim::measure::collectives
