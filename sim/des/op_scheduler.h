#pragma once
// Ops on resources, on top of the event engine.
//
// A resource is a FIFO server: it serves one op at a time, and ops wait for it in the order in
// which they became ready (ties: the order of the events that made them ready, which is the
// engine's total order). An op becomes ready when all its dependencies are done. An op may need
// several resources at once (a collective needs every rank's communication stream): it starts
// when it is at the head of all of their queues and all of them are free, which is what
// synchronises the ranks. Because an op joins all its queues at the same instant, any two ops
// sharing resources are queued in the same order on each of them, so this cannot deadlock.
//
// Ops can be added while the simulation runs (the training layer builds one iteration ahead).
// Finished ops can be released in id order (release_before), so a long run holds only the ops
// still in flight; ids stay the same (an op's id is its global index).
//
// Shared pools (processor sharing): a pool has a capacity (e.g. a host's C cores), and a resource
// may be attached to a pool with a demand (e.g. a CPU rank's compute stream needs T cores, a
// loader worker 1). While ops that hold attached resources run, the pool's total demand D is the
// sum of their demands; when D exceeds the capacity every such op progresses at the rate
// capacity / D instead of 1 (the operating system time-slices the cores fairly), so an op's
// duration is its work at full speed and it may take longer. Rates change only when an op of the
// pool starts or finishes; each running op's remaining work is then brought up to date and its
// finish rescheduled. FIFO order and multi-resource starts are unchanged.

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "des/engine.h"
#include "des/time.h"

namespace trainsim::des {

using ResourceId = uint32_t;
using OpId = uint32_t;
using PoolId = uint32_t;
inline constexpr OpId kNoOp = UINT32_MAX;  // "no dependency": ignored in a dependency list

struct ResourceSpan {
  const ResourceId* first;
  const ResourceId* last;
  const ResourceId* begin() const { return first; }
  const ResourceId* end() const { return last; }
  std::size_t size() const { return static_cast<std::size_t>(last - first); }
};

class OpScheduler {
 public:
  explicit OpScheduler(Engine& engine);
  ~OpScheduler();
  OpScheduler(const OpScheduler&) = delete;
  OpScheduler& operator=(const OpScheduler&) = delete;

  ResourceId add_resource();
  std::size_t resource_count() const { return resources_.size(); }

  // A processor-sharing pool of `capacity` (> 0) units, e.g. cores.
  PoolId add_pool(double capacity);
  // Every op holding `r` draws `demand` (> 0) units of `pool` while it runs (an op holding several
  // attached resources draws the sum). A resource belongs to at most one pool, and all attached
  // resources of one op must belong to the same pool. Attach before adding ops that hold `r`.
  void attach_to_pool(ResourceId r, PoolId pool, double demand);

  // Adds an op holding every resource in `resources` (at least one) for `duration` ns once every
  // op in `deps` is done (kNoOp entries are ignored). `tag` and `label` are the caller's (the
  // training layer uses the iteration index and an index into its table of op names).
  OpId add_op(SimTime duration, const ResourceId* resources, std::size_t resource_count,
              const OpId* deps, std::size_t dep_count, int32_t tag = 0, uint32_t label = 0);
  OpId add_op(SimTime duration, std::initializer_list<ResourceId> resources,
              std::initializer_list<OpId> deps, int32_t tag = 0, uint32_t label = 0) {
    return add_op(duration, resources.begin(), resources.size(), deps.begin(), deps.size(), tag,
                  label);
  }

  // Ops ever added (the next op's id); the ones held are [first_op(), op_count()). The accessors
  // below take held ids only.
  std::size_t op_count() const { return op_base_ + ops_.size(); }
  OpId first_op() const { return op_base_; }
  std::size_t edge_count() const { return edge_base_ + edges_.size(); }  // dependencies added so far
  std::size_t held_ops() const { return ops_.size(); }
  std::size_t held_edges() const { return edges_.size(); }
  bool done(OpId id) const { return op(id).state == State::kDone; }
  SimTime start_time(OpId id) const { return op(id).start; }  // -1 until started
  SimTime end_time(OpId id) const { return op(id).end; }      // -1 until done
  SimTime duration(OpId id) const { return op(id).duration; }  // work at full speed
  // How long the op held its resources: end - start (> duration when its pool was oversubscribed).
  SimTime elapsed(OpId id) const { return op(id).end - op(id).start; }
  int32_t tag(OpId id) const { return op(id).tag; }
  uint32_t label(OpId id) const { return op(id).label; }
  ResourceSpan resources(OpId id) const {
    const ResourceId* first = op_resources_.data() + (op(id).resource_begin - resource_base_);
    return ResourceSpan{first, first + op(id).resource_count};
  }

  // The first held op that is not done (op_count() when all are): [first_op(), it) may be released.
  OpId done_prefix_end() const;
  // Forgets the ops [first_op(), id), which must all be done (std::logic_error otherwise), with
  // their resource lists and dependency edges. A later op may still name one as a dependency
  // (it counts as done).
  void release_before(OpId id);

  // Runs the engine until `id` is done. Throws std::logic_error if the event queue empties first
  // (the op can never run: a missing dependency).
  void run_until_done(OpId id);

  // Skips time: every op with tag >= first_tag gets its tag increased by tag_offset and its start
  // and end times (where already set) moved `delta` later, and the engine's clock and pending
  // events move `delta` later too. Every op with a smaller tag must be done (std::logic_error
  // otherwise). Valid when the skipped span is whole periods of a periodic schedule.
  void fast_forward(SimTime delta, int32_t first_tag, int32_t tag_offset);

  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }

 private:
  enum class State : uint8_t { kWaiting, kQueued, kRunning, kDone };
  static constexpr uint32_t kNoPool = UINT32_MAX;
  struct Op {
    SimTime duration = 0;
    SimTime start = -1;
    SimTime end = -1;
    int32_t tag = 0;
    uint32_t label = 0;
    uint32_t resource_begin = 0;  // index into op_resources_
    uint32_t resource_count = 0;
    uint32_t pending_deps = 0;
    uint32_t first_successor = kNoEdge;  // singly linked list in edges_, in insertion order
    uint32_t last_successor = kNoEdge;
    State state = State::kWaiting;
    uint32_t pool = kNoPool;       // set when the op holds a pool-attached resource
    double demand = 0;             // units of `pool` it draws while running
    double remaining = 0;          // pool ops: work left (ns at full speed) at the pool's last update
  };
  struct Edge {
    OpId to;
    uint32_t next;
  };
  struct Resource {
    std::vector<OpId> queue;  // ready ops, FIFO from `head`
    std::size_t head = 0;
    OpId running = kNoOp;
    uint32_t pool = kNoPool;
    double demand = 0;
  };
  struct Pool {
    double capacity = 0;
    double demand = 0;          // sum over running ops
    SimTime updated = 0;        // when `remaining` of the running ops was last brought up to date
    std::vector<OpId> running;  // in start order
    uint32_t generation = 0;    // bumped on every reschedule: an older finish event is stale
    double rate() const { return demand > capacity ? capacity / demand : 1.0; }
  };
  static constexpr uint32_t kNoEdge = UINT32_MAX;

  Op& op(OpId id) { return ops_[id - op_base_]; }
  const Op& op(OpId id) const { return ops_[id - op_base_]; }
  Edge& edge(uint32_t e) { return edges_[e - edge_base_]; }

  // The op, resource-list and edge arrays of a finished scheduler, kept for the thread's next one
  // (a fit simulates tens of thousands of short epochs: growing them from empty each time, with
  // the allocator handing their pages back to the system in between, costs more than simulating).
  struct Storage {
    std::vector<Op> ops;
    std::vector<ResourceId> op_resources;
    std::vector<Edge> edges;
  };
  static Storage& recycled();

  void make_ready(OpId id);
  void try_start_head(ResourceId r);
  void start(OpId id);
  void finish(OpId id);
  void drain_instant_ops();
  // Pools: bring remaining work up to now at the current rate; reschedule every running op.
  void advance_pool(Pool& pool);
  void reschedule_pool(uint32_t pool);

  Engine& engine_;
  std::vector<Op> ops_;
  std::vector<ResourceId> op_resources_;
  std::vector<Edge> edges_;
  std::vector<Resource> resources_;
  std::vector<Pool> pools_;
  OpId op_base_ = 0;           // ids below it are released
  uint32_t resource_base_ = 0;  // global index of op_resources_[0] (Op::resource_begin is global)
  uint32_t edge_base_ = 0;      // global index of edges_[0] (edge links are global)
  std::vector<OpId> instant_;  // zero-duration ops started but not yet finished (FIFO)
  std::size_t instant_head_ = 0;
  bool draining_ = false;
};

}  // namespace trainsim::des
