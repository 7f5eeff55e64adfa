#pragma once
// Minor page faults (docs/MEASURE.md "Page faults"): a timing whose tensors are mapped afresh on
// every iteration pays the kernel's first touch of each page. glibc serves allocations of at least
// its mmap threshold (dynamic, capped at 32 MiB) with fresh mappings, so on a host whose faults are
// dear such a timing measures the allocator's state as much as the compute. `measure` records the
// faults of its fused-iteration timings and this host's cost of one, and warns where they weigh.

#include <cstdint>

namespace trainsim::measure::profiler {

// Minor page faults this process has taken so far (getrusage).
int64_t minor_faults();

// The seconds one minor fault costs on this host: fresh anonymous memory (64 MiB) touched one
// byte a page, the time over the faults the kernel counted for it; the median of 5 rounds. 0 where
// no round counted a fault.
double page_fault_cost_s();

// The share of an `iteration_s` timing that `faults` faults of `fault_s` each take (0 when either
// is not known).
double fault_share(double faults, double fault_s, double iteration_s);

// Above this share `measure` warns that a timing measures the allocator as much as the compute.
inline constexpr double kFaultShareWarning = 0.1;

}  // namespace trainsim::measure::profiler
