// `measure train --lr-rule` (measure/runs/train_options.h): the flags, their defaults and their
// way to the rank processes. The schedule itself is tested in largebatch_lr_schedule_test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runs/train_options.h"

namespace trainsim::measure {
namespace {

using Args = std::vector<std::string>;

TEST(TrainLrRule, DefaultIsTheCoursesConstantRate) {
  const auto o = parse_train_options({"train"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->lr_rule, LrRule::kConstant);
  EXPECT_EQ(o->lr_base_batch, 128);
  EXPECT_DOUBLE_EQ(o->warmup_epochs, 5);
}

TEST(TrainLrRule, FlagsReachTheRankProcesses) {
  const auto o = parse_train_options({"train", "--gpus", "4", "--batch-per-gpu", "512", "--lr-rule",
                                      "linear-warmup", "--lr-base-batch", "64", "--warmup-epochs",
                                      "0.3333333333333333"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->lr_rule, LrRule::kLinearWarmup);
  EXPECT_EQ(o->lr_base_batch, 64);
  Args args = {"train"};
  for (const auto& a : to_worker_args(*o)) args.push_back(a);
  for (const char* a : {"--rank", "0", "--world-size", "4", "--store", "/tmp/s"}) args.push_back(a);
  const TrainOptions w = parse_worker_options(args);
  EXPECT_EQ(w.lr_rule, LrRule::kLinearWarmup);
  EXPECT_EQ(w.lr_base_batch, 64);
  EXPECT_EQ(w.warmup_epochs, o->warmup_epochs);  // exactly: printed with 17 digits
}

TEST(TrainLrRule, BadValuesNameTheFlag) {
  for (const Args& args : {Args{"train", "--lr-rule", "cubic"}, Args{"train", "--lr-base-batch", "0"},
                           Args{"train", "--warmup-epochs", "-1"}}) {
    try {
      parse_train_options(args);
      ADD_FAILURE() << "accepted " << args[1] << " " << args[2];
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(args[1]), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainsim::measure
