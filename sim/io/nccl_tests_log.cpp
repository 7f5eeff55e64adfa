#include "io/nccl_tests_log.h"

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>
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

// A root as nccl-tests prints it: -1 (no root) or a rank.
bool is_root(const std::string& s) { return s == "-1" || (all_digits(s) && s.size() <= 7); }

// Bytes per element of nccl-tests' type names (src/common.cu test_typenames); 0: not one of them.
int type_bytes(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "f8e4m3" || type == "f8e5m2") return 1;
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "int32" || type == "uint32" || type == "float") return 4;
  if (type == "int64" || type == "uint64" || type == "double") return 8;
  return 0;
}

// The nccl-tests binaries; the first five are the collectives trainsim models.
const char* const kBinaries[] = {"all_reduce",    "all_gather", "reduce_scatter", "broadcast", "reduce",
                                 "alltoall",      "alltoallv",  "sendrecv",       "gather",    "scatter",
                                 "hypercube"};
constexpr int kModelled = 5;

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The nccl-tests binaries a line names as words ("all_gather_perf", "./build/broadcast_perf", or
// an MPI build's "all_gather_perf_mpi").
std::vector<std::string> binaries_named(const std::string& line) {
  std::vector<std::string> out;
  constexpr std::string_view kSuffix = "_perf";
  constexpr std::string_view kMpi = "_mpi";
  for (auto at = line.find(kSuffix); at != std::string::npos; at = line.find(kSuffix, at + 1)) {
    auto end = at + kSuffix.size();
    if (line.compare(end, kMpi.size(), kMpi) == 0) end += kMpi.size();
    if (end < line.size() && identifier_char(line[end])) continue;
    auto begin = at;
    while (begin > 0 && identifier_char(line[begin - 1])) --begin;
    const std::string word = line.substr(begin, at - begin);
    for (const char* binary : kBinaries) {
      if (word == binary) out.push_back(word);
    }
  }
  return out;
}

// What a data line says of its collective: the printed size and count, the type's bytes, the
// reduction ("" without a redop column) and the root (-1: none or no root column).
struct LineShape {
  int line = 0;
  double bytes = 0;
  double count = 0;
  int element_bytes = 0;
  std::string redop;
  int root = -1;
};

// The collective a data line's columns describe on `ranks` ranks (src/<op>.cu's byte counts:
// the size printed is the larger buffer, the count the per-call elements): rooted without a
// reduction a broadcast, with one a reduce; unrooted with size = count x type bytes an all-reduce
// (a reduction), with size = count x type bytes x ranks an all-gather (none) or a reduce-scatter.
// "" where the columns do not decide.
std::string op_of(const LineShape& s, int ranks) {
  const bool reduces = !s.redop.empty() && s.redop != "none";
  if (s.root >= 0) return reduces ? "reduce" : "broadcast";
  if (s.element_bytes == 0) return "";
  const double per_call = s.count * s.element_bytes;
  if (ranks > 1 && s.bytes == per_call * ranks) return reduces ? "reduce_scatter" : "all_gather";
  if (s.bytes == per_call && reduces) return "all_reduce";
  return "";
}

}  // namespace

CollectiveCurve parse_nccl_tests_log_text(const std::string& text, const std::string& name) {
  CollectiveCurve curve;
  std::set<int> ranks;
  // Columns among a data line's tokens; the current nccl-tests layout (size count type redop root
  // time ...) until a column header says otherwise. -1: the layout has no such column.
  size_t time_column = 5;
  int redop_column = 3;
  int root_column = 4;
  // The older layout's `error` column is the largest difference from the expected result, not a
  // count of wrong elements: float32 sums differ by rounding (nccl-tests printed values like
  // 2e-07 for valid runs). Up to 1e-3 is rounding; more is a wrong result.
  bool error_column = false;
  // The binary the text names ("# Collective test starting: all_gather_perf", a command line).
  std::string named;
  int named_line = 0;
  std::vector<LineShape> shapes;
  std::istringstream in(text);
  std::string raw;
  int line_number = 0;
  int first_data_line = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string line = strip_mpi_prefix(raw);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto fail = [&](const std::string& what) { throw InputError(name, line_number, kKey, what); };
    for (const std::string& binary : binaries_named(line)) {
      if (!named.empty() && binary != named) {
        fail("names " + binary + "_perf after " + named + "_perf (line " + std::to_string(named_line) +
             "): one log is one collective");
      }
      named = binary;
      named_line = line_number;
    }
    if (line[first] == '#') {
      const auto tokens = tokens_of(line.substr(first + 1));
      if (tokens.size() >= 4 && tokens[0] == "nThread" && tokens[2] == "nGpus" && all_digits(tokens[3]) &&
          tokens[3].size() <= 7) {
        curve.gpus_per_thread = std::stoi(tokens[3]);
      } else if (tokens.size() >= 2 && tokens[0] == "Rank" && all_digits(tokens[1])) {
        if (tokens[1].size() > 7) fail("rank " + tokens[1] + " is beyond any nccl-tests run");
        ranks.insert(std::stoi(tokens[1]));
      } else if (!tokens.empty() && tokens[0] == "size") {
        redop_column = root_column = -1;
        for (size_t i = 0; i < tokens.size(); ++i) {
          if (tokens[i] == "redop") redop_column = static_cast<int>(i);
          if (tokens[i] == "root") root_column = static_cast<int>(i);
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
    // Some nccl-tests releases print no root (-1) as blanks: the columns after it move left.
    size_t time_at = time_column;
    int root_at = root_column;
    if (root_column >= 0 && static_cast<size_t>(root_column) < tokens.size() && !is_root(tokens[root_column])) {
      --time_at;
      root_at = -1;
    }
    // time, algbw, busbw, #wrong of the out-of-place half
    if (tokens.size() < time_at + 4) {
      fail("data line has " + std::to_string(tokens.size()) + " columns, expected at least " +
           std::to_string(time_at + 4));
    }
    LineShape shape;
    shape.line = line_number;
    double time_us = 0;
    if (!parse_number(tokens[0], shape.bytes)) fail("size '" + tokens[0] + "' is not a number");
    // A size below one element per rank: nccl-tests prints 0 bytes, and nothing was moved.
    if (shape.bytes == 0) continue;
    if (shape.bytes > static_cast<double>(kMaxBytes)) fail("size " + tokens[0] + " is beyond 2^50 bytes (1 PiB): not a message nccl-tests sends");
    if (!parse_number(tokens[time_at], time_us) || time_us <= 0) {
      fail("out-of-place time '" + tokens[time_at] + "' is not a positive number of microseconds");
    }
    const std::string& wrong = tokens[time_at + 3];
    double wrong_count = 0;
    if (wrong != "N/A" && (!parse_number(wrong, wrong_count) || wrong_count > (error_column ? 1e-3 : 0))) {
      fail(error_column ? "out-of-place result is off by " + wrong + " (error column): the run is invalid"
                        : "out-of-place result has " + wrong + " wrong elements: the run is invalid");
    }
    if (!curve.points.empty() && shape.bytes <= curve.points.back().bytes) {
      fail("sizes must ascend (" + tokens[0] + " after " +
           std::to_string(static_cast<int64_t>(curve.points.back().bytes)) + ")");
    }
    if (!parse_number(tokens[1], shape.count)) shape.count = -1;
    shape.element_bytes = type_bytes(tokens[2]);
    if (redop_column >= 0 && static_cast<size_t>(redop_column) < time_at) shape.redop = tokens[redop_column];
    if (root_at >= 0 && static_cast<size_t>(root_at) < time_at) shape.root = std::stoi(tokens[root_at]);
    if (first_data_line == 0) first_data_line = line_number;
    shapes.push_back(shape);
    curve.points.push_back({shape.bytes, time_us * 1e-6});
  }
  if (curve.points.empty()) throw InputError(name, 0, kKey, "no data lines (size ... time ...) found");
  if (ranks.empty()) {
    throw InputError(name, first_data_line, kKey,
                     "no '#  Rank N ...' header lines: cannot tell how many ranks ran");
  }
  curve.ranks = static_cast<int>(ranks.size());
  // The collective: the columns' reading, checked against the binary the text names.
  const auto modelled = [](const std::string& op) {
    for (int i = 0; i < kModelled; ++i) {
      if (op == kBinaries[i]) return true;
    }
    return false;
  };
  if (!named.empty() && !modelled(named)) {
    throw InputError(name, named_line, kKey,
                     named + "_perf is not a collective trainsim models (all_reduce, all_gather, reduce_scatter, "
                             "broadcast, reduce)");
  }
  for (const LineShape& s : shapes) {
    const std::string op = op_of(s, curve.ranks);
    const auto fail = [&](const std::string& what) { throw InputError(name, s.line, kKey, what); };
    if (!named.empty() && !op.empty() && op != named) {
      // all_gather_perf and alltoall_perf print the same columns; the text named the binary.
      fail("the columns are those of " + op + "_perf, but line " + std::to_string(named_line) + " names " + named +
           "_perf");
    }
    if (named.empty() && op.empty()) {
      fail("cannot tell which collective this is from its columns (size, count, type, redop, root): name the "
           "binary in a comment line, e.g. '# all_reduce_perf'");
    }
    if (named.empty() && op == "all_gather") {
      fail("the columns fit all_gather_perf and alltoall_perf alike: name the binary in a comment line, e.g. "
           "'# all_gather_perf'");
    }
    if (curve.op.empty()) curve.op = op.empty() ? named : op;
    if (!op.empty() && op != curve.op) fail("the columns are those of " + op + "_perf after " + curve.op + "_perf's");
  }
  return curve;
}

CollectiveCurve parse_nccl_tests_log(const std::string& path) {
  return parse_nccl_tests_log_text(read_input_text(path, "an nccl-tests log"), path);
}

}  // namespace trainsim
