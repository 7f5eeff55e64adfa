#pragma once
// Data-loader throughput on the profiled machine, for any worker count.

#include <optional>
#include <string>

#include "format/profile.h"

namespace trainsim::train {

// The loader at the training batch `batch` (a DDP rank's, or DataParallel's global batch).
// Without loader.at_batches: `loader` as it is. With them, each worker count of loader.points
// takes its rate at `batch`: its time per sample, linear in 1/batch between the two nearest
// measured batches (a batch costs c + d/b per sample: building each sample, plus collating the
// batch and handing it from the worker to the trainer once), and held at the nearest measured
// batch outside them. The start-up figures stay loader.points'. `note` (optional) says which.
LoaderProfile loader_at_batch(const LoaderProfile& loader, int64_t batch, std::string* note = nullptr);

// samples_per_s(W), the total throughput of W workers (W = 0: loading inline in the training
// thread), from the profile's loader points:
//  - a measured worker count: as measured;
//  - between two measured counts: linear in W;
//  - above the largest measured count W_n: W * (sps(W_n) / W_n), capped at the largest measured
//    total -- more workers than were measured never buy throughput nobody observed;
//  - below the smallest measured count W_1 (W >= 1): W * (sps(W_1) / W_1), W_1's rate per worker;
//  - W = 0 not measured: one worker's rate by the rules above (loading inline costs the same
//    work as one worker, minus the inter-process transfer, which is not modelled).
class LoaderModel {
 public:
  // Throws std::invalid_argument with no points, counts not ascending, or rates <= 0.
  explicit LoaderModel(const LoaderProfile& profile);

  double samples_per_s(int workers) const;
  int max_measured_workers() const { return profile_.points.back().workers; }
  // A worker count's start-up (LoaderPoint::startup_s): the measured point; a count not measured
  // takes the nearest measured count >= 1 (workers start in parallel, so the start-up of a
  // handful is about one's). nullopt when that point has no startup_s.
  std::optional<double> startup_s(int workers) const;
  // Empty when `workers` was measured or lies between measured counts; else how it was derived.
  std::string note(int workers) const;

 private:
  double measured_or_scaled(int workers) const;
  const LoaderProfile& profile_;
  double best_samples_per_s_ = 0;
};

}  // namespace trainsim::train
