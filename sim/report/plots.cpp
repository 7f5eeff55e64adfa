#include "report/plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "format/csv.h"
#include "report/atomic_file.h"
#include "report/gnuplot.h"
#include "report/report.h"

namespace trainsim::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScriptName = "plots.gp";

using csv::number;

// A .dat file of several data blocks (gnuplot `index i`: blocks separated by two blank lines),
// and the plot clauses that read them. Empty blocks are never written (gnuplot rejects them).
class DataFile {
 public:
  explicit DataFile(std::string name) : name_(std::move(name)) {}

  // Adds a block of rows and the clause plotting it (`using ... with ... title ...`).
  void add(const std::string& comment, const std::vector<std::vector<double>>& rows, const std::string& clause) {
    if (rows.empty()) return;
    if (blocks_ > 0) text_ += "\n\n";
    text_ += "# " + comment + "\n";
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) text_ += (i == 0 ? "" : " ") + number(row[i]);
      text_ += "\n";
    }
    clauses_.push_back("'" + name_ + "' index " + std::to_string(blocks_) + " " + clause);
    ++blocks_;
  }
  bool empty() const { return blocks_ == 0; }
  const std::vector<std::string>& clauses() const { return clauses_; }
  TextFile file(const std::string& header) const { return {name_, header + text_}; }

 private:
  std::string name_;
  std::string text_;
  std::vector<std::string> clauses_;
  int blocks_ = 0;
};

std::string plot_command(const std::vector<std::string>& clauses) {
  std::string out = "plot ";
  for (size_t i = 0; i < clauses.size(); ++i) out += (i == 0 ? "" : ", \\\n     ") + clauses[i];
  return out + "\n";
}

struct SeriesKey {
  Strategy strategy;
  int gpus;
  bool operator<(const SeriesKey& other) const {
    return strategy != other.strategy ? strategy < other.strategy : gpus < other.gpus;
  }
};

// Epoch time vs per-GPU (per-rank) batch: per strategy x gpus a predicted line and measured points.
void epoch_vs_batch(const Comparison& c, const std::vector<SimResult>& predictions, const Unit& unit,
                    PlotScript& script, std::string& commands) {
  std::vector<SeriesKey> series;
  const auto add_series = [&series](SeriesKey key) {
    if (std::none_of(series.begin(), series.end(), [&](const SeriesKey& k) { return !(k < key) && !(key < k); })) {
      series.push_back(key);
    }
  };
  for (const auto& r : predictions) add_series({r.spec.strategy, r.spec.gpus});
  for (const auto& r : c.compared) add_series({r.measured.key.strategy, r.measured.key.gpus});
  std::sort(series.begin(), series.end());

  DataFile data("epoch_vs_batch.dat");
  int color = 1;
  for (const SeriesKey& key : series) {
    std::vector<std::vector<double>> predicted, measured;
    for (const auto& r : predictions) {
      if (r.spec.strategy == key.strategy && r.spec.gpus == key.gpus && r.runnable && r.fits) {
        predicted.push_back({static_cast<double>(r.spec.batch_per_gpu), r.epoch_s});
      }
    }
    std::sort(predicted.begin(), predicted.end());
    for (const auto& r : c.compared) {
      const MeasuredConfig& m = r.measured;
      if (m.key.strategy == key.strategy && m.key.gpus == key.gpus) {
        measured.push_back({static_cast<double>(m.key.batch_per_gpu), m.epoch_s.median, m.epoch_s.min, m.epoch_s.max});
      }
    }
    std::sort(measured.begin(), measured.end());
    const std::string label = std::string(to_string(key.strategy)) + " " + unit.count(key.gpus);
    const std::string lc = "lc " + std::to_string(color++);
    data.add(label + " predicted: batch_per_gpu epoch_s", predicted,
             "using 1:2 with linespoints " + lc + " pt 6 title " + gnuplot_quoted(label + " predicted"));
    data.add(label + " measured: batch_per_gpu mean_epoch_s min max", measured,
             "using 1:2:3:4 with yerrorbars " + lc + " pt 7 ps 1.2 title " + gnuplot_quoted(label + " measured"));
  }
  if (data.empty()) {
    script.skipped.push_back("epoch time vs batch size: no prediction that fits and no measurement");
    return;
  }
  const std::string per = "batch size per " + unit.name;
  script.files.push_back(data.file("# epoch time vs " + per + " (blocks: see the comments)\n"));
  script.plots.push_back({"epoch_vs_batch.svg", "Epoch time vs " + per +
                                                    ": predicted (lines, configurations predicted to fit), "
                                                    "measured (points, bars min..max over repeats)"});
  commands +=
      "\n# Epoch time vs " + per + "\nset output outdir.'/epoch_vs_batch.svg'\nset title 'Epoch time vs " + per +
      ": predicted (lines) and measured (points)'\nset xlabel 'batch per " + unit.name +
      "'\nset ylabel 'epoch time, s'\n"
      "set logscale xy\nset format x '%g'\nset autoscale xy\n" +
      plot_command(data.clauses());
}

// Speedup T(1,b)/T(N,b) vs N for every strategy and batch measured on 1 GPU (rank) and some N >= 2.
void speedup_vs_gpus(const Comparison& c, const std::vector<SimResult>& predictions, const Unit& unit,
                     PlotScript& script, std::string& commands) {
  const std::string count = unit.name + " count";
  const ResultGrid grid(predictions);
  DataFile data("speedup_vs_gpus.dat");
  std::vector<std::pair<Strategy, int64_t>> measured_series;
  for (const auto& base : c.compared) {
    const RunKey& k = base.measured.key;
    if (k.gpus != 1) continue;
    const bool has_multi = std::any_of(c.compared.begin(), c.compared.end(), [&](const ComparedRun& r) {
      return r.measured.key.strategy == k.strategy && r.measured.key.batch_per_gpu == k.batch_per_gpu &&
             r.measured.key.gpus >= 2;
    });
    if (has_multi) measured_series.push_back({k.strategy, k.batch_per_gpu});
  }
  // Without measured runs to compare (a plain `simulate --out`): every predicted series.
  const bool predicted_only = c.compared.empty();
  if (predicted_only) {
    for (const SimResult& r : predictions) {
      if (r.spec.gpus != 1 || !r.runnable || !r.fits) continue;
      const bool has_multi = std::any_of(predictions.begin(), predictions.end(), [&](const SimResult& o) {
        return o.spec.strategy == r.spec.strategy && o.spec.batch_per_gpu == r.spec.batch_per_gpu &&
               o.spec.gpus >= 2 && o.runnable && o.fits;
      });
      if (has_multi) measured_series.push_back({r.spec.strategy, r.spec.batch_per_gpu});
    }
  }
  if (measured_series.empty()) {
    script.skipped.push_back("speedup vs " + count + ": not drawn, no strategy and batch was " +
                             (predicted_only ? "predicted" : "measured") + " on " + unit.count(1) +
                             " and on 2 or more");
    return;
  }
  int color = 1;
  int max_gpus = 1;
  for (const auto& [strategy, batch] : measured_series) {
    const SimResult* base = grid.find(strategy, 1, batch);
    std::vector<std::vector<double>> predicted, measured;
    const ComparedRun* measured_base = nullptr;
    for (const auto& r : c.compared) {
      if (r.measured.key.strategy == strategy && r.measured.key.batch_per_gpu == batch && r.measured.key.gpus == 1) {
        measured_base = &r;
      }
    }
    for (const auto& r : predictions) {
      if (r.spec.strategy != strategy || r.spec.batch_per_gpu != batch || !r.runnable || !r.fits ||
          base == nullptr || !base->fits) {
        continue;
      }
      predicted.push_back({static_cast<double>(r.spec.gpus), speedup(base->epoch_s, r.epoch_s)});
      max_gpus = std::max(max_gpus, r.spec.gpus);
    }
    for (const auto& r : c.compared) {
      if (r.measured.key.strategy != strategy || r.measured.key.batch_per_gpu != batch) continue;
      measured.push_back({static_cast<double>(r.measured.key.gpus),
                          speedup(measured_base->measured.epoch_s.median, r.measured.epoch_s.median)});
      max_gpus = std::max(max_gpus, r.measured.key.gpus);
    }
    std::sort(predicted.begin(), predicted.end());
    std::sort(measured.begin(), measured.end());
    const std::string label = std::string(to_string(strategy)) + " b=" + std::to_string(batch);
    const std::string lc = "lc " + std::to_string(color++);
    data.add(label + " predicted: gpus speedup", predicted,
             "using 1:2 with linespoints " + lc + " pt 6 title " + gnuplot_quoted(label + " predicted"));
    data.add(label + " measured: gpus speedup", measured,
             "using 1:2 with points " + lc + " pt 7 ps 1.2 title " + gnuplot_quoted(label + " measured"));
  }
  std::vector<std::string> clauses = data.clauses();
  clauses.push_back("x with lines dt 2 lc rgb 'gray40' title 'ideal (speedup = N)'");
  script.files.push_back(data.file("# speedup T(1,b)/T(N,b) vs " + count + " N (blocks: see the comments)\n"));
  const std::string at = "at a fixed per-" + unit.name + " batch";
  script.plots.push_back({"speedup_vs_gpus.svg",
                          predicted_only ? "Predicted speedup T(1,b)/T(N,b) vs " + count + " " + at + ", ideal (dashed)"
                                         : "Speedup T(1,b)/T(N,b) vs " + count + " " + at +
                                               ": predicted (lines), measured (points), ideal (dashed)"});
  commands += "\n# Speedup vs " + count + "\nset output outdir.'/speedup_vs_gpus.svg'\nset title '" +
              (predicted_only ? "Predicted speedup T(1,b)/T(N,b) vs " + count
                              : "Speedup T(1,b)/T(N,b) vs " + count + ": predicted (lines) and measured (points)") +
              "'\nset xlabel '" + unit.plural() + " N'\nset ylabel 'speedup'\n" +
      // Past 8 GPUs the counts are spread on a log scale (powers of two evenly).
      (max_gpus > 8 ? "set logscale xy 2\nset format x '%g'\nset xrange [0.8:" + std::to_string(max_gpus) +
                          "*1.2]\nset yrange [*:*]\nset xtics autofreq\n"
                    : "unset logscale\nset format x '%g'\nset xrange [0.8:" + std::to_string(max_gpus) +
                          ".2]\nset yrange [0:*]\nset xtics 1\n") +
      plot_command(clauses) + "unset logscale\nset xtics autofreq\n";
}

// Predicted vs measured epoch_s and train_s, log-log, with the y = x line.
void predicted_vs_measured(const Comparison& c, PlotScript& script, std::string& commands) {
  if (c.compared.empty()) {
    script.skipped.push_back("predicted vs measured: not drawn, no measured configuration has a prediction");
    return;
  }
  std::vector<std::vector<double>> epoch, train;
  double low = c.compared.front().measured.epoch_s.median, high = low;
  for (const auto& r : c.compared) {
    epoch.push_back({r.measured.epoch_s.median, r.predicted.epoch_s});
    train.push_back({r.measured.train_s.median, r.predicted.train_s});
    for (double v : {r.measured.epoch_s.median, r.predicted.epoch_s, r.measured.train_s.median, r.predicted.train_s}) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  std::sort(epoch.begin(), epoch.end());
  std::sort(train.begin(), train.end());
  DataFile data("predicted_vs_measured.dat");
  data.add("epoch_s: measured_mean predicted", epoch, "using 1:2 with points lc 1 pt 7 ps 1.2 title 'epoch_s'");
  data.add("train_s: measured_mean predicted", train, "using 1:2 with points lc 2 pt 5 ps 1.0 title 'train_s'");
  std::vector<std::string> clauses = data.clauses();
  clauses.push_back("x with lines dt 2 lc rgb 'gray40' title 'y = x (exact prediction)'");
  // Both axes span the same range, widened by a factor 1.25 so points do not sit on the frame.
  const std::string range = "[" + number(low / 1.25) + ":" + number(high * 1.25) + "]";
  script.files.push_back(data.file("# predicted vs measured seconds (blocks: see the comments)\n"));
  script.plots.push_back({"predicted_vs_measured.svg",
                          "Predicted vs measured epoch_s and train_s (log-log); points above y = x are predicted "
                          "slower than measured"});
  commands +=
      "\n# Predicted vs measured\n"
      "set output outdir.'/predicted_vs_measured.svg'\n"
      "set title 'Predicted vs measured time per epoch'\n"
      "set xlabel 'measured, s'\nset ylabel 'predicted, s'\n"
      "set logscale xy\nset format x '%g'\nset xrange " +
      range + "\nset yrange " + range + "\nset size ratio -1\n" + plot_command(clauses) + "set size noratio\n";
}

// Q4 for every learning-rate rule: the predicted loss in epoch k (left axis) and test accuracy at
// its end (right axis) vs the global batch; no-progress predictions are drawn at the untrained
// model's values, as the table prints them.
void large_batch_vs_batch(const LargeBatchReport& report, std::vector<int64_t> batches, PlotScript& script,
                          std::string& commands) {
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  if (batches.size() < 2) {
    script.skipped.push_back("large batches: not drawn, fewer than 2 global batch sizes");
    return;
  }
  const LargeBatchModel& model = report.model();
  const std::string k = std::to_string(model.settings().epochs);
  DataFile data("large_batch.dat");
  int color = 1;
  for (const LargeBatchModel& ruled : report.rule_models()) {
    const LrRule rule = ruled.settings().lr_rule;
    std::vector<std::vector<double>> loss, accuracy;
    for (int64_t b : batches) {
      const LargeBatchPrediction p = ruled.predict(b);
      if (p.loss_at_k) loss.push_back({static_cast<double>(b), *p.loss_at_k});
      if (p.test_accuracy_at_k) accuracy.push_back({static_cast<double>(b), *p.test_accuracy_at_k});
    }
    const std::string name = to_string(rule);
    const std::string lc = "lc " + std::to_string(color++);
    data.add(name + ": global batch, loss in epoch " + k, loss,
             "using 1:2 axes x1y1 with linespoints " + lc + " pt 7 title " + gnuplot_quoted(name + ": loss"));
    data.add(name + ": global batch, test accuracy after epoch " + k, accuracy,
             "using 1:2 axes x1y2 with linespoints " + lc + " dt 2 pt 6 title " +
                 gnuplot_quoted(name + ": test accuracy"));
  }
  if (data.empty()) {
    script.skipped.push_back("large batches: not drawn, no batch size has a prediction");
    return;
  }
  script.files.push_back(data.file("# Q4: predicted loss in epoch " + k +
                                   " and test accuracy vs global batch, per lr rule (blocks: see the comments)\n"));
  const std::string title = "Predicted loss in epoch " + k + " (solid) and test accuracy (dashed) vs global batch, "
                            "per lr rule (baseline batch " + std::to_string(model.base_batch()) + ")";
  script.plots.push_back({"large_batch.svg", title});
  commands += "\n# Large batches (Q4)\nset output outdir.'/large_batch.svg'\nset title '" + title +
              "'\nset xlabel 'global batch'\nset ylabel 'training loss'\nset y2label 'test accuracy'\n"
              // The plot before it (predicted vs measured under --compare) leaves log-log axes.
              "unset logscale\nset logscale x 2\nset format x '%g'\nset xrange [*:*]\nset yrange [0:*]\nset y2range [0:1]\n"
              "set ytics nomirror\nset y2tics\n" +
              plot_command(data.clauses()) +
              "unset logscale\nunset y2tics\nunset y2label\nset ytics mirror\nset y2range [*:*]\n";
}

}  // namespace

PlotScript build_plot_script(const Comparison& comparison, const std::vector<SimResult>& predictions,
                             const Unit& unit, const LargeBatchReport* large_batch, const std::vector<int64_t>& large_batch_batches) {
  PlotScript script;
  std::string commands;
  // The curves over batch and GPU count are for the config's setting (its trainer, loader workers
  // and samples: the sweep's predictions); the scatter shows every compared configuration.
  Comparison in_setting = comparison;
  in_setting.compared.erase(std::remove_if(in_setting.compared.begin(), in_setting.compared.end(),
                                           [](const ComparedRun& r) { return !r.in_setting; }),
                            in_setting.compared.end());
  epoch_vs_batch(in_setting, predictions, unit, script, commands);
  speedup_vs_gpus(in_setting, predictions, unit, script, commands);
  predicted_vs_measured(comparison, script, commands);
  if (large_batch) large_batch_vs_batch(*large_batch, large_batch_batches, script, commands);
  const std::string header =
      std::string("# trainsim `simulate` plots. Redraw: run `gnuplot plots.gp` in this folder (gnuplot 5,\n"
                  "# svg terminal; Debian package gnuplot-nox). Data: the .dat files beside this script.\n") +
      kOutdirDefault +
      "set terminal svg size 900,600 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
      "set key outside right top\nset grid\nset bars small\n";
  script.files.insert(script.files.begin(), {kScriptName, header + commands + "\nunset output\n"});
  return script;
}

DrawOutcome draw_plots(const std::string& dir, const PlotScript& script) {
  for (const TextFile& file : script.files) write_file_atomic((fs::path(dir) / file.name).string(), file.content);
  if (script.plots.empty()) {
    DrawOutcome outcome;
    outcome.problem = "nothing to plot";
    return outcome;
  }
  std::vector<std::string> svgs;
  for (const auto& plot : script.plots) svgs.push_back(plot.first);
  return draw_svgs(dir, kScriptName, svgs);
}

}  // namespace trainsim::report
