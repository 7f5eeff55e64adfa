// simulate CONFIG [--out DIR] [--compare RUNS.csv] [--trace FILE.json ...] [--exact] [--quiet]
//          [--holdout]
// simulate --list-gpus [--gpu-catalog FILE]
// Predicts the course's tables for every configuration of a sweep config (docs/OUTPUT.md) and,
// with --compare, joins them with measured runs into DIR/report.md (docs/COMPARE.md). A config
// may name a catalog GPU and list measured timings to fit (docs/FIT.md).

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "fit/fit.h"
#include "fit/fit_format.h"
#include "format/atomic_write.h"
#include "io/config.h"
#include "format/errors.h"
#include "io/gpu_catalog.h"
#include "format/profile_io.h"
#include "io/profile_needs.h"
#include "report/atomic_file.h"
#include "report/collectives.h"
#include "report/compare.h"
#include "report/compare_format.h"
#include "report/csv.h"
#include "report/format.h"
#include "report/large_batch.h"
#include "report/plots.h"
#include "report/report.h"
#include "report/scale_out.h"
#include "report/sweep.h"
#include "report/trace.h"
#include "report/variants.h"
#include "train/simulator.h"

namespace po = boost::program_options;
using namespace trainsim;

namespace {

struct CommandLine {
  std::string config;
  std::string out_dir;
  std::string compare_file;
  std::string trace_file;
  std::optional<std::string> trace_config;
  int trace_iterations = 3;
  bool exact = false;
  bool quiet = false;
  bool holdout = false;
  bool list_gpus = false;
  std::string gpu_catalog;
  int threads = 0;  // --threads; 0: every core
};

po::options_description visible_options(CommandLine& cl) {
  po::options_description options(
      "Usage: simulate CONFIG [options]\n\n"
      "Simulates every configuration (strategy x gpus x batch_per_gpu) of the sweep config CONFIG\n"
      "with the profile it names, and prints Q1 and Tables 1-3 (docs/OUTPUT.md) to stdout; with\n"
      "sync_batchnorm: true the SyncBatchNorm table, and with a baseline training curve in the profile\n"
      "the Q4 large-batch table (docs/LARGE_BATCH.md).\n\n"
      "Options");
  options.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version (and the profile schema it reads) and exit")
      ("out", po::value(&cl.out_dir)->value_name("DIR"),
       "also write DIR/predictions.csv, DIR/predictions.md and DIR/notes.md (every note with each of its "
       "configurations), and with observations DIR/fit.txt (the "
       "fit and the held-out cells) (DIR is created; files written atomically). Default: no files")
      ("compare", po::value(&cl.compare_file)->value_name("RUNS.csv"),
       "join the predictions with measured runs (reports/<machine>/runs.csv from `measure train`), "
       "print the errors and MAPE; with --out also write DIR/report.md, DIR/comparison.csv and the "
       "plots (gnuplot svg). The config must describe the runs (train_samples, loader workers). "
       "The last line printed is `MAPE epoch_s: X.X% over N configurations (R runs); bias +Y.Y%`")
      ("trace", po::value(&cl.trace_file)->value_name("FILE.json"),
       "write a Chrome trace / Perfetto timeline (ui.perfetto.dev) of one configuration. "
       "Default: no trace")
      ("trace-config", po::value<std::string>()->value_name("STRATEGY:GPUS:BATCH"),
       "the configuration to trace, e.g. ddp:4:128 (need not be in the sweep). Default: ddp if "
       "swept (else the first strategy), the largest gpus, batch 128 if swept else the first batch")
      ("trace-iterations", po::value(&cl.trace_iterations)->value_name("N")->default_value(3),
       "iterations recorded in the trace (>= 1)")
      ("exact", po::bool_switch(&cl.exact),
       "simulate every iteration of each epoch instead of extrapolating the steady state "
       "(default: off; slower, same result within 0.1%)")
      ("threads,j", po::value(&cl.threads)->value_name("N"),
       "configurations simulated at once, and a fit's starts and --holdout's folds (the output does not depend "
       "on it). Default: one per core")
      ("quiet,q", po::bool_switch(&cl.quiet),
       "print nothing to stdout (use with --out or --trace) and no progress to stderr; errors still go to stderr")
      ("holdout", po::bool_switch(&cl.holdout),
       "with observations: in the config, predict each observation from a fit of the others and "
       "print the table; the last line printed is `holdout MAPE epoch_s: X.X% over N observations`")
      ("list-gpus", po::bool_switch(&cl.list_gpus),
       "print the GPU catalog (the keys a config's gpu: may name) and exit; CONFIG not needed")
      ("gpu-catalog", po::value(&cl.gpu_catalog)->value_name("FILE"),
       "the catalog --list-gpus prints. Default: the bundled configs/gpus.yaml");
  return options;
}

// Returns nullopt when --help or --version was printed.
std::optional<CommandLine> parse_command_line(int argc, char** argv) {
  CommandLine cl;
  po::options_description visible = visible_options(cl);
  po::options_description all;
  all.add(visible).add_options()("config", po::value(&cl.config));
  po::positional_options_description positional;
  positional.add("config", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << visible << "\nExit codes: 0 success, 2 bad input (config, profile, command line: one line\n"
              << "`error: FILE:LINE: key: problem` on stderr), 1 output or internal error.\n";
    return std::nullopt;
  }
  if (vm.count("version")) {
    std::cout << "simulate " << TRAINSIM_VERSION << " (trainsim), profile schema_version 1\n";
    return std::nullopt;
  }
  po::notify(vm);
  if (cl.list_gpus) return cl;
  if (!cl.gpu_catalog.empty()) throw report::UsageError("--gpu-catalog goes with --list-gpus (a config names its own: gpu_catalog:)");
  if (cl.config.empty()) throw report::UsageError("missing CONFIG (see simulate --help)");
  if (vm.count("trace-config")) cl.trace_config = vm["trace-config"].as<std::string>();
  if (cl.trace_file.empty() && (cl.trace_config || !vm["trace-iterations"].defaulted())) {
    throw report::UsageError("--trace-config and --trace-iterations need --trace FILE.json");
  }
  if (vm.count("threads") && cl.threads < 1) {
    throw report::UsageError("--threads must be >= 1, got " + std::to_string(cl.threads));
  }
  if (cl.trace_iterations < 1) {
    throw report::UsageError("--trace-iterations must be >= 1, got " + std::to_string(cl.trace_iterations));
  }
  return cl;
}

// Reports progress on stderr, but only once the work has run for more than a second.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet, std::string what = "configurations")
      : quiet_(quiet), what_(std::move(what)), start_(Clock::now()), last_(start_) {}
  void operator()(size_t done, size_t total) {
    const auto now = Clock::now();
    if (quiet_ || now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    std::fprintf(stderr, "simulate: %zu/%zu %s, %.1f s\n", done, total, what_.c_str(),
                 std::chrono::duration<double>(now - start_).count());
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool quiet_;
  std::string what_;
  Clock::time_point start_;
  Clock::time_point last_;
};

// `simulate ARGS` as given, to reproduce a comparison report.
std::string reproduce_command(const CommandLine& cl) {
  std::string command = "simulate " + cl.config + " --compare " + cl.compare_file;
  if (!cl.out_dir.empty()) command += " --out " + cl.out_dir;
  if (cl.exact) command += " --exact";
  return command;
}

// A sweep of more configurations than this is summarised: its tables (and everything drawn from
// them) show kShownBatches of its batch sizes, while every configuration is simulated in chunks of
// kChunk and streamed to predictions.csv, so memory does not grow with the sweep (docs/OUTPUT.md).
constexpr std::size_t kFullTablesUpTo = 20000;
constexpr std::size_t kShownBatches = 16;
constexpr std::size_t kChunk = 8192;

// kShownBatches of the batch sizes, evenly spread over the list, its first and last included.
std::vector<int64_t> shown_batches(const std::vector<int64_t>& batches) {
  if (batches.size() <= kShownBatches) return batches;
  std::vector<int64_t> shown;
  for (std::size_t i = 0; i < kShownBatches; ++i) {
    shown.push_back(batches[i * (batches.size() - 1) / (kShownBatches - 1)]);
  }
  return shown;
}

// What the whole of a summarised sweep gave.
struct SweepTotals {
  std::size_t configurations = 0;
  std::size_t runnable = 0;
  std::size_t fit = 0;
  double fastest_epoch_s = 0;
  std::string fastest;  // its configuration label
};

// Simulates every configuration of `config` kChunk at a time, appending each row to `csv` (when
// given) in the sweep's order; keeps only the totals.
SweepTotals stream_sweep(const Profile& profile, const SweepConfig& config, const SimOptions& options,
                         ProgressLine& progress, const report::SweepRefusal& refuse, int threads,
                         AtomicFileWriter* csv, const report::LargeBatchReport* large_batch) {
  // The specs a chunk at a time, in sweep_specs' order: a million RunSpecs at once would take
  // most of a gigabyte.
  const std::size_t total = report::sweep_size(config);
  SweepTotals totals;
  totals.configurations = total;
  std::vector<RunSpec> chunk;
  for (std::size_t first = 0; first < total; first += kChunk) {
    chunk.clear();
    for (std::size_t i = first; i < std::min(total, first + kChunk); ++i) chunk.push_back(report::sweep_spec(config, i));
    const report::SweepProgress chunk_progress = [&](std::size_t done, std::size_t) { progress(first + done, total); };
    const std::vector<SimResult> results =
        report::run_specs(profile, config, chunk, options, chunk_progress, refuse, threads);
    std::string rows;
    for (const SimResult& r : results) {
      if (csv) rows += report::format_predictions_csv_row(r, config.model, large_batch);
      if (!r.runnable) continue;
      ++totals.runnable;
      if (!r.fits) continue;
      ++totals.fit;
      if (totals.fastest.empty() || r.epoch_s < totals.fastest_epoch_s) {
        totals.fastest_epoch_s = r.epoch_s;
        totals.fastest = report::config_label(r.spec);
      }
    }
    if (csv) csv->append(rows);
  }
  return totals;
}

// The header's line for a summarised sweep.
std::string summary_line(const SweepConfig& config, const std::vector<int64_t>& shown, const SweepTotals& totals,
                         bool csv) {
  std::string list;
  for (int64_t b : shown) list += (list.empty() ? "" : ", ") + std::to_string(b);
  return std::to_string(totals.configurations) + " configurations (" + std::to_string(config.batch_per_gpu.size()) +
         " batch sizes per GPU), too many to print: the tables and notes below show the batch sizes " + list +
         "; " + (csv ? "predictions.csv holds every configuration" : "every configuration is in predictions.csv with --out") +
         ". Over all " + std::to_string(totals.configurations) + ": " + std::to_string(totals.runnable) +
         " can run, " + std::to_string(totals.fit) + " fit in memory" +
         (totals.fastest.empty() ? std::string()
                                 : ", the shortest epoch " + report::format_significant(totals.fastest_epoch_s) + " s (" +
                                       totals.fastest + ")");
}

// Joins the measured runs with the sweep's results; a measured configuration outside the sweep's
// grid is simulated too when the profile covers it.
report::Comparison join_runs(const SweepConfig& config, const Profile& profile, const RunsTable& runs,
                             const report::ResultGrid& grid, const SimOptions& options) {
  const report::Predictor predict = [&](const RunSpec& spec) {
    SweepConfig one = config;
    one.strategies = {spec.strategy};
    one.gpus = {spec.gpus};
    one.batch_per_gpu = {spec.batch_per_gpu};
    require_for_model(profile, one);
    return report::simulate_config(profile, config, spec, options);
  };
  const auto model = profile.models.find(config.model);
  const std::vector<int64_t> profiled = model == profile.models.end() ? std::vector<int64_t>{} : model->second.batches;
  return report::compare_runs(config, grid.all(), runs, profiled, report::probe_reference(profile, config.model),
                              predict);
}

// What `simulate --out DIR` may write. A run removes those of an earlier run that it does not
// write itself, so that DIR never holds an inconsistent set (a plain run into a folder of a
// --compare run once left the old comparison.csv, report.md and plots beside new predictions).
// The plots are always removed first: whatever this run draws is written again.
enum class Output { kPredictions, kComparison, kFit, kCollectives, kScaleOut };
void remove_stale_outputs(const CommandLine& cl, const std::set<Output>& written) {
  struct Kind {
    Output output;
    std::vector<const char*> files;
  };
  static const std::vector<Kind> kinds = {
      {Output::kPredictions, {"predictions.csv", "predictions.md", "notes.md"}},
      {Output::kComparison, {"comparison.csv", "report.md"}},
      {Output::kFit, {"fit.txt"}},
      {Output::kCollectives, {"collectives.csv"}},
      {Output::kScaleOut, {"scale-out/predictions.csv", "scale-out/plots.gp", "scale-out/epoch_vs_batch.dat",
                           "scale-out/epoch_vs_batch.svg", "scale-out/speedup_vs_gpus.dat",
                           "scale-out/speedup_vs_gpus.svg"}},
  };
  static const std::vector<const char*> plots = {
      "plots.gp", "epoch_vs_batch.dat", "epoch_vs_batch.svg", "speedup_vs_gpus.dat", "speedup_vs_gpus.svg",
      "predicted_vs_measured.dat", "predicted_vs_measured.svg", "large_batch.dat", "large_batch.svg"};
  std::vector<std::string> removed;
  const auto remove = [&](const char* name, bool say) {
    const std::filesystem::path file = std::filesystem::path(cl.out_dir) / name;
    std::error_code ec;
    if (std::filesystem::remove(file, ec) && say) removed.push_back(name);
  };
  for (const Kind& kind : kinds) {
    if (written.count(kind.output) == 0) {
      for (const char* name : kind.files) remove(name, true);
    }
  }
  const bool draws = written.count(Output::kPredictions) > 0;
  for (const char* name : plots) remove(name, !draws);
  if (!removed.empty() && !cl.quiet) {
    std::string list;
    for (const auto& name : removed) list += (list.empty() ? "" : ", ") + name;
    std::cout << "removed " << list << " from " << cl.out_dir << " (an earlier run's; this one does not write them)\n";
  }
}

// DIR/comparison.csv, the plots and DIR/report.md (last, so it can say whether the plots exist).
// Returns the "wrote ..." line.
std::string write_comparison(const CommandLine& cl, const report::ReportContext& context, const RunsTable& runs,
                             const report::ResultGrid& grid, const report::Comparison& comparison,
                             const report::LargeBatchReport* large_batch, const std::vector<int64_t>& large_batch_batches) {
  const std::filesystem::path dir(cl.out_dir);
  const std::string csv = (dir / "comparison.csv").string(), markdown = (dir / "report.md").string();
  report::write_file_atomic(csv, report::format_comparison_csv(comparison));

  std::vector<SimResult> predictions = grid.all();
  for (const report::ComparedRun& r : comparison.compared) {
    if (r.in_setting && !r.in_sweep) predictions.push_back(r.predicted);
  }
  const report::PlotScript script =
      report::build_plot_script(comparison, predictions, context.unit, large_batch, large_batch_batches);
  const report::DrawOutcome outcome = report::draw_plots(cl.out_dir, script);
  for (const auto& message : outcome.messages) std::cerr << "warning: gnuplot: " << message << "\n";
  report::PlotSection plots;
  if (outcome.drawn) {
    plots.drawn = script.plots;
  } else {
    std::cerr << "warning: plots skipped: " << outcome.problem << "\n";
    plots.skipped.push_back("Plots were not drawn: " + outcome.problem +
                            ". The gnuplot script plots.gp and its .dat files are in this folder: run "
                            "`gnuplot plots.gp` here to draw them.");
  }
  plots.skipped.insert(plots.skipped.end(), script.skipped.begin(), script.skipped.end());
  report::write_file_atomic(markdown, report::format_compare_report(context, runs, grid.all(), comparison, plots,
                                                                    reproduce_command(cl)));
  return "wrote " + markdown + ", " + csv +
         (outcome.drawn ? " and " + std::to_string(script.plots.size()) + " SVG plots" : " (no plots)") + "\n";
}

// What the sweep runs on: the measured profile as it is, moved to another catalog GPU, or built
// from a fit of the config's observations (docs/FIT.md); and the config the predictions use (the
// fitted link and DataParallel cost in it).
struct Device {
  SweepConfig config;
  Profile profile;
  std::unique_ptr<fit::DeviceFit> fitter;
  std::optional<fit::FitResult> fit;
  std::string fit_text;
  std::vector<std::string> notes;  // carried by every prediction

  report::SweepRefusal refuse() const {
    if (!fit) return {};
    return [this](const RunSpec& spec) { return fitter->unpredictable(spec, *fit); };
  }
};

// The catalog GPU a measured profile was taken on: its device name looked up in the catalog.
std::optional<GpuSpec> profile_gpu(const SweepConfig& config, const Profile& profile) {
  if (profile.machine.device_kind != "cuda") return std::nullopt;
  const GpuCatalog catalog = load_gpu_catalog(config.gpu_catalog_path);
  if (const GpuSpec* gpu = catalog.match_device_name(profile.machine.device_name)) return *gpu;
  return std::nullopt;
}

// The sweep's specs carry the fitted link and DataParallel cost (RunSpec), like any config's.
void apply_fit(SweepConfig& config, const fit::DeviceFit& fitter, const fit::FitResult& fit) {
  RunSpec probe;
  probe.gpus = 2;
  probe.interconnect = fitter.config().interconnect;
  probe.topology = config.topology;
  const RunSpec applied = fitter.spec_for(probe, fit);
  config.interconnect = applied.interconnect;
  config.dp_host_per_replica_s = applied.dp_host_per_replica_s;
}

Device resolve_device(const SweepConfig& given, const std::optional<Profile>& measured, int threads, bool quiet) {
  Device d;
  d.config = given;
  const std::optional<GpuSpec> measured_gpu = measured ? profile_gpu(given, *measured) : std::nullopt;
  if (given.gpu && measured && !measured_gpu) {
    throw InputError(given.file, given.gpu_line, "gpu",
                     "the profile's device (" + measured->machine.device_kind + " '" + measured->machine.device_name +
                         "') is not a GPU of the catalog " + given.gpu_catalog_path +
                         ": its times cannot be moved to " + given.gpu->key +
                         " (drop profile: and give observations: to fit the GPU instead)");
  }
  std::optional<GpuSpec> target = given.gpu ? given.gpu : measured_gpu;
  if (!target && !measured) {
    // A table from one GPU (every observation naming it) is a fit for that GPU.
    for (const Observation& o : given.observations) {
      if (o.gpu && (!target || target->key == o.gpu->key)) {
        target = o.gpu;
      } else if (o.gpu || target) {
        throw InputError(given.file, o.line, "observations",
                         "observations on different GPUs need the config's gpu: (the one to predict for)");
      }
    }
  }
  const std::string target_text = target ? target->key + (measured ? " (transferred profile)" : " (roofline)")
                                         : std::string("an unknown device (model description only)");
  if (given.observations.empty()) {
    d.profile = *measured;
    if (given.gpu && measured_gpu && measured_gpu->key != given.gpu->key) {
      if (!described_model(given.model)) {
        throw InputError(given.file, given.gpu_line, "gpu",
                         "moving the profile's times from " + measured_gpu->key + " to " + given.gpu->key +
                             " goes layer by layer, and trainsim knows the layers of " + kDescribedModels +
                             " only, not of model '" + given.model + "'");
      }
      d.profile = fit::transfer_profile(*measured, given.model, *measured_gpu, *given.gpu);
      if (!d.config.interconnect) d.config.interconnect = fit::catalog_interconnect(*given.gpu);
    }
    return d;
  }
  fit::FitSetup setup;
  setup.config = d.config;
  setup.target = target;
  setup.measured = measured ? &*measured : nullptr;
  setup.measured_gpu = measured_gpu;
  d.fitter = std::make_unique<fit::DeviceFit>(setup);
  ProgressLine progress(quiet, "fit starts (" + std::to_string(given.observations.size()) + " observations)");
  d.fit = d.fitter->fit_all(threads, std::ref(progress));
  d.fit_text = fit::format_fit(*d.fit, d.config, target_text);
  d.profile = d.fitter->target_profile(*d.fit);
  apply_fit(d.config, *d.fitter, *d.fit);
  if (d.config.profile_path.empty()) d.config.profile_path = "none: fitted to the observations of " + given.file;
  d.notes = fit::fit_notes(*d.fit, target_text, d.fitter->default_link());
  return d;
}

// With a fit: each configuration's 68% interval of its epoch time (docs/FIT.md "Intervals"),
// the sweep simulated again once per fitted parameter, nudged, for the sensitivities.
void add_fit_intervals(std::vector<SimResult>& results, const Device& d, const SweepConfig& tables,
                       const SimOptions& options, int threads) {
  const fit::FitResult& fit = *d.fit;
  std::vector<std::vector<double>> g(results.size(), std::vector<double>(fit.fitted.size(), 0.0));
  for (std::size_t j = 0; j < fit.fitted.size(); ++j) {
    fit::FitResult nudged = fit;
    nudged.values = fit::nudged(fit, j);
    SweepConfig config = tables;
    apply_fit(config, *d.fitter, nudged);
    const std::vector<SimResult> again =
        report::run_sweep(d.fitter->target_profile(nudged), config, options, {}, d.refuse(), threads);
    for (std::size_t i = 0; i < results.size() && i < again.size(); ++i) {
      if (results[i].runnable && again[i].runnable && results[i].epoch_s > 0 && again[i].epoch_s > 0) {
        g[i][j] = std::log(again[i].epoch_s / results[i].epoch_s) / fit::kSensitivityStep;
      }
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    SimResult& r = results[i];
    if (!r.runnable || !(r.epoch_s > 0)) continue;
    const fit::Interval interval = fit::interval_around(fit, r.epoch_s, g[i]);
    r.epoch_s_lo = interval.lo;
    r.epoch_s_hi = interval.hi;
  }
}

// collectives: (docs/SCALE.md) the collective on the topology, nccl-tests' layout, printed and
// written to --out's collectives.csv. True where the config has no sweep: nothing else runs.
bool run_collectives(const CommandLine& cl, const SweepConfig& given) {
  const std::vector<report::CollectiveRow> rows = report::predict_collectives(*given.collectives, *given.topology);
  if (!cl.quiet) std::cout << report::format_collectives_table(*given.collectives, *given.topology, rows) << std::flush;
  if (!cl.out_dir.empty()) {
    report::create_directories(cl.out_dir);
    if (given.strategies.empty()) remove_stale_outputs(cl, {Output::kCollectives});
    const std::string csv = (std::filesystem::path(cl.out_dir) / "collectives.csv").string();
    report::write_file_atomic(csv, report::format_collectives_csv(*given.collectives, *given.topology, rows));
    if (!cl.quiet) std::cout << "wrote " << csv << "\n";
  }
  if (given.strategies.empty()) {
    if (cl.holdout || !cl.compare_file.empty() || !cl.trace_file.empty()) {
      throw report::UsageError("--holdout, --compare and --trace need a sweep: in the config");
    }
    return true;
  }
  if (!cl.quiet) std::cout << "\n";
  return false;
}

// --holdout: the fit again without each observation in turn, each predicting the one left out.
void run_holdout(const CommandLine& cl, const Device& device, int threads) {
  if (!device.fitter) throw report::UsageError("--holdout needs observations: in the config");
  const std::size_t n = device.config.observations.size();
  if (!cl.quiet && n > 1) {
    std::fprintf(stderr, "simulate: holdout: %zu fits of %zu observations each (%s), on %d threads\n", n, n - 1,
                 fit::holdout_starts_warm(*device.fit, n) ? "each from the full fit's values"
                                                          : "each from the fit's cold starts",
                 threads);
  }
  ProgressLine progress(cl.quiet, "holdout fits");
  const std::string table =
      fit::format_holdout(fit::holdout(*device.fitter, *device.fit, threads, std::ref(progress)), device.config);
  if (!cl.quiet) std::cout << table << std::flush;
}

// With SyncBatchNorm, the ddp multi-GPU configurations again without it, to show what it adds.
std::optional<report::ResultGrid> sweep_without_sync_batchnorm(const Profile& profile, const SweepConfig& tables,
                                                               const SimOptions& options, int threads) {
  if (!tables.sync_batchnorm) return std::nullopt;
  SweepConfig plain = tables;
  plain.sync_batchnorm = false;
  plain.strategies = {Strategy::kDdp};
  plain.gpus.erase(std::remove(plain.gpus.begin(), plain.gpus.end(), 1), plain.gpus.end());
  const bool any = std::find(tables.strategies.begin(), tables.strategies.end(), Strategy::kDdp) !=
                       tables.strategies.end() && !plain.gpus.empty();
  return report::ResultGrid(any ? report::run_sweep(profile, plain, options, {}, {}, threads) : std::vector<SimResult>{});
}

// scale_out: (docs/SCALE.md) its sweep, on its own profile where it names one.
struct ScaleOut {
  SweepConfig sweep;
  Profile profile;
  std::optional<report::ResultGrid> grid;
  std::string text;  // its section of the report
};

// What one run of the sweep computed, for --out (references to run()'s own).
struct SweepRun {
  const Device& device;           // device.config: the sweep's config
  const std::string& held_out;    // the fit's validation (empty: none)
  bool collectives = false;
  const report::ReportContext& context;
  const report::ResultGrid& grid;
  const report::ReportExtras& extras;  // extras.large_batch_grid: Q4's own sweep, where it has one
  const std::optional<ScaleOut>& scale_out;
  const std::vector<report::VariantSweep>& variants;  // the config's other precisions or formats
  const std::string& variant_text;                    // their section of the report
  const std::optional<RunsTable>& runs;
  const std::optional<report::Comparison>& comparison;
  AtomicFileWriter* streamed_csv = nullptr;  // a summarised sweep's predictions.csv, streamed
};

// The scale-out's predictions and its plots (epoch time vs batch, speedup vs GPUs) in a folder of
// their own.
void write_scale_out(const CommandLine& cl, const ScaleOut& scale) {
  const std::filesystem::path dir = std::filesystem::path(cl.out_dir) / "scale-out";
  report::create_directories(dir.string());
  report::write_file_atomic((dir / "predictions.csv").string(),
                            report::format_predictions_csv(scale.grid->all(), scale.sweep.model));
  const report::DrawOutcome outcome =
      report::draw_plots(dir.string(), report::build_plot_script(report::Comparison{}, scale.grid->all(),
                                                                 report::report_unit(scale.sweep, scale.profile)));
  for (const auto& message : outcome.messages) std::cerr << "warning: gnuplot: " << message << "\n";
  if (!cl.quiet) {
    std::cout << "wrote " << dir.string() << "/predictions.csv"
              << (outcome.drawn ? " and its plots" : " (plots not drawn: " + outcome.problem + ")") << "\n";
  }
}

// --out DIR: predictions.csv, .md, notes.md, the plots, fit.txt, the comparison's files; the files
// an earlier run left that this one does not write are removed.
void write_out_dir(const CommandLine& cl, const SweepRun& r) {
  report::create_directories(cl.out_dir);
  std::set<Output> written = {Output::kPredictions};
  if (r.comparison) written.insert(Output::kComparison);
  if (r.device.fit) written.insert(Output::kFit);
  if (r.collectives) written.insert(Output::kCollectives);
  if (r.scale_out) written.insert(Output::kScaleOut);
  remove_stale_outputs(cl, written);
  const std::filesystem::path dir(cl.out_dir);
  const std::string csv = (dir / "predictions.csv").string(), markdown = (dir / "predictions.md").string();
  // With --compare, predictions.csv also holds the measured configurations simulated outside the sweep.
  std::vector<SimResult> predictions = r.grid.all();
  if (r.comparison) {
    predictions.insert(predictions.end(), r.comparison->extra_predictions.begin(), r.comparison->extra_predictions.end());
  }
  // Q4's columns join the sweep's rows only when Q4 is about the sweep's own configurations.
  const report::LargeBatchReport* large_batch_columns = r.extras.large_batch_grid ? nullptr : r.extras.large_batch;
  // The other entries' rows follow the tables' (the `precision` and `memory_format` columns tell
  // them apart).
  std::string variant_rows;
  for (const report::VariantSweep& p : r.variants) {
    for (const SimResult& result : p.grid.all()) {
      variant_rows += report::format_predictions_csv_row(result, r.device.config.model);
    }
  }
  if (r.streamed_csv) {
    // The whole sweep is in it already; the measured configurations outside the sweep follow.
    std::string rows;
    if (r.comparison) {
      for (const SimResult& extra : r.comparison->extra_predictions) {
        rows += report::format_predictions_csv_row(extra, r.device.config.model, large_batch_columns);
      }
    }
    r.streamed_csv->append(rows + variant_rows);
    r.streamed_csv->commit();
  } else {
    report::write_file_atomic(csv, report::format_predictions_csv(predictions, r.device.config.model,
                                                                  large_batch_columns) +
                                       variant_rows);
  }
  report::write_file_atomic(markdown, report::format_predictions_markdown(r.context, r.grid, r.extras) +
                                          r.variant_text + (r.scale_out ? r.scale_out->text : std::string()));
  const std::string notes = (dir / "notes.md").string();
  // Every note of predictions.csv's configurations (the comparison's own ones too).
  report::write_file_atomic(notes, report::format_notes_markdown(r.context, report::ResultGrid(predictions)));
  if (!cl.quiet) std::cout << "wrote " << csv << ", " << markdown << " and " << notes << "\n";
  if (r.scale_out) write_scale_out(cl, *r.scale_out);
  // Q4's plot over the global batches of its table.
  std::vector<int64_t> large_batch_batches;
  for (const SimResult& result : (r.extras.large_batch_grid ? *r.extras.large_batch_grid : r.grid).all()) {
    if (result.runnable) large_batch_batches.push_back(result.global_batch);
  }
  if (!r.comparison) {
    // The sweep's own plots (epoch time vs batch, predicted speedup vs GPUs); --compare draws
    // them with the measured runs instead (and Q4's with them).
    const report::DrawOutcome outcome =
        report::draw_plots(cl.out_dir, report::build_plot_script(report::Comparison{}, predictions, r.context.unit,
                                                                 r.extras.large_batch, large_batch_batches));
    for (const auto& message : outcome.messages) std::cerr << "warning: gnuplot: " << message << "\n";
    if (!cl.quiet) {
      std::cout << (outcome.drawn ? "wrote the plots (plots.gp, SVG) in " + cl.out_dir
                                  : "plots not drawn: " + outcome.problem + " (plots.gp is in " + cl.out_dir + ")")
                << "\n";
    }
  }
  if (r.device.fit) {
    const std::string fit_file = (dir / "fit.txt").string();
    report::write_file_atomic(fit_file, r.device.fit_text + (r.held_out.empty() ? "" : "\n" + r.held_out));
    if (!cl.quiet) std::cout << "wrote " << fit_file << "\n";
  }
  if (r.comparison) {
    const std::string wrote =
        write_comparison(cl, r.context, *r.runs, r.grid, *r.comparison, r.extras.large_batch, large_batch_batches);
    if (!cl.quiet) std::cout << wrote;
  }
}

// --trace's configuration: --trace-config's, else the default one; none without --trace.
std::optional<RunSpec> traced_spec(const CommandLine& cl, const SweepConfig& config) {
  if (cl.trace_file.empty()) return std::nullopt;
  return cl.trace_config ? report::parse_trace_config(*cl.trace_config, config) : report::default_trace_spec(config);
}

// --trace FILE: one configuration's timeline as Perfetto JSON.
void write_trace(const CommandLine& cl, const Profile& profile, const SweepConfig& config, const RunSpec& spec,
                 const SimOptions& options) {
  SimOptions trace_options = options;
  trace_options.trace_iterations = cl.trace_iterations;
  const SimResult traced = report::simulate_config(profile, config, spec, trace_options);
  const std::filesystem::path parent = std::filesystem::path(cl.trace_file).parent_path();
  if (!parent.empty()) report::create_directories(parent.string());
  report::write_file_atomic(cl.trace_file, report::format_trace_json(traced, config.model));
  if (!cl.quiet) {
    // --trace-iterations beyond the epoch traces the whole epoch, and says so.
    const bool whole = cl.trace_iterations >= traced.iterations;
    std::cout << "wrote " << cl.trace_file << ": "
              << (whole ? traced.iterations : static_cast<int64_t>(cl.trace_iterations)) << " iterations"
              << (whole ? " (the whole epoch)" : "") << " of " << to_string(spec.strategy) << " on " << spec.gpus
              << " GPUs, batch " << spec.batch_per_gpu << " per GPU\n";
  }
}

// The sweeps a config asks for besides its tables, and the profiles they read, each checked
// against what its sweep needs: the sweep as the tables show it (a sweep too large to print shows
// some of its batch sizes, docs/OUTPUT.md), Q4's own sweep when large_batch names another model,
// trainer or profile, and the scale-out's.
struct SweepPlan {
  bool summarised = false;
  SweepConfig tables;
  std::optional<SweepConfig> large_batch_config;
  std::optional<Profile> large_batch_own_profile;  // large_batch.profile: Q4's model, curve and times
  std::optional<ScaleOut> scale_out;
  // The tables' configurations in the config's other precisions or memory formats, each on its own
  // profile (results filled in by run()).
  std::vector<report::VariantSweep> variants;
};

// The other precisions' or memory formats' sweeps, each profile checked to be measured in its
// entry and to cover the sweep.
std::vector<report::VariantSweep> plan_variants(const SweepConfig& config, const SweepConfig& tables) {
  std::vector<report::VariantSweep> out;
  for (const SweepConfig::VariantProfile& other : config.other_variants) {
    report::VariantSweep p{report::variant_sweep(tables, other), load_profile(other.profile_path),
                           report::ResultGrid({})};
    const std::string entry = report::variant_name(p.sweep);
    const MeasurementInfo& m = p.profile.measurement;
    const std::string measured = variant_name(config.variant_axis, m.precision, m.memory_format);
    if (measured != entry) {
      throw InputError(config.file, other.line, "profile." + entry,
                       other.profile_path + " was measured in " + measured + " (" +
                           variant_axis_words(config.variant_axis).field + "), not " + entry +
                           ": give a profile measured with measure " +
                           variant_measure_flags(config.variant_axis, p.sweep.precision, p.sweep.memory_format));
    }
    require_for_model(p.profile, p.sweep);
    out.push_back(std::move(p));
  }
  return out;
}

SweepPlan plan_sweeps(const Device& device, const std::optional<RunSpec>& trace_spec) {
  const SweepConfig& config = device.config;
  const Profile& profile = device.profile;
  SweepPlan plan;
  // The profile must cover the sweep and the traced configuration (which may use more GPUs), and
  // Q4's own sweep when large_batch names another model or trainer.
  SweepConfig needed = config;
  if (trace_spec) needed.gpus.push_back(trace_spec->gpus);
  plan.summarised = report::sweep_size(config) > kFullTablesUpTo;
  plan.tables = config;
  if (plan.summarised) plan.tables.batch_per_gpu = shown_batches(config.batch_per_gpu);
  plan.large_batch_config = large_batch_sweep(plan.tables);
  if (plan.large_batch_config && plan.large_batch_config->profile_path != config.profile_path) {
    plan.large_batch_own_profile = load_profile(plan.large_batch_config->profile_path);
  }
  if (!device.fit) require_for_model(profile, needed);
  if (plan.large_batch_config && (plan.large_batch_own_profile || !device.fit)) {
    require_for_model(plan.large_batch_own_profile ? *plan.large_batch_own_profile : profile, *plan.large_batch_config);
  }
  if (const std::optional<SweepConfig> scale_sweep = scale_out_sweep(config)) {
    const bool own = scale_sweep->profile_path == config.profile_path;
    plan.scale_out = ScaleOut{*scale_sweep, own ? profile : load_profile(scale_sweep->profile_path), std::nullopt, ""};
    require_for_model(plan.scale_out->profile, plan.scale_out->sweep);
  }
  plan.variants = plan_variants(config, plan.tables);
  return plan;
}

// Q4's own sweep (large_batch names another model, trainer or profile): simulated, and said so
// above Q4's table.
report::ResultGrid run_large_batch_sweep(const SweepPlan& plan, const Profile& profile,
                                         report::LargeBatchReport& large_batch, const SimOptions& options,
                                         int threads) {
  const SweepConfig& sweep = *plan.large_batch_config;
  report::ResultGrid results(report::run_sweep(profile, sweep, options, {}, {}, threads));
  const std::string machine = plan.large_batch_own_profile
                                  ? " on " + profile.machine.name + " (" + sweep.profile_path + ", large_batch.profile)"
                                  : "";
  large_batch.set_sweep_note(std::string("the sweep's configurations simulated again for ") + sweep.model +
                             " with the " + to_string(sweep.trainer) + " trainer, " +
                             std::to_string(sweep.train_samples) + " samples per epoch" + machine +
                             ": the times below are theirs, not the tables' above");
  return results;
}

// The scale-out's sweep on its profile, and its section of the report.
void run_scale_out(ScaleOut& scale_out, const SimOptions& options, ProgressLine& progress, int threads) {
  scale_out.grid.emplace(report::run_sweep(scale_out.profile, scale_out.sweep, options, std::ref(progress), {}, threads));
  scale_out.text = report::format_scale_out(scale_out.sweep, scale_out.profile, *scale_out.grid);
}

// The config's other precisions or memory formats (precision: or memory_format: a list): each
// sweep simulated on its own profile, and the report's Precision or Memory format section ("" when
// there are none).
std::string run_variant_sweeps(SweepPlan& plan, const Profile& profile, const report::ResultGrid& grid,
                                 const SimOptions& options, ProgressLine& progress, int threads) {
  if (plan.variants.empty()) return "";
  for (report::VariantSweep& p : plan.variants) {
    p.grid = report::ResultGrid(report::run_sweep(p.profile, p.sweep, options, std::ref(progress), {}, threads));
  }
  return report::format_variant_section(plan.tables, profile, grid, plan.variants);
}

// --compare: the measured runs joined with the predictions, printed with their warnings.
report::Comparison compare_with_runs(const CommandLine& cl, const SweepPlan& plan, const Profile& profile,
                                     const RunsTable& runs, const report::ResultGrid& grid,
                                     const report::ReportContext& context, const SimOptions& options) {
  // Each listed precision's or format's runs against its own profile's predictions.
  std::vector<std::pair<report::VariantKey, report::Comparison>> others;
  for (const report::VariantSweep& p : plan.variants) {
    others.emplace_back(report::VariantKey{p.sweep.precision, p.sweep.memory_format},
                        join_runs(p.sweep, p.profile, runs, p.grid, options));
  }
  report::Comparison comparison =
      report::merge_variants(join_runs(plan.tables, profile, runs, grid, options), std::move(others));
  if (!cl.quiet) std::cout << report::format_comparison(comparison, runs) << std::flush;
  for (const auto& warning : report::comparison_warnings(context, runs)) std::cerr << "warning: " << warning << "\n";
  if (comparison.compared.empty()) {
    std::cerr << "warning: no measured configuration of " << runs.file << " could be predicted; MAPE is n/a\n";
  }
  return comparison;
}

int run(int argc, char** argv) {
  const std::optional<CommandLine> cl = parse_command_line(argc, argv);
  if (!cl) return 0;

  if (cl->list_gpus) {
    std::cout << format_gpu_list(load_gpu_catalog(cl->gpu_catalog.empty() ? default_gpu_catalog_path()
                                                                          : cl->gpu_catalog));
    return 0;
  }
  const SweepConfig given = load_sweep_config(cl->config);
  if (given.collectives && run_collectives(*cl, given)) return 0;
  const std::optional<Profile> measured =
      given.profile_path.empty() ? std::nullopt : std::optional(load_profile(given.profile_path));
  const int threads = cl->threads > 0 ? cl->threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Device device = resolve_device(given, measured, threads, cl->quiet);
  const SweepConfig& config = device.config;
  const Profile& profile = device.profile;
  if (device.fit && !cl->quiet) std::cout << device.fit_text << "\n" << std::flush;
  // The fit's validation: printed last, so its MAPE line ends the output.
  const std::string held_out =
      device.fit && !config.held_out.empty() ? fit::format_held_out(fit::score_held_out(*device.fitter, *device.fit), config)
                                             : std::string();
  if (cl->holdout) {
    run_holdout(*cl, device, threads);
    return 0;
  }
  // A bad runs file fails before the sweep runs.
  const std::optional<RunsTable> runs =
      cl->compare_file.empty() ? std::nullopt : std::optional(load_runs_csv(cl->compare_file));
  const std::optional<RunSpec> trace_spec = traced_spec(*cl, config);
  SweepPlan plan = plan_sweeps(device, trace_spec);
  const SweepConfig& tables = plan.tables;
  const Profile& large_batch_profile = plan.large_batch_own_profile ? *plan.large_batch_own_profile : profile;

  SimOptions options;
  options.exact = cl->exact;
  ProgressLine progress(cl->quiet);
  std::vector<SimResult> results =
      report::run_sweep(profile, tables, options, std::ref(progress), device.refuse(), threads);
  if (device.fit && !plan.summarised) add_fit_intervals(results, device, tables, options, threads);
  for (SimResult& r : results) r.notes.insert(r.notes.begin(), device.notes.begin(), device.notes.end());
  const report::ResultGrid grid(std::move(results));
  report::ReportContext context = report::make_report_context(tables, profile, cl->exact);

  // Issue 5: Q4 when the profile has the model's baseline curve.
  std::optional<report::LargeBatchReport> large_batch =
      report::LargeBatchReport::make(plan.large_batch_config.value_or(tables), large_batch_profile);

  // A summarised sweep: all of it simulated a chunk at a time, predictions.csv streamed (committed
  // by write_out_dir, where a whole sweep's is written).
  std::unique_ptr<AtomicFileWriter> streamed_csv;
  if (plan.summarised) {
    if (!cl->out_dir.empty()) {
      report::create_directories(cl->out_dir);
      streamed_csv = std::make_unique<AtomicFileWriter>((std::filesystem::path(cl->out_dir) / "predictions.csv").string());
      streamed_csv->append(report::predictions_csv_header() + "\n");
    }
    const SweepTotals totals =
        stream_sweep(profile, config, options, progress, device.refuse(), threads, streamed_csv.get(),
                     plan.large_batch_config || !large_batch ? nullptr : &*large_batch);
    context.summary = summary_line(config, tables.batch_per_gpu, totals, streamed_csv != nullptr);
  }
  std::optional<report::ResultGrid> large_batch_results;
  if (plan.large_batch_config && large_batch) {
    large_batch_results.emplace(run_large_batch_sweep(plan, large_batch_profile, *large_batch, options, threads));
  }
  const std::optional<report::ResultGrid> without_sync = sweep_without_sync_batchnorm(profile, tables, options, threads);
  report::ReportExtras extras;
  extras.large_batch = large_batch ? &*large_batch : nullptr;
  extras.large_batch_grid = large_batch_results ? &*large_batch_results : nullptr;
  extras.profile = &profile;
  extras.without_sync_batchnorm = without_sync ? &*without_sync : nullptr;

  if (!cl->quiet) std::cout << report::format_report(context, grid, extras) << std::flush;
  const std::string variant_text = run_variant_sweeps(plan, profile, grid, options, progress, threads);
  if (!cl->quiet) std::cout << variant_text << std::flush;
  std::optional<ScaleOut>& scale_out = plan.scale_out;
  if (scale_out) {
    run_scale_out(*scale_out, options, progress, threads);
    if (!cl->quiet) std::cout << scale_out->text << std::flush;
  }

  std::optional<report::Comparison> comparison;
  if (runs) comparison = compare_with_runs(*cl, plan, profile, *runs, grid, context, options);
  if (!cl->out_dir.empty()) {
    write_out_dir(*cl, {device, held_out, given.collectives.has_value(), context, grid, extras, scale_out,
                        plan.variants, variant_text, runs, comparison, streamed_csv.get()});
  }
  if (trace_spec) write_trace(*cl, profile, config, *trace_spec, options);
  if (!held_out.empty() && !cl->quiet) std::cout << "\n" << held_out;
  // The last line printed: the headline of the comparison.
  if (comparison && !cl->quiet) {
    for (const std::string& line : report::format_group_mape_lines(*comparison)) std::cout << line << "\n";
    std::cout << report::format_mape_line(*comparison) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const report::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "error: " << e.what() << " (see simulate --help)\n";
    return 2;
  } catch (const report::OutputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const WriteError& e) {  // the streamed predictions.csv of a summarised sweep
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
