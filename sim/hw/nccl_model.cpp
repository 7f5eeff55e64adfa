#include "hw/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "format/metrics.h"
#include "hw/nccl_calibration.h"

namespace trainsim::hw {
namespace {

constexpr int kTree = 0, kRing = 1;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;

// One release's constants (nccl_model.h names where each enters the model). Latencies in
// microseconds, [algorithm: tree, ring][protocol: LL, LL128, Simple]; hop latencies per hardware:
// NVLink, PCIe, network.
struct Constants {
  double base_us[2][3];
  double hop_us[3][2][3];
  double ring_ll;            // LL's share of the ring's bandwidth: all-reduce, reduce or several nodes
  double ring_ll_other;      // ... the rest
  double ll128_one_per_node; // ring LL128's share with one GPU per node
  double tree_share;         // the tree's share of B
  bool tree_cap;             // NCCL's fixed tree caps (110 / 80 GB/s, 130 / 105 for LL128 on 8.0)
  double tree_ll128_nodes;   // tree LL128's share on several nodes
  double sm80_cap;           // B's cap on compute capability 8.0, GB/s; 0: none
  int extra_inter_steps;     // added to a multi-node ring all-reduce's 2(nodes - 1) network steps
  // NVLS (NVLink SHARP) and NVLS-tree, Simple only; 0: the release's table has none modelled.
  double nvls_nvlink_us;     // NVLS's NVLink latency (its whole latency on one node)
  double nvls_tree_net_us;   // NVLS-tree's latency per network level (twice per log2(nodes))
};

// NCCL 2.7.5, src/graph/tuning.cc (NVIDIA/nccl commit 01afd20a77b5804e0ecf1042509dd9d20ebf9e93),
// the cost model's constants since it appeared (2.5) and the ones this model first re-derived.
constexpr Constants k2_7 = {
    {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}},
    {
        {{0.52, 1.2, 28}, {0.47, 1.9, 3.4}},  // NVLink
        {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},    // PCIe
        {{5.0, 8.5, 50}, {2.7, 4.0, 9.6}},    // network
    },
    1.0 / 4.0, 1.0 / 3.0, 0.7, 0.9, true, 0.915, 235.0, 0, 0, 0};

// NCCL 2.20.3, src/graph/tuning.cc (commit b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2): higher base
// latencies, network Simple hops 28 (tree) and 14 (ring), per-channel caps instead of the fixed
// tree and A100 caps, and a ring all-reduce counting 2 nodes network steps.
constexpr Constants k2_20 = {
    {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}},
    {
        {{0.6, 1.25, 28}, {0.6, 1.9, 3.4}},  // NVLink
        {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},   // PCIe
        {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}},  // network
    },
    1.0 / 4.0, 1.0 / 3.0, 0.7, 0.92, false, 120.0 / 128.0, 0, 2, 23, 14};

// NCCL 2.26: src/graph/tuning.cc as it stood between the Blackwell tables (2.25) and the tuner
// constants of 2.27 (ncclTunerConstantsDefaults, which keep these values through 2.29): tree
// Simple a base of 8.4 and hops of 4 (NVLink, PCIe) and 14 (network), LL at half the ring's
// bandwidth for every collective, LL128 at 0.92 whatever the GPUs per node.
constexpr Constants k2_26 = {
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}},
    {
        {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},  // NVLink
        {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},   // PCIe
        {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}},   // network
    },
    0.5, 0.5, 0.92, 0.92, false, 120.0 / 128.0, 0, 0, 23, 14};

const Constants& constants(NcclTable t) {
  switch (t) {
    case NcclTable::k2_7: return k2_7;
    case NcclTable::k2_20: return k2_20;
    case NcclTable::k2_26: return k2_26;
  }
  return k2_26;
}

// The tables' rows: tree and ring (NVLS and NVLS-tree have terms of their own, nvls_parts).
int index(NcclAlgorithm a) { return a == NcclAlgorithm::kTree ? kTree : kRing; }
int index(NcclProtocol p) { return p == NcclProtocol::kLL ? kLL : p == NcclProtocol::kLL128 ? kLL128 : kSimple; }

// Ring steps of `op` over `ranks` (NCCL's nsteps and nInterSteps with ranks = nodes).
int ring_steps(NcclOp op, int ranks) {
  switch (op) {
    case NcclOp::kAllReduce: return 2 * (ranks - 1);
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter: return ranks - 1;
    case NcclOp::kBroadcast:
    case NcclOp::kReduce: return ranks;
  }
  return ranks;
}

int floor_log2(int n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

// NCCL's per-channel speeds on compute capability 9.x (src/graph/search.cc, sm90SpeedArrayIntra
// and sm90SpeedArrayInter, GB/s): the search takes the fastest at which its graph fits the links.
constexpr double kSm90SpeedsIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm90SpeedsInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                       6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// The fastest of `speeds` (descending) at or below `limit`; 0 when none is.
template <std::size_t N>
double search_speed(const double (&speeds)[N], double limit) {
  for (double s : speeds) {
    if (s <= limit) return s;
  }
  return 0;
}

// NVLS and NVLS-tree (nccl_model.h): one channel per GPU of a node, each pulling at the search's
// speed; none where the release, the system or the op has no NVLS.
NcclParts nvls_parts(NcclOp op, double bytes, const NcclSystem& sys, NcclAlgorithm algorithm, const Constants& c) {
  const bool tree = algorithm == NcclAlgorithm::kNvlsTree;
  const int ppn = sys.gpus_per_node;
  if (!sys.nvls || c.nvls_nvlink_us <= 0 || ppn < 2) return NcclParts{-1, -1};
  if (tree ? (sys.nodes < 2 || op != NcclOp::kAllReduce)
           : (sys.nodes > 1 || (op != NcclOp::kAllReduce && op != NcclOp::kAllGather && op != NcclOp::kReduceScatter))) {
    return NcclParts{-1, -1};
  }
  // Each channel's head takes twice its speed of its own NVLinks and once of every other GPU's.
  const double nvlink_limit = sys.intra_gbs / (ppn + 1);
  const double speed = sys.nodes == 1 ? search_speed(kSm90SpeedsIntra, nvlink_limit)
                                      : search_speed(kSm90SpeedsInter, std::min(nvlink_limit, sys.inter_gbs / ppn));
  if (speed <= 0) return NcclParts{-1, -1};
  const double per_channel = tree && sys.nodes > 2 ? speed / 2 : speed;
  const double algbw_gbs = ppn * per_channel * 5.0 / 6.0;
  double latency_us = c.nvls_nvlink_us;
  if (tree) latency_us += 2 * floor_log2(sys.nodes) * c.nvls_tree_net_us;
  return NcclParts{latency_us * 1e-6, bytes / (algbw_gbs * 1e9)};
}

}  // namespace

const char* to_string(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce: return "all_reduce";
    case NcclOp::kBroadcast: return "broadcast";
    case NcclOp::kReduce: return "reduce";
    case NcclOp::kAllGather: return "all_gather";
    case NcclOp::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

NcclOp nccl_op(const std::string& name) {
  for (NcclOp op :
       {NcclOp::kAllReduce, NcclOp::kBroadcast, NcclOp::kReduce, NcclOp::kAllGather, NcclOp::kReduceScatter}) {
    if (name == to_string(op)) return op;
  }
  throw std::invalid_argument("unknown collective '" + name + "'");
}

NcclTable nccl_table(const NcclRelease& r) {
  const auto at_least = [&](int major, int minor) { return r.major > major || (r.major == major && r.minor >= minor); };
  if (at_least(2, 26)) return NcclTable::k2_26;
  if (at_least(2, 20)) return NcclTable::k2_20;
  return NcclTable::k2_7;
}

const char* to_string(NcclTable t) {
  switch (t) {
    case NcclTable::k2_7: return "2.7";
    case NcclTable::k2_20: return "2.20";
    case NcclTable::k2_26: return "2.26";
  }
  return "?";
}

const char* to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::kTree: return "tree";
    case NcclAlgorithm::kRing: return "ring";
    case NcclAlgorithm::kNvls: return "nvls";
    case NcclAlgorithm::kNvlsTree: return "nvls_tree";
  }
  return "?";
}

const char* to_string(NcclProtocol p) {
  return p == NcclProtocol::kLL ? "LL" : p == NcclProtocol::kLL128 ? "LL128" : "Simple";
}

double nccl_bus_factor(NcclOp op, int ranks) {
  if (ranks <= 1) return 0;  // one rank moves nothing (nccl-tests prints a broadcast's factor 1)
  return nccl_tests_bus_factor(to_string(op), ranks);
}

NcclParts nccl_parts(NcclOp op, double bytes, const NcclSystem& sys, NcclAlgorithm algorithm, NcclProtocol protocol) {
  const int n = sys.ranks();
  if (n <= 1 || bytes <= 0) return NcclParts{};
  if (algorithm == NcclAlgorithm::kNvls || algorithm == NcclAlgorithm::kNvlsTree) {
    if (protocol != NcclProtocol::kSimple) return NcclParts{-1, -1};
    return nvls_parts(op, bytes, sys, algorithm, constants(sys.nccl));
  }
  const int a = index(algorithm), p = index(protocol);
  if (algorithm == NcclAlgorithm::kTree && op != NcclOp::kAllReduce) return NcclParts{-1, -1};
  if (protocol == NcclProtocol::kLL128 && !sys.nvlink) return NcclParts{-1, -1};
  const int nodes = sys.nodes;
  const double ppn = sys.gpus_per_node;
  const Constants& c = constants(sys.nccl);

  // Bus bandwidth: the ring's slowest hop, then each algorithm's and protocol's share of it.
  const double intra = sys.intra_gbs / uplink_flows(op, sys);
  double bus = nodes == 1 ? intra : std::min(intra, sys.inter_gbs);
  if (sys.sm80 && c.sm80_cap > 0) bus = std::min(bus, c.sm80_cap);
  if (algorithm == NcclAlgorithm::kRing) {
    if (protocol == NcclProtocol::kLL) {
      bus *= (nodes > 1 || op == NcclOp::kAllReduce || op == NcclOp::kReduce) ? c.ring_ll : c.ring_ll_other;
    } else if (protocol == NcclProtocol::kLL128) {
      bus *= ppn < 2 ? c.ll128_one_per_node : 0.92;
    }
  } else {
    bus *= c.tree_share;
    if (c.tree_cap) {
      const bool ll128_sm80 = sys.sm80 && protocol == NcclProtocol::kLL128;
      bus = std::min(bus, nodes > 2 ? (ll128_sm80 ? 105.0 : 80.0) : (ll128_sm80 ? 130.0 : 110.0));
    }
    if (protocol == NcclProtocol::kLL) bus /= 3.8;
    if (protocol == NcclProtocol::kLL128) bus *= nodes == 1 ? 7.0 / 9.0 : c.tree_ll128_nodes;
  }
  const int nsteps = ring_steps(op, n);
  const double ratio = algorithm == NcclAlgorithm::kRing ? static_cast<double>(n) / nsteps : 0.5;
  const double algbw_gbs = bus * ratio;

  // Latency: a base plus the hops, intra-node hops on NVLink or PCIe, the rest on the network.
  const int intra_hw = sys.nvlink ? kNvlink : kPci;
  double intra_us = c.hop_us[intra_hw][a][p];
  if (nodes > 1 && protocol == NcclProtocol::kLL) intra_us *= 1.8;
  const double inter_us = c.hop_us[kNet][a][p];
  double latency_us = c.base_us[a][p];
  if (algorithm == NcclAlgorithm::kRing) {
    if (op == NcclOp::kBroadcast || op == NcclOp::kReduce) {
      // NCCL's model for rings whose channels differ: every step a hop, Simple at tree's chunk cost.
      const int hw = nodes == 1 ? intra_hw : kNet;
      const double hop = protocol == NcclProtocol::kSimple ? c.hop_us[hw][kTree][p] : c.hop_us[hw][a][p];
      latency_us += nsteps * hop;
    } else {
      int inter_steps = 0;
      if (nodes > 1) inter_steps = ring_steps(op, nodes) + (op == NcclOp::kAllReduce ? c.extra_inter_steps : 0);
      latency_us += (nsteps - inter_steps) * intra_us + inter_steps * inter_us;
    }
    if (protocol == NcclProtocol::kSimple && nodes > 1 && op == NcclOp::kAllReduce &&
        bytes >= n / 16.0 * 65536) {
      latency_us *= 1.9;  // the ring's plateau
    }
  } else {
    latency_us += 2 * ((ppn - 1) * intra_us + floor_log2(nodes) * inter_us);
  }
  return NcclParts{latency_us * 1e-6, bytes / (algbw_gbs * 1e9)};
}

int uplink_flows(NcclOp op, const NcclSystem& sys) {
  const int k = sys.gpus_per_uplink;
  if (k <= 1) return 1;
  // A broadcast or reduce is a chain: on one switch its root receives nothing and its last GPU
  // sends nothing, so k - 1 transfers cross the switch's link each way; a ring's every GPU sends
  // and receives at once: k.
  const bool chain = op == NcclOp::kBroadcast || op == NcclOp::kReduce;
  return chain && sys.nodes == 1 && k == sys.gpus_per_node ? k - 1 : k;
}

double nccl_seconds(NcclOp op, double bytes, const NcclSystem& sys, NcclAlgorithm a, NcclProtocol p) {
  const NcclParts parts = nccl_parts(op, bytes, sys, a, p);
  return parts.latency_s < 0 ? -1 : parts.latency_s + parts.transfer_s;
}

NcclTime nccl_fastest(NcclOp op, double bytes, const NcclSystem& sys) {
  NcclTime best;
  best.seconds = -1;
  for (NcclAlgorithm a : {NcclAlgorithm::kTree, NcclAlgorithm::kRing, NcclAlgorithm::kNvls, NcclAlgorithm::kNvlsTree}) {
    if (!sys.allows(a)) continue;
    for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kLL128, NcclProtocol::kSimple}) {
      const NcclParts parts = nccl_parts(op, bytes, sys, a, p);
      if (parts.latency_s < 0) continue;
      const double t = parts.latency_s + parts.transfer_s;
      if (best.seconds < 0 || t < best.seconds) best = NcclTime{a, p, t, parts};
    }
  }
  return best;
}

double nccl_pcie_gbs(int generation, int lanes) {
  // NCCL's lane speeds, in its 100 Mb/s units, for 2.5, 5, 8, 16, 32 and 64 GT/s.
  static constexpr double kLaneSpeed[] = {0, 15, 30, 60, 120, 240, 480};
  return lanes * kLaneSpeed[std::clamp(generation, 1, 6)] / 80;
}

double nccl_nvlink_gbs(int links, double compute_capability) {
  const double cc = compute_capability;
  double per_link = 40.1;                                  // 10.x and up
  if (cc < 7.0) per_link = 18.0;                           // 6.x
  else if (cc < 8.0) per_link = 20.0;                      // 7.x
  else if (std::abs(cc - 8.6) < 0.05) per_link = 12.0;     // 8.6 (GA102)
  else if (cc < 9.0) per_link = 20.0;                      // 8.0, 8.7, 8.9
  else if (cc < 10.0) per_link = 20.6;                     // 9.x
  return links * per_link;
}

NcclSystem NcclCluster::system(int ranks) const {
  NcclSystem sys;
  sys.gpus_per_node = std::min(ranks, gpus_per_node);
  sys.nodes = (ranks + gpus_per_node - 1) / gpus_per_node;
  if (sys.nodes > 1 && inter_gbs <= 0) {
    throw std::invalid_argument(std::to_string(ranks) + " ranks span " + std::to_string(sys.nodes) +
                                " nodes of " + name + ", which has no NICs between nodes");
  }
  sys.nvlink = nvlink;
  sys.intra_gbs = intra_gbs;
  sys.gpus_per_uplink = std::min(gpus_per_switch, sys.gpus_per_node);  // a node's GPUs fill a switch first
  sys.inter_gbs = sys.nodes > 1 ? inter_gbs : 0;
  sys.sm80 = sm80;
  sys.nvls = nvls;
  sys.algorithms = algorithms;
  sys.nccl = nccl;
  return sys;
}

namespace {

// The calibration fitted to `c`'s log. A sweep builds the cluster of every configuration from the
// same topology, so each thread keeps its last fit and reuses it for the same log on the same
// cluster (the fit is a pure function of the two).
NcclCalibration log_calibration(const NcclCluster& c) {
  struct Fitted {
    NcclCluster cluster;
    NcclCalibration calibration;
  };
  thread_local std::optional<Fitted> last;
  const CollectiveCurve& log = *c.log;
  const auto same = [&](const NcclCluster& o) {
    const auto same_point = [](const CurvePoint& a, const CurvePoint& b) {
      return a.bytes == b.bytes && a.time_s == b.time_s;
    };
    return o.gpus_per_node == c.gpus_per_node && o.nvlink == c.nvlink && o.intra_gbs == c.intra_gbs &&
           o.gpus_per_switch == c.gpus_per_switch &&
           o.inter_gbs == c.inter_gbs && o.sm80 == c.sm80 && o.nvls == c.nvls &&
           o.algorithms == c.algorithms && o.nccl == c.nccl &&
           o.log->op == log.op && o.log->ranks == log.ranks && o.log->gpus_per_thread == log.gpus_per_thread &&
           std::equal(o.log->points.begin(), o.log->points.end(), log.points.begin(),
                      log.points.end(), same_point);
  };
  if (!last || !same(last->cluster)) {
    last = Fitted{c, fit_nccl_calibration(nccl_op(log.op), c.system(log.ranks), log.points)};
    last->calibration.gpus_per_thread = std::max(1, log.gpus_per_thread);
  }
  return last->calibration;
}

}  // namespace

NcclCluster nccl_cluster(const Topology& t) {
  NcclCluster c;
  c.gpus_per_node = t.gpus_per_node;
  c.name = t.describe();
  const std::optional<double>& cc = t.gpu.compute_capability;
  c.sm80 = cc && std::abs(*cc - 8.0) < 0.05;
  // NVLink SHARP: NVSwitches and compute capability 9.0 or later (search.cc: NVS nodes, ccMin >= 90).
  c.nvls = t.fabric == Fabric::kNvswitch && cc && *cc >= 9.0 - 1e-9;
  if (t.nccl) c.nccl = nccl_table(*t.nccl);
  if (!t.nccl_algo.empty()) {
    c.algorithms = 0;
    for (NcclAlgorithm a :
         {NcclAlgorithm::kTree, NcclAlgorithm::kRing, NcclAlgorithm::kNvls, NcclAlgorithm::kNvlsTree}) {
      if (std::find(t.nccl_algo.begin(), t.nccl_algo.end(), to_string(a)) != t.nccl_algo.end()) {
        c.algorithms |= 1u << static_cast<int>(a);
      }
    }
  }
  if (t.fabric == Fabric::kPcie) {
    c.intra_gbs = nccl_pcie_gbs(t.gpu.link.pcie_generation, t.gpu.link.pcie_lanes);
    if (!t.p2p && t.pcie_switches > 0) c.gpus_per_switch = t.gpus_per_node / t.pcie_switches;
  } else {
    c.nvlink = true;
    // No compute capability in the catalog entry: NCCL's default per-link figure (8.0's).
    c.intra_gbs = nccl_nvlink_gbs(t.gpu.link.nvlink_links, cc.value_or(8.0));
  }
  if (t.nic) c.inter_gbs = t.nic->nics_per_node(t.gpus_per_node) * t.nic->gbps / 8;
  c.log = t.collectives_log;
  if (c.log && c.log->ranks >= 2 && c.log->points.size() >= 3) {
    c.calibration = log_calibration(c);
  }
  return c;
}

NcclTime NcclCluster::time(NcclOp op, double bytes, int ranks, int gpus_per_thread) const {
  const NcclSystem sys = system(ranks);
  return calibration ? nccl_calibrated(op, bytes, sys, *calibration, gpus_per_thread) : nccl_fastest(op, bytes, sys);
}

}  // namespace trainsim::hw
