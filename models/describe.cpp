#include "models/describe.h"

#include <stdexcept>

namespace trainsim::models {
namespace {

// What forward_flops counts, per sample (all on the output tensor of the op unless noted):
//   convolution     2 * Cout * Hout * Wout * Cin * k * k   (a multiply-add is 2 FLOPs; no bias)
//   linear          2 * in * out + out                     (multiply-adds plus the bias add)
//   BatchNorm       2 per element (scale and shift with the batch statistics folded in)
//   ReLU            1 per element
//   residual add    1 per element
//   max-pool 3x3    9 per output element (one compare per window element)
//   average pool    1 per input element (the sum; the division is folded into the count)
// The statistics BatchNorm computes in training mode are not counted: they are a small
// fraction of the convolutions and the simulator uses measured times, not FLOPs, for time.
constexpr int64_t kFloatBytes = 4;
// BatchNorm2d buffers: running_mean and running_var (fp32, C each) plus num_batches_tracked, an
// int64 scalar (LibTorch registers it as a 0-dim kLong tensor: 8 bytes).
constexpr int64_t kBatchesTrackedBytes = 8;
constexpr int kInputSide = 32;  // CIFAR-10 images are 3x32x32
constexpr int kInputChannels = 3;

struct Shape {
  int64_t channels;
  int64_t side;  // square feature maps
  int64_t elements() const { return channels * side * side; }
};

// Convolution output side: floor((side + 2 * pad - kernel) / stride) + 1.
int64_t conv_out_side(int64_t side, int kernel, int stride, int pad) {
  return (side + 2 * pad - kernel) / stride + 1;
}

class LayerBuilder {
 public:
  LayerBuilder(std::string name, std::string kind) {
    layer_.name = std::move(name);
    layer_.kind = std::move(kind);
  }

  // Adds a bias-free kxk convolution `prefix.weight`; returns its output shape.
  Shape conv(const std::string& prefix, Shape in, int64_t out_channels, int kernel, int stride,
             int pad) {
    add_param(prefix + ".weight", out_channels * in.channels * kernel * kernel);
    Shape out{out_channels, conv_out_side(in.side, kernel, stride, pad)};
    // 2 * MACs, MACs = Cout * Hout * Wout * Cin * k * k
    layer_.forward_flops +=
        2.0 * static_cast<double>(out.elements()) * static_cast<double>(in.channels) * kernel * kernel;
    return out;
  }

  // BatchNorm2d `prefix`: weight and bias parameters, running stats buffers, 2 FLOPs/element.
  void batch_norm(const std::string& prefix, Shape at) {
    add_param(prefix + ".weight", at.channels);
    add_param(prefix + ".bias", at.channels);
    layer_.buffer_bytes += 2 * at.channels * kFloatBytes + kBatchesTrackedBytes;
    layer_.forward_flops += 2.0 * static_cast<double>(at.elements());
  }

  void elementwise(Shape at) { layer_.forward_flops += static_cast<double>(at.elements()); }

  void flops(double f) { layer_.forward_flops += f; }

  void add_param(const std::string& name, int64_t elements) {
    layer_.params.push_back(ParamTensor{name, elements * kFloatBytes});
  }

  LayerProfile finish(std::vector<int64_t> output_shape) {
    layer_.output_shape = std::move(output_shape);
    return std::move(layer_);
  }

 private:
  LayerProfile layer_;
};

std::vector<int64_t> chw(Shape s) { return {s.channels, s.side, s.side}; }

// Both layouts share the four stages of two BasicBlocks; they differ in the stem, in the name of
// the projection shortcut and of the classifier.
struct Layout {
  bool imagenet_stem;           // 7x7/2 convolution + 3x3/2 max-pool instead of a 3x3/1 convolution
  const char* shortcut_name;    // "shortcut" (pytorch-cifar) or "downsample" (torchvision)
  const char* classifier_name;  // "linear" (pytorch-cifar) or "fc" (torchvision)
};

LayerProfile describe_stem(const Layout& layout, Shape& x) {
  LayerBuilder b("stem", "stem");
  if (layout.imagenet_stem) {
    x = b.conv("conv1", x, 64, /*kernel=*/7, /*stride=*/2, /*pad=*/3);
  } else {
    x = b.conv("conv1", x, 64, /*kernel=*/3, /*stride=*/1, /*pad=*/1);
  }
  b.batch_norm("bn1", x);
  b.elementwise(x);  // ReLU
  if (layout.imagenet_stem) {
    x.side = conv_out_side(x.side, /*kernel=*/3, /*stride=*/2, /*pad=*/1);  // max-pool
    b.flops(9.0 * static_cast<double>(x.elements()));
  }
  return b.finish(chw(x));
}

// BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the shortcut being a 1x1
// convolution + BatchNorm when the stride or the channel count changes, else the identity.
LayerProfile describe_block(const Layout& layout, const std::string& name, Shape& x,
                            int64_t planes, int stride) {
  LayerBuilder b(name, "basic-block");
  const std::string p = name + ".";
  Shape in = x;
  Shape mid = b.conv(p + "conv1", in, planes, 3, stride, 1);
  b.batch_norm(p + "bn1", mid);
  b.elementwise(mid);  // ReLU
  Shape out = b.conv(p + "conv2", mid, planes, 3, 1, 1);
  b.batch_norm(p + "bn2", out);
  if (stride != 1 || in.channels != planes) {
    const std::string s = p + layout.shortcut_name;
    b.conv(s + ".0", in, planes, 1, stride, 0);
    b.batch_norm(s + ".1", out);
  }
  b.elementwise(out);  // residual add
  b.elementwise(out);  // ReLU
  x = out;
  return b.finish(chw(x));
}

LayerProfile describe_head(const Layout& layout, Shape x, int64_t num_classes) {
  LayerBuilder b("head", "head");
  b.elementwise(x);  // global average pool: one add per input element
  const std::string fc = layout.classifier_name;
  b.add_param(fc + ".weight", num_classes * x.channels);
  b.add_param(fc + ".bias", num_classes);
  b.flops(2.0 * static_cast<double>(x.channels * num_classes) + static_cast<double>(num_classes));
  return b.finish({num_classes});
}

ModelProfile describe_resnet18(const std::string& name, const Layout& layout) {
  constexpr int64_t kNumClasses = 10;
  ModelProfile model;
  model.name = name;
  model.num_classes = static_cast<int>(kNumClasses);
  model.input_bytes_per_sample = kInputChannels * kInputSide * kInputSide * kFloatBytes;

  Shape x{kInputChannels, kInputSide};
  model.layers.push_back(describe_stem(layout, x));
  const int64_t planes[4] = {64, 128, 256, 512};
  const int strides[4] = {1, 2, 2, 2};
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < 2; ++block) {
      const std::string block_name =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      model.layers.push_back(
          describe_block(layout, block_name, x, planes[stage], block == 0 ? strides[stage] : 1));
    }
  }
  model.layers.push_back(describe_head(layout, x, kNumClasses));

  model.parameters = model.param_bytes() / kFloatBytes;
  return model;
}

}  // namespace

std::vector<std::string> known_models() { return {kResnet18Cifar, kResnet18Imagenet}; }

ModelProfile describe_model(const std::string& name) {
  if (name == kResnet18Cifar) {
    return describe_resnet18(name, Layout{false, "shortcut", "linear"});
  }
  if (name == kResnet18Imagenet) {
    return describe_resnet18(name, Layout{true, "downsample", "fc"});
  }
  std::string known;
  for (const auto& m : known_models()) known += (known.empty() ? "" : ", ") + m;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace trainsim::models
