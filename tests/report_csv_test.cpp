// DIR/predictions.csv: header and row format.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/csv.h"

namespace trainsim::report {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.push_back("");  // getline drops a last empty cell
  return cells;
}

TEST(PredictionsCsv, HeaderStartsWithTheContractColumns) {
  const std::string contract =
      "strategy,gpus,batch_per_gpu,global_batch,iterations,epoch_s,train_s,compute_s,comm_s,exposed_comm_s,"
      "loader_stall_s,peak_mem_gib,fits";
  EXPECT_EQ(predictions_csv_header().rfind(contract + ",", 0), 0u) << predictions_csv_header();
  EXPECT_EQ(format_predictions_csv({}, "resnet18-cifar"), predictions_csv_header() + "\n");
}

TEST(PredictionsCsv, OneRowPerResultWithFullPrecision) {
  SimResult r;
  r.spec.strategy = Strategy::kDp;
  r.spec.gpus = 2;
  r.spec.batch_per_gpu = 4096;
  r.spec.train_samples = 50000;
  r.spec.loader_workers = 2;
  r.global_batch = 8192;
  r.iterations = 7;  // ceil(50000 / 8192)
  r.fits = false;
  r.epoch_s = 12.3456789012;
  r.train_s = 10.0;
  r.compute_s = 0.000123456789012;
  r.comm_s = 2.5;
  r.exposed_comm_s = 2.5;
  r.loader_stall_s = 2.3456789012;
  r.peak_mem_bytes = 3.0 * (1 << 30);       // 3 GiB
  r.device_memory_bytes = 2.0 * (1 << 30);  // 2 GiB: does not fit
  r.iteration_s = 1.7636684;
  r.comm_bytes_per_rank = 312871136;
  r.busbw_gbs = 125.0;
  r.extrapolated = true;
  r.simulated_iterations = 4;
  // No large-batch report: loss_at_k, epochs_to_target, time_to_target_s, efficiency empty;
  // sync_bn_s 0; no test pass (test_s empty); runnable (not_runnable empty); trainer pytorch.
  SimResult ddp = r;
  ddp.spec.strategy = Strategy::kDdp;
  ddp.fits = true;
  ddp.extrapolated = false;

  std::istringstream lines(format_predictions_csv({r, ddp}, "resnet18-cifar"));
  std::string header, first, second, extra;
  ASSERT_TRUE(std::getline(lines, header));
  ASSERT_TRUE(std::getline(lines, first));
  ASSERT_TRUE(std::getline(lines, second));
  EXPECT_FALSE(std::getline(lines, extra));
  const auto columns = split(header);
  const auto cells = split(first);
  ASSERT_EQ(cells.size(), columns.size());
  // %.9g keeps 9 significant digits: 12.3456789012 -> 12.3456789, 0.000123456789012 -> 0.000123456789.
  EXPECT_EQ(first,
            "dp,2,4096,8192,7,12.3456789,10,0.000123456789,2.5,2.5,2.3456789,3,false,1.7636684,312871136,125,2,"
            "2,50000,resnet18-cifar,true,4,,,,,0,,,pytorch,true,,,,,,fp32,nchw");  // no target accuracy: its two columns empty
  EXPECT_EQ(split(second)[0], "ddp");
  EXPECT_EQ(split(second)[12], "true");   // fits
  EXPECT_EQ(split(second)[20], "false");  // extrapolated
}

TEST(PredictionsCsv, ANotRunnableConfigurationHasNoFigures) {
  SimResult r;
  r.spec.strategy = Strategy::kDp;
  r.spec.gpus = 2;
  r.spec.batch_per_gpu = 32;
  r.spec.trainer = Trainer::kTrainsim;
  r.runnable = false;
  r.not_runnable = "DataParallel over 2 devices needs CUDA devices; the profile's device is the CPU";
  r.device_memory_bytes = 1.0 * (1 << 30);
  std::istringstream lines(format_predictions_csv({r}, "resnet18-cifar"));
  std::string header, row;
  ASSERT_TRUE(std::getline(lines, header));
  ASSERT_TRUE(std::getline(lines, row));
  // Every predicted figure empty; the reason and the flag near the end, the target accuracy's two
  // columns after them.
  EXPECT_EQ(row,
            "dp,2,32,,,,,,,,,,,,,,1,2,50000,resnet18-cifar,,,,,,,,,DataParallel over 2 devices needs CUDA devices; "
            "the profile's device is the CPU,trainsim,false,,,,,,fp32,nchw");
}

TEST(PredictionsCsv, QuotesTextWithCommas) {
  SimResult r;
  const std::string csv = format_predictions_csv({r}, "model, \"odd\"");
  EXPECT_NE(csv.find(",\"model, \"\"odd\"\"\","), std::string::npos) << csv;
}

}  // namespace
}  // namespace trainsim::report
