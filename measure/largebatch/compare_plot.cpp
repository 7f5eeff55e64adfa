#include "largebatch/compare_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "largebatch/text_file.h"
#include "report/gnuplot.h"
#include "stats/large_batch.h"

namespace trainsim::measure {
namespace {

// Four global batches per doubling.
constexpr int kGridPerDoubling = 4;

// One colour per rule, the same on both plots and for a rule's line and points.
const char* rule_colour(const std::string& rule) {
  static const std::map<std::string, const char*> colours = {
      {"constant", "#1b9e77"}, {"linear", "#d95f02"}, {"linear-warmup", "#7570b3"}, {"sqrt", "#e7298a"},
      {"lars", "#66a61e"}};
  const auto it = colours.find(rule);
  return it == colours.end() ? "#666666" : it->second;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// The global batches a line is drawn at: the baseline's, then four per doubling past it, ending at
// the largest run's batch.
std::vector<int64_t> batch_grid(int64_t base_batch, int64_t largest) {
  std::vector<int64_t> grid;
  for (int i = 0;; ++i) {
    const auto b = static_cast<int64_t>(std::llround(static_cast<double>(base_batch) * std::exp2(i / double(kGridPerDoubling))));
    if (b >= largest) break;
    if (grid.empty() || b > grid.back()) grid.push_back(b);
  }
  grid.push_back(largest);
  return grid;
}

// The ramp a rule's line is drawn with: its runs' most common recorded one (0: none recorded, the
// model's default).
double common_warmup(const ComparisonSummary& s, LrRule rule) {
  std::map<double, int> counts;
  for (const RunComparison& c : s.runs) {
    if (!c.measured_only && c.run.rule == rule && c.warmup_epochs > 0) ++counts[c.warmup_epochs];
  }
  double best = 0;
  int most = 0;
  for (const auto& [warmup, n] : counts) {
    if (n > most) best = warmup, most = n;
  }
  return best;
}

// A run's curve as scripts/largebatch-fashion.sh's runs record it, one mean loss per epoch and no
// samples between: the baseline's first k epochs, for reading a line's predictions as a run's are.
TrainingCurve as_a_run(const TrainingCurve& baseline, int epochs) {
  TrainingCurve run = baseline;
  run.epochs.resize(std::min(run.epochs.size(), static_cast<size_t>(epochs)));
  run.samples.clear();
  return run;
}

}  // namespace

ToTargetPlot to_target_plot(const ComparisonSummary& s, const CompareOptions& o) {
  ToTargetPlot plot;
  if (s.runs.empty() || s.baselines.empty()) return plot;
  const auto seed = std::find(s.seeds.begin(), s.seeds.end(), o.from_seed.value_or(s.seeds.front()));
  const TrainingCurve& baseline = s.baselines[static_cast<size_t>(seed - s.seeds.begin())];
  plot.seed = *seed;
  plot.base_batch = o.base_batch;
  plot.train_samples = baseline.train_samples;
  plot.epochs = o.epochs;
  plot.target_loss = run_settings(o, LrRule::kConstant, 0, baseline).target_loss.value_or(0);
  const double n = static_cast<double>(baseline.train_samples);

  // The measured points, one series per rule label (every seed's runs together).
  int64_t largest = o.base_batch;
  std::vector<LrRule> rules;
  for (const RunComparison& c : s.runs) {
    largest = std::max(largest, c.run.batch);
    if (!c.measured_only && std::find(rules.begin(), rules.end(), c.run.rule) == rules.end()) rules.push_back(c.run.rule);
    if (!c.loss_at_k) continue;  // diverged or not ended: no crossing to draw
    if (!c.epochs_to_target) {
      ++plot.runs_not_reaching;
      continue;
    }
    const std::string label = rule_label(c.run);
    auto series = std::find_if(plot.measured.begin(), plot.measured.end(),
                               [&](const ToTargetSeries& m) { return m.rule == label; });
    if (series == plot.measured.end()) series = plot.measured.insert(plot.measured.end(), {label, {}});
    series->points.push_back({c.run.batch, *c.epochs_to_target, *c.epochs_to_target * n / static_cast<double>(c.run.batch)});
  }

  // The lines: each rule's model from the chosen baseline over the grid.
  const TrainingCurve recorded = as_a_run(baseline, o.epochs);
  const std::vector<int64_t> grid = batch_grid(o.base_batch, largest);
  for (LrRule rule : rules) {
    const LargeBatchSettings settings = run_settings(o, rule, common_warmup(s, rule), baseline);
    const LargeBatchModel model(baseline, o.num_classes, settings);
    ToTargetSeries line{to_string(rule), {}};
    bool broken = false;
    for (int64_t b : grid) {
      const LargeBatchPrediction p = model.predict(b);
      const std::optional<double> epochs =
          p.no_progress ? std::nullopt
                        : epochs_to_target_as_recorded(recorded, o.epochs, o.num_classes, model.target_loss(), p);
      if (!epochs) {
        broken = !line.points.empty();
        continue;
      }
      line.points.push_back({b, *epochs, *epochs * n / static_cast<double>(b), broken});
      broken = false;
    }
    if (!line.points.empty()) plot.predicted.push_back(std::move(line));
  }
  return plot;
}

std::string to_target_data(const ToTargetPlot& plot) {
  std::ostringstream out;
  out << "# measure largebatch-compare: steps and epochs to the target loss vs global batch.\n"
         "# Columns: global batch, optimizer steps, epochs. Blocks (gnuplot index), in order: the\n"
         "# predicted lines, then the measured runs; each block's first line names it.\n";
  bool first = true;
  const auto block = [&](const ToTargetSeries& series, const std::string& what) {
    if (!first) out << "\n\n";
    first = false;
    out << "# " << series.rule << ": " << what << "\n";
    for (const ToTargetPoint& p : series.points) {
      if (p.gap_before) out << "\n";  // a blank line breaks the line
      out << p.batch << " " << number(p.steps) << " " << number(p.epochs) << "\n";
    }
  };
  for (const ToTargetSeries& line : plot.predicted) block(line, "predicted from seed " + std::to_string(plot.seed) + "'s baseline");
  for (const ToTargetSeries& points : plot.measured) block(points, "measured runs");
  return out.str();
}

std::string to_target_script(const ToTargetPlot& plot, const std::string& data, const std::string& steps_svg,
                             const std::string& epochs_svg) {
  // The plot of one column (2: steps, 3: epochs) of every block: the lines, then the points.
  const auto plot_command = [&](int column) {
    const std::string using_column = " using 1:" + std::to_string(column);
    std::string command = "plot ";
    int index = 0;
    const auto clause = [&](const ToTargetSeries& series, const std::string& style, const std::string& what) {
      command += (index ? ", \\\n     " : "") + std::string("'") + data + "' index " + std::to_string(index) +
                 using_column + " with " + style + " lc rgb '" + rule_colour(series.rule) + "' title '" +
                 series.rule + ": " + what + "'";
      ++index;
    };
    for (const ToTargetSeries& line : plot.predicted) clause(line, "lines lw 2", "model");
    for (const ToTargetSeries& points : plot.measured) clause(points, "points pt 7 ps 1.2", "runs");
    return command + "\n";
  };
  const std::string target = "loss " + number(plot.target_loss);
  std::string script =
      "# measure largebatch-compare: steps and epochs to the target " + target + " vs global batch.\n"
      "# Lines: the model per lr rule from seed " + std::to_string(plot.seed) + "'s baseline (batch " +
      std::to_string(plot.base_batch) + "), its epoch means crossed as the runs' are; a break where it\n"
      "# predicts no progress or no crossing. Points: the runs, each against its own seed's target;\n"
      "# runs that did not reach it in " + std::to_string(plot.epochs) + " epochs are not drawn (" +
      std::to_string(plot.runs_not_reaching) + ").\n"
      "# Redraw: run gnuplot on this script in its folder (gnuplot 5, Debian package gnuplot-nox).\n" +
      std::string(report::kOutdirDefault) +
      "set terminal svg size 900,600 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
      "set logscale xy\nset format x '%g'\nset format y '%g'\nset grid\nset key outside right top\n"
      "set xlabel 'global batch'\n";
  script += "set output outdir.'/" + steps_svg + "'\nset title 'Optimizer steps to the target " + target +
            " (lines: model; points: runs)'\nset ylabel 'steps'\n" + plot_command(2);
  script += "set output outdir.'/" + epochs_svg + "'\nset title 'Epochs to the target " + target +
            " (lines: model; points: runs)'\nset ylabel 'epochs'\n" + plot_command(3);
  return script + "unset output\n";
}

std::string write_to_target_plot(const ToTargetPlot& plot, const std::string& dir, const std::string& suffix,
                                 std::string& warning) {
  namespace fs = std::filesystem;
  std::string section = "## Steps and epochs to the target vs global batch\n\n";
  if (plot.predicted.empty() && plot.measured.empty()) {
    return section + "Nothing to draw: no run reached its target and the model predicts no crossing.\n\n";
  }
  const std::string data = "to_target" + suffix + ".dat";
  const std::string script = "to_target" + suffix + ".gp";
  const std::string steps_svg = "steps_to_target" + suffix + ".svg";
  const std::string epochs_svg = "epochs_to_target" + suffix + ".svg";
  write_text_atomically((fs::path(dir) / data).string(), to_target_data(plot));
  write_text_atomically((fs::path(dir) / script).string(), to_target_script(plot, data, steps_svg, epochs_svg));
  const report::DrawOutcome outcome = report::draw_svgs(dir, script, {steps_svg, epochs_svg});
  const bool drawn = outcome.drawn;
  if (!drawn) warning = outcome.problem + ": " + script + " not drawn";
  section += drawn ? "![steps to the target](" + steps_svg + ")\n![epochs to the target](" + epochs_svg + ")\n\n"
                   : "Not drawn (gnuplot missing or failed): `gnuplot " + script + "` in this folder draws it.\n\n";
  section += "Lines: the model per lr rule from seed " + std::to_string(plot.seed) + "'s baseline (batch " +
             std::to_string(plot.base_batch) + ", target loss " + number(plot.target_loss) +
             "), its epoch means crossed as the runs' are, broken where it predicts no progress or no crossing. "
             "Points: the runs, each against its own seed's target (the Runs table's). Steps are optimizer steps, "
             "epochs x " + std::to_string(plot.train_samples) + " / batch. With the lr tuned at each batch, "
             "McCandlish's relation has the steps level off at S_min once the batch outgrows the noise scale while "
             "the epochs rise; the lines show where each rule departs from that. " +
             (plot.runs_not_reaching > 0 ? std::to_string(plot.runs_not_reaching) + " run(s) did not reach their "
                                           "target in " + std::to_string(plot.epochs) + " epochs: not drawn. "
                                         : std::string()) +
             "Data: " + data + "; script: " + script + ".\n\n";
  return section;
}

}  // namespace trainsim::measure
