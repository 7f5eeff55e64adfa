#include "profiler/compute.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "autocast.h"
#include "models/staged.h"
#include "profiler/page_faults.h"

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

  const int64_t faults_before = minor_faults();
  t.iteration_s = median_seconds(device, rep, nullptr, fused_iteration);
  t.minor_faults = static_cast<double>(minor_faults() - faults_before) / (rep.warmup + rep.repeats);
  // The steady state's peak: one more iteration after the warm-up and the timed ones (cuDNN's
  // autotuning has chosen its algorithms, the caching allocator holds its blocks).
  reset_peak_memory(device);
  fused_iteration();
  t.steady_peak_memory_bytes = peak_memory_bytes(device);

  // The real input of every stage: the activations of one full forward (in the precision's dtypes).
  const torch::Device dev = device.torch_device();
  const size_t stages = model.num_stages();
  std::vector<torch::Tensor> inputs(stages + 1);
  {
    torch::NoGradGuard no_grad;
    AutocastRegion region(device.precision, dev);
    inputs[0] = images;
    for (size_t i = 0; i < stages; ++i) inputs[i + 1] = model.forward_stage(i, inputs[i]);
  }

  // Device time of every part, and on a GPU the host's time to issue it, from the same runs.
  const bool host_issue = device.is_cuda();
  const auto timed = [&](const std::function<void()>& setup, const std::function<void()>& part, double& device_s,
                         double* host_s) {
    const HostAndDevice t = median_host_and_device_seconds(device, rep, setup, part);
    device_s = t.device_s;
    if (host_issue) *host_s = t.host_s;
  };
  for (size_t i = 0; i < stages; ++i) {
    // Every stage but the stem receives an input that requires grad, as inside the full
    // graph, so backward computes the gradient for the previous stage too.
    torch::Tensor in = inputs[i].detach();
    if (i > 0) in.requires_grad_(true);
    double forward = 0, host_forward = 0;
    timed(
        nullptr,
        [&] {
          AutocastRegion region(device.precision, dev);
          model.forward_stage(i, in);
        },
        forward, &host_forward);
    t.forward_s.push_back(forward);

    const torch::Tensor grad = torch::randn_like(inputs[i + 1]);  // random upstream gradient
    torch::Tensor out;
    double backward = 0, host_backward = 0;
    timed(
        [&] {
          optimizer.zero_grad();
          if (in.requires_grad()) in.mutable_grad() = torch::Tensor();
          AutocastRegion region(device.precision, dev);
          out = model.forward_stage(i, in);
        },
        [&] { out.backward(grad); }, backward, &host_backward);
    t.backward_s.push_back(backward);
    if (host_issue) {
      t.host_forward_s.push_back(host_forward);
      t.host_backward_s.push_back(host_backward);
    }
  }

  torch::Tensor logits = inputs[stages].detach().requires_grad_(true);
  timed([&] { logits.mutable_grad() = torch::Tensor(); },
        [&] {
          torch::Tensor loss;
          {
            AutocastRegion region(device.precision, dev);
            loss = torch::nn::functional::cross_entropy(logits, labels);
          }
          loss.backward();
        },
        t.loss_s, &t.host_loss_s);

  inputs.clear();  // the stage inputs are not part of the optimizer's working set
  timed([&] { ensure_gradients(model.module().parameters()); }, [&] { optimizer.zero_grad(); }, t.zero_grad_s,
        &t.host_zero_grad_s);
  timed([&] { ensure_gradients(model.module().parameters()); }, [&] { optimizer.step(); }, t.optimizer_s,
        &t.host_optimizer_s);
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
  // An optional per-batch array: kept only while every batch has a value (every earlier one:
  // batches - 1 values), else cleared.
  const auto insert_optional = [&](std::vector<double>& values, const std::optional<double>& value) {
    if (value && values.size() + 1 == model.batches.size()) {
      insert(values, *value);
    } else {
      values.clear();
    }
  };
  insert_optional(model.ddp_iteration_s, t.ddp_iteration_s);
  insert(model.peak_memory_bytes, t.peak_memory_bytes);
  insert_optional(model.steady_peak_memory_bytes, t.steady_peak_memory_bytes);
  insert_optional(model.minor_faults, t.minor_faults);
  // Host issue times: kept only while every batch has them (every earlier one: batches - 1).
  if (t.has_host_issue() && model.host_optimizer_s.size() + 1 == model.batches.size()) {
    for (size_t i = 0; i < model.layers.size(); ++i) {
      insert(model.layers[i].host_forward_s, t.host_forward_s[i]);
      insert(model.layers[i].host_backward_s, t.host_backward_s[i]);
    }
    insert(model.host_loss_s, t.host_loss_s);
    insert(model.host_zero_grad_s, t.host_zero_grad_s);
    insert(model.host_optimizer_s, t.host_optimizer_s);
  } else {
    for (LayerProfile& l : model.layers) {
      l.host_forward_s.clear();
      l.host_backward_s.clear();
    }
    model.host_loss_s.clear();
    model.host_zero_grad_s.clear();
    model.host_optimizer_s.clear();
  }
}

}  // namespace trainsim::measure::profiler
