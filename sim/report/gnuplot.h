#pragma once
// gnuplot, found and run the one way both programs do it (`simulate --out`'s plots, `measure
// largebatch-validate`'s steps.svg and `measure largebatch-compare`'s steps and epochs to target).
// Plots are optional: a missing or failing gnuplot is reported by the caller as a warning, never an
// error. No dependencies.

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

// A gnuplot string literal in single quotes (a quote inside is doubled).
std::string gnuplot_quoted(const std::string& text);

struct DrawOutcome {
  bool drawn = false;                 // every SVG was drawn
  std::string problem;                // why not: gnuplot missing or failing (empty when drawn)
  std::vector<std::string> messages;  // gnuplot's non-empty output lines (its warnings)
};

// Draws the SVGs of `script`, a gnuplot script already written in `dir`: gnuplot runs there with
// the script variable `outdir` naming a staging folder, and each of `svgs` is renamed from it into
// `dir` once gnuplot succeeded, so a reader never sees a half-drawn SVG. Where they are not all
// drawn (gnuplot missing or failing), `svgs` are removed from `dir`: no picture of older data is
// left beside the new script. A script writes `set output outdir.'/NAME.svg'` and opens with
// `if (!exists('outdir')) outdir = '.'` (kOutdirDefault), so that `gnuplot SCRIPT` in its folder
// redraws it in place.
DrawOutcome draw_svgs(const std::string& dir, const std::string& script, const std::vector<std::string>& svgs);
inline constexpr const char* kOutdirDefault = "if (!exists('outdir')) outdir = '.'\n";

}  // namespace trainsim::report
