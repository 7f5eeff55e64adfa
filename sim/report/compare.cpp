#include "report/compare.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "format/csv.h"
#include "format/errors.h"
#include "format/metrics.h"
#include "io/config.h"

namespace trainsim::report {
namespace {

// Sort rank of a strategy: the config's order first, others after in enum order.
size_t strategy_rank(const SweepConfig& config, Strategy s) {
  const auto it = std::find(config.strategies.begin(), config.strategies.end(), s);
  if (it != config.strategies.end()) return static_cast<size_t>(it - config.strategies.begin());
  return config.strategies.size() + static_cast<size_t>(s);
}

bool contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

double error_percent(double predicted, double measured) { return percent_error(predicted, measured); }

ProbeReference probe_reference(const Profile& profile, const std::string& model) {
  ProbeReference ref;
  ref.threads = profile.machine.threads;
  const auto entry = profile.models.find(model);
  if (entry != profile.models.end()) {
    const std::string& source = entry->second.source;
    if (source.rfind("torchscript:", 0) == 0 || source.rfind("trace:", 0) == 0) return ref;
  }
  if (profile.calibration) ref.trainsim_s = profile.calibration->probe_s();
  if (profile.pytorch) ref.pytorch_s = profile.pytorch->probe_s;
  return ref;
}

RunSpec spec_for_measured(const SweepConfig& config, const RunKey& key) {
  RunSpec spec = config_spec(config, key.strategy, key.gpus, key.batch_per_gpu);
  spec.train_samples = key.train_samples;
  spec.loader_workers = key.loader_workers;
  spec.trainer = key.trainer;
  spec.test_pass = key.test_samples > 0 ? std::optional(TestPass{key.test_samples, 100}) : std::nullopt;
  return spec;
}

std::string variant_label(const VariantKey& key) {
  return std::string(precision_name(key.precision)) +
         (key.memory_format == MemoryFormat::kNchw ? "" : std::string(", ") + memory_format_name(key.memory_format));
}

Comparison merge_variants(Comparison tables, std::vector<std::pair<VariantKey, Comparison>> others) {
  for (auto& [variant, other] : others) {
    const auto of_variant = [v = variant](const auto& run) {
      return VariantKey{run.measured.key.precision, run.measured.key.memory_format} == v;
    };
    tables.unpredicted.erase(std::remove_if(tables.unpredicted.begin(), tables.unpredicted.end(), of_variant),
                             tables.unpredicted.end());
    for (ComparedRun& run : other.compared) {
      run.in_setting = false;  // the side-by-side tables are the tables' entry's
      tables.compared.push_back(std::move(run));
    }
    for (UnpredictedRun& run : other.unpredicted) {
      if (of_variant(run)) tables.unpredicted.push_back(std::move(run));
    }
    tables.unmeasured.insert(tables.unmeasured.end(), other.unmeasured.begin(), other.unmeasured.end());
    tables.extra_predictions.insert(tables.extra_predictions.end(), other.extra_predictions.begin(),
                                    other.extra_predictions.end());
  }
  return tables;
}

namespace {

bool same_spec(const RunSpec& a, const RunSpec& b) {
  const auto test = [](const RunSpec& s) { return s.test_pass ? s.test_pass->samples * 1000003 + s.test_pass->batch : 0; };
  return a.strategy == b.strategy && a.gpus == b.gpus && a.batch_per_gpu == b.batch_per_gpu &&
         a.train_samples == b.train_samples && a.loader_workers == b.loader_workers && a.trainer == b.trainer &&
         test(a) == test(b) && a.sync_batchnorm == b.sync_batchnorm && a.persistent_workers == b.persistent_workers &&
         a.pin_memory == b.pin_memory && a.precision == b.precision && a.memory_format == b.memory_format;
}

// Drift and whether noise and drift explain the error.
void judge(ComparedRun& run, const ProbeReference& probe) {
  const MeasuredConfig& m = run.measured;
  const std::optional<double> reference = m.key.trainer == Trainer::kPytorch ? probe.pytorch_s : probe.trainsim_s;
  double drift = 0;
  if (m.probe_s && reference) {
    // drift = probe during the runs / the profile's probe - 1
    drift = (m.probe_s->median / *reference - 1) * 100.0;
    run.drift_pct = drift;
    run.drift_adjusted_error_pct = error_percent(run.predicted.epoch_s * (1 + drift / 100.0), m.epoch_s.median);
  }
  run.explained = std::fabs(run.epoch_error_pct) <= m.epoch_s.noise_pct() + std::fabs(drift);
}

// Why a row's `model` keeps it from the config's model's predictions, or nothing. A row without
// the column or with it empty is the config's model's. A file that names one model only, not the
// config's, holds the runs of the network the config's model was profiled from under another name
// (e.g. `resnet50` trained, `resnet50-trace` imported from its trace): compared, and the report
// warns (comparison_warnings). A file that names several models keeps only the config's.
std::optional<std::string> other_model(const std::string& config_model, const RunsTable& runs, const RunKey& key) {
  if (key.model.empty() || key.model == config_model || runs.models.size() == 1) return std::nullopt;
  return "model '" + key.model + "', not the config's '" + config_model + "' (runs.csv names " +
         csv::comma_list(runs.models) + ")";
}

}  // namespace

Comparison compare_runs(const SweepConfig& config, const std::vector<SimResult>& sweep_results, const RunsTable& runs,
                        const std::vector<int64_t>& profiled_batches, const ProbeReference& probe,
                        const Predictor& predict) {
  Comparison out;
  // An entry the config lists besides (precision: or memory_format: a list) is its own join's
  // (merge_variants); any other precision or format is not predicted.
  const auto lists = [&](SweepConfig::VariantAxis axis) {
    return !config.other_variants.empty() &&
           (config.variant_axis == axis || config.variant_axis == SweepConfig::VariantAxis::kBoth);
  };
  for (const MeasuredConfig& m : runs.configs) {
    if (const auto reason = other_model(config.model, runs, m.key)) {
      out.unpredicted.push_back({m, *reason});
      continue;
    }
    if (m.key.precision != config.precision) {
      out.unpredicted.push_back({m, std::string("precision ") + precision_name(m.key.precision) +
                                        ", not the config's " + precision_name(config.precision) + " (the profile's)" +
                                        (lists(SweepConfig::VariantAxis::kPrecision) ? " or another it lists" : "")});
      continue;
    }
    if (m.key.memory_format != config.memory_format) {
      out.unpredicted.push_back({m, std::string("memory format ") + memory_format_name(m.key.memory_format) +
                                        ", not the config's " + memory_format_name(config.memory_format) +
                                        " (the profile's)" +
                                        (lists(SweepConfig::VariantAxis::kMemoryFormat) ? " or another it lists" : "")});
      continue;
    }
    if (m.key.threads > 0 && probe.threads > 0 && m.key.threads != probe.threads) {
      out.unpredicted.push_back({m, "threads " + std::to_string(m.key.threads) + " != the profile's " +
                                        std::to_string(probe.threads) +
                                        " (its compute timings are for that many intra-op threads)"});
      continue;
    }
    ComparedRun run;
    run.measured = m;
    run.profiled_batch = contains(profiled_batches, m.key.batch_per_gpu);
    run.in_setting = m.key.trainer == config.trainer && m.key.loader_workers == config.loader_workers &&
                     m.key.train_samples == config.train_samples &&
                     m.key.test_samples == (config.test_pass ? config.test_pass->samples : 0);
    const RunSpec spec = spec_for_measured(config, m.key);
    const auto in_sweep = std::find_if(sweep_results.begin(), sweep_results.end(),
                                       [&](const SimResult& r) { return same_spec(r.spec, spec); });
    if (in_sweep != sweep_results.end()) {
      run.predicted = *in_sweep;
      run.in_sweep = true;
    } else {
      try {
        run.predicted = predict(spec);
      } catch (const InputError& e) {
        out.unpredicted.push_back({m, "the profile cannot predict it: " + e.message()});
        continue;
      } catch (const std::invalid_argument& e) {
        out.unpredicted.push_back({m, std::string("the profile cannot predict it: ") + e.what()});
        continue;
      }
      out.extra_predictions.push_back(run.predicted);
    }
    if (!run.predicted.runnable) {
      out.unpredicted.push_back({m, "not runnable on the profiled machine: " + run.predicted.not_runnable});
      continue;
    }
    run.epoch_error_pct = error_percent(run.predicted.epoch_s, m.epoch_s.median);
    run.train_error_pct = error_percent(run.predicted.train_s, m.train_s.median);
    if (m.test_s) run.test_error_pct = error_percent(run.predicted.test_s, m.test_s->median);
    judge(run, probe);
    out.compared.push_back(std::move(run));
  }
  const auto order = [&config](const RunSpec& a, const RunSpec& b) {
    if (a.trainer != b.trainer) return a.trainer < b.trainer;
    const size_t ra = strategy_rank(config, a.strategy), rb = strategy_rank(config, b.strategy);
    if (ra != rb) return ra < rb;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    if (a.loader_workers != b.loader_workers) return a.loader_workers < b.loader_workers;
    if (a.batch_per_gpu != b.batch_per_gpu) return a.batch_per_gpu < b.batch_per_gpu;
    return a.train_samples < b.train_samples;
  };
  std::stable_sort(out.compared.begin(), out.compared.end(), [&](const ComparedRun& a, const ComparedRun& b) {
    return order(a.predicted.spec, b.predicted.spec);
  });
  std::stable_sort(out.extra_predictions.begin(), out.extra_predictions.end(),
                   [&](const SimResult& a, const SimResult& b) { return order(a.spec, b.spec); });
  for (const SimResult& r : sweep_results) {
    const bool measured = std::any_of(out.compared.begin(), out.compared.end(), [&](const ComparedRun& c) {
      return c.in_sweep && same_spec(c.predicted.spec, r.spec);
    });
    if (!measured) out.unmeasured.push_back(r.spec);
  }
  return out;
}

ErrorSummary summarize_errors(const std::vector<ComparedRun>& runs,
                              const std::function<bool(const ComparedRun&)>& keep) {
  ErrorSummary s;
  double sum_abs_epoch = 0, sum_abs_train = 0, sum_epoch = 0, sum_noise = 0, sum_abs_adjusted = 0;
  for (const auto& r : runs) {
    if (keep && !keep(r)) continue;
    ++s.configs;
    s.runs += r.measured.runs;
    sum_abs_epoch += std::fabs(r.epoch_error_pct);
    sum_abs_train += std::fabs(r.train_error_pct);
    sum_epoch += r.epoch_error_pct;
    if (r.measured.runs >= 2) {
      ++s.noise_configs;
      sum_noise += r.measured.epoch_s.noise_pct();
    }
    s.max_abs_epoch_error_pct = std::max(s.max_abs_epoch_error_pct, std::fabs(r.epoch_error_pct));
    if (r.explained) ++s.explained;
    if (r.drift_adjusted_error_pct) {
      ++s.with_drift;
      sum_abs_adjusted += std::fabs(*r.drift_adjusted_error_pct);
    }
  }
  if (s.configs > 0) {
    // MAPE = (1/n) sum |e_i|; bias = (1/n) sum e_i, over the n configurations.
    s.mape_epoch_pct = sum_abs_epoch / s.configs;
    s.mape_train_pct = sum_abs_train / s.configs;
    s.mean_epoch_error_pct = sum_epoch / s.configs;
  }
  if (s.noise_configs > 0) s.mean_noise_pct = sum_noise / s.noise_configs;
  if (s.with_drift > 0) s.mape_drift_adjusted_pct = sum_abs_adjusted / s.with_drift;
  return s;
}

}  // namespace trainsim::report
