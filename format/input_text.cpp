#include "format/input_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "format/errors.h"

namespace trainsim {

std::string read_input_text(const std::string& path, const std::string& what, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path, 0, "", "is a directory, not " + what);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  // Read in chunks up to one byte past the limit, so a character device or a FIFO that never
  // ends stops here rather than filling memory.
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw InputError(path, 0, "", "larger than " + std::to_string(max_bytes >> 20) + " MiB: not " + what);
    }
  }
  if (in.bad()) throw InputError(path, 0, "", std::string("cannot read: ") + std::strerror(errno));
  return text;
}

}  // namespace trainsim
