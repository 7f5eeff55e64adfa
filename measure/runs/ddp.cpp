#include "runs/ddp.h"

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace trainsim::measure {
namespace {

using Indices = std::vector<std::vector<size_t>>;
using Limits = std::vector<size_t>;
using Group = c10::intrusive_ptr<c10d::ProcessGroup>;
using Sparse = std::vector<bool>;
using Names = std::unordered_map<size_t, std::string>;
using Tensors = std::vector<at::Tensor>;

template <typename...>
inline constexpr bool kAlwaysFalse = false;

// c10d::Reducer's constructor gained and lost arguments across LibTorch releases; this calls the
// one this LibTorch has with what DistributedDataParallel passes for its defaults. R is
// c10d::Reducer: a template parameter, so that only the matching branch is instantiated.
template <typename R>
std::unique_ptr<R> make_reducer(Tensors params, Indices buckets, Limits limits, Group group, Names names) {
  Sparse sparse(params.size(), false);
  constexpr int64_t cap = kBucketBytes;
  constexpr int64_t first_cap = kFirstBucketBytes;
  constexpr bool find_unused = false;
  constexpr bool as_view = false;
  if constexpr (std::is_constructible_v<R, Tensors, Indices, Limits, Group, Sparse, int64_t, bool, bool, Names,
                                        int64_t>) {
    // LibTorch 1.13 and the 2.x releases with per_bucket_size_limits.
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(limits), std::move(group),
                               std::move(sparse), cap, find_unused, as_view, std::move(names), first_cap);
  } else if constexpr (std::is_constructible_v<R, Tensors, Indices, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t>) {
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap);
  } else if constexpr (std::is_constructible_v<R, Tensors, Indices, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t, bool>) {
    // 2.x with skip_all_reduce_unused_params (default False).
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap, false);
  } else if constexpr (std::is_constructible_v<R, Tensors, Indices, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t, bool, bool>) {
    // ... and use_python_reducer (False: the C++ reducer).
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap, false, false);
  } else if constexpr (std::is_constructible_v<R, Tensors, Indices, Group, Sparse, int64_t, bool, bool, Names,
                                               int64_t, bool, bool, std::vector<int64_t>>) {
    // ... and the rebuild's per-bucket caps: DDP's defaults, 1 MiB then 25 MiB.
    return std::make_unique<R>(std::move(params), std::move(buckets), std::move(group), std::move(sparse), cap,
                               find_unused, as_view, std::move(names), first_cap, false, false,
                               std::vector<int64_t>{first_cap, cap});
  } else {
    static_assert(kAlwaysFalse<R>, "c10d::Reducer has a constructor measure/runs/ddp.cpp does not know");
  }
}

Tensors detached(const Tensors& tensors) {
  Tensors out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(t.detach());
  return out;
}

}  // namespace

// The squared norm of this rank's gradients over one backward, summed by the comm hook.
struct DistributedDataParallel::NormState {
  torch::Tensor sum;  // 0-dim float64 on the device
};

namespace {

// DDP's default reduction (allreduce_hook: divide by the world size, all-reduce the bucket),
// after adding the bucket's squared norm (this rank's own gradient) to a device accumulator.
// With a hook registered the reducer copies the gradients into the bucket undivided.
template <typename State>
class LocalNormHook final : public c10d::CommHookInterface {
 public:
  LocalNormHook(Group group, int world_size, std::shared_ptr<State> state)
      : group_(std::move(group)), world_size_(world_size), state_(std::move(state)) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor& buffer = bucket.getBufferRef();
    {
      torch::NoGradGuard no_grad;
      state_->sum.add_(buffer.square().sum(torch::kFloat64));
      buffer.div_(world_size_);
    }
    std::vector<at::Tensor> tensors = {buffer};
    return group_->allreduce(tensors)->getFuture();
  }

  // The all-reduce's future holds the list of its tensors (as c10d's own C++ hooks parse it).
  at::Tensor parseHookResult(const c10::IValue& result) override {
    if (result.isTensor()) return result.toTensor();
    return result.toTensorVector().at(0);
  }

 private:
  Group group_;
  int world_size_;
  std::shared_ptr<State> state_;
};

}  // namespace

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module, Communicator& communicator)
    : module_(module), communicator_(communicator), params_(module.parameters(/*recurse=*/true)) {
  if (params_.empty()) throw std::invalid_argument("DistributedDataParallel: the module has no parameters");
  const Group& group = communicator_.process_group();

  // _verify_param_shape_across_processes, then _sync_module_states: every rank starts from rank
  // 0's parameters and buffers.
  c10d::verify_params_across_processes(group, params_, {});
  Tensors state = detached(params_);
  for (const auto& b : detached(module_.buffers(/*recurse=*/true))) state.push_back(b);
  c10d::broadcast_coalesced(group, state, static_cast<size_t>(kBroadcastBucketBytes), /*rank=*/0);

  // _ddp_init_helper: without find_unused_parameters the first iteration's assignment is one
  // bucket (bucket_size_limits = [sys.maxsize]), reversed as DDP passes it.
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      params_, {std::numeric_limits<size_t>::max()}, Sparse(params_.size(), false));
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  Names names;
  size_t index = 0;
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) names[index++] = item.key();
  reducer_ = make_reducer<c10d::Reducer>(params_, std::move(buckets), std::move(limits), group, std::move(names));
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::pre_forward() {
  reducer_->prepare_for_forward();
  if (reducer_->rebuild_buckets()) rebuilt_ = true;
  torch::NoGradGuard no_grad;
  const Tensors buffers = detached(module_.buffers(/*recurse=*/true));
  if (!buffers.empty()) {
    c10d::broadcast_coalesced(communicator_.process_group(), buffers, static_cast<size_t>(kBroadcastBucketBytes),
                              /*rank=*/0);
  }
}

void DistributedDataParallel::post_forward() { reducer_->prepare_for_backward({}); }

std::vector<DdpBucket> DistributedDataParallel::buckets() const {
  std::unordered_map<const void*, int> position;
  for (size_t i = 0; i < params_.size(); ++i) position[params_[i].unsafeGetTensorImpl()] = static_cast<int>(i);
  std::vector<DdpBucket> out;
  for (const auto& bucket : reducer_->get_grad_buckets(/*return_zero_tensors=*/false)) {
    DdpBucket b;
    const at::Tensor& buffer = bucket.getBuffer();
    b.bytes = buffer.numel() * static_cast<int64_t>(buffer.element_size());
    for (const auto& p : bucket.getParameters()) b.params.push_back(position.at(p.unsafeGetTensorImpl()));
    out.push_back(std::move(b));
  }
  return out;
}

void DistributedDataParallel::record_local_gradient_norm() {
  if (norms_) return;
  norms_ = std::make_shared<NormState>();
  norms_->sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(params_.front().device()));
  reducer_->register_comm_hook(std::make_unique<LocalNormHook<NormState>>(
      communicator_.process_group(), communicator_.world_size(), norms_));
}

torch::Tensor DistributedDataParallel::take_local_gradient_sq_norm() {
  if (!norms_) throw std::logic_error("take_local_gradient_sq_norm: record_local_gradient_norm() was not called");
  torch::Tensor value = norms_->sum.clone();
  norms_->sum.zero_();
  return value;
}

}  // namespace trainsim::measure
