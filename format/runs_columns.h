#pragma once
// runs.csv's columns: the one list of the file's schema. measure's C++ trainer writes them
// (format/run_row.h), simulate --compare reads them (format/runs_csv.h), and the PyTorch
// reference trainer's measure/pytorch/runs_csv.py writes the same names, which
// tests/pytorch/test_runs_csv.py holds to this list. Dependency-free.

#include <array>
#include <cstddef>
#include <string>

namespace trainsim {

// In the order both trainers write them (docs/RUNS.md defines each). The first
// kRunsRequiredColumns are what simulate --compare needs (the join key and the epoch's times);
// it reads the others where a header names them. The PyTorch trainer appends `model` for a model
// other than resnet18-cifar.
inline constexpr std::array<const char*, 23> kRunsColumns = {
    "strategy", "gpus", "batch_per_gpu", "loader_workers", "train_samples", "epoch_s", "train_s",
    "loader_wait_s", "iterations", "epochs", "threads", "device", "data", "final_loss",
    "final_accuracy", "samples_per_s", "date", "trainer", "test_samples", "test_s", "probe_s",
    "load_before", "load_after"};
inline constexpr size_t kRunsRequiredColumns = 7;

// An optional last column after kRunsColumns: the run's numeric mode (format/precision.h). A file
// whose header has it holds a value in every row; a file without it holds fp32 runs only (every
// file written before the column existed). Both trainers write it into a new file for a run that
// is not fp32, and add it to a file without it (its rows `fp32`) when such a run comes.
inline constexpr const char* kRunsPrecisionColumn = "precision";

// An optional column after kRunsPrecisionColumn, only with it: the run's memory format
// (format/memory_format.h). A file without it holds nchw runs only. A channels_last run gives a
// file both optional columns (its other rows `fp32` and `nchw` where they lacked them).
inline constexpr const char* kRunsMemoryFormatColumn = "memory_format";

// kRunsColumns joined by commas: the header line both trainers write.
inline const std::string& runs_header() {
  static const std::string header = [] {
    std::string h;
    for (const char* column : kRunsColumns) h += (h.empty() ? "" : ",") + std::string(column);
    return h;
  }();
  return header;
}

// runs_header() with kRunsPrecisionColumn after it.
inline const std::string& runs_header_with_precision() {
  static const std::string header = runs_header() + "," + kRunsPrecisionColumn;
  return header;
}

// runs_header_with_precision() with kRunsMemoryFormatColumn after it.
inline const std::string& runs_header_with_memory_format() {
  static const std::string header = runs_header_with_precision() + "," + kRunsMemoryFormatColumn;
  return header;
}

}  // namespace trainsim
