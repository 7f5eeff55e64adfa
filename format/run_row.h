#pragma once
// reports/<machine>/runs.csv: one row per measured run, appended atomically by concurrent
// writers (`measure train`; the PyTorch trainer's measure/pytorch/runs_csv.py writes the same
// line). The first five columns are the join keys of `simulate --compare`, whose reader is
// format/runs_csv.h. Dependency-free but for the format/ room.

#include <cstdint>
#include <optional>
#include <string>

#include "format/runs_columns.h"

namespace trainsim {

// One row, field for field the columns of format/runs_columns.h (kRunsColumns), in their order.
struct RunRow {
  std::string strategy;  // ddp | dp
  int gpus = 0;          // ranks (ddp) or devices (dp)
  int64_t batch_per_gpu = 0;
  int loader_workers = 0;     // per process
  int64_t train_samples = 0;  // samples of the training subset (before sampler padding)
  double epoch_s = 0;         // wall time of the timed (last) epoch; ddp: max over ranks
  double train_s = 0;         // epoch_s minus the time inside loader.next() (rank 0 for ddp)
  double loader_wait_s = 0;   // time inside loader.next() (rank 0 for ddp)
  int64_t iterations = 0;     // optimizer steps in the timed epoch (per rank for ddp)
  int epochs = 0;             // epochs run, the last one timed
  int threads = 0;            // intra-op threads per process
  std::string device;         // cpu | cuda
  std::string data;           // synthetic | cifar10
  double final_loss = 0;      // mean training loss over the timed epoch's samples (all ranks)
  double final_accuracy = 0;  // fraction of the timed epoch's samples classified right (all ranks)
  double samples_per_s = 0;   // samples processed in the timed epoch (all ranks) / epoch_s
  std::string date;           // UTC, ISO 8601
  std::string trainer = "trainsim";  // trainsim (measure train) | pytorch (measure/pytorch/train.py)
  int64_t test_samples = 0;          // images of the test pass after the timed epoch (0: none)
  std::optional<double> test_s;      // its seconds; empty without a test pass
  std::optional<double> probe_s;     // the calibration probe timed before the run; empty: --no-probe
  std::optional<double> load_before; // 1-minute load average (/proc/loadavg) before the probe
  std::optional<double> load_after;  // ... and after the run; empty where unreadable
  std::string precision = "fp32";    // the first optional column (kRunsPrecisionColumn)
  std::string memory_format = "nchw";  // the second (kRunsMemoryFormatColumn)
};

// One CSV line (no newline), columns as kRunsColumns, then the precision where the row is not
// fp32 or not nchw, then the memory format where it is not nchw; a text field holding a comma or
// a quote is quoted.
std::string format_run_row(const RunRow& row);
// The same with exactly `extra` of the two optional columns (0, 1 or 2) written.
std::string format_run_row(const RunRow& row, int extra);
// The header of a file with `extra` of the optional columns.
std::string format_runs_header(int extra);

// Splits a line written by format_run_row back into a row (format/csv.h: the dialect simulate
// --compare reads). Throws std::invalid_argument when it does not have kRunsColumns' 23 (or 24,
// the last a precision, or 25, then a memory format), a quote is left open, a number does not
// parse (counts: whole numbers within range; the optional columns may be empty) or the precision
// or memory format is not one of its names.
RunRow parse_run_row(const std::string& line);

// Throws trainsim::InputError when `path` exists, is not empty and its first line is neither
// runs_header(), runs_header_with_precision() nor runs_header_with_memory_format() (checked before
// a run, so a long run never ends on a file it cannot append to).
void check_runs_header(const std::string& path);

// Appends `row` to the CSV at `path` (parent folders created): under an exclusive flock on
// `path`.lock, reads the file, checks its header, writes header + rows + the row to a temporary
// file and renames it over `path`. A new (missing or empty) file gets the optional columns its
// row needs: runs_header() for an fp32 nchw row, runs_header_with_precision() for another
// precision, runs_header_with_memory_format() for channels_last; a file with a column gets the
// row's value (fp32 and nchw included). A row that needs a column the file lacks gives the file
// the column first, its rows `fp32` / `nchw` (what they were: a column's absence means its
// default), so every precision's and format's runs can share the default file. Another header
// throws trainsim::InputError naming the file and line 1.
void append_run_row(const std::string& path, const RunRow& row);

}  // namespace trainsim
