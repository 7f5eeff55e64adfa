// simulate CONFIG [--out DIR] [--compare RUNS.csv] [--trace FILE.json ...] [--exact] [--quiet]
// Predicts the course's tables for every configuration of a sweep config (docs/OUTPUT.md) and,
// with --compare, joins them with measured runs into DIR/report.md (docs/COMPARE.md).

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "io/config.h"
#include "io/errors.h"
#include "io/profile_io.h"
#include "report/atomic_file.h"
#include "report/compare.h"
#include "report/csv.h"
#include "report/large_batch.h"
#include "report/plots.h"
#include "report/report.h"
#include "report/sweep.h"
#include "report/trace.h"
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
      ("out", po::value(&cl.out_dir)->value_name("DIR"),
       "also write DIR/predictions.csv and DIR/predictions.md (DIR is created; files written "
       "atomically). Default: no files")
      ("compare", po::value(&cl.compare_file)->value_name("RUNS.csv"),
       "join the predictions with measured runs (reports/<machine>/runs.csv from `measure train`), "
       "print the errors and MAPE; with --out also write DIR/report.md, DIR/comparison.csv and the "
       "plots (gnuplot svg). The config must describe the runs (train_samples, loader workers). "
       "The last line printed is `MAPE epoch_s: X.X% over N runs`")
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
      ("quiet,q", po::bool_switch(&cl.quiet),
       "print nothing to stdout (use with --out or --trace); errors still go to stderr");
  return options;
}

// Returns nullopt when --help was printed.
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
  po::notify(vm);
  if (cl.config.empty()) throw report::UsageError("missing CONFIG (see simulate --help)");
  if (vm.count("trace-config")) cl.trace_config = vm["trace-config"].as<std::string>();
  if (cl.trace_file.empty() && (cl.trace_config || !vm["trace-iterations"].defaulted())) {
    throw report::UsageError("--trace-config and --trace-iterations need --trace FILE.json");
  }
  if (cl.trace_iterations < 1) {
    throw report::UsageError("--trace-iterations must be >= 1, got " + std::to_string(cl.trace_iterations));
  }
  return cl;
}

// Reports progress on stderr, but only once the sweep has run for more than a second.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet) : quiet_(quiet), start_(Clock::now()), last_(start_) {}
  void operator()(size_t done, size_t total) {
    const auto now = Clock::now();
    if (quiet_ || now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    std::fprintf(stderr, "simulate: %zu/%zu configurations, %.1f s\n", done, total,
                 std::chrono::duration<double>(now - start_).count());
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool quiet_;
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

// Joins the measured runs with the sweep's results; a measured configuration outside the sweep's
// grid is simulated too when the profile covers it.
report::Comparison join_runs(const SweepConfig& config, const Profile& profile, const report::RunsTable& runs,
                             const report::ResultGrid& grid, const SimOptions& options) {
  const report::Predictor predict = [&](const RunSpec& spec) {
    SweepConfig one = config;
    one.strategies = {spec.strategy};
    one.gpus = {spec.gpus};
    one.batch_per_gpu = {spec.batch_per_gpu};
    require_for_model(profile, one);
    return simulate_run(profile, config.model, spec, options);
  };
  const auto model = profile.models.find(config.model);
  const std::vector<int64_t> profiled = model == profile.models.end() ? std::vector<int64_t>{} : model->second.batches;
  return report::compare_runs(config, grid.all(), runs, profiled, report::probe_reference(profile), predict);
}

// DIR/comparison.csv, the plots and DIR/report.md (last, so it can say whether the plots exist).
// Returns the "wrote ..." line.
std::string write_comparison(const CommandLine& cl, const report::ReportContext& context, const report::RunsTable& runs,
                             const report::ResultGrid& grid, const report::Comparison& comparison) {
  const std::filesystem::path dir(cl.out_dir);
  const std::string csv = (dir / "comparison.csv").string(), markdown = (dir / "report.md").string();
  report::write_file_atomic(csv, report::format_comparison_csv(comparison));

  std::vector<SimResult> predictions = grid.all();
  for (const report::ComparedRun& r : comparison.compared) {
    if (r.in_setting && !r.in_sweep) predictions.push_back(r.predicted);
  }
  const report::PlotScript script = report::build_plot_script(comparison, predictions);
  const report::PlotOutcome outcome = report::draw_plots(cl.out_dir, script);
  for (const auto& message : outcome.gnuplot_messages) std::cerr << "warning: gnuplot: " << message << "\n";
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

int run(int argc, char** argv) {
  const std::optional<CommandLine> cl = parse_command_line(argc, argv);
  if (!cl) return 0;

  const SweepConfig config = load_sweep_config(cl->config);
  const Profile profile = load_profile(config.profile_path);
  // A bad runs file fails before the sweep runs.
  const std::optional<report::RunsTable> runs =
      cl->compare_file.empty() ? std::nullopt : std::optional(report::load_runs_csv(cl->compare_file));
  std::optional<RunSpec> trace_spec;
  if (!cl->trace_file.empty()) {
    trace_spec = cl->trace_config ? report::parse_trace_config(*cl->trace_config, config)
                                  : report::default_trace_spec(config);
  }
  // The profile must cover the sweep and the traced configuration (which may use more GPUs).
  SweepConfig needed = config;
  if (trace_spec) needed.gpus.push_back(trace_spec->gpus);
  require_for_model(profile, needed);

  SimOptions options;
  options.exact = cl->exact;
  ProgressLine progress(cl->quiet);
  const report::ResultGrid grid(report::run_sweep(profile, config, options, std::ref(progress)));
  const report::ReportContext context = report::make_report_context(config, profile, cl->exact);

  // Issue 5: Q4 when the profile has the model's baseline curve; with SyncBatchNorm, the ddp
  // multi-GPU configurations again without it, to show what it adds.
  const std::optional<report::LargeBatchReport> large_batch = report::LargeBatchReport::make(config, profile);
  std::optional<report::ResultGrid> without_sync;
  if (config.sync_batchnorm) {
    SweepConfig plain = config;
    plain.sync_batchnorm = false;
    plain.strategies = {Strategy::kDdp};
    plain.gpus.erase(std::remove(plain.gpus.begin(), plain.gpus.end(), 1), plain.gpus.end());
    const bool any = std::find(config.strategies.begin(), config.strategies.end(), Strategy::kDdp) !=
                         config.strategies.end() && !plain.gpus.empty();
    without_sync.emplace(any ? report::run_sweep(profile, plain, options) : std::vector<SimResult>{});
  }
  report::ReportExtras extras;
  extras.large_batch = large_batch ? &*large_batch : nullptr;
  extras.profile = &profile;
  extras.without_sync_batchnorm = without_sync ? &*without_sync : nullptr;

  if (!cl->quiet) std::cout << report::format_report(context, grid, extras) << std::flush;

  std::optional<report::Comparison> comparison;
  if (runs) {
    comparison = join_runs(config, profile, *runs, grid, options);
    if (!cl->quiet) std::cout << report::format_comparison(*comparison, *runs) << std::flush;
    for (const auto& warning : report::comparison_warnings(context, *runs)) std::cerr << "warning: " << warning << "\n";
    if (comparison->compared.empty()) {
      std::cerr << "warning: no measured configuration of " << runs->file << " could be predicted; MAPE is n/a\n";
    }
  }

  if (!cl->out_dir.empty()) {
    report::create_directories(cl->out_dir);
    const std::filesystem::path dir(cl->out_dir);
    const std::string csv = (dir / "predictions.csv").string(), markdown = (dir / "predictions.md").string();
    // With --compare, predictions.csv also holds the measured configurations simulated outside the sweep.
    std::vector<SimResult> predictions = grid.all();
    if (comparison) {
      predictions.insert(predictions.end(), comparison->extra_predictions.begin(), comparison->extra_predictions.end());
    }
    report::write_file_atomic(csv, report::format_predictions_csv(predictions, config.model, extras.large_batch));
    report::write_file_atomic(markdown, report::format_predictions_markdown(context, grid, extras));
    if (!cl->quiet) std::cout << "wrote " << csv << " and " << markdown << "\n";
    if (comparison) {
      const std::string wrote = write_comparison(*cl, context, *runs, grid, *comparison);
      if (!cl->quiet) std::cout << wrote;
    }
  }
  if (trace_spec) {
    SimOptions trace_options = options;
    trace_options.trace_iterations = cl->trace_iterations;
    const SimResult traced = simulate_run(profile, config.model, *trace_spec, trace_options);
    const std::filesystem::path parent = std::filesystem::path(cl->trace_file).parent_path();
    if (!parent.empty()) report::create_directories(parent.string());
    report::write_file_atomic(cl->trace_file, report::format_trace_json(traced, config.model));
    if (!cl->quiet) {
      // --trace-iterations beyond the epoch traces the whole epoch, and says so.
      const bool whole = cl->trace_iterations >= traced.iterations;
      std::cout << "wrote " << cl->trace_file << ": "
                << (whole ? traced.iterations : static_cast<int64_t>(cl->trace_iterations)) << " iterations"
                << (whole ? " (the whole epoch)" : "") << " of " << to_string(trace_spec->strategy) << " on "
                << trace_spec->gpus << " GPUs, batch " << trace_spec->batch_per_gpu << " per GPU\n";
    }
  }
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
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
