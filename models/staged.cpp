#include "models/staged.h"

#include <stdexcept>

#include "models/describe.h"
#include "models/fashion_cnn.h"
#include "models/resnet.h"

namespace trainsim::models {

std::shared_ptr<StagedModel> make_model(const std::string& name, int64_t num_classes) {
  if (fashion_model(name)) return std::make_shared<FashionCnnImpl>(num_classes, name == kFashionCnnGap);
  if (name == kResnet18Cifar || name == kResnet18Imagenet) return ResNet18(name, num_classes).ptr();
  (void)describe_model(name);  // the unknown-name error, listing the known models
  throw std::logic_error("make_model: no LibTorch module for '" + name + "'");
}

}  // namespace trainsim::models
