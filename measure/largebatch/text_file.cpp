#include "largebatch/text_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace trainsim::measure {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error(path + ": cannot create its folder: " + ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (!out) throw std::runtime_error(tmp + ": cannot open for writing");
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const bool synced = std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  if (std::fclose(out) != 0 || !written || !synced) {
    std::remove(tmp.c_str());
    throw std::runtime_error(tmp + ": cannot write");
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename the temporary file over it: " + ec.message());
  }
}

}  // namespace trainsim::measure
