// The GIL as a resource (sim/train/gil_model.h): the costs read from the profile's probe, and the
// threads' wall time in its limits: one thread, Python-bound, ATen-bound, cores oversubscribed.
#include <gtest/gtest.h>

#include <stdexcept>

#include "train/gil_model.h"

namespace trainsim::train {
namespace {

GilProfile probe_profile(double t1, double t2) {
  return GilProfile{{1, 2, 4}, 64, {{"linear16", 16, 8, 128, {t1, t2, 4 * t2}}}};
}

TEST(GilModel, CostsComeFromTheFirstProbeOnOneAndTwoThreads) {
  // 128 calls: 640 us alone is 5 us a call; 2 threads in 4.096 ms is 16 us a call each, 11 of
  // them the hand-over.
  const GilCosts c = gil_costs(probe_profile(640e-6, 4096e-6));
  EXPECT_NEAR(c.python_call_s, 5e-6, 1e-12);
  EXPECT_NEAR(c.handoff_s, 11e-6, 1e-12);
  // Two threads no slower than one each: no hand-over cost, never a negative one.
  EXPECT_EQ(gil_costs(probe_profile(640e-6, 600e-6)).handoff_s, 0);
  EXPECT_THROW(gil_costs(GilProfile{{1, 2}, 64, {}}), std::invalid_argument);
}

TEST(GilModel, OneThreadRunsItsCallsBackToBack) {
  const GilCosts c{5e-6, 11e-6};
  EXPECT_NEAR(gil_threads_forward_s(1, 100, 30e-6, c, 2), 100 * 30e-6, 1e-9);
  EXPECT_NEAR(gil_threads_forward_s(1, 100, 2e-6, c, 2), 100 * 2e-6, 1e-9);  // all Python
}

TEST(GilModel, PythonBoundThreadsTakeTurnsAndPayTheHandOver) {
  // The probe the costs came from is reproduced: 2 threads x 128 calls x (5 + 11) us.
  const GilCosts c = gil_costs(probe_profile(640e-6, 4096e-6));
  EXPECT_NEAR(gil_threads_forward_s(2, 128, 5e-6, c, 2), 4096e-6, 1e-8);
  // More threads than cores too: the GIL, not the cores, bounds them (4 x 16 us a call).
  EXPECT_NEAR(gil_threads_forward_s(4, 128, 5e-6, c, 2), 4 * 128 * 16e-6, 0.05 * 4 * 128 * 16e-6);
}

TEST(GilModel, AtenBoundThreadsRunInParallelUpToTheCores) {
  // 1 ms of ATen per call against 5 + 11 us of Python: 2 threads on 2 cores take about one
  // thread's time (max-like), 4 threads on 2 cores twice that (the cores, not the GIL).
  const GilCosts c{5e-6, 11e-6};
  const double alone = gil_threads_forward_s(1, 50, 1e-3, c, 2);
  EXPECT_NEAR(gil_threads_forward_s(2, 50, 1e-3, c, 2) / alone, 1.0, 0.03);
  EXPECT_NEAR(gil_threads_forward_s(4, 50, 1e-3, c, 2) / alone, 2.0, 0.05);
  // On 4 cores the 4 threads are about as fast as one.
  EXPECT_NEAR(gil_threads_forward_s(4, 50, 1e-3, c, 4) / alone, 1.0, 0.05);
}

TEST(GilModel, BetweenTheLimitsTheGilQueueShows) {
  // ATen 20 us, Python 5 + 11 us: 2 threads need 32 us of GIL per pair of calls against a 36 us
  // cycle, so they overlap partly: slower than one thread, faster than taking strict turns.
  const GilCosts c{5e-6, 11e-6};
  const double alone = gil_threads_forward_s(1, 100, 25e-6, c, 2);
  const double two = gil_threads_forward_s(2, 100, 25e-6, c, 2);
  EXPECT_GT(two, 1.3 * alone);
  EXPECT_LT(two, 2 * 100 * (16e-6 + 20e-6));
}

TEST(GilModel, RefusesEmptyWork) {
  const GilCosts c{5e-6, 11e-6};
  EXPECT_THROW(gil_threads_forward_s(0, 10, 1e-6, c, 2), std::invalid_argument);
  EXPECT_THROW(gil_threads_forward_s(2, 0, 1e-6, c, 2), std::invalid_argument);
  EXPECT_THROW(gil_threads_forward_s(2, 10, 0, c, 2), std::invalid_argument);
  EXPECT_THROW(gil_threads_forward_s(2, 10, 1e-6, c, 0), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::train
