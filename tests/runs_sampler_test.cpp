// DistributedSampler's split (measure/runs/distributed_sampler.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "runs/distributed_sampler.h"

namespace trainsim::measure {
namespace {

TEST(EpochPermutation, IsAPermutationFixedBySeedAndEpoch) {
  const auto p = epoch_permutation(100, /*seed=*/7, /*epoch=*/1);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(p, epoch_permutation(100, 7, 1));  // same (seed, epoch): same order on every rank
  EXPECT_NE(p, epoch_permutation(100, 7, 2));  // a new order every epoch
  EXPECT_NE(p, epoch_permutation(100, 8, 1));
}

TEST(DistributedSampler, PadsWithTheHeadOfThePermutation) {
  // n = 10, world 3: ceil(10/3) = 4 per rank, total 12, so the padded list is the permutation
  // followed by its first 12 - 10 = 2 entries; rank r takes positions r, r+3, r+6, r+9.
  const auto perm = epoch_permutation(10, 3, 0);
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = distributed_sampler_indices(10, 3, rank, 3, 0);
    ASSERT_EQ(mine.size(), 4u);
    for (size_t k = 0; k < 4; ++k) {
      const size_t position = static_cast<size_t>(rank) + 3 * k;
      EXPECT_EQ(mine[k], perm[position % 10]) << "rank " << rank << " item " << k;
    }
  }
}

TEST(DistributedSampler, RanksAreDisjointAndCoverEverySample) {
  // n = 50, world 4: 13 per rank (52 slots), so exactly 2 samples appear twice (the padding)
  // and every other sample exactly once.
  std::map<int64_t, int> seen;
  for (int rank = 0; rank < 4; ++rank) {
    const auto mine = distributed_sampler_indices(50, 4, rank, /*seed=*/11, /*epoch=*/5);
    EXPECT_EQ(mine.size(), 13u);
    for (int64_t i : mine) ++seen[i];
  }
  EXPECT_EQ(seen.size(), 50u);
  int twice = 0;
  for (const auto& [index, count] : seen) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, 50);
    EXPECT_LE(count, 2);
    twice += count == 2;
  }
  EXPECT_EQ(twice, 2);
}

TEST(DistributedSampler, DivisibleSizeSplitsWithoutPadding) {
  // n = 12, world 3: 4 each, no padding, so the three shares are disjoint.
  std::set<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    for (int64_t i : distributed_sampler_indices(12, 3, rank, 0, 0)) {
      EXPECT_TRUE(all.insert(i).second) << "index " << i << " given twice";
    }
  }
  EXPECT_EQ(all.size(), 12u);
}

TEST(DistributedSampler, PaddingLongerThanTheSetRepeatsIt) {
  // n = 2, world 5: 1 per rank, total 5: positions 0..4 -> perm[0], perm[1], perm[0], perm[1],
  // perm[0] (PyTorch repeats the list when the padding exceeds it).
  const auto perm = epoch_permutation(2, 1, 0);
  for (int rank = 0; rank < 5; ++rank) {
    const auto mine = distributed_sampler_indices(2, 5, rank, 1, 0);
    ASSERT_EQ(mine.size(), 1u);
    EXPECT_EQ(mine[0], perm[static_cast<size_t>(rank % 2)]);
  }
}

TEST(DistributedSampler, OneRankGetsThePermutation) {
  EXPECT_EQ(distributed_sampler_indices(9, 1, 0, 4, 2), epoch_permutation(9, 4, 2));
}

TEST(DistributedSampler, RejectsBadArguments) {
  EXPECT_THROW(distributed_sampler_indices(0, 1, 0, 0, 0), std::invalid_argument);
  EXPECT_THROW(distributed_sampler_indices(10, 2, 2, 0, 0), std::invalid_argument);
  EXPECT_THROW(distributed_sampler_indices(10, 0, 0, 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::measure
