// Collectives through measure's real code path: the measure binary started once per rank by
// launch_ranks (`measure worker collective ...`), Gloo over loopback, FileStore rendezvous.
// Before timing, every rank r contributes r + 1 and the result is checked on every rank; rank 0
// reports what it saw.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gloo_required.h"
#include "collectives/benchmark.h"
#include "collectives/table.h"

namespace {

namespace fs = std::filesystem;
using namespace trainsim::measure::collectives;

const std::string kMeasure = std::string(TRAINSIM_BIN_DIR) + "/measure";

CollectiveJob small_job(CollectiveOp op) {
  CollectiveJob job;
  job.backend = "gloo";
  job.op = op;
  job.sizes = {1024, 4096};
  job.warmup = 1;
  job.repeats = 2;
  job.timeout_s = 60;
  return job;
}

TEST(GlooCollectives, TwoRankAllReduceSumsContributions) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  ASSERT_TRUE(fs::exists(kMeasure)) << kMeasure;
  const CollectiveResult r = run_collective(kMeasure, small_job(CollectiveOp::all_reduce), 2, 120);
  // Rank 0 contributes 1, rank 1 contributes 2: the sum is 3 on every rank.
  EXPECT_DOUBLE_EQ(r.check_expected, 3.0);
  EXPECT_DOUBLE_EQ(r.check_observed, 3.0);
  EXPECT_EQ(r.curve.op, "all_reduce");
  EXPECT_EQ(r.curve.ranks, 2);
  ASSERT_EQ(r.curve.points.size(), 2u);
  EXPECT_DOUBLE_EQ(r.curve.points[0].bytes, 1024);  // 256 float32
  EXPECT_DOUBLE_EQ(r.curve.points[1].bytes, 4096);
  for (const auto& p : r.curve.points) EXPECT_GT(p.time_s, 0.0);
}

TEST(GlooCollectives, ThreeRankAllReduce) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const CollectiveResult r = run_collective(kMeasure, small_job(CollectiveOp::all_reduce), 3, 120);
  EXPECT_DOUBLE_EQ(r.check_observed, 6.0);  // 1 + 2 + 3
  EXPECT_EQ(r.curve.ranks, 3);
}

TEST(GlooCollectives, BroadcastCopiesRankZeroAndReduceSumsOnRankZero) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const CollectiveResult b = run_collective(kMeasure, small_job(CollectiveOp::broadcast), 2, 120);
  EXPECT_DOUBLE_EQ(b.check_observed, 1.0);  // rank 0's value, 0 + 1; rank 1 checked it too
  EXPECT_EQ(b.curve.op, "broadcast");
  const CollectiveResult r = run_collective(kMeasure, small_job(CollectiveOp::reduce), 2, 120);
  EXPECT_DOUBLE_EQ(r.check_observed, 3.0);  // 1 + 2 on the root
  EXPECT_EQ(r.curve.op, "reduce");
}

TEST(GlooCollectives, AFailingRankIsReported) {
  // An unknown backend: every rank fails to create its communicator and exits 1.
  CollectiveJob job = small_job(CollectiveOp::all_reduce);
  job.backend = "no-such-backend";
  try {
    run_collective(kMeasure, job, 2, 120);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 1"), std::string::npos) << e.what();
  }
}

TEST(ResultFile, RoundTrips) {
  CollectiveResult r;
  r.curve.op = "reduce";
  r.curve.ranks = 4;
  r.curve.points = {{1024, 1.25e-5}, {4096, 0.1 + 0.2}};  // 0.30000000000000004 survives
  r.check_expected = 10;
  r.check_observed = 10;
  const std::string path = (fs::temp_directory_path() / "measure-result-test.txt").string();
  write_result_file(r, path);
  const CollectiveResult back = read_result_file(path);
  fs::remove(path);
  EXPECT_EQ(back.curve.op, "reduce");
  EXPECT_EQ(back.curve.ranks, 4);
  ASSERT_EQ(back.curve.points.size(), 2u);
  EXPECT_EQ(back.curve.points[1].time_s, 0.1 + 0.2);
  EXPECT_EQ(back.check_observed, 10);
}

TEST(Table, AlgbwAndBusbwAsNcclTests) {
  trainsim::CollectiveCurve c;
  c.op = "all_reduce";
  c.ranks = 4;
  c.points = {{1e6, 1e-3}};  // algbw = 1e6 B / 1e-3 s = 1 GB/s; busbw = 1 * 2(4-1)/4 = 1.5 GB/s
  const std::string table = curve_table(c);
  EXPECT_NE(table.find("all_reduce, 4 ranks"), std::string::npos) << table;
  EXPECT_NE(table.find("     1000000        250000     float     sum      -1    1000.00    1.000    1.500"),
            std::string::npos)
      << table;
}

}  // namespace
