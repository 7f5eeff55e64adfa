#pragma once
// The index split of PyTorch's DistributedSampler (shuffle=True, drop_last=False). Torch-free.

#include <cstdint>
#include <vector>

namespace trainsim::measure {

// A permutation of 0..n-1 drawn from (seed, epoch) with a Fisher-Yates shuffle (the same on
// every rank and platform, as DistributedSampler seeds its generator with seed + epoch).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

// Rank `rank`'s indices for one epoch: the permutation padded by repeating its head up to
// total = ceil(n / world) * world, then every world-th index starting at `rank`:
//   indices = perm + perm[0 : total - n]  (repeated if the padding exceeds n);
//   mine = indices[rank : total : world]   -> exactly ceil(n / world) indices per rank.
std::vector<int64_t> distributed_sampler_indices(int64_t n, int world, int rank, uint64_t seed,
                                                 int64_t epoch);

}  // namespace trainsim::measure
