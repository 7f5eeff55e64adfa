#pragma once
// Removes a folder and everything in it (or one file), without std::filesystem::remove_all.
//
// Why: the PyTorch wheels' libtorch_cpu.so exports a statically linked copy of libstdc++'s
// filesystem internals (pytorch/pytorch#133437). libstdc++'s own remove_all walks the tree with
// recursive_directory_iterator, whose exported symbols a program linked with that libtorch
// resolves to libtorch's copy, and the two halves disagree: with LibTorch 2.11 on the GPU machine
// every removal of a temporary folder crashed (measure train's DDP launcher after its epochs, the
// collective benchmark, every test that cleaned up a folder). nftw(3) walks depth first without
// following symbolic links; remove(3) deletes files and the then-empty folders.

#include <ftw.h>

#include <cstdio>
#include <string>

namespace trainsim::measure {

// True when everything is gone (false also when `path` did not exist).
inline bool remove_tree(const std::string& path) noexcept {
  const auto remove_one = [](const char* name, const struct stat*, int, struct FTW*) -> int {
    return std::remove(name) == 0 ? 0 : -1;
  };
  return nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

}  // namespace trainsim::measure
