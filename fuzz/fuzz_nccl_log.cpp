// libFuzzer target: the nccl-tests log reader (`collectives_log:`, --nccl-tests-log). A clean
// rejection is an InputError; anything else is a finding.

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/errors.h"
#include "io/nccl_tests_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    (void)trainsim::parse_nccl_tests_log_text(std::string(reinterpret_cast<const char*>(data), size),
                                              "fuzz.log");
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
