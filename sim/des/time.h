#pragma once
// Simulated time: integer nanoseconds, so event ordering never depends on floating-point rounding
// and two runs of the same input are bit-identical.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace trainsim::des {

using SimTime = int64_t;  // nanoseconds since the start of the simulation

inline constexpr SimTime kNanosecondsPerSecond = 1'000'000'000;

// The latest time the simulator represents: 2^62 ns (146 years), far from int64's end so that
// sums of times in range cannot wrap. An op or an epoch beyond it comes from inputs out of range
// (a time of 1e10 s, a rate of 1e-300/s): TimeRangeError, never a wrapped integer.
inline constexpr SimTime kMaxTime = SimTime{1} << 62;

class TimeRangeError : public std::range_error {
 public:
  using std::range_error::range_error;
};

// "a time of 1e+300 s", for TimeRangeError's message.
inline std::string out_of_range_message(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", seconds);
  return std::string("a time of ") + text + " s is beyond the simulator's range (2^62 ns, 146 years)";
}

// Seconds (from a profile) to simulated nanoseconds, rounded to nearest; negative -> 0; beyond
// kMaxTime: TimeRangeError.
inline SimTime to_ns(double seconds) {
  if (!(seconds > 0)) return 0;
  if (seconds * 1e9 >= static_cast<double>(kMaxTime)) throw TimeRangeError(out_of_range_message(seconds));
  return static_cast<SimTime>(std::llround(seconds * 1e9));
}

inline double to_seconds(SimTime t) { return static_cast<double>(t) * 1e-9; }

}  // namespace trainsim::des
