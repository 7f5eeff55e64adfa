#pragma once
// TEST FIXTURE (hand-written, not a measurement): pace-probe readings (format/profile.h) for the
// model's tests, with gains the plain step equation gives at chosen coefficients.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "format/profile.h"
#include "stats/pace_probe.h"

namespace trainsim::testing {

// One reading after `examples` at `ratio` x the batch and `lr_ratio` x the lr (60 steps, cooled 200
// at 0.1x), one draw per gain (one draw, none kept, for no gains).
inline PaceProbeReading pace_reading(double examples, int64_t ratio, double lr_ratio, std::vector<double> gains) {
  PaceProbeReading r;
  r.examples = examples;
  r.ratio = ratio;
  r.lr_ratio = lr_ratio;
  r.steps = 60;
  r.cool_steps = 200;
  r.cool = 0.1;
  r.draws = std::max<int64_t>(1, static_cast<int64_t>(gains.size()));
  r.gains = std::move(gains);
  return r;
}

// The probe's default pairs after `examples`, 16x the batch at 1x and at 4x the lr, each with one
// gain: the step equation's at (alpha, nu).
inline std::vector<PaceProbeReading> step_equation_probe(double examples, double alpha, double nu) {
  std::vector<PaceProbeReading> readings;
  for (const double lr_ratio : {1.0, 4.0}) {
    readings.push_back(pace_reading(examples, 16, lr_ratio, {step_equation_gain(alpha, nu, 16, lr_ratio)}));
  }
  return readings;
}

}  // namespace trainsim::testing
