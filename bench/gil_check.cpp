// The GIL model against its measurement (docs/HOST.md "DataParallel's host mechanisms,
// measured"): reads a profile's pytorch.gil block, takes the Python time per call and the GIL's
// hand-over from its first probe on 1 and 2 threads, predicts every probe on every thread count
// with sim/train/gil_model.h on the profile's cores, and prints measured against predicted. The
// first probe's 1- and 2-thread cells are what the costs came from; every other cell is held out
// and scored.
//
//   build/bin/gil_check PROFILE.yaml
//
// Exit codes: 0 printed; 2 a bad argument or profile, or one without a GIL block.

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "format/errors.h"
#include "format/metrics.h"
#include "format/profile_io.h"
#include "report/format.h"
#include "train/gil_model.h"

int main(int argc, char** argv) {
  using namespace trainsim;
  if (argc != 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: gil_check PROFILE.yaml\n");
    return 2;
  }
  const std::string path = argv[1];
  try {
    const Profile profile = load_profile(path);
    if (!profile.pytorch || !profile.pytorch->gil) {
      std::fprintf(stderr, "error: %s: no pytorch.gil block (measure's --pytorch measures it)\n", path.c_str());
      return 2;
    }
    const GilProfile& gil = *profile.pytorch->gil;
    const int cores = profile.machine.cpu_cores;
    if (cores < 1) {
      std::fprintf(stderr, "error: %s: machine.cpu_cores is not given\n", path.c_str());
      return 2;
    }
    const train::GilCosts costs = train::gil_costs(gil);
    std::printf("# The GIL model against its measurement: %s (%s, %d cores, Python %s, torch %s)\n", path.c_str(),
                profile.machine.cpu.c_str(), cores, profile.pytorch->python.c_str(), profile.pytorch->torch.c_str());
    std::printf("# From %s on 1 and 2 threads: %s us of Python per call, %s us to hand the GIL over per call\n",
                gil.probes.front().name.c_str(), report::format_fixed(costs.python_call_s * 1e6, 2).c_str(),
                report::format_fixed(costs.handoff_s * 1e6, 2).c_str());
    std::printf("# Each probe: %d x (Linear(width, width), ReLU) on batch x width, no autograd; wall time per forward\n",
                gil.depth);
    std::printf("%-10s %6s %5s %7s %13s %13s %8s\n", "probe", "calls", "batch", "threads", "measured_us",
                "predicted_us", "error");
    double sum = 0, sum_within_cores = 0;
    int cells = 0, cells_within_cores = 0;
    for (std::size_t p = 0; p < gil.probes.size(); ++p) {
      const GilProbe& probe = gil.probes[p];
      const double call_s = probe.forward_s[0] / static_cast<double>(probe.calls);
      for (std::size_t t = 0; t < gil.threads.size(); ++t) {
        const int threads = gil.threads[t];
        const double measured = probe.forward_s[t];
        const double predicted = train::gil_threads_forward_s(threads, probe.calls, call_s, costs, cores);
        // The first probe's 1 and 2 threads gave the costs, every probe's 1 thread its call time
        // (both exact by construction); the rest is held out.
        const double error = relative_error(predicted, measured);
        const char* note = p == 0 && t < 2 ? "  (the costs)"
                           : t == 0        ? "  (its call time)"
                           : threads > cores ? "  (threads > cores)"
                                             : "";
        if (t > 0 && !(p == 0 && t == 1)) {
          sum += std::abs(error);
          ++cells;
          if (threads <= cores) {
            sum_within_cores += std::abs(error);
            ++cells_within_cores;
          }
        }
        std::printf("%-10s %6lld %5lld %7d %13s %13s %7s%%%s\n", probe.name.c_str(),
                    static_cast<long long>(probe.calls), static_cast<long long>(probe.batch), threads,
                    report::format_fixed(measured * 1e6, 1).c_str(), report::format_fixed(predicted * 1e6, 1).c_str(),
                    report::format_fixed(100 * error, 1).c_str(), note);
      }
    }
    if (cells_within_cores > 0) {
      std::printf("held-out cells with threads <= cores: MAPE %s%% over %d\n",
                  report::format_fixed(100 * sum_within_cores / cells_within_cores, 1).c_str(), cells_within_cores);
    }
    if (cells > 0) {
      std::printf("all held-out cells: MAPE %s%% over %d\n", report::format_fixed(100 * sum / cells, 1).c_str(), cells);
    }
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s: %s\n", path.c_str(), e.what());
    return 2;
  }
}
