#include "models/describe.h"

#include <stdexcept>
#include <utility>

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
constexpr int kCifarSide = 32;  // CIFAR-10 images are 3x32x32
constexpr int kCifarChannels = 3;
constexpr int kFashionSide = 28;  // Fashion-MNIST images are 1x28x28
constexpr int kFashionChannels = 1;

// Convolution output side: floor((side + 2 * pad - kernel) / stride) + 1.
int64_t conv_out_side(int64_t side, int kernel, int stride, int pad) {
  return (side + 2 * pad - kernel) / stride + 1;
}

// The description under construction; tensor ids are unique across its layers.
struct ModelBuilder {
  ModelDescription description;
  int next_tensor_id = 1;  // 0 is the input batch
};

// Builds one layer: each op adds its parameters (registration order) and forward FLOPs to the
// LayerProfile, records itself as an OpShape and returns its output as a new tensor.
class LayerBuilder {
 public:
  LayerBuilder(ModelBuilder& model, std::string name, std::string kind) : model_(model) {
    layer_.name = std::move(name);
    layer_.kind = std::move(kind);
  }

  // Bias-free kxk convolution `prefix` (parameter `prefix.weight`).
  FeatureMap conv(const std::string& prefix, FeatureMap in, int64_t out_channels, int kernel,
                  int stride, int pad) {
    const int64_t weight = out_channels * in.channels * kernel * kernel;
    add_param(prefix + ".weight", weight);
    const FeatureMap out = tensor(out_channels, conv_out_side(in.side, kernel, stride, pad));
    // 2 * MACs, MACs = Cout * Hout * Wout * Cin * k * k
    OpShape& op = record(prefix, OpKind::kConv, {in}, out,
                         2.0 * static_cast<double>(out.elements()) *
                             static_cast<double>(in.channels) * kernel * kernel);
    op.kernel = kernel;
    op.weight_elements = weight;
    return out;
  }

  // BatchNorm2d `prefix`: weight and bias parameters, running stats buffers, 2 FLOPs/element.
  FeatureMap batch_norm(const std::string& prefix, FeatureMap in) {
    add_param(prefix + ".weight", in.channels);
    add_param(prefix + ".bias", in.channels);
    layer_.buffer_bytes += 2 * in.channels * kFloatBytes + kBatchesTrackedBytes;
    const FeatureMap out = tensor(in.channels, in.side);
    OpShape& op = record(prefix, OpKind::kBatchNorm, {in}, out,
                         2.0 * static_cast<double>(in.elements()));
    op.weight_elements = in.channels;
    op.bias_elements = in.channels;
    return out;
  }

  FeatureMap relu(const std::string& name, FeatureMap in) {
    const FeatureMap out = tensor(in.channels, in.side);
    record(name, OpKind::kRelu, {in}, out, static_cast<double>(in.elements()));
    return out;
  }

  FeatureMap add(const std::string& name, FeatureMap a, FeatureMap b) {
    const FeatureMap out = tensor(a.channels, a.side);
    record(name, OpKind::kAdd, {a, b}, out, static_cast<double>(out.elements()));
    return out;
  }

  // One compare per window element of each output.
  FeatureMap max_pool(const std::string& name, FeatureMap in, int kernel, int stride, int pad) {
    const FeatureMap out = tensor(in.channels, conv_out_side(in.side, kernel, stride, pad));
    OpShape& op = record(name, OpKind::kMaxPool, {in}, out,
                         static_cast<double>(kernel * kernel * out.elements()));
    op.kernel = kernel;
    return out;
  }

  // Global average pool to 1x1: one add per input element.
  FeatureMap global_avg_pool(const std::string& name, FeatureMap in) {
    const FeatureMap out = tensor(in.channels, 1);
    OpShape& op = record(name, OpKind::kAvgPool, {in}, out, static_cast<double>(in.elements()));
    op.kernel = static_cast<int>(in.side);
    return out;
  }

  // Linear `prefix` (parameters `prefix.weight`, `prefix.bias`) on the flattened `in`.
  FeatureMap linear(const std::string& prefix, FeatureMap in, int64_t out_features) {
    const int64_t weight = out_features * in.elements();
    add_param(prefix + ".weight", weight);
    add_param(prefix + ".bias", out_features);
    const FeatureMap out = tensor(out_features, 1);
    // multiply-adds plus the bias add
    OpShape& op = record(prefix, OpKind::kLinear, {in}, out,
                         2.0 * static_cast<double>(weight) + static_cast<double>(out_features));
    op.weight_elements = weight;
    op.bias_elements = out_features;
    return out;
  }

  void finish(std::vector<int64_t> output_shape) {
    layer_.output_shape = std::move(output_shape);
    model_.description.model.layers.push_back(std::move(layer_));
    model_.description.layer_ops.push_back(std::move(ops_));
  }

 private:
  void add_param(const std::string& name, int64_t elements) {
    layer_.params.push_back(ParamTensor{name, elements * kFloatBytes});
  }

  FeatureMap tensor(int64_t channels, int64_t side) {
    return FeatureMap{channels, side, model_.next_tensor_id++};
  }

  OpShape& record(const std::string& name, OpKind kind, std::vector<FeatureMap> inputs,
                  FeatureMap output, double flops) {
    layer_.forward_flops += flops;
    OpShape op;
    op.name = name;
    op.kind = kind;
    op.inputs = std::move(inputs);
    op.output = output;
    op.forward_flops = flops;
    ops_.push_back(std::move(op));
    return ops_.back();
  }

  ModelBuilder& model_;
  LayerProfile layer_;
  std::vector<OpShape> ops_;
};

std::vector<int64_t> chw(FeatureMap s) { return {s.channels, s.side, s.side}; }

// Both layouts share the four stages of two BasicBlocks; they differ in the stem, in the name of
// the projection shortcut and of the classifier.
struct Layout {
  bool imagenet_stem;           // 7x7/2 convolution + 3x3/2 max-pool instead of a 3x3/1 convolution
  const char* shortcut_name;    // "shortcut" (pytorch-cifar) or "downsample" (torchvision)
  const char* classifier_name;  // "linear" (pytorch-cifar) or "fc" (torchvision)
};

// Op names follow the module paths (torchvision's "relu", "maxpool" and "avgpool" for the
// functional ops of the stem and head).
void describe_stem(ModelBuilder& model, const Layout& layout, FeatureMap& x) {
  LayerBuilder b(model, "stem", "stem");
  if (layout.imagenet_stem) {
    x = b.conv("conv1", x, 64, /*kernel=*/7, /*stride=*/2, /*pad=*/3);
  } else {
    x = b.conv("conv1", x, 64, /*kernel=*/3, /*stride=*/1, /*pad=*/1);
  }
  x = b.batch_norm("bn1", x);
  x = b.relu("relu", x);
  if (layout.imagenet_stem) {
    x = b.max_pool("maxpool", x, /*kernel=*/3, /*stride=*/2, /*pad=*/1);
  }
  b.finish(chw(x));
}

// BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the shortcut being a 1x1
// convolution + BatchNorm when the stride or the channel count changes, else the identity.
void describe_block(ModelBuilder& model, const Layout& layout, const std::string& name,
                    FeatureMap& x, int64_t planes, int stride) {
  LayerBuilder b(model, name, "basic-block");
  const std::string p = name + ".";
  const FeatureMap in = x;
  FeatureMap out = b.conv(p + "conv1", in, planes, 3, stride, 1);
  out = b.batch_norm(p + "bn1", out);
  out = b.relu(p + "relu1", out);
  out = b.conv(p + "conv2", out, planes, 3, 1, 1);
  out = b.batch_norm(p + "bn2", out);
  FeatureMap shortcut = in;
  if (stride != 1 || in.channels != planes) {
    const std::string s = p + layout.shortcut_name;
    shortcut = b.conv(s + ".0", in, planes, 1, stride, 0);
    shortcut = b.batch_norm(s + ".1", shortcut);
  }
  out = b.add(p + "add", out, shortcut);
  x = b.relu(p + "relu2", out);
  b.finish(chw(x));
}

// Global average pool (flatten is a view), then the classifier.
void describe_head(ModelBuilder& model, const Layout& layout, FeatureMap x, int64_t num_classes) {
  LayerBuilder b(model, "head", "head");
  const FeatureMap pooled = b.global_avg_pool("avgpool", x);
  b.linear(layout.classifier_name, pooled, num_classes);
  b.finish({num_classes});
}

ModelDescription describe_resnet18(const std::string& name, const Layout& layout) {
  constexpr int64_t kNumClasses = 10;
  ModelBuilder builder;
  ModelProfile& model = builder.description.model;
  model.name = name;
  model.num_classes = static_cast<int>(kNumClasses);
  model.input_bytes_per_sample = kCifarChannels * kCifarSide * kCifarSide * kFloatBytes;

  FeatureMap x{kCifarChannels, kCifarSide, /*id=*/0};
  describe_stem(builder, layout, x);
  const int64_t planes[4] = {64, 128, 256, 512};
  const int strides[4] = {1, 2, 2, 2};
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < 2; ++block) {
      const std::string block_name =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      describe_block(builder, layout, block_name, x, planes[stage],
                     block == 0 ? strides[stage] : 1);
    }
  }
  describe_head(builder, layout, x, kNumClasses);

  model.parameters = model.param_bytes() / kFloatBytes;
  return std::move(builder.description);
}

// models/fashion_cnn.h: two blocks of 3x3 convolution (no bias), BatchNorm, ReLU and 2x2 max-pool,
// then the classifier on the flattened 64x7x7 map (flatten is a view) or, pooled_head, on its
// global average.
ModelDescription describe_fashion_cnn(const std::string& name, bool pooled_head) {
  constexpr int64_t kNumClasses = 10;
  ModelBuilder builder;
  ModelProfile& model = builder.description.model;
  model.name = name;
  model.num_classes = static_cast<int>(kNumClasses);
  model.input_bytes_per_sample = kFashionChannels * kFashionSide * kFashionSide * kFloatBytes;

  FeatureMap x{kFashionChannels, kFashionSide, /*id=*/0};
  const int64_t widths[2] = {32, 64};
  for (int block = 0; block < 2; ++block) {
    const std::string n = std::to_string(block + 1);
    LayerBuilder b(builder, "block" + n, "conv-block");
    x = b.conv("conv" + n, x, widths[block], /*kernel=*/3, /*stride=*/1, /*pad=*/1);
    x = b.batch_norm("bn" + n, x);
    x = b.relu("relu" + n, x);
    x = b.max_pool("pool" + n, x, /*kernel=*/2, /*stride=*/2, /*pad=*/0);
    b.finish(chw(x));
  }
  LayerBuilder head(builder, "head", "head");
  if (pooled_head) x = head.global_avg_pool("avgpool", x);
  head.linear("fc", x, kNumClasses);
  head.finish({kNumClasses});

  model.parameters = model.param_bytes() / kFloatBytes;
  return std::move(builder.description);
}

}  // namespace

std::vector<std::string> known_models() {
  return {kResnet18Cifar, kResnet18Imagenet, kFashionCnn, kFashionCnnGap};
}

bool fashion_model(const std::string& name) { return name == kFashionCnn || name == kFashionCnnGap; }

InputShape model_input(const std::string& name) {
  if (fashion_model(name)) return {kFashionChannels, kFashionSide};
  (void)describe_model_ops(name);  // the unknown-name error
  return {kCifarChannels, kCifarSide};
}

ModelProfile describe_model(const std::string& name) { return describe_model_ops(name).model; }

ModelDescription describe_model_ops(const std::string& name) {
  if (name == kResnet18Cifar) {
    return describe_resnet18(name, Layout{false, "shortcut", "linear"});
  }
  if (name == kResnet18Imagenet) {
    return describe_resnet18(name, Layout{true, "downsample", "fc"});
  }
  if (fashion_model(name)) return describe_fashion_cnn(name, name == kFashionCnnGap);
  std::string known;
  for (const auto& m : known_models()) known += (known.empty() ? "" : ", ") + m;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kConv: return "conv";
    case OpKind::kBatchNorm: return "batch-norm";
    case OpKind::kRelu: return "relu";
    case OpKind::kAdd: return "add";
    case OpKind::kMaxPool: return "max-pool";
    case OpKind::kAvgPool: return "avg-pool";
    case OpKind::kLinear: return "linear";
    case OpKind::kLoss: return "loss";
    case OpKind::kOptimizer: return "optimizer";
    case OpKind::kZeroGrad: return "zero-grad";
  }
  return "unknown";
}

}  // namespace trainsim::models
