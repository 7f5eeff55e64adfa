#pragma once
// The pieces every strategy's iteration graph is built from: the engine and its ops, the names
// of resources and ops (for the trace), the data-loader pipeline, and the interface the epoch
// runner drives.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "des/engine.h"
#include "des/op_scheduler.h"
#include "format/profile.h"

namespace trainsim::train {

// What an op is, shared by every op with the same label (all iterations, all ranks).
struct OpLabel {
  std::string name;      // e.g. "fwd layer2.0", "allreduce bucket 1 (25.3 MiB)"
  std::string category;  // "compute", "comm", "copy", "loader", "host"
  bool collective = false;
  double bus_bytes = 0;  // per rank, one op (nccl-tests bus bytes; collectives only)
  bool sync_batchnorm = false;  // SyncBatchNorm statistics exchange (SimResult::sync_bn_s)
};

// Engine + ops + names. Ops' tag is the iteration (the batch index for loader ops).
class TrainingGraph {
 public:
  TrainingGraph() : ops(engine) {}
  TrainingGraph(const TrainingGraph&) = delete;
  TrainingGraph& operator=(const TrainingGraph&) = delete;

  des::ResourceId add_resource(std::string name);
  // add_resource + attach_to_pool(pool, cores) when a pool is given and cores > 0.
  des::ResourceId add_resource(std::string name, std::optional<des::PoolId> pool, double cores);
  uint32_t add_label(OpLabel label);
  const std::string& resource_name(des::ResourceId r) const { return resource_names_[r]; }
  const OpLabel& label(uint32_t id) const { return labels_[id]; }

  des::Engine engine;
  des::OpScheduler ops;

  // Device 0's streams: what SimResult's compute/comm metrics measure.
  des::ResourceId device0_compute = 0;
  des::ResourceId device0_copy = 0;
  des::ResourceId device0_comm = 0;

 private:
  std::vector<std::string> resource_names_;
  std::vector<OpLabel> labels_;
};

// Starting the epoch's loader workers on a process's host thread (GraphInputs::fork_ns): the
// op forking them, or kNoOp when there is nothing to fork.
des::OpId add_fork_op(TrainingGraph& graph, des::ResourceId host, des::SimTime fork_ns, uint32_t label);

// Labels every strategy uses. Per-layer labels are consecutive: forward0 + layer index.
struct StepLabels {
  uint32_t forward0 = 0;
  uint32_t backward0 = 0;
  uint32_t loss = 0;
  uint32_t optimizer = 0;
  uint32_t zero_grad = 0;
  uint32_t overhead = 0;     // loop overhead, on the host thread
  uint32_t h2d = 0;
  uint32_t next_batch = 0;   // zero-length: the loop takes a prefetched batch
  uint32_t inline_load = 0;  // workers = 0: the loop builds the batch itself
  uint32_t fork = 0;         // starting the loader's workers (iter(loader) forks them)
  uint32_t cow = 0;          // copy-on-write faults after the fork (first iteration)
  // The host issuing each part (launch queue, StepDurations::host_issue): "launch fwd stem"...
  uint32_t launch_forward0 = 0;
  uint32_t launch_backward0 = 0;
  uint32_t launch_loss = 0;
  uint32_t launch_optimizer = 0;
  uint32_t launch_zero_grad = 0;

  static StepLabels add(TrainingGraph& graph, const ModelProfile& model);
};

// The launch queue (docs/SIMULATOR.md "The launch queue"): a host thread issues a part, an op of
// `host_ns` on `thread` after the thread's previous issue (`issued`, updated), and the part's
// device op (`device_ns` on `device`) starts once it is issued and `deps` are done; the host goes
// on issuing without waiting for the device. host_ns < 0: the profile has no issue times, no
// issue op is built and the device op waits for `deps` alone. Returns the device op.
struct Launch {
  des::ResourceId thread;
  des::OpId& issued;
};
des::OpId add_launched(TrainingGraph& graph, Launch host, des::SimTime host_ns, uint32_t launch_label,
                       des::ResourceId device, des::SimTime device_ns, std::initializer_list<des::OpId> deps,
                       int32_t tag, uint32_t label);

// W workers building whole batches, round robin, at most 2W batches outstanding (PyTorch's
// prefetch_factor 2 per worker): the op building batch j may start once batch j - 2W was handed
// to the training loop, and each worker builds its batches in order. Each worker first starts
// up (`startup_ns`: non-persistent workers are started again every epoch), then the first 2W
// batches go (the first batch's latency is exposed). Each worker draws one core of `pool`.
class LoaderPipeline {
 public:
  // `prefix` names the worker tracks ("loader" -> "loader.worker0"...). workers >= 1.
  // The workers start once `started_by` is done (kNoOp: at time 0).
  LoaderPipeline(TrainingGraph& graph, const std::string& prefix, int workers,
                 double samples_per_s_per_worker, des::SimTime startup_ns,
                 std::optional<des::PoolId> pool, des::OpId started_by = des::kNoOp);

  // Adds the op building batch `batch_index` of `samples` samples; `slot_freed_by` is the op
  // handing batch batch_index - 2W to the loop (des::kNoOp for the first 2W batches).
  void add_batch(int64_t batch_index, int64_t samples, des::OpId slot_freed_by);
  // The op that built the oldest batch not yet taken; removes it from the pipeline.
  des::OpId take_next();
  int workers() const { return static_cast<int>(workers_.size()); }
  des::SimTime batch_ns(int64_t samples) const;

 private:
  TrainingGraph& graph_;
  std::vector<des::ResourceId> workers_;
  double samples_per_s_per_worker_;
  uint32_t label_;
  std::vector<des::OpId> started_;  // per worker: its start-up op (kNoOp without one)
  std::size_t next_worker_ = 0;  // round robin continues across fast-forwards
  std::deque<des::OpId> built_;  // batches built or being built, oldest first
};

// The ops of one iteration that the epoch runner watches.
struct IterationOps {
  std::vector<des::OpId> end_ops;        // every rank's last op
  des::OpId loop_end = des::kNoOp;       // rank 0's (device 0's) last op
  des::OpId batch_ready = des::kNoOp;    // rank 0 has its batch (the loop stops waiting)
};

// One strategy's training iteration as ops. add_iteration(k) must be called for k = 0, 1, 2...
// in order (after a fast-forward the runner continues with larger k: the graph builds iteration
// k as the successor of the last one built).
class IterationGraph {
 public:
  virtual ~IterationGraph() = default;
  virtual int64_t iterations() const = 0;
  virtual int64_t full_iterations() const = 0;  // iterations with a full (not the last partial) batch
  virtual IterationOps add_iteration(int64_t k) = 0;
  // Highest batch index whose loader op exists (-1: none, e.g. loading inline).
  virtual int64_t last_loader_batch_built() const = 0;
  virtual int loader_workers() const = 0;
};

}  // namespace trainsim::train
