#pragma once
// `measure import-trace TRACE.json --name NAME [--batch B] [--params FILE] [--step N] [--out
// PROFILE.yaml]`: one training step of the user's own PyTorch profiler trace as a model entry of a
// profile (docs/TRACE.md). Torch-free: the conversion is trainsim::import_trace (sim/io).

namespace trainsim::measure {

// argv[0] is "import-trace". Returns 0 after writing the profile; throws UsageError for bad flags
// and InputError for a bad trace, --params file or existing profile (main prints one line, exit 2).
int import_trace_main(int argc, char** argv);

}  // namespace trainsim::measure
