// The GPU catalog: the bundled configs/gpus.yaml loads with every GPU and a source for each, a few
// of its figures checked against the vendor documents, device-name matching, the derived rates,
// and one InputError per kind of bad catalog, pinned to file, line and key path.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/errors.h"
#include "io/gpu_catalog.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kBundledKeys = {
    "t4", "rtx-2080-ti", "quadro-rtx-6000", "titan-rtx", "v100-sxm2-16gb", "v100-sxm2-32gb",
    "v100-pcie-16gb", "v100-pcie-32gb", "a10", "a100-sxm4-40gb", "a100-sxm4-80gb",
    "a100-pcie-40gb", "a100-pcie-80gb", "l4", "rtx-3090", "rtx-4090", "rtx-5090", "h100-sxm", "h100-pcie",
    "h200"};

const GpuCatalog& bundled() {
  static const GpuCatalog catalog = load_gpu_catalog(std::string(TRAINSIM_SOURCE_DIR) + "/configs/gpus.yaml");
  return catalog;
}

const GpuSpec& bundled_gpu(const std::string& key) {
  const GpuSpec* gpu = bundled().find(key);
  if (gpu == nullptr) throw std::runtime_error("no GPU " + key + " in the bundled catalog");
  return *gpu;
}

TEST(GpuCatalog, DefaultPathIsTheBundledCatalog) {
  EXPECT_EQ(fs::path(default_gpu_catalog_path()), fs::path(TRAINSIM_SOURCE_DIR) / "configs" / "gpus.yaml");
}

TEST(GpuCatalog, BundledCatalogHasEveryGpuInOrderEachWithASource) {
  std::vector<std::string> keys;
  for (const GpuSpec& gpu : bundled().gpus) {
    keys.push_back(gpu.key);
    EXPECT_FALSE(gpu.source.empty()) << gpu.key;
    EXPECT_FALSE(gpu.device_names.empty()) << gpu.key;
    EXPECT_GT(gpu.line, 0) << gpu.key;
  }
  EXPECT_EQ(keys, kBundledKeys);
  EXPECT_EQ(bundled().keys().rfind("t4, rtx-2080-ti, quadro-rtx-6000, ", 0), 0u) << bundled().keys();
}

// Figures as the vendor documents give them (A100 whitepaper and datasheet, V100 datasheet,
// H100 whitepaper).
TEST(GpuCatalog, BundledFiguresMatchTheVendorDocuments) {
  const GpuSpec& a100 = bundled_gpu("a100-sxm4-40gb");
  EXPECT_EQ(a100.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(a100.architecture, "ampere");
  EXPECT_DOUBLE_EQ(a100.fp32_tflops, 19.5);
  ASSERT_TRUE(a100.tf32_tflops.has_value());
  EXPECT_DOUBLE_EQ(*a100.tf32_tflops, 156);
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth_gbs, 1555);
  EXPECT_EQ(a100.sms, 108);
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 40.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(a100.l2_bytes, 40.0 * (1u << 20));
  EXPECT_DOUBLE_EQ(a100.boost_clock_mhz, 1410);
  EXPECT_FALSE(a100.base_clock_mhz.has_value());  // no cited document states it
  EXPECT_EQ(a100.link.nvlink_generation, 3);
  EXPECT_EQ(a100.link.nvlink_links, 12);
  EXPECT_DOUBLE_EQ(a100.link.nvlink_gbs, 600);
  EXPECT_EQ(a100.link.pcie_generation, 4);

  const GpuSpec& v100 = bundled_gpu("v100-sxm2-16gb");
  EXPECT_FALSE(v100.tf32_tflops.has_value());  // Volta has no TF32
  EXPECT_FALSE(v100.bf16_tflops.has_value());
  ASSERT_TRUE(v100.fp16_tflops.has_value());
  EXPECT_DOUBLE_EQ(*v100.fp16_tflops, 125);

  EXPECT_EQ(bundled_gpu("h100-sxm").sms, 132);
  EXPECT_EQ(bundled_gpu("h100-pcie").sms, 114);
  EXPECT_FALSE(bundled_gpu("v100-pcie-16gb").link.nvlink_generation.has_value());
  EXPECT_EQ(bundled_gpu("v100-pcie-16gb").link.nvlink_links, 0);
}

TEST(GpuCatalog, PcieBandwidthPerDirectionFollowsTheGenerationsLineCode) {
  GpuLink link;
  link.pcie_lanes = 16;
  // Gen3: 8 GT/s x 128/130 / 8 bits = 0.9846 GB/s per lane; x16 = 15.754 GB/s.
  link.pcie_generation = 3;
  EXPECT_NEAR(link.pcie_gbs(), 15.754, 1e-3);
  // Gen1: 2.5 GT/s x 8/10 / 8 = 0.25 GB/s per lane.
  link.pcie_generation = 1;
  EXPECT_DOUBLE_EQ(link.pcie_gbs(), 4.0);
  link.pcie_generation = 4;
  EXPECT_NEAR(link.pcie_gbs(), 2 * 15.754, 2e-3);
  link.pcie_generation = 5;
  link.pcie_lanes = 8;
  EXPECT_NEAR(link.pcie_gbs(), 2 * 15.754, 2e-3);  // gen5 x8 = gen4 x16
}

TEST(GpuCatalog, TrainingRateIsTf32WhereTheGpuHasItElseFp32) {
  const GpuSpec& a100 = bundled_gpu("a100-sxm4-40gb");
  EXPECT_DOUBLE_EQ(a100.fp32_training_flops(), 156e12);
  // Ridge point: 156e12 FLOP/s / 1555e9 B/s = 100.3 FLOP/byte.
  EXPECT_NEAR(a100.ridge_flops_per_byte(), 100.32, 0.01);
  EXPECT_DOUBLE_EQ(bundled_gpu("v100-sxm2-16gb").fp32_training_flops(), 15.7e12);
}

TEST(GpuCatalog, MatchesDeviceNamesExactlyIgnoringCaseAndBlanks) {
  const GpuSpec* a100 = bundled().match_device_name("NVIDIA A100-SXM4-40GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->key, "a100-sxm4-40gb");
  const GpuSpec* loose = bundled().match_device_name("  nvidia a100-sxm4-40gb\n");
  ASSERT_NE(loose, nullptr);
  EXPECT_EQ(loose->key, "a100-sxm4-40gb");
  // Older drivers' name, without the "NVIDIA " prefix.
  ASSERT_NE(bundled().match_device_name("GeForce RTX 2080 Ti"), nullptr);
  EXPECT_EQ(bundled().match_device_name("GeForce RTX 2080 Ti")->key, "rtx-2080-ti");
  EXPECT_EQ(bundled().match_device_name("NVIDIA B200"), nullptr);
  EXPECT_EQ(bundled().match_device_name("NVIDIA A100"), nullptr);  // a prefix is not a match
  EXPECT_EQ(bundled().match_device_name(""), nullptr);
  EXPECT_EQ(bundled().find("a100"), nullptr);
}

TEST(GpuCatalog, ListNamesEveryGpuAndTheCatalog) {
  const std::string list = format_gpu_list(bundled());
  for (const std::string& key : kBundledKeys) {
    EXPECT_NE(list.find("\n" + key + " "), std::string::npos) << key << "\n" << list;
  }
  EXPECT_NE(list.find("catalog: " + bundled().file + "\n"), std::string::npos) << list;
  EXPECT_EQ(list.rfind("key ", 0), 0u) << list;
}

// A fresh folder per test, removed afterwards.
class BadCatalogTest : public ::testing::Test {
 protected:

  std::string write(const std::string& text) {
    const fs::path path = dir_ / "gpus.yaml";
    std::ofstream(path) << text;
    return path.string();
  }

  ::trainsim::testing::TempDir temp_{"trainsim-io-gpu-catalog"};
  fs::path dir_ = temp_.path();
};

// One valid entry; the cases below change one line of it (numbers: the file's lines).
const std::vector<std::string> kGoodLines = {
    "gpus:",                                          // 1
    "  g1:",                                          // 2
    "    name: \"G1\"",                               // 3
    "    device_names: [\"Dev One\"]",                // 4
    "    architecture: ampere",                       // 5
    "    fp32_tflops: 10",                            // 6
    "    tf32_tflops: 20",                            // 7
    "    memory_gib: 16",                             // 8
    "    memory_bandwidth_gbs: 500",                  // 9
    "    sms: 40",                                    // 10
    "    boost_clock_mhz: 1500",                      // 11
    "    l2_mib: 4",                                  // 12
    "    pcie: {generation: 4, lanes: 16}",           // 13
    "    nvlink: {generation: null, links: 0, gbs: 0}",  // 14
    "    source: \"a datasheet\"",                    // 15
};

// The good entry with line `number` replaced by `text` ("" drops it), then `extra` lines.
std::string catalog_with(int number, const std::string& text, const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < kGoodLines.size(); ++i) {
    const std::string& line = static_cast<int>(i) + 1 == number ? text : kGoodLines[i];
    if (!line.empty()) out += line + "\n";
  }
  return out + extra;
}

TEST(GpuCatalog, EveryBundledEntryHasItsComputeCapability) {
  const GpuCatalog catalog = load_gpu_catalog(default_gpu_catalog_path());
  for (const GpuSpec& gpu : catalog.gpus) EXPECT_TRUE(gpu.compute_capability.has_value()) << gpu.key;
  EXPECT_DOUBLE_EQ(*catalog.find("a100-sxm4-40gb")->compute_capability, 8.0);
  EXPECT_DOUBLE_EQ(*catalog.find("rtx-3090")->compute_capability, 8.6);
}

TEST_F(BadCatalogTest, TheGoodEntryLoads) {
  const GpuCatalog catalog = load_gpu_catalog(write(catalog_with(0, "")));
  ASSERT_EQ(catalog.gpus.size(), 1u);
  const GpuSpec& gpu = catalog.gpus[0];
  EXPECT_EQ(gpu.line, 2);
  EXPECT_FALSE(gpu.fp16_tflops.has_value());  // absent: unknown
  EXPECT_FALSE(gpu.link.nvlink_generation.has_value());
  EXPECT_DOUBLE_EQ(gpu.link.pcie_gbs(), 16 * 16 * 128.0 / 130 / 8);
}

struct BadCatalog {
  const char* name;
  std::string yaml;
  int line;
  const char* key;
  const char* message;  // substring of InputError::message()
};

void PrintTo(const BadCatalog& bad, std::ostream* out) { *out << bad.name; }

class BadCatalogCase : public BadCatalogTest, public ::testing::WithParamInterface<BadCatalog> {};

TEST_P(BadCatalogCase, PointsAtTheOffendingNode) {
  const BadCatalog& bad = GetParam();
  const std::string path = write(bad.yaml);
  try {
    load_gpu_catalog(path);
    FAIL() << "expected InputError for:\n" << bad.yaml;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), bad.line) << e.what();
    EXPECT_EQ(e.key(), bad.key) << e.what();
    EXPECT_NE(e.message().find(bad.message), std::string::npos) << e.what();
    // The one line users see: FILE:LINE: key.path: message.
    const std::string prefix = path + ":" + std::to_string(bad.line) + ": " + bad.key + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

const std::string kSecondEntry =
    "  g2:\n"                                                  // 16
    "    name: \"G2\"\n"                                       // 17
    "    device_names: [\"Dev Two\", \" dev one \"]\n"         // 18
    "    architecture: ampere\n"
    "    fp32_tflops: 10\n"
    "    memory_gib: 16\n"
    "    memory_bandwidth_gbs: 500\n"
    "    sms: 40\n"
    "    boost_clock_mhz: 1500\n"
    "    l2_mib: 4\n"
    "    pcie: {generation: 4, lanes: 16}\n"
    "    nvlink: {generation: null, links: 0, gbs: 0}\n"
    "    source: \"a datasheet\"\n";

INSTANTIATE_TEST_SUITE_P(
    GpuCatalog, BadCatalogCase,
    ::testing::Values(
        BadCatalog{"UnknownKey", catalog_with(8, "    memory_gb: 16"), 8, "gpus.g1.memory_gb",
                   "unknown key 'memory_gb' (did you mean 'memory_gib'?)"},
        BadCatalog{"NegativeBandwidth", catalog_with(9, "    memory_bandwidth_gbs: -500"), 9,
                   "gpus.g1.memory_bandwidth_gbs", "must be > 0"},
        BadCatalog{"NotANumber", catalog_with(6, "    fp32_tflops: nan"), 6, "gpus.g1.fp32_tflops",
                   "finite"},
        BadCatalog{"NullWhereRequired", catalog_with(10, "    sms: null"), 10, "gpus.g1.sms",
                   "expected an integer"},
        BadCatalog{"ZeroOptionalRate", catalog_with(7, "    tf32_tflops: 0"), 7, "gpus.g1.tf32_tflops",
                   "must be > 0"},
        BadCatalog{"MissingSource", catalog_with(15, ""), 2, "gpus.g1.source",
                   "missing required key 'source'"},
        BadCatalog{"BadKeyName", catalog_with(2, "  A100_40GB:"), 2, "gpus.A100_40GB",
                   "GPU keys are lower-case"},
        BadCatalog{"DoubleDashKey", catalog_with(2, "  a100--40gb:"), 2, "gpus.a100--40gb",
                   "single dashes"},
        BadCatalog{"DeviceNameClaimedTwice", catalog_with(0, "", kSecondEntry), 18,
                   "gpus.g2.device_names[1]", "' dev one ' is already claimed by gpus.g1"},
        BadCatalog{"NvlinkBandwidthWithoutLinks",
                   catalog_with(14, "    nvlink: {generation: 3, links: 0, gbs: 600}"), 14,
                   "gpus.g1.nvlink", "links and gbs must both be 0"},
        BadCatalog{"NvlinkLinksWithoutBandwidth",
                   catalog_with(14, "    nvlink: {generation: 3, links: 12, gbs: 0}"), 14,
                   "gpus.g1.nvlink", "links and gbs must both be 0"},
        BadCatalog{"NvlinkWithoutGeneration",
                   catalog_with(14, "    nvlink: {generation: null, links: 12, gbs: 600}"), 14,
                   "gpus.g1.nvlink.generation", "must name the NVLink generation"},
        BadCatalog{"PcieGenerationOutOfRange", catalog_with(13, "    pcie: {generation: 7, lanes: 16}"),
                   13, "gpus.g1.pcie.generation", "1 to 6"},
        BadCatalog{"BaseClockAboveBoost", catalog_with(0, "", "    base_clock_mhz: 1600\n"), 16,
                   "gpus.g1.base_clock_mhz", "above the boost clock"},
        BadCatalog{"SourceForAnUnknownField",
                   catalog_with(0, "", "    sources: {memory: \"a whitepaper\"}\n"), 16,
                   "gpus.g1.sources.memory", "not a field of the entry"},
        BadCatalog{"EmptyCatalog", "gpus: {}\n", 1, "gpus", "lists no GPUs"},
        BadCatalog{"NoGpusKey", "gpu:\n  g1: {}\n", 1, "gpu", "unknown key 'gpu'"}));

}  // namespace
}  // namespace trainsim
