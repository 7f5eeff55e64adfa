#pragma once
// Simulated time: integer nanoseconds, so event ordering never depends on floating-point rounding
// and two runs of the same input are bit-identical.

#include <cmath>
#include <cstdint>

namespace trainsim::des {

using SimTime = int64_t;  // nanoseconds since the start of the simulation

inline constexpr SimTime kNanosecondsPerSecond = 1'000'000'000;

// Seconds (from a profile) to simulated nanoseconds, rounded to nearest; negative -> 0.
inline SimTime to_ns(double seconds) {
  if (!(seconds > 0)) return 0;
  return static_cast<SimTime>(std::llround(seconds * 1e9));
}

inline double to_seconds(SimTime t) { return static_cast<double>(t) * 1e-9; }

}  // namespace trainsim::des
