#pragma once
// Q4 (issue 5): per configuration, the large-batch predictions of trainsim_stats (loss and
// accuracy after k epochs, epochs to a target loss, Pollux efficiency) joined with the simulated
// epoch time (time to target, goodput); and the SyncBatchNorm table (the added communication).
// Model and refusals: docs/LARGE_BATCH.md.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/config.h"
#include "format/profile.h"
#include "report/format.h"
#include "stats/large_batch.h"
#include "train/simulator.h"

namespace trainsim::report {

class ResultGrid;

// One configuration's Q4 figures.
struct LargeBatchRow {
  LargeBatchPrediction prediction;
  // Where the model predicts no progress (its lr past plain SGD's bound): the same configuration
  // at the edge of stability (PastBound::kEdge), the other reading of the bound.
  std::optional<LargeBatchPrediction> at_the_edge;
  double throughput = 0;                   // samples/s = train_samples / epoch_s
  std::optional<double> time_to_target_s;  // examples to target / throughput
  std::optional<double> time_to_target_accuracy_s;  // examples to the target accuracy / throughput
  std::optional<double> goodput;           // throughput * efficiency, samples/s
};

class LargeBatchReport {
 public:
  // The report for config.model, or nullopt when the profile has no training curve with epochs
  // for it (require_for_model has already rejected that when the config asks for predictions).
  static std::optional<LargeBatchReport> make(const SweepConfig& config, const Profile& profile);

  LargeBatchRow row(const SimResult& result) const;
  const LargeBatchModel& model() const { return model_; }
  // The same settings under each lr rule (constant, linear, linear-warmup, sqrt, in that order):
  // Q4's rules side by side.
  const std::vector<LargeBatchModel>& rule_models() const { return rule_models_; }
  int64_t config_train_samples() const { return config_train_samples_; }
  // A line under Q4's heading saying where its times come from (Q4's own sweep).
  void set_sweep_note(std::string note) { sweep_note_ = std::move(note); }
  const std::string& sweep_note() const { return sweep_note_; }

 private:
  LargeBatchReport(LargeBatchModel model, LargeBatchModel at_the_edge, std::vector<LargeBatchModel> rule_models,
                   int64_t config_train_samples)
      : model_(std::move(model)),
        at_the_edge_(std::move(at_the_edge)),
        rule_models_(std::move(rule_models)),
        config_train_samples_(config_train_samples) {}
  LargeBatchModel model_;
  LargeBatchModel at_the_edge_;  // the same settings at the edge of stability
  std::vector<LargeBatchModel> rule_models_;
  int64_t config_train_samples_;
  std::string sweep_note_;
};

// "## Q4: ..." with the baseline, the target, the critical batch with the lr rules side by side
// (one row per global batch), the tables (one row per configuration, in sweep order) and the
// numbered notes; ends with a blank line.
std::string format_large_batch(const LargeBatchReport& report, const ResultGrid& grid);

// "## SyncBatchNorm: ..." for the DDP configurations with >= 2 GPUs (ranks): the collectives per
// iteration, their time per epoch, and the epoch time with and without SyncBatchNorm
// (`without`: the same configurations simulated with sync_batchnorm off).
std::string format_sync_batchnorm(const Profile& profile, const std::string& model, const ResultGrid& with,
                                  const ResultGrid& without, const Unit& unit);

}  // namespace trainsim::report
