#include "runs/ddp_reducer.h"

#include <map>
#include <stdexcept>
#include <tuple>

namespace trainsim::measure {

std::vector<std::vector<size_t>> assign_gradient_buckets(const std::vector<int64_t>& tensor_bytes,
                                                         int64_t first_cap, int64_t cap) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> current;
  int64_t current_bytes = 0;
  for (size_t k = tensor_bytes.size(); k-- > 0;) {
    current.push_back(k);
    current_bytes += tensor_bytes[k];
    const int64_t limit = buckets.empty() ? first_cap : cap;
    if (current_bytes >= limit) {  // close once the cap is reached (may overshoot by one tensor)
      buckets.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
  }
  if (!current.empty()) buckets.push_back(std::move(current));
  return buckets;
}

void broadcast_coalesced(AsyncCommunicator& communicator, const std::vector<torch::Tensor>& tensors,
                         int root) {
  torch::NoGradGuard no_grad;
  // Group by (dtype, device) so each group flattens into one tensor.
  std::map<std::tuple<int, std::string>, std::vector<torch::Tensor>> groups;
  for (const auto& t : tensors) {
    groups[{static_cast<int>(t.scalar_type()), t.device().str()}].push_back(t);
  }
  for (auto& [key, group] : groups) {
    std::vector<torch::Tensor> flat_parts;
    flat_parts.reserve(group.size());
    for (const auto& t : group) flat_parts.push_back(t.reshape({-1}));
    torch::Tensor flat = torch::cat(flat_parts);
    communicator.broadcast(flat, root)->wait();
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  }
}

DdpReducer::DdpReducer(torch::nn::Module& module, AsyncCommunicator& communicator,
                       int64_t first_bucket_bytes, int64_t bucket_bytes)
    : module_(module), communicator_(communicator) {
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    names_.push_back(item.key());
    params_.push_back(item.value());
  }
  if (params_.empty()) throw std::invalid_argument("DdpReducer: the module has no parameters");
  std::vector<int64_t> bytes;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (p.scalar_type() != torch::kFloat32 || p.device() != params_.front().device()) {
      throw std::invalid_argument("DdpReducer: parameter " + names_[i] +
                                  " is not float32 on the first parameter's device");
    }
    bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  }

  // DDP's constructor: every rank starts from rank 0's parameters and buffers.
  std::vector<torch::Tensor> state = params_;
  for (const auto& b : module.buffers(/*recurse=*/true)) state.push_back(b);
  broadcast_coalesced(communicator_, state, /*root=*/0);

  bucket_params_ = assign_gradient_buckets(bytes, first_bucket_bytes, bucket_bytes);
  slots_.resize(params_.size());
  for (size_t b = 0; b < bucket_params_.size(); ++b) {
    int64_t elements = 0;
    for (size_t p : bucket_params_[b]) {
      slots_[p] = Slot{b, elements};
      elements += params_[p].numel();
    }
    flat_.push_back(torch::zeros({elements}, params_.front().options().requires_grad(false)));
  }
  ready_.assign(params_.size(), false);
  pending_.assign(bucket_params_.size(), 0);
  works_.resize(bucket_params_.size());

  for (size_t i = 0; i < params_.size(); ++i) {
    hook_handles_.push_back(
        params_[i].register_hook([this, i](torch::Tensor grad) { on_gradient_ready(i, grad); }));
  }
}

DdpReducer::~DdpReducer() {
  for (size_t i = 0; i < params_.size(); ++i) params_[i].remove_hook(hook_handles_[i]);
}

std::vector<int64_t> DdpReducer::bucket_bytes() const {
  std::vector<int64_t> bytes;
  for (const auto& flat : flat_) bytes.push_back(flat.numel() * flat.element_size());
  return bytes;
}

void DdpReducer::sync_buffers() {
  const auto buffers = module_.buffers(/*recurse=*/true);
  if (!buffers.empty()) broadcast_coalesced(communicator_, buffers, /*root=*/0);
}

void DdpReducer::prepare_for_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_.assign(params_.size(), false);
  for (size_t b = 0; b < bucket_params_.size(); ++b) pending_[b] = bucket_params_[b].size();
  next_launch_ = 0;
  for (auto& w : works_) w.reset();
  armed_ = true;
}

void DdpReducer::on_gradient_ready(size_t param, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;  // a backward outside a DDP step is not reduced
  if (ready_[param]) {
    throw std::logic_error("DdpReducer: gradient of " + names_[param] +
                           " arrived twice in one backward");
  }
  ready_[param] = true;
  const Slot slot = slots_[param];
  {
    torch::NoGradGuard no_grad;
    flat_[slot.bucket].narrow(0, slot.offset, grad.numel()).copy_(grad.reshape({-1}));
  }
  --pending_[slot.bucket];
  // Launch every complete bucket at the head of the order: all ranks issue the same
  // collectives in the same sequence, whatever order their gradients arrived in.
  while (next_launch_ < bucket_params_.size() && pending_[next_launch_] == 0) {
    works_[next_launch_] = communicator_.all_reduce(flat_[next_launch_]);
    ++next_launch_;
  }
}

void DdpReducer::finalize_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  if (next_launch_ < bucket_params_.size()) {
    std::string missing;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!ready_[i]) missing += (missing.empty() ? "" : ", ") + names_[i];
    }
    throw std::runtime_error("DdpReducer: no gradient for parameter(s) " + missing +
                             " in this backward (every parameter must take part in the loss)");
  }
  torch::NoGradGuard no_grad;
  const double world = communicator_.world_size();
  for (size_t b = 0; b < bucket_params_.size(); ++b) {
    works_[b]->wait();
    works_[b].reset();
    flat_[b].div_(world);  // gradient average = sum over ranks / world size
    for (size_t p : bucket_params_[b]) {
      auto& param = params_[p];
      param.mutable_grad().copy_(
          flat_[b].narrow(0, slots_[p].offset, param.numel()).view_as(param));
    }
  }
}

}  // namespace trainsim::measure
