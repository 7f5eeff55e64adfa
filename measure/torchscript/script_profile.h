#pragma once
// Profiles a user's TorchScript module (torch.jit.script / torch.jit.trace, then torch.jit.save)
// the way measure profiles its own ResNet-18 (docs/ANY_MODEL.md): per batch size the forward
// and backward time of each layer, the loss, zero_grad, the SGD step, the fused iteration and
// its peak memory, up to the out-of-memory boundary.
//
// A TorchScript module cannot be cut into stages that run one after the other (torchvision's
// ResNet-50 flattens between its children inside forward()), so its layers are groups of
// parameters, timed inside one whole forward and one whole backward:
//  - a parameter's group is its module path up to the first container index ("layer1.0",
//    "features.3", "encoder.layers.2") or, without one, its first component ("conv1", "fc");
//  - forward: a RecordFunction observer sees every operator with its inputs; the forward time
//    from the first operator that takes one of a group's parameters until the first that takes
//    another group's belongs to that group (the parameter-free operators after a group's own,
//    activations, pooling, additions, count with it);
//  - backward: a hook on every parameter marks when its gradient is ready; the time up to a
//    ready gradient belongs to that parameter's group, and what follows the last one (the
//    gradient of the input) to the group of the last;
//  - the layers are the groups in the order the forward first uses them, and DDP's gradient
//    buckets in the simulator follow the parameters' registration order, as PyTorch's do.
// The instrumented passes synchronise the device at every group boundary (CUDA), so the shares
// are the device's; each layer's share of the instrumented pass is applied to the median time of
// the plain forward and backward, so the observers' own cost is not counted.

#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "format/profile.h"

namespace trainsim::measure::torchscript {

// "layer1.0.conv1.weight" -> "layer1.0"; "features.3.conv.0.0.weight" -> "features.3";
// "conv1.weight" -> "conv1"; "cls_token" -> "cls_token" (a parameter of the root module).
std::string group_key(const std::string& parameter_name);

// "3x32x32" -> {3, 32, 32}: each dimension an integer >= 1, at most 8 of them.
// Throws UsageError naming --input-shape otherwise.
std::vector<int64_t> parse_input_shape(const std::string& text);

struct ScriptModelOptions {
  std::string path;                  // the TorchScript file
  std::vector<int64_t> input_shape;  // per sample, e.g. {3, 32, 32}; float32 inputs
  int64_t num_classes = 0;           // the forward returns [batch, num_classes] logits
};

// A loaded module on a device, its parameters in registration order and their groups.
class ScriptModel {
 public:
  // Loads and checks: InputError naming the file when it is not a TorchScript archive, holds no
  // forward method or no parameters (nothing to train). The output shape is checked by the first
  // forward (check_output).
  ScriptModel(const ScriptModelOptions& options, const Device& device);

  torch::jit::Module& module() { return module_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  const std::vector<std::string>& parameter_names() const { return names_; }
  // Group (index into group_keys(), registration order of first appearance) of each parameter.
  const std::vector<size_t>& group_of_parameter() const { return group_of_; }
  const std::vector<std::string>& group_keys() const { return keys_; }
  const ScriptModelOptions& options() const { return options_; }

  torch::Tensor forward(const torch::Tensor& input);
  // Runs one forward at `batch` and throws InputError unless it returns [batch, num_classes].
  void check_output(const torch::Tensor& logits, int64_t batch) const;

  // The torch-free description: name, parameters, input bytes, classes, one layer per group in
  // `order` (group indices, forward order) with its parameters (registration order) and buffers.
  ModelProfile describe(const std::string& name, const std::vector<size_t>& order) const;

 private:
  ScriptModelOptions options_;
  torch::jit::Module module_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> names_;
  std::vector<size_t> group_of_;
  std::vector<std::string> keys_;
  std::vector<int64_t> buffer_bytes_;  // per group
};

// What one instrumented forward and backward says about the groups.
struct GroupSplit {
  std::vector<size_t> forward_order;   // groups in order of first use in forward; unused ones last
  std::vector<double> forward_s;       // per group (index = group), instrumented pass
  std::vector<double> backward_s;      // per group
  std::vector<size_t> ready_order;     // parameter indices in the order their gradients were ready
  std::vector<std::vector<int64_t>> output_shape;  // per group: the last output while it ran, per sample
};

// One forward (train mode) with the observer and one backward with the hooks, the device
// synchronised at every boundary.
GroupSplit split_by_group(ScriptModel& model, const torch::Tensor& images, const Device& device);

// The fused training iteration of the module at one batch: zero_grad, forward, cross-entropy,
// backward, SGD step (lr 0.1, momentum 0.9, weight decay 5e-4), on random inputs and labels from
// `seed`, train mode. What measure_script_batch times as iteration_s and what the host
// contention workers run side by side.
class ScriptIteration {
 public:
  ScriptIteration(ScriptModel& model, int64_t batch, const Device& device, uint64_t seed);
  void run();
  // run() with a check that the first forward returned [batch, num_classes] (InputError if not).
  void run_checked();

  torch::optim::SGD& optimizer() { return optimizer_; }
  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }

 private:
  ScriptModel& model_;
  torch::optim::SGD optimizer_;
  torch::Tensor images_;
  torch::Tensor labels_;
};

struct ScriptBatchTimings {
  int64_t batch = 0;
  std::vector<double> forward_s;   // per layer (forward order)
  std::vector<double> backward_s;  // per layer
  double loss_s = 0;
  double zero_grad_s = 0;
  double optimizer_s = 0;
  double iteration_s = 0;
  double peak_memory_bytes = 0;
  std::vector<size_t> ready_order;  // parameter indices, as the last instrumented backward saw them
};

// Times `model` at `batch` on `device` (train mode, random inputs and labels from `seed`,
// SGD lr 0.1 momentum 0.9 weight decay 5e-4); the layer split is the median of `rep.repeats`
// instrumented passes. `layer_order` is the forward order of the groups (from the first batch's
// split). LibTorch errors propagate, out-of-memory included.
ScriptBatchTimings measure_script_batch(ScriptModel& model, const std::vector<size_t>& layer_order,
                                        int64_t batch, const Device& device, const Repetition& rep,
                                        uint64_t seed);

}  // namespace trainsim::measure::torchscript
