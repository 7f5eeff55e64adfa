#include "largebatch/validation_report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "largebatch/text_file.h"

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

std::string percent_error(double predicted, const std::optional<double>& measured) {
  if (!measured) return "";
  return fixed(100.0 * (predicted - *measured) / *measured, 1);  // signed: + means predicted more steps
}

std::string join(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

std::string join(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + general(v);
  return text;
}

std::string trial_outcome(const LrTrial& t) {
  if (t.run.steps_to_target) return fixed(*t.run.steps_to_target, 1) + " steps";
  if (t.run.diverged) return "diverged at step " + std::to_string(t.run.steps_run);
  if (t.run.stalled) return "stalled above the target at step " + std::to_string(t.run.steps_run);
  return "not within " + std::to_string(t.step_limit) + " steps";
}

// The first directory on PATH holding an executable `gnuplot`; empty if none.
std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `gnuplot steps.gp` in `dir` with its output discarded; true when it exits 0.
bool run_gnuplot(const std::string& gnuplot, const std::string& dir) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    if (::chdir(dir.c_str()) != 0 || !std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) {
      ::_exit(127);
    }
    ::execl(gnuplot.c_str(), "gnuplot", "steps.gp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const char* const kPlotScript =
    "# Steps to the target loss vs batch size (log-log), from predictions.csv.\n"
    "# Redraw: gnuplot steps.gp (in this folder; gnuplot 5, Debian package gnuplot-nox).\n"
    "set terminal svg size 800,560 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
    "set output 'steps.svg'\n"
    "set datafile separator ','\n"
    "set title 'Steps to the target held-out loss: measured (lr tuned per batch) vs McCandlish prediction'\n"
    "set xlabel 'batch size'\nset ylabel 'optimizer steps to the target'\n"
    "set logscale xy\nset format x '%g'\nset format y '%g'\nset grid\nset key top right\n"
    "plot 'predictions.csv' using 1:4 skip 1 with linespoints lw 2 title 'predicted (B_noise along the baseline)', \\\n"
    "     '' using 1:6 skip 1 with lines dt 2 title 'predicted (B_noise at the target)', \\\n"
    "     '' using 1:8 skip 1 with lines dt 3 title 'perfect scaling S_0 B_0 / B', \\\n"
    "     '' using 1:3 skip 1 with points pt 7 ps 1.2 title 'measured'\n";

}  // namespace

std::string predictions_csv(const ValidationResult& r) {
  std::string csv =
      "batch,best_lr,measured_steps,predicted_steps,error_percent,predicted_at_target_steps,"
      "error_at_target_percent,perfect_scaling_steps,baseline\n";
  for (const auto& p : r.predictions) {
    csv += std::to_string(p.batch) + "," + (p.best_lr ? general(*p.best_lr) : "") + "," +
           (p.measured ? fixed(*p.measured, 2) : "") + "," + fixed(p.predicted, 2) + "," +
           percent_error(p.predicted, p.measured) + "," + fixed(p.predicted_at_target, 2) + "," +
           percent_error(p.predicted_at_target, p.measured) + "," + fixed(p.perfect_scaling, 2) + "," +
           (p.is_base ? "1" : "0") + "\n";
  }
  return csv;
}

std::string trials_csv(const ValidationResult& r) {
  std::string csv = "batch,lr,steps_to_target,diverged,stalled,steps_run,step_limit,best\n";
  for (const auto& b : r.batches) {
    for (size_t i = 0; i < b.trials.size(); ++i) {
      const auto& t = b.trials[i];
      csv += std::to_string(b.batch) + "," + general(t.lr) + "," +
             (t.run.steps_to_target ? fixed(*t.run.steps_to_target, 2) : "") + "," + (t.run.diverged ? "1" : "0") +
             "," + (t.run.stalled ? "1" : "0") + "," + std::to_string(t.run.steps_run) + "," + std::to_string(t.step_limit) + "," +
             (b.best && *b.best == i ? "1" : "0") + "\n";
    }
  }
  return csv;
}

std::string baseline_curve_csv(const ValidationResult& r) {
  std::string csv = "step,held_out_loss,grad_sq_norm,trace_sigma,noise_scale\n";
  auto optional_value = [](const std::optional<double>& v) { return v ? general(*v) : std::string(); };
  for (const auto& p : r.base_curve) {
    csv += std::to_string(p.step) + "," + general(p.loss) + "," + optional_value(p.grad_sq_norm) + "," +
           optional_value(p.trace_sigma) + "," + optional_value(p.noise_scale) + "\n";
  }
  return csv;
}

std::string report_markdown(const ValidationResult& r, const ValidationOptions& o, const ReportContext& c,
                            bool has_plot) {
  const int64_t b0 = o.base_batch;
  std::ostringstream md;
  md << "# Large-batch validation: predicted vs measured steps to a target loss\n\n"
     << "Machine `" << c.machine << "`, " << c.date << ", LibTorch " << c.libtorch << ", " << o.threads
     << " training thread(s), " << fixed(c.wall_s, 0) << " s in all. Produced by:\n\n"
     << "```\n" << c.command << "\n```\n\n"
     << "What this checks (docs/LARGE_BATCH.md \"Validation on this machine\"): the McCandlish relation "
        "S = S_min (1 + B_noise / B), with S_min and B_noise taken **from the baseline batch alone**, predicts "
        "how many optimizer steps real training at other batch sizes needs to reach a target loss.\n\n"
     << "## Set-up\n\n"
     << "- **Task** (synthetic, labelled synthetic): a mixture of " << o.mixture.classes
     << " isotropic Gaussians in " << o.mixture.dims << " dimensions, class means of norm ~" << general(o.mixture.separation)
     << ", unit noise (measure/largebatch/mixture_task.h). Every step draws fresh training samples (no epochs, no "
        "overfitting); the loss is the mean cross-entropy on a fixed held-out set of "
     << o.held_out << " samples.\n"
     << "- **Model**: MLP " << o.mixture.dims;
  for (int64_t h : o.hidden) md << " -> " << h << " (ReLU)";
  md << " -> " << o.mixture.classes << " (models/small.h), the same initial weights for every run (seed " << o.seed
     << ").\n"
     << "- **Training**: SGD at a constant learning rate, momentum " << general(o.momentum)
     << ", no weight decay; at most " << o.max_steps << " steps per run.\n"
     << "- **Target**: held-out loss <= " << general(o.target_loss)
     << ". The held-out loss is evaluated after every step below 128, then every 2^floor(log2(step/64)) steps; "
        "the steps to the target are interpolated linearly between the two evaluations around the first crossing.\n"
     << "- **Learning rate tuned per batch** (what the McCandlish model assumes): the grid " << join(o.lrs)
     << " is tried from the largest rate down; a trial stops once it needs more steps than the best so far, and the "
        "search stops after " << 2 << " trials in a row without a new best. The best rate's steps are the measurement.\n"
     << "- **Baseline**: batch " << b0 << ". Its runs compute every step's gradient as " << o.micro_batches
     << " micro-batches of " << b0 / o.micro_batches
     << " (for this model, which has no BatchNorm, exactly the batch gradient) and feed |G_small|^2 (averaged over "
        "the micro-batches) and |G_big|^2 to the two-batch estimator (trainsim::GradientNoiseEstimator, EMA decay "
     << general(o.ema_decay) << ", |G|^2 and tr(Sigma) averaged separately).\n"
     << "- **Prediction** (headline): integrated along the baseline's run, since the noise scale grows as the loss "
        "falls: each stretch of dS_0 baseline steps at noise scale B_n is worth dS_min = dS_0 / (1 + B_n/B_0) "
        "(min_steps_from) and costs dS_min (1 + B_n/B) steps at batch B (steps_at_batch), summed to S_0. For "
        "comparison, the same with the noise scale at the target only (the formula `simulate` uses for epochs to a "
        "target), and perfect linear scaling S_0 B_0 / B.\n"
     << "- **Error**: mean absolute percentage error |predicted - measured| / measured over the batch sizes other "
        "than the baseline's (its prediction equals its measurement by construction).\n\n"
     << "## Result\n\n"
     << "Baseline: S_0 = " << fixed(r.base_steps, 1) << " steps at batch " << b0 << " (lr "
     << general(r.batches[r.base].best_trial()->lr) << "); noise scale at the target B_noise = "
     << fixed(r.noise_at_target, 1) << ", so S_min = S_0 / (1 + B_noise/B_0) = " << fixed(r.min_steps, 1)
     << " (at-target fit).\n\n"
     << "| batch | best lr | measured steps | predicted | error | predicted (B_noise at target) | error | perfect "
        "scaling | error |\n"
     << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& p : r.predictions) {
    auto err = [&](double predicted) {
      const std::string e = percent_error(predicted, p.measured);
      return e.empty() ? std::string("") : e + "%";
    };
    md << "| " << p.batch << (p.is_base ? " (baseline)" : "") << " | " << (p.best_lr ? general(*p.best_lr) : "-")
       << " | " << (p.measured ? fixed(*p.measured, 1) : "not reached") << " | " << fixed(p.predicted, 1) << " | "
       << err(p.predicted) << " | " << fixed(p.predicted_at_target, 1) << " | " << err(p.predicted_at_target)
       << " | " << fixed(p.perfect_scaling, 1) << " | " << err(p.perfect_scaling) << " |\n";
  }
  md << "\nErrors are signed (+: the prediction needs more steps than measured). Mean absolute error over "
     << r.compared << " batch sizes: **" << fixed(r.error_percent, 1) << "%** (headline), "
     << fixed(r.error_at_target_percent, 1) << "% with the noise scale at the target, "
     << fixed(r.error_perfect_scaling_percent, 1) << "% for perfect scaling.\n";
  if (!r.not_reached.empty()) {
    md << "\nNot reached at any learning rate within " << o.max_steps << " steps (left out of the error): batch "
       << join(r.not_reached) << ".\n";
  }
  bool edge = false;
  for (const auto& b : r.batches) edge = edge || b.best_at_grid_edge;
  if (edge) {
    md << "\nAt least one batch size's best learning rate is at the edge of the grid (see below): its tuned rate "
          "may lie outside the grid, and its measured steps are then an upper bound.\n";
  }
  md << "\n" << (has_plot ? "![steps to the target vs batch size](steps.svg)\n" : "No plot: gnuplot was not found "
                                                                                  "or failed (steps.gp draws it).\n");

  md << "\n## The baseline's noise scale along training\n\n"
     << "| step | held-out loss | EMA \\|G\\|^2 | EMA tr(Sigma) | B_noise |\n|---:|---:|---:|---:|---:|\n";
  // About ten rows, evenly spread over the run, and the last (the target).
  const size_t n = r.base_curve.size();
  const size_t stride = n > 10 ? n / 10 : 1;
  for (size_t i = stride; i < n; i += stride) {
    if (i + stride / 2 >= n && i != n - 1) continue;  // leave room for the last row
    const auto& p = r.base_curve[i];
    md << "| " << p.step << " | " << fixed(p.loss, 4) << " | " << (p.grad_sq_norm ? general(*p.grad_sq_norm) : "-")
       << " | " << (p.trace_sigma ? general(*p.trace_sigma) : "-") << " | "
       << (p.noise_scale ? fixed(*p.noise_scale, 1) : "-") << " |\n";
  }
  if (n > 1 && (n - 1) % stride != 0) {
    const auto& p = r.base_curve.back();
    md << "| " << p.step << " | " << fixed(p.loss, 4) << " | " << (p.grad_sq_norm ? general(*p.grad_sq_norm) : "-")
       << " | " << (p.trace_sigma ? general(*p.trace_sigma) : "-") << " | "
       << (p.noise_scale ? fixed(*p.noise_scale, 1) : "-") << " |\n";
  }
  md << "\nEvery evaluation is in baseline_curve.csv.\n\n## Learning-rate trials\n\n| batch | lr: outcome |\n|---:|---|\n";
  for (const auto& b : r.batches) {
    md << "| " << b.batch << " | ";
    for (size_t i = 0; i < b.trials.size(); ++i) {
      const auto& t = b.trials[i];
      md << (i ? "; " : "") << general(t.lr) << ": " << trial_outcome(t) << (b.best && *b.best == i ? " **(best)**" : "");
    }
    md << " |\n";
  }
  md << "\n\"not within N steps\": stopped at the best steps so far (it could no longer win) or at the step limit.\n\n"
     << "## Files\n\n"
     << "- predictions.csv: per batch size, measured and predicted steps and the signed errors.\n"
     << "- trials.csv: every (batch, lr) run.\n"
     << "- baseline_curve.csv: the baseline's held-out loss and noise-scale averages at every evaluation.\n"
     << (has_plot ? "- steps.svg (steps.gp): the plot above.\n" : "- steps.gp: the plot script.\n");
  return md.str();
}

std::vector<std::string> write_validation_report(const ValidationResult& r, const ValidationOptions& o,
                                                 const ReportContext& c, const std::string& dir) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = (fs::path(dir) / name).string();
    write_text_atomically(path, text);
    written.push_back(path);
  };
  write("predictions.csv", predictions_csv(r));
  write("trials.csv", trials_csv(r));
  write("baseline_curve.csv", baseline_curve_csv(r));
  write("steps.gp", kPlotScript);
  const std::string gnuplot = find_gnuplot();
  const bool has_plot = !gnuplot.empty() && run_gnuplot(gnuplot, dir);
  if (has_plot) written.push_back((fs::path(dir) / "steps.svg").string());
  write("report.md", report_markdown(r, o, c, has_plot));
  return written;
}

}  // namespace trainsim::measure
