#pragma once
// Helpers for measure's command lines. Torch-free.

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::measure {

// "32,128,512" -> {32, 128, 512}. Throws UsageError naming `flag` unless every item is an
// integer >= minimum (and the list is not empty), and with `distinct` unless no value repeats
// (a batch given twice would be measured once: "--batches: 32 is given twice").
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag,
                                    int64_t minimum = 1, bool distinct = false);
// Parses args[1..] (args[0] names the subcommand) with `flags`, notify included. A bad flag
// throws UsageError(prefix + what boost said), e.g. prefix "train: ".
boost::program_options::variables_map parse_flags(const std::vector<std::string>& args,
                                                  const boost::program_options::options_description& flags,
                                                  const std::string& prefix);
// `value` of flag --`flag`, or UsageError "--flag: V is below the minimum M".
int64_t at_least(const char* flag, int64_t value, int64_t minimum);
// The same, also rejecting values above 1,000,000 (counts stored as int: ranks, threads...).
int bounded_int(const char* flag, int64_t value, int64_t minimum);
// `value` of flag --`flag`, or UsageError "--flag: V must be finite and >= 0".
double finite_non_negative(const char* flag, double value);
// Whether args[1..] hold --help or -h (a subcommand prints its help whatever else is given).
bool asks_for_help(const std::vector<std::string>& args);
// "a,b" -> {"a", "b"}; empty items are dropped.
std::vector<std::string> split_list(const std::string& text);
// {32, 128} -> "32,128"
std::string join_ints(const std::vector<int64_t>& values);
// The first line of an error message: LibTorch's errors carry multi-line backtraces, and every
// error of measure (its own or a rank's) is one line.
std::string first_line(const std::string& text);
// The command line as one string, arguments separated by spaces (quoted when they contain
// spaces), for the profile's measurement.command.
std::string join_command_line(int argc, const char* const* argv);

}  // namespace trainsim::measure
