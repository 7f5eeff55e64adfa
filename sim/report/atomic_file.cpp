#include "report/atomic_file.h"

#include <filesystem>

#include "format/atomic_write.h"

namespace trainsim::report {

void write_file_atomic(const std::string& path, const std::string& content) {
  try {
    trainsim::write_file_atomic(path, content);
  } catch (const WriteError& e) {
    throw OutputError(e.what());
  }
}

void create_directories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw OutputError("cannot create directory " + dir + ": " + error.message());
}

}  // namespace trainsim::report
