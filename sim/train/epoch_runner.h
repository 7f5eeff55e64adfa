#pragma once
// Runs one epoch of an iteration graph, detecting the periodic steady state and skipping whole
// periods of it.
//
// Steady state: iteration k's end e_k (every rank done) and batch-ready time r_k (rank 0 has its
// batch) are recorded as simulated. The state is periodic with cycle c when, for every i in the
// last window(c) = max(max(4, 2W + 2), 2c) iterations, e_i - e_{i-c} and r_i - r_{i-c} equal the
// same P (integer ns): the window covers the loader's prefetch depth 2W, so the loader has settled
// too. c is searched from 1 to max(2, 2W) (W workers deliver in waves, so the pattern may repeat
// every few iterations rather than every one).
// Extrapolation: with the schedule periodic, skipping m whole cycles is exact: every pending
// event and every op of later iterations moves m*P later and m*c iterations on
// (OpScheduler::fast_forward). m is the largest count that keeps every op already built (the
// next iteration and the loader ops prefetched for later batches) on a full batch, so the last
// iterations -- the partial last batch, the loader running dry -- are always simulated.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "des/time.h"
#include "train/training_graph.h"

namespace trainsim::train {

struct Periodicity {
  int cycle = 0;           // iterations per repeat
  des::SimTime period = 0; // ns per repeat (one cycle)
};

// An iteration's times: every rank done (end), rank 0's training loop done (loop_end), rank 0
// has its batch (ready).
struct IterationTimes {
  des::SimTime end = -1;
  des::SimTime loop_end = -1;
  des::SimTime ready = -1;
};

// The last `size` iterations' times, by iteration index (older ones are overwritten): what the
// steady-state search looks back on, so an epoch's memory does not grow with its iterations.
class TimesWindow {
 public:
  explicit TimesWindow(std::size_t size) : times_(size) {}
  IterationTimes& operator[](int64_t k) { return times_[static_cast<std::size_t>(k) % times_.size()]; }
  const IterationTimes& operator[](int64_t k) const { return times_[static_cast<std::size_t>(k) % times_.size()]; }
  std::size_t size() const { return times_.size(); }

 private:
  std::vector<IterationTimes> times_;
};

// The smallest cycle c in [1, max_cycle] for which the iterations in (k - window(c), k] repeat
// (see above), or nullopt. `times` must hold iterations k - max(min_window, 2 max_cycle) -
// max_cycle + 1 .. k.
std::optional<Periodicity> detect_period(const TimesWindow& times, int64_t k, int max_cycle, int min_window);

// What an epoch's figures need of its iterations' times, kept as they are simulated (the
// per-iteration times themselves are not kept).
struct EpochTimeline {
  IterationTimes first;              // iteration 0
  des::SimTime last_full_end = -1;   // end of the last full iteration (full_iterations() - 1)
  des::SimTime epoch_end = -1;       // end of the last iteration
  // The loop's wait for its batches: the sum over k of ready(k) - loop_end(k - 1) (0 for k = 0).
  des::SimTime loader_stall = 0;
  // FNV-1a over every simulated iteration's (end, loop_end, ready), for comparing two timelines.
  uint64_t digest = 14695981039346656037ull;
  std::optional<Periodicity> steady;
  int64_t steady_at = -1;       // iteration at which the steady state was recognised
  int64_t skipped_from = -1;    // first skipped iteration
  int64_t skipped = 0;          // iterations skipped (whole cycles)
  int64_t simulated_iterations = 0;
};

// Called with a done prefix [first, last) of the held ops just before they are released.
using RetireOps = std::function<void(des::OpId first, des::OpId last)>;

// exact: never skip. trace_iterations: iterations [0, trace_iterations) are always simulated.
// retire (optional): every kRetireEvery simulated iterations the ops done so far (a prefix in id
// order) are handed to it and released from graph.ops, so the ops held stay those in flight.
inline constexpr int64_t kRetireEvery = 64;
EpochTimeline run_epoch(TrainingGraph& graph, IterationGraph& iterations, bool exact,
                        int trace_iterations, const RetireOps& retire = {});

}  // namespace trainsim::train
