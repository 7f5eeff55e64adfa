#pragma once
// gnuplot, found and run the one way both programs do it (`simulate --out`'s plots and
// `measure largebatch-validate`'s steps.svg). Plots are optional: a missing or failing gnuplot is
// reported by the caller as a warning, never an error. No dependencies.

#include <optional>
#include <string>
#include <vector>

namespace trainsim::report {

// The first executable regular file called `name` in a directory on PATH.
std::optional<std::string> find_on_path(const std::string& name);

struct GnuplotRun {
  int exit_code = 0;     // gnuplot's; 128 + N when signal N ended it; -1 when it could not start
  std::string messages;  // what it printed (stdout and stderr), or why it could not start
};

// Runs `gnuplot ARGS...` with `dir` as its working folder and waits for it.
GnuplotRun run_gnuplot(const std::string& gnuplot, const std::string& dir, const std::vector<std::string>& args);

}  // namespace trainsim::report
