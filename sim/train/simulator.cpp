#include "train/simulator.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "hw/collective_model.h"
#include "hw/curve.h"
#include "train/ddp_graph.h"
#include "train/dp_graph.h"
#include "train/epoch_runner.h"
#include "train/graph_inputs.h"
#include "train/host_contention.h"
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

struct Interval {
  SimTime start;
  SimTime end;
  int32_t tag;
};

std::vector<IterationStats> iteration_stats(const TrainingGraph& g, int64_t iterations) {
  std::vector<IterationStats> stats(static_cast<std::size_t>(iterations));
  std::vector<Interval> compute;
  std::vector<Interval> comm;
  for (des::OpId id = 0; id < g.ops.op_count(); ++id) {
    const int32_t tag = g.ops.tag(id);
    if (tag < 0 || tag >= iterations || g.ops.duration(id) == 0) continue;
    const SimTime d = g.ops.elapsed(id);  // busy time: longer than the work when cores are shared
    IterationStats& s = stats[static_cast<std::size_t>(tag)];
    const Interval span{g.ops.start_time(id), g.ops.end_time(id), tag};
    for (des::ResourceId r : g.ops.resources(id)) {
      if (r == g.device0_compute) {
        s.compute += d;
        compute.push_back(span);
      } else if (r == g.device0_copy) {
        s.copy += d;
      } else if (r == g.device0_comm) {
        s.comm += d;
        comm.push_back(span);
        const train::OpLabel& label = g.label(g.ops.label(id));
        if (label.collective) {
          s.collective += d;
          s.bus_bytes += label.bus_bytes;
        }
        if (label.sync_batchnorm) s.sync_bn += d;
      }
    }
  }
  // Exposed communication: each comm interval minus its overlap with compute intervals. One
  // stream never overlaps itself, so sorted by start the compute intervals are sorted by end too.
  const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  std::sort(compute.begin(), compute.end(), by_start);
  for (const Interval& c : comm) {
    SimTime covered = 0;
    auto it = std::upper_bound(compute.begin(), compute.end(), c.start,
                               [](SimTime t, const Interval& x) { return t < x.end; });
    for (; it != compute.end() && it->start < c.end; ++it) {
      covered += std::min(c.end, it->end) - std::max(c.start, it->start);
    }
    stats[static_cast<std::size_t>(c.tag)].exposed += (c.end - c.start) - covered;
  }
  return stats;
}

std::vector<OpRecord> trace_records(const TrainingGraph& g, int trace_iterations) {
  std::vector<OpRecord> records;
  for (des::OpId id = 0; id < g.ops.op_count(); ++id) {
    const int32_t tag = g.ops.tag(id);
    if (tag < 0 || tag >= trace_iterations || g.ops.duration(id) == 0) continue;
    const train::OpLabel& label = g.label(g.ops.label(id));
    for (des::ResourceId r : g.ops.resources(id)) {
      records.push_back(OpRecord{g.resource_name(r), label.name, label.category,
                                 g.ops.start_time(id), g.ops.end_time(id), tag});
    }
  }
  std::stable_sort(records.begin(), records.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.start_ns < b.start_ns;
  });
  return records;
}

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
}

// The host-to-device copy curve: pinned memory (DataLoader pin_memory=True) when measured, else
// pageable; none when the profile's device is the host.
std::unique_ptr<hw::MeasuredCurve> h2d_curve(const Profile& profile,
                                             std::vector<std::string>& notes) {
  if (!profile.h2d.applicable) {
    add_note(notes, "no host-to-device copy: the profile's device is the host (h2d not applicable)");
    return nullptr;
  }
  const bool pinned = !profile.h2d.pinned.empty();
  if (!pinned && profile.h2d.pageable.empty()) {
    throw std::invalid_argument("profile has no host-to-device copy curve");
  }
  if (!pinned) add_note(notes, "h2d: no pinned-memory curve; the pageable one is used");
  return std::make_unique<hw::MeasuredCurve>(pinned ? profile.h2d.pinned : profile.h2d.pageable);
}

// Loader rates. Loaders share the host: DDP runs N loaders of W workers each, so each worker gets
// the per-worker share of samples_per_s(N * W); DataParallel's one loader samples_per_s(W) / W.
void set_loader_rates(train::GraphInputs& in, const train::LoaderModel& loader, bool ddp,
                      std::vector<std::string>& notes) {
  const int n = in.gpus;
  const int w = in.workers;
  if (w > 0) {
    const int loading_workers = ddp ? n * w : w;
    in.loader_rate_per_worker = loader.samples_per_s(loading_workers) / loading_workers;
    add_note(notes, loader.note(loading_workers));
    if (ddp && n > 1) {
      add_note(notes, printf_string("loader: %.0f ranks x %.0f workers share the host: %.0f "
                                    "samples/s in total, split evenly over the ranks",
                                    n, w, loader.samples_per_s(loading_workers)));
    }
    return;
  }
  in.inline_rate = loader.samples_per_s(0);
  add_note(notes, loader.note(0));
  if (ddp && n > 1) {
    // N training processes load inline at once: scale by the machine's per-process efficiency
    // with N loaders, samples_per_s(N) / (N * samples_per_s(1)), when below 1.
    in.inline_rate *= std::min(1.0, loader.samples_per_s(n) / (n * loader.samples_per_s(1)));
    add_note(notes, printf_string("loader: %.0f ranks load inline at once: each at %.0f "
                                  "samples/s (host shared)",
                                  n, in.inline_rate));
  }
}

// Peak memory of the most loaded device at per-device batch `batch` and whether it fits.
void predict_memory(SimResult& result, const Profile& profile, const ModelProfile& model,
                    int64_t batch, double extra_device0_bytes) {
  const train::MemoryModel memory(model);
  const int n = result.spec.gpus;
  const double replica_peak = memory.replica_peak_bytes(batch);
  if (!memory.measured()) {
    add_note(result.notes, "memory: no peak measured; static memory (3 x parameters + buffers) only");
  }
  result.peak_mem_bytes = replica_peak + extra_device0_bytes;
  if (profile.machine.device_kind == "cpu" && n > 1) {
    result.peak_mem_bytes = n * replica_peak + extra_device0_bytes;
    add_note(result.notes, printf_string("memory: cpu profile: the %.0f ranks share host memory, "
                                         "peak = %.0f x per-rank",
                                         n, n));
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

// Notes about compute at `batch`: outside the measured range, framework overhead.
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
  const double overhead_s = steps.at(batch).overhead_s;
  if (overhead_s > 0) {
    add_note(notes, printf_string("framework overhead %.3f ms per iteration at batch %.0f "
                                  "(fused iteration minus its timed parts), a host op",
                                  overhead_s * 1e3, static_cast<double>(batch)));
  }
}

// The epoch's times and traffic from the simulated ops and the runner's timeline.
void fill_timings(SimResult& result, const TrainingGraph& graph,
                  const train::IterationGraph& iterations, const train::EpochTimeline& t) {
  const int64_t count = result.iterations;
  const auto at = [](int64_t i) { return static_cast<std::size_t>(i); };
  std::vector<IterationStats> stats = iteration_stats(graph, count);
  if (t.skipped > 0) {
    // Skipped iterations repeat the cycle that ended just before them.
    const int64_t c = t.steady->cycle;
    for (int64_t i = t.skipped_from; i < t.skipped_from + t.skipped; ++i) {
      stats[at(i)] = stats[at(t.skipped_from - c + (i - t.skipped_from) % c)];
    }
  }
  SimTime compute = 0, comm = 0, exposed = 0, collective = 0, sync_bn = 0, stall = 0;
  double bus_bytes = 0;
  for (int64_t k = 0; k < count; ++k) {
    const IterationStats& s = stats[at(k)];
    compute += s.compute + s.copy;
    comm += s.comm;
    exposed += s.exposed;
    collective += s.collective;
    sync_bn += s.sync_bn;
    bus_bytes += s.bus_bytes;
    // The loop asks for batch k when it finished iteration k-1 (at 0 for the first).
    const SimTime asked = k == 0 ? 0 : t.loop_end[at(k - 1)];
    stall += t.ready[at(k)] - asked;
  }
  const SimTime epoch = t.end[at(count - 1)];
  result.epoch_s = des::to_seconds(epoch);
  result.loader_stall_s = des::to_seconds(stall);
  result.train_s = des::to_seconds(epoch - stall);
  result.compute_s = des::to_seconds(compute);
  result.comm_s = des::to_seconds(comm);
  result.exposed_comm_s = des::to_seconds(exposed);
  result.sync_bn_s = des::to_seconds(sync_bn);
  result.comm_bytes_per_rank = bus_bytes;
  result.busbw_gbs = collective > 0 ? bus_bytes / des::to_seconds(collective) / 1e9 : 0.0;
  if (t.steady) {
    result.iteration_s = des::to_seconds(t.steady->period) / t.steady->cycle;
  } else {
    // No steady state seen (a short epoch): the mean period of the full iterations after the
    // first; with a single full iteration, that iteration from its batch to its end.
    const int64_t full = iterations.full_iterations();
    const std::size_t f = at(std::max<int64_t>(full, 1) - 1);
    result.iteration_s = full >= 2 ? des::to_seconds(t.end[f] - t.end[0]) / static_cast<double>(f)
                                   : des::to_seconds(t.end[0] - t.ready[0]);
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

  // DDP ranks are processes: on a cpu profile they share the host and slow each other's compute.
  const train::HostContention contention = train::host_contention(profile, model, ddp ? n : 1);
  for (const std::string& note : contention.notes) add_note(notes, note);
  const train::StepModel steps(model, contention.slowdown);
  const train::LoaderModel loader(profile.loader);
  const hw::CollectiveModel collectives(profile.collectives, spec.interconnect);
  const std::unique_ptr<hw::MeasuredCurve> h2d = h2d_curve(profile, notes);

  train::GraphInputs in{model, steps, collectives, h2d.get()};
  in.gpus = n;
  in.batch_per_gpu = spec.batch_per_gpu;
  in.train_samples = spec.train_samples;
  in.workers = spec.loader_workers;
  in.sync_batchnorm = spec.sync_batchnorm && ddp && n > 1;
  set_loader_rates(in, loader, ddp, notes);
  if (spec.sync_batchnorm && !ddp) {
    add_note(notes, "sync_batchnorm: not applied to dp (PyTorch's SyncBatchNorm runs only under "
                    "DistributedDataParallel): plain BatchNorm per replica");
  }
  if (in.sync_batchnorm) {
    add_note(notes, "SyncBatchNorm: per BatchNorm layer an all-gather of 2C+1 floats per rank (forward, priced "
                    "as half a measured all-reduce of the gathered bytes) and an all-reduce of 2C floats "
                    "(backward), each blocking the next layer; its kernels priced as plain BatchNorm's");
  }

  TrainingGraph graph;
  std::unique_ptr<train::IterationGraph> iterations;
  int64_t device_batch = 0;  // largest per-device batch of the epoch
  double extra_device0_bytes = 0;
  if (ddp) {
    auto g = std::make_unique<train::DdpGraph>(graph, in);
    result.global_batch = std::min<int64_t>(static_cast<int64_t>(n) * spec.batch_per_gpu,
                                            spec.train_samples);
    device_batch = g->rank_batch();
    if (n > 1) {
      add_note(notes, collectives.note(hw::CollectiveOp::kAllReduce, n));
      add_note(notes, collectives.note(hw::CollectiveOp::kBroadcast, n));
    }
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
      add_note(notes, h2d ? "dp: device-to-device copies (gather outputs, scatter output grad) "
                            "priced with the h2d curve (not measured)"
                          : "dp: copies of outputs between replicas not priced (host memory)");
      // GPU 0 also holds every replica's gathered outputs and the reduced gradients.
      extra_device0_bytes = static_cast<double>(g->global_batch() * model.num_classes * 4) +
                            static_cast<double>(model.param_bytes());
    }
    iterations = std::move(g);
  }
  result.iterations = iterations->iterations();
  note_compute(notes, model, steps, device_batch);
  predict_memory(result, profile, model, device_batch, extra_device0_bytes);

  const int trace_iterations = std::max(0, options.trace_iterations);
  const train::EpochTimeline timeline =
      train::run_epoch(graph, *iterations, options.exact, trace_iterations);
  fill_timings(result, graph, *iterations, timeline);
  if (trace_iterations > 0) result.trace = trace_records(graph, trace_iterations);
  return result;
}

}  // namespace trainsim
