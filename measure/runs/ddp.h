#pragma once
// torch.nn.parallel.DistributedDataParallel(module) with its defaults (broadcast_buffers=True,
// bucket_cap_mb=25, find_unused_parameters=False, gradient_as_bucket_view=False), in C++: LibTorch's
// own c10d::Reducer over the communicator's process group, driven as PyTorch's distributed.py
// drives it (see docs/RUNS.md):
//   construction  verify the parameters across ranks, broadcast parameters and buffers from rank 0
//                 (_sync_module_states, 250 MiB chunks), then a Reducer whose first-iteration
//                 assignment is ONE bucket of every parameter (distributed.py passes
//                 bucket_size_limits [sys.maxsize] when find_unused_parameters is False);
//   pre_forward   reducer.prepare_for_forward(), reducer.rebuild_buckets() (after the first
//                 backward it rebuilds the buckets from the observed gradient-ready order, caps
//                 1 MiB for the first bucket and 25 MiB after), buffers broadcast from rank 0;
//   post_forward  reducer.prepare_for_backward([]) (what DDP passes without find_unused_parameters);
//   backward      the reducer's autograd hooks copy gradients into the buckets, all-reduce each
//                 complete bucket while backward goes on, and write the averages back to .grad.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "format/profile.h"

namespace c10d {
class Reducer;
}

namespace trainsim::measure {

// PyTorch DDP: dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, bucket_cap_mb = 25; buffer and
// parameter broadcasts in chunks of 250 MiB (broadcast_bucket_size).
inline constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
inline constexpr int64_t kBucketBytes = int64_t{25} << 20;
inline constexpr int64_t kBroadcastBucketBytes = int64_t{250} << 20;

class DistributedDataParallel {
 public:
  // `module` and `communicator` must outlive this. All parameters on communicator.device().
  DistributedDataParallel(torch::nn::Module& module, Communicator& communicator);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // DDP.forward before the module runs, and after it (see the file comment).
  void pre_forward();
  void post_forward();

  // The reducer's current buckets in launch order: bytes of the flat buffer and the parameters
  // (indices into module.parameters(), registration order) in their order inside the bucket.
  std::vector<DdpBucket> buckets() const;
  // True once the reducer rebuilt its buckets (in the pre_forward after the first backward).
  bool rebuilt() const { return rebuilt_; }

  // For the gradient noise scale (measure baseline): registers a communication hook that adds
  // each bucket's squared L2 norm of this rank's own gradient to a device accumulator, then does
  // what DDP's default reduction does (divide by the world size, all-reduce). Call before the
  // first backward. take_local_gradient_sq_norm() returns the sum over the last backward's
  // buckets, |g_rank|^2 as a 0-dim float64 tensor on the device, and resets it.
  void record_local_gradient_norm();
  torch::Tensor take_local_gradient_sq_norm();

 private:
  struct NormState;
  torch::nn::Module& module_;
  Communicator& communicator_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<c10d::Reducer> reducer_;
  std::shared_ptr<NormState> norms_;
  bool rebuilt_ = false;
};

}  // namespace trainsim::measure
