#include "report/sweep.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>

#include "des/time.h"
#include "format/errors.h"
#include "report/report.h"

namespace trainsim::report {
namespace {

// A whole decimal integer >= 1 that fits in int64_t, else nullopt ("12x", "0", "-3", "" fail).
std::optional<int64_t> positive_integer(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < 1) return std::nullopt;
  return value;
}

}  // namespace

std::size_t sweep_size(const SweepConfig& config) {
  return config.strategies.size() * config.gpus.size() * config.batch_per_gpu.size();
}

RunSpec sweep_spec(const SweepConfig& config, std::size_t index) {
  const std::size_t batches = config.batch_per_gpu.size();
  const std::size_t per_strategy = config.gpus.size() * batches;
  return config_spec(config, config.strategies[index / per_strategy], config.gpus[index % per_strategy / batches],
                     config.batch_per_gpu[index % batches]);
}

std::vector<RunSpec> sweep_specs(const SweepConfig& config) {
  std::vector<RunSpec> specs;
  const std::size_t n = sweep_size(config);
  specs.reserve(n);
  for (std::size_t i = 0; i < n; ++i) specs.push_back(sweep_spec(config, i));
  return specs;
}

SimResult simulate_config(const Profile& profile, const SweepConfig& config, const RunSpec& spec,
                          const SimOptions& options) {
  try {
    return simulate_run(profile, config.model, spec, options);
  } catch (const des::TimeRangeError& e) {
    throw InputError(config.file, 0, config_label(spec),
                     std::string(e.what()) + ": the profile's times and rates or the config's interconnect are out of range");
  } catch (const ProfileInconsistency& e) {
    throw InputError(config.file, config.profile_line, "profile", "profile " + config.profile_path + ": " + e.what());
  }
}

std::vector<SimResult> run_sweep(const Profile& profile, const SweepConfig& config, const SimOptions& options,
                                 const SweepProgress& progress, const SweepRefusal& refuse, int threads) {
  return run_specs(profile, config, sweep_specs(config), options, progress, refuse, threads);
}

std::vector<SimResult> run_specs(const Profile& profile, const SweepConfig& config, const std::vector<RunSpec>& specs,
                                 const SimOptions& options, const SweepProgress& progress,
                                 const SweepRefusal& refuse, int threads) {
  const size_t n = specs.size();
  std::vector<SimResult> results(n);
  std::vector<char> pending(n, 1);
  for (size_t i = 0; i < n && refuse; ++i) {
    if (const std::optional<std::string> why = refuse(specs[i])) {
      results[i].spec = specs[i];
      results[i].runnable = false;
      results[i].not_runnable = *why;
      results[i].notes.push_back("not predicted: " + *why);
      pending[i] = 0;
    }
  }

  // Each thread takes the next index. After a failure no index past it is started; the ones
  // before it were all taken already and finish, so the earliest failure is always found.
  std::atomic<size_t> next{0}, done{0}, stop{n};
  std::vector<std::exception_ptr> errors(n);
  const auto work = [&](bool report) {
    for (size_t i = next++; i < stop.load(); i = next++) {
      if (pending[i]) {
        try {
          results[i] = simulate_config(profile, config, specs[i], options);
        } catch (...) {
          errors[i] = std::current_exception();
          for (size_t s = stop.load(); i < s && !stop.compare_exchange_weak(s, i);) {
          }
        }
      }
      const size_t finished = ++done;
      if (report && progress) progress(finished, n);
    }
  };
  std::vector<std::thread> helpers;
  const size_t helper_count = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1))) - (n > 0 ? 1 : 0);
  for (size_t t = 0; t < helper_count; ++t) {
    try {
      helpers.emplace_back(work, false);
    } catch (const std::system_error&) {
      break;  // no more threads to be had (a process or container limit): the others do the work
    }
  }
  work(true);
  for (std::thread& helper : helpers) helper.join();
  // The helpers may have taken every configuration before this thread took one: the last report
  // comes after them all.
  if (progress && n > 0) progress(n, n);
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return results;
}

RunSpec default_trace_spec(const SweepConfig& config) {
  const auto has = [](const auto& list, const auto& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  const Strategy strategy = has(config.strategies, Strategy::kDdp) ? Strategy::kDdp : config.strategies.front();
  const int gpus = *std::max_element(config.gpus.begin(), config.gpus.end());
  const int64_t batch = has(config.batch_per_gpu, int64_t{128}) ? 128 : config.batch_per_gpu.front();
  return config_spec(config, strategy, gpus, batch);
}

RunSpec parse_trace_config(const std::string& text, const SweepConfig& config) {
  const std::string usage = "--trace-config '" + text + "': expected STRATEGY:GPUS:BATCH, e.g. ddp:4:128";
  const size_t first = text.find(':');
  const size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  if (second == std::string::npos || text.find(':', second + 1) != std::string::npos) throw UsageError(usage);
  const std::string strategy_text = text.substr(0, first);
  Strategy strategy;
  if (strategy_text == "ddp") {
    strategy = Strategy::kDdp;
  } else if (strategy_text == "dp") {
    strategy = Strategy::kDp;
  } else {
    throw UsageError("--trace-config '" + text + "': unknown strategy '" + strategy_text + "' (expected dp or ddp)");
  }
  const auto gpus = positive_integer(text.substr(first + 1, second - first - 1));
  const auto batch = positive_integer(text.substr(second + 1));
  if (!gpus || *gpus > std::numeric_limits<int>::max() || !batch) {
    throw UsageError(usage + " (GPUS and BATCH are whole numbers >= 1)");
  }
  if (const std::string problem = gpu_count_problem(config.topology, *gpus); !problem.empty()) {
    throw UsageError("--trace-config '" + text + "': " + problem);
  }
  if (const int64_t n = epoch_iterations(strategy, *gpus, *batch, config.train_samples); n > kMaxIterationsPerEpoch) {
    throw UsageError("--trace-config '" + text + "': " + std::to_string(config.train_samples) +
                     " samples make epochs of " + std::to_string(n) + " iterations per rank; at most " +
                     std::to_string(kMaxIterationsPerEpoch) + " are simulated");
  }
  return config_spec(config, strategy, static_cast<int>(*gpus), *batch);
}

}  // namespace trainsim::report
