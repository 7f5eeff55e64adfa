#pragma once
// The --compare report's plots: a gnuplot script and its data files (written into the report's
// folder, so `gnuplot plots.gp` there redraws them), run with gnuplot's svg terminal.

#include <optional>
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/gnuplot.h"
#include "report/large_batch.h"
#include "train/simulator.h"

namespace trainsim::report {

struct TextFile {
  std::string name;  // file name inside the report folder
  std::string content;
};

struct PlotScript {
  std::vector<TextFile> files;  // plots.gp first, then the .dat files it reads
  // The SVGs the script draws (file name, caption), in order. Empty when there is nothing to plot.
  std::vector<std::pair<std::string, std::string>> plots;
  std::vector<std::string> skipped;  // a plot left out and why, e.g. no measured speedup
};

// Plots of `comparison` against `predictions` (the sweep plus the extra predictions in the config's
// setting: its trainer, loader workers and samples):
//  - epoch_vs_batch.svg: epoch time vs per-GPU batch, one predicted line per strategy x gpus
//    (configurations predicted to fit), measured medians (runs in the config's setting) as points
//    with min..max bars;
//  - speedup_vs_gpus.svg: T(1,b)/T(N,b) vs N for each strategy and batch measured on 1 GPU and on
//    at least one N >= 2, predicted line and measured points, with the ideal speedup = N;
//  - predicted_vs_measured.svg: predicted vs measured epoch_s and train_s of every compared
//    configuration, log-log, with y = x;
//  - large_batch.svg (with `large_batch`, Q4's report, and its grid's global batches): the
//    predicted loss in epoch k and test accuracy at its end vs the global batch, one line per
//    learning-rate rule.
PlotScript build_plot_script(const Comparison& comparison, const std::vector<SimResult>& predictions,
                             const Unit& unit, const LargeBatchReport* large_batch = nullptr,
                             const std::vector<int64_t>& large_batch_batches = {});

// Writes the script and its data into `dir` (each atomically), then draws its SVGs (draw_svgs:
// through a staging folder, none left from older data where they are not all drawn). Without
// gnuplot on PATH nothing is drawn (problem says so); the script and data are still written.
// Throws OutputError when a file cannot be written.
DrawOutcome draw_plots(const std::string& dir, const PlotScript& script);

}  // namespace trainsim::report
