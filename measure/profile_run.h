#pragma once
// `measure [profile]`: plans the cases (model x batch, h2d, loader, collective curves), skips
// those a resumed profile already has, measures the rest with progress on stderr, and rewrites
// the profile atomically after every finished case.

namespace trainsim::measure {

// argv[0] is the program or the subcommand name ("profile"). Returns the exit status; throws
// UsageError / InputError / data::DataError for bad input (main prints them and exits 2).
int profile_main(int argc, char** argv);

}  // namespace trainsim::measure
