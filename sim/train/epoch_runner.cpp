#include "train/epoch_runner.h"

#include <algorithm>

namespace trainsim::train {

using des::SimTime;

std::optional<Periodicity> detect_period(const TimesWindow& times, int64_t k, int max_cycle, int min_window) {
  for (int c = 1; c <= max_cycle; ++c) {
    const int64_t window = std::max(min_window, 2 * c);
    if (k - window + 1 - c < 0) return std::nullopt;  // larger cycles need even more history
    const SimTime period = times[k].end - times[k - c].end;
    bool periodic = period > 0;
    for (int64_t i = k - window + 1; periodic && i <= k; ++i) {
      periodic = times[i].end - times[i - c].end == period && times[i].ready - times[i - c].ready == period;
    }
    if (periodic) return Periodicity{c, period};
  }
  return std::nullopt;
}

namespace {

void mix(uint64_t& digest, SimTime value) {
  for (int b = 0; b < 8; ++b) {
    digest ^= (static_cast<uint64_t>(value) >> (8 * b)) & 0xff;
    digest *= 1099511628211ull;
  }
}

}  // namespace

EpochTimeline run_epoch(TrainingGraph& graph, IterationGraph& iterations, bool exact,
                        int trace_iterations, const RetireOps& retire) {
  const int64_t n = iterations.iterations();
  const int64_t full = iterations.full_iterations();
  const int workers = iterations.loader_workers();
  const int max_cycle = std::max(2, 2 * workers);
  const int min_window = std::max(4, 2 * workers + 2);

  EpochTimeline t;
  TimesWindow times(static_cast<std::size_t>(std::max(min_window, 2 * max_cycle) + max_cycle + 1));
  SimTime previous_loop_end = 0;  // the loop asks for batch k when it finished iteration k - 1
  const auto stall_of = [&](int64_t k) { return times[k].ready - (k == 0 ? 0 : times[k - 1].loop_end); };

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
    IterationTimes& now = times[k];
    now.end = end;
    now.loop_end = graph.ops.end_time(current.loop_end);
    now.ready = graph.ops.end_time(current.batch_ready);
    if (k == 0) t.first = now;
    if (k == full - 1) t.last_full_end = now.end;
    t.epoch_end = now.end;
    t.loader_stall += now.ready - previous_loop_end;
    previous_loop_end = now.loop_end;
    mix(t.digest, now.end);
    mix(t.digest, now.loop_end);
    mix(t.digest, now.ready);
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
      t.steady = detect_period(times, k, max_cycle, min_window);
      if (t.steady) t.steady_at = k;
    }
    if (t.steady && !exact && t.skipped == 0 && k + 1 >= trace_iterations) {
      const int64_t c = t.steady->cycle;
      // Ops exist up to this batch; after the skip they must still stand for full batches.
      const int64_t built = std::max(k + 1, iterations.last_loader_batch_built());
      const int64_t cycles = built < full - 1 ? (full - 1 - built) / c : 0;
      if (cycles >= 1) {
        const int64_t skip = cycles * c;
        const SimTime shift = cycles * t.steady->period;
        graph.ops.fast_forward(shift, static_cast<int32_t>(k + 1), static_cast<int32_t>(skip));
        // A skipped iteration i has the times of i - c one period later. So each skipped cycle
        // waits for its batches as the last simulated cycle did, except its first iteration, whose
        // batch comes one period after that cycle's first and is asked for when the cycle before
        // it ended (loop_end of k, moved on by whole periods).
        SimTime cycle_stall = times[k - c + 1].ready + t.steady->period - times[k].loop_end;
        for (int64_t i = k - c + 2; i <= k; ++i) cycle_stall += stall_of(i);
        t.loader_stall += cycles * cycle_stall;
        // Iteration k + skip is iteration k `cycles` periods later. (The skip ends before the last
        // full iteration, so every time the epoch's figures take is simulated.)
        previous_loop_end = times[k].loop_end + shift;
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
