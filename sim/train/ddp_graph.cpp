#include "train/ddp_graph.h"

#include <algorithm>

#include "io/config.h"
#include "train/format_bytes.h"
#include "train/sync_batchnorm.h"

namespace trainsim::train {

using des::kNoOp;
using des::OpId;

DdpGraph::DdpGraph(TrainingGraph& graph, const GraphInputs& in)
    : g_(graph), in_(in), durations_(in.steps) {
  const int64_t n = in.gpus;
  samples_per_rank_ = ceil_div(in.train_samples, n);  // ceil(S / N)
  rank_batch_ = std::min(in.batch_per_gpu, samples_per_rank_);  // a batch > the share is one batch
  iterations_ = ceil_div(samples_per_rank_, rank_batch_);
  last_rank_batch_ = samples_per_rank_ - (iterations_ - 1) * rank_batch_;
  full_iterations_ = last_rank_batch_ == rank_batch_ ? iterations_ : iterations_ - 1;

  labels_ = StepLabels::add(g_, in.model);
  const int simulated = in.simulated_ranks > 0 ? std::min(in.simulated_ranks, in.gpus) : in.gpus;
  for (int r = 0; r < simulated; ++r) {
    const std::string gpu = "gpu" + std::to_string(r);
    Rank rank;
    rank.host = g_.add_resource(gpu + ".host", in.host_pool, 1.0);
    rank.copy = g_.add_resource(gpu + ".copy");
    rank.compute = g_.add_resource(gpu + ".compute", in.host_pool, in.compute_cores);
    rank.comm = g_.add_resource(gpu + ".comm", in.host_pool, in.comm_cores);
    if (in.workers > 0) {
      // iter(loader) forks the workers before the loop asks for its first batch.
      rank.previous_end = add_fork_op(g_, rank.host, in.fork_ns, labels_.fork);
      rank.loader = std::make_unique<LoaderPipeline>(g_, gpu + ".loader", in.workers,
                                                     in.loader_rate_per_worker, in.loader_startup_ns,
                                                     in.host_pool, rank.previous_end);
    }
    comms_.push_back(rank.comm);
    ranks_.push_back(std::move(rank));
  }
  g_.device0_compute = ranks_[0].compute;
  g_.device0_copy = ranks_[0].copy;
  g_.device0_comm = ranks_[0].comm;

  // Buffers (BatchNorm running statistics) broadcast from rank 0 at every forward.
  double buffer_bytes = 0;
  for (const LayerProfile& l : in.model.layers) buffer_bytes += static_cast<double>(l.buffer_bytes);
  broadcast_buffers_ = in.gpus > 1 && buffer_bytes > 0;
  if (broadcast_buffers_) {
    buffer_broadcast_ns_ = des::to_ns(
        in.collectives.seconds(hw::CollectiveOp::kBroadcast, in.gpus, buffer_bytes));
    broadcast_label_ = g_.add_label(
        OpLabel{"broadcast buffers (" + format_bytes(buffer_bytes) + ")", "comm", true,
                hw::bus_bytes(hw::CollectiveOp::kBroadcast, buffer_bytes, in.gpus)});
  }

  // The reducer's own assignment when measure recorded it, else PyTorch's rule over the layers.
  buckets_ = in.model.ddp_buckets.empty() ? ddp_buckets(in.model) : recorded_ddp_buckets(in.model);
  for (std::size_t j = 0; j < buckets_.size(); ++j) {
    const double bytes = static_cast<double>(buckets_[j].bytes);
    bucket_ns_.push_back(
        des::to_ns(in.collectives.seconds(hw::CollectiveOp::kAllReduce, in.gpus, bytes)));
    bucket_labels_.push_back(g_.add_label(
        OpLabel{"allreduce bucket " + std::to_string(j) + " (" + format_bytes(bytes) + ")",
                "comm", true, hw::bus_bytes(hw::CollectiveOp::kAllReduce, bytes, in.gpus)}));
  }

  // SyncBatchNorm: one op per layer and direction on every comm stream (its BatchNorms' collectives).
  if (in.sync_batchnorm && in.gpus > 1) {
    for (const LayerProfile& layer : in.model.layers) {
      const SyncBatchNormCost cost = sync_batchnorm_cost(layer, in.gpus, in.collectives);
      const std::string count = std::to_string(cost.batchnorms);
      sync_forward_ns_.push_back(des::to_ns(cost.forward_s));
      sync_backward_ns_.push_back(des::to_ns(cost.backward_s));
      OpLabel forward{"syncbn fwd " + layer.name + " (" + count + " all-gathers)", "comm", true,
                      cost.forward_bus_bytes};
      forward.sync_batchnorm = true;
      OpLabel backward{"syncbn bwd " + layer.name + " (" + count + " all-reduces)", "comm", true,
                       cost.backward_bus_bytes};
      backward.sync_batchnorm = true;
      sync_forward_labels_.push_back(g_.add_label(forward));
      sync_backward_labels_.push_back(g_.add_label(backward));
    }
  }

  // The first 2W batches start with the epoch.
  if (in.workers > 0) {
    const std::vector<OpId> none(ranks_.size(), kNoOp);
    for (int64_t j = 0; j < std::min<int64_t>(2 * in.workers, iterations_); ++j) {
      add_loader_batch(j, none);
    }
  }
}

void DdpGraph::add_loader_batch(int64_t j, const std::vector<OpId>& slot_freed_by) {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    ranks_[r].loader->add_batch(j, batch_of(j), slot_freed_by[r]);
  }
  last_loader_batch_ = j;
}

DdpGraph::Arrivals DdpGraph::add_batch_arrivals(int64_t k, int64_t batch, const StepDurations& d, int32_t tag) {
  auto& ops = g_.ops;
  Arrivals a{std::vector<OpId>(ranks_.size()), std::vector<OpId>(ranks_.size())};
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    OpId prev;
    if (rank.loader) {
      prev = ops.add_op(0, {rank.host}, {rank.previous_end, rank.loader->take_next()}, tag,
                        labels_.next_batch);
    } else {
      // Inline: the training loop builds the batch itself, B / samples_per_s(0).
      prev = ops.add_op(des::to_ns(static_cast<double>(batch) / in_.inline_rate), {rank.host},
                        {rank.previous_end}, tag, labels_.inline_load);
    }
    a.handed_over[r] = prev;
    if (k == 0 && in_.cow_ns > 0) prev = ops.add_op(in_.cow_ns, {rank.host}, {prev}, tag, labels_.cow);
    if (d.overhead > 0) prev = ops.add_op(d.overhead, {rank.host}, {prev}, tag, labels_.overhead);
    const des::SimTime h2d = in_.h2d_ns(static_cast<double>(batch * in_.model.input_bytes_per_sample));
    if (h2d > 0) prev = ops.add_op(h2d, {rank.copy}, {prev}, tag, labels_.h2d);
    a.on_device[r] = prev;
  }
  return a;
}

DdpGraph::Passes DdpGraph::add_passes(const StepDurations& d, int32_t tag, std::vector<OpId> prev,
                                      std::vector<OpId>& issued) {
  auto& ops = g_.ops;
  const std::size_t layers = d.forward.size();
  // Forward, loss, backward on every rank, layer by layer; remember each layer's backward op.
  // With SyncBatchNorm each layer's statistics exchange follows its compute on every rank, and
  // the next layer waits for it.
  // The launch queue: each rank's host thread issues its parts after the copy (a pageable copy
  // returns once done), and each device op waits for its issue (without issue times, none).
  const auto launched = [&](std::size_t r, des::SimTime issue_ns, uint32_t launch_label, des::SimTime device_ns,
                            uint32_t label) {
    prev[r] = add_launched(g_, Launch{ranks_[r].host, issued[r]}, issue_ns, launch_label, ranks_[r].compute,
                           device_ns, {prev[r]}, tag, label);
  };
  const auto sync = [&](des::SimTime ns, uint32_t label) {
    const OpId op = ops.add_op(ns, comms_.data(), comms_.size(), prev.data(), prev.size(), tag, label);
    std::fill(prev.begin(), prev.end(), op);
  };
  for (std::size_t l = 0; l < layers; ++l) {
    const auto offset = static_cast<uint32_t>(l);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      launched(r, d.issue_forward(l), labels_.launch_forward0 + offset, d.forward[l],
               labels_.forward0 + offset);
    }
    if (!sync_forward_ns_.empty() && sync_forward_ns_[l] > 0) sync(sync_forward_ns_[l], sync_forward_labels_[l]);
  }
  for (std::size_t r = 0; r < ranks_.size(); ++r) launched(r, d.issue_loss(), labels_.launch_loss, d.loss, labels_.loss);
  // Backward: the autograd engine's device thread issues it while the loop's thread waits in
  // backward(), so one process issues it on its host thread in order.
  Passes p;
  p.backward.assign(ranks_.size(), std::vector<OpId>(layers));
  for (std::size_t l = layers; l-- > 0;) {
    const auto offset = static_cast<uint32_t>(l);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      launched(r, d.issue_backward(l), labels_.launch_backward0 + offset, d.backward[l],
               labels_.backward0 + offset);
      p.backward[r][l] = prev[r];
    }
    if (!sync_backward_ns_.empty() && sync_backward_ns_[l] > 0) sync(sync_backward_ns_[l], sync_backward_labels_[l]);
  }
  p.last = std::move(prev);
  return p;
}

OpId DdpGraph::add_bucket_all_reduces(const std::vector<std::vector<OpId>>& backward, int32_t tag) {
  // Buckets: all-reduce j on every rank's comm stream once every rank's gradients are ready.
  OpId last_bucket = kNoOp;
  for (std::size_t j = 0; j < buckets_.size(); ++j) {
    scratch_.clear();
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      scratch_.push_back(backward[r][static_cast<std::size_t>(buckets_[j].ready_after_layer)]);
    }
    last_bucket = g_.ops.add_op(bucket_ns_[j], comms_.data(), comms_.size(), scratch_.data(),
                                scratch_.size(), tag, bucket_labels_[j]);
  }
  return last_bucket;
}

IterationOps DdpGraph::add_iteration(int64_t k) {
  const int64_t batch = batch_of(k);
  const StepDurations& d = durations_.at(batch);
  const int32_t tag = static_cast<int32_t>(k);
  IterationOps out;

  Arrivals arrivals = add_batch_arrivals(k, batch, d, tag);
  out.batch_ready = arrivals.handed_over[0];
  // Batch k was handed over: its prefetch slot goes to batch k + 2W.
  if (in_.workers > 0 && k + 2 * in_.workers < iterations_) {
    add_loader_batch(k + 2 * in_.workers, arrivals.handed_over);
  }

  // The host issues the forward once the copy is done; the buffers' broadcast is enqueued on the
  // comm stream and waited for by the device, not the host.
  std::vector<OpId> issued = arrivals.on_device;
  if (broadcast_buffers_) {
    const OpId bcast = g_.ops.add_op(buffer_broadcast_ns_, comms_.data(), comms_.size(),
                                     arrivals.on_device.data(), arrivals.on_device.size(), tag, broadcast_label_);
    std::fill(arrivals.on_device.begin(), arrivals.on_device.end(), bcast);
  }
  const Passes passes = add_passes(d, tag, std::move(arrivals.on_device), issued);
  const OpId last_bucket = add_bucket_all_reduces(passes.backward, tag);

  // The optimizer's device op waits for the last bucket (the reducer's work is waited on by the
  // stream, not the host), then zero_grad; the next iteration's host work waits for the device
  // (loss.item() at the iteration's end).
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = ranks_[r];
    const OpId opt = add_launched(g_, Launch{rank.host, issued[r]}, d.issue_optimizer(),
                                  labels_.launch_optimizer, rank.compute, d.optimizer,
                                  {passes.last[r], last_bucket}, tag, labels_.optimizer);
    rank.previous_end = add_launched(g_, Launch{rank.host, issued[r]}, d.issue_zero_grad(),
                                     labels_.launch_zero_grad, rank.compute, d.zero_grad, {opt}, tag,
                                     labels_.zero_grad);
    out.end_ops.push_back(rank.previous_end);
  }
  out.loop_end = ranks_[0].previous_end;
  return out;
}

}  // namespace trainsim::train
