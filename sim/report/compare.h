#pragma once
// `simulate CONFIG --compare RUNS.csv`: measured epochs (reports/<machine>/runs.csv, written by
// `measure train` and by the PyTorch reference trainer) joined with predictions on (strategy, gpus,
// batch_per_gpu, loader_workers, train_samples, trainer, test_samples), the error of each
// prediction beside the repeats' spread (noise) and the machine's drift since the profile (the
// calibration probe), and the MAPE. Definitions: docs/COMPARE.md. The join and the errors; their
// tables, CSV and report: report/compare_format.h.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/config.h"
#include "format/profile.h"
#include "format/runs_csv.h"
#include "train/simulator.h"

namespace trainsim::report {

// error % = (predicted - measured) / measured * 100 (positive: the prediction is too slow).
double error_percent(double predicted, double measured);

// The calibration probe the profile timed, per trainer (Calibration, PytorchProfile::probe_s), and
// the intra-op threads its compute timings used. The probe is the machine's speed when `measure`
// timed the profile's own models: a model added later by `measure torchscript` or `measure
// import-trace` (its source says so) was timed at another time, so for it there is none (no drift).
struct ProbeReference {
  std::optional<double> trainsim_s;
  std::optional<double> pytorch_s;
  int threads = 0;  // machine.threads (0: unknown)
};
ProbeReference probe_reference(const Profile& profile, const std::string& model);

struct ComparedRun {
  MeasuredConfig measured;
  SimResult predicted;
  bool in_sweep = false;        // the config's grid has this configuration
  bool in_setting = false;      // trainer, loader workers, samples and test pass are the config's
  bool profiled_batch = false;  // the profile timed this per-GPU batch (else interpolated/extrapolated)
  double epoch_error_pct = 0;   // error_percent(predicted epoch_s, median measured epoch_s)
  double train_error_pct = 0;   // error_percent(predicted train_s, median measured train_s)
  std::optional<double> test_error_pct;  // the test pass, where measured
  // The machine's drift since the profile: median run probe / the profile's probe - 1, in %.
  std::optional<double> drift_pct;
  // The epoch error once the prediction is scaled by the drift: error_percent(predicted epoch_s x
  // (1 + drift), measured). Meaningful where the epoch is bound by what the probe times.
  std::optional<double> drift_adjusted_error_pct;
  // |epoch error| <= noise + |drift|: the difference is within what the repeats' spread and the
  // machine's drift explain, so it is not called a model error.
  bool explained = false;
};

// A measured configuration that got no prediction, and why.
struct UnpredictedRun {
  MeasuredConfig measured;
  std::string reason;  // e.g. "threads 2 != the profile's 1"
};

struct Comparison {
  std::vector<ComparedRun> compared;         // order: strategy (config order), gpus, batch
  std::vector<UnpredictedRun> unpredicted;   // in runs.csv order
  std::vector<RunSpec> unmeasured;           // sweep configurations without a measurement, sweep order
  std::vector<SimResult> extra_predictions;  // measured configurations outside the sweep, simulated
};

// Predicts a configuration outside the sweep. May throw InputError or std::invalid_argument when
// the profile cannot predict it; the run is then listed as unpredicted with that message.
using Predictor = std::function<SimResult(const RunSpec&)>;

// The spec that predicts a measured configuration: its own strategy, gpus, batch, loader workers,
// samples, trainer and test pass (test batch 100, the course's); the config's interconnect,
// sync_batchnorm, persistent_workers and pin_memory.
RunSpec spec_for_measured(const SweepConfig& config, const RunKey& key);

// Joins `runs` with the sweep's results. Every measured configuration is predicted: from
// `sweep_results` when the sweep has exactly its spec, else by `predict`. A configuration measured
// with other intra-op threads than the profile's is listed as unpredicted (the compute timings are
// for the profile's threads), as is one the profile cannot predict.
Comparison compare_runs(const SweepConfig& config, const std::vector<SimResult>& sweep_results, const RunsTable& runs,
                        const std::vector<int64_t>& profiled_batches, const ProbeReference& probe,
                        const Predictor& predict);

// A precision and a memory format: what the entries of a config's precision or memory format list
// differ in, and what a measured run is matched to its entry by.
struct VariantKey {
  Precision precision = Precision::kFp32;
  MemoryFormat memory_format = MemoryFormat::kNchw;
  bool operator==(const VariantKey& o) const { return precision == o.precision && memory_format == o.memory_format; }
  bool operator!=(const VariantKey& o) const { return !(*this == o); }
};

// "bf16-amp", "fp32, channels_last": the precision, and the memory format unless nchw.
std::string variant_label(const VariantKey& key);

// One comparison of several precisions or memory formats (precision: or memory_format: a list):
// `tables`, the join of the tables' entry, and each other entry's own join (its sweep, profile,
// probe and profiled batches). Each measured configuration is taken from the join of its entry;
// the other entries' runs come after the tables' and are not in the tables' setting (the
// side-by-side tables show the tables' entry).
Comparison merge_variants(Comparison tables, std::vector<std::pair<VariantKey, Comparison>> others);

struct ErrorSummary {
  int configs = 0;                     // compared configurations
  int runs = 0;                        // the measured runs they hold (each configuration's repeats)
  double mape_epoch_pct = 0;           // mean |epoch error %|
  double mape_train_pct = 0;           // mean |train error %|
  double mean_epoch_error_pct = 0;     // mean signed epoch error % (bias)
  double max_abs_epoch_error_pct = 0;  // largest |epoch error %|
  // The noise floor of the MAPE: the mean repeats' spread % over the configurations measured at
  // least twice (noise_configs of them); a configuration run once has no spread to tell.
  double mean_noise_pct = 0;
  int noise_configs = 0;
  int explained = 0;                   // configurations whose error noise and drift explain
  int with_drift = 0;                  // configurations with a drift (both probes timed)
  double mape_drift_adjusted_pct = 0;  // MAPE of the drift-adjusted errors over those
};

// MAPE = (1/n) * sum |error %| over the configurations `keep` accepts (all when empty).
ErrorSummary summarize_errors(const std::vector<ComparedRun>& runs,
                              const std::function<bool(const ComparedRun&)>& keep = {});

}  // namespace trainsim::report
