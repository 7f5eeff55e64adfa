#pragma once
// runs.csv, the measured runs' file both programs share (`measure train` and the PyTorch reference
// trainer write it, `simulate --compare` reads it; docs/COMPARE.md): its reader, keyed by what a
// run is, and the repeats of each configuration summarised by their median. A row as the C++
// trainer writes it: format/run_row.h; the columns: format/runs_columns.h.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/memory_format.h"
#include "format/precision.h"
#include "format/run_shape.h"

namespace trainsim {

// The join key: the columns runs.csv and predictions.csv share.
struct RunKey {
  Strategy strategy = Strategy::kDdp;
  int gpus = 0;
  int64_t batch_per_gpu = 0;
  int loader_workers = 0;
  int64_t train_samples = 0;
  Trainer trainer = Trainer::kTrainsim;  // `trainer` column; a file without it: measure train's rows
  int64_t test_samples = 0;              // `test_samples` column (0: no test pass, or no column)
  int threads = 0;                       // `threads` column (0: not recorded)
  std::string model;                     // `model` column (empty: not recorded, the config's model)
  Precision precision = Precision::kFp32;  // `precision` column (absent or empty: fp32)
  MemoryFormat memory_format = MemoryFormat::kNchw;  // `memory_format` column (absent or empty: nchw)

  bool operator==(const RunKey& other) const {
    return strategy == other.strategy && gpus == other.gpus && batch_per_gpu == other.batch_per_gpu &&
           loader_workers == other.loader_workers && train_samples == other.train_samples &&
           trainer == other.trainer && test_samples == other.test_samples && threads == other.threads &&
           model == other.model && precision == other.precision &&
           memory_format == other.memory_format;
  }
};

// One measured column over the repeats of a configuration.
struct Spread {
  double median = 0;  // of the repeats (the mean of the middle two for an even count)
  double min = 0;
  double max = 0;
  // (max - min) / median * 100: how far apart the repeats are, the noise floor of an error.
  double noise_pct() const { return median > 0 ? (max - min) / median * 100.0 : 0.0; }
};

// Median, min and max of `values` (not empty).
Spread spread_of(std::vector<double> values);

// Every runs.csv row with one key, summarised by the median.
struct MeasuredConfig {
  RunKey key;
  int runs = 0;                  // rows (repeats)
  Spread epoch_s;                // wall time of the timed epoch, s
  Spread train_s;                // epoch_s without the loader waits, s
  std::optional<Spread> test_s;  // the test pass, where the rows have one
  std::optional<Spread> probe_s;      // the calibration probe each run timed (rows that have one)
  std::optional<double> load_before;  // the highest 1-minute load average before a run
  std::optional<double> load_after;   // ... and after
  std::vector<int> lines;        // their runs.csv lines (1-based, the header is line 1)
};

struct RunsTable {
  std::string file;
  int rows = 0;                         // data rows read
  std::vector<MeasuredConfig> configs;  // in order of first appearance
  std::vector<std::string> data;        // distinct values of the optional `data` column
  std::vector<std::string> devices;     // distinct values of the optional `device` column
  std::vector<std::string> models;      // distinct non-empty values of the optional `model` column
  bool has_trainer_column = false;      // false: every row taken as measure train's (trainsim)
};

// The columns a runs.csv header must name (any order; other columns are allowed and ignored):
// the first kRunsRequiredColumns of format/runs_columns.h, strategy,gpus,batch_per_gpu,loader_workers,
// train_samples,epoch_s,train_s
const std::vector<std::string>& runs_required_columns();

// Parses runs.csv text (`file` names it in errors). Throws InputError(file, line, column, what)
// on the first problem: a header without a required column or with a column twice, a row whose
// field count differs from the header's, strategy not ddp/dp, gpus or batch_per_gpu < 1,
// loader_workers < 0, train_samples < 1, epoch_s or train_s not a finite number > 0, or
// train_s > epoch_s; and, where their columns exist: trainer not pytorch/trainsim, test_samples
// or threads not whole numbers >= 0, precision not one of format/precision.h's names, test_s,
// probe_s, load_before, load_after not empty nor a finite number >= 0 (test_s and probe_s > 0).
// Rows with the same key are one configuration (repeats), summarised by the median.
RunsTable parse_runs_csv(const std::string& text, const std::string& file);
// Reads and parses `path`; a missing or unreadable file is InputError(path, 0, "", ...).
RunsTable load_runs_csv(const std::string& path);

}  // namespace trainsim
