#include "io/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <sstream>

#include "format/errors.h"
#include "format/yaml_reader.h"

namespace trainsim {

double GpuLink::pcie_gbs() const {
  double gigatransfers = 0;  // per lane, GT/s
  double efficiency = 0;     // payload bits per transferred bit
  switch (pcie_generation) {
    case 1: gigatransfers = 2.5; efficiency = 8.0 / 10.0; break;
    case 2: gigatransfers = 5; efficiency = 8.0 / 10.0; break;
    case 3: gigatransfers = 8; efficiency = 128.0 / 130.0; break;
    case 4: gigatransfers = 16; efficiency = 128.0 / 130.0; break;
    case 5: gigatransfers = 32; efficiency = 128.0 / 130.0; break;
    case 6: gigatransfers = 64; efficiency = 1; break;
    default: return 0;
  }
  return pcie_lanes * gigatransfers * efficiency / 8;
}

double GpuSpec::fp32_training_flops() const { return (tf32_tflops ? *tf32_tflops : fp32_tflops) * 1e12; }

double GpuSpec::ridge_flops_per_byte() const {
  return fp32_training_flops() / (memory_bandwidth_gbs * 1e9);
}

namespace {

using yaml_io::Map;
using yaml_io::Value;

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// Device names as nvidia-smi and torch print them; compared ignoring case and surrounding blanks.
std::string normalize_device_name(const std::string& name) {
  std::string out = trimmed(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// ^[a-z0-9]+(-[a-z0-9]+)*$: lower-case words joined by single dashes.
bool is_dashed_name(const std::string& text) {
  if (text.empty() || text.front() == '-' || text.back() == '-') return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!word && !(c == '-' && text[i - 1] != '-')) return false;
  }
  return true;
}

double positive(const Value& value) {
  const double number = value.as_double();
  if (number <= 0) value.fail("must be > 0, got " + value.describe());
  return number;
}

// An optional figure: absent or null means unknown (or, for a tensor-core rate, none).
std::optional<double> optional_positive(const Map& map, const std::string& key) {
  const std::optional<Value> value = map.optional(key);
  if (!value || value->is_null()) return std::nullopt;
  return positive(*value);
}

std::string non_empty(const Value& value) {
  std::string text = value.as_string();
  if (trimmed(text).empty()) value.fail("must not be empty");
  return text;
}

// The entry's fields; `sources` may name any of them but source and sources.
constexpr std::initializer_list<const char*> kEntryKeys = {
    "name", "device_names", "architecture", "compute_capability", "fp32_tflops", "tf32_tflops", "fp16_tflops",
    "bf16_tflops", "memory_gib", "memory_bandwidth_gbs", "sms", "base_clock_mhz",
    "boost_clock_mhz", "l2_mib", "pcie", "nvlink", "source", "sources"};

void parse_pcie(const Value& value, GpuLink& link) {
  const Map map(value, {"generation", "lanes"});
  const Value generation = map.required("generation");
  link.pcie_generation = generation.as_int(/*min=*/1);
  if (link.pcie_generation > 6) generation.fail("PCIe generation must be 1 to 6, got " + generation.describe());
  const Value lanes = map.required("lanes");
  link.pcie_lanes = lanes.as_int(/*min=*/1);
  constexpr int kWidths[] = {1, 2, 4, 8, 12, 16, 32};
  if (std::find(std::begin(kWidths), std::end(kWidths), link.pcie_lanes) == std::end(kWidths)) {
    lanes.fail("PCIe link width must be 1, 2, 4, 8, 12, 16 or 32 lanes, got " + lanes.describe());
  }
}

void parse_nvlink(const Value& value, GpuLink& link) {
  const Map map(value, {"generation", "links", "gbs"});
  const Value generation = map.required("generation");
  const Value gbs = map.required("gbs");
  link.nvlink_links = map.required("links").as_int(/*min=*/0);
  link.nvlink_gbs = gbs.as_double(/*min=*/0);
  if ((link.nvlink_links == 0) != (link.nvlink_gbs == 0)) {
    value.fail("links and gbs must both be 0 (no NVLink) or both > 0, got links " +
               std::to_string(link.nvlink_links) + " and gbs " + gbs.describe());
  }
  if (!generation.is_null()) link.nvlink_generation = generation.as_int(/*min=*/1);
  if (link.nvlink_links == 0 && link.nvlink_generation) {
    generation.fail("must be null when the GPU has no NVLink (links: 0)");
  }
  if (link.nvlink_links > 0 && !link.nvlink_generation) {
    generation.fail("must name the NVLink generation when links > 0");
  }
}

std::map<std::string, std::string> parse_sources(const Value& value) {
  const Map map(value);
  std::map<std::string, std::string> sources;
  for (const auto& [field, document] : map.entries()) {
    const bool figure = field != "source" && field != "sources" &&
                        std::any_of(kEntryKeys.begin(), kEntryKeys.end(),
                                    [&f = field](const char* k) { return f == k; });
    if (!figure) document.fail("'" + field + "' is not a field of the entry a source can be given for");
    sources[field] = non_empty(document);
  }
  return sources;
}

// `claimed`: the device names (normalized) of the entries read so far -> their keys. A device
// name must identify one GPU.
GpuSpec parse_gpu(const std::string& key, const Value& value, std::map<std::string, std::string>& claimed) {
  if (!is_dashed_name(key)) {
    throw InputError(value.file(), value.heading_line(), value.path(),
                     "GPU keys are lower-case letters and digits in words joined by single dashes "
                     "(e.g. a100-sxm4-40gb), got '" + key + "'");
  }
  const Map map(value, kEntryKeys);
  GpuSpec gpu;
  gpu.key = key;
  gpu.line = value.heading_line();
  gpu.name = non_empty(map.required("name"));

  const Value names = map.required("device_names");
  for (const Value& item : names.as_list()) {
    gpu.device_names.push_back(non_empty(item));
    const auto [owner, inserted] = claimed.emplace(normalize_device_name(gpu.device_names.back()), key);
    if (!inserted) {
      item.fail("device name '" + gpu.device_names.back() + "' is already claimed by " +
                (owner->second == key ? "this entry" : "gpus." + owner->second));
    }
  }
  if (gpu.device_names.empty()) names.fail("must list at least one device name");

  const Value architecture = map.required("architecture");
  gpu.architecture = architecture.as_string();
  if (!is_dashed_name(gpu.architecture)) {
    architecture.fail("expected a lower-case architecture name (e.g. ampere), got " + architecture.describe());
  }

  gpu.compute_capability = optional_positive(map, "compute_capability");
  gpu.fp32_tflops = positive(map.required("fp32_tflops"));
  gpu.tf32_tflops = optional_positive(map, "tf32_tflops");
  gpu.fp16_tflops = optional_positive(map, "fp16_tflops");
  gpu.bf16_tflops = optional_positive(map, "bf16_tflops");
  gpu.memory_bytes = positive(map.required("memory_gib")) * (1ull << 30);
  gpu.memory_bandwidth_gbs = positive(map.required("memory_bandwidth_gbs"));
  gpu.sms = map.required("sms").as_int(/*min=*/1);
  gpu.boost_clock_mhz = positive(map.required("boost_clock_mhz"));
  gpu.base_clock_mhz = optional_positive(map, "base_clock_mhz");
  if (gpu.base_clock_mhz && *gpu.base_clock_mhz > gpu.boost_clock_mhz) {
    map.required("base_clock_mhz").fail("base clock above the boost clock (" +
                                        map.required("boost_clock_mhz").describe() + ")");
  }
  gpu.l2_bytes = positive(map.required("l2_mib")) * (1u << 20);
  parse_pcie(map.required("pcie"), gpu.link);
  parse_nvlink(map.required("nvlink"), gpu.link);
  gpu.source = non_empty(map.required("source"));
  if (auto sources = map.optional("sources")) gpu.sources = parse_sources(*sources);
  return gpu;
}

// A figure for the table, "-" when unknown or none.
std::string figure(std::optional<double> value) {
  if (!value) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", *value);
  return buffer;
}

}  // namespace

const GpuSpec* GpuCatalog::find(const std::string& key) const {
  for (const GpuSpec& gpu : gpus) {
    if (gpu.key == key) return &gpu;
  }
  return nullptr;
}

const GpuSpec* GpuCatalog::match_device_name(const std::string& device) const {
  const std::string wanted = normalize_device_name(device);
  if (wanted.empty()) return nullptr;
  for (const GpuSpec& gpu : gpus) {
    for (const std::string& name : gpu.device_names) {
      if (normalize_device_name(name) == wanted) return &gpu;
    }
  }
  return nullptr;
}

std::string GpuCatalog::keys() const {
  std::string out;
  for (const GpuSpec& gpu : gpus) {
    if (!out.empty()) out += ", ";
    out += gpu.key;
  }
  return out;
}

GpuCatalog load_gpu_catalog(const std::string& path) {
  GpuCatalog catalog;
  catalog.file = path;
  const Value root = Value::load_file(&catalog.file);
  if (!root.is_map()) root.fail("the GPU catalog must be a map with a `gpus:` key, got " + root.describe());
  const Value gpus = Map(root, {"gpus"}).required("gpus");
  if (gpus.is_null()) gpus.fail("lists no GPUs");
  const Map entries(gpus);
  std::map<std::string, std::string> claimed;
  for (const auto& [key, value] : entries.entries()) {
    catalog.gpus.push_back(parse_gpu(key, value, claimed));
  }
  if (catalog.gpus.empty()) gpus.fail("lists no GPUs");
  return catalog;
}

std::string format_gpu_list(const GpuCatalog& catalog) {
  const std::vector<std::string> header = {"key", "name", "FP32", "TF32", "FP16", "mem GiB",
                                           "GB/s", "SMs", "L2 MiB", "NVLink GB/s", "PCIe"};
  std::vector<std::vector<std::string>> rows = {header};
  for (const GpuSpec& gpu : catalog.gpus) {
    const GpuLink& link = gpu.link;
    rows.push_back({gpu.key, gpu.name, figure(gpu.fp32_tflops), figure(gpu.tf32_tflops),
                    figure(gpu.fp16_tflops), figure(gpu.memory_bytes / (1ull << 30)),
                    figure(gpu.memory_bandwidth_gbs), std::to_string(gpu.sms),
                    figure(gpu.l2_bytes / (1u << 20)),
                    link.nvlink_links > 0 ? figure(link.nvlink_gbs) : "-",
                    "gen" + std::to_string(link.pcie_generation) + " x" + std::to_string(link.pcie_lanes)});
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  // Key and name read left to right; figures line up on the right.
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c < 2 ? row[c] + pad : pad + row[c];
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  }
  out << "TFLOPS are dense peaks (FP16: tensor cores, FP32 accumulate); \"-\": none or unknown.\n";
  out << "catalog: " << catalog.file << "\n";
  return out.str();
}

std::string default_gpu_catalog_path() { return std::string(TRAINSIM_SOURCE_DIR) + "/configs/gpus.yaml"; }

}  // namespace trainsim
