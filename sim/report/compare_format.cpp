#include "report/compare_format.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "format/csv.h"
#include "io/config.h"
#include "report/format.h"

namespace trainsim::report {
namespace {

// ---------------------------------------------------------------------------------------------
// Labels

std::string key_label(const RunKey& key) {
  return std::string(to_string(key.strategy)) + ":" + std::to_string(key.gpus) + ":" +
         std::to_string(key.batch_per_gpu);
}

// What else sets a measured configuration apart: trainer, loader workers, samples, test pass.
std::string setting_label(const RunKey& key) {
  std::string out = std::string(to_string(key.trainer)) + ", W=" + std::to_string(key.loader_workers) + ", " +
                    std::to_string(key.train_samples) + " samples";
  if (key.test_samples > 0) out += ", test " + std::to_string(key.test_samples);
  if (key.precision != Precision::kFp32) out += std::string(", ") + precision_name(key.precision);
  if (key.memory_format != MemoryFormat::kNchw) out += std::string(", ") + memory_format_name(key.memory_format);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Formatting

// "1 row", "3 rows".
std::string counted(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string predicted_cell(const SimResult& r, double value) {
  if (!r.runnable) return "n/a";
  return r.fits ? seconds(value) : seconds(value) + " (OOM)";
}

std::string optional_percent(const std::optional<double>& value) {
  return value ? format_error_percent(*value) : kNone;
}

std::string load_cell(const MeasuredConfig& m) {
  if (!m.load_before && !m.load_after) return kNone;
  const auto one = [](const std::optional<double>& v) { return v ? format_fixed(*v, 2) : std::string(kNone); };
  return one(m.load_before) + " / " + one(m.load_after);
}

std::string format_run_table(const Comparison& c) {
  if (c.compared.empty()) return "No measured configuration has a prediction.\n\n";
  TextTable table({"configuration", "setting", "in sweep", "profiled b", "runs", "pred epoch_s", "meas epoch_s",
                   "noise %", "error %", "drift %", "error after drift %", "explained", "pred train_s",
                   "meas train_s", "error %", "load before / after"});
  for (const auto& r : c.compared) {
    const MeasuredConfig& m = r.measured;
    table.add_row({key_label(m.key), setting_label(m.key), r.in_sweep ? "yes" : "no", r.profiled_batch ? "yes" : "no",
                   std::to_string(m.runs), predicted_cell(r.predicted, r.predicted.epoch_s), seconds(m.epoch_s.median),
                   m.runs > 1 ? format_fixed(m.epoch_s.noise_pct(), 1) : kNone, format_error_percent(r.epoch_error_pct),
                   optional_percent(r.drift_pct), optional_percent(r.drift_adjusted_error_pct),
                   r.explained ? "yes" : "no", predicted_cell(r.predicted, r.predicted.train_s),
                   seconds(m.train_s.median), format_error_percent(r.train_error_pct), load_cell(m)});
  }
  return table.to_markdown() + "\n";
}

// "4.9 (3 of 4)": the noise floor over the configurations with >= 2 runs, and how many those are.
std::string noise_floor_cell(const ErrorSummary& s) {
  const std::string of = " (" + std::to_string(s.noise_configs) + " of " + std::to_string(s.configs) + ")";
  return (s.noise_configs > 0 ? format_fixed(s.mean_noise_pct, 1) : std::string("unknown")) + of;
}

void add_summary_row(TextTable& table, const std::string& label, const ErrorSummary& s) {
  if (s.configs == 0) return;
  table.add_row({label, std::to_string(s.configs), format_fixed(s.mape_epoch_pct, 1), noise_floor_cell(s),
                 s.with_drift > 0 ? format_fixed(s.mape_drift_adjusted_pct, 1) : kNone,
                 std::to_string(s.explained) + "/" + std::to_string(s.configs), format_fixed(s.mape_train_pct, 1),
                 format_error_percent(s.mean_epoch_error_pct), format_fixed(s.max_abs_epoch_error_pct, 1)});
}

template <typename T>
std::vector<T> sorted_unique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Ranks of a configuration: DDP processes; a DataParallel run is one process.
int ranks_of(const RunKey& key) { return key.strategy == Strategy::kDdp ? key.gpus : 1; }

VariantKey variant_of(const ComparedRun& r) { return {r.measured.key.precision, r.measured.key.memory_format}; }

// The precisions and memory formats of the compared configurations, the tables' first
// (merge_variants' order).
std::vector<VariantKey> compared_variants(const Comparison& c) {
  std::vector<VariantKey> out;
  for (const auto& r : c.compared) {
    if (std::find(out.begin(), out.end(), variant_of(r)) == out.end()) out.push_back(variant_of(r));
  }
  return out;
}

// A row of the MAPE table and a summary line: one trainer on one rank count (all its ranks when
// `ranks` is nullopt), in one precision and memory format when several were compared.
struct Group {
  Trainer trainer;
  std::optional<int> ranks;
  std::optional<VariantKey> variant;

  bool holds(const ComparedRun& r) const {
    return r.measured.key.trainer == trainer && (!ranks || ranks_of(r.measured.key) == *ranks) &&
           (!variant || variant_of(r) == *variant);
  }
  std::string label() const {
    return std::string(to_string(trainer)) + ", " + (ranks ? counted(*ranks, "rank") : std::string("all ranks")) +
           (variant ? ", " + variant_label(*variant) : std::string());
  }
};

// Per precision and memory format (when several), each (trainer, ranks) group of the compared
// configurations, then each trainer over all its ranks when both trainers were compared and it on
// several rank counts (with one trainer, the entry's or the comparison's "all" row is that).
std::vector<Group> summary_groups(const Comparison& c) {
  const std::vector<VariantKey> variants = compared_variants(c);
  std::vector<Group> out;
  for (const VariantKey& variant : variants) {
    std::vector<std::pair<Trainer, int>> groups;
    for (const auto& r : c.compared) {
      if (variant_of(r) == variant) groups.emplace_back(r.measured.key.trainer, ranks_of(r.measured.key));
    }
    groups = sorted_unique(groups);
    const std::optional<VariantKey> named = variants.size() > 1 ? std::optional(variant) : std::nullopt;
    for (const auto& [trainer, ranks] : groups) out.push_back({trainer, ranks, named});
    std::vector<Trainer> trainers;
    for (const auto& g : groups) trainers.push_back(g.first);
    const std::vector<Trainer> distinct = sorted_unique(trainers);
    if (distinct.size() < 2) continue;  // one trainer: its ranks together are "all"
    for (Trainer t : distinct) {
      if (std::count(trainers.begin(), trainers.end(), t) > 1) out.push_back({t, std::nullopt, named});
    }
  }
  return out;
}

ErrorSummary group_summary(const Comparison& c, const Group& g) {
  return summarize_errors(c.compared, [&g](const ComparedRun& r) { return g.holds(r); });
}

// Each precision and memory format over all its configurations, when several were compared: (its
// label, summary).
std::vector<std::pair<std::string, ErrorSummary>> variant_summaries(const Comparison& c) {
  std::vector<std::pair<std::string, ErrorSummary>> out;
  const std::vector<VariantKey> variants = compared_variants(c);
  if (variants.size() < 2) return out;
  for (const VariantKey& v : variants) {
    out.emplace_back(variant_label(v),
                     summarize_errors(c.compared, [v](const ComparedRun& r) { return variant_of(r) == v; }));
  }
  return out;
}

std::string format_mape_table(const Comparison& c) {
  if (c.compared.empty()) return "";
  TextTable table({"configurations", "n", "MAPE epoch_s %", "noise floor % (of n with >= 2 runs)",
                   "MAPE after drift %", "explained by noise + drift", "MAPE train_s %", "bias: mean error epoch_s %",
                   "max abs error epoch_s %"});
  for (const Group& g : summary_groups(c)) add_summary_row(table, g.label(), group_summary(c, g));
  for (const auto& [label, summary] : variant_summaries(c)) add_summary_row(table, label, summary);
  std::vector<Strategy> strategies;
  for (const auto& r : c.compared) {
    if (std::find(strategies.begin(), strategies.end(), r.measured.key.strategy) == strategies.end()) {
      strategies.push_back(r.measured.key.strategy);
    }
  }
  if (strategies.size() > 1) {
    for (Strategy s : strategies) {
      add_summary_row(table, to_string(s),
                      summarize_errors(c.compared, [s](const ComparedRun& r) { return r.measured.key.strategy == s; }));
    }
  }
  const ErrorSummary profiled = summarize_errors(c.compared, [](const ComparedRun& r) { return r.profiled_batch; });
  if (profiled.configs > 0 && profiled.configs < static_cast<int>(c.compared.size())) {
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
      out += "- " + key_label(m.key) + " (" + setting_label(m.key) + ", " + std::to_string(m.runs) +
             " run(s), runs.csv line" + (m.lines.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < m.lines.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(m.lines[i]);
      out += "): " + u.reason + "\n";
    }
  }
  std::vector<std::string> labels;
  for (const auto& spec : c.unmeasured) labels.push_back(config_label(spec));
  out += "Predicted but not measured: " + std::to_string(labels.size()) + " configuration(s) of the sweep" +
         (labels.empty() ? ".\n" : ": " + csv::comma_list(labels) + "\n");
  return out + "\n";
}

// The measured run of (strategy, gpus, batch), or nullptr.
// (Side-by-side tables show the runs in the config's setting: its trainer, workers and samples.)
const ComparedRun* find_compared(const Comparison& c, Strategy s, int gpus, int64_t batch) {
  for (const auto& r : c.compared) {
    const RunKey& k = r.measured.key;
    if (r.in_setting && k.strategy == s && k.gpus == gpus && k.batch_per_gpu == batch) return &r;
  }
  return nullptr;
}

std::string time_or_oom(const SimResult* r, double SimResult::*field) {
  if (r == nullptr) return kNone;
  if (!r->runnable) return "n/a";
  return r->fits ? seconds(r->*field) : "OOM";
}

// The strategy whose 1-GPU runs the Q1 comparison shows: the sweep's Q1 strategy (dp before ddp)
// when it has measured 1-GPU runs, else the strategy with the most measured 1-GPU runs.
std::optional<Strategy> compared_one_gpu_strategy(const ReportContext& context, const Comparison& c) {
  const auto measured_one_gpu = [&c](Strategy s) {
    return std::count_if(c.compared.begin(), c.compared.end(), [s](const ComparedRun& r) {
      return r.in_setting && r.measured.key.strategy == s && r.measured.key.gpus == 1;
    });
  };
  const std::optional<Strategy> sweep_choice = one_gpu_baseline_strategy(context);
  if (sweep_choice && measured_one_gpu(*sweep_choice) > 0) return sweep_choice;
  std::optional<Strategy> best;
  for (Strategy s : {Strategy::kDp, Strategy::kDdp}) {
    if (measured_one_gpu(s) > 0 && (!best || measured_one_gpu(s) > measured_one_gpu(*best))) best = s;
  }
  return best ? best : sweep_choice;
}

std::string format_one_gpu_side_by_side(const ReportContext& context, const Comparison& c,
                                   const std::vector<SimResult>& predictions) {
  const auto strategy = compared_one_gpu_strategy(context, c);
  const Unit& unit = context.unit;
  std::string out = "## Q1: 1-" + unit.name + " epoch time per batch size, predicted and measured";
  if (!strategy) return out + "\n\nNo 1-" + unit.name + " configuration was predicted or measured.\n\n";
  out += std::string(" (") + to_string(*strategy) + ", " + unit.count(1) + ")\n\n";
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
                   m ? seconds(m->measured.epoch_s.median) : kNone, m ? format_error_percent(m->epoch_error_pct) : kNone,
                   time_or_oom(p, &SimResult::train_s), m ? seconds(m->measured.train_s.median) : kNone,
                   m ? format_error_percent(m->train_error_pct) : kNone});
  }
  return out + "train_s is the course's Q1 time: the epoch without loader waits.\n\n" + table.to_markdown() + "\n";
}

std::string format_scaling_side_by_side(const Comparison& c, const std::vector<SimResult>& predictions,
                                       const std::vector<Strategy>& strategies, const Unit& unit) {
  std::string out;
  const ResultGrid grid(predictions);
  for (Strategy s : strategies) {
    if (std::none_of(c.compared.begin(), c.compared.end(),
                     [s](const ComparedRun& r) { return r.in_setting && r.measured.key.strategy == s; })) {
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
    std::vector<std::string> headers{"batch/" + unit.name};
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
        row.push_back(m ? seconds(m->measured.epoch_s.median) : kNone);
        if (n < 2) continue;
        const bool predicted = base && p && base->runnable && p->runnable && base->fits && p->fits;
        row.push_back(predicted ? format_fixed(speedup(base->epoch_s, p->epoch_s), 3) : kNone);
        row.push_back(measured_base && m
                          ? format_fixed(speedup(measured_base->measured.epoch_s.median, m->measured.epoch_s.median), 3)
                          : kNone);
      }
      table.add_row(row);
    }
    out += std::string("## Table 1 (") + to_string(s) +
           "): epoch time T(N,b) and speedup T(1,b)/T(N,b), predicted and measured\n\n" + table.to_markdown() + "\n";
  }
  if (out.empty()) return out;
  return out +
         "A measured speedup divides the median measured T(1,b) by the median measured T(N,b) of the same "
         "strategy; `-` where either was not measured (or not predicted). Only runs in the config's "
         "setting (its trainer, loader workers and samples) appear here; every run is in the table above.\n\n";
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

std::string format_compare_definitions(const Unit& unit) {
  return "## Definitions\n\n"
         "- Joined on (strategy, gpus, batch_per_gpu, loader_workers, train_samples, trainer, "
         "test_samples, threads). Every measured configuration is predicted with its own settings. "
         "Repeated runs of one configuration are summarised by their median; `noise %` is their spread "
         "(max - min) / median, the floor below which an error means nothing.\n"
         "- error % = (predicted - measured) / measured * 100, with the median measured value; positive "
         "means the simulator predicts a slower run than measured.\n"
         "- drift % = (median probe of the runs / the profile's probe - 1) * 100: how much slower (+) or "
         "faster (-) the machine ran the calibration probe (one fixed training iteration) during the runs "
         "than when it was profiled. error after drift % scales the prediction by (1 + drift): what the "
         "error would be had the machine not drifted, where the epoch is bound by what the probe times. "
         "None for a model added to the profile by `measure torchscript` or `measure import-trace`: the "
         "profile's probe was not timed with it.\n"
         "- explained: |error| <= noise + |drift|: the difference is within what the repeats' spread and "
         "the machine's drift account for, so it is not called a model error.\n"
         "- MAPE (mean absolute percentage error) = (1/n) * sum |error %| over the n measured "
         "configurations that have a prediction (a configuration counts once however many repeats it "
         "has). noise floor = the mean noise % of those configurations measured at least twice (a single "
         "run has no spread: its noise is unknown, not 0, and it explains an error only within the drift). "
         "bias = the mean signed error %: near the MAPE when the errors share one sign, near 0 when they "
         "scatter both ways.\n"
         "- in sweep: the configuration is in the config's grid; `no`: it was simulated only for this "
         "comparison. profiled b: the profile timed this per-" + unit.name + " batch; `no`: its compute times are "
         "interpolated or extrapolated in the batch. setting: trainer, loader workers, samples per epoch "
         "(and the test pass's samples).\n"
         "- epoch_s: wall time of the timed epoch; train_s: epoch_s without the time the training loop "
         "waited for the data loader (the course's Q1 time). A predicted time marked (OOM) is for a "
         "configuration predicted not to fit in device memory.\n"
         "- load before / after: the highest 1-minute load average seen before and after the "
         "configuration's runs.\n\n";
}

}  // namespace

std::string format_error_percent(double percent) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.1f", percent);
  return buffer;
}

std::string format_mape_line(const Comparison& comparison) {
  const ErrorSummary s = summarize_errors(comparison.compared);
  if (s.configs == 0) return "MAPE epoch_s: n/a over 0 configurations";
  return "MAPE epoch_s: " + format_fixed(s.mape_epoch_pct, 1) + "% over " + counted(s.configs, "configuration") +
         " (" + counted(s.runs, "run") + "); bias " + format_error_percent(s.mean_epoch_error_pct) + "%";
}

std::vector<std::string> format_group_mape_lines(const Comparison& comparison) {
  const auto line = [](const std::string& label, const ErrorSummary& s) {
    std::string out = "MAPE epoch_s (" + label + "): " + format_fixed(s.mape_epoch_pct, 1) + "% over " +
                      counted(s.configs, "configuration") + "; bias " + format_error_percent(s.mean_epoch_error_pct) +
                      "%; noise floor " +
                      (s.noise_configs > 0 ? format_fixed(s.mean_noise_pct, 1) + "% over " +
                                                 counted(s.noise_configs, "configuration") + " with >= 2 runs"
                                           : std::string("unknown (no configuration with >= 2 runs)"));
    if (s.with_drift > 0) out += "; after drift " + format_fixed(s.mape_drift_adjusted_pct, 1) + "%";
    return out + "; " + std::to_string(s.explained) + " within noise + drift";
  };
  std::vector<std::string> lines;
  for (const Group& g : summary_groups(comparison)) lines.push_back(line(g.label(), group_summary(comparison, g)));
  for (const auto& [label, summary] : variant_summaries(comparison)) lines.push_back(line(label, summary));
  return lines;
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
      "pred_train_s,meas_train_s,meas_train_s_min,meas_train_s_max,train_error_pct,pred_fits,"
      "trainer,test_samples,threads,noise_pct,drift_pct,drift_adjusted_error_pct,explained,"
      "pred_test_s,meas_test_s,test_error_pct,precision,memory_format\n";
  using csv::number;
  const auto optional = [](const std::optional<double>& value) { return value ? number(*value) : ""; };
  const auto boolean = [](bool value) { return std::string(value ? "true" : "false"); };
  for (const auto& r : comparison.compared) {
    const MeasuredConfig& m = r.measured;
    out += std::string(to_string(m.key.strategy)) + "," + std::to_string(m.key.gpus) + "," +
           std::to_string(m.key.batch_per_gpu) + "," + std::to_string(m.key.loader_workers) + "," +
           std::to_string(m.key.train_samples) + "," + boolean(r.in_sweep) + "," + boolean(r.profiled_batch) + "," +
           std::to_string(m.runs) + "," + number(r.predicted.epoch_s) + "," + number(m.epoch_s.median) + "," +
           number(m.epoch_s.min) + "," + number(m.epoch_s.max) + "," + number(r.epoch_error_pct) + "," +
           number(r.predicted.train_s) + "," + number(m.train_s.median) + "," + number(m.train_s.min) + "," +
           number(m.train_s.max) + "," + number(r.train_error_pct) + "," + boolean(r.predicted.fits) + "," +
           to_string(m.key.trainer) + "," + std::to_string(m.key.test_samples) + "," +
           std::to_string(m.key.threads) + "," + number(m.epoch_s.noise_pct()) + "," + optional(r.drift_pct) + "," +
           optional(r.drift_adjusted_error_pct) + "," + boolean(r.explained) + "," +
           (m.test_s ? number(r.predicted.test_s) : "") + "," + (m.test_s ? number(m.test_s->median) : "") + "," +
           optional(r.test_error_pct) + "," + precision_name(m.key.precision) + "," +
           memory_format_name(m.key.memory_format) + "\n";
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
  if (runs.models.size() == 1 && runs.models[0] != context.model) {
    warnings.push_back("runs of model '" + runs.models[0] + "' compared with the config's model '" + context.model +
                       "' (runs.csv names no other)");
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
  out += "- the config's setting (the side-by-side tables and plots): trainer " + std::string(to_string(context.trainer)) +
         ", " + std::to_string(context.train_samples) + " samples, loader workers " +
         std::to_string(context.loader_workers) + "\n";
  std::string runs_data;
  for (const auto& d : runs.data) runs_data += (runs_data.empty() ? "" : ", ") + describe_data(d);
  out += "- data: the profile's loader was measured on " + describe_data(context.data) + "; the runs trained on " +
         (runs_data.empty() ? "data not recorded (runs.csv has no data column)" : runs_data) + "\n";
  out += "- runs: " + runs.file + ", " + counted(runs.rows, "row") + ", " +
         counted(static_cast<int64_t>(runs.configs.size()), "measured configuration") + ", device " +
         (runs.devices.empty() ? "not recorded" : csv::comma_list(runs.devices)) +
         (runs.models.empty() ? std::string() : ", model " + csv::comma_list(runs.models)) + "\n";
  out += std::string("- simulation: ") +
         (context.exact ? "exact (every iteration simulated)" : "steady state extrapolated to the epoch") + "\n";
  if (!runs.has_trainer_column) {
    out += "- trainer: runs.csv has no trainer column: every row is taken as measure train's (trainsim)\n";
  }
  for (const std::string& line : format_group_mape_lines(comparison)) out += "- " + line + "\n";
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
  std::vector<SimResult> predictions = sweep_results;  // and the extra ones in the config's setting
  for (const ComparedRun& r : comparison.compared) {
    if (r.in_setting && !r.in_sweep) predictions.push_back(r.predicted);
  }
  std::vector<Strategy> strategies = context.strategies;
  for (const auto& r : comparison.compared) {
    if (std::find(strategies.begin(), strategies.end(), r.measured.key.strategy) == strategies.end()) {
      strategies.push_back(r.measured.key.strategy);
    }
  }
  out += format_one_gpu_side_by_side(context, comparison, predictions);
  out += format_scaling_side_by_side(comparison, predictions, strategies, context.unit);
  out += format_plot_section(plots);
  out += "## Configurations on one side only\n\n" + format_one_side_lists(comparison);
  std::vector<SimResult> compared_predictions;
  for (const auto& r : comparison.compared) compared_predictions.push_back(r.predicted);
  std::string notes = format_notes(ResultGrid(compared_predictions), context.unit);
  // format_notes titles its section "## Notes"; here they are the compared configurations' notes.
  out += "## Simulator notes for the measured configurations" + notes.substr(std::string("## Notes").size());
  return out + format_compare_definitions(context.unit);
}

}  // namespace trainsim::report
