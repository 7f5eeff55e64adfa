#pragma once
// Typed errors. Library code throws; only main() catches, prints one line and exits 2.

#include <stdexcept>
#include <string>

namespace trainsim {

// A problem in an input file (sweep config, profile, runs.csv).
// what() is the one line users see: "FILE:LINE: key.path: message".
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int line, std::string key, std::string message)
      : std::runtime_error(format(file, line, key, message)),
        file_(std::move(file)), line_(line), key_(std::move(key)), message_(std::move(message)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when the file could not be read at all
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }

 private:
  static std::string format(const std::string& file, int line, const std::string& key,
                            const std::string& message) {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) s += key + ": ";
    return s + message;
  }
  std::string file_;
  int line_;
  std::string key_;
  std::string message_;
};

// A profile whose values are each valid but do not fit together, found while simulating (e.g. a
// training loop faster than half its timed parts). Reported against the config's `profile:` key.
class ProfileInconsistency : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim
