#include "train/training_graph.h"

#include <stdexcept>

namespace trainsim::train {

des::ResourceId TrainingGraph::add_resource(std::string name) {
  resource_names_.push_back(std::move(name));
  return ops.add_resource();
}

des::ResourceId TrainingGraph::add_resource(std::string name, std::optional<des::PoolId> pool,
                                            double cores) {
  const des::ResourceId r = add_resource(std::move(name));
  if (pool && cores > 0) ops.attach_to_pool(r, *pool, cores);
  return r;
}

uint32_t TrainingGraph::add_label(OpLabel label) {
  labels_.push_back(std::move(label));
  return static_cast<uint32_t>(labels_.size() - 1);
}

StepLabels StepLabels::add(TrainingGraph& graph, const ModelProfile& model) {
  StepLabels s;
  const auto& layers = model.layers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const uint32_t id = graph.add_label(OpLabel{"fwd " + layers[l].name, "compute", false, 0});
    if (l == 0) s.forward0 = id;
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const uint32_t id = graph.add_label(OpLabel{"bwd " + layers[l].name, "compute", false, 0});
    if (l == 0) s.backward0 = id;
  }
  s.loss = graph.add_label(OpLabel{"loss", "compute", false, 0});
  s.optimizer = graph.add_label(OpLabel{"optimizer", "compute", false, 0});
  s.zero_grad = graph.add_label(OpLabel{"zero_grad", "compute", false, 0});
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const uint32_t id = graph.add_label(OpLabel{"launch fwd " + layers[l].name, "host", false, 0});
    if (l == 0) s.launch_forward0 = id;
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const uint32_t id = graph.add_label(OpLabel{"launch bwd " + layers[l].name, "host", false, 0});
    if (l == 0) s.launch_backward0 = id;
  }
  s.launch_loss = graph.add_label(OpLabel{"launch loss", "host", false, 0});
  s.launch_optimizer = graph.add_label(OpLabel{"launch optimizer", "host", false, 0});
  s.launch_zero_grad = graph.add_label(OpLabel{"launch zero_grad", "host", false, 0});
  s.overhead = graph.add_label(OpLabel{"loop overhead", "host", false, 0});
  s.h2d = graph.add_label(OpLabel{"h2d", "copy", false, 0});
  s.next_batch = graph.add_label(OpLabel{"next batch", "host", false, 0});
  s.inline_load = graph.add_label(OpLabel{"load batch (inline)", "loader", false, 0});
  s.fork = graph.add_label(OpLabel{"start loader workers (fork)", "host", false, 0});
  s.cow = graph.add_label(OpLabel{"copy-on-write after fork", "host", false, 0});
  return s;
}

des::OpId add_launched(TrainingGraph& graph, Launch host, des::SimTime host_ns, uint32_t launch_label,
                       des::ResourceId device, des::SimTime device_ns, std::initializer_list<des::OpId> deps,
                       int32_t tag, uint32_t label) {
  if (host_ns < 0) return graph.ops.add_op(device_ns, {device}, deps, tag, label);
  host.issued = graph.ops.add_op(host_ns, {host.thread}, {host.issued}, tag, launch_label);
  des::OpId all[8];
  if (deps.size() >= 8) throw std::logic_error("add_launched: more than 7 dependencies");
  std::size_t n = 0;
  for (des::OpId d : deps) all[n++] = d;
  all[n++] = host.issued;
  return graph.ops.add_op(device_ns, &device, 1, all, n, tag, label);
}

des::OpId add_fork_op(TrainingGraph& graph, des::ResourceId host, des::SimTime fork_ns, uint32_t label) {
  return fork_ns > 0 ? graph.ops.add_op(fork_ns, {host}, {}, 0, label) : des::kNoOp;
}

LoaderPipeline::LoaderPipeline(TrainingGraph& graph, const std::string& prefix, int workers,
                               double samples_per_s_per_worker, des::SimTime startup_ns,
                               std::optional<des::PoolId> pool, des::OpId started_by)
    : graph_(graph), samples_per_s_per_worker_(samples_per_s_per_worker) {
  if (workers < 1 || !(samples_per_s_per_worker > 0)) {
    throw std::logic_error("LoaderPipeline needs >= 1 worker and a positive rate");
  }
  label_ = graph.add_label(OpLabel{"load batch", "loader", false, 0});
  const uint32_t startup_label = graph.add_label(OpLabel{"worker start-up", "loader", false, 0});
  for (int w = 0; w < workers; ++w) {
    workers_.push_back(graph.add_resource(prefix + ".worker" + std::to_string(w), pool, 1.0));
    started_.push_back(startup_ns > 0
                           ? graph.ops.add_op(startup_ns, {workers_.back()}, {started_by}, 0, startup_label)
                           : started_by);
  }
}

des::SimTime LoaderPipeline::batch_ns(int64_t samples) const {
  // A worker builds a batch of B samples in B / (per-worker samples/s).
  return des::to_ns(static_cast<double>(samples) / samples_per_s_per_worker_);
}

void LoaderPipeline::add_batch(int64_t batch_index, int64_t samples, des::OpId slot_freed_by) {
  const des::ResourceId worker = workers_[next_worker_];
  const des::OpId started = started_[next_worker_];
  next_worker_ = (next_worker_ + 1) % workers_.size();
  built_.push_back(graph_.ops.add_op(batch_ns(samples), {worker}, {slot_freed_by, started},
                                     static_cast<int32_t>(batch_index), label_));
}

des::OpId LoaderPipeline::take_next() {
  if (built_.empty()) throw std::logic_error("loader: batch taken before it was added");
  const des::OpId op = built_.front();
  built_.pop_front();
  return op;
}

}  // namespace trainsim::train
