#include "format/run_row.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "format/atomic_write.h"
#include "format/csv.h"
#include "format/errors.h"
#include "format/memory_format.h"
#include "format/precision.h"

namespace trainsim {
namespace {

std::string system_error(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// Holds an exclusive flock for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(system_error("cannot open lock file", path));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const std::string message = system_error("cannot lock", path);
        ::close(fd_);
        throw std::runtime_error(message);
      }
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string number(const std::optional<double>& value) { return value ? number(*value) : std::string(); }

// The header's first line, or nullopt for a missing or empty file.
std::optional<std::string> read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string header;
  if (!std::getline(in, header) && header.empty()) return std::nullopt;
  return header;
}

// How many of the optional columns (precision, then memory_format) `header` (a file's first line)
// has; InputError for another header.
int optional_columns(const std::string& path, const std::string& header) {
  if (header == runs_header_with_memory_format()) return 2;
  if (header == runs_header_with_precision()) return 1;
  if (header != runs_header()) {
    throw InputError(path, 1, "header",
                     "expected '" + runs_header() + "' (its last column may be followed by " + kRunsPrecisionColumn +
                         " and " + kRunsMemoryFormatColumn + "), found '" + header + "'");
  }
  return 0;
}

// The optional columns a row needs: the memory format only with the precision before it.
int columns_needed(const RunRow& row) {
  if (row.memory_format != memory_format_name(MemoryFormat::kNchw)) return 2;
  return row.precision != precision_name(Precision::kFp32) ? 1 : 0;
}

// `content` (a file with `have` optional columns) with `want`: the header's, and in each row the
// value a row without the column had (`fp32`, `nchw`).
std::string with_columns(const std::string& content, int have, int want) {
  std::string fill;
  if (have < 1 && want >= 1) fill += std::string(",") + precision_name(Precision::kFp32);
  if (have < 2 && want >= 2) fill += std::string(",") + memory_format_name(MemoryFormat::kNchw);
  std::istringstream in(content);
  std::string out, line;
  std::getline(in, line);
  out = format_runs_header(want) + "\n";
  while (std::getline(in, line)) {
    if (!line.empty()) out += line + fill + "\n";
  }
  return out;
}

}  // namespace

void append_run_row(const std::string& path, const RunRow& row) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  FileLock lock(path + ".lock");

  std::string content;
  if (fs::exists(target)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(system_error("cannot read", path));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    content = buffer.str();
  }
  const int needed = columns_needed(row);
  if (content.empty()) content = format_runs_header(needed) + "\n";
  int columns = optional_columns(path, content.substr(0, content.find('\n')));
  if (content.back() != '\n') content += '\n';
  if (columns < needed) {
    content = with_columns(content, columns, needed);
    columns = needed;
  }
  // A row in a file with more optional columns than it needs: their values written out.
  content += format_run_row(row, columns) + "\n";

  write_file_atomic(path, content);
}

RunRow parse_run_row(const std::string& line) {
  std::vector<std::string> f;
  try {
    f = csv::split_line(line, "runs row", 1);
  } catch (const InputError& e) {
    throw std::invalid_argument("runs row: " + e.message() + ": " + line);
  }
  if (f.size() < kRunsColumns.size() || f.size() > kRunsColumns.size() + 2) {
    throw std::invalid_argument("runs row has " + std::to_string(f.size()) + " columns, not " +
                                std::to_string(kRunsColumns.size()) +
                                " (or one or two more, the precision and the memory format): " + line);
  }
  size_t column = 0;
  auto text = [&] { return f[column++]; };
  auto integer = [&](int64_t max) {
    const std::string& s = f[column++];
    int64_t value = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || error != std::errc() || end != s.data() + s.size() || value < 0 || value > max) {
      throw std::invalid_argument("runs row: '" + s + "' is not an integer in [0, " +
                                  std::to_string(max) + "]");
    }
    return value;
  };
  auto count = [&] { return static_cast<int>(integer(std::numeric_limits<int>::max())); };
  auto whole = [&] { return integer(std::numeric_limits<int64_t>::max()); };
  auto real = [&] {
    const std::string& s = f[column++];
    double value = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || error != std::errc() || end != s.data() + s.size()) {
      throw std::invalid_argument("runs row: '" + s + "' is not a number");
    }
    return value;
  };
  auto optional_real = [&]() -> std::optional<double> {
    if (f[column].empty()) {
      ++column;
      return std::nullopt;
    }
    return real();
  };
  RunRow r;
  r.strategy = text();
  r.gpus = count();
  r.batch_per_gpu = whole();
  r.loader_workers = count();
  r.train_samples = whole();
  r.epoch_s = real();
  r.train_s = real();
  r.loader_wait_s = real();
  r.iterations = whole();
  r.epochs = count();
  r.threads = count();
  r.device = text();
  r.data = text();
  r.final_loss = real();
  r.final_accuracy = real();
  r.samples_per_s = real();
  r.date = text();
  r.trainer = text();
  r.test_samples = whole();
  r.test_s = optional_real();
  r.probe_s = optional_real();
  r.load_before = optional_real();
  r.load_after = optional_real();
  if (column < f.size()) {
    r.precision = text();
    if (!parse_precision(r.precision)) {
      throw std::invalid_argument("runs row: precision '" + r.precision + "' is not one of " +
                                  std::string(kPrecisionNames));
    }
  }
  if (column < f.size()) {
    r.memory_format = text();
    if (!parse_memory_format(r.memory_format)) {
      throw std::invalid_argument("runs row: memory format '" + r.memory_format + "' is not one of " +
                                  std::string(kMemoryFormatNames));
    }
  }
  return r;
}

void check_runs_header(const std::string& path) {
  if (const auto header = read_header(path)) optional_columns(path, *header);
}

std::string format_runs_header(int extra) {
  return extra >= 2 ? runs_header_with_memory_format() : extra == 1 ? runs_header_with_precision() : runs_header();
}

std::string format_run_row(const RunRow& r) { return format_run_row(r, columns_needed(r)); }

std::string format_run_row(const RunRow& r, int extra) {
  std::ostringstream line;
  line << csv::field(r.strategy) << ',' << r.gpus << ',' << r.batch_per_gpu << ',' << r.loader_workers << ','
       << r.train_samples << ',' << number(r.epoch_s) << ',' << number(r.train_s) << ','
       << number(r.loader_wait_s) << ',' << r.iterations << ',' << r.epochs << ',' << r.threads
       << ',' << csv::field(r.device) << ',' << csv::field(r.data) << ',' << number(r.final_loss) << ','
       << number(r.final_accuracy) << ',' << number(r.samples_per_s) << ',' << csv::field(r.date) << ','
       << csv::field(r.trainer) << ','
       << r.test_samples << ',' << number(r.test_s) << ',' << number(r.probe_s) << ',' << number(r.load_before)
       << ',' << number(r.load_after);
  if (extra >= 1) line << ',' << csv::field(r.precision);
  if (extra >= 2) line << ',' << csv::field(r.memory_format);
  return line.str();
}

}  // namespace trainsim
