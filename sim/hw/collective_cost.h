#pragma once
// Closed-form collective costs (alpha-beta model) and the nccl-tests bandwidth conventions.
//
// alpha: per-step latency (s). busbw: the nccl-tests "bus bandwidth" (bytes/s), which for a ring
// is the bandwidth of each link. S: message bytes, n: ranks.
//   ring all-reduce (reduce-scatter then all-gather, 2(n-1) steps of S/n bytes per rank):
//     t_ring(S, n) = 2(n-1) alpha + 2(n-1)/n * S / busbw
//   tree all-reduce (textbook pipelined reduce up a binary tree, then broadcast down; each phase
//   streams S through every link once):
//     t_tree(S, n) = 2 ceil(log2 n) alpha + 2 S / busbw
//   broadcast and reduce (pipelined chain / ring from or to the root):
//     t_pipe(S, n) = (n-1) alpha + S / busbw
// nccl-tests conventions: algbw = S / t; all-reduce busbw = algbw * 2(n-1)/n; broadcast and
// reduce busbw = algbw. One rank moves nothing: every formula gives 0 for n = 1.

#include <string>

#include "io/config.h"
#include "hw/curve.h"
#include "hw/nccl_model.h"

namespace trainsim::hw {

enum class CollectiveOp { kAllReduce, kBroadcast, kReduce };
const char* collective_name(CollectiveOp op);  // "all_reduce", "broadcast", "reduce" (profile names)
NcclOp to_nccl(CollectiveOp op);

struct AlphaBeta {
  double alpha_s = 0;               // per-step latency
  double bus_bandwidth_Bps = 0;     // nccl-tests busbw, bytes/s
};

// From a fit t = a + b S of an all-reduce measured on n >= 2 ranks, read as a ring:
//   a = 2(n-1) alpha           =>  alpha = a / (2(n-1))
//   b = 2(n-1)/n / busbw       =>  busbw = 2(n-1) / (n b)
AlphaBeta alpha_beta_from_all_reduce_fit(const LinearFit& fit, int ranks);
// From a fit of a broadcast or reduce measured on n >= 2 ranks, read as a pipelined ring:
//   a = (n-1) alpha            =>  alpha = a / (n-1)
//   b = 1 / busbw              =>  busbw = 1 / b
AlphaBeta alpha_beta_from_pipeline_fit(const LinearFit& fit, int ranks);
// The config's assumed interconnect: busbw GB/s (1e9 B/s), latency in microseconds.
AlphaBeta alpha_beta_from_assumption(const InterconnectAssumption& assumption);

double ring_all_reduce_seconds(double bytes, int ranks, const AlphaBeta& ab);
double tree_all_reduce_seconds(double bytes, int ranks, const AlphaBeta& ab);
double pipelined_broadcast_seconds(double bytes, int ranks, const AlphaBeta& ab);  // and reduce

// Bytes on the bus per rank for one collective (what busbw divides by time):
// all-reduce 2(n-1)/n * S; broadcast, reduce S; 0 for one rank.
double bus_bytes(CollectiveOp op, double bytes, int ranks);

// "alpha 12.3 us, busbw 45.6 GB/s"
std::string describe(const AlphaBeta& ab);

}  // namespace trainsim::hw
