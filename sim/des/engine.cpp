#include "des/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::des {

namespace {
constexpr int kSequenceBits = 47;  // 1.4e14 events per run before the sequence would overflow
}

void Engine::schedule_at(SimTime time, EventHandler handler, int priority) {
  if (time < now_) {
    throw std::logic_error("event scheduled in the past: t=" + std::to_string(time) +
                           " ns, now=" + std::to_string(now_) + " ns");
  }
  if (priority < kMinPriority || priority > kMaxPriority) {
    throw std::logic_error("event priority out of range: " + std::to_string(priority));
  }
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(handlers_.size());
    handlers_.push_back(std::move(handler));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    handlers_[slot] = std::move(handler);
  }
  const uint64_t order =
      (static_cast<uint64_t>(priority - kMinPriority) << kSequenceBits) | sequence_++;
  push(Entry{time, order, slot});
}

void Engine::push(Entry e) {
  // Sift up: move the hole toward the root while the parent runs later than `e`.
  std::size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!later(heap_[parent], e)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

Engine::Entry Engine::pop() {
  const Entry top = heap_.front();
  const Entry last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    // Sift down: move the hole toward the leaves while a child runs earlier than `last`.
    std::size_t i = 0;
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && later(heap_[child], heap_[child + 1])) ++child;
      if (!later(last, heap_[child])) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = last;
  }
  return top;
}

bool Engine::step() {
  if (heap_.empty()) return false;
  const Entry e = pop();
  now_ = e.time;
  // Move the handler out first: it may schedule events, which can grow handlers_.
  EventHandler handler = std::move(handlers_[e.slot]);
  free_slots_.push_back(e.slot);
  ++processed_;
  handler();
  return true;
}

void Engine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void Engine::run_until(SimTime time) {
  stopped_ = false;
  while (!stopped_ && !heap_.empty() && heap_.front().time <= time) step();
  if (!stopped_ && time > now_) now_ = time;
}

void Engine::shift_time(SimTime delta) {
  if (delta < 0) throw std::logic_error("Engine::shift_time: negative shift");
  SimTime latest = now_;
  for (const Entry& e : heap_) latest = std::max(latest, e.time);
  if (delta > kMaxTime - latest) throw TimeRangeError(out_of_range_message(to_seconds(latest) + to_seconds(delta)));
  now_ += delta;
  for (Entry& e : heap_) e.time += delta;  // a uniform shift keeps the heap property
}

}  // namespace trainsim::des
