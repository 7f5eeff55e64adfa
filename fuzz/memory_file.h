#pragma once
// A fuzz input handed to a reader that takes a path: the bytes are written into one anonymous
// in-memory file (memfd_create) and read back through /proc/self/fd/N, so a run of millions of
// inputs touches no disk and leaves nothing behind.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

namespace trainsim::fuzz {

// The path of a file holding exactly data[0, size). Aborts (a harness failure, not a finding)
// when the kernel refuses the memory file.
inline std::string as_file(const uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("trainsim-fuzz-input", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) {
    std::perror("trainsim fuzz: memfd");
    std::abort();
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) {
      std::perror("trainsim fuzz: pwrite");
      std::abort();
    }
    done += static_cast<std::size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace trainsim::fuzz
