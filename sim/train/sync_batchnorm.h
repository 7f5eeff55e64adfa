#pragma once
// PyTorch's SyncBatchNorm under DDP (torch/nn/modules/_functions.py): every BatchNorm layer
// exchanges its batch statistics across the ranks, synchronously (async_op=False: the next
// kernel waits for the collective), on the same process group as DDP's gradient all-reduce.
//   forward:  all-gather of (mean[C], invstd[C], count) = 2C + 1 fp32 values per rank, gathered
//             into N (2C + 1) values on every rank;
//   backward: all-reduce (sum) of (sum_dy[C], sum_dy_xmu[C]) = 2C fp32 values.
// With one rank SyncBatchNorm runs plain BatchNorm: no collective.
// The profile has no all-gather curve. A ring all-gather of S gathered bytes is the second half of
// a ring all-reduce of S bytes ((n-1) steps of S/n bytes instead of 2(n-1)), so it is priced as
// half the all-reduce time of S bytes: t_ag(S) = t_ar(S) / 2 = (n-1) alpha + (n-1)/n S / busbw.

#include <cstdint>
#include <vector>

#include "hw/collective_model.h"
#include "format/profile.h"

namespace trainsim::train {

// The channel count C of each BatchNorm in `layer`, in registration order, from its parameter
// names: the `.weight` of a module whose last name component starts with "bn" (bn1, bn2) or of
// a projection shortcut's BatchNorm ("shortcut.1", "downsample.1"); C = bytes / 4 (fp32).
// ResNet-18: stem 1, basic block 2 (3 with a projection shortcut), head 0.
std::vector<int64_t> batchnorm_channels(const LayerProfile& layer);

// Bytes of one BatchNorm's collectives with C channels on n ranks.
double sync_bn_forward_gathered_bytes(int64_t channels, int ranks);  // n (2C + 1) * 4
double sync_bn_backward_bytes(int64_t channels);                     // 2C * 4

// One layer's SyncBatchNorm collectives, summed over its BatchNorms (they run one after another,
// each blocking the next kernel).
struct SyncBatchNormCost {
  int batchnorms = 0;
  double forward_s = 0;          // sum of the all-gathers
  double backward_s = 0;         // sum of the all-reduces
  double forward_bus_bytes = 0;  // per rank: all-gather (n-1)/n * gathered bytes
  double backward_bus_bytes = 0; // per rank: all-reduce 2(n-1)/n * bytes
};

// Zero cost for one rank or a layer without BatchNorm.
SyncBatchNormCost sync_batchnorm_cost(const LayerProfile& layer, int ranks, const hw::CollectiveModel& collectives);

}  // namespace trainsim::train
