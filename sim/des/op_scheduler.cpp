#include "des/op_scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace trainsim::des {

OpScheduler::Storage& OpScheduler::recycled() {
  thread_local Storage storage;
  return storage;
}

OpScheduler::OpScheduler(Engine& engine) : engine_(engine) {
  Storage& kept = recycled();
  ops_.swap(kept.ops);
  op_resources_.swap(kept.op_resources);
  edges_.swap(kept.edges);
  ops_.clear();
  op_resources_.clear();
  edges_.clear();
}

OpScheduler::~OpScheduler() {
  Storage& kept = recycled();
  if (ops_.capacity() > kept.ops.capacity()) ops_.swap(kept.ops);
  if (op_resources_.capacity() > kept.op_resources.capacity()) op_resources_.swap(kept.op_resources);
  if (edges_.capacity() > kept.edges.capacity()) edges_.swap(kept.edges);
}

ResourceId OpScheduler::add_resource() {
  resources_.emplace_back();
  return static_cast<ResourceId>(resources_.size() - 1);
}

PoolId OpScheduler::add_pool(double capacity) {
  if (!(capacity > 0)) throw std::logic_error("a pool's capacity must be > 0");
  pools_.push_back(Pool{capacity, 0, engine_.now(), {}});
  return static_cast<PoolId>(pools_.size() - 1);
}

void OpScheduler::attach_to_pool(ResourceId r, PoolId pool, double demand) {
  if (r >= resources_.size()) throw std::logic_error("unknown resource");
  if (pool >= pools_.size()) throw std::logic_error("unknown pool");
  if (!(demand > 0)) throw std::logic_error("a pool demand must be > 0");
  if (resources_[r].pool != kNoPool) throw std::logic_error("resource already in a pool");
  resources_[r].pool = pool;
  resources_[r].demand = demand;
}

OpId OpScheduler::add_op(SimTime duration, const ResourceId* resources,
                         std::size_t resource_count, const OpId* deps, std::size_t dep_count,
                         int32_t tag, uint32_t label) {
  if (resource_count == 0) throw std::logic_error("an op needs at least one resource");
  if (duration < 0) throw std::logic_error("negative op duration");
  const OpId id = static_cast<OpId>(op_count());
  Op op;
  op.duration = duration;
  op.tag = tag;
  op.label = label;
  op.resource_begin = resource_base_ + static_cast<uint32_t>(op_resources_.size());
  op.resource_count = static_cast<uint32_t>(resource_count);
  for (std::size_t i = 0; i < resource_count; ++i) {
    if (resources[i] >= resources_.size()) throw std::logic_error("unknown resource");
    const Resource& res = resources_[resources[i]];
    if (res.pool == kNoPool) continue;
    if (op.pool != kNoPool && op.pool != res.pool) {
      throw std::logic_error("an op's resources belong to different pools");
    }
    op.pool = res.pool;
    op.demand += res.demand;
  }
  op_resources_.insert(op_resources_.end(), resources, resources + resource_count);
  for (std::size_t i = 0; i < dep_count; ++i) {
    const OpId dep = deps[i];
    if (dep == kNoOp) continue;
    if (dep >= id) throw std::logic_error("an op may only depend on earlier ops");
    if (dep < op_base_) continue;  // released: done
    Op& d = this->op(dep);
    if (d.state == State::kDone) continue;
    ++op.pending_deps;
    const uint32_t e = edge_base_ + static_cast<uint32_t>(edges_.size());
    edges_.push_back(Edge{id, kNoEdge});
    if (d.last_successor == kNoEdge) {
      d.first_successor = e;
    } else {
      edge(d.last_successor).next = e;
    }
    d.last_successor = e;
  }
  ops_.push_back(op);
  if (ops_.back().pending_deps == 0) {
    make_ready(id);
    drain_instant_ops();
  }
  return id;
}

void OpScheduler::make_ready(OpId id) {
  op(id).state = State::kQueued;
  for (ResourceId r : resources(id)) resources_[r].queue.push_back(id);
  // Copy the span bounds: starting an op never reallocates op_resources_.
  const ResourceSpan span = resources(id);
  for (ResourceId r : span) {
    if (op(id).state != State::kQueued) break;
    try_start_head(r);
  }
}

void OpScheduler::try_start_head(ResourceId r) {
  const Resource& res = resources_[r];
  if (res.running != kNoOp || res.head == res.queue.size()) return;
  const OpId candidate = res.queue[res.head];
  for (ResourceId s : resources(candidate)) {
    const Resource& other = resources_[s];
    if (other.running != kNoOp || other.head == other.queue.size() ||
        other.queue[other.head] != candidate) {
      return;  // a collective waits until every one of its resources reaches it
    }
  }
  start(candidate);
}

void OpScheduler::start(OpId id) {
  Op& op = this->op(id);
  op.state = State::kRunning;
  op.start = engine_.now();
  for (ResourceId r : resources(id)) {
    Resource& res = resources_[r];
    ++res.head;
    res.running = id;
  }
  if (op.duration == 0) {
    instant_.push_back(id);  // finished by drain_instant_ops, in start order, without an event
  } else if (op.pool != kNoPool) {
    Pool& pool = pools_[op.pool];
    advance_pool(pool);
    op.remaining = static_cast<double>(op.duration);
    pool.running.push_back(id);
    pool.demand += op.demand;
    reschedule_pool(op.pool);
  } else {
    engine_.schedule_after(op.duration, [this, id] {
      finish(id);
      drain_instant_ops();
    });
  }
}

void OpScheduler::advance_pool(Pool& pool) {
  const double done = static_cast<double>(engine_.now() - pool.updated) * pool.rate();
  for (OpId id : pool.running) op(id).remaining = std::max(0.0, op(id).remaining - done);
  pool.updated = engine_.now();
}

// Every running op of the pool would finish ceil(remaining / rate) ns from now unless the rate
// changes first; and the rate changes when the first of them finishes. So one event, for the
// first to finish (the earliest in start order among equals), stands for them all: it finishes
// that op and reschedules the rest. Any earlier start or finish in the pool reschedules it, which
// makes this event stale (the pool's generation no longer matches). One pending event per pool,
// not one per running op per change: a pool of R running ops changed R times an epoch left R^2
// stale events in the engine's queue.
void OpScheduler::reschedule_pool(uint32_t pool_id) {
  Pool& pool = pools_[pool_id];
  const uint32_t generation = ++pool.generation;
  const double rate = pool.rate();
  OpId first = kNoOp;
  SimTime first_delay = 0;
  for (OpId id : pool.running) {
    const double ns = std::ceil(op(id).remaining / rate);
    if (ns >= static_cast<double>(kMaxTime)) throw TimeRangeError(out_of_range_message(ns * 1e-9));
    const auto delay = static_cast<SimTime>(ns);
    if (first == kNoOp || delay < first_delay) {
      first = id;
      first_delay = delay;
    }
  }
  if (first == kNoOp) return;
  engine_.schedule_after(first_delay, [this, first, generation, pool_id] {
    Pool& p = pools_[pool_id];
    if (p.generation != generation) return;
    advance_pool(p);
    p.running.erase(std::find(p.running.begin(), p.running.end(), first));
    p.demand -= op(first).demand;
    if (p.running.empty()) p.demand = 0;  // no drift from repeated += / -=
    reschedule_pool(pool_id);
    finish(first);
    drain_instant_ops();
  });
}

void OpScheduler::finish(OpId id) {
  Op& op = this->op(id);
  op.state = State::kDone;
  op.end = engine_.now();
  for (ResourceId r : resources(id)) {
    Resource& res = resources_[r];
    res.running = kNoOp;
    if (res.head == res.queue.size()) {
      res.queue.clear();
      res.head = 0;
    }
  }
  // Free resources first, so ops already queued on them start before newly ready successors.
  for (ResourceId r : resources(id)) try_start_head(r);
  for (uint32_t e = this->op(id).first_successor; e != kNoEdge; e = edge(e).next) {
    const OpId next = edge(e).to;
    if (--this->op(next).pending_deps == 0) make_ready(next);
  }
}

void OpScheduler::drain_instant_ops() {
  if (draining_) return;
  draining_ = true;
  while (instant_head_ < instant_.size()) finish(instant_[instant_head_++]);
  instant_.clear();
  instant_head_ = 0;
  draining_ = false;
}

void OpScheduler::run_until_done(OpId id) {
  while (op(id).state != State::kDone) {
    if (!engine_.step()) {
      throw std::logic_error("op " + std::to_string(id) +
                             " can never run: the event queue is empty (missing dependency?)");
    }
  }
}

OpId OpScheduler::done_prefix_end() const {
  std::size_t i = 0;
  while (i < ops_.size() && ops_[i].state == State::kDone) ++i;
  return op_base_ + static_cast<OpId>(i);
}

void OpScheduler::release_before(OpId id) {
  if (id <= op_base_) return;
  if (id > done_prefix_end()) {
    throw std::logic_error("release_before: op " + std::to_string(id) + " is past the ops that are done");
  }
  const auto count = static_cast<std::ptrdiff_t>(id - op_base_);
  // Resource lists are in op order: the released ops' form a prefix.
  const uint32_t resources_end =
      id < op_count() ? op(id).resource_begin : resource_base_ + static_cast<uint32_t>(op_resources_.size());
  op_resources_.erase(op_resources_.begin(), op_resources_.begin() + (resources_end - resource_base_));
  resource_base_ = resources_end;
  // Edges are appended when their target is added, so they are in target order; those into
  // released ops form a prefix (their sources are earlier still). A held op's successors come
  // after it, so none of its edges is in that prefix.
  const auto kept = std::lower_bound(edges_.begin(), edges_.end(), id,
                                     [](const Edge& e, OpId target) { return e.to < target; });
  edge_base_ += static_cast<uint32_t>(kept - edges_.begin());
  edges_.erase(edges_.begin(), kept);
  ops_.erase(ops_.begin(), ops_.begin() + count);
  op_base_ = id;
}

void OpScheduler::fast_forward(SimTime delta, int32_t first_tag, int32_t tag_offset) {
  if (delta < 0 || tag_offset < 0) throw std::logic_error("fast_forward goes forward only");
  for (Op& op : ops_) {
    if (op.tag < first_tag) {
      if (op.state != State::kDone) {
        throw std::logic_error("fast_forward: an op with tag " + std::to_string(op.tag) +
                               " < " + std::to_string(first_tag) + " is not done");
      }
      continue;
    }
    if (op.start >= 0) op.start += delta;
    if (op.end >= 0) op.end += delta;
    op.tag += tag_offset;
  }
  for (Pool& pool : pools_) pool.updated += delta;
  engine_.shift_time(delta);
}

}  // namespace trainsim::des
