#pragma once
// The sweep config (configs/sweep.yaml): plain struct + parser. Format in README "Config format".

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

enum class Strategy { kDdp, kDp };
const char* to_string(Strategy s);  // "ddp" / "dp"

struct SweepConfig {
  std::string file;          // path of the config as given
  std::string profile_path;  // resolved: relative paths are relative to the config's folder
  int profile_line = 0;      // line of the `profile:` key (for errors about the profile's content)
  std::string model = "resnet18-cifar";
  int64_t train_samples = 50000;
  int loader_workers = 2;
  std::vector<Strategy> strategies;
  std::vector<int> gpus;
  std::vector<int64_t> batch_per_gpu;
};

// Parses and validates a sweep config. Throws InputError (file:line: key.path: message) on the
// first problem: unknown key, wrong type, missing required key, zero/negative sizes, unknown strategy.
SweepConfig load_sweep_config(const std::string& path);

}  // namespace trainsim
