#pragma once
// `measure largebatch-validate`: the large-batch validation on this machine (docs/LARGE_BATCH.md
// "Validation"). Prints progress on stderr, a summary on stdout whose last line is
// `steps-to-target error: X.X% over N batch sizes`, and writes the report folder.

#include <optional>
#include <string>
#include <vector>

#include "largebatch/validation.h"

namespace trainsim::measure {

struct ValidateCommand {
  ValidationOptions options;
  std::string out_dir;  // empty: reports/<machine>/largebatch
  std::string machine;  // empty: measure's default machine name
  bool quiet = false;
};

// Parses `largebatch-validate ...` (args[0], the subcommand name, is skipped). Throws UsageError;
// nullopt after printing --help.
std::optional<ValidateCommand> parse_validate_command(const std::vector<std::string>& args);

// The default learning-rate grid: lr_max, lr_max / sqrt(2), ... down to lr_min (inclusive up to
// rounding). Throws UsageError unless 0 < lr_min <= lr_max.
std::vector<double> geometric_lr_grid(double lr_max, double lr_min);

int largebatch_validate_main(int argc, char** argv);

}  // namespace trainsim::measure
