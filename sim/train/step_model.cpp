#include "train/step_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "train/batch_curve.h"

namespace trainsim::train {
namespace {

void require_aligned(const ModelProfile& m, const std::vector<double>& v, const std::string& what) {
  if (v.size() != m.batches.size()) {
    throw std::invalid_argument("model " + m.name + ": " + what + " has " +
                                std::to_string(v.size()) + " values for " +
                                std::to_string(m.batches.size()) + " batch sizes");
  }
}

}  // namespace

double StepTimes::layers_s() const {
  double total = 0;
  for (double t : forward_s) total += t;
  for (double t : backward_s) total += t;
  return total;
}

StepModel::StepModel(const ModelProfile& model, double slowdown) : model_(model), slowdown_(slowdown) {
  if (!(slowdown > 0)) throw std::invalid_argument("model " + model.name + ": compute slowdown must be > 0");
  if (model.batches.empty()) {
    throw std::invalid_argument("model " + model.name + ": no measured batch size");
  }
  if (model.layers.empty()) throw std::invalid_argument("model " + model.name + ": no layers");
  for (const LayerProfile& l : model.layers) {
    require_aligned(model, l.forward_s, "layer " + l.name + " forward_s");
    require_aligned(model, l.backward_s, "layer " + l.name + " backward_s");
  }
  require_aligned(model, model.loss_s, "loss_s");
  require_aligned(model, model.zero_grad_s, "zero_grad_s");
  require_aligned(model, model.optimizer_s, "optimizer_s");
  require_aligned(model, model.iteration_s, "iteration_s");
  for (std::size_t i = 0; i < model.batches.size(); ++i) {
    double parts = model.loss_s[i] + model.zero_grad_s[i] + model.optimizer_s[i];
    for (const LayerProfile& l : model.layers) parts += l.forward_s[i] + l.backward_s[i];
    // overhead_i = max(0, fused iteration - sum of parts)
    overhead_points_.push_back(std::max(0.0, model.iteration_s[i] - parts));
  }
}

StepTimes StepModel::at(int64_t batch) const {
  const auto& bs = model_.batches;
  const double b = static_cast<double>(batch);
  StepTimes t;
  t.forward_s.reserve(model_.layers.size());
  t.backward_s.reserve(model_.layers.size());
  for (const LayerProfile& l : model_.layers) {
    t.forward_s.push_back(
        interpolate_in_batch(bs, l.forward_s, b, BatchExtrapolation::kProportionalFloor));
    t.backward_s.push_back(
        interpolate_in_batch(bs, l.backward_s, b, BatchExtrapolation::kProportionalFloor));
  }
  t.loss_s = interpolate_in_batch(bs, model_.loss_s, b, BatchExtrapolation::kProportionalFloor);
  t.zero_grad_s =
      interpolate_in_batch(bs, model_.zero_grad_s, b, BatchExtrapolation::kHoldNearest);
  t.optimizer_s =
      interpolate_in_batch(bs, model_.optimizer_s, b, BatchExtrapolation::kHoldNearest);
  t.overhead_s = interpolate_in_batch(bs, overhead_points_, b, BatchExtrapolation::kHoldNearest);
  if (slowdown_ != 1.0) {
    for (double& s : t.forward_s) s *= slowdown_;
    for (double& s : t.backward_s) s *= slowdown_;
    t.loss_s *= slowdown_;
    t.zero_grad_s *= slowdown_;
    t.optimizer_s *= slowdown_;
    t.overhead_s *= slowdown_;
  }
  return t;
}

}  // namespace trainsim::train
