// Per-op costs of a training step (models/cost.h). Every expected number is derived by hand in a
// comment from the layer shapes and the counting rules in cost.h (fp32: 4 bytes per element).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "models/cost.h"
#include "models/describe.h"

namespace trainsim::models {
namespace {

const LayerCost& layer(const std::vector<LayerCost>& costs, const std::string& name) {
  for (const auto& l : costs) {
    if (l.layer == name) return l;
  }
  throw std::out_of_range("no layer " + name);
}

const OpCost& op(const std::vector<OpCost>& ops, const std::string& name) {
  for (const auto& o : ops) {
    if (o.name == name) return o;
  }
  throw std::out_of_range("no op " + name);
}

std::vector<std::string> names(const std::vector<OpCost>& ops) {
  std::vector<std::string> out;
  for (const auto& o : ops) out.push_back(o.name);
  return out;
}

TEST(LayerCosts, LayersFollowTheDescription) {
  const auto costs = layer_costs(kResnet18Cifar, 1);
  const ModelProfile m = describe_model(kResnet18Cifar);
  ASSERT_EQ(costs.size(), m.layers.size());
  for (size_t i = 0; i < costs.size(); ++i) EXPECT_EQ(costs[i].layer, m.layers[i].name);
}

TEST(LayerCosts, BlockConvolutionAtBatch2) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  const LayerCost& l = layer(costs, "layer1.0");
  EXPECT_EQ(names(l.forward),
            (std::vector<std::string>{"layer1.0.conv1", "layer1.0.bn1", "layer1.0.relu1",
                                      "layer1.0.conv2", "layer1.0.bn2", "layer1.0.add",
                                      "layer1.0.relu2"}));
  const OpCost& conv = op(l.forward, "layer1.0.conv1");
  EXPECT_EQ(conv.kind, OpKind::kConv);
  // 3x3 64->64 on 32x32, batch 2: 2*2*64*32*32*64*3*3 = 150,994,944 FLOPs.
  EXPECT_DOUBLE_EQ(conv.flops, 150994944.0);
  // input 2*64*32*32 = 131,072, weight 64*64*9 = 36,864, output 131,072:
  // 4*(131,072 + 36,864 + 131,072) = 4*299,008 = 1,196,032 bytes.
  EXPECT_DOUBLE_EQ(conv.bytes, 1196032.0);
  // implicit GEMM M = 2*32*32 = 2,048, Nn = 64: ceil(2048/128)*ceil(64/128) = 16*1 = 16 tiles.
  EXPECT_DOUBLE_EQ(conv.parallel_tiles, 16.0);

  // dgrad reads dy + weight and writes dx, wgrad reads x + dy and writes dW: the same three
  // tensors, the same FLOPs. dgrad GEMM M = 2*32*32, Nn = Cin = 64: 16 tiles; wgrad GEMM
  // M = Cout = 64, Nn = 64*9 = 576: 1*ceil(576/128) = 5 tiles.
  const OpCost& dgrad = op(l.backward, "layer1.0.conv1.dgrad");
  const OpCost& wgrad = op(l.backward, "layer1.0.conv1.wgrad");
  EXPECT_DOUBLE_EQ(dgrad.flops, 150994944.0);
  EXPECT_DOUBLE_EQ(wgrad.flops, 150994944.0);
  EXPECT_DOUBLE_EQ(dgrad.bytes, 1196032.0);
  EXPECT_DOUBLE_EQ(wgrad.bytes, 1196032.0);
  EXPECT_DOUBLE_EQ(dgrad.parallel_tiles, 16.0);
  EXPECT_DOUBLE_EQ(wgrad.parallel_tiles, 5.0);
}

TEST(LayerCosts, ElementwiseOpsAtBatch2) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  const LayerCost& l = layer(costs, "layer1.0");
  // E = 2*64*32*32 = 131,072 elements, C = 64; elementwise tiles 131,072/1,024 = 128.
  const OpCost& bn = op(l.forward, "layer1.0.bn1");
  EXPECT_DOUBLE_EQ(bn.flops, 2 * 131072.0);                 // 2 per element = 262,144
  EXPECT_DOUBLE_EQ(bn.bytes, 4 * (3 * 131072.0 + 2 * 64));  // x twice, y, 2C params = 1,573,376
  EXPECT_DOUBLE_EQ(bn.parallel_tiles, 128.0);
  const OpCost& bn_back = op(l.backward, "layer1.0.bn1");
  EXPECT_DOUBLE_EQ(bn_back.flops, 9 * 131072.0);                 // 1,179,648
  EXPECT_DOUBLE_EQ(bn_back.bytes, 4 * (5 * 131072.0 + 2 * 64));  // 2,621,952

  const OpCost& relu = op(l.forward, "layer1.0.relu1");
  EXPECT_DOUBLE_EQ(relu.flops, 131072.0);
  EXPECT_DOUBLE_EQ(relu.bytes, 4 * 2 * 131072.0);  // read x, write y: 1,048,576
  const OpCost& relu_back = op(l.backward, "layer1.0.relu1");
  EXPECT_DOUBLE_EQ(relu_back.flops, 131072.0);
  EXPECT_DOUBLE_EQ(relu_back.bytes, 4 * 3 * 131072.0);  // dy, the saved output, dx: 1,572,864

  const OpCost& add = op(l.forward, "layer1.0.add");
  EXPECT_EQ(add.kind, OpKind::kAdd);
  EXPECT_DOUBLE_EQ(add.flops, 131072.0);
  EXPECT_DOUBLE_EQ(add.bytes, 4 * 3 * 131072.0);  // read 2, write 1
  // No kernel for the add's backward; the block input's two gradients (through conv1 and the
  // identity shortcut) are summed once conv1's backward is done, the last op of the block.
  EXPECT_THROW(op(l.backward, "layer1.0.add"), std::out_of_range);
  EXPECT_EQ(names(l.backward),
            (std::vector<std::string>{"layer1.0.relu2", "layer1.0.bn2", "layer1.0.conv2.dgrad",
                                      "layer1.0.conv2.wgrad", "layer1.0.relu1", "layer1.0.bn1",
                                      "layer1.0.conv1.dgrad", "layer1.0.conv1.wgrad",
                                      "layer1.0.conv1.grad_sum"}));
  const OpCost& sum = l.backward.back();
  EXPECT_EQ(sum.kind, OpKind::kAdd);
  EXPECT_DOUBLE_EQ(sum.flops, 131072.0);
  EXPECT_DOUBLE_EQ(sum.bytes, 4 * 3 * 131072.0);
}

TEST(LayerCosts, StemConvolutionHasNoInputGradient) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  const LayerCost& stem = layer(costs, "stem");
  // The data batch does not require grad: the stem conv computes only its weight gradient.
  EXPECT_EQ(names(stem.backward), (std::vector<std::string>{"relu", "bn1", "conv1.wgrad"}));
  // 3x3 3->64 on 32x32, batch 2: 2*2*64*32*32*3*9 = 7,077,888 FLOPs;
  // bytes 4*(2*3*32*32 + 64*3*9 + 2*64*32*32) = 4*(6,144 + 1,728 + 131,072) = 555,776.
  const OpCost& conv = op(stem.forward, "conv1");
  EXPECT_DOUBLE_EQ(conv.flops, 7077888.0);
  EXPECT_DOUBLE_EQ(conv.bytes, 555776.0);
  EXPECT_DOUBLE_EQ(op(stem.backward, "conv1.wgrad").flops, 7077888.0);
  // forward: conv 7,077,888 + BN 2*131,072 + ReLU 131,072 = 7,471,104;
  // backward: ReLU 131,072 + BN 9*131,072 + wgrad 7,077,888 = 8,388,608 (about 1.12x, not 2x).
  EXPECT_DOUBLE_EQ(stem.forward_flops(), 7471104.0);
  EXPECT_DOUBLE_EQ(stem.backward_flops(), 8388608.0);
}

TEST(LayerCosts, ProjectionShortcutCounts) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  const LayerCost& l = layer(costs, "layer2.0");
  // 1x1/2 64->128, output 16x16, batch 2: 2*2*128*16*16*64 = 8,388,608 FLOPs;
  // bytes 4*(2*64*32*32 + 128*64 + 2*128*16*16) = 4*(131,072 + 8,192 + 65,536) = 819,200.
  const OpCost& shortcut = op(l.forward, "layer2.0.shortcut.0");
  EXPECT_EQ(shortcut.kind, OpKind::kConv);
  EXPECT_DOUBLE_EQ(shortcut.flops, 8388608.0);
  EXPECT_DOUBLE_EQ(shortcut.bytes, 819200.0);
  EXPECT_DOUBLE_EQ(op(l.backward, "layer2.0.shortcut.0.dgrad").flops, 8388608.0);
  EXPECT_DOUBLE_EQ(op(l.backward, "layer2.0.shortcut.0.wgrad").flops, 8388608.0);
  EXPECT_EQ(op(l.forward, "layer2.0.shortcut.1").kind, OpKind::kBatchNorm);
  // Reverse execution order: the shortcut ran last before the add, so its backward runs first.
  EXPECT_EQ(names(l.backward),
            (std::vector<std::string>{
                "layer2.0.relu2", "layer2.0.shortcut.1", "layer2.0.shortcut.0.dgrad",
                "layer2.0.shortcut.0.wgrad", "layer2.0.bn2", "layer2.0.conv2.dgrad",
                "layer2.0.conv2.wgrad", "layer2.0.relu1", "layer2.0.bn1", "layer2.0.conv1.dgrad",
                "layer2.0.conv1.wgrad", "layer2.0.conv1.grad_sum"}));
  // The summed gradient is the block input's: 2*64*32*32 = 131,072 elements, not the output's.
  EXPECT_DOUBLE_EQ(l.backward.back().flops, 131072.0);
}

TEST(LayerCosts, HeadPoolAndLinear) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  const LayerCost& head = layer(costs, "head");
  EXPECT_EQ(names(head.forward), (std::vector<std::string>{"avgpool", "linear"}));
  EXPECT_EQ(names(head.backward),
            (std::vector<std::string>{"linear.dgrad", "linear.wgrad", "avgpool"}));
  // avg-pool of 2*512*4*4 = 16,384 elements to 1,024: 16,384 FLOPs, 4*(16,384 + 1,024) = 69,632.
  const OpCost& pool = op(head.forward, "avgpool");
  EXPECT_DOUBLE_EQ(pool.flops, 16384.0);
  EXPECT_DOUBLE_EQ(pool.bytes, 69632.0);
  // linear 512->10, batch 2: 2*(2*512*10 + 10) = 20,500 FLOPs;
  // bytes 4*(1,024 in + 5,120 weight + 10 bias + 20 out) = 24,696; GEMM M = 2, Nn = 10: 1 tile.
  const OpCost& fc = op(head.forward, "linear");
  EXPECT_EQ(fc.kind, OpKind::kLinear);
  EXPECT_DOUBLE_EQ(fc.flops, 20500.0);
  EXPECT_DOUBLE_EQ(fc.bytes, 24696.0);
  EXPECT_DOUBLE_EQ(fc.parallel_tiles, 1.0);
  // dgrad 2*2*512*10 = 20,480 FLOPs, 4*(20 dy + 5,120 W + 1,024 dx) = 24,656 bytes;
  // wgrad 20,480 + 20 (bias: sum of dy) = 20,500 FLOPs, 4*(1,024 + 20 + 5,130) = 24,696 bytes.
  EXPECT_DOUBLE_EQ(op(head.backward, "linear.dgrad").flops, 20480.0);
  EXPECT_DOUBLE_EQ(op(head.backward, "linear.dgrad").bytes, 24656.0);
  EXPECT_DOUBLE_EQ(op(head.backward, "linear.wgrad").flops, 20500.0);
  EXPECT_DOUBLE_EQ(op(head.backward, "linear.wgrad").bytes, 24696.0);
}

TEST(LayerCosts, SavedActivationsCountEachTensorOnce) {
  const auto costs = layer_costs(kResnet18Cifar, 2);
  // stem: conv input (the data, 2*3*32*32 = 6,144), BN input (131,072) + mean/invstd (2*64),
  // ReLU output (131,072): 4*(6,144 + 131,072 + 128 + 131,072) = 1,073,664 bytes.
  EXPECT_DOUBLE_EQ(layer(costs, "stem").saved_bytes, 1073664.0);
  // layer1.0: conv1's input is the stem's ReLU output and conv2's is relu1's, already counted;
  // bn1 and bn2 inputs + stats, relu1 and relu2 outputs: 4*(4*131,072 + 2*128) = 2,098,176.
  EXPECT_DOUBLE_EQ(layer(costs, "layer1.0").saved_bytes, 2098176.0);
  // head: the pool's input is layer4.1's ReLU output; the linear's input 2*512: 4,096 bytes.
  EXPECT_DOUBLE_EQ(layer(costs, "head").saved_bytes, 4096.0);
}

TEST(LayerCosts, ForwardFlopsAreLinearInTheBatchAndMatchTheDescription) {
  for (const auto& name : known_models()) {
    const ModelProfile m = describe_model(name);
    const auto one = layer_costs(name, 1);
    const auto many = layer_costs(name, 128);
    for (size_t i = 0; i < m.layers.size(); ++i) {
      EXPECT_DOUBLE_EQ(one[i].forward_flops(), m.layers[i].forward_flops) << name << one[i].layer;
      EXPECT_DOUBLE_EQ(many[i].forward_flops(), 128 * m.layers[i].forward_flops)
          << name << many[i].layer;
    }
  }
}

TEST(LayerCosts, Resnet18CifarTotalForwardFlopsPerSample) {
  // Convolution multiply-adds per sample (Cout*Hout*Wout*Cin*k*k):
  //   stem      64*32*32*3*9                                              =   1,769,472
  //   layer1    4 * 64*32*32*64*9                                         = 150,994,944
  //   layer2    128*16*16*64*9 + 3 * 128*16*16*128*9 + 128*16*16*64 (1x1) = 134,217,728
  //   layer3, layer4: the same 134,217,728 each (channels double, area quarters)
  //   -> 555,417,600 MACs; with the linear's 5,120: 555,422,720, the "0.56 G" usually quoted as
  //   ResNet-18-CIFAR's FLOPs is this multiply-add count. At 2 FLOPs per multiply-add:
  //   convolutions 1,110,835,200 + linear 2*5,120 + 10 = 10,250.
  // Elementwise: BatchNorm 2 per element on 5 maps of each size (stem + 4 in layer1, 5 in each
  //   later stage: 2 per block + the projection's): 2*5*(65,536 + 32,768 + 16,384 + 8,192)
  //   = 1,228,800; ReLU: stem 65,536 + 4 per stage 4*(65,536 + 32,768 + 16,384 + 8,192)
  //   = 557,056; adds 2 per stage = 245,760; average pool 512*4*4 = 8,192.
  // Total 1,110,835,200 + 10,250 + 1,228,800 + 557,056 + 245,760 + 8,192 = 1,112,885,258.
  double total = 0;
  for (const auto& l : layer_costs(kResnet18Cifar, 1)) total += l.forward_flops();
  EXPECT_DOUBLE_EQ(total, 1112885258.0);
}

TEST(LayerCosts, BackwardIsAboutTwiceForwardInEveryBlock) {
  // A block's FLOPs are its convolutions' (99.7%); each has a dgrad and a wgrad of its forward
  // size. The rest (BatchNorm 9 vs 2 per element, the gradient sum) moves the ratio by < 0.4%.
  for (const auto& l : layer_costs(kResnet18Cifar, 32)) {
    if (l.layer == "stem" || l.layer == "head") continue;
    EXPECT_NEAR(l.backward_flops() / l.forward_flops(), 2.0, 0.005) << l.layer;
  }
}

TEST(LayerCosts, ImagenetStemMaxPool) {
  const auto costs = layer_costs(kResnet18Imagenet, 2);
  const LayerCost& stem = layer(costs, "stem");
  EXPECT_EQ(names(stem.forward), (std::vector<std::string>{"conv1", "bn1", "relu", "maxpool"}));
  // 7x7/2: 32 -> 16; max-pool 3x3/2: 16 -> 8. Input 2*64*16*16 = 32,768, output 2*64*8*8 = 8,192.
  // forward: 9 compares per output = 73,728; read x, write y and the int64 argmax:
  // 4*32,768 + 4*8,192 + 8*8,192 = 229,376 bytes.
  const OpCost& pool = op(stem.forward, "maxpool");
  EXPECT_EQ(pool.kind, OpKind::kMaxPool);
  EXPECT_DOUBLE_EQ(pool.flops, 73728.0);
  EXPECT_DOUBLE_EQ(pool.bytes, 229376.0);
  // backward: one add per output; read dy and the argmax, write dx: 12*8,192 + 4*32,768.
  const OpCost& back = op(stem.backward, "maxpool");
  EXPECT_DOUBLE_EQ(back.flops, 8192.0);
  EXPECT_DOUBLE_EQ(back.bytes, 229376.0);
  // saved: data 2*3*32*32 = 6,144, BN input 32,768 + stats 128, ReLU output 32,768 (also the
  // pool's input), argmax 8*8,192: 4*(6,144 + 32,768 + 128 + 32,768) + 65,536 = 352,768.
  EXPECT_DOUBLE_EQ(stem.saved_bytes, 352768.0);
  // The pooled map feeds layer1.0's conv1 and identity shortcut: saved and summed there.
  EXPECT_EQ(layer(costs, "layer1.0").backward.back().name, "layer1.0.conv1.grad_sum");
  EXPECT_DOUBLE_EQ(layer(costs, "layer1.0").backward.back().flops, 8192.0);
}

TEST(StepCost, Resnet18CifarExtras) {
  const StepCost s = step_cost(kResnet18Cifar, 128);
  // 11,173,962 parameters: SGD reads p, g, buf and writes p, buf: 5*4*11,173,962 = 223,479,240
  // bytes, 6 FLOPs each = 67,043,772; zero_grad writes 4*11,173,962 = 44,695,848.
  EXPECT_EQ(s.optimizer.kind, OpKind::kOptimizer);
  EXPECT_DOUBLE_EQ(s.optimizer.bytes, 223479240.0);
  EXPECT_DOUBLE_EQ(s.optimizer.flops, 67043772.0);
  EXPECT_DOUBLE_EQ(s.zero_grad.bytes, 44695848.0);
  EXPECT_DOUBLE_EQ(s.zero_grad.flops, 0.0);
  EXPECT_DOUBLE_EQ(s.param_bytes, 44695848.0);
  EXPECT_DOUBLE_EQ(s.input_bytes, 128 * 3 * 32 * 32 * 4.0);  // 1,572,864
  // loss, 128 x 10 logits: forward 128*(5*10 + 2) = 6,656 FLOPs,
  // 8*1,280 + 12*128 + 4 = 11,780 bytes; backward 128*(4*10 + 1) = 5,248 FLOPs,
  // 16*1,280 + 8*128 = 21,504 bytes.
  EXPECT_EQ(s.loss_forward.kind, OpKind::kLoss);
  EXPECT_DOUBLE_EQ(s.loss_forward.flops, 6656.0);
  EXPECT_DOUBLE_EQ(s.loss_forward.bytes, 11780.0);
  EXPECT_DOUBLE_EQ(s.loss_backward.flops, 5248.0);
  EXPECT_DOUBLE_EQ(s.loss_backward.bytes, 21504.0);
  // Tiny next to the layers: 128 * 1.1 GFLOPs forward alone.
  EXPECT_LT(s.loss_forward.flops + s.loss_backward.flops, 1e-6 * 128 * 1112885258.0);
}

TEST(Costs, UnknownModelsAndBatchesBelowOneThrow) {
  EXPECT_THROW(layer_costs("resnet50", 1), std::invalid_argument);
  EXPECT_THROW(layer_costs(kResnet18Cifar, 0), std::invalid_argument);
  EXPECT_THROW(layer_costs(kResnet18Cifar, -1), std::invalid_argument);
  EXPECT_THROW(step_cost("resnet50", 1), std::invalid_argument);
  EXPECT_THROW(step_cost(kResnet18Cifar, 0), std::invalid_argument);
}

TEST(Costs, OpKindNames) {
  EXPECT_STREQ(to_string(OpKind::kConv), "conv");
  EXPECT_STREQ(to_string(OpKind::kBatchNorm), "batch-norm");
  EXPECT_STREQ(to_string(OpKind::kZeroGrad), "zero-grad");
}

}  // namespace
}  // namespace trainsim::models
