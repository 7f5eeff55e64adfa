#pragma once
// Atomic text output for the large-batch commands: PATH.tmp.<pid>, flushed, then renamed over
// PATH, so a reader never sees a torn file. Torch-free.

#include <string>

namespace trainsim::measure {

// Creates missing parent folders. Throws std::runtime_error naming the path on failure.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace trainsim::measure
