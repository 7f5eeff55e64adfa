// measure's flags and the plan they resolve to (grids, defaults per device, limits).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective_op.h"
#include "profile_options.h"
#include "profiler/loader_bench.h"
#include "usage_error.h"

namespace {

using trainsim::measure::parse_profile_options;
using trainsim::measure::PlanTarget;
using trainsim::measure::ProfileOptions;
using trainsim::measure::resolve_plan;
using trainsim::measure::UsageError;
namespace collectives = trainsim::measure::collectives;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

ProfileOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "measure");
  auto o = parse_profile_options(args);
  EXPECT_TRUE(o.has_value());
  return *o;
}

PlanTarget cpu(int cores) { return PlanTarget{false, 0, cores}; }
PlanTarget gpus(int n) { return PlanTarget{true, n, 16}; }

TEST(ProfilePlan, QuickOnCpuIsTheSmallGrid) {
  const auto p = resolve_plan(parse({"--quick"}), cpu(2));
  EXPECT_EQ(p.models, std::vector<std::string>{"resnet18-cifar"});
  EXPECT_EQ(p.batches, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(p.contention_batches, std::vector<int64_t>{4});  // the smallest batch only
  EXPECT_FALSE(p.pytorch_fork);                               // no worker start-up timing
  EXPECT_FALSE(p.pytorch_gil);                                // nor GIL timing
  EXPECT_EQ(p.warmup, 1);
  EXPECT_EQ(p.repeats, 3);
  EXPECT_EQ(p.collective_sizes.back(), 16 * kMiB);  // 1 KiB x4^7 = 16 MiB
  EXPECT_EQ(p.collective_sizes.size(), 8u);         // 1K 4K 16K 64K 256K 1M 4M 16M
  EXPECT_EQ(p.rank_counts, std::vector<int>{2});
  EXPECT_FALSE(p.h2d);  // no copies on CPU
  EXPECT_EQ(p.threads, 2);
}

TEST(ProfilePlan, FullGridOnCpuStopsAt512) {
  const auto p = resolve_plan(parse({}), cpu(8));
  EXPECT_EQ(p.models, (std::vector<std::string>{"resnet18-cifar", "resnet18-imagenet"}));
  EXPECT_EQ(p.batches, (std::vector<int64_t>{32, 128, 512}));
  EXPECT_EQ(p.collective_sizes.back(), 256 * kMiB);  // 1 KiB x4^9
  EXPECT_EQ(p.loader_workers, (std::vector<int>{0, 1, 2, 4, 8}));
  EXPECT_TRUE(p.pytorch_fork);
  EXPECT_TRUE(p.pytorch_gil);
}

TEST(ProfilePlan, OnGpusRanksStartAtOneAndStopAtEight) {
  const auto one = resolve_plan(parse({}), gpus(1));
  EXPECT_EQ(one.rank_counts, std::vector<int>{1});  // a communicator of size 1
  EXPECT_EQ(one.batches, (std::vector<int64_t>{32, 128, 512, 2048, 8192}));
  EXPECT_TRUE(one.h2d);
  EXPECT_EQ(one.h2d_sizes.front(), 4 * kKiB);
  EXPECT_EQ(one.h2d_sizes.back(), 256 * kMiB);
  const auto eight = resolve_plan(parse({}), gpus(8));
  EXPECT_EQ(eight.rank_counts, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  const auto sixteen = resolve_plan(parse({}), gpus(16));  // one node's 8; more from an nccl-tests log
  EXPECT_EQ(sixteen.rank_counts.back(), 8);
  EXPECT_THROW(resolve_plan(parse({"--ranks", "9"}), gpus(16)), UsageError);
  EXPECT_THROW(resolve_plan(parse({"--ranks", "2"}), gpus(1)), UsageError);
}

TEST(ProfilePlan, CpuRanksBetweenTwoAndEight) {
  EXPECT_EQ(resolve_plan(parse({"--ranks", "4"}), cpu(2)).rank_counts, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(resolve_plan(parse({"--ranks", "8"}), cpu(2)).rank_counts.back(), 8);
  EXPECT_THROW(resolve_plan(parse({"--ranks", "9"}), cpu(2)), UsageError);
  EXPECT_THROW(resolve_plan(parse({"--ranks", "1"}), cpu(2)), UsageError);
}

TEST(ProfilePlan, HostContentionOnCpuOnly) {
  const auto cpu_plan = resolve_plan(parse({"--ranks", "3"}), cpu(2));
  EXPECT_TRUE(cpu_plan.contention);
  EXPECT_EQ(cpu_plan.contention_ranks, 3);     // processes 1..--ranks
  EXPECT_EQ(cpu_plan.contention_batches, (std::vector<int64_t>{32, 128, 512}));  // the grid's batches
  const auto chosen = resolve_plan(parse({"--batches", "64,128", "--contention-batches", "16,8"}), cpu(2));
  EXPECT_EQ(chosen.contention_batches, (std::vector<int64_t>{8, 16}));
  EXPECT_FALSE(resolve_plan(parse({"--skip", "contention"}), cpu(2)).contention);
  // The pytorch section's two optional timings, each on its own.
  const auto no_fork = resolve_plan(parse({"--skip", "fork"}), cpu(2));
  EXPECT_FALSE(no_fork.pytorch_fork);
  EXPECT_TRUE(no_fork.pytorch_gil);
  const auto no_gil = resolve_plan(parse({"--skip", "gil"}), cpu(2));
  EXPECT_TRUE(no_gil.pytorch_fork);
  EXPECT_FALSE(no_gil.pytorch_gil);
  EXPECT_FALSE(resolve_plan(parse({}), gpus(2)).contention);  // a GPU rank owns its device
}

TEST(ProfilePlan, ExplicitFlagsWin) {
  const auto p = resolve_plan(parse({"--batches", "64,2", "--repeats", "7", "--warmup", "0",
                                     "--skip", "loader,collectives", "--collectives-max-bytes", "4096"}),
                              cpu(2));
  EXPECT_EQ(p.batches, (std::vector<int64_t>{2, 64}));  // sorted (a batch given twice is an error)
  EXPECT_EQ(p.repeats, 7);
  EXPECT_EQ(p.warmup, 0);
  EXPECT_FALSE(p.loader);
  EXPECT_FALSE(p.collectives);
  EXPECT_TRUE(p.compute);
  EXPECT_EQ(p.collective_sizes, (std::vector<int64_t>{1024, 4096}));
}

TEST(ProfileOptions, RejectsBadFlags) {
  const auto bad = [](std::vector<std::string> args) {
    args.insert(args.begin(), "measure");
    return parse_profile_options(args);
  };
  EXPECT_THROW(bad({"--batches", "32,x"}), UsageError);
  EXPECT_THROW(bad({"--batches", "0"}), UsageError);
  EXPECT_THROW(bad({"--models", "resnet50"}), UsageError);
  EXPECT_THROW(bad({"--skip", "everything"}), UsageError);
  EXPECT_THROW(bad({"--contention-batches", "0"}), UsageError);
  EXPECT_THROW(bad({"--repeats", "0"}), UsageError);
  EXPECT_THROW(bad({"--no-such-flag"}), UsageError);
  EXPECT_THROW(bad({"--machine", "a/b"}), UsageError);
  EXPECT_THROW(bad({"--cudnn-benchmark", "maybe"}), UsageError);
  EXPECT_THROW(bad({"--precision", "fp16-amp"}), UsageError);
  EXPECT_THROW(bad({"--memory-format", "nhwc"}), UsageError);
}

// `--batches 32,32` once measured batch 32 once and said nothing.
TEST(ProfileOptions, BatchesGivenTwiceIsAnErrorNamingTheBatch) {
  try {
    parse_profile_options({"measure", "--batches", "32,128,32"});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--batches: 32 is given twice");
  }
  EXPECT_THROW(parse_profile_options({"measure", "--contention-batches", "8,8"}), UsageError);
}

TEST(ProfileOptions, CudnnBenchmarkIsOnUnlessTurnedOff) {
  EXPECT_FALSE(parse({}).cudnn_benchmark.has_value());  // unset: on, as the trainers run
  EXPECT_EQ(parse({"--cudnn-benchmark", "off"}).cudnn_benchmark, false);
  EXPECT_EQ(parse({"--cudnn-benchmark", "on"}).cudnn_benchmark, true);
}

TEST(ProfileOptions, PrecisionIsFp32UnlessAsked) {
  EXPECT_EQ(parse({}).precision, trainsim::Precision::kFp32);
  EXPECT_EQ(parse({"--precision", "bf16-amp"}).precision, trainsim::Precision::kBf16Amp);
}

TEST(ProfileOptions, MemoryFormatIsNchwUnlessAsked) {
  EXPECT_EQ(parse({}).memory_format, trainsim::MemoryFormat::kNchw);
  EXPECT_EQ(parse({"--memory-format", "channels_last"}).memory_format, trainsim::MemoryFormat::kChannelsLast);
}

TEST(CollectiveOp, RepeatsShrinkAbove16MiB) {
  EXPECT_EQ(collectives::repeats_for_size(20, 16 * kMiB), 20);
  EXPECT_EQ(collectives::repeats_for_size(20, 64 * kMiB), 5);   // 20 * 16/64
  EXPECT_EQ(collectives::repeats_for_size(20, 256 * kMiB), 3);  // 20 * 16/256 = 1.25 -> floor 3
  EXPECT_EQ(collectives::repeats_for_size(2, 256 * kMiB), 2);   // never above the asked repeats
}

TEST(LoaderWorkerCounts, ZeroOneTwoThenDoublingToTheCores) {
  using trainsim::measure::profiler::loader_worker_counts;
  EXPECT_EQ(loader_worker_counts(1), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(loader_worker_counts(2), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(loader_worker_counts(6), (std::vector<int>{0, 1, 2, 4, 6}));
  EXPECT_EQ(loader_worker_counts(16), (std::vector<int>{0, 1, 2, 4, 8, 16}));
}

}  // namespace
