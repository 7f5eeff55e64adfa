#include "train/dp_graph.h"

#include <algorithm>
#include <cmath>

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
    scatter_input_label_ = g_.add_label(OpLabel{"scatter input", "copy", false, 0});
    for (int i = 0; i < in.gpus; ++i) {
      autograd_.push_back(g_.add_resource("gpu" + std::to_string(i) + ".autograd", in.host_pool, 1.0));
    }
    dp_host_label_ = g_.add_label(OpLabel{"dp replicate/scatter/gather (host)", "host", false, 0});
    replicate_host_label_ = g_.add_label(OpLabel{"dp replicate: module copies (host)", "host", false, 0});
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
  // The launch queue: the host issues each part after the copy, the device runs behind it.
  OpId issued = prev;
  const Launch host{host_, issued};
  const auto part = [&](SimTime issue_ns, uint32_t launch_label, SimTime device_ns, uint32_t label) {
    prev = add_launched(g_, host, issue_ns, launch_label, gpu.compute, device_ns, {prev}, tag, label);
  };
  for (std::size_t l = 0; l < d.forward.size(); ++l) {
    const auto offset = static_cast<uint32_t>(l);
    part(d.issue_forward(l), labels_.launch_forward0 + offset, d.forward[l], labels_.forward0 + offset);
  }
  part(d.issue_loss(), labels_.launch_loss, d.loss, labels_.loss);
  for (std::size_t l = d.backward.size(); l-- > 0;) {
    const auto offset = static_cast<uint32_t>(l);
    part(d.issue_backward(l), labels_.launch_backward0 + offset, d.backward[l],
         labels_.backward0 + offset);
  }
  part(d.issue_optimizer(), labels_.launch_optimizer, d.optimizer, labels_.optimizer);
  part(d.issue_zero_grad(), labels_.launch_zero_grad, d.zero_grad, labels_.zero_grad);
  return prev;
}

std::vector<ResourceId> DpGraph::comm_streams(std::size_t replicas) const {
  std::vector<ResourceId> comms;
  for (std::size_t i = 0; i < replicas; ++i) comms.push_back(gpus_[i].comm);
  return comms;
}

DpGraph::Scattered DpGraph::add_scatter(int64_t batch, const std::vector<int64_t>& chunks,
                                        const ReplicaCollectives& coll, int32_t tag, OpId launched) {
  auto& ops = g_.ops;
  // Scatter: the loop copied the global batch to GPU 0 (inputs.to(device); a pageable copy
  // returns once done), and DataParallel's scatter copies each other replica's chunk from GPU 0
  // to its GPU.
  Scattered s;
  const SimTime h2d = in_.h2d_ns(static_cast<double>(batch * in_.model.input_bytes_per_sample));
  s.on_gpu0 = h2d > 0 ? ops.add_op(h2d, {gpus_[0].copy}, {launched}, tag, labels_.h2d) : launched;
  s.input_ready.assign(chunks.size(), s.on_gpu0);
  for (std::size_t i = 1; i < chunks.size(); ++i) {
    const SimTime copy = peer_copy_ns(static_cast<double>(chunks[i] * in_.model.input_bytes_per_sample));
    if (copy > 0) s.input_ready[i] = ops.add_op(copy, {gpus_[i].copy}, {s.on_gpu0}, tag, scatter_input_label_);
  }
  // Replicate: the comm streams run the chunks in order, so the last one done means all done.
  const std::vector<ResourceId> comms = comm_streams(chunks.size());
  s.replicated = s.on_gpu0;
  for (std::size_t j = 0; j < coll.replicate_ns.size(); ++j) {
    s.replicated = ops.add_op(coll.replicate_ns[j], comms.data(), comms.size(), &s.on_gpu0, 1, tag,
                              coll.replicate_labels[j]);
  }
  return s;
}

std::vector<OpId> DpGraph::add_parallel_forward(const std::vector<int64_t>& chunks, Launch host,
                                                const Scattered& in, int32_t tag) {
  // parallel_apply: one Python thread per replica runs its forward. They share the interpreter,
  // and the GIL passes between them at every op, so the host thread issues the replicas' layers
  // in turn (layer l of every replica, then layer l + 1); each replica's device runs behind. Where
  // the profile measured them, each replica's layer also holds the GIL for its calls into ATen:
  // their Python (replicas after the first) and the GIL's hand-over (docs/HOST.md).
  std::vector<OpId> forward = in.input_ready;
  const std::size_t layers = durations_.at(chunks.front()).forward.size();
  for (std::size_t l = 0; l < layers; ++l) {
    const auto offset = static_cast<uint32_t>(l);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const StepDurations& d = durations_.at(chunks[i]);
      const double gil_per_call =
          static_cast<double>(in_.dp_gil_handoff_ns + (i > 0 ? in_.dp_python_call_ns : 0));
      const auto gil = static_cast<SimTime>(std::llround(layer_calls(chunks[i])[l] * gil_per_call));
      const SimTime issue = d.host_issue() ? d.host_forward[l] + gil : gil > 0 ? gil : -1;
      forward[i] = add_launched(g_, host, issue, labels_.launch_forward0 + offset,
                                gpus_[i].compute, d.forward[l], {forward[i], l == 0 ? in.replicated : kNoOp},
                                tag, labels_.forward0 + offset);
    }
  }
  return forward;
}

OpId DpGraph::add_gather_and_loss(int64_t batch, const std::vector<int64_t>& chunks,
                                  const std::vector<OpId>& forward, OpId& issued, int32_t tag) {
  auto& ops = g_.ops;
  const ResourceId gpu0_comm = gpus_[0].comm;
  const auto output_copy_ns = [&](int64_t samples) {
    // One replica's output, samples * classes fp32 values, copied between two GPUs.
    return peer_copy_ns(static_cast<double>(samples * in_.model.num_classes * 4));
  };
  // Gather the outputs on GPU 0, then the loss there at the global batch.
  std::vector<OpId> gathered;
  for (std::size_t i = 1; i < chunks.size(); ++i) {
    gathered.push_back(ops.add_op(output_copy_ns(chunks[i]), {gpu0_comm}, {forward[i]}, tag, gather_label_));
  }
  gathered.push_back(forward[0]);
  const StepDurations& global = durations_.at(batch);
  if (durations_.at(chunks.front()).host_issue()) {
    issued = ops.add_op(global.host_loss, {host_}, {issued}, tag, labels_.launch_loss);
  }
  gathered.push_back(issued);
  const OpId loss =
      ops.add_op(global.loss, &gpus_[0].compute, 1, gathered.data(), gathered.size(), tag, labels_.loss);
  // The output gradient goes back to every replica before any backward starts (one autograd
  // node scatters it to all of them).
  scratch_.assign(1, loss);
  for (std::size_t i = 1; i < chunks.size(); ++i) {
    scratch_.push_back(ops.add_op(output_copy_ns(chunks[i]), {gpu0_comm}, {loss}, tag, scatter_grad_label_));
  }
  // One zero-time join on GPU 0's comm stream (where the scatters ran, so it ends with the last
  // of them) stands for "every output gradient arrived": N edges into it and N out of it, not
  // N x N from every scatter to every replica's backward.
  return ops.add_op(0, &gpu0_comm, 1, scratch_.data(), scratch_.size(), tag, scatter_grad_label_);
}

DpGraph::Backwards DpGraph::add_replica_backwards(const std::vector<int64_t>& chunks, OpId grad_ready,
                                                  OpId issued, int32_t tag) {
  // Backward: the autograd engine's thread of each device issues its replica's backward, in
  // parallel with the others (C++, no GIL), while the loop's thread waits in backward().
  Backwards b;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const StepDurations& d = durations_.at(chunks[i]);
    OpId thread_issued = issued;
    const Launch autograd{autograd_[i], thread_issued};
    OpId prev = grad_ready;
    for (std::size_t l = d.backward.size(); l-- > 0;) {
      prev = add_launched(g_, autograd, d.issue_backward(l),
                          labels_.launch_backward0 + static_cast<uint32_t>(l), gpus_[i].compute, d.backward[l],
                          {prev}, tag, labels_.backward0 + static_cast<uint32_t>(l));
    }
    b.end.push_back(prev);
    b.issued.push_back(thread_issued);
  }
  return b;
}

OpId DpGraph::add_replicated_step(int64_t batch, int32_t tag, OpId launched) {
  auto& ops = g_.ops;
  const std::vector<int64_t> chunks = chunk_sizes(batch);
  const ReplicaCollectives& coll = collectives_for(static_cast<int>(chunks.size()));
  const Scattered scattered = add_scatter(batch, chunks, coll, tag, launched);
  // replicate's Python work (module copies and their wiring), on the loop's thread, where the
  // profile measured it.
  OpId issued = scattered.on_gpu0;
  if (in_.dp_replicate_per_replica_ns > 0) {
    issued = ops.add_op(static_cast<SimTime>(chunks.size()) * in_.dp_replicate_per_replica_ns, {host_}, {issued},
                        tag, replicate_host_label_);
  }
  const Launch host{host_, issued};
  const std::vector<OpId> forward = add_parallel_forward(chunks, host, scattered, tag);
  const OpId grad_ready = add_gather_and_loss(batch, chunks, forward, issued, tag);
  Backwards backwards = add_replica_backwards(chunks, grad_ready, issued, tag);
  // Reduce-add (Broadcast's backward, one autograd node over every parameter) once every
  // replica finished backward: no overlap.
  const std::vector<ResourceId> comms = comm_streams(chunks.size());
  OpId reduced = kNoOp;
  for (std::size_t j = 0; j < coll.reduce_ns.size(); ++j) {
    reduced = ops.add_op(coll.reduce_ns[j], comms.data(), comms.size(), backwards.end.data(),
                         backwards.end.size(), tag, coll.reduce_labels[j]);
  }
  // backward() returns once every thread issued its part; then the loop's thread issues the
  // optimizer and zero_grad on GPU 0.
  const StepDurations& d0 = durations_.at(chunks.front());
  if (d0.host_issue()) {
    backwards.issued.push_back(issued);
    issued = ops.add_op(0, &host_, 1, backwards.issued.data(), backwards.issued.size(), tag, labels_.next_batch);
  }
  const OpId opt = add_launched(g_, host, d0.issue_optimizer(), labels_.launch_optimizer, gpus_[0].compute,
                                d0.optimizer, {backwards.end.front(), reduced}, tag, labels_.optimizer);
  return add_launched(g_, host, d0.issue_zero_grad(), labels_.launch_zero_grad, gpus_[0].compute,
                      d0.zero_grad, {opt}, tag, labels_.zero_grad);
}

const std::vector<double>& DpGraph::layer_calls(int64_t batch) {
  const auto it = layer_calls_.find(batch);
  if (it != layer_calls_.end()) return it->second;
  // The forward's calls spread over the layers as their issue times are (the launches are most of
  // a GPU layer's issue), evenly without issue times; none where the profile did not count them.
  const StepDurations& d = durations_.at(batch);
  const double layers = static_cast<double>(d.forward.size());
  std::vector<double> calls(d.forward.size(), in_.dp_forward_calls / layers);
  SimTime total = 0;
  for (SimTime h : d.host_forward) total += h;
  if (total > 0) {
    for (std::size_t l = 0; l < calls.size(); ++l) {
      calls[l] = in_.dp_forward_calls * static_cast<double>(d.host_forward[l]) / static_cast<double>(total);
    }
  }
  return layer_calls_.emplace(batch, std::move(calls)).first->second;
}

SimTime DpGraph::peer_copy_ns(double bytes) const {
  // A copy between two GPUs takes the path a 2-rank broadcast takes on the same link (P2P over
  // NVLink or PCIe, or through host memory where P2P is off): the collective model's broadcast.
  return des::to_ns(in_.collectives.seconds(hw::CollectiveOp::kBroadcast, 2, bytes));
}

}  // namespace trainsim::train
