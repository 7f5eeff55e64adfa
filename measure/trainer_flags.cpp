#include "trainer_flags.h"

namespace trainsim::measure {
namespace po = boost::program_options;

po::options_description rank_flags(RankFlags& raw) {
  po::options_description flags("rank process (set by the launcher)");
  // clang-format off
  flags.add_options()
    ("rank", po::value(&raw.rank)->required(), "rank of this process")
    ("world-size", po::value(&raw.world_size)->required(), "number of ranks")
    ("store", po::value(&raw.store_dir)->required(), "rendezvous folder (c10d FileStore)");
  // clang-format on
  return flags;
}

std::string checked_device(const std::string& value) {
  if (value != "cpu" && value != "cuda") throw UsageError("--device: '" + value + "' is not one of cpu, cuda");
  return value;
}

LrRule checked_lr_rule(const std::string& value) {
  const auto rule = parse_lr_rule(value);
  if (!rule) throw UsageError("--lr-rule: '" + value + "' is not one of constant, linear, linear-warmup, sqrt");
  return *rule;
}

}  // namespace trainsim::measure
