#pragma once
// DataParallel: one process, one loader producing GLOBAL batches, N GPUs, in the order of
// PyTorch's DataParallel.forward (docs/SIMULATOR.md "DataParallel", docs/HOST.md). Per iteration:
//   next batch (host) -> loop overhead (host) -> [N > 1, when fitted: DataParallel's Python work,
//   GraphInputs::dp_host_per_replica_ns per replica] ->
//   N = 1: h2d (gpu0.copy) -> forward -> loss -> backward -> optimizer -> zero_grad on gpu0
//          through the launch queue (DataParallel with one device just calls the module);
//   N > 1: the global batch copied host-to-device to GPU 0, then scatter: split like
//          Tensor.chunk(N) (chunks of ceil(B/N), the last smaller, possibly fewer than N chunks;
//          replicas = chunks), each other chunk copied GPU 0 -> its GPU (device to device);
//          replicate: parameters, then buffers, broadcast from GPU 0 in coalesced chunks
//          (broadcast_coalesced, 10 MiB, a chunk closes at the limit) on the comm streams;
//          [where the profile measured it: replicate's Python, per replica, on the host] ->
//          forward: the host thread issues layer l of every replica in turn (parallel_apply's
//          threads share the GIL; where measured, each call into ATen also holds the GIL for the
//          hand-over and, after the first replica, its Python: GraphInputs::dp_*), each
//          replica's device runs behind -> gather: outputs copied to
//          GPU 0 -> loss on GPU 0 at the global batch -> the output gradient copied back ->
//          backward on every replica, issued by its device's autograd thread (gpuI.autograd) in
//          parallel -> reduce-add of all gradients onto GPU 0 in coalesced chunks
//          (reduce_add_coalesced, 10 MiB, a chunk never passes the limit) once EVERY replica
//          finished backward -> optimizer and zero_grad on GPU 0, issued by the host once every
//          autograd thread is done.
// Issue ops exist only where the profile has the host's issue times (StepDurations::host_issue).
// Device-to-device copies cost a 2-rank broadcast on the same link (the collective model).

#include <map>
#include <memory>
#include <vector>

#include "train/graph_inputs.h"
#include "train/training_graph.h"

namespace trainsim::train {

class DpGraph final : public IterationGraph {
 public:
  DpGraph(TrainingGraph& graph, const GraphInputs& in);

  int64_t iterations() const override { return iterations_; }
  int64_t full_iterations() const override { return full_iterations_; }
  IterationOps add_iteration(int64_t k) override;
  int64_t last_loader_batch_built() const override { return last_loader_batch_; }
  int loader_workers() const override { return in_.workers; }

  int64_t global_batch() const { return global_batch_; }
  int64_t last_global_batch() const { return last_global_batch_; }
  // Tensor.chunk: sizes of the per-replica chunks of a batch of `samples`.
  std::vector<int64_t> chunk_sizes(int64_t samples) const;

 private:
  struct Gpu {
    des::ResourceId compute, copy, comm;
  };
  // Replicate and reduce for a given number of replicas (the last batch may use fewer).
  struct ReplicaCollectives {
    std::vector<des::SimTime> replicate_ns, reduce_ns;
    std::vector<uint32_t> replicate_labels, reduce_labels;
  };
  const ReplicaCollectives& collectives_for(int replicas);
  int64_t batch_of(int64_t k) const {
    return k == iterations_ - 1 ? last_global_batch_ : global_batch_;
  }
  void add_loader_batch(int64_t j, des::OpId slot_freed_by);
  des::OpId add_single_gpu_step(int64_t batch, int32_t tag, des::OpId prev);
  des::OpId add_replicated_step(int64_t batch, int32_t tag, des::OpId prev);
  // add_replicated_step's phases, in the order it adds their ops. The batch to GPU 0, each other
  // chunk from there to its replica, and the modules replicated.
  struct Scattered {
    std::vector<des::OpId> input_ready;  // per replica
    des::OpId on_gpu0 = des::kNoOp, replicated = des::kNoOp;
  };
  Scattered add_scatter(int64_t batch, const std::vector<int64_t>& chunks, const ReplicaCollectives& coll,
                        int32_t tag, des::OpId launched);
  // The replicas' forwards, issued by `host` layer by layer; each replica's last layer.
  std::vector<des::OpId> add_parallel_forward(const std::vector<int64_t>& chunks, Launch host,
                                              const Scattered& in, int32_t tag);
  // The outputs gathered on GPU 0, the loss there (its launch moves `issued`) and the output
  // gradient scattered back: the op after which every replica's backward may start.
  des::OpId add_gather_and_loss(int64_t batch, const std::vector<int64_t>& chunks,
                                const std::vector<des::OpId>& forward, des::OpId& issued, int32_t tag);
  // Each replica's backward, issued by its device's autograd thread: per replica its last layer
  // and the issue of it.
  struct Backwards {
    std::vector<des::OpId> end, issued;
  };
  Backwards add_replica_backwards(const std::vector<int64_t>& chunks, des::OpId grad_ready, des::OpId issued,
                                  int32_t tag);
  std::vector<des::ResourceId> comm_streams(std::size_t replicas) const;
  des::SimTime peer_copy_ns(double bytes) const;
  // GraphInputs::dp_forward_calls per layer of a replica's forward at `batch`, computed once per
  // batch: each call holds the GIL for the hand-over, and for its Python on replicas after the first.
  const std::vector<double>& layer_calls(int64_t batch);

  TrainingGraph& g_;
  const GraphInputs& in_;
  StepDurationCache durations_;
  int64_t global_batch_ = 0;
  int64_t last_global_batch_ = 0;
  int64_t iterations_ = 0;
  int64_t full_iterations_ = 0;
  int64_t last_loader_batch_ = -1;
  des::ResourceId host_ = 0;
  std::unique_ptr<LoaderPipeline> loader_;
  des::OpId previous_end_ = des::kNoOp;
  std::vector<Gpu> gpus_;
  std::vector<int64_t> param_chunks_, buffer_chunks_, gradient_chunks_;  // bytes
  std::map<int, ReplicaCollectives> collectives_;
  std::map<int64_t, std::vector<double>> layer_calls_;  // layer_calls(batch)
  StepLabels labels_;
  uint32_t gather_label_ = 0, scatter_grad_label_ = 0, scatter_input_label_ = 0, dp_host_label_ = 0;
  uint32_t replicate_host_label_ = 0;
  std::vector<des::ResourceId> autograd_;  // per GPU: the autograd engine's thread issuing its backward
  std::vector<des::OpId> scratch_;
};

}  // namespace trainsim::train
