#include "report/report.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "format/csv.h"
#include "format/metrics.h"
#include "report/format.h"

namespace trainsim::report {
namespace {

// 44695848 -> "44,695,848": byte counts users compare with the documented parameter size.
std::string with_thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

constexpr const char* kOom = "OOM";
constexpr const char* kNotRunnable = "n/a";

std::string ratio(double r) { return format_fixed(r, 3); }
std::string gbytes(double bytes) { return format_significant(bytes / 1e9, 4); }

bool usable(const SimResult* r) { return r != nullptr && r->runnable && r->fits; }

std::vector<int> multi_gpu_counts(const ReportContext& context) {
  std::vector<int> out;
  for (int n : context.gpus) {
    if (n >= 2) out.push_back(n);
  }
  return out;
}

// Strong scaling at a fixed global batch B: T(1,B) / T(N,B/N), for the cells the sweep has
// (B among the 1-device batches and B/N among the per-device batches).
std::string format_strong_scaling(const ReportContext& c, const ResultGrid& grid) {
  TextTable table({"strategy", "global batch B", "N", "b = B/N", "T(1,B) s", "T(N,B/N) s",
                   "strong-scaling speedup"});
  for (Strategy s : c.strategies) {
    for (int64_t global : c.batches) {
      const SimResult* base = grid.find(s, 1, global);
      if (base == nullptr) continue;
      for (int n : c.gpus) {
        if (n < 2 || global % n != 0) continue;
        const SimResult* r = grid.find(s, n, global / n);
        if (r == nullptr) continue;
        const bool both = usable(base) && usable(r);
        table.add_row({to_string(s), std::to_string(global), std::to_string(n), std::to_string(global / n),
                       time_cell(base, &SimResult::epoch_s), time_cell(r, &SimResult::epoch_s),
                       both ? ratio(speedup(base->epoch_s, r->epoch_s)) : kNone});
      }
    }
  }
  std::string out = "### Strong scaling at a fixed global batch B: T(1,B) / T(N,B/N)\n\n";
  if (table.empty()) {
    return out + wrap_paragraph("The sweep has no such cells (they need B among the 1-" + c.unit.name +
                                " batches and B/N among batch_per_gpu).") + "\n";
  }
  return out + table.to_markdown() + "\n";
}

// The configurations that cannot run at all, with the reason (empty when there are none).
std::string format_not_runnable(const ResultGrid& grid) {
  std::vector<std::pair<std::string, std::vector<std::string>>> reasons;
  for (const SimResult& r : grid.all()) {
    if (r.runnable) continue;
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& x) { return x.first == r.not_runnable; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {r.not_runnable, {}});
    it->second.push_back(config_label(r.spec));
  }
  if (reasons.empty()) return "";
  std::string out = "### Not runnable on the profiled machine (n/a)\n\n";
  for (const auto& [reason, labels] : reasons) {
    std::string where;
    for (const std::string& label : labels) where += (where.empty() ? "" : ", ") + label;
    out += wrap_bullet(where + ": " + reason);
  }
  return out + "\n";
}

}  // namespace

Unit report_unit(const SweepConfig& config, const Profile& profile) {
  Unit unit;
  if (profile.machine.device_kind == "cpu" && !config.gpu && !config.topology) unit.name = "rank";
  return unit;
}

ReportContext make_report_context(const SweepConfig& config, const Profile& profile, bool exact) {
  ReportContext c;
  static_cast<RunSetting&>(c) = config;
  c.config_file = config.file;
  c.profile_path = config.profile_path;
  c.machine_name = profile.machine.name;
  c.host = profile.machine.host;
  c.device_kind = profile.machine.device_kind;
  c.unit = report_unit(config, profile);
  c.device_name = profile.machine.device_name;
  c.device_count = profile.machine.device_count;
  c.device_memory_bytes = profile.machine.device_memory_bytes;
  c.data = profile.loader.data.empty() ? profile.measurement.data : profile.loader.data;
  c.measured_date = profile.machine.date;
  c.model = config.model;
  const auto model = profile.models.find(config.model);
  c.param_bytes = model == profile.models.end() ? 0 : model->second.param_bytes();
  c.exact = exact;
  c.variant_axis = config.variant_axis;
  for (const SweepConfig::VariantProfile& other : config.other_variants) {
    c.other_variants.push_back(variant_name(config.variant_axis, other.precision, other.memory_format));
  }
  c.strategies = config.strategies;
  c.gpus = config.gpus;
  c.batches = config.batch_per_gpu;
  return c;
}

ResultGrid::ResultGrid(std::vector<SimResult> results) : results_(std::move(results)) {
  for (std::size_t i = 0; i < results_.size(); ++i) {
    const RunSpec& s = results_[i].spec;
    index_.emplace(Key{s.strategy, s.gpus, s.batch_per_gpu}, i);  // keeps the first
  }
}

const SimResult* ResultGrid::find(Strategy strategy, int gpus, int64_t batch_per_gpu) const {
  const auto it = index_.find(Key{strategy, gpus, batch_per_gpu});
  return it == index_.end() ? nullptr : &results_[it->second];
}

std::string time_cell(const SimResult* r, double SimResult::*field) {
  if (r == nullptr) return kNone;
  if (!r->runnable) return kNotRunnable;
  if (!r->fits) return kOom;
  return seconds(r->*field);
}

std::string config_label(const RunSpec& spec) {
  return std::string(to_string(spec.strategy)) + ":" + std::to_string(spec.gpus) + ":" +
         std::to_string(spec.batch_per_gpu);
}

double speedup(double t1, double tn) { return t1 / tn; }
double scaling_efficiency(double t1, double tn, int n) { return speedup(t1, tn) / n; }
double weak_scaling_speedup(double t1, double tn, int n) { return n * t1 / tn; }
double perfect_split_compute_s(double t1, int n) { return t1 / n; }
double implied_comm_s(double t1, double tn, int n) { return tn - perfect_split_compute_s(t1, n); }
double ring_bytes_per_epoch(int64_t iterations, int n, int64_t param_bytes) {
  // Ring all-reduce: each rank sends 2(n-1)/n * S bytes per all-reduce of S bytes.
  return static_cast<double>(iterations) * nccl_tests_bus_factor("all_reduce", n) * static_cast<double>(param_bytes);
}

std::optional<Strategy> one_gpu_baseline_strategy(const ReportContext& context) {
  const bool one_gpu = std::find(context.gpus.begin(), context.gpus.end(), 1) != context.gpus.end();
  if (!one_gpu) return std::nullopt;
  for (Strategy preferred : {Strategy::kDp, Strategy::kDdp}) {
    if (std::find(context.strategies.begin(), context.strategies.end(), preferred) !=
        context.strategies.end()) {
      return preferred;
    }
  }
  return std::nullopt;
}

std::string format_header(const ReportContext& c) {
  std::string out = "# trainsim predictions: " + c.model + "\n\n";
  out += wrap_bullet("config: " + c.config_file);
  // A fitted device (docs/FIT.md) was measured nowhere.
  out += wrap_bullet("profile: " + c.profile_path + " (machine " + c.machine_name +
                     (c.host.empty() && c.measured_date.empty() ? std::string(")")
                                                                : ", measured on " + c.host + " " + c.measured_date + ")"));
  out += wrap_bullet("device: " + c.device_kind + " " + c.device_name + " x" + std::to_string(c.device_count) +
                     ", " + format_gib(c.device_memory_bytes) + " GiB each");
  out += wrap_bullet("data: " + c.data +
                     (c.data == "synthetic" ? " (loader measured on synthetic samples)"
                      : c.data == "n/a"     ? " (the loader was not measured: fitted)"
                                            : " (real files)"));
  if (!c.summary.empty()) out += wrap_bullet("sweep: " + c.summary);
  out += wrap_bullet("model: " + c.model + ", " + with_thousands(c.param_bytes) + " parameter bytes (fp32)");
  // Said only when not fp32, the mode every table was in before precision was a setting.
  if (c.precision != Precision::kFp32) {
    out += wrap_bullet(std::string("precision: ") + precision_name(c.precision) +
                       " (forward and loss under autocast, weights, gradients and the all-reduce in fp32; the "
                       "profile was measured so)");
  }
  if (c.memory_format != MemoryFormat::kNchw) {
    out += wrap_bullet(std::string("memory format: ") + memory_format_name(c.memory_format) +
                       " (the model's 4-D weights and each input batch channels-last; the profile was measured so)");
  }
  if (!c.other_variants.empty()) {
    const VariantAxisWords words = variant_axis_words(c.variant_axis);
    out += wrap_bullet(std::string(words.plural) + ": " + variant_name(c.variant_axis, c.precision, c.memory_format) +
                       " in the tables; " + csv::comma_list(c.other_variants) + " in the " + words.title +
                       " section after them, each from its own profile");
  }
  out += wrap_bullet(std::string("trainer: ") + to_string(c.trainer) +
                     (c.trainer == Trainer::kPytorch ? " (the PyTorch reference trainer's loop and DataLoader)"
                                                     : " (measure train's C++ loop and loader)"));
  out += wrap_bullet("epoch: " + std::to_string(c.train_samples) + " samples; loader workers: " +
                     std::to_string(c.loader_workers) + (c.persistent_workers ? " (persistent)" : "") +
                     (c.pin_memory ? ", pinned memory" : ""));
  if (c.test_pass) {
    out += wrap_bullet("test pass after each epoch: " + std::to_string(c.test_pass->samples) +
                       " samples in batches of " + std::to_string(c.test_pass->batch) +
                       " (test_s in predictions.csv; not in epoch_s)");
  }
  if (c.interconnect) {
    out += wrap_bullet("interconnect: assumed busbw " + format_significant(c.interconnect->bus_bandwidth_gbs, 4) +
                       " GB/s, latency " + format_significant(c.interconnect->latency_us, 4) + " us" +
                       (c.interconnect->override_measured ? ", used instead of the profile's curves"
                                                          : ", used where the profile has no curve"));
  } else if (c.topology) {
    out += wrap_bullet("interconnect: assumed, not measured: NCCL's cost model on " + c.topology->describe() +
                       " (topology:)");
  } else {
    out += wrap_bullet("interconnect: the profile's measured collective curves");
  }
  if (c.sync_batchnorm) {
    out += wrap_bullet("BatchNorm: SyncBatchNorm under ddp (statistics exchanged across the " + c.unit.plural() +
                       " in every BatchNorm layer)");
  }
  out += wrap_bullet(std::string("simulation: ") +
                     (c.exact ? "exact (every iteration simulated)" : "steady state extrapolated to the epoch")) +
         "\n";
  return out;
}

std::string format_one_gpu_epoch_times(const ReportContext& c, const ResultGrid& grid) {
  const auto strategy = one_gpu_baseline_strategy(c);
  if (!strategy) {
    return "## Q1: 1-" + c.unit.name + " epoch time per batch size\n\n" +
           wrap_paragraph("The sweep has no 1-" + c.unit.name + " configuration (add 1 to sweep.gpus).") + "\n";
  }
  const std::string one = c.unit.count(1);
  std::string out = "## Q1: 1-" + c.unit.name + " epoch time per batch size (" + to_string(*strategy) + ", " +
                    one + ")\n\n";
  out += wrap_paragraph(*strategy == Strategy::kDp ? "dp with " + one + ": DataParallel on one device is the plain module call."
                                                  : "ddp with " + one + " (dp is not swept).");
  out += wrap_paragraph("train_s is the course's Q1 time: the epoch without loader waits (H2D copy, forward, "
                        "backward and update included).") +
         "\n";
  // A fitted device's epoch times carry their 68% interval (docs/FIT.md "Intervals").
  bool intervals = false;
  for (int64_t b : c.batches) {
    const SimResult* r = grid.find(*strategy, 1, b);
    intervals = intervals || (r != nullptr && r->epoch_s_hi > 0);
  }
  std::vector<std::string> header{"batch", "epoch_s", "train_s", "iterations", "peak_mem_gib", "fits"};
  if (intervals) header.insert(header.begin() + 2, "epoch_s 68%");
  TextTable table(header);
  std::optional<int64_t> first_oom;
  int64_t largest_fitting = 0;
  for (int64_t b : c.batches) {
    const SimResult* r = grid.find(*strategy, 1, b);
    if (r == nullptr) continue;
    if (!r->runnable) {
      std::vector<std::string> row{std::to_string(b), kNotRunnable, kNotRunnable, kNone, kNone, kNotRunnable};
      if (intervals) row.insert(row.begin() + 2, kNone);
      table.add_row(row);
      continue;
    }
    // A steady-state peak with the first iteration's beside it (docs/OUTPUT.md).
    const std::string peak = r->first_iteration_peak_mem_bytes > 0
                                 ? format_gib(r->peak_mem_bytes) + " (first " + format_gib(r->first_iteration_peak_mem_bytes) + ")"
                                 : format_gib(r->peak_mem_bytes);
    std::vector<std::string> row{std::to_string(b), time_cell(r, &SimResult::epoch_s), time_cell(r, &SimResult::train_s),
                                 std::to_string(r->iterations), peak, r->fits ? "yes" : "no"};
    if (intervals) {
      // Over 10x either way: the fit's observations do not determine it (docs/FIT.md "Intervals").
      row.insert(row.begin() + 2, !r->fits                      ? kOom
                                  : r->epoch_s_hi > kUndeterminedSpread * r->epoch_s ? std::string("undetermined")
                                  : r->epoch_s_hi > 0             ? seconds(r->epoch_s_lo) + "-" + seconds(r->epoch_s_hi)
                                                                  : kNone);
    }
    table.add_row(row);
    if (!r->fits && (!first_oom || b < *first_oom)) first_oom = b;
    if (r->fits) largest_fitting = std::max(largest_fitting, b);
  }
  out += table.to_markdown() + "\n";
  if (first_oom) {
    const SimResult* r = grid.find(*strategy, 1, *first_oom);
    out += wrap_paragraph("first batch that does not fit: " + std::to_string(*first_oom) + " (predicted peak " +
                          format_gib(r->peak_mem_bytes) + " GiB > " + format_gib(r->device_memory_bytes) + " GiB)") +
           "\n";
  } else {
    out += wrap_paragraph("all fit up to " + std::to_string(largest_fitting)) + "\n";
  }
  return out;
}

std::string format_scaling_table(const ReportContext& c, const ResultGrid& grid) {
  const std::vector<int> multi = multi_gpu_counts(c);
  std::string out;
  for (Strategy s : c.strategies) {
    out += std::string("## Table 1 (") + to_string(s) + "): epoch time T(N,b) and speedup T(1,b)/T(N,b)\n\n";
    std::vector<std::string> headers{"batch/" + c.unit.name};
    for (int n : c.gpus) {
      headers.push_back("T(" + std::to_string(n) + ",b) s");
      if (n >= 2) headers.push_back("speedup " + std::to_string(n));
    }
    TextTable times(headers);
    std::vector<std::string> scaling_headers{"batch/" + c.unit.name};
    for (int n : multi) {
      scaling_headers.push_back("efficiency " + std::to_string(n));
      scaling_headers.push_back("weak-scaling speedup " + std::to_string(n));
    }
    TextTable scaling(scaling_headers);
    for (int64_t b : c.batches) {
      const SimResult* base = grid.find(s, 1, b);
      std::vector<std::string> row{std::to_string(b)};
      std::vector<std::string> scaling_row{std::to_string(b)};
      for (int n : c.gpus) {
        const SimResult* r = grid.find(s, n, b);
        row.push_back(time_cell(r, &SimResult::epoch_s));
        if (n < 2) continue;
        const bool both = usable(base) && usable(r);
        row.push_back(both ? ratio(speedup(base->epoch_s, r->epoch_s)) : kNone);
        scaling_row.push_back(both ? ratio(scaling_efficiency(base->epoch_s, r->epoch_s, n)) : kNone);
        scaling_row.push_back(both ? ratio(weak_scaling_speedup(base->epoch_s, r->epoch_s, n)) : kNone);
      }
      times.add_row(row);
      scaling.add_row(scaling_row);
    }
    out += times.to_markdown() + "\n";
    if (!multi.empty()) {
      out += wrap_paragraph(std::string("Scaling efficiency = speedup / N; weak-scaling speedup = N * T(1,b) / T(N,b) (") +
                            to_string(s) + "):") +
             "\n";
      out += scaling.to_markdown() + "\n";
    }
  }
  out += wrap_paragraph(
      "This sweep holds the per-" + c.unit.name +
      " batch b fixed, so the global batch N*b grows with N: weak scaling in the global batch, over a fixed "
      "epoch of " +
      std::to_string(c.train_samples) + " samples. Ideal speedup T(1,b)/T(N,b) is N (N times fewer iterations of "
      "the same per-" + c.unit.name + " work), ideal efficiency 1. The weak-scaling speedup N*T(1,b)/T(N,b) is "
      "Gustafson's scaled speedup: it assumes T(N,b) does N times the work of T(1,b) (each " + c.unit.name +
      " iterating over the whole data set). Here every T is one epoch split across the " + c.unit.plural() +
      ", so its ideal is N^2 and it overstates scaling by a factor N. Strong scaling keeps the global batch B "
      "fixed: T(1,B)/T(N,B/N), shown below where the sweep has both cells. Speedups use the same strategy's 1-" +
      c.unit.name + " time; OOM marks a "
      "configuration that does not fit in device memory, n/a one that cannot run on the profiled "
      "machine (listed below).") +
         "\n";
  out += format_strong_scaling(c, grid);
  return out + format_not_runnable(grid);
}

std::string format_compute_vs_communication(const ReportContext& c, const ResultGrid& grid) {
  std::string out = "## Table 2: computation vs communication per epoch (N >= 2)\n\n";
  const std::vector<int> multi = multi_gpu_counts(c);
  if (multi.empty()) return out + wrap_paragraph("The sweep has no configuration with 2 or more " + c.unit.plural() + ".") + "\n";
  // Two tables of the same rows, so that each fits a terminal (issue 64): the course's
  // subtraction, then the simulator's breakdown.
  const std::string batch = "batch/" + c.unit.name;
  TextTable course({"strategy", "gpus", batch, "T(1,b) s", "T(N,b) s", "course compute s", "course comm s"});
  TextTable simulated({"strategy", "gpus", batch, "compute_s", "comm_s", "exposed_comm_s", "loader_stall_s"});
  for (Strategy s : c.strategies) {
    for (int64_t b : c.batches) {
      const SimResult* base = grid.find(s, 1, b);
      for (int n : multi) {
        const SimResult* r = grid.find(s, n, b);
        if (r == nullptr) continue;
        const bool both = usable(base) && usable(r);
        course.add_row({to_string(s), std::to_string(n), std::to_string(b), time_cell(base, &SimResult::epoch_s),
                        time_cell(r, &SimResult::epoch_s),
                        both ? seconds(perfect_split_compute_s(base->epoch_s, n)) : kNone,
                        both ? seconds(implied_comm_s(base->epoch_s, r->epoch_s, n)) : kNone});
        simulated.add_row({to_string(s), std::to_string(n), std::to_string(b), time_cell(r, &SimResult::compute_s),
                           time_cell(r, &SimResult::comm_s), time_cell(r, &SimResult::exposed_comm_s),
                           time_cell(r, &SimResult::loader_stall_s)});
      }
    }
  }
  out += course.to_markdown() + "\n";
  out += wrap_paragraph("The simulator's breakdown of the same configurations, " + c.unit.name +
                        " 0's busy times over the epoch in s:") +
         "\n";
  out += simulated.to_markdown() + "\n";
  out += wrap_paragraph(
      "Course method (Q3.1): compute(N) = T(1,b)/N, communication(N) = T(N,b) - T(1,b)/N. The "
      "simulator's columns are " + c.unit.name + " 0's busy times over the epoch: compute_s (compute stream and H2D "
      "copies), comm_s (communication stream), exposed_comm_s (communication not overlapped by "
      "compute), loader_stall_s (training loop waiting for a batch). They differ because the course "
      "subtraction charges everything that does not shrink as 1/N to communication (loader stalls, "
      "DataParallel's one loader for the global batch, its per-iteration replicate, scatter and gather, "
      "per-replica launch overhead) and ignores overlap: DDP all-reduces gradient buckets while "
      "backward runs, so only exposed_comm_s adds to the epoch time. A negative course communication "
      "means T(N,b) < T(1,b)/N.") +
         "\n";
  return out;
}

std::string format_bandwidth_utilisation(const ReportContext& c, const ResultGrid& grid) {
  std::string out = "## Table 3: bandwidth utilisation (N >= 2), GB = 1e9 bytes\n\n";
  const std::vector<int> multi = multi_gpu_counts(c);
  if (multi.empty()) return out + wrap_paragraph("The sweep has no configuration with 2 or more " + c.unit.plural() + ".") + "\n";
  // Two tables of the same rows, so that each fits a terminal (issue 64): the course's method,
  // then the collectives as simulated.
  const std::string batch = "batch/" + c.unit.name;
  TextTable course({"strategy", "gpus", batch, "iterations", "course GB/epoch", "course comm s", "utilisation GB/s"});
  TextTable simulated({"strategy", "gpus", batch, "comm GB/rank", "busbw GB/s"});
  for (Strategy s : c.strategies) {
    for (int64_t b : c.batches) {
      const SimResult* base = grid.find(s, 1, b);
      for (int n : multi) {
        const SimResult* r = grid.find(s, n, b);
        if (r == nullptr) continue;
        if (!r->runnable) {
          course.add_row({to_string(s), std::to_string(n), std::to_string(b), kNone, kNone, kNone, kNone});
          simulated.add_row({to_string(s), std::to_string(n), std::to_string(b), kNotRunnable, kNotRunnable});
          continue;
        }
        const double bytes = ring_bytes_per_epoch(r->iterations, n, c.param_bytes);
        const bool both = usable(base) && usable(r);
        const double comm = both ? implied_comm_s(base->epoch_s, r->epoch_s, n) : 0;
        std::string utilisation = kNone;
        if (both) utilisation = comm > 0 ? format_significant(bytes / comm / 1e9, 4) : "n/a (comm <= 0)";
        course.add_row({to_string(s), std::to_string(n), std::to_string(b), std::to_string(r->iterations),
                        gbytes(bytes), both ? seconds(comm) : kNone, utilisation});
        simulated.add_row({to_string(s), std::to_string(n), std::to_string(b),
                           r->fits ? gbytes(r->comm_bytes_per_rank) : kOom,
                           r->fits ? format_significant(r->busbw_gbs, 4) : kOom});
      }
    }
  }
  out += course.to_markdown() + "\n";
  out += wrap_paragraph("utilisation GB/s = course GB/epoch / course comm s. The simulator's collectives in the same "
                        "configurations, GB each rank sends in the epoch and their bus bandwidth:") +
         "\n";
  out += simulated.to_markdown() + "\n";
  out += wrap_paragraph("Ring all-reduce of S bytes on n ranks: 2(n-1) steps, each rank sending S/n bytes per step, so "
         "t = 2(n-1)*alpha + 2(n-1)/n * S / B (alpha: per-step latency, B: per-rank link bandwidth) and "
         "each rank sends 2(n-1)/n * S bytes. Course method (Q3.2): bytes per epoch = iterations * "
         "2(n-1)/n * P with P = " +
         with_thousands(c.param_bytes) +
         " parameter bytes, utilisation = bytes per epoch / course communication time. It assumes one "
         "ring all-reduce of all parameters per iteration, which DataParallel does not do (it "
         "broadcasts parameters and reduces gradients to " + c.unit.name + " 0). The simulator's columns count the "
         "epoch's collectives as simulated: bytes each rank sends, and busbw = algbw * 2(n-1)/n with "
         "algbw = S/t (the nccl-tests convention).") +
         "\n";
  return out;
}

std::string format_notes_per_configuration(const ResultGrid& grid) {
  // Each distinct note once (in order of first appearance), with the configurations that
  // reported it, each label once (a comparison's grid holds one configuration per trainer and
  // setting); notes and labels are looked up by hash, not by scanning.
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  std::unordered_map<std::string, std::size_t> note_index;
  std::vector<std::unordered_set<std::string>> labelled;  // per note: the labels it lists
  for (const SimResult& r : grid.all()) {
    for (const auto& note : r.notes) {
      const auto [it, added] = note_index.emplace(note, notes.size());
      if (added) {
        notes.push_back({note, {}});
        labelled.emplace_back();
      }
      std::string label = config_label(r.spec);
      if (labelled[it->second].insert(label).second) notes[it->second].second.push_back(std::move(label));
    }
  }
  std::string out = "## Notes\n\n";
  if (notes.empty()) return out + "(none)\n\n";
  out += wrap_paragraph("Modelling notes from the simulator, each with the configurations (STRATEGY:GPUS:BATCH) "
                        "it applies to.") +
         "\n";
  for (const auto& [note, labels] : notes) {
    std::string where;
    if (labels.size() == grid.all().size() && labels.size() > 1) {
      where = "all configurations";
    } else {
      for (const auto& label : labels) where += (where.empty() ? "" : ", ") + label;
    }
    out += wrap_bullet(note + " (" + where + ")");
  }
  return out + "\n";
}

NoteShape note_shape(const std::string& note) {
  NoteShape shape;
  std::string text;
  const auto digit = [&](std::size_t i) { return i < note.size() && std::isdigit(static_cast<unsigned char>(note[i])); };
  for (std::size_t i = 0; i < note.size();) {
    // A number starts a word: not a digit of an identifier (h100, cu130, resnet18, sm_80) nor
    // of a version's later part (2.11.0's 0). A minus sign after a space or '(' is its own.
    const char before = i == 0 ? ' ' : note[i - 1];
    const bool starts = !std::isalnum(static_cast<unsigned char>(before)) && before != '_' && before != '.';
    const bool sign = note[i] == '-' && digit(i + 1) && (i == 0 || before == ' ' || before == '(');
    if (!(starts && (digit(i) || sign))) {
      text += note[i++];
      continue;
    }
    std::size_t end = i + 1;
    while (digit(end)) ++end;
    if (end + 1 < note.size() && note[end] == '.' && digit(end + 1)) {
      end += 2;
      while (digit(end)) ++end;
    }
    shape.texts.push_back(std::move(text));
    text.clear();
    shape.numbers.push_back(note.substr(i, end - i));
    i = end;
  }
  shape.texts.push_back(std::move(text));
  for (std::size_t k = 0; k < shape.texts.size(); ++k) shape.key += (k == 0 ? "" : "\x01") + shape.texts[k];
  return shape;
}

namespace {

// One number of a group's notes: its smallest and largest value, as printed.
struct NumberRange {
  std::string low, high;
  double low_value = 0, high_value = 0;

  void add(const std::string& number) {
    const double value = std::strtod(number.c_str(), nullptr);
    if (low.empty() || value < low_value) {
      low = number;
      low_value = value;
    }
    if (high.empty() || value > high_value) {
      high = number;
      high_value = value;
    }
  }
  // "53.7-62.4"; a number equal across the group as it is.
  std::string format() const {
    if (low_value == high_value) return low;
    return low + (low.front() == '-' ? " to " : "-") + high;
  }
};

// One group of notes that differ only in their numbers.
struct NoteGroup {
  std::vector<std::string> texts;    // the text between the numbers
  std::vector<NumberRange> numbers;  // per number of the text
  std::vector<std::size_t> members;  // its configurations' results in the grid, each configuration once, in order
  std::set<std::tuple<Strategy, int, int64_t>> configurations;
  std::size_t results = 0;           // results of the grid with a note of the group
  std::size_t last_result = SIZE_MAX;
};

// The values of `used` as a range of `all` (sorted) when they are every value of `all` between
// their smallest and largest ("1-4" for 1, 2, 4 of 1, 2, 4), else listed ("1,4").
template <typename T>
std::string value_set(const std::set<T>& used, const std::set<T>& all) {
  const auto inside = std::distance(all.lower_bound(*used.begin()), all.upper_bound(*used.rbegin()));
  if (used.size() > 1 && inside == static_cast<std::ptrdiff_t>(used.size())) {
    return std::to_string(*used.begin()) + "-" + std::to_string(*used.rbegin());
  }
  std::string out;
  for (const T& v : used) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

}  // namespace

std::vector<std::string> compress_configurations(const std::vector<const RunSpec*>& specs, const ResultGrid& grid,
                                                 const Unit& unit, std::size_t cap) {
  std::set<int> all_gpus;
  std::set<int64_t> all_batches;
  for (const SimResult& r : grid.all()) {
    all_gpus.insert(r.spec.gpus);
    all_batches.insert(r.spec.batch_per_gpu);
  }
  for (const RunSpec* s : specs) {  // a grid that lacks them still ranges over them
    all_gpus.insert(s->gpus);
    all_batches.insert(s->batch_per_gpu);
  }
  std::vector<Strategy> strategies;
  for (const RunSpec* s : specs) {
    if (std::find(strategies.begin(), strategies.end(), s->strategy) == strategies.end()) {
      strategies.push_back(s->strategy);
    }
  }
  struct Item {
    std::string text;
    std::size_t configurations;
  };
  std::vector<Item> items;
  for (Strategy strategy : strategies) {
    std::set<int> gpus;
    std::set<int64_t> batches;
    std::set<std::pair<int, int64_t>> cells;
    for (const RunSpec* s : specs) {
      if (s->strategy != strategy) continue;
      gpus.insert(s->gpus);
      batches.insert(s->batch_per_gpu);
      cells.insert({s->gpus, s->batch_per_gpu});
    }
    // Every combination of these GPU counts and batches is one item, when that is shorter than
    // their labels. Else one item per GPU count (a row of Table 1) or one per batch (a column),
    // whichever needs fewer.
    const auto add = [&](const std::set<int>& g, const std::set<int64_t>& b) {
      const std::string n = value_set(g, all_gpus);
      std::string product = std::string(to_string(strategy)) + ": " + n + " " +
                            (n == "1" ? unit.name : unit.plural()) + " x batch " + value_set(b, all_batches);
      std::vector<Item> labels;
      std::size_t length = 0;
      for (int gpus_value : g) {
        for (int64_t batch : b) {
          RunSpec cell;
          cell.strategy = strategy;
          cell.gpus = gpus_value;
          cell.batch_per_gpu = batch;
          labels.push_back({config_label(cell), 1});
          length += labels.back().text.size() + (labels.size() > 1 ? 2 : 0);
        }
      }
      if (labels.size() > 1 && product.size() < length) {
        items.push_back({std::move(product), labels.size()});
      } else {
        items.insert(items.end(), labels.begin(), labels.end());
      }
    };
    if (cells.size() == gpus.size() * batches.size()) {
      add(gpus, batches);
      continue;
    }
    std::map<int, std::set<int64_t>> rows;
    std::map<int64_t, std::set<int>> columns;
    for (const auto& [g, b] : cells) {
      rows[g].insert(b);
      columns[b].insert(g);
    }
    if (rows.size() <= columns.size()) {
      for (const auto& [g, b] : rows) add({g}, b);
    } else {
      for (const auto& [b, g] : columns) add(g, {b});
    }
  }
  std::vector<std::string> out;
  std::size_t more = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    // The last item shows rather than "and 1 more".
    if (i < cap || (i == cap && items.size() == cap + 1 && items[i].configurations == 1)) {
      out.push_back(items[i].text);
    } else {
      more += items[i].configurations;
    }
  }
  if (more > 0) out.push_back("and " + std::to_string(more) + " more");
  return out;
}

std::string format_notes(const ResultGrid& grid, const Unit& unit) {
  // Notes equal but for their numbers are one group (in order of first appearance), looked up by
  // hash; every distinct note is in DIR/notes.md (format_notes_per_configuration).
  // A sweep repeats the same notes across many configurations, so each distinct note is parsed
  // once (its numbers enter its group's ranges then) and later copies only count where it applies.
  std::vector<NoteGroup> groups;
  std::unordered_map<std::string, std::size_t> group_index;  // by the note's shape
  std::unordered_map<std::string, std::size_t> note_group;   // by the note's text
  const std::vector<SimResult>& results = grid.all();
  for (std::size_t r = 0; r < results.size(); ++r) {
    for (const auto& note : results[r].notes) {
      auto known = note_group.find(note);
      if (known == note_group.end()) {
        NoteShape shape = note_shape(note);
        const auto [it, added] = group_index.emplace(std::move(shape.key), groups.size());
        if (added) {
          groups.emplace_back();
          groups.back().texts = std::move(shape.texts);
          groups.back().numbers.resize(shape.numbers.size());
        }
        NoteGroup& g = groups[it->second];
        for (std::size_t k = 0; k < shape.numbers.size(); ++k) g.numbers[k].add(shape.numbers[k]);
        known = note_group.emplace(note, it->second).first;
      }
      NoteGroup& g = groups[known->second];
      if (g.last_result != r) {
        g.last_result = r;
        ++g.results;
      }
      const RunSpec& spec = results[r].spec;
      if (g.configurations.insert({spec.strategy, spec.gpus, spec.batch_per_gpu}).second) g.members.push_back(r);
    }
  }
  std::string out = "## Notes\n\n";
  if (groups.empty()) return out + "(none)\n\n";
  out += "Modelling notes from the simulator, grouped by cause: notes that differ only in their numbers\n"
         "are one line, each number that differs shown as its range over them, followed by the\n"
         "configurations (STRATEGY:GPUS:BATCH) they apply to. With --out DIR, DIR/notes.md lists every\n"
         "note with each configuration it applies to.\n\n";
  constexpr std::size_t kWidth = 100, kCap = 6;
  for (const NoteGroup& g : groups) {
    std::string text = g.texts.front();
    for (std::size_t k = 0; k < g.numbers.size(); ++k) text += g.numbers[k].format() + g.texts[k + 1];
    std::vector<std::string> where = {"all configurations"};
    if (g.results != results.size() || results.size() < 2) {
      std::vector<const RunSpec*> specs;
      specs.reserve(g.members.size());
      for (std::size_t r : g.members) specs.push_back(&results[r].spec);
      where = compress_configurations(specs, grid, unit, kCap);
    }
    std::string joined;
    for (const auto& w : where) joined += (joined.empty() ? "" : ", ") + w;
    const std::string line = "- " + text + " (" + joined + ")";
    if (line.size() <= kWidth) {
      out += line + "\n";
      continue;
    }
    // The configurations on indented lines of their own (the same list item in Markdown).
    out += wrap_bullet(text);
    std::string current = "  (";
    for (std::size_t i = 0; i < where.size(); ++i) {
      const std::string piece = where[i] + (i + 1 < where.size() ? "," : ")");
      if (current.size() > 3 && current.size() + 1 + piece.size() > kWidth) {
        out += current + "\n";
        current = "   ";
      }
      current += (current.size() > 3 ? " " : "") + piece;
    }
    out += current + "\n";
  }
  return out + "\n";
}

std::string format_notes_markdown(const ReportContext& context, const ResultGrid& grid) {
  return "# trainsim notes: " + context.model + "\n\nEvery note the simulator reported for the configurations of " +
         context.config_file + ",\nonce each, with every configuration it applies to (the report's Notes section "
         "groups them by cause).\n\n" + format_notes_per_configuration(grid);
}

std::string format_metric_definitions(const Unit& unit) {
  const std::string& one = unit.name;
  const std::vector<std::string> items = {
      "T(N,b): predicted wall time of one epoch on N " + unit.plural() + " with b samples per " + one +
      " per iteration "
      "(epoch_s). iterations = ceil(train_samples / global batch), global batch = N*b (capped at the "
      "data set size).",
      "train_s: epoch_s minus the time the training loop waited for the data loader (the course's Q1 "
      "time: H2D copy, forward, backward and weight update included).",
      "Speedup at fixed per-" + one + " batch (what the course measures): T(1,b) / T(N,b). Scaling "
      "efficiency: speedup / N.",
      "Weak-scaling speedup: N * T(1,b) / T(N,b) (Gustafson's scaled speedup, as some users write "
      "it). It assumes T(N,b) does N times the work of T(1,b); with a fixed epoch split across the " + unit.plural() +
      " its ideal is N^2, a factor N above the speedup.",
      "Strong scaling at a fixed global batch B: T(1,B) / T(N,B/N).",
      "Course method for Q3.1: compute(N) = T(1,b)/N, communication(N) = T(N,b) - T(1,b)/N.",
      "Simulator breakdown (" + one + " 0, seconds per epoch): compute_s = compute stream + H2D copies busy, "
      "comm_s = communication stream busy, exposed_comm_s = communication not overlapped by compute, "
      "loader_stall_s = time the training loop waited for a batch.",
      "Ring all-reduce of S bytes on n ranks: t = 2(n-1)*alpha + 2(n-1)/n * S / B; each rank sends "
      "2(n-1)/n * S bytes. algbw = S / t; busbw = algbw * 2(n-1)/n (nccl-tests). GB = 1e9 bytes.",
      "Course method for Q3.2: bytes per epoch = iterations * 2(n-1)/n * parameter bytes; "
      "utilisation = bytes per epoch / communication(N).",
      "Memory: peak_mem_gib is the predicted peak on the most loaded device (" + one + " 0 for dp), GiB = "
      "2^30 bytes; fits = peak <= device memory. A configuration that does not fit shows OOM in the "
      "tables (its predicted times remain in predictions.csv with fits=false).",
      "sync_bn_s (with sync_batchnorm): " + one + " 0's time per epoch in SyncBatchNorm's collectives, which "
      "block the next layer.",
      "Q4 (with a baseline training curve in the profile, docs/LARGE_BATCH.md): loss@k and acc@k are "
      "the predicted training loss and accuracies after k epochs at the configuration's global batch; "
      "epochs to target = examples to reach the target loss / samples per baseline epoch; time to "
      "target = those examples / simulated throughput (train_samples / epoch_s); efficiency = (B_noise + "
      "B_0) / (B_noise + B) (Pollux); goodput = throughput x efficiency."};
  std::string out = "## Metric definitions\n\n";
  for (const std::string& item : items) out += wrap_bullet(item);
  return out + "\n";
}

std::string format_report(const ReportContext& context, const ResultGrid& grid, const ReportExtras& extras) {
  std::string out = format_header(context) + format_one_gpu_epoch_times(context, grid) + format_scaling_table(context, grid) +
                    format_compute_vs_communication(context, grid) + format_bandwidth_utilisation(context, grid);
  if (extras.without_sync_batchnorm != nullptr && extras.profile != nullptr) {
    out += format_sync_batchnorm(*extras.profile, context.model, grid, *extras.without_sync_batchnorm, context.unit);
  }
  if (extras.large_batch != nullptr) {
    out += format_large_batch(*extras.large_batch, extras.large_batch_grid != nullptr ? *extras.large_batch_grid : grid);
  }
  return out + format_notes(grid, context.unit);
}

std::string format_predictions_markdown(const ReportContext& context, const ResultGrid& grid,
                                        const ReportExtras& extras) {
  return format_report(context, grid, extras) + format_metric_definitions(context.unit);
}

}  // namespace trainsim::report
