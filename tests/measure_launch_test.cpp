// launch_ranks: one child per rank with --rank/--world-size/--store appended, failures named,
// hung ranks killed at the timeout. The children are /bin/sh scripts (fast, torch-free).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "launch.h"

namespace {

namespace fs = std::filesystem;
using trainsim::measure::launch_ranks;

struct TempFolder {
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "measure-launch-test-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempFolder() { fs::remove_all(path); }
  std::string path;
};

// `sh -c SCRIPT sh ARGS...`: inside SCRIPT, "$@" are the arguments launch_ranks appended.
std::vector<std::string> shell(const std::string& script) { return {"-c", script, "sh"}; }

TEST(LaunchRanks, StartsOneProcessPerRankWithRankFlags) {
  TempFolder store;
  // Each rank writes its arguments to <store>/rank-<R>: "$2" is R after "--rank".
  launch_ranks("/bin/sh", shell("echo \"$@\" > \"$6/rank-$2\""), 3, store.path, 30);
  for (int r = 0; r < 3; ++r) {
    std::ifstream in(store.path + "/rank-" + std::to_string(r));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "--rank " + std::to_string(r) + " --world-size 3 --store " + store.path);
  }
}

TEST(LaunchRanks, NamesTheRankThatFailedAndHowItEnded) {
  TempFolder store;
  // Rank 1 exits with status 3 at once; rank 0 would sleep 30 s and is killed after the grace.
  const auto t0 = std::chrono::steady_clock::now();
  try {
    launch_ranks("/bin/sh", shell("if [ \"$2\" = 1 ]; then exit 3; fi; sleep 30"), 2, store.path,
                 /*timeout_s=*/60, /*grace_s=*/0.2);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("exited with status 3"), std::string::npos) << what;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);  // rank 0 was killed, not waited for (it sleeps 30 s)
}

TEST(LaunchRanks, ReportsASignal) {
  TempFolder store;
  try {
    launch_ranks("/bin/sh", shell("kill -9 $$"), 1, store.path, 30, 0.2);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("killed by signal 9"), std::string::npos) << e.what();
  }
}

TEST(LaunchRanks, KillsRanksStillRunningAtTheTimeout) {
  TempFolder store;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(launch_ranks("/bin/sh", shell("sleep 30"), 2, store.path, /*timeout_s=*/0.3, 0.1),
               std::runtime_error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);
}

TEST(LaunchRanks, AMissingExecutableIsAFailedRank) {
  TempFolder store;
  // exec fails in the child, which exits 127.
  try {
    launch_ranks(store.path + "/no-such-program", {}, 1, store.path, 30, 0.1);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 127"), std::string::npos) << e.what();
  }
}

TEST(SelfExecutable, IsThisTestBinary) {
  const std::string self = trainsim::measure::self_executable();
  EXPECT_TRUE(fs::path(self).is_absolute());
  EXPECT_NE(self.find("measure_unit_tests"), std::string::npos) << self;
}

}  // namespace
