#pragma once
// The measures both programs and their reports print, defined once: the relative error of a
// prediction and nccl-tests' bus bandwidth. Header-only, no dependencies.

#include <stdexcept>
#include <string>
#include <string_view>

namespace trainsim {

// (predicted - measured) / measured: the signed error of a prediction, positive when it is too
// high. Every report's error column is this (x 100 in percent); a mean absolute error takes its
// absolute value.
inline double relative_error(double predicted, double measured) { return (predicted - measured) / measured; }
inline double percent_error(double predicted, double measured) { return relative_error(predicted, measured) * 100.0; }

// nccl-tests' bus bandwidth factor, busbw = algbw x factor: all_reduce 2(n-1)/n, all_gather and
// reduce_scatter (n-1)/n, broadcast and reduce 1 (nccl-tests' src/*.cu, for n ranks; on one rank
// the all-reduce's is 0, a broadcast's 1). Throws std::invalid_argument for another op or n < 1.
inline double nccl_tests_bus_factor(std::string_view op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus bandwidth factor: " + std::to_string(ranks) + " ranks");
  const double n = ranks;
  if (op == "all_reduce") return 2.0 * (n - 1.0) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1.0) / n;
  if (op == "broadcast" || op == "reduce") return 1.0;
  throw std::invalid_argument("bus bandwidth factor: unknown collective '" + std::string(op) + "'");
}

}  // namespace trainsim
