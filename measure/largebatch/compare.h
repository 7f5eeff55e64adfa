#pragma once
// `measure largebatch-compare RUNS`: the large-batch predictions of trainsim_stats (what
// `simulate` prints as Q4) against real runs at other batches (docs/LARGE_BATCH.md "Validation on
// real data"). RUNS holds one curve per run, written by `measure baseline --profile` as
// scripts/largebatch-fashion.sh names them: b<batch>-<rule>-s<seed>.yaml, the baseline of each
// seed b<base>-constant-s<seed>.yaml, and b<...>.yaml.failed beside a run that diverged.
// Torch-free.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/lr_rule.h"
#include "format/profile.h"
#include "stats/large_batch.h"

namespace trainsim::measure {

struct CompareOptions {
  std::string runs_dir;
  int64_t base_batch = 128;
  int epochs = 5;                     // k: loss and accuracy after k epochs
  std::optional<double> target_loss;  // default: each seed's baseline loss after epoch 1
  // A test accuracy to reach (a fraction): the epochs to it, predicted and measured, as a fourth
  // figure (LargeBatchSettings::target_accuracy). None: not compared.
  std::optional<double> target_accuracy;
  int num_classes = 10;
  // Ignore the baselines' measured eps_max (max_lr): their lr taken as tuned, as before it was
  // measured. The report shows both.
  bool assume_tuned_baseline = false;
  // The model's B_n from B_simple alone, not the baselines' measured B_noise = tr(H Sigma) / G^T H G
  // where that counts (LargeBatchSettings::curvature_noise_scale off). The report shows both.
  bool simple_noise_scale = false;
  // The plain-SGD path alone: momentum's noise floor left out (LargeBatchSettings::momentum_floor
  // off). The report shows both where the baselines trained with momentum.
  bool without_momentum_floor = false;
  // The curve's loss as it is: the BatchNorm gap between the baseline's BatchNorm batch and the
  // run's left out (LargeBatchSettings::batchnorm_gap off). The report shows both where a baseline
  // carries the BatchNorm probe.
  bool without_batchnorm_gap = false;
  // x read with the plain lr ratio: the scale-invariant weights' norm left out
  // (LargeBatchSettings::scale_invariant_norm off). The report shows both where a baseline carries
  // the si_* readings.
  bool without_scale_invariant_norm = false;
  // The pace probe's coefficients in place of the single-step statistics' x_0 and B_n, where a
  // baseline carries the probe (LargeBatchSettings::pace_probe). The report shows the other form
  // beside it where a baseline carries the probe.
  bool pace_probe = false;
  // What a run past the no-progress bound does (LargeBatchSettings::past_bound): by default each
  // baseline's start curvature decides; the report shows the plain bound and the edge of stability
  // beside it.
  PastBound past_bound = PastBound::kFromStart;
  // Predict every run from this seed's baseline alone (as the main command's Q4 predicts from the
  // one curve a profile carries), not each run from its own seed's; its loss after epoch 1 is then
  // every run's default target. The other seeds' baselines are not used.
  std::optional<uint64_t> from_seed;
  // DIR/plan.csv (`measure largebatch-plan`): the runs it lists are compared with the predictions
  // stored there as well, and one of them not ended yet is waiting, not an error. Empty: no plan.
  std::string plan_file;
  // Other plans of the same folder (e.g. plan-edge-of-stability.csv): a run planned there and not
  // ended yet is waiting too, not an error; their predictions are not compared here.
  std::vector<std::string> other_plan_files;
};

struct RunName {
  int64_t batch = 0;
  LrRule rule = LrRule::kConstant;
  bool lars = false;  // b<batch>-lars-s<seed>.yaml: LARS under the linear-warmup rule
  uint64_t seed = 0;
};
// b<batch>-<rule>-s<seed>.yaml (rule: constant, linear, linear-warmup, sqrt or lars) -> its
// parts; nullopt for any other name.
std::optional<RunName> parse_run_name(const std::string& file_name);
std::string rule_label(const RunName& name);  // "lars" or the lr rule's name

// One planned run, as stored in plan.csv (`measure largebatch-plan`, measure/largebatch/plan.h).
struct PlannedRun {
  std::string run;  // the run file's stem, b<batch>-<rule>-s<seed>
  RunName name;
  int line = 0;  // its line in plan.csv (0: not read from a file)
  // What it was predicted under: the epoch k, the target loss, the BatchNorm batch and warm-up.
  int epochs = 0;
  double target_loss = 0;
  double bn_batch = 0;
  double warmup_epochs = 0;  // a linear-warmup run's ramp; 0 for the other rules
  // The prediction (LargeBatchPrediction's fields of the same names).
  bool no_progress = false;
  std::optional<double> loss_at_k;
  std::optional<double> train_accuracy_at_k;
  std::optional<double> test_accuracy_at_k;
  std::optional<double> epochs_to_target;  // the model's own crossing
  std::vector<double> loss_by_epoch;
  std::string planned_at;    // UTC, ISO 8601
  int run_epochs_at_plan = 0;  // epochs the run's file held when it was planned (0: none yet)
};

// Where a run ends after k epochs: trained (its loss below the untrained ln C), no progress (at
// or above ln C, up to twice it), blew up (past twice ln C, or not finite: the run stopped). The
// model predicts the first two; a run that blew up agrees with "no progress", and its loss, which
// only says how far it ran away, is compared by regime alone.
enum class Regime { kTrained, kNoProgress, kBlewUp };
std::string to_string(Regime regime);

// The regime a prediction (the model's now, or one stored in a plan) puts a run in after epoch k:
// no progress where the model says so or its loss at k is ln C or above; trained where that loss
// is below, or where no loss at k exists because the path left the baseline's curve below its end
// (it crossed the target on the way, or its epochs on the curve are under ln C); nullopt where it
// predicts nothing (a baseline that never trained).
std::optional<Regime> predicted_regime(bool no_progress, const std::optional<double>& loss_at_k,
                                       const std::vector<double>& loss_by_epoch,
                                       const std::optional<double>& epochs_to_target_model, int num_classes);

// One run against its prediction.
struct RunComparison {
  RunName run;
  std::string file;
  double target_loss = 0;
  double warmup_epochs = 0;  // the run's recorded linear-warmup ramp (0: none recorded)
  LargeBatchPrediction predicted;
  std::optional<double> loss_at_k;            // measured: the run's epoch-k mean training loss
  std::optional<double> test_accuracy_at_k;   // measured
  // measured: the test accuracy after epoch k with BatchNorm's statistics recomputed (measure
  // baseline --recompute-bn), where the run carries it
  std::optional<double> test_accuracy_recomputed_at_k;
  // measured: the run's epoch-k mean training accuracy (training mode, over the epoch's batches),
  // where the model places the run on the baseline's curve without the eval-mode reading
  std::optional<double> train_accuracy_at_k;
  // measured: the scale-invariant weights' |w|^2 after epoch k, where the run carries the si_* readings
  // (against predicted.weight_sq_at_k, the model's own growth of it)
  std::optional<double> weight_sq_at_k;
  // How much further along the baseline's curve the run is after epoch k than predicted: the
  // examples at which the baseline's curve, less the run's modelled level gaps at k (momentum's
  // floor and BatchNorm's batch), reads the run's measured epoch-k loss, over those at which it
  // reads the predicted one. Above 1: the run went faster than the model's path (the pace, not the
  // level); nullopt where either loss is missing, the run did not train, or the curve never reads it.
  std::optional<double> pace_ratio;
  std::optional<double> epochs_to_target;     // measured: first crossing of the target, interpolated
  // predicted, read as the measured one is: where the run records one loss per epoch (its mean),
  // from the predicted epoch means at the same points; else the model's own crossing
  // (predicted.epochs_to_target).
  std::optional<double> predicted_epochs_to_target;
  std::string measured_missing;               // why loss_at_k is empty: diverged, incomplete
  // Predicted: kNoProgress where the model says so or its loss at k is at or above ln C (a path
  // that stays in a stall of the baseline), else kTrained; nullopt where the loss is not predicted.
  // Measured: nullopt for a LARS run only.
  std::optional<Regime> predicted_regime;
  std::optional<Regime> measured_regime;
  // LARS: measured only, the model has no layer-wise rule (predicted stays empty, no errors).
  bool measured_only = false;
  // Errors where both sides exist: (predicted - measured) / measured in %, and in points. The loss
  // not where the run blew up (loss_error_pct_blown_up has it).
  std::optional<double> loss_error_pct;
  std::optional<double> loss_error_pct_blown_up;
  std::optional<double> accuracy_error_points;
  std::optional<double> train_accuracy_error_points;
  std::optional<double> epochs_error_pct;
  // predicted.test_accuracy_recomputed_at_k less test_accuracy_recomputed_at_k, where both exist
  std::optional<double> recomputed_accuracy_error_points;
  // measured: how steady the run's own running-statistics lag (recomputed less eval mode) is: the
  // mean absolute difference, in points, of its lag at each epoch's end past the warm-up and the
  // first epoch, to epoch k, from their mean; where at least two such epochs carry both readings.
  std::optional<double> lag_scatter_points;
  // To CompareOptions::target_accuracy: measured, the first crossing of the run's test evaluations
  // (linear between them, from chance at 0); predicted, the model's; the error in %.
  std::optional<double> epochs_to_target_accuracy;
  std::optional<double> accuracy_target_error_pct;
  // The prediction stored for this run before it ended (CompareOptions::plan_file), compared as the
  // current one is: its regime, errors and the epochs to target read as the run records them.
  struct Planned {
    PlannedRun run;
    std::optional<Regime> predicted_regime;
    std::optional<double> predicted_epochs_to_target;
    std::optional<double> loss_error_pct;
    std::optional<double> accuracy_error_points;
    std::optional<double> train_accuracy_error_points;
    std::optional<double> epochs_error_pct;
    bool same_as_now = false;  // the model predicts the same regime and loss today (to 1e-6)
    std::string not_compared;  // why the stored prediction does not apply: other epochs, target, BN batch, warm-up
  };
  std::optional<Planned> planned;
};

// Errors over the runs where both sides exist: their mean absolute value, their signed mean (the
// bias: + where the predictions are high) and how many runs they are.
struct ErrorSummary {
  double mean_abs = 0;
  double bias = 0;
  int count = 0;
};
ErrorSummary summarise_errors(const std::vector<double>& errors);

struct ComparisonSummary {
  std::vector<RunComparison> runs;          // sorted by seed, rule (LARS last), batch
  int measured_only = 0;                    // LARS runs: no prediction
  std::vector<TrainingCurve> baselines;     // one per seed, in seed order
  std::vector<uint64_t> seeds;
  // The errors over the runs where both sides exist.
  ErrorSummary loss;
  ErrorSummary accuracy;
  ErrorSummary epochs;
  // The runs that blew up (predicted, complete or stopped), left out of the loss error, and the loss
  // error with their losses counted as well.
  int blown_up = 0;
  ErrorSummary loss_with_blown_up;
  // Predicted regime (trained, no progress) x measured regime (trained, no progress, blew up), over
  // the runs where both exist; agreement: trained as trained, no progress as no progress or blew up.
  int regimes[2][3] = {{0, 0, 0}, {0, 0, 0}};
  int regime_agree = 0;
  int regime_count = 0;
  // Runs whose target is reached on one side only (predicted "never" and measured, or the other
  // way round), and on neither: no error percentage exists for them.
  int target_one_side = 0;
  int target_neither = 0;
  // Runs whose target loss is where they start (at or above ln C): not compared.
  int target_at_start = 0;
  // The same mean absolute errors over the runs the model predicts to train (not "no progress"):
  // the test of the McCandlish relation itself.
  ErrorSummary trained_loss;
  ErrorSummary trained_accuracy;
  int no_progress_predicted = 0;
  // The training accuracy (the epoch's mean in training mode) over the same runs predicted to
  // train: where along the baseline's curve the model puts each run, without the test set's one
  // evaluation in eval mode (BatchNorm's running statistics) that the accuracy error reads.
  ErrorSummary trained_train_accuracy;
  // The runs' own seed-to-seed spread, the noise floor of any prediction that gives one value per
  // configuration (rule and batch): over the configurations run with two or more seeds, the mean
  // absolute error of each run's configuration mean against it, as the errors above are taken.
  // The loss over the configurations none of whose runs passed twice the untrained loss (a run
  // that blew up has no loss to spread around).
  double spread_loss_pct = 0;
  int spread_loss_count = 0;
  double spread_accuracy_points = 0;
  int spread_accuracy_count = 0;
  // A single test evaluation's scatter: the mean absolute difference between each of the baselines'
  // test evaluations in epoch k (those recorded with several an epoch) and their epoch's mean. A
  // run's one evaluation after epoch k is one such draw; the model predicts the mean.
  double evaluation_scatter_points = 0;
  int evaluation_scatter_count = 0;  // evaluations
  // BatchNorm's statistics recomputed (measure baseline --recompute-bn), over the runs with an
  // accuracy error whose prediction and run both carry it: the mean absolute error of that test
  // accuracy, the same runs' eval-mode accuracy error, and the runs' own running-statistics lag, the
  // recomputed accuracy less eval mode's after epoch k (mean, signed; in points).
  double recomputed_accuracy_error_points = 0;
  double recomputed_eval_accuracy_error_points = 0;
  double recomputed_lag_points = 0;
  int recomputed_count = 0;
  // Over those runs, the mean of RunComparison::lag_scatter_points, and the same over the runs whose
  // rule raises the lr over the baseline's at epoch k and over the rest.
  double lag_scatter_points = 0;
  int lag_scatter_count = 0;
  double lag_scatter_raised_points = 0;
  int lag_scatter_raised_count = 0;
  double lag_scatter_level_points = 0;
  int lag_scatter_level_count = 0;
  // The epochs to the target accuracy (CompareOptions::target_accuracy): the mean absolute error
  // over the runs that reached it within k epochs and were predicted to, and the runs where only
  // one side reached it within k epochs.
  double accuracy_target_error_pct = 0;
  int accuracy_target_count = 0;
  int accuracy_target_one_side = 0;
  // The pre-registered runs (CompareOptions::plan_file): those compared with their stored
  // predictions, planned runs not ended yet (no file, or fewer than k epochs and not stopped), and
  // planned runs whose stored prediction does not apply (RunComparison::Planned::not_compared).
  // The errors as above, over the runs compared; "trained" over those predicted to train.
  int planned_rows = 0;
  std::map<std::string, int> planned_rows_by_registration;  // by planned_at: the runs planned together
  // Per registration (planned_at), over its runs compared with their stored predictions.
  struct RegistrationFigures {
    int compared = 0;
    int regime_agree = 0;
    int regime_count = 0;
    ErrorSummary loss;
    ErrorSummary accuracy;
    ErrorSummary epochs;
  };
  std::map<std::string, RegistrationFigures> registration_figures;
  int planned_waiting = 0;
  int planned_not_comparable = 0;
  int planned_changed = 0;  // compared runs the model now predicts otherwise
  int planned_regime_agree = 0;
  int planned_regime_count = 0;
  ErrorSummary planned_loss;
  ErrorSummary planned_accuracy;
  ErrorSummary planned_epochs;
  ErrorSummary planned_trained_loss;
  ErrorSummary planned_trained_accuracy;
  ErrorSummary planned_trained_train_accuracy;
};

// The folder's baseline: b<o.base_batch>-constant-s<seed>.yaml.
bool is_baseline(const RunName& name, const CompareOptions& o);
// Each seed's baseline in o.runs_dir, checked trained alike (check as for a run) and at least
// o.epochs long, max_lr cleared under assume_tuned_baseline. Throws std::runtime_error naming the
// file, or the folder where --from-seed names a seed without one.
std::map<uint64_t, TrainingCurve> load_baselines(const CompareOptions& o);
// The model's settings for a run under `rule` predicted from `baseline` with o's form of the model:
// the run's warm-up where it recorded one (> 0; measure's default otherwise), o's target loss or
// the baseline's loss after epoch 1.
LargeBatchSettings run_settings(const CompareOptions& o, LrRule rule, double warmup_epochs,
                                const TrainingCurve& baseline);

// The epochs to `target` that `predicted` gives, read as `run` records its own: where the run
// records one loss per epoch (its mean), the predicted epoch means crossed as BaselineCurve crosses
// the run's; else, or where the means do not cross, the model's own crossing (see compare.cpp).
std::optional<double> epochs_to_target_as_recorded(const TrainingCurve& run, int epochs, int num_classes,
                                                   double target, const LargeBatchPrediction& predicted);

// Reads RUNS and compares. Throws std::runtime_error naming the file for a missing baseline, a
// run that is neither complete (k epochs) nor marked failed, or an unreadable curve.
ComparisonSummary compare_large_batch_runs(const CompareOptions& options);

// A run's own running-statistics lag after epoch k: its recomputed test accuracy less eval mode's, in
// points (both measured; the run must carry both).
double recomputed_lag_points(const RunComparison& c);
// Whether any baseline the comparison used carries the pace probe.
bool any_pace_probe(const ComparisonSummary& s);
// A number as an ostream prints it (6 significant digits, no trailing zeros): 0.1, 5e-04 -> 0.0005.
std::string plain_number(double value);

// `measure largebatch-compare` (compare_cli.cpp): the report (compare_report.h) and the plot
// (compare_plot.h) of compare_large_batch_runs, into the runs' folder.
int largebatch_compare_main(int argc, char** argv);

}  // namespace trainsim::measure
