#pragma once
// The physical bounds every input reader holds its numbers to (docs/RELIABILITY.md): beyond them a
// value is not a measurement of a machine or a model, and deep in the simulator it would overflow
// a count or the nanosecond clock.

#include <cstdint>

namespace trainsim {

// No model, tensor, message or machine's memory reaches 2^50 bytes (1 PiB); sums of byte counts
// over any model stay far from int64's end.
inline constexpr int64_t kMaxBytes = int64_t{1} << 50;
// A measured time is at least 1 ns (no timer resolves less) and at most 10^6 s (11.6 days: no step,
// copy or collective takes longer).
inline constexpr double kMinMeasuredSeconds = 1e-9;
inline constexpr double kMaxMeasuredSeconds = 1e6;

}  // namespace trainsim
