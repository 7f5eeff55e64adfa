#include "profiler/page_faults.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace trainsim::measure::profiler {

int64_t minor_faults() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) throw std::runtime_error("getrusage failed");
  return static_cast<int64_t>(usage.ru_minflt);
}

double page_fault_cost_s() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  constexpr int kRounds = 5;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<double> per_fault;
  for (int round = 0; round < kRounds; ++round) {
    void* memory = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("page fault probe: mmap of 64 MiB failed");
    auto* bytes = static_cast<volatile char*>(memory);
    const int64_t before = minor_faults();
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t at = 0; at < kBytes; at += page) bytes[at] = 1;
    const auto end = std::chrono::steady_clock::now();
    const int64_t faults = minor_faults() - before;
    munmap(memory, kBytes);
    if (faults > 0) {
      per_fault.push_back(std::chrono::duration<double>(end - start).count() / static_cast<double>(faults));
    }
  }
  if (per_fault.empty()) return 0;
  std::nth_element(per_fault.begin(), per_fault.begin() + per_fault.size() / 2, per_fault.end());
  return per_fault[per_fault.size() / 2];
}

double fault_share(double faults, double fault_s, double iteration_s) {
  if (!(faults > 0) || !(fault_s > 0) || !(iteration_s > 0)) return 0;
  return faults * fault_s / iteration_s;
}

}  // namespace trainsim::measure::profiler
