#pragma once
// The GPU catalog (configs/gpus.yaml): vendor peak figures of the GPUs known by name, each with
// the document it comes from. Format and conventions: the comment at the top of that file.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

// How a GPU connects: to its peers over NVLink (a bridge, for PCIe boards), to the host over PCIe.
struct GpuLink {
  std::optional<int> nvlink_generation;  // nullopt: no NVLink
  int nvlink_links = 0;
  double nvlink_gbs = 0;  // total bidirectional GB/s per GPU over all links; 0 when none
  int pcie_generation = 0;
  int pcie_lanes = 16;

  // Peak PCIe payload bandwidth per direction, GB/s (1e9 bytes/s): lanes x transfer rate x the
  // line code's efficiency / 8 bits. Gen1/2: 2.5/5 GT/s with 8b/10b; gen3/4/5: 8/16/32 GT/s with
  // 128b/130b (gen3 x16 = 16 x 8 x 128/130 / 8 = 15.75 GB/s); gen6: 64 GT/s in FLIT mode, which
  // has no line code (its FEC and CRC, like the packet framing of the earlier generations, are
  // not taken off).
  double pcie_gbs() const;
};

struct GpuSpec {
  std::string key;           // catalog key, e.g. "a100-sxm4-40gb"
  std::string name;          // display name
  std::string architecture;  // "volta", "turing", "ampere", "ada", "hopper", ...
  std::vector<std::string> device_names;  // as torch.cuda.get_device_name() prints them
  std::optional<double> compute_capability;  // CUDA compute capability, e.g. 8.0 (A100), 8.6 (GA102)
  // Peak dense TFLOPS (no structured sparsity). The tensor-core rates are nullopt where the GPU
  // has no such tensor-core mode (TF32 and BF16 before Ampere).
  double fp32_tflops = 0;                 // non-tensor FP32
  std::optional<double> tf32_tflops;      // tensor-core TF32
  std::optional<double> fp16_tflops;      // tensor-core FP16, FP32 accumulate
  std::optional<double> bf16_tflops;      // tensor-core BF16
  double memory_bytes = 0;                // memory_gib x 2^30
  double memory_bandwidth_gbs = 0;        // GB/s, 1e9 bytes/s
  int sms = 0;
  std::optional<double> base_clock_mhz;   // nullopt: no cited document states it
  double boost_clock_mhz = 0;
  double l2_bytes = 0;                    // l2_mib x 2^20
  GpuLink link;
  std::string source;                          // the documents the figures come from
  std::map<std::string, std::string> sources;  // field -> document, where one differs
  int line = 0;                                // line of the entry's key in the catalog

  // Peak FLOP/s PyTorch's default fp32 training gets for convolutions and matmuls: TF32 tensor
  // cores where the GPU has them (PyTorch's default allow_tf32 for cuDNN convolutions is true),
  // else FP32.
  double fp32_training_flops() const;
  // Roofline ridge point, FLOP per byte of memory traffic: fp32_training_flops() over the memory
  // bandwidth. Kernels of lower arithmetic intensity are memory-bound.
  double ridge_flops_per_byte() const;
};

struct GpuCatalog {
  std::string file;           // path as given to load_gpu_catalog
  std::vector<GpuSpec> gpus;  // in file order

  const GpuSpec* find(const std::string& key) const;  // nullptr if none
  // The GPU one of whose device_names equals `device`, ignoring case and surrounding
  // whitespace; nullptr if none.
  const GpuSpec* match_device_name(const std::string& device) const;
  std::string keys() const;  // "t4, rtx-2080-ti, ...", for error messages
};

// Reads and validates a catalog. Throws InputError naming file, line and key path on any problem
// (unknown or missing key, a non-positive figure, a malformed key, a device name claimed twice,
// an inconsistent nvlink or pcie block, an empty catalog).
GpuCatalog load_gpu_catalog(const std::string& path);

// The catalog as a fixed-width table (`simulate --list-gpus`): one row per GPU with its peak
// rates, memory, SMs, L2, NVLink and PCIe ("-" where unknown or none), then the catalog's path.
std::string format_gpu_list(const GpuCatalog& catalog);

// The catalog bundled with the sources: <source dir>/configs/gpus.yaml.
std::string default_gpu_catalog_path();

}  // namespace trainsim
