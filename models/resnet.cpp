#include "models/resnet.h"

#include <stdexcept>
#include <utility>

#include "models/describe.h"

namespace trainsim::models {
namespace {

namespace nn = torch::nn;

nn::Conv2d make_conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(pad).bias(false));
}

// BasicBlock (He et al. 2016; pytorch-cifar and torchvision):
//   out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
// shortcut = 1x1 convolution (stride s) + BatchNorm when the stride or the channel count changes,
// registered as "shortcut" (pytorch-cifar) or "downsample" (torchvision); else the identity.
struct BasicBlockImpl : nn::Cloneable<BasicBlockImpl> {
  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride, std::string shortcut_name)
      : in_planes(in_planes), planes(planes), stride(stride), shortcut_name(std::move(shortcut_name)) {
    reset();
  }

  void reset() override {
    conv1 = register_module("conv1", make_conv(in_planes, planes, 3, stride, 1));
    bn1 = register_module("bn1", nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", make_conv(planes, planes, 3, 1, 1));
    bn2 = register_module("bn2", nn::BatchNorm2d(planes));
    if (stride != 1 || in_planes != planes) {
      shortcut = register_module(
          shortcut_name, nn::Sequential(make_conv(in_planes, planes, 1, stride, 0),
                                        nn::BatchNorm2d(planes)));
    } else {
      shortcut = nullptr;
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    auto out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    out = out + (shortcut ? shortcut->forward(x) : x);
    return torch::relu(out);
  }

  int64_t in_planes;
  int64_t planes;
  int64_t stride;
  std::string shortcut_name;
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::Conv2d conv2{nullptr};
  nn::BatchNorm2d bn2{nullptr};
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

// The stem and head are stage views over modules the ResNet registers directly (so that its
// parameter names are "conv1.weight", "linear.weight", ...). They register the same modules
// under the same names, are never registered in the ResNet themselves, and are rebuilt from the
// ResNet's children whenever the stage list is (re)linked, so they are never cloned.
struct StemImpl : nn::Module {
  StemImpl(nn::Conv2d conv, nn::BatchNorm2d bn, bool max_pool) : max_pool(max_pool) {
    conv1 = register_module("conv1", std::move(conv));
    bn1 = register_module("bn1", std::move(bn));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));
    if (max_pool) {
      x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    }
    return x;
  }

  bool max_pool;
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
};
TORCH_MODULE(Stem);

// pytorch-cifar: avg_pool2d(4) on the 4x4 map; torchvision: adaptive average pool to 1x1. Both
// are a global average over the final map for 32x32 inputs, then flatten and the classifier.
struct HeadImpl : nn::Module {
  HeadImpl(const std::string& classifier_name, nn::Linear classifier, bool adaptive_pool)
      : adaptive_pool(adaptive_pool) {
    fc = register_module(classifier_name, std::move(classifier));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = adaptive_pool ? torch::adaptive_avg_pool2d(x, {1, 1}) : torch::avg_pool2d(x, 4);
    return fc(x.flatten(1));
  }

  bool adaptive_pool;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(Head);

bool is_imagenet(const std::string& variant) {
  if (variant == kResnet18Cifar) return false;
  if (variant == kResnet18Imagenet) return true;
  throw std::invalid_argument("unknown model '" + variant + "' (known: " + kResnet18Cifar +
                              ", " + kResnet18Imagenet + ")");
}

const char* classifier_name(bool imagenet) { return imagenet ? "fc" : "linear"; }

template <typename ModuleImpl>
std::shared_ptr<ModuleImpl> child(const nn::Module& parent, const std::string& name) {
  auto module = std::dynamic_pointer_cast<ModuleImpl>(parent.named_children()[name]);
  if (!module) throw std::logic_error("ResNet18: child module '" + name + "' is missing");
  return module;
}

// Builds names/stages from the modules registered in `net` (after reset() and after clone()).
void link_stages(ResNet18Impl& net) {
  const bool imagenet = is_imagenet(net.variant);
  net.names.clear();
  net.stages.clear();

  net.names.push_back("stem");
  net.stages.emplace_back(Stem(nn::Conv2d(child<nn::Conv2dImpl>(net, "conv1")),
                               nn::BatchNorm2d(child<nn::BatchNorm2dImpl>(net, "bn1")), imagenet));
  for (int stage = 1; stage <= 4; ++stage) {
    const std::string layer = "layer" + std::to_string(stage);
    auto blocks = child<nn::SequentialImpl>(net, layer);
    for (size_t b = 0; b < blocks->size(); ++b) {
      net.names.push_back(layer + "." + std::to_string(b));
      net.stages.emplace_back(blocks->ptr<BasicBlockImpl>(b));
    }
  }
  net.names.push_back("head");
  const std::string fc = classifier_name(imagenet);
  net.stages.emplace_back(Head(fc, nn::Linear(child<nn::LinearImpl>(net, fc)), imagenet));
}

}  // namespace

ResNet18Impl::ResNet18Impl(std::string variant, int64_t num_classes)
    : variant(std::move(variant)), num_classes(num_classes) {
  reset();
}

void ResNet18Impl::reset() {
  const bool imagenet = is_imagenet(variant);
  const char* shortcut_name = imagenet ? "downsample" : "shortcut";
  // Registration order = parameters() order: conv1, bn1, layer1..layer4, classifier.
  if (imagenet) {
    register_module("conv1", make_conv(3, 64, /*kernel=*/7, /*stride=*/2, /*pad=*/3));
  } else {
    register_module("conv1", make_conv(3, 64, /*kernel=*/3, /*stride=*/1, /*pad=*/1));
  }
  register_module("bn1", nn::BatchNorm2d(64));
  const int64_t planes[4] = {64, 128, 256, 512};
  const int64_t strides[4] = {1, 2, 2, 2};
  int64_t in_planes = 64;
  for (int stage = 0; stage < 4; ++stage) {
    nn::Sequential layer(BasicBlock(in_planes, planes[stage], strides[stage], shortcut_name),
                         BasicBlock(planes[stage], planes[stage], 1, shortcut_name));
    register_module("layer" + std::to_string(stage + 1), layer);
    in_planes = planes[stage];
  }
  register_module(classifier_name(imagenet), nn::Linear(512, num_classes));
  link_stages(*this);
}

std::shared_ptr<torch::nn::Module> ResNet18Impl::clone(const CloneDevice& device) const {
  auto copy = std::dynamic_pointer_cast<ResNet18Impl>(Cloneable<ResNet18Impl>::clone(device));
  link_stages(*copy);
  return copy;
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  for (size_t i = 0; i < stages.size(); ++i) x = forward_stage(i, std::move(x));
  return x;
}

size_t ResNet18Impl::num_stages() const { return stages.size(); }

const std::string& ResNet18Impl::stage_name(size_t i) const { return names.at(i); }

torch::Tensor ResNet18Impl::forward_stage(size_t i, torch::Tensor x) {
  return stages.at(i).forward(std::move(x));
}

torch::nn::Module& ResNet18Impl::stage_module(size_t i) { return *stages.at(i).ptr(); }

}  // namespace trainsim::models
