#pragma once
// DistributedDataParallel: one process per rank, each with its own loader. Per iteration, on
// every rank r:
//   next batch (host_r) -> loop overhead (host_r) -> h2d (copy_r) -> buffer broadcast
//   (collective on every comm_r; ranks > 1 with buffers) -> forward layers (compute_r) -> loss ->
//   backward layers in reverse; each bucket's all-reduce (collective on every comm_r) is ready
//   once the backward of its GradientBucket::ready_after_layer is done on every rank, and the
//   comm streams run the buckets in order -> optimizer (after the last bucket's all-reduce and
//   the backward) -> zero_grad.
// With SyncBatchNorm (GraphInputs::sync_batchnorm, ranks > 1), each layer's forward and backward
// is followed by its BatchNorms' statistics collectives on every comm stream (sync_batchnorm.h),
// which the next layer waits for on every rank.
// DistributedSampler: each rank gets ceil(samples / N) samples per epoch (padded by repeating
// samples), in batches of min(b, that) with a smaller last batch if it does not divide.
// Across nodes only GraphInputs::simulated_ranks ranks (one node's) have ops: every rank runs the
// same iteration, so the others would repeat them; the collectives are priced on all N.

#include <memory>
#include <vector>

#include "train/buckets.h"
#include "train/graph_inputs.h"
#include "train/training_graph.h"

namespace trainsim::train {

class DdpGraph final : public IterationGraph {
 public:
  DdpGraph(TrainingGraph& graph, const GraphInputs& in);

  int64_t iterations() const override { return iterations_; }
  int64_t full_iterations() const override { return full_iterations_; }
  IterationOps add_iteration(int64_t k) override;
  int64_t last_loader_batch_built() const override { return last_loader_batch_; }
  int loader_workers() const override { return in_.workers; }

  int64_t samples_per_rank() const { return samples_per_rank_; }
  int64_t rank_batch() const { return rank_batch_; }
  int64_t last_rank_batch() const { return last_rank_batch_; }
  const std::vector<GradientBucket>& buckets() const { return buckets_; }

 private:
  struct Rank {
    des::ResourceId host, copy, compute, comm;
    std::unique_ptr<LoaderPipeline> loader;  // null when loading inline
    des::OpId previous_end = des::kNoOp;
  };
  int64_t batch_of(int64_t k) const { return k == iterations_ - 1 ? last_rank_batch_ : rank_batch_; }
  void add_loader_batch(int64_t j, const std::vector<des::OpId>& slot_freed_by);
  // add_iteration's phases, in the order it adds their ops. Per rank: batch k handed to the loop
  // (or built inline), and on the device.
  struct Arrivals {
    std::vector<des::OpId> handed_over, on_device;
  };
  Arrivals add_batch_arrivals(int64_t k, int64_t batch, const StepDurations& d, int32_t tag);
  // Forward, loss and backward on every rank after `prev`, launched through `issued` (moved on):
  // each rank's backward op per layer, and each rank's last one.
  struct Passes {
    std::vector<std::vector<des::OpId>> backward;  // [rank][layer]
    std::vector<des::OpId> last;
  };
  Passes add_passes(const StepDurations& d, int32_t tag, std::vector<des::OpId> prev, std::vector<des::OpId>& issued);
  // The buckets' all-reduces, each once every rank's gradients in it are ready: the last one.
  des::OpId add_bucket_all_reduces(const std::vector<std::vector<des::OpId>>& backward, int32_t tag);

  TrainingGraph& g_;
  const GraphInputs& in_;
  StepDurationCache durations_;
  int64_t samples_per_rank_ = 0;
  int64_t rank_batch_ = 0;
  int64_t last_rank_batch_ = 0;
  int64_t iterations_ = 0;
  int64_t full_iterations_ = 0;
  int64_t last_loader_batch_ = -1;
  std::vector<Rank> ranks_;
  std::vector<des::ResourceId> comms_;
  std::vector<GradientBucket> buckets_;
  std::vector<des::SimTime> bucket_ns_;
  std::vector<uint32_t> bucket_labels_;
  des::SimTime buffer_broadcast_ns_ = 0;
  bool broadcast_buffers_ = false;
  StepLabels labels_;
  uint32_t broadcast_label_ = 0;
  // SyncBatchNorm per layer (empty when off or on one rank): collective time and labels.
  std::vector<des::SimTime> sync_forward_ns_;
  std::vector<des::SimTime> sync_backward_ns_;
  std::vector<uint32_t> sync_forward_labels_;
  std::vector<uint32_t> sync_backward_labels_;
  std::vector<des::OpId> scratch_;
};

}  // namespace trainsim::train
