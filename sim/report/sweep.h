#pragma once
// Running a sweep config: every strategy x gpus x batch_per_gpu, and choosing what to trace.

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/config.h"
#include "format/profile.h"
#include "train/simulator.h"

namespace trainsim::report {

// A bad command-line value (not a file problem): main prints `error: what()` and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One RunSpec per configuration, in the order strategy (as in the config), then gpus, then
// batch_per_gpu; each with the config's train_samples, loader settings, interconnect,
// sync_batchnorm, trainer and test pass.
std::vector<RunSpec> sweep_specs(const SweepConfig& config);
// How many configurations the sweep has, and the one at `index` in that order (a part of a sweep
// built without building all of it).
std::size_t sweep_size(const SweepConfig& config);
RunSpec sweep_spec(const SweepConfig& config, std::size_t index);

// Called with (done, total) as configurations finish, from the calling thread only, and once
// with (total, total) at the end.
using SweepProgress = std::function<void(size_t done, size_t total)>;

// Why a configuration cannot be predicted (e.g. a fit left a parameter it needs undetermined), or
// nullopt; such a configuration is not simulated and shows as n/a with the reason.
using SweepRefusal = std::function<std::optional<std::string>(const RunSpec&)>;

// simulate_run for one configuration of `config`; a time beyond the simulator's range (inputs
// out of range: des::TimeRangeError) becomes an InputError naming the config file and the
// configuration, a ProfileInconsistency one naming the config's profile: line.
SimResult simulate_config(const Profile& profile, const SweepConfig& config, const RunSpec& spec,
                          const SimOptions& options);

// simulate_config for every spec of sweep_specs(config), results in that order. `threads`
// configurations are simulated at once (the calling thread is one of them); each result lands at
// its own index, so the results do not depend on the thread count. Refusals are decided on the
// calling thread first. An error stops the sweep; the one of the earliest configuration that
// failed is rethrown, whatever the thread count.
std::vector<SimResult> run_sweep(const Profile& profile, const SweepConfig& config, const SimOptions& options,
                                 const SweepProgress& progress = {}, const SweepRefusal& refuse = {},
                                 int threads = 1);
// The same for the given specs (a part of a sweep), results in their order.
std::vector<SimResult> run_specs(const Profile& profile, const SweepConfig& config, const std::vector<RunSpec>& specs,
                                 const SimOptions& options, const SweepProgress& progress = {},
                                 const SweepRefusal& refuse = {}, int threads = 1);

// The configuration --trace records by default: ddp if swept (else the first strategy), the
// largest GPU count, batch 128 per GPU if swept, else the first batch of the sweep.
RunSpec default_trace_spec(const SweepConfig& config);

// Parses --trace-config "STRATEGY:GPUS:BATCH" (e.g. "ddp:4:128") into a spec with the config's
// samples, workers and interconnect. The configuration need not be part of the sweep.
// Throws UsageError on malformed text, an unknown strategy or a size < 1.
RunSpec parse_trace_config(const std::string& text, const SweepConfig& config);

}  // namespace trainsim::report
