#pragma once
// The discrete-event engine: a clock and a queue of events. Events run in the total order
// (time, priority, insertion sequence): lower time first, then lower priority value, then the
// event scheduled first. That order makes every run of the same input bit-identical.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

  // Schedules `handler` (any void() callable, or an EventHandler) at absolute time `time`
  // (>= now()); the callable is built in its slot. Throws std::logic_error for a time in the past
  // or a priority outside [kMinPriority, kMaxPriority].
  template <typename F>
  void schedule_at(SimTime time, F&& handler, int priority = 0) {
    if (time < now_ || priority < kMinPriority || priority > kMaxPriority) throw_bad_event(time, priority);
    const uint32_t slot = acquire_slot();
    try {
      handler_at(slot).emplace(std::forward<F>(handler));
      push(time, (static_cast<uint64_t>(priority - kMinPriority) << kSequenceBits) | sequence_, slot);
    } catch (...) {
      release_slot(slot);
      throw;
    }
    ++sequence_;
  }
  // Past kMaxTime: TimeRangeError.
  template <typename F>
  void schedule_after(SimTime delay, F&& handler, int priority = 0) {
    if (delay > kMaxTime - now_) throw TimeRangeError(out_of_range_message(to_seconds(now_) + to_seconds(delay)));
    schedule_at(now_ + delay, std::forward<F>(handler), priority);
  }

  // Runs events until the queue is empty or a handler calls stop().
  void run();
  // Runs every event with time <= `time`, then advances the clock to `time` (if it is later).
  void run_until(SimTime time);
  // Runs the next event; false when the queue is empty. Not from inside a handler
  // (std::logic_error).
  bool step();
  // Makes run() return after the current event.
  void stop() { stopped_ = true; }

  // Moves the clock and every pending event `delta` (>= 0) into the future. The relative order of
  // pending events is unchanged. Used to skip whole periods of a periodic steady state.
  void shift_time(SimTime delta);

  std::size_t pending() const { return heap_.size() - (top_running_ ? 1 : 0); }
  uint64_t events_processed() const { return processed_; }

 private:
  struct Entry {
    SimTime time;
    uint64_t order;  // (priority + 32768) << 47 | sequence: one integer compare breaks ties
    uint32_t slot;   // index of the handler in the slot chunks
  };
  // (time, order) as one 128-bit number (time >= 0): one compare and no branch on equal times,
  // which BM_engine/1024 measured 22 -> 26 M events/s.
  __extension__ using Key = unsigned __int128;  // GCC and Clang: __extension__ keeps -Wpedantic quiet
  static Key key(const Entry& e) { return (static_cast<Key>(static_cast<uint64_t>(e.time)) << 64) | e.order; }
  static bool later(const Entry& a, const Entry& b) { return key(a) > key(b); }
  static constexpr int kSequenceBits = 47;  // 1.4e14 events per run before the sequence would overflow
  // A free handler slot (a freed one first); release_slot empties it and frees it again.
  uint32_t acquire_slot();
  void release_slot(uint32_t slot) noexcept;
  [[noreturn]] void throw_bad_event(SimTime time, int priority) const;
  // Handlers live in chunks that never move, so a handler runs in its slot while it schedules
  // more events (which may add chunks).
  static constexpr uint32_t kChunkBits = 8;
  EventHandler& handler_at(uint32_t slot) {
    return chunks_[slot >> kChunkBits][slot & ((1u << kChunkBits) - 1)];
  }
  // The entry's parts as scalars: an Entry passed by value went through the stack, built with two
  // 8-byte stores and read back with one 16-byte load, which stalls store forwarding.
  void push(SimTime time, uint64_t order, uint32_t slot);
  // Sifts the entry (time, order, slot) down from the root (the root's old entry is gone); scalars
  // for the reason push takes them.
  void sift_down_from_root(SimTime time, uint64_t order, uint32_t slot);

  // While a handler runs, its own entry stays at the root of the heap (top_running_): the first
  // event the handler schedules takes that place and sifts down once, instead of a pop's sift-down
  // and a push's sift-up (most handlers schedule exactly one event). After the handler, an entry
  // still there is removed as a pop would.
  bool top_running_ = false;
  bool in_handler_ = false;

  SimTime now_ = 0;
  uint64_t sequence_ = 0;
  uint64_t processed_ = 0;
  bool stopped_ = false;
  std::vector<Entry> heap_;  // binary min-heap on (time, order)
  std::vector<std::unique_ptr<EventHandler[]>> chunks_;
  uint32_t slots_ = 0;                 // slots in use or freed so far
  std::vector<uint32_t> free_slots_;   // freed slots, reused first
};

}  // namespace trainsim::des
