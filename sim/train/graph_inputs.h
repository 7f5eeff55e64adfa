#pragma once
// What the strategies' iteration graphs are built from: the profile's models, ready to price ops.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "des/op_scheduler.h"
#include "des/time.h"
#include "hw/collective_model.h"
#include "hw/curve.h"
#include "format/profile.h"
#include "train/step_model.h"

namespace trainsim::train {

struct GraphInputs {
  const ModelProfile& model;
  const StepModel& steps;
  const hw::CollectiveModel& collectives;
  const hw::MeasuredCurve* h2d = nullptr;  // host-to-device curve (pinned, else pageable); nullptr: none
  int gpus = 1;
  // DDP: the ranks whose ops are simulated: one node's, or one of them standing for the node's
  // identical ranks (the others are its copies: each rank has the same DistributedSampler share,
  // each node the same host); collectives and the sampler are of all `gpus`. 0: every rank.
  int simulated_ranks = 0;
  int64_t batch_per_gpu = 1;
  int64_t train_samples = 1;
  int workers = 0;
  double loader_rate_per_worker = 0;  // samples/s of one worker of one loader (workers > 0)
  double inline_rate = 0;             // samples/s loading inline in the training loop (workers == 0)
  des::SimTime loader_startup_ns = 0; // each worker starts this long before its first batch
  // Starting the workers as it costs each training process (PyTorch forks them at every epoch's
  // iter(loader)): the fork itself, a host op before the first batch, and the copy-on-write
  // faults the first iteration then pays, a host op after it. 0: none.
  des::SimTime fork_ns = 0;
  des::SimTime cow_ns = 0;
  bool sync_batchnorm = false;        // DDP: SyncBatchNorm collectives per BatchNorm layer
  // DataParallel over N > 1 devices: host work per replica per iteration beyond the profile's
  // loop (RunSpec::dp_host_per_replica_s, from a fit); 0: none.
  des::SimTime dp_host_per_replica_ns = 0;
  // DataParallel's host mechanisms as the profile measured them (PytorchLoop::forward_calls and
  // replicate_s, the GIL block; docs/HOST.md); all 0 when it did not, or for another trainer.
  //   replicate's Python work, per replica per iteration, on the loop's thread;
  //   in the forward, per call into ATen of each replica after the first, the Python time per call
  //   (the first replica's is in the loop's measured time), and while 2+ replicas run, the GIL's
  //   hand-over per call of every replica; both held under the GIL, on the loop's thread.
  des::SimTime dp_replicate_per_replica_ns = 0;
  double dp_forward_calls = 0;         // calls from Python into ATen in one forward of a replica
  des::SimTime dp_python_call_ns = 0;  // the GIL held per call
  des::SimTime dp_gil_handoff_ns = 0;  // per call, on top, while 2+ threads run Python

  // The host's cores, shared by processor sharing (des pools; docs/SIMULATOR.md "Host cores").
  // Unset when the profile does not say how many cores the host has. Every loader worker and
  // every process's host thread draws one core; on a CPU device a rank's compute stream draws
  // `compute_cores` (its intra-op threads) and its comm stream `comm_cores` (Gloo's thread).
  std::optional<des::PoolId> host_pool{};
  double compute_cores = 0;  // 0: the device is not the host (GPU)
  double comm_cores = 0;

  // Host-to-device copy of `bytes`; 0 without a copy engine.
  des::SimTime h2d_ns(double bytes) const {
    return h2d == nullptr ? 0 : des::to_ns(h2d->time_at(bytes));
  }
};

// One step's durations in ns at one batch size.
struct StepDurations {
  std::vector<des::SimTime> forward;   // per layer
  std::vector<des::SimTime> backward;  // per layer
  des::SimTime loss = 0;
  des::SimTime zero_grad = 0;
  des::SimTime optimizer = 0;
  des::SimTime overhead = 0;
  // The host's issue time of each part (StepTimes::host_*); all empty / 0 without host issue
  // times, and then no issue ops are built.
  std::vector<des::SimTime> host_forward;
  std::vector<des::SimTime> host_backward;
  des::SimTime host_loss = 0;
  des::SimTime host_zero_grad = 0;
  des::SimTime host_optimizer = 0;
  bool host_issue() const { return !host_forward.empty(); }
  // A part's issue time as add_launched takes it: -1 (no issue op) without host issue times.
  des::SimTime issue_forward(std::size_t l) const { return host_issue() ? host_forward[l] : -1; }
  des::SimTime issue_backward(std::size_t l) const { return host_issue() ? host_backward[l] : -1; }
  des::SimTime issue_loss() const { return host_issue() ? host_loss : -1; }
  des::SimTime issue_optimizer() const { return host_issue() ? host_optimizer : -1; }
  des::SimTime issue_zero_grad() const { return host_issue() ? host_zero_grad : -1; }
};

// StepModel::at in ns, computed once per batch size (an epoch uses at most a few).
class StepDurationCache {
 public:
  explicit StepDurationCache(const StepModel& steps) : steps_(steps) {}
  const StepDurations& at(int64_t batch);

 private:
  const StepModel& steps_;
  std::map<int64_t, StepDurations> cache_;
};

}  // namespace trainsim::train
