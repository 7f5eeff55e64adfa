#pragma once
// What the C++ trainers, `measure train` (measure/runs) and `measure baseline`
// (measure/largebatch), parse alike: their rank processes' flags, and the checks of the flags both
// take with one meaning. Torch-free.

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>

#include "cli_util.h"
#include "format/lr_rule.h"
#include "usage_error.h"

namespace trainsim::measure {

// The three flags launch_ranks appends for a rank process, as given.
struct RankFlags {
  int64_t rank = -1;
  int64_t world_size = 0;
  std::string store_dir;
};
// --rank, --world-size and --store, all required.
boost::program_options::options_description rank_flags(RankFlags& raw);

// Checks `raw` (a world size >= 1, a rank below it) into a trainer's options (TrainOptions,
// BaselineOptions): throws UsageError.
template <class Options>
void apply_rank_flags(const RankFlags& raw, Options& o) {
  o.world_size = bounded_int("world-size", raw.world_size, 1);
  o.rank = bounded_int("rank", raw.rank, 0);
  if (o.rank >= o.world_size) {
    throw UsageError("--rank " + std::to_string(o.rank) + " is not below --world-size " + std::to_string(o.world_size));
  }
  o.store_dir = raw.store_dir;
}

// --device's value, cpu or cuda: throws UsageError for anything else.
std::string checked_device(const std::string& value);
// --lr-rule's value: throws UsageError naming the rules for an unknown one.
LrRule checked_lr_rule(const std::string& value);

}  // namespace trainsim::measure
