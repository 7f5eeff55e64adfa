#include "models/cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace trainsim::models {
namespace {

constexpr double kFloatBytes = 4;
constexpr double kIndexBytes = 8;         // int64: max-pool argmax, class targets
constexpr double kGemmTile = 128;         // a CTA computes a 128x128 tile of the GEMM's output
constexpr double kElementsPerCta = 1024;  // elementwise kernels: 256 threads x 4 elements

double gemm_tiles(double m, double n) {
  return std::ceil(m / kGemmTile) * std::ceil(n / kGemmTile);
}

// Parts a GEMM's reduction of depth k may be split into (split-K): one 128-deep slice each.
double reduction_splits(double k) { return std::max(1.0, std::floor(k / kGemmTile)); }

double elementwise_tiles(double elements) { return std::ceil(elements / kElementsPerCta); }

OpCost op_cost(std::string name, OpKind kind, double flops, double bytes, double tiles, double splits = 1) {
  OpCost c;
  c.name = std::move(name);
  c.kind = kind;
  c.flops = flops;
  c.bytes = bytes;
  c.parallel_tiles = tiles;
  c.reduction_splits = splits;
  return c;
}

void check_batch(int64_t batch) {
  if (batch < 1) throw std::invalid_argument("batch must be >= 1, got " + std::to_string(batch));
}

// One op's tensors at batch n, in elements.
struct Sizes {
  double in;      // the first input
  double out;
  double weight;
  double params;  // weight + bias

  Sizes(const OpShape& op, double n)
      : in(n * static_cast<double>(op.inputs.front().elements())),
        out(n * static_cast<double>(op.output.elements())),
        weight(static_cast<double>(op.weight_elements)),
        params(static_cast<double>(op.weight_elements + op.bias_elements)) {}
};

OpCost forward_cost(const OpShape& op, double n) {
  const Sizes e(op, n);
  const double flops = n * op.forward_flops;
  const double elementwise = elementwise_tiles(std::max(e.in, e.out));
  switch (op.kind) {
    case OpKind::kConv:
      return op_cost(op.name, op.kind, flops, kFloatBytes * (e.in + e.weight + e.out),
                     gemm_tiles(e.out / static_cast<double>(op.output.channels),
                                static_cast<double>(op.output.channels)),
                     reduction_splits(static_cast<double>(op.inputs.front().channels) * op.kernel * op.kernel));
    case OpKind::kLinear:
      return op_cost(op.name, op.kind, flops, kFloatBytes * (e.in + e.params + e.out),
                     gemm_tiles(n, static_cast<double>(op.output.channels)),
                     reduction_splits(static_cast<double>(op.inputs.front().elements())));
    case OpKind::kBatchNorm:
      return op_cost(op.name, op.kind, flops, kFloatBytes * (3 * e.in + e.params), elementwise);
    case OpKind::kRelu:
      return op_cost(op.name, op.kind, flops, kFloatBytes * 2 * e.in, elementwise);
    case OpKind::kAdd:
      return op_cost(op.name, op.kind, flops, kFloatBytes * 3 * e.out, elementwise);
    case OpKind::kMaxPool:
      return op_cost(op.name, op.kind, flops, kFloatBytes * (e.in + e.out) + kIndexBytes * e.out,
                     elementwise);
    case OpKind::kAvgPool:
      return op_cost(op.name, op.kind, flops, kFloatBytes * (e.in + e.out), elementwise);
    case OpKind::kLoss:
    case OpKind::kOptimizer:
    case OpKind::kZeroGrad:
      break;
  }
  throw std::logic_error(std::string("layer op of kind ") + to_string(op.kind));
}

// The backward kernels of `op`, appended in execution order; `grad_input`: its input requires
// grad (false only for the first convolution, on the data batch).
void append_backward(const OpShape& op, double n, bool grad_input, std::vector<OpCost>& out) {
  const Sizes e(op, n);
  const double elementwise = elementwise_tiles(std::max(e.in, e.out));
  const double in_channels = static_cast<double>(op.inputs.front().channels);
  const double out_channels = static_cast<double>(op.output.channels);
  switch (op.kind) {
    case OpKind::kConv: {
      const double flops = n * op.forward_flops;
      if (grad_input) {
        out.push_back(op_cost(op.name + ".dgrad", op.kind, flops,
                              kFloatBytes * (e.out + e.weight + e.in),
                              gemm_tiles(e.in / in_channels, in_channels),
                              reduction_splits(out_channels * op.kernel * op.kernel)));
      }
      out.push_back(op_cost(op.name + ".wgrad", op.kind, flops,
                            kFloatBytes * (e.in + e.out + e.weight),
                            gemm_tiles(out_channels, in_channels * op.kernel * op.kernel),
                            reduction_splits(e.out / out_channels)));
      return;
    }
    case OpKind::kLinear: {
      const double gemm = 2 * n * e.weight;
      const double features = static_cast<double>(op.inputs.front().elements());
      if (grad_input) {
        out.push_back(op_cost(op.name + ".dgrad", op.kind, gemm,
                              kFloatBytes * (e.out + e.weight + e.in), gemm_tiles(n, features),
                              reduction_splits(out_channels)));
      }
      out.push_back(op_cost(op.name + ".wgrad", op.kind, gemm + e.out,
                            kFloatBytes * (e.in + e.out + e.params),
                            gemm_tiles(out_channels, features), reduction_splits(n)));
      return;
    }
    case OpKind::kBatchNorm:
      out.push_back(op_cost(op.name, op.kind, 9 * e.in, kFloatBytes * (5 * e.in + e.params),
                            elementwise));
      return;
    case OpKind::kRelu:
      out.push_back(op_cost(op.name, op.kind, e.in, kFloatBytes * 3 * e.in, elementwise));
      return;
    case OpKind::kAdd:
      return;  // dy is passed to both operands as is
    case OpKind::kMaxPool:
      out.push_back(op_cost(op.name, op.kind, e.out, (kFloatBytes + kIndexBytes) * e.out +
                                                          kFloatBytes * e.in,
                            elementwise));
      return;
    case OpKind::kAvgPool:
      out.push_back(op_cost(op.name, op.kind, e.in, kFloatBytes * (e.out + e.in), elementwise));
      return;
    case OpKind::kLoss:
    case OpKind::kOptimizer:
    case OpKind::kZeroGrad:
      break;
  }
  throw std::logic_error(std::string("layer op of kind ") + to_string(op.kind));
}

// Bytes `op` saves for backward beyond tensors already saved (`saved`: ids, across the model).
double newly_saved_bytes(const OpShape& op, double n, std::set<int>& saved) {
  auto keep = [&](const FeatureMap& t) {
    return saved.insert(t.id).second ? kFloatBytes * n * static_cast<double>(t.elements()) : 0.0;
  };
  switch (op.kind) {
    case OpKind::kConv:
    case OpKind::kLinear:
    case OpKind::kAvgPool:
      return keep(op.inputs.front());
    case OpKind::kBatchNorm:  // plus the batch mean and invstd, C each
      return keep(op.inputs.front()) + kFloatBytes * 2 * static_cast<double>(op.output.channels);
    case OpKind::kRelu:
      return keep(op.output);
    case OpKind::kMaxPool:  // plus the argmax
      return keep(op.inputs.front()) + kIndexBytes * n * static_cast<double>(op.output.elements());
    case OpKind::kAdd:
    case OpKind::kLoss:
    case OpKind::kOptimizer:
    case OpKind::kZeroGrad:
      return 0;
  }
  return 0;
}

// A tensor that requires grad and the number of ops reading it (each sends it a gradient).
struct Readers {
  FeatureMap tensor;
  int count = 0;
};

double sum_of(const std::vector<OpCost>& ops, double OpCost::*field) {
  double total = 0;
  for (const auto& op : ops) total += op.*field;
  return total;
}

}  // namespace

double LayerCost::forward_flops() const { return sum_of(forward, &OpCost::flops); }
double LayerCost::backward_flops() const { return sum_of(backward, &OpCost::flops); }
double LayerCost::forward_bytes() const { return sum_of(forward, &OpCost::bytes); }
double LayerCost::backward_bytes() const { return sum_of(backward, &OpCost::bytes); }

std::vector<LayerCost> layer_costs(const std::string& model_name, int64_t batch) {
  check_batch(batch);
  const ModelDescription d = describe_model_ops(model_name);
  const double n = static_cast<double>(batch);

  // A tensor requires grad when an op with parameters or with an input requiring grad made it
  // (the data batch, id 0, does not). The gradients of a tensor read by several ops are summed
  // after the backward of its first reader in forward order, the last to send one.
  std::set<int> requires_grad;
  std::map<int, Readers> readers;                             // by tensor id
  std::map<const OpShape*, std::vector<int>> first_reader_of;  // op -> tensor ids
  for (const auto& ops : d.layer_ops) {
    for (const auto& op : ops) {
      bool grad = op.weight_elements + op.bias_elements > 0;
      for (const auto& in : op.inputs) {
        if (requires_grad.count(in.id) == 0) continue;
        grad = true;
        Readers& r = readers[in.id];
        if (r.count++ == 0) {
          r.tensor = in;
          first_reader_of[&op].push_back(in.id);
        }
      }
      if (grad) requires_grad.insert(op.output.id);
    }
  }

  std::vector<LayerCost> costs;
  std::set<int> saved;
  for (size_t l = 0; l < d.layer_ops.size(); ++l) {
    const auto& ops = d.layer_ops[l];
    LayerCost layer;
    layer.layer = d.model.layers[l].name;
    for (const auto& op : ops) {
      layer.forward.push_back(forward_cost(op, n));
      layer.saved_bytes += newly_saved_bytes(op, n, saved);
    }
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      if (requires_grad.count(op->output.id) == 0) continue;
      append_backward(*op, n, requires_grad.count(op->inputs.front().id) > 0, layer.backward);
      const auto first = first_reader_of.find(&*op);
      if (first == first_reader_of.end()) continue;
      for (int id : first->second) {
        const Readers& r = readers.at(id);
        if (r.count < 2) continue;
        const double elements = n * static_cast<double>(r.tensor.elements());
        const double adds = (r.count - 1) * elements;
        layer.backward.push_back(op_cost(op->name + ".grad_sum", OpKind::kAdd, adds,
                                         kFloatBytes * 3 * adds, elementwise_tiles(elements)));
      }
    }
    costs.push_back(std::move(layer));
  }
  return costs;
}

StepCost step_cost(const std::string& model_name, int64_t batch) {
  check_batch(batch);
  const ModelProfile model = describe_model(model_name);
  const double n = static_cast<double>(batch);
  const double logits = n * model.num_classes;
  const double params = static_cast<double>(model.parameters);

  StepCost step;
  step.loss_forward = op_cost("loss", OpKind::kLoss, 5 * logits + 2 * n,
                              2 * kFloatBytes * logits + (kIndexBytes + kFloatBytes) * n +
                                  kFloatBytes,
                              elementwise_tiles(logits));
  step.loss_backward = op_cost("loss", OpKind::kLoss, 4 * logits + n,
                               4 * kFloatBytes * logits + kIndexBytes * n,
                               elementwise_tiles(logits));
  step.optimizer = op_cost("sgd", OpKind::kOptimizer, 6 * params, 5 * kFloatBytes * params,
                           elementwise_tiles(params));
  step.zero_grad = op_cost("zero_grad", OpKind::kZeroGrad, 0, kFloatBytes * params,
                           elementwise_tiles(params));
  step.input_bytes = n * static_cast<double>(model.input_bytes_per_sample);
  step.param_bytes = kFloatBytes * params;
  return step;
}

}  // namespace trainsim::models
