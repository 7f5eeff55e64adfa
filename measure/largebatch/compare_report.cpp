#include "largebatch/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "format/csv.h"

namespace trainsim::measure {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string cell(const std::optional<double>& value, int digits) { return value ? fixed(*value, digits) : "-"; }

std::string signed_cell(const std::optional<double>& value, int digits) {
  if (!value) return "-";
  return (*value >= 0 ? "+" : "") + fixed(*value, digits);
}

// A mean absolute error with its bias: "7.6%, bias +7.4%", "4.7 points, bias -1.2"; "n/a" over no
// runs. `unit`: "%" or " points".
std::string error_text(const ErrorSummary& e, const std::string& unit) {
  if (e.count == 0) return "n/a";
  const std::string bias = (e.bias >= 0 ? "+" : "") + fixed(e.bias, 1);
  return fixed(e.mean_abs, 1) + unit + ", bias " + bias + (unit == "%" ? "%" : "");
}

// error_text with the number of runs after it: "7.6%, bias +7.4% (35)".
std::string counted_error_text(const ErrorSummary& e, const std::string& unit) {
  return error_text(e, unit) + " (" + std::to_string(e.count) + ")";
}

}  // namespace

std::string format_error_lines(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  const std::size_t predicted = s.runs.size() - static_cast<std::size_t>(s.measured_only);
  const auto over = [&](int n) { return " over " + std::to_string(n) + " of " + std::to_string(predicted) + " runs"; };
  std::string out;
  out += "loss error: " + error_text(s.loss, "%") +
         " (training loss at epoch " + k + "," + over(s.loss.count) +
         (s.blown_up > 0 ? "; " + std::to_string(s.blown_up) + " blown up (past twice the untrained loss): by regime only"
                         : std::string()) +
         ")\n";
  out += "accuracy error: " + error_text(s.accuracy, " points") +
         " (test accuracy at epoch " + k + "," + over(s.accuracy.count) + ")\n";
  out += "epochs-to-target error: " + error_text(s.epochs, "%") +
         " (epochs to the target loss," + over(s.epochs.count) + ": the runs that reached it in " + k +
         " epochs and were predicted)\n";
  return out;
}

std::string format_comparison_csv(const ComparisonSummary& s) {
  std::string out =
      "seed,rule,batch,target_loss,pred_loss_at_k,meas_loss_at_k,loss_error_pct,pred_test_acc_at_k,meas_test_acc_at_k,"
      "accuracy_error_points,pred_epochs_to_target,meas_epochs_to_target,epochs_error_pct,no_progress_predicted,measured_missing,"
      "pred_epochs_to_target_model,pred_regime,meas_regime,pred_batchnorm_gap_at_k,pred_train_acc_at_k,meas_train_acc_at_k,"
      "train_accuracy_error_points,pred_epochs_to_target_accuracy,meas_epochs_to_target_accuracy,"
      "epochs_to_accuracy_error_pct,pred_start_x,pred_weight_sq_at_k,meas_weight_sq_at_k,pace_ratio,"
      "pred_test_acc_recomputed_at_k,meas_test_acc_recomputed_at_k,recomputed_accuracy_error_points\n";
  const auto num = [](const std::optional<double>& v) { return v ? fixed(*v, 6) : std::string(); };
  for (const auto& c : s.runs) {
    out += std::to_string(c.run.seed) + "," + rule_label(c.run) + "," + std::to_string(c.run.batch) + "," +
           fixed(c.target_loss, 6) + "," + num(c.predicted.loss_at_k) + "," + num(c.loss_at_k) + "," +
           num(c.loss_error_pct ? c.loss_error_pct : c.loss_error_pct_blown_up) + "," +
           num(c.predicted.test_accuracy_at_k) + "," + num(c.test_accuracy_at_k) + "," +
           num(c.accuracy_error_points) + "," + num(c.predicted_epochs_to_target) + "," + num(c.epochs_to_target) +
           "," + num(c.epochs_error_pct) + "," + (c.predicted.no_progress ? "true" : "false") + "," +
           csv::field(c.measured_missing) + "," + num(c.predicted.epochs_to_target) + "," +
           (c.predicted_regime ? to_string(*c.predicted_regime) : std::string()) + "," +
           (c.measured_regime ? to_string(*c.measured_regime) : std::string()) + "," +
           num(c.predicted.batchnorm_gap_at_k) + "," + num(c.predicted.train_accuracy_at_k) + "," +
           num(c.train_accuracy_at_k) + "," + num(c.train_accuracy_error_points) + "," +
           num(c.predicted.epochs_to_target_accuracy) + "," + num(c.epochs_to_target_accuracy) + "," +
           num(c.accuracy_target_error_pct) + "," + num(c.predicted.start_x) + "," +
           num(c.predicted.weight_sq_at_k) + "," + num(c.weight_sq_at_k) + "," + num(c.pace_ratio) + "," +
           num(c.predicted.test_accuracy_recomputed_at_k) + "," + num(c.test_accuracy_recomputed_at_k) + "," +
           num(c.recomputed_accuracy_error_points) + "\n";
  }
  return out;
}

std::string format_accuracy_target_line(const ComparisonSummary& s, const CompareOptions& o) {
  return "epochs-to-accuracy error: " +
         (s.accuracy_target_count ? fixed(s.accuracy_target_error_pct, 1) + "%" : std::string("n/a")) +
         " (epochs to test accuracy " + plain_number(*o.target_accuracy) + ", over " +
         std::to_string(s.accuracy_target_count) + " runs: the runs that reached it in " + std::to_string(o.epochs) +
         " epochs and were predicted; " + std::to_string(s.accuracy_target_one_side) +
         " reached it in " + std::to_string(o.epochs) + " epochs on one side only)\n";
}

std::string format_planned_line(const ComparisonSummary& s, const std::string& plan) {
  return "pre-registered (" + plan + "): " + std::to_string(s.planned_rows) + " runs planned, " +
         std::to_string(s.planned_waiting) + " not ended; regime agreement " + std::to_string(s.planned_regime_agree) +
         " of " + std::to_string(s.planned_regime_count) + "; loss " + counted_error_text(s.planned_loss, "%") +
         ", accuracy " + counted_error_text(s.planned_accuracy, " points") + ", epochs to target " +
         counted_error_text(s.planned_epochs, "%") + "; the model as built now predicts " +
         (s.planned_changed > 0 ? std::to_string(s.planned_changed) + " of them otherwise" : std::string("the same")) +
         "\n";
}

namespace {

// The accuracy with BatchNorm's statistics recomputed, where runs and their baseline carry it: the
// figures on one line, then each such run.
std::string format_recomputed_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out =
      "\n### BatchNorm's statistics recomputed\n\nThe runs whose test accuracy was also measured with BatchNorm's "
      "statistics estimated again on the weights (measure baseline --recompute-bn), predicted from the baseline's "
      "curve of the same (docs/LARGE_BATCH.md, \"The running statistics' lag in every run\"): accuracy error " +
      fixed(s.recomputed_accuracy_error_points, 1) + " points over " + std::to_string(s.recomputed_count) +
      " runs, against eval mode's " + fixed(s.recomputed_eval_accuracy_error_points, 1) +
      " points on the same runs; the runs' own running-statistics lag (recomputed less eval mode, after epoch " + k +
      ") " + fixed(s.recomputed_lag_points, 1) + " points on average.";
  if (s.lag_scatter_count > 0) {
    const auto part = [](int count, double points, const std::string& what) {
      return count > 0 ? "; " + std::to_string(count) + " " + what + ": " + fixed(points, 1) : std::string();
    };
    out += " The lag is not steady from one evaluation to the next: at each epoch's end from the first past epoch 1 "
           "and the warm-up to epoch " + k + ", a run's lag lies " + fixed(s.lag_scatter_points, 1) +
           " points from that run's own mean (mean absolute, over " + std::to_string(s.lag_scatter_count) + " runs" +
           part(s.lag_scatter_raised_count, s.lag_scatter_raised_points, "at an lr the rule raises over the baseline's") +
           part(s.lag_scatter_level_count, s.lag_scatter_level_points, "at the baseline's lr or below") +
           "; a drift of the lag over the epochs counts in it too): a prediction that carried each run's mean lag "
           "would still miss its one eval-mode reading by about that much, on top of the recomputed error.";
  }
  out += "\n\n| seed | rule | batch | eval mode | recomputed | lag (points) | the lag's scatter | predicted eval mode | "
         "predicted recomputed | error eval mode | error recomputed |\n"
         "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const auto cell = [](const std::optional<double>& v, int digits) { return v ? fixed(*v, digits) : std::string("-"); };
  for (const RunComparison& c : s.runs) {
    if (!c.recomputed_accuracy_error_points || !c.accuracy_error_points) continue;
    out += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) + " | " +
           fixed(*c.test_accuracy_at_k, 4) + " | " + fixed(*c.test_accuracy_recomputed_at_k, 4) + " | " +
           fixed(recomputed_lag_points(c), 1) + " | " + cell(c.lag_scatter_points, 1) + " | " +
           cell(c.predicted.test_accuracy_at_k, 4) + " | " + cell(c.predicted.test_accuracy_recomputed_at_k, 4) + " | " +
           fixed(*c.accuracy_error_points, 1) + " | " + fixed(*c.recomputed_accuracy_error_points, 1) + " |\n";
  }
  return out;
}

// The runs' pace ratios (RunComparison::pace_ratio) by rule, their geometric mean and range; and the
// scale-invariant weights' norm predicted against measured, where the runs recorded it.
std::string format_pace_section(const ComparisonSummary& s, const CompareOptions& o) {
  std::map<std::string, std::vector<double>> by_rule;
  for (const auto& c : s.runs) {
    if (c.pace_ratio) by_rule[rule_label(c.run)].push_back(*c.pace_ratio);
  }
  if (by_rule.empty()) return "";
  const std::string k = std::to_string(o.epochs);
  std::string out = "\n## Level or pace\n\n"
                    "Where each run is on the baseline's curve after epoch " + k + ": the examples at which the "
                    "baseline's curve, less the run's modelled level gaps (momentum's noise floor and BatchNorm's "
                    "batch, as predicted at epoch " + k + "), reads the run's measured loss, over those at which it "
                    "reads the predicted loss (comparison.csv's pace_ratio). 1: the model's path is where the run "
                    "is, and a loss error is in the level; above 1: the run went further along the curve than the "
                    "path (the pace); runs that trained and were predicted to.\n\n"
                    "| rule | runs | pace ratio (geometric mean) | range |\n|:---|---:|---:|:---|\n";
  for (const auto& [rule, ratios] : by_rule) {
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    out += "| " + rule + " | " + std::to_string(ratios.size()) + " | " +
           fixed(std::exp(log_sum / static_cast<double>(ratios.size())), 2) + " | " + fixed(*lo, 2) + " to " +
           fixed(*hi, 2) + " |\n";
  }
  // The norm the pace reads, where the runs recorded it.
  std::string norms;
  for (const auto& c : s.runs) {
    if (!c.weight_sq_at_k || !c.predicted.weight_sq_at_k) continue;
    norms += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) +
             " | " + fixed(*c.predicted.weight_sq_at_k, 1) + " | " + fixed(*c.weight_sq_at_k, 1) + " | " +
             signed_cell((*c.predicted.weight_sq_at_k - *c.weight_sq_at_k) / *c.weight_sq_at_k * 100.0, 1) + " |\n";
  }
  if (!norms.empty()) {
    out += "\nThe scale-invariant weights' |w|^2 after epoch " + k + ", as the model grows it along the run's path "
           "and as the run measured it (the runs that carry the si_* readings):\n\n"
           "| seed | rule | batch | predicted | measured | error % |\n|---:|:---|---:|---:|---:|---:|\n" + norms;
  }
  return out;
}

// The pre-registered figures per registration, the runs planned together (one planned_at): each is a
// test of the model as it was built then, which the figures over every plan mix.
std::string format_registrations(const ComparisonSummary& s) {
  if (s.planned_rows_by_registration.size() < 2 || s.registration_figures.empty()) return "";
  std::string out = "\nBy registration (the runs planned together, with the model as built then):\n\n";
  for (const auto& [registered, rows] : s.planned_rows_by_registration) {
    out += "- " + registered + ": " + std::to_string(rows) + " runs planned, ";
    const auto f = s.registration_figures.find(registered);
    if (f == s.registration_figures.end()) {
      out += "none compared\n";
      continue;
    }
    const ComparisonSummary::RegistrationFigures& r = f->second;
    out += std::to_string(r.compared) + " compared; regime agreement " + std::to_string(r.regime_agree) + " of " +
           std::to_string(r.regime_count) + "; loss " + counted_error_text(r.loss, "%") + ", accuracy " +
           counted_error_text(r.accuracy, " points") + ", epochs to target " + counted_error_text(r.epochs, "%") + "\n";
  }
  return out;
}

std::string format_planned_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out = "\n## Pre-registered runs (plan.csv)\n\n"
                    "The runs `measure largebatch-plan` predicted before they ended, against the predictions stored "
                    "then (not the model's current ones), read as the table above reads them: runs the model had not "
                    "seen when it predicted them. \"planned\": when, and how many epochs the run's file held then; "
                    "\"now\": whether the model as built today predicts the same regime and loss.\n\n"
                    "| run | planned | regime pred | regime meas | loss pred | loss meas | err % | acc pred | acc meas | "
                    "err pts | epochs pred | epochs meas | err % | now |\n"
                    "|:---|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (const auto& c : s.runs) {
    if (!c.planned) continue;
    const RunComparison::Planned& p = *c.planned;
    const std::string when = p.run.planned_at + (p.run.run_epochs_at_plan > 0
                                                     ? " (" + std::to_string(p.run.run_epochs_at_plan) + " epochs run)"
                                                     : std::string());
    if (!p.not_compared.empty()) {
      out += "| " + p.run.run + " | " + when + " | - | - | - | - | - | - | - | - | - | - | - | not compared: " +
             p.not_compared + " |\n";
      continue;
    }
    out += "| " + p.run.run + " | " + when + " | " + (p.predicted_regime ? to_string(*p.predicted_regime) : "-") +
           " | " + (c.measured_regime ? to_string(*c.measured_regime) : "-") + " | " + cell(p.run.loss_at_k, 4) +
           " | " + cell(c.loss_at_k, 4) + " | " + signed_cell(p.loss_error_pct, 1) + " | " +
           cell(p.run.test_accuracy_at_k, 4) + " | " + cell(c.test_accuracy_at_k, 4) + " | " +
           signed_cell(p.accuracy_error_points, 1) + " | " + cell(p.predicted_epochs_to_target, 2) + " | " +
           cell(c.epochs_to_target, 2) + " | " + signed_cell(p.epochs_error_pct, 1) + " | " +
           (p.same_as_now ? "same" : "changed: " + cell(c.predicted.loss_at_k, 4)) + " |\n";
  }
  out += "\n" + format_planned_line(s) + "\nOver the planned runs predicted to train: loss " +
         error_text(s.planned_trained_loss, "%") + " over " +
         std::to_string(s.planned_trained_loss.count) + " runs, accuracy " +
         error_text(s.planned_trained_accuracy, " points") + " over " +
         std::to_string(s.planned_trained_accuracy.count) + ", training accuracy " +
         error_text(s.planned_trained_train_accuracy, " points") + " over " +
         std::to_string(s.planned_trained_train_accuracy.count) + " (epoch " + k + ")." +
         (s.planned_changed > 0 ? " The model now predicts " + std::to_string(s.planned_changed) +
                                      " of them otherwise: the figures above are the stored predictions'."
                                : std::string()) +
         (s.planned_not_comparable > 0 ? " " + std::to_string(s.planned_not_comparable) +
                                             " planned runs are not compared: their plan asked another question."
                                       : std::string()) +
         "\n";
  out += format_registrations(s);
  return out;
}

// The title, how to reproduce it, what predicts what, and how every run trained.
std::string format_intro(const ComparisonSummary& s, const CompareOptions& o, const std::string& command) {
  const std::string k = std::to_string(o.epochs);
  std::string out = "# Large batches on real data: predicted vs measured\n\n";
  out += "Reproduce: `" + command + "` on the runs of `scripts/largebatch-fashion.sh` (docs/LARGE_BATCH.md).\n\n";
  if (o.from_seed) {
    out += "Seed " + std::to_string(*o.from_seed) + "'s baseline (batch " + std::to_string(o.base_batch) +
           ", constant lr) is the only input of every prediction, whatever the run's seed (--from-seed: as the main "
           "command's Q4 predicts from the one curve a profile carries; the other seeds' baselines are not used); "
           "every other run is compared with it after " + k + " epochs.\n\n";
  } else {
    out += "Each seed's baseline (batch " + std::to_string(o.base_batch) +
           ", constant lr) is the only input of the predictions (trainsim_stats, what `simulate` prints as Q4); "
           "every other run is compared with them after " + k + " epochs.\n\n";
  }
  if (!s.baselines.empty()) {
    const TrainingCurve& b = s.baselines.front();
    out += "Every run and baseline here trained " + b.model + " on " + b.data + " data (" +
           std::to_string(b.train_samples) + " samples per epoch) with base lr " + plain_number(b.lr) + ", momentum " +
           plain_number(b.momentum) + " and weight decay " + plain_number(b.weight_decay) + " (checked)" +
           (b.momentum > 0 ? ": the step equation is plain SGD's, and the momentum enters as the noise floor it "
                             "raises, 1/(1 - m) times plain SGD's (docs/LARGE_BATCH.md, \"Momentum's noise floor\"; "
                             "without it in a section below the errors)"
                           : ": plain SGD, the step equation's own setting") +
           ".\n\n";
  }
  return out;
}

// Each seed's baseline: its readings per epoch and how the bound reads it.
std::string format_baselines_section(const ComparisonSummary& s, const CompareOptions& o) {
  std::string out;
  out += "## Baselines\n\nB_simple: tr(Sigma) / |G|^2; eps_max: the largest useful lr |g|^2 / g^T H g along the batch "
         "gradient (\"-\": not measured); x_0 = lr (1 + B_simple/B_0) / eps_max, the baseline's lr against the tuned "
         "one; B_noise: McCandlish's tr(H Sigma) / G^T H G and its standard error (the predictions use B_noise "
         "wherever its standard error is at most a quarter of it, B_simple elsewhere; with B_simple alone in a "
         "section below the errors); all measured along the baseline, the moving averages at each epoch's end; "
         "BN gap: the BatchNorm probe's training-mode loss at the baseline's BatchNorm batch less at its largest "
         "(\"-\": no probe), what a run with BatchNorm batches that large records lower on the same weights.\n\n"
         "| seed | data | epoch | train loss | test acc | B_simple | eps_max | x_0 | B_noise | s.e. | BN gap |\n"
         "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (size_t i = 0; i < s.baselines.size(); ++i) {
    if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
    const TrainingCurve& b = s.baselines[i];
    for (const auto& p : b.epochs) {
      const bool measured = p.max_lr > 0;
      const double x0 = measured ? lr_over_tuned_lr(b.lr, static_cast<double>(b.batch), p.noise_scale, p.max_lr) : 0;
      out += "| " + std::to_string(s.seeds[i]) + " | " + b.data + " | " + std::to_string(p.epoch) + " | " +
             fixed(p.train_loss, 4) + " | " + fixed(p.test_accuracy, 4) + " | " + fixed(p.noise_scale, 1) + " | " +
             (measured ? fixed(p.max_lr, 4) : std::string("-")) + " | " + (measured ? fixed(x0, 2) : std::string("-")) +
             " | " + (p.curvature_noise_scale > 0 ? fixed(p.curvature_noise_scale, 1) : std::string("-")) + " | " +
             (p.curvature_noise_scale_se > 0 ? fixed(p.curvature_noise_scale_se, 1) : std::string("-")) + " | " +
             (p.probe_loss.empty() ? std::string("-")
                                   : fixed(p.probe_loss.front() - p.probe_loss.back(), 4) + " (" +
                                         std::to_string(b.probe_batches.front()) + " vs " +
                                         std::to_string(b.probe_batches.back()) + ")") +
             " |\n";
    }
  }
  out += "\nPast the bound (a run whose lr is past 2x the tuned lr somewhere on its path; docs/LARGE_BATCH.md, "
         "\"Which parameters set the bound\"), each seed's baseline read with:\n\n";
  for (size_t i = 0; i < s.baselines.size(); ++i) {
    if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
    out += "- seed " + std::to_string(s.seeds[i]) + ": " +
           read_past_bound(o.past_bound, s.baselines[i].start_curvature).reason + "\n";
  }
  return out;
}

// Every run against its prediction, one row each.
std::string format_runs_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out;
  out += "\n## Runs\n\nloss: mean training loss of epoch " + k + "; acc: test accuracy after epoch " + k +
         "; epochs: to the target loss (the predicting baseline's loss after epoch 1 unless --target-loss), "
         "interpolated "
         "(a run that records one mean loss per epoch is crossed between its epoch means, and its prediction the same "
         "way between the predicted epoch means; the model's own crossing is comparison.csv's "
         "pred_epochs_to_target_model); "
         "error = predicted - measured (loss and epochs in % of the measured value, accuracy in points).\n\n";
  out += "| seed | rule | batch | B/B0 | loss pred | loss meas | err % | acc pred | acc meas | err pts | epochs pred | "
         "epochs meas | err % | notes |\n";
  out += "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n";
  for (const auto& c : s.runs) {
    std::string notes;
    if (c.predicted.no_progress) notes = "predicted: no progress (lr above 2x the tuned lr)";
    if (c.predicted.past_the_bound && !c.predicted.no_progress) notes = "predicted at the edge of stability (lr above 2x the tuned lr)";
    if (c.predicted.stall_passed_epochs) {
      notes = "predicted: passes the baseline's stall at chance after " + fixed(*c.predicted.stall_passed_epochs, 2) +
              " epochs";
    }
    if (!c.measured_only && !c.predicted.loss_at_k && !c.predicted.loss_missing.empty()) {
      notes = "not predicted: " + c.predicted.loss_missing;
    }
    if (c.predicted.start_x && *c.predicted.start_x > LargeBatchModel::kNoProgressLrRatio) {
      notes += (notes.empty() ? "" : "; ") + std::string("starts at ") + fixed(*c.predicted.start_x, 1) +
               "x eps_max: a catapult, not in the prediction";
    }
    if (c.measured_only) notes = "LARS under linear-warmup: measured only (the model has no layer-wise rule)";
    if (!c.measured_missing.empty()) notes += (notes.empty() ? "" : "; ") + std::string("run: ") + c.measured_missing;
    if (c.loss_at_k && !c.epochs_to_target) notes += (notes.empty() ? "" : "; ") + std::string("target not reached in ") + k + " epochs";
    if (c.loss_error_pct_blown_up) {
      notes += (notes.empty() ? "" : "; ") + std::string("blew up (loss past twice the untrained): compared by regime, ") +
               "loss error " + signed_cell(c.loss_error_pct_blown_up, 1) + "% not averaged";
    }
    out += "| " + std::to_string(c.run.seed) + " | " + rule_label(c.run) + " | " + std::to_string(c.run.batch) +
           " | " + short_number(static_cast<double>(c.run.batch) / static_cast<double>(o.base_batch)) + "x | " +
           cell(c.predicted.loss_at_k, 4) + " | " + cell(c.loss_at_k, 4) + " | " + signed_cell(c.loss_error_pct, 1) +
           " | " + cell(c.predicted.test_accuracy_at_k, 4) + " | " + cell(c.test_accuracy_at_k, 4) + " | " +
           signed_cell(c.accuracy_error_points, 1) + " | " + cell(c.predicted_epochs_to_target, 2) + " | " +
           cell(c.epochs_to_target, 2) + " | " + signed_cell(c.epochs_error_pct, 1) + " | " + notes + " |\n";
  }
  out += "\nThe target within " + k + " epochs on one side only (no percentage exists): " +
         std::to_string(s.target_one_side) + " runs; on neither side (agreement as far as " + k +
         " epochs show): " + std::to_string(s.target_neither) + " runs" +
         (s.target_at_start > 0 ? "; at the start (a target at or above the untrained loss, from a baseline whose "
                                  "first epoch did not train; not compared): " + std::to_string(s.target_at_start) +
                                      " runs"
                                : std::string()) +
         ".\n";
  return out;
}

// The errors over the runs: the model's trained runs, regimes, all runs, the noise floors, per seed.
std::string format_errors_section(const ComparisonSummary& s, const CompareOptions& o) {
  const std::string k = std::to_string(o.epochs);
  std::string out;
  out += "\n## Errors (mean absolute, with the bias: their signed mean, + where the predictions are high)\n\n";
  if (s.measured_only > 0) {
    out += std::to_string(s.measured_only) + " LARS run(s) are measured only and in no error below. ";
  }
  out += std::to_string(s.no_progress_predicted) + " of the " + std::to_string(s.runs.size() - static_cast<std::size_t>(s.measured_only)) +
         " runs are predicted to make no progress (lr past 2x the tuned lr); over the runs predicted to train, "
         "the test of the McCandlish relation itself: loss " +
         error_text(s.trained_loss, "%") + " over " +
         std::to_string(s.trained_loss.count) + " runs, accuracy " +
         error_text(s.trained_accuracy, " points") +
         " over " + std::to_string(s.trained_accuracy.count) + " runs; their training accuracy (the epoch's mean in "
         "training mode, where the model places each run on the baseline's curve without the test set's evaluation "
         "in eval mode) " +
         error_text(s.trained_train_accuracy, " points") +
         " over " + std::to_string(s.trained_train_accuracy.count) + " runs.\n\n";
  out += "Regimes: where each run is after epoch " + k + " (trained: its loss below the untrained ln C; no progress: "
         "at or above it, up to twice it; blew up: past twice it, or stopped with a loss not finite), against the "
         "prediction. The model predicts train or no progress; a run that blew up agrees with no progress, and its "
         "loss, which says only how far it ran away, is left out of the loss error.\n\n"
         "| predicted \\ measured | trained | no progress | blew up |\n|:---|---:|---:|---:|\n";
  const char* predicted_names[2] = {"trains", "no progress"};
  for (int p = 0; p < 2; ++p) {
    out += std::string("| ") + predicted_names[p] + " | " + std::to_string(s.regimes[p][0]) + " | " +
           std::to_string(s.regimes[p][1]) + " | " + std::to_string(s.regimes[p][2]) + " |\n";
  }
  out += "\nregime agreement: " + std::to_string(s.regime_agree) + " of " + std::to_string(s.regime_count) +
         " runs\n\nWith the losses of the runs that blew up averaged as well: " +
         error_text(s.loss_with_blown_up, "%") +
         " over " + std::to_string(s.loss_with_blown_up.count) + " runs. Over all runs:\n\n";
  out += format_error_lines(s, o);
  if (o.target_accuracy) {
    out += "\nThe run's epochs to a test accuracy of " + plain_number(*o.target_accuracy) +
           " (--target-accuracy): its test evaluations (one at each epoch's end) crossed, linear between them from "
           "chance at the start; predicted: the model's (docs/LARGE_BATCH.md, \"Target accuracy\"); "
           "comparison.csv's pred_epochs_to_target_accuracy and meas_epochs_to_target_accuracy.\n\n" +
           format_accuracy_target_line(s, o);
  }
  out += "\nThe runs' own seed-to-seed spread, the noise floor of any prediction that gives one value per "
         "rule and batch (each configuration run with two or more seeds: its runs' mean against each run, as the "
         "errors are taken): loss " +
         (s.spread_loss_count ? fixed(s.spread_loss_pct, 1) + "%" : std::string("n/a")) + " over " +
         std::to_string(s.spread_loss_count) + " runs (configurations with no run past twice the untrained loss), " +
         "accuracy " + (s.spread_accuracy_count ? fixed(s.spread_accuracy_points, 1) + " points" : std::string("n/a")) +
         " over " + std::to_string(s.spread_accuracy_count) + " runs.";
  if (s.evaluation_scatter_count > 0) {
    out += " A single evaluation's scatter, the noise floor of comparing a run's one test evaluation after epoch " +
           k + " with a predicted mean: the baselines' " + std::to_string(s.evaluation_scatter_count) +
           " evaluations in epoch " + k + " lie " + fixed(s.evaluation_scatter_points, 1) +
           " points from their epoch's mean (mean absolute; at the baselines' batch and lr).";
  }
  out += "\n";
  if (s.recomputed_count > 0) out += format_recomputed_section(s, o);
  // Per seed: a seed whose baseline went wrong shows as such rather than inside the mean.
  out += "\nPer seed (mean absolute with the bias, runs in brackets):\n\n";
  for (size_t i = 0; i < s.seeds.size(); ++i) {
    std::vector<double> loss, accuracy, epochs;
    for (const auto& c : s.runs) {
      if (c.run.seed != s.seeds[i]) continue;
      if (c.loss_error_pct) loss.push_back(*c.loss_error_pct);
      if (c.accuracy_error_points) accuracy.push_back(*c.accuracy_error_points);
      if (c.epochs_error_pct) epochs.push_back(*c.epochs_error_pct);
    }
    const TrainingCurve& b = s.baselines[i];
    const BaselineCurve curve(b, o.num_classes);
    std::string state;
    if (o.from_seed && s.seeds[i] != *o.from_seed) {
      state = " (predicted from seed " + std::to_string(*o.from_seed) + "'s baseline)";
    } else if (curve.never_trained()) {
      state = " (its baseline never trained: loss " + fixed(b.epochs.back().train_loss, 3) + " in its last epoch; " +
              "nothing predicted)";
    } else if (curve.first_epoch_untrained()) {
      state = " (its baseline did not train in epoch 1: loss " + fixed(b.epochs.front().train_loss, 3) + ")";
    }
    out += "- seed " + std::to_string(s.seeds[i]) + state +
           ": loss " + counted_error_text(summarise_errors(loss), "%") + ", accuracy " +
           counted_error_text(summarise_errors(accuracy), " points") + ", epochs to target " +
           counted_error_text(summarise_errors(epochs), "%") + "\n";
  }
  return out;
}

// The same runs under another form of the model. `plan`: the plan whose stored predictions are this
// form's (empty: none; the others' are the model's).
std::string format_alternative(const std::string& title, const std::string& what, const ComparisonSummary& a,
                               const std::string& plan = "") {
  std::string out = "\n## " + title + "\n\n" + what + ", on the same runs: " + std::to_string(a.no_progress_predicted) +
                    " runs predicted to make no progress.\n\n";
  out += "- loss: " + error_text(a.loss, "%") + " over " + std::to_string(a.loss.count) +
         " runs (over the runs predicted to train: " + error_text(a.trained_loss, "%") +
         " over " + std::to_string(a.trained_loss.count) + ")\n";
  out += "- accuracy: " + error_text(a.accuracy, " points") + " over " +
         std::to_string(a.accuracy.count) + " runs (predicted to train: " +
         error_text(a.trained_accuracy, " points") + " over " +
         std::to_string(a.trained_accuracy.count) + ")\n";
  out += "- epochs to target: " + error_text(a.epochs, "%") + " over " +
         std::to_string(a.epochs.count) + " runs\n";
  if (a.recomputed_count > 0) {
    out += "- accuracy with BatchNorm's statistics recomputed: " + fixed(a.recomputed_accuracy_error_points, 1) +
           " points over " + std::to_string(a.recomputed_count) + " runs (eval mode's on the same runs: " +
           fixed(a.recomputed_eval_accuracy_error_points, 1) + " points)\n";
  }
  out += "- regime agreement: " + std::to_string(a.regime_agree) + " of " + std::to_string(a.regime_count) + " runs\n";
  if (!plan.empty() && a.planned_rows > 0) out += "- " + format_planned_line(a, plan);
  return out;
}

// The same runs under each other form of the model given (format_comparison_report's arguments).
std::string format_alternatives(const ComparisonSummary& s, const CompareOptions& o, const ComparisonSummary* assumed_tuned,
                                const ComparisonSummary* simple_noise, const ComparisonSummary* without_floor,
                                const ComparisonSummary* without_batchnorm, const ComparisonSummary* edge_of_stability,
                                const ComparisonSummary* plain_bound, const ComparisonSummary* without_norm,
                                const ComparisonSummary* other_pace) {
  std::string out;
  if (simple_noise) {
    out += format_alternative("The same with B_simple = tr(Sigma) / |G|^2 alone",
                "The model with the baselines' B_simple for B_n everywhere, their measured B_noise not used (as "
                "before its standard error was measured; LargeBatchSettings::curvature_noise_scale off, "
                "docs/LARGE_BATCH.md)",
                *simple_noise);
  }
  if (without_floor && !s.baselines.empty() && s.baselines.front().momentum > 0) {
    out += format_alternative("The same without momentum's noise floor",
                "The plain-SGD path alone, the run's loss read where the path is on the baseline's curve "
                "(LargeBatchSettings::momentum_floor off, docs/LARGE_BATCH.md)",
                *without_floor);
  }
  const bool probed = std::any_of(s.baselines.begin(), s.baselines.end(),
                                  [](const TrainingCurve& c) { return !c.probe_batches.empty(); });
  if (without_batchnorm && probed) {
    out += format_alternative("The same without the BatchNorm gap",
                "The run's loss read off the baseline's curve as it is, not lowered by what the baseline's "
                "BatchNorm probe measured between its BatchNorm batch and the run's (LargeBatchSettings::batchnorm_gap "
                "off, docs/LARGE_BATCH.md)",
                *without_batchnorm);
  }
  const bool normed = std::any_of(s.baselines.begin(), s.baselines.end(), [](const TrainingCurve& c) {
    return std::any_of(c.epochs.begin(), c.epochs.end(), [](const EpochPoint& e) { return e.si_weight_sq > 0; });
  });
  if (without_norm && normed) {
    out += format_alternative("The same without the scale-invariant weights' norm",
                "x read with the rule's plain lr ratio, not the run's lr / |w|^2 over the baseline's on the weights "
                "BatchNorm normalises (LargeBatchSettings::scale_invariant_norm off, docs/LARGE_BATCH.md, \"The "
                "scale-invariant weights' norm\")",
                *without_norm);
  }
  if (other_pace && any_pace_probe(s)) {
    out += format_alternative(o.pace_probe ? "The same without the pace probe" : "The same with the pace probe",
                o.pace_probe ? "x_0 and B_n as the single-step statistics read them along the baseline, the pace "
                               "probe's coefficients not used (LargeBatchSettings::pace_probe off, docs/LARGE_BATCH.md, "
                               "\"The pace probe in the model\")"
                             : "x_0 and B_n along the whole path scaled so that, at the state the baseline's pace "
                               "probe measured, they are the step equation's solved from its gains "
                               "(LargeBatchSettings::pace_probe on, docs/LARGE_BATCH.md, \"The pace probe in the "
                               "model\")",
                *other_pace);
    out += "\nThe pace probe's readings, as the model takes them with it on:\n\n";
    for (size_t i = 0; i < s.baselines.size(); ++i) {
      if (o.from_seed && s.seeds[i] != *o.from_seed) continue;
      CompareOptions on = o;
      on.pace_probe = true;
      const LargeBatchModel model(s.baselines[i], o.num_classes,
                                  run_settings(on, LrRule::kConstant, 0, s.baselines[i]));
      out += "- seed " + std::to_string(s.seeds[i]) + ": " + model.pace_probe_reason() + "\n";
    }
  }
  if (edge_of_stability) {
    out += format_alternative("The same at the edge of stability",
                "Every baseline read at the edge: the run's curvature following its lr, an lr above the tuned one "
                "(x > 1) progresses as at it, and no run is past the no-progress bound (PastBound::kEdge, "
                "docs/LARGE_BATCH.md, \"The edge of stability\"); its pre-registered predictions, where given, "
                "are plan-edge-of-stability.csv's",
                *edge_of_stability, "plan-edge-of-stability.csv");
  }
  if (plain_bound) {
    out += format_alternative("The same with the plain bound",
                "Every baseline read with plain SGD's bound: past 2x the tuned lr anywhere on its path a run makes "
                "no progress (PastBound::kNoProgress; the model's only reading before 2026-11-29's start curvature)",
                *plain_bound);
  }
  if (assumed_tuned) {
    out += format_alternative("The same with the baselines' lr taken as tuned",
                "The model before eps_max was measured (x_0 = 1 everywhere)", *assumed_tuned);
  }
  return out;
}

}  // namespace

std::string format_comparison_report(const ComparisonSummary& s, const CompareOptions& o, const std::string& command,
                                     const ComparisonSummary* assumed_tuned,
                                     const ComparisonSummary* simple_noise,
                                     const ComparisonSummary* without_floor,
                                     const ComparisonSummary* without_batchnorm,
                                     const ComparisonSummary* edge_of_stability,
                                     const ComparisonSummary* plain_bound,
                                     const ComparisonSummary* without_norm,
                                     const ComparisonSummary* other_pace, const std::string& figures) {
  std::string out = format_intro(s, o, command);
  out += figures;
  out += format_baselines_section(s, o);
  out += format_runs_section(s, o);
  out += format_errors_section(s, o);
  out += format_pace_section(s, o);
  if (s.planned_rows > 0) out += format_planned_section(s, o);
  out += format_alternatives(s, o, assumed_tuned, simple_noise, without_floor, without_batchnorm, edge_of_stability,
                              plain_bound, without_norm, other_pace);
  return out;
}

}  // namespace trainsim::measure
