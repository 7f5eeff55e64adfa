// The one gnuplot runner of both programs (report/gnuplot.h): found on PATH, run in a folder,
// its exit status and messages returned; a program that cannot start is an exit code, not a throw.
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

TEST_F(Gnuplot, AProgramThatCannotStartIsExitCode127) {
  EXPECT_EQ(run_gnuplot("/nonexistent/gnuplot", dir_, {"x.gp"}).exit_code, 127);
  EXPECT_FALSE(find_on_path("trainsim-no-such-program-on-path").has_value());
}

}  // namespace
