#pragma once
// Profiles for GPUs nobody profiled (docs/FIT.md): a measured profile transferred to another
// catalog GPU, or a profile built from the model description, a GPU's roofline and the device
// parameters a fit determines. Either way the simulator then runs on an ordinary Profile.

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fit/roofline.h"
#include "format/profile.h"
#include "io/config.h"
#include "io/gpu_catalog.h"
#include "train/simulator.h"

namespace trainsim::fit {

// What a fit can determine about a device and its host. Each has an "absent" value (what the
// simulation uses when the parameter is not in play): 0 for every cost; the efficiency has none.
enum class Param {
  kEfficiency,     // fraction of the roofline reached (unknown device: effective FLOP/s)
  kOverhead,       // per-iteration host cost of the training loop (launches, Python), s
  kLoaderSample,   // one loader worker's time per sample (decode, augment, collate), s
  kLoaderStartup,  // starting the loader's workers at every epoch (non-persistent), s
  kLinkBusbw,      // collective bus bandwidth between GPUs (nccl-tests busbw), GB/s
  kLinkLatency,    // per-step collective latency, s
  kDpReplica,      // DataParallel's host work per replica per iteration (replicate, scatter,
                   // threads, gather), s
};
inline constexpr int kParamCount = 7;

struct ParamInfo {
  const char* name;  // as printed, e.g. "compute_efficiency"
  const char* unit;  // as printed
  double scale;      // printed value = value * scale
};
// `named_gpu`: the efficiency is a fraction of a catalog GPU's roofline, else a FLOP rate.
ParamInfo param_info(Param p, bool named_gpu);

using ParamValues = std::array<double, kParamCount>;
inline double& at(ParamValues& v, Param p) { return v[static_cast<std::size_t>(p)]; }
inline double at(const ParamValues& v, Param p) { return v[static_cast<std::size_t>(p)]; }

// The roofline of one model on one device at a grid of batches (1, 2, 3, 4, 6, 8, ..., up to
// max_batch or beyond), at full efficiency: computed once, scaled by the parameters.
class RooflineTable {
 public:
  RooflineTable(std::string model, std::optional<GpuSpec> gpu, int64_t max_batch);
  const std::string& model() const { return model_; }
  const std::optional<GpuSpec>& gpu() const { return gpu_; }
  const std::vector<int64_t>& batches() const { return batches_; }
  const std::vector<StepRoofline>& steps() const { return steps_; }

 private:
  std::string model_;
  std::optional<GpuSpec> gpu_;
  std::vector<int64_t> batches_;
  std::vector<StepRoofline> steps_;
};

// A profile of the table's device with the given parameter values: every layer's time is its
// roofline time / efficiency, the loop adds the per-iteration overhead, the loader builds a
// sample in loader_sample_s per worker, the host-to-device copy runs at the GPU's PCIe peak,
// memory is the model's static memory plus its saved activations. Link and DataParallel
// parameters do not enter the profile: see run_spec_for.
Profile roofline_profile(const RooflineTable& table, const ParamValues& values);

// The spec with the fitted link (as the assumed interconnect, overriding measured curves) and
// DataParallel's per-replica host cost applied. `link` false: the spec's own interconnect stays.
RunSpec run_spec_for(RunSpec spec, const ParamValues& values, bool link);

// A measured profile of catalog GPU `from` moved to catalog GPU `to` (docs/FIT.md "Transfer"):
// each layer's forward and backward time at each measured batch is multiplied by the ratio of
// its roofline time on `to` to that on `from` (per-op: compute-bound ops by the FLOP rate and
// wave fill, memory-bound ones by the bandwidth), as are the loss, the optimizer step and
// zero_grad; the training loops keep what they measured beyond their parts (per-iteration host
// overhead carries over); host-to-device copies scale by the PCIe peak; memory checks use `to`'s
// size (the measured out-of-memory batch no longer applies); multi-rank collective curves are
// dropped (the config's or the catalog's interconnect of `to` applies). `from` == `to`: the
// profile unchanged.
Profile transfer_profile(const Profile& measured, const std::string& model, const GpuSpec& from,
                         const GpuSpec& to);

// An interconnect from the catalog's link figures of `gpu`: NVLink's per-direction peak where the
// GPU has NVLink, else PCIe's; latency unknown (0). Labelled assumed in every note.
InterconnectAssumption catalog_interconnect(const GpuSpec& gpu);

}  // namespace trainsim::fit
