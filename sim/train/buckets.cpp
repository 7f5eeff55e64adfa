#include "train/buckets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::train {

std::vector<GradientBucket> ddp_buckets(const ModelProfile& model, int64_t first_cap,
                                        int64_t cap) {
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  int earliest_layer = static_cast<int>(model.layers.size());  // over all buckets so far
  for (int layer = static_cast<int>(model.layers.size()) - 1; layer >= 0; --layer) {
    const auto& params = model.layers[static_cast<std::size_t>(layer)].params;
    for (auto p = params.rbegin(); p != params.rend(); ++p) {
      open.bytes += p->bytes;
      ++open.tensors;
      earliest_layer = std::min(earliest_layer, layer);
      const int64_t limit = buckets.empty() ? first_cap : cap;
      if (open.bytes >= limit) {
        open.ready_after_layer = earliest_layer;
        buckets.push_back(open);
        open = GradientBucket{};
      }
    }
  }
  if (open.tensors > 0) {
    open.ready_after_layer = earliest_layer;
    buckets.push_back(open);
  }
  return buckets;
}

std::vector<GradientBucket> recorded_ddp_buckets(const ModelProfile& model) {
  std::vector<int> owner;  // parameter tensor (registration order) -> layer index
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    owner.insert(owner.end(), model.layers[l].params.size(), static_cast<int>(l));
  }
  std::vector<GradientBucket> buckets;
  int earliest_layer = static_cast<int>(model.layers.size());  // over all buckets so far
  for (const DdpBucket& recorded : model.ddp_buckets) {
    GradientBucket bucket;
    bucket.bytes = recorded.bytes;
    bucket.tensors = static_cast<int>(recorded.params.size());
    for (int p : recorded.params) {
      if (p < 0 || static_cast<std::size_t>(p) >= owner.size()) {
        throw std::invalid_argument("ddp_buckets: parameter " + std::to_string(p) + " out of range");
      }
      earliest_layer = std::min(earliest_layer, owner[static_cast<std::size_t>(p)]);
    }
    bucket.ready_after_layer = earliest_layer;
    buckets.push_back(bucket);
  }
  return buckets;
}

std::vector<int64_t> coalesce_close_at_limit(const std::vector<int64_t>& tensor_bytes,
                                             int64_t limit) {
  std::vector<int64_t> chunks;
  int64_t size = 0;
  bool open = false;
  for (int64_t b : tensor_bytes) {
    size += b;
    open = true;
    if (size >= limit) {
      chunks.push_back(size);
      size = 0;
      open = false;
    }
  }
  if (open) chunks.push_back(size);
  return chunks;
}

std::vector<int64_t> coalesce_before_exceeding(const std::vector<int64_t>& tensor_bytes,
                                               int64_t limit) {
  std::vector<int64_t> chunks;
  int64_t size = 0;
  bool open = false;
  for (int64_t b : tensor_bytes) {
    if (open && size + b > limit) {
      chunks.push_back(size);
      size = 0;
    }
    size += b;
    open = true;
  }
  if (open) chunks.push_back(size);
  return chunks;
}

}  // namespace trainsim::train
