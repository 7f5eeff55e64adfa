#include "train/sync_batchnorm.h"

#include <string>

#include "format/metrics.h"

namespace trainsim::train {
namespace {

constexpr int64_t kFloatBytes = 4;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "layer2.0.bn1.weight" -> module "layer2.0.bn1", last component "bn1".
bool is_batchnorm_weight(const std::string& name) {
  const std::string weight = ".weight";
  if (!ends_with(name, weight)) return false;
  const std::string module = name.substr(0, name.size() - weight.size());
  if (ends_with(module, "shortcut.1") || ends_with(module, "downsample.1")) return true;
  const size_t dot = module.rfind('.');
  const std::string last = dot == std::string::npos ? module : module.substr(dot + 1);
  return last.rfind("bn", 0) == 0;
}

}  // namespace

std::vector<int64_t> batchnorm_channels(const LayerProfile& layer) {
  std::vector<int64_t> channels;
  for (const ParamTensor& p : layer.params) {
    if (is_batchnorm_weight(p.name)) channels.push_back(p.bytes / kFloatBytes);
  }
  return channels;
}

double sync_bn_forward_gathered_bytes(int64_t channels, int ranks) {
  return static_cast<double>(ranks) * static_cast<double>(2 * channels + 1) * kFloatBytes;
}

double sync_bn_backward_bytes(int64_t channels) { return static_cast<double>(2 * channels * kFloatBytes); }

SyncBatchNormCost sync_batchnorm_cost(const LayerProfile& layer, int ranks, const hw::CollectiveModel& collectives) {
  SyncBatchNormCost cost;
  if (ranks < 2) return cost;
  for (const int64_t c : batchnorm_channels(layer)) {
    ++cost.batchnorms;
    const double gathered = sync_bn_forward_gathered_bytes(c, ranks);
    // all-gather of S gathered bytes = half a ring all-reduce of S bytes (see the header).
    cost.forward_s += 0.5 * collectives.seconds(hw::CollectiveOp::kAllReduce, ranks, gathered);
    cost.forward_bus_bytes += nccl_tests_bus_factor("all_gather", ranks) * gathered;
    const double reduced = sync_bn_backward_bytes(c);
    cost.backward_s += collectives.seconds(hw::CollectiveOp::kAllReduce, ranks, reduced);
    cost.backward_bus_bytes += hw::bus_bytes(hw::CollectiveOp::kAllReduce, reduced, ranks);
  }
  return cost;
}

}  // namespace trainsim::train
