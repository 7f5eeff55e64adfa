#include "fit/roofline.h"

#include <algorithm>
#include <cmath>

#include "models/cost.h"
#include "models/describe.h"

namespace trainsim::fit {
namespace {

double op_seconds(const models::OpCost& op, const Roof& roof) {
  double fill = 1;
  if (roof.sms > 0 && op.parallel_tiles > 0) {
    // Too few tiles for the SMs: the reduction is split (split-K) as far as it fills them.
    const double splits = std::min(std::max(1.0, op.reduction_splits), std::ceil(roof.sms / op.parallel_tiles));
    const double ctas = op.parallel_tiles * splits;
    const double waves = std::ceil(ctas / roof.sms);
    fill = ctas / (waves * roof.sms);
  }
  const double compute = op.flops / (roof.flops_per_s * fill);
  const double memory = roof.bytes_per_s > 0 ? op.bytes / roof.bytes_per_s : 0.0;
  return std::max(compute, memory);
}

double ops_seconds(const std::vector<models::OpCost>& ops, const Roof& roof) {
  double total = 0;
  for (const models::OpCost& op : ops) total += op_seconds(op, roof);
  return total;
}

}  // namespace

Roof roof_of(const std::optional<GpuSpec>& gpu) {
  if (!gpu) return Roof{};
  return Roof{gpu->fp32_training_flops(), gpu->memory_bandwidth_gbs * 1e9, gpu->sms};
}

int StepRoofline::total_ops() const {
  int total = loss_ops + optimizer_ops;
  for (int n : forward_ops) total += n;
  for (int n : backward_ops) total += n;
  return total;
}

StepRoofline step_roofline(const std::string& model, int64_t batch, const Roof& roof) {
  StepRoofline out;
  for (const models::LayerCost& layer : models::layer_costs(model, batch)) {
    out.forward_s.push_back(ops_seconds(layer.forward, roof));
    out.backward_s.push_back(ops_seconds(layer.backward, roof));
    out.saved_bytes += layer.saved_bytes;
    out.forward_ops.push_back(static_cast<int>(layer.forward.size()));
    out.backward_ops.push_back(static_cast<int>(layer.backward.size()));
  }
  for (const LayerProfile& layer : models::describe_model(model).layers) {
    out.optimizer_ops += static_cast<int>(layer.params.size());
  }
  const models::StepCost step = models::step_cost(model, batch);
  out.loss_s = op_seconds(step.loss_forward, roof) + op_seconds(step.loss_backward, roof);
  out.optimizer_s = op_seconds(step.optimizer, roof);
  out.zero_grad_s = op_seconds(step.zero_grad, roof);
  // DistributedDataParallel (gradient_as_bucket_view=False, its default) copies each gradient
  // into its bucket and the reduced bucket back: two reads and two writes of every gradient.
  models::OpCost copies;
  copies.bytes = 4 * step.param_bytes;
  out.bucket_copy_s = op_seconds(copies, roof);
  out.param_bytes = step.param_bytes;
  return out;
}

}  // namespace trainsim::fit
