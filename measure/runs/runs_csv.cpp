#include "runs/runs_csv.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "io/atomic_write.h"
#include "io/errors.h"

namespace trainsim::measure {
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

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    fields.push_back(line.substr(start, end - start));
    if (end == std::string::npos) return fields;
    start = end + 1;
  }
}

// The header's first line, or nullopt for a missing or empty file.
std::optional<std::string> read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string header;
  if (!std::getline(in, header) && header.empty()) return std::nullopt;
  return header;
}

void require_header(const std::string& path, const std::string& header) {
  if (header != kRunsHeader) {
    throw InputError(path, 1, "header",
                     "expected '" + std::string(kRunsHeader) + "', found '" + header + "'");
  }
}

}  // namespace

RunRow parse_run_row(const std::string& line) {
  const auto f = split(line, ',');
  if (f.size() != kRunsColumns) {
    throw std::invalid_argument("runs row has " + std::to_string(f.size()) + " columns, not " +
                                std::to_string(kRunsColumns) + ": " + line);
  }
  size_t column = 0;
  auto text = [&] { return f[column++]; };
  auto integer = [&] {
    const std::string& s = f[column++];
    size_t used = 0;
    const long long value = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument("runs row: '" + s + "' is not an integer");
    return static_cast<int64_t>(value);
  };
  auto real = [&] {
    const std::string& s = f[column++];
    size_t used = 0;
    const double value = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument("runs row: '" + s + "' is not a number");
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
  r.gpus = static_cast<int>(integer());
  r.batch_per_gpu = integer();
  r.loader_workers = static_cast<int>(integer());
  r.train_samples = integer();
  r.epoch_s = real();
  r.train_s = real();
  r.loader_wait_s = real();
  r.iterations = integer();
  r.epochs = static_cast<int>(integer());
  r.threads = static_cast<int>(integer());
  r.device = text();
  r.data = text();
  r.final_loss = real();
  r.final_accuracy = real();
  r.samples_per_s = real();
  r.date = text();
  r.trainer = text();
  r.test_samples = integer();
  r.test_s = optional_real();
  r.probe_s = optional_real();
  r.load_before = optional_real();
  r.load_after = optional_real();
  return r;
}

void check_runs_header(const std::string& path) {
  if (const auto header = read_header(path)) require_header(path, *header);
}

std::string format_run_row(const RunRow& r) {
  std::ostringstream line;
  line << r.strategy << ',' << r.gpus << ',' << r.batch_per_gpu << ',' << r.loader_workers << ','
       << r.train_samples << ',' << number(r.epoch_s) << ',' << number(r.train_s) << ','
       << number(r.loader_wait_s) << ',' << r.iterations << ',' << r.epochs << ',' << r.threads
       << ',' << r.device << ',' << r.data << ',' << number(r.final_loss) << ','
       << number(r.final_accuracy) << ',' << number(r.samples_per_s) << ',' << r.date << ',' << r.trainer << ','
       << r.test_samples << ',' << number(r.test_s) << ',' << number(r.probe_s) << ',' << number(r.load_before)
       << ',' << number(r.load_after);
  return line.str();
}

void append_run_line(const std::string& path, const std::string& line) {
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
  if (content.empty()) {
    content = std::string(kRunsHeader) + "\n";
  } else {
    require_header(path, content.substr(0, content.find('\n')));
    if (content.back() != '\n') content += '\n';
  }
  content += line + "\n";

  write_file_atomic(path, content);
}

}  // namespace trainsim::measure
