#include "format/atomic_write.h"
#include "profiler/host_contention.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli_util.h"
#include "comm/communicator.h"
#include "device.h"
#include "launch.h"
#include "models/describe.h"
#include "profiler/compute.h"
#include "stats.h"
#include "torchscript/script_profile.h"
#include "usage_error.h"

namespace trainsim::measure::profiler {
namespace {

namespace po = boost::program_options;

constexpr const char* kResultMagic = "trainsim-contention-result";
constexpr int kResultVersion = 1;

struct WorkerFlags {
  ContentionJob job;
  int rank = -1;
  int world_size = 0;
  std::string store_dir;
  std::string precision = "fp32";  // --precision, parsed into job.precision
  std::string memory_format = "nchw";  // --memory-format, parsed into job.memory_format
};

WorkerFlags parse_worker_flags(const std::vector<std::string>& args) {
  WorkerFlags f;
  po::options_description desc("measure worker contention (internal: one rank process)");
  desc.add_options()
      ("model", po::value(&f.job.model)->required(), "model name")
      ("batch", po::value(&f.job.batch)->required(), "batch per rank")
      ("warmup", po::value(&f.job.warmup)->required(), "untimed fused iterations")
      ("repeats", po::value(&f.job.repeats)->required(), "timed fused iterations")
      ("threads", po::value(&f.job.threads)->required(), "intra-op threads")
      ("seed", po::value(&f.job.seed)->required(), "random inputs")
      ("script", po::value(&f.job.script), "a TorchScript module instead of a built-in model")
      ("input-shape", po::value(&f.job.input_shape), "--script: one sample's input shape")
      ("classes", po::value(&f.job.classes), "--script: the module's classes")
      ("precision", po::value(&f.precision), "fp32 (default) or bf16-amp")
      ("memory-format", po::value(&f.memory_format), "nchw (default) or channels_last")
      ("timeout", po::value(&f.job.timeout_s)->required(), "seconds")
      ("rank", po::value(&f.rank)->required(), "this rank")
      ("world-size", po::value(&f.world_size)->required(), "ranks")
      ("store", po::value(&f.store_dir)->required(), "FileStore folder");
  const po::variables_map vm = parse_flags(args, desc, "worker contention: ");
  if (f.job.batch < 1 || f.job.warmup < 0 || f.job.repeats < 1 || f.job.threads < 1 ||
      f.job.timeout_s <= 0) {
    throw UsageError("worker contention: --batch >= 1, --warmup >= 0, --repeats >= 1, --threads >= 1, --timeout > 0");
  }
  const auto precision = parse_precision(f.precision);
  if (!precision) {
    throw UsageError("worker contention: --precision '" + f.precision + "' (expected " +
                     std::string(kPrecisionNames) + ")");
  }
  f.job.precision = *precision;
  const auto format = parse_memory_format(f.memory_format);
  if (!format) {
    throw UsageError("worker contention: --memory-format '" + f.memory_format + "' (expected " +
                     std::string(kMemoryFormatNames) + ")");
  }
  f.job.memory_format = *format;
  if (f.world_size < 1 || f.rank < 0 || f.rank >= f.world_size) {
    throw UsageError("worker contention: --rank must be in [0, --world-size)");
  }
  return f;
}

std::string format_double(double v) {
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

// result.txt: "trainsim-contention-result 1" then "iteration_s <seconds>", written atomically.
void write_result(double iteration_s, const std::string& path) {
  write_file_atomic(path, std::string(kResultMagic) + " " + std::to_string(kResultVersion) + "\n" +
                              "iteration_s " + format_double(iteration_s) + "\n");
}

double read_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": missing (rank 0 wrote no result)");
  std::string magic, key;
  int version = 0;
  double seconds = 0;
  if (!(in >> magic >> version >> key >> seconds) || magic != kResultMagic || version != kResultVersion ||
      key != "iteration_s" || !(seconds > 0)) {
    throw std::runtime_error(path + ": not a " + std::string(kResultMagic) + " " +
                             std::to_string(kResultVersion) + " file with iteration_s > 0");
  }
  return seconds;
}

}  // namespace

int contention_worker_main(int argc, char** argv) {
  const WorkerFlags f = parse_worker_flags(std::vector<std::string>(argv, argv + argc));
  try {
    torch::set_num_threads(f.job.threads);
    CommunicatorOptions options;
    options.backend = "gloo";  // only its barrier: the ranks train independently
    options.rank = f.rank;
    options.world_size = f.world_size;
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.job.timeout_s * 1000.0));
    auto comm = std::make_unique<Communicator>(make_file_store(f.store_dir + "/filestore", f.world_size), options);

    const Device cpu{DeviceKind::cpu, 0, f.job.precision, f.job.memory_format};
    const uint64_t seed = f.job.seed + static_cast<uint64_t>(f.rank);
    std::function<void()> iteration;
    std::shared_ptr<torchscript::ScriptModel> script;
    std::shared_ptr<torchscript::ScriptIteration> script_step;
    std::shared_ptr<FusedIteration> fused;
    if (!f.job.script.empty()) {
      torchscript::ScriptModelOptions options;
      options.path = f.job.script;
      options.input_shape = torchscript::parse_input_shape(f.job.input_shape);
      options.num_classes = f.job.classes;
      script = std::make_shared<torchscript::ScriptModel>(options, cpu);
      script_step = std::make_shared<torchscript::ScriptIteration>(*script, f.job.batch, cpu, seed);
      iteration = [&] { script_step->run(); };
    } else {
      fused = std::make_shared<FusedIteration>(models::describe_model(f.job.model), f.job.batch, cpu, seed);
      iteration = [&] { fused->run(); };
    }
    // Every iteration starts together on all ranks (DDP's all-reduce keeps them in lockstep), so
    // each timed iteration of rank 0 overlaps the others' iterations.
    for (int i = 0; i < f.job.warmup; ++i) {
      comm->barrier();
      iteration();
    }
    std::vector<double> times;
    for (int i = 0; i < f.job.repeats; ++i) {
      comm->barrier();
      times.push_back(time_once(cpu, iteration));
    }
    if (f.rank == 0) write_result(median(times), f.store_dir + "/result.txt");
    comm->barrier();  // nobody leaves (closing its store handle) while others still need it
  } catch (const std::exception& e) {
    std::cerr << "error: rank " << f.rank << " of " << f.world_size << ": " << first_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}

std::vector<std::string> contention_worker_args(const ContentionJob& job) {
  std::vector<std::string> args{"worker", "contention",
          "--model", job.model,
          "--batch", std::to_string(job.batch),
          "--warmup", std::to_string(job.warmup),
          "--repeats", std::to_string(job.repeats),
          "--threads", std::to_string(job.threads),
          "--seed", std::to_string(job.seed),
          "--timeout", format_double(job.timeout_s)};
  // Only when not fp32, so an fp32 worker's command line is as before.
  if (job.precision != Precision::kFp32) args.insert(args.end(), {"--precision", precision_name(job.precision)});
  if (job.memory_format != MemoryFormat::kNchw) {
    args.insert(args.end(), {"--memory-format", memory_format_name(job.memory_format)});
  }
  if (!job.script.empty()) {
    args.insert(args.end(), {"--script", job.script, "--input-shape", job.input_shape, "--classes",
                             std::to_string(job.classes)});
  }
  return args;
}

double run_contention(const std::string& exe, const ContentionJob& job, int ranks, double launch_timeout_s) {
  TempDir store("trainsim-contention-");
  launch_ranks(exe, contention_worker_args(job), ranks, store.path(), launch_timeout_s);
  return read_result(store.path() + "/result.txt");
}

std::vector<double> run_contention_rounds(const std::string& exe, const ContentionJob& job, int ranks, int rounds,
                                          double launch_timeout_s,
                                          const std::function<void(int k, double seconds)>& progress) {
  std::vector<std::vector<double>> times(static_cast<size_t>(ranks));
  for (int r = 0; r < rounds; ++r) {
    for (int k = 1; k <= ranks; ++k) {
      const double seconds = run_contention(exe, job, k, launch_timeout_s);
      times[static_cast<size_t>(k - 1)].push_back(seconds);
      if (progress) progress(k, seconds);
    }
  }
  std::vector<double> medians;
  for (const auto& t : times) medians.push_back(median(t));
  return medians;
}

}  // namespace trainsim::measure::profiler
