#pragma once
// The sweep config (configs/sweep.yaml): plain struct + parser. Format in README "Config format".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/lr_rule.h"
#include "format/memory_format.h"
#include "format/precision.h"
#include "format/run_shape.h"
#include "io/gpu_catalog.h"
#include "io/topology.h"
#include "stats/past_bound.h"

namespace trainsim {

// The per-epoch test pass of the course's scripts (off unless the config asks): every process
// evaluates `samples` test images in batches of `batch` after each training epoch.
struct TestPass {
  int64_t samples = 10000;
  int64_t batch = 100;
};

// An assumed interconnect, for rank counts the profile has no collective curve for (e.g. a
// profile from a single-GPU machine). Optional `interconnect:` block; every output that used it
// says "assumed".
struct InterconnectAssumption {
  double bus_bandwidth_gbs = 0;  // nccl-tests busbw, GB/s (1e9 bytes/s)
  double latency_us = 0;         // per-step latency alpha
  bool override_measured = false;  // true: use it even where the profile has a measured curve
};

// How a sweep's configurations run, apart from each one's strategy, GPU count and batch per GPU:
// the run description the config gives them all, taken whole by the simulator (RunSpec), the
// reports (report::ReportContext) and the comparison with measured runs (whose runs.csv rows give
// their own values of some of it: RunKey). The model is named beside it, since one setting is
// simulated for another model too (Q4's `large_batch.model`, the scale-out's profile).
struct RunSetting {
  int64_t train_samples = 50000;
  int loader_workers = 2;
  bool persistent_workers = false;  // DataLoader(persistent_workers=...): no start-up per epoch
  bool pin_memory = false;          // DataLoader(pin_memory=...): pinned H2D copies
  Trainer trainer = Trainer::kPytorch;  // whose loop and loader: PyTorch's or measure train's
  // `precision:` (format/precision.h): the numeric mode predicted; the profile must have been
  // measured in it (measurement.precision).
  Precision precision = Precision::kFp32;
  // `memory_format:` (format/memory_format.h): the layout predicted; the profile must have been
  // measured in it (measurement.memory_format).
  MemoryFormat memory_format = MemoryFormat::kNchw;
  std::optional<TestPass> test_pass;  // the per-epoch test pass (SimResult::test_s)
  // PyTorch SyncBatchNorm: per-BatchNorm-layer collectives in forward and backward (DDP with >= 2
  // ranks; dp ignores it with a note).
  bool sync_batchnorm = false;
  std::optional<InterconnectAssumption> interconnect;  // `interconnect:`, if given
  // `topology:` (docs/SCALE.md): the cluster the sweep runs on; collectives follow NCCL's model.
  std::optional<Topology> topology;
  // Not a config key: DataParallel's host work per replica per iteration (replicate, scatter,
  // threads, gather) beyond what the profile's loop holds, where a fit determined it (docs/FIT.md);
  // 0 otherwise.
  double dp_host_per_replica_s = 0;
};

// Large-batch predictions (issue 5, docs/LARGE_BATCH.md): asked for by a `large_batch:` block or
// an `lr_rule:` key; they need the profile's baseline training curve for the model.
struct LargeBatchRequest {
  std::string key;                    // "large_batch" or "lr_rule": what asked (for errors)
  int line = 0;                       // line of that key
  int epochs = 5;                     // k: predict the loss after k epochs
  std::optional<double> target_loss;  // default: the baseline's loss after k epochs
  std::optional<double> target_accuracy;  // a test accuracy (fraction) to reach: epochs and time to it
  double warmup_epochs = 5;           // linear-warmup: the ramp's length (measure baseline's default)
  // large_batch.past_bound: what a run past plain SGD's bound does (default: the baseline's start
  // curvature decides).
  PastBound past_bound = PastBound::kFromStart;
  // large_batch.pace_probe: the baseline's pace probe in place of its single-step x_0 and B_n where
  // the curve carries one (LargeBatchSettings::pace_probe; default: that setting's).
  std::optional<bool> pace_probe;
  int pace_probe_line = 0;            // its line (errors about a curve without the probe point there)
  // Q4 for another model than the sweep's (large_batch.model), and/or with another trainer
  // (large_batch.trainer): the sweep's configurations are simulated again for it (its own data
  // set's epoch), and Q4's times are those.
  std::optional<std::string> model;
  std::optional<Trainer> trainer;
  // large_batch.profile: the profile holding that model's baseline curve and timings, when it is
  // not the config's (e.g. a CPU's curve in a GPU's sweep); resolved, empty: the config's.
  std::string profile_path;
  int profile_line = 0;
};

// `scale_out:` (docs/SCALE.md "Scale-out in the main job"): DDP past the sweep's GPU counts, on a
// topology of nodes, with the compute of the config's profile or of another one (a measured
// GPU's when the sweep's profile is a CPU's). The sweep's model, data set and loader are kept.
struct ScaleOutRequest {
  int line = 0;                       // line of the `scale_out:` key
  std::string profile_path;           // resolved; empty: the config's profile
  std::optional<Trainer> trainer;     // default: the config's
  Topology topology;
  std::vector<int> gpus;
  std::vector<int64_t> batch_per_gpu; // empty: the sweep's
};

// One measured timing a user gives (`observations:`), for the fit (docs/FIT.md): a configuration
// and its epoch or iteration time, on the config's GPU unless it names its own.
struct Observation {
  Strategy strategy = Strategy::kDdp;
  int gpus = 1;
  int64_t batch_per_gpu = 1;
  std::optional<int> loader_workers;  // default: the config's loader.workers
  std::optional<double> epoch_s;      // exactly one of epoch_s and iteration_s
  std::optional<double> iteration_s;
  std::optional<GpuSpec> gpu;         // the catalog entry of its own `gpu:`, if any
  int line = 0;                       // line of the observation in the config

  double measured() const { return epoch_s ? *epoch_s : *iteration_s; }
  const char* measure() const { return epoch_s ? "epoch_s" : "iteration_s"; }
};

// `collectives:` (docs/SCALE.md): an nccl-tests style sweep of one collective on the topology.
struct CollectivesRequest {
  std::string op = "all_reduce";  // all_reduce | broadcast | reduce | all_gather | reduce_scatter
  double min_bytes = 8;
  double max_bytes = 128.0 * 1024 * 1024;
  double factor = 2;              // each size is the previous one times this
  // `log:` a measured nccl-tests log of `op` on the topology's GPUs, compared with and never
  // fitted; the table's predictions are then the catalog's figures alone (docs/SCALE.md).
  std::optional<CollectiveCurve> log;
  std::string log_path;
};

// The config: the run setting of all its configurations, the sweep's axes and what else it asks.
struct SweepConfig : RunSetting {
  std::string file;          // path of the config as given
  std::string profile_path;  // resolved (relative to the config's folder); empty: no profile
  int profile_line = 0;      // line of the `profile:` key (for errors about the profile's content)
  // `gpu:` (a catalog key): predict for this GPU. With a profile of another GPU, its times are
  // transferred; without a profile, the roofline with fitted efficiencies (docs/FIT.md).
  std::optional<GpuSpec> gpu;
  int gpu_line = 0;
  std::string gpu_catalog_path;  // `gpu_catalog:` resolved, else the bundled configs/gpus.yaml
  std::vector<Observation> observations;  // `observations:`: measured timings to fit
  // `held_out:`: measured timings of the same form, not fitted: each is predicted from the fit and
  // scored (the fit's validation, docs/FIT.md).
  std::vector<Observation> held_out;
  std::optional<CollectivesRequest> collectives;  // `collectives:`: print an nccl-tests table
  std::string model = "resnet18-cifar";  // any model the profile holds (described_model: the fit's)
  int model_line = 0;                     // line of `model:` (0: not given)
  int precision_line = 0;  // line of `precision:` (0: not given, fp32)
  int memory_format_line = 0;  // line of `memory_format:` (0: not given, nchw)
  // `precision:` or `memory_format:` as a list (or both, crossed) with `profile:` a map of one
  // profile per entry: the tables predict the first entry (`precision` and `memory_format`, from
  // `profile_path`), each other one is predicted beside them from its own profile, in the tables'
  // setting but for the listed keys (docs/PRECISION.md "Several precisions").
  enum class VariantAxis { kPrecision, kMemoryFormat, kBoth };
  VariantAxis variant_axis = VariantAxis::kPrecision;  // which key is the list (kBoth: both are)
  struct VariantProfile {
    Precision precision = Precision::kFp32;
    MemoryFormat memory_format = MemoryFormat::kNchw;
    std::string profile_path;  // resolved
    int line = 0;              // its line in `profile:`
  };
  std::vector<VariantProfile> other_variants;
  std::vector<Strategy> strategies;  // empty (with gpus, batch_per_gpu) when no sweep: is given
  std::vector<int> gpus;
  std::vector<int64_t> batch_per_gpu;
  // How the learning rate follows the global batch in the large-batch predictions.
  LrRule lr_rule = LrRule::kLinearWarmup;
  std::optional<LargeBatchRequest> large_batch;
  std::optional<ScaleOutRequest> scale_out;
};

// An entry's name on the axis a list spans: the precision ("bf16-amp"), the memory format
// ("channels_last"), or both ("bf16-amp/channels_last", a key of profile: when both are lists).
inline std::string variant_name(SweepConfig::VariantAxis axis, Precision precision, MemoryFormat format) {
  switch (axis) {
    case SweepConfig::VariantAxis::kPrecision: return precision_name(precision);
    case SweepConfig::VariantAxis::kMemoryFormat: return memory_format_name(format);
    case SweepConfig::VariantAxis::kBoth: break;
  }
  return std::string(precision_name(precision)) + "/" + memory_format_name(format);
}

// How messages and the report name an axis, each field for kPrecision / kMemoryFormat / kBoth.
struct VariantAxisWords {
  const char* noun;    // "precision" / "memory format" / "precision and memory format"
  const char* title;   // the report's section: "Precision" / "Memory format" / "Precision and memory format"
  const char* plural;  // "precisions" / "memory formats" / "precisions and memory formats"
  const char* entry;   // an entry in errors: "precision" / "memory format" / "precision/memory format"
  const char* keys;    // the listed keys: "precision:" / "memory_format:" / "precision: x memory_format:"
  const char* field;   // a profile's: "measurement.precision" / "measurement.memory_format" / both
};
inline VariantAxisWords variant_axis_words(SweepConfig::VariantAxis axis) {
  switch (axis) {
    case SweepConfig::VariantAxis::kPrecision:
      return {"precision", "Precision", "precisions", "precision", "precision:", "measurement.precision"};
    case SweepConfig::VariantAxis::kMemoryFormat:
      return {"memory format", "Memory format", "memory formats", "memory format", "memory_format:",
              "measurement.memory_format"};
    case SweepConfig::VariantAxis::kBoth: break;
  }
  return {"precision and memory format", "Precision and memory format", "precisions and memory formats",
          "precision/memory format", "precision: x memory_format:", "measurement.precision, memory_format"};
}

// measure's flags that profile an entry of the axis: "--precision bf16-amp", "--memory-format
// channels_last" or both; without values ("--precision --memory-format") where `values` is false.
inline std::string variant_measure_flags(SweepConfig::VariantAxis axis, Precision precision, MemoryFormat format,
                                         bool values = true) {
  std::string flags;
  if (axis != SweepConfig::VariantAxis::kMemoryFormat) {
    flags += std::string("--precision") + (values ? std::string(" ") + precision_name(precision) : "");
  }
  if (axis != SweepConfig::VariantAxis::kPrecision) {
    flags += std::string(flags.empty() ? "" : " ") + "--memory-format" +
             (values ? std::string(" ") + memory_format_name(format) : "");
  }
  return flags;
}

// What the simulator takes, beyond which a config is refused with a clear error rather than
// simulated for minutes or out of memory (README "Config format"):
// - ranks on one machine: DDP's are identical and one stands for all, but a trace (and
//   DataParallel, one process) simulates each, its ops events (a 4096-rank DDP epoch traced takes
//   about 20 s and 1.3 GB on 2 cores, 2048 ranks 4 s: the cost grows faster than the rank count).
//   A topology's nodes are copies of one another, so DDP simulates one node: its gpus_per_node is
//   held to this bound, the whole cluster to kMaxGpus;
inline constexpr int kMaxGpusPerMachine = 4096;
// - GPUs in all: kMaxGpus (format/run_shape.h, which runs.csv's reader holds rows to as well);
// - a topology node's logical CPUs (the largest single servers have a few thousand);
inline constexpr int kMaxNodeCpuCores = 65536;
// - DataLoader worker processes per rank and iterations per rank in one epoch: kMaxLoaderWorkers
//   and kMaxIterationsPerEpoch (format/run_shape.h);
// - large_batch.warmup_epochs: a ramp longer than any run the large-batch model follows.
inline constexpr int kMaxWarmupEpochs = 1000;

// Parses and validates a sweep config. Throws InputError (file:line: key.path: message) on the
// first problem: unknown key, wrong type, missing required key, zero/negative sizes, unknown
// strategy or lr_rule.
SweepConfig load_sweep_config(const std::string& path);

// Why `gpus` GPUs cannot be simulated: more than `topology`'s nodes hold, or, with no topology
// (one machine), more than kMaxGpusPerMachine; "" when they can.
std::string gpu_count_problem(const std::optional<Topology>& topology, int64_t gpus);

// Whether trainsim knows `model`'s layers and data set (resnet18-cifar, resnet18-imagenet,
// fashion-cnn, fashion-cnn-gap): what the fit and moving a profile to another GPU need. Any other model is
// simulated from its profile alone.
bool described_model(const std::string& model);
// Those models, for messages: "resnet18-cifar, resnet18-imagenet, fashion-cnn or fashion-cnn-gap".
extern const char* const kDescribedModels;

// The sweep Q4 is simulated on when large_batch names another model, trainer or profile than the
// sweep's: the same configurations with that model (its data set's epoch: 50,000 CIFAR-10 images
// for the ResNets, 60,000 Fashion-MNIST images for the fashion-cnns) and trainer; on another
// profile, that profile's machine as measured (no gpu:, topology:, interconnect: or collectives:
// of the config's). nullopt when Q4 uses the sweep itself.
std::optional<SweepConfig> large_batch_sweep(const SweepConfig& config);

// The sweep `scale_out:` asks for: DDP at its GPU counts and batches on its topology, with its
// profile and trainer, the config's model, data set and loader; nullopt without `scale_out:`.
std::optional<SweepConfig> scale_out_sweep(const SweepConfig& config);

}  // namespace trainsim
