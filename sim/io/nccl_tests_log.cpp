#include "io/nccl_tests_log.h"

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

#include "format/bounds.h"
#include "format/errors.h"
#include "format/input_text.h"

namespace trainsim {
namespace {

constexpr const char* kKey = "nccl-tests-log";

std::vector<std::string> tokens_of(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream in(line);
  for (std::string t; in >> t;) tokens.push_back(t);
  return tokens;
}

// Strips an mpirun output tag "[1,0]<stdout>:" (or "<stderr>:") at the start of a line.
std::string strip_mpi_prefix(const std::string& line) {
  if (line.empty() || line[0] != '[') return line;
  const auto close = line.find("]<std");
  if (close == std::string::npos) return line;
  const auto colon = line.find(">:", close);
  return colon == std::string::npos ? line : line.substr(colon + 2);
}

bool parse_number(const std::string& s, double& out) {
  errno = 0;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return errno == 0 && end != s.c_str() && *end == '\0';
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

CollectiveCurve parse_nccl_tests_log_text(const std::string& text, const std::string& name) {
  CollectiveCurve curve;
  curve.op = "all_reduce";
  std::set<int> ranks;
  // Column of the out-of-place time among a data line's tokens; the current nccl-tests layout
  // (size count type redop root time ...) until a column header says otherwise.
  size_t time_column = 5;
  // The older layout's `error` column is the largest difference from the expected result, not a
  // count of wrong elements: float32 sums differ by rounding (nccl-tests printed values like
  // 2e-07 for valid runs). Up to 1e-3 is rounding; more is a wrong result.
  bool error_column = false;
  std::istringstream in(text);
  std::string raw;
  int line_number = 0;
  int first_data_line = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string line = strip_mpi_prefix(raw);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      const auto tokens = tokens_of(line.substr(first + 1));
      if (tokens.size() >= 2 && tokens[0] == "Rank" && all_digits(tokens[1])) {
        if (tokens[1].size() > 7) {
          throw InputError(name, line_number, kKey, "rank " + tokens[1] + " is beyond any nccl-tests run");
        }
        ranks.insert(std::stoi(tokens[1]));
      } else if (!tokens.empty() && tokens[0] == "size") {
        for (size_t i = 0; i < tokens.size(); ++i) {
          if (tokens[i] == "time") {
            time_column = i;
            error_column = i + 3 < tokens.size() && tokens[i + 3] == "error";
            break;
          }
        }
      }
      continue;
    }
    const auto tokens = tokens_of(line);
    // NCCL INFO lines, warnings, ...; and lines of whitespace other than " \t\r" (a form feed).
    if (tokens.empty() || !all_digits(tokens[0])) continue;
    const auto fail = [&](const std::string& what) {
      throw InputError(name, line_number, kKey, what);
    };
    // time, algbw, busbw, #wrong of the out-of-place half
    if (tokens.size() < time_column + 4) {
      fail("data line has " + std::to_string(tokens.size()) + " columns, expected at least " +
           std::to_string(time_column + 4));
    }
    double bytes = 0;
    double time_us = 0;
    if (!parse_number(tokens[0], bytes) || bytes <= 0) fail("size '" + tokens[0] + "' is not a positive number");
    if (bytes > static_cast<double>(kMaxBytes)) fail("size " + tokens[0] + " is beyond 2^50 bytes (1 PiB): not a message nccl-tests sends");
    if (!parse_number(tokens[time_column], time_us) || time_us <= 0) {
      fail("out-of-place time '" + tokens[time_column] + "' is not a positive number of microseconds");
    }
    const std::string& wrong = tokens[time_column + 3];
    double wrong_count = 0;
    if (wrong != "N/A" && (!parse_number(wrong, wrong_count) || wrong_count > (error_column ? 1e-3 : 0))) {
      fail(error_column ? "out-of-place result is off by " + wrong + " (error column): the run is invalid"
                        : "out-of-place result has " + wrong + " wrong elements: the run is invalid");
    }
    if (!curve.points.empty() && bytes <= curve.points.back().bytes) {
      fail("sizes must ascend (" + tokens[0] + " after " +
           std::to_string(static_cast<int64_t>(curve.points.back().bytes)) + ")");
    }
    if (first_data_line == 0) first_data_line = line_number;
    curve.points.push_back({bytes, time_us * 1e-6});
  }
  if (curve.points.empty()) throw InputError(name, 0, kKey, "no data lines (size ... time ...) found");
  if (ranks.empty()) {
    throw InputError(name, first_data_line, kKey,
                     "no '#  Rank N ...' header lines: cannot tell how many ranks ran");
  }
  curve.ranks = static_cast<int>(ranks.size());
  return curve;
}

CollectiveCurve parse_nccl_tests_log(const std::string& path) {
  return parse_nccl_tests_log_text(read_input_text(path, "an nccl-tests log"), path);
}

}  // namespace trainsim
