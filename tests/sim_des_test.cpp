// The event engine and ops on FIFO resources.

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "des/engine.h"
#include "des/op_scheduler.h"

namespace trainsim::des {
namespace {

TEST(Engine, OrdersEventsByTimeThenPriorityThenInsertion) {
  Engine engine;
  std::string order;
  // Scheduled out of order on purpose; expected run order:
  //   t=5 prio 0 "a" (inserted 2nd) before t=5 prio 0 "b" (inserted 4th): same time and priority,
  //   insertion order decides; t=5 prio -1 "c" runs before both (lower priority value);
  //   t=3 "d" runs first of all; t=9 "e" last.
  engine.schedule_at(9, [&] { order += 'e'; });
  engine.schedule_at(5, [&] { order += 'a'; });
  engine.schedule_at(3, [&] { order += 'd'; });
  engine.schedule_at(5, [&] { order += 'b'; });
  engine.schedule_at(5, [&] { order += 'c'; }, -1);
  engine.run();
  EXPECT_EQ(order, "dcabe");
  EXPECT_EQ(engine.now(), 9);
  EXPECT_EQ(engine.events_processed(), 5u);
}

// The running event's entry stays at the heap's root until its handler schedules (the first new
// event takes that place): the order is the same whether a handler schedules none, one (also one
// that must run next: same time, lower priority value) or several, pending() never counts the
// running event, and step() from inside a handler is refused.
TEST(Engine, TheRunningEventsPlaceIsReusedWithoutChangingTheOrder) {
  Engine engine;
  std::string order;
  std::vector<std::size_t> pending;
  engine.schedule_at(10, [&] { order += 'z'; });
  engine.schedule_at(1, [&] {
    order += 'a';
    pending.push_back(engine.pending());  // z and e, not a itself
    engine.schedule_at(1, [&] { order += 'c'; });      // same time, after b (inserted later, same priority)
    engine.schedule_at(1, [&] { order += 'b'; }, -1);  // same time, lower priority value: next
    engine.schedule_at(5, [&] {
      order += 'd';
      pending.push_back(engine.pending());  // z only
    });
    pending.push_back(engine.pending());  // z, e, c, b, d
  });
  engine.schedule_at(2, [&] {
    order += 'e';
    EXPECT_THROW(engine.step(), std::logic_error);
  });
  engine.run();
  EXPECT_EQ(order, "abced" "z");
  EXPECT_EQ(pending, (std::vector<std::size_t>{2, 5, 1}));
  EXPECT_EQ(engine.pending(), 0u);
  EXPECT_EQ(engine.events_processed(), 6u);
}

TEST(Engine, HandlersMayScheduleMoreEventsAndMoveOnlyCaptures) {
  Engine engine;
  auto owned = std::make_unique<int>(41);  // move-only capture: std::function could not hold it
  int seen = 0;
  engine.schedule_at(1, [&engine, &seen, p = std::move(owned)] {
    seen = *p;
    engine.schedule_after(4, [&seen] { seen += 1; });
  });
  engine.run();
  // 41 at t=1, then +1 at t=1+4.
  EXPECT_EQ(seen, 42);
  EXPECT_EQ(engine.now(), 5);
}

// A handler runs in its slot: one that schedules thousands of events (new slot chunks) still reads
// its own captures afterwards, and every handler is destroyed once it has run.
TEST(Engine, AHandlerThatSchedulesThousandsOfEventsKeepsItsCaptures) {
  Engine engine;
  auto alive = std::make_shared<int>(0);
  int ran = 0, after = 0;
  engine.schedule_at(1, [&engine, &ran, &after, alive, tag = std::string("mine")] {
    for (int i = 0; i < 5000; ++i) engine.schedule_after(1 + i % 7, [&ran, alive] { ++ran; });
    after = tag == "mine" ? *alive + 1 : -1;
  });
  engine.run();
  EXPECT_EQ(after, 1);
  EXPECT_EQ(ran, 5000);
  EXPECT_EQ(alive.use_count(), 1);  // no handler copy is left behind
}

// A handler that throws frees its slot: the engine goes on with the others.
TEST(Engine, AThrowingHandlerLeavesTheEngineUsable) {
  Engine engine;
  auto alive = std::make_shared<int>(0);
  int ran = 0;
  engine.schedule_at(1, [alive] { throw std::runtime_error("boom"); });
  engine.schedule_at(2, [&ran] { ++ran; });
  EXPECT_THROW(engine.run(), std::runtime_error);
  EXPECT_EQ(alive.use_count(), 1);
  engine.run();
  EXPECT_EQ(ran, 1);
  engine.schedule_at(3, [&ran] { ++ran; });
  engine.run();
  EXPECT_EQ(ran, 2);
}

TEST(Engine, LargeCapturesStillRun) {
  Engine engine;
  std::vector<int> big(100, 1);
  struct Payload {
    char bytes[64];  // larger than the inline buffer: stored on the heap
  } payload{};
  payload.bytes[63] = 7;
  int sum = 0;
  engine.schedule_at(2, [&sum, big, payload] { sum = static_cast<int>(big.size()) + payload.bytes[63]; });
  engine.run();
  EXPECT_EQ(sum, 107);
}

TEST(Engine, RunUntilStopsAtTheGivenTime) {
  Engine engine;
  int ran = 0;
  engine.schedule_at(10, [&] { ++ran; });
  engine.schedule_at(20, [&] { ++ran; });
  engine.schedule_at(30, [&] { ++ran; });
  engine.run_until(20);  // events at t <= 20 run: two of them
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(engine.now(), 20);
  EXPECT_EQ(engine.pending(), 1u);
  engine.run_until(25);  // nothing due; the clock still advances to 25
  EXPECT_EQ(engine.now(), 25);
  engine.run();
  EXPECT_EQ(ran, 3);
}

// Times from inputs out of range (an op of 1e10 s, a rate of 1e-300/s) are refused, never wrapped
// past int64: the conversion, an event after kMaxTime, and a fast-forward past it.
TEST(Engine, TimesBeyondTheRangeAreTimeRangeErrors) {
  EXPECT_EQ(to_ns(4e9), SimTime{4'000'000'000'000'000'000});  // 127 years: in range
  EXPECT_THROW(to_ns(1e10), TimeRangeError);
  EXPECT_THROW(to_ns(1e300), TimeRangeError);
  Engine engine;
  engine.schedule_at(kMaxTime - 10, [] {});
  engine.run();
  EXPECT_THROW(engine.schedule_after(11, [] {}), TimeRangeError);
  engine.schedule_after(10, [] {});  // exactly kMaxTime
  Engine shifted;
  shifted.schedule_at(100, [] {});
  EXPECT_THROW(shifted.shift_time(kMaxTime), TimeRangeError);
}

TEST(Engine, RejectsEventsInThePast) {
  Engine engine;
  engine.schedule_at(5, [] {});
  engine.run();
  EXPECT_THROW(engine.schedule_at(4, [] {}), std::logic_error);
}

TEST(Engine, ShiftTimeMovesClockAndPendingEvents) {
  Engine engine;
  std::vector<SimTime> at;
  engine.schedule_at(10, [&] { at.push_back(engine.now()); });
  engine.schedule_at(12, [&] { at.push_back(engine.now()); });
  engine.shift_time(100);
  EXPECT_EQ(engine.now(), 100);
  engine.run();
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0], 110);
  EXPECT_EQ(at[1], 112);
}

TEST(OpScheduler, ChainOfOpsSumsTheirDurations) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  // Three dependent ops of 5, 7 and 11 ns on one resource end at 5 + 7 + 11 = 23.
  const OpId a = ops.add_op(5, {r}, {});
  const OpId b = ops.add_op(7, {r}, {a});
  const OpId c = ops.add_op(11, {r}, {b});
  engine.run();
  EXPECT_EQ(ops.start_time(b), 5);
  EXPECT_EQ(ops.end_time(c), 23);
}

TEST(OpScheduler, IndependentOpsOnTwoResourcesOverlap) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r1 = ops.add_resource();
  const ResourceId r2 = ops.add_resource();
  // Both start at 0 on their own resources; the join waits for the longer: max(30, 40) = 40.
  const OpId a = ops.add_op(30, {r1}, {});
  const OpId b = ops.add_op(40, {r2}, {});
  const OpId join = ops.add_op(0, {r1}, {a, b});
  engine.run();
  EXPECT_EQ(ops.start_time(a), 0);
  EXPECT_EQ(ops.start_time(b), 0);
  EXPECT_EQ(ops.end_time(join), 40);
}

TEST(OpScheduler, OneResourceServesReadyOpsInFifoOrder) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  const ResourceId other = ops.add_resource();
  // x (10 ns) holds r from 0. y is added before z but becomes ready only at 3 (after p on
  // another resource); z is ready at 0, so z is queued first: r runs x, z, y.
  const OpId x = ops.add_op(10, {r}, {});
  const OpId p = ops.add_op(3, {other}, {});
  const OpId y = ops.add_op(4, {r}, {p});
  const OpId z = ops.add_op(6, {r}, {});
  engine.run();
  EXPECT_EQ(ops.start_time(x), 0);
  EXPECT_EQ(ops.start_time(z), 10);  // queued at 0
  EXPECT_EQ(ops.start_time(y), 16);  // queued at 3, behind z
}

TEST(OpScheduler, CollectiveStartsWhenEveryResourceIsFree) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId c0 = ops.add_resource();
  const ResourceId c1 = ops.add_resource();
  // Rank 1's stream is busy until 25; the collective on both streams starts at 25, not 0,
  // although rank 0's stream is free, and lasts 10: it ends at 35.
  const OpId busy = ops.add_op(25, {c1}, {});
  const OpId coll = ops.add_op(10, {c0, c1}, {});
  engine.run();
  EXPECT_EQ(ops.end_time(busy), 25);
  EXPECT_EQ(ops.start_time(coll), 25);
  EXPECT_EQ(ops.end_time(coll), 35);
}

TEST(OpScheduler, ZeroDurationOpsFinishWithoutEvents) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  const OpId a = ops.add_op(0, {r}, {});
  const OpId b = ops.add_op(0, {r}, {a});
  const OpId c = ops.add_op(8, {r}, {b});
  engine.run();
  EXPECT_TRUE(ops.done(b));
  EXPECT_EQ(ops.end_time(c), 8);
  EXPECT_EQ(engine.events_processed(), 1u);  // only c needed an event
}

TEST(OpScheduler, OpsAddedWhileRunningStartWhenTheirDependenciesFinish) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  const OpId a = ops.add_op(10, {r}, {});
  engine.run_until(4);
  const OpId b = ops.add_op(5, {r}, {a});  // a still running: b follows it at 10
  ops.run_until_done(b);
  EXPECT_EQ(ops.start_time(b), 10);
  EXPECT_EQ(ops.end_time(b), 15);
}

// Released ops are forgotten, ids stay global, and naming a released op as a dependency counts
// it as done; releasing past an unfinished op is refused.
TEST(OpScheduler, ReleasedOpsAreForgottenAndCountAsDone) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  const ResourceId s = ops.add_resource();
  const OpId a = ops.add_op(10, {r}, {});
  const OpId b = ops.add_op(10, {r, s}, {a});
  const OpId c = ops.add_op(10, {s}, {b});
  ops.run_until_done(b);
  EXPECT_EQ(ops.done_prefix_end(), c);
  EXPECT_THROW(ops.release_before(c + 1), std::logic_error);
  ops.release_before(c);
  EXPECT_EQ(ops.first_op(), c);
  EXPECT_EQ(ops.op_count(), 3u);
  EXPECT_EQ(ops.held_ops(), 1u);
  EXPECT_EQ(ops.held_edges(), 1u);  // a->b went with b; b->c stays while its target c is held
  EXPECT_EQ(ops.resources(c).size(), 1u);
  EXPECT_EQ(*ops.resources(c).begin(), s);
  const OpId d = ops.add_op(5, {r}, {a, c});  // a is released: done; c still pending
  EXPECT_EQ(d, 3u);
  ops.run_until_done(d);
  EXPECT_EQ(ops.start_time(c), 20);
  EXPECT_EQ(ops.end_time(d), 35);  // after c
}

TEST(OpScheduler, FastForwardShiftsLaterOpsAndTheClock) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  const OpId first = ops.add_op(10, {r}, {}, /*tag=*/0);
  const OpId second = ops.add_op(10, {r}, {first}, /*tag=*/1);
  ops.run_until_done(first);
  // At t=10 `second` has just started. Skip 1000 ns and 5 tags: it runs 1010..1020 as tag 6.
  ops.fast_forward(1000, /*first_tag=*/1, /*tag_offset=*/5);
  engine.run();
  EXPECT_EQ(ops.end_time(first), 10);
  EXPECT_EQ(ops.start_time(second), 1010);
  EXPECT_EQ(ops.end_time(second), 1020);
  EXPECT_EQ(ops.tag(second), 6);
}

TEST(OpScheduler, FastForwardRefusesWhenEarlierOpsAreUnfinished) {
  Engine engine;
  OpScheduler ops(engine);
  const ResourceId r = ops.add_resource();
  ops.add_op(10, {r}, {}, /*tag=*/0);
  EXPECT_THROW(ops.fast_forward(100, 1, 1), std::logic_error);
}


// Processor sharing: ops on pool-attached resources share the pool's capacity fairly.
TEST(OpSchedulerPool, OpsWithinCapacityRunAtFullSpeed) {
  Engine engine;
  OpScheduler ops(engine);
  const PoolId cores = ops.add_pool(2);
  const ResourceId a = ops.add_resource();
  const ResourceId b = ops.add_resource();
  ops.attach_to_pool(a, cores, 1);
  ops.attach_to_pool(b, cores, 1);
  // Demand 1 + 1 = 2 on 2 cores: no slowdown, each ends after its own work.
  const OpId x = ops.add_op(10, {a}, {});
  const OpId y = ops.add_op(30, {b}, {});
  engine.run();
  EXPECT_EQ(ops.end_time(x), 10);
  EXPECT_EQ(ops.end_time(y), 30);
  EXPECT_EQ(ops.elapsed(y), 30);
}

TEST(OpSchedulerPool, OversubscribedOpsSlowDownUntilOthersFinish) {
  Engine engine;
  OpScheduler ops(engine);
  const PoolId core = ops.add_pool(1);
  const ResourceId a = ops.add_resource();
  const ResourceId b = ops.add_resource();
  ops.attach_to_pool(a, core, 1);
  ops.attach_to_pool(b, core, 1);
  // One core, two ops of work 10 and 30: both run at 1/2 until x's 10 units are done at t=20
  // (y has done 10 of its 30 by then), then y alone at full speed: 20 more, ending at 40.
  const OpId x = ops.add_op(10, {a}, {});
  const OpId y = ops.add_op(30, {b}, {});
  engine.run();
  EXPECT_EQ(ops.end_time(x), 20);
  EXPECT_EQ(ops.end_time(y), 40);
  EXPECT_EQ(ops.duration(y), 30);  // the work is unchanged
  EXPECT_EQ(ops.elapsed(y), 40);
}

TEST(OpSchedulerPool, DemandsWeighTheShare) {
  Engine engine;
  OpScheduler ops(engine);
  const PoolId cores = ops.add_pool(2);
  const ResourceId compute = ops.add_resource();
  const ResourceId worker = ops.add_resource();
  ops.attach_to_pool(compute, cores, 2);  // two intra-op threads
  ops.attach_to_pool(worker, cores, 1);
  // Demand 3 on 2 cores: rate 2/3 for both. The worker's 20 units end at 30; by then the compute
  // op did 20 of its 60, and the last 40 run at full speed: 30 + 40 = 70.
  const OpId w = ops.add_op(20, {worker}, {});
  const OpId c = ops.add_op(60, {compute}, {});
  engine.run();
  EXPECT_EQ(ops.end_time(w), 30);
  EXPECT_EQ(ops.end_time(c), 70);
}

TEST(OpSchedulerPool, ACollectiveDrawsForEveryResourceItHolds) {
  Engine engine;
  OpScheduler ops(engine);
  const PoolId cores = ops.add_pool(2);
  const ResourceId comm0 = ops.add_resource();
  const ResourceId comm1 = ops.add_resource();
  const ResourceId compute = ops.add_resource();
  for (ResourceId r : {comm0, comm1, compute}) ops.attach_to_pool(r, cores, 1);
  // The collective holds both comm streams (demand 2), the compute op 1: rate 2/3. The
  // collective's 40 units end at 60, the compute op has done 40 of 100 then: 60 + 60 = 120.
  const OpId all_reduce = ops.add_op(40, {comm0, comm1}, {});
  const OpId c = ops.add_op(100, {compute}, {});
  engine.run();
  EXPECT_EQ(ops.end_time(all_reduce), 60);
  EXPECT_EQ(ops.end_time(c), 120);
}

TEST(OpSchedulerPool, FastForwardKeepsRemainingWork) {
  Engine engine;
  OpScheduler ops(engine);
  const PoolId core = ops.add_pool(1);
  const ResourceId a = ops.add_resource();
  const ResourceId b = ops.add_resource();
  ops.attach_to_pool(a, core, 1);
  ops.attach_to_pool(b, core, 1);
  const OpId first = ops.add_op(10, {a}, {}, /*tag=*/0);
  const OpId second = ops.add_op(30, {b}, {}, /*tag=*/1);
  ops.run_until_done(first);  // t=20: `second` has 20 units left
  ops.fast_forward(1000, /*first_tag=*/1, /*tag_offset=*/1);
  engine.run();
  EXPECT_EQ(ops.start_time(second), 1000);
  EXPECT_EQ(ops.end_time(second), 1040);
}

TEST(OpSchedulerPool, RejectsBadPoolsAndMixedPools) {
  Engine engine;
  OpScheduler ops(engine);
  EXPECT_THROW(ops.add_pool(0), std::logic_error);
  const PoolId p = ops.add_pool(1);
  const PoolId q = ops.add_pool(1);
  const ResourceId a = ops.add_resource();
  const ResourceId b = ops.add_resource();
  EXPECT_THROW(ops.attach_to_pool(a, p, 0), std::logic_error);
  ops.attach_to_pool(a, p, 1);
  EXPECT_THROW(ops.attach_to_pool(a, q, 1), std::logic_error);
  ops.attach_to_pool(b, q, 1);
  EXPECT_THROW(ops.add_op(5, {a, b}, {}), std::logic_error);
}

// A scheduler starts empty whatever the one before it on the thread held (their arrays are
// reused), and two alive at once each keep their own ops.
TEST(OpScheduler, ASchedulerAfterALargerOneStartsEmptyAndTwoAtOnceStayApart) {
  {
    Engine engine;
    OpScheduler big(engine);
    const ResourceId r = big.add_resource();
    OpId prev = kNoOp;
    for (int i = 0; i < 5000; ++i) prev = big.add_op(3, {r}, {prev});
    big.run_until_done(prev);
    EXPECT_EQ(big.end_time(prev), 15000);
  }
  Engine e1, e2;
  OpScheduler a(e1);
  OpScheduler b(e2);
  EXPECT_EQ(a.op_count(), 0u);
  EXPECT_EQ(a.edge_count(), 0u);
  const ResourceId ra = a.add_resource();
  const ResourceId rb = b.add_resource();
  const OpId a0 = a.add_op(7, {ra}, {});
  const OpId b0 = b.add_op(2, {rb}, {});
  const OpId b1 = b.add_op(2, {rb}, {b0});
  EXPECT_EQ(a0, 0u);
  EXPECT_EQ(b0, 0u);
  a.run_until_done(a0);
  b.run_until_done(b1);
  EXPECT_EQ(a.end_time(a0), 7);
  EXPECT_EQ(b.end_time(b1), 4);
  EXPECT_EQ(a.op_count(), 1u);
  EXPECT_EQ(b.op_count(), 2u);
}

}  // namespace
}  // namespace trainsim::des
