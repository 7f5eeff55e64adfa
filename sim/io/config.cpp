#include "io/config.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "io/errors.h"
#include "io/yaml_reader.h"

namespace trainsim {

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::kDdp: return "ddp";
    case Strategy::kDp: return "dp";
  }
  return "?";
}

const char* to_string(Trainer t) {
  switch (t) {
    case Trainer::kPytorch: return "pytorch";
    case Trainer::kTrainsim: return "trainsim";
  }
  return "?";
}

std::optional<Trainer> parse_trainer(const std::string& name) {
  if (name == "pytorch") return Trainer::kPytorch;
  if (name == "trainsim") return Trainer::kTrainsim;
  return std::nullopt;
}

namespace {

using yaml_io::Map;
using yaml_io::Value;

// The most iterations per rank any configuration of the sweep runs in one epoch (at its smallest
// batch b).
int64_t longest_epoch(const SweepConfig& c, int64_t b) {
  int64_t longest = 0;
  for (Strategy strategy : c.strategies) {
    for (int n : c.gpus) longest = std::max(longest, epoch_iterations(strategy, n, b, c.train_samples));
  }
  return longest;
}

// Models the simulator knows the layer layout of (ResNet-18, CIFAR and torchvision variants).
constexpr const char* kKnownModels[] = {"resnet18-cifar", "resnet18-imagenet"};

// A required list, a lone scalar taken as a one-element list; empty lists rejected.
std::vector<Value> non_empty_list(const Value& value) {
  std::vector<Value> items = value.as_list(/*scalar_as_list=*/true);
  if (items.empty()) value.fail("must list at least one value");
  return items;
}

// Rejects the second occurrence of a value already in `seen`.
template <typename T>
void reject_duplicate(std::set<T>& seen, const T& item, const Value& where) {
  if (!seen.insert(item).second) where.fail("duplicate value " + where.describe());
}

std::vector<Strategy> parse_strategies(const Value& value) {
  std::vector<Strategy> strategies;
  std::set<std::string> seen;
  for (const Value& item : non_empty_list(value)) {
    const std::string name = item.as_string();
    if (name == "ddp") {
      strategies.push_back(Strategy::kDdp);
    } else if (name == "dp") {
      strategies.push_back(Strategy::kDp);
    } else {
      item.fail("unknown strategy '" + name + "' (expected dp or ddp)");
    }
    reject_duplicate(seen, name, item);
  }
  return strategies;
}

std::vector<int> parse_gpus(const Value& value) {
  std::vector<int> gpus;
  std::set<int> seen;
  for (const Value& item : non_empty_list(value)) {
    gpus.push_back(item.as_int(/*min=*/1));
    if (gpus.back() > kMaxGpus) {
      item.fail("at most " + std::to_string(kMaxGpus) + " GPUs are simulated (every rank's ops are events), got " +
                std::to_string(gpus.back()));
    }
    reject_duplicate(seen, gpus.back(), item);
  }
  return gpus;
}

std::vector<int64_t> parse_batches(const Value& value) {
  std::vector<int64_t> batches;
  std::set<int64_t> seen;
  for (const Value& item : non_empty_list(value)) {
    batches.push_back(item.as_int64(/*min=*/1));
    reject_duplicate(seen, batches.back(), item);
  }
  return batches;
}

InterconnectAssumption parse_interconnect(const Value& value) {
  const Map map(value, {"bus_bandwidth_gbs", "latency_us", "override_measured"});
  InterconnectAssumption link;
  const Value bandwidth = map.required("bus_bandwidth_gbs");
  link.bus_bandwidth_gbs = bandwidth.as_double(/*min=*/0);
  if (link.bus_bandwidth_gbs <= 0) bandwidth.fail("must be > 0, got " + bandwidth.describe());
  link.latency_us = map.required("latency_us").as_double(/*min=*/0);
  if (auto override_measured = map.optional("override_measured")) {
    link.override_measured = override_measured->as_bool();
  }
  return link;
}

LargeBatchRequest parse_large_batch(const Value& value) {
  LargeBatchRequest request;
  request.key = "large_batch";
  request.line = value.heading_line();
  if (value.is_null()) return request;  // `large_batch:` alone: every default
  const Map map(value, {"epochs", "target_loss"});
  if (auto epochs = map.optional("epochs")) request.epochs = epochs->as_int(/*min=*/1);
  if (auto target = map.optional("target_loss")) {
    request.target_loss = target->as_double(/*min=*/0);
    if (*request.target_loss <= 0) target->fail("must be > 0, got " + target->describe());
  }
  return request;
}

// Relative paths in a config (profile, gpu_catalog) are relative to the folder holding it.
std::string resolve_path(const std::string& config_path, const std::string& profile) {
  const std::filesystem::path given(profile);
  if (given.is_absolute()) return given.lexically_normal().string();
  const std::filesystem::path folder = std::filesystem::path(config_path).parent_path();
  return (folder / given).lexically_normal().string();
}

// The catalog entry a `gpu:` value names; unknown keys fail at the value.
GpuSpec catalog_gpu(const Value& value, const GpuCatalog& catalog) {
  const std::string key = value.as_string();
  const GpuSpec* gpu = catalog.find(key);
  if (gpu == nullptr) {
    value.fail("unknown GPU '" + key + "' (catalog " + catalog.file + ": " + catalog.keys() +
               "; see simulate --list-gpus)");
  }
  return *gpu;
}

double positive_seconds(const Value& value) {
  const double s = value.as_double(/*min=*/0);
  if (s <= 0) value.fail("must be > 0 seconds, got " + value.describe());
  return s;
}

Observation parse_observation(const Value& value, const std::optional<GpuCatalog>& catalog) {
  const Map map(value, {"strategy", "gpus", "batch_per_gpu", "loader_workers", "epoch_s", "iteration_s", "gpu"});
  Observation o;
  o.line = value.line();
  const Value strategy = map.required("strategy");
  const std::string name = strategy.as_string();
  if (name == "ddp") {
    o.strategy = Strategy::kDdp;
  } else if (name == "dp") {
    o.strategy = Strategy::kDp;
  } else {
    strategy.fail("unknown strategy '" + name + "' (expected dp or ddp)");
  }
  const Value gpus = map.required("gpus");
  o.gpus = gpus.as_int(/*min=*/1);
  if (o.gpus > kMaxGpus) gpus.fail("at most " + std::to_string(kMaxGpus) + " GPUs are simulated");
  o.batch_per_gpu = map.required("batch_per_gpu").as_int64(/*min=*/1);
  if (auto workers = map.optional("loader_workers")) {
    o.loader_workers = workers->as_int(/*min=*/0);
    if (*o.loader_workers > kMaxLoaderWorkers) {
      workers->fail("at most " + std::to_string(kMaxLoaderWorkers) + " loader worker processes per rank are simulated");
    }
  }
  const std::optional<Value> epoch = map.optional("epoch_s");
  const std::optional<Value> iteration = map.optional("iteration_s");
  if (epoch && iteration) iteration->fail("give epoch_s or iteration_s, not both");
  if (!epoch && !iteration) map.self().fail("needs epoch_s or iteration_s (the measured time)");
  if (epoch) o.epoch_s = positive_seconds(*epoch);
  if (iteration) o.iteration_s = positive_seconds(*iteration);
  if (auto gpu = map.optional("gpu")) o.gpu = catalog_gpu(*gpu, *catalog);
  return o;
}

// Whether any observation names its own GPU (the catalog is then needed).
bool names_gpu(const Value& observations) {
  if (!observations.is_list()) return false;
  for (const Value& item : observations.as_list()) {
    if (item.is_map() && Map(item).has("gpu")) return true;
  }
  return false;
}

}  // namespace

SweepConfig load_sweep_config(const std::string& path) {
  SweepConfig config;
  config.file = path;
  const Value root = Value::load_file(&config.file);
  if (!root.is_map()) root.fail("the config must be a map of keys (profile, sweep, ...), got " + root.describe());
  const Map top(root, {"profile", "model", "trainer", "dataset", "loader", "test_pass", "sweep",
                       "interconnect", "lr_rule", "large_batch", "sync_batchnorm", "gpu", "gpu_catalog",
                       "observations", "held_out"});

  const std::optional<Value> observations = top.optional("observations");
  // Without observations to fit, the profile is what every prediction comes from.
  const std::optional<Value> profile = observations ? top.optional("profile") : top.required("profile");
  if (profile) {
    const std::string profile_text = profile->as_string();
    if (profile_text.empty()) profile->fail("must name the profile file");
    config.profile_line = profile->line();
    config.profile_path = resolve_path(path, profile_text);
    std::error_code ec;
    if (std::filesystem::is_directory(config.profile_path, ec)) {
      profile->fail("profile " + config.profile_path + " is a directory, not a profile file");
    }
    if (!std::filesystem::is_regular_file(config.profile_path, ec)) {
      profile->fail("profile file " + config.profile_path + " does not exist");
    }
  }

  const std::optional<Value> gpu = top.optional("gpu");
  std::optional<GpuCatalog> catalog;
  config.gpu_catalog_path = default_gpu_catalog_path();
  if (auto catalog_key = top.optional("gpu_catalog")) {
    const std::string text = catalog_key->as_string();
    if (text.empty()) catalog_key->fail("must name the GPU catalog file");
    config.gpu_catalog_path = resolve_path(path, text);
  }
  const std::optional<Value> held_out = top.optional("held_out");
  if (held_out && !observations) {
    throw InputError(config.file, held_out->heading_line(), held_out->path(),
                     "held-out timings are scored against a fit: give observations: too");
  }
  if (gpu || (observations && names_gpu(*observations)) || (held_out && names_gpu(*held_out))) {
    catalog = load_gpu_catalog(config.gpu_catalog_path);
  }
  if (gpu) {
    config.gpu = catalog_gpu(*gpu, *catalog);
    config.gpu_line = gpu->line();
  }
  if (observations) {
    const std::vector<Value> items = observations->as_list();
    if (items.empty()) observations->fail("must list at least one observation");
    for (const Value& item : items) config.observations.push_back(parse_observation(item, catalog));
  }
  if (held_out) {
    const std::vector<Value> items = held_out->as_list();
    if (items.empty()) held_out->fail("must list at least one timing");
    for (const Value& item : items) config.held_out.push_back(parse_observation(item, catalog));
  }

  if (auto model = top.optional("model")) {
    config.model = model->as_string();
    const bool known = std::any_of(std::begin(kKnownModels), std::end(kKnownModels),
                                   [&](const char* m) { return config.model == m; });
    if (!known) model->fail("unknown model '" + config.model + "' (expected resnet18-cifar or resnet18-imagenet)");
  }

  std::optional<Value> samples_node;
  if (auto dataset = top.optional("dataset")) {
    const Map map(*dataset, {"train_samples"});
    samples_node = map.optional("train_samples");
    if (samples_node) config.train_samples = samples_node->as_int64(/*min=*/1);
  }

  if (auto trainer = top.optional("trainer")) {
    const std::string name = trainer->as_string();
    const std::optional<Trainer> parsed = parse_trainer(name);
    if (!parsed) trainer->fail("unknown trainer '" + name + "' (expected pytorch or trainsim)");
    config.trainer = *parsed;
  }

  if (auto loader = top.optional("loader")) {
    const Map map(*loader, {"workers", "persistent_workers", "pin_memory"});
    if (auto workers = map.optional("workers")) {
      config.loader_workers = workers->as_int(/*min=*/0);
      if (config.loader_workers > kMaxLoaderWorkers) {
        workers->fail("at most " + std::to_string(kMaxLoaderWorkers) +
                      " loader worker processes per rank are simulated, got " + std::to_string(config.loader_workers));
      }
    }
    if (auto persistent = map.optional("persistent_workers")) config.persistent_workers = persistent->as_bool();
    if (auto pin = map.optional("pin_memory")) config.pin_memory = pin->as_bool();
  }

  // test_pass: true | false | {samples, batch} (true and an empty block: the course's 10000 / 100).
  if (auto test = top.optional("test_pass")) {
    TestPass pass;
    if (test->is_map()) {
      const Map map(*test, {"samples", "batch"});
      if (auto samples = map.optional("samples")) pass.samples = samples->as_int64(/*min=*/1);
      if (auto batch = map.optional("batch")) pass.batch = batch->as_int64(/*min=*/1);
      config.test_pass = pass;
    } else if (test->is_null() || test->as_bool()) {
      config.test_pass = pass;
    }
  }

  const Map sweep(top.required("sweep"), {"strategy", "gpus", "batch_per_gpu"});
  config.strategies = parse_strategies(sweep.required("strategy"));
  config.gpus = parse_gpus(sweep.required("gpus"));
  config.batch_per_gpu = parse_batches(sweep.required("batch_per_gpu"));
  // Only a train_samples given in the config can exceed the bound (the default is 50000).
  const int64_t smallest = *std::min_element(config.batch_per_gpu.begin(), config.batch_per_gpu.end());
  if (const int64_t iterations = longest_epoch(config, smallest); iterations > kMaxIterationsPerEpoch && samples_node) {
    samples_node->fail(std::to_string(config.train_samples) + " samples make epochs of " +
                       std::to_string(iterations) + " iterations per rank at batch_per_gpu " +
                       std::to_string(smallest) + "; at most " + std::to_string(kMaxIterationsPerEpoch) +
                       " are simulated");
  }

  if (auto interconnect = top.optional("interconnect")) {
    config.interconnect = parse_interconnect(*interconnect);
  }

  if (auto large_batch = top.optional("large_batch")) config.large_batch = parse_large_batch(*large_batch);
  if (auto rule = top.optional("lr_rule")) {
    const std::string name = rule->as_string();
    const std::optional<LrRule> parsed = parse_lr_rule(name);
    if (!parsed) rule->fail("unknown lr_rule '" + name + "' (expected constant, linear, linear-warmup or sqrt)");
    config.lr_rule = *parsed;
    if (!config.large_batch) {
      config.large_batch = LargeBatchRequest{};
      config.large_batch->key = "lr_rule";
      config.large_batch->line = rule->line();
    }
  }
  if (auto sync = top.optional("sync_batchnorm")) config.sync_batchnorm = sync->as_bool();
  return config;
}

}  // namespace trainsim
