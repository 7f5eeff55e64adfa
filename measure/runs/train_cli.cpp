#include "runs/train_cli.h"

#include <stdlib.h>

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "data/cifar.h"
#include "device.h"
#include "format/atomic_write.h"
#include "format/errors.h"
#include "launch.h"
#include "machine.h"
#include "machine_cli.h"
#include "profiler/probe.h"
#include "format/run_row.h"
#include "runs/train_options.h"
#include "runs/trainer.h"

namespace trainsim::measure {
namespace {

constexpr int64_t kCifarTrainImages = 50000;  // CIFAR-10 training set; also the synthetic size
constexpr const char* kResultFile = "result.csv";  // rank 0 -> train_main, in the store folder
// Ranks run whole training jobs: the launcher's timeout is only a safety net (7 days).
constexpr double kRankTimeoutSeconds = 7 * 24 * 3600.0;

std::vector<std::string> arguments(int argc, char** argv) { return {argv, argv + argc}; }

// Checks that need LibTorch or the data set's size; fills in the default device and threads.
// `host_processes`: the run's processes on this host (all of them, unless a launcher spread the
// ranks over several nodes): what needs a CUDA device each and shares the cores.
void resolve_runtime(TrainOptions& o, int host_processes) {
  o.device = resolve_device(o.device).kind_name();
  if (o.device == "cuda") {
    const int visible = cuda_device_count();
    if (host_processes > visible) {
      throw UsageError("--gpus " + std::to_string(o.gpus) + ": " + std::to_string(host_processes) +
                       " on this host, only " + std::to_string(visible) + " CUDA device(s) visible");
    }
    if (o.strategy == "ddp" && !backend_available("nccl")) {
      throw UsageError("--strategy ddp --device cuda: this LibTorch has no c10d NCCL backend");
    }
  }
  if (o.data_dir.empty() && o.train_samples.value_or(0) > kCifarTrainImages) {
    throw UsageError("--train-samples " + std::to_string(*o.train_samples) + " exceeds the " +
                     std::to_string(kCifarTrainImages) + " images of the (synthetic) training set");
  }
  // Cores: the CPUs this process may run on, as the profile's machine block counts them.
  const int cores = detect_host().cpu_cores;
  if (o.device == "cpu" && cores > 0 && host_processes > cores) {
    // Rank processes past the cores time the oversubscription, not the setting (97 extra
    // processes once started here without a word).
    throw UsageError("--gpus " + std::to_string(o.gpus) + " --device cpu: " + std::to_string(host_processes) +
                     " rank processes on this host's " + std::to_string(cores) +
                     " cores; each CPU rank needs a core of its own (at most " + std::to_string(cores) + ")");
  }
  if (o.threads == 0) o.threads = default_threads(cores, host_processes);
}

// reports/<machine>/runs.csv, the machine named as `measure` names it for its profile.
std::string default_runs_path(const TrainOptions& o) {
  return "reports/" + (o.machine.empty() ? this_host_machine_name(o.device) : o.machine) + "/runs.csv";
}

// The training set of every process: the --data folder's images (CIFAR-10, or a make-data folder)
// or generated ones, cut to --train-samples (default: all of them; 50,000 generated).
data::ImageSet load_training_set(const TrainOptions& o) {
  if (o.data_dir.empty()) return data::synthetic_cifar10(o.train_samples.value_or(kCifarTrainImages), o.seed);
  const data::ImageSet all = data::read_cifar10_train(o.data_dir);
  const int64_t n = o.train_samples.value_or(all.size());
  if (n > all.size()) {
    throw UsageError("--train-samples " + std::to_string(n) + " exceeds the " +
                     std::to_string(all.size()) + " images in " + o.data_dir);
  }
  return first_samples(all, n);
}

// The runs.csv row of a finished run. `timed` holds this process's timed epoch; the *_all values
// are over all ranks (ddp) or this process (dp).
RunRow make_row(const TrainOptions& o, const data::ImageSet& set, const EpochMeasurement& timed,
                double epoch_s_max, double loss_sum_all, double correct_all, double samples_all) {
  RunRow row;
  row.strategy = o.strategy;
  row.gpus = o.gpus;
  row.batch_per_gpu = o.batch_per_gpu;
  row.loader_workers = o.workers;
  row.train_samples = set.size();
  row.epoch_s = epoch_s_max;
  row.train_s = timed.epoch_s - timed.loader_wait_s;  // Q1: epoch minus loader waits
  row.loader_wait_s = timed.loader_wait_s;
  row.iterations = timed.iterations;
  row.epochs = o.epochs;
  row.threads = o.threads;
  row.device = o.device;
  row.data = set.synthetic ? "synthetic" : "cifar10";
  row.final_loss = loss_sum_all / samples_all;
  row.final_accuracy = correct_all / samples_all;
  row.samples_per_s = samples_all / epoch_s_max;
  row.date = utc_now_iso8601();
  row.trainer = "trainsim";
  row.test_samples = 0;  // no test pass: test_s stays empty
  row.precision = precision_name(o.precision);
  row.memory_format = memory_format_name(o.memory_format);
  return row;
}

// The calibration probe on the run's device (cuda:0 for cuda) with the run's threads, in this
// (the launching) process before any rank starts.
double time_probe(const TrainOptions& o) {
  torch::set_num_threads(o.threads);
  const Device device = resolve_device(o.device);
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);  // as the trainer runs
  const double seconds = profiler::run_probe(device);
  release_cached_memory(device);  // leave the device's memory to the ranks
  if (!o.quiet) {
    std::fprintf(stderr, "train: probe %.4f s (%s batch %lld, fused iteration, %d threads on %s)\n", seconds,
                 profiler::kProbeModel, static_cast<long long>(profiler::kProbeBatch), o.threads,
                 o.device.c_str());
  }
  return seconds;
}

std::string read_result(const std::string& store_dir) {
  const std::string path = store_dir + "/" + kResultFile;
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    throw std::runtime_error("rank 0 finished without writing its result (" + path + ")");
  }
  return line;
}


std::string seconds_or_none(const std::optional<double>& value, const char* unit) {
  if (!value) return "none";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g%s", *value, unit);
  return buffer;
}

void print_summary(const RunRow& r, const std::string& runs_path) {
  std::printf(
      "train: %s, %d %s x %lld per device, %d loader workers, %lld samples (%s), %d threads%s%s\n"
      "  timed epoch %d/%d: epoch_s %.3f, train_s %.3f, loader_wait_s %.3f, %lld iterations, "
      "%.1f samples/s, loss %.4f, accuracy %.4f\n"
      "  probe %s, load average %s before, %s after\n"
      "  appended to %s\n",
      r.strategy.c_str(), r.gpus, r.device.c_str(), static_cast<long long>(r.batch_per_gpu),
      r.loader_workers, static_cast<long long>(r.train_samples), r.data.c_str(), r.threads,
      r.precision == "fp32" ? "" : (", " + r.precision).c_str(),
      r.memory_format == "nchw" ? "" : (", " + r.memory_format).c_str(), r.epochs, r.epochs, r.epoch_s, r.train_s,
      r.loader_wait_s,
      static_cast<long long>(r.iterations), r.samples_per_s, r.final_loss, r.final_accuracy,
      seconds_or_none(r.probe_s, " s").c_str(), seconds_or_none(r.load_before, "").c_str(),
      seconds_or_none(r.load_after, "").c_str(), runs_path.c_str());
}

int run_train(TrainOptions o) {
  resolve_runtime(o, processes_of(o));
  const std::string runs_path = o.runs_path.empty() ? default_runs_path(o) : o.runs_path;
  check_runs_header(runs_path);  // fail now, not after the epochs

  // How loaded and how fast the machine is right before the run.
  const std::optional<double> load_before = load_average_1min();
  std::optional<double> probe_s;
  if (o.probe) probe_s = time_probe(o);

  std::string line;
  if (o.strategy == "ddp") {
    if (!o.data_dir.empty()) load_training_set(o);  // bad files: one clear error before launch
    TempDir store("trainsim-train-");  // FileStore and result, removed at the end
    std::vector<std::string> args = {"worker", "train"};
    for (auto& a : to_worker_args(o)) args.push_back(std::move(a));
    launch_ranks(self_executable(), args, o.gpus, store.path(), kRankTimeoutSeconds);
    line = read_result(store.path());
  } else {
    torch::set_num_threads(o.threads);
    const data::ImageSet set = load_training_set(o);
    const auto epochs = train_epochs(o, set, nullptr, !o.quiet);
    const EpochMeasurement& t = epochs.back();
    line = format_run_row(make_row(o, set, t, t.epoch_s, t.loss_sum,
                                   static_cast<double>(t.correct), static_cast<double>(t.samples)));
  }
  RunRow row = parse_run_row(line);
  row.probe_s = probe_s;
  row.load_before = load_before;
  row.load_after = load_average_1min();
  append_run_row(runs_path, row);
  print_summary(row, runs_path);
  return 0;
}

// One rank's part of a DDP run, rendezvous through `store`, on GPU `device_index` (cuda). Returns
// the runs.csv row on rank 0 (wall epoch time: the slowest rank; loss, accuracy and samples:
// over all ranks), nullopt on the others.
std::optional<std::string> train_rank(const TrainOptions& o, c10::intrusive_ptr<c10d::Store> store, int device_index) {
  torch::set_num_threads(o.threads);
  CommunicatorOptions comm_options;
  comm_options.backend = o.device == "cuda" ? "nccl" : "gloo";
  comm_options.rank = o.rank;
  comm_options.world_size = o.world_size;
  comm_options.device_index = device_index;
  set_rank_step("rendezvous");
  const auto communicator = std::make_unique<Communicator>(std::move(store), comm_options);
  set_rank_step("loading the training set");
  const data::ImageSet set = load_training_set(o);
  const auto epochs = train_epochs(o, set, communicator.get(), !o.quiet && o.rank == 0);
  const EpochMeasurement& t = epochs.back();
  set_rank_step("the epoch's results, reduced over the ranks");

  const auto on_device = torch::TensorOptions().dtype(torch::kFloat64).device(communicator->device());
  auto epoch_max = torch::tensor({t.epoch_s}, on_device);
  auto sums = torch::tensor({t.loss_sum, static_cast<double>(t.correct),
                             static_cast<double>(t.samples)},
                            on_device);
  communicator->wait(communicator->all_reduce(epoch_max, c10d::ReduceOp::MAX));
  communicator->wait(communicator->all_reduce(sums, c10d::ReduceOp::SUM));
  if (o.rank != 0) return std::nullopt;
  const auto max_cpu = epoch_max.cpu();
  const auto sums_cpu = sums.cpu();
  return format_run_row(make_row(o, set, t, max_cpu[0].item<double>(), sums_cpu[0].item<double>(),
                                 sums_cpu[1].item<double>(), sums_cpu[2].item<double>()));
}

// A rank launch_ranks started: the FileStore in --store, the row to the result file for train_main.
int run_worker(const TrainOptions& o) {
  if (const auto line = train_rank(o, make_file_store(o.store_dir + "/filestore", o.world_size), o.rank)) {
    write_file_atomic(o.store_dir + "/" + kResultFile, *line + "\n");
  }
  return 0;
}

// A rank torchrun or srun started (on one node or many): a TCPStore on rank 0's host, rank 0
// appends the row to runs.csv.
int run_external_rank(TrainOptions o, const ExternalRank& ext) {
  if (o.strategy != "ddp") {
    throw UsageError("--strategy " + o.strategy + " under " + ext.launcher +
                     ": DataParallel is one process; start it without a launcher");
  }
  if (o.gpus != ext.world_size) {
    throw UsageError("--gpus " + std::to_string(o.gpus) + " but " + ext.launcher + " started " +
                     std::to_string(ext.world_size) + " ranks: give --gpus " + std::to_string(ext.world_size));
  }
  o.rank = ext.rank;
  o.world_size = ext.world_size;
  resolve_runtime(o, ext.local_world_size > 0 ? ext.local_world_size : ext.world_size);
  const std::string runs_path = o.runs_path.empty() ? default_runs_path(o) : o.runs_path;
  if (o.rank == 0) check_runs_header(runs_path);
  const std::optional<double> load_before = load_average_1min();
  std::optional<double> probe_s;
  if (o.probe && o.rank == 0) probe_s = time_probe(o);
  if (!o.quiet && o.rank == 0) {
    std::fprintf(stderr, "train: rank 0 of %d (%s), rendezvous at %s:%d\n", o.world_size, ext.launcher.c_str(),
                 ext.master_addr.c_str(), ext.master_port);
  }
  const std::optional<std::string> line = train_rank(
      o, make_tcp_store(ext.master_addr, ext.master_port, ext.world_size, ext.rank == 0), ext.local_rank);
  if (!line) return 0;
  RunRow row = parse_run_row(*line);
  row.probe_s = probe_s;
  row.load_before = load_before;
  row.load_after = load_average_1min();
  append_run_row(runs_path, row);
  print_summary(row, runs_path);
  return 0;
}

}  // namespace

int train_main(int argc, char** argv) {
  try {
    const auto options = parse_train_options(arguments(argc, argv));
    if (!options) return 0;  // --help
    std::optional<ExternalRank> external;
    try {
      external = external_rank_from_env();
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (external) return run_external_rank(*options, *external);
    return run_train(*options);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const data::DataError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: train: %s\n", e.what());
    return 1;
  }
}

int train_worker_main(int argc, char** argv) {
  int rank = -1;
  try {
    const TrainOptions options = parse_worker_options(arguments(argc, argv));
    rank = options.rank;
    return run_worker(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: train rank %d: %s\n", rank, e.what());
    return 1;
  }
}

}  // namespace trainsim::measure
