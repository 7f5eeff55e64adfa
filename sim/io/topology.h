#pragma once
// A cluster's topology (`topology:` in a config, docs/SCALE.md): nodes of identical GPUs from the
// catalog, how they connect inside a node (NVSwitch, an NVLink mesh, PCIe with or without
// peer-to-peer) and between nodes (NICs). Presets name common systems. Plain structs; parsed in
// config.cpp, turned into NCCL's view of it in hw/nccl_model.h.

#include <optional>
#include <string>
#include <vector>

#include "io/gpu_catalog.h"
#include "format/profile.h"

namespace trainsim {

enum class Fabric { kNvswitch, kNvlinkMesh, kPcie };
const char* to_string(Fabric f);  // "nvswitch", "nvlink-mesh", "pcie"

struct Nic {
  double gbps = 0;     // line rate of one NIC, Gb/s
  bool per_gpu = true; // one NIC per GPU; false: `count` NICs per node
  int count = 1;       // NICs per node when per_gpu is false
  int nics_per_node(int gpus_per_node) const { return per_gpu ? gpus_per_node : count; }
};

// An NCCL release (`nccl: "2.26"`); the patch level does not change NCCL's cost model.
struct NcclRelease {
  int major = 2;
  int minor = 0;
};

struct Topology {
  std::string preset;       // the preset it started from, "" when spelled out
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  Fabric fabric = Fabric::kPcie;
  bool p2p = true;          // PCIe peer-to-peer; false: through host memory
  // `pcie: {switches: N}` the PCIe switches a PCIe node's GPUs sit under, gpus_per_node / N each,
  // each switch one link of the GPUs' own rating to the CPU; 0: not given (each GPU its own path).
  int pcie_switches = 0;
  std::optional<Nic> nic;   // between nodes; required with nodes > 1
  // `cpu_cores:` the logical CPUs of one node, as `nproc` counts them (SMT threads included: the
  // meaning of a profile's machine.cpu_cores); its ranks' host threads and loader workers share
  // them. 0: not given (the simulation assumes the profiled machine's, and says so).
  int cpu_cores = 0;
  // `nccl:` the NCCL release whose cost model prices collectives (hw/nccl_model.h); none: the
  // newest the model has.
  std::optional<NcclRelease> nccl;
  // `nccl_algo:` the algorithms NCCL may choose from, as NCCL_ALGO restricts them ("ring", "tree",
  // "nvls", "nvls_tree"; ring always among them); empty: all that NCCL's tuner considers.
  std::vector<std::string> nccl_algo;
  // `collectives_log:` (an nccl-tests all_reduce_perf log of this cluster): its all-reduce curve
  // prices all-reduces on its rank count instead of the model; none: not given.
  std::optional<CollectiveCurve> collectives_log;
  std::string collectives_log_path;

  int gpus() const { return nodes * gpus_per_node; }
  // e.g. "2 x dgx-h100: 8 x h100-sxm per node, nvswitch, 8 x 400 Gb/s NICs per node, 224 logical
  // CPUs per node"
  std::string describe() const;
};

}  // namespace trainsim
