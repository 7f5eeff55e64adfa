#pragma once
// Torch-free description of the models trainsim knows: layer names, kinds, parameter tensors
// (names and bytes, registration order), buffer bytes, output shape and forward FLOPs per sample.
// Computed analytically; tests check it against the LibTorch modules in resnet.h.

#include <string>
#include <vector>

#include "io/profile.h"

namespace trainsim::models {

// Names accepted by describe_model / make_resnet18.
inline const char* const kResnet18Cifar = "resnet18-cifar";        // 11,173,962 parameters
inline const char* const kResnet18Imagenet = "resnet18-imagenet";  // torchvision layout, 11,181,642

std::vector<std::string> known_models();

// A ModelProfile with the description filled in and no timings. input: 3x32x32 (CIFAR-10).
// Throws std::invalid_argument for an unknown name.
ModelProfile describe_model(const std::string& name);

}  // namespace trainsim::models
