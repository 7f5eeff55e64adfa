#pragma once
// How PyTorch groups tensors for communication.

#include <cstdint>
#include <vector>

#include "format/profile.h"

namespace trainsim::train {

inline constexpr int64_t kDdpFirstBucketBytes = 1024 * 1024;      // dist._DEFAULT_FIRST_BUCKET_BYTES
inline constexpr int64_t kDdpBucketBytes = 25 * 1024 * 1024;      // bucket_cap_mb = 25
inline constexpr int64_t kCoalesceBufferBytes = 10 * 1024 * 1024;  // DataParallel's buffer_size

// One DDP gradient bucket.
struct GradientBucket {
  int64_t bytes = 0;
  int tensors = 0;
  // The layer (forward index) whose backward completes this bucket: the earliest layer owning a
  // tensor in this bucket or in any bucket before it (buckets launch strictly in order, so a
  // bucket can only go once every earlier bucket could).
  int ready_after_layer = 0;
};

// DDP's buckets as rebuilt after the first iteration (reducer.cpp rebuild_buckets): parameters in
// gradient-ready order, which for a sequential model is REVERSE registration order; the first
// bucket capped at 1 MiB, the others at 25 MiB; a bucket closes as soon as its size reaches its
// cap (so it may overshoot by one tensor). Bucket 0 is all-reduced first.
std::vector<GradientBucket> ddp_buckets(const ModelProfile& model,
                                        int64_t first_cap = kDdpFirstBucketBytes,
                                        int64_t cap = kDdpBucketBytes);

// The buckets `measure` recorded from the real reducer (ModelProfile::ddp_buckets), with each
// bucket's ready layer derived as above from the layers owning its tensors. Throws
// std::invalid_argument when an index names no parameter tensor of the model.
std::vector<GradientBucket> recorded_ddp_buckets(const ModelProfile& model);

// Chunks of broadcast_coalesced (C++ torch::utils::take_tensors): tensors in order, a chunk
// closes once its size reaches `limit` (may overshoot by one tensor). DataParallel's replicate.
std::vector<int64_t> coalesce_close_at_limit(const std::vector<int64_t>& tensor_bytes,
                                             int64_t limit);
// Chunks of reduce_add_coalesced (Python torch.cuda.comm._take_tensors): a chunk is emitted
// before a tensor that would take it past `limit` (never overshoots unless one tensor alone does).
// DataParallel's gradient reduce.
std::vector<int64_t> coalesce_before_exceeding(const std::vector<int64_t>& tensor_bytes,
                                               int64_t limit);

}  // namespace trainsim::train
