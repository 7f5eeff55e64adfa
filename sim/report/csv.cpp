#include "report/csv.h"

#include <optional>

#include "format/csv.h"

namespace trainsim::report {
namespace {

using csv::number;

std::string boolean(bool value) { return value ? "true" : "false"; }

std::string optional_number(const std::optional<double>& value) { return value ? number(*value) : ""; }

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string predictions_csv_header() {
  return "strategy,gpus,batch_per_gpu,global_batch,iterations,epoch_s,train_s,compute_s,comm_s,"
         "exposed_comm_s,loader_stall_s,peak_mem_gib,fits,iteration_s,comm_bytes_per_rank,busbw_gbs,"
         "device_mem_gib,loader_workers,train_samples,model,extrapolated,simulated_iterations,loss_at_k,"
         "epochs_to_target,time_to_target_s,efficiency,sync_bn_s,test_s,not_runnable,trainer,runnable,"
         "epochs_to_target_accuracy,time_to_target_accuracy_s,first_iteration_peak_mem_gib,epoch_s_lo,epoch_s_hi,precision,"
         "memory_format";
}

std::string format_predictions_csv(const std::vector<SimResult>& results, const std::string& model,
                                   const LargeBatchReport* large_batch) {
  std::string out = predictions_csv_header() + "\n";
  for (const auto& r : results) out += format_predictions_csv_row(r, model, large_batch);
  return out;
}

std::string format_predictions_csv_row(const SimResult& r, const std::string& model,
                                       const LargeBatchReport* large_batch) {
  std::string out;
  std::optional<LargeBatchRow> q4;
  if (large_batch && r.runnable) q4 = large_batch->row(r);
  // A configuration that cannot run has no predicted figures: empty cells.
  const auto timed = [&r](double value) { return r.runnable ? number(value) : std::string(); };
  const std::vector<std::string> cells{
      to_string(r.spec.strategy),
      std::to_string(r.spec.gpus),
      std::to_string(r.spec.batch_per_gpu),
      r.runnable ? std::to_string(r.global_batch) : "",
      r.runnable ? std::to_string(r.iterations) : "",
      timed(r.epoch_s),
      timed(r.train_s),
      timed(r.compute_s),
      timed(r.comm_s),
      timed(r.exposed_comm_s),
      timed(r.loader_stall_s),
      timed(r.peak_mem_bytes / kGib),
      r.runnable ? boolean(r.fits) : "",
      timed(r.iteration_s),
      timed(r.comm_bytes_per_rank),
      timed(r.busbw_gbs),
      number(r.device_memory_bytes / kGib),
      std::to_string(r.spec.loader_workers),
      std::to_string(r.spec.train_samples),
      csv::field(model),
      r.runnable ? boolean(r.extrapolated) : "",
      r.runnable ? std::to_string(r.simulated_iterations) : "",
      q4 ? optional_number(q4->prediction.loss_at_k) : "",
      q4 ? optional_number(q4->prediction.epochs_to_target) : "",
      q4 ? optional_number(q4->time_to_target_s) : "",
      q4 ? optional_number(q4->prediction.efficiency) : "",
      timed(r.sync_bn_s),
      r.spec.test_pass ? timed(r.test_s) : "",
      csv::field(r.not_runnable),
      to_string(r.spec.trainer),
      boolean(r.runnable),
      q4 ? optional_number(q4->prediction.epochs_to_target_accuracy) : "",
      q4 ? optional_number(q4->time_to_target_accuracy_s) : "",
      r.runnable && r.first_iteration_peak_mem_bytes > 0 ? number(r.first_iteration_peak_mem_bytes / kGib) : "",
      r.runnable && r.epoch_s_hi > 0 ? number(r.epoch_s_lo) : "",
      r.runnable && r.epoch_s_hi > 0 ? number(r.epoch_s_hi) : "",
      precision_name(r.spec.precision),
      memory_format_name(r.spec.memory_format),
  };
  for (size_t i = 0; i < cells.size(); ++i) out += (i == 0 ? "" : ",") + cells[i];
  out += "\n";
  return out;
}

}  // namespace trainsim::report
