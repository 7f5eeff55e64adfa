#include "largebatch/text_file.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "format/atomic_write.h"

namespace trainsim::measure {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error(path + ": cannot create its folder: " + ec.message());
  write_file_atomic(path, text);
}

}  // namespace trainsim::measure
