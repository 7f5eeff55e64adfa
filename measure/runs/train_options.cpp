#include "runs/train_options.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli_util.h"
#include "runs/shared_train_flags.h"
#include "trainer_flags.h"

namespace trainsim::measure {
namespace po = boost::program_options;

namespace {

// measure train's own flags; the shared ones (train_flags.json) are read from the variables map.
// Values go through strings or int64 first so that "-3" or "abc" give our own message instead of
// a wrapped-around unsigned value.
struct RawOptions {
  int64_t gpus = 0;
  std::string data_dir;
  int64_t threads = 0;
  std::string lr_rule;
  int64_t lr_base_batch = 0;
  double warmup_epochs = 0;
  RankFlags rank_process;
};

po::options_description train_flags(RawOptions& raw) {
  const TrainOptions defaults;
  po::options_description flags("measure train: real training epochs (ResNet-18, CIFAR-10)",
                                /*line_length=*/100, /*min_description_length=*/50);
  flags.add_options()("help,h", "print this help");
  po::options_description shared("Shared with the PyTorch trainer, train.py (measure/runs/train_flags.json)",
                                 /*line_length=*/100, /*min_description_length=*/50);
  add_shared_train_flags(shared);
  po::options_description own("measure train's own", /*line_length=*/100, /*min_description_length=*/50);
  // clang-format off
  own.add_options()
    ("gpus", po::value(&raw.gpus)->default_value(defaults.gpus),
       "ranks (ddp) or devices (dp); on cpu, ddp ranks are processes and dp allows only 1")
    ("data", po::value(&raw.data_dir),
       "folder with the CIFAR-10 binaries (data_batch_1..5.bin); default: 50000 synthetic images, "
       "and every output says `synthetic`")
    ("threads", po::value(&raw.threads),
       "intra-op threads per process (default: cores / processes, at least 1)")
    ("lr-rule", po::value(&raw.lr_rule)->default_value(to_string(defaults.lr_rule)),
       "learning rate of the global batch B = gpus x batch-per-gpu: constant (0.1), linear "
       "(0.1 B/B0), linear-warmup (per iteration from 0.1 to 0.1 B/B0 over --warmup-epochs), "
       "sqrt (0.1 sqrt(B/B0))")
    ("lr-base-batch", po::value(&raw.lr_base_batch)->default_value(defaults.lr_base_batch),
       "B0 of --lr-rule")
    ("warmup-epochs", po::value(&raw.warmup_epochs)->default_value(defaults.warmup_epochs),
       "warm-up length of linear-warmup, in epochs");
  // clang-format on
  flags.add(shared).add(own);
  return flags;
}

TrainOptions validated(const RawOptions& raw, const po::variables_map& vm) {
  TrainOptions o;
  o.strategy = *shared_text(vm, "strategy");
  o.gpus = bounded_int("gpus", raw.gpus, 1);
  o.batch_per_gpu = *shared_int(vm, "batch-per-gpu");
  o.workers = static_cast<int>(*shared_int(vm, "workers"));
  o.train_samples = shared_int(vm, "train-samples");
  o.epochs = static_cast<int>(*shared_int(vm, "epochs"));
  o.device = shared_text(vm, "device").value_or("");
  o.data_dir = raw.data_dir;
  if (vm.count("threads")) o.threads = bounded_int("threads", raw.threads, 1);
  o.seed = static_cast<uint64_t>(*shared_int(vm, "seed"));
  o.lr_rule = checked_lr_rule(raw.lr_rule);
  o.lr_base_batch = at_least("lr-base-batch", raw.lr_base_batch, 1);
  o.warmup_epochs = finite_non_negative("warmup-epochs", raw.warmup_epochs);
  const auto precision = parse_precision(*shared_text(vm, "precision"));
  if (!precision) throw std::logic_error("train_flags.json: --precision's choices are not " + std::string(kPrecisionNames));
  o.precision = *precision;
  const auto format = parse_memory_format(*shared_text(vm, "memory-format"));
  if (!format) {
    throw std::logic_error("train_flags.json: --memory-format's choices are not " + std::string(kMemoryFormatNames));
  }
  o.memory_format = *format;
  o.runs_path = shared_text(vm, "runs").value_or("");
  o.machine = shared_text(vm, "machine").value_or("");
  o.quiet = shared_switch(vm, "quiet");
  o.probe = !shared_switch(vm, "no-probe");
  if (o.strategy == "dp" && o.device == "cpu" && o.gpus > 1) {
    throw UsageError("--strategy dp --device cpu: DataParallel needs CUDA devices for --gpus " +
                     std::to_string(o.gpus) +
                     "; on cpu only --gpus 1 is possible (use "
                     "--strategy ddp for several CPU ranks)");
  }
  return o;
}

// Runs Boost.Program_options and turns its exceptions into UsageError.
po::variables_map parse(const std::vector<std::string>& args,
                        const po::options_description& flags) {
  if (args.empty()) throw UsageError("train: missing subcommand name");
  const po::variables_map vm = parse_flags(args, flags, "train: ");
  return vm;
}

}  // namespace

int processes_of(const TrainOptions& options) {
  return options.strategy == "ddp" ? options.gpus : 1;
}

int default_threads(int cores, int processes) {
  return std::max(1, cores / std::max(1, processes));
}

std::optional<TrainOptions> parse_train_options(const std::vector<std::string>& args) {
  RawOptions raw;
  const auto flags = train_flags(raw);
  const auto vm = parse(args, flags);
  if (vm.count("help")) {
    std::cout << train_help();
    return std::nullopt;
  }
  return validated(raw, vm);
}

TrainOptions parse_worker_options(const std::vector<std::string>& args) {
  RawOptions raw;
  po::options_description flags;
  flags.add(train_flags(raw)).add(rank_flags(raw.rank_process));
  const auto vm = parse(args, flags);
  TrainOptions o = validated(raw, vm);
  apply_rank_flags(raw.rank_process, o);
  return o;
}

std::vector<std::string> to_worker_args(const TrainOptions& o) {
  std::vector<std::string> args = {"--strategy",      o.strategy,
                                   "--gpus",          std::to_string(o.gpus),
                                   "--batch-per-gpu", std::to_string(o.batch_per_gpu),
                                   "--workers",       std::to_string(o.workers),
                                   "--epochs",        std::to_string(o.epochs),
                                   "--seed",          std::to_string(o.seed),
                                   "--lr-rule",       to_string(o.lr_rule),
                                   "--lr-base-batch", std::to_string(o.lr_base_batch)};
  std::ostringstream warmup;
  warmup.precision(17);  // round-trips the double
  warmup << o.warmup_epochs;
  args.insert(args.end(), {"--warmup-epochs", warmup.str()});
  if (o.precision != Precision::kFp32) args.insert(args.end(), {"--precision", precision_name(o.precision)});
  if (o.memory_format != MemoryFormat::kNchw) {
    args.insert(args.end(), {"--memory-format", memory_format_name(o.memory_format)});
  }
  if (o.train_samples) {
    args.insert(args.end(), {"--train-samples", std::to_string(*o.train_samples)});
  }
  if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
  if (!o.data_dir.empty()) args.insert(args.end(), {"--data", o.data_dir});
  if (o.threads > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
  if (!o.runs_path.empty()) args.insert(args.end(), {"--runs", o.runs_path});
  if (!o.machine.empty()) args.insert(args.end(), {"--machine", o.machine});
  if (o.quiet) args.push_back("--quiet");
  if (!o.probe) args.push_back("--no-probe");
  return args;
}

std::string train_help() {
  RawOptions raw;
  std::ostringstream out;
  out << "Usage: measure train [flags]\n\n"
         "Trains ResNet-18 (CIFAR variant) for --epochs epochs with SGD (lr 0.1 under --lr-rule,\n"
         "momentum 0.9, weight decay 5e-4) and times the last epoch: epoch_s is its wall time, train_s the same\n"
         "minus the time spent waiting for the data loader. Before the run it times the calibration probe\n"
         "(one fused ResNet-18 iteration at batch 32 with --threads on --device) and reads the load average.\n"
         "Appends one row to runs.csv.\n\n"
      << train_flags(raw);
  return out.str();
}

}  // namespace trainsim::measure
