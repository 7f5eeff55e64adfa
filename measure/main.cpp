// measure: profiles training on this machine for the simulator (see docs/MEASURE.md).
//   measure [profile] [flags]   the profile (default subcommand)
//   measure train [flags]        real training runs appended to runs.csv (docs/RUNS.md)
//   measure baseline [flags]     a baseline training curve and noise scale into the profile
//   measure largebatch-validate  predicted vs measured steps to a target loss (docs/LARGE_BATCH.md)
//   measure largebatch-compare   large-batch predictions against real runs (docs/LARGE_BATCH.md)
//   measure largebatch-plan      predictions for runs not ended yet, stored to compare with later
//   measure torchscript [flags]  a user's TorchScript module into the profile (docs/ANY_MODEL.md)
//   measure make-data --out DIR  synthetic images in the CIFAR-10 binary format (docs/MEASURE.md)
//   measure import-trace TRACE   a PyTorch profiler trace's step as a profile model (docs/TRACE.md)
//   measure worker KIND ...      internal: one rank process started by launch_ranks
#include <cstring>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "collectives/benchmark.h"
#include "comm/communicator.h"
#include "data/cifar.h"
#include "device.h"
#include "format/errors.h"
#include "import_trace_cli.h"
#include "largebatch/baseline.h"
#include "largebatch/compare.h"
#include "largebatch/plan.h"
#include "largebatch/validate_cli.h"
#include "launch.h"
#include "machine_cli.h"
#include "make_data.h"
#include "profile_run.h"
#include "profiler/host_contention.h"
#include "runs/train_cli.h"
#include "torchscript/torchscript_cli.h"
#include "usage_error.h"

namespace {

using trainsim::measure::first_line;
using trainsim::measure::UsageError;

// `measure --version`: this program's version and what the LibTorch it was built with can do.
void print_version() {
  std::cout << "measure " << TRAINSIM_VERSION << " (trainsim), LibTorch "
            << trainsim::measure::libtorch_version() << ", collectives:"
            << (trainsim::measure::backend_available("nccl") ? " nccl" : "")
            << (trainsim::measure::backend_available("gloo") ? " gloo" : "")
            << (!trainsim::measure::backend_available("nccl") && !trainsim::measure::backend_available("gloo")
                    ? " none" : "")
            << ", CUDA devices visible: " << trainsim::measure::cuda_device_count() << "\n";
}

// Every entry point takes (argc, argv) with argv[0] = its subcommand name.
using EntryPoint = int (*)(int argc, char** argv);

struct Subcommand {
  const char* name;
  EntryPoint main;
};

int worker_main(int argc, char** argv);

constexpr Subcommand kSubcommands[] = {
    {"profile", trainsim::measure::profile_main},
    {"train", trainsim::measure::train_main},
    {"baseline", trainsim::measure::baseline_main},
    {"largebatch-validate", trainsim::measure::largebatch_validate_main},
    {"largebatch-compare", trainsim::measure::largebatch_compare_main},
    {"largebatch-plan", trainsim::measure::largebatch_plan_main},
    {"torchscript", trainsim::measure::torchscript_main},
    {"make-data", trainsim::measure::make_data_main},
    {"machine", trainsim::measure::machine_main},
    {"import-trace", trainsim::measure::import_trace_main},
    {"worker", worker_main},
};

// Rank processes: `measure worker KIND ...`.
constexpr Subcommand kWorkers[] = {
    {"collective", trainsim::measure::collectives::collective_worker_main},
    {"train", trainsim::measure::train_worker_main},
    {"baseline", trainsim::measure::baseline_worker_main},
    {"contention", trainsim::measure::profiler::contention_worker_main},
};

int dispatch(const Subcommand* begin, const Subcommand* end, const char* what, int argc, char** argv) {
  for (const Subcommand* s = begin; s != end; ++s) {
    if (std::strcmp(argv[0], s->name) == 0) return s->main(argc, argv);
  }
  std::string known;  // `worker` is internal: not offered to users
  for (const Subcommand* s = begin; s != end; ++s) {
    if (std::strcmp(s->name, "worker") != 0) known += (known.empty() ? "" : ", ") + std::string(s->name);
  }
  throw UsageError(std::string("unknown ") + what + " '" + argv[0] + "' (known: " + known + ")");
}

int worker_main(int argc, char** argv) {
  if (argc < 2) throw UsageError("worker: missing the worker kind");
  // Its sign of life for launch_ranks, which stops every rank when one goes silent.
  const auto heartbeat = trainsim::measure::heartbeat_from_args(argc, argv);
  return dispatch(std::begin(kWorkers), std::end(kWorkers), "worker kind", argc - 1, argv + 1);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
      print_version();
      return 0;
    }
    if (argc > 1 && argv[1][0] != '-') {
      return dispatch(std::begin(kSubcommands), std::end(kSubcommands), "subcommand", argc - 1, argv + 1);
    }
    return trainsim::measure::profile_main(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << " (see measure --help)\n";
    return 2;
  } catch (const trainsim::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const trainsim::data::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << first_line(e.what()) << "\n";
    return 1;
  }
}
