// libFuzzer target: the runs.csv reader behind `simulate --compare` (parse_runs_csv). A clean
// rejection is an InputError; anything else is a finding.

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/errors.h"
#include "format/runs_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    (void)trainsim::parse_runs_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz-runs.csv");
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
