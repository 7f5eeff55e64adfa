#include "fit/device_model.h"

#include <algorithm>
#include <stdexcept>

#include "models/describe.h"
#include "train/step_model.h"

namespace trainsim::fit {
namespace {

// 1, 2, 3, 4, 6, 8, 12, ...: powers of two and the points half way between them in log scale
// (3 * 2^k), so that piecewise-linear interpolation follows the roofline's wave steps closely.
std::vector<int64_t> batch_grid(int64_t max_batch) {
  std::vector<int64_t> grid{1, 2};
  while (grid.back() < max_batch) {
    const int64_t p = grid.back();
    grid.push_back(p + p / 2);
    grid.push_back(2 * p);
  }
  return grid;
}

// Host-to-device copies at the PCIe link's peak, as a curve the simulator interpolates.
std::vector<CurvePoint> pcie_curve(const GpuSpec& gpu) {
  std::vector<CurvePoint> curve;
  for (double bytes = 1024; bytes <= 1024.0 * 1024 * 1024 * 4; bytes *= 16) {
    curve.push_back(CurvePoint{bytes, bytes / (gpu.link.pcie_gbs() * 1e9)});
  }
  return curve;
}

// The parts of one step as the step model takes them (StepModel): layers, loss, zero_grad,
// optimizer, summed, or through the launch queue where the host's issue times were measured.
double parts_at(const ModelProfile& m, double batch) { return train::step_parts(m, batch).critical_path_s(); }

// A measured loop moved with its parts: what it measured beyond them stays.
void move_loop(std::vector<double>& loop, const std::vector<int64_t>& batches, const ModelProfile& before,
               const ModelProfile& after) {
  for (std::size_t i = 0; i < loop.size() && i < batches.size(); ++i) {
    const double b = static_cast<double>(batches[i]);
    loop[i] = std::max(0.0, loop[i] - parts_at(before, b) + parts_at(after, b));
  }
}

}  // namespace

ParamInfo param_info(Param p, bool named_gpu) {
  switch (p) {
    case Param::kEfficiency:
      return named_gpu ? ParamInfo{"compute_efficiency", "of the roofline", 1}
                       : ParamInfo{"flop_rate", "TFLOP/s", 1e-12};
    case Param::kOverhead: return {"iteration_overhead", "ms", 1e3};
    case Param::kLoaderSample: return {"loader_cost_per_sample", "ms per worker", 1e3};
    case Param::kLoaderStartup: return {"loader_startup", "s per epoch", 1};
    case Param::kLinkBusbw: return {"link_busbw", "GB/s", 1};
    case Param::kLinkLatency: return {"link_latency", "us", 1e6};
    case Param::kDpReplica: return {"dp_host_per_replica", "ms", 1e3};
  }
  return {"?", "", 1};
}

RooflineTable::RooflineTable(std::string model, std::optional<GpuSpec> gpu, int64_t max_batch)
    : model_(std::move(model)), gpu_(std::move(gpu)), batches_(batch_grid(std::max<int64_t>(max_batch, 2))) {
  const Roof roof = roof_of(gpu_);
  for (int64_t b : batches_) steps_.push_back(step_roofline(model_, b, roof));
}

Profile roofline_profile(const RooflineTable& table, const ParamValues& values) {
  const double efficiency = at(values, Param::kEfficiency);
  if (!(efficiency > 0)) throw std::invalid_argument("compute efficiency must be > 0");
  const std::optional<GpuSpec>& gpu = table.gpu();
  Profile p;
  p.machine.name = gpu ? "roofline-" + gpu->key : "fitted-device";
  p.machine.device_kind = "cuda";
  p.machine.device_name = gpu ? gpu->name + " (roofline)" : "unknown device";
  p.machine.device_count = 1;
  p.machine.device_memory_bytes = gpu ? gpu->memory_bytes : 0;  // 0: memory not checked
  p.measurement.command = "fitted (docs/FIT.md)";
  p.measurement.data = "n/a";

  ModelProfile m = models::describe_model(table.model());
  m.batches = table.batches();
  m.memory_method = "model-description";
  const double overhead = at(values, Param::kOverhead);
  for (std::size_t i = 0; i < table.steps().size(); ++i) {
    const StepRoofline& r = table.steps()[i];
    // The host issues every op in `overhead / ops` (the per-iteration host cost spread over the
    // ops it launches), ahead of the device through the launch queue.
    const double per_op = overhead / r.total_ops();
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      m.layers[l].forward_s.push_back(r.forward_s[l] / efficiency);
      m.layers[l].backward_s.push_back(r.backward_s[l] / efficiency);
      m.layers[l].host_forward_s.push_back(r.forward_ops[l] * per_op);
      m.layers[l].host_backward_s.push_back(r.backward_ops[l] * per_op);
    }
    m.loss_s.push_back(r.loss_s / efficiency);
    m.zero_grad_s.push_back(r.zero_grad_s / efficiency);
    m.optimizer_s.push_back(r.optimizer_s / efficiency);
    m.host_loss_s.push_back(r.loss_ops * per_op);
    m.host_zero_grad_s.push_back(0);
    m.host_optimizer_s.push_back(r.optimizer_ops * per_op);
    // Parameters, their gradients and SGD's momentum, the buffers, the saved activations.
    double buffers = 0;
    for (const LayerProfile& l : m.layers) buffers += static_cast<double>(l.buffer_bytes);
    m.peak_memory_bytes.push_back(3 * r.param_bytes + buffers + r.saved_bytes);
  }
  // The loop is its parts through the launch queue, nothing beyond them; DDP's adds the reducer's
  // bucket copies.
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    const double loop = parts_at(m, static_cast<double>(m.batches[i]));
    m.iteration_s.push_back(loop);
    m.ddp_iteration_s.push_back(loop + table.steps()[i].bucket_copy_s / efficiency);
  }

  if (gpu) {
    p.h2d.applicable = true;
    p.h2d.pageable = pcie_curve(*gpu);
    p.h2d.pinned = p.h2d.pageable;
  }
  p.collectives.backend = "nccl";
  p.collectives.source = "assumed";

  const double per_sample = at(values, Param::kLoaderSample);
  // A loader cost not in play (0) is a loader that always keeps up.
  const double worker_rate = per_sample > 0 ? 1.0 / per_sample : 1e15;
  const double startup = at(values, Param::kLoaderStartup);
  p.loader.data = "n/a";
  p.loader.batch = 1;
  p.loader.points = {LoaderPoint{0, worker_rate, std::nullopt}, LoaderPoint{1, worker_rate, startup},
                     LoaderPoint{kMaxLoaderWorkers, kMaxLoaderWorkers * worker_rate, startup}};

  PytorchProfile py;
  py.torch = "n/a: fitted";
  py.loader = p.loader;
  py.models[m.name] = PytorchLoop{m.batches, m.iteration_s, m.ddp_iteration_s, std::nullopt, std::nullopt, std::nullopt, std::nullopt, {}};
  p.pytorch = py;
  p.models[m.name] = std::move(m);
  return p;
}

RunSpec run_spec_for(RunSpec spec, const ParamValues& values, bool link) {
  if (link) {
    InterconnectAssumption assumed;
    assumed.bus_bandwidth_gbs = at(values, Param::kLinkBusbw);
    assumed.latency_us = at(values, Param::kLinkLatency) * 1e6;
    assumed.override_measured = true;
    spec.interconnect = assumed;
  }
  spec.dp_host_per_replica_s = at(values, Param::kDpReplica);
  return spec;
}

Profile transfer_profile(const Profile& measured, const std::string& model, const GpuSpec& from,
                         const GpuSpec& to) {
  if (from.key == to.key) return measured;
  const auto it = measured.models.find(model);
  if (it == measured.models.end()) throw std::invalid_argument("profile has no model '" + model + "'");
  Profile p = measured;
  const ModelProfile& before = it->second;
  ModelProfile& after = p.models.at(model);
  const Roof roof_from = roof_of(from), roof_to = roof_of(to);
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 1.0; };
  for (std::size_t i = 0; i < before.batches.size(); ++i) {
    const StepRoofline on_from = step_roofline(model, before.batches[i], roof_from);
    const StepRoofline on_to = step_roofline(model, before.batches[i], roof_to);
    for (std::size_t l = 0; l < after.layers.size(); ++l) {
      after.layers[l].forward_s[i] *= ratio(on_to.forward_s[l], on_from.forward_s[l]);
      after.layers[l].backward_s[i] *= ratio(on_to.backward_s[l], on_from.backward_s[l]);
    }
    after.loss_s[i] *= ratio(on_to.loss_s, on_from.loss_s);
    after.zero_grad_s[i] *= ratio(on_to.zero_grad_s, on_from.zero_grad_s);
    after.optimizer_s[i] *= ratio(on_to.optimizer_s, on_from.optimizer_s);
  }
  move_loop(after.iteration_s, after.batches, before, after);
  move_loop(after.ddp_iteration_s, after.batches, before, after);
  if (p.pytorch) {
    const auto py = p.pytorch->models.find(model);
    if (py != p.pytorch->models.end()) {
      move_loop(py->second.iteration_s, py->second.batches, before, after);
      move_loop(py->second.ddp_iteration_s, py->second.batches, before, after);
      py->second.oom_batch.reset();
    }
  }
  // Contention is a CPU host's; a GPU rank owns its device.
  after.host_contention.clear();
  after.oom_batch.reset();
  after.max_batch_tried.reset();
  const double pcie = ratio(from.link.pcie_gbs(), to.link.pcie_gbs());
  for (auto* curve : {&p.h2d.pinned, &p.h2d.pageable}) {
    for (CurvePoint& point : *curve) point.time_s *= pcie;
  }
  std::vector<CollectiveCurve> single;
  for (const CollectiveCurve& c : p.collectives.curves) {
    if (c.ranks == 1) single.push_back(c);
  }
  p.collectives.curves = single;
  p.machine.name += "-as-" + to.key;
  p.machine.device_name = to.name + " (transferred from " + from.name + ")";
  p.machine.device_memory_bytes = to.memory_bytes;
  return p;
}

InterconnectAssumption catalog_interconnect(const GpuSpec& gpu) {
  InterconnectAssumption link;
  link.bus_bandwidth_gbs = gpu.link.nvlink_gbs > 0 ? gpu.link.nvlink_gbs / 2 : gpu.link.pcie_gbs();
  link.latency_us = 0;
  link.override_measured = true;
  return link;
}

}  // namespace trainsim::fit
