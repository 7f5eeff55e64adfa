#include "report/large_batch.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "report/format.h"
#include "report/report.h"
#include "train/sync_batchnorm.h"

namespace trainsim::report {
namespace {

std::string optional_cell(const std::optional<double>& value, int significant = 4) {
  return value ? format_significant(*value, significant) : kNone;
}

// A figure that needs the simulated speed: "OOM" / "n/a" when the configuration has none.
std::string speed_cell(const SimResult& r, const std::optional<double>& value) {
  if (!r.runnable) return "n/a";
  return r.fits ? optional_cell(value) : "OOM";
}

// Plain short numbers for prose and ratios: 0.1, 0.25, 64, 1000 (%.4g, whole numbers from 1e4 on).
std::string plain(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value >= 1e4 ? "%.0f" : "%.4g", value);
  return buffer;
}

// "64x", "0.25x": the batch relative to the baseline's.
std::string ratio_cell(double ratio) { return plain(ratio) + "x"; }

// "*" where a batch `ratio` times the baseline's is outside the validated range.
const char* extrapolated_mark(double ratio) { return LargeBatchModel::validated_batch_ratio(ratio) ? "" : "*"; }

// The paragraph under a table whose rows carry extrapolated_mark.
std::string extrapolated_footnote(int64_t base_batch) {
  return "\n" +
         wrap_paragraph("* extrapolated: outside " + plain(LargeBatchModel::kValidatedBatchRatioMin) + "x-" +
                        plain(LargeBatchModel::kValidatedBatchRatioMax) + "x the baseline's batch of " +
                        std::to_string(base_batch) +
                        ", the range the model was checked at against real runs (docs/LARGE_BATCH.md, \"How it "
                        "was validated\")") +
         "\n";
}

// Distinct notes numbered in order of first appearance: "[1]", "[1][3]".
class NumberedNotes {
 public:
  std::string refer(const std::vector<std::string>& notes) {
    std::string refs;
    for (const std::string& note : notes) {
      auto it = std::find(notes_.begin(), notes_.end(), note);
      if (it == notes_.end()) it = notes_.insert(notes_.end(), note);
      refs += "[" + std::to_string(it - notes_.begin() + 1) + "]";
    }
    return refs;
  }
  std::string list() const {
    std::string out;
    for (size_t i = 0; i < notes_.size(); ++i) out += wrap_paragraph("[" + std::to_string(i + 1) + "] " + notes_[i]);
    return out;
  }
  bool empty() const { return notes_.empty(); }

 private:
  std::vector<std::string> notes_;
};

// The batch BatchNorm normalises over in `r`: each device's, or the global one with DDP's
// SyncBatchNorm.
double batchnorm_batch(const SimResult& r) {
  const bool synced = r.spec.sync_batchnorm && r.spec.strategy == Strategy::kDdp && r.spec.gpus > 1;
  return static_cast<double>(synced ? r.global_batch : r.spec.batch_per_gpu);
}

// McCandlish et al.'s regime of a batch B against the critical batch: an example at B is worth
// E_min / E = 1 / (1 + B / B_crit) of one at a small batch; at least 3/4 (B <= B_crit / 3) is
// near-linear scaling, at most 1/4 (B >= 3 B_crit) leaves the steps within 4/3 of their floor.
const char* regime(double batch_over_critical) {
  if (batch_over_critical <= 1.0 / 3.0) return "near-linear";
  if (batch_over_critical < 3.0) return "diminishing";
  return "step-bound";
}

// The critical batch and the lr rules side by side: one row per global batch of the sweep (its
// first runnable configuration's BatchNorm batch), epochs to the target loss under each rule.
std::string format_rules_side_by_side(const LargeBatchReport& report, const ResultGrid& grid) {
  const LargeBatchModel& model = report.model();
  const std::optional<double> critical = model.predict(model.base_batch()).noise_scale_at_target;
  if (!critical || *critical <= 0) return "";
  std::map<int64_t, const SimResult*> firsts;  // per global batch, ascending: its first runnable result
  for (const SimResult& r : grid.all()) {
    if (r.runnable) firsts.emplace(r.global_batch, &r);
  }
  std::string out = wrap_paragraph(
      "The critical batch and the lr rules side by side. B_crit = " + plain(*critical) +
      ", the gradient noise scale where the baseline reaches the target loss (McCandlish et al. 2018: the "
      "steps to a target fall as S_min (1 + B_crit / B) and the examples grow as E_min (1 + B / B_crit)). "
      "Regime: near-linear where B <= B_crit / 3 (an example is worth at least 3/4 of one at a small batch: "
      "doubling the batch nearly halves the steps), step-bound where B >= 3 B_crit (at most 1/4: the steps "
      "are within 4/3 of their floor, a larger batch saves few), diminishing between. Epochs to the target "
      "loss under each lr rule (linear-warmup over " + plain(model.settings().warmup_epochs) +
      " epochs; \"stalls\": the rule's lr passes the largest useful one and the model predicts no progress; "
      "-: not predicted, the notes below say why); the best rule reaches the target in the fewest epochs, "
      "and so soonest, the epoch time being the same:");
  out += "\n";
  std::vector<std::string> columns = {"global batch", "B/B_crit", "regime"};
  for (const LargeBatchModel& ruled : report.rule_models()) columns.push_back(to_string(ruled.settings().lr_rule));
  columns.push_back("best rule");
  TextTable table(columns);
  bool extrapolated = false;
  for (const auto& [global_batch, r] : firsts) {
    const double bn_batch = batchnorm_batch(*r);
    const double over = static_cast<double>(global_batch) / *critical;
    const char* mark = extrapolated_mark(static_cast<double>(global_batch) / static_cast<double>(model.base_batch()));
    extrapolated = extrapolated || *mark;
    std::vector<std::string> cells = {std::to_string(global_batch) + mark, format_significant(over, 3), regime(over)};
    std::optional<double> best_epochs;
    std::string best = kNone;
    for (const LargeBatchModel& ruled : report.rule_models()) {
      const LargeBatchPrediction p = ruled.predict(global_batch, bn_batch);
      if (p.no_progress) {
        cells.push_back("stalls");
      } else if (p.epochs_to_target) {
        cells.push_back(format_significant(*p.epochs_to_target, 3));
        if (!best_epochs || *p.epochs_to_target < *best_epochs) {
          best_epochs = p.epochs_to_target;
          best = to_string(ruled.settings().lr_rule);
        }
      } else {
        cells.push_back(kNone);
      }
    }
    cells.push_back(best);
    table.add_row(cells);
  }
  return out + table.to_markdown() + (extrapolated ? extrapolated_footnote(model.base_batch()) : std::string()) + "\n";
}

}  // namespace

std::optional<LargeBatchReport> LargeBatchReport::make(const SweepConfig& config, const Profile& profile) {
  const auto curve = std::find_if(profile.training.begin(), profile.training.end(),
                                  [&](const TrainingCurve& c) { return c.model == config.model; });
  const auto model = profile.models.find(config.model);
  if (curve == profile.training.end() || curve->epochs.empty() || model == profile.models.end()) return std::nullopt;
  LargeBatchSettings settings;
  settings.lr_rule = config.lr_rule;
  if (config.large_batch) {
    settings.epochs = config.large_batch->epochs;
    settings.target_loss = config.large_batch->target_loss;
    settings.target_accuracy = config.large_batch->target_accuracy;
    settings.warmup_epochs = config.large_batch->warmup_epochs;
    settings.past_bound = config.large_batch->past_bound;
    if (config.large_batch->pace_probe) settings.pace_probe = *config.large_batch->pace_probe;
  }
  LargeBatchSettings edge = settings;
  edge.past_bound = PastBound::kEdge;
  std::vector<LargeBatchModel> rule_models;
  for (LrRule rule : kLrRules) {
    LargeBatchSettings with_rule = settings;
    with_rule.lr_rule = rule;
    rule_models.emplace_back(*curve, model->second.num_classes, with_rule);
  }
  return LargeBatchReport(LargeBatchModel(*curve, model->second.num_classes, settings),
                          LargeBatchModel(*curve, model->second.num_classes, edge), std::move(rule_models),
                          config.train_samples);
}

LargeBatchRow LargeBatchReport::row(const SimResult& result) const {
  LargeBatchRow row;
  const double bn_batch = batchnorm_batch(result);
  row.prediction = model_.predict(result.global_batch, bn_batch);
  if (row.prediction.no_progress) row.at_the_edge = at_the_edge_.predict(result.global_batch, bn_batch);
  // throughput = samples per epoch / epoch time; the baseline's examples convert through it, so a
  // config epoch of another size than the baseline's still gives the right time.
  row.throughput = result.epoch_s > 0 ? static_cast<double>(result.spec.train_samples) / result.epoch_s : 0;
  if (row.throughput > 0 && row.prediction.examples_to_target) {
    row.time_to_target_s = *row.prediction.examples_to_target / row.throughput;
  }
  if (row.throughput > 0 && row.prediction.examples_to_target_accuracy) {
    row.time_to_target_accuracy_s = *row.prediction.examples_to_target_accuracy / row.throughput;
  }
  if (row.prediction.efficiency) row.goodput = row.throughput * *row.prediction.efficiency;
  return row;
}

namespace {

// Q4's title and what it stands on: the baseline, the parts of the model in use, the targets, the
// rule.
std::string large_batch_header(const LargeBatchReport& report) {
  const LargeBatchModel& model = report.model();
  const TrainingCurve& curve = model.baseline().curve();
  const LargeBatchSettings& settings = model.settings();
  const std::string k = std::to_string(settings.epochs);
  const EpochPoint& first = curve.epochs.front();
  const EpochPoint& last = curve.epochs.back();
  std::string out = "## Q4: large batches: loss after " + k + " epochs and time to a target loss" +
                    (settings.target_accuracy ? std::string(" and test accuracy") : std::string()) + "\n\n";
  out += wrap_bullet("baseline: " + curve.model + " trained at global batch " + std::to_string(curve.batch) + " on " +
         curve.data + " data, " + std::to_string(curve.train_samples) + " samples per epoch, lr " +
         plain(curve.lr) + " (its rule: " + curve.lr_rule + "), momentum " + plain(curve.momentum) + ", " +
         std::to_string(last.epoch) + " epochs measured: train loss " + plain(first.train_loss) + " (epoch " + std::to_string(first.epoch) +
         ") -> " + plain(last.train_loss) + ", gradient noise scale B_simple " + plain(first.noise_scale) +
         " -> " + plain(last.noise_scale) +
         (model.baseline().has_curvature_noise_scale()
              ? ", B_noise = tr(H Sigma) / G^T H G " + plain(first.curvature_noise_scale) + " +- " +
                    plain(first.curvature_noise_scale_se) + " -> " + plain(last.curvature_noise_scale) + " +- " +
                    plain(last.curvature_noise_scale_se) +
                    (settings.curvature_noise_scale
                         ? " (the model's B_n where its standard error is at most a quarter of it, B_simple elsewhere)"
                         : " (measured; the model uses B_simple)")
              : std::string()) +
         (model.baseline().has_max_lr()
              ? ", largest useful lr eps_max " + plain(first.max_lr) + " -> " + plain(last.max_lr) +
                    " (the baseline's lr is " +
                    plain(lr_over_tuned_lr(curve.lr, static_cast<double>(curve.batch), first.noise_scale, first.max_lr)) +
                    " -> " +
                    plain(lr_over_tuned_lr(curve.lr, static_cast<double>(curve.batch), last.noise_scale, last.max_lr)) +
                    " x the tuned lr)"
              : std::string()));
  if (!report.sweep_note().empty()) out += wrap_bullet(report.sweep_note());
  if (curve.momentum > 0 && settings.momentum_floor && model.baseline().trace_sigma_at(0)) {
    out += wrap_bullet("the step equation is plain SGD's; the baseline's momentum (" + plain(curve.momentum) +
           ") enters as the noise floor it raises, lr tr(Sigma) / (4 B (1 - m)), " + plain(1 / (1 - curve.momentum)) +
           "x plain SGD's: a batch whose lr / B is smaller sits that much lower, and its loss is read there on the "
           "baseline's curve; measured runs with momentum still trained faster than this predicts "
           "(docs/LARGE_BATCH.md, \"Momentum's noise floor\")");
  } else if (curve.momentum > 0) {
    out += wrap_bullet("the step equation is plain SGD's and leaves the baseline's momentum (" + plain(curve.momentum) +
           ") out: the curve carries no tr(Sigma) for the noise floor momentum raises; measured runs with momentum "
           "trained faster than it predicts (docs/LARGE_BATCH.md, \"Momentum's noise floor\")");
  }
  if (settings.batchnorm_gap && model.baseline().has_batchnorm_probe()) {
    out += wrap_bullet("BatchNorm: the baseline normalised over " + std::to_string(curve.small_batch) +
           " examples (its micro-batch), each row over its per-GPU batch (the global one with SyncBatchNorm); on "
           "the same weights a larger one records a lower training loss, by what the baseline's BatchNorm probe "
           "measured (batches " + std::to_string(curve.probe_batches.front()) + " to " +
           std::to_string(curve.probe_batches.back()) + "), and loss@k is predicted so; the accuracies are not "
           "moved (docs/LARGE_BATCH.md, \"BatchNorm's batch\")");
  }
  if (settings.scale_invariant_norm && model.baseline().has_scale_invariant()) {
    out += wrap_bullet("BatchNorm's weights (the scale-invariant ones) train at lr / |w|^2: the baseline measured their |w|^2 (" +
           plain(model.baseline().scale_invariant_at(0)->weight_sq) + " -> " +
           plain(model.baseline().scale_invariant_at(model.baseline().last_examples())->weight_sq) +
           ") and the steps that grow it; each row's |w|^2 grows by its own steps, lr^2 (1 + m) / (1 - m) |v|^2 less "
           "weight decay, with its gradient noise at its batch, and x reads its lr / |w|^2 over the baseline's "
           "(docs/LARGE_BATCH.md, \"The scale-invariant weights' norm\")");
  }
  // The epochs to target were validated against real runs at the baseline's epoch-1 loss
  // (measure largebatch-compare's default); a lower target is reached later than any run was checked.
  const bool validated_target = model.target_loss() >= curve.epochs.front().train_loss;
  out += wrap_bullet("target loss: " + plain(model.target_loss()) + " (" + model.target_source() + ")" +
                     (validated_target ? std::string()
                                       : "; the epochs to target were validated at a higher one, the baseline's "
                                         "epoch-1 loss (" + plain(curve.epochs.front().train_loss) +
                                         "; docs/LARGE_BATCH.md, \"How it was validated\"): to this one they are "
                                         "predicted, not checked"));
  const std::optional<double> target_accuracy = settings.target_accuracy;
  if (target_accuracy) {
    const std::optional<double> at = model.baseline().examples_to_test_accuracy(*target_accuracy);
    out += wrap_bullet("target test accuracy: " + plain(*target_accuracy) +
                       " (large_batch.target_accuracy): reached where the path reads the baseline's test accuracy "
                       "first at or above it" +
                       (at ? ", which the baseline did after " + plain(*at / static_cast<double>(curve.train_samples)) +
                                 " epochs"
                           : std::string(", which the baseline never did")));
  }
  out += wrap_bullet(std::string("lr rule for other batches: ") + to_string(settings.lr_rule) +
                     (settings.lr_rule == LrRule::kLinearWarmup ? " over " + plain(settings.warmup_epochs) + " warm-up epochs"
                                                                : "") +
                     " (config lr_rule), relative to the baseline's lr at batch " + std::to_string(curve.batch));
  if (report.config_train_samples() != curve.train_samples) {
    out += wrap_bullet("the config's epoch (" + std::to_string(report.config_train_samples()) +
                       " samples) differs from the baseline's: epochs below are the baseline's (" +
                       std::to_string(curve.train_samples) + " samples); times use the simulated throughput");
  }
  out += "\n";
  return out;
}

// Q4's three tables of the same rows (each fits a terminal): the predictions after k epochs, the epochs
// and time to the targets, the efficiency with the rows' notes.
std::string large_batch_tables(const LargeBatchReport& report, const ResultGrid& grid) {
  const LargeBatchModel& model = report.model();
  const TrainingCurve& curve = model.baseline().curve();
  const LargeBatchSettings& settings = model.settings();
  const std::string k = std::to_string(settings.epochs);
  const std::optional<double> target_accuracy = settings.target_accuracy;
  std::string out;
  // The test accuracy with BatchNorm's statistics recomputed, where the baseline measured it.
  const bool recomputed = curve.recompute_bn_images > 0;
  const std::string recomputed_column = "test acc@" + k + " BN";
  // Three tables of the same rows, so that each fits a terminal (issue 64): the predictions after
  // k epochs, the epochs and time to the targets, the efficiency with the rows' notes.
  std::vector<std::string> after_columns = {"config", "global batch", "B/B0", "loss@" + k, "train acc@" + k,
                                            "test acc@" + k};
  if (recomputed) after_columns.push_back(recomputed_column);
  std::vector<std::string> target_columns = {"config", "epochs to target", "time to target s"};
  const std::string acc = target_accuracy ? "acc " + plain(*target_accuracy) : std::string();
  if (target_accuracy) {
    target_columns.push_back("epochs to " + acc);
    target_columns.push_back("time to " + acc + " s");
  }
  TextTable after(after_columns);
  TextTable targets(target_columns);
  TextTable efficiency({"config", "efficiency", "goodput samples/s", "notes"});
  NumberedNotes notes;
  bool extrapolated = false;
  for (const SimResult& r : grid.all()) {
    if (!r.runnable) continue;  // no epoch time, no global batch: not a row of Q4
    const LargeBatchRow row = report.row(r);
    const LargeBatchPrediction& p = row.prediction;
    std::vector<std::string> row_notes = p.notes;
    std::string loss = optional_cell(p.loss_at_k);
    std::string epochs = optional_cell(p.epochs_to_target);
    if (!p.loss_at_k) {
      row_notes.push_back("loss in epoch " + k + ": " + p.loss_missing);
      loss = "not predicted";
    }
    if (!p.epochs_to_target) {
      row_notes.push_back("epochs to target: " + p.target_missing);
      epochs = "not predicted";
    }
    if (row.at_the_edge) {
      const LargeBatchPrediction& e = *row.at_the_edge;
      const auto figure = [](const std::optional<double>& value, int significant) {
        return value ? optional_cell(value, significant) : std::string("not predicted");
      };
      row_notes.push_back(
          "at the edge of stability instead (the run's curvature following its lr, as fashion-cnn-gap's runs past "
          "the bound did and fashion-cnn's did not; docs/LARGE_BATCH.md, \"Which parameters set the bound\"): loss@" +
          k + " " + figure(e.loss_at_k, 4) + ", test acc@" + k + " " + figure(e.test_accuracy_at_k, 3) +
          ", epochs to target " + figure(e.epochs_to_target, 4) +
          (settings.target_accuracy
               ? ", epochs to acc " + plain(*settings.target_accuracy) + " " + figure(e.epochs_to_target_accuracy, 4)
               : std::string()));
    }
    const double ratio = static_cast<double>(r.global_batch) / static_cast<double>(curve.batch);
    const std::string label = config_label(r.spec);
    const char* mark = extrapolated_mark(ratio);
    extrapolated = extrapolated || *mark;
    std::vector<std::string> after_cells = {label,
                                            std::to_string(r.global_batch),
                                            ratio_cell(ratio) + mark,
                                            loss,
                                            optional_cell(p.train_accuracy_at_k, 3),
                                            optional_cell(p.test_accuracy_at_k, 3)};
    if (recomputed) after_cells.push_back(optional_cell(p.test_accuracy_recomputed_at_k, 3));
    std::vector<std::string> target_cells = {label, epochs, speed_cell(r, row.time_to_target_s)};
    if (target_accuracy) {
      std::string epochs_to_accuracy = optional_cell(p.epochs_to_target_accuracy);
      if (!p.epochs_to_target_accuracy) {
        row_notes.push_back("epochs to " + acc + ": " + p.target_accuracy_missing);
        epochs_to_accuracy = "not predicted";
      }
      target_cells.push_back(epochs_to_accuracy);
      target_cells.push_back(speed_cell(r, row.time_to_target_accuracy_s));
    }
    after.add_row(after_cells);
    targets.add_row(target_cells);
    efficiency.add_row({label, optional_cell(p.efficiency, 3), speed_cell(r, row.goodput), notes.refer(row_notes)});
  }
  out += after.to_markdown() + (extrapolated ? extrapolated_footnote(curve.batch) : std::string()) + "\n";
  out += wrap_paragraph((recomputed ? recomputed_column + ": test acc@" + k + " with BatchNorm's statistics recomputed. "
                                    : std::string()) +
                        "Each row's notes: the last column of the efficiency table below.") +
         "\n";
  out += wrap_paragraph(std::string("Epochs and time to the target loss") +
                        (target_accuracy ? " and to test accuracy " + plain(*target_accuracy) : std::string()) + ":") +
         "\n";
  out += targets.to_markdown() + "\n";
  out += wrap_paragraph("Efficiency and goodput at the target loss, and each row's notes (listed below):") + "\n";
  out += efficiency.to_markdown() + "\n";
  if (!notes.empty()) out += notes.list() + "\n";
  return out;
}

// The model behind Q4 in one paragraph, as this baseline reads it.
std::string large_batch_model_paragraph(const LargeBatchReport& report) {
  const LargeBatchModel& model = report.model();
  const TrainingCurve& curve = model.baseline().curve();
  const LargeBatchSettings& settings = model.settings();
  const std::string k = std::to_string(settings.epochs);
  const bool recomputed = curve.recompute_bn_images > 0;
  std::string out;
  out += wrap_paragraph("Model (docs/LARGE_BATCH.md, after McCandlish et al. 2018): an example at batch B is worth "
         "dE_0/dE_B = (B_noise + B_0) / (B_noise + B) (2x - x^2) / (2x_0 - x_0^2) of the baseline's, x the rule's "
         "lr over the tuned lr eps_max / (1 + B_noise/B) and x_0 the baseline's own, with B_noise and eps_max the "
         "baseline's where the path is (" +
         std::string(settings.curvature_noise_scale && model.baseline().has_curvature_noise_scale()
                         ? "B_noise = tr(H Sigma) / G^T H G measured along the baseline where its standard error "
                           "is at most a quarter of it, B_simple elsewhere, "
                         : "B_noise = B_simple, the baseline's tr(Sigma) / |G|^2, ") +
         std::string(model.baseline().has_max_lr() ? "eps_max measured along the baseline"
                                                   : "eps_max not measured: the baseline's lr taken as tuned, x_0 = 1") +
         "); past x = 2 the loss rises (no progress) under the plain bound, or, at the edge of stability, the run's "
         "curvature follows its lr and it progresses as at the tuned lr (x read as at most 1). This baseline is read "
         "with " + model.past_bound_reason() +
         (model.start_x() ? "; a run whose parameters that are not scale-invariant start past 2x their eps_max "
                            "(this baseline's " + short_number(*model.start_x()) +
                                " times the run's lr over the baseline's) starts with a catapult, whose cost the "
                                "prediction does not carry (its notes say so)"
                          : std::string()) +
         (model.baseline().curve().pace_probe.empty() ? std::string() : "; " + model.pace_probe_reason()) +
         "; a row the plain bound puts past it says so in its notes, and one "
         "predicted to make no progress gives the edge's figures in its notes. loss and train acc: means "
         "over epoch k, test acc at its end, the baseline's at the examples E_0 the path reaches. It assumes the "
         "same accuracy at the same training loss (no generalisation gap)" +
         std::string(recomputed
                         ? "; test acc BN recomputed: the same with BatchNorm's statistics estimated again on the "
                           "weights before the evaluation (the baseline's measure baseline --recompute-bn on " +
                               std::to_string(curve.recompute_bn_images) +
                               " images), which the runs' eval mode reads lower where their lr is raised (its "
                               "running statistics lag the weights: docs/LARGE_BATCH.md, \"The running statistics' "
                               "lag in every run\")"
                         : std::string()) +
         ". efficiency = (B_noise + B_0) / "
         "(B_noise + B) at the target (Pollux), goodput = simulated throughput x efficiency, time to target = "
         "E_B / simulated throughput (to the target accuracy likewise). Accuracies are fractions; OOM: the configuration does not fit.") +
         "\n";
  return out;
}

}  // namespace

std::string format_large_batch(const LargeBatchReport& report, const ResultGrid& grid) {
  return large_batch_header(report) + format_rules_side_by_side(report, grid) + large_batch_tables(report, grid) +
         large_batch_model_paragraph(report);
}

std::string format_sync_batchnorm(const Profile& profile, const std::string& model_name, const ResultGrid& with,
                                  const ResultGrid& without, const Unit& unit) {
  std::string out = "## SyncBatchNorm: added communication (ddp, N >= 2)\n\n";
  const ModelProfile& model = profile.models.at(model_name);
  int batchnorms = 0;
  int64_t channels = 0;
  for (const LayerProfile& layer : model.layers) {
    for (int64_t c : train::batchnorm_channels(layer)) {
      ++batchnorms;
      channels += c;
    }
  }
  TextTable table({"config", "iterations", "collectives/iteration", "message KB/iteration", "sync_bn_s",
                   "epoch_s without", "epoch_s with", "added s", "added %"});
  std::string not_runnable;
  for (const SimResult& r : with.all()) {
    if (r.spec.strategy != Strategy::kDdp || r.spec.gpus < 2) continue;
    if (!r.runnable) {
      not_runnable = r.not_runnable;
      continue;
    }
    const SimResult* plain = without.find(r.spec.strategy, r.spec.gpus, r.spec.batch_per_gpu);
    if (plain == nullptr) continue;
    const int n = r.spec.gpus;
    // Per BatchNorm: all-gather of N (2C + 1) floats (forward), all-reduce of 2C floats (backward).
    double bytes = 0;
    for (const LayerProfile& layer : model.layers) {
      for (int64_t c : train::batchnorm_channels(layer)) {
        bytes += train::sync_bn_forward_gathered_bytes(c, n) + train::sync_bn_backward_bytes(c);
      }
    }
    const double added = r.epoch_s - plain->epoch_s;
    table.add_row({config_label(r.spec), std::to_string(r.iterations), std::to_string(2 * batchnorms),
                   format_significant(bytes / 1e3, 4), r.fits ? format_significant(r.sync_bn_s, 4) : "OOM",
                   r.fits ? format_significant(plain->epoch_s, 4) : "OOM", r.fits ? format_significant(r.epoch_s, 4) : "OOM",
                   r.fits ? format_significant(added, 4) : "OOM",
                   r.fits ? format_fixed(100 * added / plain->epoch_s, 1) : "OOM"});
  }
  if (table.empty() && !not_runnable.empty()) {
    return out + wrap_paragraph("Not runnable on the profiled machine: " + not_runnable + ".") + "\n";
  }
  if (table.empty()) {
    return out + wrap_paragraph("The sweep has no ddp configuration with 2 or more " + unit.plural() + ".") + "\n";
  }
  out += wrap_paragraph(model_name + " has " + std::to_string(batchnorms) + " BatchNorm layers (" + std::to_string(channels) +
         " channels in all). SyncBatchNorm (PyTorch, DDP only) exchanges statistics in every one of them, "
         "synchronously: forward, an all-gather of (mean, invstd, count) = 2C + 1 floats per rank; backward, "
         "an all-reduce of (sum_dy, sum_dy_xmu) = 2C floats. The messages are small, so the cost is latency: "
         "2 x " + std::to_string(batchnorms) + " collectives per iteration that the next layer waits for, on "
         "the stream DDP's gradient all-reduce also uses. sync_bn_s is their time per epoch on " + unit.name + " 0; the "
         "added time compares with the same configuration simulated with plain BatchNorm.") +
         "\n";
  return out + table.to_markdown() + "\n";
}

}  // namespace trainsim::report
