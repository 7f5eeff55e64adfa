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

// Whether `header` (a file's first line) has the precision column; InputError for another header.
bool has_precision_column(const std::string& path, const std::string& header) {
  if (header == runs_header_with_precision()) return true;
  if (header != runs_header()) {
    throw InputError(path, 1, "header",
                     "expected '" + runs_header() + "' (its last column may be followed by " + kRunsPrecisionColumn +
                         "), found '" + header + "'");
  }
  return false;
}

// `content` (a file with runs_header()) with the precision column: the header's and `fp32` in each
// row, what a row of a file without the column was.
std::string with_precision_column(const std::string& content) {
  std::istringstream in(content);
  std::string out, line;
  std::getline(in, line);
  out = runs_header_with_precision() + "\n";
  while (std::getline(in, line)) {
    if (!line.empty()) out += line + ",fp32\n";
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
  const bool fp32 = row.precision == "fp32";
  if (content.empty()) content = (fp32 ? runs_header() : runs_header_with_precision()) + "\n";
  bool precision_column = has_precision_column(path, content.substr(0, content.find('\n')));
  if (content.back() != '\n') content += '\n';
  if (!precision_column && !fp32) {
    content = with_precision_column(content);
    precision_column = true;
  }
  // An fp32 row in a file with the column: the column's value written out.
  content += format_run_row(row) + (precision_column && fp32 ? ",fp32" : "") + "\n";

  write_file_atomic(path, content);
}

RunRow parse_run_row(const std::string& line) {
  std::vector<std::string> f;
  try {
    f = csv::split_line(line, "runs row", 1);
  } catch (const InputError& e) {
    throw std::invalid_argument("runs row: " + e.message() + ": " + line);
  }
  if (f.size() != kRunsColumns.size() && f.size() != kRunsColumns.size() + 1) {
    throw std::invalid_argument("runs row has " + std::to_string(f.size()) + " columns, not " +
                                std::to_string(kRunsColumns.size()) + " (or one more, the precision): " + line);
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
  return r;
}

void check_runs_header(const std::string& path) {
  if (const auto header = read_header(path)) has_precision_column(path, *header);
}

std::string format_run_row(const RunRow& r) {
  std::ostringstream line;
  line << csv::field(r.strategy) << ',' << r.gpus << ',' << r.batch_per_gpu << ',' << r.loader_workers << ','
       << r.train_samples << ',' << number(r.epoch_s) << ',' << number(r.train_s) << ','
       << number(r.loader_wait_s) << ',' << r.iterations << ',' << r.epochs << ',' << r.threads
       << ',' << csv::field(r.device) << ',' << csv::field(r.data) << ',' << number(r.final_loss) << ','
       << number(r.final_accuracy) << ',' << number(r.samples_per_s) << ',' << csv::field(r.date) << ','
       << csv::field(r.trainer) << ','
       << r.test_samples << ',' << number(r.test_s) << ',' << number(r.probe_s) << ',' << number(r.load_before)
       << ',' << number(r.load_after);
  if (r.precision != "fp32") line << ',' << csv::field(r.precision);
  return line.str();
}

}  // namespace trainsim
