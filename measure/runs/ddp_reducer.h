#pragma once
// DistributedDataParallel's gradient reducer, written over any torch::nn::Module and an
// AsyncCommunicator: parameters and buffers broadcast from rank 0 at construction, buffers
// broadcast before every forward (broadcast_buffers=True), gradients all-reduced in buckets
// launched from gradient hooks while backward is still running, then averaged. See docs/RUNS.md.

#include <torch/torch.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runs/communicator.h"

namespace trainsim::measure {

// PyTorch DDP: _DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, bucket_cap_mb = 25.
inline constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
inline constexpr int64_t kBucketBytes = int64_t{25} << 20;

// Buckets over tensors taken in REVERSE registration order (the order their gradients become
// ready in backward). A bucket closes as soon as its size reaches its cap (so it may overshoot by
// one tensor): the first bucket's cap is `first_cap`, every later one's `cap`. Returns tensor
// indices (into `tensor_bytes`, registration order) per bucket, in launch order.
// This is the assignment PyTorch's reducer rebuilds after the first iteration from the observed
// gradient-ready order (Reducer::rebuild_buckets); torch-free.
std::vector<std::vector<size_t>> assign_gradient_buckets(const std::vector<int64_t>& tensor_bytes,
                                                         int64_t first_cap, int64_t cap);

class DdpReducer {
 public:
  // Broadcasts `module`'s parameters and buffers from rank 0 (DDP's _sync_module_states) and
  // registers one gradient hook per parameter. All parameters: float32 on one device.
  DdpReducer(torch::nn::Module& module, AsyncCommunicator& communicator,
             int64_t first_bucket_bytes = kFirstBucketBytes, int64_t bucket_bytes = kBucketBytes);
  ~DdpReducer();
  DdpReducer(const DdpReducer&) = delete;
  DdpReducer& operator=(const DdpReducer&) = delete;

  // Before each forward: buffers (BatchNorm running stats) from rank 0, coalesced per dtype.
  void sync_buffers();
  // Before loss.backward(): arms the hooks for one backward pass.
  void prepare_for_backward();
  // After loss.backward(): waits for every bucket's all-reduce, divides by the world size and
  // writes the averages into param.grad(). Throws if a parameter got no gradient.
  void finalize_backward();

  // Parameter indices (registration order) per bucket, in launch order, and bucket sizes.
  const std::vector<std::vector<size_t>>& buckets() const { return bucket_params_; }
  std::vector<int64_t> bucket_bytes() const;

 private:
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;  // elements into the bucket's flat buffer
  };

  void on_gradient_ready(size_t param, const torch::Tensor& grad);

  torch::nn::Module& module_;
  AsyncCommunicator& communicator_;
  std::vector<std::string> names_;
  std::vector<torch::Tensor> params_;
  std::vector<unsigned> hook_handles_;
  std::vector<std::vector<size_t>> bucket_params_;
  std::vector<Slot> slots_;
  std::vector<torch::Tensor> flat_;  // one contiguous buffer per bucket

  // Hook state; hooks may run on an autograd device thread.
  std::mutex mutex_;
  bool armed_ = false;
  std::vector<bool> ready_;
  std::vector<size_t> pending_;  // gradients still missing per bucket
  size_t next_launch_ = 0;       // buckets launch strictly in order, as DDP's reducer does
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
};

// Broadcasts `tensors` from `root` in place, coalesced into one flat tensor per (dtype, device).
void broadcast_coalesced(AsyncCommunicator& communicator, const std::vector<torch::Tensor>& tensors,
                         int root);

}  // namespace trainsim::measure
