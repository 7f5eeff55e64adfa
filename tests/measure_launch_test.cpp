// launch_ranks: one child per rank with --rank/--world-size/--store appended, failures named,
// hung ranks killed at the timeout. The children are /bin/sh scripts (fast, torch-free).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"
#include "remove_tree.h"

namespace {

namespace fs = std::filesystem;
using trainsim::measure::default_stall_seconds;
using trainsim::measure::launch_ranks;

struct TempFolder {
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "measure-launch-test-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempFolder() { trainsim::measure::remove_tree(path); }
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
  // (`exec`: the rank is the sleep itself, so no orphaned sleep keeps the test's output open.)
  const auto t0 = std::chrono::steady_clock::now();
  try {
    launch_ranks("/bin/sh", shell("if [ \"$2\" = 1 ]; then exit 3; fi; exec sleep 30"), 2, store.path,
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
  EXPECT_THROW(launch_ranks("/bin/sh", shell("exec sleep 30"), 2, store.path, /*timeout_s=*/0.3, 0.1),
               std::runtime_error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);
}

TEST(LaunchRanks, NamesTheRankASignalEndedNotTheOnesThatFailedBecauseOfIt) {
  TempFolder store;
  // Rank 0 fails at once (as a peer of a dead rank does); rank 1 records its step, then is killed.
  try {
    launch_ranks("/bin/sh",
                 shell("if [ \"$2\" = 0 ]; then exit 1; fi; echo 'epoch 3/5' > \"$6/progress-1\"; kill -9 $$"), 2,
                 store.path, /*timeout_s=*/30, /*grace_s=*/2);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("killed by signal 9"), std::string::npos) << what;
    EXPECT_NE(what.find("(last step: epoch 3/5)"), std::string::npos) << what;
  }
}

TEST(LaunchRanks, ARankWithoutHeartbeatIsStalledAndEveryRankStopped) {
  TempFolder store;
  // Rank 0 keeps its heartbeat file fresh; rank 1 never writes one and would sleep 30 s.
  const auto t0 = std::chrono::steady_clock::now();
  try {
    launch_ranks("/bin/sh",
                 shell("if [ \"$2\" = 1 ]; then exec sleep 30; fi; "
                       "while true; do echo working > \"$6/progress-0\"; sleep 0.2; done"),
                 2, store.path, /*timeout_s=*/60, /*grace_s=*/0.2, /*stall_s=*/1);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("stalled: no heartbeat for"), std::string::npos) << what;
    EXPECT_NE(what.find("(before its first heartbeat)"), std::string::npos) << what;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);  // both ranks were killed, not waited for
}

TEST(LaunchRanks, StallSecondsFromTheEnvironment) {
  ASSERT_EQ(unsetenv("TRAINSIM_STALL_S"), 0);
  EXPECT_EQ(default_stall_seconds(), 30.0);
  ASSERT_EQ(setenv("TRAINSIM_STALL_S", "2.5", 1), 0);
  EXPECT_EQ(default_stall_seconds(), 2.5);
  for (const char* bad : {"0", "-1", "x", "5s"}) {
    ASSERT_EQ(setenv("TRAINSIM_STALL_S", bad, 1), 0);
    EXPECT_THROW(default_stall_seconds(), std::invalid_argument) << bad;
  }
  ASSERT_EQ(unsetenv("TRAINSIM_STALL_S"), 0);
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

// remove_tree replaces std::filesystem::remove_all, which crashed in every program linked with
// the PyTorch 2.11 wheel's LibTorch (its libtorch_cpu.so exports libstdc++'s filesystem internals).
TEST(RemoveTree, RemovesNestedFoldersAndFilesButNotWhatALinkPointsTo) {
  TempFolder outside;
  const fs::path kept = fs::path(outside.path) / "kept.txt";
  std::ofstream(kept) << "stays";
  std::string pattern = (fs::temp_directory_path() / "remove-tree-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path root = pattern;
  fs::create_directories(root / "a" / "b" / "c");
  std::ofstream(root / "top.txt") << "x";
  std::ofstream(root / "a" / "b" / "c" / "deep.txt") << "y";
  fs::create_symlink(outside.path, root / "a" / "link");
  EXPECT_TRUE(trainsim::measure::remove_tree(root.string()));
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(kept));                                   // the link's target stays
  EXPECT_FALSE(trainsim::measure::remove_tree(root.string()));     // already gone
  const fs::path file = fs::path(outside.path) / "one-file";
  std::ofstream(file) << "z";
  EXPECT_TRUE(trainsim::measure::remove_tree(file.string()));      // a plain file
  EXPECT_FALSE(fs::exists(file));
}

// Killed measure runs left trainsim-train-*, trainsim-collective-* and trainsim-contention-*
// folders in /tmp for good (issue 13): the next TempDir of a prefix removes those whose process
// has exited, and leaves a live process's folder and other names alone.
TEST(TempDir, RemovesTheFoldersOfKilledRunsOnly) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // its pid is now a process that is gone
  const fs::path tmp = fs::temp_directory_path();
  const std::string prefix = "trainsim-launch-test-" + std::to_string(getpid()) + "-";
  const fs::path dead = tmp / (prefix + std::to_string(child) + "-abc123");
  const fs::path alive = tmp / (prefix + std::to_string(getpid()) + "-def456");
  const fs::path other = tmp / (prefix + "notapid");
  for (const auto& d : {dead, alive, other}) {
    fs::create_directories(d / "sub");
    std::ofstream(d / "sub" / "file") << "x";
  }
  std::string made;
  {
    const trainsim::measure::TempDir fresh(prefix);
    made = fresh.path();
    EXPECT_EQ(fs::path(made).filename().string().rfind(prefix + std::to_string(getpid()) + "-", 0), 0u) << made;
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(alive / "sub" / "file"));
    EXPECT_TRUE(fs::exists(other / "sub" / "file"));
  }
  EXPECT_FALSE(fs::exists(made));
  trainsim::measure::remove_tree(alive.string());
  trainsim::measure::remove_tree(other.string());
}

TEST(SelfExecutable, IsThisTestBinary) {
  const std::string self = trainsim::measure::self_executable();
  EXPECT_TRUE(fs::path(self).is_absolute());
  EXPECT_NE(self.find("measure_unit_tests"), std::string::npos) << self;
}

}  // namespace

// Ranks started by torchrun or srun (external_rank_from_env).
namespace {

using trainsim::measure::external_rank_from_env;
using trainsim::measure::first_slurm_host;

// Sets the given variables for one test and clears every launcher variable around it.
class LauncherEnvironment : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"RANK",         "WORLD_SIZE",    "LOCAL_RANK",   "LOCAL_WORLD_SIZE",
                                           "MASTER_ADDR",  "MASTER_PORT",   "SLURM_PROCID", "SLURM_NTASKS",
                                           "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_JOB_NODELIST"};
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kNames) unsetenv(name);
  }
};

TEST_F(LauncherEnvironment, NoLauncherIsNone) { EXPECT_FALSE(external_rank_from_env()); }

TEST_F(LauncherEnvironment, ReadsTorchrunsVariables) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "8", 1);
  setenv("LOCAL_RANK", "3", 1);
  setenv("LOCAL_WORLD_SIZE", "4", 1);
  setenv("MASTER_ADDR", "node0", 1);
  setenv("MASTER_PORT", "29400", 1);
  const auto r = external_rank_from_env();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->launcher, "torchrun");
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->local_rank, 3);
  EXPECT_EQ(r->local_world_size, 4);
  EXPECT_EQ(r->master_addr, "node0");
  EXPECT_EQ(r->master_port, 29400);
}

TEST_F(LauncherEnvironment, IncompleteOrMalformedSetsNameTheVariable) {
  setenv("RANK", "0", 1);
  try {
    external_rank_from_env();
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("WORLD_SIZE"), std::string::npos) << e.what();
  }
  setenv("WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "h", 1);
  setenv("MASTER_PORT", "70000", 1);
  EXPECT_THROW(external_rank_from_env(), std::invalid_argument);  // port beyond 65535
  setenv("MASTER_PORT", "29500", 1);
  setenv("RANK", "2", 1);
  EXPECT_THROW(external_rank_from_env(), std::invalid_argument);  // rank outside a world of 2
}

TEST_F(LauncherEnvironment, ReadsSlurmsVariablesAndItsFirstHost) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "16", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_NTASKS_PER_NODE", "4(x4)", 1);
  setenv("SLURM_JOB_NODELIST", "gpu[07-10]", 1);
  const auto r = external_rank_from_env();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->launcher, "slurm");
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->world_size, 16);
  EXPECT_EQ(r->local_world_size, 4);
  EXPECT_EQ(r->master_addr, "gpu07");
  EXPECT_EQ(r->master_port, 29500);  // torchrun's default
  EXPECT_EQ(first_slurm_host("a,b"), "a");
  EXPECT_EQ(first_slurm_host("login"), "login");
  EXPECT_EQ(first_slurm_host("n[1,3-4],m"), "n1");
  EXPECT_EQ(first_slurm_host("x1,n[2-3]"), "x1");
}

}  // namespace
