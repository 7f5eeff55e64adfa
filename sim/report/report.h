#pragma once
// The course's tables (Q1, Table 1-3) built from a sweep's SimResults, as Markdown text.
// Metric definitions: docs/OUTPUT.md and README "Metric definitions".

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "io/config.h"
#include "format/profile.h"
#include "report/format.h"
#include "report/large_batch.h"
#include "train/simulator.h"

namespace trainsim::report {

// What the report's header and its tables' layout need: the config's run setting, the profile's
// machine and the sweep's axes.
struct ReportContext : RunSetting {
  std::string config_file;
  std::string profile_path;
  std::string machine_name;
  std::string host;
  std::string device_kind;        // "cpu" / "cuda"
  Unit unit;                      // "rank" for a CPU profile predicted as itself, else "GPU"
  std::string device_name;
  int device_count = 0;
  double device_memory_bytes = 0;
  std::string data;               // "synthetic" or "cifar10" (the profile's loader data)
  std::string measured_date;      // ISO 8601 from the profile
  std::string model;
  int64_t param_bytes = 0;        // the model's fp32 parameter bytes (course Q3.2 message size)
  bool exact = false;             // --exact: every iteration simulated
  // Predicted beside the tables: the other entries of the config's precision or memory format list.
  SweepConfig::VariantAxis variant_axis = SweepConfig::VariantAxis::kPrecision;
  std::vector<std::string> other_variants;
  // A sweep too large to print in full (simulate summarises it): what the tables show of it and
  // what the whole sweep gave; printed in the header. Empty: the tables show the whole sweep.
  std::string summary;
  // Sweep axes in config order (the config parser rejects duplicates).
  std::vector<Strategy> strategies;
  std::vector<int> gpus;
  std::vector<int64_t> batches;
};

ReportContext make_report_context(const SweepConfig& config, const Profile& profile, bool exact);
// "rank" when the profile is a CPU's and the config names no GPU (`gpu:` or a topology's), else "GPU".
Unit report_unit(const SweepConfig& config, const Profile& profile);

// The sweep's results with lookup by configuration.
class ResultGrid {
 public:
  explicit ResultGrid(std::vector<SimResult> results);
  // nullptr when the sweep has no such configuration (the first one when it has several).
  const SimResult* find(Strategy strategy, int gpus, int64_t batch_per_gpu) const;
  const std::vector<SimResult>& all() const { return results_; }

 private:
  using Key = std::tuple<Strategy, int, int64_t>;
  std::vector<SimResult> results_;
  std::map<Key, std::size_t> index_;  // the tables look up every cell: no linear scans
};

// A time cell of the tables (4 significant digits): "OOM" for a configuration that does not
// fit, "n/a" for one that cannot run on the profiled machine, "-" when not swept (nullptr).
std::string time_cell(const SimResult* r, double SimResult::*field);

// "ddp:4:128": STRATEGY:GPUS:BATCH, the same form as --trace-config.
std::string config_label(const RunSpec& spec);

// Course arithmetic, one place (formulas in docs/OUTPUT.md).
// speedup = T(1,b) / T(N,b)
double speedup(double t1, double tn);
// efficiency = speedup / N
double scaling_efficiency(double t1, double tn, int n);
// "weak scaling speedup" = N * T(1,b) / T(N,b)
double weak_scaling_speedup(double t1, double tn, int n);
// The compute and communication split that assumes the work divides perfectly (the course's Q3.1
// method): compute(N) = T(1,b) / N, communication(N) = T(N,b) - T(1,b) / N
double perfect_split_compute_s(double t1, int n);
double implied_comm_s(double t1, double tn, int n);
// What a ring all-reduce of the gradients sends per rank and epoch (the course's Q3.2 method):
// iterations * 2(n-1)/n * parameter bytes
double ring_bytes_per_epoch(int64_t iterations, int n, int64_t param_bytes);

// The 1-GPU baseline every speedup is taken against (the report's Q1): dp with 1 GPU if swept (DataParallel on one device is the
// plain module call), else ddp with 1 GPU; nullopt when the sweep has no 1-GPU configuration.
std::optional<Strategy> one_gpu_baseline_strategy(const ReportContext& context);

// Sections; each ends with a blank line. The course's question or table each answers is in its
// title: "Q1" (1-GPU epoch time per batch), "Table 1" (epoch time and speedup vs GPUs), "Table 2"
// (computation vs communication), "Table 3" (bandwidth utilisation).
std::string format_header(const ReportContext& context);
std::string format_one_gpu_epoch_times(const ReportContext& context, const ResultGrid& grid);
std::string format_scaling_table(const ReportContext& context, const ResultGrid& grid);
std::string format_compute_vs_communication(const ReportContext& context, const ResultGrid& grid);
std::string format_bandwidth_utilisation(const ReportContext& context, const ResultGrid& grid);
// The SimResult notes of the whole sweep grouped by cause (issue 64): notes whose texts are equal
// once every number is a placeholder are one group, in order of first appearance, printed as one
// line with each number that varies as its range over the group ("fork 53.7-62.4 ms"), then the
// configurations of the group: "all configurations", or compress_configurations' list. A line
// over 100 columns puts the configurations on indented continuation lines; the text is whole.
std::string format_notes(const ResultGrid& grid, const Unit& unit = {});
// Every distinct note once (in order of first appearance) with each configuration that reported
// it (STRATEGY:GPUS:BATCH), or "all configurations": DIR/notes.md's section.
std::string format_notes_per_configuration(const ResultGrid& grid);
// DIR/notes.md: a title, then format_notes_per_configuration.
std::string format_notes_markdown(const ReportContext& context, const ResultGrid& grid);

// A note split at its numbers: texts[0] numbers[0] texts[1] ... texts[n]; key is the texts joined
// by a placeholder. A number is digits with an optional fraction that start a word (not h100's,
// cu130's or sm_80's digits), with a minus sign after a space or '('.
struct NoteShape {
  std::string key;
  std::vector<std::string> texts;
  std::vector<std::string> numbers;
};
NoteShape note_shape(const std::string& note);
// A group's configurations for its note line, per strategy in order of first appearance: one
// item "dp: 1-4 GPUs x batch 32-8192" when they are every combination of their GPU counts and
// batches (a range when those are all the grid's values between its ends, else "1,4"), else one
// such item per GPU count or per batch (whichever needs fewer); an item that is not shorter than
// its labels (ddp:1:64, ddp:2:64) is its labels. At most `cap` items, then "and N more" (N
// configurations; a last single one is shown instead).
std::vector<std::string> compress_configurations(const std::vector<const RunSpec*>& specs, const ResultGrid& grid,
                                                 const Unit& unit, std::size_t cap);
std::string format_metric_definitions(const Unit& unit);

// Optional sections (issue 5): Q4 when the profile has a baseline training curve for the model,
// the SyncBatchNorm table when the config turns it on (with the sweep re-simulated without it).
struct ReportExtras {
  const LargeBatchReport* large_batch = nullptr;
  const ResultGrid* large_batch_grid = nullptr;     // Q4's own sweep (large_batch.model); null: the sweep
  const Profile* profile = nullptr;                 // needed with without_sync_batchnorm
  const ResultGrid* without_sync_batchnorm = nullptr;
};

// What `simulate` prints: header, Q1, Tables 1-3, [SyncBatchNorm], [Q4], notes.
std::string format_report(const ReportContext& context, const ResultGrid& grid, const ReportExtras& extras = {});
// DIR/predictions.md: a title, the same report, then the metric definitions.
std::string format_predictions_markdown(const ReportContext& context, const ResultGrid& grid,
                                        const ReportExtras& extras = {});

}  // namespace trainsim::report
