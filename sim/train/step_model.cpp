#include "train/step_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "format/errors.h"
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

// Piecewise linear through (x_i, y_i), held at the end values outside; y may be negative.
double signed_interpolate(const std::vector<int64_t>& x, const std::vector<double>& y, double at) {
  if (at <= static_cast<double>(x.front())) return y.front();
  if (at >= static_cast<double>(x.back())) return y.back();
  std::size_t i = 1;
  while (static_cast<double>(x[i]) < at) ++i;
  const double x0 = static_cast<double>(x[i - 1]);
  const double x1 = static_cast<double>(x[i]);
  return y[i - 1] + (y[i] - y[i - 1]) * (at - x0) / (x1 - x0);
}

}  // namespace

double StepTimes::layers_s() const {
  double total = 0;
  for (double t : forward_s) total += t;
  for (double t : backward_s) total += t;
  return total;
}

double StepTimes::critical_path_s() const {
  if (!has_host_issue()) return layers_s() + loss_s + zero_grad_s + optimizer_s;
  // The parts in issue order: device op k ends at max(issue end of k, device end of k-1) + d_k;
  // unrolled, the last one ends at max over k of (sum of h_1..h_k + sum of d_k..d_n).
  double device_end = 0;
  double issued = 0;
  const auto part = [&](double host, double device) {
    issued += host;
    device_end = std::max(device_end, issued) + device;
  };
  for (std::size_t l = 0; l < forward_s.size(); ++l) part(host_forward_s[l], forward_s[l]);
  part(host_loss_s, loss_s);
  for (std::size_t l = backward_s.size(); l-- > 0;) part(host_backward_s[l], backward_s[l]);
  part(host_optimizer_s, optimizer_s);
  part(host_zero_grad_s, zero_grad_s);
  return device_end;
}

LoopTimes fused_loop(const ModelProfile& model) {
  return LoopTimes{model.batches, model.iteration_s, "the fused iteration (no DDP reducer)"};
}

StepModel::StepModel(const ModelProfile& model, const LoopTimes& loop, double slowdown)
    : model_(model), loop_(loop), slowdown_(slowdown) {
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
  if (model.has_host_issue()) {
    for (const LayerProfile& l : model.layers) {
      require_aligned(model, l.host_forward_s, "layer " + l.name + " host_forward_s");
      require_aligned(model, l.host_backward_s, "layer " + l.name + " host_backward_s");
    }
    require_aligned(model, model.host_loss_s, "host_loss_s");
    require_aligned(model, model.host_zero_grad_s, "host_zero_grad_s");
  }
  if (loop.batches.empty() || loop.batches.size() != loop.iteration_s.size()) {
    throw std::invalid_argument("model " + model.name + ": " + loop.what + " has " +
                                std::to_string(loop.iteration_s.size()) + " times for " +
                                std::to_string(loop.batches.size()) + " batch sizes");
  }
  bool any_part = false;
  for (std::size_t i = 0; i < loop.batches.size(); ++i) {
    StepTimes scratch;
    const double parts = parts_at(static_cast<double>(loop.batches[i]), scratch);
    any_part = any_part || parts > 0;
    // excess_i = loop_i - parts(b_i)
    excess_points_.push_back(loop.iteration_s[i] - parts);
    if (loop.iteration_s[i] < 0.5 * parts) {
      throw ProfileInconsistency("model " + model.name + ": " + loop.what + " at batch " +
                                  std::to_string(loop.batches[i]) + " (" +
                                  std::to_string(loop.iteration_s[i]) +
                                  " s) is less than half the sum of its timed parts (" +
                                  std::to_string(parts) + " s)");
    }
  }
  if (!any_part) {
    // The loop alone would all be overhead: nothing says what the steps cost (docs/PROFILE.md).
    throw ProfileInconsistency("model " + model.name + ": every timed part (forward, backward, loss, optimizer, "
                               "zero_grad) is 0 at every measured batch");
  }
}

StepTimes step_parts(const ModelProfile& model, double b) {
  const auto& bs = model.batches;
  StepTimes t;
  for (const LayerProfile& l : model.layers) {
    t.forward_s.push_back(interpolate_in_batch(bs, l.forward_s, b, BatchExtrapolation::kProportionalFloor));
    t.backward_s.push_back(interpolate_in_batch(bs, l.backward_s, b, BatchExtrapolation::kProportionalFloor));
  }
  t.loss_s = interpolate_in_batch(bs, model.loss_s, b, BatchExtrapolation::kProportionalFloor);
  t.zero_grad_s = interpolate_in_batch(bs, model.zero_grad_s, b, BatchExtrapolation::kHoldNearest);
  t.optimizer_s = interpolate_in_batch(bs, model.optimizer_s, b, BatchExtrapolation::kHoldNearest);
  if (model.has_host_issue()) {
    // Issuing a layer's kernels costs the host per kernel, not per sample: linear between
    // measured batches, held outside them.
    for (const LayerProfile& l : model.layers) {
      t.host_forward_s.push_back(interpolate_in_batch(bs, l.host_forward_s, b, BatchExtrapolation::kHoldNearest));
      t.host_backward_s.push_back(interpolate_in_batch(bs, l.host_backward_s, b, BatchExtrapolation::kHoldNearest));
    }
    t.host_loss_s = interpolate_in_batch(bs, model.host_loss_s, b, BatchExtrapolation::kHoldNearest);
    t.host_zero_grad_s = interpolate_in_batch(bs, model.host_zero_grad_s, b, BatchExtrapolation::kHoldNearest);
    t.host_optimizer_s = interpolate_in_batch(bs, model.host_optimizer_s, b, BatchExtrapolation::kHoldNearest);
  }
  return t;
}

double StepModel::parts_at(double b, StepTimes& t) const {
  t = step_parts(model_, b);
  return t.critical_path_s();
}

double StepModel::excess_at(int64_t batch) const {
  const int64_t largest = loop_.batches.back();
  if (batch <= largest) return signed_interpolate(loop_.batches, excess_points_, static_cast<double>(batch));
  // Above the largest measured batch the loop keeps its ratio to its parts there:
  // excess(b) = excess(b_max) * parts(b) / parts(b_max).
  StepTimes scratch;
  const double ratio = parts_at(static_cast<double>(batch), scratch) / parts_at(static_cast<double>(largest), scratch);
  return excess_points_.back() * ratio;
}

StepTimes StepModel::at(int64_t batch) const {
  StepTimes t;
  const double parts = parts_at(static_cast<double>(batch), t);
  const double excess = excess_at(batch);
  if (excess >= 0) {
    t.overhead_s = excess;
  } else {
    // (parts + excess) / parts: the loop is cheaper than its parts timed one by one.
    t.parts_scale = (parts + excess) / parts;
  }
  const double scale = t.parts_scale * slowdown_;
  for (auto* v : {&t.forward_s, &t.backward_s, &t.host_forward_s, &t.host_backward_s}) {
    for (double& s : *v) s *= scale;
  }
  for (double* s : {&t.loss_s, &t.zero_grad_s, &t.optimizer_s, &t.host_loss_s, &t.host_zero_grad_s,
                    &t.host_optimizer_s}) {
    *s *= scale;
  }
  t.overhead_s *= slowdown_;
  return t;
}

}  // namespace trainsim::train
