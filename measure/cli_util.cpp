#include "cli_util.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "usage_error.h"

namespace trainsim::measure {

bool asks_for_help(const std::vector<std::string>& args) {
  return args.size() > 1 && (std::find(args.begin() + 1, args.end(), "--help") != args.end() ||
                             std::find(args.begin() + 1, args.end(), "-h") != args.end());
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    if (first != std::string::npos) items.push_back(item.substr(first, last - first + 1));
  }
  return items;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag,
                                    int64_t minimum, bool distinct) {
  std::vector<int64_t> values;
  for (const auto& item : split_list(text)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (errno != 0 || end == item.c_str() || *end != '\0' || v < minimum) {
      throw UsageError(flag + ": '" + item + "' is not an integer >= " + std::to_string(minimum));
    }
    if (distinct && std::find(values.begin(), values.end(), v) != values.end()) {
      throw UsageError(flag + ": " + std::to_string(v) + " is given twice");
    }
    values.push_back(v);
  }
  if (values.empty()) throw UsageError(flag + ": empty list");
  return values;
}

std::string join_ints(const std::vector<int64_t>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s;
}

std::string join_command_line(int argc, const char* const* argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i) s += ' ';
    s += arg.find(' ') == std::string::npos ? arg : "'" + arg + "'";
  }
  return s;
}

boost::program_options::variables_map parse_flags(const std::vector<std::string>& args,
                                                  const boost::program_options::options_description& flags,
                                                  const std::string& prefix) {
  namespace po = boost::program_options;
  po::variables_map vm;
  try {
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    po::store(po::command_line_parser(rest).options(flags).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(prefix + e.what());
  }
  return vm;
}

int64_t at_least(const char* flag, int64_t value, int64_t minimum) {
  if (value < minimum) {
    throw UsageError(std::string("--") + flag + ": " + std::to_string(value) + " is below the minimum " +
                     std::to_string(minimum));
  }
  return value;
}

int bounded_int(const char* flag, int64_t value, int64_t minimum) {
  at_least(flag, value, minimum);
  if (value > 1'000'000) throw UsageError(std::string("--") + flag + ": " + std::to_string(value) + " is too large");
  return static_cast<int>(value);
}

double finite_non_negative(const char* flag, double value) {
  if (!std::isfinite(value) || value < 0) {
    throw UsageError(std::string("--") + flag + ": " + std::to_string(value) + " must be finite and >= 0");
  }
  return value;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace trainsim::measure
