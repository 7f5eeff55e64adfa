#pragma once
// The one way both programs read an input file (sweep config, profile, runs.csv, nccl-tests log)
// into memory: whole, at most kMaxInputBytes, every failure an InputError naming the file.

#include <cstddef>
#include <string>

namespace trainsim {

// No input trainsim reads is near this size (a 16,384-GPU sweep config is a few hundred bytes, a
// profile tens of KB); anything larger, /dev/zero included, is refused instead of read forever.
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;

// `what` names the kind of file for the messages ("a YAML file", "a runs file").
// Throws InputError(path, 0, "", ...) when `path` is a directory, cannot be opened or read, or
// holds more than max_bytes (kMaxInputBytes unless the kind of file needs more).
std::string read_input_text(const std::string& path, const std::string& what,
                            std::size_t max_bytes = kMaxInputBytes);

}  // namespace trainsim
