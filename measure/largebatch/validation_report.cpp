#include "largebatch/validation_report.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "format/metrics.h"
#include "largebatch/text_file.h"
#include "report/gnuplot.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string general(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// Signed: + means the prediction needs more steps than measured.
std::string signed_error(double predicted, const std::optional<double>& measured) {
  if (!measured) return "";
  return fixed(percent_error(predicted, *measured), 1);
}

std::string join(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

template <typename T>
std::string join_general(const std::vector<T>& values) {
  std::string text;
  for (const T& v : values) text += (text.empty() ? "" : ", ") + general(static_cast<double>(v));
  return text;
}

std::string case_columns(const ValidationCase& c) {
  return std::to_string(c.seed) + "," + general(c.target_gap);
}

std::string trial_outcome(const LrTrial& t) {
  if (t.run.steps_to_target) return fixed(*t.run.steps_to_target, 1) + " steps";
  if (t.run.diverged) return "diverged at step " + std::to_string(t.run.steps_run);
  if (t.run.stalled) return "stalled at step " + std::to_string(t.run.steps_run);
  return "not within " + std::to_string(t.step_limit) + " steps";
}

// Mean absolute percentage error of one case's non-baseline predictions that were measured.
double case_error(const ValidationCase& c, double BatchPrediction::*predicted) {
  double sum = 0;
  int n = 0;
  for (const auto& p : c.predictions) {
    if (p.is_base || !p.measured) continue;
    sum += std::abs(percent_error(p.*predicted, *p.measured));
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

const std::string kPlotScript =
    "# Predicted vs measured steps to the target loss (log-log), every case and batch size but the\n"
    "# baselines; data: steps.dat (measured, predicted, predicted integrated, batch).\n"
    "# Redraw: gnuplot steps.gp (in this folder; gnuplot 5, Debian package gnuplot-nox).\n" +
    std::string(report::kOutdirDefault) +
    "set terminal svg size 760,640 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
    "set output outdir.'/steps.svg'\n"
    "set title 'Steps to the target loss: McCandlish prediction from the baseline vs measured'\n"
    "set xlabel 'measured steps (lr tuned per batch)'\nset ylabel 'predicted steps'\n"
    "set logscale xy\nset format x '%g'\nset format y '%g'\nset grid\nset key bottom right\nset size ratio -1\n"
    "stats 'steps.dat' using 1 nooutput\nlow = STATS_min / 1.5\nhigh = STATS_max * 1.5\n"
    "set xrange [low:high]\nset yrange [low:high]\n"
    "plot x with lines lc rgb 'black' title 'predicted = measured', \\\n"
    "     1.2 * x with lines dt 2 lc rgb 'gray50' title '+-20%', \\\n"
    "     0.8 * x with lines dt 2 lc rgb 'gray50' notitle, \\\n"
    "     'steps.dat' using 1:3 with points pt 6 ps 1 lc rgb '#d95f02' title 'integrated along the baseline', \\\n"
    "     'steps.dat' using 1:2 with points pt 7 ps 1.1 lc rgb '#1b9e77' title 'B_noise at the target (headline)'\n";

}  // namespace

std::string predictions_csv(const ValidationResult& r) {
  std::string csv =
      "seed,target_gap,target_loss,batch,best_lr,measured_steps,predicted_steps,error_percent,"
      "predicted_integrated_steps,error_integrated_percent,perfect_scaling_steps,baseline\n";
  for (const auto& c : r.cases) {
    for (const auto& p : c.predictions) {
      csv += case_columns(c) + "," + general(c.target_loss) + "," + std::to_string(p.batch) + "," +
             (p.best_lr ? general(*p.best_lr) : "") + "," + (p.measured ? fixed(*p.measured, 2) : "") + "," +
             fixed(p.predicted, 2) + "," + signed_error(p.predicted, p.measured) + "," +
             fixed(p.predicted_integrated, 2) + "," + signed_error(p.predicted_integrated, p.measured) + "," +
             fixed(p.perfect_scaling, 2) + "," + (p.is_base ? "1" : "0") + "\n";
    }
  }
  return csv;
}

std::string trials_csv(const ValidationResult& r) {
  std::string csv = "seed,target_gap,batch,lr,steps_to_target,diverged,stalled,steps_run,step_limit,best\n";
  for (const auto& c : r.cases) {
    for (const auto& b : c.batches) {
      for (size_t i = 0; i < b.trials.size(); ++i) {
        const auto& t = b.trials[i];
        csv += case_columns(c) + "," + std::to_string(b.batch) + "," + general(t.lr) + "," +
               (t.run.steps_to_target ? fixed(*t.run.steps_to_target, 2) : "") + "," +
               (t.run.diverged ? "1" : "0") + "," + (t.run.stalled ? "1" : "0") + "," +
               std::to_string(t.run.steps_run) + "," + std::to_string(t.step_limit) + "," +
               (b.best && *b.best == i ? "1" : "0") + "\n";
      }
    }
  }
  return csv;
}

std::string baseline_curves_csv(const ValidationResult& r) {
  std::string csv = "seed,target_gap,step,held_out_loss,grad_sq_norm,trace_sigma,noise_scale\n";
  auto optional_value = [](const std::optional<double>& v) { return v ? general(*v) : std::string(); };
  for (const auto& c : r.cases) {
    for (const auto& p : c.base_curve) {
      csv += case_columns(c) + "," + std::to_string(p.step) + "," + general(p.loss) + "," +
             optional_value(p.grad_sq_norm) + "," + optional_value(p.trace_sigma) + "," +
             optional_value(p.noise_scale) + "\n";
    }
  }
  return csv;
}

std::string plot_data(const ValidationResult& r) {
  std::string data = "# measured predicted predicted_integrated batch\n";
  for (const auto& c : r.cases) {
    for (const auto& p : c.predictions) {
      if (p.is_base || !p.measured) continue;
      data += fixed(*p.measured, 3) + " " + fixed(p.predicted, 3) + " " + fixed(p.predicted_integrated, 3) + " " +
              std::to_string(p.batch) + "\n";
    }
  }
  return data;
}

std::string report_markdown(const ValidationResult& r, const ValidationOptions& o, const ReportContext& ctx,
                            bool has_plot) {
  const int64_t b0 = o.base_batch;
  std::ostringstream md;
  md << "# Large-batch validation: predicted vs measured steps to a target loss\n\n"
     << "Machine `" << ctx.machine << "`, " << ctx.date << ", LibTorch " << ctx.libtorch << ", " << o.threads
     << " training thread(s), " << fixed(ctx.wall_s, 0) << " s in all. Produced by (from the repository root, `measure` being the built build/bin/measure):\n\n"
     << "```\n" << ctx.command << "\n```\n\n"
     << "What this checks (docs/LARGE_BATCH.md \"Validation on this machine\"): the McCandlish relation "
        "S = S_min (1 + B_noise / B), with S_min and B_noise taken **from the baseline batch alone**, predicts "
        "how many optimizer steps real training at other batch sizes needs to reach a target loss.\n\n"
     << "**" << error_line(r) << "** (mean absolute percentage error over " << r.comparisons
     << " predictions: " << r.cases.size() << " cases x the batch sizes other than the baseline's).\n\n"
     << "## Set-up\n\n"
     << "- **Task** (synthetic, labelled synthetic): a mixture of " << o.mixture.classes
     << " isotropic Gaussians in " << o.mixture.dims << " dimensions, class means of norm ~"
     << general(o.mixture.separation)
     << ", unit noise (measure/largebatch/mixture_task.h); the seed draws the means, the initial weights and the "
        "data. Every step draws fresh training samples (no epochs, no overfitting); the loss is the mean "
        "cross-entropy on a fixed held-out set of "
     << o.held_out << " samples.\n"
     << "- **Model**: MLP " << o.mixture.dims;
  for (int64_t h : o.hidden) md << " -> " << h << " (ReLU)";
  md << " -> " << o.mixture.classes << " (models/small.h), the same initial weights for every run of a seed.\n"
     << "- **Training**: SGD at a constant learning rate, momentum " << general(o.momentum)
     << ", no weight decay; each run is " << o.repeats
     << " copies in lockstep (other training samples, same initial weights) and its loss is their mean held-out "
        "loss (an estimate of the expected loss: one copy's first crossing of the target is noisy). At most "
     << o.max_steps << " steps per run.\n"
     << "- **Target**: the held-out loss of the Bayes-optimal classifier (known for this task) plus a gap; gaps "
     << join_general(o.target_gaps) << ", seeds " << join_general(o.seeds)
     << ": one case per (seed, gap). The held-out loss is evaluated after every step below 128, then every "
        "2^floor(log2(step/64)) steps; the steps to the target are interpolated linearly between the two "
        "evaluations around the first crossing.\n"
     << "- **Learning rate tuned per batch** (what the McCandlish model assumes), on the grid " << join_general(o.lrs)
     << ". In each case the batch sizes run in ascending order; the smallest starts at the largest rate and walks "
        "down, each next one starts at the previous one's best rate x sqrt(B / B_prev), walks up while larger rates "
        "improve, then down. A trial stops once it needs more steps than the best so far; a walk stops after "
     << kTrialsWithoutImprovement << " trials in a row without a new best. The best rate's steps are the measurement.\n"
     << "- **Baseline**: batch " << b0 << ". Its runs compute every step's gradient as " << o.micro_batches
     << " micro-batches of " << b0 / o.micro_batches
     << " (for this model, which has no BatchNorm, exactly the batch gradient) and feed |G_small|^2 (averaged over "
        "the micro-batches and the copies) and |G_big|^2 to the two-batch estimator "
        "(trainsim::GradientNoiseEstimator, EMA decay "
     << general(o.ema_decay) << ", |G|^2 and tr(Sigma) averaged separately, each step weighted by 1 / the previous "
        "step's |G_big|^2).\n"
     << "- **Prediction** (headline, the formula `simulate` uses for the epochs to a target): B_noise = the "
        "baseline's noise scale where it reached the target, S_min = S_0 / (1 + B_noise/B_0) (min_steps_from), "
        "S = S_min (1 + B_noise/B) (steps_at_batch). Beside it: the same integrated along the baseline's run (each "
        "stretch of dS_0 baseline steps at the noise scale B_n measured then costs dS_0 (1 + B_n/B) / "
        "(1 + B_n/B_0) steps at batch B), and perfect linear scaling S_0 B_0 / B.\n"
     << "- **Error**: mean absolute percentage error |predicted - measured| / measured over every case's batch "
        "sizes other than the baseline's (its prediction equals its measurement by construction).\n\n"
     << "## Result\n\n"
     << "Mean absolute error: **" << fixed(r.error_percent, 1) << "%** (headline), "
     << fixed(r.error_integrated_percent, 1) << "% integrated along the baseline, "
     << fixed(r.error_perfect_scaling_percent, 1) << "% for perfect scaling; " << r.comparisons
     << " predictions of " << r.batch_sizes << " batch sizes.\n\n"
     << "| seed | gap | target loss | S_0 (batch " << b0 << ") | B_noise at target | S_min | error | error integrated "
        "| error perfect scaling | left out |\n"
     << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& c : r.cases) {
    md << "| " << c.seed << " | " << general(c.target_gap) << " | " << fixed(c.target_loss, 4) << " ("
       << fixed(c.bayes_loss, 4) << " + " << general(c.target_gap) << ") | ";
    if (!c.failure.empty()) {
      md << "- | - | - | - | - | - | not predicted: " << c.failure << " |\n";
      continue;
    }
    md << fixed(c.base_steps, 1) << " | " << fixed(c.noise_at_target, 1) << " | " << fixed(c.min_steps, 2) << " | "
       << fixed(case_error(c, &BatchPrediction::predicted), 1) << "% | "
       << fixed(case_error(c, &BatchPrediction::predicted_integrated), 1) << "% | "
       << fixed(case_error(c, &BatchPrediction::perfect_scaling), 1) << "% | "
       << (c.not_reached.empty() ? "" : "not reached at any lr: batch " + join(c.not_reached)) << " |\n";
  }
  md << "\n" << (has_plot ? "![predicted vs measured steps](steps.svg)\n"
                          : "No plot: gnuplot was not found or failed (steps.gp draws it from steps.dat).\n");

  bool edge = false;
  for (const auto& c : r.cases) {
    for (const auto& b : c.batches) edge = edge || b.best_at_grid_edge;
  }
  if (edge) {
    md << "\nAt least one best learning rate is at the edge of the grid (see the trials): the tuned rate may lie "
          "outside it, and the measured steps are then an upper bound.\n";
  }

  md << "\n## Per case\n\nSigned errors (+: the prediction needs more steps than measured).\n";
  for (const auto& c : r.cases) {
    md << "\n### Seed " << c.seed << ", gap " << general(c.target_gap) << ": target loss " << fixed(c.target_loss, 4)
       << "\n\n";
    if (!c.failure.empty()) {
      md << "Not predicted: " << c.failure << ".\n";
      continue;
    }
    md << "| batch | best lr | measured steps | predicted | error | integrated | error | perfect scaling | error |\n"
       << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& p : c.predictions) {
      auto err = [&](double predicted) {
        const std::string e = signed_error(predicted, p.measured);
        return e.empty() ? std::string("") : e + "%";
      };
      md << "| " << p.batch << (p.is_base ? " (baseline)" : "") << " | " << (p.best_lr ? general(*p.best_lr) : "-")
         << " | " << (p.measured ? fixed(*p.measured, 1) : "not reached") << " | " << fixed(p.predicted, 1) << " | "
         << err(p.predicted) << " | " << fixed(p.predicted_integrated, 1) << " | " << err(p.predicted_integrated)
         << " | " << fixed(p.perfect_scaling, 1) << " | " << err(p.perfect_scaling) << " |\n";
    }
  }

  if (!r.cases.empty() && r.cases.front().failure.empty()) {
    const auto& c = r.cases.front();
    md << "\n## The baseline's noise scale along training (seed " << c.seed << ", gap " << general(c.target_gap)
       << ")\n\n| step | held-out loss | EMA \\|G\\|^2 | EMA tr(Sigma) | B_noise |\n|---:|---:|---:|---:|---:|\n";
    auto row = [&](const CurvePoint& p) {
      md << "| " << p.step << " | " << fixed(p.loss, 4) << " | " << (p.grad_sq_norm ? general(*p.grad_sq_norm) : "-")
         << " | " << (p.trace_sigma ? general(*p.trace_sigma) : "-") << " | "
         << (p.noise_scale ? fixed(*p.noise_scale, 1) : "-") << " |\n";
    };
    // About ten rows spread over the run, then the last (where the target was reached).
    const size_t n = c.base_curve.size();
    const size_t stride = n > 10 ? n / 10 : 1;
    for (size_t i = stride; i + stride / 2 < n - 1; i += stride) row(c.base_curve[i]);
    if (n > 1) row(c.base_curve.back());
    md << "\nEvery evaluation of every case's baseline is in baseline_curves.csv.\n";
  }

  md << "\n## Learning-rate trials\n\n| seed | gap | batch | lr: outcome |\n|---:|---:|---:|---|\n";
  for (const auto& c : r.cases) {
    for (const auto& b : c.batches) {
      md << "| " << c.seed << " | " << general(c.target_gap) << " | " << b.batch << " | ";
      for (size_t i = 0; i < b.trials.size(); ++i) {
        const auto& t = b.trials[i];
        md << (i ? "; " : "") << general(t.lr) << ": " << trial_outcome(t)
           << (b.best && *b.best == i ? " **(best)**" : "");
      }
      md << " |\n";
    }
  }
  md << "\n\"not within N steps\": stopped at the best steps so far (it could no longer win) or at the step limit. "
        "\"stalled\": no progress in the second half of the run (from step "
     << kPlateauMinSteps << " on; progress = a new lowest loss closing at least " << fixed(100 * kProgressFraction, 0)
     << "% of the gap to the target): the rate's noise floor lies above the target. \"diverged\": the loss "
        "became non-finite or twice the initial one.\n\n"
     << "## Files\n\n"
     << "- predictions.csv: per case and batch size, measured and predicted steps and the signed errors.\n"
     << "- trials.csv: every (case, batch, lr) run.\n"
     << "- baseline_curves.csv: every case's baseline: held-out loss and noise-scale averages at every evaluation.\n"
     << (has_plot ? "- steps.svg (steps.gp, steps.dat): the plot above.\n" : "- steps.gp, steps.dat: the plot script and its data.\n");
  return md.str();
}

std::vector<std::string> write_validation_report(const ValidationResult& r, const ValidationOptions& o,
                                                 const ReportContext& c, const std::string& dir,
                                                 std::string& plot_warning) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = (fs::path(dir) / name).string();
    write_text_atomically(path, text);
    written.push_back(path);
  };
  write("predictions.csv", predictions_csv(r));
  write("trials.csv", trials_csv(r));
  write("baseline_curves.csv", baseline_curves_csv(r));
  write("steps.dat", plot_data(r));
  write("steps.gp", kPlotScript);
  const report::DrawOutcome outcome = report::draw_svgs(dir, "steps.gp", {"steps.svg"});
  if (outcome.drawn) {
    written.push_back((fs::path(dir) / "steps.svg").string());
  } else {
    plot_warning = outcome.problem + ": steps.gp not drawn";
  }
  write("report.md", report_markdown(r, o, c, outcome.drawn));
  return written;
}

}  // namespace trainsim::measure
