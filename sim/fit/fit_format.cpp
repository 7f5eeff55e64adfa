#include "fit/fit_format.h"

#include <cmath>
#include <cstdio>

namespace trainsim::fit {
namespace {

std::string printf_string(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string describe(const Observation& o) {
  std::string s = std::string(to_string(o.strategy)) + " " + std::to_string(o.gpus) + " GPU" +
                  (o.gpus > 1 ? "s" : "") + ", batch " + std::to_string(o.batch_per_gpu);
  if (o.loader_workers) s += ", " + std::to_string(*o.loader_workers) + " workers";
  if (o.gpu) s += ", " + o.gpu->key;
  return s;
}

std::string value_text(const ParamEstimate& e, bool named_gpu) {
  const ParamInfo info = param_info(e.param, named_gpu);
  if (e.status == ParamStatus::kAtZero) return "0 " + std::string(info.unit);
  if (e.status != ParamStatus::kFitted) return "-";
  return printf_string("%.4g", e.value * info.scale) + " " + info.unit;
}

std::string status_text(const ParamEstimate& e, int dof) {
  switch (e.status) {
    case ParamStatus::kFitted:
      if (e.at_limit) return "AT THE EDGE OF ITS RANGE: the model cannot reach the observations";
      return e.relative_se ? "fitted, +/- " + printf_string("%.1f%%", *e.relative_se * 100)
                           : std::string(dof == 0 ? "fitted (no observation to spare: no error bar)"
                                                  : "fitted");
    case ParamStatus::kAtZero: return "none: the observations show no such cost";
    case ParamStatus::kUndetermined: return "UNDETERMINED: the observations cannot tell it";
    case ParamStatus::kFromProfile: return "from the measured profile";
    case ParamStatus::kNotInPlay: return "not in play (no observation involves it)";
  }
  return "";
}

}  // namespace

std::string format_fit(const FitResult& fit, const SweepConfig& config, const std::string& target) {
  std::string out = "Fit of " + target + " to " + std::to_string(config.observations.size()) + " observation" +
                    (config.observations.size() == 1 ? "" : "s") + " (" + config.file +
                    "; least squares on relative errors, docs/FIT.md)\n";
  out += "  " + pad("parameter", 24) + pad("value", 26) + "status\n";
  for (const ParamEstimate& e : fit.params) {
    out += "  " + pad(param_info(e.param, fit.named_gpu).name, 24) + pad(value_text(e, fit.named_gpu), 26) +
           status_text(e, fit.degrees_of_freedom) + "\n";
  }
  out += "  " + pad("observation", 44) + pad("measured", 14) + pad("fitted", 14) + "error\n";
  for (std::size_t i = 0; i < config.observations.size() && i < fit.predicted.size(); ++i) {
    const Observation& o = config.observations[i];
    const double error = (fit.predicted[i] - o.measured()) / o.measured();
    out += "  " + pad("line " + std::to_string(o.line) + ": " + describe(o), 44) +
           pad(printf_string("%.4g s", o.measured()), 14) + pad(printf_string("%.4g s", fit.predicted[i]), 14) +
           printf_string("%+.1f%%", error * 100) + " (" + o.measure() + ")\n";
  }
  out += "  rms error " + printf_string("%.1f%%", fit.rms_relative_error * 100) + ", " +
         std::to_string(fit.degrees_of_freedom) + " degree" + (fit.degrees_of_freedom == 1 ? "" : "s") +
         " of freedom\n";
  if (fit.alternative) {
    const FitResult& other = *fit.alternative;
    out += "  AMBIGUOUS: another explanation fits nearly as well (rms " +
           printf_string("%.1f%%", other.rms_relative_error * 100) + "):";
    for (const ParamEstimate& e : other.params) {
      if (e.status != ParamStatus::kFitted && e.status != ParamStatus::kAtZero) continue;
      out += " " + std::string(param_info(e.param, other.named_gpu).name) + " " + value_text(e, other.named_gpu) + ";";
    }
    out += " observations that tell them apart (other batch sizes, GPU counts or loader workers) would settle it\n";
  }
  return out;
}

std::vector<std::string> fit_notes(const FitResult& fit, const std::string& target, bool default_link) {
  std::vector<std::string> notes{"fitted device: " + target + " (docs/FIT.md)"};
  if (default_link && !link_fitted(fit)) {
    notes.push_back("link: no GPU, interconnect or multi-GPU observation names it: PCIe 3.0 x16 without "
                    "peer-to-peer assumed (through host memory, every byte crosses PCIe twice: bus "
                    "bandwidth " + printf_string("%.2f GB/s", default_pcie_link().bus_bandwidth_gbs) +
                    ", latency 0)");
  }
  for (const ParamEstimate& e : fit.params) {
    if (e.status != ParamStatus::kUndetermined && e.status != ParamStatus::kNotInPlay) continue;
    if (e.param == Param::kEfficiency) continue;
    if (e.param == Param::kLinkBusbw || e.param == Param::kLinkLatency) continue;  // the link note says
    notes.push_back(std::string(param_info(e.param, fit.named_gpu).name) + " " + to_string(e.status) +
                    ": not included (the prediction is a lower bound where it matters)");
  }
  return notes;
}

namespace {

// Timings against predictions, then `<label> MAPE epoch_s: X.X% over N <unit>`.
std::string format_scored(const std::vector<HoldoutRow>& rows, const std::vector<Observation>& cells,
                          const std::string& title, const std::string& label, const std::string& unit) {
  bool intervals = false;
  for (const HoldoutRow& row : rows) intervals = intervals || row.interval.has_value();
  std::string out = title + "\n";
  out += "  " + pad("timing", 44) + pad("measured", 14) + pad("predicted", 14) +
         (intervals ? pad("68% interval", 22) : "") + "error\n";
  double sum = 0;
  int counted = 0;
  int covered = 0;
  int undetermined = 0;  // intervals over 10x either way (Interval::undetermined)
  for (const HoldoutRow& row : rows) {
    const Observation& o = cells[row.observation];
    out += "  " + pad("line " + std::to_string(o.line) + ": " + describe(o), 44) +
           pad(printf_string("%.4g s", o.measured()), 14);
    if (!row.predicted) {
      out += "n/a: " + row.why_not + "\n";
      continue;
    }
    const double error = (*row.predicted - o.measured()) / o.measured();
    sum += std::abs(error);
    ++counted;
    out += pad(printf_string("%.4g s", *row.predicted), 14);
    if (row.interval) {
      const bool inside = row.interval->contains(o.measured());
      covered += inside ? 1 : 0;
      undetermined += row.interval->undetermined() ? 1 : 0;
      out += pad(row.interval->undetermined()
                     ? std::string("undetermined (>10x)")
                     : printf_string("%.4g-", row.interval->lo) + printf_string("%.4g s", row.interval->hi) +
                           (inside ? "" : " *"),
                 22);
    } else if (intervals) {
      out += pad("", 22);
    }
    out += printf_string("%+.1f%%", error * 100) + " (" + o.measure() + ")\n";
  }
  if (intervals && counted > 0) {
    out += "  68% interval (the fit's covariance and a timing noise of at least " +
           printf_string("%.0f%%", 100 * kTimingNoise) + ", docs/FIT.md)" +
           " covers " + std::to_string(covered) + " of " + std::to_string(counted) +
           printf_string(" cells (%.0f%%)", 100.0 * covered / counted) +
           (undetermined > 0 ? ", " + std::to_string(undetermined) + " of them undetermined (over 10x either way)" : "") +
           "; * marks a miss\n";
  }
  const int missing = static_cast<int>(rows.size()) - counted;
  if (missing > 0) {
    out += "  " + std::to_string(missing) + " could not be predicted (n/a above)\n";
  }
  // The measure the errors are of: epoch_s, iteration_s, or both ("time").
  std::string measure;
  for (const HoldoutRow& row : rows) {
    const std::string m = cells[row.observation].measure();
    measure = measure.empty() || measure == m ? m : "time";
  }
  out += label + " MAPE " + measure + ": " + (counted > 0 ? printf_string("%.1f%%", 100 * sum / counted) : "n/a") +
         " over " + std::to_string(counted) + " " + unit + "\n";
  return out;
}

}  // namespace

std::string format_holdout(const std::vector<HoldoutRow>& rows, const SweepConfig& config) {
  return format_scored(rows, config.observations, "Leave-one-out: each observation predicted by a fit of the others",
                       "holdout", "observations");
}

std::string format_held_out(const std::vector<HoldoutRow>& rows, const SweepConfig& config) {
  return format_scored(rows, config.held_out, "Held-out timings (not fitted) against the fit's predictions",
                       "held-out", "cells");
}

}  // namespace trainsim::fit
