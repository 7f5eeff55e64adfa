#include "io/profile_needs.h"

#include <algorithm>
#include <string>

#include "format/errors.h"

namespace trainsim {

void require_for_model(const Profile& profile, const SweepConfig& config) {
  const auto fail = [&](const std::string& what) {
    throw InputError(config.file, config.profile_line, "profile",
                     "profile " + config.profile_path + " " + what);
  };
  if (profile.measurement.precision != config.precision) {
    throw InputError(config.file, config.precision_line > 0 ? config.precision_line : config.profile_line,
                     config.precision_line > 0 ? "precision" : "profile",
                     "profile " + config.profile_path + " was measured in " +
                         precision_name(profile.measurement.precision) +
                         " (measurement.precision), the config predicts " + precision_name(config.precision) +
                         ": give precision: " + precision_name(profile.measurement.precision) +
                         " or a profile measured with measure --precision " + precision_name(config.precision));
  }
  if (profile.measurement.memory_format != config.memory_format) {
    const bool given = config.memory_format_line > 0;
    throw InputError(config.file, given ? config.memory_format_line : config.profile_line,
                     given ? "memory_format" : "profile",
                     "profile " + config.profile_path + " was measured in " +
                         memory_format_name(profile.measurement.memory_format) +
                         " (measurement.memory_format), the config predicts " +
                         memory_format_name(config.memory_format) + ": give memory_format: " +
                         memory_format_name(profile.measurement.memory_format) +
                         " or a profile measured with measure --memory-format " +
                         memory_format_name(config.memory_format));
  }
  const auto model_it = profile.models.find(config.model);
  if (model_it == profile.models.end()) {
    std::string names;
    for (const auto& entry : profile.models) names += (names.empty() ? "" : ", ") + entry.first;
    fail("has no model '" + config.model + "' (it has: " + (names.empty() ? "none" : names) + ")");
  }
  const ModelProfile& model = model_it->second;
  if (model.batches.empty()) fail("has no measured batch sizes for '" + config.model + "'");
  if (model.layers.empty()) fail("has no layers for '" + config.model + "'");
  if (profile.machine.device_memory_bytes <= 0) {
    fail("has no device memory capacity (machine.device_memory_bytes): cannot tell which batches fit");
  }
  if (profile.loader.points.empty()) fail("has no loader throughput (loader.points)");
  if (profile.machine.device_kind == "cuda" &&
      (!profile.h2d.applicable || (profile.h2d.pinned.empty() && profile.h2d.pageable.empty()))) {
    fail("has no host-to-device copy curve (h2d) for its cuda device");
  }

  // A Q4 about another model, trainer or profile is checked on its own sweep (large_batch_sweep).
  if (config.large_batch && !large_batch_sweep(config)) {
    const LargeBatchRequest& request = *config.large_batch;
    const auto fail_request = [&](const std::string& what) {
      throw InputError(config.file, request.line, request.key, "profile " + config.profile_path + " " + what);
    };
    const auto curve = std::find_if(profile.training.begin(), profile.training.end(),
                                    [&](const TrainingCurve& c) { return c.model == config.model; });
    if (curve == profile.training.end()) {
      fail_request("has no baseline training curve for " + config.model + " (run measure baseline)");
    }
    if (curve->epochs.empty()) {
      fail_request("has a baseline training curve for " + config.model +
                   " without a finished epoch (run measure baseline to the end)");
    }
    // The curve starts from the untrained model's loss ln(C), which needs C >= 2 classes.
    if (model.num_classes < 2) fail_request("gives " + config.model + " fewer than 2 classes (num_classes)");
    // Asked for by name: a curve without it is an error, not a silent fallback.
    if (request.pace_probe.value_or(false) && curve->pace_probe.empty()) {
      throw InputError(config.file, request.pace_probe_line, request.key + ".pace_probe",
                       "profile " + config.profile_path + " has a baseline curve for " + config.model +
                           " without the pace probe (run measure baseline --pace-probe-at)");
    }
  }

  const int max_gpus = config.gpus.empty() ? 1 : *std::max_element(config.gpus.begin(), config.gpus.end());
  // A topology prices every collective with NCCL's model: no measured curve is needed then.
  if (max_gpus > 1 && !config.interconnect && !config.topology) {
    const bool has_all_reduce = std::any_of(
        profile.collectives.curves.begin(), profile.collectives.curves.end(),
        [](const CollectiveCurve& c) { return c.op == "all_reduce" && c.ranks >= 2 && !c.points.empty(); });
    if (!has_all_reduce) {
      fail("has no all_reduce curve and the config gives no interconnect or topology: cannot cost " +
           std::to_string(max_gpus) + "-rank all-reduce");
    }
  }
}

}  // namespace trainsim
