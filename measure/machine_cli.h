#pragma once
// `measure machine [--device cpu|cuda]`: prints the name that a profile or a run made here is
// filed under by default (reports/<machine>/), so that scripts keep their results beside it.

#include <string>

namespace trainsim::measure {

// This host's default machine name for `device` ("" = cuda when a GPU is visible, else cpu; as
// resolve_device): what `measure`, `measure train` and `measure machine` file results under.
std::string this_host_machine_name(const std::string& device);

// argv[0] is "machine". Returns 0; throws UsageError for bad flags.
int machine_main(int argc, char** argv);

}  // namespace trainsim::measure
