// The analytic, torch-free model description (models/describe.h). The LibTorch cross-check is in
// models_resnet_test.cpp; here every expected number is derived by hand in a comment.
#include <gtest/gtest.h>

#include <stdexcept>

#include "models/describe.h"

namespace trainsim::models {
namespace {

const LayerProfile& layer(const ModelProfile& m, const std::string& name) {
  for (const auto& l : m.layers) {
    if (l.name == name) return l;
  }
  throw std::out_of_range("no layer " + name);
}

int64_t tensor_count(const ModelProfile& m) {
  int64_t n = 0;
  for (const auto& l : m.layers) n += static_cast<int64_t>(l.params.size());
  return n;
}

TEST(DescribeModel, Resnet18CifarHasTheKnownParameterCount) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  EXPECT_EQ(m.name, "resnet18-cifar");
  // pytorch-cifar ResNet-18: 11,173,962 parameters (kuangliu/pytorch-cifar), 44,695,848 fp32 bytes.
  EXPECT_EQ(m.parameters, 11173962);
  EXPECT_EQ(m.param_bytes(), 44695848);
  // stem 3 (conv1, bn1 weight/bias) + 8 blocks * 6 + 3 projection shortcuts * 3 + head 2 = 62
  EXPECT_EQ(tensor_count(m), 62);
  EXPECT_EQ(m.num_classes, 10);
  EXPECT_EQ(m.input_bytes_per_sample, 3 * 32 * 32 * 4);  // 12288
}

TEST(DescribeModel, Resnet18CifarPerStageParameters) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  const std::vector<std::string> names = {"stem",     "layer1.0", "layer1.1", "layer2.0",
                                          "layer2.1", "layer3.0", "layer3.1", "layer4.0",
                                          "layer4.1", "head"};
  // Parameters per stage (conv weights out*in*k*k, BatchNorm 2 per channel):
  //   stem      64*3*9 + 2*64                                              =     1,856
  //   layer1.x  2*(64*64*9) + 4*64                                         =    73,984
  //   layer2.0  128*64*9 + 128*128*9 + 4*128 + (128*64 + 2*128) shortcut   =   230,144
  //   layer2.1  2*(128*128*9) + 4*128                                      =   295,424
  //   layer3.0  256*128*9 + 256*256*9 + 4*256 + 256*128 + 2*256            =   919,040
  //   layer3.1  2*(256*256*9) + 4*256                                      = 1,180,672
  //   layer4.0  512*256*9 + 512*512*9 + 4*512 + 512*256 + 2*512            = 3,673,088
  //   layer4.1  2*(512*512*9) + 4*512                                      = 4,720,640
  //   head      512*10 + 10                                                =     5,130
  // Sum: 11,173,962.
  const std::vector<int64_t> params = {1856,   73984,   73984,   230144,  295424,
                                       919040, 1180672, 3673088, 4720640, 5130};
  ASSERT_EQ(m.layers.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(m.layers[i].name, names[i]);
    EXPECT_EQ(m.layers[i].param_bytes(), params[i] * 4) << names[i];
  }
  EXPECT_EQ(m.layers.front().kind, "stem");
  EXPECT_EQ(m.layers[1].kind, "basic-block");
  EXPECT_EQ(m.layers.back().kind, "head");
}

TEST(DescribeModel, ParameterNamesFollowPytorchCifar) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  const auto& stem = layer(m, "stem");
  ASSERT_EQ(stem.params.size(), 3u);
  EXPECT_EQ(stem.params[0].name, "conv1.weight");
  EXPECT_EQ(stem.params[0].bytes, 64 * 3 * 3 * 3 * 4);  // 6912
  EXPECT_EQ(stem.params[1].name, "bn1.weight");
  EXPECT_EQ(stem.params[2].name, "bn1.bias");

  const auto& block = layer(m, "layer2.0");
  const std::vector<std::string> expected = {
      "layer2.0.conv1.weight",      "layer2.0.bn1.weight",        "layer2.0.bn1.bias",
      "layer2.0.conv2.weight",      "layer2.0.bn2.weight",        "layer2.0.bn2.bias",
      "layer2.0.shortcut.0.weight", "layer2.0.shortcut.1.weight", "layer2.0.shortcut.1.bias"};
  ASSERT_EQ(block.params.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(block.params[i].name, expected[i]);
  EXPECT_EQ(layer(m, "layer1.0").params.size(), 6u);  // identity shortcut: no extra tensors

  const auto& head = layer(m, "head");
  ASSERT_EQ(head.params.size(), 2u);
  EXPECT_EQ(head.params[0].name, "linear.weight");
  EXPECT_EQ(head.params[1].name, "linear.bias");
}

TEST(DescribeModel, Resnet18CifarShapes) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  // No down-sampling in the stem; stages 2..4 halve the side: 32, 16, 8, 4; 4x4 pool; 10 logits.
  EXPECT_EQ(layer(m, "stem").output_shape, (std::vector<int64_t>{64, 32, 32}));
  EXPECT_EQ(layer(m, "layer1.1").output_shape, (std::vector<int64_t>{64, 32, 32}));
  EXPECT_EQ(layer(m, "layer2.0").output_shape, (std::vector<int64_t>{128, 16, 16}));
  EXPECT_EQ(layer(m, "layer3.1").output_shape, (std::vector<int64_t>{256, 8, 8}));
  EXPECT_EQ(layer(m, "layer4.1").output_shape, (std::vector<int64_t>{512, 4, 4}));
  EXPECT_EQ(layer(m, "head").output_shape, (std::vector<int64_t>{10}));
}

TEST(DescribeModel, ForwardFlopsFollowTheCountingRules) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  // stem: conv 2*64*32*32*3*9 = 3,538,944; BatchNorm 2*65,536 = 131,072; ReLU 65,536
  //       -> 3,735,552
  EXPECT_DOUBLE_EQ(layer(m, "stem").forward_flops, 3735552.0);
  // layer1.0 (64x32x32 = 65,536 elements): two convs 2 * (2*65,536*64*9) = 150,994,944;
  //   two BatchNorms 2 * 2*65,536 = 262,144; two ReLUs + one add 3*65,536 = 196,608
  //   -> 151,453,696
  EXPECT_DOUBLE_EQ(layer(m, "layer1.0").forward_flops, 151453696.0);
  // head: average pool 512*4*4 = 8,192; linear 2*512*10 + 10 = 10,250 -> 18,442
  EXPECT_DOUBLE_EQ(layer(m, "head").forward_flops, 18442.0);
}

TEST(DescribeModel, BufferBytesCountRunningStatsAndTheBatchCounter) {
  const ModelProfile m = describe_model(kResnet18Cifar);
  // A BatchNorm of C channels: running_mean + running_var = 2*C*4 bytes, num_batches_tracked 8.
  EXPECT_EQ(layer(m, "stem").buffer_bytes, 2 * 64 * 4 + 8);                 // 520
  EXPECT_EQ(layer(m, "layer1.0").buffer_bytes, 2 * (2 * 64 * 4 + 8));       // 1,040
  EXPECT_EQ(layer(m, "layer2.0").buffer_bytes, 3 * (2 * 128 * 4 + 8));      // 3,096 (shortcut BN)
  EXPECT_EQ(layer(m, "head").buffer_bytes, 0);
  // All 20 BatchNorms: channels 64 + 4*64 + 5*128 + 5*256 + 5*512 = 4,800 -> 4,800*8 + 20*8
  int64_t total = 0;
  for (const auto& l : m.layers) total += l.buffer_bytes;
  EXPECT_EQ(total, 38560);
}

TEST(DescribeModel, Resnet18ImagenetLayout) {
  const ModelProfile m = describe_model(kResnet18Imagenet);
  // Only the stem differs: 64*3*7*7 = 9,408 instead of 64*3*3*3 = 1,728 -> +7,680 = 11,181,642.
  EXPECT_EQ(m.parameters, 11181642);
  EXPECT_EQ(tensor_count(m), 62);
  EXPECT_EQ(layer(m, "stem").params[0].bytes, 9408 * 4);
  EXPECT_EQ(layer(m, "layer3.0").params[6].name, "layer3.0.downsample.0.weight");
  EXPECT_EQ(layer(m, "head").params[0].name, "fc.weight");
  // 7x7/2 pad 3: (32 + 6 - 7)/2 + 1 = 16; max-pool 3/2 pad 1: (16 + 2 - 3)/2 + 1 = 8;
  // stages: 8, 4, 2, 1.
  EXPECT_EQ(layer(m, "stem").output_shape, (std::vector<int64_t>{64, 8, 8}));
  EXPECT_EQ(layer(m, "layer4.1").output_shape, (std::vector<int64_t>{512, 1, 1}));
  // stem: conv 2*64*16*16*3*49 = 4,816,896; BN 2*16,384 = 32,768; ReLU 16,384;
  //       max-pool 9*64*8*8 = 36,864 -> 4,902,912
  EXPECT_DOUBLE_EQ(layer(m, "stem").forward_flops, 4902912.0);
}

// models/fashion_cnn.h on 1x28x28: per sample
//   block1: conv 2*32*28*28*1*9 = 451,584; BN 2*25,088 = 50,176; ReLU 25,088; max-pool 2x2
//           4*32*14*14 = 25,088 -> 551,936
//   block2: conv 2*64*14*14*32*9 = 7,225,344; BN 2*12,544 = 25,088; ReLU 12,544; max-pool
//           4*64*7*7 = 12,544 -> 7,275,520
//   head:   linear 2*3,136*10 + 10 = 62,730
TEST(DescribeModel, FashionCnnLayersShapesAndFlops) {
  const ModelProfile m = describe_model(kFashionCnn);
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(layer(m, "block1").output_shape, (std::vector<int64_t>{32, 14, 14}));
  EXPECT_EQ(layer(m, "block2").output_shape, (std::vector<int64_t>{64, 7, 7}));
  EXPECT_EQ(layer(m, "head").output_shape, (std::vector<int64_t>{10}));
  EXPECT_DOUBLE_EQ(layer(m, "block1").forward_flops, 551936.0);
  EXPECT_DOUBLE_EQ(layer(m, "block2").forward_flops, 7275520.0);
  EXPECT_DOUBLE_EQ(layer(m, "head").forward_flops, 62730.0);
  EXPECT_EQ(m.parameters, 50282);
  EXPECT_EQ(m.input_bytes_per_sample, 3136);
  // BatchNorm buffers: running mean and var (4 bytes x C each) + num_batches_tracked (8).
  EXPECT_EQ(layer(m, "block1").buffer_bytes, 2 * 32 * 4 + 8);
}

// fashion-cnn-gap: the same blocks; its head averages block2's 64x7x7 map (one add per element:
// 3,136) and applies linear 2*64*10 + 10 = 1,290.
TEST(DescribeModel, FashionCnnGapPoolsBeforeItsHead) {
  const ModelProfile m = describe_model(kFashionCnnGap);
  const ModelProfile flat = describe_model(kFashionCnn);
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_DOUBLE_EQ(layer(m, "block1").forward_flops, layer(flat, "block1").forward_flops);
  EXPECT_DOUBLE_EQ(layer(m, "block2").forward_flops, layer(flat, "block2").forward_flops);
  EXPECT_DOUBLE_EQ(layer(m, "head").forward_flops, 3136.0 + 1290.0);
  EXPECT_EQ(layer(m, "head").output_shape, (std::vector<int64_t>{10}));
  EXPECT_EQ(m.parameters, 19562);
  EXPECT_EQ(m.input_bytes_per_sample, 3136);
  EXPECT_TRUE(fashion_model(kFashionCnnGap));
  EXPECT_TRUE(fashion_model(kFashionCnn));
  EXPECT_FALSE(fashion_model(kResnet18Cifar));
}

TEST(DescribeModel, KnownModelsAreDescribableAndUnknownNamesThrow) {
  const auto names = known_models();
  ASSERT_EQ(names.size(), 4u);
  for (const auto& name : names) EXPECT_EQ(describe_model(name).name, name);
  EXPECT_THROW(describe_model("resnet50"), std::invalid_argument);
  EXPECT_THROW(describe_model(""), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::models
