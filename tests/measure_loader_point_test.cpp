// One loader point from timed epochs (measure/profiler/loader_bench.h): the steady rate excludes
// each epoch's first batch, and startup_s is what the first batch costs beyond building one batch.
#include <gtest/gtest.h>

#include <vector>

#include "profiler/loader_bench.h"

namespace trainsim::measure::profiler {
namespace {

EpochTiming epoch(double first_s, double rest_s) {
  EpochTiming e;
  e.first_batch_s = first_s;
  e.first_batch_samples = 128;
  e.rest_s = rest_s;
  e.rest_samples = 1152;  // 9 more batches
  return e;
}

TEST(LoaderPoint, SteadyRateAndStartUpFromMedians) {
  // Steady rates 1152 / {1.152, 0.576, 2.304} = {1000, 2000, 500} samples/s: median 1000.
  // First batches {0.9, 0.5, 0.7} s: median 0.7. With 2 workers one worker builds a batch of 128
  // at 1000 / 2 samples/s: 0.256 s; start-up 0.7 - 0.256 = 0.444 s.
  const LoaderPoint p = loader_point(2, {epoch(0.9, 1.152), epoch(0.5, 0.576), epoch(0.7, 2.304)});
  EXPECT_EQ(p.workers, 2);
  EXPECT_DOUBLE_EQ(p.samples_per_s, 1000.0);
  ASSERT_TRUE(p.startup_s.has_value());
  EXPECT_NEAR(*p.startup_s, 0.444, 1e-12);
}

TEST(LoaderPoint, InlineLoadingHasNoStartUpAndNeverNegative) {
  EXPECT_EQ(loader_point(0, {epoch(5.0, 1.152)}).startup_s, std::optional<double>(0.0));
  // A first batch faster than one batch's build time (a warm pipeline): 0, not negative.
  EXPECT_EQ(loader_point(1, {epoch(0.01, 1.152)}).startup_s, std::optional<double>(0.0));
}

TEST(LoaderPoint, NeedsASecondBatch) {
  EpochTiming one = epoch(0.1, 0);
  one.rest_samples = 0;
  EXPECT_THROW(loader_point(1, {one}), std::invalid_argument);
  EXPECT_THROW(loader_point(1, {}), std::invalid_argument);
}

TEST(LoaderWorkerCounts, ZeroOneTwoThenDoublingToTheCores) {
  EXPECT_EQ(loader_worker_counts(2), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(loader_worker_counts(16), (std::vector<int>{0, 1, 2, 4, 8, 16}));
}

}  // namespace
}  // namespace trainsim::measure::profiler
