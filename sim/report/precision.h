#pragma once
// The report's precision section (`precision:` a list with one profile per precision,
// docs/PRECISION.md "Several precisions"): each configuration's epoch in the tables' precision
// beside the same configuration in each other one, each predicted from its own profile.

#include <string>
#include <vector>

#include "format/profile.h"
#include "io/config.h"
#include "report/report.h"

namespace trainsim::report {

// One other precision's sweep: its config (the tables' with that precision and profile), its
// profile and its results.
struct PrecisionSweep {
  SweepConfig sweep;
  Profile profile;
  ResultGrid grid;
};

// The tables' sweep as another precision predicts it: `tables` with the precision and profile of
// `other` (the large-batch, scale-out and collectives requests are the tables' own, not repeated).
SweepConfig precision_sweep(const SweepConfig& tables, const SweepConfig::PrecisionProfile& other);

// Two tables, rows in the sweep's order: the epoch time in each precision with each other
// precision's speedup over the tables' (their epoch over its), and, for the multi-GPU
// configurations, the share of the epoch that communication is exposed in each precision.
// `profile` is the tables'.
std::string format_precision_section(const SweepConfig& tables, const Profile& profile, const ResultGrid& grid,
                                     const std::vector<PrecisionSweep>& others);

}  // namespace trainsim::report
