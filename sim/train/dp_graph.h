#pragma once
// DataParallel: one process, one loader producing GLOBAL batches, N GPUs. Per iteration:
//   next batch (host) -> loop overhead (host) -> [N > 1, when fitted: DataParallel's host work,
//   GraphInputs::dp_host_per_replica_ns per replica] ->
//   N = 1: h2d (gpu0.copy) -> forward -> loss -> backward -> optimizer -> zero_grad, all on gpu0
//          (DataParallel with one device just calls the module);
//   N > 1: scatter: the batch is split like Tensor.chunk(N) (chunks of ceil(B/N), the last one
//          smaller, possibly fewer than N chunks; replicas = chunks) and each chunk copied
//          host-to-device on its GPU's copy engine;
//          replicate: parameters, then buffers, broadcast from GPU 0 to every replica in
//          coalesced chunks (broadcast_coalesced, 10 MiB, chunk closes at the limit) on the comm
//          streams;
//          forward on every replica (its chunk) -> gather: each replica's output (chunk * classes
//          * 4 bytes) copied to GPU 0 (a copy on gpu0.comm) -> loss on GPU 0 at the global batch
//          -> the output gradient scattered back (the same copies) -> backward on every replica
//          -> reduce-add of all gradients onto GPU 0 in coalesced chunks (reduce_add_coalesced,
//          10 MiB, chunk never passes the limit) once EVERY replica finished backward ->
//          optimizer and zero_grad on GPU 0 only.
// Device-to-device copies are not in the profile: the host-to-device curve stands in for
// them (0 on a CPU profile).

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
  StepLabels labels_;
  uint32_t gather_label_ = 0, scatter_grad_label_ = 0, dp_host_label_ = 0;
  std::vector<des::OpId> scratch_;
};

}  // namespace trainsim::train
