#pragma once
// Helpers for measure's command lines. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::measure {

// "32,128,512" -> {32, 128, 512}. Throws UsageError naming `flag` unless every item is an
// integer >= minimum (and the list is not empty).
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag,
                                    int64_t minimum = 1);
// "a,b" -> {"a", "b"}; empty items are dropped.
std::vector<std::string> split_list(const std::string& text);
// {32, 128} -> "32,128"
std::string join_ints(const std::vector<int64_t>& values);
// The command line as one string, arguments separated by spaces (quoted when they contain
// spaces), for the profile's measurement.command.
std::string join_command_line(int argc, const char* const* argv);

}  // namespace trainsim::measure
