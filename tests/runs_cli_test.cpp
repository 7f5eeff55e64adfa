// `measure train` end to end through the real binary (TRAINSIM_BIN_DIR/measure): tiny DDP and
// DataParallel runs on CPU, their runs.csv rows, and the one-line errors. Skipped while the
// binary does not dispatch `train`.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gloo_required.h"
#include "remove_tree.h"
#include "format/run_row.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;

const std::string kMeasure = std::string(TRAINSIM_BIN_DIR) + "/measure";

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class MeasureTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kMeasure)) GTEST_SKIP() << kMeasure << " is not built";
    std::string pattern = (fs::temp_directory_path() / "trainsim-train-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    if (run("train --help").status != 0) {
      GTEST_SKIP() << kMeasure << " has no `train` subcommand yet";
    }
  }
  void TearDown() override {
    if (!dir_.empty()) trainsim::measure::remove_tree(dir_);
  }

  Result run(const std::string& args) {
    const std::string out = dir_ + "/stdout";
    const std::string err = dir_ + "/stderr";
    const std::string command = kMeasure + " " + args + " >" + out + " 2>" + err;
    const int raw = std::system(command.c_str());
    Result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }

  std::string dir_;
};

TEST_F(MeasureTrain, DdpTwoRanksOnCpuAppendsOneRow) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const std::string runs = dir_ + "/reports/box/runs.csv";
  const Result r = run("train --device cpu --strategy ddp --gpus 2 --batch-per-gpu 8 "
                       "--train-samples 64 --epochs 2 --workers 0 --threads 1 --quiet --runs " +
                       runs);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(read_text(runs));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], runs_header());
  const RunRow row = parse_run_row(lines[1]);
  EXPECT_EQ(row.strategy, "ddp");
  EXPECT_EQ(row.gpus, 2);
  EXPECT_EQ(row.batch_per_gpu, 8);
  EXPECT_EQ(row.loader_workers, 0);
  EXPECT_EQ(row.train_samples, 64);
  EXPECT_EQ(row.iterations, 4);  // ceil(64 / 2) = 32 samples per rank, / 8 per batch = 4
  EXPECT_EQ(row.epochs, 2);
  EXPECT_EQ(row.threads, 1);
  EXPECT_EQ(row.device, "cpu");
  EXPECT_EQ(row.data, "synthetic");
  EXPECT_GT(row.epoch_s, 0);
  // train_s = rank 0's epoch minus its loader waits; epoch_s is the slowest rank's epoch.
  EXPECT_GT(row.train_s, 0);
  EXPECT_LE(row.train_s + row.loader_wait_s, row.epoch_s * (1 + 1e-4));  // 6-digit rounding
  // Both ranks train on 32 samples: 64 samples in epoch_s (printed with 6 digits).
  EXPECT_NEAR(row.samples_per_s * row.epoch_s, 64.0, 64.0 * 1e-4);
  EXPECT_TRUE(std::isfinite(row.final_loss));
  EXPECT_GE(row.final_accuracy, 0.0);
  EXPECT_LE(row.final_accuracy, 1.0);
  EXPECT_EQ(row.trainer, "trainsim");
  EXPECT_EQ(row.test_samples, 0);  // no test pass
  EXPECT_FALSE(row.test_s.has_value());
  ASSERT_TRUE(row.probe_s.has_value());  // timed by the launcher before the ranks started
  EXPECT_GT(*row.probe_s, 0.0);
  ASSERT_TRUE(row.load_before.has_value());
  ASSERT_TRUE(row.load_after.has_value());
  EXPECT_GE(*row.load_before, 0.0);
  EXPECT_GE(*row.load_after, 0.0);
  EXPECT_NE(r.out.find("appended to " + runs), std::string::npos) << r.out;
}

// A port nobody listens on now (the kernel's pick for port 0), for the TCPStore rendezvous.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return 29500;
  }
  close(fd);
  return ntohs(address.sin_port);
}

// Ranks started as torchrun starts them (its environment variables, no measure launcher): they
// rendezvous through a TCPStore on rank 0's host and rank 0 appends the one row.
TEST_F(MeasureTrain, DdpRanksStartedWithTorchrunsVariablesRendezvousOverTcp) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const std::string runs = dir_ + "/reports/box/runs.csv";
  const std::string env = "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                          std::to_string(free_port());
  const std::string args = " train --device cpu --strategy ddp --gpus 2 --batch-per-gpu 8 --train-samples 64 "
                           "--epochs 2 --workers 0 --threads 1 --no-probe --runs " + runs;
  // `timeout`: a rendezvous that never completes fails the test instead of hanging it.
  const std::string command = "env RANK=0 LOCAL_RANK=0 " + env + " timeout 300 " + kMeasure + args + " >" + dir_ + "/out0 2>" +
                              dir_ + "/err0 & env RANK=1 LOCAL_RANK=1 " + env + " timeout 300 " + kMeasure + args + " >" + dir_ +
                              "/out1 2>" + dir_ + "/err1; one=$?; wait $!; zero=$?; exit $((zero | one))";
  const int raw = std::system(("bash -c '" + command + "'").c_str());
  ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0)
      << read_text(dir_ + "/err0") << read_text(dir_ + "/err1");
  const auto lines = lines_of(read_text(runs));
  ASSERT_EQ(lines.size(), 2u);  // the header and rank 0's row
  const RunRow row = parse_run_row(lines[1]);
  EXPECT_EQ(row.gpus, 2);
  EXPECT_EQ(row.iterations, 4);
  EXPECT_NEAR(row.samples_per_s * row.epoch_s, 64.0, 64.0 * 1e-4);  // both ranks' samples
  EXPECT_NE(read_text(dir_ + "/err0").find("rank 0 of 2 (torchrun), rendezvous at 127.0.0.1:"), std::string::npos)
      << read_text(dir_ + "/err0");
  EXPECT_TRUE(read_text(dir_ + "/out1").empty());  // only rank 0 reports
}

TEST_F(MeasureTrain, LauncherRanksMustMatchGpus) {
  const std::string command = "env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 " + kMeasure +
                              " train --device cpu --strategy ddp --gpus 4 >/dev/null 2>" + dir_ + "/err";
  const int raw = std::system(command.c_str());
  EXPECT_EQ(WEXITSTATUS(raw), 2);
  EXPECT_NE(read_text(dir_ + "/err").find("--gpus 4 but torchrun started 2 ranks"), std::string::npos)
      << read_text(dir_ + "/err");
}

// `--gpus 99 --device cpu` once started 97 extra rank processes on 2 cores without a word.
TEST_F(MeasureTrain, CpuRanksBeyondTheCoresAreAnError) {
  const Result r = run("train --device cpu --strategy ddp --gpus 4096 --train-samples 64 --no-probe --runs " +
                       dir_ + "/runs.csv");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("error: --gpus 4096 --device cpu: 4096 rank processes on this host's "), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/runs.csv"));
}

TEST_F(MeasureTrain, DataParallelOnOneCpuDevice) {
  const std::string runs = dir_ + "/runs.csv";
  const Result r = run("train --device cpu --strategy dp --gpus 1 --batch-per-gpu 16 "
                       "--train-samples 40 --epochs 1 --workers 1 --threads 1 --quiet --no-probe --runs " +
                       runs);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(read_text(runs));
  ASSERT_EQ(lines.size(), 2u);
  const RunRow row = parse_run_row(lines[1]);
  EXPECT_EQ(row.strategy, "dp");
  EXPECT_EQ(row.iterations, 3);  // ceil(40 / 16): 16, 16 and a partial batch of 8
  EXPECT_EQ(row.epochs, 1);
  // One process: the reported epoch is its own, so train_s + loader_wait_s = epoch_s.
  EXPECT_NEAR(row.train_s + row.loader_wait_s, row.epoch_s, row.epoch_s * 1e-4);
  EXPECT_NEAR(row.samples_per_s * row.epoch_s, 40.0, 40.0 * 1e-4);
  EXPECT_FALSE(row.probe_s.has_value());  // --no-probe
  EXPECT_TRUE(row.load_before.has_value());
}

TEST_F(MeasureTrain, DataMadeByMakeDataIsSynthetic) {
  // `measure make-data` writes CIFAR-10 binaries and the SYNTHETIC marker; a run reading them
  // (--data DIR) says synthetic, as one on generated images does.
  const std::string data = dir_ + "/data";
  const Result made = run("make-data --out " + data + " --train-samples 40 --test-samples 1");
  ASSERT_EQ(made.status, 0) << made.err;
  EXPECT_TRUE(fs::exists(data + "/SYNTHETIC"));
  const std::string runs = dir_ + "/runs.csv";
  const Result r = run("train --device cpu --strategy dp --gpus 1 --batch-per-gpu 20 --data " + data +
                       " --epochs 1 --workers 0 --threads 1 --quiet --no-probe --runs " + runs);
  ASSERT_EQ(r.status, 0) << r.err;
  const RunRow row = parse_run_row(lines_of(read_text(runs)).at(1));
  EXPECT_EQ(row.data, "synthetic");
  EXPECT_EQ(row.train_samples, 40);  // all the folder's training images
  // Removing the marker makes the same files "cifar10".
  fs::remove(data + "/SYNTHETIC");
  ASSERT_EQ(run("train --device cpu --strategy dp --gpus 1 --batch-per-gpu 20 --data " + data +
                " --epochs 1 --workers 0 --threads 1 --quiet --no-probe --runs " + runs)
                .status,
            0);
  EXPECT_EQ(parse_run_row(lines_of(read_text(runs)).at(2)).data, "cifar10");
}

TEST_F(MeasureTrain, MakeDataRejectsTooFewImages) {
  const Result r = run("make-data --out " + dir_ + "/d --train-samples 4");
  EXPECT_EQ(r.status, 2);
  const auto err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0].rfind("error: --train-samples: 4 is below the minimum 5", 0), 0u) << err[0];
}

TEST_F(MeasureTrain, BadFlagIsOneErrorLine) {
  const Result r = run("train --device cpu --strategy dp --gpus 2");
  EXPECT_EQ(r.status, 2);
  const auto err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0].rfind("error: --strategy dp --device cpu: DataParallel needs CUDA", 0), 0u)
      << err[0];
}

TEST_F(MeasureTrain, ForeignRunsFileIsRejectedBeforeTraining) {
  const std::string runs = dir_ + "/runs.csv";
  std::ofstream(runs) << "a,b,c\n1,2,3\n";
  const Result r = run("train --device cpu --strategy ddp --gpus 1 --batch-per-gpu 8 "
                       "--train-samples 8 --epochs 1 --quiet --runs " + runs);
  EXPECT_EQ(r.status, 2);
  const auto err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0].rfind("error: " + runs + ":1: header: expected '", 0), 0u) << err[0];
  EXPECT_EQ(read_text(runs), "a,b,c\n1,2,3\n");
}

}  // namespace
}  // namespace trainsim::measure
