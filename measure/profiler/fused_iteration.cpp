#include "profiler/fused_iteration.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "autocast.h"
#include "memory_layout.h"
#include "models/describe.h"

namespace trainsim::measure::profiler {
namespace {

void check_stages(const models::StagedModel& model, const ModelProfile& description) {
  if (model.num_stages() != description.layers.size()) {
    throw std::logic_error(description.name + ": the LibTorch model has " +
                           std::to_string(model.num_stages()) + " stages, its description " +
                           std::to_string(description.layers.size()) + " layers");
  }
  for (size_t i = 0; i < description.layers.size(); ++i) {
    if (model.stage_name(i) != description.layers[i].name) {
      throw std::logic_error(description.name + ": stage " + std::to_string(i) + " is '" +
                             model.stage_name(i) + "' but the description says '" +
                             description.layers[i].name + "'");
    }
  }
}

// The model, seeded, checked against its description, on the device and in train() mode, before
// the optimizer takes its parameters.
std::shared_ptr<models::StagedModel> build_model(const ModelProfile& description, const Device& device,
                                                uint64_t seed) {
  torch::manual_seed(seed);
  auto model = models::make_model(description.name, description.num_classes);
  check_stages(*model, description);
  model->module().to(device.torch_device());
  to_memory_format(model->module(), device.memory_format);
  model->module().train();
  return model;
}

}  // namespace

FusedIteration::FusedIteration(const ModelProfile& description, int64_t batch, const Device& device,
                               uint64_t seed)
    : model_(build_model(description, device, seed)),
      optimizer_(model_->module().parameters(),
                 torch::optim::SGDOptions(kLearningRate).momentum(kMomentum).weight_decay(kWeightDecay)),
      precision_(device.precision) {
  const torch::Device dev = device.torch_device();
  const auto float_options = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  const models::InputShape input = models::model_input(description.name);
  images_ = in_memory_format(torch::randn({batch, input.channels, input.side, input.side}, float_options),
                             device.memory_format);
  labels_ = torch::randint(0, description.num_classes, {batch},
                           torch::TensorOptions().dtype(torch::kInt64).device(dev));
}

void FusedIteration::run() {
  optimizer_.zero_grad();
  torch::Tensor loss;
  {
    AutocastRegion autocast(precision_, images_.device());
    loss = torch::nn::functional::cross_entropy(model_->forward(images_), labels_);
  }
  loss.backward();
  optimizer_.step();
}

}  // namespace trainsim::measure::profiler
