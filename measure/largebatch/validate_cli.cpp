#include "largebatch/validate_cli.h"

#include <torch/torch.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>

#include "cli_util.h"
#include "device.h"
#include "largebatch/validation_report.h"
#include "machine.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace po = boost::program_options;
namespace {

struct RawValidate {
  std::string batches = "8,16,32,64,128,256";
  int64_t base_batch = 16;
  int64_t micro_batches = 4;
  std::string lrs;
  int64_t repeats = 0;
  double lr_max = 4;
  double lr_min = 1.0 / 64;
  std::string target_gaps = "0.2,0.15,0.1";
  std::string seeds = "0,1";
  int64_t max_steps = 0;
  int64_t held_out = 0;
  int64_t dims = 0;
  int64_t classes = 0;
  double separation = 0;
  std::string hidden = "64";
  double momentum = 0;
  double ema_decay = 0;
  int64_t threads = 0;
  std::string out_dir;
  std::string machine;
};

po::options_description validate_flags(RawValidate& raw) {
  const ValidationOptions d;
  po::options_description flags("measure largebatch-validate: predicted vs measured steps to a target loss",
                                /*line_length=*/100, /*min_description_length=*/50);
  // clang-format off
  flags.add_options()
    ("help,h", "print this help")
    ("batches", po::value(&raw.batches)->default_value(raw.batches),
       "batch sizes trained for real, ascending (the lr is tuned for each)")
    ("base-batch", po::value(&raw.base_batch)->default_value(d.base_batch),
       "the baseline batch (one of --batches): the prediction uses only its run")
    ("micro-batches", po::value(&raw.micro_batches)->default_value(d.micro_batches),
       "k: the baseline measures the noise scale from k micro-batches of base-batch / k")
    ("lrs", po::value(&raw.lrs), "learning-rate grid, comma-separated (default: --lr-max down to --lr-min by sqrt 2)")
    ("lr-max", po::value(&raw.lr_max)->default_value(raw.lr_max), "largest rate of the default grid")
    ("lr-min", po::value(&raw.lr_min)->default_value(raw.lr_min), "smallest rate of the default grid")
    ("repeats", po::value(&raw.repeats)->default_value(d.repeats),
       "copies of every run (other training samples, same initial weights); the target is reached when "
       "their mean held-out loss is at or below it")
    ("target-gaps", po::value(&raw.target_gaps)->default_value(raw.target_gaps),
       "targets: the held-out loss of the Bayes-optimal classifier plus each of these gaps")
    ("seeds", po::value(&raw.seeds)->default_value(raw.seeds),
       "seeds (task, initial weights, data): one case per seed and gap")
    ("max-steps", po::value(&raw.max_steps)->default_value(d.max_steps), "step limit of every run")
    ("held-out", po::value(&raw.held_out)->default_value(d.held_out), "held-out samples")
    ("dims", po::value(&raw.dims)->default_value(d.mixture.dims), "input dimensions of the Gaussian mixture")
    ("classes", po::value(&raw.classes)->default_value(d.mixture.classes), "classes (mixture components)")
    ("separation", po::value(&raw.separation)->default_value(d.mixture.separation),
       "expected norm of a class mean (the noise has unit variance per dimension)")
    ("hidden", po::value(&raw.hidden)->default_value(raw.hidden),
       "hidden layer widths of the MLP, comma-separated; 'none': softmax regression")
    ("momentum", po::value(&raw.momentum)->default_value(d.momentum), "SGD momentum")
    ("ema-decay", po::value(&raw.ema_decay)->default_value(d.ema_decay), "decay of the noise-scale averages")
    ("threads", po::value(&raw.threads), "batch sizes trained in parallel, one core each (default: all cores)")
    ("out", po::value(&raw.out_dir), "report folder (default: reports/<machine>/largebatch)")
    ("machine", po::value(&raw.machine), "machine name of the default --out")
    ("quiet", "no progress on stderr");
  // clang-format on
  return flags;
}

std::vector<double> parse_double_list(const std::string& text, const std::string& flag) {
  std::vector<double> values;
  for (const auto& item : split_list(text)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || !std::isfinite(v)) throw UsageError("--" + flag + ": '" + item + "' is not a number");
    values.push_back(v);
  }
  if (values.empty()) throw UsageError("--" + flag + ": empty list");
  return values;
}

std::string help_text() {
  RawValidate raw;
  std::ostringstream out;
  out << "Usage: measure largebatch-validate [flags]\n\n"
         "Trains a small MLP on a synthetic Gaussian mixture at each --batches size, tuning the learning rate\n"
         "per batch, measures the steps to reach a target held-out loss (the Bayes-optimal loss + each of\n"
         "--target-gaps, for each of --seeds), predicts them from the --base-batch run alone (its steps and\n"
         "gradient noise scale, McCandlish et al. 2018), and writes report.md, CSVs and a plot. The last\n"
         "stdout line is `steps-to-target error: X.X% over N batch sizes`.\n\n"
      << validate_flags(raw);
  return out.str();
}

}  // namespace

std::vector<double> geometric_lr_grid(double lr_max, double lr_min) {
  if (!(lr_min > 0) || !(lr_max >= lr_min) || !std::isfinite(lr_max)) {
    throw UsageError("--lr-max and --lr-min: need 0 < lr-min <= lr-max");
  }
  std::vector<double> grid;
  // lr_max 2^(-i/2) for i = 0, 1, ... while >= lr_min (1e-9 relative slack for rounding)
  for (int i = 0;; ++i) {
    const double lr = lr_max * std::pow(2.0, -0.5 * i);
    if (lr < lr_min * (1 - 1e-9)) break;
    grid.push_back(lr);
  }
  return grid;
}

std::optional<ValidateCommand> parse_validate_command(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("largebatch-validate: missing subcommand name");
  RawValidate raw;
  const auto flags = validate_flags(raw);
  const po::variables_map vm = parse_flags(args, flags, "largebatch-validate: ");
  if (vm.count("help")) {
    std::cout << help_text();
    return std::nullopt;
  }
  ValidateCommand c;
  ValidationOptions& o = c.options;
  o.batches = parse_int_list(raw.batches, "batches", 1, /*distinct=*/true);
  o.base_batch = raw.base_batch;
  o.micro_batches = raw.micro_batches;
  o.lrs = vm.count("lrs") ? parse_double_list(raw.lrs, "lrs") : geometric_lr_grid(raw.lr_max, raw.lr_min);
  if (raw.repeats < 1 || raw.repeats > 1000) throw UsageError("--repeats: must be in 1..1000");
  o.repeats = static_cast<int>(raw.repeats);
  o.target_gaps = parse_double_list(raw.target_gaps, "target-gaps");
  o.seeds.clear();
  for (int64_t seed : parse_int_list(raw.seeds, "seeds", 0, /*distinct=*/true)) o.seeds.push_back(static_cast<uint64_t>(seed));
  o.max_steps = raw.max_steps;
  o.held_out = raw.held_out;
  o.mixture.dims = raw.dims;
  o.mixture.classes = raw.classes;
  o.mixture.separation = raw.separation;
  if (raw.hidden != "none") o.hidden = parse_int_list(raw.hidden, "hidden");
  else o.hidden.clear();
  o.momentum = raw.momentum;
  o.ema_decay = raw.ema_decay;
  if (vm.count("threads")) {
    if (raw.threads < 1 || raw.threads > 1024) throw UsageError("--threads: must be in 1..1024");
    o.threads = static_cast<int>(raw.threads);
  } else {
    o.threads = std::max(1, detect_host().cpu_cores);
  }
  if (o.mixture.dims < 1 || o.mixture.classes < 2 || !(o.mixture.separation >= 0)) {
    throw UsageError("--dims, --classes, --separation: need dims >= 1, classes >= 2, separation >= 0");
  }
  try {
    validate(o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("largebatch-validate: ") + e.what());
  }
  c.out_dir = raw.out_dir;
  c.machine = raw.machine;
  c.quiet = vm.count("quiet") > 0;
  return c;
}

int largebatch_validate_main(int argc, char** argv) {
  const auto command = parse_validate_command(std::vector<std::string>(argv, argv + argc));
  if (!command) return 0;
  std::string machine = command->machine;
  if (machine.empty()) {
    MachineInfo info = detect_host();
    fill_device_info(info, resolve_device("cpu"), 1);
    machine = default_machine_name(info);
  }
  const std::string out_dir = command->out_dir.empty() ? "reports/" + machine + "/largebatch" : command->out_dir;

  // One intra-op thread per run: the parallelism is across batch sizes.
  torch::set_num_threads(1);
  std::mutex log_mutex;
  const auto start = std::chrono::steady_clock::now();
  ValidationLog log;
  if (!command->quiet) {
    log = [&](const std::string& line) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<std::mutex> lock(log_mutex);
      std::fprintf(stderr, "largebatch-validate: %6.1f s: %s\n", elapsed, line.c_str());
    };
  }
  const ValidationOptions& o = command->options;
  ValidationResult result;
  try {
    result = run_validation(o, log);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("largebatch-validate: ") + e.what());
  }
  ReportContext context;
  context.command = "measure " + join_command_line(argc, argv);  // argv[0] is the subcommand
  context.machine = machine;
  context.date = utc_now_iso8601();
  context.libtorch = libtorch_version();
  context.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string plot_warning;
  const auto files = write_validation_report(result, o, context, out_dir, plot_warning);
  if (!plot_warning.empty()) std::fprintf(stderr, "warning: %s\n", plot_warning.c_str());

  for (const auto& c : result.cases) {
    if (!c.failure.empty()) {
      std::printf("largebatch-validate: seed %llu gap %g: not predicted: %s\n", static_cast<unsigned long long>(c.seed),
                  c.target_gap, c.failure.c_str());
      continue;
    }
    std::printf("largebatch-validate: seed %llu gap %g (target loss %.4f): baseline batch %lld %.1f steps, "
                "noise scale at the target %.1f\n",
                static_cast<unsigned long long>(c.seed), c.target_gap, c.target_loss,
                static_cast<long long>(o.base_batch), c.base_steps, c.noise_at_target);
    for (const auto& p : c.predictions) {
      std::printf("  batch %5lld: measured %8s  predicted %8.1f%s\n", static_cast<long long>(p.batch),
                  p.measured ? std::to_string(static_cast<long long>(std::llround(*p.measured))).c_str() : "-",
                  p.predicted, p.is_base ? "  (baseline)" : "");
    }
  }
  for (const auto& f : files) std::printf("  wrote %s\n", f.c_str());
  std::printf("%s\n", error_line(result).c_str());
  return 0;
}

}  // namespace trainsim::measure
