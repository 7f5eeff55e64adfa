#include "io/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
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

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string temp = path + ".tmp.XXXXXX";
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());  // O_CREAT | O_EXCL, mode 0600
  if (fd < 0) fail("create a temporary file for", path, errno);
  temp = name.data();
  const auto give_up = [&](const std::string& what, const std::string& where, int error) {
    ::close(fd);
    ::unlink(temp.c_str());
    fail(what, where, error);
  };
  if (::fchmod(fd, 0644) != 0) give_up("set the mode of", temp, errno);
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("write", temp, errno);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) give_up("write", temp, errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("write", temp, error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("rename " + temp + " to", path, error);
  }
  // The rename itself made durable (best effort: some file systems refuse fsync on folders, and
  // the data is on disk already).
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace trainsim
