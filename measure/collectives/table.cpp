#include "collectives/table.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "collectives/collective_op.h"

namespace trainsim::measure::collectives {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buffer[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

}  // namespace

std::string curve_table(const CollectiveCurve& curve) {
  const double factor = bus_bandwidth_factor(curve.op, curve.ranks);
  std::string s = format("# %s, %d rank%s (busbw = algbw * %.4g)\n", curve.op.c_str(), curve.ranks,
                         curve.ranks == 1 ? "" : "s", factor);
  s += format("# %12s %12s %8s %12s %9s %9s\n", "size", "count", "type", "time", "algbw", "busbw");
  s += format("# %12s %12s %8s %12s %9s %9s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
  for (const auto& p : curve.points) {
    const double algbw = p.bytes / p.time_s / 1e9;
    s += format("  %12lld %12lld %8s %12.2f %9.3f %9.3f\n", static_cast<long long>(p.bytes),
                static_cast<long long>(p.bytes / 4), "float", p.time_s * 1e6, algbw, algbw * factor);
  }
  return s;
}

std::string collectives_table(const CollectivesProfile& collectives) {
  std::string s = "# trainsim measure: collectives (backend " + collectives.backend + ", source " +
                  collectives.source + ")\n";
  for (const auto& curve : collectives.curves) s += "#\n" + curve_table(curve);
  return s;
}

}  // namespace trainsim::measure::collectives
