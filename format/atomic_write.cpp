#include "format/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainsim {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw WriteError("cannot " + what + " " + path + ": " + std::strerror(error));
}

// The folder that holds `path` ("." for a bare file name).
std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  std::string temp = path_ + ".tmp.XXXXXX";
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());  // O_CREAT | O_EXCL, mode 0600
  if (fd_ < 0) fail("create a temporary file for", path_, errno);
  temp_ = name.data();
  if (::fchmod(fd_, 0644) != 0) give_up("set the mode of", temp_, errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFileWriter::give_up(const std::string& what, const std::string& where, int error) {
  ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  fail(what, where, error);
}

void AtomicFileWriter::append(const std::string& data) {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter: append after commit");
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("write", temp_, errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter: commit twice");
  if (::fsync(fd_) != 0) give_up("write", temp_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp_.c_str());
    fail("write", temp_, error);
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp_.c_str());
    fail("rename " + temp_ + " to", path_, error);
  }
  // The rename itself made durable (best effort: some file systems refuse fsync on folders, and
  // the data is on disk already).
  const int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFileWriter file(path);
  file.append(content);
  file.commit();
}

}  // namespace trainsim
