#pragma once
// The report's section of several precisions or memory formats (`precision:` or `memory_format:`
// a list with one profile per entry, docs/PRECISION.md "Several precisions"): each
// configuration's epoch in the tables' entry beside the same configuration in each other one,
// each predicted from its own profile.

#include <string>
#include <vector>

#include "format/profile.h"
#include "io/config.h"
#include "report/report.h"

namespace trainsim::report {

// One other entry's sweep: its config (the tables' with that precision or memory format and its
// profile), its profile and its results.
struct VariantSweep {
  SweepConfig sweep;
  Profile profile;
  ResultGrid grid;
};

// The tables' sweep as another entry predicts it: `tables` with the precision, memory format and
// profile of `other` (the large-batch, scale-out and collectives requests are the tables' own, not
// repeated).
SweepConfig variant_sweep(const SweepConfig& tables, const SweepConfig::VariantProfile& other);

// The name of a config's entry on the axis its list spans: "bf16-amp", "channels_last".
std::string variant_name(const SweepConfig& config);

// Two tables, rows in the sweep's order: the epoch time in each entry with each other entry's
// speedup over the tables' (their epoch over its), and, for the multi-GPU configurations, the share
// of the epoch that communication is exposed in each. `profile` is the tables'. The section is
// "## Precision" or "## Memory format", after the key the config lists.
std::string format_variant_section(const SweepConfig& tables, const Profile& profile, const ResultGrid& grid,
                                   const std::vector<VariantSweep>& others);

}  // namespace trainsim::report
