#include "collectives/collective_op.h"

#include <algorithm>
#include <stdexcept>

#include "usage_error.h"

namespace trainsim::measure::collectives {

std::string op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
  }
  throw std::logic_error("unknown CollectiveOp");
}

CollectiveOp parse_op(const std::string& name) {
  for (CollectiveOp op : kAllCollectiveOps) {
    if (op_name(op) == name) return op;
  }
  throw UsageError("unknown collective '" + name + "' (expected all_reduce, broadcast or reduce)");
}

std::vector<int64_t> message_sizes(int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes < 1) throw std::invalid_argument("message_sizes: min_bytes must be >= 1");
  std::vector<int64_t> sizes;
  for (int64_t s = min_bytes; s <= max_bytes; s *= 4) sizes.push_back(s);
  return sizes;
}

int repeats_for_size(int repeats, int64_t bytes) {
  constexpr int64_t kFullRepeatsUpTo = 16LL << 20;  // 16 MiB
  constexpr int kMinimumRepeats = 3;
  if (bytes <= kFullRepeatsUpTo) return repeats;
  const int64_t scaled = static_cast<int64_t>(repeats) * kFullRepeatsUpTo / bytes;
  return static_cast<int>(std::min<int64_t>(repeats, std::max<int64_t>(kMinimumRepeats, scaled)));
}

}  // namespace trainsim::measure::collectives
