#pragma once
// What `simulate CONFIG --compare RUNS.csv` prints and writes of a Comparison (report/compare.h):
// the MAPE lines, the per-configuration and MAPE tables, comparison.csv and report.md.

#include <string>
#include <utility>
#include <vector>

#include "format/runs_csv.h"
#include "report/compare.h"
#include "report/report.h"
#include "train/simulator.h"

namespace trainsim::report {

// "MAPE epoch_s: 12.3% over 4 runs; bias -3.1%", or "MAPE epoch_s: n/a over 0 runs": every compared
// configuration, whichever trainer. The program's last line.
std::string format_mape_line(const Comparison& comparison);
// One line per (trainer, ranks) group with compared configurations, e.g.
// "MAPE epoch_s (pytorch, 1 rank): 3.1% over 10 configurations; noise floor 0.8%; drift-adjusted 2.9%".
std::vector<std::string> format_group_mape_lines(const Comparison& comparison);

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
