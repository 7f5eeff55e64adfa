#pragma once
// Multi-process launching on one machine: `measure` starts one child process per rank (itself,
// with a hidden worker subcommand); ranks rendezvous through a c10d FileStore in `store_dir`.
// Torch-free.

#include <string>
#include <vector>

namespace trainsim::measure {

// A fresh folder under the system temporary folder (for a FileStore), removed with everything in
// it when this goes out of scope. Throws std::runtime_error if it cannot be created.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

// Runs argv[0] (searched on PATH when it has no '/') with argv[1..] and waits for it: its stdout
// and stderr pass through, or go to /dev/null when `quiet`. Returns its exit status; 127 when it
// could not be started, 128 + N when signal N ended it. Killed after `timeout_s` seconds
// (std::runtime_error).
int run_program(const std::vector<std::string>& argv, double timeout_s, bool quiet = false);

// Starts `exe args... --rank R --world-size N --store STORE_DIR` for R = 0..N-1, waits for all.
// If a rank fails (non-zero exit or signal) the others are killed after `grace_s` seconds and a
// std::runtime_error names the rank and how it ended. Child stderr passes through.
void launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world_size,
                  const std::string& store_dir, double timeout_s = 3600, double grace_s = 10);

}  // namespace trainsim::measure
