#pragma once
// Atomic text output for the large-batch commands: write_file_atomic (format/atomic_write.h) after
// creating missing parent folders, so a reader never sees a torn file. Torch-free.

#include <string>

namespace trainsim::measure {

// Creates missing parent folders. Throws std::runtime_error naming the path on failure.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace trainsim::measure
