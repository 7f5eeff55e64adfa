#include "hw/collective_cost.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace trainsim::hw {
namespace {

void require_multi_rank(int ranks, const char* what) {
  if (ranks < 2) {
    throw std::invalid_argument(std::string(what) + ": needs a curve measured on >= 2 ranks");
  }
}

void require_bandwidth(const LinearFit& fit) {
  if (!(fit.slope_s_per_byte > 0)) {
    throw std::invalid_argument("curve has no point with bytes > 0 and time > 0 to fit");
  }
}

void require_ranks(int ranks) {
  if (ranks < 1) throw std::invalid_argument("collective on " + std::to_string(ranks) + " ranks");
}

}  // namespace

const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
  }
  return "?";
}

AlphaBeta alpha_beta_from_all_reduce_fit(const LinearFit& fit, int ranks) {
  require_multi_rank(ranks, "all-reduce fit");
  require_bandwidth(fit);
  const double n = ranks;
  return AlphaBeta{fit.intercept_s / (2.0 * (n - 1.0)),
                   2.0 * (n - 1.0) / (n * fit.slope_s_per_byte)};
}

AlphaBeta alpha_beta_from_pipeline_fit(const LinearFit& fit, int ranks) {
  require_multi_rank(ranks, "broadcast/reduce fit");
  require_bandwidth(fit);
  return AlphaBeta{fit.intercept_s / (ranks - 1.0), 1.0 / fit.slope_s_per_byte};
}

AlphaBeta alpha_beta_from_assumption(const InterconnectAssumption& assumption) {
  if (!(assumption.bus_bandwidth_gbs > 0) || assumption.latency_us < 0) {
    throw std::invalid_argument("interconnect assumption needs bus_bandwidth_gbs > 0 and "
                                "latency_us >= 0");
  }
  return AlphaBeta{assumption.latency_us * 1e-6, assumption.bus_bandwidth_gbs * 1e9};
}

double ring_all_reduce_seconds(double bytes, int ranks, const AlphaBeta& ab) {
  require_ranks(ranks);
  if (ranks == 1 || !(bytes > 0)) return 0.0;
  const double n = ranks;
  // t = 2(n-1) alpha + 2(n-1)/n * S / busbw
  return 2.0 * (n - 1.0) * ab.alpha_s + 2.0 * (n - 1.0) / n * bytes / ab.bus_bandwidth_Bps;
}

double tree_all_reduce_seconds(double bytes, int ranks, const AlphaBeta& ab) {
  require_ranks(ranks);
  if (ranks == 1 || !(bytes > 0)) return 0.0;
  // t = 2 ceil(log2 n) alpha + 2 S / busbw
  const double depth = std::ceil(std::log2(static_cast<double>(ranks)));
  return 2.0 * depth * ab.alpha_s + 2.0 * bytes / ab.bus_bandwidth_Bps;
}

double pipelined_broadcast_seconds(double bytes, int ranks, const AlphaBeta& ab) {
  require_ranks(ranks);
  if (ranks == 1 || !(bytes > 0)) return 0.0;
  // t = (n-1) alpha + S / busbw
  return (ranks - 1.0) * ab.alpha_s + bytes / ab.bus_bandwidth_Bps;
}

NcclOp to_nccl(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return NcclOp::kAllReduce;
    case CollectiveOp::kBroadcast: return NcclOp::kBroadcast;
    case CollectiveOp::kReduce: return NcclOp::kReduce;
  }
  return NcclOp::kAllReduce;
}

double bus_bytes(CollectiveOp op, double bytes, int ranks) {
  require_ranks(ranks);
  return nccl_bus_factor(to_nccl(op), ranks) * bytes;
}

std::string describe(const AlphaBeta& ab) {
  char text[96];
  std::snprintf(text, sizeof text, "alpha %.3g us, busbw %.3g GB/s", ab.alpha_s * 1e6,
                ab.bus_bandwidth_Bps * 1e-9);
  return text;
}

}  // namespace trainsim::hw
