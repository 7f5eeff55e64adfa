// runs.csv (format/run_row.h): header, atomic append, header mismatch, concurrent writers, and
// simulate's reader (format/runs_csv.h) on what the writer wrote.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "format/errors.h"
#include "format/runs_csv.h"
#include "remove_tree.h"
#include "format/run_row.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;

class RunsCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "trainsim-runs-csv-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { trainsim::measure::remove_tree(dir_); }

  static std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  static RunRow sample_row() {
    RunRow r;
    r.strategy = "ddp";
    r.gpus = 2;
    r.batch_per_gpu = 32;
    r.loader_workers = 0;
    r.train_samples = 2048;
    r.epoch_s = 41.25;
    r.train_s = 40.5;
    r.loader_wait_s = 0.75;
    r.iterations = 32;
    r.epochs = 2;
    r.threads = 1;
    r.device = "cpu";
    r.data = "synthetic";
    r.final_loss = 1.875;
    r.final_accuracy = 0.3125;
    r.samples_per_s = 49.6484;
    r.date = "2025-01-31T12:00:00Z";
    r.trainer = "trainsim";
    r.test_samples = 0;
    r.probe_s = 0.8125;
    r.load_before = 0.5;
    r.load_after = 1.25;
    return r;
  }
  // sample_row() told apart by its date field.
  static RunRow tagged(const std::string& tag) {
    RunRow r = sample_row();
    r.date = tag;
    return r;
  }


  std::string dir_;
};

TEST_F(RunsCsv, HeaderIsTheTwentyThreeColumnsBothTrainersWrite) {
  // The file contract: changing it is a change to both trainers, simulate --compare and the
  // runs.csv files already written (docs/RUNS.md).
  EXPECT_EQ(runs_header(),
            "strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s,train_s,loader_wait_s,"
            "iterations,epochs,threads,device,data,final_loss,final_accuracy,samples_per_s,date,trainer,"
            "test_samples,test_s,probe_s,load_before,load_after");
  EXPECT_EQ(kRunsColumns.size(), 23u);
  // What simulate --compare requires is what the writers write first.
  EXPECT_EQ(runs_required_columns(),
            (std::vector<std::string>{"strategy", "gpus", "batch_per_gpu", "loader_workers", "train_samples",
                                      "epoch_s", "train_s"}));
}

TEST_F(RunsCsv, SimulateReadsWhatTheWriterWrites) {
  // One schema, its writer (append_run_row) and its reader (simulate --compare's load_runs_csv).
  const std::string path = dir_ + "/runs.csv";
  RunRow first = sample_row();
  RunRow second = sample_row();
  second.epoch_s = 43.25;
  second.train_s = 42.0;
  second.probe_s = 0.875;
  second.load_before = 1.5;
  append_run_row(path, first);
  append_run_row(path, second);
  const RunsTable table = load_runs_csv(path);
  EXPECT_EQ(table.rows, 2);
  EXPECT_TRUE(table.has_trainer_column);
  EXPECT_EQ(table.data, std::vector<std::string>{"synthetic"});
  EXPECT_EQ(table.devices, std::vector<std::string>{"cpu"});
  ASSERT_EQ(table.configs.size(), 1u);
  const MeasuredConfig& m = table.configs[0];
  EXPECT_EQ(m.key.strategy, Strategy::kDdp);
  EXPECT_EQ(m.key.gpus, 2);
  EXPECT_EQ(m.key.batch_per_gpu, 32);
  EXPECT_EQ(m.key.loader_workers, 0);
  EXPECT_EQ(m.key.train_samples, 2048);
  EXPECT_EQ(m.key.trainer, Trainer::kTrainsim);
  EXPECT_EQ(m.key.test_samples, 0);
  EXPECT_EQ(m.key.threads, 1);
  EXPECT_EQ(m.runs, 2);
  EXPECT_DOUBLE_EQ(m.epoch_s.median, 42.25);
  EXPECT_DOUBLE_EQ(m.train_s.min, 40.5);
  EXPECT_FALSE(m.test_s.has_value());
  ASSERT_TRUE(m.probe_s.has_value());
  EXPECT_DOUBLE_EQ(m.probe_s->max, 0.875);
  EXPECT_EQ(m.load_before, 1.5);
  EXPECT_EQ(m.load_after, 1.25);
  EXPECT_EQ(m.lines, (std::vector<int>{2, 3}));
}

// A run that is not fp32 makes a file with the precision column, which then takes fp32 runs too; a
// file without it (every file before the column existed, or one of fp32 runs only) gets the column
// when the first run of another precision comes, its rows marked fp32.
TEST_F(RunsCsv, PrecisionIsAnOptionalLastColumn) {
  const std::string path = dir_ + "/runs.csv";
  RunRow bf16 = sample_row();
  bf16.precision = "bf16-amp";
  EXPECT_NO_THROW(check_runs_header(path));  // missing
  append_run_row(path, bf16);
  append_run_row(path, sample_row());
  const std::vector<std::string> lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], runs_header() + ",precision");
  EXPECT_EQ(lines[1], format_run_row(sample_row()) + ",bf16-amp");
  EXPECT_EQ(lines[2], format_run_row(sample_row()) + ",fp32");
  EXPECT_EQ(parse_run_row(lines[1]).precision, "bf16-amp");
  EXPECT_EQ(parse_run_row(lines[2]).precision, "fp32");
  EXPECT_THROW(parse_run_row(format_run_row(sample_row()) + ",fp16"), std::invalid_argument);

  const RunsTable table = load_runs_csv(path);
  ASSERT_EQ(table.configs.size(), 2u);  // one key each: the precision tells them apart
  EXPECT_EQ(table.configs[0].key.precision, Precision::kBf16Amp);
  EXPECT_EQ(table.configs[1].key.precision, Precision::kFp32);

  const std::string old = dir_ + "/old.csv";
  append_run_row(old, sample_row());
  EXPECT_EQ(lines_of(old), (std::vector<std::string>{runs_header(), format_run_row(sample_row())}));
  EXPECT_NO_THROW(check_runs_header(old));
  append_run_row(old, sample_row());
  append_run_row(old, bf16);
  EXPECT_EQ(lines_of(old), (std::vector<std::string>{runs_header() + ",precision",
                                                     format_run_row(sample_row()) + ",fp32",
                                                     format_run_row(sample_row()) + ",fp32",
                                                     format_run_row(sample_row()) + ",bf16-amp"}));
  const RunsTable both = load_runs_csv(old);
  ASSERT_EQ(both.configs.size(), 2u);
  EXPECT_EQ(both.configs[0].runs, 2);
  EXPECT_EQ(both.configs[0].key.precision, Precision::kFp32);
  EXPECT_EQ(both.configs[1].key.precision, Precision::kBf16Amp);
}

// A channels_last run gives a file both optional columns (the memory format only follows the
// precision); the rows before it are marked fp32 and nchw, what a row without the columns was.
TEST_F(RunsCsv, MemoryFormatIsAnOptionalColumnAfterThePrecision) {
  const std::string path = dir_ + "/runs.csv";
  RunRow bf16 = sample_row();
  bf16.precision = "bf16-amp";
  RunRow last = sample_row();
  last.memory_format = "channels_last";
  append_run_row(path, sample_row());
  append_run_row(path, bf16);
  append_run_row(path, last);
  append_run_row(path, sample_row());
  const std::string row = format_run_row(sample_row());
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{runs_header() + ",precision,memory_format",
                                                      row + ",fp32,nchw", row + ",bf16-amp,nchw",
                                                      row + ",fp32,channels_last", row + ",fp32,nchw"}));
  EXPECT_NO_THROW(check_runs_header(path));
  EXPECT_EQ(format_run_row(last), row + ",fp32,channels_last");
  EXPECT_EQ(parse_run_row(row + ",bf16-amp,channels_last").memory_format, "channels_last");
  EXPECT_EQ(parse_run_row(row + ",bf16-amp,channels_last").precision, "bf16-amp");
  EXPECT_THROW(parse_run_row(row + ",fp32,nhwc"), std::invalid_argument);
  EXPECT_THROW(parse_run_row(row + ",fp32,nchw,extra"), std::invalid_argument);

  const RunsTable table = load_runs_csv(path);
  ASSERT_EQ(table.configs.size(), 3u);  // the format tells the channels_last run apart
  EXPECT_EQ(table.configs[0].runs, 2);
  EXPECT_EQ(table.configs[0].key.memory_format, MemoryFormat::kNchw);
  EXPECT_EQ(table.configs[2].key.memory_format, MemoryFormat::kChannelsLast);

  // A channels_last run into a new file: both columns at once.
  const std::string fresh = dir_ + "/fresh.csv";
  append_run_row(fresh, last);
  EXPECT_EQ(lines_of(fresh), (std::vector<std::string>{runs_header() + ",precision,memory_format",
                                                       row + ",fp32,channels_last"}));
}

TEST_F(RunsCsv, FormatsAndParsesTheTwentyThreeColumns) {
  const RunRow r = sample_row();
  const std::string line = format_run_row(r);
  // test_s is empty: the C++ trainer has no test pass.
  EXPECT_EQ(line,
            "ddp,2,32,0,2048,41.25,40.5,0.75,32,2,1,cpu,synthetic,1.875,0.3125,49.6484,"
            "2025-01-31T12:00:00Z,trainsim,0,,0.8125,0.5,1.25");
  const RunRow back = parse_run_row(line);
  EXPECT_EQ(back.strategy, "ddp");
  EXPECT_EQ(back.train_samples, 2048);
  EXPECT_DOUBLE_EQ(back.train_s, 40.5);
  EXPECT_EQ(back.date, r.date);
  EXPECT_EQ(back.trainer, "trainsim");
  EXPECT_EQ(back.test_samples, 0);
  EXPECT_FALSE(back.test_s.has_value());
  EXPECT_EQ(back.probe_s, std::optional<double>(0.8125));
  EXPECT_EQ(back.load_before, std::optional<double>(0.5));
  EXPECT_EQ(back.load_after, std::optional<double>(1.25));
  EXPECT_THROW(parse_run_row("ddp,2"), std::invalid_argument);
  EXPECT_THROW(parse_run_row("ddp,x,32,0,2048,1,1,0,1,2,1,cpu,synthetic,1,1,1,d,trainsim,0,,,,"),
               std::invalid_argument);
  // The 17 columns of the old format are not a row any more.
  EXPECT_THROW(parse_run_row("ddp,2,32,0,2048,1,1,0,1,2,1,cpu,synthetic,1,1,1,d"), std::invalid_argument);
}

// measure writes and reads back rows in the dialect simulate --compare reads (format/csv.h): a text
// field with a comma or a quote is quoted, and a count beyond int is an error, not a truncation
// (4294967298 was read as 2 by a static_cast).
TEST_F(RunsCsv, AFieldWithACommaRoundTripsAndAHugeCountIsRefused) {
  RunRow r = sample_row();
  r.data = "cifar10, first \"half\"";
  const std::string line = format_run_row(r);
  EXPECT_NE(line.find(",\"cifar10, first \"\"half\"\"\","), std::string::npos) << line;
  EXPECT_EQ(parse_run_row(line).data, r.data);
  r.data = "synthetic";
  std::string huge = format_run_row(r);
  huge.replace(huge.find(",2,"), 3, ",4294967298,");
  EXPECT_THROW(parse_run_row(huge), std::invalid_argument);
  EXPECT_THROW(parse_run_row("\"ddp,2"), std::invalid_argument);  // a quote left open
}

TEST_F(RunsCsv, EmptyProbeAndLoadColumnsStayEmpty) {
  RunRow r = sample_row();
  r.probe_s.reset();  // --no-probe
  r.load_before.reset();
  r.load_after.reset();
  r.test_samples = 1000;
  r.test_s = 2.5;
  const std::string line = format_run_row(r);
  EXPECT_EQ(line.substr(line.find(",trainsim,")), ",trainsim,1000,2.5,,,");
  const RunRow back = parse_run_row(line);
  EXPECT_EQ(back.test_s, std::optional<double>(2.5));
  EXPECT_FALSE(back.probe_s || back.load_before || back.load_after);
}

TEST_F(RunsCsv, CreatesFoldersAndHeaderThenAppends) {
  const std::string path = dir_ + "/reports/box/runs.csv";
  append_run_row(path, tagged("first"));
  append_run_row(path, tagged("second"));
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], runs_header());
  EXPECT_EQ(lines[1], format_run_row(tagged("first")));
  EXPECT_EQ(lines[2], format_run_row(tagged("second")));
  // No temporary file is left beside it (only the lock file).
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_ + "/reports/box")) {
    names.insert(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"runs.csv", "runs.csv.lock"}));
}

TEST_F(RunsCsv, AddsAMissingFinalNewline) {
  const std::string path = dir_ + "/runs.csv";
  std::ofstream(path) << runs_header() << "\nold-row";  // no newline after the last row
  append_run_row(path, tagged("new"));
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{runs_header(), "old-row", format_run_row(tagged("new"))}));
}

TEST_F(RunsCsv, RejectsTheOldSeventeenColumnHeader) {
  const std::string path = dir_ + "/runs.csv";
  const std::string old =
      "strategy,gpus,batch_per_gpu,loader_workers,train_samples,epoch_s,train_s,loader_wait_s,"
      "iterations,epochs,threads,device,data,final_loss,final_accuracy,samples_per_s,date";
  std::ofstream(path) << old << "\n";
  try {
    check_runs_header(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":1: header: expected '" + runs_header() +
                  "' (its last column may be followed by precision and memory_format), found '" + old + "'");
  }
}

TEST_F(RunsCsv, RejectsADifferentHeaderNamingFileAndLine) {
  const std::string path = dir_ + "/runs.csv";
  std::ofstream(path) << "strategy,gpus,batch\nddp,1,32\n";
  try {
    append_run_row(path, sample_row());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.key(), "header");
    EXPECT_NE(std::string(e.what()).find(path + ":1: header: expected '"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_runs_header(path), InputError);
  // The file is untouched.
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{"strategy,gpus,batch", "ddp,1,32"}));
}

TEST_F(RunsCsv, CheckAcceptsMissingEmptyAndGoodFiles) {
  const std::string path = dir_ + "/runs.csv";
  EXPECT_NO_THROW(check_runs_header(path));  // missing
  std::ofstream(path).close();
  EXPECT_NO_THROW(check_runs_header(path));  // empty
  append_run_row(path, sample_row());
  EXPECT_NO_THROW(check_runs_header(path));
}

TEST_F(RunsCsv, ConcurrentProcessesKeepEveryRow) {
  // 4 processes x 15 appends each, all at once: the lock serialises the read-modify-rename, so
  // the file ends with the header and all 60 rows.
  const std::string path = dir_ + "/runs.csv";
  constexpr int kWriters = 4;
  constexpr int kRowsEach = 15;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int k = 0; k < kRowsEach; ++k) {
          append_run_row(path, tagged("writer" + std::to_string(w) + "-row" + std::to_string(k)));
        }
      } catch (...) {
        status = 1;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 1u + kWriters * kRowsEach);
  EXPECT_EQ(lines[0], runs_header());
  const std::set<std::string> rows(lines.begin() + 1, lines.end());
  EXPECT_EQ(rows.size(), static_cast<size_t>(kWriters * kRowsEach));
  for (int w = 0; w < kWriters; ++w) {
    const std::string last = "writer" + std::to_string(w) + "-row" + std::to_string(kRowsEach - 1);
    EXPECT_TRUE(rows.count(format_run_row(tagged(last))));
  }
}

}  // namespace
}  // namespace trainsim::measure
