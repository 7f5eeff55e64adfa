// Simulator speed: raw event-engine throughput, the course's 30-configuration sweep and reading
// the bundled profile. Prints figures; asserts nothing (speed is not a test). Targets on a 2-core
// machine: >= 50 million events/s at 16 pending, the 30-configuration sweep in < 0.5 s with steady-state
// extrapolation; the profile read (YAML parse and validation) is the main job's largest part
// (docs/RELIABILITY.md: the main job under 0.1 s).
//
//   build/bin/sim_bench
//
// The sweep runs on a SYNTHETIC ResNet-18-shaped profile built in code (tests/sim_test_profiles.h),
// not a measured one: the figures measure the simulator, not a machine.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "../tests/sim_test_profiles.h"
#include "des/engine.h"
#include "format/profile_io.h"
#include "train/simulator.h"

namespace {

using trainsim::des::Engine;
using trainsim::des::SimTime;

// `processes` self-rescheduling actors, each with a pseudo-random delay (xorshift), as in a
// simulation with that many concurrent activities; the heap holds `processes` events.
struct Actor {
  Engine* engine;
  uint64_t* remaining;
  uint64_t state;
  void operator()() {
    if (*remaining == 0) return;
    --*remaining;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const SimTime delay = 1 + static_cast<SimTime>(state % 1000);
    Actor next = *this;
    engine->schedule_after(delay, next);
  }
};

void BM_engine(benchmark::State& state) {
  const int processes = static_cast<int>(state.range(0));
  constexpr uint64_t kEvents = 1'000'000;
  uint64_t processed = 0;
  for (auto _ : state) {
    Engine engine;
    uint64_t remaining = kEvents;
    for (int p = 0; p < processes; ++p) {
      engine.schedule_at(0, Actor{&engine, &remaining, 0x9E3779B97F4A7C15ull + p});
    }
    engine.run();
    processed += engine.events_processed();
    benchmark::DoNotOptimize(engine.now());
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(processed), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_engine)->Arg(16)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// The course sweep: dp, ddp x 1, 2, 4 GPUs x batch 32 .. 8192, full 50,000-sample epochs.
std::vector<trainsim::RunSpec> course_sweep() {
  std::vector<trainsim::RunSpec> specs;
  for (trainsim::Strategy s : {trainsim::Strategy::kDp, trainsim::Strategy::kDdp}) {
    for (int gpus : {1, 2, 4}) {
      for (int64_t batch : {32, 128, 512, 2048, 8192}) {
        trainsim::RunSpec r;
        r.strategy = s;
        r.gpus = gpus;
        r.batch_per_gpu = batch;
        r.train_samples = 50000;
        r.loader_workers = 2;
        specs.push_back(r);
      }
    }
  }
  return specs;
}

void run_sweep(benchmark::State& state, bool exact) {
  const trainsim::Profile profile = trainsim::testing::synthetic_profile();
  const std::vector<trainsim::RunSpec> specs = course_sweep();
  trainsim::SimOptions options;
  options.exact = exact;
  int64_t configurations = 0;
  int64_t simulated = 0;
  int64_t iterations = 0;
  double wall_s = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (const trainsim::RunSpec& spec : specs) {
      const trainsim::SimResult r = trainsim::simulate_run(profile, "resnet18-cifar", spec, options);
      simulated += r.simulated_iterations;
      iterations += r.iterations;
      benchmark::DoNotOptimize(r.epoch_s);
    }
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    configurations += static_cast<int64_t>(specs.size());
  }
  const double sweeps = static_cast<double>(state.iterations());
  state.SetLabel("synthetic ResNet-18-shaped profile, 30 configurations, 50,000 samples");
  state.counters["configs/s"] =
      benchmark::Counter(static_cast<double>(configurations), benchmark::Counter::kIsRate);
  state.counters["sweep_wall_s"] = wall_s / sweeps;
  state.counters["simulated_iters"] = static_cast<double>(simulated) / sweeps;
  state.counters["epoch_iters"] = static_cast<double>(iterations) / sweeps;
}

void BM_sweep(benchmark::State& state) { run_sweep(state, /*exact=*/false); }
void BM_sweep_exact(benchmark::State& state) { run_sweep(state, /*exact=*/true); }
BENCHMARK(BM_sweep)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_sweep_exact)->Unit(benchmark::kMillisecond)->UseRealTime();

// The bundled real profile (reports/cpu-epyc-2c/profile.yaml, 43 KB): what every `simulate`
// command reads before it simulates anything.
void BM_load_profile(benchmark::State& state) {
  const std::string path = TRAINSIM_SOURCE_DIR "/reports/cpu-epyc-2c/profile.yaml";
  size_t models = 0;
  for (auto _ : state) {
    const trainsim::Profile profile = trainsim::load_profile(path);
    models += profile.models.size();
    benchmark::DoNotOptimize(models);
  }
  state.SetLabel("reports/cpu-epyc-2c/profile.yaml");
}
BENCHMARK(BM_load_profile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
