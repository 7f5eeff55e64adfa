#include "report/gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace trainsim::report {

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::istringstream entries(path);
  std::string entry;
  while (std::getline(entries, entry, ':')) {
    if (entry.empty()) continue;
    const fs::path candidate = fs::path(entry) / name;
    std::error_code error;
    if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

GnuplotRun run_gnuplot(const std::string& gnuplot, const std::string& dir, const std::vector<std::string>& args) {
  // Its output goes to a log beside its files (a pipe could fill and stall it), read back after.
  const std::string log = (fs::path(dir) / (".gnuplot." + std::to_string(::getpid()) + ".log")).string();
  std::vector<char*> argv{const_cast<char*>("gnuplot")};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return {-1, std::string("fork: ") + std::strerror(errno)};
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0 || ::chdir(dir.c_str()) != 0 || ::dup2(fd, STDOUT_FILENO) < 0 || ::dup2(fd, STDERR_FILENO) < 0) {
      ::_exit(127);
    }
    ::execv(gnuplot.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return {-1, std::string("waiting for gnuplot: ") + std::strerror(errno)};
  }
  GnuplotRun run;
  if (FILE* in = std::fopen(log.c_str(), "rb")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0) run.messages.append(buffer, n);
    std::fclose(in);
  }
  std::remove(log.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return run;
}

namespace {

std::vector<std::string> non_empty_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string gnuplot_quoted(const std::string& text) {
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

DrawOutcome draw_svgs(const std::string& dir, const std::string& script, const std::vector<std::string>& svgs) {
  DrawOutcome outcome;
  // gnuplot draws into a staging folder; the SVGs move into `dir` once all are there.
  const auto draw = [&]() -> std::string {
    const auto gnuplot = find_on_path("gnuplot");
    if (!gnuplot) return "gnuplot not found on PATH (Debian: apt-get install gnuplot-nox)";
    const std::string outdir = ".plots.tmp." + std::to_string(::getpid());
    const fs::path staging = fs::path(dir) / outdir;
    std::error_code error;
    fs::create_directories(staging, error);
    if (error) return "cannot create " + staging.string() + ": " + error.message();
    const GnuplotRun run = run_gnuplot(*gnuplot, dir, {"-e", "outdir=" + gnuplot_quoted(outdir), script});
    std::string problem;
    if (run.exit_code < 0) {
      problem = *gnuplot + " could not be run: " + run.messages;
    } else {
      outcome.messages = non_empty_lines(run.messages);
      if (run.exit_code != 0) {
        problem = *gnuplot + " exited with status " + std::to_string(run.exit_code) + " on " + script +
                  (outcome.messages.empty() ? "" : ": " + outcome.messages.back());
      }
    }
    for (auto svg = svgs.begin(); problem.empty() && svg != svgs.end(); ++svg) {
      fs::rename(staging / *svg, fs::path(dir) / *svg, error);
      if (error) problem = "gnuplot did not produce " + *svg + " (" + error.message() + ")";
    }
    fs::remove_all(staging, error);
    return problem;
  };
  outcome.problem = draw();
  outcome.drawn = outcome.problem.empty();
  if (!outcome.drawn) {  // no picture of older data beside the new script
    std::error_code ignored;
    for (const std::string& svg : svgs) fs::remove(fs::path(dir) / svg, ignored);
  }
  return outcome;
}

}  // namespace trainsim::report
