#include "train/epoch_runner.h"

#include <algorithm>

namespace trainsim::train {

using des::SimTime;

std::optional<Periodicity> detect_period(const std::vector<SimTime>& end,
                                         const std::vector<SimTime>& ready, int64_t k,
                                         int max_cycle, int min_window) {
  for (int c = 1; c <= max_cycle; ++c) {
    const int64_t window = std::max(min_window, 2 * c);
    if (k - window + 1 - c < 0) return std::nullopt;  // larger cycles need even more history
    const auto idx = [](int64_t i) { return static_cast<std::size_t>(i); };
    const SimTime period = end[idx(k)] - end[idx(k - c)];
    bool periodic = period > 0;
    for (int64_t i = k - window + 1; periodic && i <= k; ++i) {
      periodic = end[idx(i)] - end[idx(i - c)] == period &&
                 ready[idx(i)] - ready[idx(i - c)] == period;
    }
    if (periodic) return Periodicity{c, period};
  }
  return std::nullopt;
}

EpochTimeline run_epoch(TrainingGraph& graph, IterationGraph& iterations, bool exact,
                        int trace_iterations, const RetireOps& retire) {
  const int64_t n = iterations.iterations();
  const int64_t full = iterations.full_iterations();
  const int workers = iterations.loader_workers();
  const int max_cycle = std::max(2, 2 * workers);
  const int min_window = std::max(4, 2 * workers + 2);
  const auto idx = [](int64_t i) { return static_cast<std::size_t>(i); };

  EpochTimeline t;
  t.end.assign(idx(n), -1);
  t.loop_end.assign(idx(n), -1);
  t.ready.assign(idx(n), -1);

  // One iteration is always built ahead: iteration k+1's first ops depend only on iteration k's
  // last ones, so nothing of k+2 can be due before k ends.
  IterationOps current = iterations.add_iteration(0);
  IterationOps next;
  if (n > 1) next = iterations.add_iteration(1);
  for (int64_t k = 0; k < n;) {
    SimTime end = 0;
    for (des::OpId op : current.end_ops) {
      graph.ops.run_until_done(op);
      end = std::max(end, graph.ops.end_time(op));
    }
    t.end[idx(k)] = end;
    t.loop_end[idx(k)] = graph.ops.end_time(current.loop_end);
    t.ready[idx(k)] = graph.ops.end_time(current.batch_ready);
    ++t.simulated_iterations;
    if (retire && t.simulated_iterations % kRetireEvery == 0) {
      // Not the next iteration's ops, whose times are read when it is recorded (its batch may
      // have been ready long ago).
      des::OpId last = graph.ops.done_prefix_end();
      for (des::OpId op : next.end_ops) last = std::min(last, op);
      for (des::OpId op : {next.loop_end, next.batch_ready}) {
        if (op != des::kNoOp) last = std::min(last, op);
      }
      const des::OpId first = graph.ops.first_op();
      if (last > first) {
        retire(first, last);
        graph.ops.release_before(last);
      }
    }

    if (!t.steady) {
      t.steady = detect_period(t.end, t.ready, k, max_cycle, min_window);
      if (t.steady) t.steady_at = k;
    }
    if (t.steady && !exact && t.skipped == 0 && k + 1 >= trace_iterations) {
      const int64_t c = t.steady->cycle;
      // Ops exist up to this batch; after the skip they must still stand for full batches.
      const int64_t built = std::max(k + 1, iterations.last_loader_batch_built());
      const int64_t cycles = built < full - 1 ? (full - 1 - built) / c : 0;
      if (cycles >= 1) {
        const int64_t skip = cycles * c;
        graph.ops.fast_forward(cycles * t.steady->period, static_cast<int32_t>(k + 1),
                               static_cast<int32_t>(skip));
        for (int64_t i = k + 1; i <= k + skip; ++i) {
          t.end[idx(i)] = t.end[idx(i - c)] + t.steady->period;
          t.loop_end[idx(i)] = t.loop_end[idx(i - c)] + t.steady->period;
          t.ready[idx(i)] = t.ready[idx(i - c)] + t.steady->period;
        }
        t.skipped_from = k + 1;
        t.skipped = skip;
        k += skip;
      }
    }
    ++k;
    if (k >= n) break;
    current = std::move(next);
    if (k + 1 < n) next = iterations.add_iteration(k + 1);
  }
  return t;
}

}  // namespace trainsim::train
