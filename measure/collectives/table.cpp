#include "collectives/table.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "collectives/collective_op.h"
#include "format/metrics.h"

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
  const double factor = nccl_tests_bus_factor(curve.op, curve.ranks);
  const bool rooted = curve.op == "broadcast" || curve.op == "reduce";
  const bool reduces = curve.op == "all_reduce" || curve.op == "reduce";
  std::string s = format("# %s, %d rank%s (busbw = algbw * %.4g)\n", curve.op.c_str(), curve.ranks,
                         curve.ranks == 1 ? "" : "s", factor);
  // nccl-tests' layout (as simulate's collectives table, docs/SCALE.md).
  s += format("#%11s %13s %9s %7s %7s %10s %8s %8s\n", "size", "count", "type", "redop", "root", "time", "algbw",
              "busbw");
  s += format("#%11s %13s %9s %7s %7s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const auto& p : curve.points) {
    const double algbw = p.bytes / p.time_s / 1e9;
    s += format(" %11lld %13lld %9s %7s %7d %10.2f %8.3f %8.3f\n", static_cast<long long>(p.bytes),
                static_cast<long long>(p.bytes / 4), "float", reduces ? "sum" : "none", rooted ? 0 : -1,
                p.time_s * 1e6, algbw, algbw * factor);
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
