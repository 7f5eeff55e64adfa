#include "train/dp_graph.h"

#include <algorithm>

#include "io/config.h"
#include "train/buckets.h"
#include "train/format_bytes.h"

namespace trainsim::train {

using des::kNoOp;
using des::OpId;
using des::ResourceId;
using des::SimTime;

DpGraph::DpGraph(TrainingGraph& graph, const GraphInputs& in)
    : g_(graph), in_(in), durations_(in.steps) {
  // A global batch larger than the data set is one batch of the whole data set.
  global_batch_ = capped_global_batch(in.gpus, in.batch_per_gpu, in.train_samples);
  iterations_ = ceil_div(in.train_samples, global_batch_);
  last_global_batch_ = in.train_samples - (iterations_ - 1) * global_batch_;
  full_iterations_ = last_global_batch_ == global_batch_ ? iterations_ : iterations_ - 1;

  labels_ = StepLabels::add(g_, in.model);
  host_ = g_.add_resource("host", in.host_pool, 1.0);
  if (in.workers > 0) {
    // iter(loader) forks the workers before the loop asks for its first batch.
    previous_end_ = add_fork_op(g_, host_, in.fork_ns, labels_.fork);
    loader_ = std::make_unique<LoaderPipeline>(g_, "loader", in.workers, in.loader_rate_per_worker,
                                               in.loader_startup_ns, in.host_pool, previous_end_);
  }
  for (int i = 0; i < in.gpus; ++i) {
    const std::string gpu = "gpu" + std::to_string(i);
    Gpu g;
    g.copy = g_.add_resource(gpu + ".copy");
    g.compute = g_.add_resource(gpu + ".compute", in.host_pool, in.compute_cores);
    g.comm = g_.add_resource(gpu + ".comm", in.host_pool, in.comm_cores);
    gpus_.push_back(g);
  }
  g_.device0_compute = gpus_[0].compute;
  g_.device0_copy = gpus_[0].copy;
  g_.device0_comm = gpus_[0].comm;

  if (in.gpus > 1) {
    std::vector<int64_t> params;
    std::vector<int64_t> buffers;
    for (const LayerProfile& l : in.model.layers) {
      for (const ParamTensor& p : l.params) params.push_back(p.bytes);
      // Per-tensor buffer sizes are not in the profile: one tensor per layer stands in.
      if (l.buffer_bytes > 0) buffers.push_back(l.buffer_bytes);
    }
    param_chunks_ = coalesce_close_at_limit(params, kCoalesceBufferBytes);
    buffer_chunks_ = coalesce_close_at_limit(buffers, kCoalesceBufferBytes);
    gradient_chunks_ = coalesce_before_exceeding(params, kCoalesceBufferBytes);
    gather_label_ = g_.add_label(OpLabel{"gather outputs", "comm", false, 0});
    scatter_grad_label_ = g_.add_label(OpLabel{"scatter output grad", "comm", false, 0});
    dp_host_label_ = g_.add_label(OpLabel{"dp replicate/scatter/gather (host)", "host", false, 0});
  }

  if (in.workers > 0) {
    for (int64_t j = 0; j < std::min<int64_t>(2 * in.workers, iterations_); ++j) {
      add_loader_batch(j, kNoOp);
    }
  }
}

std::vector<int64_t> DpGraph::chunk_sizes(int64_t samples) const {
  // Tensor.chunk(N): chunks of ceil(B / N) samples, the last one what remains.
  const int64_t n = in_.gpus;
  const int64_t chunk = ceil_div(samples, n);
  std::vector<int64_t> sizes;
  for (int64_t left = samples; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  return sizes;
}

const DpGraph::ReplicaCollectives& DpGraph::collectives_for(int replicas) {
  const auto it = collectives_.find(replicas);
  if (it != collectives_.end()) return it->second;
  ReplicaCollectives c;
  const auto add = [&](hw::CollectiveOp op, const std::vector<int64_t>& chunks, const char* what,
                       std::vector<SimTime>& ns, std::vector<uint32_t>& labels) {
    for (std::size_t j = 0; j < chunks.size(); ++j) {
      const double bytes = static_cast<double>(chunks[j]);
      ns.push_back(des::to_ns(in_.collectives.seconds(op, replicas, bytes)));
      labels.push_back(g_.add_label(
          OpLabel{std::string(what) + " chunk " + std::to_string(j) + " (" +
                      format_bytes(bytes) + ")",
                  "comm", true, hw::bus_bytes(op, bytes, replicas)}));
    }
  };
  std::vector<int64_t> replicated = param_chunks_;
  replicated.insert(replicated.end(), buffer_chunks_.begin(), buffer_chunks_.end());
  add(hw::CollectiveOp::kBroadcast, replicated, "replicate", c.replicate_ns, c.replicate_labels);
  add(hw::CollectiveOp::kReduce, gradient_chunks_, "reduce-add grads", c.reduce_ns,
      c.reduce_labels);
  return collectives_.emplace(replicas, std::move(c)).first->second;
}

void DpGraph::add_loader_batch(int64_t j, OpId slot_freed_by) {
  loader_->add_batch(j, batch_of(j), slot_freed_by);
  last_loader_batch_ = j;
}

IterationOps DpGraph::add_iteration(int64_t k) {
  const int64_t batch = batch_of(k);
  const int32_t tag = static_cast<int32_t>(k);
  auto& ops = g_.ops;
  IterationOps out;
  OpId prev;
  if (loader_) {
    prev = ops.add_op(0, {host_}, {previous_end_, loader_->take_next()}, tag, labels_.next_batch);
  } else {
    prev = ops.add_op(des::to_ns(static_cast<double>(batch) / in_.inline_rate), {host_},
                      {previous_end_}, tag, labels_.inline_load);
  }
  out.batch_ready = prev;
  if (loader_ && k + 2 * in_.workers < iterations_) add_loader_batch(k + 2 * in_.workers, prev);
  if (k == 0 && in_.cow_ns > 0) prev = ops.add_op(in_.cow_ns, {host_}, {prev}, tag, labels_.cow);

  // Launch overhead at the per-GPU batch (the measurement's single-device step).
  const SimTime overhead = durations_.at(chunk_sizes(batch).front()).overhead;
  if (overhead > 0) prev = ops.add_op(overhead, {host_}, {prev}, tag, labels_.overhead);
  // DataParallel's own host work (module replicas, scatter, one thread per replica, gather), when
  // a fit determined it (GraphInputs::dp_host_per_replica_ns).
  if (in_.gpus > 1 && in_.dp_host_per_replica_ns > 0) {
    const auto replicas = static_cast<SimTime>(chunk_sizes(batch).size());
    prev = ops.add_op(replicas * in_.dp_host_per_replica_ns, {host_}, {prev}, tag, dp_host_label_);
  }

  previous_end_ = in_.gpus == 1 ? add_single_gpu_step(batch, tag, prev)
                                : add_replicated_step(batch, tag, prev);
  out.end_ops.push_back(previous_end_);
  out.loop_end = previous_end_;
  return out;
}

OpId DpGraph::add_single_gpu_step(int64_t batch, int32_t tag, OpId prev) {
  auto& ops = g_.ops;
  const StepDurations& d = durations_.at(batch);
  const Gpu& gpu = gpus_[0];
  const SimTime h2d = in_.h2d_ns(static_cast<double>(batch * in_.model.input_bytes_per_sample));
  if (h2d > 0) prev = ops.add_op(h2d, {gpu.copy}, {prev}, tag, labels_.h2d);
  for (std::size_t l = 0; l < d.forward.size(); ++l) {
    prev = ops.add_op(d.forward[l], {gpu.compute}, {prev}, tag,
                      labels_.forward0 + static_cast<uint32_t>(l));
  }
  prev = ops.add_op(d.loss, {gpu.compute}, {prev}, tag, labels_.loss);
  for (std::size_t l = d.backward.size(); l-- > 0;) {
    prev = ops.add_op(d.backward[l], {gpu.compute}, {prev}, tag,
                      labels_.backward0 + static_cast<uint32_t>(l));
  }
  prev = ops.add_op(d.optimizer, {gpu.compute}, {prev}, tag, labels_.optimizer);
  return ops.add_op(d.zero_grad, {gpu.compute}, {prev}, tag, labels_.zero_grad);
}

OpId DpGraph::add_replicated_step(int64_t batch, int32_t tag, OpId launched) {
  auto& ops = g_.ops;
  const std::vector<int64_t> chunks = chunk_sizes(batch);
  const int replicas = static_cast<int>(chunks.size());
  const ReplicaCollectives& coll = collectives_for(replicas);
  std::vector<ResourceId> comms;
  for (int i = 0; i < replicas; ++i) comms.push_back(gpus_[static_cast<std::size_t>(i)].comm);
  const ResourceId gpu0_comm = gpus_[0].comm;
  const ResourceId gpu0_compute = gpus_[0].compute;
  const auto output_copy_ns = [&](int64_t samples) {
    // One replica's output: samples * classes fp32 values.
    return in_.h2d_ns(static_cast<double>(samples * in_.model.num_classes * 4));
  };

  // Scatter inputs.
  std::vector<OpId> input_ready(chunks.size(), launched);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const SimTime h2d = in_.h2d_ns(static_cast<double>(chunks[i] * in_.model.input_bytes_per_sample));
    if (h2d > 0) input_ready[i] = ops.add_op(h2d, {gpus_[i].copy}, {launched}, tag, labels_.h2d);
  }
  // Replicate: the comm streams run the chunks in order, so the last one done means all done.
  OpId replicated = launched;
  for (std::size_t j = 0; j < coll.replicate_ns.size(); ++j) {
    replicated = ops.add_op(coll.replicate_ns[j], comms.data(), comms.size(), &launched, 1, tag,
                            coll.replicate_labels[j]);
  }
  // Parallel forward; gather outputs on GPU 0.
  std::vector<OpId> gathered;
  OpId forward0_end = kNoOp;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const StepDurations& d = durations_.at(chunks[i]);
    const ResourceId compute = gpus_[i].compute;
    OpId prev = ops.add_op(d.forward[0], {compute}, {input_ready[i], replicated}, tag,
                           labels_.forward0);
    for (std::size_t l = 1; l < d.forward.size(); ++l) {
      prev = ops.add_op(d.forward[l], {compute}, {prev}, tag,
                        labels_.forward0 + static_cast<uint32_t>(l));
    }
    if (i == 0) {
      forward0_end = prev;
    } else {
      gathered.push_back(ops.add_op(output_copy_ns(chunks[i]), {gpu0_comm}, {prev}, tag,
                                    gather_label_));
    }
  }
  gathered.push_back(forward0_end);
  const OpId loss = ops.add_op(durations_.at(batch).loss, &gpu0_compute, 1, gathered.data(),
                               gathered.size(), tag, labels_.loss);
  // The output gradient goes back to every replica before any backward starts (one autograd
  // node scatters it to all of them).
  scratch_.assign(1, loss);
  for (std::size_t i = 1; i < chunks.size(); ++i) {
    scratch_.push_back(ops.add_op(output_copy_ns(chunks[i]), {gpu0_comm}, {loss}, tag,
                                  scatter_grad_label_));
  }
  // One zero-time join on GPU 0's comm stream (where the scatters ran, so it ends with the last
  // of them) stands for "every output gradient arrived": N edges into it and N out of it, not
  // N x N from every scatter to every replica's backward.
  const OpId grad_ready = ops.add_op(0, &gpu0_comm, 1, scratch_.data(), scratch_.size(), tag, scatter_grad_label_);
  std::vector<OpId> backward_end;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const StepDurations& d = durations_.at(chunks[i]);
    const ResourceId compute = gpus_[i].compute;
    const std::size_t last = d.backward.size() - 1;
    OpId prev = ops.add_op(d.backward[last], &compute, 1, &grad_ready, 1, tag,
                           labels_.backward0 + static_cast<uint32_t>(last));
    for (std::size_t l = last; l-- > 0;) {
      prev = ops.add_op(d.backward[l], {compute}, {prev}, tag,
                        labels_.backward0 + static_cast<uint32_t>(l));
    }
    backward_end.push_back(prev);
  }
  // Reduce-add only after every replica finished backward (no overlap).
  OpId reduced = kNoOp;
  for (std::size_t j = 0; j < coll.reduce_ns.size(); ++j) {
    reduced = ops.add_op(coll.reduce_ns[j], comms.data(), comms.size(), backward_end.data(),
                         backward_end.size(), tag, coll.reduce_labels[j]);
  }
  const StepDurations& d0 = durations_.at(chunks.front());
  const OpId opt =
      ops.add_op(d0.optimizer, {gpu0_compute}, {backward_end.front(), reduced}, tag,
                 labels_.optimizer);
  return ops.add_op(d0.zero_grad, {gpu0_compute}, {opt}, tag, labels_.zero_grad);
}

}  // namespace trainsim::train
