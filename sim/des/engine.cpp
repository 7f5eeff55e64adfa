#include "des/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::des {

void Engine::throw_bad_event(SimTime time, int priority) const {
  if (time < now_) {
    throw std::logic_error("event scheduled in the past: t=" + std::to_string(time) +
                           " ns, now=" + std::to_string(now_) + " ns");
  }
  throw std::logic_error("event priority out of range: " + std::to_string(priority));
}

uint32_t Engine::acquire_slot() {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if ((slots_ >> kChunkBits) == chunks_.size()) {
    chunks_.push_back(std::make_unique<EventHandler[]>(std::size_t{1} << kChunkBits));
    // Room for every slot ever taken: release_slot (noexcept) never reallocates.
    free_slots_.reserve(chunks_.size() << kChunkBits);
  }
  return slots_++;
}

void Engine::release_slot(uint32_t slot) noexcept {
  handler_at(slot).reset();
  free_slots_.push_back(slot);  // within the capacity reserved in acquire_slot
}

void Engine::push(SimTime time, uint64_t order, uint32_t slot) {
  const Entry e{time, order, slot};
  if (top_running_) {  // the running event's root entry is free: take it
    top_running_ = false;
    sift_down_from_root(time, order, slot);
    return;
  }
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

// Sift down with a compare against `e` at every level (Floyd's variant, which skips them and
// sifts from a leaf, measured slower here, as did a 4-ary heap: BM_engine/1024 26 -> 16 M
// events/s).
void Engine::sift_down_from_root(SimTime time, uint64_t order, uint32_t slot) {
  const Entry e{time, order, slot};
  const std::size_t n = heap_.size();
  // Move the hole toward the leaves while a child runs earlier than `e`.
  std::size_t i = 0;
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && later(heap_[child], heap_[child + 1])) ++child;
    if (!later(e, heap_[child])) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = e;
}

bool Engine::step() {
  if (in_handler_) throw std::logic_error("Engine::step: called from inside an event handler");
  if (heap_.empty()) return false;
  const Entry e = heap_.front();
  now_ = e.time;
  ++processed_;
  top_running_ = true;
  in_handler_ = true;
  // The handler runs in its slot (chunks never move); the slot is freed after it returns or
  // throws, so the events it schedules take other slots. Its root entry is removed then unless an
  // event it scheduled took it.
  struct Finish {
    Engine& engine;
    uint32_t slot;
    ~Finish() {
      engine.in_handler_ = false;
      if (engine.top_running_) {
        engine.top_running_ = false;
        const Entry last = engine.heap_.back();
        engine.heap_.pop_back();
        if (!engine.heap_.empty()) engine.sift_down_from_root(last.time, last.order, last.slot);
      }
      engine.release_slot(slot);
    }
  } finish{*this, e.slot};
  handler_at(e.slot)();
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
