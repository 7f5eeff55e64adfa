#pragma once
// `measure largebatch-plan --dir DIR --runs NAMES`: the large-batch model's predictions for runs
// not made yet, from the folder's baselines, appended to DIR/plan.csv before the runs end: a
// pre-registration (with --edge-of-stability, that reading's, to DIR/plan-edge-of-stability.csv). `measure largebatch-compare` reads the plan back and reports the planned runs
// against the stored predictions (not the model's current ones), so a figure on runs the model
// never saw is printed by the tool rather than kept by hand (docs/LARGE_BATCH.md, "Pre-registered
// runs"). Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "largebatch/compare.h"

namespace trainsim::measure {

// plan.csv's header line (without its line break).
extern const char* const kPlanHeader;

// Predicts the runs `names` (run file names as scripts/largebatch-fashion.sh writes them, with or
// without .yaml) from the baselines in o.runs_dir, each from its own seed's, as
// `largebatch-compare` would (o's form of the model), a linear-warmup run with a ramp of
// `warmup_epochs`. `planned` is the plan so far. Throws
// std::runtime_error naming the run: a name that is not a run's, a baseline, a LARS run (the model
// has no layer-wise rule), a seed without a baseline, a run already planned (naming plan.csv's
// line), a run whose result is already in runs/ (all o.epochs, or .failed: a prediction made now
// would not be a pre-registration). A run in progress is planned, with the epochs it held.
std::vector<PlannedRun> plan_large_batch_runs(const CompareOptions& o, const std::vector<std::string>& names,
                                              double warmup_epochs, const std::vector<PlannedRun>& planned,
                                              const std::string& planned_at);

// The regime a planned run is predicted in (predicted_regime), as the plan's table prints it:
// "no progress", "trains", "trains (loss past the curve)" where the run trains but its loss at
// epoch k is lower than the baseline's curve reaches, so no loss is predicted, or "not predicted".
std::string planned_regime(const PlannedRun& r, int num_classes);

// Rows of plan.csv, each ending in a line break (no header).
std::string format_plan_rows(const std::vector<PlannedRun>& runs);
// Reads plan.csv; an absent file is an empty plan. Throws InputError "FILE:LINE: column: why"
// for a header that is not kPlanHeader, a row with the wrong number of fields, a run name that is
// not one, a value that is not a number, or a run planned twice.
std::vector<PlannedRun> read_plan(const std::string& path);

int largebatch_plan_main(int argc, char** argv);

}  // namespace trainsim::measure
