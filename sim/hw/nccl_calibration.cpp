#include "hw/nccl_calibration.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace trainsim::hw {

LinkClass bounding_link(const NcclSystem& s) {
  if (s.nodes <= 1) return LinkClass::kIntraNode;
  if (s.gpus_per_node <= 1) return LinkClass::kInterNode;  // no hop inside a node
  return s.inter_gbs < s.intra_gbs ? LinkClass::kInterNode : LinkClass::kIntraNode;
}

const char* to_string(LinkClass c) { return c == LinkClass::kIntraNode ? "intra-node" : "inter-node"; }

NcclCalibration fit_nccl_calibration(NcclOp op, const NcclSystem& log_system, const std::vector<CurvePoint>& points) {
  if (log_system.ranks() < 2) throw std::invalid_argument("a log of one rank calibrates no collective");
  // Rows (1, latency, transfer) / measured, target 1: the relative error of each size.
  std::vector<Eigen::Vector3d> rows;
  for (const CurvePoint& p : points) {
    if (!(p.bytes > 0) || !(p.time_s > 0)) continue;
    const NcclTime t = nccl_fastest(op, p.bytes, log_system);
    if (!(t.seconds > 0)) continue;
    rows.emplace_back(Eigen::Vector3d(1.0, t.parts.latency_s, t.parts.transfer_s) / p.time_s);
  }
  if (rows.size() < 3) {
    throw std::invalid_argument("the log has " + std::to_string(rows.size()) + " usable sizes; a calibration needs 3");
  }
  Eigen::MatrixXd a(rows.size(), 3);
  for (std::size_t i = 0; i < rows.size(); ++i) a.row(static_cast<Eigen::Index>(i)) = rows[i].transpose();
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(rows.size()));

  // Non-negative least squares over 3 unknowns (overhead, latency scale, 1 / bandwidth scale):
  // every subset that keeps the bandwidth term, solved unconstrained; the best feasible one.
  Eigen::Vector3d best = Eigen::Vector3d::Zero();
  double best_rss = std::numeric_limits<double>::infinity();
  for (const std::vector<int>& subset : {std::vector<int>{2}, {0, 2}, {1, 2}, {0, 1, 2}}) {
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(subset.size()));
    for (std::size_t j = 0; j < subset.size(); ++j) sub.col(static_cast<Eigen::Index>(j)) = a.col(subset[j]);
    const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(sub);
    if (qr.rank() < static_cast<Eigen::Index>(subset.size())) continue;  // a term no size tells apart
    const Eigen::VectorXd x = qr.solve(ones);
    bool feasible = x(static_cast<Eigen::Index>(subset.size()) - 1) > 0;
    for (Eigen::Index j = 0; j < x.size(); ++j) feasible = feasible && x(j) >= 0;
    if (!feasible) continue;
    const double rss = (sub * x - ones).squaredNorm();
    if (rss < best_rss) {
      best_rss = rss;
      best.setZero();
      for (std::size_t j = 0; j < subset.size(); ++j) best(subset[j]) = x(static_cast<Eigen::Index>(j));
    }
  }
  NcclCalibration c;
  c.overhead_s = best(0);
  c.latency_scale = best(1);
  c.bandwidth_scale = 1.0 / best(2);  // best(2) > 0: the {2} subset alone is always feasible
  c.link = bounding_link(log_system);
  c.points = static_cast<int>(rows.size());
  c.rms_relative_error = std::sqrt(best_rss / static_cast<double>(rows.size()));
  return c;
}

NcclTime nccl_calibrated(NcclOp op, double bytes, const NcclSystem& system, const NcclCalibration& c,
                         int gpus_per_thread) {
  NcclTime t = nccl_fastest(op, bytes, system);
  if (!(t.seconds > 0)) return t;
  const double bandwidth = bounding_link(system) == c.link ? c.bandwidth_scale : 1.0;
  const double launches =
      gpus_per_thread > 0 ? static_cast<double>(gpus_per_thread) / std::max(1, c.gpus_per_thread) : 1.0;
  t.parts.latency_s = launches * c.overhead_s + c.latency_scale * t.parts.latency_s;
  t.parts.transfer_s /= bandwidth;
  t.seconds = t.parts.latency_s + t.parts.transfer_s;
  return t;
}

std::string describe(const NcclCalibration& c) {
  char text[200];
  const std::string launches =
      c.gpus_per_thread > 1 ? " (" + std::to_string(c.gpus_per_thread) + " GPUs launched a call)" : "";
  std::snprintf(text, sizeof text, "overhead %.1f us%s, latency x%.2f, %s bandwidth x%.2f (fit over %d sizes: %.1f%% rms)",
                c.overhead_s * 1e6, launches.c_str(), c.latency_scale, to_string(c.link), c.bandwidth_scale, c.points,
                100 * c.rms_relative_error);
  return text;
}

}  // namespace trainsim::hw
