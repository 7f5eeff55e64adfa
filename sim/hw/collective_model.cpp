#include "hw/collective_model.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "hw/nccl_calibration.h"

namespace trainsim::hw {

CollectiveModel::CollectiveModel(const CollectivesProfile& profile,
                                 std::optional<InterconnectAssumption> assumption,
                                 AllReduceAlgorithm algorithm, std::optional<NcclCluster> cluster)
    : assumption_(std::move(assumption)), algorithm_(algorithm), cluster_(std::move(cluster)) {
  // A cluster's own nccl-tests log prices its collective on its rank count.
  if (cluster_ && cluster_->log) log_curve_.emplace(cluster_->log->points);
  for (const CollectiveCurve& c : profile.curves) {
    try {
      curves_.emplace(std::make_pair(c.op, c.ranks), MeasuredCurve(c.points));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("collective curve " + c.op + " on " +
                                  std::to_string(c.ranks) + " ranks: " + e.what());
    }
  }
  if (assumption_) alpha_beta_from_assumption(*assumption_);  // validates it
}

const MeasuredCurve* CollectiveModel::curve(CollectiveOp op, int ranks) const {
  const auto it = curves_.find(std::make_pair(std::string(collective_name(op)), ranks));
  return it == curves_.end() ? nullptr : &it->second;
}

std::optional<std::pair<int, const MeasuredCurve*>> CollectiveModel::nearest_curve(
    CollectiveOp op, int ranks) const {
  std::optional<std::pair<int, const MeasuredCurve*>> best;
  for (const auto& [key, c] : curves_) {
    if (key.first != collective_name(op) || key.second < 2) continue;
    const int distance = std::abs(key.second - ranks);
    // Ascending map order: a later candidate at equal distance has the larger rank count.
    if (!best || distance <= std::abs(best->first - ranks)) best = std::make_pair(key.second, &c);
  }
  return best;
}

CollectiveModel::Method CollectiveModel::resolve(CollectiveOp op, int ranks, bool with_note) const {
  if (ranks < 1) throw std::invalid_argument("collective on " + std::to_string(ranks) + " ranks");
  const auto prefix = [&] { return std::string(collective_name(op)) + " on " + std::to_string(ranks) + " ranks: "; };
  Method m;
  const bool override_all = assumption_ && assumption_->override_measured;
  if (ranks == 1) {
    if (const MeasuredCurve* c = override_all ? nullptr : curve(op, 1)) {
      m.source = Source::kMeasured;
      m.curve = c;
    }
    return m;  // kFree when no 1-rank curve was measured
  }
  // The log itself where the call launches its GPUs as the log's calls did: not for DDP's
  // all-reduce (a process per GPU) from a log whose one thread launched several (nGpus > 1).
  const bool launched_alike =
      op != CollectiveOp::kAllReduce || !cluster_ || !cluster_->log || cluster_->log->gpus_per_thread <= 1;
  if (cluster_ && log_curve_ && collective_name(op) == cluster_->log->op && ranks == cluster_->log->ranks &&
      launched_alike) {
    m.source = Source::kMeasured;
    m.curve = &*log_curve_;
    if (with_note) m.note = prefix() + "the cluster's nccl-tests log";
    return m;
  }
  if (cluster_) {
    m.source = Source::kNccl;
    const NcclSystem sys = cluster_->system(ranks);  // throws for nodes without NICs
    if (with_note) {
      m.note = prefix() + "NCCL's cost model on " + cluster_->name + " (" + std::to_string(sys.nodes) + " node" +
               (sys.nodes == 1 ? "" : "s") + "; the fastest of ring and tree, LL, LL128 and Simple per message" +
               (cluster_->calibration
                    ? "; calibrated by the cluster's nccl-tests log: " + describe(*cluster_->calibration)
                    : std::string()) +
               ")";
    }
    return m;
  }
  if (override_all) {
    m.source = Source::kFormula;
    m.alpha_beta = alpha_beta_from_assumption(*assumption_);
    if (with_note) m.note = prefix() + "assumed interconnect (" + describe(m.alpha_beta) +
             "), overriding measured curves";
    return m;
  }
  if (const MeasuredCurve* c = curve(op, ranks)) {
    m.source = Source::kMeasured;
    m.curve = c;
    return m;
  }
  const char* shape = op == CollectiveOp::kAllReduce ? "ring" : "pipelined ring";
  if (const auto near = nearest_curve(op, ranks)) {
    m.source = Source::kFormula;
    m.alpha_beta = op == CollectiveOp::kAllReduce
                       ? alpha_beta_from_all_reduce_fit(near->second->fit(), near->first)
                       : alpha_beta_from_pipeline_fit(near->second->fit(), near->first);
    if (with_note) m.note = prefix() + shape + " fit from " + std::to_string(near->first) + "-rank curve (" +
             describe(m.alpha_beta) + ")";
    return m;
  }
  if (op != CollectiveOp::kAllReduce) {
    if (const auto near = nearest_curve(CollectiveOp::kAllReduce, ranks)) {
      m.source = Source::kFormula;
      m.alpha_beta = alpha_beta_from_all_reduce_fit(near->second->fit(), near->first);
      if (with_note) m.note = prefix() + shape + " with the alpha and busbw of the " +
               std::to_string(near->first) + "-rank all_reduce fit (" + describe(m.alpha_beta) +
               "; no " + collective_name(op) + " curve measured)";
      return m;
    }
  }
  if (assumption_) {
    m.source = Source::kFormula;
    m.alpha_beta = alpha_beta_from_assumption(*assumption_);
    if (with_note) m.note = prefix() + "assumed interconnect (" + describe(m.alpha_beta) + ")";
    return m;
  }
  throw std::invalid_argument(prefix() +
                              "no measured curve to use or fit, and no interconnect assumption");
}

double CollectiveModel::formula_seconds(CollectiveOp op, int ranks, double bytes,
                                        const AlphaBeta& ab) const {
  if (op != CollectiveOp::kAllReduce) return pipelined_broadcast_seconds(bytes, ranks, ab);
  switch (algorithm_) {
    case AllReduceAlgorithm::kRing: return ring_all_reduce_seconds(bytes, ranks, ab);
    case AllReduceAlgorithm::kTree: return tree_all_reduce_seconds(bytes, ranks, ab);
    case AllReduceAlgorithm::kFastest:
      return std::min(ring_all_reduce_seconds(bytes, ranks, ab),
                      tree_all_reduce_seconds(bytes, ranks, ab));
  }
  return 0.0;
}

double CollectiveModel::seconds(CollectiveOp op, int ranks, double bytes) const {
  if (!(bytes > 0)) return 0.0;
  const Method m = resolve(op, ranks, /*with_note=*/false);
  switch (m.source) {
    case Source::kFree: return 0.0;
    case Source::kMeasured: return m.curve->time_at(bytes);
    case Source::kFormula: return formula_seconds(op, ranks, bytes, m.alpha_beta);
    case Source::kNccl:
      // DDP's all-reduces come from a process per GPU; DataParallel's broadcasts and reduces from
      // one process that launches every GPU's part (a calibration's per-call overhead scales so).
      return cluster_->time(to_nccl(op), bytes, ranks, op == CollectiveOp::kAllReduce ? 1 : ranks).seconds;
  }
  return 0.0;
}

std::string CollectiveModel::note(CollectiveOp op, int ranks) const {
  std::string n = resolve(op, ranks, /*with_note=*/true).note;
  if (!n.empty() && op == CollectiveOp::kAllReduce && algorithm_ != AllReduceAlgorithm::kRing) {
    n += algorithm_ == AllReduceAlgorithm::kTree ? " [tree formula]" : " [faster of ring, tree]";
  }
  return n;
}

}  // namespace trainsim::hw
