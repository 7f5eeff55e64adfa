// The nccl-tests all_reduce_perf log reader, on a hand-written fixture in nccl-tests' layout.
#include <gtest/gtest.h>

#include <string>

#include "io/nccl_tests_log.h"
#include "format/errors.h"

namespace {

using trainsim::InputError;
using trainsim::parse_nccl_tests_log;
using trainsim::parse_nccl_tests_log_text;

const std::string kFixture = std::string(TRAINSIM_FIXTURES_DIR) + "/measure/all_reduce_perf_2ranks.log";

TEST(NcclTestsLog, ReadsOutOfPlaceTimesAndRankCount) {
  const auto curve = parse_nccl_tests_log(kFixture);
  EXPECT_EQ(curve.op, "all_reduce");
  EXPECT_EQ(curve.ranks, 2);  // two "#  Rank N" headers
  ASSERT_EQ(curve.points.size(), 4u);
  // Fixture columns: size ... time(out-of-place, us) ... time(in-place): 10/11, 12/13, 16/17, 25/26.
  const double bytes[] = {1024, 4096, 16384, 65536};
  const double out_of_place_us[] = {10, 12, 16, 25};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(curve.points[i].bytes, bytes[i]);
    EXPECT_DOUBLE_EQ(curve.points[i].time_s, out_of_place_us[i] * 1e-6);
  }
}

TEST(NcclTestsLog, StripsMpirunPrefixesAndReadsTheOlderLayout) {
  // Older nccl-tests: no `root` column, so the out-of-place time is the 5th column.
  const std::string text =
      "[1,0]<stdout>:#  Rank  0 Pid 1 on a device  0 [0x1] GPU\n"
      "[1,0]<stdout>:#  Rank  1 Pid 2 on a device  1 [0x2] GPU\n"
      "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "[1,0]<stdout>:        8192          2048   float     sum    20.00    0.41    0.41  0e+00    21.00    0.39    0.39  0e+00\n";
  const auto curve = parse_nccl_tests_log_text(text, "old.log");
  EXPECT_EQ(curve.ranks, 2);
  ASSERT_EQ(curve.points.size(), 1u);
  EXPECT_DOUBLE_EQ(curve.points[0].bytes, 8192);
  EXPECT_DOUBLE_EQ(curve.points[0].time_s, 20e-6);
}

// The older layout's `error` column is a difference, not a count: float32 rounding (2e-07, as in
// published runs) is a valid run; a large difference is not.
TEST(NcclTestsLog, OlderErrorColumnAcceptsRoundingAndRejectsWrongResults) {
  const std::string header =
      "#  Rank  0 Pid 1 on a device  0 [0x1] GPU\n"
      "#  Rank  1 Pid 2 on a device  1 [0x2] GPU\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n";
  const auto curve = parse_nccl_tests_log_text(
      header + "     1048576        262144   float     sum    165.5    6.33    9.50  2e-07    165.1    6.35    9.52  2e-07\n",
      "rounding.log");
  ASSERT_EQ(curve.points.size(), 1u);
  EXPECT_DOUBLE_EQ(curve.points[0].time_s, 165.5e-6);
  EXPECT_THROW(parse_nccl_tests_log_text(
                   header + "     1048576        262144   float     sum    165.5    6.33    9.50  5e-01    165.1    6.35    9.52  0e+00\n",
                   "wrong.log"),
               InputError);
}

TEST(NcclTestsLog, ATruncatedDataLineNamesFileAndLine) {
  const std::string text =
      "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
      "        1024   256   float   sum   -1\n";  // line 2: no time column
  try {
    parse_nccl_tests_log_text(text, "cut.log");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "cut.log");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.key(), "nccl-tests-log");
  }
}

TEST(NcclTestsLog, WrongElementsInvalidateTheLog) {
  const std::string text =
      "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
      "        1024   256   float   sum   -1   10.0   0.10   0.10   7   11.0   0.09   0.09   0\n";
  EXPECT_THROW(parse_nccl_tests_log_text(text, "wrong.log"), InputError);
}

TEST(NcclTestsLog, NeedsRankHeadersAndData) {
  EXPECT_THROW(parse_nccl_tests_log_text("        1024 256 float sum -1 10.0 0.1 0.1 0\n", "norank.log"),
               InputError);
  EXPECT_THROW(parse_nccl_tests_log_text("#  Rank  0 Group 0 Pid 1 on a\n", "nodata.log"), InputError);
  EXPECT_THROW(parse_nccl_tests_log("/nonexistent/all_reduce.log"), InputError);
}

// Found by scripts/fuzz.sh (issue 13): a line of a form feed or vertical tab has no tokens, and
// was indexed at [0]; a rank number beyond int threw std::out_of_range from std::stoi.
TEST(NcclTestsLog, AFormFeedLineIsBlankAndAHugeRankIsAnError) {
  const std::string data =
      "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
      "\f\v\n"
      "        1024   256   float   sum   -1   10.0   0.10   0.10   0   11.0   0.09   0.09   0\n";
  EXPECT_EQ(parse_nccl_tests_log_text(data, "ff.log").points.size(), 1u);
  try {
    parse_nccl_tests_log_text("#  Rank 99999999999 Group 0\n" + data, "rank.log");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "rank.log:1: nccl-tests-log: rank 99999999999 is beyond any nccl-tests run");
  }
}

// Found by a 10-minute run of scripts/fuzz.sh: a size of 133 digits was converted to int64 for
// the next line's "sizes must ascend" message (UBSan: outside the range of long).
TEST(NcclTestsLog, ASizeBeyondAPebibyteIsAnError) {
  const std::string data =
      "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
      "        1024   256   float   sum   -1   10.0   0.10   0.10   0   11.0   0.09   0.09   0\n"
      "  " + std::string(133, '9') + "   256   float   sum   -1   10.0   0.10   0.10   0   11.0   0.09   0.09   0\n";
  try {
    parse_nccl_tests_log_text(data, "huge.log");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "huge.log:3: nccl-tests-log: size " + std::string(133, '9') +
                                         " is beyond 2^50 bytes (1 PiB): not a message nccl-tests sends");
  }
}

TEST(NcclTestsLog, DevZeroAndAFolderAreRefused) {
  try {
    parse_nccl_tests_log("/dev/zero");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/zero: larger than 64 MiB: not an nccl-tests log");
  }
  try {
    parse_nccl_tests_log("/tmp");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/tmp: is a directory, not an nccl-tests log");
  }
}

TEST(NcclTestsLog, SizesMustAscend) {
  const std::string text =
      "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
      "        4096   1024  float   sum   -1   10.0   0.4   0.4   0   11.0   0.4   0.4   0\n"
      "        1024    256  float   sum   -1   10.0   0.1   0.1   0   11.0   0.1   0.1   0\n";
  EXPECT_THROW(parse_nccl_tests_log_text(text, "order.log"), InputError);
}

// The collective of a log: the binary its text names, checked against what its columns say
// (nccl-tests' src/<op>.cu byte counts).
const std::string kFourRanks =
    "#  Rank  0 Group 0 Pid 1 on a device 0 [0x1] GPU\n"
    "#  Rank  1 Group 0 Pid 1 on a device 1 [0x2] GPU\n"
    "#  Rank  2 Group 0 Pid 1 on a device 2 [0x3] GPU\n"
    "#  Rank  3 Group 0 Pid 1 on a device 3 [0x4] GPU\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";

std::string error_of(const std::string& text) {
  try {
    parse_nccl_tests_log_text(text, "op.log");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(NcclTestsLog, AnAllGatherLogIsReadAsOneWithItsEmptyRowsSkipped) {
  // 4 ranks, float: sizes below 16 bytes print 0 (no element per rank); count is per rank.
  const std::string text = "# Collective test starting: all_gather_perf\n" + kFourRanks +
                           "           0             0     float    none      -1     9.00    0.00    0.00      0     9.10    0.00    0.00      0\n"
                           "          16             1     float    none      -1    12.00    0.00    0.00      0    12.10    0.00    0.00      0\n"
                           "        4096           256     float    none      -1    13.00    0.32    0.24      0    13.10    0.31    0.23      0\n";
  const auto curve = parse_nccl_tests_log_text(
      "# nThread 1 nGpus 4 minBytes 8 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20\n" + text, "ag.log");
  EXPECT_EQ(curve.op, "all_gather");
  EXPECT_EQ(curve.gpus_per_thread, 4);  // one thread launched the 4 GPUs
  EXPECT_EQ(curve.ranks, 4);
  ASSERT_EQ(curve.points.size(), 2u);
  EXPECT_DOUBLE_EQ(curve.points[0].bytes, 16);
  EXPECT_DOUBLE_EQ(curve.points[1].time_s, 13e-6);
  // Without the binary's name the same columns could be alltoall_perf's.
  EXPECT_EQ(error_of(kFourRanks + "        4096           256     float    none      -1    13.00    0.32    0.24      0    13.10    0.31    0.23      0\n"),
            "op.log:6: nccl-tests-log: the columns fit all_gather_perf and alltoall_perf alike: name the binary in a "
            "comment line, e.g. '# all_gather_perf'");
}

TEST(NcclTestsLog, TheColumnsTellReduceScatterBroadcastAndReduceApart) {
  const auto op_of = [](const std::string& row) { return parse_nccl_tests_log_text(kFourRanks + row, "op.log").op; };
  EXPECT_EQ(op_of("        4096           256     float     sum      -1    13.00    0.32    0.24      0    13.10    0.31    0.23      0\n"),
            "reduce_scatter");
  EXPECT_EQ(op_of("        4096          1024     float     sum      -1    13.00    0.32    0.24      0    13.10    0.31    0.23      0\n"),
            "all_reduce");
  EXPECT_EQ(op_of("        4096          1024     float    none       0    13.00    0.32    0.32      0    13.10    0.31    0.31      0\n"),
            "broadcast");
  EXPECT_EQ(op_of("        4096          2048      half     sum       0    13.00    0.32    0.32      0    13.10    0.31    0.31      0\n"),
            "reduce");
  // An all-reduce's size is its count's bytes: 4096 bytes of 512 floats is no collective.
  EXPECT_EQ(error_of(kFourRanks + "        4096           512     float     sum      -1    13.00    0.32    0.24      0    13.10    0.31    0.23      0\n"),
            "op.log:6: nccl-tests-log: cannot tell which collective this is from its columns (size, count, type, "
            "redop, root): name the binary in a comment line, e.g. '# all_reduce_perf'");
}

TEST(NcclTestsLog, ABlankRootIsNoRoot) {
  // Releases that print no root as blanks: the time is then the 5th column, not the 6th.
  const auto curve = parse_nccl_tests_log_text(
      kFourRanks + "        4096          1024     float     sum             13.00    0.32    0.47      0    13.10    0.31    0.47      0\n",
      "blank.log");
  EXPECT_EQ(curve.op, "all_reduce");
  ASSERT_EQ(curve.points.size(), 1u);
  EXPECT_DOUBLE_EQ(curve.points[0].time_s, 13e-6);
}

TEST(NcclTestsLog, TheNamedBinaryMustMatchTheColumnsAndBeModelled) {
  const std::string all_reduce_row =
      "        4096          1024     float     sum      -1    13.00    0.32    0.47      0    13.10    0.31    0.47      0\n";
  EXPECT_EQ(error_of("# command: ./build/all_gather_perf -b 8 -e 128M -f 2 -g 4\n" + kFourRanks + all_reduce_row),
            "op.log:7: nccl-tests-log: the columns are those of all_reduce_perf, but line 1 names all_gather_perf");
  EXPECT_EQ(error_of("# command: ./build/alltoall_perf -g 4\n" + kFourRanks + all_reduce_row),
            "op.log:1: nccl-tests-log: alltoall_perf is not a collective trainsim models (all_reduce, all_gather, "
            "reduce_scatter, broadcast, reduce)");
  EXPECT_EQ(error_of("# all_reduce_perf\n" + kFourRanks + "# broadcast_perf\n" + all_reduce_row),
            "op.log:7: nccl-tests-log: names broadcast_perf after all_reduce_perf (line 1): one log is one collective");
  // An MPI build's binary is the same collective.
  EXPECT_EQ(parse_nccl_tests_log_text("# Collective test starting: all_reduce_perf_mpi\n" + kFourRanks + all_reduce_row,
                                      "op.log")
                .op,
            "all_reduce");
  // A name inside another word is not the binary.
  EXPECT_EQ(parse_nccl_tests_log_text("# my_all_gather_perf_notes\n" + kFourRanks + all_reduce_row, "op.log").op,
            "all_reduce");
}

}  // namespace
