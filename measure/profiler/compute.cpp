#include "profiler/compute.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "models/staged.h"

namespace trainsim::measure::profiler {
double BatchTimings::sum_of_parts_s() const {
  return std::accumulate(forward_s.begin(), forward_s.end(), 0.0) +
         std::accumulate(backward_s.begin(), backward_s.end(), 0.0) + loss_s + zero_grad_s +
         optimizer_s;
}

BatchTimings measure_batch(const ModelProfile& description, int64_t batch, const Device& device,
                           const Repetition& rep, uint64_t seed) {
  FusedIteration step(description, batch, device, seed);
  models::StagedModel& model = step.model();
  torch::optim::SGD& optimizer = step.optimizer();
  const torch::Tensor& images = step.images();
  const torch::Tensor& labels = step.labels();
  const auto fused_iteration = [&] { step.run(); };

  BatchTimings t;
  t.batch = batch;

  // Peak memory of one training iteration, first, while nothing else is alive: model,
  // optimizer state (momentum, created by this first step), gradients, activations, inputs.
  release_cached_memory(device);
  reset_peak_memory(device);
  fused_iteration();
  t.peak_memory_bytes = peak_memory_bytes(device);

  t.iteration_s = median_seconds(device, rep, nullptr, fused_iteration);

  // The real input of every stage: the activations of one full forward.
  const size_t stages = model.num_stages();
  std::vector<torch::Tensor> inputs(stages + 1);
  {
    torch::NoGradGuard no_grad;
    inputs[0] = images;
    for (size_t i = 0; i < stages; ++i) inputs[i + 1] = model.forward_stage(i, inputs[i]);
  }

  for (size_t i = 0; i < stages; ++i) {
    // Every stage but the stem receives an input that requires grad, as inside the full
    // graph, so backward computes the gradient for the previous stage too.
    torch::Tensor in = inputs[i].detach();
    if (i > 0) in.requires_grad_(true);
    t.forward_s.push_back(median_seconds(device, rep, nullptr, [&] { model.forward_stage(i, in); }));

    const torch::Tensor grad = torch::randn_like(inputs[i + 1]);  // random upstream gradient
    torch::Tensor out;
    t.backward_s.push_back(median_seconds(
        device, rep,
        [&] {
          optimizer.zero_grad();
          if (in.requires_grad()) in.mutable_grad() = torch::Tensor();
          out = model.forward_stage(i, in);
        },
        [&] { out.backward(grad); }));
  }

  torch::Tensor logits = inputs[stages].detach().requires_grad_(true);
  t.loss_s = median_seconds(
      device, rep, [&] { logits.mutable_grad() = torch::Tensor(); },
      [&] { torch::nn::functional::cross_entropy(logits, labels).backward(); });

  inputs.clear();  // the stage inputs are not part of the optimizer's working set
  t.zero_grad_s = median_seconds(device, rep, [&] { ensure_gradients(model.module().parameters()); },
                                 [&] { optimizer.zero_grad(); });
  t.optimizer_s = median_seconds(device, rep, [&] { ensure_gradients(model.module().parameters()); },
                                 [&] { optimizer.step(); });
  return t;
}

bool has_batch(const ModelProfile& model, int64_t batch) {
  return std::find(model.batches.begin(), model.batches.end(), batch) != model.batches.end();
}

void record_batch(ModelProfile& model, const BatchTimings& t) {
  if (has_batch(model, t.batch)) {
    throw std::invalid_argument(model.name + ": batch " + std::to_string(t.batch) + " recorded twice");
  }
  if (t.forward_s.size() != model.layers.size() || t.backward_s.size() != model.layers.size()) {
    throw std::invalid_argument(model.name + ": timings for " + std::to_string(t.forward_s.size()) +
                                " stages, the model has " + std::to_string(model.layers.size()));
  }
  const bool ddp_aligned = t.ddp_iteration_s && model.ddp_iteration_s.size() == model.batches.size();
  const auto at = static_cast<size_t>(
      std::upper_bound(model.batches.begin(), model.batches.end(), t.batch) - model.batches.begin());
  const auto insert = [at](auto& values, auto value) {
    values.insert(values.begin() + static_cast<std::ptrdiff_t>(at), value);
  };
  insert(model.batches, t.batch);
  for (size_t i = 0; i < model.layers.size(); ++i) {
    insert(model.layers[i].forward_s, t.forward_s[i]);
    insert(model.layers[i].backward_s, t.backward_s[i]);
  }
  insert(model.loss_s, t.loss_s);
  insert(model.zero_grad_s, t.zero_grad_s);
  insert(model.optimizer_s, t.optimizer_s);
  insert(model.iteration_s, t.iteration_s);
  if (ddp_aligned) {
    insert(model.ddp_iteration_s, *t.ddp_iteration_s);
  } else {
    model.ddp_iteration_s.clear();
  }
  insert(model.peak_memory_bytes, t.peak_memory_bytes);
}

}  // namespace trainsim::measure::profiler
