#pragma once
// `measure machine [--device cpu|cuda]`: prints the name that a profile or a run made here is
// filed under by default (reports/<machine>/), so that scripts keep their results beside it.

namespace trainsim::measure {

// argv[0] is "machine". Returns 0; throws UsageError for bad flags.
int machine_main(int argc, char** argv);

}  // namespace trainsim::measure
