#pragma once
// `measure largebatch-compare`'s plot (issue 58): the steps and the epochs to the target loss vs
// the global batch, the model's per lr rule as lines (from one seed's baseline) and every run's
// measured as points: McCandlish's picture, S(B) levelling off at S_min where the batch outgrows the
// noise scale and E(B) rising past it. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "largebatch/compare.h"

namespace trainsim::measure {

struct ToTargetPoint {
  int64_t batch = 0;
  double epochs = 0;  // to the target loss
  double steps = 0;   // optimizer steps: epochs x train_samples / batch
  bool gap_before = false;  // a predicted line is broken before this point
};

// One line (predicted) or one set of points (measured) of the plot.
struct ToTargetSeries {
  std::string rule;  // lr rule's name, or "lars"
  // Predicted: ascending batches; a batch where the model predicts no progress or no crossing of
  // the target within the baseline's curve is left out and breaks the line there (gap_before).
  std::vector<ToTargetPoint> points;
};

struct ToTargetPlot {
  uint64_t seed = 0;         // whose baseline draws the lines
  double target_loss = 0;    // that baseline's target (every run is read against its own seed's)
  int64_t base_batch = 0;
  int64_t train_samples = 0;
  int epochs = 0;            // k: the runs' length, the comparison's horizon
  std::vector<ToTargetSeries> predicted;  // one per lr rule of the runs (LARS has no prediction)
  std::vector<ToTargetSeries> measured;   // one per rule of the runs, LARS included
  int runs_not_reaching = 0;              // complete runs that did not reach their target in k epochs
};

// The lines over a grid of global batches from the baseline's to the largest run's (four per
// doubling), each rule's model as the comparison builds it (run_settings; a linear-warmup line
// with its runs' recorded ramp), its epoch means crossed as the runs' are
// (epochs_to_target_as_recorded), so that a line and the points beside it are read alike. The
// baseline: options.from_seed's, else the first seed's. Empty where there are no runs.
ToTargetPlot to_target_plot(const ComparisonSummary& summary, const CompareOptions& options);

// The plot's data (gnuplot blocks: the predicted lines, then the measured points, one block per
// rule) and its script (`data` and the two SVGs named as given, in the script's folder).
std::string to_target_data(const ToTargetPlot& plot);
std::string to_target_script(const ToTargetPlot& plot, const std::string& data, const std::string& steps_svg,
                             const std::string& epochs_svg);

// Writes to_target<suffix>.dat and .gp into `dir` and draws steps_to_target<suffix>.svg and
// epochs_to_target<suffix>.svg with gnuplot where it is found; returns the report's Markdown section
// (the two images, or why they are missing, and how to read them). A plot with nothing to draw
// writes nothing and returns a section that says so. `warning` gets gnuplot's failure, if any.
std::string write_to_target_plot(const ToTargetPlot& plot, const std::string& dir, const std::string& suffix,
                                 std::string& warning);

}  // namespace trainsim::measure
