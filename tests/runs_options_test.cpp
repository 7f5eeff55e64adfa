// Flags of `measure train` and of its rank processes (measure/runs/train_options.h), and what it
// parses as `measure baseline` does (measure/trainer_flags.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "runs/shared_train_flags.h"
#include "runs/train_options.h"
#include "trainer_flags.h"

namespace trainsim::measure {
namespace {

using Args = std::vector<std::string>;

TrainOptions parsed(const Args& args) {
  auto o = parse_train_options(args);
  EXPECT_TRUE(o.has_value());
  return o.value_or(TrainOptions{});
}

TEST(TrainOptions, Defaults) {
  const TrainOptions o = parsed({"train"});
  EXPECT_EQ(o.strategy, "ddp");
  EXPECT_EQ(o.gpus, 1);
  EXPECT_EQ(o.epochs, 2);  // the course: two epochs, the second timed
  EXPECT_FALSE(o.train_samples.has_value());
  EXPECT_EQ(o.device, "");  // resolved later: cuda when available
  EXPECT_EQ(o.threads, 0);  // resolved later: cores / processes
  EXPECT_TRUE(o.data_dir.empty());
  EXPECT_FALSE(o.quiet);
  EXPECT_TRUE(o.probe);  // the calibration probe runs unless --no-probe
  EXPECT_EQ(o.precision, Precision::kFp32);
  EXPECT_EQ(o.memory_format, MemoryFormat::kNchw);
}

TEST(TrainOptions, ReadsEveryFlag) {
  const TrainOptions o = parsed({"train", "--strategy", "dp", "--gpus", "1", "--batch-per-gpu",
                                 "64", "--workers", "3", "--train-samples", "512", "--epochs",
                                 "3", "--device", "cpu", "--data", "/d", "--threads", "2",
                                 "--seed", "9", "--runs", "r.csv", "--machine", "m", "--quiet", "--no-probe",
                                 "--precision", "bf16-amp", "--memory-format", "channels_last"});
  EXPECT_EQ(o.strategy, "dp");
  EXPECT_EQ(o.batch_per_gpu, 64);
  EXPECT_EQ(o.workers, 3);
  EXPECT_EQ(o.train_samples.value_or(0), 512);
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.device, "cpu");
  EXPECT_EQ(o.data_dir, "/d");
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.runs_path, "r.csv");
  EXPECT_EQ(o.machine, "m");
  EXPECT_TRUE(o.quiet);
  EXPECT_FALSE(o.probe);
  EXPECT_EQ(o.precision, Precision::kBf16Amp);
  EXPECT_EQ(o.memory_format, MemoryFormat::kChannelsLast);
}

TEST(TrainOptions, RejectsBadValuesWithTheFlagName) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"train", "--strategy", "fsdp"}, "--strategy"},
      {{"train", "--gpus", "0"}, "--gpus"},
      {{"train", "--batch-per-gpu", "-1"}, "--batch-per-gpu"},
      {{"train", "--workers", "-2"}, "--workers"},
      {{"train", "--epochs", "0"}, "--epochs"},
      {{"train", "--train-samples", "0"}, "--train-samples"},
      {{"train", "--device", "tpu"}, "--device"},
      {{"train", "--threads", "0"}, "--threads"},
      {{"train", "--gpus", "two"}, "gpus"},
      {{"train", "--no-such-flag"}, "no-such-flag"},
      {{"train", "--lr-rule", "cubic"}, "lr-rule"},
      {{"train", "--precision", "fp16"}, "--precision"},
      {{"train", "--memory-format", "nhwc"}, "--memory-format"},
  };
  for (const auto& [args, flag] : cases) {
    try {
      parse_train_options(args);
      ADD_FAILURE() << "accepted " << args.back();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  }
}

TEST(TrainOptions, DataParallelOnCpuAllowsOnlyOneDevice) {
  EXPECT_NO_THROW(parsed({"train", "--strategy", "dp", "--device", "cpu", "--gpus", "1"}));
  try {
    parse_train_options({"train", "--strategy", "dp", "--device", "cpu", "--gpus", "2"});
    ADD_FAILURE() << "dp with 2 CPU devices accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("DataParallel needs CUDA"), std::string::npos)
        << e.what();
  }
}

TEST(TrainOptions, WorkerArgumentsRoundTrip) {
  TrainOptions o = parsed({"train", "--gpus", "2", "--batch-per-gpu", "8", "--train-samples",
                           "64", "--device", "cpu", "--threads", "1", "--seed", "5", "--quiet", "--no-probe",
                           "--precision", "bf16-amp", "--memory-format", "channels_last"});
  Args args = {"train"};
  for (const auto& a : to_worker_args(o)) args.push_back(a);
  for (const char* a : {"--rank", "1", "--world-size", "2", "--store", "/tmp/s"}) args.push_back(a);
  const TrainOptions w = parse_worker_options(args);
  EXPECT_EQ(w.strategy, o.strategy);
  EXPECT_EQ(w.gpus, 2);
  EXPECT_EQ(w.batch_per_gpu, 8);
  EXPECT_EQ(w.train_samples.value_or(0), 64);
  EXPECT_EQ(w.device, "cpu");
  EXPECT_EQ(w.threads, 1);
  EXPECT_EQ(w.seed, 5u);
  EXPECT_TRUE(w.quiet);
  EXPECT_FALSE(w.probe);
  EXPECT_EQ(w.precision, Precision::kBf16Amp);
  EXPECT_EQ(w.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.world_size, 2);
  EXPECT_EQ(w.store_dir, "/tmp/s");
}

TEST(TrainOptions, WorkerNeedsItsRank) {
  EXPECT_THROW(parse_worker_options({"train", "--world-size", "2", "--store", "/s"}), UsageError);
  EXPECT_THROW(parse_worker_options({"train", "--rank", "2", "--world-size", "2", "--store", "/s"}),
               UsageError);
}

// The message of the UsageError `parse` throws ("" when none).
template <class Parse>
std::string usage_error(Parse parse) {
  try {
    parse();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainOptions, SharedFlagsSayWhatIsWrongAsTheBaselineDoes) {
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--device", "tpu"}); }),
            "--device: 'tpu' is not one of cpu, cuda");
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--lr-rule", "cubic"}); }),
            "--lr-rule: 'cubic' is not one of constant, linear, linear-warmup, sqrt");
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--warmup-epochs", "-1"}); }),
            "--warmup-epochs: -1.000000 must be finite and >= 0");
  EXPECT_EQ(usage_error([] { parse_worker_options({"train", "--rank", "2", "--world-size", "2", "--store", "/s"}); }),
            "--rank 2 is not below --world-size 2");
}

// The flags shared with train.py come from train_flags.json (measure/runs/shared_train_flags.h;
// train.py's side: tests/pytorch/test_train_flags.py).
TEST(SharedTrainFlags, TheTableIsReadWholeAndEveryFlagIsInTheHelp) {
  const std::vector<SharedFlag>& flags = shared_train_flags();
  ASSERT_GE(flags.size(), 10u);
  const std::string help = train_help();
  for (const SharedFlag& f : flags) {
    EXPECT_NE(help.find("--" + f.name), std::string::npos) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
  const auto named = [&](const std::string& name) {
    return *std::find_if(flags.begin(), flags.end(), [&](const SharedFlag& f) { return f.name == name; });
  };
  std::string precisions;
  for (const std::string& choice : named("precision").choices) precisions += (precisions.empty() ? "" : ", ") + choice;
  EXPECT_EQ(precisions, kPrecisionNames);  // every one parse_precision knows, in its order
  std::string formats;
  for (const std::string& choice : named("memory-format").choices) formats += (formats.empty() ? "" : ", ") + choice;
  EXPECT_EQ(formats, kMemoryFormatNames);
  EXPECT_EQ(named("strategy").choices, (std::vector<std::string>{"ddp", "dp"}));
  EXPECT_EQ(named("workers").min, 0);
}

TEST(SharedTrainFlags, TheTablesDefaultsAreTrainOptions) {
  const TrainOptions given = parsed({"train"});
  const TrainOptions plain;  // what launch and the tests build without parsing
  EXPECT_EQ(given.strategy, plain.strategy);
  EXPECT_EQ(given.batch_per_gpu, plain.batch_per_gpu);
  EXPECT_EQ(given.workers, plain.workers);
  EXPECT_EQ(given.epochs, plain.epochs);
  EXPECT_EQ(given.seed, plain.seed);
  EXPECT_EQ(given.precision, plain.precision);
  EXPECT_EQ(given.memory_format, plain.memory_format);
  EXPECT_EQ(given.train_samples, plain.train_samples);
  EXPECT_EQ(given.device, plain.device);
  EXPECT_EQ(given.runs_path, plain.runs_path);
  EXPECT_EQ(given.machine, plain.machine);
  EXPECT_EQ(given.quiet, plain.quiet);
  EXPECT_EQ(given.probe, plain.probe);
}

TEST(SharedTrainFlags, RangesAreTheTables) {
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--workers", "-1"}); }),
            "--workers: -1 is below the minimum 0");
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--epochs", "1000001"}); }),
            "--epochs: 1000001 is too large");
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--strategy", "fsdp"}); }),
            "--strategy: 'fsdp' is not one of ddp, dp");
  EXPECT_EQ(usage_error([] { parse_train_options({"train", "--precision", "fp16"}); }),
            "--precision: 'fp16' is not one of fp32, bf16-amp");
  EXPECT_EQ(parsed({"train", "--seed", "0", "--epochs", "1000000"}).epochs, 1000000);
}

TEST(TrainerFlags, EachCheckPassesWhatItAccepts) {
  EXPECT_EQ(checked_device("cpu"), "cpu");
  EXPECT_EQ(checked_device("cuda"), "cuda");
  EXPECT_THROW(checked_device("CUDA"), UsageError);
  EXPECT_EQ(checked_lr_rule("linear-warmup"), LrRule::kLinearWarmup);
  EXPECT_EQ(finite_non_negative("lr", 0.0), 0.0);
  EXPECT_THROW(finite_non_negative("lr", std::numeric_limits<double>::infinity()), UsageError);
  EXPECT_THROW(finite_non_negative("lr", std::numeric_limits<double>::quiet_NaN()), UsageError);
  struct Ranked {
    int rank = -1, world_size = 0;
    std::string store_dir;
  } o;
  apply_rank_flags(RankFlags{3, 4, "/tmp/s"}, o);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.store_dir, "/tmp/s");
  EXPECT_THROW(apply_rank_flags(RankFlags{0, 0, "/tmp/s"}, o), UsageError);
  EXPECT_THROW(apply_rank_flags(RankFlags{-1, 2, "/tmp/s"}, o), UsageError);
}

TEST(TrainOptions, DefaultThreadsShareTheCores) {
  EXPECT_EQ(default_threads(16, 4), 4);
  EXPECT_EQ(default_threads(2, 2), 1);
  EXPECT_EQ(default_threads(2, 3), 1);  // never below one
  EXPECT_EQ(default_threads(8, 1), 8);
}

}  // namespace
}  // namespace trainsim::measure
