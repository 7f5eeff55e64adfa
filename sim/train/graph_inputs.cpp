#include "train/graph_inputs.h"

namespace trainsim::train {

const StepDurations& StepDurationCache::at(int64_t batch) {
  const auto it = cache_.find(batch);
  if (it != cache_.end()) return it->second;
  const StepTimes t = steps_.at(batch);
  StepDurations d;
  for (double s : t.forward_s) d.forward.push_back(des::to_ns(s));
  for (double s : t.backward_s) d.backward.push_back(des::to_ns(s));
  d.loss = des::to_ns(t.loss_s);
  d.zero_grad = des::to_ns(t.zero_grad_s);
  d.optimizer = des::to_ns(t.optimizer_s);
  d.overhead = des::to_ns(t.overhead_s);
  for (double s : t.host_forward_s) d.host_forward.push_back(des::to_ns(s));
  for (double s : t.host_backward_s) d.host_backward.push_back(des::to_ns(s));
  d.host_loss = des::to_ns(t.host_loss_s);
  d.host_zero_grad = des::to_ns(t.host_zero_grad_s);
  d.host_optimizer = des::to_ns(t.host_optimizer_s);
  return cache_.emplace(batch, std::move(d)).first->second;
}

}  // namespace trainsim::train
