// libFuzzer target: the profile reader (load_profile) and its writer. A profile that reads
// must write back to YAML that reads to the same YAML again (the writer's output is a fixed
// point); a clean rejection is an InputError; anything else is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "format/errors.h"
#include "format/profile_io.h"
#include "memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace trainsim;
  std::string written;
  try {
    written = profile_to_yaml(load_profile(fuzz::as_file(data, size)));
  } catch (const InputError&) {
    return 0;
  }
  const std::string again = profile_to_yaml(
      load_profile(fuzz::as_file(reinterpret_cast<const uint8_t*>(written.data()), written.size())));
  if (again != written) {
    std::fprintf(stderr, "profile written, read and written again differs:\n%s\n---\n%s\n",
                 written.c_str(), again.c_str());
    std::abort();
  }
  return 0;
}
