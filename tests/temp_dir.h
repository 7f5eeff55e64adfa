#pragma once
// A fresh folder for one test under the system's temporary folder, removed with everything in it
// when the TempDir goes. mkdtemp gives a unique name even where a test's own name would not (a
// parameterised test's name holds a '/', which once left a folder per case behind; ctest runs
// tests in parallel).

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace trainsim::testing {

class TempDir {
 public:
  // The folder is named PREFIX-XXXXXX.
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a test that failed half-way may have left it partly removed
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainsim::testing
