#include "train/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "hw/collective_model.h"
#include "hw/curve.h"
#include "io/config.h"
#include "train/ddp_graph.h"
#include "train/dp_graph.h"
#include "train/epoch_runner.h"
#include "train/gil_model.h"
#include "train/graph_inputs.h"
#include "train/host_contention.h"
#include "train/batch_curve.h"
#include "train/loader_model.h"
#include "train/memory_model.h"
#include "train/step_model.h"
#include "train/training_graph.h"

namespace trainsim {
namespace {

using des::SimTime;
using train::TrainingGraph;

// Device 0's busy times of one iteration, from its ops (tag = iteration).
struct IterationStats {
  SimTime compute = 0;     // device 0 compute stream busy
  SimTime copy = 0;        // device 0 copy engine busy (H2D)
  SimTime comm = 0;        // device 0 comm stream busy
  SimTime exposed = 0;     // part of `comm` not covered by compute
  SimTime collective = 0;  // part of `comm` spent in collectives
  SimTime sync_bn = 0;     // part of `collective` in SyncBatchNorm statistics exchanges
  double bus_bytes = 0;    // nccl-tests bus bytes of those collectives
};

// totals += s, with totals.compute holding compute + copy (device 0 busy on its own work).
void add_to_totals(IterationStats& totals, const IterationStats& s) {
  totals.compute += s.compute + s.copy;
  totals.comm += s.comm;
  totals.exposed += s.exposed;
  totals.collective += s.collective;
  totals.sync_bn += s.sync_bn;
  totals.bus_bytes += s.bus_bytes;
}

struct Interval {
  SimTime start;
  SimTime end;
  int32_t tag;
};

// The simulated iterations of an epoch: all but the skipped range [skipped_from, skipped_from +
// skipped), numbered without it. A skipped iteration repeats the cycle just before that range,
// so the stats of an epoch of millions of iterations fit in its few hundred simulated ones.
struct SimulatedIndex {
  int64_t skipped_from = 0;
  int64_t skipped = 0;
  int64_t cycle = 1;
  int64_t of_simulated(int64_t tag) const { return tag < skipped_from ? tag : tag - skipped; }
};

// Device 0's per-iteration stats and the trace's records, taken from the ops in id order, a done
// prefix at a time (retire), so that an exact epoch can release its finished ops as it goes and
// hold only those in flight. Per simulated iteration (SimulatedIndex::of_simulated of the tag),
// or, for an exact epoch (Totals), only the open iterations', each added to the epoch's totals in
// iteration order once no op of it is left (the same sums, in the same order, as adding up the
// per-iteration stats afterwards), so memory does not grow with the epoch.
class OpStatsCollector {
 public:
  enum class Keep { kPerIteration, kTotals };
  OpStatsCollector(const TrainingGraph& g, int64_t iterations, const SimulatedIndex& index, int trace_iterations,
                   Keep keep)
      : g_(g), iterations_(iterations), index_(index), trace_iterations_(trace_iterations), keep_(keep) {
    if (keep == Keep::kPerIteration) stats_.resize(static_cast<std::size_t>(iterations - index.skipped));
  }

  // Takes the ops [first, last), all done and not taken before, in id order.
  void retire(des::OpId first, des::OpId last) {
    for (des::OpId id = first; id < last; ++id) take(id);
    // A comm interval's exposure needs every compute interval that starts before it ends: all
    // taken once no held op that has started on device 0's compute stream started before its end
    // (those not started yet start at or after now, which is after any finished op's end).
    // An iteration is complete (kTotals) once no held op and no unsettled comm interval belongs
    // to it; take() skips ops without an iteration's tag.
    SimTime compute_from = g_.ops.engine().now();
    SimTime comm_from = compute_from;
    int64_t open_from = iterations_;
    for (des::OpId id = last; id < g_.ops.op_count(); ++id) {
      if (g_.ops.tag(id) >= 0) open_from = std::min<int64_t>(open_from, g_.ops.tag(id));
      const SimTime start = g_.ops.start_time(id);
      if (start < 0) continue;
      for (des::ResourceId r : g_.ops.resources(id)) {
        if (r == g_.device0_compute) compute_from = std::min(compute_from, start);
        if (r == g_.device0_comm) comm_from = std::min(comm_from, start);
      }
    }
    settle(compute_from);
    if (keep_ == Keep::kTotals) {
      for (const Interval& c : pending_comm_) open_from = std::min<int64_t>(open_from, c.tag);
      close_before(open_from);
    }
    // Compute intervals that end before every comm interval still to come (pending, held, or
    // starting after now) can cover none of them.
    for (const Interval& c : pending_comm_) comm_from = std::min(comm_from, c.start);
    std::size_t stale = 0;  // settle left compute_ sorted by start (and so by end)
    while (stale < compute_.size() && compute_[stale].end <= comm_from) ++stale;
    compute_.erase(compute_.begin(), compute_.begin() + static_cast<std::ptrdiff_t>(stale));
  }

  // Every op held was retired: the remaining exposures. Per iteration (kPerIteration).
  std::vector<IterationStats> take_stats() {
    settle(std::numeric_limits<SimTime>::max());
    return std::move(stats_);
  }
  // The same, summed over the epoch's iterations in order (kTotals).
  IterationStats take_totals() {
    settle(std::numeric_limits<SimTime>::max());
    close_before(iterations_);
    return totals_;
  }
  // The records of iterations [0, trace_iterations), in start order (ties: id order).
  std::vector<OpRecord> take_trace() {
    std::stable_sort(trace_.begin(), trace_.end(),
                     [](const OpRecord& a, const OpRecord& b) { return a.start_ns < b.start_ns; });
    return std::move(trace_);
  }

 private:
  void take(des::OpId id) {
    const int32_t tag = g_.ops.tag(id);
    if (tag < 0 || tag >= iterations_ || g_.ops.duration(id) == 0) return;
    if (tag < trace_iterations_) {
      const train::OpLabel& label = g_.label(g_.ops.label(id));
      for (des::ResourceId r : g_.ops.resources(id)) {
        trace_.push_back(OpRecord{g_.resource_name(r), label.name, label.category, g_.ops.start_time(id),
                                  g_.ops.end_time(id), tag});
      }
    }
    const SimTime d = g_.ops.elapsed(id);  // busy time: longer than the work when cores are shared
    // An op tagged inside the skipped range (the runner retags pending ops past it, so none is
    // expected) counts as compute cover only: its iteration's stats are the repeated cycle's.
    const bool skipped = tag >= index_.skipped_from && tag < index_.skipped_from + index_.skipped;
    IterationStats discarded;
    IterationStats& s = skipped ? discarded : stats_of(index_.of_simulated(tag));
    const Interval span{g_.ops.start_time(id), g_.ops.end_time(id), tag};
    for (des::ResourceId r : g_.ops.resources(id)) {
      if (r == g_.device0_compute) {
        s.compute += d;
        compute_.push_back(span);
      } else if (r == g_.device0_copy) {
        s.copy += d;
      } else if (r == g_.device0_comm) {
        s.comm += d;
        if (!skipped) pending_comm_.push_back(span);
        const train::OpLabel& label = g_.label(g_.ops.label(id));
        if (label.collective) {
          s.collective += d;
          s.bus_bytes += label.bus_bytes;
        }
        if (label.sync_batchnorm) s.sync_bn += d;
      }
    }
  }

  // Exposed communication of the pending comm intervals that end by `compute_known`: each minus
  // its overlap with the compute intervals. One stream never overlaps itself, so sorted by start
  // the compute intervals are sorted by end too.
  void settle(SimTime compute_known) {
    const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
    std::sort(compute_.begin(), compute_.end(), by_start);
    std::size_t kept = 0;
    for (const Interval& c : pending_comm_) {
      if (c.end > compute_known) {
        pending_comm_[kept++] = c;
        continue;
      }
      SimTime covered = 0;
      auto it = std::upper_bound(compute_.begin(), compute_.end(), c.start,
                                 [](SimTime t, const Interval& x) { return t < x.end; });
      for (; it != compute_.end() && it->start < c.end; ++it) {
        covered += std::min(c.end, it->end) - std::max(c.start, it->start);
      }
      stats_of(index_.of_simulated(c.tag)).exposed += (c.end - c.start) - covered;
    }
    pending_comm_.resize(kept);
  }

  IterationStats& stats_of(int64_t simulated) {
    if (keep_ == Keep::kPerIteration) return stats_[static_cast<std::size_t>(simulated)];
    return open_[simulated];
  }

  // Adds the open iterations before `end` to the totals, in order.
  void close_before(int64_t end) {
    while (!open_.empty() && open_.begin()->first < end) {
      add_to_totals(totals_, open_.begin()->second);
      open_.erase(open_.begin());
    }
  }

  const TrainingGraph& g_;
  int64_t iterations_;
  SimulatedIndex index_;
  int trace_iterations_;
  Keep keep_;
  std::vector<IterationStats> stats_;          // kPerIteration
  std::map<int64_t, IterationStats> open_;     // kTotals: iterations with ops still to come
  IterationStats totals_;                      // kTotals: compute holds compute + copy
  std::vector<Interval> compute_;       // taken compute intervals that may still cover a comm one
  std::vector<Interval> pending_comm_;  // taken comm intervals whose exposure is not known yet
  std::vector<OpRecord> trace_;
};

void add_note(std::vector<std::string>& notes, std::string note) {
  if (note.empty() || std::find(notes.begin(), notes.end(), note) != notes.end()) return;
  notes.push_back(std::move(note));
}

std::string printf_string(const char* format, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, format, a, b, c);
  return text;
}

void validate(const RunSpec& spec) {
  if (spec.gpus < 1) throw std::invalid_argument("gpus must be >= 1");
  if (spec.batch_per_gpu < 1) throw std::invalid_argument("batch_per_gpu must be >= 1");
  if (spec.train_samples < 1) throw std::invalid_argument("train_samples must be >= 1");
  if (spec.loader_workers < 0) throw std::invalid_argument("loader workers must be >= 0");
  if (!(spec.dp_host_per_replica_s >= 0)) throw std::invalid_argument("dp_host_per_replica_s must be >= 0");
}

// The host-to-device copy curve the loop pays: pageable memory unless the loader pins its
// batches (DataLoader pin_memory=True; the course's scripts and both trainers do not); the other
// curve when the right one was not measured. None when the profile's device is the host.
std::unique_ptr<hw::MeasuredCurve> h2d_curve(const Profile& profile, bool pin_memory,
                                             std::vector<std::string>& notes) {
  if (!profile.h2d.applicable) {
    add_note(notes, "no host-to-device copy: the profile's device is the host (h2d not applicable)");
    return nullptr;
  }
  const std::vector<CurvePoint>& wanted = pin_memory ? profile.h2d.pinned : profile.h2d.pageable;
  const std::vector<CurvePoint>& other = pin_memory ? profile.h2d.pageable : profile.h2d.pinned;
  if (wanted.empty() && other.empty()) throw std::invalid_argument("profile has no host-to-device copy curve");
  if (wanted.empty()) {
    add_note(notes, pin_memory ? "h2d: no pinned-memory curve; the pageable one is used"
                               : "h2d: no pageable-memory curve; the pinned one is used");
    return std::make_unique<hw::MeasuredCurve>(other);
  }
  return std::make_unique<hw::MeasuredCurve>(wanted);
}

// Loader rates. A worker builds batches at the per-worker rate measured with k workers, k the
// workers loading at once on one host (a node's N ranks x W for DDP, W for DataParallel) capped
// at the largest measured count and at the cores, the simulated node's (beyond them its
// host-core pool time-slices the workers) and the profiled machine's (a rate measured with more
// workers than it has cores has its time-slicing in it).
void set_loader_rates(train::GraphInputs& in, const train::LoaderModel& loader, bool ddp, int node_ranks,
                      std::initializer_list<int> cores, std::vector<std::string>& notes) {
  const int n = node_ranks;
  const int w = in.workers;
  if (w == 0) {
    in.inline_rate = loader.samples_per_s(0);
    add_note(notes, loader.note(0));
    return;
  }
  const int loading = ddp ? n * w : w;
  int k = std::min(loading, loader.max_measured_workers());
  for (int c : cores) {
    if (c > 0) k = std::min(k, c);
  }
  k = std::max(k, 1);
  in.loader_rate_per_worker = loader.samples_per_s(k) / k;
  add_note(notes, loader.note(k));
  if (loading > 1) {
    add_note(notes, printf_string("loader: %.0f workers load at once, each at %.0f samples/s (the "
                                  "per-worker rate measured with %.0f)",
                                  loading, in.loader_rate_per_worker, k));
  }
}

// Non-persistent workers start again every epoch: the measured start-up of a worker count.
void set_loader_startup(train::GraphInputs& in, const train::LoaderModel& loader,
                        bool persistent, std::vector<std::string>& notes) {
  if (in.workers == 0) return;
  if (persistent) {
    add_note(notes, "loader: persistent workers: no start-up in the timed epoch");
    return;
  }
  const std::optional<double> startup = loader.startup_s(in.workers);
  if (!startup) {
    add_note(notes, "loader: worker start-up not measured (no startup_s): none simulated");
    return;
  }
  in.loader_startup_ns = des::to_ns(*startup);
  add_note(notes, printf_string("loader: workers start %.1f ms into every epoch (non-persistent, measured)",
                                *startup * 1e3));
}

// A fork figure (ForkPoint::iter_s, first_batch_s or cow_s) at `batch` for `processes` training
// processes starting their workers at once: linear in the batch between the measured batches
// (held outside them), then linear in the process count between the measured counts that fit
// the host's cores (`fit`; held above the largest, and `held` set).
double fork_figure(const ForkCost& fork, const std::vector<int64_t>& batches, std::vector<double> ForkPoint::*field,
                   int64_t batch, int processes, int fit, bool& held) {
  std::vector<std::pair<int, double>> at;  // (ranks, value at the batch)
  for (const ForkPoint& p : fork.points) {
    if (p.ranks > fit && !at.empty()) continue;
    at.push_back({p.ranks, train::interpolate_in_batch(batches, p.*field, static_cast<double>(batch),
                                                       train::BatchExtrapolation::kHoldNearest)});
  }
  if (processes >= at.back().first) {
    held = held || processes > at.back().first;
    return at.back().second;
  }
  for (std::size_t i = 1; i < at.size(); ++i) {
    if (processes > at[i].first) continue;
    const auto& [lo_n, lo_v] = at[i - 1];
    const auto& [hi_n, hi_v] = at[i];
    return lo_v + (hi_v - lo_v) * (processes - lo_n) / static_cast<double>(hi_n - lo_n);
  }
  return at.front().second;
}

// PyTorch's non-persistent workers, started at every epoch's iter(loader), as they cost the
// training processes (measured by profile_torch.py in a training process, with 1..K processes at once):
// the fork, the workers' start-up (the first batch beyond building one), the copy-on-write faults
// of the first iteration. Replaces the loader-only start-up.
void set_fork_costs(train::GraphInputs& in, const ForkCost& fork, const std::vector<int64_t>& batches,
                    int64_t batch, int processes, const Profile& profile, std::vector<std::string>& notes) {
  const MachineInfo& m = profile.machine;
  const int fit = m.cpu_cores > 0 ? std::max(1, m.cpu_cores / std::max(1, m.threads))
                                  : std::numeric_limits<int>::max();
  bool held = false;
  // iter() forks the W workers one after another: the measured fork of fork.workers, scaled.
  const double fork_s = fork_figure(fork, batches, &ForkPoint::iter_s, batch, processes, fit, held) *
                        in.workers / fork.workers;
  const double first_s = fork_figure(fork, batches, &ForkPoint::first_batch_s, batch, processes, fit, held);
  const double cow_s = fork_figure(fork, batches, &ForkPoint::cow_s, batch, processes, fit, held);
  // startup = the first batch beyond building one batch at a worker's rate.
  const double startup_s = std::max(0.0, first_s - static_cast<double>(batch) / in.loader_rate_per_worker);
  in.fork_ns = des::to_ns(fork_s);
  in.cow_ns = des::to_ns(cow_s);
  in.loader_startup_ns = des::to_ns(startup_s);
  add_note(notes, printf_string("loader: every epoch starts its workers: fork %.1f ms, worker start-up %.1f ms, "
                                "copy-on-write in the first iteration %.1f ms (measured in a training process",
                                fork_s * 1e3, startup_s * 1e3, cow_s * 1e3) +
                      printf_string(", %.0f at once)", std::min(processes, fork.points.back().ranks)));
  if (held) {
    add_note(notes, printf_string("loader start-up measured with up to %.0f processes at once; %.0f use that",
                                  fork.points.back().ranks, processes));
  }
}

// Whose loop and loader a prediction uses (RunSpec::trainer), from what the profile measured.
struct Pipeline {
  train::LoopTimes loop;
  const LoaderProfile* loader = nullptr;
  const ForkCost* fork = nullptr;  // PyTorch's worker start-up as the training process pays it
};

Pipeline pipeline_for(const Profile& profile, const ModelProfile& model, const RunSpec& spec,
                      std::vector<std::string>& notes) {
  const bool ddp = spec.strategy == Strategy::kDdp;
  // The DataLoader is the trainer's on this machine, whatever the model: PyTorch's when Python
  // measured it, even for a model whose loop it did not time.
  const LoaderProfile* loader = &profile.loader;
  if (spec.trainer == Trainer::kPytorch) {
    const PytorchProfile* py = profile.pytorch ? &*profile.pytorch : nullptr;
    if (py && !py->loader.points.empty()) {
      const auto it = py->models.find(model.name);
      if (it != py->models.end()) {
        add_note(notes, "trainer pytorch: the reference trainer's loop and DataLoader as measured "
                        "from Python (torch " + py->torch + ")");
        return Pipeline{train::LoopTimes{it->second.batches,
                                         ddp ? it->second.ddp_iteration_s : it->second.iteration_s,
                                         ddp ? "PyTorch's DDP loop on 1 rank" : "PyTorch's loop"},
                        &py->loader, it->second.fork ? &*it->second.fork : nullptr};
      }
      loader = &py->loader;
      if (model.source.rfind("trace:", 0) == 0) {
        // A traced step is the user's own PyTorch loop, DDP and all.
        add_note(notes, "trainer pytorch: PyTorch's DataLoader as measured from Python (torch " + py->torch +
                            "), the loop of " + model.name + " its traced step (its worker start-up not measured)");
        return Pipeline{train::LoopTimes{model.batches, model.iteration_s, "the traced step"}, loader};
      }
      add_note(notes, "trainer pytorch: the profile's pytorch section did not time " + model.name +
                          "'s loop: PyTorch's DataLoader with the C++ trainer's loop standing in");
    } else {
      add_note(notes, "trainer pytorch: the profile has no pytorch section for " + model.name +
                          " (measure with Python available): the C++ trainer's loop and loader stand in");
    }
  }
  if (ddp && !model.ddp_iteration_s.empty()) {
    return Pipeline{train::LoopTimes{model.batches, model.ddp_iteration_s, "the C++ DDP loop on 1 rank"}, loader};
  }
  if (ddp) {
    add_note(notes, "no ddp_iteration_s in the profile: the fused iteration without the DDP reducer "
                    "stands for the loop");
  }
  return Pipeline{train::fused_loop(model), loader};
}

// DataParallel's host mechanisms from the profile's pytorch section (GraphInputs::dp_*), where
// the reference trainer runs it and Python measured them; a note says which were priced.
void set_dp_host_mechanisms(train::GraphInputs& in, const Profile& profile, const ModelProfile& model,
                            const RunSpec& spec, std::vector<std::string>& notes) {
  if (spec.trainer != Trainer::kPytorch || !profile.pytorch) return;
  const PytorchProfile& py = *profile.pytorch;
  const auto it = py.models.find(model.name);
  if (it == py.models.end()) return;
  const PytorchLoop& loop = it->second;
  std::vector<std::string> priced;
  if (loop.replicate_s) {
    in.dp_replicate_per_replica_ns = des::to_ns(*loop.replicate_s);
    priced.push_back(printf_string("replicate's module copies %.3f ms per replica", *loop.replicate_s * 1e3));
  }
  if (loop.forward_calls && py.gil) {
    const train::GilCosts gil = train::gil_costs(*py.gil);
    in.dp_forward_calls = static_cast<double>(*loop.forward_calls);
    in.dp_python_call_ns = des::to_ns(gil.python_call_s);
    in.dp_gil_handoff_ns = des::to_ns(gil.handoff_s);
    priced.push_back(std::to_string(*loop.forward_calls) + " calls into ATen per replica's forward under the GIL" +
                     printf_string(" (%.1f us of Python each, %.1f us to hand the GIL over)", gil.python_call_s * 1e6,
                                   gil.handoff_s * 1e6));
  }
  if (priced.empty()) {
    if (spec.dp_host_per_replica_s > 0) return;  // a fit priced DataParallel's Python as one cost
    add_note(notes, "dp: no measure of DataParallel's host mechanisms in the profile (pytorch: replicate_s, "
                    "forward_calls, gil) and no fitted dp_host_per_replica: the replicas' Python is not priced");
    return;
  }
  std::string text = "dp: DataParallel's host mechanisms as measured from Python (docs/HOST.md): ";
  for (std::size_t i = 0; i < priced.size(); ++i) text += (i ? "; " : "") + priced[i];
  add_note(notes, text + "; scatter's and gather's Python and parallel_apply's thread start-up not measured");
}

// Why `spec` cannot run on the profiled kind of machine, or nullopt.
std::optional<std::string> not_runnable(const Profile& profile, const RunSpec& spec) {
  if (spec.topology) {
    if (spec.strategy == Strategy::kDp && spec.gpus > spec.topology->gpus_per_node) {
      return "DataParallel is one process: at most the " + std::to_string(spec.topology->gpus_per_node) +
             " GPUs of one node of the topology";
    }
  }
  // A measured run joined by --compare is not checked by the config's sweep.
  if (std::string problem = gpu_count_problem(spec.topology, spec.gpus); !problem.empty()) return problem;
  if (profile.machine.device_kind != "cpu") return std::nullopt;
  if (spec.strategy == Strategy::kDp && spec.gpus >= 2) {
    return "DataParallel over " + std::to_string(spec.gpus) +
           " devices needs CUDA devices; the profile's device is the CPU";
  }
  if (spec.strategy == Strategy::kDdp && spec.sync_batchnorm) {
    return "SyncBatchNorm needs CUDA tensors (PyTorch raises an error for CPU inputs)";
  }
  return std::nullopt;
}

// The logical CPUs of the simulated node: the topology's where it gives them, else the profiled
// machine's, said as assumed where the simulated node is not the profiled machine (a topology, or
// more GPUs than it has); 0 where neither says.
int node_cpu_cores(const Profile& profile, const RunSpec& spec, std::vector<std::string>& notes) {
  const MachineInfo& m = profile.machine;
  if (spec.topology && spec.topology->cpu_cores > 0) return spec.topology->cpu_cores;
  if (m.cpu_cores <= 0 || m.device_kind == "cpu") return m.cpu_cores;
  if (spec.topology) {
    add_note(notes, printf_string("host cores: assumed the profiled machine's %.0f logical CPUs per node (the "
                                  "topology does not give its nodes': topology: cpu_cores:)",
                                  m.cpu_cores));
  } else if (spec.gpus > m.device_count) {
    add_note(notes, printf_string("host cores: assumed the profiled machine's %.0f logical CPUs for %.0f GPUs "
                                  "(it has %.0f; give topology: cpu_cores: for another node)",
                                  m.cpu_cores, spec.gpus, m.device_count));
  }
  return m.cpu_cores;
}

// The node's `cores` as a processor-sharing pool, and what each resource draws from it. One
// simulated rank standing for `copies` identical ones has their share of the cores.
void share_host_cores(train::GraphInputs& in, TrainingGraph& graph, const Profile& profile, int cores,
                      int processes, int copies, std::vector<std::string>& notes) {
  const MachineInfo& m = profile.machine;
  if (cores <= 0) {
    add_note(notes, "the profile does not give the host's core count: cores not shared in the simulation");
    return;
  }
  in.host_pool = graph.ops.add_pool(static_cast<double>(cores) / copies);
  if (m.device_kind != "cpu") return;
  const int threads = std::max(1, m.threads);
  in.compute_cores = threads;
  in.comm_cores = 1;
  if (processes * threads > cores) {
    add_note(notes, printf_string("host cores: %.0f processes x %.0f threads on %.0f cores are "
                                  "time-shared (processor sharing)",
                                  processes, threads, cores));
  }
  add_note(notes, "cpu: collectives (Gloo) and loader workers run on the same cores as compute");
}

// Peak memory of the most loaded device at per-device batch `batch` and whether it fits.
void predict_memory(SimResult& result, const Profile& profile, const ModelProfile& model,
                    int64_t batch, double extra_device0_bytes, int processes) {
  const train::MemoryModel memory(model);
  const int n = processes;
  const double replica_peak = memory.replica_peak_bytes(batch);
  if (model.is_missing("peak_memory_bytes")) {
    add_note(result.notes, "memory/OOM: model " + model.name + " has no measured peak memory (missing from its " +
                               (model.source.rfind("trace:", 0) == 0 ? "trace" : "profile") +
                               "): the OOM column counts parameters, gradients, momentum and buffers only");
  } else if (!memory.measured()) {
    add_note(result.notes, "memory: no peak measured; static memory (3 x parameters + buffers) only");
  }
  if (model.is_missing("oom_batch")) {
    add_note(result.notes, "memory/OOM: model " + model.name + " was never run out of memory (oom_batch missing): "
                           "only the predicted peak decides what fits");
  }
  if (model.is_missing("layer forward split")) {
    add_note(result.notes, "model " + model.name + ": the forward is one unsplit layer (layer forward split "
                           "missing): its total is measured, its per-layer timeline is not");
  }
  // A CPU profile's ranks share host memory: peak = N x per-rank.
  const bool shared = profile.machine.device_kind == "cpu" && n > 1;
  const auto device_peak = [&](double replica) { return (shared ? n : 1) * replica + extra_device0_bytes; };
  result.peak_mem_bytes = device_peak(replica_peak);
  if (shared) {
    add_note(result.notes, printf_string("memory: cpu profile: the %.0f ranks share host memory, "
                                         "peak = %.0f x per-rank",
                                         n, n));
  }
  if (memory.steady()) {
    // The verdict is the steady state's; the first iteration (cuDNN's autotuning workspaces,
    // the allocator's first blocks) peaks higher, and is said beside it.
    result.first_iteration_peak_mem_bytes =
        device_peak(train::MemoryModel(model, train::MemoryModel::Peak::kFirst).replica_peak_bytes(batch));
    add_note(result.notes, "memory: OOM verdicts on the steady-state peak (measured after the warm-up); the first "
                           "iteration's peak, autotuning workspaces included, is shown beside it (first "
                           "GiB, first_iteration_peak_mem_gib)");
  }
  result.device_memory_bytes = profile.machine.device_memory_bytes;
  result.fits = train::fits_in_memory(result.peak_mem_bytes, result.device_memory_bytes, batch,
                                      model);
  if (result.fits) return;
  if (model.oom_batch && batch >= *model.oom_batch) {
    add_note(result.notes,
             printf_string("does not fit: batch %.0f >= the measured out-of-memory batch %.0f",
                           static_cast<double>(batch), static_cast<double>(*model.oom_batch)));
  } else {
    add_note(result.notes,
             printf_string("does not fit: predicted peak %.2f GiB > device %.2f GiB",
                           result.peak_mem_bytes / (1024.0 * 1024 * 1024),
                           result.device_memory_bytes / (1024.0 * 1024 * 1024)));
  }
}

// Notes about compute at `batch`: outside the measured range, what the loop adds to its parts.
void note_compute(std::vector<std::string>& notes, const ModelProfile& model,
                  const train::StepModel& steps, int64_t batch) {
  const int64_t min_batch = model.batches.front();
  const int64_t max_batch = model.batches.back();
  if (batch > max_batch || batch < min_batch) {
    add_note(notes, printf_string("compute at batch %.0f outside the measured %.0f..%.0f: "
                                  "extrapolated (never below proportional scaling)",
                                  static_cast<double>(batch), static_cast<double>(min_batch),
                                  static_cast<double>(max_batch)));
  }
  const train::StepTimes t = steps.at(batch);
  const std::string& loop = steps.loop().what;
  if (t.overhead_s > 0) {
    add_note(notes, printf_string("loop overhead %.3f ms per iteration at batch %.0f (", t.overhead_s * 1e3,
                                  static_cast<double>(batch)) +
                        loop + " minus its timed parts), a host op");
  } else if (t.parts_scale < 1) {
    add_note(notes, printf_string("the timed parts sum to more than the loop at batch %.0f: scaled by "
                                  "%.4f to ",
                                  static_cast<double>(batch), t.parts_scale) +
                        loop);
  }
}

// Where a timing of the profile, at the measured batch nearest `batch` (in log scale), spent a
// tenth or more of its time in page faults (the minor faults counted with it x the host's
// page_fault_s): it measures the allocator's mapping of fresh memory as much as the compute. The
// timing is PyTorch's loop body where the pytorch trainer's loop comes from the profile's pytorch
// section and it counted them, else the C++ fused iteration.
void note_page_faults(std::vector<std::string>& notes, const Profile& profile, const ModelProfile& model,
                      const RunSpec& spec, int64_t batch) {
  const double fault_s = profile.machine.page_fault_s;
  const std::vector<int64_t>* batches = &model.batches;
  const std::vector<double>* faults = &model.minor_faults;
  const std::vector<double>* times = &model.iteration_s;
  const char* what = "the profile's fused iteration";
  if (spec.trainer == Trainer::kPytorch && profile.pytorch) {
    const auto it = profile.pytorch->models.find(model.name);
    if (it != profile.pytorch->models.end() && !it->second.minor_faults.empty()) {
      batches = &it->second.batches;
      faults = &it->second.minor_faults;
      times = &it->second.iteration_s;
      what = "PyTorch's loop body in the profile";
    }
  }
  if (faults->empty() || !(fault_s > 0) || times->size() != batches->size() || faults->size() != batches->size()) {
    return;
  }
  std::size_t at = 0;
  const auto distance = [&](std::size_t k) { return std::fabs(std::log(static_cast<double>((*batches)[k]) / batch)); };
  for (std::size_t i = 1; i < batches->size(); ++i) {
    if (distance(i) < distance(at)) at = i;
  }
  const double share = (*faults)[at] * fault_s / (*times)[at];
  if (!(share >= 0.1)) return;
  add_note(notes, printf_string("page faults: about %.0f%% of ", 100 * share) + what +
                      printf_string(" at batch %.0f (%.0f faults per iteration, %.2f us each): its timings there "
                                    "measure how the allocator maps memory as much as the compute, and a script's "
                                    "may differ (docs/MEASURE.md)",
                                    static_cast<double>((*batches)[at]), (*faults)[at], fault_s * 1e6));
}

// The test pass after the epoch (RunSpec::test_pass), in closed form: each process evaluates
// the test set in batches of t, forward only (priced as the training forward plus the loss), with
// the batch copied to the device; its loader is the training one (start-up included unless
// persistent). With W workers the loop and the loader overlap, so after the first batch each
// batch takes max(compute, load / W); inline, load + compute. On a CPU host with more busy
// threads than cores, compute is slowed by threads / cores.
double test_pass_seconds(const RunSpec& spec, const train::GraphInputs& in, const train::StepModel& steps,
                         const Profile& profile, int processes) {
  const TestPass& pass = *spec.test_pass;
  const int64_t t = std::min(pass.batch, pass.samples);
  const int64_t batches = ceil_div(pass.samples, t);
  const train::StepTimes st = steps.at(t);
  double compute = st.loss_s;
  for (double f : st.forward_s) compute += f;
  compute += des::to_seconds(in.h2d_ns(static_cast<double>(t * in.model.input_bytes_per_sample)));
  const MachineInfo& m = profile.machine;
  if (m.device_kind == "cpu" && m.cpu_cores > 0) {
    compute *= std::max(1.0, static_cast<double>(processes * std::max(1, m.threads)) / m.cpu_cores);
  }
  if (in.workers == 0) return static_cast<double>(batches) * (compute + static_cast<double>(t) / in.inline_rate);
  const double load = static_cast<double>(t) / in.loader_rate_per_worker;
  const double period = std::max(compute, load / in.workers);
  return des::to_seconds(in.loader_startup_ns) + load + compute + static_cast<double>(batches - 1) * period;
}

// Skipped iterations repeat the cycle that ended just before them.
SimulatedIndex simulated_index(const train::EpochTimeline& t) {
  return t.skipped > 0 ? SimulatedIndex{t.skipped_from, t.skipped, t.steady->cycle} : SimulatedIndex{};
}

// The epoch's sums of device 0's per-iteration stats (`compute` holding compute + copy), from the
// simulated iterations' stats: a skipped iteration repeats the cycle just before the skip.
IterationStats epoch_totals(const std::vector<IterationStats>& stats, int64_t count, const SimulatedIndex& index) {
  IterationStats totals;
  int64_t phase = 0;  // k - skipped_from modulo the cycle, inside the skipped range
  for (int64_t k = 0; k < count; ++k) {
    int64_t source = k;
    if (k >= index.skipped_from + index.skipped) {
      source = k - index.skipped;
    } else if (k >= index.skipped_from) {
      source = index.skipped_from - index.cycle + phase;
      if (++phase == index.cycle) phase = 0;
    }
    add_to_totals(totals, stats[static_cast<std::size_t>(source)]);
  }
  return totals;
}

// The epoch's times and traffic from its totals and the runner's timeline.
void fill_timings(SimResult& result, const IterationStats& totals, const train::IterationGraph& iterations,
                  const train::EpochTimeline& t) {
  const SimTime epoch = t.epoch_end;
  result.epoch_s = des::to_seconds(epoch);
  result.loader_stall_s = des::to_seconds(t.loader_stall);
  result.train_s = des::to_seconds(epoch - t.loader_stall);
  result.compute_s = des::to_seconds(totals.compute);
  result.comm_s = des::to_seconds(totals.comm);
  result.exposed_comm_s = des::to_seconds(totals.exposed);
  result.sync_bn_s = des::to_seconds(totals.sync_bn);
  result.comm_bytes_per_rank = totals.bus_bytes;
  result.busbw_gbs = totals.collective > 0 ? totals.bus_bytes / des::to_seconds(totals.collective) / 1e9 : 0.0;
  if (t.steady) {
    result.iteration_s = des::to_seconds(t.steady->period) / t.steady->cycle;
  } else {
    // No steady state seen (a short epoch): the mean period of the full iterations after the
    // first; with a single full iteration, that iteration from its batch to its end.
    const int64_t full = iterations.full_iterations();
    result.iteration_s = full >= 2 ? des::to_seconds(t.last_full_end - t.first.end) / static_cast<double>(full - 1)
                                   : des::to_seconds(t.first.end - t.first.ready);
  }
  result.extrapolated = t.skipped > 0;
  result.simulated_iterations = t.simulated_iterations;
  if (t.steady) {
    add_note(result.notes,
             printf_string("steady state from iteration %.0f: period %.6g ms",
                           static_cast<double>(t.steady_at), result.iteration_s * 1e3) +
                 (t.skipped > 0 ? ", " + std::to_string(t.skipped) + " iterations extrapolated"
                                : std::string()));
  }
}

}  // namespace

RunSpec config_spec(const SweepConfig& config, Strategy strategy, int gpus, int64_t batch_per_gpu) {
  RunSpec spec;
  static_cast<RunSetting&>(spec) = config;
  spec.strategy = strategy;
  spec.gpus = gpus;
  spec.batch_per_gpu = batch_per_gpu;
  return spec;
}

SimResult simulate_run(const Profile& profile, const std::string& model_name,
                       const RunSpec& spec, const SimOptions& options) {
  validate(spec);
  const auto model_it = profile.models.find(model_name);
  if (model_it == profile.models.end()) {
    throw std::invalid_argument("profile has no model '" + model_name + "'");
  }
  const ModelProfile& model = model_it->second;
  const bool ddp = spec.strategy == Strategy::kDdp;
  const int n = spec.gpus;

  SimResult result;
  result.spec = spec;
  std::vector<std::string>& notes = result.notes;
  if (const std::optional<std::string> reason = not_runnable(profile, spec)) {
    result.runnable = false;
    result.not_runnable = *reason;
    add_note(notes, "not runnable: " + *reason);
    return result;
  }

  // DDP ranks are processes: the ranks of a node share its host (on a cpu profile they slow each
  // other's compute). Across nodes one node is simulated: the nodes are copies of one another.
  const int node_ranks = ddp && spec.topology ? std::min(n, spec.topology->gpus_per_node) : n;
  const int processes = ddp ? node_ranks : 1;
  const int64_t rank_batch =
      ddp ? std::min<int64_t>(spec.batch_per_gpu, ceil_div(spec.train_samples, n))
          : capped_global_batch(n, spec.batch_per_gpu, spec.train_samples);
  const train::HostContention contention = train::host_contention(profile, model, processes, rank_batch);
  for (const std::string& note : contention.notes) add_note(notes, note);
  const Pipeline pipeline = pipeline_for(profile, model, spec, notes);
  const train::StepModel steps(model, pipeline.loop, contention.slowdown);
  // The DataLoader builds batches of a rank's batch (DDP) or of the global batch (DataParallel).
  std::string loader_batch_note;
  const LoaderProfile loader_profile = train::loader_at_batch(*pipeline.loader, rank_batch, &loader_batch_note);
  if (!loader_batch_note.empty()) add_note(notes, loader_batch_note);
  const train::LoaderModel loader(loader_profile);
  const hw::CollectiveModel collectives(
      profile.collectives, spec.interconnect, hw::AllReduceAlgorithm::kRing,
      spec.topology ? std::optional(hw::nccl_cluster(*spec.topology)) : std::nullopt);
  const std::unique_ptr<hw::MeasuredCurve> h2d = h2d_curve(profile, spec.pin_memory, notes);

  TrainingGraph graph;
  train::GraphInputs in{model, steps, collectives, h2d.get()};
  in.gpus = n;
  // A node's DDP ranks are identical (the same share of the sampler, the same work, the same
  // collectives, the same share of the host): one is simulated for all of them, unless a trace
  // asks to see every rank. Its pool holds its share of the cores (processor sharing treats
  // identical demands alike), so the times are those of all the ranks simulated.
  const int copies = ddp && options.trace_iterations <= 0 ? node_ranks : 1;
  in.simulated_ranks = node_ranks / copies;
  in.batch_per_gpu = spec.batch_per_gpu;
  in.train_samples = spec.train_samples;
  in.workers = spec.loader_workers;
  in.sync_batchnorm = spec.sync_batchnorm && ddp && n > 1;
  in.dp_host_per_replica_ns = des::to_ns(spec.dp_host_per_replica_s);
  if (!ddp && n > 1) set_dp_host_mechanisms(in, profile, model, spec, notes);
  const int cores = node_cpu_cores(profile, spec, notes);
  share_host_cores(in, graph, profile, cores, processes, copies, notes);
  set_loader_rates(in, loader, ddp, node_ranks, {cores, profile.machine.cpu_cores}, notes);
  if (pipeline.fork != nullptr && in.workers > 0 && !spec.persistent_workers) {
    set_fork_costs(in, *pipeline.fork, pipeline.loop.batches, rank_batch, processes, profile, notes);
  } else {
    set_loader_startup(in, loader, spec.persistent_workers, notes);
  }
  if (spec.sync_batchnorm && !ddp) {
    add_note(notes, "sync_batchnorm: not applied to dp (PyTorch's SyncBatchNorm runs only under "
                    "DistributedDataParallel): plain BatchNorm per replica");
  }
  if (in.sync_batchnorm) {
    add_note(notes, "SyncBatchNorm: per BatchNorm layer an all-gather of 2C+1 floats per rank (forward, priced "
                    "as half a measured all-reduce of the gathered bytes) and an all-reduce of 2C floats "
                    "(backward), each blocking the next layer; its kernels priced as plain BatchNorm's");
  }

  std::unique_ptr<train::IterationGraph> iterations;
  int64_t device_batch = 0;  // largest per-device batch of the epoch
  double extra_device0_bytes = 0;
  if (ddp) {
    auto g = std::make_unique<train::DdpGraph>(graph, in);
    result.global_batch = capped_global_batch(n, spec.batch_per_gpu, spec.train_samples);
    device_batch = g->rank_batch();
    if (node_ranks < n) {
      add_note(notes, "ddp: " + std::to_string(n) + " ranks on " + std::to_string((n + node_ranks - 1) / node_ranks) +
                          " nodes; one node's " + std::to_string(node_ranks) +
                          " ranks simulated (every node runs the same iterations), collectives priced on all " +
                          std::to_string(n));
    }
    if (n > 1) {
      add_note(notes, collectives.note(hw::CollectiveOp::kAllReduce, n));
      add_note(notes, collectives.note(hw::CollectiveOp::kBroadcast, n));
    }
    if (!model.ddp_buckets.empty()) add_note(notes, "ddp buckets: as the reducer built them (profile)");
    iterations = std::move(g);
  } else {
    auto g = std::make_unique<train::DpGraph>(graph, in);
    result.global_batch = g->global_batch();
    device_batch = g->chunk_sizes(g->global_batch()).front();
    if (n > 1) {
      const std::size_t replicas = g->chunk_sizes(g->last_global_batch()).size();
      for (int r : {n, static_cast<int>(replicas)}) {
        add_note(notes, collectives.note(hw::CollectiveOp::kBroadcast, r));
        add_note(notes, collectives.note(hw::CollectiveOp::kReduce, r));
      }
      add_note(notes, "dp: copies between GPUs (each replica's input chunk from GPU 0, its outputs to GPU 0 and "
                      "their gradient back) priced as a 2-rank broadcast on the link");
      add_note(notes, collectives.note(hw::CollectiveOp::kBroadcast, 2));
      if (!model.has_host_issue()) {
        add_note(notes, "dp: the profile has no host issue times (measured on a GPU only, PROFILE.md): the "
                        "replicas' forward issued in turn under the GIL and the launch queue are not simulated "
                        "and the loop's overhead is serial with compute; where the host sets the pace (small "
                        "per-GPU batches) this prediction is a lower bound");
      }
      // GPU 0 also holds every replica's gathered outputs and the reduced gradients.
      extra_device0_bytes = static_cast<double>(g->global_batch() * model.num_classes * 4) +
                            static_cast<double>(model.param_bytes());
    }
    iterations = std::move(g);
  }
  result.iterations = iterations->iterations();
  note_compute(notes, model, steps, device_batch);
  note_page_faults(notes, profile, model, spec, device_batch);
  predict_memory(result, profile, model, device_batch, extra_device0_bytes, processes);

  const int trace_iterations = std::max(0, options.trace_iterations);
  // --exact holds only the ops in flight: the finished ones are taken into the stats and released
  // as the epoch goes (no iteration is skipped, so the index is the identity from the start).
  std::optional<OpStatsCollector> collector;
  train::RetireOps retire;
  if (options.exact) {
    collector.emplace(graph, result.iterations, SimulatedIndex{}, trace_iterations, OpStatsCollector::Keep::kTotals);
    retire = [&collector](des::OpId first, des::OpId last) { collector->retire(first, last); };
  }
  const train::EpochTimeline timeline =
      train::run_epoch(graph, *iterations, options.exact, trace_iterations, retire);
  if (!collector) {
    collector.emplace(graph, result.iterations, simulated_index(timeline), trace_iterations,
                      OpStatsCollector::Keep::kPerIteration);
  }
  collector->retire(graph.ops.first_op(), static_cast<des::OpId>(graph.ops.op_count()));
  const IterationStats totals =
      options.exact ? collector->take_totals()
                    : epoch_totals(collector->take_stats(), result.iterations, simulated_index(timeline));
  fill_timings(result, totals, *iterations, timeline);
  if (trace_iterations > 0) result.trace = collector->take_trace();
  if (spec.test_pass) {
    result.test_s = test_pass_seconds(spec, in, steps, profile, processes);
    add_note(notes, "test pass: in closed form (forward priced as the training forward plus the "
                    "loss), not in epoch_s");
  }
  return result;
}

}  // namespace trainsim
