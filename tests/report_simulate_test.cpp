// End-to-end tests of the `simulate` program on the hand-written fixture profile
// (tests/fixtures/report/): exit codes, the printed tables, --out files, one-line errors; and the
// bundled configs on the measured profiles they name.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "flat_text.h"
#include "report/csv.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

const std::string kFixtureConfig = std::string(TRAINSIM_FIXTURES_DIR) + "/report/sweep.yaml";
const std::string kFixtureProfile = std::string(TRAINSIM_FIXTURES_DIR) + "/report/profile.yaml";

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using trainsim::testing::flat;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

class SimulateProgram : public ::testing::Test {
 protected:
  // Runs `simulate ARGS` (ARGS already shell-quoted where needed), capturing stdout and stderr.
  ProgramRun simulate(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command = std::string(TRAINSIM_BIN_DIR) + "/simulate " + args + " > " + out.string() +
                                " 2> " + err.string();
    const int status = std::system(command.c_str());
    ProgramRun run;
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    run.out = read_file(out);
    run.err = read_file(err);
    return run;
  }

  // A config in the test's folder naming the fixture profile by absolute path.
  fs::path write_config(const std::string& body) const {
    const fs::path path = dir_ / "config.yaml";
    std::ofstream(path) << body;
    return path;
  }

  // Expects exit 2 and exactly one stderr line starting with `prefix`.
  static void expect_one_line_error(const ProgramRun& run, const std::string& prefix) {
    EXPECT_EQ(run.exit_code, 2) << run.err;
    const auto lines = lines_of(run.err);
    ASSERT_EQ(lines.size(), 1u) << run.err;
    EXPECT_EQ(lines[0].rfind(prefix, 0), 0u) << "stderr: " << lines[0] << "\nexpected prefix: " << prefix;
    EXPECT_TRUE(run.out.empty()) << run.out;
  }

  ::trainsim::testing::TempDir temp_{"trainsim-report"};
  fs::path dir_ = temp_.path();
};

TEST_F(SimulateProgram, PrintsEveryTableForTheFixtureSweep) {
  const ProgramRun run = simulate(kFixtureConfig);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(run.err.empty()) << run.err;  // no progress: the sweep takes well under a second
  for (const char* expected :
       {"# trainsim predictions: resnet18-cifar", "machine report-fixture", "cuda Fixture GPU x4",
        "2000-01-01T00:00:00Z", "data: synthetic", "1,228,072 parameter bytes", "50000 samples",
        "loader workers: 2", "## Q1: 1-GPU epoch time per batch size (dp, 1 GPU)", "## Table 1 (dp)",
        "## Table 1 (ddp)", "Scaling efficiency", "weak-scaling speedup 4", "### Strong scaling", "## Table 2",
        "## Table 3", "## Notes",
        // The fixture's peak memory grows ~9.4e6 B per sample: 512 fits in 8 GiB, 2048 (~1.9e10 B) does not.
        "first batch that does not fit: 2048"}) {
    EXPECT_NE(run.out.find(expected), std::string::npos) << expected << " missing in:\n" << run.out;
  }
  EXPECT_NE(run.out.find(" OOM |"), std::string::npos);  // the 2048 rows
}

TEST_F(SimulateProgram, OutWritesCsvAndMarkdownAndIsDeterministic) {
  const fs::path out = dir_ / "new" / "folder";
  const ProgramRun run = simulate(kFixtureConfig + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string csv = read_file(out / "predictions.csv");
  const auto rows = lines_of(csv);
  ASSERT_EQ(rows.size(), 1u + 2 * 3 * 4);  // header + 2 strategies x 3 gpu counts x 4 batches
  EXPECT_EQ(rows[0], trainsim::report::predictions_csv_header());
  // Sweep order: strategy as in the config (dp first), then gpus, then batch.
  EXPECT_EQ(rows[1].rfind("dp,1,32,32,1563,", 0), 0u) << rows[1];       // ceil(50000 / 32) = 1563
  EXPECT_EQ(rows[24].rfind("ddp,4,2048,8192,7,", 0), 0u) << rows[24];  // ceil(50000 / 8192) = 7
  const size_t columns = std::count(rows[0].begin(), rows[0].end(), ',');
  for (const auto& row : rows) EXPECT_EQ(size_t(std::count(row.begin(), row.end(), ',')), columns) << row;
  EXPECT_NE(csv.find(",false,"), std::string::npos);  // the OOM rows keep their predicted times

  const std::string markdown = read_file(out / "predictions.md");
  const std::string printed = run.out.substr(0, run.out.find("wrote "));
  EXPECT_EQ(markdown.rfind(printed, 0), 0u) << "predictions.md does not start with the printed tables";
  EXPECT_NE(markdown.find("## Metric definitions"), std::string::npos);
  // The report groups the notes by cause; DIR/notes.md has every note with each configuration, and
  // the "wrote" line names it.
  EXPECT_NE(run.out.find("wrote " + (out / "predictions.csv").string() + ", " + (out / "predictions.md").string() +
                         " and " + (out / "notes.md").string() + "\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(printed.find("- steady state from iteration 7: period 5.81818-372.364 ms, 10-1548 iterations extrapolated\n"
                         "  (dp: 1 GPU x batch 32-2048,"),
            std::string::npos)
      << printed;
  const std::string notes = read_file(out / "notes.md");
  EXPECT_EQ(notes.rfind("# trainsim notes: resnet18-cifar\n", 0), 0u) << notes;
  EXPECT_NE(notes.find("\n## Notes\n"), std::string::npos) << notes;
  EXPECT_NE(notes.find("- steady state from iteration 7: period 5.81818 ms, 1548 iterations extrapolated (dp:1:32, ddp:1:32)\n"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("- steady state from iteration 7: period 409.6 ms (ddp:2:2048)\n"), std::string::npos) << notes;
  EXPECT_NE(notes.find("- loader: worker start-up not measured (no startup_s): none simulated (all configurations)\n"),
            std::string::npos)
      << notes;
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "leftover " << entry.path();
  }

  const ProgramRun again = simulate(kFixtureConfig + " --quiet --out " + (dir_ / "again").string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(dir_ / "again" / "predictions.csv"), csv);  // same input, same bytes
  EXPECT_EQ(read_file(dir_ / "again" / "predictions.md"), markdown);
  EXPECT_EQ(read_file(dir_ / "again" / "notes.md"), notes);
  EXPECT_TRUE(again.out.empty()) << again.out;                     // --quiet
}

// More than 20,000 configurations: the tables show 16 of the batch sizes and say so, while every
// configuration is simulated and streamed to predictions.csv, each row as a sweep of it alone gives.
TEST_F(SimulateProgram, ASweepTooLargeToPrintIsSummarisedAndStreamedWhole) {
  std::string batches;
  for (int b = 1; b <= 20001; ++b) batches += (b == 1 ? "" : ",") + std::to_string(b);
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\nmodel: resnet18-cifar\ndataset: {train_samples: 50000}\nloader: {workers: 2}\n"
                                       "sweep: {strategy: [ddp], gpus: [1], batch_per_gpu: [" + batches + "]}\n");
  const ProgramRun run = simulate(config.string() + " --threads 2 --out " + (dir_ / "big").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string out = flat(run.out);
  EXPECT_NE(out.find("- sweep: 20001 configurations (20001 batch sizes per GPU), too many to print: the tables "
                     "and notes below show the batch sizes 1, 1334, 2667, 4001,"),
            std::string::npos)
      << run.out.substr(0, 2000);
  EXPECT_NE(out.find(", 18667, 20001; predictions.csv holds every configuration. Over all 20001: 20001 can run"),
            std::string::npos);
  EXPECT_EQ(run.out.find("| 2      "), std::string::npos);  // batch 2 is not shown
  const auto rows = lines_of(read_file(dir_ / "big" / "predictions.csv"));
  ASSERT_EQ(rows.size(), 1u + 20001);
  EXPECT_EQ(rows[0], trainsim::report::predictions_csv_header());
  for (int b : {1, 2, 7777, 20001}) {
    EXPECT_EQ(rows[static_cast<size_t>(b)].rfind("ddp,1," + std::to_string(b) + ",", 0), 0u) << rows[static_cast<size_t>(b)];
  }
  write_config("profile: " + kFixtureProfile +
               "\nmodel: resnet18-cifar\ndataset: {train_samples: 50000}\nloader: {workers: 2}\n"
               "sweep: {strategy: [ddp], gpus: [1], batch_per_gpu: [7777]}\n");
  ASSERT_EQ(simulate(config.string() + " -q --out " + (dir_ / "one").string()).exit_code, 0);
  EXPECT_EQ(lines_of(read_file(dir_ / "one" / "predictions.csv")).at(1), rows[7777]);
}

TEST_F(SimulateProgram, ExactSimulatesEveryIteration) {
  const ProgramRun run = simulate(kFixtureConfig + " --exact --quiet --out " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = lines_of(read_file(dir_ / "predictions.csv"));
  ASSERT_GT(rows.size(), 1u);
  // Columns 4 (iterations), 20 (extrapolated) and 21 (simulated_iterations) of predictions_csv_header(),
  // 37 in all (the target accuracy's two, the first-iteration peak and the interval's two, empty
  // here, then the precision).
  for (size_t i = 1; i < rows.size(); ++i) {
    std::vector<std::string> cells;
    std::stringstream in(rows[i]);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    if (rows[i].back() == ',') cells.push_back("");  // getline drops a last empty cell
    ASSERT_EQ(cells.size(), 38u) << rows[i];
    EXPECT_EQ(cells[20], "false") << rows[i];
    EXPECT_EQ(cells[21], cells[4]) << rows[i];
  }
}

TEST_F(SimulateProgram, HelpNamesEveryOption) {
  const ProgramRun run = simulate("--help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* option : {"--out", "--trace", "--trace-config", "--trace-iterations", "--exact", "--threads", "--quiet"}) {
    EXPECT_NE(run.out.find(option), std::string::npos) << option;
  }
}

TEST_F(SimulateProgram, VersionNamesTheProgramAndTheProfileSchema) {
  const ProgramRun run = simulate("--version");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("simulate ", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("profile schema_version 1"), std::string::npos) << run.out;
}

TEST_F(SimulateProgram, BadCommandLinesExitTwoWithOneLine) {
  expect_one_line_error(simulate(""), "error: missing CONFIG");
  expect_one_line_error(simulate(kFixtureConfig + " --bogus"), "error: ");
  expect_one_line_error(simulate(kFixtureConfig + " extra.yaml"), "error: ");
  expect_one_line_error(simulate(kFixtureConfig + " --trace-config ddp:2:128"), "error: --trace-config");
  expect_one_line_error(simulate(kFixtureConfig + " --trace t.json --trace-config ddp:x:128"),
                        "error: --trace-config 'ddp:x:128'");
  expect_one_line_error(simulate(kFixtureConfig + " --trace t.json --trace-iterations 0"),
                        "error: --trace-iterations must be >= 1");
  expect_one_line_error(simulate(kFixtureConfig + " --threads 0"), "error: --threads must be >= 1, got 0");
  expect_one_line_error(simulate(kFixtureConfig + " -j two"), "error: ");
}

TEST_F(SimulateProgram, UnknownKeyIsOneLineWithFileAndLine) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\n"
                                       "sweep:\n"
                                       "  strategy: [ddp]\n"
                                       "  gpus: [1]\n"
                                       "  batch_per_gpu: [32]\n"
                                       "loadr: {workers: 2}\n");  // line 6: typo of `loader`
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":6: loadr: ");
}

// Issue 14: any model the profile holds is simulated, here the fixture's ResNet-18 under another
// name; a fit or a move to another GPU, which need the model's layers, is refused at its line.
TEST_F(SimulateProgram, AnyModelTheProfileHoldsIsSimulated) {
  std::string profile = read_file(kFixtureProfile);
  const std::string from = "\"resnet18-cifar\":";
  ASSERT_NE(profile.find(from), std::string::npos);
  profile.replace(profile.find(from), from.size(), "\"my-net\":");
  std::ofstream(dir_ / "profile.yaml") << profile;
  const std::string sweep = "sweep: {strategy: [dp, ddp], gpus: [1, 2], batch_per_gpu: [32, 128]}\n";
  const fs::path config = write_config("profile: " + (dir_ / "profile.yaml").string() +
                                       "\nmodel: my-net\ndataset: {train_samples: 20000}\n" + sweep);
  const ProgramRun run = simulate(config.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("# trainsim predictions: my-net"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("epoch: 20000 samples"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("## Table 1 (ddp)"), std::string::npos) << run.out;

  // The same config with a model the profile lacks: the profile line says what it has.
  const fs::path other = write_config("profile: " + (dir_ / "profile.yaml").string() +
                                      "\nmodel: your-net\ndataset: {train_samples: 20000}\n" + sweep);
  expect_one_line_error(simulate(other.string()),
                        "error: " + other.string() + ":1: profile: profile " + (dir_ / "profile.yaml").string() +
                            " has no model 'your-net' (it has: my-net)");

  // Moving a measured H100 profile to a T4 goes layer by layer: not for a model trainsim cannot lay out.
  std::string h100 = read_file(std::string(TRAINSIM_SOURCE_DIR) + "/reports/nvidia-h100-80gb-hbm3-x1/profile.yaml");
  ASSERT_NE(h100.find(from), std::string::npos);
  h100.replace(h100.find(from), from.size(), "\"my-net\":");
  std::ofstream(dir_ / "h100.yaml") << h100;
  const fs::path moved = write_config("profile: " + (dir_ / "h100.yaml").string() +
                                      "\nmodel: my-net\ndataset: {train_samples: 20000}\ngpu: t4\n" + sweep);
  expect_one_line_error(simulate(moved.string()), "error: " + moved.string() + ":4: gpu: moving the profile's times from ");
}

// precision: [fp32, bf16-amp] with a profile measured in each (the 2-core CPU's, docs/PRECISION.md
// "Several precisions"): the Precision section sets each configuration's epochs side by side, and
// predictions.csv holds both precisions' rows, told apart by its `precision` column.
TEST_F(SimulateProgram, SeveralPrecisionsArePredictedSideBySide) {
  const std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/reports/cpu-epyc-2c/precision/";
  const std::string rest = "model: resnet18-cifar\ntrainer: trainsim\ndataset: {train_samples: 512}\n"
                           "loader: {workers: 0}\nsweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: [32, 64]}\n";
  const fs::path config = write_config("precision: [fp32, bf16-amp]\nprofile:\n  fp32: " + dir + "fp32/profile.yaml\n"
                                       "  bf16-amp: " + dir + "bf16/profile.yaml\n" + rest);
  const fs::path out = dir_ / "out";
  const ProgramRun run = simulate(config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("- precisions: fp32 in the tables; bf16-amp in the Precision section after them"),
            std::string::npos) << run.out;
  EXPECT_NE(run.out.find("## Precision: fp32 (the tables') and bf16-amp"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("| config   | fp32 s | bf16-amp s | bf16-amp x |"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Exposed communication, share of the epoch, by precision"), std::string::npos);
  // Both precisions' rows, the tables' first; each speedup in the section is fp32's epoch over bf16's.
  const auto rows = lines_of(read_file(out / "predictions.csv"));
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0].substr(rows[0].rfind(",precision,") + 1), "precision,memory_format");
  std::map<std::string, double> epoch;  // "fp32 ddp,1,32" -> epoch_s
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::vector<std::string> cells;
    std::stringstream line(rows[i]);
    for (std::string cell; std::getline(line, cell, ',');) cells.push_back(cell);
    ASSERT_GE(cells.size(), 2u) << rows[i];
    const std::string& precision = cells[cells.size() - 2];
    EXPECT_EQ(precision, i <= 4 ? "fp32" : "bf16-amp") << rows[i];
    EXPECT_EQ(cells.back(), "nchw") << rows[i];
    epoch[precision + " " + cells[0] + "," + cells[1] + "," + cells[2]] = std::stod(cells[5]);
  }
  for (const std::string cell : {"ddp,1,32", "ddp,2,64"}) {
    const double fp32 = epoch.at("fp32 " + cell), bf16 = epoch.at("bf16-amp " + cell);
    EXPECT_GT(fp32, bf16) << cell;  // bf16 autocast is the faster on this AVX-512 BF16 CPU, measured so
    char speedup[16];
    std::snprintf(speedup, sizeof speedup, "%.2f |", fp32 / bf16);
    const std::string label = "| ddp:" + cell.substr(4, 1) + ":" + cell.substr(6) + " ";
    const std::size_t at = run.out.find(label, run.out.find("## Precision"));
    ASSERT_NE(at, std::string::npos) << label;
    EXPECT_NE(run.out.substr(at, run.out.find('\n', at) - at).find(speedup), std::string::npos) << speedup;
  }
  EXPECT_NE(read_file(out / "predictions.md").find("## Precision: fp32"), std::string::npos);

  // A profile of another precision under a precision's key: one line at that key's line.
  const fs::path wrong = write_config("precision: [fp32, bf16-amp]\nprofile:\n  fp32: " + dir + "fp32/profile.yaml\n"
                                      "  bf16-amp: " + dir + "fp32/profile.yaml\n" + rest);
  expect_one_line_error(simulate(wrong.string()), "error: " + wrong.string() + ":4: profile.bf16-amp: " + dir +
                                                      "fp32/profile.yaml was measured in fp32 (measurement.precision), "
                                                      "not bf16-amp");
}

// --compare with several precisions: one runs.csv holding both precisions' runs (the precision
// folders' files joined), each run predicted from its own precision's profile. Each precision's
// figures are those its folder's comparison printed alone (validation/stdout.txt there).
TEST_F(SimulateProgram, SeveralPrecisionsAreComparedEachWithItsOwnProfile) {
  const std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/reports/cpu-epyc-2c/precision/";
  const fs::path config = write_config("precision: [fp32, bf16-amp]\nprofile:\n  fp32: " + dir + "fp32/profile.yaml\n"
                                       "  bf16-amp: " + dir + "bf16/profile.yaml\nmodel: resnet18-cifar\n"
                                       "trainer: trainsim\ndataset: {train_samples: 512}\nloader: {workers: 0}\n"
                                       "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: [32, 64]}\n");
  // bf16's file has the precision column; fp32's rows, written before it, get theirs.
  const auto bf16_rows = lines_of(read_file(dir + "bf16/runs.csv"));
  const auto fp32_rows = lines_of(read_file(dir + "fp32/runs.csv"));
  ASSERT_EQ(bf16_rows[0].substr(bf16_rows[0].rfind(',') + 1), "precision");
  std::ofstream runs(dir_ / "runs.csv");
  for (const std::string& row : bf16_rows) runs << row << "\n";
  for (std::size_t i = 1; i < fp32_rows.size(); ++i) runs << fp32_rows[i] << ",fp32\n";
  runs.close();
  const ProgramRun run = simulate(config.string() + " --compare " + (dir_ / "runs.csv").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto expect_line = [&](const std::string& folder, const std::string& group, const std::string& precision) {
    const std::string alone = read_file(dir + folder + "/validation/stdout.txt");
    const std::string prefix = "MAPE epoch_s (" + group + "): ";
    const std::size_t at = alone.find(prefix);
    ASSERT_NE(at, std::string::npos) << prefix;
    const std::string figures = alone.substr(at + prefix.size(), alone.find('\n', at) - at - prefix.size());
    EXPECT_NE(run.out.find("MAPE epoch_s (" + group + ", " + precision + "): " + figures + "\n"), std::string::npos)
        << group << ", " << precision << ": " << figures << "\n" << run.out;
  };
  for (const std::string group : {"trainsim, 1 rank", "pytorch, 2 ranks", "trainsim, all ranks", "pytorch, all ranks"}) {
    expect_line("fp32", group, "fp32");
    expect_line("bf16", group, "bf16-amp");
  }
  EXPECT_NE(run.out.find("Measured but not predicted: none."), std::string::npos) << run.out;
  EXPECT_EQ(lines_of(run.out).back().rfind("MAPE epoch_s: ", 0), 0u);
  EXPECT_NE(lines_of(run.out).back().find(" over 16 configurations (48 runs); "), std::string::npos) << run.out;

  // The same two profiles as precision x memory format (one format listed): the same join, the
  // profiles under PRECISION/FORMAT, the section named for both keys.
  const fs::path crossed = write_config("precision: [fp32, bf16-amp]\nmemory_format: [nchw]\nprofile:\n  fp32/nchw: " +
                                        dir + "fp32/profile.yaml\n  bf16-amp/nchw: " + dir +
                                        "bf16/profile.yaml\nmodel: resnet18-cifar\ntrainer: trainsim\n"
                                        "dataset: {train_samples: 512}\nloader: {workers: 0}\n"
                                        "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: [32, 64]}\n");
  const ProgramRun both = simulate(crossed.string() + " --compare " + (dir_ / "runs.csv").string());
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_NE(both.out.find("## Precision and memory format: fp32/nchw (the tables') and bf16-amp/nchw"),
            std::string::npos) << both.out;
  EXPECT_NE(both.out.find("| config   | fp32/nchw s | bf16-amp/nchw s | bf16-amp/nchw x |"), std::string::npos)
      << both.out;
  const auto summary = [](const std::string& out) { return out.substr(out.find("MAPE epoch_s (")); };
  EXPECT_EQ(summary(both.out), summary(run.out));
  // A profile measured in another precision than its key says: one line at that key.
  const fs::path wrong = write_config("precision: [fp32, bf16-amp]\nmemory_format: [nchw]\nprofile:\n"
                                      "  fp32/nchw: " + dir + "fp32/profile.yaml\n  bf16-amp/nchw: " + dir +
                                      "fp32/profile.yaml\nmodel: resnet18-cifar\n"
                                      "sweep: {strategy: ddp, gpus: [1], batch_per_gpu: [32]}\n");
  const ProgramRun refused = simulate(wrong.string());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find(wrong.string() + ":5: profile.bf16-amp/nchw: " + dir +
                             "fp32/profile.yaml was measured in fp32/nchw (measurement.precision, memory_format), "
                             "not bf16-amp/nchw: give a profile measured with measure --precision bf16-amp "
                             "--memory-format nchw"),
            std::string::npos)
      << refused.err;
}

// memory_format: [nchw, channels_last] with a profile measured in each (the 2-core CPU's,
// reports/cpu-epyc-2c/channels-last): the Memory format section sets the epochs side by side,
// predictions.csv holds both formats' rows, and --compare on both formats' runs (the folders'
// files joined) scores each against its own profile, each format's figures those its folder's
// comparison printed alone.
TEST_F(SimulateProgram, SeveralMemoryFormatsArePredictedAndComparedSideBySide) {
  const std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/reports/cpu-epyc-2c/channels-last/";
  const std::string rest = "model: resnet18-cifar\ntrainer: trainsim\ndataset: {train_samples: 512}\n"
                           "loader: {workers: 0}\nsweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: [32, 64]}\n";
  const fs::path config = write_config("memory_format: [nchw, channels_last]\nprofile:\n  nchw: " + dir +
                                       "nchw/profile.yaml\n  channels_last: " + dir + "channels_last/profile.yaml\n" +
                                       rest);
  const fs::path out = dir_ / "out";
  const ProgramRun run = simulate(config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("- memory formats: nchw in the tables; channels_last in the Memory format section after"),
            std::string::npos) << run.out;
  EXPECT_NE(run.out.find("## Memory format: nchw (the tables') and channels_last"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("| config   | nchw s | channels_last s | channels_last x |"), std::string::npos) << run.out;
  const auto rows = lines_of(read_file(out / "predictions.csv"));
  ASSERT_EQ(rows.size(), 9u);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].substr(rows[i].rfind(",fp32,") + 6), i <= 4 ? "nchw" : "channels_last") << rows[i];
  }


  // channels_last's file has both columns; nchw's rows, written without them, get theirs.
  const auto last_rows = lines_of(read_file(dir + "channels_last/runs.csv"));
  const auto nchw_rows = lines_of(read_file(dir + "nchw/runs.csv"));
  ASSERT_EQ(last_rows[0].substr(last_rows[0].rfind(",precision,") + 1), "precision,memory_format");
  std::ofstream runs(dir_ / "runs.csv");
  for (const std::string& row : last_rows) runs << row << "\n";
  for (std::size_t i = 1; i < nchw_rows.size(); ++i) runs << nchw_rows[i] << ",fp32,nchw\n";
  runs.close();
  const ProgramRun compared = simulate(config.string() + " --compare " + (dir_ / "runs.csv").string());
  ASSERT_EQ(compared.exit_code, 0) << compared.err;
  for (const std::string group : {"trainsim, 1 rank", "pytorch, 2 ranks", "trainsim, all ranks", "pytorch, all ranks"}) {
    for (const std::string format : {"nchw", "channels_last"}) {
      const std::string alone = read_file(dir + format + "/validation/stdout.txt");
      const std::string prefix = "MAPE epoch_s (" + group + "): ";
      const std::size_t at = alone.find(prefix);
      ASSERT_NE(at, std::string::npos) << prefix;
      const std::string figures = alone.substr(at + prefix.size(), alone.find('\n', at) - at - prefix.size());
      const std::string label = group + (format == "nchw" ? ", fp32" : ", fp32, channels_last");
      EXPECT_NE(compared.out.find("MAPE epoch_s (" + label + "): " + figures + "\n"), std::string::npos)
          << label << ": " << figures << "\n" << compared.out;
    }
  }
  EXPECT_NE(compared.out.find("Measured but not predicted: none."), std::string::npos) << compared.out;
  EXPECT_NE(lines_of(compared.out).back().find(" over 16 configurations (48 runs); "), std::string::npos)
      << compared.out;

  // A profile of the other format under a format's key: one line at that key's line.
  const fs::path wrong = write_config("memory_format: [nchw, channels_last]\nprofile:\n  nchw: " + dir +
                                      "nchw/profile.yaml\n  channels_last: " + dir + "nchw/profile.yaml\n" + rest);
  expect_one_line_error(simulate(wrong.string()),
                        "error: " + wrong.string() + ":4: profile.channels_last: " + dir +
                            "nchw/profile.yaml was measured in nchw (measurement.memory_format), not channels_last");
}

TEST_F(SimulateProgram, UnknownStrategyIsOneLineWithFileAndLine) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\n"
                                       "sweep:\n"
                                       "  strategy: [ddp, horovod]\n"  // line 3
                                       "  gpus: [1]\n"
                                       "  batch_per_gpu: [32]\n");
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":3: sweep.strategy[1]: ");
}

TEST_F(SimulateProgram, MissingProfileIsOneLineWithFileAndLine) {
  const fs::path config = write_config("# a comment\n"
                                       "profile: no-such-profile.yaml\n"  // line 2
                                       "sweep: {strategy: [ddp], gpus: [1], batch_per_gpu: [32]}\n");
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":2: profile: ");
}

TEST_F(SimulateProgram, ProfileWithoutTheModelIsOneLineAtTheProfileKey) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\n"
                                       "model: resnet18-imagenet\n"  // the fixture only has resnet18-cifar
                                       "sweep: {strategy: [ddp], gpus: [1], batch_per_gpu: [32]}\n");
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":1: profile: ");
}

TEST_F(SimulateProgram, MissingConfigFileIsOneLine) {
  const std::string missing = (dir_ / "nope.yaml").string();
  expect_one_line_error(simulate(missing), "error: " + missing + ": ");
}

// The example configs users copy: every key they use is valid and the sweep runs. Their `profile:`
// line names a real machine's profile; here it is replaced by the fixture's.
TEST_F(SimulateProgram, ExampleConfigsRunWithTheFixtureProfile) {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "configs")) {
    // The GPU catalog (configs/gpus.yaml) is not a sweep config.
    if (entry.path().extension() != ".yaml" || entry.path().filename() == "gpus.yaml") continue;
    ++examples;
    // The fixture holds ResNet-18 only: a `large_batch:` naming another model (whose curve and
    // timings only the real profile has) and the `lr_rule:` that goes with it are dropped; the
    // next test runs them on their own profile. A `scale_out:` profile is the fixture too.
    std::string body = "profile: " + kFixtureProfile + "\n";
    for (const auto& line : lines_of(read_file(entry.path()))) {
      if (line.rfind("  profile:", 0) == 0) {
        body += "  profile: " + kFixtureProfile + "\n";
      } else if (line.rfind("profile:", 0) != 0 && line.rfind("large_batch:", 0) != 0 &&
                 line.rfind("lr_rule:", 0) != 0) {
        body += line + "\n";
      }
    }
    const ProgramRun run = simulate(write_config(body).string());
    EXPECT_EQ(run.exit_code, 0) << entry.path() << ": " << run.err;
    EXPECT_NE(run.out.find("## Table 3"), std::string::npos) << entry.path();
    if (body.find("interconnect:") != std::string::npos) {
      EXPECT_NE(run.out.find("- interconnect: assumed busbw"), std::string::npos) << entry.path();
    }
  }
  EXPECT_GE(examples, 2);  // sweep.yaml and example-assumed-interconnect.yaml
}

// Splits one predictions.csv row (no quoted commas in the columns used here).
std::vector<std::string> fields_of(const std::string& row) {
  std::vector<std::string> fields;
  std::istringstream in(row);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// The bundled configs with the profiles they name (the real, measured ones in reports/): each
// runs, and on a CPU profile no rank count beats the host's cores (ranks share them).
TEST_F(SimulateProgram, TheBundledConfigsRunOnTheirOwnProfilesAndCpuRanksShareTheCores) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    std::string profile;
    for (const auto& line : lines_of(read_file(entry.path()))) {
      if (line.rfind("profile: ", 0) == 0) profile = line.substr(9);
    }
    if (profile.empty()) continue;  // an example without a profile: the test above gives it one
    const std::string profile_text = read_file(entry.path().parent_path() / profile);
    ASSERT_FALSE(profile_text.empty()) << entry.path() << " names " << profile;
    const fs::path out = dir_ / entry.path().stem();
    const ProgramRun run = simulate(entry.path().string() + " --quiet --out " + out.string());
    ASSERT_EQ(run.exit_code, 0) << entry.path() << ": " << run.err;
    ++checked;
    const auto at = profile_text.find("cpu_cores: ");
    if (profile_text.find("device_kind: \"cpu\"") == std::string::npos || at == std::string::npos) continue;
    const double cores = std::stod(profile_text.substr(at + 11));
    // epoch_s by (strategy, batch) for 1 rank, then every other rank count against it.
    const auto rows = lines_of(read_file(out / "predictions.csv"));
    ASSERT_GE(rows.size(), 2u);
    std::map<std::string, double> one_rank;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const auto f = fields_of(rows[i]);
      if (f[1] == "1" && !f[5].empty()) one_rank[f[0] + ":" + f[2]] = std::stod(f[5]);
    }
    int compared = 0;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const auto f = fields_of(rows[i]);
      const auto base = one_rank.find(f[0] + ":" + f[2]);
      if (f[1] == "1" || f[5].empty() || base == one_rank.end()) continue;
      const double speedup = base->second / std::stod(f[5]);
      EXPECT_LE(speedup, std::min(cores, std::stod(f[1])) + 1e-9) << entry.path() << ": " << rows[i];
      ++compared;
    }
    EXPECT_GT(compared, 0) << entry.path();
  }
  EXPECT_GE(checked, 4);  // sweep.yaml, cpu-sweep.yaml and the two CPU validations
}

// Issue 15: the main job is the course's sweep on the H200's measured profile with PyTorch's own
// pipeline, its 2- and 4-GPU links assumed and said so. Issue 12: it answers Q4 from the CPU
// profile's real Fashion-MNIST baseline (large_batch.profile), with fashion-cnn-gap's own simulated
// epoch times on that machine, and says so; the CPU example prints the same Q4.
TEST_F(SimulateProgram, TheMainJobPredictsTheGpuAndPrintsQ4FromTheRealDataBaseline) {
  const fs::path configs = fs::path(TRAINSIM_SOURCE_DIR) / "configs";
  const ProgramRun run = simulate((configs / "sweep.yaml").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("- device: cuda NVIDIA H200 x1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("- trainer: pytorch"), std::string::npos);
  EXPECT_NE(run.out.find("- interconnect: assumed, not measured"), std::string::npos);
  const auto q4 = run.out.find("## Q4: large batches");
  ASSERT_NE(q4, std::string::npos) << run.out;
  EXPECT_NE(run.out.find("- baseline: fashion-cnn-gap trained at global batch 128 on fashion-mnist data", q4),
            std::string::npos);
  const std::string out = flat(run.out);
  EXPECT_NE(out.find("simulated again for fashion-cnn-gap with the trainsim trainer, 60000 samples per epoch "
                     "on cpu-epyc-2c (",
                     out.find("## Q4: large batches")),
            std::string::npos)
      << run.out.substr(q4);
  EXPECT_NE(run.out.find("- target test accuracy: 0.75 (large_batch.target_accuracy)", q4), std::string::npos);
  EXPECT_NE(run.out.find("| epochs to acc 0.75 | time to acc 0.75 s |", q4), std::string::npos);
  const auto row = run.out.find("| ddp:4:2048 |         8192 |    64x |", q4);
  ASSERT_NE(row, std::string::npos) << run.out.substr(q4);
  // Past the 64x the model was checked at: marked as extrapolated.
  EXPECT_NE(run.out.find("| ddp:4:8192 |        32768 |  256x* |", q4), std::string::npos) << run.out.substr(q4);
  // Issue 64: the whole report reads on a terminal of 100 columns (prose wraps; the scale-out
  // heading names the nodes and its bullet the topology).
  for (const std::string& line : lines_of(run.out)) EXPECT_LE(line.size(), 100u) << line;
  // Tables 2 and 3 and Q4 read on a terminal of 100 columns, each split into tables of
  // the same 20 rows (the sweep's 20 configurations with 2 or more GPUs; Q4's every runnable one).
  // Q4 also has its rules side by side: header, separator and the sweep's 11 global batches.
  for (const auto& [heading, table_rows] : std::vector<std::pair<std::string, int>>{
           {"## Table 2: ", 2 * (2 + 20)}, {"## Table 3: ", 2 * (2 + 20)}, {"## Q4: ", 3 * (2 + 20) + 2 + 11}}) {
    const auto start = run.out.find("\n" + heading);
    ASSERT_NE(start, std::string::npos) << heading;
    const auto end = run.out.find("\n## ", start + 1);
    int table_lines = 0;
    for (const std::string& line : lines_of(run.out.substr(start + 1, end - start - 1))) {
      EXPECT_LE(line.size(), 100u) << heading << ": " << line;
      if (line.rfind("|", 0) == 0) ++table_lines;
    }
    EXPECT_EQ(table_lines, table_rows) << heading;
  }
  const ProgramRun cpu = simulate((configs / "cpu-sweep.yaml").string());
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto line = [](const std::string& text, std::size_t at) { return text.substr(at, text.find('\n', at) - at); };
  const auto cpu_row = cpu.out.find("| ddp:4:2048 |         8192 |    64x |");
  ASSERT_NE(cpu_row, std::string::npos) << cpu.out;
  EXPECT_EQ(line(run.out, row), line(cpu.out, cpu_row));
}

// large_batch.profile without the model Q4 asks for: the config's line of that key.
TEST_F(SimulateProgram, ALargeBatchProfileWithoutTheModelNamesItsLine) {
  const fs::path other = dir_ / "other.yaml";
  fs::copy_file(kFixtureProfile, other);
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n"
                                       "large_batch:\n  model: fashion-cnn-gap\n  profile: other.yaml\n");
  const ProgramRun run = simulate(config.string() + " --quiet");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find(config.string() + ":5: profile: profile " + other.string() + " has no model 'fashion-cnn-gap'"),
            std::string::npos)
      << run.err;
}

// gpus x batch_per_gpu >= 2^63 once segfaulted (dp, 2 GPUs) or raised SIGFPE (4 GPUs): the
// global batch overflowed. It is one batch of the whole data set.
TEST_F(SimulateProgram, BatchPerGpu2To62IsOneBatchOfTheDataSetNotAnOverflow) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\ndataset: {train_samples: 5000}\n"
                                       "sweep: {strategy: [dp, ddp], gpus: [2, 3, 4], "
                                       "batch_per_gpu: [4611686018427387904, 3074457345618258603]}\n");
  const ProgramRun run = simulate(config.string() + " --quiet --out " + (dir_ / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = lines_of(read_file(dir_ / "out" / "predictions.csv"));
  ASSERT_EQ(rows.size(), 13u);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto f = fields_of(rows[i]);
    EXPECT_EQ(f[3], "5000") << rows[i];  // global_batch: the whole data set
    EXPECT_EQ(f[4], "1") << rows[i];     // one iteration
    EXPECT_EQ(f[12], "false") << rows[i];  // and it does not fit
  }
}

TEST_F(SimulateProgram, UnwritableOutputExitsOne) {
  std::ofstream(dir_ / "a-file") << "x";
  const ProgramRun run = simulate(kFixtureConfig + " --quiet --out " + (dir_ / "a-file" / "sub").string());
  EXPECT_EQ(run.exit_code, 1);
  const auto lines = lines_of(run.err);
  ASSERT_EQ(lines.size(), 1u) << run.err;
  EXPECT_EQ(lines[0].rfind("error: cannot create directory", 0), 0u) << lines[0];
}

}  // namespace

// docs/FIT.md from the command line: the catalog, a fit with no profile, its held-out cells and
// --holdout, a transfer the profile cannot make.
TEST_F(SimulateProgram, ListGpusPrintsTheCatalog) {
  const ProgramRun run = simulate("--list-gpus");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* key : {"t4", "v100-sxm2-16gb", "a100-sxm4-40gb", "rtx-2080-ti", "h100-sxm", "h200"}) {
    EXPECT_NE(run.out.find(key), std::string::npos) << key;
  }
  EXPECT_NE(run.out.find("configs/gpus.yaml"), std::string::npos);
}

TEST_F(SimulateProgram, FitsObservationsWithoutAProfileAndScoresHeldOutCells) {
  // Iteration times of a T4 table (configs/fit/pollux-t4.yaml): 3 fitted, 2 held out.
  const fs::path config = write_config(
      "model: resnet18-cifar\ngpu: t4\nloader: {workers: 2}\n"
      "observations:\n"
      "  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, iteration_s: 0.0427887}\n"
      "  - {strategy: ddp, gpus: 1, batch_per_gpu: 1024, iteration_s: 0.702093}\n"
      "  - {strategy: ddp, gpus: 4, batch_per_gpu: 182, iteration_s: 0.146365}\n"
      "held_out:\n"
      "  - {strategy: ddp, gpus: 1, batch_per_gpu: 257, iteration_s: 0.187083}\n"
      "  - {strategy: ddp, gpus: 2, batch_per_gpu: 513, iteration_s: 0.412567}\n"
      "sweep: {strategy: [ddp], gpus: [1, 8], batch_per_gpu: [128]}\n");
  const ProgramRun run = simulate(config.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Fit of t4 (roofline) to 3 observations"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("compute_efficiency"), std::string::npos);
  EXPECT_NE(run.out.find("## Table 1"), std::string::npos);
  EXPECT_NE(run.out.find("fitted device: t4 (roofline)"), std::string::npos);  // every prediction says so
  const auto lines = lines_of(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().rfind("held-out MAPE iteration_s: ", 0), 0u) << lines.back();
  EXPECT_NE(lines.back().find("% over 2 cells"), std::string::npos) << lines.back();

  const ProgramRun holdout = simulate(config.string() + " --holdout");
  ASSERT_EQ(holdout.exit_code, 0) << holdout.err;
  const auto holdout_lines = lines_of(holdout.out);
  EXPECT_EQ(holdout_lines.back().rfind("holdout MAPE iteration_s: ", 0), 0u) << holdout_lines.back();
}

TEST_F(SimulateProgram, HoldoutNeedsObservations) {
  expect_one_line_error(simulate(kFixtureConfig + " --holdout"), "error: --holdout needs observations");
}

TEST_F(SimulateProgram, GpuWithAProfileOfAnUncataloguedDeviceIsAnError) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\ngpu: t4\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n");
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":2: gpu: the profile's device");
}

// docs/SCALE.md: the collectives table of a topology against a published log, and a sweep that
// spans nodes of a topology (DataParallel stays in one node).
TEST_F(SimulateProgram, CollectivesTableComparesWithAnNcclTestsLog) {
  const std::string log = std::string(TRAINSIM_SOURCE_DIR) +
                          "/reports/published/nccl-tests/nccl-v100pcie-4gpu-sheffield-bessemer-nccl242.log";
  const fs::path config = write_config(
      "topology: {gpu: v100-pcie-32gb, gpus_per_node: 4, fabric: pcie}\n"
      "collectives: {op: all_reduce, min_bytes: 1M, max_bytes: 128M, factor: 2}\n"
      "collectives_log: " + log + "\n");
  const ProgramRun run = simulate(config.string() + " --out " + (dir_ / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("#       size         count      type   redop    root"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("busbw error at >= 64 MiB: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("over 2 sizes"), std::string::npos) << run.out;
  const auto csv = lines_of(read_file(dir_ / "out" / "collectives.csv"));
  ASSERT_EQ(csv.size(), 9u);  // header + 1M ... 128M
  EXPECT_EQ(csv[0], "op,nodes,gpus,size_bytes,algorithm,protocol,time_us,algbw_GBps,busbw_GBps");
  EXPECT_EQ(csv.back().rfind("all_reduce,1,4,134217728,ring,Simple,", 0), 0u) << csv.back();
  // The model calibrated by the log, each size held out of its own fit (docs/SCALE.md).
  EXPECT_NE(run.out.find("calibrated busbw error at >= 64 MiB: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("calibrated time error below 1 MiB: n/a over 0 sizes"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("# the whole log's calibration, for every other op and rank count: overhead "), std::string::npos)
      << run.out;
}

// Another op on a cluster with its own all-reduce log: the calibrated model, said in the header.
TEST_F(SimulateProgram, ABroadcastTableIsCalibratedByTheClustersAllReduceLog) {
  const std::string log = std::string(TRAINSIM_SOURCE_DIR) +
                          "/reports/published/nccl-tests/nccl-v100pcie-4gpu-sheffield-bessemer-nccl242.log";
  const std::string topology = "topology: {gpu: v100-pcie-32gb, gpus_per_node: 4, fabric: pcie}\n";
  const std::string request = "collectives: {op: broadcast, min_bytes: 8, max_bytes: 8}\n";
  const ProgramRun plain = simulate(write_config(topology + request).string() + " --out " + (dir_ / "plain").string());
  const ProgramRun calibrated = simulate(write_config(topology + request + "collectives_log: " + log + "\n").string() +
                                         " --out " + (dir_ / "calibrated").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  EXPECT_NE(calibrated.out.find("constants, calibrated by the log " + log), std::string::npos) << calibrated.out;
  EXPECT_EQ(plain.out.find("calibrated"), std::string::npos) << plain.out;
  // The log's floor (about 16 us) against NCCL's 2.26 table alone: the calibrated 8-byte broadcast is slower.
  const auto time_us = [](const fs::path& csv) {  // column 7 of the 8-byte row: time_us
    std::istringstream row(lines_of(read_file(csv)).at(1));
    std::string cell;
    for (int i = 0; i < 7; ++i) std::getline(row, cell, ',');
    return std::stod(cell);
  };
  EXPECT_GT(time_us(dir_ / "calibrated" / "collectives.csv"), time_us(dir_ / "plain" / "collectives.csv"));
}

// A measured log of another collective (collectives.log:): compared with the catalog's figures
// alone, and with the model the cluster's all-reduce log calibrates (issue 57, item 4).
TEST_F(SimulateProgram, AnAllGatherLogIsPredictedFromTheClustersAllReduceLog) {
  const std::string published = std::string(TRAINSIM_SOURCE_DIR) + "/reports/published/nccl-tests/";
  const std::string all_reduce = published + "nccl-h100sxm-8gpu-together-ring-nccl2262-all_reduce.log";
  const std::string all_gather = published + "nccl-h100sxm-8gpu-together-ring-nccl2262-all_gather.log";
  const std::string topology =
      "topology: {gpu: h100-sxm, gpus_per_node: 8, fabric: nvswitch, nccl: \"2.26.2\", nccl_algo: ring}\n";
  const std::string request = "collectives: {op: all_gather, min_bytes: 8, max_bytes: 8G, log: " + all_gather + "}\n";
  const ProgramRun alone = simulate(write_config(topology + request).string() + " --out " + (dir_ / "alone").string());
  const ProgramRun both = simulate(write_config(topology + request + "collectives_log: " + all_reduce + "\n").string() +
                                   " --out " + (dir_ / "both").string());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_NE(alone.out.find("beside it the measured log " + all_gather), std::string::npos) << alone.out;
  EXPECT_EQ(alone.out.find("calibrated"), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("busbw error at >= 64 MiB: "), std::string::npos) << alone.out;
  // With the cluster's all-reduce log: the same catalog predictions, and the calibrated ones beside.
  EXPECT_EQ(read_file(dir_ / "alone" / "collectives.csv"), read_file(dir_ / "both" / "collectives.csv"));
  EXPECT_NE(both.out.find("# calibrated: the model calibrated by the cluster's all_reduce log " + all_reduce),
            std::string::npos) << both.out;
  EXPECT_NE(both.out.find("calibrated time error below 1 MiB: "), std::string::npos) << both.out;
  // nccl-tests' all-gather sizes: whole floats per rank (8 ranks: 32 bytes first), count per rank.
  EXPECT_NE(both.out.find("\n          32             1     float    none      -1"), std::string::npos) << both.out;
}

// A log of one node (4 ranks) calibrates a cluster of two: its own op on 8 ranks is the calibrated
// model (not compared with the 4-rank log), on 4 ranks the catalog's figures beside the log.
TEST_F(SimulateProgram, AOneNodeLogCalibratesTwoNodes) {
  const std::string log = std::string(TRAINSIM_SOURCE_DIR) +
                          "/reports/published/nccl-tests/nccl-h100sxm-4gpu-snellius-nccl2223-all_reduce.log";
  const std::string request = "collectives: {op: all_reduce, min_bytes: 8, max_bytes: 1M}\ncollectives_log: " + log + "\n";
  const ProgramRun two = simulate(
      write_config("topology: {gpu: h100-sxm, nodes: 2, gpus_per_node: 4, fabric: nvlink-mesh, nic: {gbps: 200, "
                   "per: gpu}}\n" + request).string());
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("all_reduce on 8 GPUs"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("constants, calibrated by the log " + log), std::string::npos) << two.out;
  EXPECT_NE(two.out.find(" us (4 GPUs launched a call), latency x"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("measured time"), std::string::npos) << two.out;
  const ProgramRun one = simulate(
      write_config("topology: {gpu: h100-sxm, nodes: 1, gpus_per_node: 4, fabric: nvlink-mesh}\n" + request).string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.find("constants, calibrated by the log"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("beside it the measured log " + log), std::string::npos) << one.out;
}

TEST_F(SimulateProgram, ASweepSpansNodesOfATopology) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\ntopology: {preset: dgx-h100, nodes: 4}\n"
                                       "sweep: {strategy: [dp, ddp], gpus: [1, 8, 32], batch_per_gpu: [128]}\n");
  const ProgramRun run = simulate(config.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("DataParallel is one process: at most the 8 GPUs of one node"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("NCCL's cost model on 4 x dgx-h100"), std::string::npos) << run.out;
  // The header says where the collective costs come from: assumed, not the profile's curves.
  EXPECT_NE(run.out.find("- interconnect: assumed, not measured: NCCL's cost model on 4 x dgx-h100"),
            std::string::npos) << run.out;
}

// Inputs each valid but out of the simulator's range once combined: a clean line naming the
// config and the configuration (they once ended in "error: internal: negative op duration").
TEST_F(SimulateProgram, TimesBeyondTheSimulatorsRangeAreOneLineErrors) {
  // A link that would take such times is refused where it is read (no link is that slow).
  for (const auto& [interconnect, key] :
       {std::pair{"{bus_bandwidth_gbs: 1e-300, latency_us: 5, override_measured: true}", "bus_bandwidth_gbs"},
        std::pair{"{bus_bandwidth_gbs: 100, latency_us: 1e300, override_measured: true}", "latency_us"}}) {
    const fs::path config = write_config("profile: " + kFixtureProfile + "\ninterconnect: " + interconnect +
                                         "\nsweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: [32]}\n");
    expect_one_line_error(simulate(config.string()),
                          "error: " + config.string() + ":2: interconnect." + key + ": must be ");
  }
  // 2^63 - 1 samples at batch 2^62: two iterations of a batch no clock holds (the ceiling of
  // samples over ranks once wrapped into a negative epoch: "cannot create std::vector").
  for (const char* strategy : {"ddp", "dp"}) {
    const fs::path config = write_config("profile: " + kFixtureProfile +
                                         "\ndataset: {train_samples: 9223372036854775807}\nsweep: {strategy: " +
                                         strategy + ", gpus: [2], batch_per_gpu: [4611686018427387904]}\n");
    expect_one_line_error(simulate(config.string()), "error: " + config.string() + ": " + strategy +
                                                         ":2:4611686018427387904: a time of ");
  }
}

// A profile whose every compute time is 0 says nothing about the steps: an error at profile:
// (it once predicted epochs from the loop's time alone).
TEST_F(SimulateProgram, AProfileWithEveryComputeTimeZeroIsAnError) {
  std::string profile = read_file(kFixtureProfile);
  for (const char* key : {"forward_s: [", "backward_s: [", "loss_s: [", "optimizer_s: [", "zero_grad_s: ["}) {
    for (std::size_t at = profile.find(key); at != std::string::npos; at = profile.find(key, at + 1)) {
      const std::size_t open = at + std::string(key).size(), close = profile.find(']', open);
      const std::size_t values = std::count(profile.begin() + open, profile.begin() + close, ',') + 1;
      std::string zeros;
      for (std::size_t i = 0; i < values; ++i) zeros += i == 0 ? "0" : ", 0";
      profile.replace(open, close - open, zeros);
    }
  }
  const fs::path zero = dir_ / "zero.yaml";
  std::ofstream(zero) << profile;
  const fs::path config = write_config("profile: " + zero.string() +
                                       "\nsweep: {strategy: ddp, gpus: [1], batch_per_gpu: [32]}\n");
  expect_one_line_error(simulate(config.string()), "error: " + config.string() + ":1: profile: profile " +
                                                       zero.string() + ": model resnet18-cifar: every timed part");
}

// scale_out: DDP past the sweep's GPUs on a topology, one node simulated; its own section, its
// own folder under --out, removed by a later run without it.
TEST_F(SimulateProgram, ScaleOutPrintsItsSectionAndWritesItsFolder) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\nsweep: {strategy: ddp, gpus: [1], batch_per_gpu: [128]}\n"
                                       "scale_out:\n  topology: {preset: dgx-h100, nodes: 4}\n"
                                       "  gpus: [1, 8, 32]\n");
  const fs::path out = dir_ / "out";
  const ProgramRun run = simulate(config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("## Scale-out: ddp on 4 x dgx-h100"), std::string::npos) << run.out;
  const std::vector<std::string> lines = lines_of(run.out);
  const auto row = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.rfind("| 128       |   32 |     4 |", 0) == 0; });
  ASSERT_NE(row, lines.end()) << run.out;  // 32 GPUs on 4 nodes of 8
  const std::vector<std::string> csv = lines_of(read_file(out / "scale-out" / "predictions.csv"));
  ASSERT_EQ(csv.size(), 4u);  // header + 1, 8, 32 GPUs
  EXPECT_EQ(csv[3].rfind("ddp,32,128,", 0), 0u) << csv[3];
  EXPECT_TRUE(fs::exists(out / "scale-out" / "plots.gp"));

  const fs::path plain = write_config("profile: " + kFixtureProfile +
                                      "\nsweep: {strategy: ddp, gpus: [1], batch_per_gpu: [128]}\n");
  ASSERT_EQ(simulate(plain.string() + " --quiet --out " + out.string()).exit_code, 0);
  EXPECT_FALSE(fs::exists(out / "scale-out" / "predictions.csv"));
  EXPECT_FALSE(fs::exists(out / "scale-out" / "speedup_vs_gpus.dat"));
}

TEST_F(SimulateProgram, ScaleOutPastTheTopologysNodesIsAnError) {
  const fs::path config = write_config("profile: " + kFixtureProfile +
                                       "\nsweep: {strategy: ddp, gpus: [1], batch_per_gpu: [128]}\n"
                                       "scale_out:\n  topology: {preset: dgx-h100, nodes: 2}\n"
                                       "  gpus: [8, 64]\n");
  expect_one_line_error(simulate(config.string()),
                        "error: " + config.string() + ":5: scale_out.gpus[1]: 64 GPUs are more than the topology's 2 nodes");
}

// A plain run with --out draws the sweep's own plots: epoch time vs batch and the predicted
// speedup vs GPUs (the SVGs need gnuplot; the script and its data are written either way).
TEST_F(SimulateProgram, PlainOutWritesTheSpeedupPlotData) {
  const fs::path out = dir_ / "plots";
  const ProgramRun run = simulate(kFixtureConfig + " --quiet --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(out / "plots.gp"));
  const std::string data = read_file(out / "speedup_vs_gpus.dat");
  EXPECT_NE(data.find("predicted: gpus speedup"), std::string::npos) << data;
  EXPECT_NE(read_file(out / "plots.gp").find("speedup_vs_gpus.svg"), std::string::npos);
}
