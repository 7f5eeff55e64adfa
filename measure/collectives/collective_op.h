#pragma once
// The collectives measure benchmarks (what DDP and DataParallel use), their names in the
// profile and the message-size grid (the bus bandwidth factor: format/metrics.h). Torch-free.

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::measure::collectives {

enum class CollectiveOp { all_reduce, broadcast, reduce };

inline constexpr CollectiveOp kAllCollectiveOps[] = {CollectiveOp::all_reduce,
                                                     CollectiveOp::broadcast, CollectiveOp::reduce};

std::string op_name(CollectiveOp op);  // "all_reduce", "broadcast", "reduce"
// Throws UsageError naming the accepted names.
CollectiveOp parse_op(const std::string& name);

// min_bytes, 4 * min_bytes, 16 * min_bytes, ... while <= max_bytes (nothing if max < min).
std::vector<int64_t> message_sizes(int64_t min_bytes, int64_t max_bytes);

// Timed repeats for one message size: `repeats` up to 16 MiB, then fewer as the message grows
// (repeats * 16 MiB / bytes), never below 3 or above `repeats`, so that the large messages of
// a slow fabric (Gloo over loopback) do not dominate the run. Same on every rank.
int repeats_for_size(int repeats, int64_t bytes);

}  // namespace trainsim::measure::collectives
