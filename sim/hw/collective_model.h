#pragma once
// How long one collective takes: from the profile's measured curves where possible, else from an
// alpha-beta fit of a measured curve, else from the config's assumed interconnect.
//
// For (op, n ranks, S bytes), in this order:
//  1. n = 1: the measured 1-rank curve of `op` if there is one (and no override), else 0
//     (nothing to exchange).
//  2. a topology (config `topology:`): NCCL's cost model on it, the tuner's fastest algorithm
//     and protocol (hw/nccl_model.h); measured multi-rank curves describe another machine.
//     The collective of the cluster's nccl-tests log (collectives_log:) on its rank count: the log
//     (but DDP's all-reduce from a log run with one thread for several GPUs: the calibrated model);
//     everything else on that cluster: the model calibrated by the log (hw/nccl_calibration.h).
//     The config's interconnect with override_measured: its alpha and busbw ("assumed").
//  3. the measured curve of `op` on n ranks: interpolated (MeasuredCurve).
//  4. a fit: the curve of the same op on the nearest measured rank count M >= 2 (ties: the
//     larger M), read as a ring (all-reduce) or pipelined ring (broadcast, reduce); for broadcast
//     and reduce without any curve of their own, the all-reduce fit. Then the formula at n ranks.
//  5. the config's interconnect (no override): "assumed".
//  6. none of these: std::invalid_argument.

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "format/profile.h"
#include "hw/collective_cost.h"
#include "hw/curve.h"
#include "hw/nccl_model.h"
#include "io/config.h"

namespace trainsim::hw {

enum class AllReduceAlgorithm { kRing, kTree, kFastest };  // formula for fitted/assumed all-reduce

class CollectiveModel {
 public:
  // Throws std::invalid_argument if a measured curve is malformed (see MeasuredCurve).
  CollectiveModel(const CollectivesProfile& profile,
                  std::optional<InterconnectAssumption> assumption,
                  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kRing,
                  std::optional<NcclCluster> cluster = std::nullopt);

  double seconds(CollectiveOp op, int ranks, double bytes) const;

  // How seconds() prices (op, ranks), for SimResult::notes: empty for a measured curve of that
  // rank count or for one rank without a curve; else e.g.
  // "all_reduce on 8 ranks: ring fit from 2-rank curve (alpha 6.1 us, busbw 21.3 GB/s)".
  std::string note(CollectiveOp op, int ranks) const;

 private:
  enum class Source { kFree, kMeasured, kFormula, kNccl };
  struct Method {
    Source source = Source::kFree;
    const MeasuredCurve* curve = nullptr;  // kMeasured
    AlphaBeta alpha_beta;                  // kFormula
    std::string note;
  };
  // with_note: also the text note() returns (seconds(), on every collective priced, needs none).
  Method resolve(CollectiveOp op, int ranks, bool with_note) const;
  const MeasuredCurve* curve(CollectiveOp op, int ranks) const;
  // The same-op curve on the measured rank count nearest to `ranks` among those >= 2.
  std::optional<std::pair<int, const MeasuredCurve*>> nearest_curve(CollectiveOp op,
                                                                     int ranks) const;
  double formula_seconds(CollectiveOp op, int ranks, double bytes, const AlphaBeta& ab) const;

  std::map<std::pair<std::string, int>, MeasuredCurve> curves_;  // (op name, ranks)
  std::optional<InterconnectAssumption> assumption_;
  AllReduceAlgorithm algorithm_;
  std::optional<NcclCluster> cluster_;
  std::optional<MeasuredCurve> log_curve_;  // cluster_->log
};

}  // namespace trainsim::hw
