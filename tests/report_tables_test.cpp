// The course's tables (Q1, Tables 1-3, notes, header) built from hand-made SimResults.

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <utility>
#include <string>
#include <vector>

#include "flat_text.h"
#include "report/report.h"

namespace trainsim::report {
namespace {

SimResult result(Strategy strategy, int gpus, int64_t batch, double epoch_s, bool fits = true) {
  SimResult r;
  r.spec.strategy = strategy;
  r.spec.gpus = gpus;
  r.spec.batch_per_gpu = batch;
  r.global_batch = gpus * batch;
  r.iterations = (50000 + r.global_batch - 1) / r.global_batch;  // ceil(50000 / global batch)
  r.fits = fits;
  r.epoch_s = epoch_s;
  r.train_s = epoch_s;
  r.device_memory_bytes = 8.0 * (1 << 30);
  r.peak_mem_bytes = fits ? 2.0 * (1 << 30) : 9.0 * (1 << 30);
  return r;
}

ReportContext context(std::vector<Strategy> strategies, std::vector<int> gpus, std::vector<int64_t> batches) {
  ReportContext c;
  c.config_file = "configs/test.yaml";
  c.profile_path = "reports/test-machine/profile.yaml";
  c.machine_name = "test-machine";
  c.host = "node7";
  c.device_kind = "cuda";
  c.device_name = "Test GPU";
  c.device_count = 4;
  c.device_memory_bytes = 8.0 * (1 << 30);
  c.data = "synthetic";
  c.measured_date = "2000-01-01T00:00:00Z";
  c.model = "resnet18-cifar";
  c.param_bytes = 44695848;
  c.train_samples = 50000;
  c.loader_workers = 2;
  c.strategies = std::move(strategies);
  c.gpus = std::move(gpus);
  c.batches = std::move(batches);
  return c;
}

// Every Markdown table line of `text` as trimmed cells ("| a | b |" -> {"a", "b"}).
std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells;
    size_t start = 1;
    for (size_t bar = line.find('|', start); bar != std::string::npos; bar = line.find('|', start)) {
      std::string cell = line.substr(start, bar - start);
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
      start = bar + 1;
    }
    rows.push_back(cells);
  }
  return rows;
}

// The first table row (in `text`) whose leading cells equal `key`.
std::vector<std::string> row(const std::string& text, const std::vector<std::string>& key) {
  for (const auto& r : table_rows(text)) {
    if (r.size() >= key.size() && std::equal(key.begin(), key.end(), r.begin())) return r;
  }
  ADD_FAILURE() << "no row starting with " << key.front() << " in:\n" << text;
  return {};
}

using trainsim::testing::flat;

// A text between `begin` and the next "## " heading (or the end).
std::string section(const std::string& text, const std::string& begin) {
  const size_t start = text.find(begin);
  if (start == std::string::npos) {
    ADD_FAILURE() << "no section " << begin;
    return "";
  }
  const size_t end = text.find("\n## ", start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(Q1Table, UsesDpWithOneGpuAndNamesTheFirstBatchThatDoesNotFit) {
  const auto c = context({Strategy::kDdp, Strategy::kDp}, {1, 2}, {128, 512, 2048});
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 30.0), result(Strategy::kDp, 1, 128, 20.0),
                         result(Strategy::kDp, 1, 512, 12.5), result(Strategy::kDp, 1, 2048, 11.0, false)});
  const std::string q1 = format_one_gpu_epoch_times(c, grid);
  EXPECT_NE(q1.find("(dp, 1 GPU)"), std::string::npos) << q1;
  // dp's 20 s, not ddp's 30 s; iterations ceil(50000 / 128) = 391; peak 2 GiB.
  EXPECT_EQ(row(q1, {"128"}), (std::vector<std::string>{"128", "20.00", "20.00", "391", "2.00", "yes"}));
  EXPECT_EQ(row(q1, {"512"}), (std::vector<std::string>{"512", "12.50", "12.50", "98", "2.00", "yes"}));
  // OOM: time cells say OOM, the predicted peak (9 GiB) stays visible; ceil(50000 / 2048) = 25.
  EXPECT_EQ(row(q1, {"2048"}), (std::vector<std::string>{"2048", "OOM", "OOM", "25", "9.00", "no"}));
  EXPECT_NE(q1.find("first batch that does not fit: 2048 (predicted peak 9.00 GiB > 8.00 GiB)"),
            std::string::npos)
      << q1;
}

TEST(Q1Table, FallsBackToDdpAndSaysAllFit) {
  const auto c = context({Strategy::kDdp}, {1}, {32, 128});
  const ResultGrid grid({result(Strategy::kDdp, 1, 32, 40.0), result(Strategy::kDdp, 1, 128, 30.0)});
  const std::string q1 = format_one_gpu_epoch_times(c, grid);
  EXPECT_NE(q1.find("(ddp, 1 GPU)"), std::string::npos) << q1;
  EXPECT_NE(q1.find("all fit up to 128"), std::string::npos) << q1;
  EXPECT_EQ(q1.find("does not fit"), std::string::npos) << q1;
}

TEST(Q1Table, SaysSoWhenTheSweepHasNoSingleGpu) {
  const auto c = context({Strategy::kDdp}, {2, 4}, {128});
  const std::string q1 = format_one_gpu_epoch_times(c, ResultGrid({result(Strategy::kDdp, 2, 128, 10.0)}));
  EXPECT_NE(q1.find("no 1-GPU configuration"), std::string::npos) << q1;
  EXPECT_EQ(q1.find('|'), std::string::npos) << q1;
}

TEST(Table1, TimeSpeedupEfficiencyAndWeakScalingForm) {
  const auto c = context({Strategy::kDdp}, {1, 2, 4}, {128, 256});
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 100.0), result(Strategy::kDdp, 2, 128, 60.0),
                         result(Strategy::kDdp, 4, 128, 40.0), result(Strategy::kDdp, 1, 256, 80.0, false),
                         result(Strategy::kDdp, 2, 256, 50.0), result(Strategy::kDdp, 4, 256, 30.0, false)});
  const std::string t1 = format_scaling_table(c, grid);
  // b = 128: speedup(2) = 100/60 = 1.667, speedup(4) = 100/40 = 2.5.
  EXPECT_EQ(row(t1, {"128"}),
            (std::vector<std::string>{"128", "100.0", "60.00", "1.667", "40.00", "2.500"}));
  // b = 256: the 1-GPU baseline does not fit, so no speedup; the 4-GPU cell is OOM.
  EXPECT_EQ(row(t1, {"256"}), (std::vector<std::string>{"256", "OOM", "50.00", "-", "OOM", "-"}));
  // Second table: efficiency = speedup / N: 1.667/2 = 0.833, 2.5/4 = 0.625;
  // weak-scaling speedup N*T(1)/T(N): 2*100/60 = 3.333, 4*100/40 = 10.
  const auto efficiency_rows = table_rows(t1.substr(t1.find("Scaling efficiency")));
  ASSERT_GE(efficiency_rows.size(), 3u);
  EXPECT_EQ(efficiency_rows[0], (std::vector<std::string>{"batch/GPU", "efficiency 2", "weak-scaling speedup 2",
                                                         "efficiency 4", "weak-scaling speedup 4"}));
  EXPECT_EQ(efficiency_rows[2], (std::vector<std::string>{"128", "0.833", "3.333", "0.625", "10.000"}));
  EXPECT_NE(flat(t1).find("weak scaling in the global batch"), std::string::npos);
  EXPECT_NE(t1.find("T(1,B)/T(N,B/N)"), std::string::npos);
}

TEST(Table1, StrongScalingWhereTheSweepHasBothCells) {
  const auto c = context({Strategy::kDdp}, {1, 2}, {64, 128});
  const ResultGrid grid({result(Strategy::kDdp, 1, 64, 120.0), result(Strategy::kDdp, 1, 128, 100.0),
                         result(Strategy::kDdp, 2, 64, 70.0), result(Strategy::kDdp, 2, 128, 60.0)});
  const std::string t1 = format_scaling_table(c, grid);
  const std::string strong = t1.substr(t1.find("### Strong scaling"));
  // B = 128 on N = 2 uses b = 64: T(1,128) / T(2,64) = 100 / 70 = 1.429.
  EXPECT_EQ(row(strong, {"ddp", "128"}),
            (std::vector<std::string>{"ddp", "128", "2", "64", "100.0", "70.00", "1.429"}));
  // B = 64 would need b = 32, which is not swept: only one data row (plus header and separator).
  EXPECT_EQ(table_rows(strong).size(), 3u);
}

TEST(Table1, SaysWhenNoStrongScalingCellExists) {
  const auto c = context({Strategy::kDdp}, {1, 2}, {128});
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 100.0), result(Strategy::kDdp, 2, 128, 60.0)});
  EXPECT_NE(format_scaling_table(c, grid).find("The sweep has no such cells"), std::string::npos);
}

// Two tables of the same rows (issue 64: each fits a terminal): the course's subtraction, then
// the simulator's breakdown.
TEST(Table2, CourseSubtractionAndTheSimulatorBreakdownOfTheSameRows) {
  const auto c = context({Strategy::kDdp}, {1, 2}, {128});
  SimResult two = result(Strategy::kDdp, 2, 128, 60.0);
  two.compute_s = 48.5;
  two.comm_s = 20.25;
  two.exposed_comm_s = 3.125;
  two.loader_stall_s = 7.0;
  const ResultGrid grid({result(Strategy::kDdp, 1, 128, 100.0), two});
  const std::string t2 = format_compute_vs_communication(c, grid);
  const size_t split = t2.find("The simulator's breakdown of the same configurations, GPU 0's busy times");
  ASSERT_NE(split, std::string::npos) << t2;
  const std::string course = t2.substr(0, split), simulated = t2.substr(split);
  // course compute = 100 / 2 = 50, course comm = 60 - 50 = 10; simulator columns copied.
  EXPECT_EQ(table_rows(course).at(0), (std::vector<std::string>{"strategy", "gpus", "batch/GPU", "T(1,b) s", "T(N,b) s",
                                                                "course compute s", "course comm s"}));
  EXPECT_EQ(row(course, {"ddp", "2", "128"}),
            (std::vector<std::string>{"ddp", "2", "128", "100.0", "60.00", "50.00", "10.00"}));
  EXPECT_EQ(table_rows(simulated).at(0), (std::vector<std::string>{"strategy", "gpus", "batch/GPU", "compute_s", "comm_s",
                                                                   "exposed_comm_s", "loader_stall_s"}));
  EXPECT_EQ(row(simulated, {"ddp", "2", "128"}),
            (std::vector<std::string>{"ddp", "2", "128", "48.50", "20.25", "3.125", "7.000"}));
  EXPECT_NE(t2.find("ignores overlap"), std::string::npos);
  // No 1-GPU rows in Table 2: in each table header, separator and one data row.
  EXPECT_EQ(table_rows(course).size(), 3u);
  EXPECT_EQ(table_rows(simulated).size(), 3u);
}

TEST(Table2, OomCellsAndSingleGpuOnlySweeps) {
  const auto c = context({Strategy::kDp}, {1, 2}, {2048});
  const ResultGrid grid({result(Strategy::kDp, 1, 2048, 10.0), result(Strategy::kDp, 2, 2048, 8.0, false)});
  const std::string t2 = format_compute_vs_communication(c, grid);
  const size_t split = t2.find("The simulator's breakdown");
  ASSERT_NE(split, std::string::npos) << t2;
  EXPECT_EQ(row(t2.substr(0, split), {"dp"}), (std::vector<std::string>{"dp", "2", "2048", "10.00", "OOM", "-", "-"}));
  EXPECT_EQ(row(t2.substr(split), {"dp"}), (std::vector<std::string>{"dp", "2", "2048", "OOM", "OOM", "OOM", "OOM"}));
  const auto single = context({Strategy::kDp}, {1}, {2048});
  EXPECT_NE(format_compute_vs_communication(single, grid).find("no configuration with 2 or more GPUs"), std::string::npos);
  EXPECT_NE(format_bandwidth_utilisation(single, grid).find("no configuration with 2 or more GPUs"), std::string::npos);
}

// Two tables of the same rows (issue 64): the course's method, then the collectives as simulated.
TEST(Table3, CourseUtilisationAndSimulatorBusBandwidth) {
  const auto c = context({Strategy::kDdp}, {1, 2}, {64});
  SimResult two = result(Strategy::kDdp, 2, 64, 60.0);
  two.iterations = 391;  // ceil(50000 / 128)
  two.comm_bytes_per_rank = 1.75e10;
  two.busbw_gbs = 12.5;
  const ResultGrid grid({result(Strategy::kDdp, 1, 64, 100.0), two});
  const std::string t3 = format_bandwidth_utilisation(c, grid);
  const size_t split = t3.find("utilisation GB/s = course GB/epoch / course comm s. The simulator's collectives");
  ASSERT_NE(split, std::string::npos) << t3;
  const std::string course = t3.substr(0, split), simulated = t3.substr(split);
  // bytes = 391 * 2(2-1)/2 * 44,695,848 = 17,476,076,568 B = 17.48 GB; course comm = 60 - 100/2 = 10 s;
  // utilisation = 17.476 GB / 10 s = 1.748 GB/s; simulator: 1.75e10 B = 17.50 GB, busbw 12.50.
  EXPECT_EQ(table_rows(course).at(0), (std::vector<std::string>{"strategy", "gpus", "batch/GPU", "iterations",
                                                                "course GB/epoch", "course comm s", "utilisation GB/s"}));
  EXPECT_EQ(row(course, {"ddp"}), (std::vector<std::string>{"ddp", "2", "64", "391", "17.48", "10.00", "1.748"}));
  EXPECT_EQ(table_rows(simulated).at(0),
            (std::vector<std::string>{"strategy", "gpus", "batch/GPU", "comm GB/rank", "busbw GB/s"}));
  EXPECT_EQ(row(simulated, {"ddp"}), (std::vector<std::string>{"ddp", "2", "64", "17.50", "12.50"}));
  EXPECT_EQ(table_rows(course).size(), 3u);
  EXPECT_EQ(table_rows(simulated).size(), 3u);
  EXPECT_NE(flat(t3).find("t = 2(n-1)*alpha + 2(n-1)/n * S / B"), std::string::npos);
  EXPECT_NE(t3.find("44,695,848"), std::string::npos);

  // A configuration the profiled machine cannot run: no course figures, n/a for the simulator's.
  SimResult cannot = result(Strategy::kDdp, 2, 64, 0.0);
  cannot.runnable = false;
  const std::string none = format_bandwidth_utilisation(c, ResultGrid({result(Strategy::kDdp, 1, 64, 100.0), cannot}));
  const size_t at = none.find("The simulator's collectives");
  ASSERT_NE(at, std::string::npos) << none;
  EXPECT_EQ(row(none.substr(0, at), {"ddp"}), (std::vector<std::string>{"ddp", "2", "64", "-", "-", "-", "-"}));
  EXPECT_EQ(row(none.substr(at), {"ddp"}), (std::vector<std::string>{"ddp", "2", "64", "n/a", "n/a"}));
}

TEST(Table3, NoUtilisationWhenCourseCommunicationIsNotPositive) {
  const auto c = context({Strategy::kDdp}, {1, 2}, {64});
  // T(2) = 45 < T(1)/2 = 50: course communication = -5 s, utilisation undefined.
  const ResultGrid grid({result(Strategy::kDdp, 1, 64, 100.0), result(Strategy::kDdp, 2, 64, 45.0)});
  const auto r = row(format_bandwidth_utilisation(c, grid), {"ddp"});
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[5], "-5.000");
  EXPECT_EQ(r[6], "n/a (comm <= 0)");
}

TEST(Notes, EachNoteOnceWithTheConfigurationsThatReportedIt) {
  SimResult a = result(Strategy::kDdp, 1, 64, 1.0), b = result(Strategy::kDdp, 2, 64, 1.0),
            c = result(Strategy::kDp, 2, 128, 1.0);
  a.notes = {"all_reduce on 8 ranks: ring fit", "shared note"};
  b.notes = {"shared note", "loader: 3 workers interpolated"};
  c.notes = {"shared note", "all_reduce on 8 ranks: ring fit"};
  for (const std::string& notes : {format_notes(ResultGrid({a, b, c})), format_notes_per_configuration(ResultGrid({a, b, c}))}) {
    EXPECT_NE(notes.find("- all_reduce on 8 ranks: ring fit (ddp:1:64, dp:2:128)\n"
                         "- shared note (all configurations)\n"
                         "- loader: 3 workers interpolated (ddp:2:64)\n"),
              std::string::npos)
        << notes;
  }
  EXPECT_EQ(format_notes(ResultGrid({result(Strategy::kDdp, 1, 64, 1.0)})), "## Notes\n\n(none)\n\n");
  EXPECT_EQ(format_notes_per_configuration(ResultGrid({result(Strategy::kDdp, 1, 64, 1.0)})), "## Notes\n\n(none)\n\n");

  // A comparison's grid holds one configuration twice (two trainers or settings): its label once.
  SimResult a2 = a, b2 = b;
  const std::string twice = format_notes_per_configuration(ResultGrid({a, b, a2, b2}));
  EXPECT_NE(twice.find("- shared note (ddp:1:64, ddp:2:64)\n"), std::string::npos) << twice;
  // Grouped, a note on every result is on all configurations; a label is still listed once.
  const std::string grouped = format_notes(ResultGrid({a, b, a2, b2}));
  EXPECT_NE(grouped.find("- shared note (all configurations)\n"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("- all_reduce on 8 ranks: ring fit (ddp:1:64)\n"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("DIR/notes.md"), std::string::npos) << grouped;
}

TEST(Notes, ANoteSplitsAtTheNumbersThatStartAWord) {
  const NoteShape shape = note_shape("fork 57.9 ms on 8 x h100-sxm (torch 2.11.0+cu130, sm_80), bias -5.0%, 2(n-1)");
  EXPECT_EQ(shape.numbers, (std::vector<std::string>{"57.9", "8", "2.11", "-5.0", "2", "1"}));
  EXPECT_EQ(shape.texts, (std::vector<std::string>{"fork ", " ms on ", " x h100-sxm (torch ", ".0+cu130, sm_80), bias ",
                                                   "%, ", "(n-", ")"}));
  EXPECT_EQ(note_shape("period 84.4254 ms").key, note_shape("period 10.2 ms").key);
  EXPECT_NE(note_shape("8 x h100-sxm").key, note_shape("8 x h200-sxm").key);
  EXPECT_TRUE(note_shape("no numbers").numbers.empty());
}

// Notes equal but for their numbers are one line: a number that varies is its range over the
// group, one that does not is as it was; groups keep the order of their first note.
TEST(Notes, GroupedByCauseWithEachVaryingNumberAsItsRange) {
  SimResult a = result(Strategy::kDdp, 1, 64, 1.0), b = result(Strategy::kDdp, 2, 64, 1.0),
            c = result(Strategy::kDdp, 4, 64, 1.0), d = result(Strategy::kDdp, 4, 128, 1.0);
  a.notes = {"steady state from iteration 9: period 84.4254 ms, 82 iterations", "fork 57.9 ms (1 at once)"};
  b.notes = {"fork 53.7 ms (1 at once)", "steady state from iteration 9: period 10.2433 ms, 1549 iterations",
             "bias 3.0% on 8 x h100-sxm"};
  c.notes = {"fork 62.4 ms (1 at once)", "bias -5.0% on 8 x h100-sxm", "on 8 x h200-sxm"};
  d.notes = {"fork 57.9 ms (1 at once)"};
  const std::string notes = format_notes(ResultGrid({a, b, c, d}));
  EXPECT_NE(notes.find("- steady state from iteration 9: period 10.2433-84.4254 ms, 82-1549 iterations "
                       "(ddp:1:64, ddp:2:64)\n"
                       "- fork 53.7-62.4 ms (1 at once) (all configurations)\n"
                       "- bias -5.0 to 3.0% on 8 x h100-sxm (ddp:2:64, ddp:4:64)\n"
                       "- on 8 x h200-sxm (ddp:4:64)\n\n"),
            std::string::npos)
      << notes;
  // The per-configuration form keeps every note whole.
  const std::string each = format_notes_per_configuration(ResultGrid({a, b, c, d}));
  EXPECT_NE(each.find("- fork 57.9 ms (1 at once) (ddp:1:64, ddp:4:128)\n"), std::string::npos) << each;
  EXPECT_NE(each.find("- fork 62.4 ms (1 at once) (ddp:4:64)\n"), std::string::npos) << each;

  // A long line puts the configurations on an indented line of their own, the note wrapped at
  // 100 columns with its continuation indented (a word longer than that whole on its own line).
  const std::string long_word(120, 'x');
  const std::string long_text = "a long note " + long_word;
  a.notes = {long_text};
  b.notes = {long_text};
  const std::string wrapped = format_notes(ResultGrid({a, b, c}));
  EXPECT_NE(wrapped.find("- a long note\n  " + long_word + "\n  (ddp:1:64, ddp:2:64)\n"), std::string::npos) << wrapped;
}

// The configurations of `strategy` at (gpus, batch) `cells`.
std::vector<RunSpec> specs(Strategy strategy, const std::vector<std::pair<int, int64_t>>& cells) {
  std::vector<RunSpec> out;
  for (const auto& [gpus, batch] : cells) out.push_back(result(strategy, gpus, batch, 1.0).spec);
  return out;
}

std::vector<RunSpec> operator+(std::vector<RunSpec> a, const std::vector<RunSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// compress_configurations of `specs` (it takes the grid's configurations by address).
std::vector<std::string> compress(const std::vector<RunSpec>& specs, const ResultGrid& grid, const Unit& unit,
                                  std::size_t cap) {
  std::vector<const RunSpec*> refs;
  for (const RunSpec& s : specs) refs.push_back(&s);
  return compress_configurations(refs, grid, unit, cap);
}

TEST(Notes, ConfigurationsCompressPerStrategyAndStopAtTheCap) {
  std::vector<SimResult> all;
  std::vector<std::pair<int, int64_t>> every;
  for (int g : {1, 2, 4, 8}) {
    for (int64_t b : {32, 128, 512, 2048}) every.push_back({g, b});
  }
  for (Strategy s : {Strategy::kDp, Strategy::kDdp}) {
    for (const auto& [g, b] : every) all.push_back(result(s, g, b, 1.0));
  }
  const ResultGrid grid(all);
  const Unit gpu;
  const Strategy dp = Strategy::kDp, ddp = Strategy::kDdp;
  using Strings = std::vector<std::string>;
  // Every GPU count and batch of dp: one item, ranges of the swept values.
  EXPECT_EQ(compress(specs(dp, every), grid, gpu, 6), (Strings{"dp: 1-8 GPUs x batch 32-2048"}));
  // 1 and 4 GPUs without 2 are listed, not a range; one GPU count is singular; CPU ranks are ranks.
  EXPECT_EQ(compress(specs(dp, {{1, 32}, {4, 32}, {1, 128}, {4, 128}}) + specs(ddp, {{1, 512}}), grid,
                                    gpu, 6),
            (Strings{"dp: 1,4 GPUs x batch 32-128", "ddp:1:512"}));
  EXPECT_EQ(compress(specs(ddp, {{1, 32}, {1, 128}, {1, 512}}), grid, Unit{"rank"}, 6),
            (Strings{"ddp: 1 rank x batch 32-512"}));
  EXPECT_EQ(compress(specs(ddp, {{4, 128}, {1, 128}, {2, 128}}), grid, Unit{"rank"}, 6),
            (Strings{"ddp: 1-4 ranks x batch 128"}));
  // Two labels are shorter than their item.
  EXPECT_EQ(compress(specs(ddp, {{1, 32}, {2, 32}}), grid, gpu, 6), (Strings{"ddp:1:32", "ddp:2:32"}));
  // Not every combination: one item per GPU count, or per batch where that needs fewer.
  EXPECT_EQ(compress(specs(dp, {{1, 32}, {1, 128}, {1, 512}, {1, 2048}, {2, 32}}), grid, gpu, 6),
            (Strings{"dp: 1 GPU x batch 32-2048", "dp:2:32"}));
  EXPECT_EQ(compress(specs(dp, {{1, 32}, {2, 32}, {4, 32}, {8, 32}, {1, 128}}), grid, gpu, 6),
            (Strings{"dp: 1-8 GPUs x batch 32", "dp:1:128"}));
  // Over the cap: the first `cap` items, then how many configurations are left; one item over
  // the cap is shown rather than "and 1 more", one that holds more is counted.
  const std::vector<std::pair<int, int64_t>> diagonal = {{1, 32}, {2, 128}, {4, 512}, {8, 2048}};
  EXPECT_EQ(compress(specs(dp, diagonal) + specs(ddp, diagonal), grid, gpu, 6),
            (Strings{"dp:1:32", "dp:2:128", "dp:4:512", "dp:8:2048", "ddp:1:32", "ddp:2:128", "and 2 more"}));
  EXPECT_EQ(compress(specs(dp, diagonal) + specs(ddp, {{1, 32}, {2, 128}, {4, 512}}), grid, gpu, 6),
            (Strings{"dp:1:32", "dp:2:128", "dp:4:512", "dp:8:2048", "ddp:1:32", "ddp:2:128", "ddp:4:512"}));
  EXPECT_EQ(compress(specs(ddp, diagonal) + specs(dp, every), grid, gpu, 4),
            (Strings{"ddp:1:32", "ddp:2:128", "ddp:4:512", "ddp:8:2048", "and 16 more"}));
  EXPECT_EQ(compress(specs(ddp, diagonal) + specs(dp, every), grid, gpu, 2),
            (Strings{"ddp:1:32", "ddp:2:128", "and 18 more"}));

  // In the section: the list wraps onto indented lines of at most 100 columns.
  const std::vector<std::pair<int, int64_t>> rows = {{1, 32},   {1, 128},  {1, 512},  {2, 128}, {2, 512}, {2, 2048},
                                                     {4, 32},   {4, 128},  {4, 512},  {8, 128}, {8, 512}, {8, 2048}};
  EXPECT_EQ(compress(specs(dp, rows), grid, gpu, 6),
            (Strings{"dp: 1 GPU x batch 32-512", "dp: 2 GPUs x batch 128-2048", "dp: 4 GPUs x batch 32-512",
                     "dp: 8 GPUs x batch 128-2048"}));
  std::vector<SimResult> noted = all;
  for (SimResult& r : noted) {
    const std::pair<int, int64_t> cell{r.spec.gpus, r.spec.batch_per_gpu};
    if (std::find(rows.begin(), rows.end(), cell) != rows.end()) r.notes = {"a note on some configurations"};
  }
  const std::string notes = format_notes(ResultGrid(noted));
  EXPECT_NE(notes.find("- a note on some configurations\n"
                       "  (dp: 1 GPU x batch 32-512, dp: 2 GPUs x batch 128-2048, dp: 4 GPUs x batch 32-512,\n"
                       "   dp: 8 GPUs x batch 128-2048, ddp: 1 GPU x batch 32-512, ddp: 2 GPUs x batch 128-2048, and 6 "
                       "more)\n\n"),
            std::string::npos)
      << notes;
  std::istringstream lines(notes);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

TEST(Header, NamesProfileMachineDeviceDataModelAndDate) {
  auto c = context({Strategy::kDdp}, {1}, {64});
  c.interconnect = InterconnectAssumption{100.0, 5.0, false};
  const std::string header = format_header(c);
  for (const char* expected :
       {"reports/test-machine/profile.yaml", "machine test-machine", "measured on node7 2000-01-01T00:00:00Z",
        "cuda Test GPU x4, 8.00 GiB each", "data: synthetic", "resnet18-cifar, 44,695,848 parameter bytes",
        "50000 samples", "loader workers: 2", "assumed busbw 100.0 GB/s, latency 5.000 us",
        "steady state extrapolated"}) {
    EXPECT_NE(flat(header).find(expected), std::string::npos) << expected << " missing in:\n" << header;
  }
}

TEST(Report, MarkdownIsTheReportPlusMetricDefinitions) {
  const auto c = context({Strategy::kDp, Strategy::kDdp}, {1, 2}, {128});
  const ResultGrid grid({result(Strategy::kDp, 1, 128, 100.0), result(Strategy::kDp, 2, 128, 70.0),
                         result(Strategy::kDdp, 1, 128, 100.0), result(Strategy::kDdp, 2, 128, 55.0)});
  const std::string report = format_report(c, grid);
  for (const char* heading : {"## Q1", "## Table 1 (dp)", "## Table 1 (ddp)", "## Table 2", "## Table 3",
                              "## Notes"}) {
    EXPECT_NE(report.find(heading), std::string::npos) << heading;
  }
  // dp's table comes before ddp's (config order).
  EXPECT_LT(report.find("## Table 1 (dp)"), report.find("## Table 1 (ddp)"));
  const std::string markdown = format_predictions_markdown(c, grid);
  EXPECT_EQ(markdown.rfind(report, 0), 0u);
  EXPECT_NE(section(markdown, "## Metric definitions").find("busbw = algbw * 2(n-1)/n"), std::string::npos);
}

// The prose (paragraphs and list items, not table rows or headings) wraps at 100 columns, a list
// item's continuation indented by 2 (issue 64).
TEST(Report, ProseWrapsAtOneHundredColumns) {
  auto c = context({Strategy::kDp, Strategy::kDdp}, {1, 2}, {128});
  c.sync_batchnorm = true;
  c.interconnect = InterconnectAssumption{100.0, 5.0, false};
  SimResult dp2 = result(Strategy::kDp, 2, 128, 70.0);
  dp2.notes = {"a note long enough to wrap: " + std::string(60, 'y') + " and after it the rest of the note, "
               "which goes on"};
  const ResultGrid grid({result(Strategy::kDp, 1, 128, 100.0), dp2, result(Strategy::kDdp, 1, 128, 100.0),
                         result(Strategy::kDdp, 2, 128, 55.0)});
  const std::string markdown = format_predictions_markdown(c, grid);
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("|", 0) == 0 || line.rfind("#", 0) == 0) continue;
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_NE(markdown.find("This sweep holds the per-GPU batch b fixed, so the global batch N*b grows with N: weak "
                          "scaling in\nthe global batch,"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("\n- profile: reports/test-machine/profile.yaml (machine test-machine, measured on node7\n"
                          "  2000-01-01T00:00:00Z)\n"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("- a note long enough to wrap: " + std::string(60, 'y') + " and after\n  it the rest"),
            std::string::npos)
      << markdown;
}

// A CPU profile's N are processes on one host: the report says rank, never GPU (issue 13).
TEST(Report, ACpuProfilesWorkersAreRanksNotGpus) {
  Profile cpu;
  cpu.machine.device_kind = "cpu";
  SweepConfig config;
  EXPECT_EQ(report_unit(config, cpu).name, "rank");
  config.gpu = GpuSpec{};  // predicted for a catalog GPU: GPUs again
  EXPECT_EQ(report_unit(config, cpu).name, "GPU");
  Profile gpu;
  gpu.machine.device_kind = "cuda";
  EXPECT_EQ(report_unit(SweepConfig{}, gpu).name, "GPU");

  auto c = context({Strategy::kDp, Strategy::kDdp}, {1, 2}, {128});
  c.unit.name = "rank";
  c.device_kind = "cpu";
  c.device_name = "Test CPU";
  c.sync_batchnorm = true;
  const ResultGrid grid({result(Strategy::kDp, 1, 128, 100.0), result(Strategy::kDp, 2, 128, 70.0),
                         result(Strategy::kDdp, 1, 128, 100.0), result(Strategy::kDdp, 2, 128, 55.0)});
  const std::string markdown = format_predictions_markdown(c, grid);
  for (const char* expected : {"## Q1: 1-rank epoch time per batch size (dp, 1 rank)", "| batch/rank |",
                               "rank 0's busy times", "across the ranks in every BatchNorm layer"}) {
    EXPECT_NE(flat(markdown).find(expected), std::string::npos) << expected << " missing in:\n" << markdown;
  }
  EXPECT_EQ(markdown.find("GPU"), std::string::npos) << markdown;
}

}  // namespace
}  // namespace trainsim::report
