#pragma once
// Writing output files so that a reader never sees a torn file.

#include <stdexcept>
#include <string>

namespace trainsim::report {

// A file or directory the program could not write (not an input problem: exit code 1).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// trainsim::write_file_atomic (format/atomic_write.h) with its failure as an OutputError (exit 1).
void write_file_atomic(const std::string& path, const std::string& content);

// Creates `dir` and its parents if missing. Throws OutputError.
void create_directories(const std::string& dir);

}  // namespace trainsim::report
