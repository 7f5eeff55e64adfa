#pragma once
// DIR/predictions.csv: one row per simulated configuration (columns in docs/OUTPUT.md).

#include <string>
#include <vector>

#include "train/simulator.h"

namespace trainsim::report {

// The header row, without the trailing newline. The first 13 columns are a stable contract:
// strategy,gpus,batch_per_gpu,global_batch,iterations,epoch_s,train_s,compute_s,comm_s,
// exposed_comm_s,loader_stall_s,peak_mem_gib,fits
std::string predictions_csv_header();

// Header plus one row per result, in the given order. Numbers use %.9g, booleans true/false.
std::string format_predictions_csv(const std::vector<SimResult>& results, const std::string& model);

}  // namespace trainsim::report
