#pragma once
// The pace probe's settings (measure baseline --pace-*; largebatch/pace_probe.h runs it), torch-free.

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::measure {

struct PacePair {
  int64_t ratio = 16;    // the branch's batch over the baseline's (>= 2)
  double lr_ratio = 1;   // the branch's lr over the baseline's (> 0)
};

struct PaceProbeOptions {
  std::vector<int64_t> at_steps;                  // optimiser steps after which to probe, ascending; empty: off
  std::vector<PacePair> pairs = {{16, 1}, {16, 4}};
  int64_t steps = 60;                             // K: the branch's steps
  int64_t draws = 2;
  int64_t cool_steps = 200;
  double cool = 0.1;                              // the cooling lr over the baseline's
  int64_t images = 9984;                          // the fixed set: the first N training images
};

// The continued baseline's step counts: K, 2K, 4K, ... up to n K (the last one exactly), n the
// largest of the pairs' max(ratio, min(16, ratio x lr_ratio)).
std::vector<int64_t> pace_arm_counts(const PaceProbeOptions& options);

// "16x1,16x4" -> the pairs; throws std::invalid_argument naming the bad item.
std::vector<PacePair> parse_pace_pairs(const std::string& text);
// The pairs as parse_pace_pairs reads them.
std::string pace_pairs_text(const std::vector<PacePair>& pairs);

}  // namespace trainsim::measure
