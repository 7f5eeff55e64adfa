#pragma once
// The discrete-event engine: a clock and a queue of events. Events run in the total order
// (time, priority, insertion sequence): lower time first, then lower priority value, then the
// event scheduled first. That order makes every run of the same input bit-identical.

#include <cstdint>
#include <vector>

#include "des/event_handler.h"
#include "des/time.h"

namespace trainsim::des {

class Engine {
 public:
  // Priorities break ties between events at the same time (lower runs first).
  static constexpr int kMinPriority = -32768;
  static constexpr int kMaxPriority = 32767;

  SimTime now() const { return now_; }

  // Schedules `handler` at absolute time `time` (>= now()). Throws std::logic_error for a time in
  // the past or a priority outside [kMinPriority, kMaxPriority].
  void schedule_at(SimTime time, EventHandler handler, int priority = 0);
  // Past kMaxTime: TimeRangeError.
  void schedule_after(SimTime delay, EventHandler handler, int priority = 0) {
    if (delay > kMaxTime - now_) throw TimeRangeError(out_of_range_message(to_seconds(now_) + to_seconds(delay)));
    schedule_at(now_ + delay, std::move(handler), priority);
  }

  // Runs events until the queue is empty or a handler calls stop().
  void run();
  // Runs every event with time <= `time`, then advances the clock to `time` (if it is later).
  void run_until(SimTime time);
  // Runs the next event; false when the queue is empty.
  bool step();
  // Makes run() return after the current event.
  void stop() { stopped_ = true; }

  // Moves the clock and every pending event `delta` (>= 0) into the future. The relative order of
  // pending events is unchanged. Used to skip whole periods of a periodic steady state.
  void shift_time(SimTime delta);

  std::size_t pending() const { return heap_.size(); }
  uint64_t events_processed() const { return processed_; }

 private:
  struct Entry {
    SimTime time;
    uint64_t order;  // (priority + 32768) << 47 | sequence: one integer compare breaks ties
    uint32_t slot;   // index of the handler in handlers_
  };
  static bool later(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time > b.time : a.order > b.order;
  }
  void push(Entry e);
  Entry pop();

  SimTime now_ = 0;
  uint64_t sequence_ = 0;
  uint64_t processed_ = 0;
  bool stopped_ = false;
  std::vector<Entry> heap_;              // binary min-heap on (time, order)
  std::vector<EventHandler> handlers_;   // slots; reused through free_slots_
  std::vector<uint32_t> free_slots_;
};

}  // namespace trainsim::des
