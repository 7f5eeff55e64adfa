#pragma once
// `simulate CONFIG --compare RUNS.csv`: measured epochs (reports/<machine>/runs.csv, written by
// `measure train`) joined with predictions on (strategy, gpus, batch_per_gpu, loader_workers,
// train_samples), the error of each prediction and the MAPE. Definitions: docs/COMPARE.md.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/config.h"
#include "report/report.h"
#include "train/simulator.h"

namespace trainsim::report {

// The join key: the columns runs.csv and predictions.csv share.
struct RunKey {
  Strategy strategy = Strategy::kDdp;
  int gpus = 0;
  int64_t batch_per_gpu = 0;
  int loader_workers = 0;
  int64_t train_samples = 0;

  bool operator==(const RunKey& other) const {
    return strategy == other.strategy && gpus == other.gpus && batch_per_gpu == other.batch_per_gpu &&
           loader_workers == other.loader_workers && train_samples == other.train_samples;
  }
};

// One measured column over the repeats of a configuration.
struct Spread {
  double mean = 0;  // sum / count
  double min = 0;
  double max = 0;
};

// Every runs.csv row with one key, averaged.
struct MeasuredConfig {
  RunKey key;
  int runs = 0;            // rows averaged (repeats)
  Spread epoch_s;          // wall time of the timed epoch, s
  Spread train_s;          // epoch_s without the loader waits, s
  std::vector<int> lines;  // their runs.csv lines (1-based, the header is line 1)
};

struct RunsTable {
  std::string file;
  int rows = 0;                         // data rows read
  std::vector<MeasuredConfig> configs;  // in order of first appearance
  std::vector<std::string> data;        // distinct values of the optional `data` column
  std::vector<std::string> devices;     // distinct values of the optional `device` column
};

// The columns a runs.csv header must name (any order; other columns are allowed and ignored):
// strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s,train_s
const std::vector<std::string>& runs_required_columns();

// Parses runs.csv text (`file` names it in errors). Throws InputError(file, line, column, what)
// on the first problem: a header without a required column or with a column twice, a row whose
// field count differs from the header's, strategy not ddp/dp, gpus or batch_per_gpu < 1,
// loader_workers < 0, train_samples < 1, epoch_s or train_s not a finite number > 0, or
// train_s > epoch_s. Rows with the same key are averaged (repeats).
RunsTable parse_runs_csv(const std::string& text, const std::string& file);
// Reads and parses `path`; a missing or unreadable file is InputError(path, 0, "", ...).
RunsTable load_runs_csv(const std::string& path);

// error % = (predicted - measured) / measured * 100 (positive: the prediction is too slow).
double error_percent(double predicted, double measured);

struct ComparedRun {
  MeasuredConfig measured;
  SimResult predicted;
  bool in_sweep = false;        // the config's grid has this configuration
  bool profiled_batch = false;  // the profile timed this per-GPU batch (else interpolated/extrapolated)
  double epoch_error_pct = 0;   // error_percent(predicted epoch_s, mean measured epoch_s)
  double train_error_pct = 0;   // error_percent(predicted train_s, mean measured train_s)
};

// A measured configuration that got no prediction, and why.
struct UnpredictedRun {
  MeasuredConfig measured;
  std::string reason;  // e.g. "train_samples 2048 != config 50000"
};

struct Comparison {
  std::vector<ComparedRun> compared;         // order: strategy (config order), gpus, batch
  std::vector<UnpredictedRun> unpredicted;   // in runs.csv order
  std::vector<RunSpec> unmeasured;           // sweep configurations without a measurement, sweep order
  std::vector<SimResult> extra_predictions;  // measured configurations outside the sweep, simulated
};

// Predicts a configuration outside the sweep. May throw InputError or std::invalid_argument when
// the profile cannot predict it; the run is then listed as unpredicted with that message.
using Predictor = std::function<SimResult(const RunSpec&)>;

// Joins `runs` with the sweep's results. A measured key whose train_samples and loader_workers
// are the config's is predicted: from `sweep_results` when the sweep has it, else by `predict`
// (every measured cell is worth a prediction, in the grid or not). Keys with other samples or
// workers are listed as unpredicted with the reason.
Comparison compare_runs(const SweepConfig& config, const std::vector<SimResult>& sweep_results, const RunsTable& runs,
                        const std::vector<int64_t>& profiled_batches, const Predictor& predict);

struct ErrorSummary {
  int runs = 0;                        // compared configurations
  double mape_epoch_pct = 0;           // mean |epoch error %|
  double mape_train_pct = 0;           // mean |train error %|
  double mean_epoch_error_pct = 0;     // mean signed epoch error % (bias)
  double max_abs_epoch_error_pct = 0;  // largest |epoch error %|
};

// MAPE = (1/n) * sum |error %| over the configurations `keep` accepts (all when empty).
ErrorSummary summarize_errors(const std::vector<ComparedRun>& runs,
                              const std::function<bool(const ComparedRun&)>& keep = {});

// "MAPE epoch_s: 12.3% over 4 runs", or "MAPE epoch_s: n/a over 0 runs".
std::string format_mape_line(const Comparison& comparison);

// "+4.2" / "-12.0": an error in percent with its sign, one decimal.
std::string format_error_percent(double percent);

// What `simulate --compare` prints after the normal tables: the per-configuration table, the
// MAPE table, and the configurations on one side only.
std::string format_comparison(const Comparison& comparison, const RunsTable& runs);

// CSV of the join (DIR/comparison.csv), one row per compared configuration.
std::string format_comparison_csv(const Comparison& comparison);

// Mismatches between the runs and the profile that make the comparison questionable: runs.csv
// `data` or `device` values other than the profile's loader data and device kind. Empty if none.
std::vector<std::string> comparison_warnings(const ReportContext& context, const RunsTable& runs);

// What report.md says about the plots.
struct PlotSection {
  std::vector<std::pair<std::string, std::string>> drawn;  // (svg file name, caption)
  std::vector<std::string> skipped;                        // why a plot or all plots are missing
};

// DIR/report.md. `command` is how to reproduce it; `sweep_results` are the sweep's predictions.
std::string format_compare_report(const ReportContext& context, const RunsTable& runs,
                                  const std::vector<SimResult>& sweep_results, const Comparison& comparison,
                                  const PlotSection& plots, const std::string& command);

}  // namespace trainsim::report
