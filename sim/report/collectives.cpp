#include "report/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "format/metrics.h"
#include "hw/nccl_calibration.h"

namespace trainsim::report {
namespace {

constexpr double kFloatBytes = 4;

std::string printf_string(const char* format, double a) {
  char text[64];
  std::snprintf(text, sizeof text, format, a);
  return text;
}

// nccl-tests' elements per rank's call: all-gather and reduce-scatter split the printed size (the
// larger buffer) over the ranks (src/all_gather.cu, reduce_scatter.cu); the others send it whole.
double split_ranks(hw::NcclOp op, int ranks) {
  return op == hw::NcclOp::kAllGather || op == hw::NcclOp::kReduceScatter ? ranks : 1;
}

}  // namespace

bool uses_calibration(const CollectivesRequest& request, const Topology& topology, const hw::NcclCluster& cluster) {
  // The log's own op on its own rank count is the log, compared with the catalog's figures.
  const bool the_log = cluster.log && request.op == cluster.log->op && cluster.log->ranks == topology.gpus();
  return cluster.calibration && !the_log && !request.log;
}

std::vector<CollectiveRow> predict_collectives(const CollectivesRequest& request, const Topology& topology) {
  const hw::NcclOp op = hw::nccl_op(request.op);
  hw::NcclCluster cluster = hw::nccl_cluster(topology);
  if (!uses_calibration(request, topology, cluster)) cluster.calibration.reset();  // the catalog's figures alone
  std::vector<CollectiveRow> rows;
  const double split = split_ranks(op, topology.gpus());
  for (double size = request.min_bytes; size <= request.max_bytes * (1 + 1e-12); size *= request.factor) {
    CollectiveRow row;
    // nccl-tests' size for this request: whole float32 elements per rank (a size below one
    // element a rank prints 0 bytes and moves nothing: not a row here).
    row.bytes = std::floor(size / kFloatBytes / split) * kFloatBytes * split;
    if (row.bytes <= 0) continue;
    // With a log to compare with, each call launches as many GPUs as that log's did.
    row.time = cluster.time(op, row.bytes, topology.gpus(), request.log ? request.log->gpus_per_thread : 0);
    row.algbw_gbs = row.time.seconds > 0 ? row.bytes / row.time.seconds / 1e9 : 0;
    row.busbw_gbs = row.algbw_gbs * hw::nccl_bus_factor(op, topology.gpus());
    rows.push_back(row);
  }
  return rows;
}

namespace {

// The log's out-of-place time at exactly `bytes`, or a negative number.
double logged_seconds(const CollectiveCurve& log, double bytes) {
  for (const CurvePoint& p : log.points) {
    if (p.bytes == bytes) return p.time_s;
  }
  return -1;
}

// The log's sizes in two halves, alternating in size order; each half's calibration is fitted to
// the other half (docs/SCALE.md "Calibrated by the cluster's own log").
struct HeldOut {
  std::vector<double> half_bytes[2];
  hw::NcclCalibration fitted_without[2];
  // The calibrated time of a logged size from the half it is not in, or a negative number.
  double seconds(hw::NcclOp op, double bytes, const hw::NcclSystem& system) const {
    for (int h = 0; h < 2; ++h) {
      for (double b : half_bytes[h]) {
        if (b == bytes) return hw::nccl_calibrated(op, bytes, system, fitted_without[h]).seconds;
      }
    }
    return -1;
  }
};

std::optional<HeldOut> held_out(const CollectiveCurve& log, const hw::NcclSystem& system) {
  const hw::NcclOp op = hw::nccl_op(log.op);
  std::vector<CurvePoint> sorted = log.points;
  std::sort(sorted.begin(), sorted.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
  std::vector<CurvePoint> halves[2];
  for (std::size_t i = 0; i < sorted.size(); ++i) halves[i % 2].push_back(sorted[i]);
  HeldOut out;
  try {
    for (int h = 0; h < 2; ++h) {
      for (const CurvePoint& p : halves[h]) out.half_bytes[h].push_back(p.bytes);
      out.fitted_without[h] = hw::fit_nccl_calibration(op, system, halves[1 - h]);
    }
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // too few sizes to hold half out
  }
  return out;
}

// Mean absolute relative error, "X.X% over N sizes" ("n/a over 0 sizes").
struct ErrorMean {
  double sum = 0;
  int count = 0;
  void add(double e) {
    sum += std::abs(e);
    ++count;
  }
  std::string str() const {
    return (count > 0 ? printf_string("%.1f%%", 100 * sum / count) : std::string("n/a")) + " over " +
           std::to_string(count) + " sizes";
  }
};

}  // namespace

std::string format_collectives_table(const CollectivesRequest& request, const Topology& topology,
                                     const std::vector<CollectiveRow>& rows) {
  // The measured log beside the predictions: the request's own (log:), else the cluster's log
  // where it is of this op. The calibrated columns: with log:, the cluster's log's calibration
  // as a whole (another file predicting this one); else the log's own, held out by halves.
  const CollectiveCurve* log = request.log ? &*request.log
                               : topology.collectives_log && request.op == topology.collectives_log->op &&
                                         topology.collectives_log->ranks == topology.gpus()
                                   ? &*topology.collectives_log
                                   : nullptr;
  const std::string& log_path = request.log ? request.log_path : topology.collectives_log_path;
  const hw::NcclOp op = hw::nccl_op(request.op);
  const hw::NcclCluster cluster = hw::nccl_cluster(topology);
  const hw::NcclSystem system = cluster.system(topology.gpus());
  const std::optional<HeldOut> calibrated = log && !request.log ? held_out(*log, system) : std::nullopt;
  const hw::NcclCalibration* other = request.log && cluster.calibration ? &*cluster.calibration : nullptr;
  std::string out = "# trainsim: " + request.op + " on " + std::to_string(topology.gpus()) + " GPUs, " +
                    topology.describe() + "\n# NCCL's cost model (docs/SCALE.md), NCCL " + hw::to_string(cluster.nccl) +
                    "'s constants" +
                    (uses_calibration(request, topology, cluster)
                         ? ", calibrated by the log " + topology.collectives_log_path
                         : std::string()) +
                    ": predicted, not measured" +
                    (log ? "; beside it the measured log " + log_path : std::string()) + "\n";
  if (calibrated) {
    out += "# calibrated: the model calibrated to the log's other half of sizes (every second size, alternating)\n";
  }
  if (other) {
    out += "# calibrated: the model calibrated by the cluster's " + cluster.log->op + " log " +
           topology.collectives_log_path + " (all its sizes), predicting the measured log\n";
  }
  if (cluster.calibration) {
    out += "# the whole log's calibration, for every other op and rank count: " + hw::describe(*cluster.calibration) +
           "\n";
  }
  out += "#\n";
  char line[320];
  std::snprintf(line, sizeof line, "#%11s %13s %9s %7s %7s %10s %8s %8s  %-9s %-8s", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "algorithm", "protocol");
  out += line;
  out += log ? "   measured time  busbw   error time  busbw" : "";
  out += calibrated || other ? "   calibrated time  busbw   error time  busbw\n" : "\n";
  std::snprintf(line, sizeof line, "#%11s %13s %9s %7s %7s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)");
  out += line;
  const bool rooted = request.op == "broadcast" || request.op == "reduce";
  const bool reduces = request.op == "all_reduce" || request.op == "reduce" || request.op == "reduce_scatter";
  const double factor = hw::nccl_bus_factor(op, topology.gpus());
  const double split = split_ranks(op, topology.gpus());
  ErrorMean busbw_error, time_error, calibrated_busbw_error, calibrated_time_error;
  for (const CollectiveRow& r : rows) {
    std::snprintf(line, sizeof line, " %11.0f %13.0f %9s %7s %7d %10.2f %8.2f %8.2f  %-9s %-8s", r.bytes,
                  r.bytes / kFloatBytes / split, "float",
                  reduces ? "sum" : "none", rooted ? 0 : -1, r.time.seconds * 1e6,
                  r.algbw_gbs, r.busbw_gbs, hw::to_string(r.time.algorithm), hw::to_string(r.time.protocol));
    out += line;
    const double measured = log ? logged_seconds(*log, r.bytes) : -1;
    if (measured > 0) {
      const double measured_busbw = r.bytes / measured / 1e9 * factor;
      const double e_time = relative_error(r.time.seconds, measured);
      const double e_busbw = relative_error(r.busbw_gbs, measured_busbw);
      std::snprintf(line, sizeof line, "   %13.2f %6.2f   %+9.1f%% %+6.1f%%", measured * 1e6, measured_busbw,
                    e_time * 100, e_busbw * 100);
      out += line;
      if (r.bytes >= 64.0 * 1024 * 1024) busbw_error.add(e_busbw);
      if (r.bytes < 1024.0 * 1024) time_error.add(e_time);
      const double held =
          calibrated ? calibrated->seconds(op, r.bytes, system)
          : other    ? hw::nccl_calibrated(op, r.bytes, system, *other, request.log->gpus_per_thread).seconds
                     : -1;
      if (held > 0) {
        const double held_busbw = r.bytes / held / 1e9 * factor;
        const double c_time = relative_error(held, measured);
        const double c_busbw = relative_error(held_busbw, measured_busbw);
        std::snprintf(line, sizeof line, "   %15.2f %6.2f   %+9.1f%% %+6.1f%%", held * 1e6, held_busbw, c_time * 100,
                      c_busbw * 100);
        out += line;
        if (r.bytes >= 64.0 * 1024 * 1024) calibrated_busbw_error.add(c_busbw);
        if (r.bytes < 1024.0 * 1024) calibrated_time_error.add(c_time);
      }
    }
    out += "\n";
  }
  double sum = 0;
  for (const CollectiveRow& r : rows) sum += r.busbw_gbs;
  out += "# Avg bus bandwidth    : " + printf_string("%g", rows.empty() ? 0.0 : sum / static_cast<double>(rows.size())) +
         "\n";
  if (log) {
    out += "busbw error at >= 64 MiB: " + busbw_error.str() + "\n";
    out += "time error below 1 MiB: " + time_error.str() + "\n";
  }
  if (calibrated || other) {
    out += "calibrated busbw error at >= 64 MiB: " + calibrated_busbw_error.str() + "\n";
    out += "calibrated time error below 1 MiB: " + calibrated_time_error.str() + "\n";
  }
  return out;
}

std::string format_collectives_csv(const CollectivesRequest& request, const Topology& topology,
                                   const std::vector<CollectiveRow>& rows) {
  std::string out = "op,nodes,gpus,size_bytes,algorithm,protocol,time_us,algbw_GBps,busbw_GBps\n";
  char line[256];
  for (const CollectiveRow& r : rows) {
    std::snprintf(line, sizeof line, "%s,%d,%d,%.0f,%s,%s,%.9g,%.9g,%.9g\n", request.op.c_str(), topology.nodes,
                  topology.gpus(), r.bytes, hw::to_string(r.time.algorithm), hw::to_string(r.time.protocol),
                  r.time.seconds * 1e6, r.algbw_gbs, r.busbw_gbs);
    out += line;
  }
  return out;
}

}  // namespace trainsim::report
