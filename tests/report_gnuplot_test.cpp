// The one gnuplot runner of both programs (report/gnuplot.h): found on PATH, run in a folder,
// its exit status and messages returned; a program that cannot start is an exit code, not a throw;
// a script's SVGs drawn all or none (draw_svgs).
#include "report/gnuplot.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using trainsim::report::find_on_path;
using trainsim::report::run_gnuplot;

class Gnuplot : public ::testing::Test {
 protected:
  ::trainsim::testing::TempDir temp_{"trainsim-gnuplot-test"};
  std::string dir_ = temp_.path().string();
};

TEST_F(Gnuplot, DrawsInItsFolderAndReportsAFailingScript) {
  const auto gnuplot = find_on_path("gnuplot");
  if (!gnuplot) GTEST_SKIP() << "gnuplot is not on PATH";
  std::ofstream(fs::path(dir_) / "ok.gp") << "set terminal svg\nset output 'out.svg'\nplot x\n";
  const auto ok = run_gnuplot(*gnuplot, dir_, {"ok.gp"});
  EXPECT_EQ(ok.exit_code, 0) << ok.messages;
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "out.svg"));
  std::ofstream(fs::path(dir_) / "bad.gp") << "plot nosuchfunction(x)\n";
  const auto bad = run_gnuplot(*gnuplot, dir_, {"bad.gp"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.messages.find("nosuchfunction"), std::string::npos) << bad.messages;
  for (const auto& entry : fs::directory_iterator(dir_)) {  // its log is not left behind
    EXPECT_EQ(entry.path().filename().string().find(".gnuplot."), std::string::npos) << entry.path();
  }
}

// draw_svgs: the SVGs appear in the folder once all are drawn, through a staging folder that is
// not left behind; a failing script leaves none of them, not even an older one.
TEST_F(Gnuplot, DrawsEverySvgOrNone) {
  if (!find_on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not on PATH";
  const std::string header = std::string(trainsim::report::kOutdirDefault) + "set terminal svg\n";
  std::ofstream(fs::path(dir_) / "two.gp") << header << "set output outdir.'/a.svg'\nplot x\n"
                                           << "set output outdir.'/b.svg'\nplot x*x\nunset output\n";
  const auto drawn = trainsim::report::draw_svgs(dir_, "two.gp", {"a.svg", "b.svg"});
  EXPECT_TRUE(drawn.drawn) << drawn.problem;
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "a.svg"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "b.svg"));
  // The second plot fails: a.svg was drawn into the staging folder, and neither is left in dir_.
  std::ofstream(fs::path(dir_) / "two.gp") << header << "set output outdir.'/a.svg'\nplot x\n"
                                           << "set output outdir.'/b.svg'\nplot nosuchfunction(x)\n";
  const auto failed = trainsim::report::draw_svgs(dir_, "two.gp", {"a.svg", "b.svg"});
  EXPECT_FALSE(failed.drawn);
  EXPECT_NE(failed.problem.find("exited with status"), std::string::npos) << failed.problem;
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "a.svg"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "b.svg"));
  // A script that names an SVG it does not draw.
  std::ofstream(fs::path(dir_) / "one.gp") << header << "set output outdir.'/a.svg'\nplot x\nunset output\n";
  const auto missing = trainsim::report::draw_svgs(dir_, "one.gp", {"a.svg", "c.svg"});
  EXPECT_FALSE(missing.drawn);
  EXPECT_NE(missing.problem.find("did not produce c.svg"), std::string::npos) << missing.problem;
  for (const auto& entry : fs::directory_iterator(dir_)) {  // no staging folder left
    EXPECT_EQ(entry.path().filename().string().find(".plots.tmp."), std::string::npos) << entry.path();
  }
  // Redrawn by hand in its folder, the script writes there (outdir defaults to '.').
  const auto by_hand = run_gnuplot(*find_on_path("gnuplot"), dir_, {"one.gp"});
  EXPECT_EQ(by_hand.exit_code, 0) << by_hand.messages;
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "a.svg"));
}

TEST_F(Gnuplot, AProgramThatCannotStartIsExitCode127) {
  EXPECT_EQ(run_gnuplot("/nonexistent/gnuplot", dir_, {"x.gp"}).exit_code, 127);
  EXPECT_FALSE(find_on_path("trainsim-no-such-program-on-path").has_value());
}

}  // namespace
