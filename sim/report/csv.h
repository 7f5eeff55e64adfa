#pragma once
// DIR/predictions.csv: one row per simulated configuration (columns in docs/OUTPUT.md).

#include <string>
#include <vector>

#include "report/large_batch.h"
#include "train/simulator.h"

namespace trainsim::report {

// The header row, without the trailing newline. The first 13 columns are a stable contract:
// strategy,gpus,batch_per_gpu,global_batch,iterations,epoch_s,train_s,compute_s,comm_s,
// exposed_comm_s,loader_stall_s,peak_mem_gib,fits
std::string predictions_csv_header();

// Header plus one row per result, in the given order. Numbers use %.9g, booleans true/false.
// The large-batch columns (loss_at_k, epochs_to_target, time_to_target_s, efficiency) come from
// `large_batch` and are empty without it or where nothing is predicted.
std::string format_predictions_csv(const std::vector<SimResult>& results, const std::string& model,
                                   const LargeBatchReport* large_batch = nullptr);
// One row of it, with its newline.
std::string format_predictions_csv_row(const SimResult& result, const std::string& model,
                                       const LargeBatchReport* large_batch = nullptr);

}  // namespace trainsim::report
