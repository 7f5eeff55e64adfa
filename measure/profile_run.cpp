#include "profile_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "collectives/benchmark.h"
#include "collectives/table.h"
#include "comm/communicator.h"
#include "data/cifar.h"
#include "device.h"
#include "format/atomic_write.h"
#include "format/profile_io.h"
#include "io/nccl_tests_log.h"
#include "launch.h"
#include "machine.h"
#include "models/describe.h"
#include "profile_options.h"
#include "profiler/compute.h"
#include "profiler/ddp_loop.h"
#include "profiler/h2d.h"
#include "profiler/host_contention.h"
#include "profiler/loader_bench.h"
#include "profiler/page_faults.h"
#include "profiler/probe.h"
#include "profiler/pytorch_profile.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A rank process (or profile_torch.py) gets this long before it is killed; the ranks' own process
// group timeout, kRankTimeoutSeconds, fires much earlier on a hang.
constexpr double kLaunchTimeout = 3600;
constexpr double kRankTimeoutSeconds = 600;
// Synthetic test images written for profile_torch.py (it reads only the training files).
constexpr int64_t kPytorchTestImages = 1000;


// "42s", "3m05s", "1h02m"
std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buffer[32];
  if (s < 60) {
    std::snprintf(buffer, sizeof buffer, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buffer;
}

std::string format_ms(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  return buffer;
}

std::string format_gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buffer;
}

// The first line of an error message (LibTorch appends multi-line backtraces).

void log(const std::string& line) { std::cerr << "measure: " << line << std::endl; }

// One unit of work that ends with a profile write.
struct Case {
  std::string kind;   // "compute", "contention", "h2d", "loader", "collectives", "pytorch": progress per kind
  std::string label;
  double weight = 1;  // relative cost within its kind (compute: batch x FLOPs per sample)
  std::function<bool()> done;  // already in the profile
  std::function<void()> run;
};

// Elapsed time and an estimate of the time left: each kind's seconds per unit of weight so
// far, applied to its remaining weight (kinds not started yet: mean seconds per finished case).
class Progress {
 public:
  explicit Progress(const std::vector<Case>& cases) : cases_(cases), start_(Clock::now()) {}

  void finished(size_t index, double seconds) {
    const Case& c = cases_[index];
    seconds_[c.kind] += seconds;
    weight_[c.kind] += c.weight;
    total_seconds_ += seconds;
    ++finished_cases_;
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Remaining cases are those after `index` (the one starting now included) that are not done.
  std::string left(size_t index) const {
    if (finished_cases_ == 0) return "?";
    double left = 0;
    for (size_t i = index; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      const auto w = weight_.find(c.kind);
      if (w != weight_.end() && w->second > 0) {
        left += c.weight * seconds_.at(c.kind) / w->second;
      } else {
        left += total_seconds_ / static_cast<double>(finished_cases_);
      }
    }
    return "~" + format_duration(left);
  }

 private:
  const std::vector<Case>& cases_;
  Clock::time_point start_;
  std::map<std::string, double> seconds_;
  std::map<std::string, double> weight_;
  double total_seconds_ = 0;
  int finished_cases_ = 0;
};

class ProfileRun {
 public:
  explicit ProfileRun(ProfileOptions options) : options_(std::move(options)) {}

  int run() {
    setup();
    plan_cases();
    execute();
    return 0;
  }

 private:
  void setup() {
    device_ = resolve_device(options_.device);
    device_.precision = options_.precision;
    device_.memory_format = options_.memory_format;
    // --pytorch first: a bad interpreter or script is a bad flag, reported before anything runs.
    std::string note;
    pytorch_python_ = profiler::choose_pytorch_python(options_.pytorch, note);
    pytorch_script_ = options_.pytorch_script.empty() ? profiler::default_pytorch_script() : options_.pytorch_script;
    if (pytorch_python_ && !fs::is_regular_file(pytorch_script_)) {
      throw UsageError("--pytorch-script " + pytorch_script_ + ": no such file");
    }
    MachineInfo machine = detect_host();
    PlanTarget target;
    target.cuda = device_.is_cuda();
    target.cuda_devices = cuda_device_count();
    target.cpu_cores = machine.cpu_cores;
    plan_ = resolve_plan(options_, target);
    torch::set_num_threads(plan_.threads);
    // cuDNN autotuning on (default) as the course and both trainers set it, or off (--cudnn-benchmark).
    if (options_.cudnn_benchmark && !device_.is_cuda()) {
      throw UsageError("--cudnn-benchmark applies to cuda only (this run profiles the cpu)");
    }
    const bool cudnn_benchmark = options_.cudnn_benchmark.value_or(true);
    if (device_.is_cuda()) at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);

    // The default name counts the visible GPUs (as `measure train` names the machine);
    // device_count is what the collectives use: the largest rank count (ranks on CPU).
    fill_device_info(machine, device_, device_.is_cuda() ? target.cuda_devices : plan_.rank_counts.back());
    machine.name = options_.machine.empty() ? default_machine_name(machine) : options_.machine;
    machine.device_count = plan_.rank_counts.back();
    machine.threads = torch::get_num_threads();
    out_ = options_.out.empty() ? "reports/" + machine.name + "/profile.yaml" : options_.out;
    // Checked before anything is measured, not when the first case is written.
    if (fs::is_directory(out_)) throw UsageError("--out " + out_ + ": is a folder (give the profile's file name)");
    table_path_ = (fs::path(out_).parent_path() / "collectives.txt").string();

    log("device " + device_.kind_name() + " (" + machine.device_name + "), " +
        std::to_string(machine.threads) + " threads, LibTorch " + machine.libtorch + ", machine " +
        machine.name +
        (options_.precision == Precision::kFp32 ? "" : std::string(", ") + precision_name(options_.precision)) +
        (options_.memory_format == MemoryFormat::kNchw ? ""
                                                       : std::string(", ") + memory_format_name(options_.memory_format)));
    if (!note.empty()) log("note: " + note);
    if (options_.resume && fs::exists(out_)) {
      profile_ = load_profile(out_);
      if (profile_.machine.device_kind != machine.device_kind) {
        throw UsageError("--resume: " + out_ + " was measured on " + profile_.machine.device_kind +
                         ", this run is on " + machine.device_kind);
      }
      if (profile_.measurement.repeats != plan_.repeats || profile_.measurement.warmup != plan_.warmup) {
        log("note: " + out_ + " was measured with warmup " + std::to_string(profile_.measurement.warmup) +
            ", repeats " + std::to_string(profile_.measurement.repeats) + "; new cases use warmup " +
            std::to_string(plan_.warmup) + ", repeats " + std::to_string(plan_.repeats));
      }
      if (device_.is_cuda() && profile_.measurement.cudnn_benchmark.value_or(true) != cudnn_benchmark) {
        throw UsageError("--resume: " + out_ + " was measured with cudnn.benchmark " +
                         (cudnn_benchmark ? "off" : "on") + ", this run has it " +
                         (cudnn_benchmark ? "on" : "off") + " (--cudnn-benchmark)");
      }
      if (profile_.measurement.precision != options_.precision) {
        throw UsageError("--resume: " + out_ + " was measured in " + precision_name(profile_.measurement.precision) +
                         ", this run's --precision is " + precision_name(options_.precision));
      }
      if (profile_.measurement.memory_format != options_.memory_format) {
        throw UsageError("--resume: " + out_ + " was measured in " +
                         memory_format_name(profile_.measurement.memory_format) + ", this run's --memory-format is " +
                         memory_format_name(options_.memory_format));
      }
      log("resuming " + out_);
      resumed_ = !profile_.measurement.command.empty();
    } else {
      if (fs::exists(out_)) log("replacing " + out_ + " (--resume would continue it)");
      profile_.machine = machine;
    }
    // The host's cost of a page fault, once per profile (a resumed one keeps its first run's).
    if (!(profile_.machine.page_fault_s > 0)) {
      profile_.machine.page_fault_s = profiler::page_fault_cost_s();
      char line[96];
      std::snprintf(line, sizeof line, "page faults: %.2f us each on this host (fresh pages touched)",
                    profile_.machine.page_fault_s * 1e6);
      log(line);
    }
    // A resumed profile keeps how its first run measured (command, warm-up, repeats); this run's
    // command goes into measurement.resumed when it adds cases.
    if (!resumed_) {
      profile_.measurement.command = options_.command;
      profile_.measurement.warmup = plan_.warmup;
      profile_.measurement.repeats = plan_.repeats;
      profile_.measurement.quick = options_.quick;
      profile_.measurement.precision = options_.precision;
      profile_.measurement.memory_format = options_.memory_format;
    }
    profile_.measurement.data =
        options_.data_dir.empty() || data::is_synthetic_dir(options_.data_dir) ? "synthetic" : "cifar10";
    if (device_.is_cuda()) {
      profile_.measurement.cudnn_benchmark = cudnn_benchmark;
      profile_.measurement.tf32_convolutions = at::globalContext().allowTF32CuDNN();
      profile_.measurement.tf32_matmul = at::globalContext().allowTF32CuBLAS();
    }
    if (!device_.is_cuda()) profile_.h2d = CopyProfile{};  // applicable: false, no copy on CPU
  }

  // ---- planning ----

  void plan_cases() {
    if (plan_.compute) plan_compute();
    if (plan_.contention) plan_contention();
    if (device_.is_cuda()) log("host contention: not measured on cuda (each rank has its own device)");
    if (plan_.h2d) plan_h2d();
    if (plan_.loader) plan_loader();
    if (plan_.collectives) plan_collectives();
    if (pytorch_python_) plan_pytorch();
  }

  // One case: measure/pytorch/profile_torch.py with the profile's settings.
  void plan_pytorch() {
    Case c;
    c.kind = "pytorch";
    c.label = "PyTorch pipeline: " + pytorch_script_ + " with " + *pytorch_python_;
    c.done = [this] { return profile_.pytorch.has_value(); };
    c.run = [this] { run_pytorch(/*loader_only=*/false); };
    cases_.push_back(std::move(c));
    if (plan_.loader_at_batches.empty()) return;
    // A pytorch section measured before its DataLoader was measured at more than one batch (or
    // at other batches) gets them in a case of its own: the loader alone, at all of them.
    Case at;
    at.kind = "pytorch";
    at.label = "PyTorch DataLoader at batches " + join_batches(plan_.loader_at_batches);
    at.done = [this] { return profile_.pytorch && has_loader_batches(profile_.pytorch->loader); };
    at.run = [this] { run_pytorch(/*loader_only=*/true); };
    cases_.push_back(std::move(at));
  }

  bool has_loader_batches(const LoaderProfile& loader) const {
    for (int64_t b : plan_.loader_at_batches) {
      if (b == loader.batch) continue;
      if (std::none_of(loader.at_batches.begin(), loader.at_batches.end(),
                       [&](const LoaderAtBatch& at) { return at.batch == b; })) {
        return false;
      }
    }
    return true;
  }

  static std::string join_batches(const std::vector<int64_t>& batches) {
    std::string out;
    for (int64_t b : batches) out += (out.empty() ? "" : ",") + std::to_string(b);
    return out;
  }

  void plan_compute() {
    for (const auto& name : plan_.models) {
      const ModelProfile description = models::describe_model(name);
      double flops_per_sample = 0;
      for (const auto& layer : description.layers) flops_per_sample += layer.forward_flops;
      for (int64_t batch : plan_.batches) {
        Case c;
        c.kind = "compute";
        c.label = "compute " + name + " batch " + std::to_string(batch);
        c.weight = static_cast<double>(batch) * flops_per_sample;
        c.done = [this, name, batch] {
          const auto it = profile_.models.find(name);
          if (it == profile_.models.end()) return false;
          const ModelProfile& m = it->second;
          return profiler::has_batch(m, batch) || (m.oom_batch && batch >= *m.oom_batch);
        };
        c.run = [this, name, batch] { run_compute(name, batch); };
        cases_.push_back(std::move(c));
      }
    }
  }

  // One case per model and batch: 1..contention_ranks processes each running the fused iteration.
  void plan_contention() {
    if (!backend_available("gloo")) {  // the ranks' start barrier
      log("host contention: not measured (this build of measure has no gloo backend)");
      return;
    }
    for (const auto& name : plan_.models) {
      for (int64_t batch : plan_.contention_batches) {
        Case c;
        c.kind = "contention";
        c.label = "host contention " + name + " batch " + std::to_string(batch) + ", 1.." +
                  std::to_string(plan_.contention_ranks) + " processes";
        c.done = [this, name, batch] {
          const auto it = profile_.models.find(name);
          if (it == profile_.models.end()) return false;
          const auto& points = it->second.host_contention;
          return std::any_of(points.begin(), points.end(), [batch](const ContentionPoint& p) { return p.batch == batch; });
        };
        c.run = [this, name, batch] { run_contention(name, batch); };
        cases_.push_back(std::move(c));
      }
    }
  }

  void plan_h2d() {
    Case c;
    c.kind = "h2d";
    c.label = "host-to-device copies, " + std::to_string(plan_.h2d_sizes.size()) + " sizes";
    c.done = [this] { return profile_.h2d.applicable && !profile_.h2d.pinned.empty(); };
    c.run = [this] {
      profile_.h2d = profiler::measure_h2d(device_, plan_.h2d_sizes, {plan_.warmup, plan_.repeats});
      for (size_t i = 0; i < profile_.h2d.pinned.size(); ++i) {
        const auto& pinned = profile_.h2d.pinned[i];
        const auto& pageable = profile_.h2d.pageable[i];
        char line[160];
        std::snprintf(line, sizeof line, "  %10.0f B: pinned %9.2f us (%6.2f GB/s), pageable %9.2f us (%6.2f GB/s)",
                      pinned.bytes, pinned.time_s * 1e6, pinned.bytes / pinned.time_s / 1e9,
                      pageable.time_s * 1e6, pageable.bytes / pageable.time_s / 1e9);
        log(line);
      }
      save();
    };
    cases_.push_back(std::move(c));
  }

  void plan_loader() {
    Case c;
    c.kind = "loader";
    c.label = "data loader, workers " + join_ints(std::vector<int64_t>(plan_.loader_workers.begin(),
                                                                      plan_.loader_workers.end()));
    c.done = [this] { return !profile_.loader.points.empty(); };
    c.run = [this] { run_loader(); };
    cases_.push_back(std::move(c));
  }

  void plan_collectives() {
    backend_ = device_.is_cuda() ? "nccl" : "gloo";
    if (!backend_available(backend_)) {
      throw std::runtime_error("this build of measure has no " + backend_ +
                               " backend (see measure/CMakeLists.txt): use --skip collectives");
    }
    if (!profile_.collectives.backend.empty() && profile_.collectives.backend != backend_) {
      throw UsageError("--resume: the profile's collectives use " + profile_.collectives.backend +
                       ", this run would use " + backend_);
    }
    profile_.collectives.backend = backend_;
    if (profile_.collectives.source.empty()) profile_.collectives.source = "measured";
    if (!options_.nccl_tests_log.empty()) {
      const CollectiveCurve curve = parse_nccl_tests_log(options_.nccl_tests_log);
      if (curve.op != "all_reduce") {
        throw UsageError("--nccl-tests-log " + options_.nccl_tests_log + " is a log of " + curve.op +
                         "_perf: the profile takes an all_reduce_perf log");
      }
      insert_curve(curve);
      profile_.collectives.source = "nccl-tests:" + options_.nccl_tests_log;
      log("all_reduce for " + std::to_string(curve.ranks) + " ranks from " + options_.nccl_tests_log +
          " (" + std::to_string(curve.points.size()) + " sizes)");
      save();
    }
    for (int ranks : plan_.rank_counts) {
      for (collectives::CollectiveOp op : collectives::kAllCollectiveOps) {
        Case c;
        c.kind = "collectives";
        const std::string name = collectives::op_name(op);
        c.label = backend_ + " " + name + ", " + std::to_string(ranks) + " rank" + (ranks > 1 ? "s" : "") +
                  ", " + std::to_string(plan_.collective_sizes.size()) + " sizes";
        c.done = [this, name, ranks] { return find_curve(name, ranks) != nullptr; };
        c.run = [this, op, ranks] { run_collective(op, ranks); };
        cases_.push_back(std::move(c));
      }
    }
  }

  // ---- running ----

  void execute() {
    std::vector<size_t> pending;
    for (size_t i = 0; i < cases_.size(); ++i) {
      if (!cases_[i].done()) pending.push_back(i);
    }
    log(std::to_string(cases_.size()) + " cases planned, " +
        std::to_string(cases_.size() - pending.size()) + " already in the profile, " +
        std::to_string(pending.size()) + " to measure; writing " + out_);
    if (pending.empty()) {
      log("nothing left to measure");
      return;
    }
    // Progress runs over the pending cases only.
    std::vector<Case> todo;
    for (size_t i : pending) todo.push_back(cases_[i]);
    Progress progress(todo);
    // The probe right before the first case and after the last. A profile that has its calibration
    // already (a finished earlier run) keeps it: it is the reference its cases were measured at,
    // and a later run adding cases, perhaps days later on a loaded machine, must not move it. That
    // run's own probe goes into measurement.resumed.
    const std::optional<Calibration> earlier = profile_.calibration;
    const double start_s = earlier ? 0.0 : time_probe("start");
    for (size_t i = 0; i < todo.size(); ++i) {
      log("[" + std::to_string(i + 1) + "/" + std::to_string(todo.size()) + "] " + todo[i].label +
          " (elapsed " + format_duration(progress.elapsed()) + ", left " + progress.left(i) + ")");
      // The DDP loop's 1-rank group is only for compute; the later cases' processes (rank
      // processes, Python) get the device to themselves.
      if (todo[i].kind != "compute") release_ddp_communicator();
      const auto t0 = Clock::now();
      todo[i].run();
      progress.finished(i, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    release_ddp_communicator();
    const double end_s = time_probe("end");  // after the last measurement
    if (resumed_) profile_.measurement.resumed.push_back({options_.command, utc_now_iso8601(), end_s});
    if (earlier) {
      note_drift_since(*earlier, end_s);
    } else {
      Calibration calibration;
      calibration.model = profiler::kProbeModel;
      calibration.batch = profiler::kProbeBatch;
      calibration.threads = plan_.threads;
      calibration.start_s = start_s;
      calibration.end_s = end_s;
      profile_.calibration = calibration;
    }
    save();
    log("done in " + format_duration(progress.elapsed()) + ": " + std::to_string(todo.size()) +
        " cases measured; profile " + out_);
  }

  // How this run's probe compares with the profile's calibration: the cases it added were timed on
  // a machine that fast.
  void note_drift_since(const Calibration& earlier, double probe_s) {
    if (earlier.threads != plan_.threads) {
      log("note: the profile's calibration probe ran with " + std::to_string(earlier.threads) +
          " threads, this run with " + std::to_string(plan_.threads) + ": the two probes are not comparable");
      return;
    }
    const double drift = probe_s / earlier.probe_s() - 1;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s: this run's probe %s is %+.1f%% against the profile's calibration (%s, kept)%s",
                  std::fabs(drift) > 0.1 ? "warning" : "note", format_ms(probe_s).c_str(), 100 * drift,
                  format_ms(earlier.probe_s()).c_str(),
                  std::fabs(drift) > 0.1 ? ": the machine's speed differs from when the profile was measured, and "
                                           "the cases added now carry that difference"
                                         : "");
    log(line);
  }

  // The calibration probe (profiler/probe.h) with the profile's threads on its device.
  double time_probe(const std::string& when) {
    const double seconds = profiler::run_probe(device_);
    release_cached_memory(device_);
    char line[160];
    std::snprintf(line, sizeof line, "calibration probe (%s): %s batch %lld, fused iteration, %d threads: %s",
                  when.c_str(), profiler::kProbeModel, static_cast<long long>(profiler::kProbeBatch), plan_.threads,
                  format_ms(seconds).c_str());
    log(line);
    return seconds;
  }

  // The 1-rank process group of the DDP loop body (ddp_iteration_s), made on first use; null when
  // this build has no backend for the device.
  Communicator* ddp_communicator() {
    if (ddp_communicator_) return ddp_communicator_.get();
    const std::string backend = device_.is_cuda() ? "nccl" : "gloo";
    if (!backend_available(backend)) {
      if (!ddp_unavailable_logged_) log("ddp_iteration_s: not measured (this build of measure has no " + backend + ")");
      ddp_unavailable_logged_ = true;
      return nullptr;
    }
    ddp_store_ = std::make_unique<TempDir>("trainsim-ddp-loop-");
    CommunicatorOptions options;
    options.backend = backend;
    options.device_index = device_.index;
    ddp_communicator_ =
        std::make_unique<Communicator>(make_file_store(ddp_store_->path() + "/filestore", 1), options);
    return ddp_communicator_.get();
  }

  void release_ddp_communicator() {
    ddp_communicator_.reset();
    ddp_store_.reset();
  }

  ModelProfile& model_entry(const std::string& name) {
    auto it = profile_.models.find(name);
    if (it == profile_.models.end()) {
      ModelProfile m = models::describe_model(name);
      m.memory_method = memory_method(device_);
      it = profile_.models.emplace(name, std::move(m)).first;
    }
    return it->second;
  }

  void run_compute(const std::string& name, int64_t batch) {
    ModelProfile& m = model_entry(name);
    if (m.oom_batch && batch >= *m.oom_batch) {
      log("  skipped: batch " + std::to_string(batch) + " is at or above the OOM boundary " +
          std::to_string(*m.oom_batch));
      return;
    }
    m.max_batch_tried = std::max<int64_t>(m.max_batch_tried.value_or(0), batch);
    try {
      const Repetition rep{plan_.warmup, plan_.repeats};
      const uint64_t seed = options_.seed + static_cast<uint64_t>(batch);
      profiler::BatchTimings t = profiler::measure_batch(m, batch, device_, rep, seed);
      std::string ddp_note;
      if (Communicator* communicator = ddp_communicator()) {
        const profiler::DdpLoopTimings ddp = profiler::measure_ddp_iteration(m, batch, device_, rep, seed, *communicator);
        // The loop body's excess over the fused iteration, from pairs timed back to back, on
        // this case's fused timing: not the difference of two timings made a minute apart.
        t.ddp_iteration_s = ddp.ratio_to_fused * t.iteration_s;
        m.ddp_buckets = ddp.buckets;
        char ratio[96];
        std::snprintf(ratio, sizeof ratio, " (%+.1f%% over the fused iteration timed in turn with it; alone %s)",
                      100.0 * (ddp.ratio_to_fused - 1.0), format_ms(ddp.iteration_s).c_str());
        ddp_note = ", DDP loop body on 1 rank " + format_ms(*t.ddp_iteration_s) + ratio + " in " +
                   std::to_string(ddp.buckets.size()) + " buckets";
      }
      profiler::record_batch(m, t);
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.1f%%", 100.0 * t.sum_of_parts_s() / t.iteration_s);
      log("  " + name + " batch " + std::to_string(batch) + ": sum of parts " +
          format_ms(t.sum_of_parts_s()) + " vs fused iteration " + format_ms(t.iteration_s) + " (" +
          percent + " of fused)" + ddp_note + ", peak memory " + format_gib(t.peak_memory_bytes));
      warn_page_faults(name, t);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      release_cached_memory(device_);
      m.oom_batch = std::min<int64_t>(m.oom_batch.value_or(batch), batch);
      log("  out of memory at batch " + std::to_string(batch) + " (" + first_line(e.what()) +
          "): recorded as the OOM boundary; larger batches of " + name + " are skipped");
    }
    save();
  }

  // The fused iteration's page faults where they take a share of its timing worth a warning.
  void warn_page_faults(const std::string& name, const profiler::BatchTimings& t) {
    const double faults = t.minor_faults.value_or(0);
    const double share = profiler::fault_share(faults, profile_.machine.page_fault_s, t.iteration_s);
    if (share < profiler::kFaultShareWarning) return;
    char line[512];
    std::snprintf(line, sizeof line,
                  "  warning: %s batch %lld: %.0f page faults per fused iteration, about %.0f%% of its %s at %.2f us "
                  "each: the timing measures how the allocator maps memory as much as the compute, and a "
                  "script whose allocations differ may run faster or slower (docs/MEASURE.md \"Page faults\")",
                  name.c_str(), static_cast<long long>(t.batch), faults, 100 * share, format_ms(t.iteration_s).c_str(),
                  profile_.machine.page_fault_s * 1e6);
    log(line);
  }

  // Median fused iteration of rank 0 while k processes run it at once at `batch`, k = 1..N; the
  // profile gets all points of the batch or none (a --resume measures the whole case again).
  void run_contention(const std::string& name, int64_t batch) {
    const ModelProfile& m = model_entry(name);
    if (m.oom_batch && batch >= *m.oom_batch) {
      log("  skipped: batch " + std::to_string(batch) + " is at or above the OOM boundary " +
          std::to_string(*m.oom_batch));
      return;
    }
    profiler::ContentionJob job;
    job.model = name;
    job.batch = batch;
    job.warmup = plan_.warmup;
    job.repeats = plan_.repeats;
    job.threads = plan_.threads;
    job.seed = options_.seed + static_cast<uint64_t>(job.batch);
    job.timeout_s = kRankTimeoutSeconds;
    job.precision = options_.precision;
    job.memory_format = options_.memory_format;
    std::vector<ContentionPoint> points;
    const std::vector<double> medians = profiler::run_contention_rounds(
        self_executable(), job, plan_.contention_ranks, /*rounds=*/1, kLaunchTimeout, nullptr);
    for (int k = 1; k <= plan_.contention_ranks; ++k) {
      const double seconds = medians[static_cast<size_t>(k - 1)];
      points.push_back(ContentionPoint{k, job.batch, seconds});
      char ratio[32];
      // slowdown(k) = iteration_s(k) / iteration_s(1)
      std::snprintf(ratio, sizeof ratio, "%.2fx", seconds / points.front().iteration_s);
      log("  " + std::to_string(k) + " process" + (k > 1 ? "es" : "") + ": " + format_ms(seconds) +
          " per fused iteration of rank 0 (" + ratio + " the 1-process time)");
    }
    // Points ordered by (batch, ranks), whatever order the cases ran in.
    std::vector<ContentionPoint>& all = model_entry(name).host_contention;
    all.insert(all.end(), points.begin(), points.end());
    std::stable_sort(all.begin(), all.end(), [](const ContentionPoint& a, const ContentionPoint& b) {
      return a.batch != b.batch ? a.batch < b.batch : a.ranks < b.ranks;
    });
    save();
  }

  void run_loader() {
    data::ImageSet images;
    if (options_.data_dir.empty()) {
      log("  no --data DIR: synthetic images (CIFAR-10 format); the profile says data: synthetic");
      images = data::synthetic_cifar10(plan_.loader_samples, options_.seed);
    } else {
      images = data::read_cifar10_train(options_.data_dir);
      log("  CIFAR-10 from " + options_.data_dir + ": " + std::to_string(images.size()) + " images");
    }
    profiler::LoaderBenchOptions lo;
    lo.batch = plan_.loader_batch;
    lo.samples = std::min<int64_t>(plan_.loader_samples, images.size());
    lo.epochs = plan_.loader_epochs;
    lo.seed = options_.seed;
    profile_.loader = profiler::measure_loader(images, plan_.loader_workers, lo, [](const LoaderPoint& p) {
      char line[128];
      std::snprintf(line, sizeof line, "  %d worker%s: %.0f samples/s, start-up %.4f s", p.workers,
                    p.workers == 1 ? "" : "s", p.samples_per_s, p.startup_s.value_or(0.0));
      log(line);
    });
    save();
  }

  void run_collective(collectives::CollectiveOp op, int ranks) {
    if (device_.is_cuda()) release_cached_memory(device_);  // the rank processes need the memory
    collectives::CollectiveJob job;
    job.backend = backend_;
    job.op = op;
    job.sizes = plan_.collective_sizes;
    job.warmup = plan_.collective_warmup;
    job.repeats = plan_.collective_repeats;
    job.threads = 1;  // the collective's own threads do the work
    job.timeout_s = kRankTimeoutSeconds;
    const collectives::CollectiveResult result =
        collectives::run_collective(self_executable(), job, ranks, kLaunchTimeout);
    insert_curve(result.curve);
    std::cerr << collectives::curve_table(result.curve);
    save();
  }

  // measure/pytorch/profile_torch.py with the profile's device, threads, batches, warm-up, repeats and
  // loader settings; its JSON becomes the profile's pytorch section. loader_only: its DataLoader
  // alone, at the loader batch and the plan's others, replacing the section's loader.
  void run_pytorch(bool loader_only) {
    if (device_.is_cuda()) release_cached_memory(device_);  // the Python process needs the memory
    TempDir folder("trainsim-pytorch-");
    profiler::PytorchRequest q;
    q.python = *pytorch_python_;
    q.script = pytorch_script_;
    q.data_dir = options_.data_dir;
    if (q.data_dir.empty()) {  // Python reads files: the synthetic images, written out
      q.data_dir = folder.path() + "/data";
      log("  no --data DIR: synthetic CIFAR-10-format files for Python in " + q.data_dir);
      data::write_synthetic_cifar10_dir(q.data_dir, plan_.loader_samples, kPytorchTestImages, options_.seed);
    }
    q.device = device_.kind_name();
    q.threads = plan_.threads;
    q.batches = plan_.batches;
    q.models = {models::kResnet18Cifar};  // the reference trainer's model
    q.warmup = plan_.warmup;
    q.repeats = plan_.repeats;
    q.loader_batch = plan_.loader_batch;
    q.loader_at_batches = plan_.loader_at_batches;
    q.loader_only = loader_only;
    q.loader_workers = plan_.loader_workers;
    q.cudnn_benchmark = options_.cudnn_benchmark.value_or(true);
    q.precision = precision_name(options_.precision);
    q.memory_format = memory_format_name(options_.memory_format);
    // What starting the workers costs, with as many training processes at once as the host
    // contention case runs (CPU: ranks share the host; a GPU host's ranks each have a device);
    // none with --quick.
    q.fork_ranks.clear();
    if (plan_.pytorch_fork) {
      const int fork_ranks = device_.is_cuda() ? 1 : std::max(1, plan_.contention_ranks);
      for (int k = 1; k <= fork_ranks; ++k) q.fork_ranks.push_back(k);
    }
    q.gil = plan_.pytorch_gil;
    q.out = folder.path() + "/pytorch.json";
    const std::vector<std::string> command = profiler::pytorch_profile_command(q);
    log("  " + join_command_line(static_cast<int>(command.size()), to_c_strings(command).data()));
    const int status = run_program(command, kLaunchTimeout);
    if (status != 0) {
      throw std::runtime_error(pytorch_script_ + " exited with status " + std::to_string(status) +
                               " (its error is above); the profile keeps every other case, --resume retries this one");
    }
    PytorchProfile pytorch = profiler::read_pytorch_profile(q.out);
    if (loader_only) {
      // The whole loader from this one run (its batch and the others, measured alike, the same
      // day); the section keeps the rest.
      if (pytorch.loader.batch != profile_.pytorch->loader.batch || pytorch.loader.points.empty() ||
          !has_loader_batches(pytorch.loader)) {
        throw std::runtime_error(pytorch_script_ + " --loader-only wrote no DataLoader rates for some of the batches " +
                                 std::to_string(plan_.loader_batch) + "," + join_batches(plan_.loader_at_batches));
      }
      profile_.pytorch->loader = std::move(pytorch.loader);
      log("  the DataLoader at batches " + std::to_string(plan_.loader_batch) + "," +
          join_batches(plan_.loader_at_batches) + " replaces the pytorch section's");
      save();
      return;
    }
    char line[160];
    std::snprintf(line, sizeof line, "  torch %s, %d threads, probe %s, %zu loader points, %zu models",
                  pytorch.torch.c_str(), pytorch.threads, format_ms(pytorch.probe_s).c_str(),
                  pytorch.loader.points.size(), pytorch.models.size());
    log(line);
    profile_.pytorch = std::move(pytorch);
    save();
  }

  static std::vector<const char*> to_c_strings(const std::vector<std::string>& strings) {
    std::vector<const char*> out;
    for (const auto& s : strings) out.push_back(s.c_str());
    return out;
  }

  const CollectiveCurve* find_curve(const std::string& op, int ranks) const {
    for (const auto& c : profile_.collectives.curves) {
      if (c.op == op && c.ranks == ranks) return &c;
    }
    return nullptr;
  }

  // Replaces the curve of the same op and ranks, or inserts it keeping the curves ordered by
  // (ranks, op) whatever order the cases ran in.
  void insert_curve(const CollectiveCurve& curve) {
    auto& curves = profile_.collectives.curves;
    const auto key = [](const CollectiveCurve& c) { return std::make_pair(c.ranks, c.op); };
    curves.erase(std::remove_if(curves.begin(), curves.end(),
                                [&](const CollectiveCurve& c) { return key(c) == key(curve); }),
                 curves.end());
    curves.insert(std::upper_bound(curves.begin(), curves.end(), curve,
                                   [&](const CollectiveCurve& a, const CollectiveCurve& b) { return key(a) < key(b); }),
                  curve);
  }

  void save() {
    const fs::path parent = fs::path(out_).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    write_profile_atomic(profile_, out_);
    if (!profile_.collectives.curves.empty()) {
      write_file_atomic(table_path_, collectives::collectives_table(profile_.collectives));
    }
  }

  ProfileOptions options_;
  Device device_;
  ProfilePlan plan_;
  Profile profile_;
  bool resumed_ = false;  // --resume of a profile an earlier run started: its command is kept
  std::string out_;
  std::string table_path_;
  std::string backend_;
  std::vector<Case> cases_;
  std::optional<std::string> pytorch_python_;  // --pytorch resolved; nullopt: no pytorch section
  std::string pytorch_script_;
  // The DDP loop's 1-rank group; the store folder outlives the group.
  std::unique_ptr<TempDir> ddp_store_;
  std::unique_ptr<Communicator> ddp_communicator_;
  bool ddp_unavailable_logged_ = false;
};

}  // namespace

int profile_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  std::optional<ProfileOptions> options = parse_profile_options(args);
  if (!options) return 0;
  options->command = "measure " + join_command_line(argc - 1, argv + 1);
  return ProfileRun(std::move(*options)).run();
}

}  // namespace trainsim::measure
