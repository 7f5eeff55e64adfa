#include "report/compare.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "io/errors.h"
#include "report/format.h"

namespace trainsim::report {
namespace {

constexpr const char* kNone = "-";

// ---------------------------------------------------------------------------------------------
// runs.csv parsing

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// One CSV line split into fields (RFC 4180 without line breaks inside quotes): commas separate,
// a quoted field may hold commas and doubled quotes. Fields are trimmed of spaces and tabs.
std::vector<std::string> split_csv_line(const std::string& line, const std::string& file, int line_number) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.push_back(trim(field));
      field.clear();
    } else {
      field += ch;
    }
  }
  if (quoted) throw InputError(file, line_number, "row", "a quoted field is not closed");
  fields.push_back(trim(field));
  return fields;
}

int64_t parse_whole(const std::string& text, const std::string& file, int line, const std::string& column,
                    int64_t minimum) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw InputError(file, line, column, "'" + text + "' is not a whole number");
  }
  if (value < minimum) {
    throw InputError(file, line, column, text + " must be >= " + std::to_string(minimum));
  }
  return value;
}

double parse_seconds(const std::string& text, const std::string& file, int line, const std::string& column) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw InputError(file, line, column, "'" + text + "' is not a number");
  }
  if (!std::isfinite(value) || value <= 0) {
    throw InputError(file, line, column, text + " must be a finite number of seconds > 0");
  }
  return value;
}

Strategy parse_strategy(const std::string& text, const std::string& file, int line) {
  if (text == "ddp") return Strategy::kDdp;
  if (text == "dp") return Strategy::kDp;
  throw InputError(file, line, "strategy", "'" + text + "' is not a strategy (expected ddp or dp)");
}

void add_distinct(std::vector<std::string>& values, const std::string& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

void add_to_spread(Spread& spread, int count_before, double value) {
  if (count_before == 0) {
    spread = {value, value, value};
    return;
  }
  // Running mean: mean_n = mean_(n-1) + (x - mean_(n-1)) / n.
  spread.mean += (value - spread.mean) / (count_before + 1);
  spread.min = std::min(spread.min, value);
  spread.max = std::max(spread.max, value);
}

// ---------------------------------------------------------------------------------------------
// The join

std::string key_label(const RunKey& key) {
  return std::string(to_string(key.strategy)) + ":" + std::to_string(key.gpus) + ":" +
         std::to_string(key.batch_per_gpu);
}

// Sort rank of a strategy: the config's order first, others after in enum order.
size_t strategy_rank(const SweepConfig& config, Strategy s) {
  const auto it = std::find(config.strategies.begin(), config.strategies.end(), s);
  if (it != config.strategies.end()) return static_cast<size_t>(it - config.strategies.begin());
  return config.strategies.size() + static_cast<size_t>(s);
}

bool contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// ---------------------------------------------------------------------------------------------
// Formatting

std::string seconds(double s) { return format_significant(s, 4); }

// "1 row", "3 rows".
std::string counted(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string spread_cell(const MeasuredConfig& m, const Spread& s) {
  return m.runs > 1 ? seconds(s.min) + ".." + seconds(s.max) : kNone;
}

std::string predicted_cell(const SimResult& r, double value) {
  return r.fits ? seconds(value) : seconds(value) + " (OOM)";
}

std::string list_labels(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& label : labels) out += (out.empty() ? "" : ", ") + label;
  return out;
}

std::string format_run_table(const Comparison& c) {
  if (c.compared.empty()) return "No measured configuration has a prediction.\n\n";
  TextTable table({"configuration", "in sweep", "profiled b", "runs", "pred epoch_s", "meas epoch_s", "meas range",
                   "error %", "pred train_s", "meas train_s", "meas range", "error %"});
  for (const auto& r : c.compared) {
    const MeasuredConfig& m = r.measured;
    table.add_row({key_label(m.key), r.in_sweep ? "yes" : "no", r.profiled_batch ? "yes" : "no", std::to_string(m.runs),
                   predicted_cell(r.predicted, r.predicted.epoch_s), seconds(m.epoch_s.mean), spread_cell(m, m.epoch_s),
                   format_error_percent(r.epoch_error_pct), predicted_cell(r.predicted, r.predicted.train_s),
                   seconds(m.train_s.mean), spread_cell(m, m.train_s), format_error_percent(r.train_error_pct)});
  }
  return table.to_markdown() + "\n";
}

void add_summary_row(TextTable& table, const std::string& label, const ErrorSummary& s) {
  if (s.runs == 0) return;
  table.add_row({label, std::to_string(s.runs), format_fixed(s.mape_epoch_pct, 1), format_fixed(s.mape_train_pct, 1),
                 format_error_percent(s.mean_epoch_error_pct), format_fixed(s.max_abs_epoch_error_pct, 1)});
}

std::string format_mape_table(const Comparison& c) {
  if (c.compared.empty()) return "";
  TextTable table(
      {"configurations", "runs", "MAPE epoch_s %", "MAPE train_s %", "mean error epoch_s %", "max abs error epoch_s %"});
  std::vector<Strategy> strategies;
  for (const auto& r : c.compared) {
    if (std::find(strategies.begin(), strategies.end(), r.measured.key.strategy) == strategies.end()) {
      strategies.push_back(r.measured.key.strategy);
    }
  }
  for (Strategy s : strategies) {
    add_summary_row(table, to_string(s),
                    summarize_errors(c.compared, [s](const ComparedRun& r) { return r.measured.key.strategy == s; }));
  }
  const ErrorSummary profiled = summarize_errors(c.compared, [](const ComparedRun& r) { return r.profiled_batch; });
  if (profiled.runs > 0 && profiled.runs < static_cast<int>(c.compared.size())) {
    add_summary_row(table, "batches the profile timed", profiled);
    add_summary_row(table, "batches the profile did not time",
                    summarize_errors(c.compared, [](const ComparedRun& r) { return !r.profiled_batch; }));
  }
  add_summary_row(table, "all", summarize_errors(c.compared));
  return table.to_markdown() + "\n";
}

std::string format_one_side_lists(const Comparison& c) {
  std::string out;
  if (c.unpredicted.empty()) {
    out += "Measured but not predicted: none.\n";
  } else {
    out += "Measured but not predicted: " + std::to_string(c.unpredicted.size()) +
           " configuration(s), left out of the errors and the MAPE:\n";
    for (const auto& u : c.unpredicted) {
      const MeasuredConfig& m = u.measured;
      out += "- " + key_label(m.key) + " (loader_workers " + std::to_string(m.key.loader_workers) + ", train_samples " +
             std::to_string(m.key.train_samples) + ", " + std::to_string(m.runs) + " run(s), runs.csv line" +
             (m.lines.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < m.lines.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(m.lines[i]);
      out += "): " + u.reason + "\n";
    }
  }
  std::vector<std::string> labels;
  for (const auto& spec : c.unmeasured) labels.push_back(config_label(spec));
  out += "Predicted but not measured: " + std::to_string(labels.size()) + " configuration(s) of the sweep" +
         (labels.empty() ? ".\n" : ": " + list_labels(labels) + "\n");
  return out + "\n";
}

// The measured run of (strategy, gpus, batch), or nullptr.
const ComparedRun* find_compared(const Comparison& c, Strategy s, int gpus, int64_t batch) {
  for (const auto& r : c.compared) {
    const RunKey& k = r.measured.key;
    if (k.strategy == s && k.gpus == gpus && k.batch_per_gpu == batch) return &r;
  }
  return nullptr;
}

template <typename T>
std::vector<T> sorted_unique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::string time_or_oom(const SimResult* r, double SimResult::*field) {
  if (r == nullptr) return kNone;
  return r->fits ? seconds(r->*field) : "OOM";
}

// The strategy whose 1-GPU runs the Q1 comparison shows: the sweep's Q1 strategy (dp before ddp)
// when it has measured 1-GPU runs, else the strategy with the most measured 1-GPU runs.
std::optional<Strategy> compare_q1_strategy(const ReportContext& context, const Comparison& c) {
  const auto measured_one_gpu = [&c](Strategy s) {
    return std::count_if(c.compared.begin(), c.compared.end(), [s](const ComparedRun& r) {
      return r.measured.key.strategy == s && r.measured.key.gpus == 1;
    });
  };
  const std::optional<Strategy> sweep_choice = q1_strategy(context);
  if (sweep_choice && measured_one_gpu(*sweep_choice) > 0) return sweep_choice;
  std::optional<Strategy> best;
  for (Strategy s : {Strategy::kDp, Strategy::kDdp}) {
    if (measured_one_gpu(s) > 0 && (!best || measured_one_gpu(s) > measured_one_gpu(*best))) best = s;
  }
  return best ? best : sweep_choice;
}

std::string format_q1_side_by_side(const ReportContext& context, const Comparison& c,
                                   const std::vector<SimResult>& predictions) {
  const auto strategy = compare_q1_strategy(context, c);
  std::string out = "## Q1: 1-GPU epoch time per batch size, predicted and measured";
  if (!strategy) return out + "\n\nNo 1-GPU configuration was predicted or measured.\n\n";
  out += std::string(" (") + to_string(*strategy) + ", 1 GPU)\n\n";
  std::vector<int64_t> batches;
  for (const auto& r : predictions) {
    if (r.spec.strategy == *strategy && r.spec.gpus == 1) batches.push_back(r.spec.batch_per_gpu);
  }
  const ResultGrid grid(predictions);
  TextTable table({"batch", "pred epoch_s", "meas epoch_s", "error %", "pred train_s", "meas train_s", "error %"});
  for (int64_t b : sorted_unique(batches)) {
    const SimResult* p = grid.find(*strategy, 1, b);
    const ComparedRun* m = find_compared(c, *strategy, 1, b);
    table.add_row({std::to_string(b), time_or_oom(p, &SimResult::epoch_s),
                   m ? seconds(m->measured.epoch_s.mean) : kNone, m ? format_error_percent(m->epoch_error_pct) : kNone,
                   time_or_oom(p, &SimResult::train_s), m ? seconds(m->measured.train_s.mean) : kNone,
                   m ? format_error_percent(m->train_error_pct) : kNone});
  }
  return out + "train_s is the course's Q1 time: the epoch without loader waits.\n\n" + table.to_markdown() + "\n";
}

std::string format_table1_side_by_side(const Comparison& c, const std::vector<SimResult>& predictions,
                                       const std::vector<Strategy>& strategies) {
  std::string out;
  const ResultGrid grid(predictions);
  for (Strategy s : strategies) {
    if (std::none_of(c.compared.begin(), c.compared.end(),
                     [s](const ComparedRun& r) { return r.measured.key.strategy == s; })) {
      continue;
    }
    std::vector<int> gpus;
    std::vector<int64_t> batches;
    for (const auto& r : predictions) {
      if (r.spec.strategy != s) continue;
      gpus.push_back(r.spec.gpus);
      batches.push_back(r.spec.batch_per_gpu);
    }
    gpus = sorted_unique(gpus);
    std::vector<std::string> headers{"batch/GPU"};
    for (int n : gpus) {
      const std::string t = "T(" + std::to_string(n) + ",b) s";
      headers.push_back(t + " pred");
      headers.push_back(t + " meas");
      if (n >= 2) {
        headers.push_back("speedup " + std::to_string(n) + " pred");
        headers.push_back("speedup " + std::to_string(n) + " meas");
      }
    }
    TextTable table(headers);
    for (int64_t b : sorted_unique(batches)) {
      std::vector<std::string> row{std::to_string(b)};
      const SimResult* base = grid.find(s, 1, b);
      const ComparedRun* measured_base = find_compared(c, s, 1, b);
      for (int n : gpus) {
        const SimResult* p = grid.find(s, n, b);
        const ComparedRun* m = find_compared(c, s, n, b);
        row.push_back(time_or_oom(p, &SimResult::epoch_s));
        row.push_back(m ? seconds(m->measured.epoch_s.mean) : kNone);
        if (n < 2) continue;
        const bool predicted = base && p && base->fits && p->fits;
        row.push_back(predicted ? format_fixed(speedup(base->epoch_s, p->epoch_s), 3) : kNone);
        row.push_back(measured_base && m
                          ? format_fixed(speedup(measured_base->measured.epoch_s.mean, m->measured.epoch_s.mean), 3)
                          : kNone);
      }
      table.add_row(row);
    }
    out += std::string("## Table 1 (") + to_string(s) +
           "): epoch time T(N,b) and speedup T(1,b)/T(N,b), predicted and measured\n\n" + table.to_markdown() + "\n";
  }
  if (out.empty()) return out;
  return out +
         "A measured speedup divides the mean measured T(1,b) by the mean measured T(N,b) of the same "
         "strategy; `-` where either was not measured (or not predicted).\n\n";
}

// "synthetic" -> "synthetic images (generated, not CIFAR-10 files)": say synthetic where it is.
std::string describe_data(const std::string& data) {
  if (data == "synthetic") return "synthetic images (generated, not CIFAR-10 files)";
  if (data == "cifar10") return "cifar10 (the real CIFAR-10 files)";
  return data;
}

std::string format_plot_section(const PlotSection& plots) {
  std::string out = "## Plots\n\n";
  for (const auto& [file, caption] : plots.drawn) out += "![" + caption + "](" + file + ")\n\n*" + caption + "*\n\n";
  for (const auto& why : plots.skipped) out += "- " + why + "\n";
  if (!plots.skipped.empty()) out += "\n";
  return out;
}

std::string format_compare_definitions() {
  return "## Definitions\n\n"
         "- Joined on (strategy, gpus, batch_per_gpu, loader_workers, train_samples). Repeated runs of "
         "one configuration are averaged (arithmetic mean); `meas range` is their min..max.\n"
         "- error % = (predicted - measured) / measured * 100, with the mean measured value; positive "
         "means the simulator predicts a slower run than measured.\n"
         "- MAPE (mean absolute percentage error) = (1/n) * sum |error %| over the n measured "
         "configurations that have a prediction (a configuration counts once however many repeats it "
         "has). Mean error is the signed mean (bias).\n"
         "- in sweep: the configuration is in the config's grid; `no`: it was simulated only for this "
         "comparison. profiled b: the profile timed this per-GPU batch; `no`: its compute times are "
         "interpolated or extrapolated in the batch.\n"
         "- epoch_s: wall time of the timed epoch; train_s: epoch_s without the time the training loop "
         "waited for the data loader (the course's Q1 time). A predicted time marked (OOM) is for a "
         "configuration predicted not to fit in device memory.\n\n";
}

}  // namespace

const std::vector<std::string>& runs_required_columns() {
  static const std::vector<std::string> columns{"strategy",      "gpus",    "batch_per_gpu", "loader_workers",
                                                "train_samples", "epoch_s", "train_s"};
  return columns;
}

RunsTable parse_runs_csv(const std::string& text, const std::string& file) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(line);
    }
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();  // trailing blank lines
  const std::string required = list_labels(runs_required_columns());
  if (lines.empty()) throw InputError(file, 1, "header", "empty file; expected a header naming " + required);

  // Header: column name -> index; every required column once.
  const std::vector<std::string> header = split_csv_line(lines[0], file, 1);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].empty()) throw InputError(file, 1, "header", "column " + std::to_string(i + 1) + " has no name");
    if (!column.emplace(header[i], i).second) {
      throw InputError(file, 1, header[i], "column named twice in the header");
    }
  }
  for (const auto& name : runs_required_columns()) {
    if (!column.count(name)) {
      throw InputError(file, 1, name, "missing column (the header must name " + required + ")");
    }
  }
  const auto optional_column = [&](const std::string& name) -> std::optional<size_t> {
    const auto it = column.find(name);
    return it == column.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  const auto data_column = optional_column("data"), device_column = optional_column("device");

  RunsTable table;
  table.file = file;
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (trim(lines[i]).empty()) throw InputError(file, line, "row", "empty line between rows");
    const std::vector<std::string> fields = split_csv_line(lines[i], file, line);
    if (fields.size() != header.size()) {
      throw InputError(
          file, line, "row",
          "has " + std::to_string(fields.size()) + " fields, the header has " + std::to_string(header.size()));
    }
    const auto field = [&](const std::string& name) { return fields[column.at(name)]; };
    RunKey key;
    key.strategy = parse_strategy(field("strategy"), file, line);
    key.gpus = static_cast<int>(parse_whole(field("gpus"), file, line, "gpus", 1));
    key.batch_per_gpu = parse_whole(field("batch_per_gpu"), file, line, "batch_per_gpu", 1);
    key.loader_workers = static_cast<int>(parse_whole(field("loader_workers"), file, line, "loader_workers", 0));
    key.train_samples = parse_whole(field("train_samples"), file, line, "train_samples", 1);
    const double epoch_s = parse_seconds(field("epoch_s"), file, line, "epoch_s");
    const double train_s = parse_seconds(field("train_s"), file, line, "train_s");
    // train_s = epoch_s - loader waits, so it cannot exceed epoch_s.
    if (train_s > epoch_s) {
      throw InputError(file, line, "train_s", field("train_s") + " exceeds epoch_s " + field("epoch_s"));
    }
    if (data_column) add_distinct(table.data, fields[*data_column]);
    if (device_column) add_distinct(table.devices, fields[*device_column]);

    auto it =
        std::find_if(table.configs.begin(), table.configs.end(), [&](const MeasuredConfig& m) { return m.key == key; });
    if (it == table.configs.end()) {
      it = table.configs.insert(table.configs.end(), MeasuredConfig{});
      it->key = key;
    }
    add_to_spread(it->epoch_s, it->runs, epoch_s);
    add_to_spread(it->train_s, it->runs, train_s);
    ++it->runs;
    it->lines.push_back(line);
    ++table.rows;
  }
  return table;
}

RunsTable load_runs_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot read the runs file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path, 0, "", "cannot read the runs file");
  return parse_runs_csv(text.str(), path);
}

double error_percent(double predicted, double measured) { return (predicted - measured) / measured * 100.0; }

Comparison compare_runs(const SweepConfig& config, const std::vector<SimResult>& sweep_results, const RunsTable& runs,
                        const std::vector<int64_t>& profiled_batches, const Predictor& predict) {
  Comparison out;
  const ResultGrid sweep(sweep_results);
  for (const MeasuredConfig& m : runs.configs) {
    std::string reason;
    if (m.key.train_samples != config.train_samples) {
      reason =
          "train_samples " + std::to_string(m.key.train_samples) + " != config " + std::to_string(config.train_samples);
    }
    if (m.key.loader_workers != config.loader_workers) {
      reason += std::string(reason.empty() ? "" : "; ") + "loader_workers " + std::to_string(m.key.loader_workers) +
                " != config " + std::to_string(config.loader_workers);
    }
    if (!reason.empty()) {
      out.unpredicted.push_back({m, reason});
      continue;
    }
    ComparedRun run;
    run.measured = m;
    run.profiled_batch = contains(profiled_batches, m.key.batch_per_gpu);
    if (const SimResult* r = sweep.find(m.key.strategy, m.key.gpus, m.key.batch_per_gpu)) {
      run.predicted = *r;
      run.in_sweep = true;
    } else {
      RunSpec spec;
      spec.strategy = m.key.strategy;
      spec.gpus = m.key.gpus;
      spec.batch_per_gpu = m.key.batch_per_gpu;
      spec.train_samples = config.train_samples;
      spec.loader_workers = config.loader_workers;
      spec.interconnect = config.interconnect;
      spec.sync_batchnorm = config.sync_batchnorm;
      try {
        run.predicted = predict(spec);
      } catch (const InputError& e) {
        out.unpredicted.push_back({m, "not in the sweep, and the profile cannot predict it: " + e.message()});
        continue;
      } catch (const std::invalid_argument& e) {
        out.unpredicted.push_back({m, std::string("not in the sweep, and the profile cannot predict it: ") + e.what()});
        continue;
      }
      out.extra_predictions.push_back(run.predicted);
    }
    run.epoch_error_pct = error_percent(run.predicted.epoch_s, m.epoch_s.mean);
    run.train_error_pct = error_percent(run.predicted.train_s, m.train_s.mean);
    out.compared.push_back(std::move(run));
  }
  const auto order = [&config](const RunSpec& a, const RunSpec& b) {
    const size_t ra = strategy_rank(config, a.strategy), rb = strategy_rank(config, b.strategy);
    if (ra != rb) return ra < rb;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.batch_per_gpu < b.batch_per_gpu;
  };
  std::stable_sort(out.compared.begin(), out.compared.end(), [&](const ComparedRun& a, const ComparedRun& b) {
    return order(a.predicted.spec, b.predicted.spec);
  });
  std::stable_sort(out.extra_predictions.begin(), out.extra_predictions.end(),
                   [&](const SimResult& a, const SimResult& b) { return order(a.spec, b.spec); });
  for (const SimResult& r : sweep_results) {
    const bool measured = std::any_of(out.compared.begin(), out.compared.end(), [&](const ComparedRun& c) {
      return c.in_sweep && c.predicted.spec.strategy == r.spec.strategy && c.predicted.spec.gpus == r.spec.gpus &&
             c.predicted.spec.batch_per_gpu == r.spec.batch_per_gpu;
    });
    if (!measured) out.unmeasured.push_back(r.spec);
  }
  return out;
}

ErrorSummary summarize_errors(const std::vector<ComparedRun>& runs,
                              const std::function<bool(const ComparedRun&)>& keep) {
  ErrorSummary s;
  double sum_abs_epoch = 0, sum_abs_train = 0, sum_epoch = 0;
  for (const auto& r : runs) {
    if (keep && !keep(r)) continue;
    ++s.runs;
    sum_abs_epoch += std::fabs(r.epoch_error_pct);
    sum_abs_train += std::fabs(r.train_error_pct);
    sum_epoch += r.epoch_error_pct;
    s.max_abs_epoch_error_pct = std::max(s.max_abs_epoch_error_pct, std::fabs(r.epoch_error_pct));
  }
  if (s.runs > 0) {
    // MAPE = (1/n) sum |e_i|; bias = (1/n) sum e_i.
    s.mape_epoch_pct = sum_abs_epoch / s.runs;
    s.mape_train_pct = sum_abs_train / s.runs;
    s.mean_epoch_error_pct = sum_epoch / s.runs;
  }
  return s;
}

std::string format_error_percent(double percent) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.1f", percent);
  return buffer;
}

std::string format_mape_line(const Comparison& comparison) {
  const ErrorSummary s = summarize_errors(comparison.compared);
  if (s.runs == 0) return "MAPE epoch_s: n/a over 0 runs";
  return "MAPE epoch_s: " + format_fixed(s.mape_epoch_pct, 1) + "% over " + std::to_string(s.runs) + " runs";
}

std::string format_comparison(const Comparison& comparison, const RunsTable& runs) {
  std::string out = "## Predicted vs measured (" + runs.file + ": " + counted(runs.rows, "row") + ", " +
                    counted(static_cast<int64_t>(runs.configs.size()), "measured configuration") + ")\n\n";
  out += format_run_table(comparison);
  out += format_mape_table(comparison);
  return out + format_one_side_lists(comparison);
}

std::string format_comparison_csv(const Comparison& comparison) {
  std::string out =
      "strategy,gpus,batch_per_gpu,loader_workers,train_samples,in_sweep,profiled_batch,runs,"
      "pred_epoch_s,meas_epoch_s,meas_epoch_s_min,meas_epoch_s_max,epoch_error_pct,"
      "pred_train_s,meas_train_s,meas_train_s_min,meas_train_s_max,train_error_pct,pred_fits\n";
  const auto number = [](double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    return std::string(buffer);
  };
  const auto boolean = [](bool value) { return std::string(value ? "true" : "false"); };
  for (const auto& r : comparison.compared) {
    const MeasuredConfig& m = r.measured;
    out += std::string(to_string(m.key.strategy)) + "," + std::to_string(m.key.gpus) + "," +
           std::to_string(m.key.batch_per_gpu) + "," + std::to_string(m.key.loader_workers) + "," +
           std::to_string(m.key.train_samples) + "," + boolean(r.in_sweep) + "," + boolean(r.profiled_batch) + "," +
           std::to_string(m.runs) + "," + number(r.predicted.epoch_s) + "," + number(m.epoch_s.mean) + "," +
           number(m.epoch_s.min) + "," + number(m.epoch_s.max) + "," + number(r.epoch_error_pct) + "," +
           number(r.predicted.train_s) + "," + number(m.train_s.mean) + "," + number(m.train_s.min) + "," +
           number(m.train_s.max) + "," + number(r.train_error_pct) + "," + boolean(r.predicted.fits) + "\n";
  }
  return out;
}

std::vector<std::string> comparison_warnings(const ReportContext& context, const RunsTable& runs) {
  std::vector<std::string> warnings;
  for (const auto& d : runs.data) {
    if (d != context.data) {
      warnings.push_back("runs measured on data '" + d + "' but the profile's loader on '" + context.data + "'");
    }
  }
  for (const auto& d : runs.devices) {
    if (d != context.device_kind) {
      warnings.push_back("runs measured on device '" + d + "' but the profile on '" + context.device_kind + "'");
    }
  }
  return warnings;
}

std::string format_compare_report(const ReportContext& context, const RunsTable& runs,
                                  const std::vector<SimResult>& sweep_results, const Comparison& comparison,
                                  const PlotSection& plots, const std::string& command) {
  std::string out = "# trainsim: predicted vs measured, " + context.model + "\n\n";
  out += "Reproduce (from the folder the paths are relative to): `" + command + "`\n\n";
  out += "- config: " + context.config_file + "\n";
  out += "- profile: " + context.profile_path + " (machine " + context.machine_name + ", measured on " + context.host +
         " " + context.measured_date + ")\n";
  out += "- device: " + context.device_kind + " " + context.device_name + " x" + std::to_string(context.device_count) +
         ", " + format_gib(context.device_memory_bytes) + " GiB each\n";
  out += "- model: " + context.model + "\n";
  out += "- epoch: " + std::to_string(context.train_samples) +
         " samples; loader workers: " + std::to_string(context.loader_workers) + "\n";
  std::string runs_data;
  for (const auto& d : runs.data) runs_data += (runs_data.empty() ? "" : ", ") + describe_data(d);
  out += "- data: the profile's loader was measured on " + describe_data(context.data) + "; the runs trained on " +
         (runs_data.empty() ? "data not recorded (runs.csv has no data column)" : runs_data) + "\n";
  out += "- runs: " + runs.file + ", " + counted(runs.rows, "row") + ", " +
         counted(static_cast<int64_t>(runs.configs.size()), "measured configuration") + ", device " +
         (runs.devices.empty() ? "not recorded" : list_labels(runs.devices)) + "\n";
  out += std::string("- simulation: ") +
         (context.exact ? "exact (every iteration simulated)" : "steady state extrapolated to the epoch") + "\n";
  out += "- " + format_mape_line(comparison) + "\n\n";

  // Mismatches that make the comparison questionable are said, not hidden.
  const std::vector<std::string> warnings = comparison_warnings(context, runs);
  if (!warnings.empty()) {
    out += "**Warning:** ";
    for (size_t i = 0; i < warnings.size(); ++i) out += (i == 0 ? "" : "; ") + warnings[i];
    out += ".\n\n";
  }

  out += "## Per measured configuration (STRATEGY:GPUS:BATCH)\n\n" + format_run_table(comparison);
  out +=
      "## MAPE\n\n" + (comparison.compared.empty() ? std::string("n/a: no measured configuration has a prediction.\n\n")
                                                   : format_mape_table(comparison));
  std::vector<SimResult> predictions = sweep_results;
  predictions.insert(predictions.end(), comparison.extra_predictions.begin(), comparison.extra_predictions.end());
  std::vector<Strategy> strategies = context.strategies;
  for (const auto& r : comparison.compared) {
    if (std::find(strategies.begin(), strategies.end(), r.measured.key.strategy) == strategies.end()) {
      strategies.push_back(r.measured.key.strategy);
    }
  }
  out += format_q1_side_by_side(context, comparison, predictions);
  out += format_table1_side_by_side(comparison, predictions, strategies);
  out += format_plot_section(plots);
  out += "## Configurations on one side only\n\n" + format_one_side_lists(comparison);
  std::vector<SimResult> compared_predictions;
  for (const auto& r : comparison.compared) compared_predictions.push_back(r.predicted);
  std::string notes = format_notes(ResultGrid(compared_predictions));
  // format_notes titles its section "## Notes"; here they are the compared configurations' notes.
  out += "## Simulator notes for the measured configurations" + notes.substr(std::string("## Notes").size());
  return out + format_compare_definitions();
}

}  // namespace trainsim::report
