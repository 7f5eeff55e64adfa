#include "profiler/ddp_loop.h"

#include <algorithm>
#include <stdexcept>

#include "profiler/fused_iteration.h"
#include "runs/ddp.h"
#include "runs/train_step.h"

namespace trainsim::measure::profiler {

DdpLoopTimings measure_ddp_iteration(const ModelProfile& description, int64_t batch, const Device& device,
                                     const Repetition& rep, uint64_t seed, Communicator& communicator) {
  if (communicator.world_size() != 1 || communicator.device() != device.torch_device()) {
    throw std::invalid_argument("measure_ddp_iteration: needs a 1-rank communicator on " +
                                device.torch_device().str());
  }
  FusedIteration fused(description, batch, device, seed);
  models::StagedModel& model = fused.model();
  DistributedDataParallel ddp(model.module(), communicator);
  TrainStep step([&](const torch::Tensor& images) { return model.forward(images); }, fused.optimizer(), &ddp,
                 device.torch_device(), nullptr, device.precision);
  const Repetition steady{std::max(rep.warmup, 2), rep.repeats};
  DdpLoopTimings t;
  t.iteration_s = median_seconds(device, steady, nullptr, [&] { step.run(fused.images(), fused.labels()); });
  if (!ddp.rebuilt()) throw std::logic_error("measure_ddp_iteration: the reducer did not rebuild its buckets");
  t.buckets = ddp.buckets();
  return t;
}

}  // namespace trainsim::measure::profiler
