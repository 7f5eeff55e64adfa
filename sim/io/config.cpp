#include "io/config.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "format/bounds.h"
#include "format/csv.h"
#include "format/errors.h"
#include "format/yaml_reader.h"
#include "io/nccl_tests_log.h"

namespace trainsim {

const char* to_string(Fabric f) {
  switch (f) {
    case Fabric::kNvswitch: return "nvswitch";
    case Fabric::kNvlinkMesh: return "nvlink-mesh";
    case Fabric::kPcie: return "pcie";
  }
  return "?";
}

std::string Topology::describe() const {
  std::string algo_text;
  for (const std::string& a : nccl_algo) algo_text += (algo_text.empty() ? ", NCCL's algorithms: " : ", ") + a;
  char nic_text[96] = "";
  if (nic) {
    std::snprintf(nic_text, sizeof nic_text, ", %d x %g Gb/s NICs per node", nic->nics_per_node(gpus_per_node),
                  nic->gbps);
  }
  return std::to_string(nodes) + " x " + (preset.empty() ? std::string("node") : preset) + ": " +
         std::to_string(gpus_per_node) + " x " + gpu.key + " per node, " + to_string(fabric) +
         (fabric == Fabric::kPcie ? (p2p ? " (peer-to-peer)" : " (through host memory)") : "") +
         (pcie_switches > 0 ? ", " + std::to_string(gpus_per_node / pcie_switches) + " GPUs per PCIe switch" : "") +
         nic_text +
         (cpu_cores > 0 ? ", " + std::to_string(cpu_cores) + " logical CPUs per node" : std::string()) + algo_text;
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

// Models trainsim knows the layer layout and data set of (models/describe.h: ResNet-18, CIFAR and
// torchvision variants, on CIFAR-10; the small CNN on Fashion-MNIST).
constexpr const char* kKnownModels[] = {"resnet18-cifar", "resnet18-imagenet", "fashion-cnn", "fashion-cnn-gap"};
// Training images per epoch of each model's data set when the config has no `dataset:`.
constexpr int64_t kCifar10TrainSamples = 50000;
constexpr int64_t kFashionMnistTrainSamples = 60000;

int64_t default_train_samples(const std::string& model) {
  return model == "fashion-cnn" || model == "fashion-cnn-gap" ? kFashionMnistTrainSamples : kCifar10TrainSamples;
}

}  // namespace

const char* const kDescribedModels = "resnet18-cifar, resnet18-imagenet, fashion-cnn or fashion-cnn-gap";

bool described_model(const std::string& name) {
  return std::any_of(std::begin(kKnownModels), std::end(kKnownModels), [&](const char* m) { return name == m; });
}

namespace {

std::string known_model(const Value& value) {
  const std::string name = value.as_string();
  if (!described_model(name)) value.fail("unknown model '" + name + "' (expected " + kDescribedModels + ")");
  return name;
}

Trainer trainer_value(const Value& value) {
  const std::string name = value.as_string();
  const std::optional<Trainer> parsed = parse_trainer(name);
  if (!parsed) value.fail("unknown trainer '" + name + "' (expected pytorch or trainsim)");
  return *parsed;
}

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
      item.fail("at most " + std::to_string(kMaxGpus) + " GPUs are simulated, got " + std::to_string(gpus.back()));
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

// A link's or NIC's bandwidth in GB/s (or Gb/s): from 1 MB/s to 1 PB/s; beyond either end no
// link is, and a collective's time would overflow the simulator's nanosecond clock.
double link_rate(const Value& value, const char* unit) {
  const double rate = value.as_double(/*min=*/0);
  if (!(rate >= 1e-3 && rate <= 1e6)) {
    value.fail(std::string("must be between 0.001 and 1e6 ") + unit + ", got " + value.describe());
  }
  return rate;
}

InterconnectAssumption parse_interconnect(const Value& value) {
  const Map map(value, {"bus_bandwidth_gbs", "latency_us", "override_measured"});
  InterconnectAssumption link;
  link.bus_bandwidth_gbs = link_rate(map.required("bus_bandwidth_gbs"), "GB/s");
  const Value latency = map.required("latency_us");
  link.latency_us = latency.as_double(/*min=*/0);
  // One step's latency of a second is no link's (NCCL's are microseconds).
  if (link.latency_us > 1e6) latency.fail("must be at most 1e6 us (1 s), got " + latency.describe());
  if (auto override_measured = map.optional("override_measured")) {
    link.override_measured = override_measured->as_bool();
  }
  return link;
}

// Relative paths in a config (profile, gpu_catalog) are relative to the folder holding it.
std::string resolve_path(const std::string& config_path, const std::string& profile) {
  const std::filesystem::path given(profile);
  if (given.is_absolute()) return given.lexically_normal().string();
  const std::filesystem::path folder = std::filesystem::path(config_path).parent_path();
  return (folder / given).lexically_normal().string();
}

// An existing profile file named by `value`, resolved against the config's folder.
std::string profile_file(const Value& value, const std::string& config_path) {
  const std::string text = value.as_string();
  if (text.empty()) value.fail("must name the profile file");
  const std::string resolved = resolve_path(config_path, text);
  std::error_code ec;
  if (std::filesystem::is_directory(resolved, ec)) value.fail("profile " + resolved + " is a directory, not a profile file");
  if (!std::filesystem::is_regular_file(resolved, ec)) value.fail("profile file " + resolved + " does not exist");
  return resolved;
}

LargeBatchRequest parse_large_batch(const Value& value, const std::string& config_path) {
  LargeBatchRequest request;
  request.key = "large_batch";
  request.line = value.heading_line();
  if (value.is_null()) return request;  // `large_batch:` alone: every default
  const Map map(value, {"epochs", "target_loss", "target_accuracy", "warmup_epochs", "past_bound", "pace_probe",
                        "model", "trainer", "profile"});
  if (auto epochs = map.optional("epochs")) request.epochs = epochs->as_int(/*min=*/1);
  if (auto warmup = map.optional("warmup_epochs")) {
    request.warmup_epochs = warmup->as_double(/*min=*/0);
    if (request.warmup_epochs > kMaxWarmupEpochs) {
      warmup->fail("at most " + std::to_string(kMaxWarmupEpochs) + " epochs, got " + warmup->describe());
    }
  }
  if (auto target = map.optional("target_loss")) {
    request.target_loss = target->as_double(/*min=*/0);
    if (*request.target_loss <= 0) target->fail("must be > 0, got " + target->describe());
  }
  if (auto target = map.optional("target_accuracy")) {
    request.target_accuracy = target->as_double(/*min=*/0);
    if (*request.target_accuracy <= 0 || *request.target_accuracy > 1) {
      target->fail("a fraction in (0, 1] (85% is 0.85), got " + target->describe());
    }
  }
  if (auto past_bound = map.optional("past_bound")) {
    const std::string text = past_bound->as_string();
    const std::optional<PastBound> parsed = parse_past_bound(text);
    if (!parsed) past_bound->fail("unknown past_bound '" + text + "' (expected from-start, no-progress or edge-of-stability)");
    request.past_bound = *parsed;
  }
  if (auto pace = map.optional("pace_probe")) {
    request.pace_probe = pace->as_bool();
    request.pace_probe_line = pace->line();
  }
  if (auto model = map.optional("model")) request.model = known_model(*model);
  if (auto trainer = map.optional("trainer")) request.trainer = trainer_value(*trainer);
  if (auto profile = map.optional("profile")) {
    request.profile_path = profile_file(*profile, config_path);
    request.profile_line = profile->line();
  }
  return request;
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

// A measured time: at least 1 ns (a timing below it means nothing, and a denormal once reached the
// fit as an internal error).
double positive_seconds(const Value& value) {
  const double s = value.as_double(/*min=*/0);
  if (!(s >= kMinMeasuredSeconds)) value.fail("must be a measured time of at least 1e-09 s (1 ns), got " + value.describe());
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

const char* topology_presets() { return "dgx-a100, dgx-h100, hgx-a100, hgx-h100, pcie-workstation, pcie-workstation-p2p"; }

// A preset: a common system built from the catalog's GPUs. The NICs of the DGX systems are their
// datasheets' ("NVIDIA DGX A100 datasheet": 8 single-port ConnectX-6 200 Gb/s HDR InfiniBand;
// "NVIDIA DGX H100 datasheet": 8 single-port ConnectX-7 400 Gb/s); an HGX baseboard's server
// chooses its own NICs, and a workstation has none: give `nic:` to span nodes with those. The
// DGX systems' CPUs are their datasheets' too (DGX A100: 2 x AMD EPYC 7742, 128 cores; DGX H100:
// 2 x Intel Xeon Platinum 8480C, 112 cores), counted as logical CPUs with SMT's 2 threads a core;
// an HGX server's and a workstation's are their builder's: give `cpu_cores:`.
std::optional<Topology> preset_topology(const std::string& name, const GpuCatalog& catalog) {
  const auto with = [&](const char* gpu, int per_node, Fabric fabric, bool p2p, std::optional<Nic> nic,
                        int cpu_cores = 0) {
    Topology t;
    t.preset = name;
    if (gpu != nullptr) t.gpu = *catalog.find(gpu);
    t.gpus_per_node = per_node;
    t.fabric = fabric;
    t.p2p = p2p;
    t.nic = nic;
    t.cpu_cores = cpu_cores;
    return t;
  };
  if (name == "dgx-a100") return with("a100-sxm4-80gb", 8, Fabric::kNvswitch, true, Nic{200, true, 1}, 256);
  if (name == "dgx-h100") return with("h100-sxm", 8, Fabric::kNvswitch, true, Nic{400, true, 1}, 224);
  if (name == "hgx-a100") return with("a100-sxm4-80gb", 8, Fabric::kNvswitch, true, std::nullopt);
  if (name == "hgx-h100") return with("h100-sxm", 8, Fabric::kNvswitch, true, std::nullopt);
  if (name == "pcie-workstation") return with(nullptr, 4, Fabric::kPcie, false, std::nullopt);
  if (name == "pcie-workstation-p2p") return with(nullptr, 4, Fabric::kPcie, true, std::nullopt);
  return std::nullopt;
}

Topology parse_topology(const Value& value, const GpuCatalog& catalog) {
  const Map map(value, {"preset", "gpu", "nodes", "gpus_per_node", "fabric", "p2p", "pcie", "nic", "nccl",
                        "nccl_algo", "cpu_cores"});
  Topology t;
  bool have_gpu = false;
  if (auto preset = map.optional("preset")) {
    const std::string name = preset->as_string();
    std::optional<Topology> p = preset_topology(name, catalog);
    if (!p) preset->fail("unknown preset '" + name + "' (known: " + topology_presets() + ")");
    t = *p;
    have_gpu = !t.gpu.key.empty();
  }
  if (auto gpu = map.optional("gpu")) {
    t.gpu = catalog_gpu(*gpu, catalog);
    have_gpu = true;
  }
  if (!have_gpu) map.required("gpu");  // fails: a topology needs its GPU
  if (auto nodes = map.optional("nodes")) t.nodes = nodes->as_int(/*min=*/1);
  if (auto per_node = map.optional("gpus_per_node")) t.gpus_per_node = per_node->as_int(/*min=*/1);
  if (t.gpus_per_node > kMaxGpusPerMachine) {
    map.required("gpus_per_node").fail("at most " + std::to_string(kMaxGpusPerMachine) +
                                       " GPUs per node are simulated (each of a node's ranks is), got " +
                                       std::to_string(t.gpus_per_node));
  }
  if (static_cast<int64_t>(t.nodes) * t.gpus_per_node > kMaxGpus) {
    map.self().fail(std::to_string(t.nodes) + " nodes x " + std::to_string(t.gpus_per_node) +
                    " GPUs is more than the " + std::to_string(kMaxGpus) + " GPUs the simulator takes");
  }
  if (auto fabric = map.optional("fabric")) {
    const std::string name = fabric->as_string();
    if (name == "nvswitch") {
      t.fabric = Fabric::kNvswitch;
    } else if (name == "nvlink-mesh") {
      t.fabric = Fabric::kNvlinkMesh;
    } else if (name == "pcie") {
      t.fabric = Fabric::kPcie;
    } else {
      fabric->fail("unknown fabric '" + name + "' (expected nvswitch, nvlink-mesh or pcie)");
    }
  } else if (!map.has("preset")) {
    // The GPU's usual system: NVLink where it has NVLink, else PCIe.
    t.fabric = t.gpu.link.nvlink_links > 0 ? Fabric::kNvswitch : Fabric::kPcie;
  }
  if (t.fabric != Fabric::kPcie && t.gpu.link.nvlink_links == 0) {
    (map.has("fabric") ? map.required("fabric") : map.self())
        .fail(std::string("fabric ") + to_string(t.fabric) + " needs NVLink, and " + t.gpu.key + " has none");
  }
  if (auto p2p = map.optional("p2p")) t.p2p = p2p->as_bool();
  if (auto pcie = map.optional("pcie")) {
    const Map pcie_map(*pcie, {"switches"});
    const Value switches = pcie_map.required("switches");
    if (t.fabric != Fabric::kPcie) {
      pcie->fail(std::string("describes a PCIe node's switches, and the fabric is ") + to_string(t.fabric));
    }
    t.pcie_switches = switches.as_int(/*min=*/1);
    if (t.pcie_switches > t.gpus_per_node || t.gpus_per_node % t.pcie_switches != 0) {
      switches.fail(std::to_string(t.gpus_per_node) + " GPUs per node do not split evenly over " +
                    std::to_string(t.pcie_switches) + " switches");
    }
  }
  if (auto cores = map.optional("cpu_cores")) t.cpu_cores = static_cast<int>(cores->as_int64(/*min=*/1, /*max=*/kMaxNodeCpuCores));
  if (auto nccl = map.optional("nccl")) {
    // "MAJOR.MINOR" or "MAJOR.MINOR.PATCH", e.g. "2.26" or "2.4.2".
    const std::string text = nccl->as_string();
    NcclRelease r;
    int patch = 0;
    char extra = 0;
    const int fields = std::sscanf(text.c_str(), "%d.%d.%d%c", &r.major, &r.minor, &patch, &extra);
    if ((fields != 2 && fields != 3) || r.major < 1 || r.minor < 0 || patch < 0 ||
        text.find_first_not_of("0123456789.") != std::string::npos) {
      nccl->fail("expected an NCCL release such as \"2.26\" or \"2.4.2\", got '" + text + "'");
    }
    t.nccl = r;
  }
  if (auto algo = map.optional("nccl_algo")) {
    // NCCL_ALGO's list, e.g. ring or [ring, tree].
    for (const Value& item : algo->as_list(/*scalar_as_list=*/true)) {
      const std::string name = item.as_string();
      if (name != "ring" && name != "tree" && name != "nvls" && name != "nvls_tree") {
        item.fail("unknown NCCL algorithm '" + name + "' (expected ring, tree, nvls or nvls_tree)");
      }
      if (std::find(t.nccl_algo.begin(), t.nccl_algo.end(), name) != t.nccl_algo.end()) {
        item.fail("'" + name + "' is listed twice");
      }
      t.nccl_algo.push_back(name);
    }
    if (std::find(t.nccl_algo.begin(), t.nccl_algo.end(), "ring") == t.nccl_algo.end()) {
      algo->fail("must include ring: it is the one algorithm NCCL runs every collective with");
    }
  }
  if (auto nic = map.optional("nic")) {
    const Map nic_map(*nic, {"gbps", "per", "count"});
    Nic n;
    n.gbps = link_rate(nic_map.required("gbps"), "Gb/s");
    if (auto per = nic_map.optional("per")) {
      const std::string name = per->as_string();
      if (name != "gpu" && name != "node") per->fail("expected gpu or node, got '" + name + "'");
      n.per_gpu = name == "gpu";
    }
    if (auto count = nic_map.optional("count")) {
      if (n.per_gpu) count->fail("count goes with per: node (per: gpu is one NIC per GPU)");
      n.count = count->as_int(/*min=*/1);
    }
    t.nic = n;
  }
  if (t.nodes > 1 && !t.nic) {
    (map.has("nodes") ? map.required("nodes") : map.self())
        .fail(std::to_string(t.nodes) + " nodes need the NICs between them (nic: {gbps: ..., per: gpu | node})");
  }
  return t;
}

// A byte count: an integer, or one with nccl-tests' suffix K, M or G (powers of 1024).
double parse_bytes(const Value& value) {
  const std::string text = value.as_string();
  double scale = 1;
  std::string digits = text;
  if (!text.empty() && std::string("KMG").find(text.back()) != std::string::npos) {
    scale = text.back() == 'K' ? 1024.0 : text.back() == 'M' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
    digits = text.substr(0, text.size() - 1);
  }
  if (digits.empty() || digits.size() > 15 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stod(digits) < 1) {
    value.fail("expected a byte count >= 1 such as 8, 64K, 128M or 8G, got " + value.describe());
  }
  return std::stod(digits) * scale;
}

// An nccl-tests log a key names (collectives.log, collectives_log): resolved against the config's
// folder into `resolved`, and read.
CollectiveCurve read_nccl_tests_log(const Value& key, const std::string& config_path, const std::string& empty_message,
                                    std::string& resolved) {
  const std::string text = key.as_string();
  if (text.empty()) key.fail(empty_message);
  resolved = resolve_path(config_path, text);
  return parse_nccl_tests_log(resolved);
}

CollectivesRequest parse_collectives(const Value& value, const std::string& config_path, const Topology& topology) {
  const Map map(value, {"op", "min_bytes", "max_bytes", "factor", "log"});
  CollectivesRequest c;
  if (auto op = map.optional("op")) {
    c.op = op->as_string();
    static const char* const kOps[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"};
    if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* k) { return c.op == k; })) {
      op->fail("unknown collective '" + c.op + "' (expected all_reduce, broadcast, reduce, all_gather or reduce_scatter)");
    }
  }
  if (auto min = map.optional("min_bytes")) c.min_bytes = parse_bytes(*min);
  if (auto max = map.optional("max_bytes")) c.max_bytes = parse_bytes(*max);
  if (c.max_bytes < c.min_bytes) map.required("max_bytes").fail("must be >= min_bytes");
  if (auto factor = map.optional("factor")) {
    c.factor = factor->as_double(/*min=*/0);
    if (c.factor <= 1) factor->fail("must be > 1, got " + factor->describe());
  }
  if (auto log = map.optional("log")) {
    c.log = read_nccl_tests_log(*log, config_path, "must name an nccl-tests log of " + c.op, c.log_path);
    if (c.log->op != c.op) log->fail("is a log of " + c.log->op + "_perf, and op is " + c.op);
    if (c.log->ranks != topology.gpus()) {
      log->fail("the log ran on " + std::to_string(c.log->ranks) + " ranks, the topology has " +
                std::to_string(topology.gpus()) + " GPUs");
    }
  }
  return c;
}

// Whether any observation names its own GPU (the catalog is then needed).
bool names_gpu(const Value& observations) {
  if (!observations.is_list()) return false;
  for (const Value& item : observations.as_list()) {
    if (item.is_map() && Map(item).has("gpu")) return true;
  }
  return false;
}

ScaleOutRequest parse_scale_out(const Value& value, const std::string& config_path, const GpuCatalog& catalog) {
  const Map map(value, {"profile", "trainer", "topology", "gpus", "batch_per_gpu"});
  ScaleOutRequest request;
  request.line = value.heading_line();
  if (auto profile = map.optional("profile")) request.profile_path = profile_file(*profile, config_path);
  if (auto trainer = map.optional("trainer")) request.trainer = trainer_value(*trainer);
  request.topology = parse_topology(map.required("topology"), catalog);
  const Value gpus = map.required("gpus");
  request.gpus = parse_gpus(gpus);
  for (std::size_t i = 0; i < request.gpus.size(); ++i) {
    if (std::string problem = gpu_count_problem(request.topology, request.gpus[i]); !problem.empty()) {
      gpus.as_list()[i].fail(problem);
    }
  }
  if (auto batches = map.optional("batch_per_gpu")) request.batch_per_gpu = parse_batches(*batches);
  return request;
}

// What the top-level keys of a config are, as found (each its own node, or none).
struct TopKeys {
  std::optional<Value> observations, held_out, collectives, gpu, topology, scale_out;
  bool sweeps = false;  // a sweep is asked for (sweep:, or anything but the collectives table)
};

void read_precision(const Value& precision, const TopKeys& keys, SweepConfig& config) {
  const auto parsed = parse_precision(precision.as_string());
  if (!parsed) {
    precision.fail("unknown precision '" + precision.as_string() + "' (expected " + std::string(kPrecisionNames) + ")");
  }
  // The roofline (gpu:, observations:) prices fp32 kernels only.
  if (*parsed != Precision::kFp32 && (keys.gpu || keys.observations)) {
    precision.fail(std::string(precision_name(*parsed)) +
                   " is predicted from a profile measured in it (measure --precision), not with gpu: or "
                   "observations: (the roofline prices fp32 only)");
  }
  config.precision = *parsed;
  config.precision_line = precision.line();
}

void read_memory_format(const Value& format, const TopKeys& keys, SweepConfig& config) {
  const auto parsed = parse_memory_format(format.as_string());
  if (!parsed) {
    format.fail("unknown memory format '" + format.as_string() + "' (expected " + std::string(kMemoryFormatNames) +
                ")");
  }
  // The roofline (gpu:, observations:) has no layout: a format is measured, not derived.
  if (*parsed != MemoryFormat::kNchw && (keys.gpu || keys.observations)) {
    format.fail(std::string(memory_format_name(*parsed)) +
                " is predicted from a profile measured in it (measure --memory-format), not with gpu: or "
                "observations: (the roofline knows no memory format)");
  }
  config.memory_format = *parsed;
  config.memory_format_line = format.line();
}

// `profile:` as a map {NAME: FILE, ...} with `precision:` or `memory_format:` a list of the same
// names: the tables predict the list's first entry from its profile, each other one is predicted
// beside them from its own (SweepConfig::other_variants; docs/PRECISION.md "Several precisions").
void read_variant_profiles(const Value& profiles, const Map& top, const TopKeys& keys, const std::string& path,
                           SweepConfig& config) {
  const std::optional<Value> precision = top.optional("precision");
  const std::optional<Value> format = top.optional("memory_format");
  const bool precisions = precision && precision->is_list();
  const bool formats = format && format->is_list();
  if (!precisions && !formats) {
    profiles.fail("a map of profiles needs precision: [NAME, ...] or memory_format: [NAME, ...] listing its keys, "
                  "one profile per precision or memory format");
  }
  using Axis = SweepConfig::VariantAxis;
  config.variant_axis = precisions && formats ? Axis::kBoth : formats ? Axis::kMemoryFormat : Axis::kPrecision;
  const VariantAxisWords words = variant_axis_words(config.variant_axis);
  const Map map(profiles);
  const auto entries = map.entries();
  // A listed key's values, in order: `read` parses an item into the config, `value` reads it back.
  const auto read_list = [&](const Value& list, const std::string& noun, auto read, auto value, auto name_of) {
    std::vector<decltype(value())> values;
    const std::vector<Value> items = list.as_list();
    if (items.empty()) list.fail("names no " + noun + ": give one or more, each a key of profile:");
    for (const Value& item : items) {
      read(item, keys, config);
      if (std::find(values.begin(), values.end(), value()) != values.end()) {
        item.fail(std::string(name_of(value())) + " is given twice");
      }
      values.push_back(value());
    }
    return values;
  };
  // A key not listed has the config's one value (finish_variants fills it in once it is read).
  const std::vector<Precision> each_precision =
      precisions ? read_list(*precision, "precision", read_precision, [&] { return config.precision; }, precision_name)
                 : std::vector<Precision>{config.precision};
  const std::vector<MemoryFormat> each_format =
      formats ? read_list(*format, "memory format", read_memory_format, [&] { return config.memory_format; },
                          memory_format_name)
              : std::vector<MemoryFormat>{config.memory_format};
  // Every precision with every format (one of them a single value unless both are lists).
  std::vector<std::pair<Precision, MemoryFormat>> combos;
  for (Precision p : each_precision) {
    for (MemoryFormat f : each_format) combos.emplace_back(p, f);
  }
  std::vector<std::string> names;  // the entries, in order: the tables' first
  for (const auto& [p, f] : combos) {
    const std::string name = variant_name(config.variant_axis, p, f);
    names.push_back(name);
    const auto entry = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == name; });
    if (entry == entries.end()) {
      profiles.fail(std::string("no profile for ") + words.entry + " " + name + " (give " + name +
                    ": FILE, a profile measured in it)");
    }
    const std::string file = profile_file(entry->second, path);
    if (names.size() == 1) {
      config.profile_path = file;
      config.profile_line = entry->second.line();
    } else {
      config.other_variants.push_back({p, f, file, entry->second.line()});
    }
  }
  for (const auto& [name, value] : entries) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      value.fail("'" + name + "' is not a " + words.entry + " of " + words.keys + " (" + csv::comma_list(names) + ")");
    }
  }
  // The tables' entry: each list's first.
  if (precisions) {
    config.precision = combos.front().first;
    config.precision_line = precision->line();
  }
  if (formats) {
    config.memory_format = combos.front().second;
    config.memory_format_line = format->line();
  }
}

// The other entries of a listed key take the tables' value of the key not listed.
void finish_variants(SweepConfig& config) {
  for (SweepConfig::VariantProfile& variant : config.other_variants) {
    if (config.variant_axis == SweepConfig::VariantAxis::kPrecision) variant.memory_format = config.memory_format;
    if (config.variant_axis == SweepConfig::VariantAxis::kMemoryFormat) variant.precision = config.precision;
  }
}

// The profile, the GPU catalog and what is read against it: gpu:, the fit's observations and
// held-out timings, topology:, its nccl-tests log and its collectives table. Returns the catalog
// where one of them needs it.
std::optional<GpuCatalog> read_hardware(const Map& top, const TopKeys& keys, const std::string& path,
                                        SweepConfig& config) {
  // Without observations to fit, the profile is what every prediction comes from; a config that
  // only asks for the collectives table needs none.
  const std::optional<Value> profile =
      keys.observations || !keys.sweeps ? top.optional("profile") : top.required("profile");
  if (profile && profile->is_map()) {
    read_variant_profiles(*profile, top, keys, path, config);
  } else if (profile) {
    config.profile_line = profile->line();
    config.profile_path = profile_file(*profile, path);
  }

  std::optional<GpuCatalog> catalog;
  config.gpu_catalog_path = default_gpu_catalog_path();
  if (auto catalog_key = top.optional("gpu_catalog")) {
    const std::string text = catalog_key->as_string();
    if (text.empty()) catalog_key->fail("must name the GPU catalog file");
    config.gpu_catalog_path = resolve_path(path, text);
  }
  if (keys.held_out && !keys.observations) {
    throw InputError(config.file, keys.held_out->heading_line(), keys.held_out->path(),
                     "held-out timings are scored against a fit: give observations: too");
  }
  if (keys.gpu || keys.topology || keys.scale_out || (keys.observations && names_gpu(*keys.observations)) ||
      (keys.held_out && names_gpu(*keys.held_out))) {
    catalog = load_gpu_catalog(config.gpu_catalog_path);
  }
  if (keys.gpu) {
    config.gpu = catalog_gpu(*keys.gpu, *catalog);
    config.gpu_line = keys.gpu->line();
  }
  if (keys.observations) {
    const std::vector<Value> items = keys.observations->as_list();
    if (items.empty()) keys.observations->fail("must list at least one observation");
    for (const Value& item : items) config.observations.push_back(parse_observation(item, catalog));
  }
  if (keys.topology) config.topology = parse_topology(*keys.topology, *catalog);
  if (auto log = top.optional("collectives_log")) {
    if (!keys.topology) log->fail("an nccl-tests log is the collective curve of a topology: give topology: too");
    config.topology->collectives_log =
        read_nccl_tests_log(*log, path, "must name an nccl-tests log file (all_reduce_perf, all_gather_perf, ...)",
                            config.topology->collectives_log_path);
    // A log of some of the cluster's GPUs (one node of several) calibrates the model for all of them.
    if (config.topology->collectives_log->ranks > config.topology->gpus()) {
      log->fail("the log ran on " + std::to_string(config.topology->collectives_log->ranks) +
                " ranks, more than the topology's " + std::to_string(config.topology->gpus()) + " GPUs");
    }
  }
  if (keys.collectives) {
    if (!keys.topology) keys.collectives->fail("the collectives table is of a topology: give topology: too");
    config.collectives = parse_collectives(*keys.collectives, path, *config.topology);
  }
  if (keys.held_out) {
    const std::vector<Value> items = keys.held_out->as_list();
    if (items.empty()) keys.held_out->fail("must list at least one timing");
    for (const Value& item : items) config.held_out.push_back(parse_observation(item, catalog));
  }
  return catalog;
}

// model: and dataset:. Any model the profile holds; the fit (observations:) builds its profile from
// the model's layers, which only the known models have. Returns dataset.train_samples's node.
std::optional<Value> read_model_and_data(const Map& top, const TopKeys& keys, SweepConfig& config) {
  const std::optional<Value> model = top.optional("model");
  if (model) {
    config.model = model->as_string();
    if (config.model.empty()) model->fail("must name a model");
    config.model_line = model->line();
  }
  const bool described = described_model(config.model);
  if (!described && (keys.observations || config.profile_path.empty())) {
    model->fail("unknown model '" + config.model + "': a fit (observations:) needs a model whose layers trainsim knows (" +
                kDescribedModels + "); any other model needs profile: holding it");
  }
  config.train_samples = default_train_samples(config.model);

  std::optional<Value> samples_node;
  if (auto dataset = top.optional("dataset")) {
    const Map map(*dataset, {"train_samples"});
    samples_node = map.optional("train_samples");
    if (samples_node) config.train_samples = samples_node->as_int64(/*min=*/1);
  }
  if (!described && !samples_node) {
    model->fail("model '" + config.model + "' is not one trainsim knows the data set of: give its epoch as "
                "dataset: {train_samples: N}");
  }
  return samples_node;
}

void read_loader(const Value& loader, SweepConfig& config) {
  const Map map(loader, {"workers", "persistent_workers", "pin_memory"});
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
std::optional<TestPass> read_test_pass(const Value& test) {
  TestPass pass;
  if (test.is_map()) {
    const Map map(test, {"samples", "batch"});
    if (auto samples = map.optional("samples")) pass.samples = samples->as_int64(/*min=*/1);
    if (auto batch = map.optional("batch")) pass.batch = batch->as_int64(/*min=*/1);
    return pass;
  }
  if (test.is_null() || test.as_bool()) return pass;
  return std::nullopt;
}

void read_sweep(const Value& node, const std::optional<Value>& samples_node, SweepConfig& config) {
  const Map sweep(node, {"strategy", "gpus", "batch_per_gpu"});
  config.strategies = parse_strategies(sweep.required("strategy"));
  const Value gpus = sweep.required("gpus");
  config.gpus = parse_gpus(gpus);
  for (std::size_t i = 0; i < config.gpus.size(); ++i) {
    if (std::string problem = gpu_count_problem(config.topology, config.gpus[i]); !problem.empty()) {
      gpus.as_list()[i].fail(problem);
    }
  }
  config.batch_per_gpu = parse_batches(sweep.required("batch_per_gpu"));
  // Only a train_samples given in the config can exceed the bound (the default is 50000).
  const int64_t smallest = *std::min_element(config.batch_per_gpu.begin(), config.batch_per_gpu.end());
  if (const int64_t iterations = longest_epoch(config, smallest); iterations > kMaxIterationsPerEpoch && samples_node) {
    samples_node->fail(std::to_string(config.train_samples) + " samples make epochs of " + std::to_string(iterations) +
                       " iterations per rank at batch_per_gpu " + std::to_string(smallest) + "; at most " +
                       std::to_string(kMaxIterationsPerEpoch) + " are simulated");
  }
}

// large_batch: and lr_rule: (an lr_rule alone asks for Q4 with large_batch's defaults).
void read_large_batch(const Map& top, const std::string& path, SweepConfig& config) {
  if (auto large_batch = top.optional("large_batch")) config.large_batch = parse_large_batch(*large_batch, path);
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
}

void read_scale_out(const Value& scale_out, const TopKeys& keys, const std::string& path, const GpuCatalog& catalog,
                    SweepConfig& config) {
  if (!keys.sweeps) scale_out.fail("scales the sweep's model and loader out: give sweep: too");
  if (config.gpu || keys.observations) {
    scale_out.fail("takes a measured profile's compute as it is: not with gpu: or observations:");
  }
  config.scale_out = parse_scale_out(scale_out, path, catalog);
  if (config.scale_out->profile_path.empty() && config.profile_path.empty()) {
    scale_out.fail("needs a profile: give scale_out.profile or the config's profile:");
  }
}

}  // namespace

SweepConfig load_sweep_config(const std::string& path) {
  SweepConfig config;
  config.file = path;
  const Value root = Value::load_file(&config.file);
  if (!root.is_map()) root.fail("the config must be a map of keys (profile, sweep, ...), got " + root.describe());
  const Map top(root, {"profile", "model", "trainer", "dataset", "loader", "test_pass", "sweep",
                       "interconnect", "lr_rule", "large_batch", "sync_batchnorm", "gpu", "gpu_catalog",
                       "observations", "held_out", "topology", "collectives", "collectives_log", "scale_out",
                       "precision", "memory_format"});
  TopKeys keys;
  keys.observations = top.optional("observations");
  keys.held_out = top.optional("held_out");
  keys.collectives = top.optional("collectives");
  keys.gpu = top.optional("gpu");
  keys.topology = top.optional("topology");
  keys.scale_out = top.optional("scale_out");
  keys.sweeps = top.has("sweep") || !keys.collectives;

  const std::optional<GpuCatalog> catalog = read_hardware(top, keys, path, config);
  const std::optional<Value> samples_node = read_model_and_data(top, keys, config);
  if (auto trainer = top.optional("trainer")) config.trainer = trainer_value(*trainer);
  const std::optional<Value> profile = top.optional("profile");
  const bool profile_map = profile && profile->is_map();
  if (auto precision = top.optional("precision")) {
    if (precision->is_list() && !profile_map) {
      precision->fail("a list of precisions needs profile: {PRECISION: FILE, ...}, a profile measured in each");
    }
    if (!precision->is_list()) read_precision(*precision, keys, config);
  }
  if (auto format = top.optional("memory_format")) {
    if (format->is_list() && !profile_map) {
      format->fail("a list of memory formats needs profile: {FORMAT: FILE, ...}, a profile measured in each");
    }
    if (!format->is_list()) read_memory_format(*format, keys, config);
  }
  finish_variants(config);
  if (auto loader = top.optional("loader")) read_loader(*loader, config);
  if (auto test = top.optional("test_pass")) config.test_pass = read_test_pass(*test);
  if (keys.sweeps) read_sweep(top.required("sweep"), samples_node, config);
  if (auto interconnect = top.optional("interconnect")) {
    if (keys.topology) {
      interconnect->fail("give topology: or interconnect:, not both (a topology prices collectives itself)");
    }
    config.interconnect = parse_interconnect(*interconnect);
  }
  read_large_batch(top, path, config);
  if (auto sync = top.optional("sync_batchnorm")) config.sync_batchnorm = sync->as_bool();
  if (keys.scale_out) read_scale_out(*keys.scale_out, keys, path, *catalog, config);
  return config;
}

std::optional<SweepConfig> scale_out_sweep(const SweepConfig& config) {
  if (!config.scale_out) return std::nullopt;
  const ScaleOutRequest& request = *config.scale_out;
  SweepConfig out = config;
  if (!request.profile_path.empty()) out.profile_path = request.profile_path;
  if (request.trainer) out.trainer = *request.trainer;
  out.topology = request.topology;
  out.interconnect.reset();
  out.strategies = {Strategy::kDdp};
  out.gpus = request.gpus;
  if (!request.batch_per_gpu.empty()) out.batch_per_gpu = request.batch_per_gpu;
  out.large_batch.reset();
  out.scale_out.reset();
  out.collectives.reset();
  out.sync_batchnorm = false;
  return out;
}

std::string gpu_count_problem(const std::optional<Topology>& topology, int64_t gpus) {
  if (topology && gpus > topology->gpus()) {
    return std::to_string(gpus) + " GPUs are more than the topology's " + std::to_string(topology->nodes) +
           (topology->nodes == 1 ? " node" : " nodes") + " x " + std::to_string(topology->gpus_per_node) +
           " GPUs (give topology.nodes)";
  }
  if (!topology && gpus > kMaxGpusPerMachine) {
    return "at most " + std::to_string(kMaxGpusPerMachine) +
           " GPUs on one machine are simulated (each rank is); more need a topology: of nodes, got " +
           std::to_string(gpus);
  }
  return "";
}

std::optional<SweepConfig> large_batch_sweep(const SweepConfig& config) {
  if (!config.large_batch) return std::nullopt;
  const LargeBatchRequest& request = *config.large_batch;
  const bool other_model = request.model && *request.model != config.model;
  const bool other_trainer = request.trainer && *request.trainer != config.trainer;
  const bool other_profile = !request.profile_path.empty() && request.profile_path != config.profile_path;
  if (!other_model && !other_trainer && !other_profile) return std::nullopt;
  SweepConfig q4 = config;
  if (other_profile) {
    // That profile's machine as measured: the config's GPU, links and collectives are the sweep's.
    q4.profile_path = request.profile_path;
    q4.profile_line = request.profile_line;
    q4.gpu.reset();
    q4.topology.reset();
    q4.interconnect.reset();
    q4.collectives.reset();
  }
  q4.scale_out.reset();
  if (other_model) {
    q4.model = *request.model;
    q4.train_samples = default_train_samples(q4.model);
  }
  if (request.trainer) q4.trainer = *request.trainer;
  q4.large_batch->model.reset();
  q4.large_batch->trainer.reset();
  q4.large_batch->profile_path.clear();
  return q4;
}

}  // namespace trainsim
