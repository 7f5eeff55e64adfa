// `measure --device cpu` end to end with a tiny grid: the profile it writes loads, has every
// section (host contention for 1 and 2 processes, the DDP loop body and its buckets, the
// calibration probe, loader start-up included), and --resume measures only what is missing (and
// nothing the second time). The pytorch section through a stand-in interpreter whose "profile_torch.py"
// writes a fixed JSON object (the real script is tested in tests/pytorch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gloo_required.h"
#include "format/profile_io.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

const std::string kMeasure = std::string(TRAINSIM_BIN_DIR) + "/measure";
const std::string kLog = std::string(TRAINSIM_FIXTURES_DIR) + "/measure/all_reduce_perf_2ranks.log";
// The tiny grid: batch 2, one timed run, 256 loader samples, collectives of 1 and 4 KiB.
const std::string kTiny =
    " --device cpu --models resnet18-cifar --batches 2 --warmup 0 --repeats 1 --threads 1"
    " --loader-samples 256 --collectives-max-bytes 4096 --collective-repeats 2";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class MeasureEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = dir_ + "/cpu-test/profile.yaml";
  }

  // Runs measure with `flags` (and --pytorch off unless they name --pytorch); returns its exit
  // status, stderr in stderr_.
  int measure(const std::string& flags) {
    const std::string err = dir_ + "/stderr.txt";
    const std::string pytorch = flags.find("--pytorch ") == std::string::npos ? " --pytorch off" : "";
    const int status =
        std::system((kMeasure + kTiny + pytorch + " --out " + profile_ + flags + " 2> " + err).c_str());
    stderr_ = read_file(err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  ::trainsim::testing::TempDir temp_{"measure-e2e"};
  std::string dir_ = temp_.path().string();
  std::string profile_;
  std::string stderr_;
};

TEST_F(MeasureEndToEnd, WritesAFullProfileAndResumesOnlyWhatIsMissing) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  ASSERT_TRUE(fs::exists(kMeasure)) << kMeasure;

  // 1. Compute and host contention (1 and 2 processes at the grid's batch 2) only.
  ASSERT_EQ(measure(" --ranks 2 --skip loader,collectives"), 0) << stderr_;
  const trainsim::Profile first = trainsim::load_profile(profile_);
  ASSERT_EQ(first.models.count("resnet18-cifar"), 1u);
  const auto& m1 = first.models.at("resnet18-cifar");
  EXPECT_EQ(m1.batches, std::vector<int64_t>{2});
  EXPECT_EQ(m1.memory_method, "process-rss");
  EXPECT_GT(m1.peak_memory_bytes.at(0), 0.0);
  EXPECT_GT(m1.iteration_s.at(0), 0.0);
  // The page faults of the fused iteration's runs, and this host's cost of one.
  ASSERT_EQ(m1.minor_faults.size(), 1u);
  EXPECT_GE(m1.minor_faults[0], 0.0);
  EXPECT_GT(first.machine.page_fault_s, 0.0);
  EXPECT_NE(stderr_.find("page faults: "), std::string::npos) << stderr_;
  for (const auto& layer : m1.layers) {
    ASSERT_EQ(layer.forward_s.size(), 1u) << layer.name;
    EXPECT_GT(layer.forward_s[0], 0.0) << layer.name;
    EXPECT_GT(layer.backward_s[0], 0.0) << layer.name;
  }
  EXPECT_TRUE(first.loader.points.empty());
  EXPECT_TRUE(first.collectives.curves.empty());
  EXPECT_NE(stderr_.find("sum of parts"), std::string::npos) << stderr_;
  ASSERT_EQ(m1.host_contention.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(m1.host_contention[i].ranks, static_cast<int>(i) + 1);
    EXPECT_EQ(m1.host_contention[i].batch, 2);  // default: the smallest batch of the grid
    EXPECT_GT(m1.host_contention[i].iteration_s, 0.0);
  }
  EXPECT_NE(stderr_.find("2 processes: "), std::string::npos) << stderr_;
  // The DDP loop body on 1 rank (c10d::Reducer over a 1-rank Gloo group), after the rebuild.
  ASSERT_EQ(m1.ddp_iteration_s.size(), 1u);
  EXPECT_GT(m1.ddp_iteration_s[0], 0.0);
  // Its excess over the fused iteration is the median ratio of pairs timed back to back (the log
  // prints it), applied to the case's fused iteration: not a second timing made on its own.
  const std::string over = " over the fused iteration timed in turn with it; alone ";
  const size_t at = stderr_.find(over);
  ASSERT_NE(at, std::string::npos) << stderr_;
  const size_t open = stderr_.rfind('(', at);
  ASSERT_NE(open, std::string::npos);
  const double excess_pct = std::stod(stderr_.substr(open + 1, at - open - 2));  // "+1.2" of "(+1.2%"
  EXPECT_NEAR((m1.ddp_iteration_s[0] / m1.iteration_s[0] - 1) * 100, excess_pct, 0.051) << stderr_;
  ASSERT_EQ(m1.ddp_buckets.size(), 3u);
  EXPECT_EQ(m1.ddp_buckets[0].bytes, 9461800);
  EXPECT_EQ(m1.ddp_buckets[0].params, (std::vector<int>{61, 60, 58, 59, 57}));
  EXPECT_EQ(m1.ddp_buckets[1].bytes, 26494976);
  EXPECT_EQ(m1.ddp_buckets[2].bytes, 8739072);
  EXPECT_NE(stderr_.find("DDP loop body on 1 rank"), std::string::npos) << stderr_;
  // The calibration probe before and after.
  ASSERT_TRUE(first.calibration.has_value());
  EXPECT_EQ(first.calibration->model, "resnet18-cifar");
  EXPECT_EQ(first.calibration->batch, 32);
  EXPECT_EQ(first.calibration->threads, 1);
  EXPECT_GT(first.calibration->start_s, 0.0);
  EXPECT_GT(first.calibration->end_s, 0.0);
  EXPECT_NE(stderr_.find("calibration probe (start)"), std::string::npos) << stderr_;
  EXPECT_FALSE(first.pytorch.has_value());  // --pytorch off

  // 2. --resume with every part: the compute case is kept as it was (not re-measured), the
  // loader and the broadcast/reduce curves are measured, all_reduce comes from the log.
  ASSERT_EQ(measure(" --resume --nccl-tests-log " + kLog), 0) << stderr_;
  // 1 compute + 1 contention + 1 loader + 3 collectives planned; compute and contention done;
  // all_reduce (2 ranks) from the log.
  EXPECT_NE(stderr_.find("6 cases planned, 3 already in the profile, 3 to measure"), std::string::npos)
      << stderr_;
  EXPECT_NE(stderr_.find("synthetic"), std::string::npos) << stderr_;
  const trainsim::Profile second = trainsim::load_profile(profile_);
  const auto& m2 = second.models.at("resnet18-cifar");
  EXPECT_EQ(m2.iteration_s, m1.iteration_s);  // identical numbers: not measured again
  EXPECT_EQ(m2.layers.at(3).backward_s, m1.layers.at(3).backward_s);
  ASSERT_EQ(m2.host_contention.size(), 2u);
  EXPECT_EQ(m2.host_contention[1].iteration_s, m1.host_contention[1].iteration_s);

  EXPECT_EQ(second.machine.device_kind, "cpu");
  EXPECT_EQ(second.machine.device_count, 2);  // ranks used for collectives
  // `measure machine` names this host as the profile does (scripts/validate.sh files under it).
  const std::string name_file = dir_ + "/machine.txt";
  ASSERT_EQ(std::system((kMeasure + " machine --device cpu > " + name_file).c_str()), 0);
  EXPECT_EQ(read_file(name_file), second.machine.name + "\n");
  EXPECT_FALSE(second.machine.libtorch.empty());
  EXPECT_FALSE(second.h2d.applicable);
  EXPECT_EQ(second.measurement.data, "synthetic");
  EXPECT_EQ(second.loader.data, "synthetic");
  EXPECT_EQ(second.loader.batch, 128);
  ASSERT_EQ(second.loader.points.size(), 3u);  // workers 0, 1, 2
  for (const auto& p : second.loader.points) {
    EXPECT_GT(p.samples_per_s, 0.0);
    ASSERT_TRUE(p.startup_s.has_value());
    EXPECT_GE(*p.startup_s, 0.0);
  }
  EXPECT_EQ(second.loader.points[0].startup_s, std::optional<double>(0.0));  // inline: nothing to start
  // The resumed run keeps the first run's calibration and command (the reference its cases were
  // measured at: a run adding cases later must not move it) and records its own command and probe.
  ASSERT_TRUE(second.calibration.has_value());
  EXPECT_EQ(second.calibration->start_s, first.calibration->start_s);
  EXPECT_EQ(second.calibration->end_s, first.calibration->end_s);
  EXPECT_EQ(second.measurement.command, first.measurement.command);
  EXPECT_TRUE(first.measurement.resumed.empty());
  ASSERT_EQ(second.measurement.resumed.size(), 1u);
  EXPECT_NE(second.measurement.resumed[0].command.find("--resume"), std::string::npos);
  EXPECT_FALSE(second.measurement.resumed[0].date.empty());
  EXPECT_GT(second.measurement.resumed[0].probe_s, 0.0);
  EXPECT_NE(stderr_.find("against the profile's calibration"), std::string::npos) << stderr_;

  EXPECT_EQ(second.collectives.backend, "gloo");
  EXPECT_EQ(second.collectives.source, "nccl-tests:" + kLog);
  ASSERT_EQ(second.collectives.curves.size(), 3u);
  for (const auto& c : second.collectives.curves) {
    EXPECT_EQ(c.ranks, 2);
    if (c.op == "all_reduce") {
      ASSERT_EQ(c.points.size(), 4u);                 // the fixture's four sizes
      EXPECT_DOUBLE_EQ(c.points[0].time_s, 10e-6);    // out-of-place 10 us
    } else {
      ASSERT_EQ(c.points.size(), 2u) << c.op;         // measured: 1 KiB and 4 KiB
      EXPECT_DOUBLE_EQ(c.points[1].bytes, 4096);
    }
  }
  EXPECT_TRUE(fs::exists(dir_ + "/cpu-test/collectives.txt"));

  // 3. --resume again: nothing left, the file is untouched.
  const std::string before = read_file(profile_);
  ASSERT_EQ(measure(" --resume"), 0) << stderr_;
  EXPECT_NE(stderr_.find("nothing left to measure"), std::string::npos) << stderr_;
  EXPECT_EQ(read_file(profile_), before);
}

// A stand-in interpreter: `-c ...` (the import check) succeeds; `SCRIPT ARGS...` records its
// arguments and writes `json` to the --out file, or exits `status`.
std::string fake_python(const std::string& dir, const std::string& json, int status = 0) {
  const std::string path = dir + "/fakepy";
  std::ofstream(dir + "/pytorch.json") << json;
  std::ofstream out(path);
  out << "#!/bin/sh\n"
      << "[ \"$1\" = -c ] && exit 0\n"
      << "echo \"$@\" > " << dir << "/args.txt\n"
      << "prev=; for a in \"$@\"; do [ \"$prev\" = --out ] && cp " << dir << "/pytorch.json \"$a\"; prev=$a; done\n"
      << "exit " << status << "\n";
  out.close();
  fs::permissions(path, fs::perms::owner_all);
  std::ofstream(dir + "/profile_torch.py") << "# stand-in\n";
  return path;
}

const char* const kPytorchJson = R"({"framework": "pytorch", "torch": "9.9", "torchvision": "0.9",
  "python": "3.11.2", "device": "cpu", "device_name": "cpu", "threads": 1, "data": "synthetic", "probe_s": 0.5,
  "loader": {"batch": 128, "points": [{"workers": 0, "samples_per_s": 900, "first_batch_s": 0.1, "startup_s": 0},
                                     {"workers": 1, "samples_per_s": 1000, "first_batch_s": 0.3, "startup_s": 0.2}],
             "at_batches": [{"batch": 2, "points": [{"workers": 1, "samples_per_s": 800, "first_batch_s": 0.1, "startup_s": 0.1}]}]},
  "models": {"resnet18-cifar": {"batches": [2], "iteration_s": [0.1], "ddp_iteration_s": [0.12], "oom_batch": null}}})";

// What profile_torch.py --loader-only writes: the DataLoader alone, at its batch and the others.
const char* const kPytorchAtBatchJson = R"({"framework": "pytorch", "torch": "9.9", "torchvision": "0.9",
  "python": "3.11.2", "device": "cpu", "device_name": "cpu", "threads": 1, "data": "synthetic", "probe_s": 0.5,
  "loader": {"batch": 128, "points": [{"workers": 0, "samples_per_s": 850, "first_batch_s": 0.1, "startup_s": 0}],
             "at_batches": [{"batch": 2, "points": [
     {"workers": 0, "samples_per_s": 600, "first_batch_s": 0.01, "startup_s": 0},
     {"workers": 1, "samples_per_s": 700, "first_batch_s": 0.2, "startup_s": 0.2}]}]},
  "models": {}})";

TEST_F(MeasureEndToEnd, PytorchSectionFromProfileTorchPy) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  const std::string python = fake_python(dir_, kPytorchJson);
  const std::string flags = " --skip compute,contention,loader,collectives --pytorch " + python +
                            " --pytorch-script " + dir_ + "/profile_torch.py";
  ASSERT_EQ(measure(flags), 0) << stderr_;
  const trainsim::Profile p = trainsim::load_profile(profile_);
  ASSERT_TRUE(p.pytorch.has_value());
  EXPECT_EQ(p.pytorch->torch, "9.9");
  EXPECT_DOUBLE_EQ(p.pytorch->probe_s, 0.5);
  ASSERT_EQ(p.pytorch->loader.points.size(), 2u);
  EXPECT_EQ(p.pytorch->loader.points[1].startup_s, std::optional<double>(0.2));
  EXPECT_EQ(p.pytorch->models.at("resnet18-cifar").ddp_iteration_s, std::vector<double>{0.12});
  // profile_torch.py got the profile's settings and, without --data, a folder of synthetic files.
  const std::string args = read_file(dir_ + "/args.txt");
  EXPECT_EQ(args.rfind(dir_ + "/profile_torch.py --data ", 0), 0u) << args;
  // The DataLoader at the grid's other batch too (2: loader.at_batches).
  for (const char* want : {"--device cpu --threads 1 --batches 2 --models resnet18-cifar --warmup 0 --repeats 1 "
                           "--loader-batch 128,2 --loader-workers 0,1,2 --fork-ranks 1,2 --out "}) {
    EXPECT_NE(args.find(want), std::string::npos) << args;
  }
  EXPECT_NE(stderr_.find("synthetic CIFAR-10-format files for Python"), std::string::npos) << stderr_;
  ASSERT_EQ(p.pytorch->loader.at_batches.size(), 1u);
  EXPECT_DOUBLE_EQ(p.pytorch->loader.at_batches[0].points[0].samples_per_s, 800);
  // A section without the other batches (as profile_torch.py wrote before it measured them): --resume
  // measures the DataLoader alone (--loader-only) and replaces the section's, keeping the rest.
  trainsim::Profile older = p;
  older.pytorch->loader.at_batches.clear();
  trainsim::write_profile_atomic(older, profile_);
  std::ofstream(dir_ + "/pytorch.json") << kPytorchAtBatchJson;
  ASSERT_EQ(measure(flags + " --resume"), 0) << stderr_;
  EXPECT_NE(stderr_.find("PyTorch DataLoader at batches 2"), std::string::npos) << stderr_;
  EXPECT_NE(read_file(dir_ + "/args.txt").find("--loader-batch 128,2 "), std::string::npos);
  EXPECT_NE(read_file(dir_ + "/args.txt").find("--loader-only"), std::string::npos);
  const trainsim::Profile merged = trainsim::load_profile(profile_);
  ASSERT_EQ(merged.pytorch->loader.at_batches.size(), 1u);
  EXPECT_EQ(merged.pytorch->loader.at_batches[0].batch, 2);
  EXPECT_DOUBLE_EQ(merged.pytorch->loader.at_batches[0].points[1].samples_per_s, 700);
  ASSERT_EQ(merged.pytorch->loader.points.size(), 1u);  // the main batch from the same run
  EXPECT_DOUBLE_EQ(merged.pytorch->loader.points[0].samples_per_s, 850);
  EXPECT_EQ(merged.pytorch->torch, "9.9");  // the rest of the section kept
  EXPECT_EQ(merged.pytorch->models.at("resnet18-cifar").ddp_iteration_s, std::vector<double>{0.12});

  // --resume keeps the section: nothing left to measure.
  ASSERT_EQ(measure(flags + " --resume"), 0) << stderr_;
  EXPECT_NE(stderr_.find("nothing left to measure"), std::string::npos) << stderr_;
}

TEST_F(MeasureEndToEnd, BadPytorchJsonIsOneLineNamingFileAndKey) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  std::string bad = kPytorchJson;
  const std::string good_rate = "\"samples_per_s\": 1000";
  bad.replace(bad.find(good_rate), good_rate.size(), "\"samples_per_s\": -1");
  const std::string python = fake_python(dir_, bad);
  EXPECT_EQ(measure(" --skip compute,contention,loader,collectives --pytorch " + python + " --pytorch-script " +
                    dir_ + "/profile_torch.py"),
            2);
  const std::string last = stderr_.substr(stderr_.rfind("error: "));
  EXPECT_NE(last.find("pytorch.json: loader.points[1].samples_per_s: expected a number > 0, found -1"),
            std::string::npos)
      << stderr_;
  EXPECT_EQ(std::count(last.begin(), last.end(), '\n'), 1) << last;
}

TEST_F(MeasureEndToEnd, PytorchInterpreterWithoutTorchIsRejected) {
  EXPECT_EQ(measure(" --pytorch /nonexistent/python3"), 2);
  EXPECT_EQ(stderr_.rfind("error: --pytorch /nonexistent/python3: cannot run it or it cannot import torch", 0), 0u)
      << stderr_;
  EXPECT_EQ(std::count(stderr_.begin(), stderr_.end(), '\n'), 1) << stderr_;
}

TEST_F(MeasureEndToEnd, SimulateAcceptsTheProfile) {
  TRAINSIM_SKIP_WITHOUT_GLOO();
  // Only in builds that have the simulator too (measure-only builds skip this check).
  const std::string simulate = std::string(TRAINSIM_BIN_DIR) + "/simulate";
  if (!fs::exists(simulate)) GTEST_SKIP() << simulate << " is not built";
  ASSERT_EQ(measure(""), 0) << stderr_;
  const std::string config = dir_ + "/sweep.yaml";
  std::ofstream(config) << "profile: " << profile_ << "\n"
                        << "model: resnet18-cifar\n"
                        << "dataset: {train_samples: 64}\n"
                        << "loader: {workers: 2}\n"
                        << "sweep: {strategy: [dp, ddp], gpus: [1, 2], batch_per_gpu: [2]}\n";
  const std::string err = dir_ + "/simulate-stderr.txt";
  const int status =
      std::system((simulate + " " + config + " --out " + dir_ + "/sim > /dev/null 2> " + err).c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(err);
  EXPECT_TRUE(fs::exists(dir_ + "/sim/predictions.csv"));
}

// measure --version names the program, its LibTorch and its collectives; the internal `worker`
// subcommand is never offered to users.
TEST_F(MeasureEndToEnd, VersionAndSubcommandListLeaveOutTheWorker) {
  const std::string out = dir_ + "/stdout.txt";
  const std::string err = dir_ + "/stderr.txt";
  int status = std::system((kMeasure + " --version > " + out + " 2> " + err).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_file(err);
  EXPECT_EQ(read_file(out).rfind("measure ", 0), 0u) << read_file(out);
  EXPECT_NE(read_file(out).find("LibTorch "), std::string::npos) << read_file(out);
  status = std::system((kMeasure + " nonsense 2> " + err).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string message = read_file(err);
  EXPECT_NE(message.find("unknown subcommand 'nonsense' (known: profile, train"), std::string::npos) << message;
  EXPECT_EQ(message.find("worker"), std::string::npos) << message;
}

TEST_F(MeasureEndToEnd, BadFlagsExitTwoWithOneLine) {
  EXPECT_EQ(measure(" --ranks 9"), 2);  // on CPU 2..8 ranks
  EXPECT_EQ(stderr_.rfind("error: --ranks 9", 0), 0u) << stderr_;
  EXPECT_EQ(std::count(stderr_.begin(), stderr_.end(), '\n'), 1) << stderr_;
}

// `--out DIR` once measured for seconds, then failed to rename the profile onto the folder.
TEST_F(MeasureEndToEnd, OutThatIsAFolderIsRejectedBeforeMeasuring) {
  const std::string err = dir_ + "/stderr.txt";
  const int status = std::system((kMeasure + kTiny + " --pytorch off --out " + dir_ + " 2> " + err).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string message = read_file(err);
  EXPECT_NE(message.find("error: --out " + dir_ + ": is a folder"), std::string::npos) << message;
  EXPECT_EQ(message.find("compute"), std::string::npos) << message;  // nothing was measured
}

// A batch no memory holds: the compute case records it as the OOM boundary, and the host
// contention case at that batch is skipped (it once failed in its rank processes, printing
// LibTorch's 30-line backtrace).
TEST_F(MeasureEndToEnd, ABatchBeyondMemoryIsTheOomBoundaryAndContentionSkipsIt) {
  const std::string err = dir_ + "/stderr.txt";
  const int status = std::system((kMeasure + " --device cpu --models resnet18-cifar --batches 99999999999999"
                                  " --warmup 0 --repeats 1 --threads 1 --skip h2d,loader,collectives"
                                  " --pytorch off --out " + profile_ + " 2> " + err).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  const std::string log = read_file(err);
  EXPECT_EQ(WEXITSTATUS(status), 0) << log;
  EXPECT_NE(log.find("out of memory at batch 99999999999999"), std::string::npos) << log;
  EXPECT_NE(log.find("skipped: batch 99999999999999 is at or above the OOM boundary"), std::string::npos) << log;
  EXPECT_EQ(log.find("frame #"), std::string::npos) << log;
  EXPECT_NE(read_file(profile_).find("oom_batch: 99999999999999"), std::string::npos);
}

}  // namespace
