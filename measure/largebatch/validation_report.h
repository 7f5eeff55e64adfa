#pragma once
// The files of `measure largebatch-validate` (docs/LARGE_BATCH.md "Validation"): report.md,
// predictions.csv, trials.csv, baseline_curves.csv, and steps.svg drawn by gnuplot when it is
// installed (steps.gp and steps.dat redraw it). Torch-free.

#include <string>
#include <vector>

#include "largebatch/validation.h"

namespace trainsim::measure {

struct ReportContext {
  std::string command;   // the exact command line
  std::string machine;   // reports/<machine>/
  std::string date;      // UTC, ISO 8601
  std::string libtorch;  // LibTorch version
  double wall_s = 0;     // seconds the whole validation took
};

std::string predictions_csv(const ValidationResult& result);
std::string trials_csv(const ValidationResult& result);
std::string baseline_curves_csv(const ValidationResult& result);
// Plot data: one line "measured predicted predicted_integrated batch" per compared prediction.
std::string plot_data(const ValidationResult& result);
std::string report_markdown(const ValidationResult& result, const ValidationOptions& options,
                            const ReportContext& context, bool has_plot);

// Writes every file into `dir` (created if missing), each atomically. Returns the paths written.
// The plot is skipped (the report says so, and `plot_warning` why) when no `gnuplot` is on PATH or
// it fails; no steps.svg of older data is left then.
std::vector<std::string> write_validation_report(const ValidationResult& result, const ValidationOptions& options,
                                                 const ReportContext& context, const std::string& dir,
                                                 std::string& plot_warning);

}  // namespace trainsim::measure
