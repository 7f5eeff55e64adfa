#pragma once
// A cluster's own nccl-tests log calibrates NCCL's cost model to that cluster (docs/SCALE.md
// "Calibrated by the cluster's own log").
//
// NCCL picks the algorithm and protocol by its own model on its own link ratings
// (hw/nccl_model.h); the cluster then delivers that choice at its own speed:
//   t = overhead + latency_scale x latency(a, p) + transfer(a, p) / bandwidth_scale
// overhead:        seconds per call outside NCCL's model (the kernel launch and the host's work;
//                  in a log run with nGpus > 1, one thread launches every GPU's part: the
//                  overhead of a call launching g GPUs is g / nGpus of the log's),
// latency_scale:   NCCL's base and hop latencies on this cluster,
// bandwidth_scale: the algorithm bandwidth of the link class that bounds the log's ring
//                  (bounding_link).
// With the choice fixed the time is linear in (overhead, latency_scale, 1 / bandwidth_scale):
// the three are fitted by non-negative least squares of the relative error over the log's
// sizes (every subset of them that keeps 1 / bandwidth_scale is solved; the best with no
// negative value is kept).
//
// On another op or rank count of the same cluster, overhead and latency_scale apply as they are,
// bandwidth_scale where that system's ring is bounded by the same link class (else 1: the log
// never saw that link).

#include <string>
#include <vector>

#include "format/profile.h"
#include "hw/nccl_model.h"

namespace trainsim::hw {

// The link class that bounds a ring on `system`: intra-node on one node, inter-node with one GPU
// per node, else the slower of the intra-node path and a node's NICs (intra-node when equal).
// LinkClass and NcclCalibration are declared in hw/nccl_model.h (a cluster carries its calibration).
LinkClass bounding_link(const NcclSystem& system);
const char* to_string(LinkClass c);  // "intra-node", "inter-node"

// Fits the calibration to `points` (bytes, seconds) of `op` run on `log_system`. Throws
// std::invalid_argument with fewer than 3 usable points (bytes > 0, time > 0) or one rank.
NcclCalibration fit_nccl_calibration(NcclOp op, const NcclSystem& log_system, const std::vector<CurvePoint>& points);

// NCCL's choice on `system` (nccl_fastest), priced with the calibration, for a call whose thread
// launches `gpus_per_thread` GPUs: the overhead scales with them from the log's (0: as the log ran).
NcclTime nccl_calibrated(NcclOp op, double bytes, const NcclSystem& system, const NcclCalibration& calibration,
                         int gpus_per_thread = 0);

// "overhead 40.1 us, latency x1.05, intra-node bandwidth x0.74 (fit over 25 sizes: 6.2% rms)"
std::string describe(const NcclCalibration& calibration);

}  // namespace trainsim::hw
