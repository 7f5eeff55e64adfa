#pragma once
// Torch-free description of the models trainsim knows: layer names, kinds, parameter tensors
// (names and bytes, registration order), buffer bytes, output shape and forward FLOPs per sample,
// and the ops each layer is made of. Computed analytically; tests check it against the LibTorch
// modules in resnet.h.

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile.h"

namespace trainsim::models {

// Names accepted by describe_model / make_resnet18.
inline const char* const kResnet18Cifar = "resnet18-cifar";        // 11,173,962 parameters
inline const char* const kResnet18Imagenet = "resnet18-imagenet";  // torchvision layout, 11,181,642
inline const char* const kFashionCnn = "fashion-cnn";              // models/fashion_cnn.h, 50,282
inline const char* const kFashionCnnGap = "fashion-cnn-gap";       // its pooled head, 19,562

std::vector<std::string> known_models();
// fashion-cnn or fashion-cnn-gap: a model of Fashion-MNIST images.
bool fashion_model(const std::string& name);

// The per-sample input a model takes: ResNet-18 3x32x32 (CIFAR-10), the fashion-cnns 1x28x28
// (Fashion-MNIST). Throws std::invalid_argument for an unknown name.
struct InputShape {
  int64_t channels = 0;
  int64_t side = 0;
};
InputShape model_input(const std::string& name);

// A ModelProfile with the description filled in and no timings. Throws std::invalid_argument for
// an unknown name.
ModelProfile describe_model(const std::string& name);

// The kernel-level ops of a training step (models/cost.h prices them at a batch size).
enum class OpKind { kConv, kBatchNorm, kRelu, kAdd, kMaxPool, kAvgPool, kLinear, kLoss, kOptimizer,
                    kZeroGrad };
const char* to_string(OpKind kind);

// An activation per sample: channels x side x side (1x1 after the global pool). `id` names the
// tensor within the model (a view such as flatten keeps its source's id); id 0 is the input batch,
// the one activation that does not require grad.
struct FeatureMap {
  int64_t channels = 0;
  int64_t side = 0;
  int id = 0;
  int64_t elements() const { return channels * side * side; }
};

// One forward op as the description builds it, per sample: the same builder call that adds its
// parameters and FLOPs to the layer's LayerProfile records it, so the two cannot disagree.
struct OpShape {
  std::string name;                // module path: "conv1", "layer2.0.bn1", "layer2.0.add", "linear"
  OpKind kind = OpKind::kConv;
  std::vector<FeatureMap> inputs;  // activations read, in argument order (the add reads two)
  FeatureMap output;
  int kernel = 1;                  // convolution / pooling window side
  int64_t weight_elements = 0;     // conv and linear weight, BatchNorm scale
  int64_t bias_elements = 0;       // linear bias, BatchNorm shift
  double forward_flops = 0;        // per sample, the op's share of LayerProfile::forward_flops
};

// describe_model and, aligned with model.layers, each layer's ops in forward order.
struct ModelDescription {
  ModelProfile model;
  std::vector<std::vector<OpShape>> layer_ops;
};
// Throws std::invalid_argument for an unknown name.
ModelDescription describe_model_ops(const std::string& name);

}  // namespace trainsim::models
