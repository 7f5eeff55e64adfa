#pragma once
// Multi-process launching on one machine: `measure` starts one child process per rank (itself,
// with a hidden worker subcommand); ranks rendezvous through a c10d FileStore in `store_dir`.
// Torch-free.

#include <string>
#include <vector>

namespace trainsim::measure {

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

// Starts `exe args... --rank R --world-size N --store STORE_DIR` for R = 0..N-1, waits for all.
// If a rank fails (non-zero exit or signal) the others are killed after `grace_s` seconds and a
// std::runtime_error names the rank and how it ended. Child stderr passes through.
void launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world_size,
                  const std::string& store_dir, double timeout_s = 3600, double grace_s = 10);

}  // namespace trainsim::measure
