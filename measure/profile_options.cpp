#include "profile_options.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli_util.h"
#include "collectives/collective_op.h"
#include "models/describe.h"
#include "profiler/loader_bench.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace {

namespace po = boost::program_options;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
// What --skip can leave out: the profile's parts, and the pytorch section's worker start-up (fork)
// and GIL timings.
constexpr const char* kSkipParts[] = {"compute", "contention", "h2d", "loader", "collectives", "fork", "gil"};
constexpr int kMaxRanks = 8;  // the GPUs of one node (a node's 8 GPUs; more come from an nccl-tests log)

po::options_description profile_flags() {
  po::options_description d("Flags");
  d.add_options()
      ("help,h", "print this help and exit")
      ("device", po::value<std::string>()->value_name("cpu|cuda"),
       "device to profile (default: cuda when a GPU is visible, else cpu)")
      ("quick", "a smoke test of under a minute on a 2-core cpu: batches 4,8 on cpu (cuda 32,128,512), "
                "warmup 1, repeats 3, only resnet18-cifar, host contention at batch 4 only, collectives "
                "up to 16 MiB with 5 repeats, 2,560 loader samples, and the pytorch section without "
                "its worker start-up and GIL timings (no pytorch.models.<name>.fork, no pytorch.gil)")
      ("machine", po::value<std::string>()->value_name("NAME"),
       "machine name, the reports/<NAME>/ folder (default from the hardware: cuda "
       "'<gpu-name>-x<count>', e.g. nvidia-h200-x1; cpu 'cpu-<model>-<cores>c')")
      ("out", po::value<std::string>()->value_name("FILE"),
       "profile to write (default reports/<machine>/profile.yaml under the current folder); "
       "collectives.txt is written beside it")
      ("resume", "continue FILE: keep every finished case (model+batch, curve, h2d, loader) and "
                 "measure only the missing ones. Without it an existing FILE is replaced")
      ("models", po::value<std::string>()->value_name("A,B"),
       "models to profile (default resnet18-cifar,resnet18-imagenet)")
      ("batches", po::value<std::string>()->value_name("B1,B2"),
       "batch sizes to profile (default 32,128,512,... x4 up to --max-batch)")
      ("max-batch", po::value<int64_t>()->value_name("B"),
       "largest batch of the default grid (default 8192 on cuda, 512 on cpu); the grid also "
       "stops at the first batch that runs out of memory (recorded as the OOM boundary)")
      ("warmup", po::value<int>()->value_name("N"), "untimed runs before each timing (default cuda 5, cpu 2)")
      ("repeats", po::value<int>()->value_name("N"),
       "timed runs per timing; the median is recorded (default cuda 20, cpu 5)")
      ("threads", po::value<int>()->value_name("N"), "LibTorch intra-op threads (default: all cores)")
      ("ranks", po::value<int>()->value_name("N"),
       "largest rank count for collectives: one process per rank, measured for every count "
       "from 2 (cuda: from 1) to N (default cuda min(GPUs, 8), cpu 2; at most 8); on cpu also "
       "host contention for 1..N processes")
      ("contention-batches", po::value<std::string>()->value_name("B1,B2"),
       "batches per process of the cpu host contention case (default: every batch of the grid, "
       "--quick its smallest; "
       "contention grows with the batch as the working sets outgrow the shared caches)")
      ("collectives-max-bytes", po::value<int64_t>()->value_name("BYTES"),
       "largest collective message, sizes 1 KiB x4 up to it (default 256 MiB, --quick 16 MiB)")
      ("collective-repeats", po::value<int>()->value_name("N"),
       "timed runs per collective message size (default 20, --quick 5; fewer above 16 MiB)")
      ("loader-samples", po::value<int64_t>()->value_name("N"),
       "samples per timed loader epoch (default 12800, --quick 2560; at least 256, two batches)")
      ("data", po::value<std::string>()->value_name("DIR"),
       "CIFAR-10 binary folder (data_batch_1.bin ...) for the loader benchmark (default: "
       "synthetic images of the same format, said so in the profile)")
      ("nccl-tests-log", po::value<std::string>()->value_name("FILE"),
       "take the all_reduce curve from an nccl-tests all_reduce_perf log (out-of-place times) "
       "instead of measuring it for that rank count")
      ("pytorch", po::value<std::string>()->value_name("auto|off|PYTHON"),
       "the profile's pytorch section: run measure/pytorch/profile_torch.py (the PyTorch reference trainer's "
       "DataLoader, loop body plain and under 1-rank DDP, probe) with this interpreter. auto (default): the "
       "first of /usr/bin/python3 and python3 on PATH that imports torch and torchvision, else a note and no "
       "section; off: none; PYTHON: that interpreter, an error if it cannot import them")
      ("pytorch-script", po::value<std::string>()->value_name("PATH"),
       "profile_torch.py to run (default: the source tree's measure/pytorch/profile_torch.py)")
      ("skip", po::value<std::string>()->value_name("A,B"),
       "parts not to measure: compute, contention, h2d, loader, collectives, and of the pytorch section "
       "fork (its worker start-up timing) and gil (its GIL timing)")
      ("cudnn-benchmark", po::value<std::string>()->value_name("on|off"),
       "cuda: torch.backends.cudnn.benchmark for every timing (default on, as the course's script "
       "and both trainers set it; off: PyTorch's default algorithm heuristics). Recorded in the "
       "profile; --resume refuses a profile measured with the other setting")
      ("precision", po::value<std::string>()->value_name("fp32|bf16-amp"),
       "the numeric mode of every training-step timing: fp32 (default) or bf16-amp (autocast to "
       "bfloat16 around forward and loss, as torch.autocast; fp32 weights, gradients and optimizer). "
       "Recorded in the profile; --resume refuses a profile measured in the other")
      ("memory-format", po::value<std::string>()->value_name("nchw|channels_last"),
       "the layout of every training-step timing's 4-D tensors: nchw (default) or channels_last "
       "(the model's 4-D weights and each input batch channels-last, as model.to(memory_format="
       "torch.channels_last)). Recorded in the profile; --resume refuses a profile measured in the other")
      ("seed", po::value<uint64_t>()->value_name("N"), "seed of the random inputs (default 0)");
  return d;
}

int positive(const po::variables_map& vm, const char* flag, int minimum) {
  const int v = vm[flag].as<int>();
  if (v < minimum) {
    throw UsageError(std::string("--") + flag + ": " + std::to_string(v) + " is below " +
                     std::to_string(minimum));
  }
  return v;
}

}  // namespace

std::string profile_help() {
  std::ostringstream s;
  s << "usage: measure [profile] [flags]\n"
       "       measure train [flags]        real training runs (see measure train --help)\n"
       "       measure baseline [flags]     baseline training curve + gradient noise scale\n"
       "       measure largebatch-validate  predicted vs measured steps to a target loss\n"
       "       measure largebatch-compare   large-batch predictions against real runs (--dir DIR)\n"
       "       measure largebatch-plan      predictions for runs not ended yet (--dir DIR --runs NAMES)\n"
       "       measure make-data --out DIR  synthetic images in the CIFAR-10 binary format (make-data --help)\n"
       "       measure machine              this host's default machine name (reports/<machine>/)\n"
       "       measure torchscript [flags]  a TorchScript module profiled into the profile (torchscript --help)\n"
       "       measure import-trace TRACE   a PyTorch profiler trace's step as a profile model (import-trace --help)\n"
       "       measure --version            the version, the LibTorch it was built with, its collectives\n"
       "\n"
       "Profiles ResNet-18 training on this machine and writes the profile the simulator\n"
       "reads (reports/<machine>/profile.yaml): per-stage forward and backward times, loss,\n"
       "zero_grad, SGD step and the fused iteration per batch size, the DDP loop body on one rank\n"
       "(c10d::Reducer, as measure train runs it) and its buckets, peak memory and the OOM\n"
       "boundary; host-to-device copies (GPU); data-loader throughput and start-up per worker count;\n"
       "all_reduce, broadcast and reduce time vs message size for every rank count (NCCL on\n"
       "GPUs, Gloo on CPU, one process per rank); on CPU the host contention: one rank's fused\n"
       "iteration while 1..--ranks processes train at once; the PyTorch reference trainer's own\n"
       "pipeline (--pytorch); a calibration probe (ResNet-18, batch 32) before and after. Every\n"
       "timing is the median of repeats after warm-up (CUDA events on a GPU, a steady clock on\n"
       "CPU). The profile is rewritten atomically after every finished case, so an interrupted run\n"
       "keeps what it measured; --resume continues it. Progress goes to stderr.\n\n"
    << profile_flags()
    << "\nExit codes (every subcommand): 0 success, 2 bad input (flags, data files, a profile or runs\n"
       "file: one `error: ...` line on stderr), 1 a failure while measuring (the first line of the\n"
       "error on stderr; what was measured before it is kept).\n";
  return s.str();
}

std::optional<ProfileOptions> parse_profile_options(const std::vector<std::string>& args) {
  const po::variables_map vm = parse_flags(args, profile_flags(), "");
  if (vm.count("help")) {
    std::cout << profile_help();
    return std::nullopt;
  }
  ProfileOptions o;
  if (vm.count("device")) o.device = vm["device"].as<std::string>();
  if (vm.count("machine")) {
    o.machine = vm["machine"].as<std::string>();
    if (o.machine.empty() || o.machine.find('/') != std::string::npos) {
      throw UsageError("--machine: '" + o.machine + "' must be a non-empty folder name without '/'");
    }
  }
  if (vm.count("out")) o.out = vm["out"].as<std::string>();
  o.quick = vm.count("quick") > 0;
  o.resume = vm.count("resume") > 0;
  if (vm.count("models")) {
    o.models = split_list(vm["models"].as<std::string>());
    const auto known = models::known_models();
    for (const auto& m : o.models) {
      if (std::find(known.begin(), known.end(), m) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        throw UsageError("--models: unknown model '" + m + "' (known: " + list + ")");
      }
    }
    if (o.models.empty()) throw UsageError("--models: empty list");
  }
  if (vm.count("batches")) o.batches = parse_int_list(vm["batches"].as<std::string>(), "--batches", 1, /*distinct=*/true);
  if (vm.count("max-batch")) {
    o.max_batch = vm["max-batch"].as<int64_t>();
    if (*o.max_batch < 1) throw UsageError("--max-batch: must be >= 1");
  }
  if (vm.count("warmup")) o.warmup = positive(vm, "warmup", 0);
  if (vm.count("repeats")) o.repeats = positive(vm, "repeats", 1);
  if (vm.count("threads")) o.threads = positive(vm, "threads", 1);
  if (vm.count("ranks")) o.ranks = positive(vm, "ranks", 1);
  if (vm.count("contention-batches")) {
    o.contention_batches =
        parse_int_list(vm["contention-batches"].as<std::string>(), "--contention-batches", 1, /*distinct=*/true);
  }
  if (vm.count("collective-repeats")) o.collective_repeats = positive(vm, "collective-repeats", 1);
  if (vm.count("collectives-max-bytes")) {
    o.collectives_max_bytes = vm["collectives-max-bytes"].as<int64_t>();
    if (*o.collectives_max_bytes < kKiB) throw UsageError("--collectives-max-bytes: must be >= 1024");
  }
  if (vm.count("loader-samples")) {
    o.loader_samples = vm["loader-samples"].as<int64_t>();
    // Two batches of 128 at least: the steady rate excludes the first batch of every epoch.
    if (*o.loader_samples < 256) throw UsageError("--loader-samples: must be >= 256 (two loader batches)");
  }
  if (vm.count("data")) o.data_dir = vm["data"].as<std::string>();
  if (vm.count("nccl-tests-log")) o.nccl_tests_log = vm["nccl-tests-log"].as<std::string>();
  if (vm.count("pytorch")) {
    o.pytorch = vm["pytorch"].as<std::string>();
    if (o.pytorch.empty()) throw UsageError("--pytorch: expected auto, off or a Python interpreter");
  }
  if (vm.count("pytorch-script")) o.pytorch_script = vm["pytorch-script"].as<std::string>();
  if (vm.count("skip")) {
    for (const auto& part : split_list(vm["skip"].as<std::string>())) {
      if (std::find(std::begin(kSkipParts), std::end(kSkipParts), part) == std::end(kSkipParts)) {
        std::string expected;
        for (const char* known : kSkipParts) expected += (expected.empty() ? "" : ", ") + std::string(known);
        throw UsageError("--skip: unknown part '" + part + "' (expected " + expected + ")");
      }
      o.skip.insert(part);
    }
  }
  if (vm.count("seed")) o.seed = vm["seed"].as<uint64_t>();
  if (vm.count("precision")) {
    const std::string value = vm["precision"].as<std::string>();
    const auto precision = parse_precision(value);
    if (!precision) {
      throw UsageError("--precision: '" + value + "' (expected " + std::string(kPrecisionNames) + ")");
    }
    o.precision = *precision;
  }
  if (vm.count("memory-format")) {
    const std::string value = vm["memory-format"].as<std::string>();
    const auto format = parse_memory_format(value);
    if (!format) {
      throw UsageError("--memory-format: '" + value + "' (expected " + std::string(kMemoryFormatNames) + ")");
    }
    o.memory_format = *format;
  }
  if (vm.count("cudnn-benchmark")) {
    const std::string value = vm["cudnn-benchmark"].as<std::string>();
    if (value != "on" && value != "off") {
      throw UsageError("--cudnn-benchmark: '" + value + "' (expected on or off)");
    }
    o.cudnn_benchmark = value == "on";
  }
  return o;
}

ProfilePlan resolve_plan(const ProfileOptions& o, const PlanTarget& target) {
  ProfilePlan p;
  p.compute = o.skip.count("compute") == 0;
  p.h2d = target.cuda && o.skip.count("h2d") == 0;
  p.loader = o.skip.count("loader") == 0;
  p.collectives = o.skip.count("collectives") == 0;
  // Host contention: CPU ranks share the host; a GPU rank owns its device.
  p.contention = !target.cuda && o.skip.count("contention") == 0;

  if (!o.models.empty()) {
    p.models = o.models;
  } else if (o.quick) {
    p.models = {models::kResnet18Cifar};
  } else {
    p.models = {models::kResnet18Cifar, models::kResnet18Imagenet};
  }

  p.max_batch = o.max_batch.value_or(target.cuda ? 8192 : 512);
  if (!o.batches.empty()) {
    p.batches = o.batches;
    std::sort(p.batches.begin(), p.batches.end());
    p.batches.erase(std::unique(p.batches.begin(), p.batches.end()), p.batches.end());
    p.max_batch = p.batches.back();
  } else if (o.quick && !o.max_batch) {
    // A CPU iteration at batch 32 takes about a second on two cores: the smoke test's CPU grid is
    // far smaller, so that the whole run stays within a minute (its figures are per-op overheads
    // more than compute: a smoke test, not a profile to predict from).
    p.batches = target.cuda ? std::vector<int64_t>{32, 128, 512} : std::vector<int64_t>{4, 8};
  } else {
    for (int64_t b = 32; b <= p.max_batch; b *= 4) p.batches.push_back(b);
    if (p.batches.empty()) throw UsageError("--max-batch: below the smallest grid batch 32 (use --batches)");
  }

  p.warmup = o.warmup.value_or(o.quick ? 1 : (target.cuda ? 5 : 2));
  p.repeats = o.repeats.value_or(o.quick ? 3 : (target.cuda ? 20 : 5));
  p.threads = o.threads.value_or(std::max(1, target.cpu_cores));

  if (target.cuda) {
    const int available = std::min(target.cuda_devices, kMaxRanks);
    const int ranks = o.ranks.value_or(available);
    if (ranks > target.cuda_devices || ranks > kMaxRanks) {
      throw UsageError("--ranks " + std::to_string(ranks) + ": " + std::to_string(target.cuda_devices) +
                       " GPU(s) visible, at most " + std::to_string(kMaxRanks) + " ranks");
    }
    for (int n = 1; n <= ranks; ++n) p.rank_counts.push_back(n);  // 1: a communicator of size 1
  } else {
    const int ranks = o.ranks.value_or(2);
    if (ranks < 2 || ranks > kMaxRanks) {
      throw UsageError("--ranks " + std::to_string(ranks) + ": on cpu between 2 and " +
                       std::to_string(kMaxRanks));
    }
    for (int n = 2; n <= ranks; ++n) p.rank_counts.push_back(n);
  }
  p.contention_ranks = p.rank_counts.back();
  if (!o.contention_batches.empty()) {
    p.contention_batches = o.contention_batches;
  } else if (o.quick) {
    p.contention_batches = {p.batches.front()};
  } else {
    p.contention_batches = p.batches;
  }
  std::sort(p.contention_batches.begin(), p.contention_batches.end());
  p.contention_batches.erase(std::unique(p.contention_batches.begin(), p.contention_batches.end()),
                             p.contention_batches.end());
  const int64_t collective_max = o.collectives_max_bytes.value_or(o.quick ? 16 * kMiB : 256 * kMiB);
  p.collective_sizes = collectives::message_sizes(kKiB, collective_max);
  p.collective_warmup = std::max(1, p.warmup);
  p.collective_repeats = o.collective_repeats.value_or(o.quick ? 5 : 20);

  p.h2d_sizes = collectives::message_sizes(4 * kKiB, 256 * kMiB);

  p.loader_workers = profiler::loader_worker_counts(target.cpu_cores);
  p.loader_batch = 128;
  if (!o.quick) {
    for (int64_t b : p.batches) {
      if (b != p.loader_batch && b <= kMaxLoaderAtBatch) p.loader_at_batches.push_back(b);
    }
  }
  p.loader_samples = o.loader_samples.value_or(p.loader_batch * (o.quick ? 20 : 100));
  p.loader_epochs = o.quick ? 2 : 3;
  p.pytorch_fork = !o.quick && o.skip.count("fork") == 0;
  p.pytorch_gil = !o.quick && o.skip.count("gil") == 0;
  return p;
}

}  // namespace trainsim::measure
