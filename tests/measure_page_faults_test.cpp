// The page-fault probe (measure/profiler/page_faults.h, docs/MEASURE.md "Page faults"): the
// process's fault count moves when fresh memory is touched, a fault's cost is a real positive
// time, and the share of a timing is faults x cost / time.

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#include "profiler/page_faults.h"

namespace trainsim::measure::profiler {
namespace {

TEST(PageFaults, TouchingFreshPagesCountsAFaultPerPage) {
  constexpr std::size_t kBytes = std::size_t{16} << 20;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* bytes = static_cast<volatile char*>(memory);
  const int64_t before = minor_faults();
  for (std::size_t at = 0; at < kBytes; at += page) bytes[at] = 1;
  const int64_t faults = minor_faults() - before;
  munmap(memory, kBytes);
  // One a page, or fewer where the kernel maps huge pages (2 MiB: 8 for 16 MiB).
  EXPECT_GE(faults, 8);
  EXPECT_LE(faults, static_cast<int64_t>(kBytes / page) + 64);
}

TEST(PageFaults, AFaultCostsARealTime) {
  const double cost = page_fault_cost_s();
  EXPECT_GT(cost, 1e-8);  // no host maps a page in under 10 ns
  EXPECT_LT(cost, 1e-3);  // nor takes a millisecond
}

TEST(PageFaults, TheShareOfATiming) {
  EXPECT_DOUBLE_EQ(fault_share(600000, 8e-6, 10.0), 0.48);
  EXPECT_EQ(fault_share(0, 8e-6, 10.0), 0);  // none counted
  EXPECT_EQ(fault_share(600000, 0, 10.0), 0);  // cost not measured
  EXPECT_EQ(fault_share(600000, 8e-6, 0), 0);
}

}  // namespace
}  // namespace trainsim::measure::profiler
