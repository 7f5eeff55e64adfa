#include "runs/data_parallel.h"

#include <c10/core/DeviceGuard.h>

#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "autocast.h"

namespace trainsim::measure {

DataParallel::DataParallel(models::ResNet18 module, std::vector<torch::Device> devices, Precision precision)
    : module_(std::move(module)), devices_(std::move(devices)), precision_(precision) {
  if (devices_.size() < 2) throw std::invalid_argument("DataParallel: needs two or more devices");
  for (const torch::Tensor& p : module_->parameters()) {
    if (p.device() != devices_[0]) {
      throw std::invalid_argument("DataParallel: the module must live on " + devices_[0].str() + ", not " +
                                  p.device().str());
    }
  }
  for (size_t d = 1; d < devices_.size(); ++d) {
    auto copy = std::dynamic_pointer_cast<models::ResNet18Impl>(module_->clone(devices_[d]));
    if (!copy) throw std::logic_error("DataParallel: clone() did not return a ResNet18");
    replicas_.emplace_back(copy);
  }
}

namespace {

// PyTorch's coalescing buffer for broadcast_coalesced and reduce_add_coalesced (10 MiB).
constexpr int64_t kCoalesceBytes = 10 * 1024 * 1024;

// Indices of `tensors` in chunks, in the manner of torch/csrc/utils/tensor_flatten's take_tensors:
// one dtype per chunk (BatchNorm's num_batches_tracked is int64), in order, a chunk closed once
// it holds kCoalesceBytes or more.
std::vector<std::vector<size_t>> coalesced_chunks(const std::vector<torch::Tensor>& tensors) {
  std::map<c10::ScalarType, std::vector<size_t>> open;
  std::map<c10::ScalarType, int64_t> open_bytes;
  std::vector<std::vector<size_t>> chunks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const c10::ScalarType type = tensors[i].scalar_type();
    open[type].push_back(i);
    open_bytes[type] += tensors[i].numel() * static_cast<int64_t>(tensors[i].element_size());
    if (open_bytes[type] >= kCoalesceBytes) {
      chunks.push_back(std::move(open[type]));
      open[type].clear();
      open_bytes[type] = 0;
    }
  }
  for (auto& [type, rest] : open) {
    if (!rest.empty()) chunks.push_back(std::move(rest));
  }
  return chunks;
}

// The tensors `indices` of `tensors`, flattened into one buffer and copied to `device`.
torch::Tensor flat_copy(const std::vector<torch::Tensor>& tensors, const std::vector<size_t>& indices,
                        const torch::Device& device) {
  std::vector<torch::Tensor> parts;
  for (size_t i : indices) parts.push_back(tensors[i].reshape(-1));
  return torch::cat(parts).to(device, /*non_blocking=*/true);
}

}  // namespace

void DataParallel::copy_coalesced(const std::vector<torch::Tensor>& from, const std::vector<torch::Tensor>& to) {
  if (from.size() != to.size()) throw std::logic_error("DataParallel: replica layout differs from the module's");
  for (const std::vector<size_t>& chunk : coalesced_chunks(from)) {
    const torch::Tensor flat = flat_copy(from, chunk, to[chunk.front()].device());
    int64_t offset = 0;
    for (size_t i : chunk) {
      const int64_t n = to[i].numel();
      to[i].copy_(flat.narrow(0, offset, n).view_as(to[i]));
      offset += n;
    }
  }
}

torch::Tensor DataParallel::forward(const torch::Tensor& images) {
  // 2. scatter (chunk, then one copy per device).
  const std::vector<torch::Tensor> chunks = images.chunk(static_cast<int64_t>(devices_.size()), 0);
  used_ = chunks.size() - 1;
  std::vector<torch::Tensor> inputs;
  for (size_t i = 0; i < chunks.size(); ++i) inputs.push_back(chunks[i].to(devices_[i], /*non_blocking=*/true));

  // 1. replicate: parameters and buffers of the module onto the replicas in use.
  {
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> params = module_->parameters();
    const std::vector<torch::Tensor> buffers = module_->buffers();
    for (size_t r = 0; r < used_; ++r) {
      copy_coalesced(params, replicas_[r]->parameters());
      copy_coalesced(buffers, replicas_[r]->buffers());
      replicas_[r]->train(module_->is_training());
    }
  }

  // 3. parallel_apply: one thread per replica (device 0's is the module), grad mode inherited.
  const bool grad = torch::GradMode::is_enabled();
  std::vector<torch::Tensor> outputs(inputs.size());
  std::vector<std::exception_ptr> errors(inputs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inputs.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        torch::AutoGradMode mode(grad);
        c10::OptionalDeviceGuard guard;
        if (devices_[i].is_cuda()) guard.reset_device(devices_[i]);
        AutocastRegion autocast(precision_, devices_[i]);  // a thread starts without the caller's
        outputs[i] = i == 0 ? module_->forward(inputs[i]) : replicas_[i - 1]->forward(inputs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  // 4. gather onto device 0.
  std::vector<torch::Tensor> on_first;
  for (const torch::Tensor& out : outputs) on_first.push_back(out.to(devices_[0], /*non_blocking=*/true));
  return torch::cat(on_first, 0);
}

void DataParallel::reduce_gradients() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = module_->parameters();
  for (const torch::Tensor& p : params) {
    if (!p.grad().defined()) throw std::logic_error("DataParallel: reduce_gradients before backward");
  }
  for (size_t r = 0; r < used_; ++r) {
    std::vector<torch::Tensor> replica_params = replicas_[r]->parameters();
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : replica_params) {
      if (!p.grad().defined()) throw std::logic_error("DataParallel: a replica parameter got no gradient");
      grads.push_back(p.grad());
    }
    // Coalesced: each chunk of the replica's gradients copied to device 0 as one buffer, then added.
    for (const std::vector<size_t>& chunk : coalesced_chunks(grads)) {
      const torch::Tensor flat = flat_copy(grads, chunk, devices_[0]);
      int64_t offset = 0;
      for (size_t i : chunk) {
        const int64_t n = params[i].numel();
        params[i].mutable_grad().add_(flat.narrow(0, offset, n).view_as(params[i]));
        offset += n;
      }
    }
    for (torch::Tensor& p : replica_params) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace trainsim::measure
