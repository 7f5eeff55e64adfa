#pragma once
// The one way trainsim writes a file that others read (profiles, predictions, reports, runs.csv
// rewrites, rank results, synthetic data): a reader sees the old file or the whole new one, never
// a torn one, and nothing planted at the temporary name is written through. Torch-free; used by
// both programs.

#include <stdexcept>
#include <string>

namespace trainsim {

// What() names the file and the system's reason, e.g. "cannot write out/x.csv: No space left".
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `content` to `path`: a new file beside it with an unpredictable name (mkstemp:
// PATH.tmp.XXXXXX, created exclusively, so a file or symbolic link already at that name is never
// followed), mode 0644, written and fsynced, then rename(2)d over `path`, then the folder fsynced
// so the rename survives a crash. The folder must exist. On failure the temporary file is
// removed and WriteError thrown.
void write_file_atomic(const std::string& path, const std::string& content);

// The same, written in pieces (a file too large to build in memory first): the temporary file is
// created at construction, appended to, and renamed over `path` by commit(); destroyed without
// commit() it is removed and `path` is untouched. Throws WriteError as write_file_atomic.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  void append(const std::string& data);
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void give_up(const std::string& what, const std::string& where, int error);

  std::string path_;
  std::string temp_;
  int fd_ = -1;
};

}  // namespace trainsim
