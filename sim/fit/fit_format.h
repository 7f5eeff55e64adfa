#pragma once
// What simulate prints about a fit (docs/FIT.md): the parameters with their standard errors and
// status, each observation against its prediction, and the leave-one-out table of --holdout.

#include <string>
#include <vector>

#include "fit/fit.h"
#include "io/config.h"

namespace trainsim::fit {

// `target`: what the fit predicts for, e.g. "a100-sxm4-40gb (roofline)" or "an unknown device".
std::string format_fit(const FitResult& fit, const SweepConfig& config, const std::string& target);

// Notes every prediction made with the fit carries: what it rests on and what it leaves out.
// `default_link`: multi-GPU predictions use default_pcie_link() (a note says so).
std::vector<std::string> fit_notes(const FitResult& fit, const std::string& target, bool default_link = false);

// The leave-one-out table; its last line is `holdout MAPE epoch_s: X.X% over N observations`
// (the mean absolute error of the predicted observations, each in its own measure; the line says
// iteration_s when all are iteration times, time when they are mixed).
std::string format_holdout(const std::vector<HoldoutRow>& rows, const SweepConfig& config);

// The held_out: timings against their predictions; last line
// `held-out MAPE epoch_s: X.X% over N cells` (the measure named as format_holdout names it).
std::string format_held_out(const std::vector<HoldoutRow>& rows, const SweepConfig& config);

}  // namespace trainsim::fit
