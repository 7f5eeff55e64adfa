#pragma once
// Collectives as NCCL runs them (docs/SCALE.md): ring, tree and NVLS algorithms, the LL, LL128 and
// Simple protocols, each a latency plus bytes over a bandwidth, and the tuner's choice of the
// fastest per message size. The model and its constants are NCCL's own cost model, from NCCL's
// src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime; NVIDIA/nccl) and the link figures
// of its topology model (src/graph/topo.h, topo.cc); re-derived here, not copied. The constants
// change between NCCL releases: nccl_model.cpp holds one table per modelled release (2.7, 2.20,
// 2.26, each naming its source), and a system takes the newest table at or before its release.
//
// For `op` on n = nodes x gpus_per_node ranks and S bytes, algorithm a, protocol p, with the
// release's constants (written c.name):
//   time = latency(a, p) + S / algbw(a, p)
//   algbw = busbw(a, p) * ratio,  ratio: ring n / nsteps (all-reduce nsteps = 2(n-1), broadcast
//           and reduce n, all-gather and reduce-scatter n-1); tree 1/2.
//   busbw(ring) = B = the ring's slowest hop per GPU: the intra-node path with one node, else
//           min(intra, the node's NICs together); Simple x1, LL128 x0.92 (x c.ll128_one_per_node
//           with one GPU per node), LL x c.ring_ll (all-reduce, reduce or several nodes), else
//           x c.ring_ll_other.
//   busbw(tree) = min(c.tree_share B, c.tree_cap: 110 GB/s with <= 2 nodes, else 80; with LL128
//           on compute capability 8.0, 130 and 105; none where c has no cap); LL x1/3.8, LL128
//           x7/9 on one node, x c.tree_ll128_nodes on several. Tree is all-reduce only. On
//           compute capability 8.0 (A100) B is capped at c.sm80_cap where c has one.
//   latency(ring) = base(a, p) + (nsteps - inter_steps) * hw(intra, a, p) + inter_steps * hw(net, a, p),
//           inter_steps: the steps that cross nodes (all-reduce 2(nodes-1) + c.extra_inter_steps,
//           ...); broadcast and reduce pay nsteps hops of the ring.
//   latency(tree) = base(a, p) + 2 ((gpus_per_node - 1) hw(intra, a, p) + log2(nodes) hw(net, a, p)).
//   LL's intra-node hop costs 1.8x when the ring spans nodes; a multi-node ring all-reduce with
//   Simple pays 1.9x its latency once S >= n/16 x 64 KiB (the ring's plateau).
// base and hw (microseconds) are the release's tables. LL128 is used only over NVLink (NCCL
// enables it by default only there).
//
// NVLS (NVLink SHARP: the NVSwitch reduces and multicasts), on NVSwitch nodes whose GPUs all have
// compute capability 9.0 or later, Simple only, in the 2.20 and 2.26 tables as NCCL 2.20.3 models
// it (tuning.cc and search.cc at the commit above): on one node, all-reduce, all-gather and
// reduce-scatter (NVLS); on several, all-reduce (NVLS-tree: NVLS inside each node, a tree of the
// nodes). The search gives one channel per GPU of a node (g = gpus_per_node, g >= 2), each at the
// fastest of NCCL's compute-capability-9 speeds (intra-node 60, 50, 40, 30, 24, 20, 15, 12, 11, 6,
// 3 GB/s; across nodes 48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, ...) at which every
// GPU's NVLinks carry it (the channel's head twice, every other GPU once: (g + 1) x speed <= the
// NVLink rating) and, across nodes, at which the node's NICs carry g of them:
//   algbw = g x speed x 5/6 (NVLS-tree on more than 2 nodes: speed / 2)
//   latency = 23 us (NVLS) or 23 + 2 log2(nodes) x 14 us (NVLS-tree).
// On 8 H100 SXM (18 NVLinks x 20.6 = 370.8 GB/s): speed 40, algbw 266.7 GB/s, nccl-tests busbw
// 466.7 GB/s, against the ring's 370.8. Not modelled: the releases after 2.20 that rate NVLS
// otherwise (an efficiency per GPU generation and (channels - 1) / channels), NVLS in 2.17-2.19
// (priced with 2.7's table, which has none), NVLS across nodes with CollNet, NCCL's tree
// correction factors for medium sizes, CollNet, PAT, the per-channel caps and the number of
// channels the ring's and tree's search finds (from 2.20 the tree's and LL's bandwidth caps are
// per channel), the network post overhead of 2.20 and later (1 us on Intel, 2 us on AMD CPUs per
// multi-node ring step), and the later releases' plateau rule (per channel).
//
// Peer-to-peer off (`p2p: false`): NCCL routes GPU to GPU through the CPU (paths.cc,
// addInterStep): the path's bandwidth is the smaller of the two PCIe paths to the CPU, so it is
// rated like peer-to-peer, and its latency is PCIe's. Where k GPUs share a PCIe switch
// (`pcie: {switches}`), their paths to the CPU cross the switch's one link (rated like a GPU's):
// the intra-node bandwidth is divided by the transfers that cross it at once each way
// (uplink_flows: a ring's k, a chain's k - 1 on a one-switch node). NCCL's search (search.cc
// followPath) reserves a ring's bandwidth on every link its paths cross, for every op alike; a
// broadcast's chain leaves one of those transfers idle (docs/SCALE.md: the 2-GPU logs show it).
// The one penalty NCCL's search applies is on Intel x86 root complexes (search.cc followPath,
// topo.h INTEL_P2P_OVERHEAD: the PCIe links carry 6/5 of the bandwidth); the topology does not
// name its CPU, so that is not modelled.
//
// nccl-tests' bus bandwidth: busbw = algbw x factor, factor all-reduce 2(n-1)/n, all-gather and
// reduce-scatter (n-1)/n, broadcast and reduce 1.

#include <optional>
#include <string>

#include "io/topology.h"

namespace trainsim::hw {

enum class NcclOp { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
enum class NcclAlgorithm { kTree, kRing, kNvls, kNvlsTree };
enum class NcclProtocol { kLL, kLL128, kSimple };
constexpr unsigned kAllNcclAlgorithms = 0xFu;
const char* to_string(NcclOp op);         // "all_reduce", "broadcast", ...
NcclOp nccl_op(const std::string& name);  // to_string's inverse; std::invalid_argument for another name
const char* to_string(NcclAlgorithm a);   // "tree", "ring", "nvls", "nvls_tree"
const char* to_string(NcclProtocol p);    // "LL", "LL128", "Simple"

// The releases whose cost-model constants are modelled, oldest first, and the one a release
// uses: the newest at or before it (releases before 2.7, including 2.4, which had no cost model
// and chose by size thresholds, take 2.7's). kNewestNccl: the default.
enum class NcclTable { k2_7, k2_20, k2_26 };
constexpr NcclTable kNewestNccl = NcclTable::k2_26;
NcclTable nccl_table(const NcclRelease& release);
const char* to_string(NcclTable t);  // "2.7", "2.20", "2.26"

// What NCCL's cost model sees of a system (built from a topology: io/topology.h).
struct NcclSystem {
  int nodes = 1;
  int gpus_per_node = 1;
  bool nvlink = false;     // the intra-node path is NVLink (else PCIe)
  double intra_gbs = 0;    // per GPU per direction, NCCL's rating of the intra-node path (GB/s)
  // Peer-to-peer off, GPUs under shared PCIe switches: the GPUs of the node whose host-memory
  // traffic crosses one switch's link to the CPU (rated intra_gbs); 1: each GPU its own path.
  int gpus_per_uplink = 1;
  double inter_gbs = 0;    // per node per direction, all its NICs together (GB/s); 0: one node
  bool sm80 = false;       // every GPU has compute capability 8.0 (NCCL's A100 refinements)
  bool nvls = false;       // NVSwitch and compute capability >= 9.0: NVLink SHARP (NVLS)
  NcclTable nccl = kNewestNccl;  // whose constants
  // The algorithms the tuner may choose (NCCL_ALGO; Topology::nccl_algo), a bit per NcclAlgorithm.
  unsigned algorithms = kAllNcclAlgorithms;
  bool allows(NcclAlgorithm a) const { return (algorithms >> static_cast<int>(a)) & 1u; }
  int ranks() const { return nodes * gpus_per_node; }
};

// One (algorithm, protocol)'s time in its two terms: latency(a, p) and S / algbw(a, p).
struct NcclParts {
  double latency_s = 0;
  double transfer_s = 0;
};

struct NcclTime {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double seconds = 0;
  NcclParts parts;  // seconds = parts.latency_s + parts.transfer_s
};

// The time of one (algorithm, protocol); negative when NCCL would not run it (tree for anything
// but all-reduce, LL128 without NVLink). 0 for one rank or no bytes. nccl_parts: the same in its
// two terms (both negative when NCCL would not run it).
double nccl_seconds(NcclOp op, double bytes, const NcclSystem& system, NcclAlgorithm a, NcclProtocol p);
// The transfers of `op` that cross one PCIe switch's link to the CPU at once, each way (1 where
// each GPU has its own path).
int uplink_flows(NcclOp op, const NcclSystem& system);
NcclParts nccl_parts(NcclOp op, double bytes, const NcclSystem& system, NcclAlgorithm a, NcclProtocol p);
// The tuner's choice: the fastest (algorithm, protocol) NCCL would run.
NcclTime nccl_fastest(NcclOp op, double bytes, const NcclSystem& system);

// A cluster's own log's calibration of the model (hw/nccl_calibration.h).
enum class LinkClass { kIntraNode, kInterNode };
struct NcclCalibration {
  // Per call, outside NCCL's model: mostly the host's launch of the call's kernels, one per GPU
  // the calling thread drives, so it is for a call launching `gpus_per_thread` GPUs (the log's).
  double overhead_s = 0;
  int gpus_per_thread = 1;
  double latency_scale = 1;
  double bandwidth_scale = 1;
  LinkClass link = LinkClass::kIntraNode;  // the link class bandwidth_scale rates
  int points = 0;                          // the log's sizes fitted
  double rms_relative_error = 0;           // of the fit over those sizes
};

// A cluster of identical nodes as NCCL sees it: n ranks fill ceil(n / gpus_per_node) nodes.
struct NcclCluster {
  int gpus_per_node = 1;
  bool nvlink = false;
  double intra_gbs = 0;  // NcclSystem::intra_gbs
  int gpus_per_switch = 1;  // NcclSystem::gpus_per_uplink on a full node
  double inter_gbs = 0;  // per node; 0: no NICs (one node only)
  bool sm80 = false;
  bool nvls = false;     // NcclSystem::nvls
  unsigned algorithms = kAllNcclAlgorithms;  // NcclSystem::algorithms
  NcclTable nccl = kNewestNccl;
  std::string name;      // Topology::describe(), for notes
  std::optional<CollectiveCurve> log;          // Topology::collectives_log
  std::optional<NcclCalibration> calibration;  // fitted to log (3 sizes or more)
  // Throws std::invalid_argument for ranks spanning nodes without NICs.
  NcclSystem system(int ranks) const;
  // `op` on `ranks`: NCCL's choice, priced with the calibration where there is one, for a call
  // whose thread launches `gpus_per_thread` GPUs (0: as the calibrating log ran).
  NcclTime time(NcclOp op, double bytes, int ranks, int gpus_per_thread = 0) const;
};

// NCCL's view of a topology: intra-node per GPU NVLink (links x NCCL's per-link figure) over
// NVSwitch or a mesh, else PCIe (NCCL rates a path through host memory like the PCIe link it
// crosses); between nodes the NICs of a node together, each Gb/s / 8. With a log of 3 sizes or
// more (collectives_log:), the calibration fitted to it.
NcclCluster nccl_cluster(const Topology& topology);

// nccl-tests' busbw / algbw factor for `op` on `ranks`.
double nccl_bus_factor(NcclOp op, int ranks);

// NCCL's per-GPU rating of the links (src/graph/topo.h, topo.cc), GB/s per direction:
// PCIe: lanes x speed / 80 with NCCL's lane speeds in 100 Mb/s units (gen1 15, gen2 30, gen3 60,
// gen4 120, gen5 240, gen6 480: three quarters of the payload rate; gen3 x16 = 12); NVLink: links x the per-link figure
// for the compute capability (6.x 18, 7.x and 8.0 20, 8.6 12, 9.x 20.6, 10.x and up 40.1); a
// NIC: its Gb/s / 8.
double nccl_pcie_gbs(int generation, int lanes);
double nccl_nvlink_gbs(int links, double compute_capability);

}  // namespace trainsim::hw
