#include "profiler/ddp_loop.h"

#include <algorithm>
#include <stdexcept>

#include "profiler/fused_iteration.h"
#include "runs/ddp.h"
#include "runs/train_step.h"
#include "stats.h"

namespace trainsim::measure::profiler {

DdpLoopTimings measure_ddp_iteration(const ModelProfile& description, int64_t batch, const Device& device,
                                     const Repetition& rep, uint64_t seed, Communicator& communicator) {
  if (communicator.world_size() != 1 || communicator.device() != device.torch_device()) {
    throw std::invalid_argument("measure_ddp_iteration: needs a 1-rank communicator on " +
                                device.torch_device().str());
  }
  FusedIteration fused(description, batch, device, seed);
  FusedIteration bare(description, batch, device, seed);
  models::StagedModel& model = fused.model();
  DistributedDataParallel ddp(model.module(), communicator);
  TrainStep step([&](const torch::Tensor& images) { return model.forward(images); }, fused.optimizer(), &ddp,
                 device.torch_device(), nullptr, device.precision);
  const auto loop_body = [&] { step.run(fused.images(), fused.labels()); };
  for (int i = 0; i < std::max(rep.warmup, 2); ++i) {
    bare.run();
    loop_body();
  }
  synchronize(device);
  std::vector<double> bodies, ratios;
  for (int i = 0; i < std::max(rep.repeats, 1); ++i) {
    const double bare_s = time_once(device, [&] { bare.run(); });
    const double body_s = time_once(device, loop_body);
    bodies.push_back(body_s);
    ratios.push_back(body_s / bare_s);
  }
  DdpLoopTimings t;
  t.iteration_s = median(bodies);
  t.ratio_to_fused = median(ratios);
  if (!ddp.rebuilt()) throw std::logic_error("measure_ddp_iteration: the reducer did not rebuild its buckets");
  t.buckets = ddp.buckets();
  return t;
}

}  // namespace trainsim::measure::profiler
